//! Which task output a run prints, and when (UI-3, UI-4): the flow decides between frames,
//! one-liners and silence per outcome; failure frames held for the end print above the recap.

use super::style::Style;
use super::task::{frame, frame_head, github_frame, one_liner};
use super::{out, out_str};
use vx_core::id::TaskId;
use vx_engine::options::{LogOrder, OutputLogs};
use vx_engine::outcome::{Notice, Status, TaskReport};
use vx_engine::report::{Flow, Region, Reporter, Totals, UiAction, UiInput};

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

/// The terminal's [`Reporter`]: frames, one-liners, notices, the task UI and the footer.
pub struct Terminal {
    pub style: Style,
    flow: Flow,
    output_logs: Option<OutputLogs>,
    /// The one task whose frame streams live (UI-4).
    streaming: Option<usize>,
    /// The streamed frame's header is out and its closing line is not: anything else printed
    /// now waits in `pending`, so frames and lines are never interleaved (UI-4).
    stream_open: bool,
    /// Bytes of output the streamed frame printed so far.
    streamed: usize,
    pending: Vec<u8>,
    held: Vec<TaskReport>,
    /// UI-9: under GitHub Actions, frames are folded into groups and task output is fenced
    /// with this run's stop-commands token.
    github_token: Option<String>,
    /// UI-16: under GitLab CI, Azure Pipelines, Buildkite or TeamCity, frames are folded into
    /// that CI's sections.
    ci_log: Option<super::ci_log::CiLog>,
    /// Failed tasks whose frame was printed with nothing but one-liners and other failure
    /// frames after it: the recap does not repeat their output (it is right above).
    failures_above: Vec<vx_core::id::TaskId>,
    /// Skipped tasks by the failure that blocked them, folded into one line each above the
    /// recap (every one-liner with `--output-logs=full`; `vx last` lists them).
    blocked: Vec<(TaskId, Vec<TaskReport>)>,
    /// KEY-10's `no file matches` per (what, glob), with the tasks, said once above the footer.
    unmatched: std::collections::BTreeMap<(&'static str, String), Vec<vx_core::id::TaskId>>,
    /// `--log-order=stream`: every executing task's lines as they come, prefixed.
    stream_lines: Option<StreamLines>,
    /// `--ui=tui`: the task UI holds the terminal; every task event goes to it.
    tui: Option<super::tui::Tui>,
    /// Notices handed over so far (a run that said something is not replayed from a snapshot).
    notices: usize,
}

/// The state of `--log-order=stream`.
struct StreamLines {
    /// Task ids by node, for the prefixes.
    ids: Vec<TaskId>,
    /// Ids are padded to this many columns, so the `│` line up.
    width: usize,
    /// Each task's unfinished last line: only whole lines are printed, so two tasks' lines
    /// never share one.
    partial: std::collections::HashMap<usize, Vec<u8>>,
    /// Tasks that printed a line.
    printed: std::collections::HashSet<usize>,
}

/// Ids longer than this are not padded further.
const PREFIX_WIDTH: usize = 24;

/// Bytes of one unfinished line `--log-order=stream` holds before printing it anyway.
const STREAM_LINE_MAX: usize = 64 * 1024;

impl Terminal {
    pub fn new(style: Style, flow: Flow, output_logs: Option<OutputLogs>) -> Terminal {
        Terminal {
            style,
            flow,
            output_logs,
            streaming: None,
            stream_open: false,
            streamed: 0,
            pending: Vec::new(),
            held: Vec::new(),
            github_token: None,
            ci_log: None,
            failures_above: Vec::new(),
            blocked: Vec::new(),
            unmatched: std::collections::BTreeMap::new(),
            stream_lines: None,
            tui: None,
            notices: 0,
        }
    }

    /// UI-9: GitHub Actions log groups. A group's title needs the task's outcome, so no frame
    /// streams live (every frame is printed whole when its task ends).
    pub fn use_github_groups(&mut self, token: String) {
        self.github_token = Some(token);
        self.streaming = None;
    }

    /// UI-16: the sections of another CI; as for GitHub, no frame streams live.
    pub fn use_ci_sections(&mut self, ci: super::ci_log::CiLog) {
        self.ci_log = Some(ci);
        self.streaming = None;
    }

    /// `--log-order=stream`: from now on every executing task's lines print as they come,
    /// prefixed with its id (one of `ids`, by node, padded to `widest` columns), unless
    /// `--output-logs` hides output. No frame streams (UI-4) and no GitHub group folds a task:
    /// its lines are already out.
    pub fn use_log_order(&mut self, order: LogOrder, ids: Vec<TaskId>, widest: usize) {
        let shows_output = matches!(self.output_logs, None | Some(OutputLogs::Full));
        if order != LogOrder::Stream || !shows_output {
            return;
        }
        let width = widest.min(PREFIX_WIDTH);
        // The token stays: the recap's lines are still fenced (a prefixed line cannot be read
        // as a workflow command, a recap line could).
        self.streaming = None;
        self.stream_lines = Some(StreamLines {
            ids,
            width,
            partial: std::collections::HashMap::new(),
            printed: std::collections::HashSet::new(),
        });
    }

    /// `<id> │ ` for node `node`, the id coloured and padded.
    fn prefix(&self, node: usize) -> String {
        let Some(lines) = &self.stream_lines else {
            return String::new();
        };
        let id = &lines.ids[node];
        let pad = lines.width.saturating_sub(id.to_string().chars().count());
        format!(
            "{}{} {} ",
            self.style.id(id),
            " ".repeat(pad),
            self.style.dim("│")
        )
    }

    /// Prints `bytes` of node `node` line by line with its prefix; an unfinished last line
    /// waits for the rest (or for [`Reporter::end_lines`]).
    fn print_lines(&mut self, node: usize, bytes: &[u8]) {
        let prefix = self.prefix(node);
        let Some(lines) = &mut self.stream_lines else {
            return;
        };
        let partial = lines.partial.entry(node).or_default();
        partial.extend_from_slice(bytes);
        // A line that never ends (a progress bar redrawn with carriage returns) is printed once
        // it is this long, rather than held to the task's end.
        if partial.len() > STREAM_LINE_MAX && !partial.contains(&b'\n') {
            partial.push(b'\n');
        }
        let Some(end) = partial.iter().rposition(|&b| b == b'\n') else {
            return;
        };
        let rest = partial.split_off(end + 1);
        let whole = std::mem::replace(partial, rest);
        let mut text = Vec::with_capacity(whole.len() + prefix.len() * 4);
        for line in whole.split_inclusive(|&b| b == b'\n') {
            text.extend_from_slice(prefix.as_bytes());
            text.extend_from_slice(line);
        }
        lines.printed.insert(node);
        self.failures_above.clear();
        self.emit(&text);
    }

    /// The end of a task's streamed lines: its unfinished last line, if any, ends. Whether it
    /// printed any line.
    fn end_lines(&mut self, node: usize) -> bool {
        let Some(lines) = &mut self.stream_lines else {
            return false;
        };
        if let Some(mut partial) = lines.partial.remove(&node).filter(|p| !p.is_empty()) {
            partial.push(b'\n');
            self.print_lines(node, &partial);
        }
        self.stream_lines
            .as_ref()
            .is_some_and(|lines| lines.printed.contains(&node))
    }

    /// The stop-commands token under GitHub Actions (UI-9).
    pub fn github_token(&self) -> Option<&str> {
        self.github_token.as_deref()
    }

    fn frame(&self, report: &TaskReport) -> Vec<u8> {
        match (&self.github_token, self.ci_log) {
            (Some(token), _) => github_frame(&self.style, report, token),
            (None, Some(ci)) => ci.frame(&self.style, report),
            (None, None) => frame(&self.style, report),
        }
    }

    /// The `no file matches` lines, one per glob, naming its tasks (at most [`NAMED`]).
    fn say_unmatched(&mut self) {
        const NAMED: usize = 5;
        for ((what, glob), mut tasks) in std::mem::take(&mut self.unmatched) {
            tasks.sort();
            if let [task] = tasks.as_slice() {
                super::notice(&format!("{task}: no file matches {what} ({glob})"));
                continue;
            }
            let mut names: Vec<String> =
                tasks.iter().take(NAMED).map(ToString::to_string).collect();
            if tasks.len() > NAMED {
                names.push(format!("{} more", tasks.len() - NAMED));
            }
            super::notice(&format!(
                "no file matches {what} ({glob}) in {} tasks: {}",
                tasks.len(),
                names.join(", ")
            ));
        }
    }

    /// Holds a skipped task's one-liner for the folded line of what blocked it; false when
    /// its one-liner prints as usual (`--output-logs=full`, or it is not a one-liner).
    fn fold_blocked(&mut self, report: &TaskReport, requested: bool) -> bool {
        let Some(cause) = &report.blocked_by else {
            return false;
        };
        if report.status != Status::Skipped
            || self.output_logs == Some(OutputLogs::Full)
            || !matches!(self.decide(report, requested), Show::OneLiner)
        {
            return false;
        }
        match self.blocked.iter_mut().find(|(c, _)| c == cause) {
            Some((_, reports)) => reports.push(report.clone()),
            None => self.blocked.push((cause.clone(), vec![report.clone()])),
        }
        true
    }

    /// The folded skipped tasks: `⊘ 35 skipped: blocked by ui#build`, or the one-liner of a
    /// failure's only skipped dependant.
    fn say_blocked(&mut self) {
        for (cause, reports) in std::mem::take(&mut self.blocked) {
            let line = match reports.as_slice() {
                [one] => one_liner(&self.style, one),
                _ => format!(
                    "{} {} skipped: blocked by {} {}\n",
                    self.style.yellow(Status::Skipped.glyph()),
                    reports.len(),
                    self.style.id(&cause),
                    self.style.dim("(vx last lists them)")
                ),
            };
            self.emit(line.as_bytes());
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

    /// `--log-order=stream`: a task's end. Its lines are out, so where the flow would print its
    /// frame it gets its one-liner; a hit's log is replayed with the prefix first; a task that
    /// printed lines the flow would not show is closed with its one-liner too.
    fn finished_streamed(&mut self, node: usize, report: &TaskReport, requested: bool) {
        let printed = self.end_lines(node);
        let show = self.decide(report, requested);
        if !printed && matches!(show, Show::Frame | Show::OneLinerThenFrame) {
            // Nothing of its log went out (a hit, or a task that failed before it ran).
            self.print_lines(node, &report.log);
            self.end_lines(node);
        }
        match show {
            Show::HashLine => {
                let mut line = one_liner(&self.style, report);
                if let Some(key) = &report.short_key {
                    line.insert_str(line.len() - 1, &format!("  {}", self.style.dim(key)));
                }
                self.emit(line.as_bytes());
            }
            Show::Nothing if !printed => {}
            _ => self.emit(one_liner(&self.style, report).as_bytes()),
        }
    }

    /// A whole frame went out: a failure's joins those the recap need not repeat; any other
    /// frame puts output between them and the recap.
    fn frame_printed(&mut self, report: &TaskReport) {
        if report.status == Status::Failed {
            self.failures_above.push(report.id.clone());
        } else {
            self.failures_above.clear();
        }
    }

    /// Failure frames held back for the end, printed just above the recap and footer.
    pub fn flush_held(&mut self) {
        self.stream_open = false;
        let pending = std::mem::take(&mut self.pending);
        out(&pending);
        for report in std::mem::take(&mut self.held) {
            out(&self.frame(&report));
            self.frame_printed(&report);
        }
    }
}

impl Reporter for Terminal {
    fn colour(&self) -> bool {
        self.style.colour
    }

    /// Whether the run printed nothing a replay cannot print again: no notice, no CI log
    /// groups (GitHub's are fenced with a token random per run), no interleaved lines, and for
    /// each report nothing, or the frame or one-liner of a successful hit (which its id, key,
    /// saved time and log make again). `requested` says which reports are of requested tasks.
    fn output_replayable(&self, reports: &[(&TaskReport, bool)]) -> bool {
        self.notices == 0
            && self.github_token.is_none()
            && self.ci_log.is_none()
            && self.stream_lines.is_none()
            && self.tui.is_none()
            && reports.iter().all(|(report, requested)| {
                let hit = report.status == Status::Success
                    && report.cache.is_some_and(|c| c.is_hit())
                    && report.flaky().is_none()
                    && !report.remote
                    && !report.kept;
                match self.decide(report, *requested) {
                    Show::Nothing => true,
                    Show::Frame | Show::OneLiner | Show::HashLine => hit,
                    Show::OneLinerThenFrame => false,
                }
            })
    }

    /// Takes the terminal for the task UI (`--ui=tui`); false (after a warning) when it cannot,
    /// and the run goes on with plain output.
    fn start_tui(
        &mut self,
        tasks: Vec<(usize, TaskId, bool)>,
        send: Box<dyn Fn(UiInput) -> bool + Send>,
        log_file: std::path::PathBuf,
    ) -> bool {
        let send = Box::new(move |event: super::tui::Event| send(Box::new(event)));
        match super::tui::Tui::start(tasks, send) {
            Ok(tui) => {
                self.tui = Some(tui);
                self.streaming = None;
                super::live::log_to(log_file);
                true
            }
            Err(e) => {
                super::warning(&format!(
                    "cannot start the task UI ({e}); plain output instead"
                ));
                false
            }
        }
    }

    fn has_tui(&self) -> bool {
        self.tui.is_some()
    }

    /// Redraws the task UI if it is due.
    fn tick(&mut self) {
        if let Some(tui) = &mut self.tui {
            tui.draw(false);
        }
    }

    /// A key in the task UI: what the run should do.
    fn key(&mut self, input: UiInput) -> UiAction {
        let (Some(tui), Ok(event)) = (&mut self.tui, input.downcast::<super::tui::Event>()) else {
            return UiAction::None;
        };
        let action = tui.key(*event);
        tui.draw(true);
        action
    }

    fn flow(&self) -> Flow {
        self.flow
    }

    /// UI-4: when the flow prints frames for executed requested tasks and exactly one
    /// non-group task is requested, its frame streams live.
    fn choose_streaming(&mut self, requested_commands: &[usize]) {
        let frames_for_requested = match self.output_logs {
            Some(OutputLogs::Full) => true,
            Some(_) => false,
            None => matches!(self.flow, Flow::Focused | Flow::Ci),
        };
        if frames_for_requested
            && requested_commands.len() == 1
            && self.github_token.is_none()
            && self.ci_log.is_none()
            && self.stream_lines.is_none()
        {
            self.streaming = Some(requested_commands[0]);
        }
    }

    fn is_streaming(&self, node: usize) -> bool {
        self.streaming == Some(node)
    }

    /// The header of the streamed frame, when its task starts.
    /// A notice from the run (ERR-1), on stderr.
    fn notice(&mut self, notice: Notice) {
        self.notices += 1;
        match notice {
            Notice::Unmatched { task, what, glob } => {
                let tasks = self.unmatched.entry((what, glob)).or_default();
                if !tasks.contains(&task) {
                    tasks.push(task);
                }
            }
            notice => super::say(notice),
        }
    }

    fn started(&mut self, node: usize, report: &TaskReport) {
        if let Some(tui) = &mut self.tui {
            tui.started(node);
            return;
        }
        if self.is_streaming(node) {
            out_str(&frame_head(&self.style, report, None));
            self.stream_open = true;
        }
    }

    /// Live output of the streamed task.
    fn stream(&mut self, node: usize, bytes: &[u8]) {
        if let Some(tui) = &mut self.tui {
            tui.output(node, bytes);
            return;
        }
        if self.stream_lines.is_some() {
            self.print_lines(node, bytes);
            return;
        }
        if self.is_streaming(node) {
            self.streamed += bytes.len();
            out(bytes);
        }
    }

    /// Whether a hit of this task would print its log: if not, vx need not read it back from
    /// the artifact at all (the broad flow prints nothing for hits, UI-3).
    fn shows_hit_log(&self, requested: bool) -> bool {
        if self.tui.is_some() {
            return true;
        }
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

    /// A task reached its outcome (or, for a persistent task, became ready).
    fn finished(&mut self, node: usize, report: &TaskReport, requested: bool) {
        if let Some(tui) = &mut self.tui {
            tui.finished(node, report);
            return;
        }
        if self.fold_blocked(report, requested) {
            return;
        }
        if self.is_streaming(node) && self.stream_open && report.status != Status::Running {
            let mut tail = Vec::new();
            // A task that failed before it could run (its key, its outputs' cleaning) streamed
            // nothing: its log holds why.
            if self.streamed == 0 {
                tail.extend_from_slice(&report.log);
            }
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
            self.frame_printed(report);
            self.stream_open = false;
            let pending = std::mem::take(&mut self.pending);
            out(&pending);
            return;
        }
        if self.is_streaming(node) && self.stream_open {
            return;
        }
        if self.stream_lines.is_some() {
            self.finished_streamed(node, report, requested);
            return;
        }
        // A streamed task that never started (skipped, not run) is reported like any other.
        match self.decide(report, requested) {
            Show::Nothing => {}
            Show::Frame => {
                self.emit(&self.frame(report));
                self.frame_printed(report);
            }
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
    fn after_footer(&mut self, bytes: &[u8]) {
        out(bytes);
    }

    /// The end of the run's output (UI-5, UI-6, UI-7): the live region erased, held failure
    /// frames, the recap and the footer.
    fn finish(&mut self, totals: &Totals<'_>) {
        // The task UI gives the terminal back; what vx said meanwhile prints now, and the
        // recap repeats the failures' last lines (their output is no longer on the screen).
        // Kept open with servers, it holds what follows until `close`.
        match self.tui.take() {
            Some(tui) if !tui.kept() => tui.stop(),
            kept => self.tui = kept,
        }
        super::live::stop();
        self.say_blocked();
        self.say_unmatched();
        self.flush_held();
        out_str(&super::footer::recap(
            &self.style,
            totals,
            &self.failures_above,
            self.github_token(),
            self.ci_log,
        ));
        out_str(&super::footer::footer(&self.style, totals));
    }
    fn waiting(&mut self, notice: Notice) {
        super::say(notice);
    }

    fn region_start(&mut self, log_file: std::path::PathBuf) {
        super::live::start(log_file);
    }

    fn region_active(&self) -> bool {
        super::live::is_active()
    }

    fn region_stop(&mut self) {
        super::live::stop();
    }

    fn region_due(&self) -> bool {
        super::live::due()
    }

    fn draw_region(&mut self, region: &Region) {
        let (width, height) = vx_exec::process_tree::terminal_size().unwrap_or((80, 24));
        super::live::draw(
            &super::live::lines(&self.style, region),
            (usize::from(width), usize::from(height)),
        );
    }

    fn keep_open(&mut self) -> bool {
        match &mut self.tui {
            Some(tui) => {
                tui.keep();
                true
            }
            None => false,
        }
    }

    fn close(&mut self) {
        if let Some(tui) = self.tui.take() {
            tui.stop();
        }
    }

    fn abandon(&mut self, line: &str) {
        super::tui::abandon();
        super::stderr("\n");
        if !line.is_empty() {
            super::stderr(&format!("{line}\n"));
        }
    }
}
