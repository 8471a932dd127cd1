//! docs/remote-execution.md's two trials, followed as a reader would: every command of
//! "A local trial with buildbox-casd" and "A real engine: BuildGrid with workers" runs, in order,
//! from nothing to `vx run build --all` placing the remote tasks on the server. The reader's fixed
//! places become this test's own: a free port for `50051` and `5433`, a directory of its own for
//! `/tmp/bbx`, `/tmp/pg` and `/var/lib/buildgrid/cas`; nothing else of a command changes. The one
//! line not run here is BuildGrid's `pip install`, which scripts/test runs (checked below); the
//! virtualenv it made stands in for the reader's `bgvenv`.
//!
//! A line ending in `# serves until stopped` is started in the background and waited for (a
//! server until it answers, the worker until BuildGrid has its session). It needs root (the page
//! says so: PostgreSQL's user), like CI.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use vx_test_support::buildgrid::bgvenv_dir;
use vx_test_support::net::free_port;
use vx_test_support::reapi::{buildbox_dir, wait_for_capabilities};

use super::*;

/// One fenced block of the page: its info string, the page line of its first line, its text.
struct Block {
    lang: String,
    line: usize,
    text: String,
}

/// The fenced blocks of the section headed `## {heading}`.
fn blocks(page: &str, heading: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut inside = false;
    let mut open: Option<Block> = None;
    for (i, line) in page.lines().enumerate() {
        if let Some(title) = line.strip_prefix("## ") {
            if open.is_none() {
                inside = title == heading;
                continue;
            }
        }
        if !inside {
            continue;
        }
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(lang)) => {
                open = Some(Block {
                    lang: lang.trim().to_string(),
                    line: i + 2,
                    text: String::new(),
                })
            }
            (Some(_), Some(_)) => found.push(open.take().unwrap()),
            (Some(block), None) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            (None, None) => {}
        }
    }
    found
}

/// The reader's places replaced by this test's.
struct Places(Vec<(String, String)>);

impl Places {
    fn apply(&self, text: &str) -> String {
        self.0
            .iter()
            .fold(text.to_string(), |t, (from, to)| t.replace(from, to))
    }
}

/// A command of the page running in the background, in its own process group (a server's
/// runner and actions go with it); killed with the test process or when dropped.
struct Background {
    child: Child,
    log: PathBuf,
}

impl Background {
    fn start(dir: &Path, command: &str, name: &str) -> Background {
        let log = dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let child = Command::new("setpriv")
            .args(["--pdeathsig", "KILL", "--", "bash", "-c"])
            .arg(command)
            .current_dir(dir)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::from(file.try_clone().unwrap()))
            .stderr(Stdio::from(file))
            .spawn()
            .expect("bash starts");
        Background { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits (up to `patience`) until its log contains `text`.
    fn wait_for(&mut self, text: &str, patience: Duration) {
        let deadline = Instant::now() + patience;
        while !self.log().contains(text) {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("exited ({status}) before saying {text:?}: {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "never said {text:?}: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// Stops the page's PostgreSQL if the test ends before the page's own stop line ran.
struct Postgres(PathBuf);

impl Drop for Postgres {
    fn drop(&mut self) {
        if self.0.join("postmaster.pid").exists() {
            let _ = Command::new("su")
                .args(["postgres", "-c"])
                .arg(format!(
                    "{PG_BIN}/pg_ctl -D {} stop -m immediate",
                    self.0.display()
                ))
                .output();
        }
    }
}

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";
const SERVES: &str = "# serves until stopped";

/// Runs a line of the page with bash in `dir`; it must succeed.
fn run_line(dir: &Path, at: &str, command: &str) {
    let out = Command::new("bash")
        .args(["-c", command])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("bash starts");
    assert!(
        out.status.success(),
        "{at}: `{command}` failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What the trials need that this machine may lack, or `None` when all is there.
fn missing() -> Option<String> {
    let mut missing = Vec::new();
    if !bgvenv_dir().join("bin/bgd").exists() {
        missing.push("BuildGrid (scripts/test installs it in .test-tools/bgvenv)");
    }
    if !buildbox_dir().join("buildbox-run").exists() {
        missing.push("buildbox (scripts/test installs it in .test-tools/buildbox)");
    }
    if !Path::new(PG_BIN).join("initdb").exists() {
        missing.push("PostgreSQL 15 (apt-get install postgresql-15)");
    }
    if !Path::new("/usr/bin/bwrap").exists() {
        missing.push("bubblewrap (apt-get install bubblewrap)");
    }
    if !Path::new("/usr/bin/unzip").exists() {
        missing.push("unzip (apt-get install unzip)");
    }
    use std::os::unix::fs::MetadataExt;
    if std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(1)
        != 0
    {
        missing.push("root (the page's PostgreSQL steps run as root, as CI does)");
    }
    (!missing.is_empty()).then(|| missing.join(", "))
}

/// A workspace whose `lib#build` and `app#build` are `remote`, with the page's `toml` block as
/// the root's remote-execution table; `vx run build --all` must place both on the server.
fn build_on(page_toml: &str, nonce: &str) {
    let f = workspace("grpc://unused", nonce, "");
    f.write(
        "vx.toml",
        &format!("[workspace]\nmembers = [\"packages/*\"]\n\n{page_toml}"),
    );
    f.commit();
    // Bounded: an action no worker takes waits in BuildGrid's queue for good.
    let summary_path = f.path("summary.json");
    let log = f.path("vx.log");
    let file = std::fs::File::create(&log).unwrap();
    let mut vx = f
        .command(
            ".",
            &[
                "run",
                "build",
                "--all",
                &format!("--summarize={}", summary_path.display()),
            ],
        )
        .stdin(Stdio::null())
        .stdout(Stdio::from(file.try_clone().unwrap()))
        .stderr(Stdio::from(file))
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = vx.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = vx.kill();
            let _ = vx.wait();
            panic!(
                "vx run build --all did not finish in 180 s: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status.success(), "{out}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary_path).unwrap()).unwrap();
    for id in ["lib#build", "app#build"] {
        assert_eq!(
            outcome(&summary, id),
            said("success", "miss", "remote"),
            "{id}: {out}"
        );
    }
    assert_eq!(
        f.read("packages/app/dist/both.txt"),
        format!("app source {nonce}\nlib source {nonce}\n")
    );
}

#[test]
fn the_pages_casd_and_buildgrid_trials_run_as_written() {
    if let Some(what) = missing() {
        assert!(
            !vx_test_support::tools::tools_required(),
            "missing for the page's trials: {what}"
        );
        eprintln!("skipped: missing for the page's trials: {what}");
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let page = std::fs::read_to_string(repo.join("docs/remote-execution.md")).unwrap();
    let at = |b: &Block| format!("docs/remote-execution.md:{}", b.line);
    // PostgreSQL's user must reach the cluster's directory.
    let home = tempfile::Builder::new()
        .prefix("vx-page-")
        .tempdir_in(std::env::temp_dir())
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = home.path();
    // The wheel scripts/test fetched, so that pip finds it already downloaded.
    std::fs::create_dir(dir.join("bbx")).unwrap();
    let wheels = buildbox_dir().join("../../..");
    for entry in std::fs::read_dir(&wheels).unwrap().flatten() {
        if entry.file_name().to_string_lossy().ends_with(".whl") {
            std::fs::copy(entry.path(), dir.join("bbx").join(entry.file_name())).unwrap();
        }
    }
    let bbx = dir.join("bbx").display().to_string();
    let nonce = format!("page-{}", std::process::id());

    // --- A local trial with buildbox-casd ---
    let casd_blocks = blocks(&page, "A local trial with buildbox-casd");
    let langs: Vec<&str> = casd_blocks.iter().map(|b| b.lang.as_str()).collect();
    assert_eq!(langs, ["sh", "toml"], "the casd trial's blocks changed");
    let casd_port = free_port();
    let places = Places(vec![
        ("/tmp/bbx".into(), bbx.clone()),
        ("50051".into(), casd_port.to_string()),
    ]);
    let line = casd_blocks[0].text.trim();
    assert!(line.ends_with(SERVES), "{line}");
    let mut casd = Background::start(dir, &places.apply(line), "casd");
    let url = format!("grpc://127.0.0.1:{casd_port}");
    let log = casd.log.clone();
    wait_for_capabilities(&url, "the page's buildbox-casd", &mut casd.child, || {
        std::fs::read_to_string(&log).unwrap_or_default()
    });
    build_on(
        &places.apply(&casd_blocks[1].text),
        &format!("{nonce}-casd"),
    );
    drop(casd);

    // --- A real engine: BuildGrid with workers ---
    let grid = blocks(&page, "A real engine: BuildGrid with workers");
    let langs: Vec<&str> = grid.iter().map(|b| b.lang.as_str()).collect();
    assert_eq!(
        langs,
        ["sh", "sh", "yaml", "sh", "sh", "toml", "sh"],
        "the BuildGrid section's blocks changed"
    );
    // 1. The install: the page's line, as scripts/test runs it for the tests' virtualenv.
    assert_eq!(
        grid[0].text.trim(),
        "python3.13 -m venv bgvenv && bgvenv/bin/pip install -q buildgrid"
    );
    let script = std::fs::read_to_string(repo.join("scripts/test")).unwrap();
    for part in [
        "-m venv \"$bgvenv\"",
        "\"$bgvenv/bin/pip\" install -q buildgrid",
    ] {
        assert!(script.contains(part), "scripts/test no longer runs {part}");
    }
    std::os::unix::fs::symlink(bgvenv_dir(), dir.join("bgvenv")).unwrap();
    // BuildGrid 0.4.4 (Python 3.11) speaks to PostgreSQL through psycopg2, 0.9.1 through psycopg.
    let psycopg3 = Command::new(bgvenv_dir().join("bin/python3"))
        .args(["-c", "import psycopg"])
        .output()
        .is_ok_and(|out| out.status.success());
    let grid_port = free_port();
    let pg_port = free_port();
    let mut replaced = vec![
        ("/tmp/bbx".to_string(), bbx),
        ("/tmp/pg".into(), dir.join("pg").display().to_string()),
        (
            "/var/lib/buildgrid/cas".into(),
            dir.join("cas").display().to_string(),
        ),
        ("50051".into(), grid_port.to_string()),
        ("5433".into(), pg_port.to_string()),
    ];
    if !psycopg3 {
        replaced.push(("postgresql+psycopg:".into(), "postgresql+psycopg2:".into()));
    }
    let places = Places(replaced);
    // 2. PostgreSQL and the schema.
    let _postgres = Postgres(dir.join("pg/data"));
    for line in grid[1].text.lines().filter(|l| !l.trim().is_empty()) {
        run_line(dir, &at(&grid[1]), &places.apply(line));
    }
    // 3. The server: the file the block names, linted, started.
    let yaml = &grid[2].text;
    let name = yaml
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("# "))
        .expect("the yaml block names its file");
    std::fs::write(dir.join(name), places.apply(yaml)).unwrap();
    let lines: Vec<&str> = grid[3].text.lines().collect();
    assert_eq!(lines.len(), 2, "lint, then start");
    run_line(dir, &at(&grid[3]), &places.apply(lines[0]));
    assert!(lines[1].ends_with(SERVES), "{}", lines[1]);
    let mut bgd = Background::start(dir, &places.apply(lines[1]), "bgd");
    let url = format!("grpc://127.0.0.1:{grid_port}");
    let log = bgd.log.clone();
    wait_for_capabilities(&url, "the page's BuildGrid", &mut bgd.child, || {
        std::fs::read_to_string(&log).unwrap_or_default()
    });
    // 4. The worker, copied next to bgvenv as the page says.
    std::fs::copy(
        repo.join("contrib/vx-buildgrid-worker"),
        dir.join("vx-buildgrid-worker"),
    )
    .unwrap();
    let line = grid[4].text.trim();
    assert!(line.ends_with(SERVES), "{line}");
    let mut worker = Background::start(dir, &places.apply(line), "worker");
    worker.wait_for(": session ", Duration::from_secs(60));
    // 5. The workspace: both remote tasks run on the worker.
    build_on(&places.apply(&grid[5].text), &format!("{nonce}-grid"));
    let said = worker.log();
    assert_eq!(
        said.matches("running an action on OSFamily=linux").count(),
        2,
        "{said}"
    );
    drop(worker);
    drop(bgd);
    // 6. PostgreSQL stopped by the page's line.
    run_line(dir, &at(&grid[6]), &places.apply(grid[6].text.trim()));
    assert!(!dir.join("pg/data/postmaster.pid").exists());
}
