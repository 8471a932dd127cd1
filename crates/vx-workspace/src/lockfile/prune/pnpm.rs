//! `pnpm-lock.yaml` 6 and 9 (see `lockfile::pnpm` for the format).

use std::collections::BTreeSet;

use serde_yaml::{Mapping, Value};

use super::model::{Counts, Keep, Pruned};
use super::text::{self, Entry};

const DEP_LISTS: [&str; 3] = ["dependencies", "optionalDependencies", "devDependencies"];

pub(super) fn prune(source: &str, keep: &Keep) -> Result<Pruned, String> {
    let doc: Value = serde_yaml::from_str(source).map_err(|e| e.to_string())?;
    let version = match doc.get("lockfileVersion") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    let nine = match version.split('.').next() {
        Some("9") => true,
        Some("6") => false,
        _ => {
            return Err(format!(
                "lockfileVersion {version} is not one vx prunes (6 and 9, pnpm 8 to 10)"
            ))
        }
    };
    let empty = Mapping::new();
    let importers = doc.get("importers").and_then(Value::as_mapping);
    let snapshots = doc
        .get(if nine { "snapshots" } else { "packages" })
        .and_then(Value::as_mapping)
        .unwrap_or(&empty);
    let has = |key: &str| snapshots.contains_key(key);
    let resolve = |name: &str, reference: &str| -> Option<String> {
        if reference.starts_with("link:") {
            return None;
        }
        [
            reference.to_string(),
            format!("{name}@{reference}"),
            format!("/{name}@{reference}"),
            format!("/{reference}"),
        ]
        .into_iter()
        .find(|c| has(c))
    };
    let mut stack: Vec<String> = Vec::new();
    let mut members = Counts::default();
    match importers {
        Some(importers) => {
            for (dir, importer) in importers {
                members.total += 1;
                let dir = dir.as_str().unwrap_or("");
                let dir = if dir == "." { "" } else { dir };
                if !keep.keeps(dir) {
                    continue;
                }
                members.kept += 1;
                stack.extend(importer_refs(importer, dir, keep, &resolve));
            }
        }
        // One project: its dependencies are at the top level.
        None => {
            members = Counts { kept: 1, total: 1 };
            stack.extend(importer_refs(&doc, "", keep, &resolve));
        }
    }
    let mut reached: BTreeSet<String> = BTreeSet::new();
    while let Some(key) = stack.pop() {
        if !reached.insert(key.clone()) {
            continue;
        }
        let Some(entry) = snapshots.get(key.as_str()) else {
            continue;
        };
        for list in ["dependencies", "optionalDependencies"] {
            for (name, reference) in mapping(entry, list) {
                if let (Some(name), Some(reference)) = (name.as_str(), reference.as_str()) {
                    stack.extend(resolve(name, reference));
                }
            }
        }
    }
    // A local package (`file:tooling/cfg`, root-relative) must come with the output.
    let needed: BTreeSet<String> = reached
        .iter()
        .filter_map(|key| key.split_once("@file:").map(|(_, path)| path))
        .map(|path| path.split('(').next().unwrap_or(path).to_string())
        .filter(|path| !keep.keeps(path))
        .collect();
    // In 9, `packages` holds each snapshot's package without its peer or patch suffix.
    let bases: BTreeSet<&str> = reached
        .iter()
        .map(|k| k.split('(').next().unwrap_or(k))
        .collect();
    let lines = text::lines(source);
    let mut removed = vec![false; lines.len()];
    if let Some((_, from, to)) = text::section(&lines, "importers") {
        for entry in text::entries(&lines, from, to, 2) {
            let dir = if entry.key == "." { "" } else { &entry.key };
            if !keep.keeps(dir) {
                text::remove(&mut removed, &lines, &entry);
            } else if keep.drop_dev.contains_key(dir) {
                drop_dev(&mut removed, &lines, &entry, dir, keep);
            }
        }
    } else if keep.drop_dev.contains_key("") {
        let whole = Entry {
            start: 0,
            end: lines.len(),
            key: String::new(),
        };
        drop_dev_at(&mut removed, &lines, &whole, "", keep, 0);
    }
    if let Some(importers) = importers {
        prune_catalogs(&mut removed, &lines, &catalog_uses(importers, keep));
    }
    let mut empties: Vec<(usize, String)> = Vec::new();
    let mut sections = Sections {
        lines: &lines,
        removed: &mut removed,
        empties: &mut empties,
    };
    let packages = if nine {
        sections.filter("packages", &|k| bases.contains(k));
        sections.filter("snapshots", &|k| reached.contains(k))
    } else {
        sections.filter("packages", &|k| reached.contains(k))
    };
    let mut out = String::with_capacity(source.len());
    for (i, line) in lines.iter().enumerate() {
        if let Some((_, replacement)) = empties.iter().find(|(h, _)| *h == i) {
            out.push_str(replacement);
        } else if !removed[i] {
            out.push_str(line);
        }
    }
    Ok(Pruned {
        text: out,
        members,
        packages,
        needed,
    })
}

/// The top-level sections of the text being pruned.
struct Sections<'a, 'b> {
    lines: &'a [&'b str],
    removed: &'a mut [bool],
    /// Headers of sections left empty, with what replaces them.
    empties: &'a mut Vec<(usize, String)>,
}

impl Sections<'_, '_> {
    /// Removes the entries of section `name` that `kept` refuses; how many were kept.
    fn filter(&mut self, name: &str, kept: &dyn Fn(&str) -> bool) -> Counts {
        let lines = self.lines;
        let Some((header, from, to)) = text::section(lines, name) else {
            return Counts::default();
        };
        let entries = text::entries(lines, from, to, 2);
        let mut left = 0;
        for entry in &entries {
            if kept(&entry.key) {
                left += 1;
            } else {
                text::remove(self.removed, lines, entry);
            }
        }
        if left == 0 && !entries.is_empty() {
            // Nothing left: `name: {}`, as pnpm writes an empty section, then the blank line
            // before the next section.
            for r in &mut self.removed[header..to] {
                *r = true;
            }
            let nl = if lines[header].ends_with("\r\n") {
                "\r\n"
            } else {
                "\n"
            };
            let gap = if to < lines.len() { nl } else { "" };
            self.empties
                .push((header, format!("{name}: {{}}{nl}{gap}")));
        }
        Counts {
            kept: left,
            total: entries.len(),
        }
    }
}

/// The (catalog, package) pairs the kept importers take from `catalogs` (a specifier
/// `catalog:` is the default catalog's, `catalog:name` that catalog's), not counting
/// `--production`'s dropped development dependencies.
fn catalog_uses(importers: &Mapping, keep: &Keep) -> BTreeSet<(String, String)> {
    let mut uses = BTreeSet::new();
    for (dir, importer) in importers {
        let dir = dir.as_str().unwrap_or("");
        let dir = if dir == "." { "" } else { dir };
        if !keep.keeps(dir) {
            continue;
        }
        for list in DEP_LISTS {
            for (name, spec) in mapping(importer, list) {
                let Some(name) = name.as_str() else { continue };
                if list == "devDependencies" && keep.dropped(dir, name) {
                    continue;
                }
                let specifier = spec.get("specifier").and_then(Value::as_str).unwrap_or("");
                if let Some(catalog) = specifier.strip_prefix("catalog:") {
                    let catalog = if catalog.is_empty() {
                        "default"
                    } else {
                        catalog
                    };
                    uses.insert((catalog.to_string(), name.to_string()));
                }
            }
        }
    }
    uses
}

/// Removes from the `catalogs` section the entries no kept importer takes, a catalog left
/// empty, and the section when nothing is left (with its blank line), as pnpm writes it.
fn prune_catalogs(removed: &mut [bool], lines: &[&str], uses: &BTreeSet<(String, String)>) {
    let Some((header, from, to)) = text::section(lines, "catalogs") else {
        return;
    };
    let catalogs = text::entries(lines, from, to, 2);
    let mut left = 0;
    for catalog in &catalogs {
        let packages = text::entries(lines, catalog.start + 1, catalog.end, 4);
        let mut kept = 0;
        for package in &packages {
            if uses.contains(&(catalog.key.clone(), package.key.clone())) {
                kept += 1;
            } else {
                text::mark(removed, package.start, package.end);
            }
        }
        if kept == 0 {
            text::mark(removed, catalog.start, catalog.end);
        } else {
            left += 1;
        }
    }
    if left == 0 && !catalogs.is_empty() {
        text::mark(removed, header, to);
    }
}

/// The snapshot keys an importer (or a one-project lockfile's top level) depends on.
fn importer_refs(
    importer: &Value,
    dir: &str,
    keep: &Keep,
    resolve: &dyn Fn(&str, &str) -> Option<String>,
) -> Vec<String> {
    let mut out = Vec::new();
    for list in DEP_LISTS {
        for (name, spec) in mapping(importer, list) {
            let Some(name) = name.as_str() else { continue };
            if list == "devDependencies" && keep.dropped(dir, name) {
                continue;
            }
            // 6 and 9: `{specifier, version}`; 5: the version alone.
            let reference = spec
                .get("version")
                .and_then(Value::as_str)
                .or(spec.as_str());
            if let Some(reference) = reference {
                out.extend(resolve(name, reference));
            }
        }
    }
    out
}

fn mapping<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = (&'a Value, &'a Value)> {
    value
        .get(key)
        .and_then(Value::as_mapping)
        .into_iter()
        .flat_map(|m| m.iter())
}

/// Removes `--production`'s development dependencies from an importer's block.
fn drop_dev(removed: &mut [bool], lines: &[&str], importer: &Entry, dir: &str, keep: &Keep) {
    drop_dev_at(removed, lines, importer, dir, keep, 4);
}

/// The same, with the `devDependencies:` header at `at` spaces.
fn drop_dev_at(
    removed: &mut [bool],
    lines: &[&str],
    within: &Entry,
    dir: &str,
    keep: &Keep,
    at: usize,
) {
    let drop = |name: &str| keep.dropped(dir, name);
    let range = (within.start, within.end);
    text::drop_from_list(removed, lines, range, at, "devDependencies", &drop);
}
