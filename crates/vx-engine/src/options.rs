//! The resolved options of `vx run`: typed values, checked. The binary's `options.rs` makes
//! them from the command line (CLI-3, CLI-12); `RunOptions::default()` is a bare `vx run`.

use std::time::Duration;

use vx_core::graph::ExcludeDependencies;
use vx_core::schedule::ContinueMode;
use vx_core::selection::Filter;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concurrency {
    Count(u32),
    Percent(u32),
}

impl Concurrency {
    /// The slot count for this machine (`N%` of the CPUs, rounded half up, at least 1).
    pub fn resolve(self, cpus: u32) -> u32 {
        match self {
            Concurrency::Count(n) => n,
            Concurrency::Percent(p) => ((u64::from(cpus) * u64::from(p) + 50) / 100).max(1) as u32,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputLogs {
    Full,
    ErrorsOnly,
    HashOnly,
    None,
}

/// `--ui`, or `[workspace] ui`: the interface of a run on a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ui {
    /// Lines: frames, one-liners, the live region.
    #[default]
    Plain,
    /// The full-screen task UI.
    Tui,
}

impl Ui {
    pub fn parse(text: &str) -> Option<Ui> {
        match text {
            "plain" => Some(Ui::Plain),
            "tui" => Some(Ui::Tui),
            _ => None,
        }
    }
}

/// `--log-order` (Turborepo's words): how executing tasks' output reaches the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogOrder {
    /// Each task's output whole, in a frame, when it ends (UI-2, UI-4).
    #[default]
    Grouped,
    /// Every line of every executing task as it comes, prefixed `<task id> │ `.
    Stream,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    DryText,
    DryJson,
    /// DOT to stdout, or to a file.
    Graph(Option<String>),
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub tasks: Vec<String>,
    pub all: bool,
    pub filters: Vec<Filter>,
    pub concurrency: Option<Concurrency>,
    pub continue_mode: ContinueMode,
    pub timeout: Option<Duration>,
    pub exclude: ExcludeDependencies,
    pub output_logs: Option<OutputLogs>,
    /// `--log-order` (default `grouped`).
    pub log_order: LogOrder,
    /// `--ui`; `None`: `[workspace] ui`, else plain.
    pub ui: Option<Ui>,
    pub plan: Option<Plan>,
    /// `--exit-code` with `--dry`: exit 1 when the plan would execute a task, 0 when it would
    /// not (a deploy job's "anything to do?", SEL-9).
    pub exit_code: bool,
    /// `--report junit=PATH`: a JUnit XML report of the run, at this path (relative to the
    /// current directory; UI-17).
    pub report_junit: Option<String>,
    /// `--events=PATH`: the run's events as NDJSON, written by the binary's reporter (relative
    /// to the current directory).
    pub events: Option<std::path::PathBuf>,
    pub forwarded: Vec<String>,
    pub cache: CachePolicy,
    /// `--retry`: extra attempts for tasks without `retries` (EXEC-15).
    pub retry: Option<u32>,
    /// `--cache-dir`, as given (relative to cwd).
    pub cache_dir: Option<String>,
    /// `--affected[=BASE]` (SEL-3, SEL-4).
    pub affected: Option<AffectedBase>,
    /// `--summarize[=PATH]` (UI-14): where the run summary goes.
    pub summarize: Option<Target>,
    /// `--profile[=PATH]` (UI-15): where the Chrome trace goes.
    pub profile: Option<Target>,
    /// `--remote-exec=off` (REM-11): every task runs locally.
    pub remote_exec_off: bool,
    /// `--download` (REM-14): where remotely executed outputs land.
    pub download: Download,
    /// `--frozen` (INIT-5): projects, edges and tasks come from `vx.lock`.
    pub frozen: bool,
    /// `--shard` (SCHED-8).
    pub shard: Option<ShardFlag>,
}

/// `--shard` (SCHED-8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardFlag {
    /// `--shard K/N`: the K-th (1-based) of N parts.
    Part { k: u32, n: u32 },
    /// `--shard auto` (with `--dry`): the predicted wall for N = 1…16.
    Auto,
    /// `--shard ci`: K and N from the CI's parallel-job variables.
    Ci,
}

/// `--download` (REM-14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Download {
    /// Every remotely executed task's outputs are written into the workspace and saved.
    #[default]
    All,
    /// Only the requested tasks' outputs; the others stay on the server as digests.
    Toplevel,
    /// No outputs at all, only logs.
    None,
}

/// Where a file flag writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The bare flag: a file named after the run in `<cache-dir>/runs/`.
    Default,
    /// A path, relative to the current directory.
    Path(String),
}

/// The base of `--affected`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AffectedBase {
    /// Bare `--affected`: `[workspace] affected-base`, else the first usable default (SEL-4).
    Default,
    /// `--affected=<ref>`, checked (SEL-3).
    Ref(String),
    /// `--affected=last-green`: the nearest ancestor of HEAD a green run of the same tasks was
    /// recorded at (SEL-10).
    LastGreen,
}

/// The four cache switches of CLI-14.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachePolicy {
    pub local_read: bool,
    pub local_write: bool,
    /// The remote layer's read switch when the command line set it; `None`: REM-1's default
    /// (reads on).
    pub remote_read: Option<bool>,
    /// The remote layer's write switch when the command line set it; `None`: the `write`
    /// setting decides (REM-1).
    pub remote_write: Option<bool>,
    /// `--cache` named the remote layer (one notice when none is configured).
    pub remote_named: bool,
}

impl Default for CachePolicy {
    fn default() -> CachePolicy {
        CachePolicy {
            local_read: true,
            local_write: true,
            remote_read: None,
            remote_write: None,
            remote_named: false,
        }
    }
}

/// A bare `vx run` with no task named: what the command line's defaults resolve to.
impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            tasks: Vec::new(),
            all: false,
            filters: Vec::new(),
            concurrency: None,
            continue_mode: ContinueMode::DepsOk,
            timeout: None,
            exclude: ExcludeDependencies::None,
            output_logs: None,
            log_order: LogOrder::default(),
            ui: None,
            plan: None,
            exit_code: false,
            report_junit: None,
            events: None,
            forwarded: Vec::new(),
            cache: CachePolicy::default(),
            retry: None,
            cache_dir: None,
            affected: None,
            summarize: None,
            profile: None,
            remote_exec_off: false,
            download: Download::default(),
            frozen: false,
            shard: None,
        }
    }
}

impl RunOptions {
    /// Any of `--all`, `--filter`, `--affected`: the broad flow (UI-3) and a selection scope
    /// (CLI-6).
    pub fn has_selection(&self) -> bool {
        self.all || !self.filters.is_empty() || self.affected.is_some()
    }
}
