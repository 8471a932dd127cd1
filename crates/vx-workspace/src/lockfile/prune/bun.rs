//! `bun.lock` (see `lockfile::bun` for the format): `workspaces` blocks by directory, and
//! `packages` entries one per line, by install path (names joined by `/`, under a member's
//! package name for one installed in that member).

use std::collections::{BTreeMap, BTreeSet};

use super::model::{Counts, Keep, Pruned};
use super::text;
use crate::json::{self, Json, JsonEntry, JsonKind};

const LISTS: [&str; 4] = [
    "dependencies",
    "optionalDependencies",
    "peerDependencies",
    "devDependencies",
];

pub(super) fn prune(source: &str, keep: &Keep) -> Result<Pruned, String> {
    let lock = json::parse_jsonc(source).map_err(|e| e.message)?;
    let workspaces = entries(&lock, "workspaces");
    let packages = entries(&lock, "packages");
    let by_path: BTreeMap<&str, &Json> = packages
        .iter()
        .map(|e| (e.key.as_str(), &e.value))
        .collect();
    let ident = |value: &Json| -> String {
        match &value.kind {
            JsonKind::Array(items) => items.first().and_then(Json::as_str).unwrap_or(""),
            _ => "",
        }
        .to_string()
    };
    let member_dir = |value: &Json| -> Option<String> {
        let ident = ident(value);
        let name = text::name_of(&ident);
        ident
            .get(name.len() + 1..)?
            .strip_prefix("workspace:")
            .map(str::to_string)
    };
    let mut reached: BTreeSet<String> = BTreeSet::new();
    let mut needed: BTreeSet<String> = BTreeSet::new();
    let mut stack: Vec<String> = Vec::new();
    let mut members = Counts::default();
    for workspace in workspaces {
        members.total += 1;
        let dir = workspace.key.as_str();
        if !keep.keeps(dir) {
            continue;
        }
        members.kept += 1;
        let name = workspace
            .value
            .entry("name")
            .and_then(|e| e.value.as_str())
            .unwrap_or("");
        let from: Vec<&str> = if dir.is_empty() {
            Vec::new()
        } else {
            vec![name]
        };
        for list in LISTS {
            for dep in names(&workspace.value, list) {
                if list == "devDependencies" && keep.dropped(dir, dep) {
                    continue;
                }
                stack.extend(find(&by_path, &from, dep));
            }
        }
    }
    for entry in packages {
        if member_dir(&entry.value).is_some_and(|dir| keep.keeps(&dir)) {
            stack.push(entry.key.clone());
        }
    }
    while let Some(path) = stack.pop() {
        if !reached.insert(path.clone()) {
            continue;
        }
        let value = by_path[path.as_str()];
        if let Some(dir) = member_dir(value) {
            if !keep.keeps(&dir) {
                needed.insert(dir);
            }
            continue;
        }
        let info = match &value.kind {
            JsonKind::Array(items) => items.iter().find(|i| matches!(i.kind, JsonKind::Object(_))),
            _ => None,
        };
        let Some(info) = info else { continue };
        let from = text::package_names(&path);
        for list in &LISTS[..3] {
            for dep in names(info, list) {
                stack.extend(find(&by_path, &from, dep));
            }
        }
    }
    let lines = text::lines(source);
    let line_of = |offset: usize| source[..offset].matches('\n').count();
    let mut removed = vec![false; lines.len()];
    for workspace in workspaces {
        let dir = workspace.key.as_str();
        let start = line_of(workspace.key_offset);
        let end = (start..lines.len())
            .find(|&i| text::indent(lines[i]) == 4 && text::body(lines[i]).trim().starts_with('}'))
            .map_or(start + 1, |i| i + 1);
        if !keep.keeps(dir) {
            text::mark(&mut removed, start, end);
        } else if let Some(drop) = keep.drop_dev.get(dir) {
            drop_dev(&mut removed, &lines, start, end, drop);
        }
    }
    let mut kept_packages = 0;
    for entry in packages {
        let line = line_of(entry.key_offset);
        if reached.contains(&entry.key) {
            if member_dir(&entry.value).is_none() {
                kept_packages += 1;
            }
            continue;
        }
        if !text::body(lines[line]).trim_end().ends_with(',') {
            return Err(format!(
                "line {}: a package entry over several lines, which bun does not write",
                line + 1
            ));
        }
        removed[line] = true;
        // The blank line between entries: the one before, or after the first entry.
        if line > 0 && text::is_blank(lines[line - 1]) && !removed[line - 1] {
            removed[line - 1] = true;
        } else if line + 1 < lines.len() && text::is_blank(lines[line + 1]) {
            removed[line + 1] = true;
        }
    }
    let total = packages
        .iter()
        .filter(|e| member_dir(&e.value).is_none())
        .count();
    Ok(Pruned {
        text: text::join(&lines, &removed),
        members,
        packages: Counts {
            kept: kept_packages,
            total,
        },
        needed,
    })
}

fn entries<'a>(lock: &'a Json, key: &str) -> &'a [JsonEntry] {
    match lock.entry(key).map(|e| &e.value.kind) {
        Some(JsonKind::Object(entries)) => entries,
        _ => &[],
    }
}

fn names<'a>(value: &'a Json, list: &str) -> impl Iterator<Item = &'a str> {
    let entries: &[JsonEntry] = match value.entry(list).map(|e| &e.value.kind) {
        Some(JsonKind::Object(entries)) => entries,
        _ => &[],
    };
    entries.iter().map(|e| e.key.as_str())
}

/// Where dependency `name` of the package at `from` is installed: `from/name`, else under
/// each parent, else at the top.
fn find(by_path: &BTreeMap<&str, &Json>, from: &[&str], name: &str) -> Option<String> {
    (0..=from.len()).rev().find_map(|depth| {
        let mut path = from[..depth].join("/");
        if !path.is_empty() {
            path.push('/');
        }
        path.push_str(name);
        by_path.contains_key(path.as_str()).then_some(path)
    })
}

/// Removes `--production`'s development dependencies from a workspace block.
fn drop_dev(
    removed: &mut [bool],
    lines: &[&str],
    start: usize,
    end: usize,
    drop: &BTreeSet<String>,
) {
    let Some(header) = (start..end).find(|&i| {
        text::indent(lines[i]) == 6 && text::body(lines[i]).trim() == "\"devDependencies\": {"
    }) else {
        return;
    };
    let close = (header + 1..end)
        .find(|&i| text::indent(lines[i]) == 6)
        .unwrap_or(end);
    let mut left = close - header - 1;
    for i in header + 1..close {
        let key = text::body(lines[i]).trim().split('"').nth(1).unwrap_or("");
        if drop.contains(key) {
            removed[i] = true;
            left -= 1;
        }
    }
    if left == 0 {
        text::mark(removed, header, close.min(end - 1) + 1);
    }
}
