//! Interactive tasks (EXEC-14, SCHED-5, EXEC-1): on a real pseudo-terminal, the task inherits
//! the terminal, holds its foreground (so the terminal's Ctrl-C reaches the task, not vx), runs
//! alone, and vx takes the foreground back afterwards. Off a terminal it is an ordinary task.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use vx_test_support::fixture::Fixture;

use crate::{assert_contains, one_project};

/// vx running with a pseudo-terminal as its controlling terminal and standard streams.
struct OnPty {
    child: Option<Child>,
    master: File,
    screen: Arc<Mutex<Vec<u8>>>,
}

impl OnPty {
    fn start(f: &Fixture, args: &[&str]) -> OnPty {
        OnPty::start_with(f, args, false, false)
    }

    /// With `tostop`, the terminal stops a background process that writes to it (`stty
    /// tostop`), as some users' shells are set up.
    ///
    /// With `background`, vx runs as a background job of a job-control shell on that terminal
    /// (`vx … &`), so its process group is not the terminal's foreground.
    fn start_with(f: &Fixture, args: &[&str], tostop: bool, background: bool) -> OnPty {
        let pty = nix::pty::openpty(None, None).expect("a pseudo-terminal");
        if tostop {
            use nix::sys::termios::{tcgetattr, tcsetattr, LocalFlags, SetArg};
            let mut modes = tcgetattr(&pty.slave).unwrap();
            modes.local_flags.insert(LocalFlags::TOSTOP);
            tcsetattr(&pty.slave, SetArg::TCSANOW, &modes).unwrap();
        }
        let slave: OwnedFd = pty.slave;
        // `setsid --ctty` (util-linux) starts vx in a new session whose controlling terminal
        // is the pseudo-terminal on its stdin, as a terminal emulator's shell would.
        let vx = f.command("", args);
        let mut command = std::process::Command::new("setsid");
        command.arg("--ctty");
        if background {
            // `set -m`: job control, so `&` puts vx in a process group of its own.
            command
                .args(["sh", "-c", "set -m; \"$0\" \"$@\" & wait $!"])
                .arg(vx.get_program());
        } else {
            command.arg(vx.get_program());
        }
        command.args(vx.get_args());
        if let Some(dir) = vx.get_current_dir() {
            command.current_dir(dir);
        }
        for (name, value) in vx.get_envs() {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        command
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        let child = command.spawn().expect("vx starts");
        // The command holds copies of the slave end; without dropping them the master would
        // never see the end of the output.
        drop(command);
        let master = File::from(pty.master);
        let screen = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().unwrap();
        let sink = Arc::clone(&screen);
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            // Reading the master fails (EIO) once every slave end is closed.
            while let Ok(n) = reader.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buffer[..n]);
            }
        });
        OnPty {
            child: Some(child),
            master,
            screen,
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    /// Waits (bounded) until the terminal has shown `text`.
    fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.screen().contains(text) {
            assert!(
                Instant::now() < deadline,
                "the terminal never showed {text:?}; it shows:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn type_keys(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).unwrap();
    }

    /// Waits for vx to exit; returns its exit code and everything the terminal showed.
    fn finish(mut self) -> (Option<i32>, String) {
        let status = self.child.take().unwrap().wait().unwrap();
        // Let the reader catch up with what vx wrote just before exiting.
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut last = self.screen().len();
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            let now = self.screen().len();
            if now == last {
                break;
            }
            last = now;
        }
        (status.code(), self.screen())
    }
}

impl Drop for OnPty {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

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
    let stored = walk(&log_dir)
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

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
