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

/// None of `names` is left in the pruned text.
fn gone(file: &str, pruned: &Pruned, names: &[&str]) {
    for name in names {
        assert!(
            !pruned.text.contains(name),
            "{file} kept {name}:\n{}",
            pruned.text
        );
    }
}

const FILES: [(&str, &str); 6] = [
    ("pnpm-lock.yaml", include_str!("fixtures/pnpm-lock.yaml")),
    (
        "package-lock.json",
        include_str!("fixtures/package-lock.json"),
    ),
    // Lockfile 2 (npm 7 and 8): `packages` and npm 6's nested `dependencies` tree both.
    (
        "package-lock.json",
        include_str!("fixtures/package-lock-v2.json"),
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
        gone(file, &pruned, &["packages/other", "@ws/other"]);
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
        gone(file, &pruned, &["@ws/tools", "packages/tools"]);
    }
}

#[test]
fn names_of_every_kind() {
    use super::text::{name_of, package_names};
    assert_eq!(name_of("ext-a@1.0.0"), "ext-a");
    assert_eq!(name_of("@ws/app@workspace:packages/app"), "@ws/app");
    assert_eq!(name_of("é-app@npm:1.0.0"), "é-app");
    assert_eq!(name_of("plain"), "plain");
    assert_eq!(
        package_names("@ws/other/ext-b/ext-c"),
        ["@ws/other", "ext-b", "ext-c"]
    );
    assert_eq!(package_names("**/ext-c"), ["**", "ext-c"]);
}

#[test]
fn yarn_classic_entries_stay_in_the_order_of_their_first_descriptor() {
    // Yarn 1 sorts by an entry's first descriptor: `>=2.0.0` before `>=2.0.0 <2.3.0`, though
    // the whole keys compare the other way (", " sorts after " ").
    let lock = "# yarn lockfile v1\n\n\n\
                ext-b@>=2.0.0, ext-b@^2.1.0:\n  version \"2.1.0\"\n\n\
                \"ext-b@>=2.0.0 <2.3.0\":\n  version \"2.2.0\"\n";
    let dirs: BTreeSet<String> = ["packages/app".to_string()].into();
    let manifest = |dir: &str| -> Option<String> {
        Some(
            match dir {
                "" => r#"{"dependencies":{"ext-b":">=2.0.0"}}"#,
                _ => r#"{"dependencies":{"ext-b":"^2.1.0","x":"*"},"devDependencies":{"ext-b":">=2.0.0 <2.3.0"}}"#,
            }
            .to_string(),
        )
    };
    let keep = Keep {
        dirs: &dirs,
        drop_dev: &BTreeMap::new(),
        manifest: &manifest,
        members: &BTreeMap::new(),
    };
    let pruned = prune("yarn.lock", lock, &keep).expect("pruned");
    assert_eq!(pruned.text, lock);
}

#[test]
fn a_crlf_lockfile_stays_crlf() {
    let (file, text) = FILES[0];
    let crlf = text.replace('\n', "\r\n");
    let pruned = run(file, &crlf, &["packages/other"], &[]);
    assert!(
        !pruned.text.replace("\r\n", "").contains('\n'),
        "{:?}",
        pruned.text
    );
    assert_eq!(
        pruned.text.replace("\r\n", "\n"),
        run(file, text, &["packages/other"], &[]).text
    );
}

#[test]
fn npm_flags_are_reproduced_from_the_whole_lockfile() {
    // The check that allows rewriting them: the computation gives npm's own flags.
    let lock: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/package-lock.json")).unwrap();
    let entries = lock["packages"].as_object().unwrap();
    assert!(super::npm_flags::reproduces(entries));
    // A flag npm did not write is noticed.
    let mut changed = entries.clone();
    changed["node_modules/ext-d"]
        .as_object_mut()
        .unwrap()
        .remove("dev");
    assert!(!super::npm_flags::reproduces(&changed));
}

#[test]
fn npm_lockfile_2_prunes_its_legacy_tree_with_its_packages() {
    // Checked against npm: `npm install --package-lock-only --lockfile-version 2` in the pruned
    // output (for other, and for app with --production) writes these files byte for byte.
    let (file, text) = FILES[2];
    let pruned = run(file, text, &["packages/other"], &[]);
    let lock: serde_json::Value = serde_json::from_str(&pruned.text).unwrap();
    let legacy: Vec<&String> = lock["dependencies"].as_object().unwrap().keys().collect();
    // other's link (with ext-b@1 nested under it) and the hoisted packages it reaches; app's,
    // lib's and tools' links, ext-a and the hoisted ext-b@2 are gone.
    assert_eq!(legacy, ["@ws/other", "ext-c", "ext-d"], "{}", pruned.text);
}

#[test]
fn npm_lockfile_2_production_leaves_no_requirement_of_a_dropped_member() {
    let (file, text) = FILES[2];
    let pruned = run(
        file,
        text,
        &["packages/app", "packages/lib"],
        &[("packages/lib", "@ws/tools")],
    );
    let lock: serde_json::Value = serde_json::from_str(&pruned.text).unwrap();
    assert_eq!(
        lock["dependencies"]["@ws/lib"]["requires"],
        serde_json::json!({"ext-b": "^2.0.0"})
    );
}
