//! The sandbox's init (SBX-9) inside the real bubblewrap: vx's binary as pid 1 of the pid
//! namespace runs the command, forwards the signals vx writes to its control pipe, reports the
//! command's exit, and takes every process of the sandbox with it when it exits.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::Duration;

use vx_exec::sandbox::{bwrap_args, plan, View};
use vx_exec::sandbox_init::{init_args, parse_report, InitReport};
use vx_test_support::process::{
    bwrap_or_skip, test_child_path, unique_marker, wait_until_no_marker,
};

use crate::vx_bin;

/// A running sandbox: bwrap, the control pipe's write end, and what init reports (read on a
/// thread as it arrives: other tests' children may inherit the write end, so waiting for its
/// end could take as long as they live).
struct Started {
    child: std::process::Child,
    control: std::fs::File,
    report: std::sync::mpsc::Receiver<Vec<u8>>,
    _dir: tempfile::TempDir,
}

/// Starts `command` under init in a sandbox planned like a task's (`plan`, `bwrap_args`): an
/// empty workspace outside /tmp, its own temporary directory.
fn start(bwrap: &std::path::Path, command: &[&str]) -> Started {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = dir.path().join("ws");
    let tmpdir = dir.path().join("task-tmp");
    let empty_file = dir.path().join("empty");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&tmpdir).unwrap();
    std::fs::write(&empty_file, "").unwrap();
    let view = View {
        project: root.clone(),
        root,
        tmpdir,
        empty_file,
        init: vx_bin().into(),
        // The test child, wherever the build lives (under /tmp the sandbox would hide it).
        reads: vec![test_child_path()],
        ..View::default()
    };
    let (control_read, control_write): (OwnedFd, OwnedFd) = nix::unistd::pipe().unwrap();
    let (report_read, report_write): (OwnedFd, OwnedFd) = nix::unistd::pipe().unwrap();
    let command: Vec<std::ffi::OsString> = command.iter().map(Into::into).collect();
    let child = Command::new(bwrap)
        .args(bwrap_args(&plan(&view).unwrap(), &view))
        .arg("--")
        .arg(vx_bin())
        .args(init_args(
            control_read.as_raw_fd(),
            report_write.as_raw_fd(),
            None,
            &command,
        ))
        .stdin(Stdio::null())
        .spawn()
        .expect("bwrap starts");
    // Only the sandbox keeps the other ends.
    drop(control_read);
    drop(report_write);
    let (tx, report) = std::sync::mpsc::channel();
    let mut reader = std::fs::File::from(report_read);
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buffer) {
            if n == 0 || tx.send(buffer[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    Started {
        child,
        control: std::fs::File::from(control_write),
        report,
        _dir: dir,
    }
}

/// The sandbox's exit code; a sandbox still running after 20 s is killed and fails the test.
fn wait(child: &mut std::process::Child) -> Option<i32> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the sandbox did not end");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What init reported, once its `exit` line has arrived (at most 20 s).
fn report(started: &Started) -> Option<InitReport> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut text = Vec::new();
    loop {
        if let Some(report) = parse_report(&String::from_utf8_lossy(&text)) {
            return Some(report);
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match started.report.recv_timeout(left) {
            Ok(chunk) => text.extend(chunk),
            Err(_) => return None,
        }
    }
}

/// [`start`] with the test child carrying `marker` and running `actions`.
fn start_marked(bwrap: &std::path::Path, marker: &str, actions: &[&str]) -> Started {
    let program = test_child_path().display().to_string();
    let mut command = vec![program.as_str(), "--marker", marker];
    command.extend_from_slice(actions);
    start(bwrap, &command)
}

#[test]
fn the_commands_exit_code_comes_back_through_bwrap_and_the_report() {
    let Some(bwrap) = bwrap_or_skip() else { return };
    let mut sandbox = start(&bwrap, &["sh", "-c", "exit 7"]);
    assert_eq!(wait(&mut sandbox.child), Some(7));
    let report = report(&sandbox).expect("a report line");
    assert_eq!((report.exit_code, report.signal), (7, 0));
}

#[test]
fn a_signal_written_to_the_control_pipe_reaches_the_commands_processes() {
    let Some(bwrap) = bwrap_or_skip() else { return };
    let marker = unique_marker("sbx-init");
    // The leader and two descendants, all asleep; bwrap and init carry the marker in their
    // arguments too: five with the three sleepers.
    let mut sandbox = start_marked(&bwrap, &marker, &["fork-tree", "2", "sleep", "300"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while vx_test_support::process::pids_with_marker(&marker).len() < 5 {
        assert!(
            std::time::Instant::now() < deadline,
            "the processes never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    sandbox.control.write_all(b"TERM\n").unwrap();
    assert_eq!(wait(&mut sandbox.child), Some(128 + 15));
    let report = report(&sandbox).expect("a report line");
    assert_eq!((report.exit_code, report.signal), (143, 15));
    // Every process of the sandbox ended with its init.
    wait_until_no_marker(&marker, Duration::from_secs(5)).expect("no survivor");
}

#[test]
fn a_descendant_that_ignores_sigterm_ends_with_the_sandbox() {
    let Some(bwrap) = bwrap_or_skip() else { return };
    let marker = unique_marker("sbx-stubborn");
    // A descendant in a process group of its own that ignores SIGTERM; the leader exits.
    let mut sandbox = start_marked(
        &bwrap,
        &marker,
        &[
            "fork-tree",
            "1",
            "new-group",
            "ignore-term",
            "forever",
            "--",
            "sleep",
            "0.3",
        ],
    );
    assert_eq!(wait(&mut sandbox.child), Some(0));
    assert_eq!(report(&sandbox).map(|r| r.exit_code), Some(0));
    wait_until_no_marker(&marker, Duration::from_secs(5)).expect("no survivor");
}

#[test]
fn init_refuses_a_malformed_command_line() {
    for args in [
        vec!["__vx_sandbox_init", "3", "3", "--", "true"],
        vec!["__vx_sandbox_init", "1", "4", "--", "true"],
        vec!["__vx_sandbox_init", "3", "4", "true"],
        vec!["__vx_sandbox_init", "3", "4", "--"],
        // Not open in this process (numbers far above what a test process holds).
        vec!["__vx_sandbox_init", "900", "901", "--", "true"],
    ] {
        let out = Command::new(vx_bin()).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("vx sandbox init: "),
            "{args:?}: {stderr}"
        );
    }
}

/// SBX-7's observation inside the real sandbox: what the command tried to read and write is
/// reported, including what the sandbox hid from it.
#[test]
fn init_reports_what_the_command_read_and_wrote() {
    let Some(bwrap) = bwrap_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let visible = dir.path().join("visible.txt");
    std::fs::write(&visible, "seen").unwrap();
    let script = format!(
        "cat {v} >/dev/null; cat /nonexistent/secret.txt 2>/dev/null; echo x > /tmp/made; true",
        v = visible.display()
    );
    let mut sandbox = start(&bwrap, &["sh", "-c", &script]);
    assert_eq!(wait(&mut sandbox.child), Some(0));
    let report = report(&sandbox).expect("a report");
    let has = |kind: vx_exec::trace::AccessKind, path: &str| {
        report
            .accesses
            .iter()
            .any(|a| a.kind == kind && a.path == std::path::Path::new(path))
    };
    use vx_exec::trace::AccessKind::{Read, Write};
    assert!(
        has(Read, &visible.display().to_string()),
        "{:?}",
        report.accesses
    );
    assert!(
        has(Read, "/nonexistent/secret.txt"),
        "a read that failed is seen too"
    );
    assert!(has(Write, "/tmp/made"), "{:?}", report.accesses);
}
