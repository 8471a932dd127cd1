//! The lockfile read per project (KEY-3) on the real binary: a dependency bump re-runs the
//! tasks of the projects that install it and no others, `vx why` names the package whose
//! version moved, `--affected` seeds those projects alone, and a lockfile vx cannot read is
//! folded whole with one notice.
//!
//! The lockfiles are real: `scripts/lockfile-fixtures` wrote them with pnpm, npm, yarn 1,
//! yarn 4 and bun from the npm registry, for one three-member workspace (`@demo/a` depends
//! on `ms`, `@demo/b` links `@demo/a`, `@demo/c` depends on `is-odd`), before and after
//! `ms` moved from 2.1.1 to 2.1.3 inside the range `@demo/a` asks for.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use vx_test_support::fixture::Fixture;

use crate::{assert_contains, vx_bin};

const MANAGERS: [(&str, &str); 5] = [
    ("pnpm", "pnpm-lock.yaml"),
    ("npm", "package-lock.json"),
    ("yarn1", "yarn.lock"),
    ("yarn4", "yarn.lock"),
    ("bun", "bun.lock"),
];

const PROJECTS: [&str; 3] = ["a", "b", "c"];

fn fixtures(pm: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/lockfiles")
        .join(pm)
}

/// The workspace of `pm` with its `before` lockfile, a cached `build` in each member (no
/// `depends-on`, so only the lockfile can move a key of one member because of another),
/// committed.
fn workspace(pm: &str, lockfile: &str) -> Fixture {
    let f = Fixture::new(vx_bin());
    let from = fixtures(pm);
    for rel in ["package.json", "pnpm-workspace.yaml", ".yarnrc.yml"] {
        if from.join(rel).exists() {
            f.write(rel, &std::fs::read_to_string(from.join(rel)).unwrap());
        }
    }
    for p in PROJECTS {
        let manifest = format!("packages/{p}/package.json");
        f.write(
            &manifest,
            &std::fs::read_to_string(from.join(&manifest)).unwrap(),
        );
        f.write(
            &format!("packages/{p}/vx.toml"),
            "[tasks.build]\ncommand = \"mkdir -p dist && echo built > dist/out.txt\"\ncache = { inputs = [\"package.json\"], outputs = [\"dist/**\"] }\n",
        );
    }
    f.write(".gitignore", "dist/\n.vx/\nnode_modules/\n");
    use_lockfile(&f, pm, lockfile, "before");
    f.commit();
    f
}

fn use_lockfile(f: &Fixture, pm: &str, lockfile: &str, state: &str) {
    let text = std::fs::read_to_string(fixtures(pm).join(format!("{state}.{lockfile}"))).unwrap();
    f.write(lockfile, &text);
}

/// `vx run build --all --dry=json`: each task's predicted cache status, by id.
fn predicted(f: &Fixture) -> BTreeMap<String, String> {
    let out = f.vx(&["run", "build", "--all", "--dry=json"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let id = t["id"].as_str().unwrap().to_string();
            (id, t["cache"].as_str().unwrap_or("").to_string())
        })
        .collect()
}

fn run_all(f: &Fixture) -> String {
    let out = f.vx(&["run", "build", "--all"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    format!("{}{}", out.stdout, out.stderr)
}

#[test]
fn a_bump_reruns_only_the_projects_that_install_it_for_every_package_manager() {
    for (pm, lockfile) in MANAGERS {
        let f = workspace(pm, lockfile);
        let first = run_all(&f);
        assert_contains(&first, "cache      3 miss");
        assert!(!first.contains("folds the whole file"), "{pm}: {first}");
        use_lockfile(&f, pm, lockfile, "after");
        let cache = predicted(&f);
        assert_eq!(cache["@demo/c#build"], "hit-local", "{pm}: {cache:?}");
        for moved in ["@demo/a#build", "@demo/b#build"] {
            assert_eq!(cache[moved], "miss", "{pm} {moved}: {cache:?}");
        }
        let second = run_all(&f);
        assert_contains(&second, "2 miss");
        for id in ["@demo/a#build", "@demo/b#build"] {
            let why = f.vx(&["why", id]);
            assert_eq!(why.code, 0, "{}", why.stderr);
            assert_contains(&why.stdout, "changed  dependency ms");
            assert_contains(&why.stdout, "2.1.1 → 2.1.3");
            assert_contains(&why.stdout, &format!("changed  workspace {lockfile}"));
        }
        let why = f.vx(&["why", "@demo/c#build"]);
        assert_contains(&why.stdout, "same key, served from cache");
    }
}

#[test]
fn affected_seeds_the_projects_whose_dependencies_moved() {
    for (pm, lockfile) in [MANAGERS[0], MANAGERS[2], MANAGERS[4]] {
        let f = workspace(pm, lockfile);
        use_lockfile(&f, pm, lockfile, "after");
        let out = f.vx(&["run", "build", "--affected=HEAD", "--dry=json"]);
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        let ids: Vec<&str> = doc["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["@demo/a#build", "@demo/b#build"], "{pm}");
        assert_eq!(doc["tasks"][0]["affected"]["path"], lockfile.to_string());
        // A change to the lockfile that moves no project's set seeds nothing.
        use_lockfile(&f, pm, lockfile, "before");
        let text = f.read(lockfile);
        f.write(lockfile, &format!("{text}\n"));
        let out = f.vx(&["run", "build", "--affected=HEAD"]);
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        assert_contains(&out.stderr, "vx: no project changed since HEAD");
    }
}

#[test]
fn an_unreadable_lockfile_is_folded_whole_with_one_notice() {
    let f = workspace("pnpm", "pnpm-lock.yaml");
    f.write("pnpm-lock.yaml", "lockfileVersion: '5.4'\n");
    f.commit();
    let out = run_all(&f);
    let notice = "vx: pnpm-lock.yaml: lockfileVersion 5.4 is not one vx reads (6 and 9, pnpm 8 to 10); every task folds the whole file";
    // One line that is exactly the notice: `vx: ` once.
    assert_eq!(out.lines().filter(|l| *l == notice).count(), 1, "{out}");
    assert!(!out.contains("vx: vx:"), "{out}");
    // Any change to it then moves every key, and seeds every task under --affected.
    f.write("pnpm-lock.yaml", "lockfileVersion: '5.4'\n# edited\n");
    let cache = predicted(&f);
    assert!(cache.values().all(|c| c == "miss"), "{cache:?}");
    let out = f.vx(&["run", "build", "--affected=HEAD", "--dry=json"]);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["tasks"].as_array().unwrap().len(), 3, "{}", out.stdout);

    // bun's binary lockfile is never read per project.
    let f = workspace("bun", "bun.lock");
    std::fs::remove_file(f.path("bun.lock")).unwrap();
    std::fs::write(f.path("bun.lockb"), b"\xfe\xed binary").unwrap();
    let out = run_all(&f);
    let notice =
        "vx: bun.lockb: a binary lockfile, which vx does not read; every task folds the whole file";
    assert!(out.lines().any(|l| l == notice), "{out}");
}

#[test]
fn the_digests_are_remembered_beside_the_index_and_a_bad_memo_is_ignored() {
    let f = workspace("pnpm", "pnpm-lock.yaml");
    run_all(&f);
    let memos: Vec<PathBuf> = std::fs::read_dir(f.path(".vx/lockfiles"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(memos.len(), 1, "{memos:?}");
    // A damaged memo costs a parse, never a wrong key: everything still hits.
    std::fs::write(&memos[0], "{ not json").unwrap();
    assert_contains(&run_all(&f), "cache      3 up-to-date");
    let memo = std::fs::read_to_string(&memos[0]).unwrap();
    assert!(
        serde_json::from_str::<serde_json::Value>(&memo).is_ok(),
        "{memo}"
    );
    // A memo that lies about a project's digest is the one risk: the memo is named by the
    // lockfile's blob id, so a new lockfile never reads an old memo, and the old one goes.
    use_lockfile(&f, "pnpm", "pnpm-lock.yaml", "after");
    run_all(&f);
    let after: Vec<PathBuf> = std::fs::read_dir(f.path(".vx/lockfiles"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(after.len(), 1, "{after:?}");
    assert_ne!(after, memos);
}

/// The first key computes only its own project's digest (not every member's, which took 150
/// ms before the first task at 5,000 members); the memo written at the end of the run still
/// holds every project the lockfile lists, so a run of one project leaves one for all.
#[test]
fn a_run_of_one_project_leaves_a_memo_of_every_project() {
    let f = workspace("pnpm", "pnpm-lock.yaml");
    let out = f.vx(&["run", "@demo/c#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let memos: Vec<PathBuf> = std::fs::read_dir(f.path(".vx/lockfiles"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(memos.len(), 1, "{memos:?}");
    let memo: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&memos[0]).unwrap()).unwrap();
    let sets: Vec<&String> = memo["sets"].as_object().unwrap().keys().collect();
    for p in PROJECTS {
        let dir = format!("packages/{p}");
        assert!(sets.contains(&&dir), "{dir} missing from the memo: {memo}");
    }
    // The others, keyed from the memo, get the digests a parse gives: a bump moves a and b.
    run_all(&f);
    use_lockfile(&f, "pnpm", "pnpm-lock.yaml", "after");
    assert_contains(&run_all(&f), "2 miss");
}

/// yarn 1 keeps members' dependencies in their manifests, so the memo of `yarn.lock`'s
/// digests is named by those manifests too: dropping `ms` from `@demo/a` (the lockfile left
/// as it is) moves `@demo/b`, which links `@demo/a`, although `@demo/b` changed nothing.
#[test]
fn a_yarn_1_memo_is_not_reused_after_a_member_manifest_changes() {
    let f = workspace("yarn1", "yarn.lock");
    run_all(&f);
    let manifest = f.read("packages/a/package.json");
    let dropped = manifest.replace("\"ms\": \"^2.1.1\"", "");
    assert_ne!(dropped, manifest);
    f.write("packages/a/package.json", &dropped);
    let out = run_all(&f);
    assert_contains(&out, "2 miss");
    let why = f.vx(&["why", "@demo/b#build"]);
    assert_contains(&why.stdout, "removed  dependency ms");
}
