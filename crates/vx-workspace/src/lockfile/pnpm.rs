//! `pnpm-lock.yaml`, lockfile versions 6 and 9 (pnpm 8 to 10).
//!
//! `importers` maps each member directory to its direct dependencies, each with the version
//! pnpm resolved: `2.1.3`, `18.2.0(react@18.2.0)` (a peer suffix), `string-width@4.2.3` (an
//! alias), `link:../a` (another member). The resolved package's key is `name@version`, in
//! `snapshots` (9) or `packages` with a leading `/` (6), which hold its own dependencies
//! written the same way. A lockfile of one project has no `importers`: its dependencies are
//! at the top level, the root's.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use super::graph::{join_dir, split_ident, Edge, Graph, Importer, Package};

#[derive(Deserialize)]
struct Lock {
    #[serde(rename = "lockfileVersion")]
    version: serde_yaml::Value,
    #[serde(default)]
    importers: Option<BTreeMap<String, Deps<Specified>>>,
    #[serde(flatten)]
    top: Deps<Specified>,
    #[serde(default)]
    packages: BTreeMap<String, Deps<String>>,
    #[serde(default)]
    snapshots: BTreeMap<String, Deps<String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Deps<V> {
    #[serde(default = "BTreeMap::new")]
    dependencies: BTreeMap<String, V>,
    #[serde(default = "BTreeMap::new")]
    optional_dependencies: BTreeMap<String, V>,
    #[serde(default = "BTreeMap::new")]
    dev_dependencies: BTreeMap<String, V>,
}

/// An importer's dependency: `{specifier, version}` in lockfile 6 and 9.
#[derive(Deserialize)]
struct Specified {
    version: String,
}

pub(crate) fn read(text: &str) -> Result<Graph, String> {
    let lock: Lock = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
    let version = match &lock.version {
        serde_yaml::Value::String(s) => s.clone(),
        serde_yaml::Value::Number(n) => n.to_string(),
        _ => String::new(),
    };
    let major = version.split('.').next().unwrap_or("");
    if major != "6" && major != "9" {
        return Err(format!(
            "lockfileVersion {version} is not one vx reads (6 and 9, pnpm 8 to 10)"
        ));
    }
    // Lockfile 9 keeps dependencies in `snapshots`; 6 in `packages`.
    let snapshots = if major == "9" {
        lock.snapshots
    } else {
        lock.packages
    };
    let mut graph = Graph::default();
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(snapshots.len());
    for key in snapshots.keys() {
        let ident = key.strip_prefix('/').unwrap_or(key);
        let (name, version) = split_ident(ident).unwrap_or((ident, ""));
        index.insert(key, graph.packages.len());
        graph.packages.push(Package {
            name: name.to_string(),
            version: version.to_string(),
            deps: Vec::new(),
        });
    }
    let edge = |from: &str, name: &str, reference: &str| -> Option<Edge> {
        if let Some(rel) = reference.strip_prefix("link:") {
            return join_dir(from, rel).map(Edge::Workspace);
        }
        let candidates = [
            reference.to_string(),
            format!("{name}@{reference}"),
            format!("/{name}@{reference}"),
            format!("/{reference}"),
        ];
        Some(
            match candidates.iter().find_map(|c| index.get(c.as_str())) {
                Some(&i) => Edge::Package(i),
                None => Edge::Unresolved(name.to_string(), reference.to_string()),
            },
        )
    };
    for (key, deps) in &snapshots {
        let i = index[key.as_str()];
        let edges: Vec<Edge> = deps
            .dependencies
            .iter()
            .chain(&deps.optional_dependencies)
            .filter_map(|(name, reference)| edge("", name, reference))
            .collect();
        graph.packages[i].deps = edges;
    }
    let importers = match lock.importers {
        Some(importers) => importers,
        None => BTreeMap::from([(".".to_string(), lock.top)]),
    };
    for (dir, deps) in importers {
        let dir = if dir == "." { String::new() } else { dir };
        let edges = |list: &BTreeMap<String, Specified>| -> Vec<Edge> {
            list.iter()
                .filter_map(|(name, s)| edge(&dir, name, &s.version))
                .collect()
        };
        let mut importer = Importer {
            deps: edges(&deps.dependencies),
            dev: edges(&deps.dev_dependencies),
        };
        importer.deps.extend(edges(&deps.optional_dependencies));
        graph.importers.insert(dir, importer);
    }
    Ok(graph)
}
