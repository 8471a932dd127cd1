//! `vx init --learn <tasks>` runs the named tasks once under vx's tracer
//! and caches each over what it read and wrote, failing closed (uncached, with the reason)
//! where what it did is no input a key can see. The real binary, real processes, the real
//! tracer.

use vx_test_support::fixture::Fixture;

use crate::{assert_contains, empty};

/// `vx run build` in the projects named; it must succeed; its stdout.
fn build(f: &Fixture, projects: &[&str]) -> String {
    let mut args = vec!["run", "build"];
    for project in projects {
        args.extend(["--filter", project]);
    }
    let out = f.vx(&args);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    out.stdout
}

#[test]
fn learned_caches_hit_and_miss_on_exactly_what_the_tasks_read() {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "workspaces": ["packages/*"],
            "scripts": {"build": "cat shared.txt > root.txt"}}"#,
    );
    f.write(".gitignore", "node_modules\ndist\n.vx\n.env\nroot.txt\n");
    f.write("shared.txt", "shared\n");
    f.write("packages/a/src/a.txt", "a\n");
    f.write("packages/a/README.md", "not read by the build\n");
    f.write(
        "packages/a/package.json",
        r#"{"name": "a", "version": "1.0.0", "scripts": {
            "build": "mkdir -p dist && cat src/a.txt ../../shared.txt > dist/a.txt && echo $MODE >> dist/a.txt"}}"#,
    );
    f.write("packages/b/src/b.txt", "b\n");
    f.write(
        "packages/b/package.json",
        r#"{"name": "b", "version": "1.0.0", "dependencies": {"a": "*"}, "scripts": {
            "build": "mkdir -p dist && cat src/b.txt ../a/dist/a.txt > dist/b.txt"}}"#,
    );
    // g reads what a writes without depending on a: its key could not see a change.
    f.write(
        "packages/g/package.json",
        r#"{"name": "g", "version": "1.0.0", "scripts": {"build": "cat ../a/dist/a.txt > /dev/null 2>&1; true"}}"#,
    );
    // h writes beside its sources (tsc without an outDir).
    f.write("packages/h/src/x.ts", "x\n");
    f.write(
        "packages/h/package.json",
        r#"{"name": "h", "version": "1.0.0", "scripts": {"build": "cp src/x.ts src/x.js"}}"#,
    );
    // c reads a file git ignores: named exactly, as a literal input.
    f.write("packages/c/.env", "SECRET=1\n");
    f.write(
        "packages/c/package.json",
        r#"{"name": "c", "version": "1.0.0", "scripts": {"build": "mkdir -p dist && cat .env > dist/c.txt"}}"#,
    );
    // d writes into another project.
    f.write(
        "packages/d/package.json",
        r#"{"name": "d", "version": "1.0.0", "scripts": {"build": "echo d > ../a/src/from-d.txt && rm ../a/src/from-d.txt; echo d > ../../d.log"}}"#,
    );
    // f lists a directory and reads none of its files: a file added there changes its output.
    f.write("packages/f/src/one.txt", "1\n");
    f.write(
        "packages/f/package.json",
        r#"{"name": "f", "version": "1.0.0", "scripts": {"build": "mkdir -p dist && ls src > dist/list.txt"}}"#,
    );
    // e fails.
    f.write(
        "packages/e/package.json",
        r#"{"name": "e", "version": "1.0.0", "scripts": {"build": "exit 3"}}"#,
    );
    f.commit();

    let init = f.vx(&["init", "--learn", "build"]);
    assert_eq!(init.code, 0, "{}{}", init.stdout, init.stderr);
    assert_contains(
        &init.stdout,
        "learned: 6 tasks cached over what they read and wrote in a traced run",
    );
    assert_contains(
        &init.stdout,
        "not learned, left uncached (3):\n  \
         d#build: it wrote d.log, outside its project\n  \
         e#build: it did not succeed (failed)\n  \
         g#build: it read packages/a/dist/a.txt, which a#build wrote, and it does not depend on a#build\n",
    );
    assert_contains(
        &f.read("packages/c/vx.toml"),
        "cache = { inputs = [\".env\"], outputs = [\"dist/**\"] }\n",
    );
    assert_contains(
        &f.read("packages/h/vx.toml"),
        "cache = { inputs = [\"src/**\"], outputs = [\"src/x.js\"] }\n",
    );
    // The root project's task: what it read at the root is its input, not the members'.
    assert_contains(
        &f.read("vx.toml"),
        "cache = { inputs = [\"shared.txt\"], outputs = [\"root.txt\"] }\n",
    );
    assert_contains(
        &f.read("packages/a/vx.toml"),
        "[tasks.build]\n# Learned by `vx init --learn` from what the task read and wrote: check it.\n\
         env = { pass-through = [\"MODE\"] }\n\
         cache = { inputs = [\"src/**\"], workspace-inputs = [\"shared.txt\"], outputs = [\"dist/**\"], env = [\"MODE\"] }\n",
    );
    // b read a's output, which a's key covers: not an input of its own.
    assert_contains(
        &f.read("packages/b/vx.toml"),
        "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
    );
    // A miss of h cleans its output, never the source beside it.
    let h = |f: &Fixture| build(f, &["h"]);
    h(&f);
    assert_contains(&h(&f), "1 task · 1 cached (100%)");
    f.write("packages/h/src/x.ts", "x, edited\n");
    assert_contains(&h(&f), "1 task · 0 cached (0%)");
    assert_eq!(f.read("packages/h/src/x.js"), "x, edited\n");
    let _ = std::fs::remove_file(f.path("d.log"));

    // The first run saves, the second is all hits, and each read file is a miss when it moves.
    let run = |f: &Fixture| build(f, &["a", "b"]);
    run(&f);
    assert_contains(&run(&f), "2 tasks · 2 cached (100%)");
    f.write("packages/a/README.md", "edited, and still not read\n");
    assert_contains(&run(&f), "2 tasks · 2 cached (100%)");
    f.write("shared.txt", "shared, edited\n");
    let after = run(&f);
    assert_contains(&after, "2 tasks · 0 cached (0%)");
    assert_contains(&f.read("packages/b/dist/b.txt"), "shared, edited");
    assert_contains(
        &f.read("packages/f/vx.toml"),
        "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
    );
    let list = |f: &Fixture| build(f, &["f"]);
    list(&f);
    assert_contains(&list(&f), "1 task · 1 cached (100%)");
    f.write("packages/f/src/two.txt", "2\n");
    assert_contains(&list(&f), "1 task · 0 cached (0%)");
    assert_eq!(f.read("packages/f/dist/list.txt"), "one.txt\ntwo.txt\n");
    // The variable its command names is passed, and part of the key.
    let with_mode = f.vx_in(
        "",
        &["run", "build", "--filter", "a"],
        &[("MODE", "production")],
    );
    assert_eq!(
        with_mode.code, 0,
        "{}{}",
        with_mode.stdout, with_mode.stderr
    );
    assert_contains(&with_mode.stdout, "1 task · 0 cached (0%)");
    assert_contains(&f.read("packages/a/dist/a.txt"), "production\n");
}

#[test]
fn learn_names_what_it_runs_and_refuses_a_dry_run() {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "workspaces": ["packages/*"]}"#,
    );
    f.write(
        "packages/a/package.json",
        r#"{"name": "a", "scripts": {"build": "true"}}"#,
    );
    let out = f.vx(&["init", "--learn", "build", "--dry"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_contains(
        &out.stderr,
        "error: --learn runs the tasks it names and --dry writes nothing: give one of them\n",
    );
    assert!(!f.path("vx.toml").exists());
    let out = f.vx(&["init", "--learn"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stderr, "--learn");
    // A name no task has: the files are written, nothing runs, and the report says so.
    let out = f.vx(&["init", "--learn", "tset"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_contains(
        &out.stdout,
        "nothing learned: no task of those names runs a command uncached in a project `--all` runs\n",
    );
    assert!(f.path("vx.toml").is_file());
}

/// Two tasks that learned the same output: vx lets one cached task own it (GRAPH-8), so the
/// second check keeps `build`'s cache, uncaches the other, and the report does not count it.
#[test]
fn a_learned_cache_vx_refuses_is_not_counted() {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "workspaces": ["packages/*"]}"#,
    );
    f.write(".gitignore", "node_modules\ndist\n.vx\n");
    f.write("packages/p/src/a.txt", "a\n");
    f.write(
        "packages/p/package.json",
        r#"{"name": "p", "version": "1.0.0", "scripts": {
            "build": "mkdir -p dist && cat src/a.txt > dist/x.txt",
            "pack": "mkdir -p dist && cat src/a.txt > dist/x.txt"}}"#,
    );
    f.commit();
    // `cat >`, not `cp`: the two run at once, and GNU cp creates a missing file with O_EXCL,
    // so one of two racing copies fails with `File exists`.
    let init = f.vx(&["init", "--learn", "build,pack"]);
    assert_eq!(init.code, 0, "{}{}", init.stdout, init.stderr);
    assert_contains(
        &init.stdout,
        "learned: 1 task cached over what it read and wrote in a traced run",
    );
    assert_contains(
        &init.stdout,
        "not learned, left uncached (1):\n  p#pack: vx refused the cache learned for it (see `not carried over`)\n",
    );
    assert_contains(&init.stdout, "p#pack: cache");
    assert_contains(&build(&f, &["p"]), "1 task · 0 cached (0%)");
    assert_contains(&build(&f, &["p"]), "1 task · 1 cached (100%)");
}
