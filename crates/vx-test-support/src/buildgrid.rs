//! The real BuildGrid server (PyPI `buildgrid`), for the REAPI tests (REM-15): CAS, ByteStream,
//! ActionCache and Capabilities, with its scheduler on a throwaway PostgreSQL cluster
//! ([`BuildGrid::shared`]) or without one ([`BuildGrid::cache_only`]).
//!
//! `scripts/test` installs BuildGrid into the virtualenv `.test-tools/bgvenv` (or where
//! `VX_TEST_BGVENV` points) and PostgreSQL 15 from Debian. Each server lives in a fresh
//! directory under the system temp dir (PostgreSQL's user must traverse it), on free loopback
//! ports, and runs under `setpriv --pdeathsig KILL`, so it dies with the test process even when
//! no destructor runs (the shared server lives in a static). Starting the full server takes
//! about 8 s (initdb, PostgreSQL, the schema migration, BuildGrid), the cache-only one about 2 s;
//! a test binary shares one full server, and makes its keys unique with a nonce when it must.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, OnceLock};

use crate::net::{free_port, make_certificates};
use crate::reapi::wait_for_capabilities;
use crate::tree::files as files_under;

/// The virtualenv that holds `bgd`.
pub fn bgvenv_dir() -> PathBuf {
    match std::env::var_os("VX_TEST_BGVENV") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.test-tools/bgvenv"),
    }
}

/// The program `name` on `PATH`.
fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// PostgreSQL 15's server programs (Debian's `postgresql-15`).
const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

/// `bgd`, PostgreSQL's `initdb` and `setpriv`, or `None` (after saying the test is skipped)
/// when one is missing outside CI. Under `CI` a missing one fails the test.
fn installed(with_postgres: bool) -> Option<PathBuf> {
    let bgd = bgvenv_dir().join("bin/bgd");
    let mut missing = Vec::new();
    if !bgd.exists() {
        missing.push(format!(
            "BuildGrid (python3 -m venv {0} && {0}/bin/pip install buildgrid psycopg2-binary)",
            bgvenv_dir().display()
        ));
    }
    if with_postgres && !Path::new(PG_BIN).join("initdb").exists() {
        missing.push("PostgreSQL 15 (apt-get install postgresql-15)".to_string());
    }
    if which("openssl").is_none() {
        missing.push("openssl (apt-get install openssl)".to_string());
    }
    if !Path::new("/usr/bin/setpriv").exists() {
        missing.push("setpriv (apt-get install util-linux)".to_string());
    }
    if missing.is_empty() {
        return Some(bgd);
    }
    let install = format!(
        "{} (or run scripts/test, which installs it)",
        missing.join(", ")
    );
    assert!(
        !crate::tools::tools_required(),
        "missing for the BuildGrid tests: {install}"
    );
    eprintln!("skipped: missing for the BuildGrid tests: {install}");
    None
}

/// A running BuildGrid (and its PostgreSQL); killed when dropped, and with the test process.
pub struct BuildGrid {
    bgd: Child,
    postgres: Option<Child>,
    pub port: u16,
    dir: PathBuf,
}

impl BuildGrid {
    /// The full server with PostgreSQL, one per test process, started on first use.
    pub fn shared() -> Option<&'static BuildGrid> {
        static SHARED: OnceLock<Option<BuildGrid>> = OnceLock::new();
        SHARED
            .get_or_init(|| {
                let bgd = installed(true)?;
                Some(spawn_on_keeper(move || {
                    BuildGrid::start(bgd, true, None, false, 100)
                }))
            })
            .as_ref()
    }

    /// A server of its own without a scheduler (CAS, ByteStream, ActionCache), for a test that
    /// kills it or changes its authorization. With `jwt_secret`, calls need a bearer JWT signed
    /// with it (HS256), else `UNAUTHENTICATED`.
    pub fn cache_only(jwt_secret: Option<&str>) -> Option<BuildGrid> {
        let bgd = installed(false)?;
        Some(BuildGrid::start(bgd, false, jwt_secret, false, 100))
    }

    /// [`BuildGrid::cache_only`] serving at most `threads` calls at once, as BuildGrid does by
    /// default (its `thread-pool-size`: 5 per core); past that it answers `RESOURCE_EXHAUSTED`.
    pub fn cache_only_with_threads(threads: u32) -> Option<BuildGrid> {
        let bgd = installed(false)?;
        Some(BuildGrid::start(bgd, false, None, false, threads))
    }

    /// [`BuildGrid::cache_only`] speaking TLS, with a certificate for `127.0.0.1` signed by a
    /// throwaway authority whose certificate is [`BuildGrid::tls_authority`] (made with the
    /// `openssl` command).
    pub fn cache_only_tls() -> Option<BuildGrid> {
        let bgd = installed(false)?;
        Some(BuildGrid::start(bgd, false, None, true, 100))
    }

    /// The PEM certificate of the authority that signed a TLS server's certificate.
    pub fn tls_authority(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    fn start(
        bgd: PathBuf,
        with_postgres: bool,
        jwt_secret: Option<&str>,
        tls: bool,
        threads: u32,
    ) -> BuildGrid {
        let dir = fresh_dir();
        if tls {
            make_certificates(&dir);
        }
        let port = free_port();
        let (postgres, connection) = if with_postgres {
            let (child, url) = start_postgres(&dir, &bgd);
            (Some(child), Some(url))
        } else {
            (None, None)
        };
        let config = dir.join("bgd.yml");
        std::fs::write(
            &config,
            config_text(&dir, port, connection.as_deref(), jwt_secret, tls, threads),
        )
        .expect("write the config");
        let log = std::fs::File::create(dir.join("bgd.log")).expect("a log file");
        let child = Command::new("setpriv")
            .args(["--pdeathsig", "KILL", "--"])
            .arg(&bgd)
            .args(["server", "start"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().expect("a log handle")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start bgd");
        let mut server = BuildGrid {
            bgd: child,
            postgres,
            port,
            dir,
        };
        let log_path = server.dir.join("bgd.log");
        let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
        if tls {
            // The harness cannot trust the throwaway authority: an open port is readiness.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
                if let Ok(Some(status)) = server.bgd.try_wait() {
                    panic!("BuildGrid exited ({status}) before listening: {}", log());
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "BuildGrid never listened: {}",
                    log()
                );
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        } else {
            let url = server.url();
            wait_for_capabilities(&url, "BuildGrid", &mut server.bgd, log);
        }
        server
    }

    /// `grpc://127.0.0.1:<port>`, or `grpcs://…` when it speaks TLS.
    pub fn url(&self) -> String {
        let scheme = if self.dir.join("ca.pem").exists() {
            "grpcs"
        } else {
            "grpc"
        };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// Every blob file of its disk storage.
    pub fn blob_files(&self) -> Vec<PathBuf> {
        files_under(&self.dir.join("cas"))
    }

    /// A bearer token BuildGrid accepts when started with `secret` (an HS256 JWT minted by the
    /// virtualenv's PyJWT).
    pub fn jwt(secret: &str) -> String {
        let python = bgvenv_dir().join("bin/python3");
        let out = Command::new(python)
            .args([
                "-c",
                "import jwt, sys, time; print(jwt.encode({'sub': 'vx-tests', 'exp': int(time.time()) + 3600}, sys.argv[1], algorithm='HS256'))",
                secret,
            ])
            .output()
            .expect("run PyJWT");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A worker (`contrib/vx-buildgrid-worker` with `buildbox-run`) taking this server's actions, whose
    /// device has `properties` (`OSFamily=linux` and `ISA=x86-64` unless given); `None` when
    /// the runner or bubblewrap is missing. It leaves politely when dropped.
    pub fn start_worker(&self, name: &str, properties: &[(&str, &str)]) -> Option<Worker> {
        let runner = crate::reapi::buildbox_tool("buildbox-run")?;
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../contrib/vx-buildgrid-worker");
        let log_path = self.dir.join(format!("bot-{name}.log"));
        let log = std::fs::File::create(&log_path).expect("a log file");
        let mut command = Command::new("setpriv");
        command
            .args(["--pdeathsig", "KILL", "--"])
            .arg(bgvenv_dir().join("bin/python3"))
            .arg(script)
            .arg(format!("--remote=127.0.0.1:{}", self.port))
            .arg(format!("--runner={}", runner.display()))
            .arg(format!("--name={name}"));
        let mut given: Vec<(&str, &str)> = properties.to_vec();
        for (key, value) in [("OSFamily", "linux"), ("ISA", "x86-64")] {
            if !given.iter().any(|(k, _)| *k == key) {
                given.push((key, value));
            }
        }
        for (key, value) in given {
            command.arg(format!("--property={key}={value}"));
        }
        for bind in ["/usr", "/bin", "/lib", "/lib64"] {
            if Path::new(bind).exists() {
                command.arg(format!("--bind={bind}:{bind}"));
            }
        }
        use std::os::unix::process::CommandExt;
        let child = command
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().expect("a log handle")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start the bot");
        let mut worker = Worker {
            child,
            log: log_path,
        };
        // Registered once it has said its session's name.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !worker.log().contains(": session ") {
            if let Ok(Some(status)) = worker.child.try_wait() {
                panic!("the bot exited ({status}): {}", worker.log());
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the bot never registered: {}",
                worker.log()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Some(worker)
    }

    /// Stops the server now (a test of a server that goes away).
    pub fn kill(&mut self) {
        let _ = self.bgd.kill();
        let _ = self.bgd.wait();
    }
}

impl Drop for BuildGrid {
    fn drop(&mut self) {
        self.kill();
        if let Some(postgres) = &mut self.postgres {
            let _ = postgres.kill();
            let _ = postgres.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A BuildGrid worker; on drop it is sent SIGTERM (it says `BOT_TERMINATING` and leaves), and
/// killed if it has not left within 10 s.
pub struct Worker {
    child: Child,
    log: PathBuf,
}

impl Worker {
    /// What the bot logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Kills the bot at once, without its goodbye, with the runner and the action it started
    /// (its whole process group: a worker machine that dies mid-action).
    pub fn kill(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while std::time::Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
        self.kill();
    }
}

/// Runs `start` on a thread that never ends: `--pdeathsig` fires when the thread that started
/// a process exits, and the shared server must outlive the test that started it.
fn spawn_on_keeper(start: impl FnOnce() -> BuildGrid + Send + 'static) -> BuildGrid {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(start());
        loop {
            std::thread::park();
        }
    });
    receiver.recv().expect("the server started")
}

/// A new directory under the temp dir, readable by PostgreSQL's user; the directories of test
/// processes that are gone are removed first.
fn fresh_dir() -> PathBuf {
    let base = std::env::temp_dir();
    if let Ok(entries) = std::fs::read_dir(&base) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix("vx-buildgrid-")
                .and_then(|rest| rest.split('-').next())
                .and_then(|pid| pid.parse::<u32>().ok());
            if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let dir = tempfile::Builder::new()
        .prefix(&format!("vx-buildgrid-{}-", std::process::id()))
        .tempdir_in(&base)
        .expect("a temp dir")
        .keep();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

/// Whether the tests run as root (the owner of `/proc/self` is the effective user).
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// `setpriv` that runs a command as PostgreSQL's user when the tests run as root (PostgreSQL
/// refuses root), and as the current user otherwise.
fn as_postgres(program: &Path) -> Command {
    let mut command = Command::new("setpriv");
    command.args(["--pdeathsig", "KILL"]);
    if running_as_root() {
        command.args(["--reuid=postgres", "--regid=postgres", "--init-groups"]);
    }
    command.arg("--").arg(program);
    command
}

/// A throwaway PostgreSQL cluster in `dir/pg` on a free port, with BuildGrid's schema applied
/// by `bgd migrate`. The server process and the SQLAlchemy URL of its database.
fn start_postgres(dir: &Path, bgd: &Path) -> (Child, String) {
    let pg = dir.join("pg");
    std::fs::create_dir(&pg).expect("mkdir pg");
    if running_as_root() {
        let status = Command::new("chown")
            .args(["postgres:postgres"])
            .arg(&pg)
            .status()
            .expect("chown");
        assert!(status.success());
    }
    let data = pg.join("data");
    let out = as_postgres(&Path::new(PG_BIN).join("initdb"))
        .arg("-D")
        .arg(&data)
        .args(["-A", "trust", "-U", "postgres", "--no-sync"])
        .output()
        .expect("run initdb");
    assert!(
        out.status.success(),
        "initdb: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let port = free_port();
    let log = std::fs::File::create(dir.join("postgres.log")).expect("a log file");
    let child = as_postgres(&Path::new(PG_BIN).join("postgres"))
        .arg("-D")
        .arg(&data)
        .args(["-p", &port.to_string(), "-k"])
        .arg(&pg)
        .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
        .stdin(Stdio::null())
        .stdout(Stdio::from(log.try_clone().expect("a log handle")))
        .stderr(Stdio::from(log))
        .spawn()
        .expect("start postgres");
    let driver = if bgd
        .parent()
        .and_then(|bin| bin.parent())
        .map(|venv| files_under(&venv.join("lib")))
        .is_some_and(|files| {
            files
                .iter()
                .any(|f| f.to_string_lossy().contains("/site-packages/psycopg2/"))
        }) {
        "psycopg2"
    } else {
        "psycopg"
    };
    let url = format!("postgresql+{driver}://postgres@127.0.0.1:{port}/postgres");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let out = Command::new(bgd)
            .args(["migrate", "apply", &url])
            .output()
            .expect("run bgd migrate");
        if out.status.success() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "bgd migrate apply failed: {}{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(dir.join("postgres.log")).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    (child, url)
}

/// BuildGrid's configuration: disk CAS under `dir/cas`, an in-memory action cache, the four
/// cache services on instance `""`, and with a database the SQL scheduler and Execution.
fn config_text(
    dir: &Path,
    port: u16,
    database: Option<&str>,
    jwt_secret: Option<&str>,
    tls: bool,
    threads: u32,
) -> String {
    let channel = if tls {
        format!(
            "    insecure-mode: false\n    credentials:\n      tls-server-key: \"{}\"\n      tls-server-cert: \"{}\"\n",
            dir.join("server.key").display(),
            dir.join("server.pem").display()
        )
    } else {
        "    insecure-mode: true\n".to_string()
    };
    let authorization = match jwt_secret {
        Some(secret) => {
            let file = dir.join("jwt-secret");
            std::fs::write(&file, secret).expect("write the secret");
            format!(
                "  method: jwt\n  secret: \"{}\"\n  algorithm: hs256\n",
                file.display()
            )
        }
        None => "  method: none\n".to_string(),
    };
    let mut text = format!(
        "server:\n  - !channel\n    address: \"127.0.0.1:{port}\"\n{channel}\
         authorization:\n{authorization}\
         storages:\n  - !disk-storage &cas\n    path: \"{}\"\n\
         caches:\n  - !lru-action-cache &ac\n    storage: *cas\n    max-cached-refs: 10000\n    allow-updates: true\n    cache-failed-actions: true\n",
        dir.join("cas").display()
    );
    let execution = match database {
        Some(url) => {
            text.push_str(&format!(
                "connections:\n  - !sql-connection &sql\n    connection-string: \"{url}\"\n    pool-size: 5\n    pool-timeout: 30\n    max-overflow: 10\n\
                 schedulers:\n  - !sql-scheduler &sched\n    sql: *sql\n    storage: *cas\n    action-cache: *ac\n    poll-interval: 0.2\n    bot-poll-interval: 0.2\n    job-assignment-interval: 0.1\n    bot-session-keepalive-timeout: 10\n    property-set: !dynamic-property-set\n      unique-property-keys: []\n      match-property-keys: [\"OSFamily\", \"pool\"]\n      wildcard-property-keys: []\n"
            ));
            "      - !execution\n        scheduler: *sched\n"
        }
        None => "",
    };
    text.push_str(&format!(
        "instances:\n  - name: \"\"\n    services:\n      - !action-cache\n        cache: *ac\n      - !cas\n        storage: *cas\n      - !bytestream\n        storage: *cas\n{execution}\
         thread-pool-size: {threads}\n"
    ));
    text
}
