//! `vx-exec`'s supervision with the `vx-test-child` program: process trees deeper than `sh`
//! makes, descendants that leave the task's process group, and TERM-ignoring grandchildren,
//! each checked for survivors by marker (TEST-2).
//!
//! These live here rather than in `vx-exec` because Cargo builds `vx-test-child` only for this
//! package's own tests.

use std::ffi::OsString;
use std::time::Duration;

use crossbeam_channel::Receiver;
use vx_exec::{Completion, ExecEvent, SpawnSpec, StdinMode, Supervisor, TaskHandle};
use vx_test_support::process::{
    pids_with_marker, test_child_path, unique_marker, wait_until_no_marker,
};

fn spec(marker: &str, actions: &[&str]) -> SpawnSpec {
    let mut args: Vec<OsString> = vec!["--marker".into(), marker.into()];
    args.extend(actions.iter().map(OsString::from));
    SpawnSpec {
        program: test_child_path(),
        arg0: "vx-test-child".into(),
        args,
        cwd: std::env::temp_dir(),
        env: Vec::new(),
        stdin: StdinMode::Null,
        timeout: None,
        kill_grace: Duration::from_secs(20),
        drain: Duration::from_millis(250),
        stop_leftovers_on_exit: true,
        sandbox: None,
    }
}

fn start(spec: SpawnSpec) -> (TaskHandle, Receiver<ExecEvent>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let handle = Supervisor::new().spawn(
        spec,
        Box::new(move |event| {
            let _ = tx.send(event);
        }),
    );
    (handle, rx)
}

/// The events other than output, and the completion.
fn finish(rx: &Receiver<ExecEvent>) -> (Vec<String>, Completion) {
    let mut notes = Vec::new();
    loop {
        match rx
            .recv_timeout(Duration::from_secs(60))
            .expect("completion")
        {
            ExecEvent::Output { .. } => {}
            ExecEvent::Completed(completion) => return (notes, completion),
            other => notes.push(format!("{other:?}")),
        }
    }
}

fn wait_for_ready(rx: &Receiver<ExecEvent>) {
    match rx.recv_timeout(Duration::from_secs(60)).expect("ready") {
        ExecEvent::Output { bytes, .. } => assert_eq!(bytes, b"ready\n"),
        other => panic!("expected `ready`, got {other:?}"),
    }
}

#[test]
fn leftover_grandchildren_of_a_one_shot_task_are_stopped() {
    let marker = unique_marker("leftovers");
    let (_handle, rx) = start(spec(&marker, &["fork-tree", "2", "--"]));
    let (notes, completion) = finish(&rx);
    assert_eq!(notes, ["OutputCut", "LeftoversStopped(2)"]);
    assert_eq!(completion.exit_code, 0);
    assert_eq!(wait_until_no_marker(&marker, Duration::ZERO), Ok(()));
}

#[test]
fn a_leftover_that_left_the_process_group_is_found_through_the_session() {
    let marker = unique_marker("left-group");
    let (_handle, rx) = start(spec(
        &marker,
        &["fork-tree", "1", "new-group", "forever", "--"],
    ));
    let (notes, completion) = finish(&rx);
    assert_eq!(notes, ["OutputCut", "LeftoversStopped(1)"]);
    assert_eq!(completion.exit_code, 0);
    assert_eq!(wait_until_no_marker(&marker, Duration::ZERO), Ok(()));
}

#[test]
fn a_descendant_in_another_process_group_is_found_through_the_session() {
    let marker = unique_marker("new-group");
    // The leader and its child both print `ready`; only the child can change its group.
    let (handle, rx) = start(spec(
        &marker,
        &["fork-tree", "1", "new-group", "print", "ready", "forever"],
    ));
    let mut stdout = Vec::new();
    while stdout != b"ready\nready\n" {
        match rx.recv_timeout(Duration::from_secs(60)).expect("ready") {
            ExecEvent::Output { bytes, .. } => stdout.extend(bytes),
            other => panic!("expected output, got {other:?}"),
        }
    }
    handle.stop(libc::SIGTERM);
    let (_, completion) = finish(&rx);
    assert!(completion.stopped && !completion.killed);
    assert_eq!(wait_until_no_marker(&marker, Duration::ZERO), Ok(()));
}

#[test]
fn timeout_kills_a_term_ignoring_tree() {
    let marker = unique_marker("timeout-tree");
    let mut spec = spec(&marker, &["fork-tree", "2", "ignore-term", "sleep", "300"]);
    spec.timeout = Some(Duration::from_millis(500));
    spec.kill_grace = Duration::from_millis(300);
    let (_handle, rx) = start(spec);
    let (notes, completion) = finish(&rx);
    assert_eq!(notes[0], "TimedOut");
    assert!(completion.timed_out && completion.killed);
    assert_eq!(completion.exit_code, 137);
    assert_eq!(wait_until_no_marker(&marker, Duration::ZERO), Ok(()));
}

#[test]
fn stop_of_a_persistent_task_after_its_leader_exited_stops_what_it_left() {
    let marker = unique_marker("daemon");
    let mut spec = spec(
        &marker,
        &[
            "fork-tree",
            "1",
            "ignore-term",
            "forever",
            "--",
            "print",
            "ready",
        ],
    );
    spec.stop_leftovers_on_exit = false;
    spec.kill_grace = Duration::from_millis(300);
    let (handle, rx) = start(spec);
    let (notes, completion) = finish(&rx);
    assert_eq!(notes, ["OutputCut"]);
    assert_eq!(completion.exit_code, 0);
    assert_eq!(pids_with_marker(&marker).len(), 1);
    handle.stop(libc::SIGTERM);
    handle.wait_stopped();
    assert_eq!(wait_until_no_marker(&marker, Duration::ZERO), Ok(()));
}

#[test]
fn a_native_crash_is_128_plus_sigsegv() {
    let marker = unique_marker("segv");
    let (_handle, rx) = start(spec(&marker, &["segv"]));
    let (_, completion) = finish(&rx);
    assert_eq!(completion.exit_code, 128 + libc::SIGSEGV);
}

#[test]
fn peak_memory_is_measured() {
    let marker = unique_marker("alloc");
    let (_handle, rx) = start(spec(&marker, &["alloc", "64"]));
    let (_, completion) = finish(&rx);
    let usage = completion.usage.expect("wait4 usage");
    assert!(usage.max_rss_bytes >= 64 << 20, "{usage:?}");
}

#[test]
fn a_persistent_task_that_exits_on_stdin_eof_stays_up_on_a_held_pipe() {
    let marker = unique_marker("stdin");
    let mut spec = spec(&marker, &["print", "ready", "wait-stdin-eof"]);
    spec.stdin = StdinMode::HeldPipe;
    let (handle, rx) = start(spec);
    wait_for_ready(&rx);
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
    assert_eq!(pids_with_marker(&marker).len(), 1);
    handle.stop(libc::SIGTERM);
    let (_, completion) = finish(&rx);
    assert!(completion.stopped);
    assert_eq!(completion.exit_code, 143);
}
