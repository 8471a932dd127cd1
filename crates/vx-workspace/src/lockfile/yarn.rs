//! `yarn.lock`: yarn 1's own format and yarn berry's (2 and later) YAML.
//!
//! Both map *descriptors* (`ms@^2.1.1`, berry's `ms@npm:^2.1.1`; several share one entry,
//! written `"a@^1, a@^1.2"`) to a resolved entry with a `version` and the descriptors of its
//! own `dependencies`. Yarn 1 does not list the workspace members: their dependencies are
//! read from their `package.json`, and a dependency named after a member links to it. Berry
//! lists each member as an entry resolved to `name@workspace:dir`, with its development
//! dependencies merged into `dependencies`; which are development ones is read from the
//! member's `package.json`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Deserialize;

use super::graph::{split_ident, Edge, Graph, Importer, Package};

pub(crate) fn read(
    text: &str,
    members: &[&str],
    manifest: &dyn Fn(&str) -> Option<String>,
) -> Result<Graph, String> {
    let manifests: BTreeMap<&str, Manifest> = members
        .iter()
        .filter_map(|dir| {
            let text = manifest(dir)?;
            Some((*dir, serde_json::from_str(&text).ok()?))
        })
        .collect();
    if text.lines().any(|line| line.starts_with("__metadata:")) {
        berry(text, &manifests)
    } else {
        classic(text, &manifests)
    }
}

/// What the yarn formats read of a member's `package.json` (the pruner too).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Manifest {
    name: Option<String>,
    #[serde(default)]
    pub(crate) dependencies: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) optional_dependencies: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) dev_dependencies: BTreeMap<String, String>,
}

impl Manifest {
    /// Names only in `devDependencies`.
    fn dev_only(&self) -> BTreeSet<&str> {
        self.dev_dependencies
            .keys()
            .map(String::as_str)
            .filter(|n| {
                !self.dependencies.contains_key(*n) && !self.optional_dependencies.contains_key(*n)
            })
            .collect()
    }
}

/// One resolved entry: the descriptors it answers, and its fields.
#[derive(Debug, Default)]
struct Entry {
    descriptors: Vec<String>,
    version: String,
    /// Berry's `resolution` (`ms@npm:2.1.3`, `a@workspace:packages/a`).
    resolution: Option<String>,
    /// (name, range) of `dependencies` and `optionalDependencies`.
    deps: Vec<(String, String)>,
}

/// Yarn 1: a header line of descriptors ending in `:`, then indented `key "value"` lines
/// and indented `dependencies:` blocks of `name "range"` lines.
fn classic(text: &str, manifests: &BTreeMap<&str, Manifest>) -> Result<Graph, String> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut in_deps = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let line_error = || format!("line {}: `{}` is not yarn 1 lockfile syntax", n + 1, line);
        match indent {
            0 => {
                let header = line.strip_suffix(':').ok_or_else(line_error)?;
                let descriptors = header
                    .split(", ")
                    .map(|d| unquote(d.trim()).to_string())
                    .collect();
                entries.push(Entry {
                    descriptors,
                    ..Entry::default()
                });
                in_deps = false;
            }
            2 => {
                let entry = entries.last_mut().ok_or_else(line_error)?;
                let body = line.trim();
                in_deps = body == "dependencies:" || body == "optionalDependencies:";
                if let Some(version) = body.strip_prefix("version ") {
                    entry.version = unquote(version).to_string();
                }
            }
            4 if in_deps => {
                let entry = entries.last_mut().ok_or_else(line_error)?;
                let (name, range) = split_pair(line.trim()).ok_or_else(line_error)?;
                entry.deps.push((name, range));
            }
            _ => {}
        }
    }
    if entries.is_empty() && !text.contains("yarn lockfile v1") {
        return Err("not a yarn lockfile".into());
    }
    let mut graph = Graph::default();
    let mut index: HashMap<String, usize> = HashMap::new();
    for entry in &entries {
        let name = entry
            .descriptors
            .first()
            .and_then(|d| split_ident(d))
            .map_or("", |(name, _)| name);
        for descriptor in &entry.descriptors {
            index.insert(descriptor.clone(), graph.packages.len());
        }
        graph.packages.push(Package {
            name: name.to_string(),
            version: entry.version.clone(),
            deps: Vec::new(),
        });
    }
    let by_name: HashMap<&str, &str> = manifests
        .iter()
        .filter_map(|(dir, m)| Some((m.name.as_deref()?, *dir)))
        .collect();
    let edge = |name: &str, range: &str, members: bool| -> Edge {
        if members {
            if let Some(dir) = by_name.get(name) {
                return Edge::Workspace(dir.to_string());
            }
        }
        match index.get(&format!("{name}@{range}")) {
            Some(&i) => Edge::Package(i),
            None => Edge::Unresolved(name.to_string(), range.to_string()),
        }
    };
    for (i, entry) in entries.iter().enumerate() {
        graph.packages[i].deps = entry
            .deps
            .iter()
            .map(|(name, range)| edge(name, range, false))
            .collect();
    }
    for (dir, manifest) in manifests {
        let edges = |list: &BTreeMap<String, String>| -> Vec<Edge> {
            list.iter()
                .map(|(name, range)| edge(name, range, true))
                .collect()
        };
        let mut importer = Importer {
            deps: edges(&manifest.dependencies),
            dev: edges(&manifest.dev_dependencies),
        };
        importer.deps.extend(edges(&manifest.optional_dependencies));
        graph.importers.insert(dir.to_string(), importer);
    }
    Ok(graph)
}

/// `name "range"` or `"@scope/name" "range"`.
fn split_pair(body: &str) -> Option<(String, String)> {
    let (name, range) = if let Some(rest) = body.strip_prefix('"') {
        let end = rest.find('"')?;
        (&rest[..end], rest[end + 1..].trim())
    } else {
        body.split_once(' ')?
    };
    Some((name.to_string(), unquote(range.trim()).to_string()))
}

fn unquote(text: &str) -> &str {
    text.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BerryEntry {
    #[serde(default)]
    resolution: Option<String>,
    #[serde(default)]
    version: Option<serde_yaml::Value>,
    #[serde(default)]
    dependencies: BTreeMap<String, String>,
    #[serde(default)]
    optional_dependencies: BTreeMap<String, String>,
}

/// Yarn berry: YAML whose keys are descriptor lists and whose `__metadata` says the format.
fn berry(text: &str, manifests: &BTreeMap<&str, Manifest>) -> Result<Graph, String> {
    let lock: BTreeMap<String, BerryEntry> =
        serde_yaml::from_str(text).map_err(|e| e.to_string())?;
    let mut entries = Vec::new();
    for (key, value) in lock {
        if key == "__metadata" {
            continue;
        }
        let version = match value.version {
            Some(serde_yaml::Value::String(s)) => s,
            Some(serde_yaml::Value::Number(n)) => n.to_string(),
            _ => String::new(),
        };
        entries.push(Entry {
            descriptors: key.split(", ").map(|d| d.trim().to_string()).collect(),
            version,
            resolution: value.resolution,
            deps: value
                .dependencies
                .into_iter()
                .chain(value.optional_dependencies)
                .collect(),
        });
    }
    let mut graph = Graph::default();
    let mut index: HashMap<&str, usize> = HashMap::new();
    // Each entry's member directory, when it is a member (`name@workspace:dir`).
    let mut member_of: Vec<Option<String>> = Vec::new();
    for entry in &entries {
        let resolution = entry.resolution.as_deref().unwrap_or("");
        let (name, resolved) = split_ident(resolution).unwrap_or((resolution, ""));
        member_of.push(resolved.strip_prefix("workspace:").map(|dir| {
            if dir == "." {
                String::new()
            } else {
                dir.to_string()
            }
        }));
        for descriptor in &entry.descriptors {
            index.insert(descriptor, graph.packages.len());
        }
        graph.packages.push(Package {
            name: name.to_string(),
            version: resolved
                .strip_prefix("npm:")
                .unwrap_or(resolved)
                .to_string(),
            deps: Vec::new(),
        });
    }
    let edge = |name: &str, range: &str| -> Edge {
        let found = index
            .get(format!("{name}@{range}").as_str())
            .or_else(|| index.get(format!("{name}@npm:{range}").as_str()));
        match found {
            Some(&i) => match &member_of[i] {
                Some(dir) => Edge::Workspace(dir.clone()),
                None => Edge::Package(i),
            },
            None => Edge::Unresolved(name.to_string(), range.to_string()),
        }
    };
    for (i, entry) in entries.iter().enumerate() {
        let edges = entry.deps.iter().map(|(n, r)| (n, edge(n, r)));
        match &member_of[i] {
            None => graph.packages[i].deps = edges.map(|(_, e)| e).collect(),
            Some(dir) => {
                let manifest = manifests.get(dir.as_str());
                let dev_only = manifest.map(Manifest::dev_only).unwrap_or_default();
                let mut importer = Importer::default();
                for (name, edge) in edges {
                    if dev_only.contains(name.as_str()) {
                        importer.dev.push(edge);
                    } else {
                        importer.deps.push(edge);
                    }
                }
                graph.importers.insert(dir.clone(), importer);
            }
        }
    }
    Ok(graph)
}
