//! What keys fold (KEY-3, KEY-8, KEY-9, KEY-10, KEY-12), and the store's edges: the run lock
//! (STORE-14), a corrupt or newer index (STORE-3, STORE-12), an unusable cache directory
//! (STORE-2), retention (STORE-16) — on the real binary.

use std::time::{Duration, Instant};

use vx_test_support::fixture::Fixture;

use super::cache::{artifacts, wc, MISS};
use crate::{assert_contains, one_project};

const UP_TO_DATE: &str = "cache      1 up-to-date\n";

fn run(f: &Fixture, args: &[&str]) -> vx_test_support::fixture::Output {
    let out = f.vx(args);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    out
}

#[test]
fn runtime_probes_are_folded_and_a_failing_probe_fails_the_task() {
    let f = one_project(concat!(
        "[tasks.build]\n",
        "command = \"echo built\"\n",
        "cache = { inputs = [], outputs = [], runtime = [\"cat ../../tool-version\"] }\n",
    ));
    f.write("tool-version", "1.0\n");
    assert_contains(&run(&f, &["run", "lib#build"]).stdout, MISS);
    assert_contains(&run(&f, &["run", "lib#build"]).stdout, UP_TO_DATE);
    f.write("tool-version", "2.0\n");
    assert_contains(&run(&f, &["run", "lib#build"]).stdout, MISS);

    std::fs::remove_file(f.path("tool-version")).unwrap();
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert_contains(
        &out.stdout,
        "vx: lib#build: runtime probe `cat ../../tool-version` exited 1",
    );
    let dry = f.vx(&["run", "lib#build", "--dry"]);
    assert_eq!(dry.code, 0, "a failing probe does not fail the plan");
    assert_contains(&dry.stdout, "unknown (lib#build: runtime probe");
}

#[test]
fn upstream_filter_decides_which_dependency_keys_are_folded() {
    let f = wc();
    // app#test folds nothing from upstream: lib and app edits outside its inputs do not move it.
    f.write(
        "packages/app/vx.toml",
        concat!(
            "[tasks.build]\ncommand = \"mkdir -p dist && cat ../lib/dist/out.txt src/*.txt > dist/app.txt\"\n",
            "depends-on = [\"^build\"]\ncache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n\n",
            "[tasks.test]\ncommand = \"echo tested\"\ndepends-on = [\"build\"]\n",
            "cache = { inputs = [\"test/**\"], outputs = [], upstream = [] }\n",
        ),
    );
    f.commit();
    run(&f, &["run", "app#test"]);
    f.write("packages/lib/src/a.txt", "moved\n");
    let out = run(&f, &["run", "app#test", "--output-logs=full"]);
    assert_contains(&out.stdout, "cache      2 miss · 1 up-to-date\n");
}

#[test]
fn a_project_passed_through_by_caret_dependencies_moves_the_dependants_key() {
    let f = wc();
    // app → mid (no build task) → lib: mid's sources reach app#build's key as a fingerprint.
    f.write(
        "packages/mid/package.json",
        r#"{ "name": "mid", "dependencies": { "lib": "workspace:*" } }"#,
    );
    f.write("packages/mid/src/m.txt", "m\n");
    f.write(
        "packages/app/package.json",
        r#"{ "name": "app", "version": "1.0.0", "dependencies": { "mid": "workspace:*" } }"#,
    );
    f.commit();
    run(&f, &["run", "app#build"]);
    assert_contains(&run(&f, &["run", "app#build"]).stdout, "up-to-date");
    f.write("packages/mid/src/m.txt", "changed\n");
    let out = run(&f, &["run", "app#build"]);
    assert_contains(&out.stdout, "cache      1 miss · 1 up-to-date\n");
    let why = run(&f, &["why", "app#build"]);
    assert_contains(&why.stdout, "mid#build (pass-through)");
}

#[test]
fn an_uncached_dependency_folds_every_file_of_its_project() {
    let f = wc();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"mkdir -p dist && cat src/*.txt > dist/out.txt\"\n",
    );
    f.commit();
    run(&f, &["run", "app#build"]);
    assert_contains(&run(&f, &["run", "app#build"]).stdout, "up-to-date");
    f.write("packages/lib/README.md", "docs only\n");
    let out = run(&f, &["run", "app#build"]);
    assert_contains(&out.stdout, "cache      1 miss · 1 no-cache\n");
}

#[test]
fn workspace_inputs_and_outputs_reach_across_the_workspace() {
    let f = one_project(concat!(
        "[tasks.build]\n",
        "command = \"mkdir -p ../../shared-out && cat ../../config/base.json > ../../shared-out/lib.json\"\n",
        "cache = { inputs = [], outputs = [], workspace-inputs = [\"config/**\"], workspace-outputs = [\"shared-out/lib.json\"] }\n",
    ));
    f.write("config/base.json", "{}\n");
    f.write(".gitignore", "shared-out/\n.vx/\n");
    f.commit();
    run(&f, &["run", "lib#build"]);
    assert_contains(&run(&f, &["run", "lib#build"]).stdout, UP_TO_DATE);
    std::fs::remove_dir_all(f.path("shared-out")).unwrap();
    assert_contains(&run(&f, &["run", "lib#build"]).stdout, "1 local");
    assert_eq!(f.read("shared-out/lib.json"), "{}\n");
    f.write("config/base.json", "{\"a\": 1}\n");
    assert_contains(&run(&f, &["run", "lib#build"]).stdout, MISS);
}

#[test]
fn a_literal_input_naming_an_ignored_file_is_an_input() {
    let f = one_project(concat!(
        "[tasks.build]\n",
        "command = \"cat .env.local 2>/dev/null || true\"\n",
        "cache = { inputs = [\"src/**\", \".env.local\"], outputs = [] }\n",
    ));
    f.write(".gitignore", ".env.local\n.vx/\n");
    f.write("packages/lib/src/a.txt", "a\n");
    f.commit();
    run(&f, &["run", "lib#build"]);
    f.write("packages/lib/.env.local", "SECRET_MODE=1\n");
    assert_contains(&run(&f, &["run", "lib#build"]).stdout, MISS);
    assert_contains(&run(&f, &["run", "lib#build"]).stdout, UP_TO_DATE);
    f.write("packages/lib/.env.local", "SECRET_MODE=2\n");
    assert_contains(&run(&f, &["run", "lib#build"]).stdout, MISS);
}

#[test]
fn a_glob_matching_nothing_says_so_once() {
    let f = one_project(concat!(
        "[tasks.build]\n",
        "command = \"true\"\n",
        "cache = { inputs = [\"src/**/*.test.ts\"], outputs = [] }\n",
    ));
    let out = run(&f, &["run", "lib#build"]);
    assert_eq!(
        out.stderr
            .matches("vx: lib#build: no file matches cache.inputs (src/**/*.test.ts)")
            .count(),
        1,
        "{}",
        out.stderr
    );
}

/// Globs for kinds a project may not have (`*.ts` and `*.tsx`) are said
/// only when none of the task's globs matches anything, and then all of them.
#[test]
fn globs_are_said_only_when_none_of_them_matches() {
    let f = one_project(concat!(
        "[tasks.build]\n",
        "command = \"true\"\n",
        "cache = { inputs = [\"src/**/*.ts\", \"src/**/*.tsx\"], outputs = [] }\n",
    ));
    f.write("packages/lib/src/a.ts", "export {}\n");
    f.commit();
    let out = run(&f, &["run", "lib#build"]);
    assert!(!out.stderr.contains("no file matches"), "{}", out.stderr);
    std::fs::remove_file(f.path("packages/lib/src/a.ts")).unwrap();
    f.commit();
    let out = run(&f, &["run", "lib#build"]);
    assert_contains(
        &out.stderr,
        "vx: lib#build: no file matches cache.inputs (src/**/*.ts, src/**/*.tsx)",
    );
}

#[test]
fn a_lockfile_moves_every_key() {
    let f = wc();
    run(&f, &["run", "lib#build"]);
    f.write("pnpm-lock.yaml", "lockfileVersion: 9\n");
    assert_contains(&run(&f, &["run", "lib#build"]).stdout, MISS);
    let why = run(&f, &["why", "lib#build"]);
    assert_contains(&why.stdout, "added    workspace pnpm-lock.yaml");
}

#[test]
fn portable_tasks_fold_any_platform() {
    let f = wc();
    let key = |f: &Fixture| {
        let out = f.vx(&["run", "lib#build", "--dry=json"]);
        let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        doc["tasks"][0]["key"].as_str().unwrap().to_string()
    };
    let native = key(&f);
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"mkdir -p dist && cat src/*.txt > dist/out.txt && echo built lib\"\ncache = { inputs = [\"src/**\"], outputs = [\"dist/**\"], portable = true }\n",
    );
    assert_ne!(key(&f), native);
}

#[test]
fn two_runs_take_turns_on_the_workspace_lock() {
    let f = wc();
    super::cache::lib_build(&f, "sleep 1.5; mkdir -p dist; echo x > dist/out.txt");
    let mut first = f.command("", &["run", "lib#build", "--no-cache"]);
    let first = first
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let second = f.vx(&["run", "lib#build", "--no-cache"]);
    let waited = started.elapsed();
    let mut first = first;
    assert!(first.wait().unwrap().success());
    assert_eq!(second.code, 0, "{}{}", second.stdout, second.stderr);
    assert_contains(&second.stderr, "holds this workspace; waiting…");
    assert!(
        waited >= Duration::from_millis(1000),
        "the second run waited ({waited:?})"
    );
}

/// EXIT-1: a run that waits for the workspace lock ends at once on Ctrl-C with 130, before
/// any task starts; the run that holds the lock goes on.
#[test]
fn ctrl_c_ends_a_run_that_waits_for_the_lock() {
    use std::io::BufRead;
    let f = wc();
    // The first run holds the lock until the test releases it.
    super::cache::lib_build(
        &f,
        "touch ../held; until [ -e ../release ]; do sleep 0.05; done; mkdir -p dist; echo x > dist/out.txt",
    );
    let mut first = f
        .command("", &["run", "lib#build", "--no-cache"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f.path("packages/held").exists() {
        assert!(
            Instant::now() < deadline,
            "the first run did not start its task"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut second = f
        .command("", &["run", "lib#build", "--no-cache"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its notice says it waits (and so has its signal handlers).
    let mut stderr = std::io::BufReader::new(second.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("holds this workspace; waiting") {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no waiting notice"
        );
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(second.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = second.wait_with_output().unwrap();
    let holder_running = first.try_wait().unwrap().is_none();
    f.write("packages/release", "");
    assert!(first.wait().unwrap().success());
    assert_eq!(out.status.code(), Some(130), "{out:?}");
    assert!(
        holder_running,
        "the waiting run ended before the lock was free"
    );
    assert!(out.stdout.is_empty(), "no task started: {out:?}");
}

#[test]
fn a_corrupt_index_is_a_usage_error_naming_it() {
    let f = wc();
    run(&f, &["run", "lib#build"]);
    std::fs::write(
        f.path(".vx/cache.db"),
        b"this is not sqlite at all, not even close",
    )
    .unwrap();
    for name in ["cache.db-wal", "cache.db-shm"] {
        let _ = std::fs::remove_file(f.path(&format!(".vx/{name}")));
    }
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stderr, "cache.db is not a valid cache index");
    assert_contains(
        &out.stderr,
        "hint: delete it together with cache.db-wal and cache.db-shm",
    );
}

/// Makes `lib#build` depend on `app#build`, which depends on it: a planning error (exit 2).
fn add_a_cycle(f: &Fixture) {
    let lib = f.read("packages/lib/vx.toml") + "depends-on = [\"app#build\"]\n";
    f.write("packages/lib/vx.toml", &lib);
}

/// The cache is opened while the graph is built (once an index exists): a configuration
/// error is still the one reported, not what opening the cache ran into.
#[test]
fn a_planning_error_wins_over_a_corrupt_index() {
    let f = wc();
    run(&f, &["run", "build", "--all"]);
    std::fs::write(f.path(".vx/cache.db"), b"not sqlite").unwrap();
    for name in ["cache.db-wal", "cache.db-shm"] {
        let _ = std::fs::remove_file(f.path(&format!(".vx/{name}")));
    }
    let lib = f.read("packages/lib/vx.toml");
    add_a_cycle(&f);
    let out = f.vx(&["run", "build", "--all"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stderr, "error: cycle in task graph");
    assert!(
        !out.stderr.contains("not a valid cache index"),
        "{}",
        out.stderr
    );
    // Once the configuration is mended, the corrupt index is what stops the run.
    f.write("packages/lib/vx.toml", &lib);
    let out = f.vx(&["run", "build", "--all"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stderr, "cache.db is not a valid cache index");
}

/// The cache is opened early only when the run lock is free: a run that fails planning says so
/// at once, even while another run holds the workspace.
#[test]
fn a_planning_error_does_not_wait_for_the_lock() {
    let f = wc();
    super::cache::lib_build(
        &f,
        "if [ -f ../../hold ]; then touch ../../started; sleep 5; fi; mkdir -p dist; echo x > dist/out.txt",
    );
    run(&f, &["run", "lib#build"]);
    f.write("hold", "");
    let first = f
        .command("", &["run", "lib#build", "--no-cache"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The first run holds the lock (and has read its configuration) once its task started.
    let waited_from = Instant::now();
    while !f.path("started").exists() && waited_from.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    add_a_cycle(&f);
    let out = f.vx(&["run", "build", "--all"]);
    let mut first = first;
    let first_still_running = first.try_wait().unwrap().is_none();
    assert!(first.wait().unwrap().success());
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stderr, "error: cycle in task graph");
    assert!(
        first_still_running,
        "the failed run waited for the other run's lock: {}",
        out.stderr
    );
}

/// A workspace keeps the output stamps of one key per task: recording a task's new outputs
/// deletes the stamps of its earlier keys (those files were just replaced), so what a run reads
/// back does not grow with every edit ever made.
#[test]
fn output_stamps_keep_one_key_per_task() {
    let f = wc();
    let root = std::fs::canonicalize(f.root()).unwrap();
    let workspace = vx_core::key::hex(blake3::hash(root.to_string_lossy().as_bytes()).as_bytes());
    let stamped = || {
        let store = vx_store::Store::open(&f.path(".vx"), vx_store::Access::ReadOnly).unwrap();
        let mut keys: Vec<String> = store
            .workspace_output_stamps(&workspace)
            .unwrap()
            .into_keys()
            .collect();
        keys.sort();
        keys
    };
    run(&f, &["run", "lib#build"]);
    let first = stamped();
    assert_eq!(first.len(), 1, "{first:?}");
    // Executed with a new key, then restored with the first key, then up to date.
    for (edit, expected) in [("two\n", "miss"), ("", "restored"), ("", "up-to-date")] {
        let src = f.read("packages/lib/src/a.txt");
        let text = if edit.is_empty() {
            src.lines().next().unwrap_or_default().to_string() + "\n"
        } else {
            src + edit
        };
        f.write("packages/lib/src/a.txt", &text);
        let out = run(&f, &["run", "lib#build"]);
        assert_contains(&out.stdout, expected);
        let keys = stamped();
        assert_eq!(keys.len(), 1, "after a {expected}: {keys:?}");
    }
    assert_eq!(stamped(), first, "back at the first key");
}

/// A first run that fails planning leaves no cache directory behind.
#[test]
fn a_first_run_that_fails_planning_creates_no_cache() {
    let f = wc();
    add_a_cycle(&f);
    let out = f.vx(&["run", "build", "--all"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(!f.path(".vx").exists(), "the failed run created .vx");
}

#[test]
fn an_unwritable_cache_directory_fails_before_any_task_starts() {
    let f = wc();
    f.write("blocker", "a file, not a directory\n");
    let out = f.vx(&["run", "lib#build", "--cache-dir", "blocker/cache"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.starts_with("error: "), "{}", out.stderr);
    assert!(!f.path("packages/lib/dist").exists(), "no task ran");
}

#[test]
fn retention_prunes_after_each_run() {
    let f = wc();
    f.write(
        "vx.toml",
        "[workspace]\nmembers = [\"packages/*\"]\ncache-retention = { max-size = \"1B\" }\n",
    );
    f.commit();
    run(&f, &["run", "lib#build"]);
    assert!(
        artifacts(&f).is_empty(),
        "the entry is pruned at the end of the run"
    );
}

/// Sets the SQLite header's `user_version` (offset 60, big-endian) of a closed index.
fn set_schema_version(f: &Fixture, version: u32) {
    let path = f.path(".vx/cache.db");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[60..64].copy_from_slice(&version.to_be_bytes());
    std::fs::write(&path, bytes).unwrap();
}

#[test]
fn an_index_from_a_newer_vx_is_left_alone_and_reading_verbs_refuse_it() {
    let f = wc();
    run(&f, &["run", "lib#build"]);
    set_schema_version(&f, 99);
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_contains(
        &out.stderr,
        "warning: the cache index was written by a newer vx (schema 99); the local cache and history are off for this run",
    );
    assert_contains(&out.stdout, MISS);
    let why = f.vx(&["why", "lib#build"]);
    assert_eq!(why.code, 2, "{}{}", why.stdout, why.stderr);
    assert_contains(
        &why.stderr,
        &format!(
            "error: the cache index has schema 99, this vx reads {}",
            vx_store::SCHEMA_VERSION
        ),
    );
    assert_contains(&why.stderr, "hint: it was written by a newer vx");
}

#[test]
fn naming_the_remote_layer_without_a_remote_says_so_once() {
    let f = wc();
    let out = run(&f, &["run", "lib#build", "--cache", "local:rw,remote:r"]);
    assert_eq!(
        out.stderr
            .matches("vx: no remote cache is configured; --cache remote:… has no effect")
            .count(),
        1,
        "{}",
        out.stderr
    );
}

#[test]
fn an_older_index_is_rebuilt_by_a_run_and_its_artifacts_adopted() {
    let f = wc();
    run(&f, &["run", "lib#build"]);
    set_schema_version(&f, 0);
    let why = f.vx(&["why", "lib#build"]);
    assert_eq!(why.code, 2, "{}{}", why.stdout, why.stderr);
    assert_contains(
        &why.stderr,
        &format!(
            "error: the cache index has schema 0, this vx reads {}",
            vx_store::SCHEMA_VERSION
        ),
    );
    assert_contains(&why.stderr, "hint: run `vx run` once to upgrade it");
    // The rebuilt index has no rows; the artifact on disk is validated and adopted.
    let out = run(&f, &["run", "lib#build"]);
    assert_contains(&out.stdout, "cache      1 local\n");
    assert_eq!(run(&f, &["why", "lib#build"]).code, 0);
}

#[test]
fn a_nested_project_is_neither_an_input_nor_cleaned_by_the_outer_one() {
    let f = one_project(concat!(
        "[tasks.build]\n",
        "command = \"echo out > gen.out\"\n",
        "cache = { inputs = [\"**\", \"!**/*.out\"], outputs = [\"**/*.out\"] }\n",
    ));
    f.write(
        "vx.toml",
        "[workspace]\nmembers = [\"packages/*\", \"packages/lib/sub\"]\n",
    );
    f.write("packages/lib/src/a.txt", "a\n");
    f.write("packages/lib/sub/package.json", r#"{ "name": "sub" }"#);
    f.write("packages/lib/sub/notes.txt", "n\n");
    f.write(".gitignore", ".vx/\n*.out\n");
    f.commit();
    run(&f, &["run", "lib#build"]);
    f.write("packages/lib/sub/kept.out", "the nested project's file\n");
    f.write(
        "packages/lib/sub/notes.txt",
        "edited in the nested project\n",
    );
    assert_contains(&run(&f, &["run", "lib#build"]).stdout, UP_TO_DATE);
    f.write("packages/lib/src/a.txt", "edited in lib\n");
    assert_contains(&run(&f, &["run", "lib#build"]).stdout, MISS);
    assert_eq!(
        f.read("packages/lib/sub/kept.out"),
        "the nested project's file\n",
        "cleaning lib's outputs never enters the nested project"
    );
}
