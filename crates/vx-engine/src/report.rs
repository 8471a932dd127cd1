//! How the run engine speaks to a person (ARCH-1): the [`Reporter`] trait, which the engine
//! defines and `render/` implements for a terminal, and the values it speaks in — the
//! [`Flow`] of a run's output and the [`Totals`] its footer sums up. The loop calls a reporter
//! at each event of a task (started, output, finished), for every notice, and once at the end.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::outcome::{Notice, TaskReport};
use vx_core::TaskId;

/// How output is shaped (glossary: flow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Focused,
    Broad,
    Ci,
}

impl Flow {
    /// How a run's output flows (UI-3): CI (`CI` set in `host_env`), a selection of tasks
    /// (`selection`: a filter or `--affected` chose them), or focused on the requested.
    pub fn of(host_env: &BTreeMap<String, String>, selection: bool) -> Flow {
        if host_env
            .get("CI")
            .is_some_and(|v| crate::host::env::truthy(v))
        {
            Flow::Ci
        } else if selection {
            Flow::Broad
        } else {
            Flow::Focused
        }
    }
}

/// What the footer and the recap sum up (UI-5, UI-7).
pub struct Totals<'a> {
    /// Borrowed from the run (at tens of thousands of tasks a copy was megabytes at the peak).
    pub reports: &'a [&'a TaskReport],
    pub projects_in_run: usize,
    pub projects_in_workspace: usize,
    pub workers: u32,
    /// `max-in-flight` of the remote executor, when a task ran remotely (REM-11).
    pub remote_in_flight: Option<u32>,
    pub wall: Duration,
    /// The signal that stopped the run, if one did: the footer then says the run was
    /// interrupted and counts what never started.
    pub interrupted: Option<i32>,
    /// What the command still owes: the tasks that failed, those they blocked, and those a
    /// signal stopped or kept from starting (see `Run::still_owed`).
    pub rerun: Vec<String>,
}

/// How often the run loop redraws the live region or the task UI while nothing else happens
/// (the elapsed times tick).
pub const TICK: Duration = Duration::from_millis(100);

/// Busy slots the live region shows at most, each with its task's latest line.
pub const BUSY_ROWS: usize = 10;

/// What the live status region shows (UI-6), as data: the reporter lays it out.
pub struct Region {
    /// Ready persistent tasks, pinned on top.
    pub servers: Vec<TaskId>,
    /// The busy slots, longest-running first: at most [`BUSY_ROWS`], the rest counted in
    /// `busy_more` (a task's latest line is made only for the rows shown).
    pub busy: Vec<Busy>,
    pub busy_more: usize,
    /// Entries downloading from the remote cache, longest first (at most [`BUSY_ROWS`]).
    pub downloads: Vec<Download>,
    /// Local slots free.
    pub idle: usize,
    /// Tasks ready to start, and of those, how many wait only for memory (SCHED-4).
    pub ready: usize,
    pub held: usize,
    /// Tasks waiting for their dependencies.
    pub on_deps: usize,
    pub done: usize,
    pub total: usize,
    pub failed: usize,
    pub cached: usize,
    pub elapsed: Duration,
}

/// An entry downloading from the remote cache: its task, the bytes so far, for how long.
pub struct Download {
    pub id: TaskId,
    pub bytes: u64,
    pub elapsed: Duration,
}

/// A busy slot of the region: how long its task has run, the task, whether it runs remotely,
/// and its latest output line.
pub struct Busy {
    pub elapsed: Duration,
    pub id: TaskId,
    pub remote: bool,
    pub last_line: String,
}

/// An input event for the reporter's own interface (a key in the task UI), read on the
/// reporter's thread and handed back to it on the loop's: the engine never looks inside.
pub type UiInput = Box<dyn std::any::Any + Send>;

/// What the run loop does after a key in the reporter's interface.
#[derive(Debug, PartialEq, Eq)]
pub enum UiAction {
    None,
    /// Ctrl-C: stop the run as a SIGINT would.
    Interrupt,
    /// Bytes typed into the task at this node.
    Stdin(usize, Vec<u8>),
}

/// Where the persistent tasks `vx watch` keeps between cycles print: from their own thread,
/// between and after the cycles, so not through a cycle's [`Reporter`].
pub trait Console: Send + Sync {
    /// Task output, as the terminal gets it.
    fn out(&self, bytes: &[u8]);
    /// A line of vx's own, on stderr.
    fn line(&self, text: &str);
    fn notice(&self, notice: Notice);
}

/// The only way the run loop speaks to a person. Nodes are the plan's node indices;
/// `requested` says whether a node is shown as requested (GRAPH-7).
pub trait Reporter {
    /// The flow the output follows.
    fn flow(&self) -> Flow;
    /// Whether output is coloured (UI-10): when not, the loop strips escapes from task output.
    fn colour(&self) -> bool;
    /// A notice from the run (ERR-1).
    fn notice(&mut self, notice: Notice);
    /// A line said while something waits (queued uploads at the end): printed at once, never
    /// held, and not counted as a notice.
    fn waiting(&mut self, notice: Notice);
    /// UI-4: of these requested commands, the one whose frame streams live, if the flow does so.
    fn choose_streaming(&mut self, requested_commands: &[usize]);
    /// Whether this node's frame streams live.
    fn is_streaming(&self, node: usize) -> bool;
    /// Whether a hit of this node shows its stored log (the loop reads it only then).
    fn shows_hit_log(&self, requested: bool) -> bool;
    fn started(&mut self, node: usize, report: &TaskReport);
    /// Output of a running task, as it comes.
    fn stream(&mut self, node: usize, bytes: &[u8]);
    fn finished(&mut self, node: usize, report: &TaskReport, requested: bool);
    /// Output of a task kept running after the footer, already prefixed.
    fn after_footer(&mut self, bytes: &[u8]);
    /// The end of the run's output: held frames, the recap and the footer.
    fn finish(&mut self, totals: &Totals<'_>);
    /// Whether what was printed for these reports can be printed again from the reports of
    /// up-to-date hits alone (their ids, keys, saved times and logs) followed by the footer,
    /// with no notice: the output a snapshot replays (`snapshot.rs`).
    fn output_replayable(&self, reports: &[(&TaskReport, bool)]) -> bool;
    /// Takes the terminal for the task UI: the tasks (node, id, typed into), where its inputs
    /// go, and where vx's own diagnostics go meanwhile. False when it cannot; output stays
    /// plain.
    fn start_tui(
        &mut self,
        tasks: Vec<(usize, TaskId, bool)>,
        send: Box<dyn Fn(UiInput) -> bool + Send>,
        log_file: PathBuf,
    ) -> bool;
    fn has_tui(&self) -> bool;
    /// Redraws the task UI if it is due.
    fn tick(&mut self);
    /// An input the task UI read: what the run should do.
    fn key(&mut self, input: UiInput) -> UiAction;
    /// Turns the live region on (UI-6); vx's own diagnostics go to `log_file` until it stops.
    fn region_start(&mut self, log_file: PathBuf);
    fn region_active(&self) -> bool;
    /// Erases the region for good.
    fn region_stop(&mut self);
    /// Whether a drawing now would show (the loop gathers the region's data only then).
    fn region_due(&self) -> bool;
    fn draw_region(&mut self, region: &Region);
    /// A second signal: the terminal is given back at once and `line` said, before vx exits.
    fn abandon(&mut self, line: &str);
    /// Persistent tasks are kept after the graph: whether the task UI stays open with them
    /// (until Ctrl-C or `q`), their output going to it and the recap and footer held until
    /// [`Reporter::close`]. Asked before [`Reporter::finish`].
    fn keep_open(&mut self) -> bool {
        false
    }
    /// The kept tasks ended: the task UI gives the terminal back and what it held is printed.
    fn close(&mut self) {}
}
