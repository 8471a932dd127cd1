//! The failure recap (UI-5) and the footer (UI-7), printed last.

use std::time::Duration;

use vx_core::script::quote_word;
use vx_core::units::format_duration;

use super::style::Style;
use vx_core::id::TaskId;
use vx_engine::outcome::{CacheKind, Status, TaskReport};
use vx_engine::report::Totals;

/// Lines and bytes of each failed task's output in the recap.
const RECAP_LINES: usize = 30;
const RECAP_BYTES: usize = 8 * 1024;
const RECAP_TASKS: usize = 5;

/// The recap of failures and the `re-run:` line, or nothing when the run owes nothing.
/// `above`: failed tasks whose frame is the last thing printed (only one-liners and other
/// failure frames followed it), whose output the recap does not repeat. Under GitHub Actions
/// (UI-9) each task's lines are fenced with the run's stop-commands token, like its frame; under
/// another CI with sections (UI-16) its markers are broken in them.
pub fn recap(
    style: &Style,
    totals: &Totals<'_>,
    above: &[TaskId],
    github_token: Option<&str>,
    ci_log: Option<super::ci_log::CiLog>,
) -> String {
    let failed: Vec<&TaskReport> = totals
        .reports
        .iter()
        .copied()
        .filter(|r| r.status == Status::Failed)
        .collect();
    let mut text = String::new();
    if !failed.is_empty() {
        text.push_str(&style.bold(&rule(&format!("failures ({})", failed.len()))));
        text.push('\n');
    }
    for report in failed.iter().take(RECAP_TASKS) {
        let shown = above.contains(&report.id);
        text.push_str(&format!(
            "{} {}  {}{}\n",
            style.red("◼"),
            style.id(&report.id),
            report.header_status(),
            if shown {
                style.dim("  · output above")
            } else {
                String::new()
            }
        ));
        if shown {
            continue;
        }
        let lines = tail(&report.log);
        match (github_token, ci_log) {
            (Some(token), _) if !lines.is_empty() => {
                text.push_str(&format!("::stop-commands::{token}\n{lines}::{token}::\n"));
            }
            (None, Some(ci)) => {
                text.push_str(&String::from_utf8_lossy(&ci.fence(lines.as_bytes())));
            }
            _ => text.push_str(&lines),
        }
    }
    if failed.len() > RECAP_TASKS {
        let rest: Vec<String> = failed[RECAP_TASKS..]
            .iter()
            .map(|r| r.id.to_string())
            .collect();
        text.push_str(&format!(
            "and {} more failed: {}\n",
            rest.len(),
            rest.join(" ")
        ));
    }
    if !totals.rerun.is_empty() {
        // A line to paste: each id as the shell reads it back (`a;touch X` stays one id).
        let ids: Vec<String> = totals.rerun.iter().map(|id| quote_word(id)).collect();
        text.push_str(&format!("re-run: vx run {}\n\n", ids.join(" ")));
    }
    text
}

/// The last lines of a log, bounded in lines and bytes, ending with a newline.
fn tail(log: &[u8]) -> String {
    let text = String::from_utf8_lossy(log);
    let trimmed = text.trim_end_matches('\n');
    if trimmed.is_empty() {
        return String::new();
    }
    let lines: Vec<&str> = trimmed.split('\n').collect();
    let start = lines.len().saturating_sub(RECAP_LINES);
    let mut out = lines[start..].join("\n");
    if out.len() > RECAP_BYTES {
        let mut cut = out.len() - RECAP_BYTES;
        while !out.is_char_boundary(cut) {
            cut += 1;
        }
        out = out[cut..].to_string();
    }
    out.push('\n');
    out
}

/// A meter bar (UI-7) of `WIDTH` cells split by the counts, drawn only when colouring (a TTY or
/// `FORCE_COLOR`): plain output stays free of decoration. Each part ends where its cumulative
/// share rounds to, so the parts always add up; what the parts do not cover (tasks that never
/// ended) is the dim remainder.
fn meter(style: &Style, parts: &[(usize, &str)], total: usize) -> String {
    const WIDTH: usize = 20;
    if !style.colour || total == 0 {
        return String::new();
    }
    let mut bar = String::from("  ");
    let mut counted = 0;
    let mut drawn = 0;
    for &(count, colour) in parts {
        counted += count;
        let end = (counted * WIDTH + total / 2) / total;
        let cells = end.saturating_sub(drawn);
        if cells > 0 {
            bar.push_str(&format!("\x1b[{colour}m{}\x1b[0m", "█".repeat(cells)));
            drawn += cells;
        }
    }
    if drawn < WIDTH {
        bar.push_str(&style.dim(&"░".repeat(WIDTH - drawn)));
    }
    bar
}

/// `── <title> ───…`, 56 columns wide.
fn rule(title: &str) -> String {
    let head = format!("── {title} ");
    let fill = 56usize.saturating_sub(head.chars().count()).max(3);
    format!("{head}{}", "─".repeat(fill))
}

pub fn footer(style: &Style, summary: &Totals<'_>) -> String {
    let reports = summary.reports;
    let count = |s: Status| reports.iter().filter(|r| r.status == s).count();
    let (failed, success, skipped) = (
        count(Status::Failed),
        count(Status::Success) + count(Status::Running),
        count(Status::Skipped),
    );
    let (aborted, not_run) = (count(Status::Aborted), count(Status::NotRun));
    // Every task counts, also those a signal stopped or kept from starting.
    let total = failed + success + skipped + aborted + not_run;
    let mut text = style.dim(&rule(&format!("vx {}", env!("CARGO_PKG_VERSION"))));
    text.push('\n');
    text.push_str(&format!(
        "projects   {} in run · {} in workspace\n",
        summary.projects_in_run, summary.projects_in_workspace
    ));
    let mut parts = Vec::new();
    if failed > 0 {
        parts.push(style.red(&format!("{failed} failed")));
    }
    if success > 0 {
        parts.push(format!("{success} success"));
    }
    if skipped > 0 {
        parts.push(style.yellow(&format!("{skipped} skipped")));
    }
    if aborted > 0 {
        parts.push(style.magenta(&format!("{aborted} aborted")));
    }
    if not_run > 0 {
        parts.push(style.dim(&format!("{not_run} not run")));
    }
    parts.push(format!("{total} total"));
    // Tasks that never ended are the bar's dim remainder.
    let bar = meter(
        style,
        &[
            (success, "32"),
            (failed, "31"),
            (skipped, "33"),
            (aborted, "35"),
        ],
        total,
    );
    text.push_str(&format!("tasks      {}{bar}\n", parts.join(" · ")));
    let executed: Vec<Duration> = reports
        .iter()
        .filter(|r| r.executed && matches!(r.status, Status::Success | Status::Failed))
        .map(|r| r.duration)
        .collect();
    let kinds = [
        CacheKind::Miss,
        CacheKind::UpToDate,
        CacheKind::RestoredLocal,
        CacheKind::RestoredRemote,
        CacheKind::NoCache,
    ];
    let cache_parts: Vec<String> = kinds
        .iter()
        .filter_map(|&kind| {
            let n = reports.iter().filter(|r| r.cache == Some(kind)).count();
            (n > 0).then(|| format!("{n} {}", kind.word()))
        })
        .collect();
    let cut_off = reports.iter().filter(|r| !r.cut_off.is_empty()).count();
    if !cache_parts.is_empty() {
        // KEY-9: hits whose upstreams re-ran to the same outputs.
        let cut_off = match cut_off {
            0 => String::new(),
            1 => " · cut off: 1 task".to_string(),
            n => format!(" · cut off: {n} tasks"),
        };
        text.push_str(&format!(
            "cache      {}{cut_off}\n",
            cache_parts.join(" · ")
        ));
    }
    let hits: Vec<&TaskReport> = reports
        .iter()
        .copied()
        .filter(|r| r.cache.is_some_and(CacheKind::is_hit))
        .collect();
    // What hits saved: what the tasks took when they ran, less what serving them cost (their
    // downloads and restores). It can be negative: a slow link can cost more than running.
    let stored: Duration = hits.iter().filter_map(|r| r.stored).sum();
    let cost: Duration = hits.iter().map(|r| r.duration).sum();
    let saved = if cost > stored {
        format!(
            "−{} saved (serving the hits took longer than running them did)",
            format_duration(cost - stored)
        )
    } else {
        format!("{} saved", format_duration(stored - cost))
    };
    let held: Duration = reports.iter().map(|r| r.admission_held).sum();
    let placement = match summary.remote_in_flight {
        Some(n) => format!("local + remote ({n} in flight)"),
        None => "local".to_string(),
    };
    if held.is_zero() {
        text.push_str(&format!("workers    {} · {placement}\n", summary.workers));
    } else {
        text.push_str(&format!(
            "workers    {} · {placement} · admission held {}\n",
            summary.workers,
            format_duration(held)
        ));
    }
    let wall = format_duration(summary.wall);
    if executed.is_empty() {
        text.push_str(&format!("time       {wall} wall\n"));
    } else {
        let max = executed.iter().max().copied().unwrap_or_default();
        let min = executed.iter().min().copied().unwrap_or_default();
        let avg = executed.iter().sum::<Duration>() / executed.len() as u32;
        text.push_str(&format!(
            "time       {wall} wall · {} max · {} avg · {} min\n",
            format_duration(max),
            format_duration(avg),
            format_duration(min)
        ));
    }
    let tasks = if total == 1 {
        "1 task".to_string()
    } else {
        format!("{total} tasks")
    };
    let cached = hits.len();
    let mut result = match summary.interrupted {
        // No share of a run that did not finish: `2 cached` of 8 is not "100% cached".
        Some(signal) => {
            let by = vx_engine::exit::signal_name(signal)
                .map_or_else(|| format!("signal {signal}"), str::to_string);
            let ended = failed + success + skipped;
            format!(
                "{} · {ended} of {tasks} ended · {cached} cached · {wall} · {saved}",
                style.red(&format!("interrupted by {by}")),
            )
        }
        None => {
            let percent = (cached * 100 + total / 2).checked_div(total).unwrap_or(0);
            format!("{tasks} · {cached} cached ({percent}%) · {wall} · {saved}")
        }
    };
    if failed > 0 {
        result.push_str(&format!(" · {}", style.red(&format!("{failed} failed"))));
    }
    text.push_str(&format!("result     {result}\n"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_meter_adds_up_and_leaves_what_never_ended_dim() {
        let style = Style { colour: true };
        let cells = |bar: &str, colour: &str| {
            bar.split(&format!("\x1b[{colour}m"))
                .nth(1)
                .map_or(0, |rest| rest.split('\x1b').next().unwrap().chars().count())
        };
        // A finished run fills the bar whatever the rounding: 1 + 1 + 4 of 6.
        let bar = meter(&style, &[(1, "32"), (1, "31"), (4, "33")], 6);
        assert_eq!(
            cells(&bar, "32") + cells(&bar, "31") + cells(&bar, "33"),
            20,
            "{bar:?}"
        );
        assert!(!bar.contains('░'), "{bar:?}");
        // An interrupted one: 2 success, 1 aborted of 8, the rest dim.
        let bar = meter(&style, &[(2, "32"), (0, "31"), (0, "33"), (1, "35")], 8);
        assert_eq!(cells(&bar, "32"), 5, "{bar:?}");
        assert_eq!(cells(&bar, "35"), 3, "{bar:?}");
        assert_eq!(bar.matches('░').count(), 12, "{bar:?}");
    }

    #[test]
    fn tail_keeps_the_last_thirty_lines() {
        let log: String = (1..=40).map(|i| format!("line {i}\n")).collect();
        let t = tail(log.as_bytes());
        assert!(t.starts_with("line 11\n"));
        assert!(t.ends_with("line 40\n"));
        assert_eq!(tail(b""), "");
    }
}
