//! Interactive tasks (EXEC-14, SCHED-5, EXEC-1): on a real pseudo-terminal, the task inherits
//! the terminal, holds its foreground (so the terminal's Ctrl-C reaches the task, not vx), runs
//! alone, and vx takes the foreground back afterwards. Off a terminal it is an ordinary task.

use std::time::{Duration, Instant};

use crate::pty::OnPty;
use crate::{assert_contains, one_project};

/// Fields 5 (process group) and 8 (the terminal's foreground group) of `/proc/<pid>/stat`.
fn group_and_foreground(pid: u32) -> (i32, i32) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    (fields[2].parse().unwrap(), fields[5].parse().unwrap())
}

/// The task reads what is typed, writes straight to the terminal (no frame, nothing stored),
/// and holds the terminal's foreground while it runs.
#[test]
fn an_interactive_task_owns_the_terminal() {
    let f = one_project(concat!(
        "[tasks.login]\n",
        "command = \"awk '{ print ($5 == $8 ? \\\"in-foreground\\\" : \\\"in-background\\\") }' /proc/self/stat; read line; echo \\\"got:$line\\\"\"\n",
        "interactive = true\n",
    ));
    let mut vx = OnPty::start(&f, &["run", "lib#login"]);
    vx.wait_for("in-");
    vx.type_keys(b"hello\n");
    let (code, screen) = vx.finish();
    assert_eq!(code, Some(0), "{screen}");
    assert_contains(&screen, "in-foreground");
    assert_contains(&screen, "got:hello");
    assert!(
        !screen.contains("┌─ lib#login"),
        "an interactive task is not framed:\n{screen}"
    );
    let log_dir = f.path(".vx");
    let stored = vx_test_support::tree::files(&log_dir)
        .into_iter()
        .any(|file| std::fs::read(&file).is_ok_and(|b| contains(&b, b"got:hello")));
    assert!(
        !stored,
        "the interactive task's output was stored under .vx"
    );
}

/// EXEC-9/EXEC-1: while the task holds the foreground, the terminal's Ctrl-C reaches the
/// task, not vx: the task's trap runs and vx reports its exit, not an abort.
#[test]
fn ctrl_c_reaches_the_interactive_task_not_vx() {
    let f = one_project(concat!(
        "[tasks.shell]\n",
        "command = \"trap 'echo caught-int; exit 3' INT; echo armed; while :; do sleep 0.05; done\"\n",
        "interactive = true\n",
    ));
    let mut vx = OnPty::start(&f, &["run", "lib#shell"]);
    vx.wait_for("armed");
    vx.type_keys(b"\x03");
    let (code, screen) = vx.finish();
    assert_contains(&screen, "caught-int");
    assert_eq!(code, Some(1), "vx was not interrupted itself:\n{screen}");
    assert!(!screen.contains("aborted"), "{screen}");
}

/// SCHED-5: the interactive task starts only when nothing else is executing, and nothing
/// starts beside it (with 4 slots, `slow` would otherwise run alongside); when it ends vx
/// holds the foreground again.
#[test]
fn an_interactive_task_runs_alone_and_vx_takes_the_foreground_back() {
    let f = one_project(concat!(
        "[tasks.slow]\ncommand = \"touch slow.started; sleep 0.5; touch slow.done\"\n\n",
        "[tasks.login]\n",
        // `slow` is running when it has started and not finished; login looks at its start
        // and again at its end.
        "command = \"r() { [ -e slow.started ] && [ ! -e slow.done ]; }; ",
        "if r; then echo beside-slow; fi; sleep 0.3; if r; then echo beside-slow; fi; touch login.done\"\n",
        "interactive = true\n\n",
        "[tasks.next]\n",
        "command = \"echo next-started; while [ ! -e release ]; do sleep 0.02; done\"\n",
        "depends-on = [\"login\"]\n",
    ));
    let vx = OnPty::start(&f, &["run", "lib#slow", "lib#next", "--concurrency", "4"]);
    let vx_pid = vx.pid();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f.path("packages/lib/login.done").exists() {
        assert!(
            Instant::now() < deadline,
            "login never ran:\n{}",
            vx.screen()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // `next` runs after login; while it waits for the release file, vx must be the
    // terminal's foreground again.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (group, foreground) = group_and_foreground(vx_pid);
        if group == foreground {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "vx never took the foreground back"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    f.write("packages/lib/release", "");
    let (code, screen) = vx.finish();
    assert_eq!(code, Some(0), "{screen}");
    assert!(
        !screen.contains("beside-slow"),
        "login ran while slow was running:\n{screen}"
    );
    assert!(f.path("packages/lib/slow.done").exists());
}

/// EXEC-14: an interactive persistent task starts last, once everything else has finished,
/// and holds the terminal until it exits; vx then exits with its code. vx prints its footer
/// while the task holds the foreground: with `stty tostop` that write must not stop vx.
#[test]
fn an_interactive_persistent_task_starts_last_and_holds_the_terminal() {
    let f = one_project(concat!(
        "[tasks.build]\ncommand = \"sleep 0.3; touch build.done\"\n\n",
        "[tasks.shell]\n",
        "command = \"[ -e build.done ] && echo shell-after-build; read line; echo \\\"shell-got:$line\\\"\"\n",
        "interactive = true\npersistent = true\n",
    ));
    let mut vx = OnPty::start_with(&f, &["run", "lib#shell", "lib#build"], true, false);
    vx.wait_for("shell-");
    vx.wait_for("result");
    vx.type_keys(b"bye\n");
    let (code, screen) = vx.finish();
    assert_eq!(code, Some(0), "{screen}");
    assert_contains(&screen, "shell-after-build");
    assert_contains(&screen, "shell-got:bye");
    assert_contains(&screen, "ended (exit 0)");
}

/// A vx started in the background (`vx run login &`) does not own the terminal, so it must not
/// hand it to the task (that would take it from the shell): the task is ordinary.
#[test]
fn a_background_vx_does_not_take_the_terminal() {
    let f = one_project(concat!(
        "[tasks.login]\n",
        "command = \"read line; echo \\\"got:$line\\\"\"\n",
        "interactive = true\n",
    ));
    let vx = OnPty::start_with(&f, &["run", "lib#login"], false, true);
    let (code, screen) = vx.finish();
    assert_eq!(code, Some(0), "{screen}");
    assert_contains(&screen, "got:\r\n");
    assert_contains(&screen, "#login");
}

/// Off a terminal an interactive task is an ordinary task: framed, stdin at end of file.
#[test]
fn off_a_terminal_an_interactive_task_is_ordinary() {
    let f = one_project(concat!(
        "[tasks.login]\n",
        "command = \"read line; echo \\\"got:$line\\\"\"\n",
        "interactive = true\n",
    ));
    let out = f.vx(&["run", "lib#login"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "got:\n");
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// EXEC-14: Ctrl-Z in an interactive task stops it, and vx passes the stop on to its own job,
/// so the shell that started vx sees a stopped job (instead of vx waiting forever); `fg` gives
/// the terminal back to the task, which goes on where it was.
#[test]
fn ctrl_z_stops_the_interactive_task_and_vx_and_fg_resumes_both() {
    let f = one_project(concat!(
        "[tasks.login]\n",
        "command = \"echo asking; read line; echo \\\"got:$line\\\"\"\n",
        "interactive = true\n",
    ));
    let script = "set -m; \"$0\" \"$@\"; echo \"vx stopped: $?\"; fg; echo \"vx ended: $?\"";
    let mut vx = OnPty::start_in_shell(&f, &["run", "lib#login"], script);
    vx.wait_for("asking");
    vx.type_keys(b"\x1a");
    // 128 + SIGTSTP: the shell saw vx's job stop, and resumed it with `fg`.
    vx.wait_for("vx stopped: 148");
    // `fg` prints the job's command (`"${0}" "${@}"` in dash, `"$0" "$@"` in bash) as it
    // continues it; type once that is done.
    vx.wait_for("\"$");
    vx.type_keys(b"resumed\n");
    let (code, screen) = vx.finish();
    assert_eq!(code, Some(0), "{screen}");
    assert_contains(&screen, "got:resumed");
    assert_contains(&screen, "vx ended: 0");
}
