//! The sandbox's init (SBX-9) inside the real bubblewrap: vx's binary as pid 1 of the pid
//! namespace runs the command, forwards the signals vx writes to its control pipe, reports the
//! command's exit, and takes every process of the sandbox with it when it exits.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::Duration;

use vx_exec::sandbox_init::{init_args, parse_report, InitReport};
use vx_test_support::process::{
    bwrap_or_skip, test_child_path, unique_marker, wait_until_no_marker,
};

use crate::vx_bin;

/// Starts `command` under init in a sandbox; returns the child (bwrap), the control pipe's
/// write end and the report pipe's read end.
fn start(
    bwrap: &std::path::Path,
    command: &[&str],
) -> (std::process::Child, std::fs::File, std::fs::File) {
    let (control_read, control_write): (OwnedFd, OwnedFd) = nix::unistd::pipe().unwrap();
    let (report_read, report_write): (OwnedFd, OwnedFd) = nix::unistd::pipe().unwrap();
    let command: Vec<std::ffi::OsString> = command.iter().map(Into::into).collect();
    let child = Command::new(bwrap)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--unshare-all",
            "--as-pid-1",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--",
        ])
        .arg(vx_bin())
        .args(init_args(
            control_read.as_raw_fd(),
            report_write.as_raw_fd(),
            &command,
        ))
        .stdin(Stdio::null())
        .spawn()
        .expect("bwrap starts");
    // Only the sandbox keeps the other ends.
    drop(control_read);
    drop(report_write);
    (
        child,
        std::fs::File::from(control_write),
        std::fs::File::from(report_read),
    )
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

fn report(mut pipe: std::fs::File) -> Option<InitReport> {
    let mut text = String::new();
    pipe.read_to_string(&mut text).unwrap();
    parse_report(&text)
}

#[test]
fn the_commands_exit_code_comes_back_through_bwrap_and_the_report() {
    let Some(bwrap) = bwrap_or_skip() else { return };
    let (mut child, _control, report_pipe) = start(&bwrap, &["sh", "-c", "exit 7"]);
    assert_eq!(wait(&mut child), Some(7));
    let report = report(report_pipe).expect("a report line");
    assert_eq!((report.exit_code, report.signal), (7, 0));
}

#[test]
fn a_signal_written_to_the_control_pipe_reaches_the_commands_processes() {
    let Some(bwrap) = bwrap_or_skip() else { return };
    let marker = unique_marker("sbx-init");
    let child_program = test_child_path().display().to_string();
    // The leader and two descendants, all asleep.
    let (mut child, mut control, report_pipe) = start(
        &bwrap,
        &[
            &child_program,
            "--marker",
            &marker,
            "fork-tree",
            "2",
            "sleep",
            "300",
        ],
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while vx_test_support::process::pids_with_marker(&marker).len() < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "the processes never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    control.write_all(b"TERM\n").unwrap();
    assert_eq!(wait(&mut child), Some(128 + 15));
    let report = report(report_pipe).expect("a report line");
    assert_eq!((report.exit_code, report.signal), (143, 15));
    // Every process of the sandbox ended with its init.
    wait_until_no_marker(&marker, Duration::from_secs(5)).expect("no survivor");
}

#[test]
fn a_descendant_that_ignores_sigterm_ends_with_the_sandbox() {
    let Some(bwrap) = bwrap_or_skip() else { return };
    let marker = unique_marker("sbx-stubborn");
    let child_program = test_child_path().display().to_string();
    // A descendant in a process group of its own that ignores SIGTERM; the leader exits.
    let (mut child, _control, report_pipe) = start(
        &bwrap,
        &[
            &child_program,
            "--marker",
            &marker,
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
    assert_eq!(wait(&mut child), Some(0));
    assert_eq!(report(report_pipe).map(|r| r.exit_code), Some(0));
    wait_until_no_marker(&marker, Duration::from_secs(5)).expect("no survivor");
}

#[test]
fn init_refuses_a_malformed_command_line() {
    for args in [
        vec!["__vx_sandbox_init", "3", "3", "--", "true"],
        vec!["__vx_sandbox_init", "1", "4", "--", "true"],
        vec!["__vx_sandbox_init", "3", "4", "true"],
        vec!["__vx_sandbox_init", "3", "4", "--"],
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
    let (mut child, _control, report_pipe) = start(&bwrap, &["sh", "-c", &script]);
    assert_eq!(wait(&mut child), Some(0));
    let report = report(report_pipe).expect("a report");
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
