//! npm's `dev`, `optional`, `devOptional` and `peer` flags of a `package-lock.json`'s entries,
//! computed as npm computes them: every entry starts with all four set, the root and the
//! workspace members (and their links in the root's `node_modules`) with none, and each edge
//! unsets in its target what neither its source nor its kind keeps (a `devDependencies` edge
//! keeps `dev`, an optional one `optional`, a peer one `peer`; `devOptional` is kept by
//! either of the first two), until nothing changes.
//!
//! A pruned lockfile needs them again: a package that only a project left out needed in
//! production is a development one now. They are rewritten only when the same computation gives
//! the whole lockfile's flags exactly as npm wrote them; otherwise the entries keep theirs.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::lockfile::npm::install_path;

const FLAGS: [&str; 4] = ["dev", "optional", "devOptional", "peer"];

/// The keys npm writes before the flags in an entry; the flags follow the last present.
const BEFORE: [&str; 5] = ["name", "version", "resolved", "integrity", "link"];

/// The flags npm writes for each entry (`devOptional` only when neither of the first two).
fn compute(entries: &Map<String, Value>) -> HashMap<&str, [bool; 4]> {
    let is_member = |p: &str| !p.contains("node_modules/");
    let globs = workspaces(entries.get(""));
    let is_root = |p: &str| p.is_empty() || (is_member(p) && globs.is_match(p));
    let mut flags: HashMap<&str, [bool; 4]> =
        entries.keys().map(|p| (p.as_str(), [true; 4])).collect();
    let mut queue: Vec<&str> = Vec::new();
    for (path, entry) in entries {
        let target = entry.get("resolved").and_then(Value::as_str).unwrap_or("");
        let link_to_root = entry.get("link").and_then(Value::as_bool) == Some(true)
            && path.starts_with("node_modules/")
            && path.matches("node_modules/").count() == 1
            && is_root(target);
        if is_root(path) || link_to_root {
            flags.insert(path, [false; 4]);
            queue.push(path);
        }
    }
    let unset =
        |flags: &mut HashMap<&str, [bool; 4]>, to: &str, from: [bool; 4], kind: [bool; 3]| {
            let [dev, optional, peer] = kind;
            let unset_dev_optional = !from[2] && !dev && !optional;
            let wanted = [
                unset_dev_optional || (!from[0] && !dev),
                unset_dev_optional || (!from[1] && !optional),
                unset_dev_optional,
                !from[3] && !peer,
            ];
            let Some(target) = flags.get_mut(to) else {
                return false;
            };
            let mut changed = false;
            for (flag, unset) in target.iter_mut().zip(wanted) {
                if unset && *flag {
                    *flag = false;
                    changed = true;
                }
            }
            changed
        };
    while let Some(path) = queue.pop() {
        let entry = &entries[path];
        let from = flags[path];
        if entry.get("link").and_then(Value::as_bool) == Some(true) {
            let target = entry.get("resolved").and_then(Value::as_str).unwrap_or("");
            if let Some((key, _)) = entries.get_key_value(target) {
                if unset(&mut flags, key, from, [false; 3]) {
                    queue.push(key);
                }
            }
            continue;
        }
        for (name, kind) in edges(entry, is_member(path)) {
            let Some(found) = install_path(&|p| entries.contains_key(p), path, name) else {
                continue;
            };
            let (key, _) = entries.get_key_value(&found).expect("found in the entries");
            if unset(&mut flags, key, from, kind) {
                queue.push(key);
            }
        }
    }
    flags
        .into_iter()
        .map(|(p, f)| (p, [f[0], f[1], f[2] && !f[0] && !f[1], f[3]]))
        .collect()
}

/// An entry's edges by name with their kind (dev, optional, peer): `dependencies`, then
/// `optionalDependencies` over them, `peerDependencies` where neither names the package, and a
/// member's `devDependencies` last.
fn edges(entry: &Value, member: bool) -> Vec<(&str, [bool; 3])> {
    let names = |list: &str| -> Vec<&str> {
        entry
            .get(list)
            .and_then(Value::as_object)
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default()
    };
    fn set<'a>(out: &mut Vec<(&'a str, [bool; 3])>, name: &'a str, kind: [bool; 3], replace: bool) {
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some(edge) if replace => edge.1 = kind,
            Some(_) => {}
            None => out.push((name, kind)),
        }
    }
    let mut out: Vec<(&str, [bool; 3])> = Vec::new();
    for name in names("dependencies") {
        set(&mut out, name, [false, false, false], true);
    }
    for name in names("optionalDependencies") {
        set(&mut out, name, [false, true, false], true);
    }
    for name in names("peerDependencies") {
        let optional = entry
            .get("peerDependenciesMeta")
            .and_then(|m| m.get(name))
            .and_then(|m| m.get("optional"))
            .and_then(Value::as_bool)
            == Some(true);
        set(&mut out, name, [false, optional, true], false);
    }
    if member {
        for name in names("devDependencies") {
            set(&mut out, name, [true, false, false], false);
        }
    }
    out
}

/// The root entry's `workspaces` globs.
fn workspaces(root: Option<&Value>) -> globset::GlobSet {
    let list = root.and_then(|r| r.get("workspaces"));
    let list = list
        .and_then(|w| w.get("packages"))
        .or(list)
        .and_then(Value::as_array);
    let mut builder = globset::GlobSetBuilder::new();
    for glob in list.into_iter().flatten().filter_map(Value::as_str) {
        let glob = glob.trim_start_matches("./").trim_end_matches('/');
        if let Ok(glob) = globset::GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
        {
            builder.add(glob);
        }
    }
    builder
        .build()
        .unwrap_or_else(|_| globset::GlobSet::empty())
}

/// Whether the computation gives every entry of `entries` the flags it carries (extraneous
/// entries carry none and are not judged).
pub(super) fn reproduces(entries: &Map<String, Value>) -> bool {
    let flags = compute(entries);
    entries.iter().all(|(path, entry)| {
        entry.get("extraneous").is_some() || flags.get(path.as_str()) == Some(&written(entry))
    })
}

/// Rewrites each entry's flags to what npm computes for `entries`.
pub(super) fn rewrite(entries: &mut Map<String, Value>) {
    let flags: HashMap<String, [bool; 4]> = compute(entries)
        .into_iter()
        .map(|(p, f)| (p.to_string(), f))
        .collect();
    for (path, entry) in entries.iter_mut() {
        if let (Some(now), Value::Object(map)) = (flags.get(path), entry) {
            place(map, *now);
        }
    }
}

/// The flags an entry carries now.
pub(super) fn written(entry: &Value) -> [bool; 4] {
    FLAGS.map(|flag| entry.get(flag).and_then(Value::as_bool) == Some(true))
}

/// Gives the entry `map` the flags `now`, where npm writes them (after its name, version,
/// resolved, integrity and link); an extraneous entry, or one that has them, is left as it is.
pub(super) fn place(map: &mut Map<String, Value>, now: [bool; 4]) {
    if map.contains_key("extraneous")
        || FLAGS.map(|f| map.get(f) == Some(&Value::Bool(true))) == now
    {
        return;
    }
    let old = std::mem::take(map);
    let anchor = old
        .keys()
        .filter(|k| !FLAGS.contains(&k.as_str()))
        .collect::<Vec<_>>()
        .iter()
        .rposition(|k| BEFORE.contains(&k.as_str()))
        .map_or(0, |i| i + 1);
    let rest = old
        .into_iter()
        .filter(|(k, _)| !FLAGS.contains(&k.as_str()));
    for (i, (key, value)) in rest.enumerate() {
        if i == anchor {
            insert_flags(map, now);
        }
        map.insert(key, value);
    }
    // The flags go last when nothing follows the anchor.
    insert_flags(map, now);
}

fn insert_flags(map: &mut Map<String, Value>, flags: [bool; 4]) {
    for (flag, set) in FLAGS.iter().zip(flags) {
        if set && !map.contains_key(*flag) {
            map.insert((*flag).to_string(), Value::Bool(true));
        }
    }
}
