//! `vx lock` (INIT-4) and `vx run --frozen` (INIT-5) on fixture W: what the lock holds, that a
//! frozen run takes its tasks from it and keys them as a plain run does, every way a lock goes
//! stale, drift, secrets, the lock in no key (KEY-13), a corrupt lock, `vx info`, and run
//! snapshots of frozen runs.

use std::process::Command;

use vx_test_support::fixture::{Fixture, Output};

use crate::assert_contains;
use crate::cache::wc;

fn ok(out: &Output) {
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
}

/// `git hash-object` of a fixture file: the blob id git gives it.
fn git_blob(f: &Fixture, rel: &str) -> String {
    let out = Command::new("git")
        .args(["hash-object", rel])
        .current_dir(f.root())
        .output()
        .expect("git runs");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn lock_json(f: &Fixture) -> serde_json::Value {
    serde_json::from_str(&f.read("vx.lock")).expect("vx.lock is JSON")
}

/// Fixture W with caches, locked.
fn locked() -> Fixture {
    let f = wc();
    let out = f.vx(&["lock"]);
    ok(&out);
    f
}

fn frozen(f: &Fixture) -> Output {
    f.vx(&["run", "build", "--all", "--frozen"])
}

/// A frozen run refused for `why`, before anything ran.
#[track_caller]
fn stale(f: &Fixture, why: &str) {
    let out = frozen(f);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        format!("error: vx.lock is stale: {why}\n  hint: run `vx lock`\n")
    );
    assert_eq!(out.stdout, "");
}

#[test]
fn the_lock_names_every_file_by_blob_id_and_holds_the_resolved_tasks() {
    let f = wc();
    let out = f.vx(&["lock"]);
    ok(&out);
    assert_eq!(out.stdout, "wrote vx.lock: 3 projects, 5 tasks\n");
    let text = f.read("vx.lock");
    assert!(text.ends_with("}\n"), "{text}");
    let lock = lock_json(&f);
    assert_eq!(lock["lock-version"], 1);
    assert_eq!(lock["root"]["vx.toml"], git_blob(&f, "vx.toml"));
    assert!(lock["root"].get("package.json").is_none(), "{lock}");
    assert_eq!(
        lock["members"],
        serde_json::json!(["packages/app", "packages/docs", "packages/lib"])
    );
    let app = &lock["projects"]["app"];
    assert_eq!(app["dir"], "packages/app");
    assert_eq!(app["vx.toml"], git_blob(&f, "packages/app/vx.toml"));
    assert_eq!(
        app["package.json"],
        git_blob(&f, "packages/app/package.json")
    );
    assert_eq!(app["version"], "1.0.0");
    assert_eq!(app["deps"], serde_json::json!([{ "to": "lib" }]));
    let build = &app["tasks"]["build"];
    assert_eq!(build["depends-on"], serde_json::json!(["^build"]));
    assert_eq!(
        build["cache"],
        serde_json::json!({ "inputs": ["src/**"], "outputs": ["dist/**"] })
    );
    // An explicit empty list is kept (a cached task with no files); defaults are left out.
    assert_eq!(
        app["tasks"]["test"]["cache"]["outputs"],
        serde_json::json!([])
    );
    assert_eq!(
        app["tasks"]["check"],
        serde_json::json!({ "depends-on": ["build", "test"] })
    );
    // Keys keep one order: the text is the same each time, and a second lock writes nothing.
    let again = f.vx(&["lock"]);
    ok(&again);
    assert_eq!(again.stdout, "vx.lock is up to date: 3 projects, 5 tasks\n");
    assert_eq!(f.read("vx.lock"), text);
    let check = f.vx(&["lock", "--check"]);
    ok(&check);
    assert_eq!(check.stdout, "vx.lock is up to date\n");
}

#[test]
fn a_frozen_run_takes_its_tasks_from_the_lock_and_keys_them_as_a_plain_run_does() {
    let f = locked();
    let plain = f.vx(&["run", "build", "--all"]);
    ok(&plain);
    assert_contains(&plain.stdout, "cache      2 miss · 1 no-cache\n");
    let out = frozen(&f);
    ok(&out);
    assert_contains(&out.stdout, "cache      2 up-to-date · 1 no-cache\n");
    // The lock is what a frozen run reads: edited by hand (every file it names unchanged), its
    // command runs; a plain run still runs the one in vx.toml.
    let text = f.read("vx.lock");
    assert!(text.contains("\"command\": \"echo docs\""), "{text}");
    f.write(
        "vx.lock",
        &text.replace(
            "\"command\": \"echo docs\"",
            "\"command\": \"touch from-the-lock\"",
        ),
    );
    ok(&frozen(&f));
    let marker = f.path("packages/docs/from-the-lock");
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();
    ok(&f.vx(&["run", "build", "--all"]));
    assert!(!marker.exists());
}

#[test]
fn every_change_to_a_locked_file_or_the_members_makes_the_lock_stale() {
    let f = locked();
    f.write(
        "packages/lib/vx.toml",
        &format!("{}# a comment\n", f.read("packages/lib/vx.toml")),
    );
    stale(&f, "packages/lib/vx.toml changed since it was locked");
    assert!(!f.path("packages/lib/dist").exists(), "nothing ran");
    f.git(&["checkout", "--", "packages/lib/vx.toml"]);
    ok(&frozen(&f));

    f.write(
        "packages/app/package.json",
        r#"{ "name": "app", "version": "1.0.1", "dependencies": { "lib": "workspace:*" } }"#,
    );
    stale(&f, "packages/app/package.json changed since it was locked");
    f.git(&["checkout", "--", "packages/app/package.json"]);

    f.write(
        "vx.toml",
        "[workspace]\nmembers = [\"packages/*\"]\nconcurrency = 2\n",
    );
    stale(&f, "vx.toml changed since it was locked");
    f.git(&["checkout", "--", "vx.toml"]);

    f.write("package.json", "{}\n");
    stale(&f, "package.json was created since it was locked");
    std::fs::remove_file(f.path("package.json")).unwrap();

    f.write("packages/new/package.json", r#"{ "name": "new" }"#);
    stale(&f, "packages/new became a member since it was locked");
    std::fs::remove_dir_all(f.path("packages/new")).unwrap();
    // A directory a glob matches with neither file is no member, as in a full load.
    std::fs::create_dir_all(f.path("packages/empty")).unwrap();
    ok(&frozen(&f));

    std::fs::remove_file(f.path("packages/docs/vx.toml")).unwrap();
    stale(&f, "packages/docs/vx.toml was deleted since it was locked");
    std::fs::remove_dir_all(f.path("packages/docs")).unwrap();
    stale(&f, "packages/docs is no longer a member");
    f.git(&["checkout", "--", "packages/docs"]);

    // Two differences: the first, and how many more.
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"true\"\n",
    );
    f.write(
        "packages/app/vx.toml",
        "[tasks.build]\ncommand = \"true\"\n",
    );
    stale(
        &f,
        "packages/app/vx.toml changed since it was locked (and 1 more)",
    );
}

#[test]
fn without_a_lock_frozen_exits_2_and_check_exits_1() {
    let f = wc();
    let out = frozen(&f);
    assert_eq!(out.code, 2);
    assert_eq!(out.stderr, "error: --frozen needs vx.lock; run `vx lock`\n");
    let check = f.vx(&["lock", "--check"]);
    assert_eq!(check.code, 1);
    assert_eq!(
        check.stderr,
        "error: there is no vx.lock at the workspace root\n  hint: run `vx lock`\n"
    );
    assert!(!f.path("vx.lock").exists());
}

#[test]
fn check_lists_each_project_that_drifted() {
    let f = locked();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"echo changed\"\n",
    );
    f.write(
        "packages/app/package.json",
        r#"{ "name": "app", "version": "1.0.1", "dependencies": { "lib": "workspace:*" } }"#,
    );
    let check = f.vx(&["lock", "--check"]);
    assert_eq!(check.code, 1, "{}{}", check.stdout, check.stderr);
    assert_eq!(
        check.stdout,
        "drift: packages/app (package.json changed)\ndrift: packages/lib (vx.toml changed)\n"
    );
    assert_eq!(check.stderr, "  hint: run `vx lock` to write it again\n");
    f.git(&["checkout", "--", "packages"]);
    // A workspace template reaches every project's task of its name without touching their
    // files.
    f.write(
        "vx.toml",
        "[workspace]\nmembers = [\"packages/*\"]\n\n[workspace.tasks.build]\ntimeout = \"5m\"\n",
    );
    let check = f.vx(&["lock", "--check"]);
    assert_eq!(check.code, 1);
    assert_eq!(
        check.stdout,
        concat!(
            "drift: the workspace root (vx.toml changed)\n",
            "drift: packages/app (tasks changed)\n",
            "drift: packages/docs (tasks changed)\n",
            "drift: packages/lib (tasks changed)\n",
        )
    );
    ok(&f.vx(&["lock"]));
    ok(&f.vx(&["lock", "--check"]));
    assert_eq!(
        lock_json(&f)["projects"]["lib"]["tasks"]["build"]["timeout"],
        "5m"
    );
}

#[test]
fn a_secret_define_is_never_written_to_the_lock() {
    let f = wc();
    f.write(
        "packages/lib/vx.toml",
        concat!(
            "[tasks.build]\n",
            "command = \"true\"\n",
            "env = { define = { NPM_TOKEN = \"s3cr3t-value\", GREETING = \"hello there\" } }\n",
        ),
    );
    let out = f.vx(&["lock"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        concat!(
            "error: packages/lib/vx.toml:3:1: env.define `NPM_TOKEN` of task `lib#build` holds a secret value; vx.lock would record it\n",
            "  hint: pass it from the environment instead: env.pass-through = [\"NPM_TOKEN\"]\n",
        )
    );
    assert!(!f.path("vx.lock").exists());
    // However short: a credential all the same.
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"true\"\nenv = { define = { API_KEY = \"k1\" } }\n",
    );
    let out = f.vx(&["lock"]);
    assert_eq!(out.code, 2);
    assert_contains(
        &out.stderr,
        "env.define `API_KEY` of task `lib#build` holds a secret value",
    );
    assert!(!f.path("vx.lock").exists());
    // Other defines are configuration like any other.
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"true\"\nenv = { define = { GREETING = \"hello there\" } }\n",
    );
    ok(&f.vx(&["lock"]));
    assert_eq!(
        lock_json(&f)["projects"]["lib"]["tasks"]["build"]["env"]["define"]["GREETING"],
        "hello there"
    );
}

/// KEY-13: writing the lock moves no key, even of a root task folding every root file.
#[test]
fn the_lock_is_in_no_key() {
    let f = wc();
    f.write(
        "vx.toml",
        concat!(
            "[workspace]\nmembers = [\"packages/*\"]\n\n",
            "[tasks.inventory]\n",
            "command = \"ls > /dev/null\"\n",
            "cache = { inputs = [\"**\"], outputs = [] }\n",
        ),
    );
    f.commit();
    let first = f.vx(&["run", "//#inventory"]);
    ok(&first);
    assert_contains(&first.stdout, "cache      1 miss\n");
    ok(&f.vx(&["lock"]));
    let again = f.vx(&["run", "//#inventory"]);
    ok(&again);
    assert_contains(&again.stdout, "cache      1 up-to-date\n");
    // Any other new root file does move it.
    f.write("notes.txt", "n\n");
    let moved = f.vx(&["run", "//#inventory"]);
    ok(&moved);
    assert_contains(&moved.stdout, "cache      1 miss\n");
}

#[test]
fn a_lock_this_vx_cannot_read_is_named_at_its_line_and_column() {
    let f = locked();
    f.write("vx.lock", "{\n  \"lock-version\": 1,\n  \"root\": 5\n}\n");
    let out = frozen(&f);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.starts_with("error: vx.lock:3:"),
        "{}",
        out.stderr
    );
    assert_contains(&out.stderr, "not a lock this vx can read: invalid type");
    assert_contains(&out.stderr, "  hint: run `vx lock` to write it again\n");
    let check = f.vx(&["lock", "--check"]);
    assert_eq!(check.code, 2, "a corrupt lock is bad input, not drift");
    let refused = "error: vx.lock:1:1: vx.lock has lock format 2; this vx reads format 1\n  hint: run `vx lock` to write it again\n";
    f.write("vx.lock", "{ \"lock-version\": 2, \"future\": true }\n");
    let out = frozen(&f);
    assert_eq!(out.code, 2);
    assert_eq!(out.stderr, refused);
    // Of the same shape but another format: refused all the same.
    ok(&f.vx(&["lock"]));
    let text = f.read("vx.lock");
    f.write(
        "vx.lock",
        &text.replace("\"lock-version\": 1", "\"lock-version\": 2"),
    );
    let out = frozen(&f);
    assert_eq!(out.code, 2);
    assert_eq!(out.stderr, refused);
    // An edge to a project the lock does not hold is refused, not dropped.
    f.write(
        "vx.lock",
        &text.replace("\"to\": \"lib\"", "\"to\": \"nope\""),
    );
    let out = frozen(&f);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: vx.lock: project `app` depends on `nope`, which is no project of the lock\n  hint: run `vx lock` to write it again\n"
    );
    // Its projects are checked against the configuration like any other lock's.
    let check = f.vx(&["lock", "--check"]);
    assert_eq!(check.code, 1);
    assert_eq!(check.stdout, "drift: packages/app (dependencies changed)\n");
    // `vx lock` replaces it.
    ok(&f.vx(&["lock"]));
    ok(&frozen(&f));
}

/// An error a frozen run finds in the configuration names the file (the lock keeps no lines).
#[test]
fn errors_of_a_frozen_run_name_the_file() {
    let f = locked();
    let text = f.read("vx.lock");
    f.write(
        "vx.lock",
        &text.replace(
            "\"depends-on\": [\n            \"^build\"",
            "\"depends-on\": [\n            \"nope\"",
        ),
    );
    let out = frozen(&f);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.starts_with("error: packages/app/vx.toml: "),
        "{}",
        out.stderr
    );
    assert_contains(&out.stderr, "`nope`");
}

#[test]
fn info_says_whether_the_lock_is_fresh() {
    let f = wc();
    let row = |f: &Fixture| {
        let out = f.vx(&["info"]);
        ok(&out);
        out.stdout
            .lines()
            .find(|l| l.starts_with("vx.lock"))
            .unwrap()
            .to_string()
    };
    assert!(row(&f).ends_with(" absent"), "{}", row(&f));
    ok(&f.vx(&["lock"]));
    assert!(row(&f).ends_with(" fresh"), "{}", row(&f));
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"true\"\n",
    );
    assert!(
        row(&f).ends_with(" stale: packages/lib/vx.toml changed since it was locked"),
        "{}",
        row(&f)
    );
    let json = f.vx(&["info", "--format", "json"]);
    let info: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(info["lock"]["present"], true);
    assert_eq!(info["lock"]["fresh"], false);
    assert_eq!(
        info["lock"]["stale"],
        "packages/lib/vx.toml changed since it was locked"
    );
}

/// A frozen run is replayed from its snapshot like any other, and the snapshot records the
/// lock: a hand edit that names no changed file still stops the replay, even with the lock
/// ignored by git (so no listing of the tree holds it).
#[test]
fn a_frozen_runs_snapshot_records_the_lock() {
    let f = wc();
    f.write(".gitignore", "dist/\n.vx/\nvx.lock\n");
    f.write("packages/docs/vx.toml", "");
    f.commit();
    ok(&f.vx(&["lock"]));
    ok(&frozen(&f));
    std::thread::sleep(std::time::Duration::from_millis(2_200));
    ok(&frozen(&f));
    let replayed = frozen(&f);
    ok(&replayed);
    let last = |f: &Fixture| -> serde_json::Value {
        serde_json::from_str(&f.vx(&["last", "--format", "json"]).stdout).unwrap()
    };
    assert!(
        last(&f)["invocation"]["replay_of"].is_string(),
        "{}",
        replayed.stdout
    );
    let text = f.read("vx.lock");
    f.write(
        "vx.lock",
        &text.replace("echo built lib", "echo built lib from the lock"),
    );
    let out = frozen(&f);
    ok(&out);
    assert!(last(&f)["invocation"]["replay_of"].is_null());
    assert_contains(&out.stdout, "miss lib#build\n");
}

/// A configuration file that is a symlink is checked by the file it leads to, as the loader
/// reads it.
#[test]
fn a_symlinked_configuration_file_is_checked_through_its_link() {
    let f = wc();
    f.write("shared/lib.toml", &f.read("packages/lib/vx.toml"));
    std::fs::remove_file(f.path("packages/lib/vx.toml")).unwrap();
    std::os::unix::fs::symlink("../../shared/lib.toml", f.path("packages/lib/vx.toml")).unwrap();
    f.commit();
    ok(&f.vx(&["lock"]));
    ok(&frozen(&f));
    f.write(
        "shared/lib.toml",
        "[tasks.build]\ncommand = \"echo other\"\n",
    );
    stale(&f, "packages/lib/vx.toml changed since it was locked");
}

/// A configuration file rewritten again and again while `vx lock` reads it: the resolutions
/// disagree, and after three `vx lock` gives up with exit 2 and writes nothing. A writer thread
/// replaces `packages/lib/vx.toml` whole (a temporary file renamed over it, so each read sees a
/// complete file) with a new command each time; since a resolution could still see one version
/// twice when the writer is not scheduled, `vx lock` is run until it gives up, and every run
/// either gives up so or writes a lock.
#[test]
fn a_configuration_that_keeps_changing_is_not_locked() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    /// Stops the writer however the test ends, before the fixture's directory goes.
    struct Stop(Arc<AtomicBool>, Option<std::thread::JoinHandle<()>>);
    impl Drop for Stop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
            if let Some(writer) = self.1.take() {
                let _ = writer.join();
            }
        }
    }
    let f = wc();
    let file = f.path("packages/lib/vx.toml");
    let temp = f.path("packages/lib/.vx.toml.next");
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let text = format!(
                    "[tasks.build]\ncommand = \"echo built lib {n}\"\ncache = {{ inputs = [\"src/**\"], outputs = [\"dist/**\"] }}\n"
                );
                std::fs::write(&temp, text).unwrap();
                std::fs::rename(&temp, &file).unwrap();
                // A new version every 0.2 ms, far more often than one resolution takes, without
                // holding a core of a 2-core machine.
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        })
    };
    let guard = Stop(stop, Some(writer));
    let mut gave_up = 0;
    for _ in 0..20 {
        let before = std::fs::read(f.path("vx.lock")).ok();
        let out = f.vx(&["lock"]);
        if out.code == 0 {
            assert!(out.stdout.contains("vx.lock"), "{}", out.stdout);
            continue;
        }
        assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
        assert_eq!(
            out.stderr,
            "error: the configuration kept changing while vx lock read it; run it again when it is still\n"
        );
        assert_eq!(out.stdout, "");
        assert_eq!(
            std::fs::read(f.path("vx.lock")).ok(),
            before,
            "nothing written"
        );
        gave_up += 1;
        if gave_up == 2 {
            break;
        }
    }
    drop(guard);
    assert!(
        gave_up > 0,
        "vx lock never saw the configuration change between its reads"
    );
    // Still again, the configuration is locked.
    ok(&f.vx(&["lock"]));
    assert!(
        lock_json(&f)["projects"]["lib"]["tasks"]["build"]["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("echo built lib "))
    );
}
