//! Lockfiles read per project (KEY-3): which external packages, at which resolved versions,
//! each project of the workspace installs. Start at [`read`].
//!
//! # How this works
//!
//! Each reader (`pnpm`, `npm`, `yarn` for both yarn 1 and yarn berry, `bun`) turns its file
//! into one [`Graph`]: the *importers* (the workspace members the lockfile installs, by
//! root-relative directory) with their direct dependencies, and the resolved *packages* with
//! theirs. An edge leads to a package, to another workspace member (a `workspace:` or
//! `link:` dependency), or is unresolved (named in the manifest, missing from the lockfile).
//!
//! A project's dependency set is then the closure of its importer: its own dependencies of
//! every kind, the packages those depend on, transitively, and through each workspace member
//! it links to, that member's non-development dependencies — what the project's code can
//! import. The root importer's closure is added to every set: tools installed at the root
//! (`typescript`, a bundler) run in every package's scripts. A project the lockfile does not
//! list gets the root's set alone. Each set is sorted, deduplicated and digested, so a task
//! folds one digest for its project instead of the whole file, and a dependency bump moves
//! only the keys of the projects that install it.
//!
//! A file vx cannot read (binary `bun.lockb`, an old format, a syntax error) is an error
//! here; the caller folds the whole file instead and says so once.

mod bun;
mod graph;
mod npm;
mod pnpm;
pub mod prune;
mod yarn;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use vx_core::key::DependencySet;

use graph::{Edge, Graph};

/// The lockfiles read per project, in KEY-3's order. The other workspace-fingerprint files
/// are folded whole.
pub const PER_PROJECT: [&str; 5] = [
    "pnpm-lock.yaml",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "bun.lock",
];

/// bun's binary lockfile: a fingerprint file vx folds whole, with a notice (it cannot read it).
pub const BINARY: &str = "bun.lockb";

/// Whether `file` is a lockfile, read per project or not ([`PER_PROJECT`], [`BINARY`]).
pub fn is_lockfile(file: &str) -> bool {
    PER_PROJECT.contains(&file) || file == BINARY
}

/// A lockfile read per project: its graph, and each member's set computed when first asked
/// for (a key needs its own project's; a workspace of thousands of members need not walk them
/// all for one executed task).
#[derive(Debug)]
pub struct Lockfile {
    file: String,
    graph: Graph,
    resolved: Resolved,
    /// The root importer's set: what a project the lockfile does not list folds, and part of
    /// every listed member's set.
    root: Arc<DependencySet>,
    /// The members' sets computed so far, by root-relative directory.
    sets: Mutex<HashMap<String, Arc<DependencySet>>>,
}

impl Lockfile {
    fn new(file: &str, graph: Graph) -> Lockfile {
        let resolved = Resolved::new(&graph);
        let root = Arc::new(DependencySet::new(file, resolved.closure(&graph, "")));
        Lockfile {
            file: file.to_string(),
            graph,
            resolved,
            root,
            sets: Mutex::default(),
        }
    }

    /// The set a project in the root-relative `dir` folds: its closure with the root's added,
    /// or the root's alone when the lockfile does not list it.
    pub fn project(&self, dir: &str) -> Arc<DependencySet> {
        if dir.is_empty() || !self.resolved.members.contains_key(dir) {
            return self.root.clone();
        }
        let mut sets = self.sets.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(set) = sets.get(dir) {
            return set.clone();
        }
        let mut closure = self.resolved.closure(&self.graph, dir);
        closure.extend(self.root.packages.iter().cloned());
        let set = Arc::new(DependencySet::new(&self.file, closure));
        sets.insert(dir.to_string(), set.clone());
        set
    }

    /// The set a project the lockfile does not list folds: the root's.
    pub fn unlisted(&self) -> Arc<DependencySet> {
        self.root.clone()
    }

    /// The directories the lockfile lists, sorted.
    pub fn importers(&self) -> Vec<&str> {
        let mut dirs: Vec<&str> = self.graph.importers.keys().map(String::as_str).collect();
        dirs.sort_unstable();
        dirs
    }
}

/// Why a lockfile could not be read per project (its key then folds the whole file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LockfileError {
    #[error("a binary lockfile, which vx does not read")]
    Binary,
    #[error("not UTF-8 text")]
    NotUtf8,
    #[error("not a lockfile")]
    Unknown,
    /// The format's reader refused it: what it could not follow.
    #[error("{0}")]
    Format(String),
}

/// Reads `file` (a name of [`PER_PROJECT`]) from its bytes. `manifest` returns the
/// `package.json` text of a root-relative directory, for the formats that keep importers'
/// dependencies there (yarn 1) or do not say which are development ones (yarn berry);
/// `members` are the root-relative directories of the workspace's projects.
pub fn read(
    file: &str,
    bytes: &[u8],
    members: &[&str],
    manifest: &dyn Fn(&str) -> Option<String>,
) -> Result<Lockfile, LockfileError> {
    if file == BINARY {
        return Err(LockfileError::Binary);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| LockfileError::NotUtf8)?;
    let graph = match file {
        "pnpm-lock.yaml" => pnpm::read(text),
        "package-lock.json" | "npm-shrinkwrap.json" => npm::read(text),
        "yarn.lock" => yarn::read(text, members, manifest),
        "bun.lock" => bun::read(text),
        _ => return Err(LockfileError::Unknown),
    }
    .map_err(LockfileError::Format)?;
    Ok(Lockfile::new(file, graph))
}

/// One step of a walk over the graph, with members resolved to their place once.
#[derive(Debug, Clone, Copy)]
enum Step {
    Package(usize),
    Member(usize),
    /// A member the lockfile does not install: it leads nowhere.
    Nowhere,
    /// An index into [`Resolved::unresolved`].
    Unresolved(usize),
}

/// The graph with every edge resolved to an index, so that walking it for each of a thousand
/// members compares no strings.
#[derive(Debug)]
struct Resolved {
    members: HashMap<String, usize>,
    member_deps: Vec<Vec<Step>>,
    member_dev: Vec<Vec<Step>>,
    package_deps: Vec<Vec<Step>>,
    /// (name, what the manifest asks for) of each edge the lockfile does not resolve.
    unresolved: Vec<(String, String)>,
}

impl Resolved {
    fn new(graph: &Graph) -> Resolved {
        let members: HashMap<String, usize> = graph
            .importers
            .keys()
            .enumerate()
            .map(|(i, dir)| (dir.clone(), i))
            .collect();
        let mut unresolved = Vec::new();
        let mut steps = |edges: &[Edge]| -> Vec<Step> {
            edges
                .iter()
                .map(|edge| match edge {
                    Edge::Package(i) => Step::Package(*i),
                    Edge::Workspace(member) => members
                        .get(member.as_str())
                        .map_or(Step::Nowhere, |&i| Step::Member(i)),
                    Edge::Unresolved(name, wanted) => {
                        unresolved.push((name.clone(), wanted.clone()));
                        Step::Unresolved(unresolved.len() - 1)
                    }
                })
                .collect()
        };
        let mut member_deps = vec![Vec::new(); members.len()];
        let mut member_dev = vec![Vec::new(); members.len()];
        for (dir, importer) in &graph.importers {
            let i = members[dir.as_str()];
            member_deps[i] = steps(&importer.deps);
            member_dev[i] = steps(&importer.dev);
        }
        let package_deps = graph.packages.iter().map(|p| steps(&p.deps)).collect();
        Resolved {
            members,
            member_deps,
            member_dev,
            package_deps,
            unresolved,
        }
    }

    /// The (name, version) pairs the importer in `dir` reaches (see the module documentation).
    fn closure(&self, graph: &Graph, dir: &str) -> BTreeSet<(String, String)> {
        let mut out = BTreeSet::new();
        let Some(&start) = self.members.get(dir) else {
            return out;
        };
        let mut seen_packages = vec![false; graph.packages.len()];
        let mut seen_members = vec![false; self.member_deps.len()];
        seen_members[start] = true;
        let mut stack: Vec<Step> = self.member_deps[start]
            .iter()
            .chain(&self.member_dev[start])
            .copied()
            .collect();
        while let Some(step) = stack.pop() {
            match step {
                Step::Package(i) => {
                    if std::mem::replace(&mut seen_packages[i], true) {
                        continue;
                    }
                    let package = &graph.packages[i];
                    out.insert((package.name.clone(), package.version.clone()));
                    stack.extend(&self.package_deps[i]);
                }
                Step::Member(i) => {
                    if !std::mem::replace(&mut seen_members[i], true) {
                        stack.extend(&self.member_deps[i]);
                    }
                }
                Step::Nowhere => {}
                Step::Unresolved(i) => {
                    let (name, wanted) = &self.unresolved[i];
                    out.insert((name.clone(), format!("{wanted} (not in the lockfile)")));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
