//! `bun.lock`, bun's text lockfile (JSON with trailing commas; bun 1.2 and later).
//!
//! `workspaces` maps each member directory to its manifest's dependency lists. `packages`
//! maps an install path to `[ident, …, {dependencies…}, …]`: the path is a package name,
//! or names joined by `/` for a package nested under another (`is-odd/is-number`), or
//! under a member's name; the ident is `name@version`, `name@workspace:dir` for a member.
//! A dependency `N` of the package at path `p/q` is found at `p/q/N`, else `p/N`, else `N`.
//! The binary `bun.lockb` is not read (its format is bun's own and unversioned).

use std::collections::HashMap;

use super::graph::{split_ident, Edge, Graph, Importer, Package};
use crate::json::{self, Json, JsonKind};

pub(crate) fn read(text: &str) -> Result<Graph, String> {
    let lock = json::parse_jsonc(text).map_err(|e| e.message)?;
    let version = lock
        .entry("lockfileVersion")
        .and_then(|e| match &e.value.kind {
            JsonKind::Number(n) => Some(n.clone()),
            _ => None,
        })
        .unwrap_or_default();
    if !matches!(version.as_str(), "0" | "1" | "2") {
        return Err(format!(
            "lockfileVersion {version} is not one vx reads (0 to 2)"
        ));
    }
    let packages = object(lock.entry("packages").map(|e| &e.value));
    let workspaces = object(lock.entry("workspaces").map(|e| &e.value));
    let mut graph = Graph::default();
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut member: HashMap<&str, String> = HashMap::new();
    for (path, value) in &packages {
        let ident = match &value.kind {
            JsonKind::Array(items) => items.first().and_then(Json::as_str).unwrap_or(""),
            _ => "",
        };
        let (name, version) = split_ident(ident).unwrap_or((ident, ""));
        if let Some(dir) = version.strip_prefix("workspace:") {
            member.insert(path, dir.to_string());
            continue;
        }
        index.insert(path, graph.packages.len());
        graph.packages.push(Package {
            name: name.to_string(),
            version: version.to_string(),
            deps: Vec::new(),
        });
    }
    let find = |from: &[&str], name: &str| -> Option<Edge> {
        for depth in (0..=from.len()).rev() {
            let mut path = from[..depth].join("/");
            if !path.is_empty() {
                path.push('/');
            }
            path.push_str(name);
            if let Some(dir) = member.get(path.as_str()) {
                return Some(Edge::Workspace(dir.clone()));
            }
            if let Some(&i) = index.get(path.as_str()) {
                return Some(Edge::Package(i));
            }
        }
        None
    };
    let names = |value: Option<&Json>, lists: &[&str]| -> Vec<String> {
        let Some(value) = value else {
            return Vec::new();
        };
        lists
            .iter()
            .flat_map(|list| object(value.entry(list).map(|e| &e.value)))
            .map(|(name, _)| name.to_string())
            .collect()
    };
    const DEPS: [&str; 3] = ["dependencies", "optionalDependencies", "peerDependencies"];
    for (path, value) in &packages {
        let Some(&i) = index.get(path) else {
            continue;
        };
        let info = match &value.kind {
            JsonKind::Array(items) => items
                .iter()
                .find(|item| matches!(item.kind, JsonKind::Object(_))),
            _ => None,
        };
        let scope = segments(path);
        graph.packages[i].deps = names(info, &DEPS)
            .iter()
            .filter_map(|name| find(&scope, name))
            .collect();
    }
    for (dir, value) in &workspaces {
        let name = value
            .entry("name")
            .and_then(|e| e.value.as_str())
            .unwrap_or("");
        let scope: Vec<&str> = if dir.is_empty() {
            Vec::new()
        } else {
            vec![name]
        };
        let edges = |lists: &[&str]| -> Vec<Edge> {
            names(Some(value), lists)
                .iter()
                .filter_map(|n| find(&scope, n))
                .collect()
        };
        let importer = Importer {
            deps: edges(&DEPS),
            dev: edges(&["devDependencies"]),
        };
        graph.importers.insert(dir.to_string(), importer);
    }
    Ok(graph)
}

/// The entries of a JSON object, in file order (none for anything else).
fn object(value: Option<&Json>) -> Vec<(&str, &Json)> {
    match value.map(|v| &v.kind) {
        Some(JsonKind::Object(entries)) => {
            entries.iter().map(|e| (e.key.as_str(), &e.value)).collect()
        }
        _ => Vec::new(),
    }
}

/// An install path's package names: `@babel/core/semver` → [`@babel/core`, `semver`].
fn segments(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        let end = if rest.starts_with('@') {
            match rest.find('/') {
                Some(slash) => rest[slash + 1..]
                    .find('/')
                    .map_or(rest.len(), |n| slash + 1 + n),
                None => rest.len(),
            }
        } else {
            rest.find('/').unwrap_or(rest.len())
        };
        out.push(&rest[..end]);
        rest = rest.get(end + 1..).unwrap_or("");
    }
    out
}
