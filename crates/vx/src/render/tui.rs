//! The full-screen task UI (`--ui=tui`): the run's tasks on the left with their status and
//! time, the selected task's output on the right, keys to move, search and type into a task.
//!
//! How this works: [`Tui::start`] takes the terminal (alternate screen, raw mode) and starts a
//! thread that reads key events and hands them to the run loop (`Msg::Ui`), which calls
//! [`Tui::key`] and does what it answers (stop the run, write to a task's stdin). The reporter
//! feeds it the run's events ([`Tui::started`], [`Tui::output`], [`Tui::finished`]) and the
//! loop's tick redraws it ([`Tui::draw`], at most once per [`super::live::MIN_INTERVAL`]).
//! While it is on, whatever else vx prints is held ([`super::capture`]) and printed after
//! [`Tui::stop`] gives the terminal back, above the recap and footer. The terminal is given
//! back on every way out: the end of the run, a second Ctrl-C, a panic ([`restore`]).

use std::collections::VecDeque;
use std::io::Stdout;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ratatui::backend::CrosstermBackend;
pub use ratatui::crossterm::event::Event;
use ratatui::crossterm::event::{self, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::crossterm::{execute, terminal};
use ratatui::layout::{Constraint, Direction, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph};
use ratatui::Terminal;
use vx_core::units::format_duration;
use vx_core::TaskId;

use vx_engine::outcome::{Status, TaskReport};

/// Lines of output kept per task (the oldest go first).
const KEPT_LINES: usize = 5000;

/// One task of the run, as the list shows it.
struct Row {
    node: usize,
    id: String,
    /// The task reads what is typed into it (an interactive task, whose stdin vx holds).
    typed_into: bool,
    started: Option<Instant>,
    report: Option<TaskReport>,
    lines: VecDeque<String>,
    /// The line being printed, not yet ended, as bytes: escape sequences are taken out only
    /// once a line is whole, so one split across two reads is still recognised.
    partial: Vec<u8>,
    /// The last byte was a carriage return: a line feed next ends the line (CRLF); anything
    /// else starts the line over (a progress bar redrawn in place).
    after_cr: bool,
}

impl Row {
    /// Bytes of an unfinished line kept: more never fits on the screen.
    const PARTIAL: usize = 4096;

    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.after_cr && b != b'\n' {
                self.partial.clear();
            }
            self.after_cr = false;
            match b {
                b'\n' => {
                    let line = plain(&std::mem::take(&mut self.partial));
                    self.lines.push_back(line);
                    if self.lines.len() > KEPT_LINES {
                        self.lines.pop_front();
                    }
                }
                b'\r' => self.after_cr = true,
                b if self.partial.len() < Self::PARTIAL => self.partial.push(b),
                _ => {}
            }
        }
    }

    /// Where the list puts it: 0 running (a ready persistent task too), 1 failed, 2 done,
    /// 3 waiting.
    fn rank(&self) -> u8 {
        match (&self.report, self.started) {
            (Some(report), _) if report.status == Status::Running => 0,
            (None, Some(_)) => 0,
            (Some(report), _) if matches!(report.status, Status::Failed | Status::Aborted) => 1,
            (Some(_), _) => 2,
            (None, None) => 3,
        }
    }

    /// The unfinished line as shown.
    fn partial_line(&self) -> String {
        plain(&self.partial)
    }

    /// `▸ 1.20s` while running, the one-liner glyph and the duration once ended.
    fn state(&self, now: Instant) -> (String, Color, String) {
        match (&self.report, self.started) {
            (Some(report), _) => {
                let colour = match report.status {
                    Status::Success | Status::Running => Color::Green,
                    Status::Failed | Status::Aborted => Color::Red,
                    Status::Skipped | Status::NotRun => Color::Yellow,
                };
                let time = if report.status == Status::Running {
                    "ready".to_string()
                } else {
                    format_duration(report.duration)
                };
                (report.glyph().to_string(), colour, time)
            }
            (None, Some(started)) => (
                "●".to_string(),
                Color::Cyan,
                format_duration(now.saturating_duration_since(started)),
            ),
            (None, None) => ("·".to_string(), Color::DarkGray, String::new()),
        }
    }
}

/// A line as shown: no escape sequences, tabs as four spaces, no other control characters.
fn plain(bytes: &[u8]) -> String {
    let stripped = strip_ansi_escapes::strip(bytes);
    let mut line = String::new();
    for c in String::from_utf8_lossy(&stripped).chars() {
        match c {
            '\t' => line.push_str("    "),
            c if c.is_control() => {}
            c => line.push(c),
        }
    }
    line
}

pub use vx_engine::report::UiAction as Action;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    Browse,
    /// Typing a search; the list shows the tasks whose id contains it.
    Search,
    /// Keys go to this node's stdin until Ctrl-Z, or until it ends.
    Typing(usize),
}

pub struct Tui {
    terminal: Terminal<CrosstermBackend<Stdout>>,
    rows: Vec<Row>,
    /// Index in `rows` by node.
    by_node: std::collections::HashMap<usize, usize>,
    /// The selected row, by index in `rows`.
    selected: usize,
    /// The selection follows the latest started task until a key moves it.
    follow: bool,
    mode: Mode,
    query: String,
    /// Lines scrolled up from the end of the selected output.
    scroll: usize,
    started: Instant,
    /// The run's graph is done and the UI stays with the persistent tasks it keeps, until
    /// Ctrl-C or `q`.
    kept: bool,
    last_draw: Option<Instant>,
    stop_input: Arc<AtomicBool>,
    input: Option<JoinHandle<()>>,
}

/// Whether the terminal is taken, for [`restore`].
static TAKEN: Mutex<bool> = Mutex::new(false);

impl Tui {
    /// Takes the terminal and starts reading keys into `send`. `tasks`: the run's non-group
    /// tasks by node, and whether each can be typed into.
    pub fn start(
        tasks: Vec<(usize, TaskId, bool)>,
        send: Box<dyn Fn(Event) -> bool + Send>,
    ) -> std::io::Result<Tui> {
        let mut stdout = std::io::stdout();
        terminal::enable_raw_mode()?;
        *TAKEN.lock().unwrap_or_else(|e| e.into_inner()) = true;
        // A terminal that fails half-way cannot be made on demand; the tests set this variable
        // to fail here, after raw mode, and see the terminal given back.
        let entered = match std::env::var_os("VX_TEST_TUI_START_FAILS") {
            Some(_) => Err(std::io::Error::other("VX_TEST_TUI_START_FAILS is set")),
            None => execute!(stdout, terminal::EnterAlternateScreen),
        };
        if let Err(e) = entered {
            restore();
            return Err(e);
        }
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        let terminal = match Terminal::new(CrosstermBackend::new(stdout)) {
            Ok(terminal) => terminal,
            Err(e) => {
                restore();
                return Err(e);
            }
        };
        super::capture(true);
        let rows: Vec<Row> = tasks
            .into_iter()
            .map(|(node, id, typed_into)| Row {
                node,
                id: id.to_string(),
                typed_into,
                started: None,
                report: None,
                lines: VecDeque::new(),
                partial: Vec::new(),
                after_cr: false,
            })
            .collect();
        let by_node = rows.iter().enumerate().map(|(i, r)| (r.node, i)).collect();
        let stop_input = Arc::new(AtomicBool::new(false));
        let stop = stop_input.clone();
        let input = std::thread::Builder::new()
            .name("vx-tui-keys".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if event::poll(Duration::from_millis(50)).unwrap_or(false) {
                        match event::read() {
                            Ok(e) => {
                                if !send(e) {
                                    return;
                                }
                            }
                            Err(_) => return,
                        }
                    }
                }
            })
            .ok();
        Ok(Tui {
            terminal,
            rows,
            by_node,
            selected: 0,
            follow: true,
            mode: Mode::Browse,
            query: String::new(),
            scroll: 0,
            started: Instant::now(),
            kept: false,
            last_draw: None,
            stop_input,
            input,
        })
    }

    /// The graph is done; the UI stays open with the kept persistent tasks.
    pub fn keep(&mut self) {
        self.kept = true;
        self.draw(true);
    }

    pub fn kept(&self) -> bool {
        self.kept
    }

    fn row_mut(&mut self, node: usize) -> Option<&mut Row> {
        let at = *self.by_node.get(&node)?;
        self.rows.get_mut(at)
    }

    pub fn started(&mut self, node: usize) {
        if let Some(row) = self.row_mut(node) {
            row.started = Some(Instant::now());
        }
        if self.follow {
            if let Some(&at) = self.by_node.get(&node) {
                self.selected = at;
                self.scroll = 0;
            }
        }
    }

    pub fn output(&mut self, node: usize, bytes: &[u8]) {
        if let Some(row) = self.row_mut(node) {
            row.push(bytes);
        }
    }

    /// A task's outcome; a task that did not execute (a hit, a failure before it ran) shows its
    /// log.
    pub fn finished(&mut self, node: usize, report: &TaskReport) {
        // A persistent task that became ready still runs, and still reads what is typed.
        if self.mode == Mode::Typing(node) && report.status != Status::Running {
            self.mode = Mode::Browse;
        }
        if let Some(row) = self.row_mut(node) {
            if row.started.is_none() && row.lines.is_empty() {
                row.push(&report.log);
            }
            row.report = Some(report.clone());
        }
    }

    /// The rows the list shows — all, or those matching the search — running first, then
    /// failed, then done, then waiting; in graph order within each.
    fn visible(&self) -> Vec<usize> {
        let mut visible: Vec<usize> = (0..self.rows.len())
            .filter(|&i| self.query.is_empty() || self.rows[i].id.contains(&self.query))
            .collect();
        visible.sort_by_key(|&i| self.rows[i].rank());
        visible
    }

    /// Moves the selection `by` rows among the visible ones.
    fn step(&mut self, by: isize) {
        let visible = self.visible();
        if visible.is_empty() {
            return;
        }
        let at = visible
            .iter()
            .position(|&i| i == self.selected)
            .unwrap_or(0);
        let next = (at as isize + by).clamp(0, visible.len() as isize - 1) as usize;
        self.selected = visible[next];
        self.follow = false;
        self.scroll = 0;
    }

    /// What a key does; the run loop acts on the answer.
    pub fn key(&mut self, event: Event) -> Action {
        let Event::Key(KeyEvent {
            code,
            modifiers,
            kind,
            ..
        }) = event
        else {
            return Action::None;
        };
        if kind == KeyEventKind::Release {
            return Action::None;
        }
        let ctrl = modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && code == KeyCode::Char('c') {
            return Action::Interrupt;
        }
        match self.mode {
            Mode::Typing(node) => {
                if ctrl && code == KeyCode::Char('z') {
                    self.mode = Mode::Browse;
                    return Action::None;
                }
                let bytes = match code {
                    // A pipe has no end-of-file key: Ctrl-D is not sent.
                    KeyCode::Char('d') if ctrl => return Action::None,
                    KeyCode::Char(c) if ctrl && c.is_ascii_alphabetic() => {
                        vec![(c.to_ascii_lowercase() as u8) & 0x1f]
                    }
                    KeyCode::Char(c) => c.to_string().into_bytes(),
                    KeyCode::Enter => b"\n".to_vec(),
                    KeyCode::Tab => b"\t".to_vec(),
                    KeyCode::Backspace => vec![0x7f],
                    _ => return Action::None,
                };
                // What is typed is shown, as a terminal would echo it (control bytes are not).
                if let Some(row) = self.row_mut(node) {
                    row.push(&bytes);
                }
                Action::Stdin(node, bytes)
            }
            Mode::Search => {
                match code {
                    KeyCode::Esc => {
                        self.query.clear();
                        self.mode = Mode::Browse;
                    }
                    KeyCode::Enter => self.mode = Mode::Browse,
                    KeyCode::Backspace => {
                        self.query.pop();
                    }
                    KeyCode::Char(c) => self.query.push(c),
                    _ => {}
                }
                let visible = self.visible();
                if !visible.contains(&self.selected) {
                    if let Some(&first) = visible.first() {
                        self.selected = first;
                        self.follow = false;
                    }
                }
                Action::None
            }
            Mode::Browse => {
                match code {
                    // Stops the run, as Ctrl-C does (with kept servers: closes the UI).
                    KeyCode::Char('q') => return Action::Interrupt,
                    KeyCode::Up | KeyCode::Char('k') => self.step(-1),
                    KeyCode::Down | KeyCode::Char('j') => self.step(1),
                    KeyCode::Home | KeyCode::Char('g') => self.step(isize::MIN / 2),
                    KeyCode::End | KeyCode::Char('G') => self.step(isize::MAX / 2),
                    KeyCode::PageUp | KeyCode::Char('u') => self.scroll += 10,
                    KeyCode::PageDown | KeyCode::Char('d') => {
                        self.scroll = self.scroll.saturating_sub(10);
                    }
                    KeyCode::Char('f') => self.follow = true,
                    KeyCode::Char('/') => self.mode = Mode::Search,
                    KeyCode::Esc => self.query.clear(),
                    KeyCode::Char('i') | KeyCode::Enter
                        if self
                            .rows
                            .get(self.selected)
                            .is_some_and(|r| r.typed_into && r.rank() == 0) =>
                    {
                        // The keys go to this task, whatever starts meanwhile.
                        self.follow = false;
                        self.mode = Mode::Typing(self.rows[self.selected].node);
                    }
                    _ => {}
                }
                Action::None
            }
        }
    }

    /// Redraws, unless it was drawn less than [`super::live::MIN_INTERVAL`] ago (`force`:
    /// anyway, after a key).
    pub fn draw(&mut self, force: bool) {
        if !force
            && self
                .last_draw
                .is_some_and(|at| at.elapsed() < super::live::MIN_INTERVAL)
        {
            return;
        }
        self.last_draw = Some(Instant::now());
        let now = Instant::now();
        let visible = self.visible();
        let items: Vec<ListItem> = visible
            .iter()
            .map(|&i| {
                let row = &self.rows[i];
                let (glyph, colour, time) = row.state(now);
                ListItem::new(Line::from(vec![
                    Span::styled(format!("{glyph} "), Style::default().fg(colour)),
                    Span::raw(row.id.clone()),
                    Span::styled(format!("  {time}"), Style::default().fg(Color::DarkGray)),
                ]))
            })
            .collect();
        let mut list_state = ListState::default();
        list_state.select(visible.iter().position(|&i| i == self.selected));
        let done = self
            .rows
            .iter()
            .filter(|r| {
                r.report
                    .as_ref()
                    .is_some_and(|r| r.status != Status::Running)
            })
            .count();
        let failed = self
            .rows
            .iter()
            .filter(|r| {
                r.report
                    .as_ref()
                    .is_some_and(|r| r.status == Status::Failed)
            })
            .count();
        let selected = self.rows.get(self.selected);
        let title = match (selected, &self.mode) {
            (Some(row), Mode::Typing(_)) => {
                format!(" {} · typing into it (Ctrl-Z stops) ", row.id)
            }
            (Some(row), _) => match &row.report {
                Some(report) => format!(" {} · {} ", row.id, report.header_status()),
                None if row.started.is_some() => format!(" {} · running ", row.id),
                None => format!(" {} · waiting ", row.id),
            },
            (None, _) => " output ".to_string(),
        };
        let scroll = self.scroll;
        let lines: Vec<String> = selected.map_or_else(Vec::new, |row| {
            let mut lines: Vec<String> = row.lines.iter().cloned().collect();
            if !row.partial.is_empty() {
                lines.push(row.partial_line());
            }
            lines
        });
        let help = match self.mode {
            Mode::Search => format!("search: {}▏  Enter keeps it · Esc clears", self.query),
            Mode::Typing(_) => "typing into the task · Ctrl-Z stops · Ctrl-C stops the run".into(),
            Mode::Browse => {
                let mut help = if self.kept {
                    "persistent tasks running · ↑↓ move · / search · q or Ctrl-C stops them"
                        .to_string()
                } else {
                    "↑↓ move · / search · u/d scroll · f follow · q or Ctrl-C stop".to_string()
                };
                if selected.is_some_and(|r| r.typed_into && r.rank() == 0) {
                    help.push_str(" · i type into it");
                }
                help
            }
        };
        let counters = format!(
            "{done}/{} tasks{} · {}",
            self.rows.len(),
            if failed > 0 {
                format!(" · {failed} failed")
            } else {
                String::new()
            },
            format_duration(self.started.elapsed())
        );
        let _ = self.terminal.draw(|frame| {
            let outer = Layout::default()
                .direction(Direction::Vertical)
                .constraints([Constraint::Min(3), Constraint::Length(1)])
                .split(frame.area());
            let widest = visible
                .iter()
                .map(|&i| self.rows[i].id.chars().count())
                .max()
                .unwrap_or(10) as u16;
            let panes = Layout::default()
                .direction(Direction::Horizontal)
                .constraints([
                    // At least 20 columns, at most half the terminal (which may be narrower).
                    Constraint::Length((widest + 14).max(20).min((outer[0].width / 2).max(1))),
                    Constraint::Min(10),
                ])
                .split(outer[0]);
            let list = List::new(items)
                .block(Block::default().borders(Borders::ALL).title(" tasks "))
                .highlight_style(Style::default().add_modifier(Modifier::REVERSED));
            frame.render_stateful_widget(list, panes[0], &mut list_state);
            let height = panes[1].height.saturating_sub(2) as usize;
            let end = lines.len().saturating_sub(scroll);
            let start = end.saturating_sub(height);
            let text: Vec<Line> = lines[start..end]
                .iter()
                .map(|l| Line::raw(l.clone()))
                .collect();
            let output =
                Paragraph::new(text).block(Block::default().borders(Borders::ALL).title(title));
            frame.render_widget(output, panes[1]);
            let status = Line::from(vec![
                Span::styled(counters, Style::default().add_modifier(Modifier::BOLD)),
                Span::raw("  "),
                Span::styled(help, Style::default().fg(Color::DarkGray)),
            ]);
            frame.render_widget(Paragraph::new(status), outer[1]);
        });
    }

    /// Gives the terminal back and prints what was held while the UI was on.
    pub fn stop(mut self) {
        self.stop_input.store(true, Ordering::Relaxed);
        if let Some(input) = self.input.take() {
            let _ = input.join();
        }
        let _ = self.terminal.show_cursor();
        restore();
        super::capture(false);
    }
}

/// Gives the terminal back and prints what was held, when vx is about to exit without the end
/// of the run (a second Ctrl-C).
pub fn abandon() {
    restore();
    super::capture(false);
}

/// Gives the terminal back (main screen, cooked mode), once; safe to call from anywhere and
/// more than once.
pub fn restore() {
    let mut taken = TAKEN.lock().unwrap_or_else(|e| e.into_inner());
    if *taken {
        let _ = terminal::disable_raw_mode();
        let _ = execute!(
            std::io::stdout(),
            terminal::LeaveAlternateScreen,
            ratatui::crossterm::cursor::Show
        );
        *taken = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(started: bool, status: Option<Status>) -> Row {
        Row {
            node: 0,
            id: String::new(),
            typed_into: false,
            started: started.then(Instant::now),
            report: status.map(|s| TaskReport::not_started(TaskId::new("p", "t"), s, None)),
            lines: VecDeque::new(),
            partial: Vec::new(),
            after_cr: false,
        }
    }

    #[test]
    fn the_list_ranks_running_then_failed_then_done_then_waiting() {
        let ranks: Vec<u8> = [
            row(true, None),
            row(true, Some(Status::Running)),
            row(true, Some(Status::Failed)),
            row(false, Some(Status::Aborted)),
            row(true, Some(Status::Success)),
            row(false, Some(Status::Skipped)),
            row(false, None),
        ]
        .iter()
        .map(Row::rank)
        .collect();
        assert_eq!(ranks, [0, 0, 1, 1, 2, 2, 3]);
    }
}
