//! What a run knows about each task once it ended: the outcome vocabulary of the glossary and
//! the report the renderer draws frames and one-liners from.

use std::time::Duration;

use vx_core::units::format_duration;
use vx_core::TaskId;

/// The final state of a task in a run (glossary: outcome), plus `Running` for a ready
/// persistent task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Success,
    Failed,
    Skipped,
    Aborted,
    NotRun,
    Running,
}

impl Status {
    pub fn word(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
            Status::Aborted => "aborted",
            Status::NotRun => "not run",
            Status::Running => "running",
        }
    }

    /// UI-1 glyph for an executed task; hits have their own ([`TaskReport::glyph`]).
    pub fn glyph(self) -> &'static str {
        match self {
            Status::Success => "⏺",
            Status::Failed => "◼",
            Status::Skipped => "⊘",
            Status::Aborted => "✗",
            Status::NotRun => "◌",
            Status::Running => "▸",
        }
    }
}

/// Why a persistent task never became ready (EXEC-13).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotReady {
    /// It exited by itself (the report's exit code says how).
    Exited,
    /// No line matched `ready-when` within the task's timeout; vx stopped it.
    TimedOut(Duration),
    /// No shell ran.
    Spawn,
    /// vx stopped it while it waited: it was not requested and every task that depends on it
    /// was skipped (an upstream failed) or had ended, so nothing would ever use it.
    Unneeded,
}

#[derive(Debug, Clone)]
pub struct TaskReport {
    pub id: TaskId,
    pub status: Status,
    /// A process ran for this task (a miss).
    pub executed: bool,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub not_ready: Option<NotReady>,
    pub duration: Duration,
    pub blocked_by: Option<TaskId>,
    /// The masked `$ command` line, with forwarded arguments.
    pub command_line: Option<String>,
    /// Both streams in the order received, with note records, masked.
    pub log: Vec<u8>,
    /// How the result was obtained, for tasks that executed or hit (UI-1).
    pub cache: Option<CacheKind>,
    /// The first 12 hex digits of the key, for hits (UI-2).
    pub short_key: Option<String>,
    /// For hits: the recorded execution time the hit saved (UI-7).
    pub stored: Option<Duration>,
    /// CPU time (user + system) of an executed attempt, from `wait4` (EXEC-18).
    pub cpu_ms: Option<u64>,
    /// Peak RSS of an executed attempt, when it can be told apart from vx's own (EXEC-18).
    pub peak_rss_bytes: Option<u64>,
    /// Attempts made (EXEC-15); 0 for a task that did not execute.
    pub attempts: u32,
    /// EXEC-16: how many times history saw this task's key fail after it had passed with that
    /// key (`RunCache::key_failures_after_pass`); 0 when unknown.
    pub key_failures_after_pass: u64,
    /// When the task started and ended, from the start of the run (HIST-1); zero for a task
    /// that never started.
    pub start_offset: Duration,
    pub end_offset: Duration,
    /// SCHED-4: how long the task waited only for memory (a slot was free).
    pub admission_held: Duration,
    /// SBX-7: how many undeclared reads and writes the sandbox saw (a one-shot task with any
    /// failed).
    pub sandbox_violations: u64,
    /// Each attempt's process, from the start of the run (UI-15); empty for a task that did
    /// not execute.
    pub attempt_spans: Vec<AttemptSpan>,
    /// A persistent task `vx watch` kept running from an earlier cycle, not started again.
    pub kept: bool,
    /// It executed on a remote executor (REM-13: shown `@remote`).
    pub remote: bool,
    /// A restored hit: why its outputs were not up to date (history, for `vx why`).
    pub restore_reason: Option<String>,
    /// A hit cut off (KEY-9): the upstreams whose outputs its key folds that executed in this
    /// run and produced what they had before.
    pub cut_off: Vec<TaskId>,
}

/// One attempt of an executed task (UI-15).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptSpan {
    pub start: Duration,
    pub end: Duration,
    pub exit_code: Option<i32>,
}

impl TaskReport {
    /// EXEC-16's dim note for a flaky task: it needed a retry to pass, or its key failed after
    /// passing before. The retry note wins when both apply.
    pub fn flaky(&self) -> Option<String> {
        match self.status {
            Status::Success if self.attempts > 1 => {
                Some(format!("flaky: passed after {} attempts", self.attempts))
            }
            Status::Success | Status::Failed if self.key_failures_after_pass > 0 => Some(format!(
                "flaky: this key failed {}× after passing",
                self.key_failures_after_pass
            )),
            _ => None,
        }
    }
}

impl TaskReport {
    /// UI-1: hits have their own glyph.
    pub fn glyph(&self) -> &'static str {
        match (self.status, self.cache) {
            (Status::Success, Some(CacheKind::UpToDate)) => "►",
            (Status::Success, Some(CacheKind::RestoredLocal | CacheKind::RestoredRemote)) => "⇢",
            (status, _) => status.glyph(),
        }
    }

    /// A report for a task that never ran (skipped, not run).
    pub fn not_started(id: TaskId, status: Status, blocked_by: Option<TaskId>) -> TaskReport {
        TaskReport {
            id,
            status,
            executed: false,
            exit_code: None,
            timed_out: false,
            not_ready: None,
            duration: Duration::ZERO,
            blocked_by,
            command_line: None,
            log: Vec::new(),
            cache: None,
            short_key: None,
            stored: None,
            cpu_ms: None,
            peak_rss_bytes: None,
            attempts: 0,
            key_failures_after_pass: 0,
            start_offset: Duration::ZERO,
            end_offset: Duration::ZERO,
            admission_held: Duration::ZERO,
            sandbox_violations: 0,
            attempt_spans: Vec::new(),
            kept: false,
            remote: false,
            restore_reason: None,
            cut_off: Vec::new(),
        }
    }

    /// Where it executed: `remote` or `local` (UI-14, HIST-1).
    pub fn placement(&self) -> &'static str {
        if self.remote {
            "remote"
        } else {
            "local"
        }
    }

    /// The status shown in a frame header (UI-2).
    pub fn header_status(&self) -> String {
        match self.status {
            Status::Failed => match (self.not_ready, self.timed_out, self.exit_code) {
                (Some(NotReady::Exited), _, Some(code)) => {
                    format!("not ready: exited (code {code})")
                }
                (Some(NotReady::Exited), _, None) => "not ready: exited".to_string(),
                (Some(NotReady::TimedOut(after)), _, _) => {
                    format!("not ready: timed out after {}", format_duration(after))
                }
                (Some(NotReady::Spawn), _, _) => "not ready: could not start".to_string(),
                (Some(NotReady::Unneeded), _, _) => {
                    "not ready: stopped, no task needs it any more".to_string()
                }
                (None, true, Some(code)) => format!("failed (timed out, exit {code})"),
                (None, _, Some(code)) => format!("failed (exit {code})"),
                (None, _, None) => "failed".to_string(),
            },
            Status::Aborted => "aborted".to_string(),
            Status::Running => "running".to_string(),
            _ => match (self.cache, &self.short_key) {
                (Some(CacheKind::UpToDate), Some(key)) => format!("up-to-date · {key}"),
                (Some(CacheKind::RestoredLocal), Some(key)) => format!("restored-local · {key}"),
                (Some(CacheKind::RestoredRemote), Some(key)) => format!("restored-remote · {key}"),
                _ => "executed".to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(status: Status, attempts: u32, key_failures_after_pass: u64) -> TaskReport {
        TaskReport {
            attempts,
            key_failures_after_pass,
            ..TaskReport::not_started(TaskId::new("web", "test"), status, None)
        }
    }

    #[test]
    fn flaky_notes_a_retried_pass_or_a_key_that_failed_after_passing() {
        let note = |status, attempts, failures| report(status, attempts, failures).flaky();
        assert_eq!(note(Status::Success, 1, 0), None);
        assert_eq!(
            note(Status::Success, 2, 0).as_deref(),
            Some("flaky: passed after 2 attempts")
        );
        assert_eq!(
            note(Status::Success, 1, 1).as_deref(),
            Some("flaky: this key failed 1× after passing")
        );
        // A failure of a key that passed before is flaky too.
        assert_eq!(
            note(Status::Failed, 1, 3).as_deref(),
            Some("flaky: this key failed 3× after passing")
        );
        // The retry note wins when both rules apply.
        assert_eq!(
            note(Status::Success, 3, 2).as_deref(),
            Some("flaky: passed after 3 attempts")
        );
        // Retries that did not end in a pass are not flaky.
        assert_eq!(note(Status::Failed, 3, 0), None);
        // Tasks that did not end by passing or failing get no note.
        assert_eq!(note(Status::Aborted, 1, 2), None);
        assert_eq!(note(Status::Skipped, 0, 2), None);
    }
}

/// How a task's result was obtained (UI-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheKind {
    Miss,
    UpToDate,
    RestoredLocal,
    /// Restored from an entry a further cache layer delivered during this run (REM-5).
    RestoredRemote,
    NoCache,
}

impl CacheKind {
    pub fn word(self) -> &'static str {
        match self {
            CacheKind::Miss => "miss",
            CacheKind::UpToDate => "up-to-date",
            CacheKind::RestoredLocal => "local",
            CacheKind::RestoredRemote => "remote",
            CacheKind::NoCache => "no-cache",
        }
    }

    pub fn is_hit(self) -> bool {
        matches!(
            self,
            CacheKind::UpToDate | CacheKind::RestoredLocal | CacheKind::RestoredRemote
        )
    }
}

/// A line for the user beside the tasks' output (ERR-1): `vx: …`, or `warning: …` with an
/// optional `hint:` line. Code in `run/` returns these; the reporter prints them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    Note(String),
    Warning {
        line: String,
        hint: Option<String>,
    },
    /// KEY-10: a glob of `what` (`cache.inputs`, `cache.outputs`) matched no file. A run says
    /// it once per glob above its footer, naming the tasks.
    Unmatched {
        task: TaskId,
        what: &'static str,
        glob: String,
    },
}

impl Notice {
    pub fn note(text: impl Into<String>) -> Notice {
        Notice::Note(text.into())
    }

    pub fn warning(text: impl Into<String>) -> Notice {
        Notice::Warning {
            line: text.into(),
            hint: None,
        }
    }
}
