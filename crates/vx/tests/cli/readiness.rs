//! Readiness of persistent tasks (EXEC-13, ACC-21): a `ready-when` line releases dependants, a
//! server that is not ready in time or exits first fails, and the not-ready note. Every server
//! ends in a `vx-test-child` carrying a unique marker, so survivors are found by pid; every
//! server that should become ready has a `timeout`, so a matcher bug fails the test instead of
//! hanging it.

use std::time::Duration;

use vx_test_support::process::{test_child_path, unique_marker};

use crate::{assert_contains, assert_no_survivor, one_project};

fn child() -> String {
    test_child_path().display().to_string()
}

/// A nanosecond timestamp a task wrote with `date +%s%N`.
fn stamp(f: &vx_test_support::fixture::Fixture, name: &str) -> u128 {
    let text = f.read(&format!("packages/lib/{name}"));
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("{name} holds a timestamp: {text:?}"))
}

/// ACC-21, first half: the dependant starts at least 1 s after the server and after its ready
/// line; the server is stopped when the dependant is done; exit 0 in under 3 s.
#[test]
fn acc21_dependant_starts_after_the_ready_line() {
    let marker = unique_marker("acc21");
    let f = one_project(&format!(
        concat!(
            "[tasks.server]\n",
            "command = 'date +%s%N > started; sleep 1; date +%s%N > line; echo \"Listening on 8080\"; {} --marker {} sleep 300'\n",
            "persistent = {{ ready-when = 'Listening on \\d+' }}\n",
            "timeout = \"20s\"\n\n",
            "[tasks.e2e]\ncommand = 'date +%s%N > e2e; echo e2e'\ndepends-on = [\"server\"]\n",
        ),
        child(),
        marker
    ));
    let out = f.vx(&["run", "lib#e2e"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.elapsed < Duration::from_secs(3),
        "took {:?}",
        out.elapsed
    );
    assert_contains(&out.stdout, "e2e\n");
    let (started, line, e2e) = (stamp(&f, "started"), stamp(&f, "line"), stamp(&f, "e2e"));
    assert!(
        e2e >= started + 1_000_000_000,
        "e2e started {}ms after the server",
        (e2e - started) / 1_000_000
    );
    assert!(e2e > line, "e2e started before the ready line");
    // Ready, the server is reported running with its time to ready as duration (at least 1 s).
    let running = out
        .stdout
        .lines()
        .find(|l| l.ends_with(" running lib#server"))
        .unwrap_or_else(|| panic!("a running line for the server: {}", out.stdout));
    assert!(!running.contains("ms running"), "{running}");
    assert_no_survivor(&marker);
}

/// A server without a timeout waits for a line that never comes while the other dependency of
/// its only dependant fails: nothing can use the server any more, so vx stops it instead of
/// waiting forever (in both failure modes).
#[test]
fn a_waiting_server_nothing_needs_any_more_is_stopped() {
    for mode in ["deps-ok", "never"] {
        let marker = unique_marker("unneeded");
        let f = one_project(&format!(
            concat!(
                "[tasks.server]\n",
                "command = '{} --marker {} sleep 300'\n",
                "persistent = {{ ready-when = 'never printed' }}\n\n",
                "[tasks.lint]\ncommand = 'sleep 0.3; exit 1'\n\n",
                "[tasks.e2e]\ncommand = 'echo e2e'\ndepends-on = [\"server\", \"lint\"]\n",
            ),
            child(),
            marker
        ));
        let flag = format!("--continue={mode}");
        let out = f.vx(&["run", "lib#e2e", &flag]);
        assert_eq!(out.code, 1, "{mode}: {out:?}");
        assert_contains(
            &out.stdout,
            "vx: not ready, and no task needs it any more; stopping the task",
        );
        assert_contains(&out.stdout, "not ready: stopped, no task needs it any more");
        assert_no_survivor(&marker);
    }
}

/// ACC-21, second half: no line matches within the timeout, so the server is stopped and
/// failed, its dependant skipped, and nothing it started is left.
#[test]
fn acc21_a_server_not_ready_in_time_fails_and_its_dependant_is_skipped() {
    let marker = unique_marker("acc21b");
    let f = one_project(&format!(
        concat!(
            "[tasks.server]\n",
            "command = 'sleep 1; echo \"Listening on 8080\"; {} --marker {} sleep 300'\n",
            "persistent = {{ ready-when = 'Ready' }}\n",
            "timeout = \"2s\"\n\n",
            "[tasks.e2e]\ncommand = 'touch e2e-ran; echo e2e'\ndepends-on = [\"server\"]\n",
        ),
        child(),
        marker
    ));
    let out = f.vx(&["run", "lib#e2e"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(
        &out.stdout,
        "┌─ lib#server  not ready: timed out after 2.00s\n",
    );
    assert_contains(
        &out.stdout,
        "Listening on 8080\nvx: not ready: timed out after 2.00s; stopping the task\n",
    );
    assert_contains(
        &out.stdout,
        "◼ lib#server  not ready: timed out after 2.00s  · output above\n",
    );
    assert_contains(&out.stdout, "skipped lib#e2e • blocked by lib#server");
    assert!(!f.path("packages/lib/e2e-ran").exists(), "e2e never runs");
    assert_no_survivor(&marker);
}

/// EXEC-13: after `VX_READY_NOTICE`, one note names the pattern and the timeout.
#[test]
fn the_not_ready_note_names_the_pattern_and_the_timeout() {
    let marker = unique_marker("notice");
    let f = one_project(&format!(
        concat!(
            "[tasks.server]\n",
            "command = '{} --marker {} print starting sleep 300'\n",
            "persistent = {{ ready-when = 'Listening on \\d+' }}\n",
            "timeout = \"1s\"\n\n",
            "[tasks.e2e]\ncommand = 'echo e2e'\ndepends-on = [\"server\"]\n",
        ),
        child(),
        marker
    ));
    let out = f.vx_in("", &["run", "lib#e2e"], &[("VX_READY_NOTICE", "200ms")]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(
        &out.stdout,
        "starting\n\
         vx: not ready after 200ms: no line has matched `Listening on \\d+` yet (timeout 1.00s)\n\
         vx: not ready: timed out after 1.00s; stopping the task\n",
    );
    assert_eq!(
        out.stdout.matches("vx: not ready after").count(),
        1,
        "one note, shown in the frame (the recap does not repeat it): {}",
        out.stdout
    );
    assert_no_survivor(&marker);
}

/// The note without a timeout, on a requested server that becomes ready later: it is part of
/// the server's output, replayed after the footer.
#[test]
fn the_not_ready_note_of_a_server_without_timeout_says_no_timeout() {
    let f = one_project(concat!(
        "[tasks.dev]\n",
        "command = 'sleep 1; echo \"Listening on 8080\"; sleep 0.5; exit 0'\n",
        "persistent = { ready-when = 'Listening on \\d+' }\n",
    ));
    let out = f.vx_in("", &["run", "lib#dev"], &[("VX_READY_NOTICE", "200ms")]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(
        &out.stdout,
        "lib#dev │ vx: not ready after 200ms: no line has matched `Listening on \\d+` yet\n\
         lib#dev │ Listening on 8080\n",
    );
    assert_contains(&out.stderr, "vx: lib#dev ended (exit 0)");
}

/// EXEC-13: a server that exits before its line is failed with its exit code, whatever the
/// code, and its dependant is skipped.
#[test]
fn a_server_that_exits_before_it_is_ready_fails() {
    let f = one_project(concat!(
        "[tasks.server]\ncommand = 'echo starting; exit 3'\n",
        "persistent = { ready-when = 'Listening' }\n\n",
        "[tasks.e2e]\ncommand = 'echo e2e'\ndepends-on = [\"server\"]\n",
    ));
    let out = f.vx(&["run", "lib#e2e"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stdout, "┌─ lib#server  not ready: exited (code 3)\n");
    assert_contains(&out.stdout, "skipped lib#e2e • blocked by lib#server");

    f.write(
        "packages/lib/vx.toml",
        concat!(
            "[tasks.server]\ncommand = 'echo starting'\n",
            "persistent = { ready-when = 'Listening' }\n\n",
            "[tasks.e2e]\ncommand = 'echo e2e'\ndepends-on = [\"server\"]\n",
        ),
    );
    let out = f.vx(&["run", "lib#e2e"]);
    assert_eq!(out.code, 1, "an exit 0 before ready fails too: {out:?}");
    assert_contains(&out.stdout, "not ready: exited (code 0)");
}

/// A server that runs `printing` (single-quoted shell in TOML) then sleeps, ready on the exact
/// line `Listening on 8080`: its dependant runs, and nothing is left behind.
fn assert_ready_line_is_found(name: &str, printing: &str) {
    let marker = unique_marker(name);
    let f = one_project(&format!(
        concat!(
            "[tasks.server]\n",
            "command = '{}; {} --marker {} sleep 300'\n",
            "persistent = {{ ready-when = '^Listening on 8080$' }}\n",
            "timeout = \"10s\"\n\n",
            "[tasks.e2e]\ncommand = 'echo e2e-ran'\ndepends-on = [\"server\"]\n",
        ),
        printing,
        child(),
        marker
    ));
    let out = f.vx(&["run", "lib#e2e"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "e2e-ran");
    assert_no_survivor(&marker);
}

/// Lines are matched with escapes removed, joined across writes (an escape sequence split
/// between writes included); the anchored pattern proves nothing else is left in the line.
#[test]
fn a_coloured_ready_line_split_across_writes_matches() {
    assert_ready_line_is_found(
        "colour",
        "printf \"Listen\"; sleep 0.2; printf \"\\033[32ming\\033[0m on \\033[\"; sleep 0.2; printf \"1m80\\033[0m80\\n\"",
    );
}

/// A line ends at `\r` as well as `\n` (progress output), also on stderr.
#[test]
fn a_carriage_return_ends_a_ready_line_on_stderr() {
    assert_ready_line_is_found("cr", "printf \"compiling\\rListening on 8080\\r\" >&2");
}

/// SCHED-1: a server waiting for its line holds its exec slot; with one slot, an unrelated
/// task starts only once the server is ready.
#[test]
fn a_waiting_server_holds_its_slot_until_it_is_ready() {
    let marker = unique_marker("slot");
    let f = one_project(&format!(
        concat!(
            "[tasks.server]\n",
            "command = 'sleep 0.5; touch line-written; echo ready-now; {} --marker {} sleep 300'\n",
            "persistent = {{ ready-when = 'ready-now' }}\n",
            "timeout = \"10s\"\n\n",
            "[tasks.e2e]\ncommand = 'echo e2e-ran'\ndepends-on = [\"server\"]\n\n",
            "[tasks.other]\ncommand = 'test -e line-written && echo other-after-ready'\n",
        ),
        child(),
        marker
    ));
    let out = f.vx(&["run", "lib#e2e", "lib#other", "--concurrency", "1"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "other-after-ready");
    assert_no_survivor(&marker);
}

/// EXEC-8: a persistent task without `ready-when` is ready at spawn, so its timeout never
/// applies.
#[test]
fn the_timeout_of_a_server_ready_at_spawn_never_applies() {
    let marker = unique_marker("plain");
    let f = one_project(&format!(
        concat!(
            "[tasks.server]\ncommand = '{} --marker {} sleep 300'\npersistent = true\n",
            "timeout = \"200ms\"\n\n",
            "[tasks.e2e]\ncommand = 'sleep 0.6; echo e2e-ran'\ndepends-on = [\"server\"]\n",
        ),
        child(),
        marker
    ));
    let out = f.vx(&["run", "lib#e2e"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "e2e-ran");
    assert!(!out.stdout.contains("timed out"), "{}", out.stdout);
    assert_no_survivor(&marker);
}
