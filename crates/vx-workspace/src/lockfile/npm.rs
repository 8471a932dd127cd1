//! `package-lock.json` and `npm-shrinkwrap.json`, lockfile versions 2 and 3 (npm 7 and later).
//!
//! `packages` is keyed by install path: `""` is the root, `packages/a` a member,
//! `node_modules/ms` and `packages/a/node_modules/ms` installed packages, and
//! `node_modules/@demo/a` a link (`"link": true`, `"resolved": "packages/a"`) to a member.
//! A dependency `N` of the entry at path `P` is found as Node finds it: at
//! `P/node_modules/N`, else in each parent directory's `node_modules`, up to the root's.
//! A dependency found nowhere (an optional one for another platform, a peer left out) is
//! not installed and folds nothing.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use super::graph::{Edge, Graph, Importer, Package};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Lock {
    lockfile_version: u32,
    #[serde(default)]
    packages: BTreeMap<String, Entry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    name: Option<String>,
    version: Option<String>,
    resolved: Option<String>,
    #[serde(default)]
    link: bool,
    #[serde(default)]
    dependencies: BTreeMap<String, String>,
    #[serde(default)]
    optional_dependencies: BTreeMap<String, String>,
    #[serde(default)]
    peer_dependencies: BTreeMap<String, String>,
    #[serde(default)]
    dev_dependencies: BTreeMap<String, String>,
}

pub(crate) fn read(text: &str) -> Result<Graph, String> {
    let lock: Lock = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if lock.lockfile_version < 2 {
        return Err(format!(
            "lockfileVersion {} is not one vx reads (2 and 3, npm 7 and later)",
            lock.lockfile_version
        ));
    }
    let entries = &lock.packages;
    let mut graph = Graph::default();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (path, entry) in entries {
        let Some(installed) = installed_name(path) else {
            continue;
        };
        if entry.link {
            continue;
        }
        let version = entry
            .version
            .clone()
            .or_else(|| entry.resolved.clone())
            .unwrap_or_default();
        index.insert(path, graph.packages.len());
        graph.packages.push(Package {
            name: entry.name.clone().unwrap_or_else(|| installed.to_string()),
            version,
            deps: Vec::new(),
        });
    }
    let find = |from: &str, name: &str| -> Option<Edge> {
        let candidate = install_path(&|path| entries.contains_key(path), from, name)?;
        let entry = &entries[&candidate];
        if entry.link {
            let target = entry.resolved.clone().unwrap_or_default();
            return Some(Edge::Workspace(target));
        }
        index.get(candidate.as_str()).map(|&i| Edge::Package(i))
    };
    let edges = |path: &str, lists: &[&BTreeMap<String, String>]| -> Vec<Edge> {
        lists
            .iter()
            .flat_map(|list| list.keys())
            .filter_map(|name| find(path, name))
            .collect()
    };
    for (path, entry) in entries {
        let deps = [
            &entry.dependencies,
            &entry.optional_dependencies,
            &entry.peer_dependencies,
        ];
        match index.get(path.as_str()) {
            Some(&i) => graph.packages[i].deps = edges(path, &deps),
            None if installed_name(path).is_none() => {
                let importer = Importer {
                    deps: edges(path, &deps),
                    dev: edges(path, &[&entry.dev_dependencies]),
                };
                graph.importers.insert(path.clone(), importer);
            }
            None => {}
        }
    }
    Ok(graph)
}

/// The install path Node finds dependency `name` of the entry at `from` at, among the paths
/// `has` knows: `from/node_modules/name`, else each parent's, up to the root's.
pub(crate) fn install_path(has: &dyn Fn(&str) -> bool, from: &str, name: &str) -> Option<String> {
    let mut dir = from;
    loop {
        let candidate = if dir.is_empty() {
            format!("node_modules/{name}")
        } else {
            format!("{dir}/node_modules/{name}")
        };
        if has(&candidate) {
            return Some(candidate);
        }
        if dir.is_empty() {
            return None;
        }
        dir = match dir.rfind("/node_modules/") {
            Some(at) => &dir[..at],
            None if dir.starts_with("node_modules/") => "",
            None => dir.rsplit_once('/').map_or("", |(parent, _)| parent),
        };
    }
}

/// The package name an install path ends in (`node_modules/@scope/name` → `@scope/name`);
/// `None` for a member's directory.
fn installed_name(path: &str) -> Option<&str> {
    let at = path.rfind("node_modules/")?;
    Some(&path[at + "node_modules/".len()..])
}
