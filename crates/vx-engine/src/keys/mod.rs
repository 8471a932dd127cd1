//! Deriving keys (KEY-1 …): gathering the facts each field of a key folds and handing them to
//! `vx_core::key` for encoding.
//!
//! How this works: [`Keys`] owns the run's file tree (one enumeration, KEY-10), the identity
//! memo loaded from the store (KEY-11), the runtime probe results (KEY-8, each probe at most
//! once per run) and every key derived so far. A task's key is asked for when the task is
//! ready (KEY-14); the upstream keys it folds are then already known, or — for upstreams the
//! run does not schedule (`--exclude-dependencies`, CLI-13) — derived on demand from the
//! current tree, iteratively, so a key never depends on which tasks the run scheduled.
//! Groups have a roll-up key; persistent tasks have none and are never folded (KEY-9).

mod cutoff;
mod hints;
mod inputs;
pub(crate) mod lockfiles;
mod predict;
mod unstable;
mod upstream;

pub use self::predict::DryFacts;
pub use self::unstable::{topological, unstable_nodes};

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use std::sync::Arc;
use vx_core::config::TaskConfig;

use vx_core::globs::{is_literal, GlobCache, TaskGlobs};
use vx_core::graph::{task_config, TaskGraph, TaskTable};
use vx_core::key::{group_key, task_config_json, InputFile, Key, KeyInputs, WORKSPACE_FILES};
use vx_core::{TaskId, Workspace};
use vx_workspace::tree::{FileId, Identity, StampMemo, Stat, Tree};

use crate::keys::lockfiles::Lockfiles;
use crate::plan::nodes::{Kind, Row};
use crate::plan::Plan;

/// A key and what it was derived from.
#[derive(Debug, Clone)]
pub struct Derived {
    pub key: Key,
    pub inputs: KeyInputs,
    /// Each path the key folds with what its identity was taken from, for the save guard
    /// (KEY-16), but the workspace-fingerprint files, which are in `workspace_stats`.
    pub stats: Vec<Folded>,
    /// The KEY-3 workspace-fingerprint files as folded: one list shared by every key derived
    /// while they were not looked at again.
    pub workspace_stats: Arc<[Folded]>,
    /// The wall-clock moment just before the identities were taken.
    pub taken_at: SystemTime,
}

/// One path a key folds: an input file, the manifest, or a workspace-fingerprint file.
#[derive(Debug, Clone)]
pub struct Folded {
    pub path: String,
    /// The `lstat` the identity was taken with; `None` when the path was absent.
    pub stat: Option<Stat>,
    /// (mode, blob id) as folded.
    pub identity: (&'static str, String),
    /// A KEY-3 workspace-fingerprint file: if it moves, caching is off for the rest of the run.
    pub fingerprint: bool,
}

/// A folded path as a snapshot keeps it: the path, and the (mode, blob id) it can be checked
/// against again by content (`None`: any change of it is a change).
pub type Kept = (String, Option<(&'static str, String)>);

impl Folded {
    /// What a snapshot keeps of it: the path, and the identity it can be checked against
    /// again when only its times moved (never a workspace-fingerprint file's, nor an absent
    /// one's).
    pub fn kept(&self) -> Kept {
        let checkable = !self.fingerprint && self.stat.is_some();
        (self.path.clone(), checkable.then(|| self.identity.clone()))
    }
}

fn folded(path: &str, found: &FileId, fingerprint: bool) -> Folded {
    Folded {
        path: path.to_string(),
        stat: found.stat,
        identity: match &found.identity {
            Identity::Present { mode, blob } => (mode.as_str(), blob.clone()),
            Identity::Absent => (vx_core::key::ABSENT_MODE, "absent".to_string()),
        },
        fingerprint,
    }
}

/// The workspace-fingerprint files as folded, and the (name, blob) pairs of those present.
type WorkspaceFiles = (Arc<[Folded]>, Vec<(String, String)>);

/// Why a key could not be derived; the task fails with this line (KEY-8, KEY-10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError(pub String);

/// Runs one runtime probe: `(directory, command, PATH)` → folded output or the failure text.
pub type Prober<'p> = Box<dyn FnMut(&Path, &str, &str) -> Result<String, String> + 'p>;

pub struct Keys<'p> {
    workspace: &'p Workspace,
    table: &'p TaskTable,
    graph: &'p TaskGraph,
    host_env: &'p BTreeMap<String, String>,
    forwarded: &'p [String],
    platform: String,
    pub tree: Tree,
    /// Root-relative scopes written since the tree listed them (outputs restored, cleaned or
    /// produced): listed again at once before anything next reads the tree.
    stale: Vec<String>,
    pub memo: StampCache,
    /// Per project index: root-relative directories of the projects nested inside it.
    nested: Vec<Vec<String>>,
    /// Boxed: a table of tens of thousands of tasks would otherwise hold a 352-byte slot per
    /// bucket, twice over while it grows (25 MB of the peak at 30,000 tasks).
    derived: HashMap<TaskId, Result<Box<Derived>, KeyError>>,
    /// What dependants fold for each settled task with outputs (KEY-9's early cutoff, see
    /// `cutoff.rs`).
    cut: HashMap<TaskId, String>,
    /// `--dry`: the tasks whose value in `cut` is a prediction from history.
    predicted: HashSet<TaskId>,
    /// The outputs record's facts: entry key → what that entry produced (`hints.rs`).
    hints: HashMap<String, String>,
    /// What dependants fold for a task not settled yet, from `hints`: a prediction the
    /// task's settling confirms or undoes.
    hinted: HashMap<TaskId, String>,
    /// Per task, the keys derived while its hinted value or provisional key was folded:
    /// (dependant, folded by key). Undone with it.
    assumers: HashMap<TaskId, Vec<(TaskId, bool)>>,
    /// Keys derived from a hinted value, directly or through another such key.
    provisional: HashSet<TaskId>,
    /// (key, produced) of each task others depend on that settled with an entry in this run,
    /// for the outputs record.
    pub settled: Vec<(String, String)>,
    /// `--dry`: what each key asked for assumes or waits for (`predict.rs`).
    facts: HashMap<TaskId, DryFacts>,
    /// Every task some task depends on (the targets of the table's edges).
    upstreams: HashSet<TaskId>,
    fingerprints: HashMap<(String, String), Key>,
    probes: HashMap<(PathBuf, String), Result<String, String>>,
    prober: Prober<'p>,
    /// `--summarize` lists every task's inputs: what a hit's key was derived from is kept.
    pub keep_inputs: bool,
    /// When the run may write a snapshot: the paths the keys of served hits folded, each once
    /// with its class (`Folded::kept`), kept when the rest of what they were derived from is
    /// dropped ([`Keys::keep_key_only`]); the snapshot's other paths join them at the end.
    pub folded: Option<crate::snapshot::Paths>,
    /// `no file matches` lines already printed (once per run, KEY-10).
    warned: HashSet<(TaskId, String)>,
    /// Lines for the caller to print (`vx: web#test: no file matches cache.inputs (…)`).
    pub notices: Vec<crate::outcome::Notice>,
    /// Compiled glob lists, shared by every task that spells the same list.
    globs: GlobCache,
    /// Identities of the files many keys fold (the root's lockfiles and package-manager files,
    /// each project's `package.json`), taken once while nothing has executed: thousands of
    /// keys derived up front would otherwise look at the same dozen files each.
    shared: HashMap<String, FileId>,
    /// The workspace-fingerprint files as folded and their fields, while `shared` holds.
    workspace_files: Option<WorkspaceFiles>,
    /// Input paths listed ahead by [`Keys::prefetch`], for the task's next derivation.
    listed: HashMap<TaskId, Result<Vec<String>, KeyError>>,
    /// Canonical configuration JSON (field 5) written ahead by [`Keys::prefetch`], on several
    /// threads: configuration does not change during a run.
    config_json: HashMap<TaskId, String>,
    /// The root lockfiles read per project (KEY-3).
    pub lockfiles: Lockfiles,
}

impl<'p> Keys<'p> {
    /// The keys of `plan`'s tasks; `forwarded` are the arguments after `--` (field 6).
    pub fn new(
        plan: &'p Plan,
        host_env: &'p BTreeMap<String, String>,
        forwarded: &'p [String],
        tree: Tree,
        memo: StampCache,
        prober: Prober<'p>,
        lockfiles: Lockfiles,
    ) -> Keys<'p> {
        let workspace = &plan.workspace;
        let nested = nested_projects(workspace);
        Keys {
            workspace,
            table: &plan.table,
            graph: &plan.graph,
            host_env,
            forwarded,
            platform: format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH),
            tree,
            stale: Vec::new(),
            memo,
            nested,
            derived: HashMap::new(),
            cut: HashMap::new(),
            predicted: HashSet::new(),
            hints: HashMap::new(),
            hinted: HashMap::new(),
            assumers: HashMap::new(),
            provisional: HashSet::new(),
            settled: Vec::new(),
            facts: HashMap::new(),
            upstreams: plan
                .table
                .edges
                .values()
                .flatten()
                .map(|edge| edge.to.clone())
                .collect(),
            fingerprints: HashMap::new(),
            probes: HashMap::new(),
            prober,
            warned: HashSet::new(),
            notices: Vec::new(),
            keep_inputs: false,
            folded: None,
            globs: GlobCache::default(),
            shared: HashMap::new(),
            workspace_files: None,
            listed: HashMap::new(),
            config_json: HashMap::new(),
            lockfiles,
        }
    }

    /// The key of `id`, derived now if it was not yet (with any upstream keys it needs).
    /// `None` for a persistent task, which has no key.
    pub fn key(&mut self, id: &TaskId) -> Option<Result<&Derived, KeyError>> {
        if is_persistent(self.workspace, id) {
            return None;
        }
        if !self.derived.contains_key(id) {
            self.settle();
        }
        // Post-order over upstreams that still need a key, without recursion (GRAPH-6).
        let mut stack = vec![(id.clone(), false)];
        while let Some((current, expanded)) = stack.pop() {
            if self.derived.contains_key(&current) {
                continue;
            }
            if expanded {
                let derived = self.derive(&current).map(Box::new);
                self.derived.insert(current, derived);
                continue;
            }
            stack.push((current.clone(), true));
            for edge in self.table.edges.get(&current).into_iter().flatten() {
                if !self.derived.contains_key(&edge.to) && !is_persistent(self.workspace, &edge.to)
                {
                    stack.push((edge.to.clone(), false));
                }
            }
        }
        Some(self.derived[id].as_deref().map_err(Clone::clone))
    }

    /// Forgets the key derived for `id`, so the next request derives it again from the tree
    /// as it is then (the restore lane keys a task up front; when it finds no entry, the task
    /// is keyed again when it is ready, KEY-14).
    pub fn forget(&mut self, id: &TaskId) {
        self.derived.remove(id);
        self.cut.remove(id);
        // A key folding this one is taken again too; one folding its hinted value waits for
        // what it settles with.
        self.undo_key_folds(id);
    }

    /// The key already derived for `id`, if any.
    pub fn known(&self, id: &TaskId) -> Option<&Derived> {
        self.derived.get(id).and_then(|d| d.as_deref().ok())
    }

    /// Root-relative directories of the projects nested inside project `project` (DISC-6).
    pub fn nested(&self, project: usize) -> &[String] {
        &self.nested[project]
    }

    pub fn graph(&self) -> &'p TaskGraph {
        self.graph
    }

    /// The identity of a path as it is now, as (mode, blob) of field 11.
    pub fn fresh_identity(&mut self, path: &str) -> Option<(&'static str, String)> {
        self.settle();
        match self.identity(path).ok()?.identity {
            Identity::Present { mode, blob } => Some((mode.as_str(), blob)),
            Identity::Absent => Some((vx_core::key::ABSENT_MODE, "absent".into())),
        }
    }

    /// The input paths of a task as the tree lists them now.
    pub fn input_listing(&mut self, task: Row<'_>) -> Result<Vec<String>, KeyError> {
        self.settle();
        let (id, config) = (task.id, task.config);
        let project = self.workspace.by_name[&id.project];
        let notices = self.notices.len();
        let listed = self.input_paths(id, project, config);
        self.notices.truncate(notices);
        listed
    }

    /// These root-relative scopes were written: the tree lists them again before it is next
    /// read. A run that restores a thousand outputs and derives no key after them lists each
    /// scope at most once, and all of them in one walk.
    pub fn changed(&mut self, scopes: &[String]) {
        self.stale.extend_from_slice(scopes);
    }

    /// Lists the scopes [`Keys::changed`] named again, now.
    pub fn settle(&mut self) {
        if !self.stale.is_empty() {
            let stale = std::mem::take(&mut self.stale);
            let _ = self.tree.refresh(&stale);
        }
    }

    /// Whether git tracks this root-relative path.
    /// (The scopes [`Keys::changed`] named hold no tracked file that a walk could add or
    /// remove: git's index says what is tracked.)
    pub fn is_tracked(&self, path: &str) -> bool {
        let files = self.tree.files();
        files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .is_ok_and(|i| files[i].tracked)
    }

    fn derive(&mut self, id: &TaskId) -> Result<Derived, KeyError> {
        let config = task_config(self.workspace, id).expect("every id is declared");
        let taken_at = SystemTime::now();
        if config.is_group() {
            let members: Vec<(String, String)> = self
                .table
                .edges
                .get(id)
                .into_iter()
                .flatten()
                .filter_map(|edge| {
                    let member = self.derived.get(&edge.to)?.as_ref().ok()?;
                    Some((edge.to.to_string(), member.key.hex()))
                })
                .collect();
            return Ok(Derived {
                key: group_key(&members),
                inputs: KeyInputs::default(),
                stats: Vec::new(),
                workspace_stats: Arc::from([]),
                taken_at,
            });
        }
        let project_index = self.workspace.by_name[&id.project];
        let project = &self.workspace.projects[project_index];
        let cache = config.cache.as_ref();
        let portable = cache.and_then(|c| c.portable).unwrap_or(false);
        let mut fields = KeyInputs {
            task: id.to_string(),
            platform: if portable {
                "any".into()
            } else {
                self.platform.clone()
            },
            config: match self.config_json.remove(id) {
                Some(json) => json,
                None => task_config_json(config),
            },
            ..KeyInputs::default()
        };
        let mut stats = Vec::new();
        let (workspace_stats, workspace_fields) = self.workspace_files()?;
        fields.workspace = workspace_fields;
        // A lockfile folds the packages this project installs, not the whole file (KEY-3).
        for (file, folded) in fields.workspace.iter_mut() {
            if let Some(digest) =
                self.lockfiles
                    .digest(file, folded, &project.dir, &mut self.notices)
            {
                *folded = digest;
            }
        }
        let manifest = join(&project.dir, "package.json");
        let found = self.shared_identity(&manifest)?;
        stats.push(folded(&manifest, &found, false));
        if let Identity::Present { blob, .. } = found.identity {
            fields.manifest = Some(blob);
        }

        let requested = self
            .graph
            .index
            .get(id)
            .is_some_and(|&i| self.graph.nodes[i].requested);
        if requested {
            fields.args = self.forwarded.to_vec();
        }

        if let Some(cache) = cache {
            for entry in &cache.env {
                match entry.strip_suffix('*') {
                    Some(prefix) => fields.env.extend(
                        self.host_env
                            .iter()
                            .filter(|(k, _)| k.starts_with(prefix))
                            .map(|(k, v)| (k.clone(), Some(v.clone()))),
                    ),
                    None => fields
                        .env
                        .push((entry.clone(), self.host_env.get(entry).cloned())),
                }
            }
            if !cache.runtime.is_empty() {
                let dir = self.workspace.root.join(&project.dir);
                let project_path = self.bin_path(Some(&dir));
                for command in &cache.runtime {
                    let output = self.probe(id, &dir, command, &project_path)?;
                    fields.runtime.push((command.clone(), output));
                }
            }
            if !cache.workspace_runtime.is_empty() {
                let root = self.workspace.root.clone();
                let root_path = self.bin_path(None);
                for command in &cache.workspace_runtime {
                    let output = self.probe(id, &root, command, &root_path)?;
                    fields.workspace_runtime.push((command.clone(), output));
                }
            }
        }

        self.upstream(id, config, &mut fields)?;

        let paths = match self.listed.remove(id) {
            Some(listed) => listed?,
            None => self.input_paths(id, project_index, config)?,
        };
        let mut literals: Option<Vec<String>> = None;
        for path in paths {
            let found = self.identity(&path)?;
            stats.push(folded(&path, &found, false));
            match found.identity {
                Identity::Present { mode, blob } => fields.inputs.push(InputFile {
                    path,
                    mode: mode.as_str(),
                    blob,
                }),
                // A tracked file deleted from the work tree is not a file of the project
                // (identity is of the work tree, KEY-11): staging or committing the deletion
                // must not move the key. A literal entry still folds as absent (KEY-10), and
                // the save guard watches the path either way.
                Identity::Absent => {
                    let literal = match &literals {
                        Some(list) => list.contains(&path),
                        None => {
                            let list = match cache {
                                Some(c) => {
                                    let inputs =
                                        self.globs.get(c.inputs.as_deref().unwrap_or_default());
                                    let wide = self.globs.get(&c.workspace_inputs);
                                    literal_inputs(&project.dir, &inputs, &wide)
                                }
                                None => Vec::new(),
                            };
                            let found = list.contains(&path);
                            literals = Some(list);
                            found
                        }
                    };
                    if literal || !self.is_tracked(&path) {
                        fields.inputs.push(InputFile::absent(path));
                    }
                }
            }
        }
        fields.normalise();
        Ok(Derived {
            key: fields.derive(),
            inputs: fields,
            stats,
            workspace_stats,
            taken_at,
        })
    }

    /// A hit of `id` was served: from now on only its key is asked for (folded by dependants,
    /// written to history), so what it was derived from is dropped; a large run keeps
    /// thousands of these.
    pub fn keep_key_only(&mut self, id: &TaskId) {
        if self.keep_inputs {
            return;
        }
        if let Some(Ok(derived)) = self.derived.get_mut(id) {
            if let Some(folded) = &mut self.folded {
                for kept in derived.stats.iter().chain(derived.workspace_stats.iter()) {
                    let (path, identity) = kept.kept();
                    folded.folded(path, identity);
                }
            }
            // Field 10 stays: what a dependant folds for this task when it cuts off folds it.
            derived.inputs = KeyInputs {
                upstream: std::mem::take(&mut derived.inputs.upstream),
                ..KeyInputs::default()
            };
            derived.stats = Vec::new();
            derived.workspace_stats = Arc::from([]);
        }
    }

    /// The workspace-fingerprint files (KEY-3) as every key folds them now.
    fn workspace_files(&mut self) -> Result<WorkspaceFiles, KeyError> {
        if let Some((stats, fields)) = &self.workspace_files {
            return Ok((stats.clone(), fields.clone()));
        }
        let mut stats = Vec::with_capacity(WORKSPACE_FILES.len());
        let mut fields = Vec::new();
        for name in WORKSPACE_FILES {
            let found = self.shared_identity(name)?;
            stats.push(folded(name, &found, true));
            if let Identity::Present { blob, .. } = found.identity {
                fields.push((name.to_string(), blob));
            }
        }
        let stats: Arc<[Folded]> = stats.into();
        self.workspace_files = Some((stats.clone(), fields.clone()));
        Ok((stats, fields))
    }

    /// The identity of a file many keys fold, looked at once until something executes.
    fn shared_identity(&mut self, path: &str) -> Result<FileId, KeyError> {
        if let Some(found) = self.shared.get(path) {
            return Ok(found.clone());
        }
        let found = self.identity(path)?;
        self.shared.insert(path.to_string(), found.clone());
        Ok(found)
    }

    /// A task is about to execute, or a restore wrote its outputs: files may have changed, so
    /// keys derived from now on look at the shared files again and nothing read ahead is used
    /// (a change after a key was taken is still caught when the task that folded it ends, by
    /// its stats, KEY-16).
    pub fn files_may_have_changed(&mut self) {
        self.shared.clear();
        self.workspace_files = None;
        self.end_prefetch();
    }

    /// The tasks read ahead were prepared: what was taken ahead and not used is dropped (the
    /// identities of the shared files stay until something may have changed them).
    pub fn end_prefetch(&mut self) {
        self.listed.clear();
        self.config_json.clear();
        self.tree.forget_prefetched();
    }

    /// Lists the inputs of these tasks and takes their `lstat`s ahead on several threads
    /// (see [`Tree::prefetch`]); their derivations, next, use both.
    pub fn prefetch(&mut self, tasks: &[Row<'_>]) {
        self.settle();
        let mut paths: Vec<String> = WORKSPACE_FILES.iter().map(|s| s.to_string()).collect();
        for task in tasks {
            if task.kind != Kind::OneShot {
                continue;
            }
            let (id, config) = (task.id, task.config);
            let project = self.workspace.by_name[&id.project];
            paths.push(join(&self.workspace.projects[project].dir, "package.json"));
            let listed = self.input_paths(id, project, config);
            if let Ok(listed) = &listed {
                paths.extend(listed.iter().cloned());
            }
            self.listed.insert(id.clone(), listed);
        }
        paths.sort_unstable();
        paths.dedup();
        self.tree.prefetch(paths);
        let configs: Vec<(&TaskId, &TaskConfig)> = tasks
            .iter()
            .filter(|task| task.kind != Kind::Group)
            .map(|task| (task.id, task.config))
            .collect();
        let json = vx_workspace::par::map(&configs, |(_, config)| task_config_json(config));
        self.config_json = configs
            .into_iter()
            .map(|(id, _)| id.clone())
            .zip(json)
            .collect();
    }

    fn identity(&mut self, path: &str) -> Result<FileId, KeyError> {
        self.tree
            .identity(path, &mut self.memo)
            .map_err(|e| KeyError(e.to_string()))
    }

    /// KEY-8: a probe runs once per (directory, command) per run.
    fn probe(
        &mut self,
        id: &TaskId,
        dir: &Path,
        command: &str,
        path: &str,
    ) -> Result<String, KeyError> {
        let slot = (dir.to_path_buf(), command.to_string());
        if !self.probes.contains_key(&slot) {
            let result = (self.prober)(dir, command, path);
            self.probes.insert(slot.clone(), result);
        }
        self.probes[&slot]
            .clone()
            .map_err(|why| KeyError(format!("{id}: runtime probe `{command}` {why}")))
    }

    /// PATH for probes: the project's and the root's `node_modules/.bin`, then vx's own
    /// (EXEC-4); workspace probes get the root's only.
    fn bin_path(&self, project_dir: Option<&Path>) -> String {
        let mut parts: Vec<String> = Vec::new();
        let root = &self.workspace.root;
        for dir in project_dir.into_iter().chain([root.as_path()]) {
            let bin = dir.join("node_modules/.bin").to_string_lossy().into_owned();
            if !bin.contains(':') && !parts.contains(&bin) {
                parts.push(bin);
            }
        }
        if let Some(path) = self.host_env.get("PATH") {
            parts.push(path.clone());
        }
        parts.join(":")
    }
}

/// The identity memo of KEY-11, loaded from the store's `file_stamps` and written back at the
/// end of the run.
#[derive(Default)]
pub struct StampCache {
    pub rows: HashMap<String, (Stat, String)>,
    /// Paths remembered during this run.
    pub dirty: Vec<String>,
}

impl StampMemo for StampCache {
    fn recall(&self, path: &str) -> Option<(Stat, String)> {
        self.rows.get(path).cloned()
    }

    fn remember(&mut self, path: &str, stat: Stat, blob: String) {
        self.rows.insert(path.to_string(), (stat, blob));
        self.dirty.push(path.to_string());
    }
}

fn is_persistent(workspace: &Workspace, id: &TaskId) -> bool {
    task_config(workspace, id).is_some_and(TaskConfig::is_persistent)
}

/// Per project, the directories of the projects nested inside it (DISC-6). Sorted directories
/// make each project's nested ones a contiguous range (`dir/` up to `dir0`, as `0` follows `/`),
/// so this is not quadratic in the number of projects.
fn nested_projects(workspace: &Workspace) -> Vec<Vec<String>> {
    let mut dirs: Vec<&str> = workspace.projects.iter().map(|p| p.dir.as_str()).collect();
    dirs.sort_unstable();
    workspace
        .projects
        .iter()
        .map(|outer| {
            let inside: &[&str] = if outer.dir.is_empty() {
                &dirs
            } else {
                let start = format!("{}/", outer.dir);
                let end = format!("{}0", outer.dir);
                let from = dirs.partition_point(|d| *d < start.as_str());
                let to = dirs.partition_point(|d| *d < end.as_str());
                &dirs[from..to]
            };
            inside
                .iter()
                .filter(|d| **d != outer.dir)
                .map(|d| d.to_string())
                .collect()
        })
        .collect()
}

/// Whether root-relative `path` is `dir` or lies below it (`""` is the root).
pub fn is_under(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path == dir
        || (path.starts_with(dir) && path.as_bytes().get(dir.len()) == Some(&b'/'))
}

/// `path` relative to `dir` (which contains it).
pub fn relative<'a>(path: &'a str, dir: &str) -> &'a str {
    if dir.is_empty() {
        path
    } else {
        path.get(dir.len() + 1..).unwrap_or("")
    }
}

/// Root-relative join.
pub fn join(dir: &str, rel: &str) -> String {
    if dir.is_empty() {
        rel.to_string()
    } else if rel.is_empty() {
        dir.to_string()
    } else {
        format!("{dir}/{rel}")
    }
}
/// The root-relative paths named by literal entries of `cache.inputs` (under `dir`) and
/// `cache.workspace-inputs` (KEY-10).
fn literal_inputs(dir: &str, inputs: &TaskGlobs, workspace_inputs: &TaskGlobs) -> Vec<String> {
    inputs
        .positives()
        .iter()
        .filter(|g| is_literal(g) && !inputs.is_excluded(g))
        .map(|g| join(dir, g))
        .chain(
            workspace_inputs
                .positives()
                .iter()
                .filter(|g| is_literal(g) && !workspace_inputs.is_excluded(g))
                .cloned(),
        )
        .collect()
}
