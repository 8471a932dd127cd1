//! What the live status region shows (UI-6), from the run loop's state, as data the reporter
//! lays out ([`Region`]): ready persistent tasks pinned on top, each busy slot with its elapsed
//! time and the task's latest output line, the idle slots, what waits, and the footer's counters.

use std::time::Instant;

use super::{Kind, Run};
use crate::outcome::Status;
use crate::report::{Busy, Download, Flow, Region, BUSY_ROWS};

impl Run<'_> {
    /// Whether this run draws the region: on a terminal vx holds the foreground of, outside the
    /// CI flow, on a terminal that can move its cursor, and with no interactive task (which
    /// owns the terminal itself).
    pub(super) fn wants_region(&self) -> bool {
        self.reporter.flow() != Flow::Ci
            && self.interactive.is_empty()
            && self.ctx.host_env.get("TERM").is_none_or(|t| t != "dumb")
            && vx_exec::process_tree::stdout_is_foreground_terminal()
    }

    /// In the focused flow the region exists only while dependencies run: it goes for good when
    /// a requested task starts.
    pub(super) fn region_requested_task_started(&mut self, i: usize) {
        if self.reporter.flow() == Flow::Focused
            && self.is_shown(i)
            && self.reporter.region_active()
        {
            self.reporter.region_stop();
        }
    }

    /// Draws the region if it is on and due (at most once per 30 ms: the data is gathered only
    /// then, so a burst of messages does not rebuild it each time).
    pub(super) fn redraw_region(&mut self) {
        if !self.reporter.region_due() {
            return;
        }
        let region = self.region();
        self.reporter.draw_region(&region);
    }

    fn region(&self) -> Region {
        let now = Instant::now();
        let servers = self
            .live
            .iter()
            .filter(|(_, l)| l.kind == Kind::Persistent && l.ready)
            .map(|(&i, _)| self.plan.graph.nodes[i].id.clone())
            .collect();
        let mut busy: Vec<(Instant, usize)> = self
            .live
            .iter()
            .filter(|(_, l)| !(l.kind == Kind::Persistent && l.ready))
            .map(|(&i, l)| (l.started, i))
            .collect();
        busy.sort();
        // Remote tasks take no local slot (REM-11).
        let local = busy.iter().filter(|(_, i)| !self.live[i].remote()).count();
        let busy_more = busy.len().saturating_sub(BUSY_ROWS);
        let busy: Vec<Busy> = busy
            .into_iter()
            .take(BUSY_ROWS)
            .map(|(started, i)| Busy {
                elapsed: now.saturating_duration_since(started),
                id: self.plan.graph.nodes[i].id.clone(),
                remote: self.live[&i].remote(),
                last_line: self.live[&i].output.last_line(),
            })
            .collect();
        let counted = |i: usize| self.rows[i].kind != Kind::Group;
        let (ready, on_deps) = self.scheduler.waiting(counted);
        let reports = || self.reports.values();
        Region {
            servers,
            busy,
            busy_more,
            downloads: self.downloads(),
            idle: (self.ctx.slots as usize).saturating_sub(local),
            ready,
            held: self.scheduler.held().len(),
            on_deps,
            total: (0..self.plan.graph.nodes.len())
                .filter(|&i| counted(i))
                .count(),
            done: reports().filter(|r| r.status != Status::Running).count(),
            failed: reports().filter(|r| r.status == Status::Failed).count(),
            cached: reports()
                .filter(|r| r.cache.is_some_and(|c| c.is_hit()))
                .count(),
            elapsed: self.started_at.elapsed(),
        }
    }

    /// The entries downloading in the background for tasks waiting on them, longest first.
    fn downloads(&self) -> Vec<Download> {
        let under_way = self.cache.layers().downloading();
        if under_way.is_empty() {
            return Vec::new();
        }
        let by_key: std::collections::HashMap<String, usize> = self
            .prefetching
            .iter()
            .filter_map(|&i| {
                let id = &self.plan.graph.nodes[i].id;
                self.cache.key_hex(id).map(|key| (key, i))
            })
            .collect();
        let mut downloads: Vec<Download> = under_way
            .into_iter()
            .filter_map(|(key, bytes, elapsed)| {
                let i = *by_key.get(&key)?;
                Some(Download {
                    id: self.plan.graph.nodes[i].id.clone(),
                    bytes,
                    elapsed,
                })
            })
            .collect();
        downloads.sort_by_key(|d| std::cmp::Reverse(d.elapsed));
        downloads.truncate(BUSY_ROWS);
        downloads
    }
}
