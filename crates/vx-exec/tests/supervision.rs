//! Process supervision end to end: real `sh -c` tasks through the [`Supervisor`], checking
//! output, exit statuses, drains, leftovers, timeouts, stops and spawn failures.
//!
//! Survivors are checked by a marker in argv: background `sleep`s get a duration nobody else
//! uses (`300.<pid><n>`), found in `/proc/*/cmdline`. Time bounds are only generous upper
//! bounds proving that vx did not wait for a sleep or a full grace, plus lower bounds where a
//! grace must have been honoured.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use vx_exec::{Completion, ExecEvent, ExitReason, SpawnSpec, StdinMode, Stream, Supervisor};
use vx_test_support::process::{pids_with_marker, wait_until_no_marker};

/// Far above anything a passing test needs; a test that hangs fails here instead.
const PATIENCE: Duration = Duration::from_secs(60);

fn sh(script: &str) -> SpawnSpec {
    SpawnSpec {
        program: "/bin/sh".into(),
        arg0: "sh".into(),
        args: vec!["-c".into(), script.into()],
        cwd: std::env::temp_dir(),
        env: vec![(
            "PATH".into(),
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
        )],
        stdin: StdinMode::Null,
        timeout: None,
        kill_grace: Duration::from_secs(2),
        drain: Duration::from_millis(250),
        stop_leftovers_on_exit: true,
        sandbox: None,
    }
}

/// A `sleep` duration no other process uses, to find the sleep in `/proc` by its argv.
fn sleep_marker() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    format!(
        "300.{}{:04}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

fn start(spec: SpawnSpec) -> (vx_exec::TaskHandle, Receiver<ExecEvent>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let handle = Supervisor::new().spawn(
        spec,
        Box::new(move |event| {
            let _ = tx.send(event);
        }),
    );
    (handle, rx)
}

/// Everything a task reported, in order, with output gathered per stream.
#[derive(Debug)]
struct Finished {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// The events other than output and `Completed`, in order.
    notes: Vec<String>,
    completion: Completion,
    /// From the call to `finish` to `Completed`.
    elapsed: Duration,
}

impl Finished {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// Collects events until `Completed`, checking that it comes exactly once and last.
fn finish(rx: &Receiver<ExecEvent>) -> Finished {
    let begun = Instant::now();
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let mut notes = Vec::new();
    loop {
        let event = rx
            .recv_timeout(PATIENCE)
            .expect("the task completes and reports it");
        match event {
            ExecEvent::Output {
                stream: Stream::Stdout,
                bytes,
            } => stdout.extend(bytes),
            ExecEvent::Output {
                stream: Stream::Stderr,
                bytes,
            } => stderr.extend(bytes),
            ExecEvent::Completed(completion) => {
                let elapsed = begun.elapsed();
                // The sink is dropped with the task's thread right after `Completed`.
                assert!(
                    matches!(
                        rx.recv_timeout(PATIENCE),
                        Err(RecvTimeoutError::Disconnected)
                    ),
                    "nothing follows Completed"
                );
                return Finished {
                    stdout,
                    stderr,
                    notes,
                    completion,
                    elapsed,
                };
            }
            other => notes.push(format!("{other:?}")),
        }
    }
}

fn run(spec: SpawnSpec) -> Finished {
    let (_handle, rx) = start(spec);
    finish(&rx)
}

/// Waits for the first stdout chunk, which the scripts below print once they are set up.
fn wait_for_ready(rx: &Receiver<ExecEvent>) {
    match rx
        .recv_timeout(PATIENCE)
        .expect("the task reports readiness")
    {
        ExecEvent::Output {
            stream: Stream::Stdout,
            bytes,
        } => assert_eq!(bytes, b"ready\n"),
        other => panic!("expected `ready`, got {other:?}"),
    }
}

/// Waits until a process running `program` carries `marker` (it has executed, not just forked).
fn wait_for_program(marker: &str, program: &str) {
    let deadline = Instant::now() + PATIENCE;
    while !pids_with_marker(marker).iter().any(|pid| {
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .is_ok_and(|comm| comm.trim() == program)
    }) {
        assert!(Instant::now() < deadline, "`{program}` never started");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn output_of_both_streams_arrives() {
    let done = run(sh("echo out; echo err >&2; echo more"));
    assert_eq!(done.stdout(), "out\nmore\n");
    assert_eq!(done.stderr, b"err\n");
    assert!(matches!(done.completion.exit, ExitReason::Code(0)));
    assert_eq!(done.completion.exit_code, 0);
    assert!(done.notes.is_empty(), "{:?}", done.notes);
    assert!(done.completion.usage.is_some());
    let flags = &done.completion;
    assert!(!flags.timed_out && !flags.stopped && !flags.killed);
}

#[test]
fn exit_code_is_the_leaders() {
    let done = run(sh("exit 7"));
    assert!(matches!(done.completion.exit, ExitReason::Code(7)));
    assert_eq!(done.completion.exit_code, 7);
}

#[test]
fn death_by_signal_is_128_plus_the_signal() {
    let done = run(sh("kill -USR1 $$"));
    assert!(
        matches!(done.completion.exit, ExitReason::Signal(libc::SIGUSR1)),
        "{:?}",
        done.completion.exit
    );
    assert_eq!(done.completion.exit_code, 128 + libc::SIGUSR1);
    assert!(!done.completion.stopped);
}

#[test]
fn the_environment_is_exactly_the_one_given_and_cwd_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh("");
    spec.program = "/usr/bin/env".into();
    spec.arg0 = "env".into();
    spec.args = vec![];
    spec.env = vec![("ONLY".into(), "this".into())];
    spec.cwd = dir.path().to_owned();
    assert_eq!(run(spec).stdout(), "ONLY=this\n");

    let mut spec = sh("pwd -P; echo \"$0\"");
    spec.cwd = dir.path().to_owned();
    spec.arg0 = "custom-arg0".into();
    let expected = format!(
        "{}\ncustom-arg0\n",
        dir.path().canonicalize().unwrap().display()
    );
    assert_eq!(run(spec).stdout(), expected);
}

#[test]
fn the_task_leads_its_own_session_and_process_group() {
    // Field 6 of /proc/self/stat is the session, field 5 the group, field 1 the pid.
    let done = run(sh("cut -d' ' -f1,5,6 /proc/$$/stat"));
    let stdout = done.stdout();
    let fields: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(fields.len(), 3, "{fields:?}");
    assert!(fields.iter().all(|f| *f == fields[0]), "{fields:?}");
}

#[test]
fn signals_ignored_or_blocked_by_vx_are_default_in_the_task() {
    // The test harness, like vx, ignores SIGPIPE; a task must start with the default
    // dispositions and nothing blocked. (grep itself, not a shell: a waiting shell blocks
    // signals for a moment.)
    let mut spec = sh("");
    spec.program = "/bin/grep".into();
    spec.arg0 = "grep".into();
    spec.args = vec![
        "-E".into(),
        "^Sig(Ign|Blk)".into(),
        "/proc/self/status".into(),
    ];
    let done = run(spec);
    assert_eq!(
        done.stdout(),
        "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"
    );
}

#[test]
fn a_background_sleep_holding_the_pipes_is_cut_and_stopped() {
    let marker = sleep_marker();
    let mut spec = sh(&format!("sleep {marker} & echo started"));
    // A large grace proves the sleep went on SIGTERM, not on a SIGKILL after the grace.
    spec.kill_grace = Duration::from_secs(20);
    let done = run(spec);
    assert_eq!(done.stdout(), "started\n");
    assert_eq!(done.notes, ["OutputCut", "LeftoversStopped(1)"]);
    assert!(matches!(done.completion.exit, ExitReason::Code(0)));
    assert_eq!(done.completion.exit_code, 0);
    assert!(!done.completion.killed);
    assert!(done.elapsed < Duration::from_secs(10), "{:?}", done.elapsed);
    assert_eq!(wait_until_no_marker(&marker, Duration::ZERO), Ok(()));
}

#[test]
fn output_written_after_the_cut_is_not_forwarded() {
    let marker = sleep_marker();
    let done = run(sh(&format!(
        "(sleep 1; echo late) & sleep {marker} & echo early"
    )));
    assert_eq!(done.stdout(), "early\n");
    assert_eq!(done.notes[0], "OutputCut");
    assert!(
        done.notes[1].starts_with("LeftoversStopped("),
        "{:?}",
        done.notes
    );
    assert_eq!(wait_until_no_marker(&marker, Duration::ZERO), Ok(()));
}

#[test]
fn a_background_process_that_closed_its_output_is_still_stopped() {
    let marker = sleep_marker();
    let done = run(sh(&format!(
        "sleep {marker} >/dev/null 2>&1 & echo started"
    )));
    assert_eq!(done.notes, ["LeftoversStopped(1)"]);
    assert_eq!(wait_until_no_marker(&marker, Duration::ZERO), Ok(()));
}

#[test]
fn leftovers_of_a_persistent_task_wait_for_stop() {
    let marker = sleep_marker();
    let mut spec = sh(&format!("sleep {marker} & echo started"));
    spec.stop_leftovers_on_exit = false;
    let (handle, rx) = start(spec);
    let done = finish(&rx);
    assert_eq!(done.notes, ["OutputCut"]);
    assert_eq!(
        pids_with_marker(&marker).len(),
        1,
        "the sleep is left running"
    );

    handle.stop(libc::SIGTERM);
    handle.wait_stopped();
    assert_eq!(wait_until_no_marker(&marker, Duration::ZERO), Ok(()));
    // Idempotent, and harmless once everything is gone.
    handle.stop(libc::SIGTERM);
    handle.kill();
    handle.wait_stopped();
}

#[test]
fn timeout_of_a_sleep_is_143() {
    let marker = sleep_marker();
    let mut spec = sh(&format!("sleep {marker}"));
    spec.timeout = Some(Duration::from_millis(200));
    spec.kill_grace = Duration::from_secs(20);
    let done = run(spec);
    assert_eq!(done.notes, ["TimedOut"]);
    let completion = &done.completion;
    assert!(completion.timed_out && !completion.killed && !completion.stopped);
    assert_eq!(completion.exit_code, 143);
    assert!(completion.duration >= Duration::from_millis(200));
    assert!(done.elapsed < Duration::from_secs(10), "{:?}", done.elapsed);
    assert_eq!(wait_until_no_marker(&marker, Duration::ZERO), Ok(()));
}

#[test]
fn timeout_of_a_term_trapping_shell_needs_sigkill_and_is_137() {
    let marker = sleep_marker();
    let mut spec = sh(&format!("trap '' TERM; sleep {marker}"));
    spec.timeout = Some(Duration::from_millis(200));
    spec.kill_grace = Duration::from_millis(300);
    let done = run(spec);
    assert_eq!(done.notes, ["TimedOut"]);
    let completion = &done.completion;
    assert!(completion.timed_out && completion.killed);
    assert!(matches!(completion.exit, ExitReason::Signal(libc::SIGKILL)));
    assert_eq!(completion.exit_code, 137);
    assert!(completion.duration >= Duration::from_millis(500));
    assert_eq!(wait_until_no_marker(&marker, Duration::ZERO), Ok(()));
}

#[test]
fn timeout_is_143_even_if_the_task_traps_term_and_exits_0() {
    let marker = sleep_marker();
    let mut spec = sh(&format!("trap 'exit 0' TERM; sleep {marker} & wait"));
    spec.timeout = Some(Duration::from_millis(200));
    spec.kill_grace = Duration::from_secs(20);
    let done = run(spec);
    assert!(matches!(done.completion.exit, ExitReason::Code(0)));
    assert_eq!(done.completion.exit_code, 143);
    assert!(done.completion.timed_out && !done.completion.killed);
    assert!(done.elapsed < Duration::from_secs(10), "{:?}", done.elapsed);
    assert_eq!(wait_until_no_marker(&marker, Duration::ZERO), Ok(()));
}

#[test]
fn after_a_timeout_the_leaders_leftovers_get_the_rest_of_the_grace_then_sigkill() {
    // The leader exits on TERM at once; its background sleep ignores TERM and must be
    // SIGKILLed when the grace ends, which makes the attempt 137.
    let marker = sleep_marker();
    let mut spec = sh(&format!(
        "trap '' TERM; sleep {marker} & trap 'exit 3' TERM; echo ready; wait"
    ));
    spec.timeout = Some(Duration::from_millis(300));
    spec.kill_grace = Duration::from_millis(400);
    let done = run(spec);
    assert_eq!(done.notes[0], "TimedOut");
    assert!(matches!(done.completion.exit, ExitReason::Code(3)));
    assert!(done.completion.timed_out && done.completion.killed);
    assert_eq!(done.completion.exit_code, 137);
    assert_eq!(wait_until_no_marker(&marker, Duration::ZERO), Ok(()));
}

#[test]
fn stop_of_a_process_ignoring_term_sigkills_after_the_grace() {
    let marker = sleep_marker();
    let mut spec = sh(&format!("trap '' TERM; echo ready; sleep {marker}"));
    spec.kill_grace = Duration::from_millis(300);
    let (handle, rx) = start(spec);
    wait_for_ready(&rx);
    let stopping = Instant::now();
    handle.stop(libc::SIGTERM);
    let done = finish(&rx);
    assert!(stopping.elapsed() >= Duration::from_millis(300));
    let completion = &done.completion;
    assert!(completion.stopped && completion.killed && !completion.timed_out);
    assert!(matches!(completion.exit, ExitReason::Signal(libc::SIGKILL)));
    assert_eq!(completion.exit_code, 137);
    assert_eq!(wait_until_no_marker(&marker, Duration::ZERO), Ok(()));
}

#[test]
fn stop_with_sigint_reaches_the_whole_group_and_is_prompt() {
    let marker = sleep_marker();
    // Ctrl-C forwarding: SIGINT goes to the group, so the shell and its foreground sleep both
    // go at once, long before the grace.
    let mut spec = sh(&format!("echo ready; sleep {marker}"));
    spec.kill_grace = Duration::from_secs(20);
    let (handle, rx) = start(spec);
    wait_for_ready(&rx);
    // dash catches a SIGINT that arrives before it has started the sleep and then goes on to
    // start it, so wait for the sleep to run.
    wait_for_program(&marker, "sleep");
    handle.stop(libc::SIGINT);
    handle.stop(libc::SIGTERM); // idempotent: ignored
    let done = finish(&rx);
    assert!(done.completion.stopped && !done.completion.killed);
    assert_eq!(done.completion.exit_code, 128 + libc::SIGINT);
    assert!(done.elapsed < Duration::from_secs(10), "{:?}", done.elapsed);
    assert_eq!(wait_until_no_marker(&marker, Duration::ZERO), Ok(()));
}

#[test]
fn kill_ends_a_stop_at_once() {
    let marker = sleep_marker();
    let mut spec = sh(&format!("trap '' TERM; echo ready; sleep {marker}"));
    spec.kill_grace = Duration::from_secs(30);
    let (handle, rx) = start(spec);
    wait_for_ready(&rx);
    handle.stop(libc::SIGTERM);
    handle.kill();
    let done = finish(&rx);
    assert!(done.completion.stopped && done.completion.killed);
    assert_eq!(done.completion.exit_code, 137);
    assert!(done.elapsed < Duration::from_secs(10), "{:?}", done.elapsed);
    assert_eq!(wait_until_no_marker(&marker, Duration::ZERO), Ok(()));
}

#[test]
fn held_pipe_stdin_keeps_cat_alive_until_stop() {
    let mut spec = sh("echo ready; cat");
    spec.stdin = StdinMode::HeldPipe;
    let (handle, rx) = start(spec);
    wait_for_ready(&rx);
    assert!(
        matches!(
            rx.recv_timeout(Duration::from_millis(300)),
            Err(RecvTimeoutError::Timeout)
        ),
        "cat must not see end-of-file"
    );
    handle.stop(libc::SIGTERM);
    let done = finish(&rx);
    assert!(done.completion.stopped);
    assert_eq!(done.completion.exit_code, 143);
}

#[test]
fn null_stdin_makes_read_return_at_once() {
    let done = run(sh("read line; echo \"read $?\"; cat; echo end"));
    assert_eq!(done.stdout(), "read 1\nend\n");
}

#[test]
fn a_missing_working_directory_is_a_spawn_failure() {
    let mut spec = sh("echo never");
    spec.cwd = "/nonexistent/vx-exec-test".into();
    let (handle, rx) = start(spec);
    let done = finish(&rx);
    assert_eq!(handle.pid(), None);
    assert!(done.stdout.is_empty() && done.notes.is_empty());
    match &done.completion.exit {
        ExitReason::SpawnFailed(err) => assert_eq!(err.raw_os_error(), Some(libc::ENOENT)),
        other => panic!("expected a spawn failure, got {other:?}"),
    }
    assert_eq!(done.completion.exit_code, 127);
    // Stopping a task that never started does nothing.
    handle.stop(libc::SIGTERM);
    handle.kill();
    handle.wait_stopped();
}

#[test]
fn a_missing_program_is_a_spawn_failure() {
    let mut spec = sh("");
    spec.program = "/nonexistent/program".into();
    let done = run(spec);
    assert!(
        matches!(&done.completion.exit, ExitReason::SpawnFailed(err) if err.raw_os_error() == Some(libc::ENOENT))
    );
    assert_eq!(done.completion.exit_code, 127);
}

#[test]
fn a_nul_byte_in_an_argument_is_a_spawn_failure() {
    let done = run(sh("echo a\0b"));
    assert!(
        matches!(&done.completion.exit, ExitReason::SpawnFailed(err) if err.kind() == std::io::ErrorKind::InvalidInput)
    );
    assert_eq!(done.completion.exit_code, 127);
}

#[test]
fn ten_megabytes_on_both_streams_at_once_do_not_deadlock() {
    let size = 10_000_000;
    let done = run(sh(&format!(
        "head -c {size} /dev/zero & head -c {size} /dev/zero >&2; wait"
    )));
    assert_eq!(done.stdout.len(), size);
    assert_eq!(done.stderr.len(), size);
    assert_eq!(done.completion.exit_code, 0);
}

#[test]
fn many_concurrent_tasks_each_get_their_own_exit() {
    let tasks: Vec<_> = (0..24)
        .map(|i| start(sh(&format!("echo {i}; exit {}", i % 5))))
        .collect();
    for (i, (_handle, rx)) in tasks.iter().enumerate() {
        let done = finish(rx);
        assert_eq!(done.stdout(), format!("{i}\n"));
        assert_eq!(done.completion.exit_code, (i % 5) as i32);
    }
}

#[test]
fn the_supervisor_runs_a_helper_command_to_the_end() {
    let output = Supervisor::new().output(sh("echo hi; echo ho >&2; exit 2"));
    assert_eq!(output.stdout, b"hi\n");
    assert_eq!(output.stderr, b"ho\n");
    assert_eq!(output.completion.exit_code, 2);
}

/// A sandboxed spawn whose "bwrap" is `sh -c script`: the script plays bubblewrap and init,
/// with the control pipe on fd 3 and the report pipe on fd 4 as init would see them.
fn fake_sandbox(script: &str) -> SpawnSpec {
    let mut spec = sh("true");
    spec.sandbox = Some(vx_exec::SandboxLaunch {
        bwrap: "/bin/sh".into(),
        options: vec!["-c".into(), script.into(), "fake-bwrap".into()],
        init: "/nonexistent/vx".into(),
        proxy: None,
    });
    spec
}

#[test]
fn a_sandboxed_tasks_end_and_accesses_come_from_inits_report() {
    let done = run(fake_sandbox(
        "printf 'read /ws/a%%25b\\nexit 3 0 1000 2000 64\\n' >&4; exit 9",
    ));
    assert_eq!(done.completion.sandbox, Some(vx_exec::SandboxEnd::Reported));
    // The command's code, not bubblewrap's, and the command's rusage.
    assert_eq!(done.completion.exit_code, 3);
    let usage = done.completion.usage.unwrap();
    assert_eq!(usage.user_cpu, Duration::from_millis(1));
    assert_eq!(usage.max_rss_bytes, 64 * 1024);
    assert_eq!(
        done.notes,
        [r#"Access(Access { kind: Read, path: "/ws/a%b", asked: None })"#]
    );
}

#[test]
fn a_sandbox_report_that_init_never_wrote_is_not_trusted() {
    for script in [
        "printf 'garbage\\n' >&4; exit 0",
        "printf 'exit 0 0 0 0 0\\nexit 0 0 0 0 0\\n' >&4; exit 0",
        "printf 'exit 0 0 0 0 0\\nread /ws/late\\n' >&4; exit 0",
    ] {
        let done = run(fake_sandbox(script));
        assert_eq!(
            done.completion.sandbox,
            Some(vx_exec::SandboxEnd::Unreadable),
            "{script}"
        );
    }
    let done = run(fake_sandbox("exit 1"));
    assert_eq!(
        done.completion.sandbox,
        Some(vx_exec::SandboxEnd::Unreported)
    );
    assert_eq!(done.completion.exit_code, 1);
}

/// A stop of a sandboxed task is a signal name on init's control pipe, not a signal to
/// bubblewrap (which would not reach the command).
#[test]
fn a_sandboxed_task_is_stopped_through_the_control_pipe() {
    let (handle, rx) = start(fake_sandbox(
        "trap 'echo signalled; exit 2' TERM; echo ready; read word <&3; echo \"got $word\"; printf 'exit 143 15 0 0 0\\n' >&4",
    ));
    wait_for_ready(&rx);
    handle.stop(libc::SIGTERM);
    let done = finish(&rx);
    assert_eq!(done.stdout(), "got TERM\n");
    assert_eq!(done.completion.exit_code, 143);
    assert!(done.completion.stopped);
}
