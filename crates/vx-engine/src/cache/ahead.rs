//! SCHED-3's restore lane, the cache's side: what is read and downloaded ahead for a batch of
//! tasks (REM-6), the hits served before their dependencies finish, and the misses it leaves
//! to the schedule.

use std::collections::HashSet;
use std::sync::Arc;

use vx_core::TaskId;
use vx_store::artifact;

use super::decision::{Probe, Restore, Served, Want};
use super::outputs::Outputs;
use super::{Ahead, Decision, RestoreJob, RunCache};
use crate::plan::nodes::Row;

impl RunCache<'_> {
    /// Before [`RunCache::prepare_ahead`] of these tasks: their input `lstat`s and output
    /// listings are taken at once, on several threads (the warm path is mostly these system
    /// calls); nothing has executed yet, so they are what each task would see one by one.
    ///
    /// With a remote layer, the entries of these tasks that only it holds are downloaded in the
    /// background, its `download-concurrency` at a time (REM-6): returns the positions in `ids` of those tasks,
    /// and `ready` is called with each position once its download has ended (arrived or not);
    /// [`RunCache::prepare_ahead`] of that task then adopts it.
    pub fn prefetch_ahead(
        &mut self,
        tasks: &[Row<'_>],
        ready: Box<dyn Fn(usize) + Send + Sync>,
    ) -> Vec<usize> {
        if !self.reads() {
            return Vec::new();
        }
        self.keys.prefetch(tasks);
        let mut fetching = Vec::new();
        if self.layers.has_remote() {
            let mut wanted = Vec::new();
            let mut waiting = Vec::new();
            for (at, task) in tasks.iter().enumerate() {
                // KEY-9: a key that folds an upstream's outputs waits for that upstream.
                if !self.keys.ready(task.id) {
                    waiting.push(at);
                    continue;
                }
                self.want(*task, at, &mut wanted);
            }
            let ready: Arc<dyn Fn(usize) + Send + Sync> = Arc::from(ready);
            let relay = |ready: &Arc<dyn Fn(usize) + Send + Sync>| {
                let ready = Arc::clone(ready);
                Box::new(move |at: usize| ready(at))
            };
            fetching = self.layers.prefetch(wanted, relay(&ready));
            // The keys that wait for upstreams, from the outputs record, when the remote
            // cache is being read anyway.
            let predicted = self.want_predicted(tasks, waiting, !fetching.is_empty());
            fetching.extend(self.layers.prefetch(predicted, relay(&ready)));
            self.show_layer_warnings();
        }
        // Those being downloaded are listed when they are prepared, after their download.
        let mut wanted: Vec<(TaskId, Outputs)> = Vec::new();
        let later: HashSet<usize> = fetching.iter().copied().collect();
        for (at, task) in tasks.iter().enumerate() {
            if later.contains(&at) {
                continue;
            }
            if let Some(outputs) = self.outputs(*task) {
                wanted.push((task.id.clone(), outputs));
            }
        }
        let root = self.workspace.root.clone();
        let found = vx_workspace::par::map(&wanted, |(_, outputs)| outputs.find(&root));
        self.found_ahead = wanted.into_iter().map(|(id, _)| id).zip(found).collect();
        fetching
    }

    /// After the tasks of [`RunCache::prefetch_ahead`] were prepared: listings and `lstat`s
    /// taken ahead are dropped, so no later decision reads one (the index rows stay preloaded
    /// for the next level, [`RunCache::end_levels_ahead`]).
    pub fn end_ahead(&mut self) {
        self.end_ahead_part();
    }

    /// After one part of a large batch was prepared: its listings and `lstat`s are dropped
    /// before the next part's are taken (the index rows stay preloaded for the next parts).
    pub fn end_ahead_part(&mut self) {
        self.found_ahead.clear();
        self.keys.end_prefetch();
    }

    /// Every level of hits served ahead was (the tasks whose keys waited for what their
    /// upstreams produced, KEY-9, included): the index rows preloaded for them and not used
    /// are dropped (a large run does not keep them).
    pub fn end_levels_ahead(&mut self) {
        if let Some(store) = self.layers.store_mut() {
            store.drop_preloaded();
        }
    }

    /// SCHED-3, the restore lane: a task with a stable key, before its dependencies have
    /// finished. Up-to-date hits are served here; a hit that needs its outputs written back
    /// becomes a [`RestoreJob`] for the lane's threads (cleaning protections checked first).
    /// [`Ahead::Not`] leaves the task to the normal schedule (no entry, damage, or a clean that
    /// must be refused when the task runs).
    pub fn prepare_ahead(&mut self, task: Row<'_>, needs_log: bool) -> Ahead {
        if !self.reads() || !self.keys.ready(task.id) {
            return Ahead::Not;
        }
        let id = task.id;
        let hit = match self.probe(task, Want::Entry) {
            Probe::Hit(hit) => hit,
            Probe::Miss { .. } => {
                self.miss_ahead(id);
                return Ahead::Not;
            }
            _ => return Ahead::Not,
        };
        let found = match self.found_ahead.remove(id) {
            Some(found) => found,
            None => hit.outputs.find(&self.workspace.root),
        };
        let Ok(found) = found else {
            return Ahead::Not;
        };
        match self.serve(id, hit, needs_log, found) {
            Served::Decision(decision) => Ahead::Served(decision),
            Served::Restore(job) => Ahead::Restore(job),
            Served::Refused(_) => Ahead::Not,
        }
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

    /// The lane found no usable entry: not looked up again, and keyed again when ready (the
    /// late key is the one a result is saved under).
    pub(super) fn miss_ahead(&mut self, id: &TaskId) {
        self.known_misses.insert(id.clone());
        self.keys.forget(id);
    }
}
