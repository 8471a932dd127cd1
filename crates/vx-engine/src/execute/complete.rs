//! A task attempt's end: its output flushed, its outcome judged (the sandbox's verdict, a
//! persistent task's readiness, retries), its report made, its result handed to the cache
//! (and the save lane), and what it releases or skips told to the scheduler; and the reports
//! of tasks that end without running.

use vx_core::schedule::{Finish, NodeState};
use vx_exec::{Completion, ExitReason};

use super::live::{Live, Verdict};
use super::output::Store;
use super::{Kind, Run};
use crate::cache::{CacheKind, Done};
use crate::outcome::{NotReady, Status, TaskReport};

impl Run<'_> {
    pub(super) fn completed(&mut self, i: usize, completion: Completion) {
        let Some(live) = self.live.get_mut(&i) else {
            return;
        };
        if live.remote() {
            live.saving.remote_cached =
                completion.from_action_cache && live.saving.kind == CacheKind::Miss;
            if completion.outputs_kept {
                live.saving.kept_remotely();
                self.remote.kept.insert(i);
            } else {
                self.remote.kept.remove(&i);
            }
        }
        let Some(live) = self.live.get_mut(&i) else {
            return;
        };
        let rest = live.output.finish(Store::Yes);
        self.output(i, &rest);
        let verdict = self.sandbox_verdict(i, &completion);
        let clean = matches!(verdict, Verdict::Clean);
        let violations = match verdict {
            Verdict::Violations(n) => n,
            _ => 0,
        };
        let live = &self.live[&i];
        let kind = live.kind;
        if kind == Kind::Persistent && live.ready {
            self.persistent_ended(i, &completion);
            return;
        }
        // Stopped by vx because it was not ready in time: a timeout's exit code (EXEC-8).
        let not_ready_in_time = kind == Kind::Persistent && live.timed_out;
        let code = match (not_ready_in_time, completion.killed) {
            (true, true) => 128 + nix::libc::SIGKILL,
            (true, false) => 128 + nix::libc::SIGTERM,
            (false, _) => completion.exit_code,
        };
        // SBX-7: a task that broke its sandbox fails, whatever it exited with.
        let code = if !clean && code == 0 { 1 } else { code };
        if self.live[&i].remote() {
            self.remote.in_flight -= 1;
        } else {
            self.running_slots -= 1;
        }
        let status = if self.stopping.is_some() {
            Status::Aborted
        } else if kind == Kind::Persistent {
            // Ended before it was ready, whatever its exit code (EXEC-13).
            Status::Failed
        } else if code == 0 && !completion.timed_out {
            Status::Success
        } else {
            Status::Failed
        };
        // A remote failure is explained by its own output: the local PATH says nothing of it.
        let local = !self.live[&i].remote();
        if status == Status::Failed
            && !completion.timed_out
            && !completion.stopped
            && clean
            && local
        {
            if let Some(note) = self.live[&i].shell.why(&completion.exit, code) {
                self.note(i, &note);
            }
        }
        let retry = {
            let live = &self.live[&i];
            status == Status::Failed
                && kind == Kind::OneShot
                && live.tries.another_allowed()
                && !self.scheduler.is_halted()
                && !matches!(completion.exit, ExitReason::SpawnFailed(_))
                // Another attempt would break the sandbox again.
                && clean
        };
        if retry {
            self.retry(i, &completion);
            return;
        }
        // Its memory is free: the save that may follow does not count as executing.
        self.scheduler.stopped_executing(i);
        let live = self.live.remove(&i).expect("a live task");
        let mut report = self.report_of(i, &live, status);
        report.attempts = live.tries.made;
        report.sandbox_violations = violations;
        report.key_failures_after_pass = self.recorder.key_failures_after_pass(
            self.cache.layers().store(),
            &report.id,
            self.cache.key_hex(&report.id),
        );
        if kind == Kind::Persistent && status == Status::Failed {
            report.not_ready = Some(match completion.exit {
                ExitReason::SpawnFailed(_) => NotReady::Spawn,
                _ if live.unneeded => NotReady::Unneeded,
                _ if not_ready_in_time => NotReady::TimedOut(live.timeout.unwrap_or_default()),
                _ => NotReady::Exited,
            });
        }
        report.exit_code = Some(code);
        report.short_key = self
            .cache
            .key_hex(&report.id)
            .map(|key| key[..12.min(key.len())].to_string());
        report.timed_out = completion.timed_out || not_ready_in_time;
        report.duration = live.tries.duration(completion.duration);
        report.attempt_spans = live.tries.spans_ending(self.started_at, code);
        if let Some(usage) = &completion.usage {
            report.cpu_ms = Some((usage.user_cpu + usage.system_cpu).as_millis() as u64);
            report.peak_rss_bytes = child_peak(usage.max_rss_bytes);
        }
        let mut save = None;
        if kind == Kind::OneShot && status != Status::Aborted {
            let encoded = live.output.stored();
            let after = self.cache.after(Done {
                task: self.rows[i],
                success: status == Status::Success,
                writes: live.saving.writes,
                unsaved_reason: live.saving.unsaved_reason,
                started: live.tries.started_wall,
                duration: report.duration,
                command_line: &live.command_line,
                log: &encoded,
                cpu_ms: report.cpu_ms,
                peak_rss_bytes: report.peak_rss_bytes,
                origin: if live.remote() {
                    "remote-exec"
                } else {
                    "local"
                },
            });
            self.relay_notices();
            self.recorder
                .fingerprint(after.fingerprint, self.cache.layers_mut().store_mut());
            match after.save {
                Ok(job) => save = Some(job),
                Err(reason) => self.recorder.saved(&report.id, Err(reason)),
            }
        }
        self.reporter.finished(i, &report, self.is_shown(i));
        self.reports.insert(i, report);
        if let Some(job) = save {
            // Dependants wait for the save: nothing may change the outputs while they are
            // archived (STORE-7).
            self.start_save(i, job);
            return;
        }
        let finish = if status == Status::Success {
            Finish::Success
        } else {
            Finish::Failed
        };
        if status == Status::Failed {
            let code = self.reports[&i].exit_code;
            self.tell_failure(i, code);
        }
        if status != Status::Aborted {
            let skipped = self.scheduler.finish(i, finish);
            self.report_skipped(&skipped);
        }
    }

    pub(super) fn report_skipped(&mut self, skipped: &[usize]) {
        for &s in skipped {
            let blocked_by = match self.scheduler.state(s) {
                NodeState::Skipped(Some(cause)) => Some(self.plan.graph.nodes[cause].id.clone()),
                _ => None,
            };
            if self.rows[s].kind == Kind::Group {
                continue;
            }
            let report = TaskReport::not_started(
                self.plan.graph.nodes[s].id.clone(),
                Status::Skipped,
                blocked_by,
            );
            self.reporter.finished(s, &report, self.is_shown(s));
            self.reports.insert(s, report);
        }
    }

    pub(super) fn report_of(&self, i: usize, live: &Live, status: Status) -> TaskReport {
        TaskReport {
            id: self.plan.graph.nodes[i].id.clone(),
            status,
            executed: true,
            exit_code: None,
            timed_out: live.timed_out,
            not_ready: None,
            duration: live.started.elapsed(),
            blocked_by: None,
            command_line: Some(live.command_line.clone()),
            log: live.output.frame(),
            cache: (live.kind == Kind::OneShot).then_some(live.saving.reported()),
            short_key: None,
            stored: None,
            cpu_ms: None,
            peak_rss_bytes: None,
            attempts: live.tries.made,
            key_failures_after_pass: 0,
            start_offset: live.started.saturating_duration_since(self.started_at),
            end_offset: self.started_at.elapsed(),
            admission_held: self.held.total(i),
            sandbox_violations: 0,
            attempt_spans: Vec::new(),
            kept: false,
            remote: live.remote(),
            restore_reason: None,
            cut_off: Vec::new(),
        }
    }

    /// A task that fails before it runs: its key could not be derived, or its outputs could
    /// not be cleaned.
    pub(super) fn fail_before_start(&mut self, i: usize, line: &str) {
        let mut report =
            TaskReport::not_started(self.plan.graph.nodes[i].id.clone(), Status::Failed, None);
        report.log = format!("{line}\n").into_bytes();
        report.exit_code = Some(1);
        self.reporter.started(i, &report);
        self.reporter.finished(i, &report, self.is_shown(i));
        self.reports.insert(i, report);
        let skipped = self.scheduler.finish(i, Finish::Failed);
        self.report_skipped(&skipped);
    }

    /// A task that was about to start when a signal to vx came (EXEC-9: it ends `not run`).
    pub(super) fn not_run(&mut self, i: usize) {
        let report =
            TaskReport::not_started(self.plan.graph.nodes[i].id.clone(), Status::NotRun, None);
        self.reports.insert(i, report);
        let skipped = self.scheduler.finish(i, Finish::Failed);
        self.report_skipped(&skipped);
    }
}

/// EXEC-18's parent floor: on Linux a forked child starts with vx's own high-water mark, so a
/// peak within 4 MiB of vx's own (`VmHWM`, read after the child exited) is unknown rather than
/// the child's.
fn child_peak(max_rss_bytes: u64) -> Option<u64> {
    const FLOOR: u64 = 4 << 20;
    let own = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map(|kib| kib * 1024);
    match own {
        Some(own) if max_rss_bytes <= own + FLOOR => None,
        _ => Some(max_rss_bytes),
    }
}
