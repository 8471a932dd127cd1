//! Project dependency edges (DISC-5): which `package.json` specifiers link a workspace
//! project, the `deps` of `vx.toml`, and the rule for peer edges inside cycles.
//!
//! Start at [`resolve_edges`]. Edges are first collected per project and deduplicated by
//! target (a normal edge wins over a peer edge to the same project); then the strongly
//! connected components of the whole project graph are computed, and every peer edge whose
//! two ends share a component (so it lies on a cycle) becomes selection-only. Deciding by
//! components makes the result independent of the order edges are visited in.

use std::collections::{BTreeMap, HashMap};

use vx_core::suggest::did_you_mean;
use vx_core::{Diagnostic, EdgeKind, ProjectEdge, Spanned};

use crate::manifest::DependencyEntry;
use crate::npm_range::{parse_version, range_accepts};

/// What edge resolution needs to know about one project.
pub(crate) struct EdgeSource<'a> {
    pub(crate) name: &'a str,
    /// Root-relative, "" for the root.
    pub(crate) dir: &'a str,
    /// Where its `package.json` is, for messages.
    pub(crate) manifest_path: String,
    pub(crate) package_name: Option<&'a str>,
    pub(crate) version: Option<&'a str>,
    pub(crate) dependencies: &'a [DependencyEntry],
    pub(crate) deps: &'a [Spanned<String>],
}

/// The edges of each project, in the order of `sources`, each list sorted by target name.
pub(crate) fn resolve_edges(
    sources: &[EdgeSource],
    errors: &mut Vec<Diagnostic>,
) -> Vec<Vec<ProjectEdge>> {
    let by_package: HashMap<&str, usize> = sources
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.package_name.map(|n| (n, i)))
        .collect();
    let by_name: HashMap<&str, usize> = sources
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name, i))
        .collect();

    let mut targets: Vec<BTreeMap<usize, ProjectEdge>> = Vec::with_capacity(sources.len());
    for (from, source) in sources.iter().enumerate() {
        let mut edges = BTreeMap::new();
        for dep in source.dependencies {
            let Some(&to) = by_package.get(dep.name.as_str()) else {
                continue;
            };
            if to == from {
                continue;
            }
            match links(dep, source.dir, &sources[to]) {
                Link::Edge => {
                    let kind = if dep.peer {
                        EdgeKind::Peer
                    } else {
                        EdgeKind::Normal
                    };
                    add(&mut edges, to, sources[to].name, kind, &dep.at);
                }
                Link::Registry => {}
                Link::Error(message) => errors.push(Diagnostic::at(dep.at.clone(), message)),
            }
        }
        for dep in source.deps {
            match by_name.get(dep.value.as_str()) {
                Some(&to) if to == from => {}
                Some(&to) => add(&mut edges, to, sources[to].name, EdgeKind::Normal, &dep.at),
                None => {
                    let suggestion = did_you_mean(&dep.value, sources.iter().map(|s| s.name));
                    errors.push(
                        Diagnostic::at(
                            dep.at.clone(),
                            format!("deps: no project is named `{}`", dep.value),
                        )
                        .suggest(suggestion),
                    );
                }
            }
        }
        targets.push(edges);
    }

    let component = components(&targets);
    targets
        .into_iter()
        .enumerate()
        .map(|(from, edges)| {
            let mut list: Vec<ProjectEdge> = edges
                .into_iter()
                .map(|(to, mut edge)| {
                    if edge.kind == EdgeKind::Peer && component[from] == component[to] {
                        edge.kind = EdgeKind::SelectionOnly;
                    }
                    edge
                })
                .collect();
            list.sort_by(|a, b| a.to.cmp(&b.to));
            list
        })
        .collect()
}

/// Keeps one edge per target: the strongest kind, and the first place it was declared.
fn add(
    edges: &mut BTreeMap<usize, ProjectEdge>,
    to: usize,
    name: &str,
    kind: EdgeKind,
    at: &vx_core::Location,
) {
    let edge = ProjectEdge {
        to: name.to_string(),
        kind,
        at: at.clone(),
    };
    match edges.get(&to) {
        Some(existing) if existing.kind <= kind => {}
        _ => {
            edges.insert(to, edge);
        }
    }
}

enum Link {
    Edge,
    /// The package manager would fetch it from a registry (or elsewhere): no edge.
    Registry,
    Error(String),
}

/// Whether `dep`, declared in the project at `from_dir`, links the workspace project `target`.
fn links(dep: &DependencyEntry, from_dir: &str, target: &EdgeSource) -> Link {
    let spec = dep.specifier.trim();
    if let Some(rest) = spec.strip_prefix("workspace:") {
        if matches!(rest, "*" | "^" | "~" | "") {
            return Link::Edge;
        }
        if is_path(rest) {
            return if names_dir(from_dir, rest, target.dir) {
                Link::Edge
            } else {
                Link::Error(format!(
                    "`{}@{spec}` does not name the directory of `{}` ({})",
                    dep.name,
                    dep.name,
                    shown_dir(target.dir)
                ))
            };
        }
        let Some(version) = target.version else {
            return Link::Error(format!(
                "`{}@{spec}` cannot be checked: {} has no `version`",
                dep.name, target.manifest_path
            ));
        };
        return match parse_version(version).and_then(|v| range_accepts(rest, &v)) {
            Some(true) => Link::Edge,
            Some(false) => Link::Error(format!(
                "`{}@{spec}` does not match the workspace version {version}",
                dep.name
            )),
            None if parse_version(version).is_none() => Link::Error(format!(
                "`{}@{spec}` cannot be checked: the workspace version `{version}` is not a semver version",
                dep.name
            )),
            None => Link::Error(format!(
                "`{}@{spec}` is not a workspace specifier (`workspace:*`, `workspace:^`, \
                 `workspace:~`, `workspace:<range>` or `workspace:<path>`)",
                dep.name
            )),
        };
    }
    for protocol in ["file:", "link:"] {
        if let Some(path) = spec.strip_prefix(protocol) {
            return edge_if(names_dir(from_dir, path, target.dir));
        }
    }
    if is_path(spec) {
        return edge_if(names_dir(from_dir, spec, target.dir));
    }
    if spec.is_empty() || spec == "*" {
        return Link::Edge;
    }
    let accepted = target
        .version
        .and_then(parse_version)
        .and_then(|v| range_accepts(spec, &v));
    edge_if(accepted == Some(true))
}

fn edge_if(linked: bool) -> Link {
    if linked {
        Link::Edge
    } else {
        Link::Registry
    }
}

fn shown_dir(dir: &str) -> &str {
    if dir.is_empty() {
        "the workspace root"
    } else {
        dir
    }
}

fn is_path(spec: &str) -> bool {
    spec == "." || spec == ".." || spec.starts_with("./") || spec.starts_with("../")
}

/// Whether the relative `path`, written in the project at `from_dir`, names `target_dir`.
fn names_dir(from_dir: &str, path: &str, target_dir: &str) -> bool {
    let mut parts: Vec<&str> = from_dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return false; // Above the root: not a workspace project.
                }
            }
            _ => parts.push(part),
        }
    }
    parts.join("/") == target_dir
}

/// The strongly connected component of each node, by Tarjan's algorithm run with an explicit
/// stack: project graphs can be deep enough to overflow the call stack.
fn components(edges: &[BTreeMap<usize, ProjectEdge>]) -> Vec<usize> {
    const UNSEEN: usize = usize::MAX;
    let n = edges.len();
    let successors: Vec<Vec<usize>> = edges.iter().map(|e| e.keys().copied().collect()).collect();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut component = vec![UNSEEN; n];
    let mut stack = Vec::new();
    let mut next_index = 0;
    let mut next_component = 0;
    // Each frame: a node and how many of its successors have been looked at.
    let mut frames: Vec<(usize, usize)> = Vec::new();
    for start in 0..n {
        if index[start] != UNSEEN {
            continue;
        }
        frames.push((start, 0));
        index[start] = next_index;
        low[start] = next_index;
        next_index += 1;
        stack.push(start);
        on_stack[start] = true;
        while let Some(&mut (node, ref mut cursor)) = frames.last_mut() {
            if let Some(&next) = successors[node].get(*cursor) {
                *cursor += 1;
                if index[next] == UNSEEN {
                    index[next] = next_index;
                    low[next] = next_index;
                    next_index += 1;
                    stack.push(next);
                    on_stack[next] = true;
                    frames.push((next, 0));
                } else if on_stack[next] {
                    low[node] = low[node].min(index[next]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(parent, _)) = frames.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == index[node] {
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    component[member] = next_component;
                    if member == node {
                        break;
                    }
                }
                next_component += 1;
            }
        }
    }
    component
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(n: usize, pairs: &[(usize, usize)]) -> Vec<BTreeMap<usize, ProjectEdge>> {
        let mut edges = vec![BTreeMap::new(); n];
        for &(from, to) in pairs {
            edges[from].insert(
                to,
                ProjectEdge {
                    to: to.to_string(),
                    kind: EdgeKind::Normal,
                    at: Default::default(),
                },
            );
        }
        edges
    }

    #[test]
    fn components_group_cycles() {
        let c = components(&graph(5, &[(0, 1), (1, 2), (2, 0), (2, 3), (3, 4)]));
        assert!(c[0] == c[1] && c[1] == c[2]);
        assert!(c[3] != c[0] && c[4] != c[3]);
    }

    #[test]
    fn components_survive_a_long_chain() {
        let n = 200_000;
        let pairs: Vec<(usize, usize)> =
            (0..n - 1).map(|i| (i, i + 1)).chain([(n - 1, 0)]).collect();
        let c = components(&graph(n, &pairs));
        assert!(c.iter().all(|&x| x == c[0]));
    }

    #[test]
    fn relative_paths_name_directories() {
        assert!(names_dir("apps/web", "../../packages/ui", "packages/ui"));
        assert!(names_dir("apps/web", "../../packages/ui/", "packages/ui"));
        assert!(!names_dir("apps/web", "../ui", "packages/ui"));
        assert!(!names_dir("", "../x", "x"));
    }
}
