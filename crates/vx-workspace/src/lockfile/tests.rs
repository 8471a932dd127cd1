//! Each reader on the real lockfiles of `crates/vx/tests/fixtures/lockfiles` (written by
//! `scripts/lockfile-fixtures` with the package managers themselves): the same three-member
//! workspace, before and after one dependency of `packages/a` moved.

use std::path::PathBuf;

use super::graph::{join_dir, split_ident};
use super::*;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../vx/tests/fixtures/lockfiles")
}

const MEMBERS: [&str; 4] = ["", "packages/a", "packages/b", "packages/c"];

fn load(pm: &str, file: &str, state: &str) -> Lockfile {
    let dir = fixtures().join(pm);
    let bytes = std::fs::read(dir.join(format!("{state}.{file}"))).unwrap();
    let manifest = |rel: &str| std::fs::read_to_string(dir.join(rel).join("package.json")).ok();
    read(file, &bytes, &MEMBERS, &manifest).unwrap_or_else(|e| panic!("{pm}: {e}"))
}

fn idents(lock: &Lockfile, dir: &str) -> Vec<String> {
    lock.project(dir)
        .packages
        .iter()
        .map(|(n, v)| format!("{n}@{v}"))
        .collect()
}

const ALL: [(&str, &str); 5] = [
    ("pnpm", "pnpm-lock.yaml"),
    ("npm", "package-lock.json"),
    ("yarn1", "yarn.lock"),
    ("yarn4", "yarn.lock"),
    ("bun", "bun.lock"),
];

#[test]
fn every_format_gives_each_member_its_own_closure_and_the_roots() {
    for (pm, file) in ALL {
        let lock = load(pm, file, "before");
        assert_eq!(idents(&lock, ""), ["left-pad@1.3.0"], "{pm} root");
        // a's own dependencies, development ones included, and the root's.
        assert_eq!(
            idents(&lock, "packages/a"),
            ["kind-of@6.0.3", "left-pad@1.3.0", "ms@2.1.1"],
            "{pm} a"
        );
        // b links a: a's runtime dependency comes along, its development one does not.
        assert_eq!(
            idents(&lock, "packages/b"),
            ["is-number@7.0.0", "left-pad@1.3.0", "ms@2.1.1"],
            "{pm} b"
        );
        // c's dependency's own dependency, transitively.
        assert_eq!(
            idents(&lock, "packages/c"),
            ["is-number@6.0.0", "is-odd@3.0.1", "left-pad@1.3.0"],
            "{pm} c"
        );
        // A directory the lockfile does not list folds the root's set.
        assert_eq!(
            idents(&lock, "tools/x"),
            ["left-pad@1.3.0"],
            "{pm} unlisted"
        );
    }
}

#[test]
fn a_bump_moves_only_the_sets_that_reach_it() {
    for (pm, file) in ALL {
        let before = load(pm, file, "before");
        let after = load(pm, file, "after");
        let moved = |dir: &str| before.project(dir).digest != after.project(dir).digest;
        assert!(moved("packages/a") && moved("packages/b"), "{pm}");
        assert!(!moved("") && !moved("packages/c"), "{pm}");
        assert!(
            idents(&after, "packages/a").contains(&"ms@2.1.3".to_string()),
            "{pm}"
        );
    }
}

#[test]
fn unreadable_files_are_errors_that_say_why() {
    let none = |_: &str| None;
    let err = |file: &str, text: &str| {
        read(file, text.as_bytes(), &[""], &none)
            .unwrap_err()
            .to_string()
    };
    assert!(err("pnpm-lock.yaml", "lockfileVersion: 5.4\n").contains("lockfileVersion 5.4"));
    assert!(err("package-lock.json", r#"{"lockfileVersion": 1}"#).contains("lockfileVersion 1"));
    assert!(err("bun.lock", "{\"lockfileVersion\": 9}").contains("lockfileVersion 9"));
    assert!(!err("bun.lock", "{").is_empty());
    assert!(!err("pnpm-lock.yaml", "importers: [").is_empty());
    assert!(err("yarn.lock", "what is this\n").contains("line 1"));
    assert_eq!(err(".npmrc", ""), "not a lockfile");
    let binary = read("bun.lockb", b"\0\x01", &[""], &none).unwrap_err();
    assert_eq!(binary, LockfileError::Binary);
    assert_eq!(
        binary.to_string(),
        "a binary lockfile, which vx does not read"
    );
    assert_eq!(
        read("yarn.lock", b"\xff", &[""], &none).unwrap_err(),
        LockfileError::NotUtf8
    );
}

#[test]
fn pnpm_aliases_peers_and_links_resolve() {
    let text = "lockfileVersion: '9.0'
importers:
  .:
    dependencies:
      string-width-cjs:
        specifier: npm:string-width@^4.2.0
        version: string-width@4.2.3
      react-dom:
        specifier: ^18
        version: 18.2.0(react@18.2.0)
  tools/x:
    dependencies:
      root:
        specifier: link:..
        version: link:..
packages:
  string-width@4.2.3: {}
  react-dom@18.2.0: {}
  react@18.2.0: {}
snapshots:
  string-width@4.2.3: {}
  react-dom@18.2.0(react@18.2.0):
    dependencies:
      react: 18.2.0
  react@18.2.0: {}
";
    let lock = read("pnpm-lock.yaml", text.as_bytes(), &[""], &|_| None).unwrap();
    assert_eq!(
        idents(&lock, ""),
        [
            "react@18.2.0",
            "react-dom@18.2.0(react@18.2.0)",
            "string-width@4.2.3"
        ]
    );
    assert_eq!(idents(&lock, "tools/x"), idents(&lock, ""));
}

#[test]
fn join_dir_stays_inside_the_root() {
    assert_eq!(
        join_dir("packages/b", "../a").as_deref(),
        Some("packages/a")
    );
    assert_eq!(join_dir("packages/b", "../..").as_deref(), Some(""));
    assert_eq!(join_dir("packages/b", "../../.."), None);
    assert_eq!(split_ident("@s/n@1.0.0"), Some(("@s/n", "1.0.0")));
}

/// A member's set is computed when a key first asks for it, once: an executed task in a
/// workspace of thousands of members walks its own project's closure, not every member's.
#[test]
fn a_members_set_is_computed_when_first_asked_for_and_kept() {
    for (pm, file) in ALL {
        let lock = load(pm, file, "before");
        let computed = || lock.sets.lock().unwrap().len();
        assert_eq!(computed(), 0, "{pm}: no member's set computed on reading");
        assert_eq!(
            lock.importers(),
            ["", "packages/a", "packages/b", "packages/c"],
            "{pm}"
        );
        let first = lock.project("packages/b");
        assert_eq!(computed(), 1, "{pm}");
        assert!(Arc::ptr_eq(&first, &lock.project("packages/b")), "{pm}");
        // The root's set and an unlisted project's are the one computed on reading.
        assert!(Arc::ptr_eq(&lock.project(""), &lock.unlisted()), "{pm}");
        assert!(
            Arc::ptr_eq(&lock.project("packages/z"), &lock.unlisted()),
            "{pm}"
        );
        assert_eq!(computed(), 1, "{pm}");
    }
}
