//! `--affected` and changed-since filters on the real binary (SEL-1, SEL-3 to SEL-7,
//! DISC-7, ACC-25): what a change seeds, what a seed reaches, the nothing-affected
//! lines, ref refusals and the git processes a run costs.

use std::collections::BTreeMap;
use std::process::Command;

use vx_test_support::fixture::Fixture;

use crate::{assert_contains, lines_about, vx_bin};

/// Fixture W with caches, as the acceptance scenarios take it, plus a committed root file of no
/// project.
fn wc() -> Fixture {
    let f = Fixture::w_cached(vx_bin());
    f.write("README.md", "# w\n");
    f.commit();
    f
}

/// The first seven digits of the commit `rev` names.
fn short(f: &Fixture, rev: &str) -> String {
    let out = Command::new("git")
        .args(["rev-parse", "--short=7", rev])
        .current_dir(f.root())
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .expect("run git");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// `vx run <args> --dry=json`: each planned task's `affected` field, by id.
fn affected(f: &Fixture, args: &[&str]) -> BTreeMap<String, serde_json::Value> {
    let mut argv = vec!["run"];
    argv.extend_from_slice(args);
    argv.push("--dry=json");
    let out = f.vx(&argv);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["id"].as_str().unwrap().to_string(), t["affected"].clone()))
        .collect()
}

/// The ids `--dry=json` plans.
fn planned(f: &Fixture, args: &[&str]) -> Vec<String> {
    affected(f, args).into_keys().collect()
}

fn changed(path: &str) -> serde_json::Value {
    serde_json::json!({ "path": path, "via": [] })
}

const AT_HEAD: &str =
    "  hint: the base is HEAD; pass --affected=origin/main or --affected=HEAD~1\n";

#[test]
fn acc25_affected_runs_what_a_change_reaches() {
    let f = wc();
    f.write("packages/lib/src/a.txt", "edited\n");
    let out = f.vx(&["run", "build", "--affected=HEAD"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        lines_about(&out.stdout, "lib#build").len(),
        1,
        "{}",
        out.stdout
    );
    assert_eq!(
        lines_about(&out.stdout, "app#build").len(),
        1,
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("docs#build"), "{}", out.stdout);

    f.git(&["checkout", "--", "packages/lib/src/a.txt"]);
    f.write("README.md", "# w, edited\n");
    let out = f.vx(&["run", "build", "--affected=HEAD"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        format!(
            "vx: no project changed since HEAD ({})\n{AT_HEAD}",
            short(&f, "HEAD")
        )
    );

    let out = f.vx(&["run", "build", "--affected=nope"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.stderr, "error: cannot resolve git ref `nope`\n");
}

#[test]
fn dry_names_the_changed_path_or_the_chain_that_reached_each_task() {
    let f = wc();
    f.write("packages/lib/src/a.txt", "edited\n");
    let out = f.vx(&["run", "test", "--affected=HEAD", "--dry"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let text = out.stdout_redacted(&f);
    assert_contains(
        &text,
        "lib#build  [key]\n      affected: packages/lib/src/a.txt\n",
    );
    // No run yet: what lib#build produces decides its dependants' keys (KEY-9).
    assert_contains(
        &text,
        "app#build  unknown (lib#build runs first; its outputs decide)  ← lib#build\n      \
         affected: via lib#build (packages/lib/src/a.txt)\n",
    );
    assert_contains(
        &text,
        "app#test  unknown (lib#build runs first; its outputs decide)  ← app#build\n      \
         affected: via app#build → lib#build (packages/lib/src/a.txt)\n",
    );

    let found = affected(&f, &["test", "--affected=HEAD"]);
    assert_eq!(found["lib#build"], changed("packages/lib/src/a.txt"));
    assert_eq!(
        found["app#test"],
        serde_json::json!({ "path": "packages/lib/src/a.txt", "via": ["app#build", "lib#build"] })
    );
    // Without --affected there is no such field.
    let out = f.vx(&["run", "build", "--all", "--dry=json"]);
    assert!(!out.stdout.contains("\"affected\""), "{}", out.stdout);
}

/// A lockfile vx reads per project seeds only the projects it moves (tests/cli/lockfiles.rs);
/// one it cannot read seeds every task, as the other root files do.
#[test]
fn an_unreadable_root_lockfile_seeds_every_task() {
    let f = wc();
    f.write("pnpm-lock.yaml", "lockfileVersion: 5\n");
    f.commit();
    f.write("pnpm-lock.yaml", "lockfileVersion: 5.1\n");
    let found = affected(&f, &["build", "--affected=HEAD"]);
    assert_eq!(found.len(), 3, "{found:?}");
    for id in ["lib#build", "app#build", "docs#build"] {
        assert_eq!(found[id], changed("pnpm-lock.yaml"), "{id}");
    }
}

#[test]
fn a_project_manifest_seeds_every_task_of_its_project() {
    let f = wc();
    f.write(
        "packages/docs/vx.toml",
        "[tasks.build]\ncommand = \"echo docs again\"\n",
    );
    let found = affected(&f, &["build", "--affected=HEAD"]);
    assert_eq!(
        found,
        BTreeMap::from([("docs#build".into(), changed("packages/docs/vx.toml"))])
    );

    f.git(&["checkout", "--", "packages/docs/vx.toml"]);
    f.write(
        "packages/app/package.json",
        r#"{ "name": "app", "version": "1.0.1", "dependencies": { "lib": "workspace:*" } }"#,
    );
    let found = affected(&f, &["test", "--affected=HEAD"]);
    assert_eq!(found["app#build"], changed("packages/app/package.json"));
    assert_eq!(found["app#test"], changed("packages/app/package.json"));
    // lib#build runs as a dependency, unaffected (most likely a hit).
    assert_eq!(found["lib#build"], serde_json::Value::Null);
}

#[test]
fn untracked_files_and_nested_repositories_seed_their_project() {
    let f = wc();
    // docs#build is not cached: any path in docs seeds it.
    f.write("packages/docs/new.md", "new\n");
    assert_eq!(
        affected(&f, &["build", "--affected=HEAD"]),
        BTreeMap::from([("docs#build".into(), changed("packages/docs/new.md"))])
    );
    std::fs::remove_file(f.path("packages/docs/new.md")).unwrap();

    // lib#build is cached with `src/**`: an untracked file elsewhere in lib seeds nothing.
    f.write("packages/lib/NOTES.md", "notes\n");
    let out = f.vx(&["run", "build", "--affected=HEAD"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stderr, "vx: no project changed since HEAD (");
    std::fs::remove_file(f.path("packages/lib/NOTES.md")).unwrap();

    // An ignored file is invisible.
    f.write("packages/docs/dist/x.txt", "x\n");
    let out = f.vx(&["run", "build", "--affected=HEAD"]);
    assert_contains(&out.stderr, "vx: no project changed since HEAD (");

    // A nested repository is one changed path: everything under it.
    let nested = Fixture::new(vx_bin());
    let vendor = f.path("packages/docs/vendor");
    std::fs::rename(nested.root(), &vendor).unwrap();
    std::fs::write(vendor.join("x.txt"), "x\n").unwrap();
    assert_eq!(
        affected(&f, &["build", "--affected=HEAD"]),
        BTreeMap::from([("docs#build".into(), changed("packages/docs/vendor"))])
    );
}

#[test]
fn a_change_inside_a_nested_project_does_not_seed_the_outer_one() {
    let f = wc();
    f.write(
        "vx.toml",
        "[workspace]\nmembers = [\"packages/*\", \"packages/docs/guide\"]\n",
    );
    f.write("packages/docs/guide/package.json", r#"{ "name": "guide" }"#);
    f.write(
        "packages/docs/guide/vx.toml",
        "[tasks.build]\ncommand = \"echo guide\"\n",
    );
    f.write("packages/docs/guide/page.md", "page\n");
    f.commit();
    f.write("packages/docs/guide/page.md", "page, edited\n");
    assert_eq!(
        affected(&f, &["build", "--affected=HEAD"]),
        BTreeMap::from([("guide#build".into(), changed("packages/docs/guide/page.md"))])
    );
}

#[test]
fn the_changes_may_reach_no_requested_task() {
    let f = wc();
    f.write("packages/docs/page.md", "page\n");
    let out = f.vx(&["run", "test", "--affected=HEAD"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        format!("vx: the changes since HEAD reach no `test` task\n{AT_HEAD}")
    );
    // A typo is still an error, judged against the whole workspace.
    let out = f.vx(&["run", "tset", "--affected=HEAD"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        "error: no selected project declares task `tset`\n  hint: did you mean `test`?\n"
    );
    // A task named by id always runs.
    assert_eq!(
        planned(&f, &["app#test", "--affected=HEAD"]),
        ["app#build", "app#test", "lib#build"]
    );
}

#[test]
fn a_base_behind_head_compares_its_merge_base_with_the_work_tree_and_has_no_hint() {
    let f = wc();
    f.write("README.md", "# w, committed\n");
    f.commit();
    let out = f.vx(&["run", "build", "--affected=HEAD~1"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        format!(
            "vx: no project changed since HEAD~1 ({})\n",
            short(&f, "HEAD~1")
        )
    );
    f.write("packages/app/src/b.txt", "committed\n");
    f.commit();
    f.write("packages/docs/page.md", "uncommitted\n");
    assert_eq!(
        planned(&f, &["build", "--affected=HEAD~2"]),
        ["app#build", "docs#build", "lib#build"]
    );
    assert_eq!(
        affected(&f, &["build", "--affected=HEAD~2"])["app#build"],
        changed("packages/app/src/b.txt")
    );
}

#[test]
fn bare_affected_takes_the_configured_base_else_the_first_usable_default() {
    let f = Fixture::w_cached(vx_bin());
    // No remote, and `main` is HEAD: the base is HEAD~1, where lib and app got caches.
    let found = affected(&f, &["build", "--affected"]);
    assert_eq!(found["lib#build"], changed("packages/lib/vx.toml"));
    assert_eq!(found["app#build"], changed("packages/app/vx.toml"));
    assert!(!found.contains_key("docs#build"), "{found:?}");
    // A default that is HEAD's commit is skipped...
    f.git(&["update-ref", "refs/remotes/origin/main", "HEAD"]);
    assert!(affected(&f, &["build", "--affected"]).contains_key("lib#build"));
    // ...but `origin/HEAD` is taken as it is.
    f.git(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/main",
    ]);
    let out = f.vx(&["run", "build", "--affected"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let head = short(&f, "HEAD");
    // SEL-7: the base a bare `--affected` took, and why, on a line of its own.
    assert_eq!(
        out.stderr,
        format!(
            "vx: --affected compares with origin/HEAD ({head}): the remote's default branch\n\
             vx: no project changed since origin/HEAD ({head})\n{AT_HEAD}"
        )
    );

    f.write(
        "vx.toml",
        "[workspace]\nmembers = [\"packages/*\"]\naffected-base = \"HEAD\"\n",
    );
    f.commit();
    let out = f.vx(&["run", "build", "--affected"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        format!(
            "vx: no project changed since HEAD ({})\n{AT_HEAD}",
            short(&f, "HEAD")
        )
    );

    let single = crate::one_project("[tasks.build]\ncommand = \"true\"\n");
    let out = single.vx(&["run", "build", "--affected"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        "error: --affected found no base ref\n  hint: name one with `--affected=<ref>`, or set `affected-base` in [workspace]\n"
    );
}

#[test]
fn other_includes_add_their_projects_whole_and_excludes_apply_to_both() {
    let f = wc();
    f.write("packages/lib/src/a.txt", "edited\n");
    assert_eq!(
        planned(&f, &["build", "--affected=HEAD", "--filter", "docs"]),
        ["app#build", "docs#build", "lib#build"]
    );
    assert_eq!(
        planned(&f, &["build", "--affected=HEAD", "--filter", "!app"]),
        ["lib#build"]
    );
}

#[test]
fn refs_are_refused_with_the_base_to_pass_instead() {
    let f = wc();
    for (flag, message, hint) in [
        (
            "--affected=main..HEAD",
            "--affected takes one base ref; `main..HEAD` is a range",
            "pass `--affected=main` instead",
        ),
        (
            "--affected=main...next",
            "--affected takes one base ref; `main...next` is a range",
            "pass `--affected=main` instead",
        ),
        (
            "--affected=^main",
            "--affected takes one base ref; `^main` is an exclusion",
            "pass `--affected=main` instead",
        ),
        (
            "--affected=main:src/a.txt",
            "--affected takes one base ref; `main:src/a.txt` names a path inside a commit",
            "pass `--affected=main` instead",
        ),
        (
            "--affected=-x",
            "--affected takes one base ref; `-x` starts with `-`",
            "pass a branch, tag or commit, e.g. `--affected=origin/main`, or `--affected` alone for the default base",
        ),
    ] {
        let out = f.vx(&["run", "build", flag]);
        assert_eq!(out.code, 2, "{flag}: {}{}", out.stdout, out.stderr);
        assert_eq!(out.stderr, format!("error: {message}\n  hint: {hint}\n"), "{flag}");
    }
    // `a...HEAD` is read as `a`.
    let out = f.vx(&["run", "build", "--affected=main...HEAD"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stderr, "vx: no project changed since main (");
}

#[test]
fn a_shallow_clone_hints_how_to_fetch_the_base() {
    let f = wc();
    f.write(".git/shallow", "");
    let out = f.vx(&["run", "build", "--affected=origin/main"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        "error: cannot resolve git ref `origin/main`\n  hint: this is a shallow clone; fetch the base, e.g. `git fetch --deepen=200 origin main`\n"
    );
}

#[test]
fn outside_git_affected_and_changed_since_filters_are_refused() {
    let f = wc();
    std::fs::remove_dir_all(f.path(".git")).unwrap();
    let out = f.vx(&["run", "build", "--affected"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.stderr, "error: --affected needs a git repository\n");
    let out = f.vx(&["run", "build", "--filter", "[main]"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        "error: the filter `[main]` needs a git repository\n"
    );
    // Everything else still works there.
    assert_eq!(f.vx(&["run", "build", "--all", "--dry"]).code, 0);
}

#[test]
fn changed_since_filters_select_projects() {
    let f = wc();
    f.write("packages/lib/src/a.txt", "committed\n");
    f.commit();
    assert_eq!(
        planned(&f, &["build", "--filter", "[HEAD~1]"]),
        ["lib#build"]
    );
    assert_eq!(
        planned(&f, &["build", "--filter", "...[HEAD~1]"]),
        ["app#build", "lib#build"]
    );
    assert_eq!(
        planned(&f, &["build", "--filter", "lib...[HEAD~1]"]),
        ["app#build", "lib#build"]
    );
    assert_eq!(
        planned(&f, &["build", "--filter", "{packages/*}[HEAD~1]"]),
        ["lib#build"]
    );
    let out = f.vx(&["run", "build", "--filter", "app[HEAD~1]"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        "error: no project matches filter `app[HEAD~1]`\n  hint: changed since `HEAD~1`: lib\n"
    );
    let out = f.vx(&["run", "build", "--filter", "[HEAD~1..HEAD]"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        "error: invalid filter `[HEAD~1..HEAD]`: the ref `HEAD~1..HEAD` is a range\n  hint: write `[HEAD~1]` instead\n"
    );
}

#[test]
fn an_affected_run_starts_three_git_processes_for_a_base_at_head() {
    let f = wc();
    f.write("packages/lib/src/a.txt", "edited\n");
    let out = f.vx_in(
        "",
        &["run", "build", "--affected=HEAD"],
        &[("VX_LOG", "vx::counters=info")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    // rev-parse, diff, ls-files, then lib#build and app#build.
    assert_contains(&out.stderr, "spawns=5 ");
}
