//! The command lines the documentation shows run as shown (issue 25): each `vx …` line of a
//! shell block is run, in order, with bash in one copy of `examples/demo` (a fresh git
//! repository), as a reader following the page would. A line fails the test when it exits
//! non-zero; a long-running one (a dev server, `vx watch`) passes when it is still running
//! after a few seconds with no `error:` line, and is then stopped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// The `vx …` lines of the shell blocks of a Markdown page, with their line numbers; a trailing
/// ` # comment` is dropped (a task id's `#` has no space before it).
fn command_lines(markdown: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut shell = false;
    let mut inside = false;
    for (n, line) in markdown.lines().enumerate() {
        if let Some(fence) = line.trim_start().strip_prefix("```") {
            if inside {
                inside = false;
            } else {
                inside = true;
                shell = matches!(fence.trim(), "sh" | "bash" | "shell");
            }
            continue;
        }
        let text = line.trim();
        // `vx …`, `source <(vx …)`, or `NAME=value … vx …`.
        let words: Vec<&str> = text.split_whitespace().collect();
        let after_vars = words
            .iter()
            .position(|w| !w.contains('=') || w.starts_with('-'))
            .map(|at| &words[at..])
            .unwrap_or_default();
        let is_vx = after_vars.first() == Some(&"vx") || text.starts_with("source <(vx ");
        if !inside || !shell || !is_vx {
            continue;
        }
        let command = match text.find(" # ") {
            Some(at) => text[..at].trim_end(),
            None => text,
        };
        found.push((n + 1, command.to_string()));
    }
    found
}

/// A copy of `examples/demo` in a fresh git repository that looks like a clone with work on it:
/// `origin/main` (also `origin/HEAD`) is the first commit, and `HEAD` one more that edits
/// `packages/ui` and `apps/web`, so the pages' `--affected` and `[origin/main]` examples select
/// something.
fn demo() -> tempfile::TempDir {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new("cp")
        .arg("-a")
        .arg(repo.join("examples/demo/."))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args(["-c", "user.email=docs@vx", "-c", "user.name=docs"])
            .args(args)
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "demo"]);
    git(&["update-ref", "refs/remotes/origin/main", "HEAD"]);
    git(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/main",
    ]);
    for file in ["packages/ui/src/button.js", "apps/web/src/app.js"] {
        let path = dir.path().join(file);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("// a later change\n");
        std::fs::write(&path, text).unwrap();
    }
    git(&["commit", "-qam", "later"]);
    dir
}

/// Runs `command` with bash in `dir` (vx first on PATH, in a session of its own): its exit code,
/// or `None` when it was still running after `patience` and was stopped; and its output.
fn run(dir: &Path, command: &str, patience: Duration) -> (Option<i32>, String) {
    let bin: PathBuf = Path::new(crate::vx_bin()).parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let log = dir.join(".doc-command.log");
    let file = std::fs::File::create(&log).unwrap();
    let mut child = Command::new("setsid")
        .args(["bash", "-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("CI")
        .env_remove("VX_CACHE_DIR")
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .unwrap();
    let started = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > patience {
            let group = Pid::from_raw(-(child.id() as i32));
            let _ = kill(group, Signal::SIGTERM);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    (code, output)
}

/// Runs every command line of `page` in order in one demo copy; the failures, described.
fn failures_of(page: &str) -> Vec<String> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(repo.join(page)).unwrap();
    let commands = command_lines(&text);
    if commands.is_empty() {
        return Vec::new();
    }
    let dir = demo();
    let mut failures = Vec::new();
    for (line, command) in commands {
        let long_running = command.contains("#dev") || command.starts_with("vx watch");
        let patience = if long_running {
            Duration::from_secs(4)
        } else {
            Duration::from_secs(60)
        };
        let (code, output) = run(dir.path(), &command, patience);
        let ok = match code {
            Some(0) => true,
            None => long_running && !output.contains("error:"),
            Some(_) => false,
        };
        if !ok {
            failures.push(format!(
                "{page}:{line}: `{command}` ended with {code:?}:\n{output}"
            ));
        }
    }
    failures
}

#[test]
fn the_readme_command_lines_run_on_the_demo() {
    let failures = failures_of("README.md");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every page of docs/, each in its own copy of the demo.
#[test]
fn the_docs_command_lines_run_on_the_demo() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut pages: Vec<String> = std::fs::read_dir(repo.join("docs"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    pages.sort();
    let failures: Vec<String> = pages.iter().flat_map(|page| failures_of(page)).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn command_lines_are_found_with_their_comments_dropped() {
    let page =
        "text\n```sh\nvx run web#dev   # a server\nvx show web\nls\n```\n```toml\nvx = 1\n```\n";
    assert_eq!(
        command_lines(page),
        [
            (3, "vx run web#dev".to_string()),
            (4, "vx show web".to_string())
        ]
    );
}
