//! Cache hits and the two lanes: confirmed hits served ahead of their dependencies (SCHED-3),
//! restores written back on the restore lane, artifacts packed on the save lane (STORE-7).

use std::time::Instant;

use vx_core::schedule::{Finish, NodeState};

use super::{Kind, Msg, PackResult, RestoreResult, Row, Run};

use crate::cache::{Ahead, Decision, Replay, RestoreJob, SaveJob};
use crate::execute::stripper::Stripper;
use crate::outcome::Notice;
use crate::outcome::{Status, TaskReport};

/// Tasks read ahead at once by the restore lane (see `Run::serve_ahead_of`): large enough
/// that the `lstat`s and listings of a part keep the machine's threads busy.
const AHEAD_PART: usize = 4096;

impl Run<'_> {
    /// SCHED-3: confirmed hits of tasks with stable keys are served at once, without waiting
    /// for their dependencies (restores run on the loop thread, ahead of any execution). Then
    /// EXEC-13: an unrequested persistent task whose dependants were all served this way is
    /// not started.
    pub(super) fn restore_ahead(&mut self) {
        self.unstable = crate::keys::unstable_nodes(self.plan);
        // A cold cache cannot serve anything: the first tasks start at once, and each key is
        // taken when its task is ready (PERF: time to first task).
        if self.cache.may_hit() {
            // Upstreams first: a key that folds an upstream's outputs (KEY-9) can be taken
            // once that upstream was served.
            let candidates: Vec<usize> = crate::keys::topological(&self.plan.graph)
                .into_iter()
                .filter(|&i| self.ahead_candidate(i))
                .collect();
            self.serve_ahead_of(candidates);
            self.ahead_of_served();
        }
        self.cache.end_levels_ahead();
        for i in 0..self.plan.graph.nodes.len() {
            let node = &self.plan.graph.nodes[i];
            let candidate = self.rows[i].kind == Kind::Persistent
                && !self.is_shown(i)
                && !node.dependants.is_empty()
                && matches!(
                    self.scheduler.state(i),
                    NodeState::Waiting | NodeState::Ready
                );
            // Every dependant served, or being restored by the lane.
            if candidate
                && node.dependants.iter().all(|d| {
                    self.served_ahead(*d) || self.scheduler.state(*d) == NodeState::Running
                })
            {
                self.scheduler.take_ahead(i);
                self.servers_held.push(i);
            }
        }
        self.settle_servers();
    }

    /// A task the restore lane may serve before its dependencies finish: cached, one-shot,
    /// with a stable key, and neither started nor held already.
    fn ahead_candidate(&self, i: usize) -> bool {
        self.rows[i].kind == Kind::OneShot
            && self.rows[i].config.cache.is_some()
            && !self.unstable.get(i).copied().unwrap_or(true)
            && !self.prefetching.contains(&i)
            && matches!(
                self.scheduler.state(i),
                NodeState::Waiting | NodeState::Ready
            )
    }

    /// Serves `candidates` ahead (in their order): those whose entry only the remote holds wait
    /// out of the schedule for their download (REM-6), the others are served or restored now.
    /// In parts of [`AHEAD_PART`] tasks, each read ahead, prepared and dropped before the next:
    /// what is read ahead for 30,000 tasks at once (their inputs' `lstat`s, their outputs'
    /// listings) was 29 MB of the run's peak heap.
    fn serve_ahead_of(&mut self, candidates: Vec<usize>) {
        for part in candidates.chunks(AHEAD_PART) {
            self.serve_ahead_part(part.to_vec());
            self.cache.end_ahead_part();
        }
        self.cache.end_ahead();
    }

    fn serve_ahead_part(&mut self, candidates: Vec<usize>) {
        let tasks: Vec<Row<'_>> = candidates.iter().map(|&i| self.rows[i]).collect();
        // REM-6: tasks whose entry only the remote holds wait out of the schedule for their
        // download, and are served as each arrives (`Msg::Prefetched`).
        let nodes = candidates.clone();
        let tx = self.tx.clone();
        let ready = Box::new(move |at: usize| {
            let _ = tx.send(Msg::Prefetched(nodes[at]));
        });
        let fetching = self.cache.prefetch_ahead(&tasks, ready);
        self.relay_notices();
        for &at in &fetching {
            self.scheduler.take_ahead(candidates[at]);
            self.prefetching.insert(candidates[at]);
        }
        for (i, task) in candidates.into_iter().zip(tasks) {
            if self.prefetching.contains(&i)
                || !matches!(
                    self.scheduler.state(i),
                    NodeState::Waiting | NodeState::Ready
                )
            {
                continue;
            }
            let needs_log = self.reporter.shows_hit_log(self.is_shown(i));
            let ahead = self.cache.prepare_ahead(task, needs_log);
            self.relay_notices();
            self.serve_ahead(i, ahead, false);
        }
    }

    /// KEY-9: the dependants of the tasks just served ahead (or saved, with a remote cache)
    /// whose keys waited for what those produced are keyed and served ahead too, level after
    /// level, so that lookups in the remote cache happen in the background rather than one
    /// task at a time on the loop.
    pub(super) fn ahead_of_served(&mut self) {
        while !self.served_queue.is_empty() && self.stopping.is_none() {
            let served = std::mem::take(&mut self.served_queue);
            let mut next: Vec<usize> = served
                .iter()
                .flat_map(|&i| self.plan.graph.nodes[i].dependants.iter().copied())
                .filter(|&d| {
                    self.ahead_candidate(d)
                        && self.cache.waited_for_outputs(self.rows[d].id)
                        && self.cache.keys_ready(self.rows[d].id)
                })
                .collect();
            next.sort_unstable();
            next.dedup();
            if next.is_empty() {
                continue;
            }
            self.serve_ahead_of(next);
        }
        self.served_queue.clear();
    }

    /// REM-6: the download of a held task's remote entry ended. The task is served or restored
    /// like a hit found ahead, or goes back to the schedule (no entry, or the run is stopping).
    pub(super) fn prefetched(&mut self, i: usize) {
        if !self.prefetching.remove(&i) {
            return;
        }
        let ahead = if self.stopping.is_some() {
            Ahead::Not
        } else {
            let needs_log = self.reporter.shows_hit_log(self.is_shown(i));
            let ahead = self.cache.prepare_ahead(self.rows[i], needs_log);
            self.relay_notices();
            ahead
        };
        self.serve_ahead(i, ahead, true);
        self.ahead_of_served();
        self.settle_servers();
    }

    /// What [`RunCache::prepare_ahead`] decided for node `i`: a hit is reported and finished, a
    /// restore goes to the lane. `taken`: the node is out of the schedule already (held for its
    /// download), and goes back to it when nothing is served.
    ///
    /// [`RunCache::prepare_ahead`]: crate::cache::RunCache::prepare_ahead
    fn serve_ahead(&mut self, i: usize, ahead: Ahead, taken: bool) {
        let served = match ahead {
            Ahead::Restore(job) => {
                if !taken {
                    self.scheduler.take_ahead(i);
                }
                self.start_restore(i, job);
                return;
            }
            Ahead::Served(decision) => self.report_served(i, decision),
            Ahead::Not => false,
        };
        if served {
            self.served_queue.push(i);
        }
        if served && taken {
            let skipped = self.scheduler.finish(i, Finish::Success);
            self.report_skipped(&skipped);
        } else if served {
            self.scheduler.finish_ahead(i);
        } else if taken {
            let skipped = self.scheduler.give_back(i);
            self.report_skipped(&skipped);
        }
    }

    /// Reports node `i` served from the cache when `decision` is a hit; false otherwise.
    fn report_served(&mut self, i: usize, decision: Decision) -> bool {
        let Decision::Hit(replay) = decision else {
            return false;
        };
        self.report_hit(i, replay);
        true
    }

    /// Hands a restore to the restore lane; without a thread the task goes back to the normal
    /// schedule, which restores it there.
    pub(super) fn start_restore(&mut self, i: usize, job: Box<RestoreJob>) {
        let work = |i, job: Box<RestoreJob>| {
            let result = Box::new(job.run());
            Msg::Restored(i, job, result)
        };
        if self.restores.submit(i, job, &self.tx, work).is_err() {
            let skipped = self.scheduler.give_back(i);
            self.report_skipped(&skipped);
        }
    }

    /// A restore of the lane ended: the hit is served, or the task goes back to the schedule.
    pub(super) fn restored(&mut self, i: usize, job: Box<RestoreJob>, result: RestoreResult) {
        if let Some((next, job)) = self.restores.done() {
            self.start_restore(next, job);
        }
        let decision = self.cache.complete_ahead(job, result);
        self.relay_notices();
        let served = decision.is_some_and(|decision| self.report_served(i, decision));
        let skipped = if served {
            self.served_queue.push(i);
            self.scheduler.finish(i, Finish::Success)
        } else {
            self.scheduler.give_back(i)
        };
        self.report_skipped(&skipped);
        self.ahead_of_served();
        self.settle_servers();
    }

    /// Hands a save to the save lane; without a thread the result is not saved and the
    /// dependants are released at once.
    pub(super) fn start_save(&mut self, i: usize, job: Box<SaveJob>) {
        let work = |i, job: Box<SaveJob>| {
            let packed = Box::new(job.pack());
            Msg::Packed(i, job, packed)
        };
        if self.saves.submit(i, job, &self.tx, work).is_err() {
            self.reporter.notice(Notice::note(format!(
                "{}: could not save to the cache: cannot start a thread",
                self.plan.graph.nodes[i].id
            )));
            let skipped = self.scheduler.finish(i, Finish::Success);
            self.report_skipped(&skipped);
        }
    }

    /// The save lane finished packing: publish the entry, then release the dependants.
    pub(super) fn saved(&mut self, i: usize, job: Box<SaveJob>, packed: Box<PackResult>) {
        let saved = self.cache.complete_save(job, *packed);
        self.relay_notices();
        self.recorder.saved(&self.plan.graph.nodes[i].id, saved);
        if let Some((next, job)) = self.saves.done() {
            self.start_save(next, job);
        }
        if self.stopping.is_none() {
            let skipped = self.scheduler.finish(i, Finish::Success);
            self.report_skipped(&skipped);
            // KEY-9: its dependants' keys were waiting for what it produced; with a remote
            // cache their lookups go to the background rather than block the loop in turn.
            if self.cache.reads_remote() {
                self.served_queue.push(i);
                self.ahead_of_served();
            }
        }
    }

    /// A hit (UI-1): the stored log is replayed through the same path as live output.
    pub(super) fn hit(&mut self, i: usize, replay: Replay) {
        self.report_hit(i, replay);
        let skipped = self.scheduler.finish(i, Finish::Success);
        self.report_skipped(&skipped);
    }

    /// KEY-9: the upstreams whose outputs node `i`'s key folds that executed in this run — a
    /// hit then was cut off there.
    fn cut_off(&self, i: usize) -> Vec<vx_core::TaskId> {
        self.cache
            .cut_sources(&self.plan.graph.nodes[i].id)
            .into_iter()
            .filter(|up| {
                self.plan
                    .graph
                    .index
                    .get(up)
                    .and_then(|j| self.reports.get(j))
                    .is_some_and(|report| report.executed)
            })
            .collect()
    }

    pub(super) fn report_hit(&mut self, i: usize, replay: Replay) {
        let Replay {
            kind,
            records,
            short_key,
            stored,
            restore_reason,
            cost,
        } = replay;
        let started = Instant::now();
        let mut strippers =
            (!self.reporter.colour()).then(|| [Stripper::new(), Stripper::new(), Stripper::new()]);
        let mut log = Vec::new();
        for record in records {
            let bytes = match &mut strippers {
                Some(s) => s[record.stream as usize - 1].push(&record.bytes),
                None => record.bytes,
            };
            log.extend_from_slice(&bytes);
        }
        let mut report =
            TaskReport::not_started(self.plan.graph.nodes[i].id.clone(), Status::Success, None);
        report.cache = Some(kind);
        report.short_key = Some(short_key);
        report.stored = Some(stored);
        report.restore_reason = restore_reason;
        report.cut_off = self.cut_off(i);
        report.log = log;
        // A hit's frame is printed whole, header status included, even when it would stream.
        // Its time is what serving it cost: the download and the restore, then the replay.
        report.duration = cost + started.elapsed();
        report.start_offset = started.saturating_duration_since(self.started_at);
        report.end_offset = self.started_at.elapsed();
        report.admission_held = self.held.total(i);
        self.reporter.finished(i, &report, self.is_shown(i));
        self.reports.insert(i, report);
    }
}
