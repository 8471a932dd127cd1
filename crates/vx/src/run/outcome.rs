//! What a run knows about each task once it ended: the outcome vocabulary of the glossary and
//! the report the renderer draws frames and one-liners from.

use std::time::Duration;

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

    /// UI-1 glyph for an executed task (M1 has no hits).
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
    Exited,
    Spawn,
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
}

impl TaskReport {
    /// The status shown in a frame header (UI-2).
    pub fn header_status(&self) -> String {
        match self.status {
            Status::Failed => match (self.not_ready, self.timed_out, self.exit_code) {
                (Some(NotReady::Exited), _, _) => "not ready: exited".to_string(),
                (Some(NotReady::Spawn), _, _) => "not ready: could not start".to_string(),
                (None, true, Some(code)) => format!("failed (timed out, exit {code})"),
                (None, _, Some(code)) => format!("failed (exit {code})"),
                (None, _, None) => "failed".to_string(),
            },
            Status::Aborted => "aborted".to_string(),
            Status::Running => "running".to_string(),
            _ => "executed".to_string(),
        }
    }
}
