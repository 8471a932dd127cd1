//! The run's side of the cache (STORE-1 …): per task, decide between up-to-date, restore and
//! execute before it runs, and save its result after.
//!
//! How this works: [`RunCache`] is a thin coordinator over state that each file owns.
//! [`RunCache::probe`] (`probe.rs`) is the one lookup path: it derives the task's key (`keys`)
//! and, when the task is cached and reads are on, asks the cache [`Layers`] (the local store,
//! then any further layer read through). The run ([`RunCache::before`]), the restore lane
//! ([`RunCache::prepare_ahead`]) and `--dry` ([`RunCache::plan_row`]) all start from it. A hit
//! whose outputs on disk are exactly what vx last wrote ([`Stamps`], `stamps.rs`) is
//! *up-to-date* and only its log is read back; any other hit is cleaned (`clean.rs`, the
//! protections of STORE-10) and restored (`restore.rs`: a [`RestoreJob`] runs on the restore
//! lane or inline). A miss that will be saved has its declared outputs cleaned first (STORE-11).
//! After a task executed, [`RunCache::after`] applies the save guard (KEY-16) and prepares a
//! [`SaveJob`] (`save.rs`); the save lane packs it and [`RunCache::complete_save`] publishes it
//! and queues its uploads. Damage is always a miss with one line (STORE-12), never a wrong hit.
//! What the run records (history, fingerprints, retention) is the [`Recorder`]'s, not the cache's.
//!
//! The files: the state and values the coordinator holds are leaves (`decision.rs`: what a
//! probe found and what the cache decided; `jobs.rs`: what the lanes carry; `cleaner.rs`: the
//! memo of uncommitted changes and the removal itself; `guard.rs`: the save guard's memory;
//! `stamps.rs`, `outputs.rs`, `produced.rs`); `probe.rs`, `ahead.rs` (the restore lane), `restore.rs`,
//! `clean.rs`, `save.rs` and `predict.rs` each add one concern's methods to `RunCache` and use
//! those leaves, never each other's state.
//!
//! [`Recorder`]: super::record::Recorder

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use vx_core::config::TaskConfig;
use vx_core::globs::GlobCache;
use vx_core::{TaskId, Workspace};
use vx_store::Layers;

use super::keys::Keys;
use crate::options::CachePolicy;
use crate::plan::nodes::{Kind, Row};
use crate::plan::preview::DryCache;

mod ahead;
mod clean;
mod cleaner;
mod decision;
mod guard;
mod jobs;
pub(crate) mod outputs;
mod predict;
mod probe;
mod produced;
pub mod remote;
mod restore;
mod save;
mod stamps;
#[cfg(test)]
mod tests;

use cleaner::Cleaner;
pub use cleaner::DirtyProbe;
pub use decision::{Ahead, Decision, Replay};
use decision::{Probe, Restore, Served, Want};
use guard::Guard;
pub use jobs::{After, Done, RestoreJob, SaveJob};
use outputs::{Found, Outputs};
use stamps::Stamps;
pub use stamps::WorkspaceStamps;

pub use super::outcome::CacheKind;
use super::outcome::Notice;

pub struct RunCache<'p> {
    pub keys: Keys<'p>,
    workspace: &'p Workspace,
    layers: Layers,
    policy: CachePolicy,
    /// The cache directory relative to the root, when it lies inside the workspace: a wall no
    /// output walk enters.
    cache_wall: Option<String>,
    globs: GlobCache,
    /// Caching was turned off during the run (KEY-16, STORE-12).
    off: bool,
    stamps: Stamps,
    cleaner: Cleaner<'p>,
    guard: Guard,
    /// Output stamps of restores not yet written: (key, rows, superseded keys). Written in one
    /// transaction per [`STAMP_BATCH`] and at the end of the run (a thousand restores wrote a
    /// thousand transactions); stamps lost to a crash only make the next run look again.
    pending_stamps: Vec<(String, Vec<vx_store::index::OutputStamp>, Vec<String>)>,
    /// Output listings taken by [`RunCache::prefetch_ahead`], each used once.
    found_ahead: HashMap<TaskId, std::io::Result<Vec<Found>>>,
    /// Tasks the restore lane looked up and found no usable entry for: not looked up again.
    known_misses: HashSet<TaskId>,
    /// `--dry`: the tasks only the remote cache holds (what they produced is not known here).
    remote_only: HashSet<TaskId>,
    /// What the cache has to say, until the run hands it to the reporter.
    notices: Vec<Notice>,
    /// KEY-9's outputs record in the remote cache (`produced.rs`).
    record: produced::OutputsRecord,
    /// A result was queued for upload in this run.
    uploaded: bool,
    /// Tasks that executed here and produced what no outputs record names (`predict.rs`).
    unheard: HashSet<TaskId>,
}

impl<'p> RunCache<'p> {
    /// `stamps`: the workspace's output stamps read when the store was opened, with the entries
    /// they name preloaded (`Store::preload`).
    pub fn new(
        keys: Keys<'p>,
        workspace: &'p Workspace,
        layers: Layers,
        stamps: WorkspaceStamps,
        policy: CachePolicy,
        ci: bool,
        dirty_probe: DirtyProbe<'p>,
    ) -> RunCache<'p> {
        let workspace_id = crate::cache_dir::workspace_identity(&workspace.root);
        // STORE-14: a cache vx cannot write serves hits and saves nothing (setup warned).
        let mut policy = policy;
        if layers
            .store()
            .is_some_and(|s| s.read_only_reason().is_some())
        {
            policy.local_write = false;
        }
        let cache_wall = layers.store().and_then(|s| {
            s.dir()
                .strip_prefix(&workspace.root)
                .ok()
                .map(|rel| rel.to_string_lossy().replace('\\', "/"))
        });
        RunCache {
            keys,
            workspace,
            layers,
            policy,
            cache_wall,
            globs: GlobCache::default(),
            off: false,
            stamps: Stamps::new(stamps, workspace_id),
            cleaner: Cleaner::new(dirty_probe),
            guard: Guard::new(ci),
            pending_stamps: Vec::new(),
            found_ahead: HashMap::new(),
            known_misses: HashSet::new(),
            remote_only: HashSet::new(),
            notices: Vec::new(),
            record: produced::OutputsRecord::new(),
            uploaded: false,
            unheard: HashSet::new(),
        }
    }

    /// KEY-9: the branches whose outputs records this run reads (the first it writes). They
    /// are read once the run downloads from the remote cache, or writes a result to it.
    pub fn outputs_record_branches(&mut self, branches: Vec<String>) {
        self.record.set_branches(branches);
    }

    /// Starts reading the outputs records in the background, once.
    pub(super) fn start_outputs_records(&mut self) {
        if !self.reads_remote() {
            return;
        }
        let Some(tmp) = self.tmp_dir() else {
            return;
        };
        let layer = self.layers.record_layers().into_iter().next();
        self.record.start(layer, tmp);
    }

    pub(super) fn tmp_dir(&self) -> Option<std::path::PathBuf> {
        let store = self.layers.store()?;
        Some(store.dir().join(vx_store::index::TMP_DIR))
    }

    /// What the cache said since the last call (damage, refusals, the layers' warnings), for
    /// the reporter.
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    fn say(&mut self, notice: Notice) {
        self.notices.push(notice);
    }

    /// A notice about the cache from outside it (a remote layer that cannot be used), shown
    /// with the cache's own.
    pub fn tell(&mut self, notice: Option<Notice>) {
        self.notices.extend(notice);
    }

    /// The cache layers (the local store and any behind it).
    pub fn layers(&self) -> &Layers {
        &self.layers
    }

    pub fn layers_mut(&mut self) -> &mut Layers {
        &mut self.layers
    }

    /// The keys (read) and the layers (written) at once: the run record borrows what keys
    /// were derived from while history is written.
    pub fn keys_and_layers(&mut self) -> (&Keys<'p>, &mut Layers) {
        (&self.keys, &mut self.layers)
    }

    /// The full key derived for `id` in this run, if any.
    pub fn key_hex(&self, id: &TaskId) -> Option<String> {
        self.keys.known(id).map(|d| d.key.hex())
    }

    fn outputs_of(&mut self, id: &TaskId, config: &TaskConfig) -> Option<Outputs> {
        let cache = config.cache.as_ref()?;
        let index = *self.workspace.by_name.get(&id.project)?;
        let project = &self.workspace.projects[index];
        let mut walls: Vec<String> = self.keys.nested(index).to_vec();
        walls.extend(self.cache_wall.clone());
        Some(Outputs::new(&project.dir, cache, walls, &mut self.globs))
    }

    /// The declared outputs of a cached task (`None` for an uncached one).
    pub fn outputs(&mut self, task: Row<'_>) -> Option<Outputs> {
        self.outputs_of(task.id, task.config)
    }

    /// The root-relative paths of a cached task's declared outputs on disk now: files, links
    /// and directories (REM-12 sends an upstream's outputs with a remote dependant).
    pub fn outputs_on_disk(&mut self, task: Row<'_>) -> std::io::Result<Vec<String>> {
        let Some(outputs) = self.outputs(task) else {
            return Ok(Vec::new());
        };
        Ok(outputs
            .find(&self.workspace.root)?
            .into_iter()
            .map(|f| f.path)
            .collect())
    }

    /// The root-relative paths that root-relative `globs` match on disk, ignored files
    /// included, walked as output globs are (REM-12's `extra-inputs`).
    pub fn matching(&mut self, globs: &[String]) -> std::io::Result<Vec<String>> {
        let declared = vx_core::config::CacheConfig {
            outputs: Some(Vec::new()),
            workspace_outputs: globs.to_vec(),
            ..Default::default()
        };
        let walls: Vec<String> = self.cache_wall.clone().into_iter().collect();
        let outputs = Outputs::new("", &declared, walls, &mut self.globs);
        Ok(outputs
            .find(&self.workspace.root)?
            .into_iter()
            .map(|f| f.path)
            .collect())
    }

    /// Outputs were written into the workspace outside a restore (a remote result's forced
    /// download, REM-14): the tree lists them again.
    pub fn outputs_written(&mut self, outputs: &Outputs) {
        self.refresh_outputs(outputs);
    }

    /// `--dry` (UI-12): the task's key and whether the cache has an entry for it, without
    /// reading an artifact or writing anything (REM-9: existence only).
    ///
    /// Rows are asked for upstreams first: each settles what its dependants fold (KEY-9), from
    /// the local entry, or — for a task that would run, or whose entry only the remote holds —
    /// from the outputs history says it produced last ([`Keys::settle_predicted`]).
    pub fn plan_row(&mut self, task: Row<'_>) -> (Result<String, String>, DryCache) {
        if task.kind != Kind::Persistent {
            if let Some(waits) = self.keys.dry_facts(task.id).waits {
                // An upstream without output history here: what it produces, or what the remote
                // cache's entry holds, decides.
                let why = if self.remote_only.contains(&waits) {
                    format!(
                        "{waits} is restored from the remote cache first; what it holds decides"
                    )
                } else {
                    format!("{waits} runs first; its outputs decide")
                };
                return (Err(why), DryCache::Miss);
            }
        }
        let probed = self.probe(task, Want::Existence);
        let remote = match &probed {
            Probe::Exists {
                key,
                source: vx_store::Source::Remote,
            } => {
                self.start_outputs_records();
                self.record.produced(key)
            }
            _ => None,
        };
        let store = self.layers.store();
        let local = |key: &str| store.and_then(|s| s.produced_of(key).ok().flatten());
        let history = || {
            store.and_then(|s| {
                s.latest_produced(&task.id.project, &task.id.task)
                    .ok()
                    .flatten()
            })
        };
        match &probed {
            Probe::Exists {
                key,
                source: vx_store::Source::Local,
            } => {
                let produced = local(key);
                self.keys.settle_produced(task.id, produced.as_deref());
            }
            Probe::Exists { .. } if remote.is_some() => {
                // The record uploaded with the entry says what it holds.
                self.keys.settle_produced(task.id, remote.as_deref());
            }
            Probe::Exists { .. } | Probe::Miss { .. } => {
                if matches!(probed, Probe::Exists { .. }) {
                    self.remote_only.insert(task.id.clone());
                }
                if let Some(produced) = history() {
                    self.keys.settle_predicted(task.id, &produced);
                }
            }
            _ => {}
        }
        match probed {
            Probe::Persistent => (Err("persistent".into()), DryCache::NoCache),
            Probe::KeyFailed(error) => (Err(error), DryCache::Miss),
            Probe::Uncached { key } => (Ok(key), DryCache::NoCache),
            Probe::Miss { key, .. } => (Ok(key), DryCache::Miss),
            Probe::Exists {
                key,
                source: vx_store::Source::Remote,
            } => (Ok(key), DryCache::HitRemote),
            Probe::Exists { key, .. } => (Ok(key), DryCache::HitLocal),
            Probe::Hit(hit) => (Ok(hit.key), DryCache::HitLocal),
        }
    }

    /// KEY-9: whether `id`'s key can be taken now (every upstream whose outputs it folds has
    /// settled).
    pub fn keys_ready(&self, id: &TaskId) -> bool {
        self.keys.ready(id)
    }

    /// KEY-9: `id` has upstreams in the run whose outputs its key folds, and no lookup missed
    /// it yet: one the restore lane left for them, worth keying again once they settle.
    pub fn waited_for_outputs(&self, id: &TaskId) -> bool {
        !self.known_misses.contains(id) && !self.keys.cut_sources(id).is_empty()
    }

    /// KEY-9: the upstreams of the run whose outputs `id`'s key folds.
    pub fn cut_sources(&self, id: &TaskId) -> Vec<TaskId> {
        self.keys.cut_sources(id)
    }

    /// `--dry`: the upstreams that would run whose outputs the task's key assumes unchanged
    /// from history, through every key it folds.
    pub fn assumed(&mut self, id: &TaskId) -> Vec<TaskId> {
        self.keys.dry_facts(id).assumes.into_iter().collect()
    }

    /// Decides how a ready task gets its result. `saveable` is false when the task must not be
    /// saved whatever happens (tainted, or folding a dropped dependency).
    pub fn before(&mut self, task: Row<'_>, saveable: bool, needs_log: bool) -> Decision {
        let id = task.id;
        let want = if self.known_misses.contains(id) {
            Want::Key
        } else {
            Want::Entry
        };
        let outputs = match self.probe(task, want) {
            Probe::Persistent => {
                return Decision::Execute {
                    cached: false,
                    writes: false,
                }
            }
            Probe::Uncached { .. } => {
                if let Some(outputs) = self.outputs(task) {
                    self.unlink_escaping_links(id, &outputs);
                }
                return Decision::Execute {
                    cached: false,
                    writes: false,
                };
            }
            Probe::KeyFailed(error) => return Decision::Fail(format!("vx: {error}")),
            Probe::Exists { .. } => unreachable!("only asked for by --dry"),
            Probe::Miss { outputs, .. } => outputs,
            Probe::Hit(hit) => {
                let found = match hit.outputs.find(&self.workspace.root) {
                    Ok(found) => found,
                    Err(e) => {
                        return Decision::Fail(format!(
                            "vx: {id}: cannot read the outputs: {}",
                            outputs::plain(&e)
                        ))
                    }
                };
                let outputs = hit.outputs.clone();
                match self.serve(id, hit, needs_log, found) {
                    Served::Decision(decision) => return decision,
                    Served::Refused(line) => return Decision::Fail(line),
                    Served::Restore(job) => {
                        let result = job.run();
                        match self.finish_restore(*job, result) {
                            Restore::Served(decision) => return decision,
                            Restore::Miss => {}
                            Restore::Failed(line) => return Decision::Fail(line),
                        }
                    }
                }
                outputs
            }
        };
        // REM-8: with local writes off a result is still packed (in `tmp/`) for the further
        // layers, unless vx cannot write in the cache directory at all (STORE-14).
        let packs_for_remote = self.layers.writes_remotely()
            && self
                .layers
                .store()
                .is_some_and(|s| s.read_only_reason().is_none());
        let writes = self.active() && (self.policy.local_write || packs_for_remote);
        if writes && saveable {
            if let Err(line) = self.clean(id, &outputs) {
                return Decision::Fail(line);
            }
        } else {
            self.unlink_escaping_links(id, &outputs);
        }
        Decision::Execute {
            cached: true,
            writes: writes && saveable,
        }
    }

    /// SCHED-8: `id`'s entry arrived in a further layer since it was looked up: the next
    /// lookup asks again.
    pub fn ask_again(&mut self, id: &TaskId) {
        self.known_misses.remove(id);
        if let Some(key) = self.key_hex(id) {
            self.layers.ask_again(&key);
        }
    }

    /// The further layers still in use (SCHED-8's records).
    pub fn record_layers(&self) -> Vec<vx_store::layer::RecordLayer> {
        self.layers.record_layers()
    }

    /// SCHED-8: a further layer that reads, to watch for another runner's upload of `id`'s
    /// entry, with the key; `None` without one or before the key is known.
    pub fn watch_for(&self, id: &TaskId) -> Option<(vx_store::layer::RecordLayer, String)> {
        let key = self.key_hex(id)?;
        let layer = self.layers.record_layers().into_iter().find(|l| l.read)?;
        Some((layer, key))
    }

    /// Marks a task as not saved, for tasks that never reached `after` (failed keys).
    pub fn withhold(&mut self, id: &TaskId) {
        self.guard.withhold(id);
    }

    /// Whether the index is open, enabled and caching was not turned off during the run.
    fn active(&self) -> bool {
        !self.off && self.layers.enabled()
    }

    /// Whether lookups happen: the cache is active and reads are on.
    /// Whether lookups may ask a further layer (a remote cache) this run.
    pub fn reads_remote(&self) -> bool {
        self.reads() && self.layers.has_remote()
    }

    fn reads(&self) -> bool {
        self.active() && self.policy.local_read
    }

    /// Whether a lookup in this run could hit: some layer reads, and it is a remote one or a
    /// local store that may hold entries. A cold local cache alone cannot.
    pub fn may_hit(&self) -> bool {
        self.reads()
            && (self.layers.has_remote()
                || self.layers.store().is_some_and(|s| s.may_hold_entries()))
    }

    /// STORE-12: the index failed; caching is off for the rest of the run.
    fn turn_off(&mut self, reason: &str) {
        if !self.off {
            self.say(Notice::warning(format!(
                "the cache index failed ({reason}); caching is off for the rest of this run"
            )));
            self.off = true;
        }
    }

    /// The further layers' warnings not shown yet (REM-7), each class once per run.
    fn show_layer_warnings(&mut self) {
        for warning in self.layers.take_warnings() {
            self.say(Notice::Warning {
                line: warning.line,
                hint: warning.hint,
            });
        }
    }

    fn flush_key_notices(&mut self) {
        for notice in std::mem::take(&mut self.keys.notices) {
            self.say(notice);
        }
    }

    /// KEY-15: what a clean or restore touched is listed again.
    /// Queues the output stamps of a restore (see `pending_stamps`).
    fn stamp_later(
        &mut self,
        key: &str,
        rows: Vec<vx_store::index::OutputStamp>,
        superseded: Vec<String>,
    ) {
        self.pending_stamps
            .push((key.to_string(), rows, superseded));
        if self.pending_stamps.len() >= STAMP_BATCH {
            self.flush_stamps();
        }
    }

    /// Writes the queued output stamps, in one transaction.
    fn flush_stamps(&mut self) {
        if self.pending_stamps.is_empty() {
            return;
        }
        let entries = std::mem::take(&mut self.pending_stamps);
        let workspace = self.stamps.workspace_id().to_string();
        if let Some(store) = self.layers.store_mut() {
            let _ = store.set_output_stamps_many(&workspace, &entries);
        }
    }

    fn refresh_outputs(&mut self, outputs: &Outputs) {
        self.keys.changed(&outputs.prefixes());
    }

    /// End of the graph: access times, the identity memo rows and the lockfile memos are
    /// written, and the queued uploads are waited for (REM-8), `waiting` told so while they
    /// take long. `signalled`: a signal stopped the run, so its uploads are abandoned.
    pub fn finish(&mut self, signalled: bool, waiting: &mut dyn FnMut(Notice)) {
        self.flush_stamps();
        self.keys.lockfiles.write_memos();
        if signalled {
            self.layers.abandon_uploads();
        } else {
            // KEY-9: the outputs record goes up while the uploads drain.
            let record = self.write_outputs_record();
            let mut abandoned = 0;
            if self.layers.uploads_pending() > 0 {
                // Said while waiting, not after: the wait is what it explains.
                abandoned = self.layers.drain(UPLOAD_WAIT, UPLOAD_SLOW, &mut |pending| {
                    waiting(Notice::note(format!(
                        "finishing {pending} upload{}…",
                        if pending == 1 { "" } else { "s" }
                    )));
                });
            }
            if let Some(record) = record {
                let _ = record.join();
            }
            if abandoned > 0 {
                self.say(Notice::warning(format!(
                    "remote cache: {abandoned} upload{} abandoned after {} s",
                    if abandoned == 1 { "" } else { "s" },
                    UPLOAD_WAIT.as_secs()
                )));
            }
            for (name, counts) in self.layers.upload_counts(abandoned) {
                if let Some(notice) = uploads_line(&name, counts) {
                    self.say(notice);
                }
            }
        }
        for (name, what) in self.layers.adaptations() {
            self.say(Notice::note(format!("remote cache {name}: {what}")));
        }
        self.layers.discard_prefetched();
        self.show_layer_warnings();
        // REM-7: each failure class was warned about once; the repeats are counted once here,
        // above the footer.
        let repeats = self.layers.repeated_failures();
        if repeats > 0 {
            self.say(Notice::warning(format!(
                "remote cache: {repeats} more failure{} of the kinds above",
                if repeats == 1 { "" } else { "s" }
            )));
        }
        let workspace_id = self.stamps.workspace_id().to_string();
        let Some(store) = self.layers.store_mut() else {
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
        let _ = store.put_file_stamps(&workspace_id, &rows);
    }

    /// Closes the index (the end of a run).
    pub fn close(&mut self) {
        self.layers.close();
    }
}

/// Restores whose output stamps are written together (see `pending_stamps`).
const STAMP_BATCH: usize = 256;

/// REM-8: how long the end of a run waits for queued uploads, and after how long it says so.
const UPLOAD_WAIT: Duration = Duration::from_secs(60);
const UPLOAD_SLOW: Duration = Duration::from_secs(2);

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

/// The end-of-run line about one layer's uploads (REM-8): how many results went up, and why the
/// others did not. `None` when there was nothing to upload.
fn uploads_line(name: &str, counts: vx_store::UploadCounts) -> Option<Notice> {
    let total = counts.made + counts.failed + counts.skipped + counts.abandoned;
    if total == 0 {
        return None;
    }
    let results = |n: u64| if n == 1 { "result" } else { "results" };
    if counts.made == total {
        return Some(Notice::note(format!(
            "remote cache: uploaded {total} {} to {name}",
            results(total)
        )));
    }
    let mut why = Vec::new();
    if counts.failed > 0 {
        why.push(format!("{} failed", counts.failed));
    }
    if counts.skipped > 0 {
        why.push(format!(
            "{} not tried once the server was switched off",
            counts.skipped
        ));
    }
    if counts.abandoned > 0 {
        why.push(format!(
            "{} abandoned at the end of the run",
            counts.abandoned
        ));
    }
    // A note: each failure's class was a warning already.
    Some(Notice::note(format!(
        "remote cache: uploaded {} of {total} {} to {name}: {}",
        counts.made,
        results(total),
        why.join(", ")
    )))
}
