//! Yarn 1's `yarn.lock` (see `lockfile::yarn` for the format). It does not list the members:
//! what they ask for is read from their manifests, a dependency named after a member being a
//! link to it.

use std::collections::{BTreeMap, BTreeSet};

use super::model::{Counts, Keep, Pruned};
use super::text;
use crate::lockfile::yarn::Manifest;

/// One entry: its header line, the lines after its last, its descriptors as written (quoted
/// or not) and unquoted, and its dependencies' descriptors.
struct Block {
    start: usize,
    end: usize,
    written: Vec<String>,
    descriptors: Vec<String>,
    deps: Vec<String>,
}

pub(super) fn prune(source: &str, keep: &Keep) -> Result<Pruned, String> {
    let lines = text::lines(source);
    let blocks = blocks(&lines)?;
    let by_descriptor: BTreeMap<&str, usize> = blocks
        .iter()
        .enumerate()
        .flat_map(|(i, b)| b.descriptors.iter().map(move |d| (d.as_str(), i)))
        .collect();
    let mut asked: BTreeSet<String> = BTreeSet::new();
    let mut needed: BTreeSet<String> = BTreeSet::new();
    let mut stack: Vec<String> = Vec::new();
    let mut members = Counts::default();
    let dirs: BTreeSet<&str> = keep.dirs.iter().map(String::as_str).chain([""]).collect();
    for dir in &dirs {
        let Some(text) = (keep.manifest)(dir) else {
            continue;
        };
        let manifest: Manifest = serde_json::from_str(&text).unwrap_or_default();
        members.kept += 1;
        let dev = manifest
            .dev_dependencies
            .iter()
            .filter(|(name, _)| !keep.dropped(dir, name));
        for (name, range) in manifest
            .dependencies
            .iter()
            .chain(&manifest.optional_dependencies)
            .chain(dev)
        {
            if !keep.members.contains_key(name) {
                stack.push(format!("{name}@{range}"));
            }
        }
    }
    // The members and the root.
    members.total = (keep.members.len() + 1).max(members.kept);
    let mut kept_blocks: BTreeSet<usize> = BTreeSet::new();
    while let Some(descriptor) = stack.pop() {
        if !asked.insert(descriptor.clone()) {
            continue;
        }
        match by_descriptor.get(descriptor.as_str()) {
            Some(&i) => {
                if kept_blocks.insert(i) {
                    stack.extend(blocks[i].deps.iter().cloned());
                }
            }
            // Not in the lockfile but named after a member: yarn links that member.
            None => {
                let dir = keep.members.get(text::name_of(&descriptor));
                if let Some(dir) = dir.filter(|dir| !keep.keeps(dir)) {
                    needed.insert(dir.clone());
                }
            }
        }
    }
    // A root `resolutions` entry adds its own descriptor (`ext-c@2.0.0`) to the header of the
    // entry it resolves to.
    if let Some(root) = (keep.manifest)("") {
        let value: serde_json::Value = serde_json::from_str(&root).unwrap_or_default();
        let rules = value
            .get("resolutions")
            .and_then(serde_json::Value::as_object);
        for (pattern, to) in rules.into_iter().flatten() {
            let Some(to) = to.as_str() else { continue };
            // `a`, `**/a`, `parent/a`: the last package name, without a range.
            let names = text::package_names(pattern);
            let name = text::name_of(names.last().copied().unwrap_or(pattern));
            asked.insert(format!("{name}@{to}"));
        }
    }
    let removed = vec![false; lines.len()];
    let mut left: Vec<text::Kept> = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        if !kept_blocks.contains(&i) {
            continue;
        }
        let asked_for: Vec<(&str, &str)> = block
            .written
            .iter()
            .zip(&block.descriptors)
            .filter(|(_, d)| asked.contains(*d))
            .map(|(w, d)| (w.as_str(), d.as_str()))
            .collect();
        let line = lines[block.start];
        let ending = &line[text::body(line).len()..];
        let written: Vec<&str> = asked_for.iter().map(|(w, _)| *w).collect();
        let header = (asked_for.len() < block.written.len())
            .then(|| format!("{}:{ending}", written.join(", ")));
        // Yarn 1 sorts an entry by its first (smallest) descriptor, berry by the whole key.
        let key = asked_for.first().map_or("", |(_, d)| *d).to_string();
        left.push(text::Kept {
            start: block.start,
            end: block.end,
            header,
            key,
        });
    }
    let out = match (blocks.first(), blocks.last()) {
        (Some(first), Some(last)) => {
            text::write_entries(&lines, &removed, first.start, last.end, left)
        }
        _ => source.to_string(),
    };
    Ok(Pruned {
        text: out,
        members,
        packages: Counts {
            kept: kept_blocks.len(),
            total: blocks.len(),
        },
        needed,
    })
}

/// The entries: a header of descriptors at column 0 ending in `:`, then indented lines, with
/// `dependencies:` and `optionalDependencies:` blocks of `name "range"` lines.
fn blocks(lines: &[&str]) -> Result<Vec<Block>, String> {
    let mut out: Vec<Block> = Vec::new();
    let mut in_deps = false;
    for (n, line) in lines.iter().enumerate() {
        let body = text::body(line);
        if body.trim().is_empty() || body.starts_with('#') {
            continue;
        }
        let bad = || format!("line {}: `{body}` is not yarn 1 lockfile syntax", n + 1);
        match text::indent(line) {
            0 => {
                let header = body.strip_suffix(':').ok_or_else(bad)?;
                let written: Vec<String> = header.split(", ").map(str::to_string).collect();
                let descriptors = written.iter().map(|w| unquote(w).to_string()).collect();
                out.push(Block {
                    start: n,
                    end: n + 1,
                    written,
                    descriptors,
                    deps: Vec::new(),
                });
                in_deps = false;
            }
            indent => {
                let block = out.last_mut().ok_or_else(bad)?;
                block.end = n + 1;
                if indent == 2 {
                    let trimmed = body.trim();
                    in_deps = trimmed == "dependencies:" || trimmed == "optionalDependencies:";
                } else if indent == 4 && in_deps {
                    let (name, range) = split_pair(body.trim()).ok_or_else(bad)?;
                    block.deps.push(format!("{name}@{range}"));
                }
            }
        }
    }
    Ok(out)
}

/// `name "range"` or `"@scope/name" "range"`.
fn split_pair(body: &str) -> Option<(&str, &str)> {
    let (name, range) = if let Some(rest) = body.strip_prefix('"') {
        let end = rest.find('"')?;
        (&rest[..end], rest[end + 1..].trim())
    } else {
        body.split_once(' ')?
    };
    Some((name, unquote(range.trim())))
}

fn unquote(text: &str) -> &str {
    text.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text)
}
