//! The `vx-test-child` program does exactly what its grammar says, and the survivor helpers
//! find the processes it makes. This binary never creates a supervisor, so it may use
//! `std::process` and wait for its own children.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use vx_test_support::process::{
    pids_with_marker, test_child_path, unique_marker, wait_until_no_marker,
};

fn child() -> Command {
    Command::new(test_child_path())
}

/// Waits until exactly `count` processes carry `marker`, or fails after a generous bound.
fn wait_for_count(marker: &str, count: usize) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pids = pids_with_marker(marker);
        if pids.len() == count {
            return pids;
        }
        assert!(
            Instant::now() < deadline,
            "wanted {count} processes, saw {pids:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kills every process carrying `marker`, again and again until none is left: a tree still
/// forking when the first list was read has a child the first kill missed (this raced under
/// load).
fn kill_all(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        for pid in pids_with_marker(marker) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        if wait_until_no_marker(marker, Duration::from_millis(100)).is_ok() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "survivors: {:?}",
            pids_with_marker(marker)
        );
    }
}

/// A status line of /proc/<pid>/status, such as `ShdPnd`.
fn status_field(pid: i32, name: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in the status of {pid}"))
        .trim()
        .to_owned()
}

#[test]
fn the_built_program_is_found_where_cargo_put_it() {
    assert_eq!(
        test_child_path(),
        std::path::PathBuf::from(env!("CARGO_BIN_EXE_vx-test-child"))
    );
}

#[test]
fn prints_to_each_stream_and_exits_with_the_code_given() {
    let output = child()
        .args([
            "print", "hello", "eprint", "oops", "exit", "3", "print", "never",
        ])
        .output()
        .unwrap();
    assert_eq!(output.stdout, b"hello\n");
    assert_eq!(output.stderr, b"oops\n");
    assert_eq!(output.status.code(), Some(3));
}

#[test]
fn a_usage_error_exits_2() {
    let output = child().args(["sleep", "soon"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("`sleep` needs a number"));
}

#[test]
fn segv_dies_of_sigsegv() {
    use std::os::unix::process::ExitStatusExt;
    let status = child().arg("segv").status().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGSEGV));
}

#[test]
fn read_stdin_echoes_its_input() {
    let mut process = child()
        .arg("read-stdin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    process.stdin.take().unwrap().write_all(b"abc\n").unwrap();
    let output = process.wait_with_output().unwrap();
    assert_eq!(output.stdout, b"abc\n");
}

#[test]
fn wait_stdin_eof_exits_0_when_stdin_closes() {
    let mut process = child()
        .args(["wait-stdin-eof", "exit", "9"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    process.stdin.take().unwrap().write_all(b"ignored").unwrap();
    assert_eq!(process.wait().unwrap().code(), Some(0));
}

#[test]
fn flood_both_writes_the_amount_to_each_stream() {
    let output = child().args(["flood-both", "1000000"]).output().unwrap();
    assert_eq!(output.stdout.len(), 1_000_000);
    assert_eq!(output.stderr.len(), 1_000_000);
    assert_eq!(&output.stdout[..64], &[&[b'x'; 63][..], b"\n"].concat()[..]);
    let output = child()
        .args(["flood", "100", "eflood", "7"])
        .output()
        .unwrap();
    assert_eq!((output.stdout.len(), output.stderr.len()), (100, 7));
}

#[test]
fn fork_tree_marks_every_process_and_keeps_the_actions() {
    let marker = unique_marker("fork-tree");
    let mut top = child()
        .args(["--marker", &marker, "fork-tree", "2", "sleep", "300"])
        .spawn()
        .unwrap();
    let pids = wait_for_count(&marker, 3);
    assert!(pids.contains(&(top.id() as i32)));
    for pid in &pids {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        let words: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        assert_eq!(words[1..3], [&b"--marker"[..], marker.as_bytes()]);
        assert!(cmdline.ends_with(b"sleep\x00300\x00"), "{cmdline:?}");
    }
    kill_all(&marker);
    top.wait().unwrap();
}

#[test]
fn fork_tree_alone_leaves_sleeping_descendants_behind() {
    let marker = unique_marker("orphans");
    let status = child()
        .args(["--marker", &marker, "fork-tree", "2", "--"])
        .status()
        .unwrap();
    assert!(status.success());
    wait_for_count(&marker, 2);
    kill_all(&marker);
}

#[test]
fn spawn_bg_leaves_a_copy_holding_stdout() {
    let marker = unique_marker("spawn-bg");
    let mut process = child()
        .args(["--marker", &marker, "spawn-bg", "print", "done"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(process.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "done\n");
    assert!(process.wait().unwrap().success());
    assert_eq!(wait_for_count(&marker, 1).len(), 1);
    kill_all(&marker);
    // Only now, with the copy gone, does stdout reach end-of-file.
    line.clear();
    assert_eq!(stdout.read_line(&mut line).unwrap(), 0);
}

#[test]
fn ignore_term_keeps_sigterm_pending() {
    let marker = unique_marker("ignore-term");
    let mut process = child()
        .args([
            "--marker",
            &marker,
            "ignore-term",
            "ignore-int",
            "pid",
            "sleep",
            "300",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(process.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pid = process.id() as i32;
    assert_eq!(line, format!("pid {pid}\n"));
    kill(Pid::from_raw(pid), Signal::SIGTERM).unwrap();
    kill(Pid::from_raw(pid), Signal::SIGINT).unwrap();
    // Both signals are pending, not acted on: the process is still there.
    let pending = u64::from_str_radix(&status_field(pid, "ShdPnd"), 16).unwrap();
    let wanted = (1 << (libc::SIGTERM - 1)) | (1 << (libc::SIGINT - 1));
    assert_eq!(pending & wanted, wanted);
    assert_eq!(pids_with_marker(&marker), vec![pid]);
    kill_all(&marker);
    process.wait().unwrap();
}

#[test]
fn new_group_leaves_the_process_group_but_not_the_session() {
    let mut process = child()
        .args(["new-group", "pid", "sleep", "300"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(process.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pid = process.id() as i32;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    assert_eq!(fields[2], pid.to_string(), "its own group");
    assert_eq!(
        fields[3],
        nix::unistd::getsid(None).unwrap().as_raw().to_string(),
        "the same session"
    );
    process.kill().unwrap();
    process.wait().unwrap();
}

#[test]
fn alloc_makes_the_memory_resident() {
    let mut process = child()
        .args(["alloc", "32", "pid", "sleep", "300"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(process.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let rss_kib: u64 = status_field(process.id() as i32, "VmRSS")
        .trim_end_matches(" kB")
        .parse()
        .unwrap();
    assert!(rss_kib >= 32 * 1024, "{rss_kib} KiB");
    process.kill().unwrap();
    process.wait().unwrap();
}
