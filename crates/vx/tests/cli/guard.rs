//! EXEC-7 and ACC-19: when vx dies — `kill -9` here, the one death it cannot see coming — its
//! guard kills every process of every task within one second. Survivors are found by a marker
//! in argv across /proc, never by sleeping and hoping (TEST-2).

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use vx_test_support::fixture::Fixture;
use vx_test_support::process::{
    pids_with_marker, test_child_path, unique_marker, wait_until_no_marker,
};

use crate::one_project;

fn child() -> String {
    test_child_path().display().to_string()
}

/// A vx started in the background, killed and reaped if the test fails before it ends, so a
/// failing test leaves no vx behind (the guard then cleans up its tasks).
pub(crate) struct Vx(Option<Child>);

impl Vx {
    fn id(&self) -> u32 {
        self.0.as_ref().expect("vx not yet waited for").id()
    }

    pub(crate) fn take(mut self) -> Child {
        self.0.take().expect("vx not yet waited for")
    }
}

impl Drop for Vx {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `vx args…` in the background, output discarded unless `capture`.
pub(crate) fn spawn_vx(f: &Fixture, args: &[&str], capture: bool) -> Vx {
    let mut command = f.command("", args);
    let out = || {
        if capture {
            Stdio::piped()
        } else {
            Stdio::null()
        }
    };
    command.stdout(out()).stderr(out()).stdin(Stdio::null());
    Vx(Some(command.spawn().expect("vx starts")))
}

/// Waits (bounded) until at least `n` processes carry the marker.
pub(crate) fn wait_for_markers(marker: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids_with_marker(marker).len() < n {
        assert!(
            Instant::now() < deadline,
            "{n} processes with marker {marker} never appeared (saw {:?})",
            pids_with_marker(marker)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The guard process of the vx process `vx`: its child running `vx __vx_guard`.
fn guard_of(vx: u32) -> Option<i32> {
    let tasks = std::fs::read_dir(format!("/proc/{vx}/task")).ok()?;
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|pid| pid.parse::<i32>().ok())
                .collect::<Vec<_>>()
        })
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|argv| argv.split(|&b| b == 0).any(|arg| arg == b"__vx_guard"))
        })
}

/// Whether `pid` is a live process (not a zombie).
fn alive(pid: i32) -> bool {
    std::fs::read(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let after_name = stat.iter().rposition(|&b| b == b')').map_or(0, |i| i + 2);
        !matches!(stat.get(after_name), Some(b'Z' | b'X'))
    })
}

/// SIGKILLs vx, reaps it, and asserts that nothing with the marker is alive one second later.
pub(crate) fn kill_vx_and_expect_no_survivor(vx: Vx, marker: &str) {
    let mut vx = vx.take();
    kill(Pid::from_raw(vx.id() as i32), Signal::SIGKILL).unwrap();
    let killed = Instant::now();
    vx.wait().unwrap();
    let left = Duration::from_secs(1).saturating_sub(killed.elapsed());
    assert_eq!(
        wait_until_no_marker(marker, left),
        Ok(()),
        "processes with marker {marker} outlived `kill -9` of vx by a second"
    );
}

/// ACC-19: a task whose child spawned two levels of grandchildren.
#[test]
fn acc19_kill_9_of_vx_leaves_no_task_process() {
    let marker = unique_marker("acc19");
    let f = one_project(&format!(
        "[tasks.build]\ncommand = \"{} --marker {marker} fork-tree 2 sleep 300\"\n",
        child()
    ));
    let vx = spawn_vx(&f, &["run", "lib#build"], false);
    wait_for_markers(&marker, 3);
    kill_vx_and_expect_no_survivor(vx, &marker);
}

/// A descendant that left the task's process group (job control) but not its session is found
/// through the session; so are processes of two tasks running at once.
#[test]
fn kill_9_reaches_other_groups_of_the_session_and_every_running_task() {
    let marker = unique_marker("guard-group");
    let f = one_project(&format!(
        concat!(
            "[tasks.a]\ncommand = \"{child} --marker {m} fork-tree 1 new-group forever -- forever\"\n\n",
            "[tasks.b]\ncommand = \"{child} --marker {m} fork-tree 1 ignore-term forever\"\n"
        ),
        child = child(),
        m = marker
    ));
    let vx = spawn_vx(&f, &["run", "lib#a", "lib#b", "--concurrency", "2"], false);
    wait_for_markers(&marker, 4);
    kill_vx_and_expect_no_survivor(vx, &marker);
}

/// A requested server kept alive after the footer (EXEC-13) is guarded like any task.
#[test]
fn kill_9_during_keep_alive_stops_the_kept_server() {
    let marker = unique_marker("guard-keep");
    let f = one_project(&format!(
        "[tasks.dev]\ncommand = \"{} --marker {marker} fork-tree 1 forever\"\npersistent = true\n",
        child()
    ));
    let vx = spawn_vx(&f, &["run", "lib#dev"], false);
    wait_for_markers(&marker, 2);
    kill_vx_and_expect_no_survivor(vx, &marker);
}

/// One guard per vx process; it exits with vx after a normal run, and kills nothing then.
#[test]
fn the_guard_exits_with_vx_after_a_normal_run() {
    let marker = unique_marker("guard-clean");
    let f = one_project(&format!(
        "[tasks.build]\ncommand = \"{} --marker {marker} sleep 1\"\n",
        child()
    ));
    let vx = spawn_vx(&f, &["run", "lib#build"], false);
    wait_for_markers(&marker, 1);
    let guard = guard_of(vx.id()).expect("vx started a guard before its first task");
    assert!(vx.take().wait().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(guard) {
        assert!(Instant::now() < deadline, "the guard outlived vx");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// If the guard itself is killed, vx goes on: later tasks still start and succeed (their
/// registration fails without harming them), and the run exits 0.
#[test]
fn a_killed_guard_does_not_break_later_tasks() {
    let f = one_project(concat!(
        "[tasks.first]\ncommand = \"while [ ! -e go ]; do sleep 0.02; done\"\n\n",
        "[tasks.second]\ncommand = \"echo second-ran\"\ndepends-on = [\"first\"]\n"
    ));
    let vx = spawn_vx(&f, &["run", "lib#second"], true);
    let deadline = Instant::now() + Duration::from_secs(10);
    let guard = loop {
        if let Some(guard) = guard_of(vx.id()) {
            break guard;
        }
        assert!(Instant::now() < deadline, "vx started no guard");
        std::thread::sleep(Duration::from_millis(10));
    };
    kill(Pid::from_raw(guard), Signal::SIGKILL).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(guard) {
        assert!(Instant::now() < deadline, "the guard did not die");
        std::thread::sleep(Duration::from_millis(10));
    }
    f.write("packages/lib/go", "");
    let out = vx.take().wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("second-ran"), "{stdout}");
}
