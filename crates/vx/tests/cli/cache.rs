//! The cache on the real binary (KEY-*, STORE-*, ACC-7..15, ACC-26, ACC-34): hits, replay,
//! restore, invalidation, the save guard, damage, `--force`/`--no-cache`, `vx why` and prune.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::Duration;

use vx_test_support::fixture::Fixture;

use crate::{assert_contains, vx_bin};

/// Fixture W with caches, as the acceptance scenarios take it.
pub fn wc() -> Fixture {
    Fixture::w_cached(vx_bin())
}

/// The footer line of a run whose one task executed as a cache miss.
pub const MISS: &str = "cache      1 miss\n";

/// The artifacts in the default cache directory.
pub fn artifacts(f: &Fixture) -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(f.path(".vx/artifacts"))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    found.sort();
    found
}

/// Replaces lib#build's command (keeping its cache table).
pub fn lib_build(f: &Fixture, command: &str) {
    f.write(
        "packages/lib/vx.toml",
        &format!(
            "[tasks.build]\ncommand = {command:?}\ncache = {{ inputs = [\"src/**\"], outputs = [\"dist/**\"] }}\n"
        ),
    );
    f.commit();
}

#[test]
fn acc7_hits_are_up_to_date_then_restored_and_replay_in_order() {
    let f = wc();
    lib_build(
        &f,
        "echo one; sleep 0.1; echo two >&2; sleep 0.1; echo three; mkdir -p dist; echo x > dist/out.txt",
    );
    let run1 = f.vx(&["run", "lib#build"]);
    assert_eq!(run1.code, 0, "{}{}", run1.stdout, run1.stderr);
    assert_contains(&run1.stdout, MISS);
    let out = f.path("packages/lib/dist/out.txt");
    let first = std::fs::metadata(&out).unwrap();

    let run2 = f.vx(&["run", "lib#build"]);
    assert_eq!(run2.code, 0, "{}{}", run2.stdout, run2.stderr);
    assert_contains(&run2.stdout, "up-to-date · ");
    let one = run2.stdout.find("one").unwrap();
    let two = run2.stdout.find("two").unwrap();
    let three = run2.stdout.find("three").unwrap();
    assert!(
        one < two && two < three,
        "replayed out of order:\n{}",
        run2.stdout
    );
    assert_contains(&run2.stdout, "1 up-to-date");
    assert_eq!(
        std::fs::metadata(&out).unwrap().ino(),
        first.ino(),
        "up-to-date never rewrites"
    );

    std::fs::remove_dir_all(f.path("packages/lib/dist")).unwrap();
    let run3 = f.vx(&["run", "lib#build"]);
    assert_eq!(run3.code, 0, "{}{}", run3.stdout, run3.stderr);
    assert_contains(&run3.stdout, "restored-local · ");
    let restored = std::fs::metadata(&out).unwrap();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "x\n");
    assert_eq!(restored.permissions().mode(), first.permissions().mode());
    assert_eq!(
        (restored.mtime(), restored.mtime_nsec()),
        (first.mtime(), first.mtime_nsec())
    );

    f.write("packages/lib/dist/stray.txt", "stray\n");
    let run4 = f.vx(&["run", "lib#build"]);
    assert_contains(&run4.stdout, "restored-local · ");
    assert!(
        !f.path("packages/lib/dist/stray.txt").exists(),
        "the stray file is cleaned"
    );
}

#[test]
fn acc8_an_edit_invalidates_the_task_and_its_dependants_and_why_says_so() {
    let f = wc();
    assert_eq!(f.vx(&["run", "build", "--all"]).code, 0);
    f.write("packages/lib/src/a.txt", "edited\n");
    let run = f.vx(&["run", "build", "--all"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_contains(&run.stdout, "miss lib#build");
    assert_contains(&run.stdout, "miss app#build");

    let why = f.vx(&["why", "app#build"]);
    assert_eq!(why.code, 0, "{}{}", why.stdout, why.stderr);
    assert_contains(&why.stdout, "the key changed");
    assert_contains(&why.stdout, "changed  upstream  lib#build");
    assert_contains(&why.stdout, "run `vx why lib#build`");
    let why = f.vx(&["why", "lib#build"]);
    assert_eq!(why.code, 0, "{}{}", why.stdout, why.stderr);
    assert_contains(&why.stdout, "changed  input     packages/lib/src/a.txt");

    let none = f.vx(&["why", "docs#nothing"]);
    assert_eq!(none.code, 1, "{}{}", none.stdout, none.stderr);
    assert_contains(&none.stderr, "history has no run of `docs#nothing`");
}

#[test]
fn why_explains_a_hit_and_prints_json() {
    let f = wc();
    assert_eq!(f.vx(&["run", "lib#build"]).code, 0);
    assert_eq!(f.vx(&["run", "lib#build"]).code, 0);
    let why = f.vx(&["why", "build", "--format", "json"]);
    assert_eq!(why.code, 0, "{}{}", why.stdout, why.stderr);
    let doc: serde_json::Value = serde_json::from_str(&why.stdout).unwrap();
    assert_eq!(
        doc["task"], "lib#build",
        "a bare name resolves when one project ran it"
    );
    assert_eq!(
        doc["verdict"],
        "same key, served from cache: up to date, its outputs were in place"
    );
    assert_eq!(doc["this"]["cache"], "up-to-date");
    assert_eq!(doc["previous"]["cache"], "executed");
}

/// After a restore, `vx why` says which output was missing or changed.
#[test]
fn why_after_a_restore_names_the_output_that_was_missing_or_changed() {
    let f = wc();
    assert_eq!(f.vx(&["run", "lib#build"]).code, 0);
    std::fs::remove_file(f.path("packages/lib/dist/out.txt")).unwrap();
    assert_contains(&f.vx(&["run", "lib#build"]).stdout, "restored-local");
    let why = f.vx(&["why", "lib#build"]);
    assert_eq!(why.code, 0, "{why:?}");
    assert_contains(
        &why.stdout,
        "verdict    same key, served from cache: restored (why: below)
\
         restored   `packages/lib/dist/out.txt` was missing
",
    );
    // Edited in place (same size, a new modification time): changed.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let text = f.read("packages/lib/dist/out.txt");
    f.write("packages/lib/dist/out.txt", &text.to_uppercase());
    assert_contains(&f.vx(&["run", "lib#build"]).stdout, "restored-local");
    let why = f.vx(&["why", "lib#build", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&why.stdout).unwrap();
    assert_eq!(
        doc["this"]["restored_because"], "`packages/lib/dist/out.txt` changed",
        "{doc}"
    );
    // Nothing touched: up to date, and no reason.
    f.vx(&["run", "lib#build"]);
    let doc: serde_json::Value =
        serde_json::from_str(&f.vx(&["why", "lib#build", "--format", "json"]).stdout).unwrap();
    assert_eq!(doc["this"]["cache"], "up-to-date");
    assert!(doc["this"]["restored_because"].is_null(), "{doc}");
}

#[test]
fn acc9_unset_empty_and_set_environment_values_are_distinct_keys() {
    let f = crate::one_project(concat!(
        "[tasks.show]\n",
        "command = \"echo \\\"[$MODE]\\\"\"\n",
        "env = { pass-through = [\"MODE\"] }\n",
        "cache = { inputs = [], outputs = [], env = [\"MODE\"] }\n",
    ));
    let run = |env: &[(&str, &str)]| f.vx_in("", &["run", "lib#show"], env);
    let unset = run(&[]);
    assert_contains(&unset.stdout, MISS);
    assert_contains(&unset.stdout, "[]");
    let empty = run(&[("MODE", "")]);
    assert_contains(&empty.stdout, MISS);
    assert_contains(&empty.stdout, "[]");
    let x = run(&[("MODE", "x")]);
    assert_contains(&x.stdout, MISS);
    assert_contains(&x.stdout, "[x]");
    let again = run(&[("MODE", "x")]);
    assert_contains(&again.stdout, "up-to-date");
    assert_contains(&again.stdout, "[x]");
}

#[test]
fn acc10_failures_are_never_cached() {
    let f = crate::one_project(concat!(
        "[tasks.build]\n",
        "command = \"echo try; exit 1\"\n",
        "cache = { inputs = [], outputs = [] }\n",
    ));
    for _ in 0..2 {
        let run = f.vx(&["run", "lib#build"]);
        assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
        assert_contains(&run.stdout, "try");
    }
    assert!(artifacts(&f).is_empty(), "{:?}", artifacts(&f));
}

#[test]
fn acc11_an_input_edited_while_the_task_runs_is_not_cached() {
    let f = wc();
    lib_build(&f, "sleep 1; echo done");
    let path = f.path("packages/lib/src/a.txt");
    let editor = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        std::fs::write(path, "changed during the run\n").unwrap();
    });
    let run = f.vx(&["run", "lib#build"]);
    editor.join().unwrap();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_contains(
        &run.stderr,
        "vx: lib#build: `packages/lib/src/a.txt` changed while the task ran; result kept but not cached",
    );
    let next = f.vx(&["run", "lib#build"]);
    assert_contains(&next.stdout, MISS);
}

#[test]
fn acc12_a_flipped_byte_is_a_miss_with_one_line_then_a_fresh_entry() {
    let f = wc();
    assert_eq!(f.vx(&["run", "lib#build"]).code, 0);
    let artifact = artifacts(&f).pop().expect("an artifact");
    let mut bytes = std::fs::read(&artifact).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&artifact, bytes).unwrap();
    std::fs::remove_dir_all(f.path("packages/lib/dist")).unwrap();
    let run = f.vx(&["run", "lib#build"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_contains(&run.stderr, "vx: lib#build: discarded damaged cache entry ");
    assert_contains(&run.stderr, "; running the task");
    assert_contains(&run.stdout, MISS);
    let next = f.vx(&["run", "lib#build"]);
    assert_contains(&next.stdout, "up-to-date");
}

#[test]
fn acc14_force_rewrites_the_entry_and_no_cache_leaves_everything_alone() {
    let f = wc();
    assert_eq!(f.vx(&["run", "lib#build"]).code, 0);
    let artifact = artifacts(&f).pop().unwrap();
    let before = std::fs::metadata(&artifact).unwrap().ino();
    f.write("packages/lib/dist/stray.txt", "stray\n");
    let force = f.vx(&["run", "lib#build", "--force"]);
    assert_eq!(force.code, 0, "{}{}", force.stdout, force.stderr);
    assert_contains(&force.stdout, MISS);
    assert!(
        !f.path("packages/lib/dist/stray.txt").exists(),
        "--force cleans outputs"
    );
    let after = std::fs::metadata(&artifact).unwrap().ino();
    assert_ne!(before, after, "the entry is rewritten");

    f.write("packages/lib/dist/stray.txt", "stray\n");
    let no_cache = f.vx(&["run", "lib#build", "--no-cache"]);
    assert_eq!(no_cache.code, 0);
    assert_contains(&no_cache.stdout, "cache      1 no-cache");
    assert!(
        f.path("packages/lib/dist/stray.txt").exists(),
        "--no-cache never cleans"
    );
    assert_eq!(
        std::fs::metadata(&artifact).unwrap().ino(),
        after,
        "the entry is unchanged"
    );
}

#[test]
fn acc15_forwarded_arguments_reach_only_the_requested_task_and_its_key() {
    let f = wc();
    f.write(
        "packages/app/vx.toml",
        &format!(
            "{}\n[tasks.show]\ncommand = \"printf '[%s]'\"\ndepends-on = [\"build\"]\n",
            f.read("packages/app/vx.toml")
        ),
    );
    f.commit();
    let run = f.vx(&["run", "app#show", "--", "a b", "c"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_contains(&run.stdout, "[a b][c]");
    assert_contains(&run.stdout, "$ printf '[%s]' 'a b' c");
    let key = |args: &[&str]| -> (String, String) {
        let mut argv = vec!["run", "app#show"];
        argv.extend_from_slice(args);
        let doc = crate::dry_json(&f, &argv);
        let find = |id: &str| crate::dry_task(&doc, id)["key"].to_string();
        (find("app#show"), find("app#build"))
    };
    let (show_plain, build_plain) = key(&[]);
    let (show_args, build_args) = key(&["--", "a b", "c"]);
    assert_ne!(show_plain, show_args);
    assert_eq!(build_plain, build_args);
}

#[test]
fn acc26_dry_derives_keys_and_changes_nothing() {
    let f = wc();
    assert_eq!(f.vx(&["run", "build", "--all"]).code, 0);
    f.write("packages/lib/src/a.txt", "edited\n");
    let db = std::fs::read(f.path(".vx/cache.db")).unwrap();
    let listing = artifacts(&f);
    let doc = crate::dry_json(&f, &["run", "build", "--all"]);
    let task = |id: &str| crate::dry_task(&doc, id);
    assert_eq!(task("lib#build")["cache"], "miss");
    // Its key assumes lib#build produces what it did last (KEY-9): still counted as running.
    assert_eq!(task("app#build")["cache"], "miss");
    assert_eq!(task("app#build")["key_is_prediction"], true);
    assert_eq!(
        task("app#build")["assumes_unchanged"],
        serde_json::json!(["lib#build"])
    );
    assert_eq!(task("app#build")["hit_if_unchanged"], true);
    assert_eq!(task("docs#build")["cache"], "no-cache");
    assert_eq!(std::fs::read(f.path(".vx/cache.db")).unwrap(), db);
    assert_eq!(artifacts(&f), listing);
    let graph = f.vx(&["run", "build", "--all", "--graph"]);
    assert_eq!(graph.code, 0, "{}{}", graph.stdout, graph.stderr);
    for node in ["\"lib#build\" [", "\"app#build\" [", "\"docs#build\" ["] {
        assert_contains(&graph.stdout, node);
    }
    assert_eq!(graph.stdout.matches(" -> ").count(), 1, "{}", graph.stdout);
    assert_contains(&graph.stdout, "\"app#build\" -> \"lib#build\"");
    assert!(
        !f.path("packages/lib/dist/out.txt").exists()
            || f.read("packages/lib/dist/out.txt") == "a\n"
    );
}

#[test]
fn dry_marks_local_hits() {
    let f = wc();
    assert_eq!(f.vx(&["run", "build", "--all"]).code, 0);
    let dry = f.vx(&["run", "build", "--all", "--dry"]);
    assert_eq!(dry.code, 0, "{}{}", dry.stdout, dry.stderr);
    assert_contains(&dry.stdout, "⇢ local       lib#build");
    assert_contains(&dry.stdout, "⏺ no-cache    docs#build");
    assert_contains(
        &dry.stdout,
        "3 tasks planned: 2 cache hits (2 local), 1 would run",
    );
}

#[test]
fn broad_runs_count_hits_in_the_footer() {
    let f = wc();
    assert_eq!(f.vx(&["run", "build", "--all"]).code, 0);
    let run = f.vx(&["run", "build", "--all"]);
    assert_eq!(run.code, 0);
    assert_contains(&run.stdout, "cache      2 up-to-date · 1 no-cache");
    assert_contains(&run.stdout, "3 tasks · 2 cached (67%)");
    assert!(
        !run.stdout.contains("lib#build\n"),
        "broad flow prints nothing for hits"
    );
}

#[test]
fn acc34_prune_by_size_keeps_the_most_recently_used() {
    let f = crate::one_project(
        &(1..=5)
            .map(|i| {
                format!(
                    "[tasks.t{i}]\ncommand = \"mkdir -p out{i} && head -c 1258291 /dev/urandom > out{i}/blob\"\ncache = {{ inputs = [], outputs = [\"out{i}/**\"] }}\n\n"
                )
            })
            .collect::<String>(),
    );
    f.write(".gitignore", "out*/\n.vx/\n");
    f.commit();
    for i in 1..=5 {
        let run = f.vx(&["run", &format!("lib#t{i}")]);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        std::thread::sleep(Duration::from_millis(20));
    }
    let dry = f.vx(&["cache", "prune", "--max-size", "3M", "--dry"]);
    assert_eq!(dry.code, 0, "{}{}", dry.stdout, dry.stderr);
    assert_contains(&dry.stdout, "would remove 3 entries, ");
    assert_eq!(artifacts(&f).len(), 5, "--dry changes nothing");
    let pruned = f.vx(&["cache", "prune", "--max-size", "3M"]);
    assert_eq!(pruned.code, 0, "{}{}", pruned.stdout, pruned.stderr);
    assert_contains(&pruned.stdout, "removed 3 entries, ");
    assert_eq!(artifacts(&f).len(), 2);
    for i in 4..=5 {
        let run = f.vx(&["run", &format!("lib#t{i}")]);
        assert_contains(&run.stdout, "up-to-date");
    }
    let none = f.vx(&["cache", "prune"]);
    assert_eq!(none.code, 2);
    assert_contains(
        &none.stderr,
        "error: `vx cache prune` needs --older-than or --max-size",
    );
}

#[test]
fn prune_of_a_cache_that_never_existed_creates_nothing() {
    let f = wc();
    let run = f.vx(&["cache", "prune", "--older-than", "1d", "--format", "json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["evicted"], 0);
    assert!(!f.path(".vx/cache.db").exists());
}

#[test]
fn cache_flags_are_checked() {
    let f = wc();
    let both = f.vx(&["run", "lib#build", "--no-cache", "--force"]);
    assert_eq!(both.code, 2);
    assert_contains(
        &both.stderr,
        "error: `--no-cache` cannot be combined with `--force`",
    );
    let layer = f.vx(&["run", "lib#build", "--cache", "disk:r"]);
    assert_eq!(layer.code, 2);
    assert_contains(
        &layer.stderr,
        "invalid --cache layer `disk` (layers: local, remote)",
    );
    let read_only = f.vx(&["run", "lib#build", "--cache", "local:r"]);
    assert_eq!(read_only.code, 0);
    assert!(artifacts(&f).is_empty(), "local:r never writes");
}

#[test]
fn cache_dir_flag_and_variable_move_the_store() {
    let f = wc();
    let run = f.vx(&["run", "lib#build", "--cache-dir", "elsewhere"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(f.path("elsewhere/cache.db").exists());
    assert!(
        f.path(".vx/run.lock").exists(),
        "the run lock stays at the root"
    );
    let env = f.vx_in("", &["run", "lib#build"], &[("VX_CACHE_DIR", "elsewhere")]);
    assert_contains(&env.stdout, "up-to-date");
    let refused = f.vx(&["run", "lib#build", "--cache-dir", "packages"]);
    assert_eq!(refused.code, 2);
    assert_contains(
        &refused.stderr,
        "error: cache directory `packages` would contain workspace sources",
    );
}

#[test]
fn the_restore_lane_serves_hits_before_their_dependencies_finish() {
    let f = wc();
    // lib#build is uncached and slow; app#build is cached with a stable key (its upstream is
    // in another project), so its entry is restored without waiting for lib#build.
    f.write(
        "packages/lib/vx.toml",
        concat!(
            "[tasks.build]\n",
            "command = \"sleep 1; test -z \\\"$FAIL\\\" || exit 4; mkdir -p dist && cat src/*.txt > dist/out.txt && echo built lib\"\n",
            "env = { pass-through = [\"FAIL\"] }\n",
        ),
    );
    f.commit();
    let env = [("CI", "true")];
    let first = f.vx_in("", &["run", "app#build"], &env);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let second = f.vx_in("", &["run", "app#build"], &env);
    assert_eq!(second.code, 0, "{}{}", second.stdout, second.stderr);
    let app = second
        .stdout
        .find("┌─ app#build")
        .expect("app#build's frame");
    let lib = second
        .stdout
        .find("┌─ lib#build")
        .expect("lib#build's frame");
    assert!(
        app < lib,
        "the hit is reported before its dependency ends:\n{}",
        second.stdout
    );
    assert_contains(&second.stdout, "up-to-date · ");

    // A dependency failing after the restore (same key: FAIL is forwarded, not keyed) does not
    // take the hit back.
    let third = f.vx_in("", &["run", "app#build"], &[("CI", "true"), ("FAIL", "1")]);
    assert_eq!(third.code, 1, "{}{}", third.stdout, third.stderr);
    assert_contains(&third.stdout, "┌─ app#build  up-to-date · ");
    assert_contains(&third.stdout, "lib#build  failed (exit 4)");
}

#[test]
fn an_unrequested_server_whose_dependants_all_hit_is_not_started() {
    let f = wc();
    // The server lives in another project: a server of the task's own project could write
    // its inputs, which would make the task's key unstable (SCHED-6).
    f.write(
        "packages/lib/vx.toml",
        "[tasks.serve]\ncommand = \"touch ../../server-started; sleep 30\"\npersistent = true\n",
    );
    f.write(
        "packages/app/vx.toml",
        concat!(
            // The server is ready at spawn; e2e waits for its first command, so the end of the
            // graph cannot stop it before it ran (a race once spawns got faster).
            "[tasks.e2e]\ncommand = \"i=0; while [ ! -e ../../server-started ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done; echo e2e\"\ndepends-on = [\"lib#serve\"]\n",
            "cache = { inputs = [\"src/**\"], outputs = [] }\n",
        ),
    );
    f.write(".gitignore", "dist/\n.vx/\nserver-started\n");
    f.commit();
    let first = f.vx(&["run", "app#e2e"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    assert!(
        f.path("server-started").exists(),
        "the first run needs the server"
    );
    std::fs::remove_file(f.path("server-started")).unwrap();
    let second = f.vx(&["run", "app#e2e"]);
    assert_eq!(second.code, 0, "{}{}", second.stdout, second.stderr);
    assert_contains(&second.stdout, "up-to-date");
    assert!(
        !f.path("server-started").exists(),
        "the server was started for nothing"
    );
}

#[test]
fn dry_marks_a_server_that_would_not_start() {
    let f = wc();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.serve]\ncommand = \"sleep 30\"\npersistent = true\n",
    );
    f.write(
        "packages/app/vx.toml",
        concat!(
            // The server is ready at spawn; e2e waits for its first command, so the end of the
            // graph cannot stop it before it ran (a race once spawns got faster).
            "[tasks.e2e]\ncommand = \"i=0; while [ ! -e ../../server-started ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done; echo e2e\"\ndepends-on = [\"lib#serve\"]\n",
            "cache = { inputs = [\"src/**\"], outputs = [] }\n",
        ),
    );
    f.commit();
    let cold = f.vx(&["run", "app#e2e", "--dry"]);
    assert_contains(&cold.stdout, "⏺ no-cache    lib#serve");
    assert_eq!(f.vx(&["run", "app#e2e"]).code, 0);
    let doc = crate::dry_json(&f, &["run", "app#e2e"]);
    assert_eq!(crate::dry_task(&doc, "lib#serve")["cache"], "not-started");
}

#[test]
fn keys_are_predictions_when_an_uncached_upstream_of_the_project_could_write_inputs() {
    let f = wc();
    f.write(
        "packages/lib/vx.toml",
        concat!(
            "[tasks.gen]\ncommand = \"echo gen\"\n\n",
            "[tasks.build]\ncommand = \"mkdir -p dist && cat src/*.txt > dist/out.txt\"\n",
            "depends-on = [\"gen\"]\n",
            "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
        ),
    );
    f.commit();
    let doc = crate::dry_json(&f, &["run", "build", "--all"]);
    let prediction = |id: &str| crate::dry_task(&doc, id)["key_is_prediction"].clone();
    assert_eq!(
        prediction("lib#build"),
        true,
        "lib#gen could write lib's inputs"
    );
    assert_eq!(
        prediction("app#build"),
        true,
        "an unstable upstream makes it unstable"
    );
    let text = f.vx(&["run", "lib#build", "--dry"]);
    assert_contains(&text.stdout, "lib#build  ~");
}

#[test]
fn the_restore_lane_writes_outputs_back_off_the_loop_and_gives_damaged_entries_back() {
    let f = wc();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"sleep 1; mkdir -p dist && cat src/*.txt > dist/out.txt && echo built lib\"\n",
    );
    f.commit();
    let env = [("CI", "true")];
    assert_eq!(f.vx_in("", &["run", "app#build"], &env).code, 0);
    // Outputs gone: the lane restores them while lib#build still runs.
    std::fs::remove_dir_all(f.path("packages/app/dist")).unwrap();
    let restored = f.vx_in("", &["run", "app#build"], &env);
    assert_eq!(restored.code, 0, "{}{}", restored.stdout, restored.stderr);
    let app = restored
        .stdout
        .find("┌─ app#build  restored-local")
        .expect("a restore");
    let lib = restored
        .stdout
        .find("┌─ lib#build")
        .expect("lib#build's frame");
    assert!(
        app < lib,
        "restored before its dependency ends:\n{}",
        restored.stdout
    );
    assert_eq!(f.read("packages/app/dist/app.txt"), "a\nb\n");

    // A damaged entry found by the lane: one line, and the task runs after its dependency.
    std::fs::remove_dir_all(f.path("packages/app/dist")).unwrap();
    for artifact in artifacts(&f) {
        let mut bytes = std::fs::read(&artifact).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        std::fs::write(&artifact, bytes).unwrap();
    }
    let damaged = f.vx_in("", &["run", "app#build"], &env);
    assert_eq!(damaged.code, 0, "{}{}", damaged.stdout, damaged.stderr);
    assert_eq!(
        damaged
            .stderr
            .matches("discarded damaged cache entry")
            .count(),
        1,
        "{}",
        damaged.stderr
    );
    let lib = damaged.stdout.find("┌─ lib#build").unwrap();
    let app = damaged.stdout.find("┌─ app#build").unwrap();
    assert!(
        lib < app,
        "executed after its dependency:\n{}",
        damaged.stdout
    );
    assert_eq!(f.read("packages/app/dist/app.txt"), "a\nb\n");
}

#[test]
fn why_run_explains_an_earlier_run_by_the_id_it_printed() {
    let f = wc();
    assert_eq!(f.vx(&["run", "lib#build"]).code, 0);
    f.write("packages/lib/src/a.txt", "edited\n");
    assert_eq!(f.vx(&["run", "lib#build"]).code, 0);
    // The 12 digits `vx why` prints for the run that executed after the edit.
    let why = f.vx(&["why", "lib#build"]);
    let line = why.stdout.lines().next().unwrap().to_string();
    let short = line.rsplit(' ').next().unwrap().to_string();
    assert_eq!(short.len(), 12, "{line}");
    assert_eq!(f.vx(&["run", "lib#build"]).code, 0);
    let latest = f.vx(&["why", "lib#build"]);
    assert_contains(&latest.stdout, "same key, served from cache");
    let earlier = f.vx(&["why", "lib#build", "--run", &short]);
    assert_eq!(earlier.code, 0, "{}{}", earlier.stdout, earlier.stderr);
    assert_contains(&earlier.stdout, &format!("run {short}"));
    assert_contains(&earlier.stdout, "the key changed");
    let ambiguous = f.vx(&["why", "lib#build", "--run", "0"]);
    assert_eq!(
        ambiguous.code, 2,
        "{}{}",
        ambiguous.stdout, ambiguous.stderr
    );
    assert_contains(&ambiguous.stderr, "--run `0` names 3 runs");
}

/// `vx cache clean` empties the local cache: `--dry` says what would go and keeps it;
/// after it every cached task executes again, and the run history stays.
#[test]
fn cache_clean_empties_the_cache_and_keeps_history() {
    let f = crate::w_cached();
    let first = f.vx(&["run", "build", "--all"]);
    assert_eq!(first.code, 0, "{first:?}");
    let dry = f.vx(&["cache", "clean", "--dry"]);
    assert_eq!(dry.code, 0, "{dry:?}");
    assert!(
        dry.stdout.starts_with("would remove 2 entries, "),
        "{dry:?}"
    );
    let hit = f.vx(&["run", "build", "--all"]);
    assert_contains(&hit.stdout, "cache      2 up-to-date");
    let clean = f.vx(&["cache", "clean", "--format", "json"]);
    assert_eq!(clean.code, 0, "{clean:?}");
    let report: serde_json::Value = serde_json::from_str(&clean.stdout).unwrap();
    assert_eq!(report["evicted"], 2, "{report}");
    assert_eq!(report["dry"], false);
    let empty = f.vx(&["cache", "clean"]);
    assert_eq!(empty.stdout, "removed 0 entries, 0 B\n", "{empty:?}");
    let again = f.vx(&["run", "build", "--all"]);
    assert_contains(&again.stdout, "cache      2 miss");
    let list = f.vx(&["last", "--list"]);
    assert_eq!(
        list.stdout.lines().count(),
        3,
        "three runs listed: {list:?}"
    );
}
