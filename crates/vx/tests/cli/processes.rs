//! Process control through the binary (EXEC-6, EXEC-8 to EXEC-11, EXEC-13): timeouts, signals,
//! pipes and stdin. Survivors are found by a unique marker in argv, never by sleeping.

use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use vx_test_support::process::{pids_with_marker, test_child_path, unique_marker};

use crate::{assert_contains, assert_no_survivor, one_project};

fn child() -> String {
    test_child_path().display().to_string()
}

/// Waits (bounded) until some process carries the marker.
fn wait_for_marker(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids_with_marker(marker).is_empty() {
        assert!(
            Instant::now() < deadline,
            "no process with marker {marker} appeared"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// ACC-17: a timeout stops the whole tree.
#[test]
fn acc17_timeout_kills_the_whole_tree() {
    let marker = unique_marker("acc17");
    let f = one_project(&format!(
        "[tasks.build]\ncommand = \"{} --marker {marker} fork-tree 2 sleep 300\"\ntimeout = \"1s\"\n",
        child()
    ));
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout.contains("failed (timed out, exit 143)")
            || out.stdout.contains("failed (timed out, exit 137)"),
        "{}",
        out.stdout
    );
    assert_contains(&out.stdout, "vx: timed out after 1.00s; stopping the task");
    assert!(
        out.elapsed < Duration::from_secs(4),
        "took {:?}",
        out.elapsed
    );
    assert_no_survivor(&marker);
}

/// ACC-17, second half: a child that ignores SIGTERM is killed after the grace.
#[test]
fn acc17_timeout_kills_a_term_ignoring_child_after_the_grace() {
    let marker = unique_marker("acc17b");
    let f = one_project(&format!(
        "[tasks.build]\ncommand = \"{} --marker {marker} fork-tree 1 ignore-term sleep 300\"\ntimeout = \"1s\"\n",
        child()
    ));
    let out = f.vx_in("", &["run", "lib#build"], &[("VX_KILL_GRACE", "500ms")]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stdout, "failed (timed out, exit 137)");
    assert_no_survivor(&marker);
}

/// ACC-17 / TEST-4: a timeout with a backgrounded grandchild (started with `&`, holding the
/// pipes, ignoring SIGTERM) and a shell that traps SIGTERM: both are gone, and the task is a
/// timed-out failure with 143 or 137.
#[test]
fn a_timeout_stops_a_backgrounded_grandchild_and_a_term_trapping_shell() {
    let marker = unique_marker("acc17c");
    let f = one_project(&format!(
        concat!(
            "[tasks.build]\ncommand = \"trap 'echo got-term' TERM; ",
            "{child} --marker {m} ignore-term spawn-bg & ",
            "{child} --marker {m} ignore-term sleep 300; wait\"\n",
            "timeout = \"1s\"\n"
        ),
        child = child(),
        m = marker
    ));
    let out = f.vx_in("", &["run", "lib#build"], &[("VX_KILL_GRACE", "300ms")]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout.contains("failed (timed out, exit 143)")
            || out.stdout.contains("failed (timed out, exit 137)"),
        "{}",
        out.stdout
    );
    assert_no_survivor(&marker);
}

/// The timeout flag applies to tasks without their own `timeout`.
#[test]
fn timeout_flag_is_the_default_timeout() {
    let f = one_project("[tasks.build]\ncommand = \"sleep 30\"\n");
    let out = f.vx(&["run", "lib#build", "--timeout", "300ms"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stdout, "vx: timed out after 300ms");
}

/// ACC-18: Ctrl-C forwards once, waits the grace, kills, and exits 130.
#[test]
fn acc18_ctrl_c_stops_tasks_and_exits_130() {
    let marker = unique_marker("acc18");
    let f = one_project(&format!(
        "[tasks.build]\ncommand = \"{} --marker {marker} fork-tree 1 ignore-term ignore-int sleep 300\"\n\n[tasks.quick]\ncommand = \"true\"\n",
        child()
    ));
    let first = f.vx(&["run", "lib#quick"]);
    assert_eq!(first.code, 0, "{first:?}");
    let mut command = f.command("", &["run", "lib#build"]);
    command.env("VX_KILL_GRACE", "1s");
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let vx = command.spawn().unwrap();
    wait_for_marker(&marker);
    let started = Instant::now();
    kill(Pid::from_raw(vx.id() as i32), Signal::SIGINT).unwrap();
    let out = vx.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(130));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("aborted"), "{stdout}");
    assert_no_survivor(&marker);
    // A run stopped by a signal is recorded as interrupted (issue 48, over ACC-18 [M3]'s "no
    // history"): `vx last` shows it, not the run before it as the last one.
    let info = f.vx(&["info", "--format", "json"]);
    let info: serde_json::Value = serde_json::from_str(&info.stdout).expect("vx info JSON");
    assert_eq!(info["history"]["runs_24h"], 2, "{info}");
    let last = f.vx(&["last"]);
    assert_contains(&last.stdout, " · interrupted by SIGINT (exit 130)\n");
    assert_contains(&last.stdout, "tasks      1 aborted · 1 total\n");
    let list = f.vx(&["last", "--list"]);
    let newest = list.stdout.lines().next().unwrap_or_default();
    assert!(newest.contains("interrupted (SIGINT)"), "{}", list.stdout);
}

/// ACC-18, second half: a second Ctrl-C during the grace exits at once.
#[test]
fn acc18_second_ctrl_c_exits_at_once() {
    let marker = unique_marker("acc18b");
    let f = one_project(&format!(
        "[tasks.build]\ncommand = \"{} --marker {marker} fork-tree 1 ignore-term ignore-int sleep 300\"\n",
        child()
    ));
    let mut command = f.command("", &["run", "lib#build"]);
    command.env("VX_KILL_GRACE", "20s");
    command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut vx = command.spawn().unwrap();
    wait_for_marker(&marker);
    let pid = Pid::from_raw(vx.id() as i32);
    kill(pid, Signal::SIGINT).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let second = Instant::now();
    kill(pid, Signal::SIGINT).unwrap();
    let status = vx.wait().unwrap();
    assert!(
        second.elapsed() < Duration::from_secs(2),
        "took {:?}",
        second.elapsed()
    );
    assert_eq!(status.code(), Some(130));
    assert_no_survivor(&marker);
}

/// ACC-20 (a): a background child holding the pipes does not hold the task.
#[test]
fn acc20_background_child_holding_pipes_is_cut_and_stopped() {
    let marker = unique_marker("acc20");
    let f = one_project(&format!(
        "[tasks.build]\ncommand = \"{} --marker {marker} spawn-bg & echo started\"\n",
        child()
    ));
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "started");
    assert_contains(
        &out.stdout,
        "vx: output after the task's shell exited was cut",
    );
    assert_contains(&out.stdout, "vx: stopped 1 process the task left running");
    assert!(
        out.elapsed < Duration::from_secs(5),
        "took {:?}",
        out.elapsed
    );
    assert_no_survivor(&marker);
}

/// ACC-20 (a) with the spec's literal command.
#[test]
fn acc20_sleep_in_background_does_not_keep_vx_waiting() {
    let f = one_project("[tasks.build]\ncommand = \"sleep 31 & echo started\"\n");
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "vx: stopped 1 process the task left running");
    assert!(
        out.elapsed < Duration::from_secs(5),
        "took {:?}",
        out.elapsed
    );
}

/// ACC-20 (b): a one-shot task reading stdin sees end-of-file at once.
#[test]
fn acc20_prompt_in_one_shot_task_sees_eof() {
    let f = one_project("[tasks.build]\ncommand = \"read line; echo \\\"got:$line\\\"\"\n");
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "got:\n");
    assert!(out.elapsed < Duration::from_secs(5));
}

/// ACC-20 (c): a persistent server that exits on stdin EOF stays up for its dependants and is
/// stopped at the end of the graph.
#[test]
fn acc20_persistent_server_stays_up_until_the_end_of_the_graph() {
    let marker = unique_marker("acc20c");
    // `[a]cc20c-…` matches the marker but not grep's (or the shell's) own argv.
    let pattern = format!("[{}]{}", &marker[..1], &marker[1..]);
    let f = one_project(&format!(
        concat!(
            "[tasks.server]\ncommand = \"{} --marker {} wait-stdin-eof\"\npersistent = true\n\n",
            "[tasks.after]\ncommand = \"sleep 0.5; grep -qs '{}' /proc/[0-9]*/cmdline && echo server-alive\"\n",
            "depends-on = [\"server\"]\n"
        ),
        child(),
        marker,
        pattern
    ));
    let out = f.vx(&["run", "lib#after"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "server-alive");
    assert_no_survivor(&marker);
}

/// EXEC-13: a requested persistent task is kept after the footer, its output prefixed, until
/// it exits; the run's exit code follows its exit code.
#[test]
fn requested_persistent_task_is_kept_alive_after_the_footer() {
    let f = one_project(
        "[tasks.dev]\ncommand = \"echo serving; sleep 0.5; echo bye; exit 3\"\npersistent = true\n",
    );
    let out = f.vx(&["run", "lib#dev"]);
    assert_eq!(out.code, 1, "{out:?}");
    let footer = out.stdout.find("── vx").expect("a footer");
    let (before, after) = out.stdout.split_at(footer);
    assert!(before.contains("▸ "), "{}", out.stdout);
    assert!(before.contains(" running lib#dev\n"), "{}", out.stdout);
    assert!(
        !before.contains("┌─"),
        "a persistent task never streams a frame: {}",
        out.stdout
    );
    assert!(
        after.contains("tasks      1 success · 1 total"),
        "{}",
        out.stdout
    );
    assert!(after.contains("lib#dev │ serving\n"), "{}", out.stdout);
    assert!(after.contains("lib#dev │ bye\n"), "{}", out.stdout);
    assert_contains(&out.stderr, "vx: lib#dev ended (exit 3)");

    let f = one_project("[tasks.dev]\ncommand = \"echo serving\"\npersistent = true\n");
    let out = f.vx(&["run", "lib#dev"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stderr, "vx: lib#dev ended (exit 0)");
}

/// EXEC-9 with a kept server: SIGTERM stops it and vx exits 143, leaving nothing behind.
#[test]
fn sigterm_stops_a_kept_server() {
    let marker = unique_marker("keep");
    let f = one_project(&format!(
        "[tasks.dev]\ncommand = \"{} --marker {marker} print ready sleep 300\"\npersistent = true\n",
        child()
    ));
    let mut command = f.command("", &["run", "lib#dev"]);
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let vx = command.spawn().unwrap();
    wait_for_marker(&marker);
    std::thread::sleep(Duration::from_millis(200));
    kill(Pid::from_raw(vx.id() as i32), Signal::SIGTERM).unwrap();
    let out = vx.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("lib#dev │ ready"), "{stdout}");
    assert_no_survivor(&marker);
}

/// A persistent task that fails by itself after it was ready fails the run.
#[test]
fn persistent_dependency_that_dies_fails_the_run() {
    let f = one_project(concat!(
        "[tasks.server]\ncommand = \"exit 4\"\npersistent = true\n\n",
        "[tasks.after]\ncommand = \"sleep 0.5; echo after\"\ndepends-on = [\"server\"]\n",
    ));
    let out = f.vx(&["run", "lib#after"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stderr, "vx: lib#server stopped by itself (exit 4)");
}

/// EXEC-13: a server that daemonises (exits 0 after it is ready, leaving a process in its
/// session) is accepted, and what it left is stopped at the end of the graph.
#[test]
fn a_daemonised_server_is_stopped_at_the_end_of_the_graph() {
    let marker = unique_marker("daemon");
    let f = one_project(&format!(
        concat!(
            "[tasks.server]\ncommand = \"{} --marker {} fork-tree 1 --\"\npersistent = true\n\n",
            "[tasks.after]\ncommand = \"sleep 0.3; echo after\"\ndepends-on = [\"server\"]\n"
        ),
        child(),
        marker
    ));
    let out = f.vx(&["run", "lib#after"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_no_survivor(&marker);
}

/// UI-4: nothing is printed inside the streamed frame; other tasks' lines wait for its end.
#[test]
fn other_tasks_lines_never_interleave_with_the_streamed_frame() {
    let f = one_project(concat!(
        "[tasks.server]\ncommand = \"sleep 0.2; exit 4\"\npersistent = true\n\n",
        "[tasks.e2e]\ncommand = \"echo start; sleep 1; echo end\"\ndepends-on = [\"server\"]\n",
    ));
    let out = f.vx(&["run", "lib#e2e"]);
    assert_eq!(out.code, 1, "{out:?}");
    let open = out.stdout.find("┌─ lib#e2e").expect("the streamed header");
    let close = out.stdout.find("└─ lib#e2e").expect("the closing line");
    let inside = &out.stdout[open..close];
    assert!(!inside.contains("lib#server"), "{}", out.stdout);
    assert!(
        out.stdout[close..].contains("◼"),
        "the server's failure follows: {}",
        out.stdout
    );
}

/// EXEC-8 precedence: the task's `timeout` beats `--timeout`, which beats `VX_TASK_TIMEOUT`;
/// an invalid variable draws a warning and is ignored (ENV-1).
#[test]
fn timeout_precedence_and_the_environment_default() {
    let f = one_project("[tasks.build]\ncommand = \"sleep 30\"\n");
    let out = f.vx_in("", &["run", "lib#build"], &[("VX_TASK_TIMEOUT", "200ms")]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stdout, "vx: timed out after 200ms");
    let out = f.vx_in(
        "",
        &["run", "lib#build", "--timeout", "300ms"],
        &[("VX_TASK_TIMEOUT", "200ms")],
    );
    assert_contains(&out.stdout, "vx: timed out after 300ms");
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"sleep 30\"\ntimeout = \"400ms\"\n",
    );
    let out = f.vx_in("", &["run", "lib#build", "--timeout", "300ms"], &[]);
    assert_contains(&out.stdout, "vx: timed out after 400ms");
    let out = f.vx_in("", &["run", "lib#build"], &[("VX_TASK_TIMEOUT", "90")]);
    assert_contains(&out.stderr, "warning: ignoring VX_TASK_TIMEOUT=`90`");
    assert_contains(&out.stdout, "vx: timed out after 400ms");
}

/// The high-water mark of vx's own RSS, in KiB, from /proc (read while it runs).
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// STORE-6: a task printing 500 MB keeps vx's memory bounded (the frame keeps the first and
/// last 8 MiB and names the cut) while every byte still streams live.
#[test]
fn a_flood_of_output_keeps_vx_memory_bounded_and_names_the_cut() {
    let f = one_project(&format!(
        "[tasks.flood]\ncommand = \"{} flood 500000000\"\n\n[tasks.other]\ncommand = \"true\"\n",
        child()
    ));
    // Two requested tasks: no frame streams, so the flood's frame is printed whole at its end,
    // from the bounded buffer (a single requested task would stream every byte live).
    let mut command = f.command("", &["run", "lib#flood", "lib#other", "--output-logs=full"]);
    let out_path = f.path("out.txt");
    let out_file = std::fs::File::create(&out_path).unwrap();
    let mut vx = command
        .stdout(out_file)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = vx.id();
    let mut peak = 0;
    loop {
        if let Some(kib) = peak_rss_kib(pid) {
            peak = peak.max(kib);
        }
        if vx.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(vx.wait().unwrap().success());
    // Two bounded buffers (the frame and the stored log) of 16 MiB each, a few transient copies
    // of the 16 MiB frame while it is printed, and vx itself: far below the 500 MB the task
    // wrote, which an unbounded capture holds whole (over 500 MiB).
    assert!(peak < 200 * 1024, "vx's peak RSS was {peak} KiB");
    let size = std::fs::metadata(&out_path).unwrap().len();
    assert!(
        size > 16 << 20,
        "the frame holds the kept head and tail ({size} bytes)"
    );
    assert!(size < 40 << 20, "the frame is bounded ({size} bytes)");
    let text = std::fs::read(&out_path).unwrap();
    let note = b"vx: ";
    let cut = text.windows(note.len() + 40).any(|w| {
        w.starts_with(note) && String::from_utf8_lossy(w).contains("MiB of output not kept")
    });
    assert!(cut, "the cut is named in the frame");
}

/// The `meta.json` of the only artifact in the default cache directory.
fn artifact_meta(f: &vx_test_support::fixture::Fixture) -> serde_json::Value {
    let dir = f.path(".vx/artifacts");
    let path = std::fs::read_dir(dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let bytes = zstd::decode_all(std::fs::File::open(path).unwrap()).unwrap();
    let mut archive = tar::Archive::new(bytes.as_slice());
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap().to_string_lossy() == "meta.json" {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut entry, &mut text).unwrap();
            return serde_json::from_str(&text).unwrap();
        }
    }
    panic!("no meta.json");
}

/// EXEC-18: CPU time and peak RSS come from `wait4`; a task that holds 200 MiB is measured
/// as such (within a bounded factor), not as vx's own high-water mark.
#[test]
fn cpu_time_and_peak_rss_are_measured_for_an_executed_task() {
    let f = one_project(&format!(
        "[tasks.big]\ncommand = \"{} alloc 200\"\ncache = {{ inputs = [], outputs = [] }}\n",
        child()
    ));
    let out = f.vx(&["run", "lib#big"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let meta = artifact_meta(&f);
    let peak = meta["exec"]["peak_rss_bytes"].as_u64().expect("a peak RSS");
    assert!(
        (200 << 20..400 << 20).contains(&peak),
        "peak RSS {peak} bytes for a task holding 200 MiB"
    );
    assert!(meta["exec"]["cpu_ms"].as_u64().is_some(), "{meta}");
}

/// EXEC-18's parent floor: a small task's `ru_maxrss` is vx's own inherited high-water mark,
/// so its peak is recorded as unknown rather than as a wrong figure.
#[test]
fn a_peak_within_the_parent_floor_is_unknown() {
    let f =
        one_project("[tasks.small]\ncommand = \"true\"\ncache = { inputs = [], outputs = [] }\n");
    assert_eq!(f.vx(&["run", "lib#small"]).code, 0);
    let meta = artifact_meta(&f);
    assert!(meta["exec"]["peak_rss_bytes"].is_null(), "{meta}");
    assert!(meta["exec"]["cpu_ms"].as_u64().is_some(), "{meta}");
}
