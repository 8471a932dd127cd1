//! `package-lock.json` and `npm-shrinkwrap.json`, lockfile versions 2 and 3 (see
//! `lockfile::npm` for the format). The file is rewritten as npm writes it: the same
//! indentation and line endings, keys in their order.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::model::{Counts, Keep, Pruned};
use crate::lockfile::npm::install_path;

const LISTS: [&str; 3] = ["dependencies", "optionalDependencies", "peerDependencies"];

pub(super) fn prune(source: &str, keep: &Keep) -> Result<Pruned, String> {
    let mut lock: Value = serde_json::from_str(source).map_err(|e| e.to_string())?;
    let version = lock
        .get("lockfileVersion")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if version < 2 {
        return Err(format!(
            "lockfileVersion {version} is not one vx prunes (2 and 3, npm 7 and later)"
        ));
    }
    let empty = Map::new();
    let entries = lock
        .get("packages")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let is_member = |path: &str| !path.contains("node_modules/");
    let mut reached: BTreeSet<String> = BTreeSet::new();
    let mut needed: BTreeSet<String> = BTreeSet::new();
    let mut stack: Vec<String> = entries
        .keys()
        .filter(|path| is_member(path) && keep.keeps(path))
        .cloned()
        .collect();
    // npm links every member into the root's node_modules, used or not.
    for (path, entry) in entries {
        let target = entry.get("resolved").and_then(Value::as_str).unwrap_or("");
        if entry.get("link").and_then(Value::as_bool) == Some(true) && keep.keeps(target) {
            stack.push(path.clone());
        }
    }
    while let Some(path) = stack.pop() {
        if !reached.insert(path.clone()) {
            continue;
        }
        let entry = &entries[&path];
        let member = is_member(&path);
        let lists = LISTS.iter().chain(member.then_some(&"devDependencies"));
        for list in lists {
            let names = entry.get(*list).and_then(Value::as_object).into_iter();
            for name in names.flat_map(|m| m.keys()) {
                if *list == "devDependencies" && keep.dropped(&path, name) {
                    continue;
                }
                if let Some(found) = install_path(&|p| entries.contains_key(p), &path, name) {
                    let link = &entries[&found];
                    if link.get("link").and_then(Value::as_bool) == Some(true) {
                        let target = link.get("resolved").and_then(Value::as_str).unwrap_or("");
                        if !keep.keeps(target) {
                            needed.insert(target.to_string());
                        }
                    }
                    stack.push(found);
                }
            }
        }
    }
    let members = Counts {
        kept: entries
            .keys()
            .filter(|p| is_member(p) && reached.contains(*p))
            .count(),
        total: entries.keys().filter(|p| is_member(p)).count(),
    };
    let packages = Counts {
        kept: reached.iter().filter(|p| !is_member(p)).count(),
        total: entries.keys().filter(|p| !is_member(p)).count(),
    };
    // npm's flags are computed again for what is kept, when the computation gives the whole
    // file's exactly as npm wrote them.
    let flags_hold = super::npm_flags::reproduces(entries);
    if let Some(Value::Object(entries)) = lock.get_mut("packages") {
        entries.retain(|path, _| reached.contains(path));
        for (path, entry) in entries.iter_mut() {
            if let Some(Value::Object(dev)) = entry.get_mut("devDependencies") {
                dev.retain(|name, _| !keep.dropped(path, name));
            }
        }
        // After `--production`'s removals: they are edges no more.
        if flags_hold {
            super::npm_flags::rewrite(entries);
        }
    }
    // Lockfile 2 also carries npm 6's nested `dependencies` tree, flags and all.
    let pruned_packages = lock.get("packages").and_then(Value::as_object).cloned();
    if let (Some(Value::Object(legacy)), Some(pruned_packages)) =
        (lock.get_mut("dependencies"), pruned_packages)
    {
        let legacy_keep = Legacy {
            reached: &reached,
            keep,
            packages: &pruned_packages,
            flags: flags_hold,
        };
        legacy_keep.prune(legacy, "");
    }
    Ok(Pruned {
        text: write(&lock, source)?,
        members,
        packages,
        needed,
    })
}

/// npm 6's tree, pruned the way `packages` was: an entry named `n` under path `p` stands for
/// `p/node_modules/n`, a member's link (`"version": "file:packages/a"`) for the member.
struct Legacy<'a> {
    reached: &'a BTreeSet<String>,
    keep: &'a Keep<'a>,
    /// `packages` as pruned: an entry's flags follow its install path's.
    packages: &'a Map<String, Value>,
    /// Whether the flags were computed again (else they stay as written).
    flags: bool,
}

impl Legacy<'_> {
    fn prune(&self, tree: &mut Map<String, Value>, at: &str) {
        tree.retain(|name, entry| {
            let link = entry
                .get("version")
                .and_then(Value::as_str)
                .and_then(|v| v.strip_prefix("file:"))
                .map(str::to_string);
            let path = match &link {
                Some(dir) => dir.clone(),
                None if at.is_empty() => format!("node_modules/{name}"),
                None => format!("{at}/node_modules/{name}"),
            };
            let kept = match &link {
                Some(dir) => self.keep.keeps(dir),
                None => self.reached.contains(&path),
            };
            let Value::Object(map) = entry else {
                return kept;
            };
            if !kept {
                return false;
            }
            if let (Some(dir), Some(Value::Object(requires))) = (&link, map.get_mut("requires")) {
                requires.retain(|name, _| !self.keep.dropped(dir, name));
            }
            if self.flags && link.is_none() {
                if let Some(now) = self.packages.get(&path) {
                    super::npm_flags::place(map, super::npm_flags::written(now));
                }
            }
            if let Some(Value::Object(nested)) = map.get_mut("dependencies") {
                self.prune(nested, &path);
            }
            true
        });
    }
}

/// `lock` as npm writes it: JSON with the source's indentation and line endings, and a final
/// line ending.
fn write(lock: &Value, source: &str) -> Result<String, String> {
    let indent: String = source
        .lines()
        .nth(1)
        .map(|l| l.chars().take_while(|c| *c == ' ' || *c == '\t').collect())
        .unwrap_or_else(|| "  ".to_string());
    let mut bytes = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, formatter);
    serde::Serialize::serialize(lock, &mut serializer).map_err(|e| e.to_string())?;
    let mut text = String::from_utf8(bytes).map_err(|e| e.to_string())?;
    text.push('\n');
    if source.contains("\r\n") {
        text = text.replace('\n', "\r\n");
    }
    Ok(text)
}
