//! The run's side of the cache (§9): per task, decide between up-to-date, restore and
//! execute before it runs, and save its result after.
//!
//! How this works: [`RunCache::before`] derives the task's key (`keys`), and — when the task is
//! cached and local reads are on — looks it up. A hit whose outputs on disk are exactly what
//! vx last wrote is *up-to-date* and only its log is read back; any other hit is cleaned and
//! restored (STORE-9, STORE-10). A miss that will be saved has its declared outputs cleaned
//! first (STORE-11). [`RunCache::after`] applies the save guard (KEY-16) and saves
//! (STORE-7). Everything the run learned is written back once, in [`RunCache::finish`].
//! Damage is always a miss with one line (STORE-12), never a wrong hit.

use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use vx_core::config::TaskConfig;
use vx_core::globs::GlobCache;
use vx_core::graph::task_config;
use vx_core::{TaskId, Workspace};
use vx_store::artifact::{self, OutputFile, Target};
use vx_store::artifact::{ArtifactMeta, ExecMeta, Producer};
use vx_store::index::{Invocation, KeysByTask, Lookup, OutputStamp, RunRow, Stamping};
use vx_store::log::{LogRecord, LogStream};
use vx_store::Store;

use super::keys::{is_under, relative, Derived, Keys};
use super::outputs::{plain, stamp, up_to_date, Found, Outputs};
use super::preview::DryCache;
use crate::options::CachePolicy;
use crate::render;

/// How a task's result was obtained (UI-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheKind {
    Miss,
    UpToDate,
    RestoredLocal,
    NoCache,
}

impl CacheKind {
    pub fn word(self) -> &'static str {
        match self {
            CacheKind::Miss => "miss",
            CacheKind::UpToDate => "up-to-date",
            CacheKind::RestoredLocal => "local",
            CacheKind::NoCache => "no-cache",
        }
    }

    pub fn is_hit(self) -> bool {
        matches!(self, CacheKind::UpToDate | CacheKind::RestoredLocal)
    }
}

/// What to do with a task that is ready.
pub enum Decision {
    /// Served from the cache: replay this log.
    Hit {
        kind: CacheKind,
        records: Vec<LogRecord>,
        short_key: String,
        stored: Duration,
    },
    /// Run it; `writes` says whether a successful result may be saved.
    Execute { cached: bool, writes: bool },
    /// The key could not be derived, or the outputs could not be cleaned: the task fails
    /// with this line before running.
    Fail(String),
}

/// Which of these tracked paths have uncommitted changes (STORE-10).
pub type DirtyProbe<'p> = Box<dyn FnMut(&[String]) -> HashSet<String> + 'p>;

pub struct RunCache<'p> {
    pub keys: Keys<'p>,
    workspace: &'p Workspace,
    store: Option<Store>,
    policy: CachePolicy,
    workspace_id: String,
    /// The cache directory relative to the root, when it lies inside the workspace.
    cache_wall: Option<String>,
    ci: bool,
    /// Output stamps of this workspace, by key (STORE-9), loaded once.
    stamps: HashMap<String, Vec<OutputStamp>>,
    /// The keys of `stamps` by (project, task): recording a task's new stamps deletes the
    /// others (their outputs were just replaced).
    stamped_keys: KeysByTask,
    /// Keys whose results were not saved (or folded something not saved): dependants that
    /// fold them are not saved either (KEY-16).
    withheld: HashSet<TaskId>,
    /// Caching was turned off during the run (KEY-16, STORE-12).
    off: bool,
    /// Tracked paths with staged or unstaged changes, computed on first need.
    dirty: Option<HashSet<String>>,
    dirty_probe: DirtyProbe<'p>,
    /// Per task id, the key components to record (HIST-2).
    recorded: Vec<(String, Vec<vx_core::key::Component>)>,
    /// Per executed task: saved, or the `unsaved_reason` of HIST-1.
    saves: HashMap<TaskId, Result<(), &'static str>>,
    globs: GlobCache,
    /// `stamps` indexed by path, for the cleaning exemption; built on first need and kept up to
    /// date as stamps are recorded.
    stamps_by_path: Option<HashMap<String, Vec<OutputStamp>>>,
    /// Output listings taken by [`RunCache::prefetch_ahead`], each used once.
    found_ahead: HashMap<TaskId, std::io::Result<Vec<Found>>>,
    /// Tasks the restore lane looked up and found no usable entry for: not looked up again.
    known_misses: HashSet<TaskId>,
    /// EXEC-16: `(project, task, key)` → failures after a pass, read from history on first need.
    key_failures: OnceCell<BTreeMap<(String, String, String), u64>>,
    /// Each task's recent executions, read when the store was opened (SCHED-2, SCHED-4).
    recent: HashMap<TaskId, vx_store::index::Recent>,
}

impl<'p> RunCache<'p> {
    /// `read`: what was read when the store was opened (the output stamps with the entries
    /// they name preloaded, `Store::preload`; the recent executions).
    pub fn new(
        keys: Keys<'p>,
        workspace: &'p Workspace,
        store: Option<Store>,
        read: ReadWithIndex,
        policy: CachePolicy,
        ci: bool,
        dirty_probe: DirtyProbe<'p>,
    ) -> RunCache<'p> {
        let ReadWithIndex { stamps, recent } = read;
        let workspace_id = workspace_identity(&workspace.root);
        // STORE-14: a cache vx cannot write serves hits and saves nothing (setup warned).
        let mut policy = policy;
        if store
            .as_ref()
            .is_some_and(|s| s.read_only_reason().is_some())
        {
            policy.local_write = false;
        }
        let cache_wall = store.as_ref().and_then(|s| {
            s.dir()
                .strip_prefix(&workspace.root)
                .ok()
                .map(|rel| rel.to_string_lossy().replace('\\', "/"))
        });
        RunCache {
            keys,
            workspace,
            store,
            policy,
            workspace_id,
            cache_wall,
            ci,
            stamps: stamps.by_key,
            stamped_keys: stamps.keys_by_task,
            withheld: HashSet::new(),
            off: false,
            dirty: None,
            dirty_probe,
            recorded: Vec::new(),
            saves: HashMap::new(),
            globs: GlobCache::default(),
            stamps_by_path: None,
            known_misses: HashSet::new(),
            found_ahead: HashMap::new(),
            key_failures: OnceCell::new(),
            recent,
        }
    }

    /// HIST-1: the run and its task rows, with each task's key and whether it was saved; a
    /// failure is one warning line. Recording the same run again replaces it (a kept
    /// persistent task's later exit).
    fn record_history(&mut self, (mut invocation, mut rows): (Invocation, Vec<RunRow>)) {
        let Some(salt) = self.store.as_ref().map(Store::salt) else {
            return;
        };
        invocation.argv = crate::run::execute::masked_argv(&invocation.argv, &salt);
        for row in &mut rows {
            let id = TaskId::new(&row.project, &row.task);
            row.key = self.key_hex(&id);
            match self.saves.get(&id) {
                Some(Ok(())) => row.saved = true,
                Some(Err(reason)) => row.unsaved_reason = Some((*reason).to_string()),
                None => {}
            }
        }
        let Some(store) = self.store.as_mut() else {
            return;
        };
        if let Err(error) = store.record_run(&invocation, &rows) {
            render::warning(&format!("could not record this run in history: {error}"));
        }
    }

    /// A kept persistent task ended after the footer: the run is recorded again with the final
    /// exit code and the task's final row.
    pub fn record_again(&mut self, history: (Invocation, Vec<RunRow>)) {
        if self.store.as_ref().is_some_and(|s| s.disabled().is_none()) {
            self.record_history(history);
        }
    }

    /// The full key derived for `id` in this run, if any.
    pub fn key_hex(&self, id: &TaskId) -> Option<String> {
        self.keys.known(id).map(|d| d.key.hex())
    }

    /// What history recorded of `id`'s last executions (SCHED-2, SCHED-4).
    pub fn recent(&self, id: &TaskId) -> Option<&vx_store::index::Recent> {
        self.recent.get(id)
    }

    fn outputs_of(&mut self, id: &TaskId, config: &TaskConfig) -> Option<Outputs> {
        let cache = config.cache.as_ref()?;
        let index = *self.workspace.by_name.get(&id.project)?;
        let project = &self.workspace.projects[index];
        let mut walls: Vec<String> = self.keys.nested(index).to_vec();
        walls.extend(self.cache_wall.clone());
        Some(Outputs::new(&project.dir, cache, walls, &mut self.globs))
    }

    /// Before [`RunCache::prepare_ahead`] of these tasks: their input `lstat`s and output
    /// listings are taken at once, on several threads (the warm path is mostly these system
    /// calls); nothing has executed yet, so they are what each task would see one by one.
    pub fn prefetch_ahead(&mut self, ids: &[TaskId]) {
        if !self.active() || !self.policy.local_read {
            return;
        }
        self.keys.prefetch(ids);
        let mut wanted: Vec<(TaskId, Outputs)> = Vec::new();
        for id in ids {
            let Some(config) = task_config(self.workspace, id) else {
                continue;
            };
            if let Some(outputs) = self.outputs_of(id, config) {
                wanted.push((id.clone(), outputs));
            }
        }
        let root = self.workspace.root.clone();
        let found = vx_workspace::par::map(&wanted, |(_, outputs)| outputs.find(&root));
        self.found_ahead = wanted.into_iter().map(|(id, _)| id).zip(found).collect();
    }

    /// After the tasks of [`RunCache::prefetch_ahead`] were prepared: listings and `lstat`s
    /// taken ahead are dropped, so no later decision reads one, and so are the index rows
    /// preloaded for them (a large run does not keep them).
    pub fn end_ahead(&mut self) {
        self.found_ahead.clear();
        self.keys.end_prefetch();
        if let Some(store) = self.store.as_mut() {
            store.drop_preloaded();
        }
    }

    /// SCHED-3, the restore lane: a task with a stable key, before its dependencies have
    /// finished. Up-to-date hits are served here; a hit that needs its outputs written back
    /// becomes a [`RestoreJob`] for the lane's threads (cleaning protections checked first).
    /// [`Ahead::Not`] leaves the task to the normal schedule (no entry, damage, or a clean that
    /// must be refused when the task runs).
    pub fn prepare_ahead(&mut self, id: &TaskId, needs_log: bool) -> Ahead {
        let config = task_config(self.workspace, id).expect("declared");
        if config.cache.is_none() {
            return Ahead::Not;
        }
        if !self.active() || !self.policy.local_read {
            return Ahead::Not;
        }
        let (key, short) = match self.keys.key(id) {
            Some(Ok(derived)) => (derived.key.hex(), derived.key.short()),
            _ => return Ahead::Not,
        };
        self.flush_key_notices();
        let Some(outputs) = self.outputs_of(id, config) else {
            return Ahead::Not;
        };
        let accept = |name: &str| outputs.accepts(name);
        let store = self.store.as_mut().expect("active");
        let entry = match store.lookup(&key, &accept) {
            Ok(Lookup::Hit(entry)) => entry,
            Ok(Lookup::Damaged(damage)) => {
                say_damaged(id, &short, &damage.reason, true);
                self.miss_ahead(id);
                return Ahead::Not;
            }
            Ok(Lookup::Miss) => {
                self.miss_ahead(id);
                return Ahead::Not;
            }
            Err(error) => {
                self.turn_off(&error.to_string());
                return Ahead::Not;
            }
        };
        let root = self.workspace.root.clone();
        let found = match self.found_ahead.remove(id) {
            Some(found) => found,
            None => outputs.find(&root),
        };
        let Ok(found) = found else {
            return Ahead::Not;
        };
        let stored = Duration::from_millis(entry.duration_ms);
        if up_to_date(&found, &entry.outputs, self.stamps_of(&key), &outputs) {
            return match self.serve_hit(id, &outputs, &key, &entry, needs_log, Some(found)) {
                Ok(Some(decision)) => Ahead::Served(decision),
                _ => Ahead::Not,
            };
        }
        if self.check_clean(id, &outputs, &found).is_err() {
            return Ahead::Not;
        }
        let path = self.store.as_ref().expect("active").artifact_path(&key);
        Ahead::Restore(Box::new(RestoreJob {
            id: id.clone(),
            key,
            short,
            stored,
            path,
            root,
            outputs,
            found,
        }))
    }

    /// The lane's thread restored (or failed to restore) an entry: serve the hit, or leave the
    /// task to the normal schedule (where a blocked restore fails it, naming the path).
    pub fn complete_ahead(
        &mut self,
        job: Box<RestoreJob>,
        result: Result<artifact::Restored, artifact::RestoreError>,
    ) -> Option<Decision> {
        let id = job.id.clone();
        match self.finish_restore(*job, result) {
            Restore::Served(decision) => Some(decision),
            Restore::Miss => {
                self.miss_ahead(&id);
                None
            }
            Restore::Failed(_) => None,
        }
    }

    /// STORE-10 step 4 and STORE-12, after a restore ran: record the stamps of what was written
    /// and serve the hit; a damaged or vanished entry is discarded with one line and the task
    /// runs; anything else (a blocked target, a permission error) fails the task.
    fn finish_restore(
        &mut self,
        job: RestoreJob,
        result: Result<artifact::Restored, artifact::RestoreError>,
    ) -> Restore {
        // Outputs were written (a cached task may own a file other keys fold): nothing read
        // ahead is used after this.
        self.keys.files_may_have_changed();
        self.found_ahead.clear();
        let RestoreJob {
            id,
            key,
            short,
            stored,
            root,
            outputs,
            ..
        } = job;
        self.refresh_outputs(&outputs);
        let store = self.store.as_mut().expect("active");
        match result {
            Ok(restored) => {
                let mut rows = Vec::new();
                for file in &restored.files {
                    let rel = file
                        .path
                        .strip_prefix(&root)
                        .map(|p| p.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    if let Ok(meta) = std::fs::symlink_metadata(&file.path) {
                        rows.push(stamp(&rel, &meta));
                    }
                }
                let superseded = self.superseded(&id, &key);
                let store = self.store.as_mut().expect("active");
                let _ = store.set_output_stamps(
                    &self.workspace_id,
                    &key,
                    &with_marker(&rows),
                    &superseded,
                );
                store.touch(&key);
                self.record_stamps(&id, &key, rows, &superseded);
                self.keys.keep_key_only(&id);
                Restore::Served(Decision::Hit {
                    kind: CacheKind::RestoredLocal,
                    records: decode_log(&restored.log),
                    short_key: short,
                    stored,
                })
            }
            Err(artifact::RestoreError::Damaged(damage)) => {
                let writes = self.policy.local_write;
                if writes {
                    let _ = store.discard(&key);
                }
                say_damaged(&id, &short, &damage.reason, writes);
                Restore::Miss
            }
            Err(artifact::RestoreError::Vanished) => {
                let _ = store.discard(&key);
                render::notice(&format!(
                    "{id}: cache entry {short} was removed by another process; running the task"
                ));
                Restore::Miss
            }
            Err(artifact::RestoreError::LinkLeaves { path, text }) => {
                // Not damage: an absolute link made in another checkout sharing this cache
                // directory. The entry stays for that checkout.
                let shown = path.strip_prefix(&root).unwrap_or(&path);
                render::notice(&format!(
                    "{id}: cache entry {short} cannot be restored here: its symlink `{}` would lead outside the workspace (to `{text}`); running the task",
                    shown.display()
                ));
                Restore::Miss
            }
            Err(other) => Restore::Failed(format!("vx: {id}: {}", restore_reason(&other))),
        }
    }

    /// The lane found no usable entry: not looked up again, and keyed again when ready (the
    /// late key is the one a result is saved under).
    fn miss_ahead(&mut self, id: &TaskId) {
        self.known_misses.insert(id.clone());
        self.keys.forget(id);
    }

    /// `--dry` (UI-12): the task's key and whether the local store has an entry for it,
    /// without reading the artifact or writing anything.
    pub fn plan_row(&mut self, id: &TaskId) -> (Result<String, String>, DryCache) {
        let config = task_config(self.workspace, id).expect("declared");
        if config.is_persistent() {
            return (Err("persistent".into()), DryCache::NoCache);
        }
        let derived = match self.keys.key(id) {
            None => return (Err("persistent".into()), DryCache::NoCache),
            Some(Err(error)) => return (Err(error.0), DryCache::Miss),
            Some(Ok(derived)) => derived.clone(),
        };
        self.keys.notices.clear();
        let key = derived.key.hex();
        if config.cache.is_none() {
            return (Ok(key), DryCache::NoCache);
        }
        let reads = self.policy.local_read;
        let exists = reads
            && self
                .store
                .as_ref()
                .is_some_and(|s| s.disabled().is_none() && s.has_entry(&key));
        (
            Ok(key),
            if exists {
                DryCache::HitLocal
            } else {
                DryCache::Miss
            },
        )
    }

    /// Decides how a ready task gets its result. `saveable` is false when the task must not be
    /// saved whatever happens (tainted, or folding a dropped dependency).
    pub fn before(&mut self, id: &TaskId, saveable: bool, needs_log: bool) -> Decision {
        let config = task_config(self.workspace, id).expect("declared");
        let derived = match self.keys.key(id) {
            None => {
                return Decision::Execute {
                    cached: false,
                    writes: false,
                }
            }
            Some(Err(error)) => return Decision::Fail(format!("vx: {}", error.0)),
            Some(Ok(derived)) => (derived.key.hex(), derived.key.short()),
        };
        self.flush_key_notices();
        let Some(outputs) = self.outputs_of(id, config) else {
            return Decision::Execute {
                cached: false,
                writes: false,
            };
        };
        let active = self.active();
        let reads = active && self.policy.local_read;
        let writes = active && self.policy.local_write;
        let (key, short) = derived;
        if reads && !self.known_misses.contains(id) {
            let accept = |name: &str| outputs.accepts(name);
            let store = self.store.as_mut().expect("active");
            match store.lookup(&key, &accept) {
                Ok(Lookup::Hit(entry)) => {
                    match self.serve_hit(id, &outputs, &key, &entry, needs_log, None) {
                        Ok(Some(decision)) => return decision,
                        Ok(None) => {}
                        Err(line) => return Decision::Fail(line),
                    }
                }
                Ok(Lookup::Damaged(damage)) => {
                    say_damaged(id, &short, &damage.reason, true);
                }
                Ok(Lookup::Miss) => {}
                Err(error) => self.turn_off(&error.to_string()),
            }
        }
        if writes && saveable {
            if let Err(line) = self.clean(id, &outputs) {
                return Decision::Fail(line);
            }
        }
        Decision::Execute {
            cached: true,
            writes: writes && saveable,
        }
    }

    /// A confirmed entry: up-to-date, or cleaned and restored. `Ok(None)` falls back to running
    /// the task (damage, vanished entry).
    fn serve_hit(
        &mut self,
        id: &TaskId,
        outputs: &Outputs,
        key: &str,
        entry: &vx_store::index::Entry,
        needs_log: bool,
        found: Option<Vec<Found>>,
    ) -> Result<Option<Decision>, String> {
        let root = self.workspace.root.clone();
        let short = key[..12].to_string();
        let stored = Duration::from_millis(entry.duration_ms);
        let found = match found {
            Some(found) => found,
            None => outputs
                .find(&root)
                .map_err(|e| format!("vx: {id}: cannot read the outputs: {}", plain(&e)))?,
        };
        let fresh = up_to_date(&found, &entry.outputs, self.stamps_of(key), outputs);
        let store = self.store.as_mut().expect("active");
        if fresh {
            if !needs_log {
                store.touch(key);
                self.keys.keep_key_only(id);
                return Ok(Some(Decision::Hit {
                    kind: CacheKind::UpToDate,
                    records: Vec::new(),
                    short_key: short,
                    stored,
                }));
            }
            match artifact::read_log(&store.artifact_path(key)) {
                Ok(log) => {
                    store.touch(key);
                    self.keys.keep_key_only(id);
                    return Ok(Some(Decision::Hit {
                        kind: CacheKind::UpToDate,
                        records: decode_log(&log),
                        short_key: short,
                        stored,
                    }));
                }
                Err(_) => {
                    // Fall through to a full restore, which validates the whole artifact.
                }
            }
        }
        self.check_clean(id, outputs, &found)?;
        let job = RestoreJob {
            id: id.clone(),
            key: key.to_string(),
            short,
            stored,
            path: self.store.as_ref().expect("active").artifact_path(key),
            root,
            outputs: outputs.clone(),
            found,
        };
        let result = job.run();
        match self.finish_restore(job, result) {
            Restore::Served(decision) => Ok(Some(decision)),
            Restore::Miss => Ok(None),
            Restore::Failed(line) => Err(line),
        }
    }

    /// The output stamps recorded for an entry (none when it has no row).
    fn stamps_of(&self, key: &str) -> &[OutputStamp] {
        self.stamps.get(key).map_or(&[], Vec::as_slice)
    }

    /// EXEC-15: outputs are cleaned before every attempt of a task that writes. What the failed
    /// attempt wrote is the task's own, so the protections of the first clean are not checked
    /// again.
    pub fn clean_for_retry(&mut self, id: &TaskId) -> Result<(), String> {
        let config = task_config(self.workspace, id).expect("declared");
        let Some(outputs) = self.outputs_of(id, config) else {
            return Ok(());
        };
        let root = self.workspace.root.clone();
        let found = outputs
            .find(&root)
            .map_err(|e| format!("vx: {id}: cannot read the outputs: {}", plain(&e)))?;
        outputs
            .clean(&root, &found)
            .map_err(|e| format!("vx: {id}: {e}"))?;
        self.refresh_outputs(&outputs);
        Ok(())
    }

    /// STORE-11: clean the declared outputs before the task runs.
    fn clean(&mut self, id: &TaskId, outputs: &Outputs) -> Result<(), String> {
        let root = self.workspace.root.clone();
        let found = outputs
            .find(&root)
            .map_err(|e| format!("vx: {id}: cannot read the outputs: {}", plain(&e)))?;
        self.clean_found(id, outputs, &found)
    }

    /// STORE-10 step 1: check every match against the protections, then remove them all.
    fn clean_found(
        &mut self,
        id: &TaskId,
        outputs: &Outputs,
        found: &[Found],
    ) -> Result<(), String> {
        self.check_clean(id, outputs, found)?;
        let root = self.workspace.root.clone();
        outputs
            .clean(&root, found)
            .map_err(|e| format!("vx: {id}: {e}"))?;
        self.refresh_outputs(outputs);
        Ok(())
    }

    /// The protections of STORE-10 step 1, checked for every match before anything is removed.
    fn check_clean(
        &mut self,
        id: &TaskId,
        outputs: &Outputs,
        found: &[Found],
    ) -> Result<(), String> {
        if found.is_empty() {
            return Ok(());
        }
        // Every stamp vx recorded in this workspace, by path, built once per run.
        if self.stamps_by_path.is_none() {
            let mut by_path: HashMap<String, Vec<OutputStamp>> = HashMap::new();
            for stamp in self.stamps.values().flatten() {
                by_path
                    .entry(stamp.path.clone())
                    .or_default()
                    .push(stamp.clone());
            }
            self.stamps_by_path = Some(by_path);
        }
        let by_path = self.stamps_by_path.as_ref().expect("built above");
        let written_by_vx: HashSet<&str> = found
            .iter()
            .filter(|f| {
                let now = stamp(&f.path, &f.meta);
                by_path.get(&f.path).is_some_and(|rows| rows.contains(&now))
            })
            .map(|f| f.path.as_str())
            .collect();
        // Removing a directory loses nothing: only what is in it is protected.
        let candidates: Vec<&Found> = found
            .iter()
            .filter(|f| !f.meta.is_dir() && !written_by_vx.contains(f.path.as_str()))
            .collect();
        let tracked: Vec<String> = candidates
            .iter()
            .filter(|f| self.keys.is_tracked(&f.path))
            .map(|f| f.path.clone())
            .collect();
        if !tracked.is_empty() && self.dirty.is_none() {
            self.dirty = Some((self.dirty_probe)(&tracked));
        }
        for f in &candidates {
            let glob_list = if outputs.entry_name(&f.path).starts_with("outputs/") {
                "cache.outputs"
            } else {
                "cache.workspace-outputs"
            };
            let globs = self.glob_text(outputs, &f.path);
            if self.dirty.as_ref().is_some_and(|d| d.contains(&f.path)) {
                return Err(format!(
                    "vx: {id}: refusing to clean `{}`: it has uncommitted changes and matches {glob_list} ({globs})",
                    f.path
                ));
            }
            if !self.keys.is_tracked(&f.path) {
                if let Some(reader) = self.input_reader(&f.path) {
                    return Err(format!(
                        "vx: {id}: refusing to clean `{}`: it is an input of `{reader}` and matches {glob_list} ({globs})",
                        f.path
                    ));
                }
            }
        }
        Ok(())
    }

    /// The output globs that match a path, for the refusal line.
    fn glob_text(&mut self, outputs: &Outputs, path: &str) -> String {
        let rel = relative(path, &outputs.dir);
        let mut globs: Vec<String> = Vec::new();
        for g in outputs.project.positives() {
            if self.globs.get(&[g]).is_match(rel) {
                globs.push(g.clone());
            }
        }
        for g in outputs.workspace.positives() {
            if self.globs.get(&[g]).is_match(path) {
                globs.push(g.clone());
            }
        }
        globs.join(", ")
    }

    /// A cached task of the run whose `cache.inputs` or `cache.workspace-inputs` select this
    /// untracked path (STORE-10).
    fn input_reader(&mut self, path: &str) -> Option<TaskId> {
        let workspace = self.workspace;
        let graph = self.keys.graph();
        for node in &graph.nodes {
            let Some(config) = task_config(workspace, &node.id) else {
                continue;
            };
            let Some(cache) = &config.cache else { continue };
            let dir = &workspace.projects[node.project].dir;
            // Cheap test first: only the project's own tasks and tasks with workspace inputs
            // can select the path.
            if !is_under(path, dir) && cache.workspace_inputs.is_empty() {
                continue;
            }
            let own = self.outputs_of(&node.id, config);
            if own.as_ref().is_some_and(|o| o.covers(path)) {
                continue;
            }
            let inputs = self.globs.get(cache.inputs.as_deref().unwrap_or_default());
            let in_project = is_under(path, dir)
                && !self
                    .keys
                    .nested(node.project)
                    .iter()
                    .any(|n| is_under(path, n));
            let workspace_inputs = self.globs.get(&cache.workspace_inputs);
            if (in_project && inputs.is_match(relative(path, dir)))
                || workspace_inputs.is_match(path)
            {
                return Some(node.id.clone());
            }
        }
        None
    }

    /// KEY-15: what a clean or restore touched is listed again.
    fn refresh_outputs(&mut self, outputs: &Outputs) {
        let prefixes = outputs.prefixes();
        let _ = self.keys.tree.refresh(&prefixes);
    }

    /// After a task that executed: refresh the listing for what it could have written
    /// (KEY-15), then, for a successful cached task that writes, apply the save guard and
    /// save (STORE-7). Returns whether the result was saved.
    pub fn after(&mut self, done: Done<'_>) -> After {
        let id = done.id;
        let result = self.after_inner(&done);
        // A success is final (only failures are retried): what its key was derived from has
        // served the save guard and the fingerprints.
        if done.success {
            self.keys.keep_key_only(id);
        }
        // Withheld (KEY-16): a result that is not trustworthy, so nothing folding its key may be
        // saved either. A task that merely does not write (uncached, read-only policy, a failed
        // save) is not withheld: its outputs are what its key says.
        if matches!(
            result,
            Err("inputs-changed" | "tainted" | "excluded-dependency")
        ) {
            self.withheld.insert(id.clone());
        }
        match result {
            Ok(job) => After::Pack(Box::new(job)),
            Err(reason) => {
                self.saves.insert(id.clone(), Err(reason));
                After::Done
            }
        }
    }

    /// The end of a save whose packing ran on the save lane: publish the artifact in the index
    /// and record the output stamps (STORE-7 steps 3 and 4).
    pub fn complete_save(
        &mut self,
        job: Box<SaveJob>,
        packed: Result<artifact::Packed, artifact::PackError>,
    ) {
        let id = job.id.clone();
        let result = self.publish(*job, packed);
        let reason = match result {
            Ok(()) => Ok(()),
            Err(SaveError::TooLarge(reason)) => {
                render::warning(&format!("{id}: not cached: {reason}"));
                Err("too-large")
            }
            Err(SaveError::Refused(reason)) => {
                render::notice(&format!("{id}: not cached: {reason}"));
                Err("save-failed")
            }
            Err(SaveError::Failed(reason)) => {
                render::notice(&format!("{id}: could not save to the cache: {reason}"));
                Err("save-failed")
            }
        };
        self.saves.insert(id, reason);
    }

    fn after_inner(&mut self, done: &Done<'_>) -> Result<SaveJob, &'static str> {
        let id = done.id;
        let config = task_config(self.workspace, id).expect("declared");
        let outputs = self.outputs_of(id, config);
        // KEY-15: an uncached task could have written anything in its project; a cached one
        // its declared outputs. The save guard (KEY-16) also needs the project listed again,
        // to see an input file that appeared while a cached task ran.
        let dir = self.workspace.project(&id.project).map(|p| p.dir.clone());
        if let Some(outputs) = &outputs {
            self.refresh_outputs(outputs);
        }
        let _ = self.keys.tree.refresh(&[dir.unwrap_or_default()]);
        let Some(derived) = self.keys.known(id).cloned() else {
            return Err("failed");
        };
        let mut components = derived.inputs.components(&self.salt());
        let project_dir = self.workspace.project(&id.project).map(|p| p.dir.as_str());
        components.extend(
            self.keys
                .lockfiles
                .components(&derived.inputs.workspace, project_dir.unwrap_or("")),
        );
        self.recorded.push((derived.key.hex(), components));
        if self.recorded.len() >= RECORDED_IN_MEMORY {
            self.flush_recorded();
        }
        let Some(outputs) = outputs else {
            return Err("writes-off");
        };
        let folds_withheld = self
            .keys
            .folded_upstreams(id)
            .iter()
            .any(|u| self.withheld.contains(u));
        if !done.success {
            return Err("failed");
        }
        if !done.writes {
            return Err(done.unsaved_reason);
        }
        if folds_withheld {
            return Err("tainted");
        }
        if self.off {
            return Err("writes-off");
        }
        if let Some(moved) = self.moved_input(id, &derived, done.started) {
            if moved.fingerprint {
                render::notice(&format!(
                    "{} changed during the run; caching is off for the rest of this run",
                    moved.path
                ));
                self.off = true;
            } else {
                render::notice(&format!(
                    "{id}: `{}` changed while the task ran; result kept but not cached",
                    moved.path
                ));
            }
            return Err("inputs-changed");
        }
        self.prepare_save(id, &outputs, &derived, done)
            .map_err(|error| {
                if let SaveError::Failed(reason) = error {
                    render::notice(&format!("{id}: could not save to the cache: {reason}"));
                }
                "save-failed"
            })
    }

    /// KEY-16: the first folded path that moved while the task ran, if any.
    fn moved_input(
        &mut self,
        id: &TaskId,
        derived: &Derived,
        started: SystemTime,
    ) -> Option<Moved> {
        let granularity = Duration::from_secs(2);
        let taken = derived
            .taken_at
            .checked_sub(granularity)
            .unwrap_or(UNIX_EPOCH);
        let taken_ns = ns(taken);
        let started_ns = ns(started);
        for folded in derived.workspace_stats.iter().chain(&derived.stats) {
            let moved = || Moved {
                path: folded.path.clone(),
                fingerprint: folded.fingerprint,
            };
            // Only a file or a symlink is present (KEY-11): a directory where a tracked file was
            // is as absent now as when the key was taken.
            let now = std::fs::symlink_metadata(self.workspace.root.join(&folded.path))
                .ok()
                .filter(|meta| meta.is_file() || meta.file_type().is_symlink())
                .filter(|_| !self.keys.tree.below_symlink(&folded.path));
            match (&folded.stat, &now) {
                (None, None) => continue,
                (Some(_), None) | (None, Some(_)) => return Some(moved()),
                (Some(_), Some(meta)) => {
                    let ctime = meta.ctime() * 1_000_000_000 + meta.ctime_nsec();
                    // Touched while the command ran: moved, unless it holds the same bytes as
                    // when the key was taken (a build that regenerates its `package.json` or a
                    // config file, as tsdown's `exports` does).
                    if !self.ci
                        && ctime >= started_ns
                        && self.keys.fresh_identity(&folded.path).as_ref() != Some(&folded.identity)
                    {
                        return Some(moved());
                    }
                    if ctime >= taken_ns
                        && self.keys.fresh_identity(&folded.path).as_ref() != Some(&folded.identity)
                    {
                        return Some(moved());
                    }
                }
            }
        }
        // A new file matching the input globs (the listing was refreshed for the project).
        let paths: HashSet<&str> = derived
            .workspace_stats
            .iter()
            .chain(&derived.stats)
            .map(|f| f.path.as_str())
            .collect();
        let listed = self.keys.input_listing(id).ok()?;
        listed
            .into_iter()
            .find(|p| !paths.contains(p.as_str()))
            .map(|path| Moved {
                path,
                fingerprint: false,
            })
    }

    /// STORE-7 step 1: what to pack. Packing itself runs on the save lane ([`SaveJob::pack`]).
    fn prepare_save(
        &mut self,
        id: &TaskId,
        outputs: &Outputs,
        derived: &Derived,
        done: &Done<'_>,
    ) -> Result<SaveJob, SaveError> {
        let root = self.workspace.root.clone();
        let listing = outputs
            .list(&root)
            .map_err(|e| SaveError::Failed(plain(&e)))?;
        for path in &listing.skipped {
            render::notice(&format!(
                "{id}: `{path}` is not saved with the outputs: vx never saves or restores `.git`, `.vx`, the cache directory or a nested project"
            ));
        }
        let found = listing.found;
        if found.is_empty() {
            for glob in outputs.project.positives() {
                render::notice(&format!("{id}: no file matches cache.outputs ({glob})"));
            }
        }
        let files: Vec<OutputFile> = found
            .iter()
            .map(|f| OutputFile {
                name: outputs.entry_name(&f.path),
                path: root.join(&f.path),
                contain: root.clone(),
            })
            .collect();
        let key = derived.key.hex();
        let meta = ArtifactMeta {
            format: artifact::FORMAT,
            key: key.clone(),
            task: id.to_string(),
            command: done.command_line.to_string(),
            files: BTreeMap::new(),
            links: BTreeMap::new(),
            exec: ExecMeta {
                duration_ms: done.duration.as_millis() as u64,
                cpu_ms: done.cpu_ms,
                peak_rss_bytes: done.peak_rss_bytes,
            },
            producer: Producer {
                vx_version: env!("CARGO_PKG_VERSION").into(),
                os: std::env::consts::OS.into(),
                arch: std::env::consts::ARCH.into(),
                created_at: rfc3339_now(),
                commit: None,
            },
        };
        let store = self
            .store
            .as_ref()
            .ok_or_else(|| SaveError::Failed("the cache is off".into()))?;
        Ok(SaveJob {
            id: id.clone(),
            key,
            tmp: store.dir().join("tmp"),
            log: done.log.to_vec(),
            meta,
            files,
            found: found.into_iter().map(|f| f.path).collect(),
            outputs_dir: outputs.dir.clone(),
        })
    }

    /// STORE-7 steps 3 and 4, once the save lane packed the artifact.
    fn publish(
        &mut self,
        job: SaveJob,
        packed: Result<artifact::Packed, artifact::PackError>,
    ) -> Result<(), SaveError> {
        let shown = |name: &str| match name.strip_prefix("outputs/") {
            Some(rel) => super::keys::join(&job.outputs_dir, rel),
            None => name
                .strip_prefix("workspace-outputs/")
                .unwrap_or(name)
                .to_string(),
        };
        let packed = packed.map_err(|e| match e {
            artifact::PackError::SymlinkLeaves { name } => SaveError::Refused(format!(
                "output `{}` is a symlink leaving the workspace",
                shown(&name)
            )),
            artifact::PackError::SymlinkIntoWall { name } => SaveError::Refused(format!(
                "output `{}` is a symlink into a `.git` or `.vx` directory",
                shown(&name)
            )),
            artifact::PackError::SymlinkUnchecked { name, text } => SaveError::Refused(format!(
                "output `{}` is a symlink whose target `{text}` vx cannot check (it climbs with `..` after descending, or is not UTF-8)",
                shown(&name)
            )),
            artifact::PackError::NotRegular { name } => SaveError::Refused(format!(
                "output `{}` is not a regular file, directory or symlink",
                shown(&name)
            )),
            artifact::PackError::TooLarge { size } => SaveError::TooLarge(format!(
                "its outputs are {} (the cap is 2.0 GiB)",
                vx_core::units::format_size(size)
            )),
            other => SaveError::Failed(other.to_string()),
        })?;
        if self.store.is_none() {
            return Err(SaveError::Failed("the cache is off".into()));
        }
        if self.off {
            let _ = std::fs::remove_file(&packed.path);
            return Err(SaveError::Failed(
                "caching was turned off during the run".into(),
            ));
        }
        // The outputs as packed (the task has ended; nothing writes them now), recorded with
        // the entry in one transaction.
        let root = &self.workspace.root;
        let mut rows = Vec::new();
        for path in &job.found {
            if let Ok(meta) = std::fs::symlink_metadata(root.join(path)) {
                rows.push(stamp(path, &meta));
            }
        }
        let marked = with_marker(&rows);
        let superseded = self.superseded(&job.id, &job.key);
        let stamping = Stamping {
            workspace: &self.workspace_id,
            rows: &marked,
            superseded: &superseded,
        };
        self.store
            .as_mut()
            .expect("checked above")
            .save_with_stamps(packed, &job.id.project, &job.id.task, Some(stamping))
            .map_err(|e| SaveError::Failed(e.to_string()))?;
        self.record_stamps(&job.id, &job.key, rows, &superseded);
        Ok(())
    }

    /// The other keys of task `id` whose stamps this workspace holds: recording `key`'s
    /// replaces them.
    fn superseded(&self, id: &TaskId, key: &str) -> Vec<String> {
        let task = (id.project.clone(), id.task.clone());
        self.stamped_keys
            .get(&task)
            .map(|keys| keys.iter().filter(|k| *k != key).cloned().collect())
            .unwrap_or_default()
    }

    /// The stamps just written for `key` of task `id`, in place of the superseded keys'.
    fn record_stamps(
        &mut self,
        id: &TaskId,
        key: &str,
        rows: Vec<OutputStamp>,
        superseded: &[String],
    ) {
        for old in superseded {
            let Some(gone) = self.stamps.remove(old) else {
                continue;
            };
            if let Some(by_path) = &mut self.stamps_by_path {
                for row in &gone {
                    if let Some(list) = by_path.get_mut(&row.path) {
                        list.retain(|r| r != row);
                    }
                }
            }
        }
        if let Some(by_path) = &mut self.stamps_by_path {
            for row in &rows {
                by_path
                    .entry(row.path.clone())
                    .or_default()
                    .push(row.clone());
            }
        }
        self.stamps.insert(key.to_string(), rows);
        self.stamped_keys
            .insert((id.project.clone(), id.task.clone()), vec![key.to_string()]);
    }

    fn salt(&self) -> [u8; 32] {
        self.store.as_ref().map_or([0; 32], Store::salt)
    }

    fn turn_off(&mut self, reason: &str) {
        if !self.off {
            render::warning(&format!(
                "the cache index failed ({reason}); caching is off for the rest of this run"
            ));
            self.off = true;
        }
    }

    fn flush_key_notices(&mut self) {
        for line in std::mem::take(&mut self.keys.notices) {
            render::notice(&line);
        }
    }

    /// EXEC-16's second flaky rule: how many times history saw the task's current key fail
    /// after it had passed with that key (this run's own result is not in history yet). 0 when
    /// the task has no key, there is no store, or history cannot be read: flaky marking never
    /// fails a run. History is read once, on the first call, in one statement (PERF-3).
    pub fn key_failures_after_pass(&self, id: &TaskId) -> u64 {
        let Some(derived) = self.keys.known(id) else {
            return 0;
        };
        let failures = self.key_failures.get_or_init(|| {
            self.store
                .as_ref()
                .and_then(|store| store.keys_failed_after_pass().ok())
                .unwrap_or_default()
        });
        let at = (id.project.clone(), id.task.clone(), derived.key.hex());
        failures.get(&at).copied().unwrap_or(0)
    }

    /// Marks a task as not saved, for tasks that never reached `after` (failed keys).
    pub fn withhold(&mut self, id: &TaskId) {
        self.withheld.insert(id.clone());
    }

    /// Whether the index is open, enabled and caching was not turned off during the run.
    fn active(&self) -> bool {
        !self.off && self.store.as_ref().is_some_and(|s| s.disabled().is_none())
    }

    /// Closes the index (the end of a run).
    pub fn close(&mut self) {
        self.store = None;
    }

    /// PERF-3's counters, as a `vx::counters` diagnostic (`VX_LOG=vx::counters=info`): process
    /// spawns, files hashed in-process and SQL statements of this run, and vx's own CPU time
    /// and peak RSS (not its children's) for the benchmarks.
    pub fn report_counters(&self) {
        let hashed = self.keys.tree.counters().files_hashed;
        let statements = self.store.as_ref().map_or(0, Store::statements);
        let spawns = vx_exec::Supervisor::new().spawned();
        // vx's own resources so far (its threads, not its children), for the benchmarks.
        let (user_ms, sys_ms, rss_kib) =
            match nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF) {
                Ok(usage) => {
                    let ms = |t: nix::sys::time::TimeVal| t.tv_sec() * 1000 + t.tv_usec() / 1000;
                    (
                        ms(usage.user_time()),
                        ms(usage.system_time()),
                        usage.max_rss(),
                    )
                }
                Err(_) => (0, 0, 0),
            };
        tracing::info!(
            target: "vx::counters",
            "spawns={spawns} files_hashed={hashed} sql_statements={statements} \
             cpu_user_ms={user_ms} cpu_sys_ms={sys_ms} max_rss_kib={rss_kib}"
        );
    }

    /// Writes the key fingerprints of the executed tasks so far (`vx why` reads them): at the
    /// end of the run, and every [`RECORDED_IN_MEMORY`] keys, so a large cold run does not hold
    /// them all (a few kilobytes per task).
    fn flush_recorded(&mut self) {
        let Some(store) = self.store.as_mut() else {
            return;
        };
        let keys: Vec<(String, Vec<vx_store::index::KeyComponent>)> =
            std::mem::take(&mut self.recorded)
                .into_iter()
                .map(|(key, components)| {
                    let components = components
                        .into_iter()
                        .map(|c| vx_store::index::KeyComponent {
                            kind: c.kind,
                            name: c.name,
                            digest: c.digest,
                        })
                        .collect();
                    (key, components)
                })
                .collect();
        let _ = store.record_keys_inputs(&keys);
    }

    /// End of run: access times, identity memo rows, the last key fingerprints and the history
    /// rows `vx why` reads, in a few statements. No history is recorded for a run stopped by a
    /// signal.
    pub fn finish(&mut self, history: Option<(Invocation, Vec<RunRow>)>) {
        let Some(store) = self.store.as_mut() else {
            return;
        };
        if store.disabled().is_some() {
            return;
        }
        let _ = store.flush_touches();
        let rows: Vec<(String, vx_store::index::FileStamp)> = self
            .keys
            .memo
            .dirty
            .iter()
            .filter_map(|path| {
                let (stat, blob) = self.keys.memo.rows.get(path)?;
                Some((path.clone(), file_stamp(stat, blob)))
            })
            .collect();
        let _ = store.put_file_stamps(&self.workspace_id, &rows);
        self.flush_recorded();
        if let Some(history) = history {
            self.record_history(history);
            let Some(store) = self.store.as_mut() else {
                return;
            };
            // STORE-16: retention after saves, silently, never for a signal-stopped run.
            if let Some(retention) = &self.workspace.settings.cache_retention {
                let policy = vx_store::PrunePolicy {
                    older_than: retention
                        .older_than
                        .as_deref()
                        .and_then(vx_core::units::parse_duration),
                    max_size: retention
                        .max_size
                        .as_deref()
                        .and_then(vx_core::units::parse_size),
                };
                if let Err(error) = store.retention(&policy) {
                    render::warning(&format!("cache retention failed: {error}"));
                }
            }
        }
    }
}

/// What a run reads from the index when it opens the store.
#[derive(Default)]
pub struct ReadWithIndex {
    /// The workspace's `output_stamps` (STORE-9).
    pub stamps: WorkspaceStamps,
    /// Each task's recent executions, for the scheduler's estimates (SCHED-2, SCHED-4).
    pub recent: HashMap<TaskId, vx_store::index::Recent>,
}

/// A workspace's `output_stamps` as a run reads them when it opens the store.
#[derive(Default)]
pub struct WorkspaceStamps {
    /// The rows by key, the completion marker left out.
    pub by_key: HashMap<String, Vec<OutputStamp>>,
    /// The keys by (project, task); more than one for a task are stamps its later outputs
    /// replaced (deleted when the task's stamps are next recorded).
    pub keys_by_task: KeysByTask,
}

/// How many executed tasks' key fingerprints wait in memory before they are written.
const RECORDED_IN_MEMORY: usize = 500;

/// How a restore ended.
enum Restore {
    Served(Decision),
    /// No usable entry after all: the task runs.
    Miss,
    /// The task fails with this line.
    Failed(String),
}

/// STORE-12's line for a damaged entry.
/// STORE-12's line for a damaged entry: `discarded` when it was deleted, `ignoring` when
/// local writes are off and it was kept.
fn say_damaged(id: &TaskId, short: &str, reason: &str, discarded: bool) {
    let verb = if discarded { "discarded" } else { "ignoring" };
    render::notice(&format!(
        "{id}: {verb} damaged cache entry {short} ({reason}); running the task"
    ));
}

/// A restore failure in the words of STORE-10 (the paths root-relative where possible).
fn restore_reason(error: &artifact::RestoreError) -> String {
    match error {
        artifact::RestoreError::Blocked { path } => {
            format!("`{}` stands where an output must go", path.display())
        }
        artifact::RestoreError::Unsafe { path } => format!(
            "refusing to write through `{}`: it leads outside the project",
            path.display()
        ),
        artifact::RestoreError::Io { path, source }
            if vx_store::fault::of_io(source) == vx_store::fault::Fault::Full =>
        {
            vx_store::fault::io_text(path, source)
        }
        artifact::RestoreError::Io { path, source } => {
            format!("`{}`: {}", path.display(), plain(source))
        }
        other => other.to_string(),
    }
}

/// What the restore lane can do for a task (SCHED-3).
pub enum Ahead {
    /// Served at once (up-to-date).
    Served(Decision),
    /// Its outputs must be written back: a job for the lane's threads.
    Restore(Box<RestoreJob>),
    /// Left to the normal schedule.
    Not,
}

/// One restore on the restore lane: cleaning the outputs and writing the entry back, off the
/// run loop. Owns everything it needs.
pub struct RestoreJob {
    id: TaskId,
    key: String,
    short: String,
    stored: Duration,
    path: PathBuf,
    root: PathBuf,
    outputs: Outputs,
    found: Vec<Found>,
}

impl RestoreJob {
    /// STORE-10: clean (the protections were checked on the loop), then validate and stage
    /// the archive, then commit.
    pub fn run(&self) -> Result<artifact::Restored, artifact::RestoreError> {
        self.outputs
            .clean(&self.root, &self.found)
            .map_err(|error| match error {
                super::outputs::CleanError::Remove { path, source } => artifact::RestoreError::Io {
                    path: self.root.join(path),
                    source,
                },
            })?;
        let outputs = &self.outputs;
        let root = &self.root;
        let accept = |name: &str| outputs.accepts(name);
        let target = |name: &str| {
            let rel = outputs.path_of(name).unwrap_or_default();
            Target {
                path: root.join(&rel),
                contain: if is_under(&rel, &outputs.dir) {
                    root.join(&outputs.dir)
                } else {
                    root.clone()
                },
                root: root.clone(),
            }
        };
        artifact::restore(&self.path, &self.key, &accept, artifact::SIZE_CAP, &target)
    }
}

/// What `after` decided for a finished task.
pub enum After {
    /// Nothing to save (or it was refused); the task is done.
    Done,
    /// Pack this on the save lane, then [`RunCache::complete_save`].
    Pack(Box<SaveJob>),
}

/// One save, packed off the run loop (STORE-7: the save lane). Owns everything packing needs.
pub struct SaveJob {
    id: TaskId,
    key: String,
    tmp: PathBuf,
    log: Vec<u8>,
    meta: ArtifactMeta,
    files: Vec<OutputFile>,
    /// The root-relative output paths packed, for the stamps recorded after.
    found: Vec<String>,
    outputs_dir: String,
}

impl SaveJob {
    /// STORE-7 step 2: pack into `tmp/` and read the result back as a restore would.
    pub fn pack(&self) -> Result<artifact::Packed, artifact::PackError> {
        artifact::pack(
            &self.tmp,
            &self.log,
            self.meta.clone(),
            &self.files,
            artifact::SIZE_CAP,
        )
    }
}

/// A folded path that moved while a task ran (KEY-16).
struct Moved {
    path: String,
    fingerprint: bool,
}

enum SaveError {
    TooLarge(String),
    Refused(String),
    Failed(String),
}

/// What `after` needs to know about a finished attempt.
pub struct Done<'a> {
    pub id: &'a TaskId,
    pub success: bool,
    pub writes: bool,
    /// Why `writes` is false (HIST-1 `unsaved_reason`).
    pub unsaved_reason: &'static str,
    pub started: SystemTime,
    pub duration: Duration,
    pub command_line: &'a str,
    /// The encoded log (STORE-6).
    pub log: &'a [u8],
    pub cpu_ms: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
}

/// The stamps to record for an entry: its files' stamps, or, for an entry without files, one
/// row with an empty path, so that every entry this checkout saved or restored has a row and
/// `Store::preload` reads it ahead. The marker is dropped again when stamps are loaded.
fn with_marker(rows: &[OutputStamp]) -> Vec<OutputStamp> {
    if rows.is_empty() {
        vec![OutputStamp {
            path: String::new(),
            size: 0,
            mode: 0,
            mtime_ns: 0,
            inode: 0,
            ctime_ns: 0,
        }]
    } else {
        rows.to_vec()
    }
}

fn decode_log(bytes: &[u8]) -> Vec<LogRecord> {
    vx_store::log::decode(bytes).unwrap_or_else(|_| {
        vec![LogRecord {
            stream: LogStream::Note,
            bytes: b"vx: the stored log could not be read\n".to_vec(),
        }]
    })
}

fn file_stamp(stat: &vx_workspace::tree::Stat, blob: &str) -> vx_store::index::FileStamp {
    vx_store::index::FileStamp {
        device: stat.device,
        inode: stat.inode,
        mtime_ns: stat.mtime_ns,
        ctime_ns: stat.ctime_ns,
        size: stat.size,
        mode: stat.mode,
        blob_id: blob.to_string(),
    }
}

/// Converts stored memo rows back into the tree's stat form.
pub fn memo_row(row: &vx_store::index::FileStamp) -> (vx_workspace::tree::Stat, String) {
    (
        vx_workspace::tree::Stat {
            device: row.device,
            inode: row.inode,
            mtime_ns: row.mtime_ns,
            ctime_ns: row.ctime_ns,
            size: row.size,
            mode: row.mode,
        },
        row.blob_id.clone(),
    )
}

/// Milliseconds since the Unix epoch.
pub fn epoch_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `N` bytes from the system's random source (zeros if it cannot be read).
fn random_bytes<const N: usize>() -> [u8; N] {
    let mut random = [0u8; N];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut random);
    }
    random
}

/// `n` random bytes as hex (the stop-commands token of UI-9).
pub fn random_hex(n: usize) -> String {
    let bytes: Vec<u8> = (0..n.div_ceil(16))
        .flat_map(|_| random_bytes::<16>())
        .take(n)
        .collect();
    vx_core::key::hex(&bytes)
}

/// A UUIDv7 run id: 48 bits of Unix milliseconds, then random bits (HIST-1).
pub fn run_id() -> String {
    let random = random_bytes::<10>();
    let ms = epoch_ms(SystemTime::now()) as u64;
    let mut bytes = [0u8; 16];
    bytes[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    bytes[6..].copy_from_slice(&random);
    bytes[6] = (bytes[6] & 0x0f) | 0x70;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex = vx_core::key::hex(&bytes);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

fn ns(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// STORE-2: the BLAKE3 of the root's canonical absolute path.
pub fn workspace_identity(root: &Path) -> String {
    vx_core::key::hex(blake3::hash(root.to_string_lossy().as_bytes()).as_bytes())
}

/// RFC 3339 UTC with seconds, from the system clock.
pub fn rfc3339_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    rfc3339(secs)
}

/// Civil date from days since the epoch (Howard Hinnant's algorithm).
pub fn rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Where the store lives (STORE-2): `--cache-dir` (relative to cwd) > `VX_CACHE_DIR`
/// (relative to the root) > `[workspace] cache-dir` (root-relative, `~/` expanded) > `.vx`.
pub fn cache_dir(
    root: &Path,
    cwd: &Path,
    flag: Option<&str>,
    env: &BTreeMap<String, String>,
    setting: Option<&str>,
) -> PathBuf {
    let home = env.get("HOME").map(PathBuf::from);
    let expand = |text: &str, base: &Path| -> PathBuf {
        match (text.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => base.join(text),
        }
    };
    let chosen = if let Some(flag) = flag {
        expand(flag, cwd)
    } else if let Some(value) = env.get("VX_CACHE_DIR").filter(|v| !v.is_empty()) {
        expand(value, root)
    } else if let Some(setting) = setting {
        expand(setting, root)
    } else {
        root.join(".vx")
    };
    normalise(&chosen)
}

/// Lexical normalisation: `.` and `..` segments resolved without touching the disk (the
/// directory may not exist yet).
pub fn normalise(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// STORE-2: a cache directory that is the root, contains it, contains a project, or is `/`
/// would hold (and prune) workspace sources.
pub fn refuses_cache_dir(dir: &Path, workspace: &Workspace) -> bool {
    let root = &workspace.root;
    dir == Path::new("/")
        || root.starts_with(dir)
        || workspace
            .projects
            .iter()
            .any(|p| root.join(&p.dir).starts_with(dir))
}
