//! The pruners on lockfiles the real package managers wrote (`fixtures/`: a workspace of
//! `app` → `lib` → (dev) `tools`, and `other`, installed from a registry on loopback by npm
//! 11, pnpm 12, yarn 1.22, yarn 4 and bun 1.4). Whether the package managers accept what is
//! pruned is checked in `cli/prune/`, with them.

use std::collections::{BTreeMap, BTreeSet};

use super::{prune, Keep, Pruned};

const MEMBERS: [(&str, &str); 4] = [
    ("@ws/app", "packages/app"),
    ("@ws/lib", "packages/lib"),
    ("@ws/other", "packages/other"),
    ("@ws/tools", "packages/tools"),
];

fn manifest(dir: &str) -> Option<String> {
    let text = match dir {
        "" => include_str!("fixtures/root.json"),
        "packages/app" => include_str!("fixtures/app.json"),
        "packages/lib" => include_str!("fixtures/lib.json"),
        "packages/tools" => include_str!("fixtures/tools.json"),
        "packages/other" => include_str!("fixtures/other.json"),
        _ => return None,
    };
    Some(text.to_string())
}

fn run(file: &str, text: &str, kept: &[&str], drop_dev: &[(&str, &str)]) -> Pruned {
    let dirs: BTreeSet<String> = kept.iter().map(|d| d.to_string()).collect();
    let mut dev: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (dir, name) in drop_dev {
        dev.entry(dir.to_string())
            .or_default()
            .insert(name.to_string());
    }
    let members: BTreeMap<String, String> = MEMBERS
        .iter()
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .collect();
    let keep = Keep {
        dirs: &dirs,
        drop_dev: &dev,
        manifest: &|dir: &str| {
            dirs.contains(dir)
                .then(|| manifest(dir))
                .flatten()
                .or_else(|| dir.is_empty().then(|| manifest("")).flatten())
        },
        members: &members,
    };
    prune(file, text, &keep).expect("pruned")
}

const FILES: [(&str, &str); 5] = [
    ("pnpm-lock.yaml", include_str!("fixtures/pnpm-lock.yaml")),
    (
        "package-lock.json",
        include_str!("fixtures/package-lock.json"),
    ),
    ("yarn.lock", include_str!("fixtures/yarn1.lock")),
    ("yarn.lock", include_str!("fixtures/berry.lock")),
    ("bun.lock", include_str!("fixtures/bun.lock")),
];

const ALL: [&str; 4] = [
    "packages/app",
    "packages/lib",
    "packages/other",
    "packages/tools",
];

#[test]
fn keeping_every_member_changes_no_byte() {
    for (file, text) in FILES {
        let pruned = run(file, text, &ALL, &[]);
        assert_eq!(pruned.text, text, "{file}");
        assert_eq!(pruned.packages.kept, pruned.packages.total, "{file}");
    }
}

/// Each kept member resolves exactly the packages it resolved before pruning (as vx's own
/// reader sees them).
fn same_sets(file: &str, before: &str, after: &str, kept: &[&str]) {
    let read = |text: &str| {
        let members: Vec<&str> = ALL.to_vec();
        crate::lockfile::read(file, text.as_bytes(), &members, &manifest).expect("read")
    };
    let (before, after) = (read(before), read(after));
    for dir in kept.iter().chain(&[""]) {
        assert_eq!(
            before.project(dir).packages,
            after.project(dir).packages,
            "{file}: {dir}"
        );
    }
}

#[test]
fn app_keeps_its_closure_and_loses_other() {
    let kept = ["packages/app", "packages/lib", "packages/tools"];
    for (file, text) in FILES {
        let pruned = run(file, text, &kept, &[]);
        assert!(
            !pruned.text.contains("packages/other"),
            "{file}:\n{}",
            pruned.text
        );
        assert!(
            !pruned.text.contains("@ws/other"),
            "{file}:\n{}",
            pruned.text
        );
        same_sets(file, text, &pruned.text, &kept);
    }
}

#[test]
fn other_alone_drops_what_only_app_and_lib_reach() {
    for (file, text) in FILES {
        let pruned = run(file, text, &["packages/other"], &[]);
        let t = &pruned.text;
        for gone in [
            "ext-a",
            "ext-b@2.0.0",
            "ext-b@npm:2.0.0",
            "ext-b-2.0.0",
            "@ws/app",
            "@ws/lib",
        ] {
            assert!(!t.contains(gone), "{file} kept {gone}:\n{t}");
        }
        for kept in ["ext-b", "ext-c", "ext-d"] {
            assert!(t.contains(kept), "{file} lost {kept}:\n{t}");
        }
        assert!(pruned.packages.kept < pruned.packages.total, "{file}");
        same_sets(file, text, t, &["packages/other"]);
    }
}

#[test]
fn production_drops_the_dev_link_to_a_member_left_out() {
    for (file, text) in FILES {
        let pruned = run(
            file,
            text,
            &["packages/app", "packages/lib"],
            &[("packages/lib", "@ws/tools")],
        );
        assert!(
            !pruned.text.contains("@ws/tools"),
            "{file}:\n{}",
            pruned.text
        );
        assert!(
            !pruned.text.contains("packages/tools"),
            "{file}:\n{}",
            pruned.text
        );
    }
}
