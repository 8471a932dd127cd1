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
//! output matches ([`crate::execute::ready`]); until then they hold their exec slot. Ready, they count as
//! a success with the time to ready as duration, free the slot and release their dependants
//! ([`Run::ready`]). The loop has timers only for them: while one waits, `recv` is bounded by
//! the earliest of the not-ready notes (`VX_READY_NOTICE`) and readiness timeouts, and a task
//! whose timeout passes is stopped and reported `not ready: timed out after …`. Persistent tasks
//! are stopped at the end of the graph unless they are kept alive after the footer.
//!
//! The `impl Run` is split by concern: this file has the loop, dispatch, messages, output,
//! notes and signals; `start.rs` starting an attempt (and retries); `complete.rs` an attempt's
//! end; `servers.rs` persistent tasks (readiness, keep-alive); `lanes.rs` cache hits and the
//! restore and save lanes; `end.rs` the end of the graph (footer, history); `remote.rs`,
//! `sandboxed.rs` and `region.rs` the loop's side of remote execution, the sandbox and the live
//! region. The state those share is in leaves: `live.rs` one task that has a process (`Live`,
//! its sandbox, a kept server's `Identity`), `msg.rs` the loop's messages and a task's `Route`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::{Receiver, Sender};
use vx_core::schedule::{HistoryPolicy, Interactive, Scheduler};
use vx_core::units::format_duration;
use vx_exec::{ExecEvent, Executor, RunningTask};

use super::cache::{RestoreJob, RunCache, SaveJob};
use super::outcome::TaskReport;
use super::plan::nodes::{environment, rows, Kind, Row};
use super::plan::Plan;
use super::record::{Recorder, TelemetrySink};
use crate::exit;
use crate::options::RunOptions;
use crate::record::profile::Phase;
use crate::report::{Flow, Reporter, UiAction, UiInput};
use lane::Lane;

mod admission;
mod complete;
mod end;
pub(crate) mod explain;
mod kept;
pub(crate) mod lane;
mod lanes;
mod last_line;
mod live;
mod msg;
mod offloaded;
mod output;
mod part_waits;
mod parts;
pub(crate) mod ready;
mod region;
pub(crate) mod remote;
mod sandboxed;
mod servers;
mod slots;
mod start;
pub(crate) mod stripper;

use admission::{estimate, HeldForMemory};
pub use kept::Servers;
use live::{Live, SandboxHost};
pub use msg::{Msg, PackResult, RestoreResult};
use offloaded::Offloaded;
use output::Store;

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
    /// `VX_SHARD_WAIT`: how long a task of another part is waited for (SCHED-8).
    pub shard_wait: Option<Duration>,
    /// `VX_READY_NOTICE`: when a persistent task still not ready gets its note (EXEC-13).
    pub ready_notice: Duration,
    pub slots: u32,
    /// SCHED-9: neither `--concurrency` nor `[workspace] concurrency` was given, so `slots`
    /// moves with the machine's free CPUs, from the CPU count up to four per CPU.
    pub adaptive: Option<vx_core::schedule::adaptive::Adaptive>,
    /// SCHED-4: `VX_MEMORY_BUDGET`, or measure the budget at run start (only when a task in
    /// the run has a recorded peak).
    pub memory_budget: crate::host::memory::Budget,
    /// The workspace run lock, released when the graph is finished (STORE-14).
    pub lock: Option<vx_store::RunLock>,
    /// No task may own the terminal: vx must hear its Ctrl-C (a cycle of `vx watch`).
    pub keeps_terminal: bool,
    /// Where this command's snapshot goes, when it may be replayed (`snapshot.rs`).
    pub snapshot: Option<crate::snapshot::Request>,
    /// The nodes placed on the remote executor (REM-11, `plan::placement`).
    pub remote: Vec<usize>,
}

/// What a run is made of besides its plan, options and context: the two seams (how it speaks
/// to a person, where attempts run), the cache and the record it works through, and the loop's
/// channel (executors, lanes and signal handlers send on its `Sender`).
pub struct Parts<'p> {
    pub reporter: Box<dyn Reporter>,
    pub executor: Box<dyn Executor>,
    pub cache: RunCache<'p>,
    pub recorder: Recorder,
    pub channel: (Sender<Msg>, Receiver<Msg>),
}

pub struct Run<'p> {
    plan: &'p Plan,
    /// Every node's row (id, configuration, kind), built once: what the loop reads of a task.
    rows: Vec<Row<'p>>,
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
    /// SCHED-9: the machine's free CPUs, and when they were last read.
    meter: Option<(vx_exec::load::CpuMeter, Instant)>,
    stopping: Option<i32>,
    started_at: Instant,
    started_wall: SystemTime,
    warned_short_secrets: bool,
    keep_alive: bool,
    /// The task UI stays open while kept persistent tasks run (their output goes to it).
    ui_kept: bool,
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
    /// SCHED-6, per node, from the start of the run: its key is a prediction (empty when
    /// nothing is served ahead).
    unstable: Vec<bool>,
    /// Nodes served from the cache ahead whose dependants may be keyed now (KEY-9).
    served_queue: Vec<usize>,
    /// SCHED-8: tasks of other parts waited for, and what became of them.
    parts: part_waits::Parts,
    /// SCHED-4: how long each task waited only for memory.
    held: HeldForMemory,
    /// This run's id (UUIDv7): history, the summary and the trace share it.
    run_id: String,
    /// The summary written before the footer, rewritten when a kept task ends (UI-14).
    summary: Option<crate::record::summary::SummaryFile>,
    /// With `--profile`: vx's phases, and each task's key derivation and cache probe (UI-15).
    phases: Option<Vec<Phase>>,
    /// SBX-1: whether tasks can be sandboxed here, probed at the first sandboxed execution.
    sandbox_host: SandboxHost,
    /// This run is a cycle of `vx watch`: the persistent tasks kept between cycles.
    watch: Option<&'p mut Servers>,
    /// Telemetry sinks beside history, the summary and the trace (ARCH-2), given by the caller.
    sinks: Vec<Box<dyn TelemetrySink + 'p>>,
    /// The remote executor's side of the run (REM-11, REM-14).
    remote: Offloaded,
}

impl<'p> Run<'p> {
    pub fn new(plan: &'p Plan, options: &'p RunOptions, ctx: Context, parts: Parts<'p>) -> Run<'p> {
        let Parts {
            mut reporter,
            executor,
            mut cache,
            recorder,
            channel: (tx, rx),
        } = parts;
        let rows = rows(plan);
        // `--summarize` lists every task's inputs, hits' too.
        cache.keys.keep_inputs = options.summarize.is_some();
        // A run that may write a snapshot records the paths its hits' keys folded.
        if ctx.snapshot.is_some() {
            cache.keys.folded = Some(crate::snapshot::Paths::new(&plan.workspace.root));
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
            .filter(|&i| tui && rows[i].config.interactive == Some(true))
            .filter(|&i| rows[i].kind != Kind::Group)
            .collect();
        // EXEC-14: on a terminal an interactive task owns it; off one it is an ordinary task.
        // Under the task UI it is typed into there.
        let on_terminal = !tui && !ctx.keeps_terminal && vx_exec::process_tree::owns_terminal();
        let owns_terminal = |i: usize| on_terminal && rows[i].config.interactive == Some(true);
        // An interactive task on a terminal is never framed: it writes to the terminal itself.
        let requested_commands: Vec<usize> = plan
            .shown_as_requested
            .iter()
            .copied()
            .filter(|&i| rows[i].kind != Kind::Group && !owns_terminal(i))
            .collect();
        // A persistent task never streams a frame: its output goes after the footer, prefixed.
        let persistent_requested = requested_commands
            .iter()
            .any(|&i| rows[i].kind == Kind::Persistent);
        if !persistent_requested {
            reporter.choose_streaming(&requested_commands);
        }
        let lane_width = 2 * ctx.slots as usize;
        let estimates: Vec<_> = plan
            .graph
            .nodes
            .iter()
            .enumerate()
            .map(|(i, node)| estimate(recorder.recent(&node.id), rows[i].kind))
            .collect();
        // Nothing reserves memory without a recorded peak: no need to measure the budget.
        let budget = if estimates.iter().any(|e| e.peak_rss_bytes.is_some()) {
            ctx.memory_budget.resolve().0
        } else {
            None
        };
        let history = HistoryPolicy::new(estimates, budget);
        let policy: Box<dyn vx_core::schedule::SchedulerPolicy> = match &plan.shard {
            Some(shard) => Box::new(vx_core::schedule::PlannedOrder {
                inner: history,
                start_ms: shard.planned_start_ms.clone(),
            }),
            None => Box::new(history),
        };
        let mut scheduler = Scheduler::new(&plan.graph, options.continue_mode, policy);
        let interactive: BTreeSet<usize> = (0..plan.graph.nodes.len())
            .filter(|&i| owns_terminal(i) && rows[i].kind != Kind::Group)
            .collect();
        for &i in &interactive {
            // SCHED-5: alone, and an interactive persistent task last.
            scheduler.set_interactive(
                i,
                if rows[i].kind == Kind::Persistent {
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
            rows,
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
            meter: None,
            stopping: None,
            started_at: Instant::now(),
            started_wall: SystemTime::now(),
            warned_short_secrets: false,
            keep_alive: false,
            ui_kept: false,
            ended_persistent: Vec::new(),
            exited_servers: Vec::new(),
            cache,
            recorder,
            tainted: BTreeSet::new(),
            saves: Lane::new("save", lane_width),
            restores: Lane::new("restore", lane_width),
            servers_held: Vec::new(),
            prefetching: BTreeSet::new(),
            unstable: Vec::new(),
            served_queue: Vec::new(),
            parts: part_waits::Parts::default(),
            held: HeldForMemory::default(),
            run_id: crate::ids::run_id(),
            summary: None,
            phases,
            sandbox_host: None,
            watch: None,
            sinks: Vec::new(),
            remote: Offloaded::default(),
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
            let log_file = self.ctx.cache_dir.join("logs").join("vx.log");
            self.reporter.region_start(log_file);
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
                || (!self.prefetching.is_empty() && self.stopping.is_none())
                // Nor for another runner's upload (SCHED-8).
                || (!self.parts.waiting.is_empty() && self.stopping.is_none());
            if !one_shots_running && (self.scheduler.is_done() || self.stopping.is_some()) {
                break;
            }
            match self.next_message() {
                Some(msg) => self.handle(msg),
                None => break,
            }
        }
        // SCHED-8: what still waited for another runner when the run stopped was not run.
        let waiting: Vec<usize> = std::mem::take(&mut self.parts.waiting)
            .into_keys()
            .collect();
        for i in waiting {
            self.not_run(i);
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
        self.reassess_slots();
        while self.running_slots < self.ctx.slots {
            if !self.remote.local_again.is_empty() && !self.scheduler.holds_terminal() {
                let i = self.remote.local_again.remove(0);
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
            .filter(|_| self.remote.usable)
        {
            if self.remote.in_flight >= max {
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
            phases.push(Phase::main(name, start, Instant::now()));
        }
    }

    fn is_shown(&self, i: usize) -> bool {
        self.plan.shown_as_requested.contains(&i)
    }

    fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Signal(n) => self.signal(n),
            Msg::Reassess => {}
            Msg::Exec(i, event) => self.exec_event(i, event),
            Msg::Packed(i, job, packed) => self.saved(i, job, packed),
            Msg::Restored(i, job, result) => self.restored(i, job, *result),
            Msg::NetRefused(i, target) => self.sandbox_refused(i, target),
            Msg::Prefetched(i) => self.prefetched(i),
            Msg::PartWaited(i, how) => self.part_waited(i, how),
            Msg::Ui(event) => self.ui_event(event),
        }
    }

    /// Hands the terminal to the task UI: the run's tasks (groups are not shown), and a way for
    /// its key reader to reach this loop.
    fn start_tui(&mut self) {
        let tasks = (0..self.plan.graph.nodes.len())
            .filter(|&i| self.rows[i].kind != Kind::Group)
            .map(|i| {
                let id = self.plan.graph.nodes[i].id.clone();
                (i, id, self.typed_into.contains(&i))
            })
            .collect();
        let tx = self.tx.clone();
        let send = Box::new(move |event| tx.send(Msg::Ui(event)).is_ok());
        let log_file = self.ctx.cache_dir.join("logs").join("vx.log");
        if !self.reporter.start_tui(tasks, send, log_file) {
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
                // Matched on the bytes as written; shown and stored masked.
                let ready = live.waiting.as_mut().is_some_and(|w| w.push(stream, &bytes));
                let bytes = live.output.wrote(stream, &bytes, Store::Yes);
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
            ExecEvent::Aside(line) => self.aside(i, &line),
            ExecEvent::Declined(line) => self.declined(i, line),
            ExecEvent::Completed(completion) => self.completed(i, completion),
        }
    }

    /// Appends output to the task's log, and prints it where it is shown live.
    fn output(&mut self, i: usize, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let region = self.reporter.region_active();
        let Some(live) = self.live.get_mut(&i) else {
            return;
        };
        live.output.shown(bytes, region);
        if self.keep_alive && !self.ui_kept {
            let text = live.output.prefixed(&self.plan.graph.nodes[i].id, bytes);
            self.reporter.after_footer(&text);
        } else {
            self.reporter.stream(i, bytes);
        }
    }

    /// A note record in the task's output (UI-8), on a line of its own.
    fn note(&mut self, i: usize, text: &str) {
        let Some(live) = self.live.get_mut(&i) else {
            return;
        };
        let line = live.output.note(text, Store::Yes);
        self.output(i, &line);
    }

    /// A line about the machine that ran the attempt: shown like a note, never stored, so a
    /// later hit does not replay it.
    fn aside(&mut self, i: usize, text: &str) {
        let Some(live) = self.live.get_mut(&i) else {
            return;
        };
        let line = live.output.note(text, Store::No);
        self.output(i, &line);
    }

    /// EXEC-9: the first signal stops dispatch and forwards the signal once; a second one
    /// kills everything and exits at once. That exit is the one place the engine ends the
    /// process itself (clippy.toml refuses `exit` everywhere else): nothing may wait for the
    /// loop's callers to unwind.
    #[allow(clippy::disallowed_methods)]
    fn signal(&mut self, n: i32) {
        if self.stopping.is_some() {
            for live in self.live.values() {
                live.handle.kill();
            }
            if let Some(servers) = &self.watch {
                servers.kill_now();
            }
            let first = self.stopping.unwrap_or(n);
            let watch_ends = self.watch.is_some() && first == nix::libc::SIGINT;
            self.reporter.abandon(if watch_ends {
                "vx watch: no longer watching"
            } else {
                ""
            });
            crate::host::sandbox::remove_scratch();
            vx_exec::cgroup::cleanup();
            if watch_ends {
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

#[cfg(test)]
pub(crate) mod tests;
