//! What `vx watch` watches and which changes count (WATCH-2 to WATCH-4).
//!
//! How this works: [`Scope::from_plan`] takes the run's plan: the directories of every project
//! the run reaches, watched recursively minus nested projects; the root and the parent
//! directory of each member glob, watched alone; the whole root instead when a task declares
//! `workspace-inputs`. [`Scope::directories`] walks the recursive ones (skipping
//! `node_modules`, `.git`, `.vx`, the cache directory and git-ignored directories), since
//! every directory is watched on its own (a recursive inotify watch would descend into
//! `node_modules`). [`Scope::may_trigger`] rules out what never triggers: those directories,
//! editor backups (`*~`), vx's probe file and the declared outputs of the run's tasks (unless
//! another task lists them as inputs); git-ignored files are ruled out by the caller, with one
//! `git check-ignore` per cycle. [`Fingerprint`] is what a path's change is judged by: its
//! bytes, mode and symlink target (a `touch` is not a change).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use vx_core::globs::{literal_prefix, GlobCache, TaskGlobs};

use vx_engine::plan::Plan;

/// The file vx writes to learn whether the watcher delivers events (WATCH-6).
pub const PROBE_FILE: &str = ".vx-watch-probe";

/// Directory names never watched and never a trigger.
const NEVER: [&str; 3] = ["node_modules", ".git", ".vx"];

pub struct Scope {
    root: PathBuf,
    /// Walked: every directory below is watched.
    trees: Vec<PathBuf>,
    /// Watched alone.
    flat: Vec<PathBuf>,
    /// The directories new projects appear in (`packages` for `packages/*`).
    member_parents: Vec<PathBuf>,
    /// Never walked into from a tree above them: other projects (each is a tree of its own
    /// if the run reaches it) and the cache directory.
    skip: BTreeSet<PathBuf>,
    cache_dir: PathBuf,
    /// Declared outputs and inputs of the run's tasks, with their project directories; the
    /// index says which task each belongs to.
    outputs: Vec<(usize, PathBuf, Arc<TaskGlobs>)>,
    inputs: Vec<(usize, PathBuf, Arc<TaskGlobs>)>,
    /// Projects with an uncached task: their git-ignored files count too (an uncached task
    /// may read anything in its project).
    uncached: Vec<PathBuf>,
    /// Inputs named literally (no wildcard), which count even when git ignores them (KEY-10).
    literal_inputs: Vec<PathBuf>,
    /// Every project's directory, the root's included: which project a path belongs to.
    projects: Vec<PathBuf>,
}

impl Scope {
    pub fn from_plan(plan: &Plan, cache_dir: &Path) -> Scope {
        let ws = &plan.workspace;
        let root = ws.root.clone();
        // The root is canonical; a cache directory reached through a symbolic link must be
        // compared in the same terms.
        let cache_dir = &cache_dir
            .canonicalize()
            .unwrap_or_else(|_| cache_dir.to_path_buf());
        let reached: BTreeSet<usize> = plan.graph.nodes.iter().map(|n| n.project).collect();
        let mut globs = GlobCache::default();
        let mut outputs = Vec::new();
        let mut inputs = Vec::new();
        let mut whole_root = false;
        let mut uncached = Vec::new();
        let mut literal_inputs = Vec::new();
        for (task, node) in plan.graph.nodes.iter().enumerate() {
            let dir = root.join(&ws.projects[node.project].dir);
            let Some(config) = vx_core::graph::task_config(ws, &node.id) else {
                continue;
            };
            let Some(cache) = config.cache.as_deref() else {
                if config.command.is_some() {
                    uncached.push(dir);
                }
                continue;
            };
            for input in cache.inputs.iter().flatten() {
                if vx_core::globs::is_literal(input) {
                    literal_inputs.push(dir.join(input));
                }
            }
            for input in &cache.workspace_inputs {
                if vx_core::globs::is_literal(input) {
                    literal_inputs.push(root.join(input));
                }
            }
            whole_root |= !cache.workspace_inputs.is_empty();
            if let Some(list) = &cache.outputs {
                outputs.push((task, dir.clone(), globs.get(list)));
            }
            if let Some(list) = &cache.inputs {
                inputs.push((task, dir, globs.get(list)));
            }
        }
        let mut member_parents = Vec::new();
        // `packages/*` → `packages`, where new members appear; a literal member (`tools/cli`)
        // → its parent.
        for member in ws.settings.members.iter().flatten() {
            let glob = member.value.trim_end_matches('/');
            let parent = if vx_core::globs::is_literal(glob) {
                Path::new(glob).parent().unwrap_or(Path::new(""))
            } else {
                Path::new(literal_prefix(glob))
            };
            member_parents.push(root.join(parent));
        }
        member_parents.sort();
        member_parents.dedup();
        let mut flat = member_parents.clone();
        flat.push(root.clone());
        flat.sort();
        flat.dedup();
        let trees = if whole_root {
            vec![root.clone()]
        } else {
            reached
                .iter()
                .map(|&p| root.join(&ws.projects[p].dir))
                .collect()
        };
        // Nested projects are trees of their own when the run reaches them; with the whole
        // root watched, every project is in it.
        let mut skip: BTreeSet<PathBuf> = if whole_root {
            BTreeSet::new()
        } else {
            ws.projects
                .iter()
                .map(|p| root.join(&p.dir))
                .filter(|dir| *dir != root)
                .collect()
        };
        skip.insert(cache_dir.to_path_buf());
        let projects = ws.projects.iter().map(|p| root.join(&p.dir)).collect();
        Scope {
            root,
            trees,
            flat,
            member_parents,
            skip,
            cache_dir: cache_dir.to_path_buf(),
            outputs,
            inputs,
            uncached,
            literal_inputs,
            projects,
        }
    }

    /// The directory of the project `path` belongs to: the deepest one containing it.
    fn project_of(&self, path: &Path) -> Option<&PathBuf> {
        self.projects
            .iter()
            .filter(|dir| path.starts_with(dir))
            .max_by_key(|dir| dir.components().count())
    }

    /// WATCH-3's exceptions: a git-ignored `path` that still counts, in a project with an
    /// uncached task or named literally as an input.
    pub fn counts_though_ignored(&self, path: &Path) -> bool {
        // The project the path belongs to, not a project around it (KEY-12).
        self.project_of(path)
            .is_some_and(|project| self.uncached.contains(project))
            || self
                .literal_inputs
                .iter()
                .any(|input| path.starts_with(input))
    }

    /// Every directory to watch, each once (non-recursively).
    pub fn directories(&self) -> Vec<PathBuf> {
        let mut dirs: BTreeSet<PathBuf> =
            self.flat.iter().filter(|d| d.is_dir()).cloned().collect();
        for tree in &self.trees {
            dirs.extend(self.walk(tree));
        }
        dirs.into_iter().collect()
    }

    /// The directories of `tree` and below, as [`Scope::directories`] walks them.
    pub fn walk(&self, tree: &Path) -> Vec<PathBuf> {
        self.walk_with(tree, &self.skip)
    }

    /// Like [`Scope::walk`] into a new project, which the scope does not know as one yet.
    pub fn walk_all(&self, tree: &Path) -> Vec<PathBuf> {
        let only_cache: BTreeSet<PathBuf> = [self.cache_dir.clone()].into();
        self.walk_with(tree, &only_cache)
    }

    fn walk_with(&self, tree: &Path, skip: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
        let top = tree.to_path_buf();
        let skip = skip.clone();
        // In a project with an uncached task ignored directories are watched too.
        let honour_ignores = !self.uncached.iter().any(|dir| tree.starts_with(dir));
        let walker = ignore::WalkBuilder::new(tree)
            .hidden(false)
            .parents(true)
            .git_ignore(honour_ignores)
            .git_exclude(honour_ignores)
            .git_global(false)
            .require_git(false)
            .filter_entry(move |entry| {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy();
                path == top || (!NEVER.contains(&name.as_ref()) && !skip.contains(path))
            })
            .build();
        walker
            .flatten()
            .filter(|entry| entry.file_type().is_some_and(|t| t.is_dir()))
            .map(|entry| entry.into_path())
            .collect()
    }

    /// Whether `dir` is a directory new projects appear in (WATCH-2).
    pub fn is_member_parent(&self, dir: &Path) -> bool {
        self.member_parents.iter().any(|p| p == dir)
    }

    /// Whether a directory created at `path` belongs to a watched tree.
    pub fn in_tree(&self, path: &Path) -> bool {
        self.trees.iter().any(|t| path.starts_with(t))
            && !self
                .skip
                .iter()
                .any(|s| path.starts_with(s) && !self.trees.contains(s))
            && self.may_trigger(path)
    }

    /// WATCH-3: whether a change at `path` may start a cycle (git-ignored paths aside).
    pub fn may_trigger(&self, path: &Path) -> bool {
        let Ok(rel) = path.strip_prefix(&self.root) else {
            return false;
        };
        if rel
            .components()
            .any(|c| NEVER.contains(&c.as_os_str().to_string_lossy().as_ref()))
        {
            return false;
        }
        if path.starts_with(&self.cache_dir) {
            return false;
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if name
            .as_deref()
            .is_some_and(|n| n.ends_with('~') || n == PROBE_FILE)
        {
            return false;
        }
        // The tasks whose globs select the path.
        let selecting = |lists: &[(usize, PathBuf, Arc<TaskGlobs>)]| -> BTreeSet<usize> {
            lists
                .iter()
                .filter(|(_, dir, globs)| {
                    path.strip_prefix(dir)
                        .is_ok_and(|p| globs.is_match(&p.to_string_lossy()))
                })
                .map(|(task, _, _)| *task)
                .collect()
        };
        let producers = selecting(&self.outputs);
        if producers.is_empty() {
            return true;
        }
        // An output counts only when another task reads it (a task's own inputs covering its
        // outputs, `inputs = ["**"]`, do not make them a change).
        selecting(&self.inputs)
            .iter()
            .any(|reader| producers.iter().any(|producer| producer != reader))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// What a change of a path is judged by (WATCH-4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fingerprint {
    Missing,
    File {
        mode: u32,
        hash: blake3::Hash,
    },
    Link(PathBuf),
    Directory,
    /// Anything else (a socket, a FIFO): only whether it is there.
    Other,
}

impl Fingerprint {
    pub fn of(path: &Path) -> Fingerprint {
        use std::os::unix::fs::PermissionsExt;
        let Ok(meta) = path.symlink_metadata() else {
            return Fingerprint::Missing;
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            return std::fs::read_link(path).map_or(Fingerprint::Missing, Fingerprint::Link);
        }
        if kind.is_dir() {
            return Fingerprint::Directory;
        }
        if !kind.is_file() {
            return Fingerprint::Other;
        }
        let mut hasher = blake3::Hasher::new();
        match std::fs::File::open(path).and_then(|mut f| std::io::copy(&mut f, &mut hasher)) {
            Ok(_) => Fingerprint::File {
                mode: meta.permissions().mode(),
                hash: hasher.finalize(),
            },
            Err(_) => Fingerprint::Missing,
        }
    }
}
