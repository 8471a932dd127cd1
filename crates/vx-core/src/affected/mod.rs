//! `--affected` and changed-since filters, the pure half (SEL-3, SEL-5, SEL-7): which refs are
//! accepted, which tasks a set of changed paths *seeds*, and which tasks reach a seeded task
//! through their `depends-on` closure. Start at [`seed`].
//!
//! The binary asks git for the changed paths (`vx::run::affected`); everything here is a
//! function of those paths, the workspace and the task table, so it is tested without git.
//!
//! # How this works
//!
//! [`seed`] goes through the changed paths in order. A root file that fingerprints the whole
//! workspace (KEY-3, the root `vx.toml`, `pnpm-workspace.yaml`, the root `package.json`)
//! seeds every task, but a lockfile read per project seeds the tasks of the projects whose
//! dependency set moved, which the binary works out and writes in [`ChangedPath::only`]. Otherwise the path's owner — the deepest project containing it (DISC-6) —
//! is looked at: its `vx.toml` or `package.json` seeds all its tasks; a path matching a cached
//! task's `inputs` (and not its own outputs) seeds that task; any path seeds the owner's
//! uncached tasks. `workspace-inputs` are matched root-relative for every cached task, across
//! project boundaries. A *subtree* change (a submodule or a nested repository, which git
//! reports as one path) seeds every task of the projects under it, and the owner's tasks
//! whose inputs could match below it. Group tasks are never seeded. Each seeded task keeps
//! the first changed path (in path order) that seeded it.
//!
//! [`reach`] then walks the task table backwards from the seeded tasks, breadth first, so
//! every task whose closure contains a seeded task gets the shortest chain to one (SEL-7).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::config::{CacheConfig, LOCK_FILE};
use crate::diagnostic::Diagnostic;
use crate::globs::{literal_prefix, TaskGlobs};
use crate::graph::TaskTable;
use crate::id::TaskId;
use crate::key::WORKSPACE_FILES;
use crate::project::Workspace;

/// Root files besides KEY-3's whose change seeds every task (SEL-5).
pub const ROOT_CONFIG_FILES: [&str; 3] = ["vx.toml", "pnpm-workspace.yaml", "package.json"];

/// Why a base ref is refused before git sees it (SEL-3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefProblem {
    Empty,
    /// Starts with `-`: git would read it as an option.
    Dash,
    /// `a..b`, or `a...b` with `b` other than `HEAD`.
    Range {
        base: String,
    },
    /// `^a`.
    Exclusion {
        base: String,
    },
    /// `a:path` (a blob or tree, not a commit).
    Path {
        base: String,
    },
}

/// Where a ref was written, for the wording of a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefSite<'a> {
    /// `--affected=<ref>`.
    Flag,
    /// `[workspace] affected-base`.
    Config,
    /// A `[<ref>]` filter, whole text given.
    Filter(&'a str),
}

impl RefProblem {
    /// The base to pass instead, when one can be named.
    pub fn base(&self) -> Option<&str> {
        match self {
            RefProblem::Empty | RefProblem::Dash => None,
            RefProblem::Range { base }
            | RefProblem::Exclusion { base }
            | RefProblem::Path { base } => Some(base),
        }
    }

    /// The refusal: what is wrong with `text`, and what to write instead.
    pub fn diagnostic(&self, text: &str, site: RefSite<'_>) -> Diagnostic {
        let what = match self {
            RefProblem::Empty => "names no ref".to_string(),
            RefProblem::Dash => format!("`{text}` starts with `-`"),
            RefProblem::Range { .. } => format!("`{text}` is a range"),
            RefProblem::Exclusion { .. } => format!("`{text}` is an exclusion"),
            RefProblem::Path { .. } => format!("`{text}` names a path inside a commit"),
        };
        let message = match site {
            RefSite::Flag if *self == RefProblem::Empty => "`--affected=` names no ref".to_string(),
            RefSite::Flag => format!("--affected takes one base ref; {what}"),
            RefSite::Config => format!("affected-base takes one base ref; {what}"),
            RefSite::Filter(filter) => format!("invalid filter `{filter}`: the ref {what}")
                .replace("the ref names no ref", "the ref is empty"),
        };
        let hint = match (self.base(), site) {
            (Some(base), RefSite::Flag) => format!("pass `--affected={base}` instead"),
            (Some(base), RefSite::Config) => format!("write `affected-base = \"{base}\"` instead"),
            (Some(base), RefSite::Filter(filter)) => {
                let start = filter.rfind('[').unwrap_or(0);
                format!("write `{}[{base}]` instead", &filter[..start])
            }
            (None, RefSite::Flag) => {
                "pass a branch, tag or commit, e.g. `--affected=origin/main`, or `--affected` alone for the default base".to_string()
            }
            (None, _) => "name a branch, tag or commit, e.g. `origin/main`".to_string(),
        };
        Diagnostic::new(message).hint(hint)
    }
}

/// SEL-3: checks a base ref before it is handed to git, and returns the ref to use
/// (`a...HEAD` is read as `a`).
pub fn check_ref(text: &str) -> Result<String, RefProblem> {
    if text.is_empty() {
        return Err(RefProblem::Empty);
    }
    if text.starts_with('-') {
        return Err(RefProblem::Dash);
    }
    let or_head = |s: &str| {
        if s.is_empty() {
            "HEAD".to_string()
        } else {
            s.to_string()
        }
    };
    if let Some(rest) = text.strip_prefix('^') {
        return Err(RefProblem::Exclusion {
            base: or_head(rest.split("..").next().unwrap_or(rest)),
        });
    }
    if let Some((a, b)) = text.split_once("...") {
        if b.is_empty() || b == "HEAD" {
            return Ok(or_head(a));
        }
        return Err(RefProblem::Range { base: or_head(a) });
    }
    if let Some((a, _)) = text.split_once("..") {
        return Err(RefProblem::Range { base: or_head(a) });
    }
    // A colon inside a reflog selector (`main@{10:30}`) is part of the ref.
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ':' if depth == 0 => {
                return Err(RefProblem::Path {
                    base: or_head(&text[..i]),
                })
            }
            _ => {}
        }
    }
    Ok(text.to_string())
}

/// One path git reports as changed, root-relative.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ChangedPath {
    pub path: String,
    /// A submodule or nested repository: everything under `path` counts as changed (SEL-3).
    pub subtree: bool,
    /// A root lockfile read per project (KEY-3): the root-relative directories of the
    /// projects whose dependency set moved. Only their tasks are seeded; `None` seeds every
    /// task, as any other workspace-fingerprint file does.
    pub only: Option<Vec<String>>,
}

impl ChangedPath {
    pub fn file(path: impl Into<String>) -> ChangedPath {
        ChangedPath {
            path: path.into(),
            subtree: false,
            only: None,
        }
    }

    pub fn subtree(path: impl Into<String>) -> ChangedPath {
        ChangedPath {
            path: path.into(),
            subtree: true,
            only: None,
        }
    }
}

/// What a set of changed paths seeds (SEL-5).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seeds {
    /// Each seeded task with the first changed path (in path order) that seeded it.
    pub tasks: BTreeMap<TaskId, String>,
    /// Changed projects, for `[<ref>]` filters: those owning a changed path (DISC-6), those
    /// under a changed subtree, and those with a seeded task.
    pub projects: BTreeSet<usize>,
}

/// A cached task's globs, compiled once.
struct CachedGlobs {
    inputs: TaskGlobs,
    workspace_inputs: TaskGlobs,
    /// `dependency-inputs` (a `^name` input set), with the projects they are matched in.
    dependency_inputs: Option<(TaskGlobs, BTreeSet<usize>)>,
    outputs: TaskGlobs,
    workspace_outputs: TaskGlobs,
}

impl CachedGlobs {
    fn new(workspace: &Workspace, project: usize, cache: &CacheConfig) -> CachedGlobs {
        let list = |v: &[String]| TaskGlobs::new(v.iter().map(String::as_str));
        let dependency_inputs = (!cache.dependency_inputs.is_empty()).then(|| {
            let projects = workspace.dependency_closure(project).into_iter().collect();
            (list(&cache.dependency_inputs), projects)
        });
        CachedGlobs {
            inputs: list(cache.inputs.as_deref().unwrap_or_default()),
            workspace_inputs: list(&cache.workspace_inputs),
            dependency_inputs,
            outputs: list(cache.outputs.as_deref().unwrap_or_default()),
            workspace_outputs: list(&cache.workspace_outputs),
        }
    }

    /// Whether the change is one of the task's outputs (`rel`: relative to its project).
    fn is_output(&self, change: &ChangedPath, rel: &str) -> bool {
        self.outputs.is_match(rel) || self.workspace_outputs.is_match(&change.path)
    }

    /// Whether the change is an input of the task. `rel` is the path relative to the task's
    /// project when the project owns it (inputs never reach into nested projects, KEY-10).
    fn matches(&self, change: &ChangedPath, rel: Option<&str>) -> bool {
        if change.subtree {
            return rel.is_some_and(|rel| could_match_under(&self.inputs, rel))
                || could_match_under(&self.workspace_inputs, &change.path);
        }
        let own_output = rel.is_some_and(|rel| self.outputs.is_match(rel))
            || self.workspace_outputs.is_match(&change.path);
        let input = rel.is_some_and(|rel| self.inputs.is_match(rel))
            || self.workspace_inputs.is_match(&change.path);
        input && !own_output
    }
}

/// Whether some positive glob could match a path at or under `dir`: one literal prefix lies
/// at or under the other (the comparison of GRAPH-9).
fn could_match_under(globs: &TaskGlobs, dir: &str) -> bool {
    globs.positives().iter().any(|glob| {
        let prefix = literal_prefix(glob);
        prefix.is_empty() || is_at_or_under(prefix, dir) || is_at_or_under(dir, prefix)
    })
}

/// Whether the root-relative `path` is `dir` or lies below it (`dir` "" is the root).
fn is_at_or_under(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path == dir
        || (path.starts_with(dir) && path.as_bytes().get(dir.len()) == Some(&b'/'))
}

/// `path` relative to the root-relative `dir`.
fn relative<'a>(path: &'a str, dir: &str) -> &'a str {
    if dir.is_empty() {
        path
    } else {
        path.get(dir.len() + 1..).unwrap_or("")
    }
}

/// Whether a change of this root-relative path seeds every task (SEL-5).
pub fn is_workspace_file(path: &str) -> bool {
    ROOT_CONFIG_FILES.contains(&path) || WORKSPACE_FILES.contains(&path)
}

/// SEL-5: the tasks the changed paths seed; see the module documentation.
///
/// `frozen`: the run takes its configuration from `vx.lock` (INIT-5), so a changed lock seeds
/// every task as the root `vx.toml` does; otherwise the lock is in no key (KEY-13) and seeds
/// nothing.
pub fn seed(workspace: &Workspace, changed: &[ChangedPath], frozen: bool) -> Seeds {
    let mut changed: Vec<&ChangedPath> = changed.iter().collect();
    changed.sort();
    changed.dedup();
    let tasks_of = |p: usize| {
        let project = &workspace.projects[p];
        project
            .config
            .tasks
            .iter()
            .filter(|(_, task)| !task.is_group())
            .map(move |(name, task)| (TaskId::new(&project.name, name), task))
    };
    let cached: BTreeMap<TaskId, CachedGlobs> = (0..workspace.projects.len())
        .flat_map(|p| tasks_of(p).map(move |(id, task)| (p, id, task)))
        .filter_map(|(p, id, task)| {
            Some((id, CachedGlobs::new(workspace, p, task.cache.as_ref()?)))
        })
        .collect();
    // The globs of the owner's cached outputs, for `dependency-inputs`, which leave them out.
    let outputs_of = |p: usize| -> Vec<CachedGlobs> {
        workspace.projects[p]
            .config
            .tasks
            .values()
            .filter_map(|task| Some(CachedGlobs::new(workspace, p, task.cache.as_ref()?)))
            .collect()
    };
    let mut seeds = Seeds::default();
    let add = |seeds: &mut Seeds, id: TaskId, project: usize, path: &str| {
        seeds.projects.insert(project);
        seeds.tasks.entry(id).or_insert_with(|| path.to_string());
    };
    for change in changed {
        let path = change.path.as_str();
        // KEY-13: `vx.lock` is in no key, so it affects nothing unless the run reads it.
        let lock = !change.subtree && path == LOCK_FILE;
        if lock && !frozen {
            continue;
        }
        if lock || (!change.subtree && is_workspace_file(path)) {
            for p in 0..workspace.projects.len() {
                let dir = &workspace.projects[p].dir;
                if change.only.as_ref().is_some_and(|only| !only.contains(dir)) {
                    continue;
                }
                seeds.projects.insert(p);
                for (id, _) in tasks_of(p) {
                    add(&mut seeds, id, p, path);
                }
            }
            continue;
        }
        if change.subtree {
            for (p, project) in workspace.projects.iter().enumerate() {
                if is_at_or_under(&project.dir, path) {
                    seeds.projects.insert(p);
                    for (id, _) in tasks_of(p) {
                        add(&mut seeds, id, p, path);
                    }
                }
            }
        }
        let owner = workspace
            .project_containing(path)
            .filter(|o| !(change.subtree && o.dir == path))
            .map(|o| workspace.by_name[&o.name]);
        if let Some(o) = owner {
            seeds.projects.insert(o);
            let dir = &workspace.projects[o].dir;
            let rel = relative(path, dir);
            let manifest = !change.subtree && (rel == "vx.toml" || rel == "package.json");
            for (id, _) in tasks_of(o) {
                let seeded = manifest
                    || match cached.get(&id) {
                        Some(globs) => globs.matches(change, Some(rel)),
                        None => true,
                    };
                if seeded {
                    add(&mut seeds, id, o, path);
                }
            }
        }
        for (id, globs) in &cached {
            let p = workspace.by_name[&id.project];
            if Some(p) != owner && !globs.workspace_inputs.is_empty() && globs.matches(change, None)
            {
                add(&mut seeds, id.clone(), p, path);
            }
        }
        // A path of a project others fold through `^name` input sets seeds those tasks.
        if let Some(o) = owner {
            let rel = relative(path, &workspace.projects[o].dir);
            let mut owner_outputs: Option<Vec<CachedGlobs>> = None;
            for (id, globs) in &cached {
                let Some((dependency_inputs, projects)) = &globs.dependency_inputs else {
                    continue;
                };
                if !projects.contains(&o) {
                    continue;
                }
                let matched = if change.subtree {
                    could_match_under(dependency_inputs, rel)
                } else {
                    dependency_inputs.is_match(rel)
                        && !owner_outputs
                            .get_or_insert_with(|| outputs_of(o))
                            .iter()
                            .any(|out| out.is_output(change, rel))
                };
                if matched {
                    add(&mut seeds, id.clone(), workspace.by_name[&id.project], path);
                }
            }
        }
    }
    seeds
}

/// Why a task is in an `--affected` run (SEL-7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// The task is seeded by this changed path.
    Changed(String),
    /// The task depends, through `chain` (nearest first, ending at a seeded task), on a task
    /// seeded by `path`.
    Via { chain: Vec<TaskId>, path: String },
}

/// SEL-5, SEL-7: every task whose `depends-on` closure (itself included) contains a seeded
/// task, with the shortest chain to one. Ties go to the smallest task id at each step.
pub fn reach(table: &TaskTable, seeds: &Seeds) -> BTreeMap<TaskId, Reason> {
    let mut dependants: BTreeMap<&TaskId, Vec<&TaskId>> = BTreeMap::new();
    for (from, edges) in &table.edges {
        for edge in edges {
            dependants.entry(&edge.to).or_default().push(from);
        }
    }
    // The dependency through which each task was first reached.
    let mut via: BTreeMap<&TaskId, Option<&TaskId>> = BTreeMap::new();
    let mut queue: VecDeque<&TaskId> = VecDeque::new();
    for id in seeds.tasks.keys() {
        via.insert(id, None);
        queue.push_back(id);
    }
    while let Some(id) = queue.pop_front() {
        for &dependant in dependants.get(id).into_iter().flatten() {
            if !via.contains_key(dependant) {
                via.insert(dependant, Some(id));
                queue.push_back(dependant);
            }
        }
    }
    via.iter()
        .map(|(&id, &first)| {
            let Some(mut step) = first else {
                return (id.clone(), Reason::Changed(seeds.tasks[id].clone()));
            };
            let mut chain = vec![step.clone()];
            while let Some(&Some(next)) = via.get(step) {
                chain.push(next.clone());
                step = next;
            }
            let path = seeds.tasks[step].clone();
            (id.clone(), Reason::Via { chain, path })
        })
        .collect()
}

#[cfg(test)]
mod tests;
