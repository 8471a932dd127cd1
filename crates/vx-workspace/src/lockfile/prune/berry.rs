//! Yarn berry's `yarn.lock` (see `lockfile::yarn`): YAML whose keys are lists of descriptors
//! (`"a@npm:^1.0.0, a@npm:^1.2.0"`), each member an entry resolved to `name@workspace:dir`
//! whose `dependencies` hold its development dependencies too.

use std::collections::{BTreeMap, BTreeSet};

use serde_yaml::{Mapping, Value};

use super::model::{Counts, Keep, Pruned};
use super::text;

pub(super) fn prune(source: &str, keep: &Keep) -> Result<Pruned, String> {
    let doc: Mapping = serde_yaml::from_str(source).map_err(|e| e.to_string())?;
    let lines = text::lines(source);
    let blocks: Vec<text::Entry> = text::entries(&lines, 0, lines.len(), 0)
        .into_iter()
        .filter(|e| e.key != "__metadata")
        .collect();
    let split = |key: &str| -> Vec<String> { key.split(", ").map(str::to_string).collect() };
    let mut by_descriptor: BTreeMap<String, usize> = BTreeMap::new();
    // The patch descriptors (yarn's built-in compatibility patches, `patch:` resolutions), by
    // the descriptor of the package each patches: asking for the one asks for the other.
    let mut patches: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (i, block) in blocks.iter().enumerate() {
        for descriptor in split(&block.key) {
            if let Some(inner) = patched(&descriptor) {
                patches.entry(inner).or_default().push(descriptor.clone());
            }
            by_descriptor.insert(descriptor, i);
        }
    }
    let entry = |i: usize| doc.get(blocks[i].key.as_str());
    let mut stack: Vec<String> = Vec::new();
    let mut members = Counts::default();
    for (i, block) in blocks.iter().enumerate() {
        let Some(dir) = workspace_dir(entry(i)) else {
            continue;
        };
        members.total += 1;
        if keep.keeps(&dir) {
            members.kept += 1;
            // The member's own descriptor; `a@workspace:*` and the like only when a kept
            // member asks for them.
            let resolution = entry(i).and_then(|e| e.get("resolution"));
            match resolution.and_then(Value::as_str) {
                Some(resolution) if by_descriptor.contains_key(resolution) => {
                    stack.push(resolution.to_string());
                }
                _ => stack.extend(split(&block.key)),
            }
        }
    }
    let resolutions = Resolutions::of((keep.manifest)("").as_deref());
    let mut needed: BTreeSet<String> = BTreeSet::new();
    let mut asked: BTreeSet<String> = BTreeSet::new();
    let mut kept: BTreeSet<usize> = BTreeSet::new();
    while let Some(descriptor) = stack.pop() {
        if !asked.insert(descriptor.clone()) {
            continue;
        }
        let Some(&i) = by_descriptor.get(&descriptor) else {
            continue;
        };
        stack.extend(patches.get(&descriptor).into_iter().flatten().cloned());
        if !kept.insert(i) {
            continue;
        }
        let dir = workspace_dir(entry(i));
        if let Some(dir) = &dir {
            if !keep.keeps(dir) {
                needed.insert(dir.clone());
            }
        }
        let parent = entry(i)
            .and_then(|e| e.get("resolution"))
            .and_then(Value::as_str)
            .map_or(String::new(), |r| text::name_of(r).to_string());
        if let Some(resolution) = entry(i)
            .and_then(|e| e.get("resolution"))
            .and_then(Value::as_str)
            .and_then(patched)
        {
            stack.push(resolution);
        }
        for list in ["dependencies", "optionalDependencies"] {
            let deps = entry(i)
                .and_then(|e| e.get(list))
                .and_then(Value::as_mapping);
            for (name, range) in deps.into_iter().flatten() {
                let (Some(name), Some(range)) = (name.as_str(), range.as_str()) else {
                    continue;
                };
                if dir.as_deref().is_some_and(|d| keep.dropped(d, name)) {
                    continue;
                }
                let range = resolutions.apply(&parent, name, range);
                stack.push(format!("{name}@{range}"));
            }
        }
    }
    let mut removed = vec![false; lines.len()];
    let mut left: Vec<text::Kept> = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        if !kept.contains(&i) {
            continue;
        }
        let descriptors = split(&block.key);
        let asked_for: Vec<&str> = descriptors
            .iter()
            .filter(|d| asked.contains(*d))
            .map(String::as_str)
            .collect();
        let line = lines[block.start];
        let ending = &line[text::body(line).len()..];
        let header = (asked_for.len() < descriptors.len())
            .then(|| format!("\"{}\":{ending}", asked_for.join(", ")));
        if let Some(dir) = workspace_dir(entry(i)) {
            drop_dev(&mut removed, &lines, block, &dir, keep);
        }
        left.push(text::Kept {
            start: block.start,
            end: block.end,
            header,
            key: asked_for.join(", "),
        });
    }
    let out = match (blocks.first(), blocks.last()) {
        (Some(first), Some(last)) => {
            text::write_entries(&lines, &removed, first.start, last.end, left)
        }
        _ => source.to_string(),
    };
    let packages = Counts {
        kept: kept.len() - members.kept.min(kept.len()),
        total: blocks.len() - members.total.min(blocks.len()),
    };
    Ok(Pruned {
        text: out,
        members,
        packages,
        needed,
    })
}

/// The root manifest's `resolutions`: `name`, `name@range`, each optionally under a
/// `parent/` (or `**/`), mapped to the range yarn resolves instead (`6.4.3` is `npm:6.4.3`).
struct Resolutions(Vec<Rule>);

struct Rule {
    parent: Option<String>,
    name: String,
    range: Option<String>,
    to: String,
}

impl Resolutions {
    fn of(manifest: Option<&str>) -> Resolutions {
        let value: serde_json::Value = manifest
            .and_then(|m| serde_json::from_str(m).ok())
            .unwrap_or_default();
        let rules = value
            .get("resolutions")
            .and_then(serde_json::Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(pattern, to)| {
                let to = to.as_str()?;
                let to = if to.contains(':') {
                    to.to_string()
                } else {
                    format!("npm:{to}")
                };
                let pattern = pattern.strip_prefix("**/").unwrap_or(pattern);
                let names = text::package_names(pattern);
                let (parent, target) = match names.as_slice() {
                    [parent, target] => (Some(*parent), *target),
                    _ => (None, pattern),
                };
                let name = text::name_of(target);
                Some(Rule {
                    parent: parent.map(|p| text::name_of(p).to_string()),
                    name: name.to_string(),
                    range: target.get(name.len() + 1..).map(str::to_string),
                    to,
                })
            })
            .collect();
        Resolutions(rules)
    }

    /// The range dependency `name@range` of the package `parent` resolves through.
    fn apply<'a>(&'a self, parent: &str, name: &str, range: &'a str) -> &'a str {
        let bare = range.strip_prefix("npm:").unwrap_or(range);
        self.0
            .iter()
            .find(|rule| {
                rule.name == name
                    && rule
                        .range
                        .as_deref()
                        .is_none_or(|r| r == range || r == bare)
                    && rule.parent.as_deref().is_none_or(|p| p == parent)
            })
            .map_or(range, |rule| rule.to.as_str())
    }
}

/// The directory of a member's entry (`resolution: "a@workspace:packages/a"`; `.` is the root,
/// as `""`).
fn workspace_dir(entry: Option<&Value>) -> Option<String> {
    let resolution = entry?.get("resolution")?.as_str()?;
    let name = text::name_of(resolution);
    let dir = resolution
        .get(name.len() + 1..)?
        .strip_prefix("workspace:")?;
    Some(if dir == "." {
        String::new()
    } else {
        dir.to_string()
    })
}

/// The descriptor a patch descriptor patches: `a@patch:a@npm%3A^1.0.0#./x.patch::…` →
/// `a@npm:^1.0.0`.
fn patched(descriptor: &str) -> Option<String> {
    let name = text::name_of(descriptor);
    let inner = descriptor.get(name.len() + 1..)?.strip_prefix("patch:")?;
    let inner = inner.split('#').next()?;
    Some(inner.replace("%3A", ":"))
}

/// Removes `--production`'s development dependencies from a member's `dependencies`.
fn drop_dev(removed: &mut [bool], lines: &[&str], block: &text::Entry, dir: &str, keep: &Keep) {
    if keep.drop_dev.contains_key(dir) {
        let within = (block.start + 1, block.end);
        let drop = |name: &str| keep.dropped(dir, name);
        text::drop_from_list(removed, lines, within, 2, "dependencies", &drop);
    }
}
