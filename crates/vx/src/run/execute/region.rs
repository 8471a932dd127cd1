//! What the live status region shows (UI-6), from the run loop's state: ready persistent tasks
//! pinned on top, a row per busy slot with its elapsed time and the task's latest output line,
//! one row for the idle slots, one for what waits, and the footer's counters.

use std::time::Instant;

use vx_core::units::format_duration;

use super::{Kind, Run};
use crate::render::live;
use crate::run::outcome::Status;
use crate::run::report::Flow;

/// Slot rows shown at most; more busy slots are summed up as `+k more`.
const SLOT_ROWS: usize = 10;
/// Ready persistent tasks pinned at most.
const PINNED_ROWS: usize = 5;

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
        if self.reporter.flow() == Flow::Focused && self.is_shown(i) && live::is_active() {
            live::stop();
        }
    }

    /// Draws the region if it is on and due (at most once per 30 ms: the lines are built only
    /// then, so a burst of messages does not rebuild them each time).
    pub(super) fn redraw_region(&self) {
        if !live::due() {
            return;
        }
        let (width, height) = vx_exec::process_tree::terminal_size().unwrap_or((80, 24));
        live::draw(
            &self.region_lines(),
            (usize::from(width), usize::from(height)),
        );
    }

    fn region_lines(&self) -> Vec<String> {
        let style = &crate::render::style::Style {
            colour: self.reporter.colour(),
        };
        let now = Instant::now();
        let mut lines = Vec::new();
        let servers: Vec<usize> = self
            .live
            .iter()
            .filter(|(_, l)| l.kind == Kind::Persistent && l.ready)
            .map(|(&i, _)| i)
            .collect();
        for &i in servers.iter().take(PINNED_ROWS) {
            lines.push(format!("▸ {} running", self.plan.graph.nodes[i].id));
        }
        if servers.len() > PINNED_ROWS {
            lines.push(format!("▸ +{} more running", servers.len() - PINNED_ROWS));
        }
        let mut busy: Vec<(Instant, usize)> = self
            .live
            .iter()
            .filter(|(_, l)| !(l.kind == Kind::Persistent && l.ready))
            .map(|(&i, l)| (l.started, i))
            .collect();
        busy.sort();
        for &(started, i) in busy.iter().take(SLOT_ROWS) {
            let mut row = format!(
                "  {:>7}  {}",
                format_duration(now.saturating_duration_since(started)),
                self.plan.graph.nodes[i].id
            );
            if self.live.get(&i).is_some_and(|l| l.remote()) {
                row.push_str(" @remote");
            }
            let last = self.live.get(&i).map(|l| l.last_line.shown());
            if let Some(last) = last.filter(|l| !l.is_empty()) {
                row.push_str("  ");
                row.push_str(&style.dim(&last));
            }
            lines.push(row);
        }
        if busy.len() > SLOT_ROWS {
            lines.push(format!("  +{} more", busy.len() - SLOT_ROWS));
        }
        // Remote tasks take no local slot (REM-11).
        let local = busy
            .iter()
            .filter(|(_, i)| self.live.get(i).is_some_and(|l| !l.remote()))
            .count();
        let idle = (self.ctx.slots as usize).saturating_sub(local);
        let mut rest = Vec::new();
        if idle > 0 {
            rest.push(format!("{idle} idle"));
        }
        let counted = |i: usize| super::kind_of(super::task(self.plan, i)) != Kind::Group;
        let (ready, on_deps) = self.scheduler.waiting(counted);
        let held = self.scheduler.held().len();
        if ready > 0 {
            rest.push(if held > 0 {
                format!("{ready} ready ({held} held for memory)")
            } else {
                format!("{ready} ready")
            });
        }
        if on_deps > 0 {
            rest.push(format!("{on_deps} waiting for dependencies"));
        }
        if !rest.is_empty() {
            lines.push(style.dim(&format!("        ·  {}", rest.join(" · "))));
        }
        let total = (0..self.plan.graph.nodes.len())
            .filter(|&i| super::kind_of(super::task(self.plan, i)) != Kind::Group)
            .count();
        let done = self
            .reports
            .values()
            .filter(|r| r.status != Status::Running)
            .count();
        let failed = self
            .reports
            .values()
            .filter(|r| r.status == Status::Failed)
            .count();
        let cached = self
            .reports
            .values()
            .filter(|r| r.cache.is_some_and(|c| c.is_hit()))
            .count();
        let mut counters = format!("{done}/{total} tasks");
        if failed > 0 {
            counters.push_str(&format!(" · {}", style.red(&format!("{failed} failed"))));
        }
        counters.push_str(&format!(
            " · {cached} cached · {}",
            format_duration(self.started_at.elapsed())
        ));
        lines.push(counters);
        lines
    }
}
