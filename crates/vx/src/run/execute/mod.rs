//! The orchestration loop: the single owner of run state (ARCH-1).
//!
//! How this works: the loop asks the scheduler for ready tasks while an exec slot is free and
//! spawns each through the supervisor, whose per-task threads send [`Msg`]s back on one
//! channel; signals to vx arrive on the same channel. Every message is handled here, in order:
//! output is masked (EXEC-5), stripped of escapes when vx does not colour (UI-10), appended to
//! the task's log and, for the streamed frame, printed live; a completion becomes an outcome,
//! is reported, and releases or skips dependants.
//!
//! Persistent tasks (EXEC-13) are ready at spawn, or, with `ready-when`, when a line of their
//! output matches ([`crate::run::execute::ready`]); until then they hold their exec slot. Ready, they count as
//! a success with the time to ready as duration, free the slot and release their dependants
//! ([`Run::ready`]). The loop has timers only for them: while one waits, `recv` is bounded by
//! the earliest of the not-ready notes (`VX_READY_NOTICE`) and readiness timeouts, and a task
//! whose timeout passes is stopped and reported `not ready: timed out after …`. Persistent tasks
//! are stopped at the end of the graph unless they are kept alive after the footer.
//!
//! The `impl Run` is split by concern: this file has the loop, spawning, output, notes,
//! completions and signals; `servers.rs` persistent tasks (readiness, keep-alive); `lanes.rs`
//! cache hits and the restore and save lanes; `end.rs` the end of the graph (footer, history).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::{Receiver, Sender};
use vx_core::config::Persistent;
use vx_core::env::secret_values;
use vx_core::mask::Masker;
use vx_core::schedule::{Finish, HistoryPolicy, Interactive, NodeState, Scheduler};
use vx_core::script::{script, with_args};
use vx_core::units::format_duration;
use vx_core::TaskId;
use vx_exec::{
    Attempt, Completion, ExecEvent, Executor, ExitReason, Local, RunningTask, StdinMode, Stream,
};

use vx_store::log::{LogBuf, LogStream};

use super::cache::{Decision, Done, RestoreJob, RunCache, SaveJob};
use super::outcome::CacheKind;
use super::outcome::{AttemptSpan, NotReady, Status, TaskReport};
use super::plan::nodes::{environment, kind_of, task, Kind};
use super::plan::Plan;
use super::record::{Recorder, TelemetrySink};
use crate::options::RunOptions;
use crate::run::execute::explain::explain;
use crate::run::execute::ready::Waiting;
use crate::run::execute::stripper::Stripper;
use crate::run::outcome::Notice;
use crate::run::record::profile::Phase;
use crate::run::report::{Flow, Reporter, UiAction, UiInput};
use crate::{exit, render};
use lane::Lane;

mod admission;
mod end;
pub mod explain;
mod kept;
pub mod lane;
mod lanes;
pub mod ready;
mod region;
pub mod remote;
mod sandboxed;
mod servers;
pub mod stripper;

use admission::{estimate, HeldForMemory};
pub use kept::Servers;
use kept::{Identity, Route};

/// Everything the loop needs from outside the plan.
pub struct Context {
    /// Where vx was started: `--summarize=PATH` and `--profile=PATH` are relative to it.
    pub cwd: PathBuf,
    /// The cache directory (STORE-2): where the summary and trace go by default.
    pub cache_dir: PathBuf,
    /// When the run started (before planning): the trace's origin (UI-15).
    pub origin: Instant,
    /// vx's phases before the run loop (planning, opening the cache), for the trace.
    pub phases: Vec<Phase>,
    pub host_env: BTreeMap<String, String>,
    /// `sh` resolved once against vx's own PATH (EXEC-1).
    pub sh: Option<PathBuf>,
    pub kill_grace: Duration,
    /// `VX_TASK_TIMEOUT`.
    pub env_timeout: Option<Duration>,
    /// `VX_READY_NOTICE`: when a persistent task still not ready gets its note (EXEC-13).
    pub ready_notice: Duration,
    pub slots: u32,
    /// SCHED-4: `VX_MEMORY_BUDGET`, or measure the budget at run start (only when a task in
    /// the run has a recorded peak).
    pub memory_budget: crate::run::host::memory::Budget,
    /// The workspace run lock, released when the graph is finished (STORE-14).
    pub lock: Option<vx_store::RunLock>,
    /// No task may own the terminal: vx must hear its Ctrl-C (a cycle of `vx watch`).
    pub keeps_terminal: bool,
    /// Where this command's snapshot goes, when it may be replayed (`run/snapshot.rs`).
    pub snapshot: Option<crate::run::snapshot::Request>,
    /// The nodes placed on the remote executor (REM-11, `plan::placement`).
    pub remote: Vec<usize>,
}

/// What the save lane's packing gave.
pub type PackResult = Result<vx_store::artifact::Packed, vx_store::artifact::PackError>;

pub enum Msg {
    Exec(usize, ExecEvent),
    Signal(i32),
    /// The save lane packed a task's artifact (STORE-7).
    Packed(usize, Box<SaveJob>, Box<PackResult>),
    /// The restore lane wrote an entry back, or could not (SCHED-3).
    Restored(usize, Box<RestoreJob>, Box<RestoreResult>),
    /// A sandboxed task's proxy refused a request to this `host:port` (SBX-6, SBX-7).
    NetRefused(usize, String),
    /// The background download of a task's remote entry ended, arrived or not (REM-6).
    Prefetched(usize),
    /// A key or a resize in the task UI (`--ui=tui`).
    Ui(UiInput),
}

/// Signals reach the run loop as messages (the signal thread knows nothing of [`Msg`]).
impl crate::run::host::signals::SignalSink for crossbeam_channel::Sender<Msg> {
    fn send(&self, signal: i32) {
        let _ = crossbeam_channel::Sender::send(self, Msg::Signal(signal));
    }

    fn try_send(&self, signal: i32) {
        let _ = crossbeam_channel::Sender::try_send(self, Msg::Signal(signal));
    }
}

/// What a restore on the restore lane gave.
pub type RestoreResult = Result<vx_store::artifact::Restored, vx_store::artifact::RestoreError>;

/// A task that has a process.
struct Live {
    handle: Box<dyn RunningTask>,
    /// Where its events go (a persistent task's move to `vx watch` between cycles).
    route: Route,
    /// For a persistent task in a cycle of `vx watch`: what its process was started as.
    identity: Option<Identity>,
    started: Instant,
    kind: Kind,
    /// What the frame shows: both streams as printed, bounded like the stored log (STORE-6:
    /// the first and last 8 MiB, the cut named), while every byte still streams live.
    display: LogBuf,
    /// The last byte shown, so notes start on a line of their own.
    last_byte: Option<u8>,
    maskers: [Masker; 2],
    strippers: Option<[Stripper; 2]>,
    command: String,
    command_line: String,
    dir: PathBuf,
    path_var: String,
    /// Ready and not yet ended (persistent tasks only).
    ready: bool,
    /// A persistent task waiting for its `ready-when` line: the matchers and the timers.
    waiting: Option<Waiting>,
    /// The timeout expired (for a persistent task: the wait for readiness).
    timed_out: bool,
    /// A server stopped before it was ready because no task needs it any more (EXEC-13).
    unneeded: bool,
    /// The resolved timeout (EXEC-8 precedence), for the timeout note; for a persistent task
    /// it bounds the wait for readiness, which the loop times itself.
    timeout: Option<Duration>,
    /// Output printed with an `<id> │ ` prefix after the footer (keep-alive).
    prefix_at_line_start: bool,
    /// Its latest line, for its row in the live region (UI-6).
    last_line: crate::render::live::LastLine,
    /// The log as stored in an artifact: both streams and notes as records (STORE-6).
    records: LogBuf,
    /// How a successful result is reported and whether it may be saved.
    cache_kind: CacheKind,
    writes: bool,
    unsaved_reason: &'static str,
    started_wall: SystemTime,
    /// What started the attempt, for the next one (EXEC-15).
    job: Attempt,
    /// This attempt's number (from 1) and how many the task may make.
    attempt: u32,
    attempts: u32,
    /// The durations of earlier attempts: a task's duration is their sum.
    earlier: Duration,
    /// When this attempt started, and the spans of the earlier ones (UI-15).
    attempt_started: Instant,
    spans: Vec<AttemptSpan>,
    /// A sandboxed task's view, `TMPDIR` and reported accesses (SBX-7).
    sandbox: Option<sandboxed::LiveSandbox>,
    /// The remote result was served from the server's action cache (REM-13).
    remote_cached: bool,
}

impl Live {
    /// The attempt runs on the remote executor (REM-11).
    fn remote(&self) -> bool {
        self.job.remote.is_some()
    }
}

pub struct Run<'p> {
    plan: &'p Plan,
    options: &'p RunOptions,
    ctx: Context,
    reporter: Box<dyn Reporter>,
    scheduler: Scheduler,
    /// Interactive tasks that own the terminal in this run (EXEC-14): vx is on one.
    interactive: BTreeSet<usize>,
    /// `--ui=tui` on a terminal: the task UI holds it, and interactive tasks read what is typed
    /// into them there (`typed_into`: a stdin pipe vx writes to).
    tui: bool,
    typed_into: BTreeSet<usize>,
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
    /// Where attempts run (ARCH-2): the local process supervisor, behind the remote executor
    /// when tasks are placed remotely; a fake in tests.
    executor: Box<dyn Executor>,
    live: BTreeMap<usize, Live>,
    reports: BTreeMap<usize, TaskReport>,
    running_slots: u32,
    stopping: Option<i32>,
    started_at: Instant,
    started_wall: SystemTime,
    warned_short_secrets: bool,
    keep_alive: bool,
    /// Persistent tasks that ended after being ready: (node, exit code).
    ended_persistent: Vec<(usize, i32)>,
    /// Handles of persistent tasks whose leader exited by itself: what they left in their
    /// session (a daemon) is stopped with the other persistent tasks (EXEC-13).
    exited_servers: Vec<Box<dyn RunningTask>>,
    /// The cache side of the run: keys, lookups, restores and saves.
    cache: RunCache<'p>,
    /// What the run writes down for later: history, fingerprints, retention.
    recorder: Recorder,
    /// Tasks that ran although an upstream failed (`--continue=always`), and everything that
    /// folds them: never saved (EXEC-17).
    tainted: BTreeSet<usize>,
    /// The save lane (STORE-7): artifacts packed on 2 × concurrency threads. A task's
    /// dependants start when its save is done.
    saves: Lane<Box<SaveJob>, Msg>,
    /// The restore lane (SCHED-3): hits written back on 2 × concurrency threads.
    restores: Lane<Box<RestoreJob>, Msg>,
    /// Persistent tasks held back while the restore lane serves their dependants (EXEC-13).
    servers_held: Vec<usize>,
    /// Tasks held out of the schedule while their remote entry downloads (REM-6).
    prefetching: BTreeSet<usize>,
    /// SCHED-4: how long each task waited only for memory.
    held: HeldForMemory,
    /// This run's id (UUIDv7): history, the summary and the trace share it.
    run_id: String,
    /// The summary written before the footer, rewritten when a kept task ends (UI-14).
    summary: Option<crate::run::record::summary::SummaryFile>,
    /// With `--profile`: vx's phases, and each task's key derivation and cache probe (UI-15).
    phases: Option<Vec<Phase>>,
    /// SBX-1: whether tasks can be sandboxed here, probed at the first sandboxed execution.
    sandbox_host: sandboxed::SandboxHost,
    /// This run is a cycle of `vx watch`: the persistent tasks kept between cycles.
    watch: Option<&'p mut Servers>,
    /// Telemetry sinks beside history, the summary and the trace (ARCH-2), given by the caller.
    sinks: Vec<Box<dyn TelemetrySink + 'p>>,
    /// Remote attempts in flight, bounded by `max-in-flight` (REM-11).
    remote_in_flight: u32,
    /// Tasks whose outputs the remote executor kept: dependants take them by digest, or fetch
    /// them first when they run locally (REM-14).
    kept_remotely: BTreeSet<usize>,
    /// Remote tasks whose server could not be used, waiting for a local slot.
    local_again: Vec<usize>,
    /// The remote executor's server can still be used for new attempts.
    remote_usable: bool,
}

impl<'p> Run<'p> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        plan: &'p Plan,
        options: &'p RunOptions,
        ctx: Context,
        mut reporter: Box<dyn Reporter>,
        tx: Sender<Msg>,
        rx: Receiver<Msg>,
        executor: Box<dyn Executor>,
        mut cache: RunCache<'p>,
        recorder: Recorder,
    ) -> Run<'p> {
        // `--summarize` lists every task's inputs, hits' too.
        cache.keys.keep_inputs = options.summarize.is_some();
        // A run that may write a snapshot records the paths its hits' keys folded.
        if ctx.snapshot.is_some() {
            cache.keys.folded = Some(Vec::new());
        }
        // `--ui=tui` (or `[workspace] ui`) on a terminal, outside CI: the task UI holds it.
        let ui = options
            .ui
            .or_else(|| {
                plan.workspace
                    .settings
                    .ui
                    .as_deref()
                    .and_then(crate::options::Ui::parse)
            })
            .unwrap_or_default();
        let tui = ui == crate::options::Ui::Tui
            && reporter.flow() != Flow::Ci
            && ctx.host_env.get("TERM").is_none_or(|t| t != "dumb")
            && vx_exec::process_tree::stdout_is_foreground_terminal();
        let typed_into: BTreeSet<usize> = (0..plan.graph.nodes.len())
            .filter(|&i| tui && task(plan, i).interactive == Some(true))
            .filter(|&i| kind_of(task(plan, i)) != Kind::Group)
            .collect();
        // EXEC-14: on a terminal an interactive task owns it; off one it is an ordinary task.
        // Under the task UI it is typed into there.
        let on_terminal = !tui && !ctx.keeps_terminal && vx_exec::process_tree::owns_terminal();
        let owns_terminal = |i: usize| on_terminal && task(plan, i).interactive == Some(true);
        // An interactive task on a terminal is never framed: it writes to the terminal itself.
        let requested_commands: Vec<usize> = plan
            .shown_as_requested
            .iter()
            .copied()
            .filter(|&i| kind_of(task(plan, i)) != Kind::Group && !owns_terminal(i))
            .collect();
        // A persistent task never streams a frame: its output goes after the footer, prefixed.
        let persistent_requested = requested_commands
            .iter()
            .any(|&i| kind_of(task(plan, i)) == Kind::Persistent);
        if !persistent_requested {
            reporter.choose_streaming(&requested_commands);
        }
        let lane_width = 2 * ctx.slots as usize;
        let estimates: Vec<_> = plan
            .graph
            .nodes
            .iter()
            .enumerate()
            .map(|(i, node)| estimate(recorder.recent(&node.id), kind_of(task(plan, i))))
            .collect();
        // Nothing reserves memory without a recorded peak: no need to measure the budget.
        let budget = if estimates.iter().any(|e| e.peak_rss_bytes.is_some()) {
            ctx.memory_budget.resolve().0
        } else {
            None
        };
        let mut scheduler = Scheduler::new(
            &plan.graph,
            options.continue_mode,
            Box::new(HistoryPolicy::new(estimates, budget)),
        );
        let interactive: BTreeSet<usize> = (0..plan.graph.nodes.len())
            .filter(|&i| owns_terminal(i) && kind_of(task(plan, i)) != Kind::Group)
            .collect();
        for &i in &interactive {
            // SCHED-5: alone, and an interactive persistent task last.
            scheduler.set_interactive(
                i,
                if kind_of(task(plan, i)) == Kind::Persistent {
                    Interactive::Persistent
                } else {
                    Interactive::OneShot
                },
            );
        }
        if !interactive.is_empty() {
            // While an interactive task holds the terminal's foreground vx is a background
            // group; with `stty tostop` a write of vx's (the footer, a kept server's line)
            // would stop it with SIGTTOU. Children get default dispositions back (EXEC-1).
            vx_exec::process_tree::ignore_sigttou();
        }
        let phases = options.profile.is_some().then(|| ctx.phases.clone());
        for &i in &ctx.remote {
            scheduler.set_remote(i, true);
        }
        Run {
            scheduler,
            interactive,
            tui,
            typed_into,
            plan,
            options,
            ctx,
            reporter,
            tx,
            rx,
            executor,
            live: BTreeMap::new(),
            reports: BTreeMap::new(),
            running_slots: 0,
            stopping: None,
            started_at: Instant::now(),
            started_wall: SystemTime::now(),
            warned_short_secrets: false,
            keep_alive: false,
            ended_persistent: Vec::new(),
            exited_servers: Vec::new(),
            cache,
            recorder,
            tainted: BTreeSet::new(),
            saves: Lane::new("save", lane_width),
            restores: Lane::new("restore", lane_width),
            servers_held: Vec::new(),
            prefetching: BTreeSet::new(),
            held: HeldForMemory::default(),
            run_id: crate::ids::run_id(),
            summary: None,
            phases,
            sandbox_host: None,
            watch: None,
            sinks: Vec::new(),
            remote_in_flight: 0,
            kept_remotely: BTreeSet::new(),
            local_again: Vec::new(),
            remote_usable: true,
        }
    }

    /// This run is a cycle of `vx watch`: persistent tasks are kept in `servers` between
    /// cycles, and a second Ctrl-C ends the watch with 0 (WATCH-1).
    /// Hands the run record to `sink` too when the run ends (ARCH-2): the seam an OTLP exporter
    /// (ARCH-4) plugs into; today only the tests' collecting sink does.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn with_sink(mut self, sink: Box<dyn TelemetrySink + 'p>) -> Run<'p> {
        self.sinks.push(sink);
        self
    }

    pub fn watching(mut self, servers: &'p mut Servers) -> Run<'p> {
        servers.hold();
        self.watch = Some(servers);
        self
    }

    /// Runs the graph to the end, prints the footer, keeps requested servers alive, and
    /// returns the exit code.
    pub fn execute(&mut self) -> i32 {
        if self.tui {
            self.start_tui();
        }
        if !self.reporter.has_tui() && self.wants_region() {
            crate::render::live::start(self.ctx.cache_dir.join("logs").join("vx.log"));
        }
        let ahead = Instant::now();
        self.restore_ahead();
        self.phase("read ahead, keys and hits of stable tasks", ahead);
        loop {
            if self.stopping.is_none() {
                self.dispatch();
                self.stop_unneeded_servers();
            }
            let one_shots_running = self.live.values().any(|l| l.kind == Kind::OneShot)
                || self.saves.busy()
                || self.restores.busy()
                // A stopping run does not wait for downloads (REM-6).
                || (!self.prefetching.is_empty() && self.stopping.is_none());
            if !one_shots_running && (self.scheduler.is_done() || self.stopping.is_some()) {
                break;
            }
            match self.next_message() {
                Some(msg) => self.handle(msg),
                None => break,
            }
        }
        self.end_of_graph()
    }

    /// Closes the index and forgets the rest without dropping it: the process exits next, and
    /// freeing the tables of a large run one by one took a tenth of a warm run's time. Task
    /// handles are all finished by now (their guard records written); nothing else here owns
    /// anything outside vx's memory.
    pub fn end(mut self) {
        self.cache.close();
        std::mem::forget(self);
    }

    /// Closes the index and drops everything: one cycle of `vx watch`, with more to come.
    pub fn close(mut self) {
        self.cache.close();
    }

    fn dispatch(&mut self) {
        while self.running_slots < self.ctx.slots {
            if !self.local_again.is_empty() && !self.scheduler.holds_terminal() {
                let i = self.local_again.remove(0);
                self.run_locally_instead(i);
                continue;
            }
            let Some(i) = self.scheduler.next_ready() else {
                break;
            };
            self.start(i);
        }
        // REM-11: remote tasks take no local slot; `max-in-flight` bounds them.
        while let Some(max) = self
            .executor
            .off_machine_limit()
            .filter(|_| self.remote_usable)
        {
            if self.remote_in_flight >= max {
                break;
            }
            let Some(i) = self.scheduler.next_ready_remote() else {
                break;
            };
            self.start(i);
        }
        // SCHED-4: with a slot free, what the policy passed over waits only for memory.
        let held = if self.running_slots < self.ctx.slots {
            self.scheduler.held()
        } else {
            &[]
        };
        self.held.update(held, Instant::now());
    }

    fn start(&mut self, i: usize) {
        self.held.started(i, Instant::now());
        let config = task(self.plan, i);
        let kind = kind_of(config);
        if kind == Kind::Group {
            let failed = self
                .scheduler
                .deps(i)
                .iter()
                .any(|&d| matches!(self.scheduler.state(d), NodeState::Failed));
            let finish = if failed {
                Finish::Failed
            } else {
                Finish::Success
            };
            let skipped = self.scheduler.finish(i, finish);
            self.report_skipped(&skipped);
            return;
        }
        self.region_requested_task_started(i);
        let node = &self.plan.graph.nodes[i];
        let id = node.id.clone();
        let upstream_bad = node.deps.iter().any(|&d| {
            self.tainted.contains(&d) || matches!(self.scheduler.state(d), NodeState::Failed)
        });
        if upstream_bad {
            self.tainted.insert(i);
        }
        let saveable = !node.folds_dropped && !upstream_bad;
        let unsaved_reason = if node.folds_dropped {
            "excluded-dependency"
        } else if upstream_bad {
            "tainted"
        } else {
            "writes-off"
        };
        let (cache_kind, writes) = if kind == Kind::OneShot {
            let needs_log = self.reporter.shows_hit_log(self.is_shown(i));
            let probing = Instant::now();
            let decision = self.cache.before(&id, saveable, needs_log);
            self.relay_notices();
            if self.phases.is_some() {
                self.phase(&format!("key and cache probe: {id}"), probing);
            }
            match decision {
                Decision::Hit {
                    kind,
                    records,
                    short_key,
                    stored,
                    restore_reason,
                } => {
                    self.hit(i, kind, records, short_key, stored, restore_reason);
                    return;
                }
                Decision::Fail(line) => {
                    self.cache.withhold(&id);
                    self.fail_before_start(i, &line);
                    return;
                }
                Decision::Execute { cached, writes } => (
                    if cached && (writes || self.options.cache.local_read) {
                        CacheKind::Miss
                    } else {
                        CacheKind::NoCache
                    },
                    writes,
                ),
            }
        } else {
            (CacheKind::NoCache, false)
        };
        let remote = self.scheduler.is_remote(i);
        if !remote {
            if let Err(line) = self.download_upstreams(i) {
                self.cache.withhold(&id);
                self.fail_before_start(i, &line);
                return;
            }
        }
        let node = &self.plan.graph.nodes[i];
        let project = &self.plan.workspace.projects[node.project];
        let dir = self.plan.workspace.root.join(&project.dir);
        let command = config.command.clone().unwrap_or_default();
        let args: &[String] = if node.requested {
            &self.options.forwarded
        } else {
            &[]
        };
        let mut env = environment(self.plan, &self.ctx.host_env, i);
        let (secrets, too_short) = secret_values(&self.ctx.host_env, config.env.as_deref());
        if !too_short.is_empty() && !self.warned_short_secrets {
            for name in &too_short {
                self.reporter.notice(Notice::warning(format!(
                    "`{name}` is listed in `env.secret` but its value is shorter than 6 characters; it is not masked"
                )));
            }
            self.warned_short_secrets = true;
        }
        // The remote cache's token and signing key are masked like `env.secret` values.
        let mut secrets = secrets;
        secrets.extend(crate::run::cache::remote::secret_values(
            self.plan.workspace.settings.remote_cache.as_ref(),
            &self.ctx.host_env,
        ));
        secrets.extend(vx_reapi::token_values(
            self.plan.workspace.settings.remote_execution.as_ref(),
            &self.ctx.host_env,
        ));
        let masker = Masker::new(&secrets);
        let command_line = masker.mask_str(&with_args(&command, args));
        let route = Route::new(self.tx.clone(), i);
        // In a cycle of `vx watch`, the server started in an earlier cycle may be kept.
        let identity = (kind == Kind::Persistent && self.watch.is_some())
            .then(|| Identity::of(config, &script(&command, args), &dir.to_string_lossy()));
        if let Some(identity) = &identity {
            if self.keep_server(i, identity) {
                return;
            }
        }
        let ready_when = match &config.persistent {
            Some(Persistent::Ready(ready)) => Some(ready.ready_when.clone()),
            _ => None,
        };
        // EXEC-8: for a persistent task the timeout bounds only the wait for readiness, which
        // the loop times (not the supervisor); one ready at spawn has nothing to bound.
        let timeout = if kind == Kind::Persistent && ready_when.is_none() {
            None
        } else {
            config
                .timeout
                .or(self.options.timeout)
                .or(self.ctx.env_timeout)
                .or(self.plan.workspace.settings.timeout)
        };
        // A local `sandbox` table does not apply remotely (REM-11).
        let (launch, sandbox) = match config.sandbox.as_ref().filter(|_| !remote) {
            None => (None, None),
            Some(table) => match self.sandbox_task(i, table, &mut env, &route) {
                Ok((launch, sandbox)) => (Some(launch), Some(sandbox)),
                Err(line) => {
                    self.cache.withhold(&id);
                    self.fail_before_start(i, &line);
                    return;
                }
            },
        };
        let path_var = env.get("PATH").cloned().unwrap_or_default();
        let mut attempt = Attempt {
            task: id.to_string(),
            script: script(&command, args),
            root: self.plan.workspace.root.clone(),
            dir: project.dir.clone(),
            env,
            timeout: timeout.filter(|_| kind != Kind::Persistent),
            local: Local {
                sh: self.ctx.sh.clone(),
                stdin: if self.interactive.contains(&i) {
                    StdinMode::Terminal
                } else if kind == Kind::Persistent || self.typed_into.contains(&i) {
                    StdinMode::HeldPipe
                } else {
                    StdinMode::Null
                },
                kill_grace: self.ctx.kill_grace,
                stop_leftovers_on_exit: kind == Kind::OneShot,
                sandbox: launch,
            },
            remote: None,
        };
        let attempts = match kind {
            Kind::OneShot => 1 + config.retries.or(self.options.retry).unwrap_or(0),
            _ => 1,
        };
        let started = Instant::now();
        let waiting = match ready_when
            .as_deref()
            .map(|pattern| Waiting::new(pattern, started, self.ctx.ready_notice, timeout))
        {
            Some(Err(error)) => {
                let line =
                    format!("vx: persistent.ready-when is not a valid regular expression: {error}");
                self.fail_before_start(i, &line);
                return;
            }
            Some(Ok(waiting)) => Some(waiting),
            None => None,
        };
        if remote {
            match self.remote_part(i, &attempt.env) {
                Ok(part) => attempt.remote = Some(part),
                Err(line) => {
                    self.cache.withhold(&id);
                    self.fail_before_start(i, &line);
                    return;
                }
            }
        }
        let handle = self.spawn_attempt(i, &attempt, &route);
        tracing::debug!(task = %id, pid = ?handle.pid(), remote, "started");
        let colour = self.reporter.colour();
        let spawned = handle.pid().is_some();
        let live = Live {
            handle,
            route,
            identity,
            started,
            kind,
            display: LogBuf::new(),
            last_byte: None,
            maskers: [masker.clone(), masker],
            strippers: (!colour).then(|| [Stripper::new(), Stripper::new()]),
            command,
            command_line,
            dir,
            path_var,
            ready: false,
            waiting: waiting.filter(|_| spawned),
            timed_out: false,
            unneeded: false,
            timeout,
            prefix_at_line_start: true,
            last_line: Default::default(),
            records: LogBuf::new(),
            cache_kind,
            writes,
            unsaved_reason,
            started_wall: SystemTime::now(),
            job: attempt,
            attempt: 1,
            attempts,
            earlier: Duration::ZERO,
            attempt_started: started,
            spans: Vec::new(),
            sandbox,
            remote_cached: false,
        };
        let report = self.report_of(i, &live, Status::Running);
        let wait_for_line = live.waiting.is_some();
        self.live.insert(i, live);
        self.reporter.started(i, &report);
        if remote {
            self.remote_in_flight += 1;
        } else {
            self.running_slots += 1;
        }

        if kind == Kind::Persistent && spawned && !wait_for_line {
            self.ready(i);
        }
    }

    /// What the cache said during the last call into it, through the reporter (ARCH-1: the
    /// renderer consumes the run's events).
    fn relay_notices(&mut self) {
        for notice in self.cache.take_notices() {
            self.reporter.notice(notice);
        }
    }

    /// With `--profile`, records one of vx's own phases, from `start` to now.
    fn phase(&mut self, name: &str, start: Instant) {
        if let Some(phases) = &mut self.phases {
            phases.push(Phase {
                name: name.to_string(),
                start,
                end: Instant::now(),
            });
        }
    }

    fn spawn_attempt(
        &mut self,
        i: usize,
        attempt: &Attempt,
        route: &Route,
    ) -> Box<dyn RunningTask> {
        self.cache.keys.files_may_have_changed();
        let route = route.clone();
        self.executor.spawn(
            attempt,
            Box::new(move |event| route.deliver(Msg::Exec(i, event))),
        )
    }

    /// EXEC-15: another attempt of a failed task — the attempt line, outputs cleaned when the
    /// task writes, and only the successful attempt's log kept for the cache.
    fn retry(&mut self, i: usize, completion: &Completion) {
        let id = self.plan.graph.nodes[i].id.clone();
        let live = self.live.get_mut(&i).expect("a live task");
        let why = if completion.timed_out {
            "timed out".to_string()
        } else {
            format!("exit {}", completion.exit_code)
        };
        let line = format!(
            "vx: {id} failed ({why}); attempt {} of {}",
            live.attempt + 1,
            live.attempts
        );
        let writes = live.writes;
        self.note(i, &line);
        if writes {
            let cleaned = self.cache.clean_for_retry(&id);
            self.relay_notices();
            if let Err(line) = cleaned {
                self.note(i, &line);
            }
        }
        if let Err(error) = self.sandbox_again(i) {
            self.note(
                i,
                &format!("vx: {id}: cannot sandbox: cannot create its TMPDIR: {error}"),
            );
        }
        let job = self.live[&i].job.clone();
        let route = self.live[&i].route.clone();
        let remote = job.remote.is_some();
        let handle = self.spawn_attempt(i, &job, &route);
        let run_started = self.started_at;
        let live = self.live.get_mut(&i).expect("a live task");
        live.spans.push(AttemptSpan {
            start: live.attempt_started.saturating_duration_since(run_started),
            end: run_started.elapsed(),
            exit_code: Some(completion.exit_code),
        });
        live.attempt_started = Instant::now();
        live.handle = handle;
        live.earlier += completion.duration;
        live.attempt += 1;
        live.timed_out = false;
        live.records = LogBuf::new();
        live.started_wall = SystemTime::now();
        if remote {
            self.remote_in_flight += 1;
        } else {
            self.running_slots += 1;
        }
    }

    fn is_shown(&self, i: usize) -> bool {
        self.plan.shown_as_requested.contains(&i)
    }

    fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Signal(n) => self.signal(n),
            Msg::Exec(i, event) => self.exec_event(i, event),
            Msg::Packed(i, job, packed) => self.saved(i, job, packed),
            Msg::Restored(i, job, result) => self.restored(i, job, *result),
            Msg::NetRefused(i, target) => self.sandbox_refused(i, target),
            Msg::Prefetched(i) => self.prefetched(i),
            Msg::Ui(event) => self.ui_event(event),
        }
    }

    /// Hands the terminal to the task UI: the run's tasks (groups are not shown), and a way for
    /// its key reader to reach this loop.
    fn start_tui(&mut self) {
        let tasks = (0..self.plan.graph.nodes.len())
            .filter(|&i| kind_of(task(self.plan, i)) != Kind::Group)
            .map(|i| {
                let id = self.plan.graph.nodes[i].id.clone();
                (i, id, self.typed_into.contains(&i))
            })
            .collect();
        let tx = self.tx.clone();
        let send = Box::new(move |event| tx.send(Msg::Ui(event)).is_ok());
        if self.reporter.start_tui(tasks, send) {
            crate::render::live::log_to(self.ctx.cache_dir.join("logs").join("vx.log"));
        } else {
            // Plain output: nothing will type into an interactive task, so it reads nothing
            // (as off a terminal) rather than waiting on a pipe.
            self.tui = false;
            self.typed_into.clear();
        }
    }

    /// A key in the task UI.
    fn ui_event(&mut self, event: UiInput) {
        match self.reporter.key(event) {
            UiAction::None => {}
            UiAction::Interrupt => self.signal(nix::libc::SIGINT),
            UiAction::Stdin(i, bytes) => {
                if let Some(live) = self.live.get(&i) {
                    live.handle.write_stdin(&bytes);
                }
            }
        }
    }

    fn exec_event(&mut self, i: usize, event: ExecEvent) {
        match event {
            ExecEvent::Output { stream, bytes } => {
                let Some(live) = self.live.get_mut(&i) else { return };
                let s = stream_index(stream);
                // Matched on the bytes as written; shown and stored masked.
                let ready = live.waiting.as_mut().is_some_and(|w| w.push(s, &bytes));
                let bytes = live.maskers[s].push(&bytes);
                live.records.push(log_stream(stream), &bytes);
                let bytes = match &mut live.strippers {
                    Some(strippers) => strippers[s].push(&bytes),
                    None => bytes,
                };
                self.output(i, &bytes);
                if ready {
                    self.ready(i);
                }
            }
            ExecEvent::TimedOut => {
                if let Some(live) = self.live.get_mut(&i) {
                    live.timed_out = true;
                }
                let after = self.live.get(&i).and_then(|l| l.timeout).unwrap_or_default();
                self.note(i, &format!("vx: timed out after {}; stopping the task", format_duration(after)));
            }
            ExecEvent::OutputCut => self.note(
                i,
                "vx: output after the task's shell exited was cut: a process it started still held stdout/stderr 250ms later",
            ),
            ExecEvent::LeftoversStopped(n) => {
                let what = if n == 1 { "1 process".to_string() } else { format!("{n} processes") };
                self.note(i, &format!("vx: stopped {what} the task left running"));
            }
            ExecEvent::Access(access) => self.sandbox_access(i, access),
            ExecEvent::Note(line) => self.note(i, &line),
            ExecEvent::Declined(line) => self.declined(i, line),
            ExecEvent::Completed(completion) => self.completed(i, completion),
        }
    }

    /// Appends output to the task's log, and prints it where it is shown live.
    fn output(&mut self, i: usize, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let Some(live) = self.live.get_mut(&i) else {
            return;
        };
        live.display.push(LogStream::Stdout, bytes);
        live.last_byte = bytes.last().copied();
        if crate::render::live::is_active() {
            live.last_line.push(bytes);
        }
        if self.keep_alive {
            let text = prefixed(&self.plan.graph.nodes[i].id, live, bytes);
            self.reporter.after_footer(&text);
        } else {
            self.reporter.stream(i, bytes);
        }
    }

    /// A note record in the task's output (UI-8), on a line of its own.
    fn note(&mut self, i: usize, text: &str) {
        let Some(live) = self.live.get(&i) else {
            return;
        };
        let mut line = Vec::new();
        if live.last_byte.is_some_and(|b| b != b'\n') {
            line.push(b'\n');
        }
        line.extend_from_slice(live.maskers[0].mask_str(text).as_bytes());
        line.push(b'\n');
        if let Some(live) = self.live.get_mut(&i) {
            live.records.push(LogStream::Note, &line);
        }
        self.output(i, &line);
    }

    fn completed(&mut self, i: usize, completion: Completion) {
        let Some(live) = self.live.get_mut(&i) else {
            return;
        };
        if live.remote() {
            live.remote_cached = completion.from_action_cache && live.cache_kind == CacheKind::Miss;
            if completion.outputs_kept {
                // REM-14: no local entry without the outputs on disk.
                live.writes = false;
                live.unsaved_reason = "not-downloaded";
                self.kept_remotely.insert(i);
            } else {
                self.kept_remotely.remove(&i);
            }
        }
        let Some(live) = self.live.get_mut(&i) else {
            return;
        };
        let mut rest = Vec::new();
        for (s, stream) in [LogStream::Stdout, LogStream::Stderr]
            .into_iter()
            .enumerate()
        {
            let mut bytes = live.maskers[s].finish();
            live.records.push(stream, &bytes);
            if let Some(strippers) = &mut live.strippers {
                bytes = strippers[s].push(&bytes);
            }
            rest.extend(bytes);
        }
        self.output(i, &rest);
        let verdict = self.sandbox_verdict(i, &completion);
        let clean = matches!(verdict, sandboxed::Verdict::Clean);
        let violations = match verdict {
            sandboxed::Verdict::Violations(n) => n,
            _ => 0,
        };
        let live = &self.live[&i];
        let kind = live.kind;
        if kind == Kind::Persistent && live.ready {
            self.persistent_ended(i, &completion);
            return;
        }
        // Stopped by vx because it was not ready in time: a timeout's exit code (EXEC-8).
        let not_ready_in_time = kind == Kind::Persistent && live.timed_out;
        let code = match (not_ready_in_time, completion.killed) {
            (true, true) => 128 + nix::libc::SIGKILL,
            (true, false) => 128 + nix::libc::SIGTERM,
            (false, _) => completion.exit_code,
        };
        // SBX-7: a task that broke its sandbox fails, whatever it exited with.
        let code = if !clean && code == 0 { 1 } else { code };
        if self.live[&i].remote() {
            self.remote_in_flight -= 1;
        } else {
            self.running_slots -= 1;
        }
        let status = if self.stopping.is_some() {
            Status::Aborted
        } else if kind == Kind::Persistent {
            // Ended before it was ready, whatever its exit code (EXEC-13).
            Status::Failed
        } else if code == 0 && !completion.timed_out {
            Status::Success
        } else {
            Status::Failed
        };
        // A remote failure is explained by its own output: the local PATH says nothing of it.
        let local = !self.live[&i].remote();
        if status == Status::Failed
            && !completion.timed_out
            && !completion.stopped
            && clean
            && local
        {
            let live = &self.live[&i];
            let note = match &completion.exit {
                ExitReason::SpawnFailed(error) => Some(spawn_note(&live.dir, error)),
                exit => explain(&live.command, exit, code, &live.dir, &live.path_var),
            };
            if let Some(note) = note {
                self.note(i, &note);
            }
        }
        let retry = {
            let live = &self.live[&i];
            status == Status::Failed
                && kind == Kind::OneShot
                && live.attempt < live.attempts
                && !self.scheduler.is_halted()
                && !matches!(completion.exit, ExitReason::SpawnFailed(_))
                // Another attempt would break the sandbox again.
                && clean
        };
        if retry {
            self.retry(i, &completion);
            return;
        }
        // Its memory is free: the save that may follow does not count as executing.
        self.scheduler.stopped_executing(i);
        let live = self.live.remove(&i).expect("a live task");
        let mut report = self.report_of(i, &live, status);
        report.attempts = live.attempt;
        report.sandbox_violations = violations;
        report.key_failures_after_pass = self.recorder.key_failures_after_pass(
            self.cache.layers().store(),
            &report.id,
            self.cache.key_hex(&report.id),
        );
        if kind == Kind::Persistent && status == Status::Failed {
            report.not_ready = Some(match completion.exit {
                ExitReason::SpawnFailed(_) => NotReady::Spawn,
                _ if live.unneeded => NotReady::Unneeded,
                _ if not_ready_in_time => NotReady::TimedOut(live.timeout.unwrap_or_default()),
                _ => NotReady::Exited,
            });
        }
        report.exit_code = Some(code);
        report.short_key = self
            .cache
            .key_hex(&report.id)
            .map(|key| key[..12.min(key.len())].to_string());
        report.timed_out = completion.timed_out || not_ready_in_time;
        report.duration = live.earlier + completion.duration;
        report.attempt_spans = live.spans.clone();
        report.attempt_spans.push(AttemptSpan {
            start: live
                .attempt_started
                .saturating_duration_since(self.started_at),
            end: self.started_at.elapsed(),
            exit_code: Some(code),
        });
        if let Some(usage) = &completion.usage {
            report.cpu_ms = Some((usage.user_cpu + usage.system_cpu).as_millis() as u64);
            report.peak_rss_bytes = child_peak(usage.max_rss_bytes);
        }
        let mut save = None;
        if kind == Kind::OneShot && status != Status::Aborted {
            let encoded = live.records.encode();
            let after = self.cache.after(Done {
                id: &report.id,
                success: status == Status::Success,
                writes: live.writes,
                unsaved_reason: live.unsaved_reason,
                started: live.started_wall,
                duration: report.duration,
                command_line: &live.command_line,
                log: &encoded,
                cpu_ms: report.cpu_ms,
                peak_rss_bytes: report.peak_rss_bytes,
                origin: if live.remote() {
                    "remote-exec"
                } else {
                    "local"
                },
            });
            self.relay_notices();
            self.recorder
                .fingerprint(after.fingerprint, self.cache.layers_mut().store_mut());
            match after.save {
                Ok(job) => save = Some(job),
                Err(reason) => self.recorder.saved(&report.id, Err(reason)),
            }
        }
        self.reporter.finished(i, &report, self.is_shown(i));
        self.reports.insert(i, report);
        if let Some(job) = save {
            // Dependants wait for the save: nothing may change the outputs while they are
            // archived (STORE-7).
            self.start_save(i, job);
            return;
        }
        let finish = if status == Status::Success {
            Finish::Success
        } else {
            Finish::Failed
        };
        if status != Status::Aborted {
            let skipped = self.scheduler.finish(i, finish);
            self.report_skipped(&skipped);
        }
    }

    fn report_skipped(&mut self, skipped: &[usize]) {
        for &s in skipped {
            let blocked_by = match self.scheduler.state(s) {
                NodeState::Skipped(Some(cause)) => Some(self.plan.graph.nodes[cause].id.clone()),
                _ => None,
            };
            if kind_of(task(self.plan, s)) == Kind::Group {
                continue;
            }
            let report = TaskReport::not_started(
                self.plan.graph.nodes[s].id.clone(),
                Status::Skipped,
                blocked_by,
            );
            self.reporter.finished(s, &report, self.is_shown(s));
            self.reports.insert(s, report);
        }
    }

    fn report_of(&self, i: usize, live: &Live, status: Status) -> TaskReport {
        TaskReport {
            id: self.plan.graph.nodes[i].id.clone(),
            status,
            executed: true,
            exit_code: None,
            timed_out: live.timed_out,
            not_ready: None,
            duration: live.started.elapsed(),
            blocked_by: None,
            command_line: Some(live.command_line.clone()),
            log: shown(&live.display),
            cache: (live.kind == Kind::OneShot).then_some(if live.remote_cached {
                CacheKind::RestoredRemote
            } else {
                live.cache_kind
            }),
            short_key: None,
            stored: None,
            cpu_ms: None,
            peak_rss_bytes: None,
            attempts: live.attempt,
            key_failures_after_pass: 0,
            start_offset: live.started.saturating_duration_since(self.started_at),
            end_offset: self.started_at.elapsed(),
            admission_held: self.held.total(i),
            sandbox_violations: 0,
            attempt_spans: Vec::new(),
            kept: false,
            remote: live.remote(),
            restore_reason: None,
        }
    }

    /// A task that fails before it runs: its key could not be derived, or its outputs could
    /// not be cleaned.
    fn fail_before_start(&mut self, i: usize, line: &str) {
        let mut report =
            TaskReport::not_started(self.plan.graph.nodes[i].id.clone(), Status::Failed, None);
        report.log = format!("{line}\n").into_bytes();
        report.exit_code = Some(1);
        self.reporter.started(i, &report);
        self.reporter.finished(i, &report, self.is_shown(i));
        self.reports.insert(i, report);
        let skipped = self.scheduler.finish(i, Finish::Failed);
        self.report_skipped(&skipped);
    }

    /// A task that was about to start when a signal to vx came (EXEC-9: it ends `not run`).
    fn not_run(&mut self, i: usize) {
        let report =
            TaskReport::not_started(self.plan.graph.nodes[i].id.clone(), Status::NotRun, None);
        self.reports.insert(i, report);
        let skipped = self.scheduler.finish(i, Finish::Failed);
        self.report_skipped(&skipped);
    }

    /// EXEC-9: the first signal stops dispatch and forwards the signal once; a second one
    /// kills everything and exits at once.
    fn signal(&mut self, n: i32) {
        if self.stopping.is_some() {
            for live in self.live.values() {
                live.handle.kill();
            }
            if let Some(servers) = &self.watch {
                servers.kill_now();
            }
            crate::render::tui::abandon();
            render::stderr("\n");
            let first = self.stopping.unwrap_or(n);
            crate::run::host::sandbox::remove_scratch();
            vx_exec::cgroup::cleanup();
            if self.watch.is_some() && first == nix::libc::SIGINT {
                render::stderr("vx watch: no longer watching\n");
                std::process::exit(exit::SUCCESS);
            }
            std::process::exit(exit::signal(first));
        }
        self.stopping = Some(n);
        self.scheduler.halt();
        self.abandon_local_again();
        // A task being stopped does not become ready any more, and its timers are moot.
        for live in self.live.values_mut() {
            live.waiting = None;
        }
        let forward = if n == nix::libc::SIGHUP {
            nix::libc::SIGTERM
        } else {
            n
        };
        for live in self.live.values() {
            live.handle.stop(forward);
        }
        if let Some(servers) = &self.watch {
            servers.stop_now(forward);
        }
    }
}

/// EXEC-18's parent floor: on Linux a forked child starts with vx's own high-water mark, so a
/// peak within 4 MiB of vx's own (`VmHWM`, read after the child exited) is unknown rather than
/// the child's.
fn child_peak(max_rss_bytes: u64) -> Option<u64> {
    const FLOOR: u64 = 4 << 20;
    let own = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map(|kib| kib * 1024);
    match own {
        Some(own) if max_rss_bytes <= own + FLOOR => None,
        _ => Some(max_rss_bytes),
    }
}

/// Output of a task kept running after the footer, each line prefixed `<id> │ `.
fn prefixed(id: &TaskId, live: &mut Live, bytes: &[u8]) -> Vec<u8> {
    let prefix = format!("{id} │ ");
    let mut text = Vec::new();
    for &b in bytes {
        if live.prefix_at_line_start {
            text.extend_from_slice(prefix.as_bytes());
        }
        text.push(b);
        live.prefix_at_line_start = b == b'\n';
    }
    text
}

/// A bounded display log as the bytes a frame prints: the cut, if any, as a note on a line of
/// its own.
fn shown(display: &LogBuf) -> Vec<u8> {
    let mut bytes = Vec::new();
    for record in display.records() {
        if record.stream == LogStream::Note {
            if bytes.last().is_some_and(|b| *b != b'\n') {
                bytes.push(b'\n');
            }
            bytes.extend_from_slice(&record.bytes);
            bytes.push(b'\n');
        } else {
            bytes.extend_from_slice(&record.bytes);
        }
    }
    bytes
}

fn log_stream(stream: Stream) -> LogStream {
    match stream {
        Stream::Stdout => LogStream::Stdout,
        Stream::Stderr => LogStream::Stderr,
    }
}

fn stream_index(stream: Stream) -> usize {
    match stream {
        Stream::Stdout => 0,
        Stream::Stderr => 1,
    }
}

/// EXEC-12: no shell ran.
fn spawn_note(dir: &std::path::Path, error: &std::io::Error) -> String {
    let mut note = format!("vx: could not start `sh` in {}: {error}", dir.display());
    if matches!(error.raw_os_error(), Some(c) if c == nix::libc::EMFILE || c == nix::libc::ENFILE) {
        note.push_str("\n  hint: raise the open-file limit (ulimit -n)");
    }
    note
}

#[cfg(test)]
pub(crate) mod tests;
