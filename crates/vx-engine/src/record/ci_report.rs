//! Reports for CI (UI-17): a JUnit XML file (`--report junit=PATH`), which GitLab, Jenkins,
//! Azure Pipelines and CircleCI render as test results, and GitHub Actions' job summary
//! (Markdown appended to `$GITHUB_STEP_SUMMARY`). Both are telemetry sinks built from the same
//! [`Summary`] as `--summarize`, with the output tails of failed tasks from the run record.
//!
//! JUnit: one `<testsuite>` per project, one `<testcase>` per task (`name` the task, `classname`
//! the project, `time` its duration in seconds); a failed task has a `<failure>` with its status
//! and the last 200 lines of its output, an aborted one an `<error>`, a skipped or not-run one a
//! `<skipped>` saying why.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::summary::{CacheWord, Summary, SummaryTask, TaskStatus};
use super::{RunRecord, TelemetrySink};
use crate::outcome::Notice;

/// Lines of a failed task's output a report carries.
const TAIL_LINES: usize = 200;
/// Lines of it the job summary shows.
const SUMMARY_TAIL_LINES: usize = 30;
/// Failed tasks the job summary shows with their output.
const SUMMARY_FAILURES: usize = 5;
/// Slowest tasks the job summary lists.
const SLOWEST: usize = 5;

/// `--report junit=PATH`.
pub struct JunitFile {
    pub path: PathBuf,
    pub cwd: PathBuf,
}

impl TelemetrySink for JunitFile {
    fn run_ended(&mut self, run: &RunRecord<'_>) -> Vec<Notice> {
        let text = junit(&Summary::new(run), run);
        let shown = self.path.strip_prefix(&self.cwd).unwrap_or(&self.path);
        let written = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&self.path, text));
        vec![match written {
            Ok(()) => Notice::note(format!("wrote {}", shown.display())),
            Err(e) => Notice::note(format!("could not write {}: {e}", self.path.display())),
        }]
    }
}

/// GitHub Actions' job summary: appended to the file `$GITHUB_STEP_SUMMARY` names.
pub struct StepSummary {
    pub path: PathBuf,
    /// The command line as the user typed it (`vx run build --all`), for the title.
    pub title: String,
}

impl TelemetrySink for StepSummary {
    fn run_ended(&mut self, run: &RunRecord<'_>) -> Vec<Notice> {
        let text = markdown(&Summary::new(run), run, &self.title);
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .and_then(|mut file| std::io::Write::write_all(&mut file, text.as_bytes()));
        match appended {
            Ok(()) => Vec::new(),
            Err(e) => vec![Notice::note(format!(
                "could not write the job summary to {}: {e}",
                self.path.display()
            ))],
        }
    }
}

/// The last `lines` lines of a task's output, without terminal escapes, as text.
fn tail(run: &RunRecord<'_>, id: &str, lines: usize) -> String {
    let Some(task) = run.tasks.iter().find(|t| t.report.id.to_string() == id) else {
        return String::new();
    };
    let plain = strip_ansi_escapes::strip(&task.report.log);
    let text = String::from_utf8_lossy(&plain);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// `failed (exit 3)`, as a failed task's header says it.
fn failed_word(task: &SummaryTask) -> String {
    match task.exit_code {
        Some(code) => format!("failed (exit {code})"),
        None => "failed".to_string(),
    }
}

fn seconds(ms: u64) -> String {
    format!("{:.3}", ms as f64 / 1000.0)
}

fn signed_seconds(ms: i64) -> String {
    format!("{:.3}", ms as f64 / 1000.0)
}

/// The JUnit XML of a run.
fn junit(summary: &Summary, run: &RunRecord<'_>) -> String {
    let mut projects: Vec<&str> = summary.tasks.iter().map(|t| t.project.as_str()).collect();
    projects.dedup();
    let failures = summary.counts.failed;
    let errors = summary.counts.aborted;
    let skipped = summary.counts.skipped + summary.counts.not_run;
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"vx run\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{}\">",
        summary.tasks.len(),
        seconds(summary.total_ms)
    );
    for project in projects {
        let tasks: Vec<&SummaryTask> = summary
            .tasks
            .iter()
            .filter(|t| t.project == project)
            .collect();
        let count = |s: TaskStatus| tasks.iter().filter(|t| t.status == s).count();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{}\" timestamp=\"{}\">",
            xml(project),
            tasks.len(),
            count(TaskStatus::Failed),
            count(TaskStatus::Aborted),
            count(TaskStatus::Skipped) + count(TaskStatus::NotRun),
            seconds(tasks.iter().map(|t| t.duration_ms).sum()),
            xml(&summary.started_at)
        );
        for task in tasks {
            let _ = write!(
                out,
                "    <testcase name=\"{}\" classname=\"{}\" time=\"{}\"",
                xml(&task.task),
                xml(&task.project),
                seconds(task.duration_ms)
            );
            match task.status {
                TaskStatus::Success => out.push_str("/>\n"),
                TaskStatus::Failed => {
                    let message = failed_word(task);
                    let _ = writeln!(
                        out,
                        ">\n      <failure message=\"{}\" type=\"failed\">{}</failure>\n    </testcase>",
                        xml(&message),
                        xml(&tail(run, &task.id, TAIL_LINES))
                    );
                }
                TaskStatus::Aborted => {
                    let _ = writeln!(
                        out,
                        ">\n      <error message=\"aborted\" type=\"aborted\">{}</error>\n    </testcase>",
                        xml(&tail(run, &task.id, TAIL_LINES))
                    );
                }
                TaskStatus::Skipped | TaskStatus::NotRun => {
                    let why = match &task.blocked_by {
                        Some(by) => format!("blocked by {by}"),
                        None => "not run".to_string(),
                    };
                    let _ = writeln!(
                        out,
                        ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                        xml(&why)
                    );
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// Text for an XML attribute or element: the five special characters escaped, and the control
/// characters XML 1.0 cannot hold dropped.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}

/// GitHub's job summary of a run: failures first with their output, then the counts, the time
/// the hits saved, the critical path and the slowest tasks.
fn markdown(summary: &Summary, run: &RunRecord<'_>, title: &str) -> String {
    let c = &summary.counts;
    let mut out = String::new();
    let verdict = if summary.ok { "✅" } else { "❌" };
    let _ = writeln!(
        out,
        "### {verdict} `{}` — {} of {} tasks succeeded\n",
        title.replace('`', "'"),
        c.success,
        c.total
    );
    let failed: Vec<&SummaryTask> = summary
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Failed)
        .collect();
    if !failed.is_empty() {
        out.push_str("#### Failures\n\n");
        for task in failed.iter().take(SUMMARY_FAILURES) {
            let status = failed_word(task);
            let _ = writeln!(
                out,
                "<details open><summary><code>{}</code> {status}</summary>\n\n```text\n{}\n```\n\n</details>\n",
                html(&task.id),
                tail(run, &task.id, SUMMARY_TAIL_LINES).replace("```", "'''")
            );
        }
        if failed.len() > SUMMARY_FAILURES {
            let rest: Vec<&str> = failed[SUMMARY_FAILURES..]
                .iter()
                .map(|t| t.id.as_str())
                .collect();
            let _ = writeln!(out, "and {} more: {}\n", rest.len(), rest.join(", "));
        }
        let ids: Vec<&str> = failed.iter().map(|t| t.id.as_str()).collect();
        let _ = writeln!(out, "Re-run the failed tasks: `vx run {}`\n", ids.join(" "));
    }
    out.push_str("| executed | restored (local) | restored (remote) | up to date | no cache | failed | skipped | time |\n");
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    // As the footer counts it: the hits' stored durations less what serving them cost
    // (negative when a slow remote cost more than running would have).
    let saved: i64 = summary
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Success)
        .filter_map(|t| {
            t.stored_duration_ms
                .map(|s| s as i64 - t.duration_ms as i64)
        })
        .sum();
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {} | {} | {} | {} s (saved {} s) |\n",
        c.executed,
        c.restored_local,
        c.restored_remote,
        c.up_to_date,
        c.no_cache,
        c.failed,
        c.skipped + c.not_run,
        seconds(summary.total_ms),
        signed_seconds(saved)
    );
    if summary.critical_path.tasks.len() > 1 {
        let chain: Vec<String> = summary
            .critical_path
            .tasks
            .iter()
            .map(|id| format!("`{}`", id.replace('`', "'")))
            .collect();
        let _ = writeln!(
            out,
            "Critical path ({} s): {}\n",
            seconds(summary.critical_path.duration_ms),
            chain.join(" → ")
        );
    }
    let mut slowest: Vec<&SummaryTask> = summary.tasks.iter().filter(|t| t.attempts > 0).collect();
    slowest.sort_by(|a, b| b.duration_ms.cmp(&a.duration_ms).then(a.id.cmp(&b.id)));
    if !slowest.is_empty() {
        out.push_str(
            "<details><summary>Slowest tasks</summary>\n\n| task | time | cache |\n|---|---|---|\n",
        );
        for task in slowest.iter().take(SLOWEST) {
            let cache = match task.cache {
                Some(CacheWord::Miss) => "executed",
                Some(_) => "restored",
                None => "no cache",
            };
            let _ = writeln!(
                out,
                "| `{}` | {} s | {cache} |",
                task.id.replace('`', "'"),
                seconds(task.duration_ms)
            );
        }
        out.push_str("\n</details>\n\n");
    }
    out
}

/// Text inside HTML: `&`, `<` and `>` escaped.
fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_text_is_escaped_and_control_characters_dropped() {
        assert_eq!(
            xml("a<b & \"c\" 'd'>\u{1b}[31m\n"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;[31m\n"
        );
    }
}
