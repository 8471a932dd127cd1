//! Early cutoff (KEY-9): a dependant's key folds what an upstream with outputs produced, not
//! the upstream's key — so an upstream that re-ran to the same outputs leaves it up to date,
//! `vx why` says so, `--dry` predicts it, the footer and `--summarize` count it; and where it
//! must not happen (outputs that changed, an upstream read outside its outputs and opted out
//! with `cache.upstream-keys`, a result that was not saved) it does not. On the real binary.

use vx_test_support::fixture::Fixture;

use crate::{assert_contains, dry_task, lines_about, vx_bin};

/// `lib#build` writes its sources without their `#` comment lines; `app#build` reads lib's
/// `dist` (and, through `extra.txt`, a file of lib that is not one of its outputs).
fn workspace() -> Fixture {
    let f = Fixture::w(vx_bin());
    f.write(
        "packages/lib/vx.toml",
        concat!(
            "[tasks.build]\n",
            "command = \"mkdir -p dist && grep -hv '^#' src/*.txt > dist/out.txt; echo built lib\"\n",
            "cache = { inputs = [\"src/**\", \"extra.txt\"], outputs = [\"dist/**\"] }\n",
        ),
    );
    f.write("packages/lib/src/a.txt", "# a comment\na\n");
    f.write("packages/lib/extra.txt", "extra 1\n");
    f.write(
        "packages/app/vx.toml",
        concat!(
            "[tasks.build]\n",
            "command = \"mkdir -p dist && cat ../lib/dist/out.txt ../lib/extra.txt src/*.txt > dist/app.txt && echo built app\"\n",
            "depends-on = [\"^build\"]\n",
            "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n\n",
            "[tasks.test]\n",
            "command = \"test -s dist/app.txt && echo tested\"\n",
            "depends-on = [\"build\"]\n",
            "cache = { inputs = [\"src/**\"], outputs = [] }\n",
        ),
    );
    f.commit();
    f
}

/// `vx ARGS`, which must succeed; a `run` prints a one-liner per task (`hash-only`).
fn run(f: &Fixture, args: &[&str]) -> String {
    let mut args = args.to_vec();
    if args.first() == Some(&"run") && !args.contains(&"--dry") {
        args.extend(["--output-logs", "hash-only"]);
    }
    let out = f.vx(&args);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    out.stdout
}

/// The cache word of a task's one-liner (`miss`, `up-to-date`, `local`).
fn outcome(stdout: &str, id: &str) -> String {
    let lines = lines_about(stdout, id);
    let line = lines
        .iter()
        .find(|l| l.contains("success") || l.contains("failed"))
        .unwrap_or_else(|| panic!("no line about {id} in:\n{stdout}"));
    ["miss", "up-to-date", "local", "remote"]
        .into_iter()
        .find(|w| line.split_whitespace().any(|x| x == *w))
        .unwrap_or_else(|| panic!("no cache word in {line:?}"))
        .to_string()
}

fn comment_edit(f: &Fixture) {
    f.write("packages/lib/src/a.txt", "# another comment\na\n");
    f.commit();
}

#[test]
fn an_upstream_rebuilt_to_the_same_outputs_cuts_off_its_dependants_and_says_so() {
    let f = workspace();
    run(&f, &["run", "app#test"]);
    comment_edit(&f);
    let out = run(&f, &["run", "app#test", "--summarize=summary.json"]);
    assert_eq!(outcome(&out, "lib#build"), "miss", "{out}");
    assert_eq!(outcome(&out, "app#build"), "up-to-date", "{out}");
    assert_eq!(outcome(&out, "app#test"), "up-to-date", "{out}");
    assert_contains(&out, "cut off: 1 task\n");

    let why = run(&f, &["why", "app#build"]);
    assert_contains(
        &why,
        "cut off    upstream lib#build re-ran (packages/lib/src/a.txt changed); its outputs are \
         identical → this task is up to date\n",
    );
    // app#test folds app#build's outputs: its key did not move, but no upstream of it re-ran.
    assert!(!run(&f, &["why", "app#test"]).contains("cut off"));

    let summary: serde_json::Value =
        serde_json::from_str(&f.read("summary.json")).expect("summary JSON");
    assert_eq!(summary["counts"]["cut_off"], 1);
    let app = summary["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "app#build")
        .unwrap();
    assert_eq!(app["cut_off"], serde_json::json!(["lib#build"]));
}

#[test]
fn an_upstream_whose_outputs_changed_reruns_its_dependants() {
    let f = workspace();
    run(&f, &["run", "app#test"]);
    f.write("packages/lib/src/a.txt", "# a comment\nA\n");
    f.commit();
    let out = run(&f, &["run", "app#test"]);
    assert_eq!(outcome(&out, "lib#build"), "miss", "{out}");
    assert_eq!(outcome(&out, "app#build"), "miss", "{out}");
    // app#test folds what app#build produced, which changed too.
    assert_eq!(outcome(&out, "app#test"), "miss", "{out}");
    assert!(!out.contains("cut off"), "{out}");
    assert_eq!(f.read("packages/app/dist/app.txt"), "A\nextra 1\nb\n");
    let why = run(&f, &["why", "app#build"]);
    assert_contains(&why, "changed  upstream  lib#build");
    assert_contains(&why, "lib#build's outputs changed: run `vx why lib#build`");
}

#[test]
fn a_dependant_that_reads_beyond_the_outputs_opts_out_with_upstream_keys() {
    // Without the opt-out, an edit of lib's extra.txt (an input of lib#build, not an output)
    // leaves app#build cut off and stale: what the escape hatch is for.
    let f = workspace();
    run(&f, &["run", "app#build"]);
    f.write("packages/lib/extra.txt", "extra 2\n");
    f.commit();
    let out = run(&f, &["run", "app#build"]);
    assert_eq!(outcome(&out, "app#build"), "up-to-date", "{out}");
    assert_eq!(f.read("packages/app/dist/app.txt"), "a\nextra 1\nb\n");

    let f = workspace();
    let config = f.read("packages/app/vx.toml").replace(
        "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }",
        "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"], upstream-keys = [\"^build\"] }",
    );
    f.write("packages/app/vx.toml", &config);
    f.commit();
    run(&f, &["run", "app#build"]);
    f.write("packages/lib/extra.txt", "extra 2\n");
    f.commit();
    let out = run(&f, &["run", "app#build"]);
    assert_eq!(outcome(&out, "app#build"), "miss", "{out}");
    assert_eq!(f.read("packages/app/dist/app.txt"), "a\nextra 2\nb\n");
    // With the opt-out, even a comment edit re-runs it: it folds lib's key.
    comment_edit(&f);
    let out = run(&f, &["run", "app#build"]);
    assert_eq!(outcome(&out, "app#build"), "miss", "{out}");
    let why = run(&f, &["why", "app#build"]);
    assert_contains(&why, "lib#build's key moved");
}

#[test]
fn an_upstream_entry_names_its_key_where_it_is_not_an_upstream_edge() {
    let f = workspace();
    let config = f.read("packages/app/vx.toml").replace(
        "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }",
        "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"], upstream-keys = [\"lib#lint\"] }",
    );
    f.write("packages/app/vx.toml", &config);
    f.commit();
    let out = f.vx(&["run", "app#build"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_contains(
        &out.stderr,
        "packages/app/vx.toml:4:72: cache.upstream-keys: `lib#lint` is not a `depends-on` entry of this task",
    );
}

#[test]
fn a_result_that_was_not_saved_is_folded_by_its_key() {
    let f = workspace();
    run(&f, &["run", "app#build"]);
    comment_edit(&f);
    // Writes off: lib#build executes and nothing holds its outputs, so app#build folds its key
    // (never seen) and runs.
    let out = run(&f, &["run", "app#build", "--cache", "local:r"]);
    assert_eq!(outcome(&out, "lib#build"), "miss", "{out}");
    assert_eq!(outcome(&out, "app#build"), "miss", "{out}");
    assert!(!out.contains("cut off"), "{out}");
}

#[test]
fn dry_predicts_the_cutoff_from_history_and_says_when_it_cannot() {
    let f = workspace();
    // No history: lib#build would run and nothing says what it produces.
    let dry = run(&f, &["run", "app#build", "--dry"]);
    assert_contains(&dry, "unknown (lib#build runs first; its outputs decide)");
    let doc = crate::dry_json(&f, &["run", "app#build"]);
    let app = dry_task(&doc, "app#build");
    assert!(app["key"].is_null(), "{app}");
    assert_eq!(
        app["key_unknown"],
        "lib#build runs first; its outputs decide"
    );

    run(&f, &["run", "app#build"]);
    comment_edit(&f);
    let dry = run(&f, &["run", "app#build", "--dry"]);
    assert_contains(
        &dry,
        "a hit if lib#build produces the same outputs again (early cutoff)",
    );
    let doc = crate::dry_json(&f, &["run", "app#build"]);
    assert_eq!(dry_task(&doc, "lib#build")["cache"], "miss");
    let app = dry_task(&doc, "app#build");
    // Counted as running: only the run can tell whether lib's outputs come out the same.
    assert_eq!(app["cache"], "miss", "{app}");
    assert_eq!(app["assumes_unchanged"], serde_json::json!(["lib#build"]));
    assert_eq!(app["hit_if_unchanged"], true);
    assert_eq!(app["key_is_prediction"], true);
    // The prediction is the key the run then takes.
    let predicted = app["key"].as_str().unwrap().to_string();
    let out = run(&f, &["run", "app#build"]);
    assert_contains(&out, &predicted[..12]);
}

#[test]
fn an_upstream_left_out_of_the_run_is_folded_by_what_its_entry_holds() {
    let f = workspace();
    run(&f, &["run", "app#build"]);
    comment_edit(&f);
    run(&f, &["run", "lib#build"]);
    // lib#build is not scheduled: its current key's entry says what it produced.
    let out = run(&f, &["run", "app#build", "--only"]);
    assert_eq!(outcome(&out, "app#build"), "up-to-date", "{out}");
    // Without an entry for lib's current key, app folds that key: a miss, never a stale hit.
    f.write("packages/lib/src/a.txt", "# a comment\nchanged\n");
    f.commit();
    let out = run(&f, &["run", "app#build", "--only"]);
    assert_eq!(outcome(&out, "app#build"), "miss", "{out}");
}

#[test]
fn a_dependant_is_not_cut_off_when_an_upstream_of_its_upstream_produced_something_new() {
    // core → lib → app; lib's outputs never change, core's do: app reads core's dist through
    // lib (as a type declaration re-exported), so it must run again.
    let f = Fixture::w(vx_bin());
    f.write(
        "packages/core/package.json",
        r#"{ "name": "core", "version": "1.0.0" }"#,
    );
    f.write(
        "packages/core/vx.toml",
        concat!(
            "[tasks.build]\ncommand = \"mkdir -p dist && cat src/*.txt > dist/core.txt\"\n",
            "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
        ),
    );
    f.write("packages/core/src/c.txt", "core 1\n");
    f.write(
        "packages/lib/package.json",
        r#"{ "name": "lib", "version": "1.0.0", "dependencies": { "core": "workspace:*" } }"#,
    );
    f.write(
        "packages/lib/vx.toml",
        concat!(
            "[tasks.build]\ncommand = \"mkdir -p dist && echo lib > dist/out.txt\"\n",
            "depends-on = [\"^build\"]\n",
            "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
        ),
    );
    f.write(
        "packages/app/vx.toml",
        concat!(
            "[tasks.build]\n",
            "command = \"mkdir -p dist && cat ../lib/dist/out.txt ../core/dist/core.txt > dist/app.txt\"\n",
            "depends-on = [\"^build\"]\n",
            "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
        ),
    );
    f.commit();
    run(&f, &["run", "app#build"]);
    f.write("packages/core/src/c.txt", "core 2\n");
    f.commit();
    let out = run(&f, &["run", "app#build"]);
    assert_eq!(outcome(&out, "core#build"), "miss", "{out}");
    assert_eq!(outcome(&out, "lib#build"), "miss", "{out}");
    assert_eq!(outcome(&out, "app#build"), "miss", "{out}");
    assert_eq!(f.read("packages/app/dist/app.txt"), "lib\ncore 2\n");
}

/// lib's build also writes a source map that embeds its sources, comments and all (what most
/// bundlers' `sourcesContent` does); `read` is lib's `cache.dependants-read`, if any.
fn mapped_workspace(read: Option<&str>) -> Fixture {
    let f = Fixture::w(vx_bin());
    let read = read.map_or(String::new(), |r| format!(", dependants-read = {r}"));
    f.write(
        "packages/lib/vx.toml",
        &format!(
            concat!(
                "[tasks.build]\n",
                "command = \"mkdir -p dist && grep -hv '^#' src/*.txt > dist/out.txt && cat src/*.txt > dist/out.txt.map\"\n",
                "cache = {{ inputs = [\"src/**\"], outputs = [\"dist/**\"]{} }}\n",
            ),
            read
        ),
    );
    f.write("packages/lib/src/a.txt", "# a comment\na\n");
    f.write(
        "packages/app/vx.toml",
        concat!(
            "[tasks.build]\n",
            "command = \"mkdir -p dist && cat ../lib/dist/out.txt > dist/app.txt\"\n",
            "depends-on = [\"^build\"]\n",
            "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
        ),
    );
    f.write("packages/app/src/b.txt", "b\n");
    f.commit();
    f
}

#[test]
fn outputs_no_dependant_reads_do_not_rerun_dependants_when_only_they_changed() {
    // Without `dependants-read`, the map is folded: a comment edit re-runs app.
    let f = mapped_workspace(None);
    run(&f, &["run", "app#build"]);
    comment_edit(&f);
    let out = run(&f, &["run", "app#build"]);
    assert_eq!(outcome(&out, "app#build"), "miss", "{out}");

    let f = mapped_workspace(Some("[\"dist/**\", \"!**/*.map\"]"));
    run(&f, &["run", "app#build"]);
    comment_edit(&f);
    let out = run(&f, &["run", "app#build"]);
    assert_eq!(outcome(&out, "lib#build"), "miss", "{out}");
    assert_eq!(outcome(&out, "app#build"), "up-to-date", "{out}");
    assert_contains(&out, "cut off: 1 task\n");
    assert_contains(
        &f.read("packages/lib/dist/out.txt.map"),
        "# another comment",
    );
    assert_contains(
        &run(&f, &["why", "app#build"]),
        "cut off    upstream lib#build re-ran (packages/lib/src/a.txt changed); its outputs are \
         identical → this task is up to date\n",
    );

    // What a dependant reads changed: it re-runs.
    f.write("packages/lib/src/a.txt", "# another comment\nA\n");
    f.commit();
    let out = run(&f, &["run", "app#build"]);
    assert_eq!(outcome(&out, "app#build"), "miss", "{out}");
    assert_eq!(f.read("packages/app/dist/app.txt"), "A\n");

    // The map is still an output: saved, cleaned and restored with the rest.
    std::fs::remove_dir_all(f.path("packages/lib/dist")).unwrap();
    let out = run(&f, &["run", "lib#build"]);
    assert_eq!(outcome(&out, "lib#build"), "local", "{out}");
    assert_eq!(
        f.read("packages/lib/dist/out.txt.map"),
        "# another comment\nA\n"
    );
}

#[test]
fn dependants_read_is_a_glob_list_checked_like_outputs() {
    let f = mapped_workspace(Some("[\"../other/**\"]"));
    let out = f.vx(&["run", "app#build"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_contains(
        &out.stderr,
        "error: packages/lib/vx.toml:3:74: cache.dependants-read: `../other/**` leaves the project",
    );
}

/// A Turborepo on npm workspaces whose `b#build` reads `a`'s code but not its map, and whose
/// `turbo.json` says so with Turborepo 2.11's `dependencyOutputs` globs.
fn turborepo_with_dependency_outputs() -> Fixture {
    let f = crate::empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "packageManager": "npm@10.8.2",
            "workspaces": ["packages/*"]}"#,
    );
    f.write(
        "turbo.json",
        r#"{"tasks": {"build": {
            "dependsOn": ["^build"],
            "outputs": ["dist/**"],
            "inputs": ["$TURBO_DEFAULT$", {"mode": "dependencyOutputs", "globs": ["dist/**", "!**/*.map"]}]
        }}}"#,
    );
    f.write(".gitignore", "node_modules\ndist\n.turbo\n.vx\n");
    f.write(
        "packages/a/package.json",
        r#"{"name": "a", "version": "1.0.0", "scripts": {
            "build": "mkdir -p dist && grep -hv '^#' src/*.txt > dist/a.js && cat src/*.txt > dist/a.js.map"}}"#,
    );
    f.write("packages/a/src/a.txt", "# a comment\na\n");
    f.write(
        "packages/b/package.json",
        r#"{"name": "b", "version": "1.0.0", "dependencies": {"a": "1.0.0"}, "scripts": {
            "build": "mkdir -p dist && cat ../a/dist/a.js > dist/b.js"}}"#,
    );
    f.write("packages/b/src/b.txt", "b\n");
    f
}

/// The tasks a `turbo run build` executed (cache misses), from its `hash-only` lines.
fn turbo_misses(out: &str) -> Vec<String> {
    let mut misses: Vec<String> = out
        .lines()
        .filter(|l| l.contains("cache miss"))
        .filter_map(|l| l.split(':').next())
        .map(|t| format!("{t}#build"))
        .collect();
    misses.sort();
    misses
}

fn vx_misses(f: &Fixture) -> Vec<String> {
    let out = run(f, &["run", "build", "--all"]);
    let mut misses: Vec<String> = ["a#build", "b#build"]
        .into_iter()
        .filter(|id| outcome(&out, id) == "miss")
        .map(str::to_string)
        .collect();
    misses.sort();
    misses
}

#[test]
fn turbos_dependency_outputs_globs_carry_over_and_cut_off_where_turbo_does() {
    let Some(turbo_bin) = vx_test_support::tools::npm_tool("turbo@2.11.13", "turbo") else {
        return;
    };
    let f = turborepo_with_dependency_outputs();
    let init = f.vx(&["init"]);
    assert_eq!(init.code, 0, "{init:?}");
    assert_contains(
        &f.read("vx.toml"),
        "cache = { inputs = [\"**\", \"!dist/**\"], outputs = [\"dist/**\"], dependants-read = [\"dist/**\", \"!**/*.map\"] }\n",
    );
    crate::migrate::npm_install(&f);
    f.commit();
    let turbo = |f: &Fixture| {
        crate::migrate::turbo(f, &turbo_bin, &["run", "build", "--output-logs=hash-only"])
    };
    turbo(&f);
    assert_eq!(vx_misses(&f), ["a#build", "b#build"]);

    // A comment edit changes only the map: each runs a's build alone.
    f.write("packages/a/src/a.txt", "# another comment\na\n");
    f.commit();
    assert_eq!(turbo_misses(&turbo(&f)), ["a#build"]);
    assert_eq!(vx_misses(&f), ["a#build"]);

    // An edit of what b reads re-runs b with both.
    f.write("packages/a/src/a.txt", "# another comment\nA\n");
    f.commit();
    assert_eq!(turbo_misses(&turbo(&f)), ["a#build", "b#build"]);
    assert_eq!(vx_misses(&f), ["a#build", "b#build"]);
    assert_eq!(f.read("packages/b/dist/b.js"), "A\n");
}
