//! Which task output a run prints, and when (UI-3, UI-4): the flow decides between frames,
//! one-liners and silence per outcome; failure frames held for the end print above the recap.

use super::style::Style;
use super::task::{frame, frame_head, github_frame, one_liner};
use super::{out, out_str};
use crate::options::OutputLogs;
use crate::run::outcome::{Notice, Status, TaskReport};

/// How output is shaped (glossary: flow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Focused,
    Broad,
    Ci,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Show {
    Nothing,
    Frame,
    OneLiner,
    /// `--output-logs=hash-only`: the one-liner with the task's short key.
    HashLine,
    /// A one-liner now and the frame just above the footer.
    OneLinerThenFrame,
}

pub struct Reporter {
    pub style: Style,
    flow: Flow,
    output_logs: Option<OutputLogs>,
    /// The one task whose frame streams live (UI-4).
    streaming: Option<usize>,
    /// The streamed frame's header is out and its closing line is not: anything else printed
    /// now waits in `pending`, so frames and lines are never interleaved (UI-4).
    stream_open: bool,
    pending: Vec<u8>,
    held: Vec<TaskReport>,
    /// UI-9: under GitHub Actions, frames are folded into groups and task output is fenced
    /// with this run's stop-commands token.
    github_token: Option<String>,
}

impl Reporter {
    pub fn new(style: Style, flow: Flow, output_logs: Option<OutputLogs>) -> Reporter {
        Reporter {
            style,
            flow,
            output_logs,
            streaming: None,
            stream_open: false,
            pending: Vec::new(),
            held: Vec::new(),
            github_token: None,
        }
    }

    /// UI-9: GitHub Actions log groups. A group's title needs the task's outcome, so no frame
    /// streams live (every frame is printed whole when its task ends).
    pub fn use_github_groups(&mut self, token: String) {
        self.github_token = Some(token);
        self.streaming = None;
    }

    pub fn flow(&self) -> Flow {
        self.flow
    }

    /// The stop-commands token under GitHub Actions (UI-9).
    pub fn github_token(&self) -> Option<&str> {
        self.github_token.as_deref()
    }

    fn frame(&self, report: &TaskReport) -> Vec<u8> {
        match &self.github_token {
            Some(token) => github_frame(&self.style, report, token),
            None => frame(&self.style, report),
        }
    }

    /// UI-4: when the flow prints frames for executed requested tasks and exactly one
    /// non-group task is requested, its frame streams live.
    pub fn choose_streaming(&mut self, requested_commands: &[usize]) {
        let frames_for_requested = match self.output_logs {
            Some(OutputLogs::Full) => true,
            Some(_) => false,
            None => matches!(self.flow, Flow::Focused | Flow::Ci),
        };
        if frames_for_requested && requested_commands.len() == 1 && self.github_token.is_none() {
            self.streaming = Some(requested_commands[0]);
        }
    }

    pub fn is_streaming(&self, node: usize) -> bool {
        self.streaming == Some(node)
    }

    /// The header of the streamed frame, when its task starts.
    /// A notice from the run (ERR-1), on stderr.
    pub fn notice(&mut self, notice: Notice) {
        super::say(notice);
    }

    pub fn started(&mut self, node: usize, report: &TaskReport) {
        if self.is_streaming(node) {
            out_str(&frame_head(&self.style, report, None));
            self.stream_open = true;
        }
    }

    /// Prints now, or after the open streamed frame closes.
    fn emit(&mut self, bytes: &[u8]) {
        if self.stream_open {
            self.pending.extend_from_slice(bytes);
        } else {
            out(bytes);
        }
    }

    /// Live output of the streamed task.
    pub fn stream(&mut self, node: usize, bytes: &[u8]) {
        if self.is_streaming(node) {
            out(bytes);
        }
    }

    /// Whether a hit of this task would print its log: if not, vx need not read it back from
    /// the artifact at all (the broad flow prints nothing for hits, UI-3).
    pub fn shows_hit_log(&self, requested: bool) -> bool {
        match self.output_logs {
            Some(OutputLogs::Full) => true,
            Some(_) => false,
            None => match self.flow {
                Flow::Ci => true,
                Flow::Focused => requested,
                Flow::Broad => false,
            },
        }
    }

    fn decide(&self, report: &TaskReport, requested: bool) -> Show {
        let status = report.status;
        match self.output_logs {
            Some(OutputLogs::None) => return Show::Nothing,
            Some(OutputLogs::HashOnly) => return Show::HashLine,
            Some(OutputLogs::ErrorsOnly) => {
                return if status == Status::Failed {
                    Show::OneLinerThenFrame
                } else {
                    Show::Nothing
                }
            }
            Some(OutputLogs::Full) => return self.ci_column(report),
            None => {}
        }
        let hit = report.cache.is_some_and(|c| c.is_hit());
        match (self.flow, status) {
            (Flow::Ci, _) => self.ci_column(report),
            (Flow::Focused, Status::Success) if hit && requested => Show::Frame,
            (_, Status::Success) if hit => Show::Nothing,
            (_, Status::Skipped | Status::Aborted | Status::Running) => Show::OneLiner,
            (_, Status::NotRun) => Show::Nothing,
            (Flow::Focused, Status::Success) if requested => Show::Frame,
            (Flow::Focused, Status::Success) => Show::Nothing,
            (Flow::Focused, Status::Failed) if requested => Show::Frame,
            (Flow::Focused | Flow::Broad, Status::Failed) => Show::OneLinerThenFrame,
            (Flow::Broad, Status::Success) => Show::OneLiner,
        }
    }

    fn ci_column(&self, report: &TaskReport) -> Show {
        let hit = report.cache.is_some_and(|c| c.is_hit());
        match report.status {
            Status::Success if hit && report.log.is_empty() => Show::OneLiner,
            Status::Success | Status::Failed => Show::Frame,
            Status::NotRun => Show::Nothing,
            _ => Show::OneLiner,
        }
    }

    /// A task reached its outcome (or, for a persistent task, became ready).
    pub fn finished(&mut self, node: usize, report: &TaskReport, requested: bool) {
        if self.is_streaming(node) && self.stream_open && report.status != Status::Running {
            let mut tail = Vec::new();
            if !report.log.is_empty() && !report.log.ends_with(b"\n") {
                tail.push(b'\n');
            }
            let mut closing = super::task::frame_tail(&self.style, report);
            if report.status == Status::Failed {
                closing = closing.replace(
                    &format!("  {}", self.style.red("failed")),
                    &format!("  {}", self.style.red(&report.header_status())),
                );
            }
            tail.extend_from_slice(closing.as_bytes());
            tail.push(b'\n');
            out(&tail);
            self.stream_open = false;
            let pending = std::mem::take(&mut self.pending);
            out(&pending);
            return;
        }
        if self.is_streaming(node) && self.stream_open {
            return;
        }
        // A streamed task that never started (skipped, not run) is reported like any other.
        match self.decide(report, requested) {
            Show::Nothing => {}
            Show::Frame => self.emit(&self.frame(report)),
            Show::OneLiner => self.emit(one_liner(&self.style, report).as_bytes()),
            Show::HashLine => {
                let mut line = one_liner(&self.style, report);
                if let Some(key) = &report.short_key {
                    line.insert_str(line.len() - 1, &format!("  {}", self.style.dim(key)));
                }
                self.emit(line.as_bytes());
            }
            Show::OneLinerThenFrame => {
                self.emit(one_liner(&self.style, report).as_bytes());
                self.held.push(report.clone());
            }
        }
    }

    /// A kept persistent task's output after the footer, already prefixed with its id.
    pub fn after_footer(&mut self, bytes: &[u8]) {
        out(bytes);
    }

    /// The end of the run's output (UI-5, UI-6, UI-7): the live region erased, held failure
    /// frames, the recap and the footer.
    pub fn finish(&mut self, totals: &super::footer::Totals<'_>) {
        super::live::stop();
        self.flush_held();
        out_str(&super::footer::recap(
            &self.style,
            totals.reports,
            self.github_token(),
        ));
        out_str(&super::footer::footer(&self.style, totals));
    }

    /// Failure frames held back for the end, printed just above the recap and footer.
    pub fn flush_held(&mut self) {
        self.stream_open = false;
        let pending = std::mem::take(&mut self.pending);
        out(&pending);
        for report in std::mem::take(&mut self.held) {
            out(&self.frame(&report));
        }
    }
}
