//! `vx watch` (WATCH-1 …, ACC-33) on the real binary: vx runs in the background with its
//! stderr read on a thread, the test edits files and waits (bounded) for vx's lines; survivors
//! are found by marker (TEST-2).

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use vx_test_support::fixture::Fixture;
use vx_test_support::process::{test_child_path, unique_marker};

use crate::{assert_contains, assert_no_survivor, w};

/// How long a line may take to appear before the test fails (generous: CI machines are slow).
const PATIENCE: Duration = Duration::from_secs(20);
/// How long to wait to be sure nothing happens: longer than the debounce's 1 s ceiling.
const NOTHING: Duration = Duration::from_millis(1800);

/// Polls until `done` holds; fails with `what()` after [`PATIENCE`].
#[track_caller]
fn eventually(done: impl Fn() -> bool, what: impl Fn() -> String) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "{}", what());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `vx watch …` in the background, its output read on threads; killed if the test fails.
struct Watching {
    child: Option<Child>,
    stderr: Arc<Mutex<String>>,
    stdout: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
}

impl Watching {
    fn start(f: &Fixture, rel: &str, args: &[&str]) -> Watching {
        Watching::start_with(f, rel, args, &[])
    }

    fn start_with(f: &Fixture, rel: &str, args: &[&str], env: &[(&str, &str)]) -> Watching {
        let mut argv = vec!["watch"];
        argv.extend_from_slice(args);
        let mut child = f
            .command(rel, &argv)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("vx starts");
        let mut readers = Vec::new();
        let mut collect = |stream: Box<dyn std::io::Read + Send>| {
            let text = Arc::new(Mutex::new(String::new()));
            let sink = Arc::clone(&text);
            readers.push(std::thread::spawn(move || {
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    let mut text = sink.lock().unwrap();
                    text.push_str(&line);
                    text.push('\n');
                }
            }));
            text
        };
        let stderr = collect(Box::new(child.stderr.take().unwrap()));
        let stdout = collect(Box::new(child.stdout.take().unwrap()));
        Watching {
            child: Some(child),
            stderr,
            stdout,
            readers,
        }
    }

    /// Waits until the first run is over and vx watches.
    #[track_caller]
    fn watching(self) -> Watching {
        self.wait_for("vx watch: watching ", 1);
        self
    }

    fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    fn stdout(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    /// Waits until stderr holds `line` `times` times.
    #[track_caller]
    fn wait_for(&self, line: &str, times: usize) {
        eventually(
            || self.stderr().matches(line).count() >= times,
            || {
                format!(
                    "{line:?} did not appear {times}× in:\n{}\nstdout:\n{}",
                    self.stderr(),
                    self.stdout()
                )
            },
        );
    }

    /// Waits until stdout holds `text` `times` times.
    #[track_caller]
    fn wait_out(&self, text: &str, times: usize) {
        eventually(
            || self.stdout().matches(text).count() >= times,
            || {
                format!(
                    "{text:?} did not appear {times}× in stdout:\n{}\nstderr:\n{}",
                    self.stdout(),
                    self.stderr()
                )
            },
        );
    }

    /// Waits until the line for a cycle started by a change in `rel` appeared `times` times.
    #[track_caller]
    fn wait_for_change(&self, rel: &str, times: usize) {
        self.wait_for(
            &format!("vx watch: change in {rel}; running again\n"),
            times,
        );
    }

    /// Waits longer than the debounce ceiling, then checks that `cycles` cycles have started
    /// and no more.
    #[track_caller]
    fn no_cycle_beyond(&self, cycles: usize) {
        std::thread::sleep(NOTHING);
        assert_eq!(self.cycles(), cycles, "{}", self.stderr());
    }

    /// How many cycles have started after the first run.
    fn cycles(&self) -> usize {
        self.stderr().matches("; running again").count()
    }

    /// Ctrl-C: the watch must end with 0 and its farewell line; returns the whole of stderr.
    #[track_caller]
    fn ctrl_c(self) -> String {
        let (code, stderr) = self.stop(Signal::SIGINT);
        assert_eq!(code, 0, "{stderr}");
        assert!(
            stderr.ends_with("vx watch: no longer watching\n"),
            "{stderr}"
        );
        stderr
    }

    /// Sends `signal`; returns the exit code and the whole of stderr.
    fn stop(mut self, signal: Signal) -> (i32, String) {
        let mut child = self.child.take().unwrap();
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        let deadline = Instant::now() + PATIENCE;
        let code = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status.code().unwrap_or(-1);
            }
            assert!(Instant::now() < deadline, "vx watch did not end");
            std::thread::sleep(Duration::from_millis(20));
        };
        // vx has exited: the readers reach end-of-file, so stderr is complete.
        for reader in std::mem::take(&mut self.readers) {
            let _ = reader.join();
        }
        (code, self.stderr())
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Fixture W with `files` written (the lib's `vx.toml` among them) and committed, and
/// `vx watch <args>` at the root past its first run.
fn watching_w(files: &[(&str, &str)], args: &[&str]) -> (Fixture, Watching) {
    let f = w();
    for (path, text) in files {
        f.write(path, text);
    }
    f.commit();
    let watch = Watching::start(&f, "", args).watching();
    (f, watch)
}

/// Another `vx run` that holds the workspace lock until released: task lib#hold, added by
/// [`LockHolder::add`] before the commit; its files are outside the workspace, so they start no
/// cycle.
struct LockHolder {
    dir: tempfile::TempDir,
    run: Option<Child>,
}

impl LockHolder {
    fn add(f: &Fixture) -> LockHolder {
        let dir = tempfile::tempdir().unwrap();
        let held = dir.path().join("held");
        let release = dir.path().join("release");
        append(
            f,
            "packages/lib/vx.toml",
            &format!(
                "[tasks.hold]\ncommand = \"touch {}; until [ -e {} ]; do sleep 0.05; done\"\n",
                held.display(),
                release.display()
            ),
        );
        LockHolder { dir, run: None }
    }

    /// Starts the run and waits until its task runs (so it holds the lock).
    fn hold(&mut self, f: &Fixture) {
        let run = f
            .command("", &["run", "lib#hold"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.run = Some(run);
        let held = self.dir.path().join("held");
        eventually(|| held.exists(), || "lib#hold did not start".to_string());
    }

    fn holds(&mut self) -> bool {
        self.run
            .as_mut()
            .is_some_and(|run| run.try_wait().unwrap().is_none())
    }

    fn release(&mut self) {
        std::fs::write(self.dir.path().join("release"), "").unwrap();
        if let Some(mut run) = self.run.take() {
            let _ = run.wait();
        }
    }
}

impl Drop for LockHolder {
    fn drop(&mut self) {
        self.release();
    }
}

/// Appends `text` to the file `rel` (a task table to a `vx.toml`), after a blank line.
fn append(f: &Fixture, rel: &str, text: &str) {
    f.write(rel, &format!("{}\n{text}", f.read(rel)));
}

/// Sets the modification time of `rel` to now without changing a byte (`touch`).
fn touch(f: &Fixture, rel: &str) {
    std::fs::File::options()
        .append(true)
        .open(f.path(rel))
        .unwrap()
        .set_modified(std::time::SystemTime::now())
        .unwrap();
}

/// `vx watch lib#build` on fixture W where lib#build runs the test child with `marker` and
/// `actions`, once `processes` of it run.
fn watching_a_marked_task(marker: &str, actions: &str, processes: usize) -> (Fixture, Watching) {
    let f = w();
    f.write(
        "packages/lib/vx.toml",
        &format!(
            "[tasks.build]\ncommand = \"cat src/a.txt; {} --marker {marker} {actions}\"\n",
            test_child_path().display()
        ),
    );
    f.commit();
    let watch = Watching::start(&f, "", &["lib#build"]);
    eventually(
        || vx_test_support::process::pids_with_marker(marker).len() >= processes,
        || watch.stderr(),
    );
    (f, watch)
}

/// ACC-33 (fixture W, cached).
#[test]
fn acc33_watch() {
    let f = crate::w_cached();
    let watch = Watching::start(&f, "packages/app", &["build"]).watching();
    assert!(
        watch.stderr().starts_with("vx watch: first run\n"),
        "{}",
        watch.stderr()
    );
    f.write("packages/lib/src/a.txt", "a2\n");
    watch.wait_for_change("packages/lib/src/a.txt", 1);
    // lib#build executed again: its output holds the edit.
    eventually(
        || f.read("packages/lib/dist/out.txt") == "a2\n",
        || "lib#build did not run again".to_string(),
    );
    watch.wait_out("└─ app#build", 2);
    // An output and a touch start nothing.
    f.write("packages/lib/dist/out.txt", "written by hand\n");
    touch(&f, "packages/lib/src/a.txt");
    watch.no_cycle_beyond(1);
    // Still watching: a real edit is one more cycle.
    f.write("packages/app/src/b.txt", "b2\n");
    watch.wait_for_change("packages/app/src/b.txt", 1);
    watch.ctrl_c();
}

#[test]
fn ctrl_c_prints_the_line_and_exits_0() {
    let (_f, watch) = watching_w(&[], &["build", "--all"]);
    watch.ctrl_c();
}

#[test]
fn sigterm_ends_the_watch_with_143() {
    let (_f, watch) = watching_w(&[], &["build", "--all"]);
    let (code, stderr) = watch.stop(Signal::SIGTERM);
    assert_eq!(code, 143, "{stderr}");
    assert!(!stderr.contains("no longer watching"), "{stderr}");
}

/// WATCH-4: a burst of edits inside the debounce is one cycle.
#[test]
fn a_burst_of_edits_is_one_cycle() {
    let f = crate::w_cached();
    let watch = Watching::start(&f, "", &["build", "--all"]).watching();
    for i in 0..50 {
        f.write("packages/lib/src/a.txt", &format!("edit {i}\n"));
    }
    watch.wait_for("; running again\n", 1);
    watch.no_cycle_beyond(1);
    assert!(
        watch
            .stderr()
            .contains("vx watch: change in packages/lib/src/a.txt; running again"),
        "{}",
        watch.stderr()
    );
}

/// WATCH-3: git-ignored files, `node_modules` and `.vx` never start a cycle when every task
/// is cached; in a project with an uncached task an ignored file counts (the task may read it).
#[test]
fn ignored_files_start_nothing() {
    let f = crate::w_cached();
    f.write(".gitignore", "dist/\n.vx/\n*.log\n");
    f.commit();
    let watch = Watching::start(&f, "", &["build", "--all"]).watching();
    f.write("packages/lib/src/notes.log", "ignored\n");
    f.write("packages/lib/node_modules/x/index.js", "module\n");
    f.write(".vx/stray", "x\n");
    watch.no_cycle_beyond(0);
    // A real edit still does.
    f.write("packages/app/src/b.txt", "b2\n");
    watch.wait_for_change("packages/app/src/b.txt", 1);
    drop(watch);

    // Uncached tasks: an ignored file is a change. (The first run's own ignored `dist/` is
    // one too, judged after it: one cycle, whose identical rewrite starts none.)
    let (f, watch) = watching_w(&[(".gitignore", "dist/\n.vx/\n*.log\n")], &["lib#build"]);
    watch.wait_for_change("packages/lib/dist/out.txt", 1);
    watch.no_cycle_beyond(1);
    f.write("packages/lib/src/notes.log", "read by an uncached task\n");
    watch.wait_for_change("packages/lib/src/notes.log", 1);
}

/// WATCH-5: a task that rewrites one of its own inputs on every cycle is named once.
#[test]
fn a_path_that_changes_on_every_cycle_is_named() {
    let (f, watch) = watching_w(
        &[(
            "packages/lib/vx.toml",
            "[tasks.build]\ncommand = \"date +%s%N > src/gen.txt\"\n",
        )],
        &["lib#build"],
    );
    f.write("packages/lib/src/a.txt", "kick\n");
    watch.wait_for(
        "vx watch: `packages/lib/src/gen.txt` changes on every cycle; declare it as an output or ignore it in git\n",
        1,
    );
    std::thread::sleep(NOTHING);
    assert_eq!(
        watch.stderr().matches("changes on every cycle").count(),
        1,
        "named once: {}",
        watch.stderr()
    );
}

/// WATCH-7: a failing cycle keeps the watch; the fixing edit's cycle succeeds.
#[test]
fn a_failing_cycle_then_a_fixing_one() {
    let (f, watch) = watching_w(
        &[
            (
                "packages/lib/vx.toml",
                "[tasks.build]\ncommand = \"grep -q good src/a.txt && echo lib is good\"\n",
            ),
            ("packages/lib/src/a.txt", "good\n"),
        ],
        &["lib#build"],
    );
    f.write("packages/lib/src/a.txt", "bad\n");
    watch.wait_for("; running again\n", 1);
    watch.wait_out("failed", 1);
    f.write("packages/lib/src/a.txt", "good again\n");
    watch.wait_for("; running again\n", 2);
    watch.wait_out("lib is good", 2);
}

/// WATCH-4: an edit made while a cycle runs is not lost: it starts the next cycle.
#[test]
fn an_edit_during_a_cycle_starts_the_next() {
    // The marker lives outside the workspace, so writing it is no change.
    let outside = tempfile::tempdir().unwrap();
    let started = outside.path().join("started");
    let tasks = format!(
        "[tasks.build]\ncommand = \"echo started > {}; sleep 2; cat src/a.txt\"\n",
        started.display()
    );
    let (f, watch) = watching_w(&[("packages/lib/vx.toml", &tasks)], &["lib#build"]);
    let _ = std::fs::remove_file(&started);
    f.write("packages/lib/src/a.txt", "first edit\n");
    watch.wait_for("; running again\n", 1);
    eventually(
        || started.exists(),
        || "the cycle never started its task".to_string(),
    );
    f.write("packages/lib/src/a.txt", "second edit\n");
    watch.wait_for_change("packages/lib/src/a.txt", 2);
    watch.wait_out("second edit", 1);
}

/// WATCH-7: a configuration that does not load is one line, and the watch goes on.
#[test]
fn a_broken_configuration_is_reported_and_the_watch_goes_on() {
    let (f, watch) = watching_w(&[], &["lib#build"]);
    f.write("packages/lib/vx.toml", "[tasks.build]\ncomand = \"x\"\n");
    watch.wait_for(
        "vx watch: this cycle could not run: packages/lib/vx.toml:2:1: unknown key `comand`",
        1,
    );
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"echo fixed config\"\n",
    );
    watch.wait_out("fixed config", 1);
}

/// Ctrl-C during a cycle stops its tasks: nothing survives, and the watch exits 0.
#[test]
fn ctrl_c_during_a_cycle_leaves_no_process() {
    let marker = unique_marker("watch-int");
    let (_f, watch) = watching_a_marked_task(&marker, "fork-tree 1 sleep 300", 2);
    watch.ctrl_c();
    assert_no_survivor(&marker);
}

/// WATCH-8's refused flags, each as given on the command line.
const REFUSED: [&str; 8] = [
    "--dry",
    "--graph",
    "--summarize",
    "--profile",
    "--frozen",
    "--report=junit=x.xml",
    "--exit-code",
    "--shard=1/2",
];

/// WATCH-8: flags without meaning for a watch, and unknown tasks, exit 2 before any run.
#[test]
fn refused_flags_and_unknown_tasks_exit_2() {
    let f = w();
    for flag in REFUSED {
        let out = f.vx(&["watch", "build", "--all", flag]);
        assert_eq!(out.code, 2, "{flag}: {out:?}");
        assert!(
            out.stderr.contains(&format!(
                "{} cannot be used with `vx watch`",
                flag.split('=').next().unwrap()
            )),
            "{flag}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("first run"), "{}", out.stderr);
    }
    // ... and its help does not offer them.
    let help = f.vx(&["watch", "--help"]);
    for flag in REFUSED.map(|f| f.split('=').next().unwrap()) {
        assert!(!help.stdout.contains(flag), "{flag} in:\n{}", help.stdout);
    }
    assert_contains(&help.stdout, "vx watch test ");
    // A watch is not a build of a commit: it records no green run (SEL-10).
    let out = f.vx(&["watch", "build", "--affected=last-green"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_contains(
        &out.stderr,
        "--affected=last-green cannot be used with `vx watch`",
    );
    let out = f.vx(&["watch", "lib#nope"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(!out.stderr.contains("first run"), "{}", out.stderr);
}

/// WATCH-6: with `VX_WATCH_POLL=1` vx polls, says so once, and still sees an edit (and still
/// not a touch).
#[test]
fn polling_sees_edits() {
    let f = crate::w_cached();
    let watch = Watching::start_with(&f, "", &["lib#build"], &[("VX_WATCH_POLL", "1")]).watching();
    assert_eq!(watch.stderr().matches("polling every 250ms").count(), 1);
    f.write("packages/lib/src/a.txt", "polled edit\n");
    watch.wait_for_change("packages/lib/src/a.txt", 1);
    watch.wait_out("└─ lib#build", 2);
    touch(&f, "packages/lib/src/a.txt");
    watch.no_cycle_beyond(1);
}

/// An idle watch is idle: judging a change opens files, and those opens must not be events
/// that start the judging again.
#[test]
fn an_idle_watch_reads_nothing() {
    let f = crate::w_cached();
    let watch = Watching::start(&f, "", &["build", "--all"]).watching();
    f.write("packages/lib/src/a.txt", "a2\n");
    watch.wait_for("; running again\n", 1);
    watch.wait_out("── vx ", 2);
    std::thread::sleep(NOTHING);
    let reads = || {
        let io = std::fs::read_to_string(format!("/proc/{}/io", watch.pid())).unwrap();
        io.lines()
            .find_map(|l| l.strip_prefix("syscr: "))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .unwrap()
    };
    let before = reads();
    std::thread::sleep(Duration::from_millis(1500));
    let after = reads();
    assert!(
        after - before < 50,
        "{} read calls in 1.5 s of doing nothing",
        after - before
    );
}

/// WATCH-2: a directory deleted and made again is watched again; a new project under a member
/// parent starts a cycle.
#[test]
fn recreated_directories_and_new_projects_are_watched() {
    let f = crate::w_cached();
    let watch = Watching::start(&f, "", &["build", "--all"]).watching();
    std::fs::remove_dir_all(f.path("packages/lib/src")).unwrap();
    watch.wait_for_change("packages/lib/src/a.txt", 1);
    f.write("packages/lib/src/a.txt", "back\n");
    watch.wait_for_change("packages/lib/src/a.txt", 2);
    f.write("packages/lib/src/a.txt", "edited after\n");
    watch.wait_for_change("packages/lib/src/a.txt", 3);
    std::fs::create_dir_all(f.path("packages/new")).unwrap();
    watch.wait_for("vx watch: change in packages/new", 1);
}

/// WATCH-2: with `workspace-inputs` the whole root is watched, projects included.
#[test]
fn workspace_inputs_watch_the_whole_root() {
    let (f, watch) = watching_w(
        &[
            ("tsconfig.json", "{}\n"),
            (
                "packages/lib/vx.toml",
                concat!(
                    "[tasks.build]\ncommand = \"cat src/a.txt\"\n",
                    "cache = { inputs = [\"src/**\"], workspace-inputs = [\"tsconfig.json\"], outputs = [] }\n",
                ),
            ),
        ],
        &["lib#build"],
    );
    f.write("packages/lib/src/a.txt", "in a project\n");
    watch.wait_for_change("packages/lib/src/a.txt", 1);
    watch.wait_out("in a project", 1);
    f.write("tsconfig.json", "{ \"strict\": true }\n");
    watch.wait_for_change("tsconfig.json", 1);
}

/// WATCH-1: a second Ctrl-C during a cycle (a task that ignores the first) still ends the
/// watch with 0 and the line.
#[test]
fn a_second_ctrl_c_during_a_cycle_exits_0() {
    let marker = unique_marker("watch-int2");
    let (_f, watch) = watching_a_marked_task(&marker, "ignore-int ignore-term forever", 1);
    kill(Pid::from_raw(watch.pid()), Signal::SIGINT).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    watch.ctrl_c();
    assert_no_survivor(&marker);
}

/// WATCH-3: a declared output never starts a cycle, even when git does not ignore it and the
/// same task's inputs cover it; an input next to it still does.
#[test]
fn outputs_start_nothing_even_under_the_tasks_own_inputs() {
    let (f, watch) = watching_w(
        &[
            (".gitignore", ".vx/\n"),
            (
                "packages/lib/vx.toml",
                concat!(
                    "[tasks.build]\ncommand = \"mkdir -p dist && cat src/a.txt > dist/out.txt\"\n",
                    "cache = { inputs = [\"**\"], outputs = [\"dist/**\"] }\n",
                ),
            ),
        ],
        &["lib#build"],
    );
    // The first run's own output is judged after it: not a change.
    watch.no_cycle_beyond(0);
    f.write("packages/lib/dist/out.txt", "by hand\n");
    watch.no_cycle_beyond(0);
    f.write("packages/lib/src/a.txt", "an input\n");
    watch.wait_for_change("packages/lib/src/a.txt", 1);
}

/// WATCH-7: `--affected` is evaluated once, at the start: a project it did not reach is not
/// watched even after it changes; with nothing affected the watch ends at once with SEL-6's
/// line.
#[test]
fn affected_is_evaluated_once() {
    let f = crate::w_cached();
    let out = f.vx(&["watch", "build", "--affected=HEAD"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.starts_with("vx: no project changed since HEAD"),
        "{}",
        out.stderr
    );
    f.write("packages/lib/src/a.txt", "edited before the watch\n");
    let watch = Watching::start(&f, "", &["build", "--affected=HEAD"]).watching();
    assert!(!watch.stdout().contains("docs#build"), "{}", watch.stdout());
    f.write("packages/docs/notes.txt", "docs changed after the start\n");
    watch.no_cycle_beyond(0);
    f.write("packages/app/src/b.txt", "b2\n");
    watch.wait_for_change("packages/app/src/b.txt", 1);
    watch.wait_out("── vx ", 2);
    assert!(!watch.stdout().contains("docs#build"), "{}", watch.stdout());
}

mod servers;
