//! `vx watch` with persistent tasks kept between cycles: a kept server restarts only when its own
//! inputs or an upstream changed, Ctrl-C reaches the watch and stops the servers first, and a
//! sandboxed server is warned about between cycles.

use std::time::Duration;

use nix::sys::signal::Signal;
use vx_test_support::fixture::Fixture;
use vx_test_support::process::{test_child_path, unique_marker};

use super::*;

/// Fixture W (cached) where app has a persistent `dev` task running the test child with
/// `marker` and `actions` (`depends` its `depends-on`), and `vx watch <args>` past its first
/// run with the server up.
fn watching_a_server(
    marker: &str,
    actions: &str,
    depends: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Fixture, Watching) {
    let f = crate::w_cached();
    append(
        &f,
        "packages/app/vx.toml",
        &format!(
            "[tasks.dev]\ncommand = \"{} --marker {marker} {actions}\"\npersistent = true\ndepends-on = [{depends}]\n",
            test_child_path().display()
        ),
    );
    f.commit();
    let watch = Watching::start_with(&f, "", args, env).watching();
    eventually(
        || vx_test_support::process::pids_with_marker(marker).len() == 1,
        || watch.stderr(),
    );
    (f, watch)
}

/// The rule for persistent tasks: a server goes on through cycles that change nothing
/// it depends on, and is restarted when its own project changes, with no old process left.
#[test]
fn a_server_restarts_only_when_its_own_inputs_change() {
    let marker = unique_marker("watch-dev");
    let (f, watch) = watching_a_server(
        &marker,
        "print listening sleep 1 print tick forever",
        "",
        &["app#dev", "lib#build"],
        &[],
    );
    let first = vx_test_support::process::pids_with_marker(&marker);
    // Its output is shown, prefixed, between cycles too.
    watch.wait_out("app#dev │ listening\n", 1);
    watch.wait_out("app#dev │ tick\n", 1);
    assert_eq!(watch.cycles(), 0, "{}", watch.stderr());

    // Another project changes: lib#build runs again, the server is kept.
    f.write("packages/lib/src/a.txt", "a2\n");
    watch.wait_for("vx watch: change in packages/lib/src/a.txt", 1);
    watch.wait_out("running app#dev (kept: nothing it depends on changed)", 1);
    assert_eq!(vx_test_support::process::pids_with_marker(&marker), first);
    assert!(!watch.stderr().contains("restarting"), "{}", watch.stderr());

    // Its own project changes: restarted, the old process gone before the new one starts.
    f.write("packages/app/src/b.txt", "b2\n");
    watch.wait_for(
        "vx watch: restarting app#dev: packages/app/src/b.txt changed\n",
        1,
    );
    watch.wait_out("app#dev │ listening\n", 2);
    let second = vx_test_support::process::pids_with_marker(&marker);
    assert_eq!(second.len(), 1, "one server at a time: {second:?}");
    assert_ne!(second, first, "a new server");

    // Its configuration changes: restarted too.
    let app = f.read("packages/app/vx.toml");
    f.write(
        "packages/app/vx.toml",
        &app.replace("print listening", "print listening-again"),
    );
    watch.wait_for(
        "vx watch: restarting app#dev: its configuration changed\n",
        1,
    );
    watch.wait_out("app#dev │ listening-again\n", 1);
    assert_eq!(vx_test_support::process::pids_with_marker(&marker).len(), 1);

    watch.ctrl_c();
    crate::assert_no_survivor(&marker);
}

/// An upstream that executes again restarts the server; one that ignores SIGTERM is killed
/// after the grace, so no old server survives the restart.
#[test]
fn a_server_restarts_when_an_upstream_ran_again() {
    let marker = unique_marker("watch-up");
    let (f, watch) = watching_a_server(
        &marker,
        "ignore-term print listening forever",
        "\"^build\"",
        &["app#dev"],
        &[("VX_KILL_GRACE", "300ms")],
    );
    let first = vx_test_support::process::pids_with_marker(&marker);
    f.write("packages/lib/src/a.txt", "a2\n");
    watch.wait_for(
        "vx watch: restarting app#dev: its upstream lib#build ran again\n",
        1,
    );
    watch.wait_out("app#dev │ listening\n", 2);
    let second = vx_test_support::process::pids_with_marker(&marker);
    assert_eq!(second.len(), 1, "the old server was killed: {second:?}");
    assert_ne!(second, first);
    // A cache hit of the upstream (the edit undone restores the first output) restarts it
    // too: the files it serves changed back.
    f.write("packages/lib/src/a.txt", "a\n");
    watch.wait_for(
        "vx watch: restarting app#dev: its upstream lib#build was restored from the cache\n",
        1,
    );
    watch.wait_out("app#dev │ listening\n", 3);
    let (code, stderr) = watch.stop(Signal::SIGTERM);
    assert_eq!(code, 143, "{stderr}");
    crate::assert_no_survivor(&marker);
}

/// Ctrl-C while a restart waits for an old server that ignores SIGTERM is heard at once: the
/// new server is never started, and a second Ctrl-C ends the watch without waiting out the
/// old server's grace (before, both went unheard until the old server was gone).
#[test]
fn ctrl_c_is_heard_while_a_restart_waits_for_the_old_server() {
    let marker = unique_marker("watch-restart-int");
    let (f, watch) = watching_a_server(
        &marker,
        "ignore-term print listening forever",
        "\"^build\"",
        &["app#dev"],
        &[("VX_KILL_GRACE", "60s")],
    );
    f.write("packages/lib/src/a.txt", "a2\n");
    watch.wait_for(
        "vx watch: restarting app#dev: its upstream lib#build ran again\n",
        1,
    );
    kill(Pid::from_raw(watch.pid()), Signal::SIGINT).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        watch.stdout().matches("app#dev │ listening").count(),
        1,
        "the new server never started:\n{}",
        watch.stdout()
    );
    let stderr = watch.ctrl_c();
    assert_eq!(stderr.matches("restarting app#dev").count(), 1, "{stderr}");
    crate::assert_no_survivor(&marker);
}

/// WATCH-7: a server that ends between cycles is reported, and starts again on the next
/// change; killing vx leaves no server behind (EXEC-7).
#[test]
fn a_server_that_ends_between_cycles_starts_again_on_the_next_change() {
    let marker = unique_marker("watch-dies");
    let (f, watch) = watching_a_server(
        &marker,
        "print listening sleep 3 exit 3",
        "",
        &["app#dev", "lib#build"],
        &[],
    );
    watch.wait_for(
        "vx watch: app#dev stopped by itself (exit 3); the next cycle that needs it starts it again\n",
        1,
    );
    f.write("packages/lib/src/a.txt", "a2\n");
    watch.wait_for("vx watch: change in packages/lib/src/a.txt", 1);
    watch.wait_out("app#dev │ listening\n", 2);
    watch.wait_for("stopped by itself (exit 3)", 2);
    drop((f, watch));

    // Killed outright, vx leaves nothing: its guard stops the server.
    let marker = unique_marker("watch-killed");
    let (_f, watch) = watching_a_server(&marker, "forever", "", &["app#dev"], &[]);
    let (code, _) = watch.stop(Signal::SIGKILL);
    assert_eq!(code, -1, "killed by a signal");
    crate::assert_no_survivor(&marker);
}

/// On a terminal no task of a cycle owns it: the watch must hear Ctrl-C. An interactive
/// persistent task runs as an ordinary one, and the terminal's Ctrl-C ends the watch with 0.
#[test]
fn on_a_terminal_ctrl_c_reaches_the_watch_not_an_interactive_task() {
    let f = crate::one_project(concat!(
        "[tasks.shell]\n",
        "command = \"trap 'echo caught-int; exit 3' INT; echo armed; while :; do sleep 0.05; done\"\n",
        "interactive = true\npersistent = true\n",
    ));
    let mut vx = crate::pty::OnPty::start(&f, &["watch", "lib#shell"]);
    vx.wait_for("vx watch: watching ");
    vx.wait_for("lib#shell │ armed");
    vx.type_keys(b"\x03");
    vx.wait_for("vx watch: no longer watching");
    let (code, screen) = vx.finish();
    assert_eq!(code, Some(0), "{screen}");
    assert!(!screen.contains("stopped by itself"), "{screen}");
}

/// A sandboxed server is kept like any other (its per-attempt `TMPDIR` and proxy do not make
/// it new), and a violation between cycles is still a warning at once (SBX-8).
#[test]
fn a_sandboxed_server_is_kept_and_warned_about_between_cycles() {
    if !crate::sandbox::sandbox_or_skip() {
        return;
    }
    let marker = unique_marker("watch-sbx");
    let f = crate::one_project(&format!(
        concat!(
            "[tasks.server]\n",
            // cat's complaint is silenced: written in pieces, it could split the line below.
            "command = 'echo Listening; sleep 1; cat src/a.txt 2>/dev/null; ",
            "echo x > $TMPDIR/f && echo tmpdir-ok; {c} --marker {marker} forever & wait'\n",
            "persistent = {{ ready-when = 'Listening' }}\n",
            "sandbox = {{ read = ['{c}'] }}\n",
        ),
        c = test_child_path().display(),
        marker = marker,
    ));
    f.write("packages/lib/src/a.txt", "content of a\n");
    f.commit();
    let watch = Watching::start(&f, "", &["lib#server"]).watching();
    watch.wait_for(
        "warning: lib#server: sandbox violation: read packages/lib/src/a.txt (a persistent task is not stopped for it)\n",
        1,
    );
    // Its TMPDIR outlives the first run's end.
    watch.wait_out("lib#server │ tmpdir-ok\n", 1);
    // bubblewrap, init, the shell and the child all carry the marker in their command lines
    // (the child starts right after that line; before, the shell's short-lived forks do too).
    eventually(
        || vx_test_support::process::pids_with_marker(&marker).len() == 4,
        || format!("{}\n{}", watch.stderr(), watch.stdout()),
    );
    let first = vx_test_support::process::pids_with_marker(&marker);
    // A file at the root is no project's: a cycle, and the server is kept.
    f.write("notes.txt", "notes\n");
    watch.wait_for_change("notes.txt", 1);
    watch.wait_out(
        "running lib#server (kept: nothing it depends on changed)",
        1,
    );
    assert!(!watch.stderr().contains("restarting"), "{}", watch.stderr());
    assert_eq!(vx_test_support::process::pids_with_marker(&marker), first);
    watch.ctrl_c();
    crate::assert_no_survivor(&marker);
}

/// Ctrl-C stops the servers before the watch ends: they get SIGTERM and their last words are
/// printed, before `no longer watching`.
#[test]
fn ctrl_c_stops_the_servers_first() {
    let f = crate::w_cached();
    append(
        &f,
        "packages/app/vx.toml",
        concat!(
            "[tasks.dev]\n",
            "command = \"trap 'echo got-term; exit 0' TERM; echo listening; while :; do sleep 0.05; done\"\n",
            "persistent = true\n",
        ),
    );
    f.commit();
    let watch = Watching::start(&f, "", &["app#dev"]).watching();
    watch.wait_out("app#dev │ listening\n", 1);
    let stdout = Arc::clone(&watch.stdout);
    watch.ctrl_c();
    let stdout = stdout.lock().unwrap().clone();
    assert!(stdout.contains("app#dev │ got-term\n"), "{stdout}");
}

/// A change to a server's project in a cycle that skips it (an upstream failed) is not
/// forgotten: the next cycle that reaches it restarts it, though the upstream is then a hit.
#[test]
fn a_change_in_a_cycle_that_skipped_the_server_still_restarts_it() {
    let marker = unique_marker("watch-dirty");
    let f = crate::w_cached();
    append(
        &f,
        "packages/lib/vx.toml",
        concat!(
            "[tasks.lint]\n",
            "command = \"! grep -q bad src/a.txt\"\n",
            "cache = { inputs = [\"src/**\"], outputs = [] }\n",
        ),
    );
    append(
        &f,
        "packages/app/vx.toml",
        &format!(
            "[tasks.dev]\ncommand = \"{} --marker {marker} print listening forever\"\npersistent = true\ndepends-on = [\"lib#lint\"]\n",
            test_child_path().display()
        ),
    );
    f.commit();
    let watch = Watching::start(&f, "", &["app#dev"]).watching();
    watch.wait_out("app#dev │ listening\n", 1);
    // One burst: the server's project changes and its upstream fails.
    f.write("packages/lib/src/a.txt", "bad\n");
    f.write("packages/app/src/b.txt", "b2\n");
    watch.wait_for("; running again\n", 1);
    watch.wait_out("blocked by lib#lint", 1);
    assert_eq!(watch.cycles(), 1, "{}", watch.stderr());
    assert!(!watch.stderr().contains("restarting"), "{}", watch.stderr());
    // The upstream is fixed: a hit, yet the server restarts for its own change.
    f.write("packages/lib/src/a.txt", "a\n");
    watch.wait_for(
        "vx watch: restarting app#dev: packages/app/src/b.txt changed\n",
        1,
    );
    watch.wait_out("app#dev │ listening\n", 2);
    assert_eq!(vx_test_support::process::pids_with_marker(&marker).len(), 1);
}

/// The first acceptance line: an edit re-runs exactly the tasks it affects — the cache
/// decides — and the others are hits.
#[test]
fn exactly_the_affected_tasks_run_again() {
    let f = crate::w_cached();
    let watch =
        Watching::start(&f, "packages/app", &["test", "--output-logs=hash-only"]).watching();
    f.write("packages/app/src/b.txt", "b2\n");
    watch.wait_for_change("packages/app/src/b.txt", 1);
    watch.wait_out("success miss app#test", 2);
    let stdout = watch.stdout();
    let count = |line: &str| stdout.matches(line).count();
    // The first run executed all three; the cycle only app's two.
    assert_eq!(count("success miss lib#build"), 1, "{stdout}");
    assert_eq!(count("success up-to-date lib#build"), 1, "{stdout}");
    assert_eq!(count("success miss app#build"), 2, "{stdout}");
    assert_eq!(count("success miss app#test"), 2, "{stdout}");
}

/// A kept server never waits for the watch: while a cycle waits for the workspace lock that
/// another `vx run` holds, the server's output is still read and printed.
#[test]
fn a_server_is_read_while_a_cycle_waits_for_the_workspace_lock() {
    let f = crate::w_cached();
    append(
        &f,
        "packages/app/vx.toml",
        concat!(
            "[tasks.dev]\n",
            "command = \"i=0; while :; do i=$((i+1)); echo tick-$i; sleep 0.05; done\"\n",
            "persistent = true\n",
        ),
    );
    let mut holder = LockHolder::add(&f);
    f.commit();
    let watch = Watching::start(&f, "", &["app#dev"]).watching();
    watch.wait_out("app#dev │ tick-1\n", 1);
    holder.hold(&f);
    f.write("packages/app/src/b.txt", "b2\n");
    watch.wait_for("holds this workspace; waiting", 1);
    let ticks = || watch.stdout().matches("app#dev │ tick-").count();
    let before = ticks();
    std::thread::sleep(Duration::from_millis(600));
    assert!(holder.holds(), "the lock was held all along");
    assert!(
        ticks() > before,
        "the server's output was read during the wait:\n{}",
        watch.stderr()
    );
    holder.release();
    watch.wait_for(
        "vx watch: restarting app#dev: packages/app/src/b.txt changed\n",
        1,
    );
}

/// A change made while the configuration does not load is not forgotten: the cycle after the
/// fix restarts the server for it.
#[test]
fn a_change_made_while_the_configuration_is_broken_still_restarts_the_server() {
    let marker = unique_marker("watch-broken");
    let (f, watch) = watching_a_server(&marker, "print listening forever", "", &["app#dev"], &[]);
    let root = f.read("vx.toml");
    f.write("vx.toml", "[workspace\n");
    f.write("packages/app/src/b.txt", "b2\n");
    watch.wait_for("vx watch: this cycle could not run: ", 1);
    f.write("vx.toml", &root);
    watch.wait_for(
        "vx watch: restarting app#dev: packages/app/src/b.txt changed\n",
        1,
    );
    watch.wait_out("app#dev │ listening\n", 2);
}

/// A server whose task is no longer persistent is stopped at the end of the cycle.
#[test]
fn a_server_whose_task_is_no_longer_persistent_is_stopped() {
    let marker = unique_marker("watch-oneshot");
    let (f, watch) = watching_a_server(&marker, "print listening forever", "", &["app#dev"], &[]);
    let app = f.read("packages/app/vx.toml");
    let start = app.find("[tasks.dev]").unwrap();
    f.write(
        "packages/app/vx.toml",
        &format!("{}[tasks.dev]\ncommand = \"echo once\"\n", &app[..start]),
    );
    watch.wait_for(
        "vx watch: app#dev is no longer a persistent task of the graph; stopping it\n",
        1,
    );
    crate::assert_no_survivor(&marker);
}

/// Ctrl-C while a cycle waits for the workspace lock ends the watch at once, with 0.
#[test]
fn ctrl_c_while_a_cycle_waits_for_the_lock_ends_the_watch() {
    let f = crate::w_cached();
    let mut holder = LockHolder::add(&f);
    f.commit();
    let watch = Watching::start(&f, "", &["lib#build"]).watching();
    holder.hold(&f);
    f.write("packages/lib/src/a.txt", "a2\n");
    watch.wait_for("holds this workspace; waiting", 1);
    watch.ctrl_c();
    assert!(holder.holds(), "the watch ended before the lock was free");
}

/// Ctrl-C during a cycle that keeps a server stops it too, as an end vx caused (not reported as
/// stopping by itself), and the watch ends with 0 and nothing left.
#[test]
fn ctrl_c_during_a_cycle_stops_the_kept_servers() {
    let marker = unique_marker("watch-cycle-int");
    let f = crate::w_cached();
    append(
        &f,
        "packages/app/vx.toml",
        &format!(
            "[tasks.dev]\ncommand = \"{} --marker {marker} print listening forever\"\npersistent = true\n",
            test_child_path().display()
        ),
    );
    append(
        &f,
        "packages/lib/vx.toml",
        "[tasks.slow]\ncommand = \"if [ -e src/slow ]; then sleep 30; fi\"\n",
    );
    f.commit();
    let watch = Watching::start(&f, "", &["app#dev", "lib#slow"]).watching();
    watch.wait_out("app#dev │ listening\n", 1);
    // A cycle that keeps the server and runs lib#slow for a long time.
    f.write("packages/lib/src/slow", "\n");
    watch.wait_for_change("packages/lib/src/slow", 1);
    watch.wait_out("running app#dev (kept: nothing it depends on changed)", 1);
    let (code, stderr) = watch.stop(Signal::SIGINT);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("stopped by itself"), "{stderr}");
    crate::assert_no_survivor(&marker);
}
