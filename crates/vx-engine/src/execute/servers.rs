//! Persistent tasks (EXEC-13): readiness and its timers, servers held back while the restore
//! lane serves their dependants, servers that end, and keeping requested servers alive after the
//! footer.

use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;
use vx_core::schedule::{ContinueMode, Finish, NodeState};
use vx_core::units::format_duration;
use vx_exec::Completion;

use super::{Msg, Run};
use crate::execute::ready::Waiting;
use crate::exit;
use crate::outcome::CacheKind;
use crate::outcome::Notice;
use crate::outcome::{Status, TaskReport};

impl Run<'_> {
    /// A task the restore lane served (its report is a hit).
    pub(super) fn served_ahead(&self, i: usize) -> bool {
        self.reports
            .get(&i)
            .is_some_and(|r| r.cache.is_some_and(CacheKind::is_hit))
    }

    /// EXEC-13: a held server is not started once its dependants were all served; it goes back
    /// to the schedule as soon as one of them was not.
    pub(super) fn settle_servers(&mut self) {
        let held = std::mem::take(&mut self.servers_held);
        for i in held {
            let dependants = self.plan.graph.nodes[i].dependants.clone();
            if dependants.iter().all(|&d| self.served_ahead(d)) {
                let skipped = self.scheduler.finish(i, Finish::Success);
                self.report_skipped(&skipped);
            } else if dependants
                .iter()
                .all(|&d| self.served_ahead(d) || self.scheduler.state(d) == NodeState::Running)
                && (self.restores.busy() || !self.prefetching.is_empty())
            {
                self.servers_held.push(i);
            } else {
                let skipped = self.scheduler.give_back(i);
                self.report_skipped(&skipped);
            }
        }
    }

    /// EXEC-13: a persistent task is ready (at spawn, or on its `ready-when` line): its outcome
    /// is success with the time to ready as duration, its slot is free and its dependants may
    /// start.
    pub(super) fn ready(&mut self, i: usize) {
        let Some(live) = self.live.get_mut(&i) else {
            return;
        };
        live.ready = true;
        live.waiting = None;
        let report = self.report_of(i, &self.live[&i], Status::Running);
        self.running_slots -= 1;
        self.reporter.finished(i, &report, self.is_shown(i));
        self.reports.insert(
            i,
            TaskReport {
                status: Status::Success,
                ..report
            },
        );
        let skipped = self.scheduler.finish(i, Finish::Success);
        self.report_skipped(&skipped);
    }

    /// The next message for the loop. While a persistent task waits for readiness, the wait is
    /// bounded by its next timer, and timers that come due are handled first (EXEC-13).
    ///
    /// While the live region is drawn (UI-6) the wait is also bounded by its tick, so its
    /// elapsed times keep moving; and while tasks wait for a slot under adaptive concurrency,
    /// by its next reading (SCHED-9).
    pub(super) fn next_message(&mut self) -> Option<Msg> {
        loop {
            self.redraw_region();
            self.reporter.tick();
            let readiness = if self.stopping.is_none() {
                self.live
                    .values()
                    .filter_map(|l| l.waiting.as_ref().and_then(Waiting::next_wake))
                    .min()
            } else {
                None
            };
            let tick = (self.reporter.region_active() || self.reporter.has_tui())
                .then(|| Instant::now() + crate::report::TICK);
            let reassess = self.reassess_due();
            let Some(at) = readiness.into_iter().chain(tick).chain(reassess).min() else {
                return self.rx.recv().ok();
            };
            match self.rx.recv_deadline(at) {
                Ok(msg) => return Some(msg),
                Err(RecvTimeoutError::Timeout) => {
                    if reassess.is_some_and(|due| due <= Instant::now()) {
                        return Some(Msg::Reassess);
                    }
                    if readiness.is_some_and(|due| due <= Instant::now()) {
                        self.readiness_timers();
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// A server still waiting for its line that nothing can use any more — not requested, and
    /// every dependant skipped because of another failure or otherwise ended — is stopped
    /// instead of waited for; without this the run would wait forever for a server whose own
    /// upstream may have failed (EXEC-13).
    pub(super) fn stop_unneeded_servers(&mut self) {
        if !self
            .live
            .values()
            .any(|l| l.waiting.is_some() && !l.unneeded)
        {
            return;
        }
        let halted = self.scheduler.is_halted();
        // A requested server is kept after the footer only if nothing failed (or under
        // `--continue=always`), so once something failed it is unneeded too.
        let never_kept = self.watch.is_none()
            && self.options.continue_mode != ContinueMode::Always
            && self
                .reports
                .values()
                .any(|r| matches!(r.status, Status::Failed | Status::Skipped));
        let unneeded: Vec<usize> = self
            .live
            .iter()
            .filter(|(&i, l)| {
                let no_dependant_left = self.plan.graph.nodes[i].dependants.iter().all(|&d| {
                    !matches!(
                        self.scheduler.state(d),
                        NodeState::Waiting | NodeState::Ready | NodeState::Running
                    )
                });
                l.waiting.is_some()
                    && !l.unneeded
                    && (halted || (no_dependant_left && (!self.is_shown(i) || never_kept)))
            })
            .map(|(&i, _)| i)
            .collect();
        for i in unneeded {
            let live = self.live.get_mut(&i).expect("a live task");
            live.waiting = None;
            live.unneeded = true;
            live.handle.stop(nix::libc::SIGTERM);
            self.note(
                i,
                "vx: not ready, and no task needs it any more; stopping the task",
            );
        }
    }

    /// Readiness timers that came due: the not-ready note, once; and the readiness timeout,
    /// which stops the task (its completion then reports it not ready).
    pub(super) fn readiness_timers(&mut self) {
        let now = Instant::now();
        let due: Vec<usize> = self
            .live
            .iter()
            .filter(|(_, l)| {
                l.waiting
                    .as_ref()
                    .and_then(Waiting::next_wake)
                    .is_some_and(|at| at <= now)
            })
            .map(|(&i, _)| i)
            .collect();
        for i in due {
            let live = self.live.get_mut(&i).expect("a live task");
            let waiting = live.waiting.as_mut().expect("a waiting task");
            if waiting.deadline.is_some_and(|at| at <= now) {
                live.waiting = None;
                live.timed_out = true;
                live.handle.stop(nix::libc::SIGTERM);
                let after = format_duration(live.timeout.unwrap_or_default());
                self.note(
                    i,
                    &format!("vx: not ready: timed out after {after}; stopping the task"),
                );
            } else if waiting.notice_at.is_some_and(|at| at <= now) {
                waiting.notice_at = None;
                let mut line = format!(
                    "vx: not ready after {}: no line has matched `{}` yet",
                    format_duration(self.ctx.ready_notice),
                    waiting.pattern
                );
                if let Some(timeout) = live.timeout {
                    line.push_str(&format!(" (timeout {})", format_duration(timeout)));
                }
                self.note(i, &line);
            }
        }
    }

    /// A ready persistent task ended: stopped by vx, or by itself (EXEC-13).
    pub(super) fn persistent_ended(&mut self, i: usize, completion: &Completion) {
        let live = self.live.remove(&i).expect("a live task");
        let id = self.plan.graph.nodes[i].id.clone();
        let code = completion.exit_code;
        let by_itself = !completion.stopped;
        let mut status = Status::Success;
        if self.stopping.is_some() && !by_itself {
            status = Status::Aborted;
        } else if by_itself && code != 0 {
            status = Status::Failed;
            self.reporter.notice(Notice::note(format!(
                "{id} stopped by itself (exit {code})"
            )));
        }
        if by_itself {
            self.exited_servers.push(live.handle.clone_box());
        }
        let mut report = self.report_of(i, &live, status);
        report.exit_code = Some(code);
        // The duration of a persistent task is its time to ready (EXEC-13).
        report.duration = self.reports.get(&i).map_or(Duration::ZERO, |r| r.duration);
        if !self.keep_alive && (status == Status::Failed || !self.reporter.is_streaming(i)) {
            self.reporter.finished(i, &report, self.is_shown(i));
        }
        self.reports.insert(i, report);
        self.ended_persistent.push((i, code));
    }

    /// Requested persistent tasks (and surfaced ones), plus the persistent tasks they depend
    /// on, that are still running.
    pub(super) fn kept_persistent(&self) -> Vec<usize> {
        let graph = &self.plan.graph;
        let mut kept = std::collections::BTreeSet::new();
        let mut stack: Vec<usize> = self
            .plan
            .shown_as_requested
            .iter()
            .copied()
            .filter(|i| self.live.contains_key(i))
            .collect();
        while let Some(i) = stack.pop() {
            if !kept.insert(i) {
                continue;
            }
            let mut deps: Vec<usize> = graph.nodes[i].deps.clone();
            while let Some(d) = deps.pop() {
                if self.live.contains_key(&d) {
                    stack.push(d);
                } else {
                    deps.extend(graph.nodes[d].deps.iter().copied());
                }
            }
        }
        kept.into_iter().collect()
    }

    /// After the footer: stream the kept servers' output with an `<id> │ ` prefix until the
    /// first of them exits or a signal arrives.
    pub(super) fn keep_alive_loop(&mut self, kept: &[usize]) -> i32 {
        self.keep_alive = true;
        for &i in kept {
            let live = self.live.get_mut(&i).expect("kept");
            let log = live.output.take_frame();
            // The task UI showed it as it came; plain output prints it after the footer.
            if !self.ui_kept {
                self.output(i, &log);
            }
        }
        self.ended_persistent.clear();
        self.drain_until(|run| !run.ended_persistent.is_empty() || run.stopping.is_some());
        let code = if let Some(n) = self.stopping {
            exit::signal(n)
        } else {
            let (i, code) = self.ended_persistent[0];
            let others = self.live.len();
            let id = &self.plan.graph.nodes[i].id;
            let more = match others {
                0 => String::new(),
                1 => "; shutting down 1 more persistent task".to_string(),
                n => format!("; shutting down {n} more persistent tasks"),
            };
            self.reporter
                .notice(Notice::note(format!("{id} ended (exit {code}){more}")));
            if code == 0 {
                exit::SUCCESS
            } else {
                exit::FAILURE
            }
        };
        for live in self.live.values() {
            live.handle.stop(nix::libc::SIGTERM);
        }
        self.drain_until(|run| run.live.is_empty());
        self.stop_exited_servers();
        code
    }

    /// Stops what persistent tasks that exited by themselves left running, and waits for it.
    pub(super) fn stop_exited_servers(&mut self) {
        let handles = std::mem::take(&mut self.exited_servers);
        for handle in &handles {
            handle.stop(nix::libc::SIGTERM);
        }
        for handle in &handles {
            handle.wait_stopped();
        }
    }
}
