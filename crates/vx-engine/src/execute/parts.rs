//! `--shard K/N` at run time (SCHED-8): a task of another part that this runner needs, and that
//! the cache does not hold yet, is waited for: its own runner may upload it any moment.
//!
//! # How this works
//!
//! When such a task misses, it leaves the schedule without taking a slot, and a thread asks the
//! remote cache whether the task's key is there: at once, then not before the split expects the
//! entry (its planned finish on its own runner), then every quarter second, then less often, up
//! to 1 s apart.
//! When the entry arrives the task is looked up again and restored like any remote hit; when
//! it has not arrived after the wait limit, the task runs here, and the run says so. The limit
//! is the task's recorded duration (what running it here costs: waiting longer could only lose
//! more than it saves, and waiting that long loses at most as much), else
//! [`DEFAULT_WAIT`]; `VX_SHARD_WAIT` sets it for every task. A task whose expected duration is
//! under [`NOT_WORTH_WAITING`] runs here at once. Without a remote cache that reads, nothing can
//! arrive, and the task runs here at once.
//!
//! A task of this runner's own part that fails leaves a record ([`FailedThere`], under
//! [`failed_key`] of its key) in the remote cache, written on a thread joined at the end of the
//! run; a waiting runner that finds it (written less than 10 minutes before it started) fails
//! the task at once instead of waiting and running it again.

use std::time::{Duration, Instant};

use super::part_waits::{failed_key, FailedThere, PartWait, Pending};
use super::{Msg, Run};
use crate::outcome::{CacheKind, Notice, Status};

/// How long a task of another part is waited for without a recorded duration.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);
/// A task expected to take less than this runs here rather than being waited for.
const NOT_WORTH_WAITING: Duration = Duration::from_millis(500);
/// A failure record written this long before the run started is still believed (runners of
/// one CI run do not start at the same moment); an older one is a failure before a re-run.
const BELIEVED_BEFORE_MS: i64 = 10 * 60 * 1000;
/// The first pause between two asks, and the longest.
const FIRST_POLL: Duration = Duration::from_millis(250);
const LONGEST_POLL: Duration = Duration::from_secs(1);

/// The first seven digits of a commit.
fn short(commit: &str) -> &str {
    &commit[..commit.len().min(7)]
}

/// `30s`, `1.5s`.
fn seconds(d: Duration) -> String {
    let tenths = (d.as_millis() + 50) / 100;
    if tenths.is_multiple_of(10) {
        format!("{}s", tenths / 10)
    } else {
        format!("{}.{}s", tenths / 10, tenths % 10)
    }
}

impl Run<'_> {
    /// The part (1-based) that owns node `i`, when it is not this runner's.
    fn other_part(&self, i: usize) -> Option<u32> {
        let shard = self.plan.shard.as_ref()?;
        Some(shard.owner[i]).filter(|&owner| owner != shard.k)
    }

    /// Starts waiting for node `i`'s entry from its own runner; false when node `i` is this
    /// runner's or is not worth waiting for (the caller launches it).
    pub(super) fn wait_for_part(&mut self, i: usize, pending: Pending) -> bool {
        let Some(part) = self.other_part(i) else {
            return false;
        };
        let id = self.plan.graph.nodes[i].id.clone();
        let limit = self.ctx.shard_wait.unwrap_or_else(|| {
            self.recorder
                .recent(&id)
                .and_then(|r| vx_core::schedule::median(&r.durations_ms))
                .map_or(DEFAULT_WAIT, Duration::from_millis)
        });
        let watched = self.cache.watch_for(&id);
        let Some((layer, key)) = watched.filter(|_| limit >= NOT_WORTH_WAITING) else {
            self.parts.ran_here.push(id.to_string());
            return false;
        };
        self.reporter.notice(Notice::note(format!(
            "--shard: {id} belongs to part {part}; waiting up to {} for its runner to upload it",
            seconds(limit)
        )));
        self.parts.waiting.insert(i, (pending, limit));
        let tx = self.tx.clone();
        let since_ms = crate::clock::epoch_ms(self.started_wall) - BELIEVED_BEFORE_MS;
        let tmp = self.ctx.cache_dir.join("tmp");
        // Before the split expects the entry, asking again is wasted: a runner may wait for
        // hundreds of tasks at once.
        let expected = self
            .plan
            .shard
            .as_ref()
            .map(|s| self.started_at + Duration::from_millis(s.planned_finish_ms[i]));
        std::thread::spawn(move || {
            let deadline = Instant::now() + limit;
            let mut pause = FIRST_POLL;
            let failed = failed_key(&key);
            let mut first = true;
            let how = loop {
                if !std::mem::take(&mut first) {
                    if let Some(expected) = expected.filter(|&e| e > Instant::now()) {
                        std::thread::sleep(expected.min(deadline) - Instant::now());
                    }
                }
                if layer.layer.contains(&key).unwrap_or(false) {
                    break PartWait::Arrived;
                }
                if layer.layer.contains(&failed).unwrap_or(false) {
                    let told = vx_store::layer::fetch_record(layer.layer.as_ref(), &failed, &tmp)
                        .ok()
                        .flatten()
                        .and_then(|body| serde_json::from_slice::<FailedThere>(&body).ok())
                        .filter(|f| f.at_ms >= since_ms);
                    if let Some(told) = told {
                        break PartWait::Failed(told.exit_code);
                    }
                }
                let now = Instant::now();
                if now >= deadline {
                    break PartWait::TimedOut;
                }
                std::thread::sleep(pause.min(deadline - now));
                pause = (pause * 3 / 2).min(LONGEST_POLL);
            };
            let _ = tx.send(Msg::PartWaited(i, how));
        });
        true
    }

    /// SCHED-8: a task of this runner's part failed: the other runners waiting for it are told
    /// through the remote cache, so that they fail it too rather than wait and run it again.
    pub(super) fn tell_failure(&mut self, i: usize, exit_code: Option<i32>) {
        let Some(shard) = self.plan.shard.as_ref() else {
            return;
        };
        if shard.owner[i] != shard.k {
            return;
        }
        let id = &self.plan.graph.nodes[i].id;
        let Some(key) = self.cache.key_hex(id) else {
            return;
        };
        let Some(layer) = self.cache.record_layers().into_iter().find(|l| l.write) else {
            return;
        };
        let told = FailedThere {
            part: shard.k,
            exit_code,
            at_ms: crate::clock::epoch_ms(std::time::SystemTime::now()),
        };
        let body = serde_json::to_vec(&told).expect("a failure record serializes");
        let tmp = self.ctx.cache_dir.join("tmp");
        let task = id.to_string();
        self.parts.telling.push(std::thread::spawn(move || {
            let put = vx_store::layer::put_record(
                layer.layer.as_ref(),
                &failed_key(&key),
                &task,
                &body,
                &tmp,
            );
            if let Err(e) = put {
                tracing::debug!(%task, error = %e, "could not tell the other runners");
            }
        }));
    }

    /// Waits for the failure records still being written (at the end of the run).
    pub(super) fn finish_telling(&mut self) {
        for handle in self.parts.telling.drain(..) {
            let _ = handle.join();
        }
    }

    /// The wait for node `i` ended: restored when its entry arrived, failed when its runner
    /// said it failed there, else run here.
    pub(super) fn part_waited(&mut self, i: usize, how: PartWait) {
        let Some((pending, limit)) = self.parts.waiting.remove(&i) else {
            return;
        };
        if self.stopping.is_some() {
            let skipped = self.scheduler.give_back(i);
            self.report_skipped(&skipped);
            return;
        }
        let id = self.plan.graph.nodes[i].id.clone();
        let part = self.other_part(i).unwrap_or_default();
        match how {
            PartWait::Arrived => {
                self.cache.ask_again(&id);
                let needs_log = self.reporter.shows_hit_log(self.is_shown(i));
                let decision = self.cache.before(self.rows[i], true, needs_log);
                self.relay_notices();
                match decision {
                    crate::cache::Decision::Hit(replay) => {
                        self.parts.arrived += 1;
                        self.hit(i, replay);
                        return;
                    }
                    crate::cache::Decision::Fail(line) => {
                        self.cache.withhold(&id);
                        self.fail_before_start(i, &line);
                        return;
                    }
                    crate::cache::Decision::Execute { .. } => {}
                }
            }
            PartWait::Failed(code) => {
                let exit = code.map_or(String::new(), |c| format!(" (exit {c})"));
                self.parts.failed_there.push(id.to_string());
                self.cache.withhold(&id);
                self.fail_before_start(
                    i,
                    &format!("vx: {id} failed on part {part}'s runner{exit}; its output is in that runner's log"),
                );
                return;
            }
            PartWait::TimedOut => {
                self.reporter.notice(Notice::note(format!(
                    "--shard: part {part}'s runner did not upload {id} within {}; running it here",
                    seconds(limit)
                )));
            }
        }
        self.parts.ran_here.push(id.to_string());
        self.launch(
            i,
            pending.cache_kind,
            pending.writes,
            pending.unsaved_reason,
        );
    }

    /// SCHED-8, at the end of a part's run (not a stopped one): the durations of the tasks it
    /// owns go into its branch's durations record for later splits, and the split record is
    /// read again; when another runner replaced it after this one adopted it, the tasks this
    /// part owns under the others' split and did not run here may have run nowhere, and the
    /// run fails naming them (`split.rs`). Returns the run's exit code.
    pub(super) fn end_parts(&mut self, code: i32) -> i32 {
        let Some(shard) = self.plan.shard.as_ref() else {
            return code;
        };
        let remote = self
            .cache
            .record_layers()
            .into_iter()
            .find(|l| l.read || l.write);
        let place = crate::plan::split_place(
            &self.plan.workspace,
            &self.ctx.cwd,
            self.options,
            shard.n,
            Some(remote),
        );
        let measured: std::collections::BTreeMap<String, u64> = self
            .reports
            .iter()
            .filter(|(&i, r)| shard.owner[i] == shard.k && r.status == Status::Success)
            .filter_map(|(_, r)| {
                let ms = if r.executed { r.duration } else { r.stored? };
                Some((r.id.to_string(), ms.as_millis() as u64))
            })
            .collect();
        if let Some(notice) = crate::plan::split::publish(&place, &measured) {
            self.reporter.notice(notice);
        }
        let now = match crate::plan::split::verify(&place, &shard.inputs) {
            Ok(Some(now)) => now,
            Ok(None) => return code,
            Err(why) => {
                self.parts.unverified = true;
                self.reporter.notice(Notice::warning(format!(
                    "--shard {}/{}: could not check the split record at the end ({why}); this part's green is not recorded for --affected=last-green",
                    shard.k, shard.n
                )));
                return code;
            }
        };
        let failing = |code: i32| {
            if code == crate::exit::SUCCESS {
                crate::exit::FAILURE
            } else {
                code
            }
        };
        if let (Some(theirs), Some(mine)) = (&now.base, &shard.inputs.base) {
            if theirs.commit != mine.commit {
                // The other parts planned another graph: nothing of this part's split holds.
                self.reporter.notice(Notice::warning(format!(
                    "--shard {}/{}: another runner replaced the split record after this one adopted it, and the other parts compare with {} (this part with {}): some tasks may have run nowhere: run this job again (it adopts that split)",
                    shard.k,
                    shard.n,
                    short(&theirs.commit),
                    short(&mine.commit)
                )));
                return failing(code);
            }
        }
        let done: std::collections::HashSet<String> = self
            .reports
            .values()
            .filter(|r| r.status == Status::Success)
            .map(|r| r.id.to_string())
            .collect();
        let missing: Vec<String> = shard
            .owned_under(&self.plan.workspace, &now)
            .into_iter()
            .map(|id| id.to_string())
            .filter(|id| !done.contains(id))
            .collect();
        if missing.is_empty() {
            return code;
        }
        let shown = missing[..missing.len().min(5)].join(", ");
        let more = if missing.len() > 5 { ", …" } else { "" };
        self.reporter.notice(Notice::warning(format!(
            "--shard {}/{}: another runner replaced the split record after this one adopted it; in the split the other parts use, this part also owns {} it did not run ({shown}{more}), which may have run nowhere: run this job again (it adopts that split)",
            shard.k,
            shard.n,
            crate::plan::preview::plural(missing.len(), "task"),
        )));
        failing(code)
    }

    /// The line at the end of a sharded run: what this runner took from the others' runners,
    /// and what it ran for them.
    pub(super) fn parts_line(&self) -> Option<Notice> {
        let shard = self.plan.shard.as_ref()?;
        let failed = &self.parts.failed_there;
        // Served from the cache: uploaded by their runner before this part asked (a key that
        // folds what an upstream produced is only known after it, KEY-9), or after a wait.
        let restored = self
            .reports
            .iter()
            .filter(|(&i, report)| {
                shard.owner[i] != shard.k && report.cache.is_some_and(CacheKind::is_hit)
            })
            .count();
        if restored == 0 && self.parts.ran_here.is_empty() && failed.is_empty() {
            return None;
        }
        let ran = match self.parts.ran_here.len() {
            0 => "none run here".to_string(),
            n => format!(
                "{n} run here ({}{})",
                self.parts.ran_here[..n.min(3)].join(", "),
                if n > 3 { ", …" } else { "" }
            ),
        };
        let failed = match failed.len() {
            0 => String::new(),
            n => format!(", {n} failed on their runners ({})", failed.join(", ")),
        };
        Some(Notice::note(format!(
            "--shard {}/{}: of the other parts' tasks this part needed, {restored} came from the remote cache ({} after waiting for their runner), {ran}{failed}",
            shard.k, shard.n, self.parts.arrived
        )))
    }
}
