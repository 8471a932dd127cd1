//! The task's thread ([`Worker`]): the three phases of the module above — running (output
//! forwarded, the timeout, a stop's grace), drain, settle — ending in one `Completed`; and a
//! spawn failure reported as one.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use crate::event::{Completion, ExecEvent, ExitReason, SandboxEnd, SpawnSpec, Stream};
use crate::process_tree;
use crate::sandbox_init::{self, InitExit, ReportLine};

use super::{earliest, Sink, StopCause, TaskShared, LIVENESS_POLL, READ_CHUNK};

/// The task's thread: either a running task to supervise or a spawn failure to report.
pub(crate) enum Worker {
    Running(Box<Running>),
    Failed {
        task: Arc<TaskShared>,
        sink: Sink,
        error: std::io::Error,
    },
}

pub(crate) struct Running {
    task: Arc<TaskShared>,
    sink: Sink,
    stdout: Option<OwnedFd>,
    stderr: Option<OwnedFd>,
    wake: OwnedFd,
    started: Instant,
    timeout_at: Option<Instant>,
    drain: Duration,
    stop_leftovers: bool,
    /// An interactive task holding the terminal's foreground (EXEC-1).
    terminal: bool,
    buffer: Vec<u8>,
    /// A sandboxed task's report pipe from its init, until end-of-file.
    report: Option<OwnedFd>,
    sandboxed: bool,
    /// What has been read of the report and not yet parsed (a partial line).
    report_text: Vec<u8>,
    /// The command's end, as init reported it.
    init_exit: Option<InitExit>,
    /// The report held what init never writes: it is not trusted (`SandboxEnd::Unreadable`).
    report_broken: bool,
}

#[derive(Clone, Copy)]
enum Source {
    Out(Stream),
    Report,
    Wake,
}

impl Worker {
    pub(crate) fn new(
        task: Arc<TaskShared>,
        wake: OwnedFd,
        sink: Sink,
        stdout: Option<OwnedFd>,
        stderr: Option<OwnedFd>,
        spec: &SpawnSpec,
        started: Instant,
    ) -> Worker {
        Worker::Running(Box::new(Running {
            task,
            sink,
            stdout,
            stderr,
            wake,
            started,
            timeout_at: spec.timeout.map(|timeout| started + timeout),
            drain: spec.drain,
            stop_leftovers: spec.stop_leftovers_on_exit,
            terminal: spec.stdin == crate::event::StdinMode::Terminal,
            buffer: vec![0; READ_CHUNK],
            report: None,
            sandboxed: spec.sandbox.is_some(),
            report_text: Vec::new(),
            init_exit: None,
            report_broken: false,
        }))
    }

    /// Adds a sandboxed task's report pipe (SBX-9).
    pub(crate) fn with_report(mut self, report: Option<OwnedFd>) -> Worker {
        if let Worker::Running(running) = &mut self {
            running.report = report;
        }
        self
    }

    pub(crate) fn failed(task: Arc<TaskShared>, sink: Sink, error: std::io::Error) -> Worker {
        Worker::Failed { task, sink, error }
    }

    pub(crate) fn run(self) {
        match self {
            Worker::Running(running) => running.run(),
            Worker::Failed {
                task,
                mut sink,
                error,
            } => {
                tracing::debug!(%error, "spawn failed");
                sink(ExecEvent::Completed(Completion::spawn_failed(error)));
                task.changed.notify_all();
            }
        }
    }
}

impl Running {
    fn run(mut self) {
        self.read_until_leader_exit();
        if self.terminal {
            process_tree::take_foreground();
        }
        // Counted from when this thread sees the exit rather than from the exit itself, so a
        // thread that fell behind (a slow sink) still reads what the leader wrote before exiting.
        self.drain_output(Instant::now() + self.drain);
        self.settle();
        if self.task.live_count() == 0 {
            // Usually the case: a one-shot task's leftovers were just stopped. A persistent
            // task's daemon keeps it registered until its stop (`settle_after_finish`).
            self.task.release_guard();
        }
        let completion = self.complete();
        (self.sink)(ExecEvent::Completed(completion));
        self.task.changed.notify_all();
    }

    /// Phase 1: forwards output, fires the timeout and enforces a stop's kill deadline until
    /// the reaper reports the leader's exit.
    fn read_until_leader_exit(&mut self) {
        loop {
            if self.task.lock().leader_exit.is_some() {
                return;
            }
            let now = Instant::now();
            if self.task.lock().stop.is_some() {
                // A stop already under way makes the timeout moot.
                self.timeout_at = None;
            }
            if self.timeout_at.is_some_and(|at| now >= at) {
                self.timeout_at = None;
                (self.sink)(ExecEvent::TimedOut);
                self.task.begin_stop(libc::SIGTERM, StopCause::Timeout);
            }
            let kill_at = self.task.escalate_if_due(now);
            self.pump(earliest(self.timeout_at, kill_at));
        }
    }

    /// Phase 2: reads what is left, until the pipes close or the drain ends. A sandbox's
    /// report is complete by now (init has exited), so it reaches end-of-file at once.
    fn drain_output(&mut self, until: Instant) {
        while self.stdout.is_some() || self.stderr.is_some() || self.report.is_some() {
            let now = Instant::now();
            if now >= until {
                self.report = None;
                if self.stdout.is_some() || self.stderr.is_some() {
                    self.stdout = None;
                    self.stderr = None;
                    (self.sink)(ExecEvent::OutputCut);
                }
                return;
            }
            let kill_at = self.task.escalate_if_due(now);
            self.pump(earliest(Some(until), kill_at));
        }
    }

    /// Phase 3: finishes a stop, or stops leftovers, and marks the task finished.
    fn settle(&mut self) {
        let mut stop_waited = false;
        let mut leftovers_checked = false;
        loop {
            let stop_begun = self.task.lock().stop.is_some();
            if stop_begun && !stop_waited {
                self.task.wait_until_empty(None);
                stop_waited = true;
                continue;
            }
            if !stop_begun && self.stop_leftovers && !leftovers_checked {
                leftovers_checked = true;
                let left = self.task.live_count();
                if left > 0 {
                    self.task.signal_all(libc::SIGTERM);
                    self.task
                        .wait_until_empty(Some(Instant::now() + self.task.kill_grace));
                    (self.sink)(ExecEvent::LeftoversStopped(left));
                }
                continue;
            }
            let mut state = self.task.lock();
            if state.stop.is_some() && !stop_waited {
                continue;
            }
            state.finished = true;
            return;
        }
    }

    fn complete(&self) -> Completion {
        let state = self.task.lock();
        let exit = state
            .leader_exit
            .as_ref()
            .expect("phase 1 ends only with the leader's exit");
        let decisive = state.stop.as_ref().filter(|stop| stop.before_exit);
        let timed_out = decisive.is_some_and(|stop| stop.cause == StopCause::Timeout);
        let stopped = decisive.is_some_and(|stop| stop.cause == StopCause::Handle);
        let mut exit_reason = match exit.reason {
            ExitReason::Code(code) => ExitReason::Code(code),
            ExitReason::Signal(signal) => ExitReason::Signal(signal),
            ExitReason::SpawnFailed(_) => unreachable!("the reaper reports codes and signals"),
        };
        let mut usage = exit.usage;
        let sandbox = self.sandboxed.then(|| match &self.init_exit {
            _ if self.report_broken => SandboxEnd::Unreadable,
            Some(reported) => {
                exit_reason = if reported.signal != 0 {
                    ExitReason::Signal(reported.signal)
                } else {
                    ExitReason::Code(reported.exit_code)
                };
                usage = reported.usage;
                SandboxEnd::Reported
            }
            None => SandboxEnd::Unreported,
        });
        let exit_code = match (timed_out, state.killed) {
            (true, true) => 128 + libc::SIGKILL,
            (true, false) => 128 + libc::SIGTERM,
            (false, _) => exit_reason.exit_code(),
        };
        Completion {
            exit: exit_reason,
            exit_code,
            timed_out,
            stopped,
            killed: state.killed,
            duration: exit.at.saturating_duration_since(self.started),
            usage: Some(usage),
            sandbox,
            from_action_cache: false,
            outputs_kept: false,
        }
    }

    /// One `poll` on the open output pipes and the wake pipe, then one read from each ready
    /// pipe. Returns after `until` at the latest.
    fn pump(&mut self, until: Option<Instant>) {
        let timeout = until.map_or(PollTimeout::NONE, |until| {
            let left = until.saturating_duration_since(Instant::now());
            // Round up: rounding down would wake just before the deadline and spin.
            let millis = left.as_micros().div_ceil(1000);
            PollTimeout::try_from(millis).unwrap_or(PollTimeout::MAX)
        });
        let mut ready: [Option<Source>; 4] = [None; 4];
        {
            let mut sources = Vec::with_capacity(4);
            let mut fds = Vec::with_capacity(4);
            for (fd, source) in [
                (&self.stdout, Source::Out(Stream::Stdout)),
                (&self.stderr, Source::Out(Stream::Stderr)),
                (&self.report, Source::Report),
            ] {
                if let Some(fd) = fd {
                    fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLIN));
                    sources.push(source);
                }
            }
            fds.push(PollFd::new(self.wake.as_fd(), PollFlags::POLLIN));
            sources.push(Source::Wake);
            match poll(&mut fds, timeout) {
                Ok(_) => {}
                Err(Errno::EINTR) => return,
                Err(err) => {
                    // Not expected with valid descriptors; avoid spinning if it happens.
                    tracing::error!(%err, "poll failed");
                    std::thread::sleep(LIVENESS_POLL);
                    return;
                }
            }
            for (slot, (fd, source)) in ready.iter_mut().zip(fds.iter().zip(sources)) {
                if fd.revents().is_some_and(|events| !events.is_empty()) {
                    *slot = Some(source);
                }
            }
        }
        for source in ready.into_iter().flatten() {
            match source {
                Source::Out(stream) => self.read_once(stream),
                Source::Report => self.read_report(),
                Source::Wake => {
                    let mut sink = [0u8; 64];
                    while matches!(nix::unistd::read(&self.wake, &mut sink), Ok(n) if n > 0) {}
                }
            }
        }
    }

    /// Reads one chunk of a sandbox's report; forwards each complete access line as it comes
    /// and keeps the exit line. Closes the pipe at end-of-file or on an error.
    fn read_report(&mut self) {
        let Some(fd) = &self.report else { return };
        match nix::unistd::read(fd.as_fd(), &mut self.buffer) {
            Ok(0) => self.report = None,
            Ok(n) => {
                if self.report_broken {
                    return;
                }
                self.report_text.extend_from_slice(&self.buffer[..n]);
                while let Some(end) = self.report_text.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = self.report_text.drain(..=end).collect();
                    let line = String::from_utf8_lossy(&line[..end]);
                    match sandbox_init::parse_line(&line) {
                        Some(ReportLine::Access(access)) if self.init_exit.is_none() => {
                            (self.sink)(ExecEvent::Access(access))
                        }
                        Some(ReportLine::Exit(exit)) if self.init_exit.is_none() => {
                            self.init_exit = Some(exit)
                        }
                        _ => {
                            tracing::debug!(%line, "unexpected sandbox report line");
                            self.report_broken = true;
                        }
                    }
                }
                // Init's lines are short: a path is at most a few KiB.
                if self.report_text.len() > READ_CHUNK {
                    self.report_broken = true;
                }
                if self.report_broken {
                    self.report_text = Vec::new();
                }
            }
            Err(Errno::EINTR | Errno::EAGAIN) => {}
            Err(err) => {
                tracing::debug!(%err, "reading the sandbox report failed");
                self.report = None;
            }
        }
    }

    /// Reads one chunk and forwards it; closes the pipe at end-of-file or on an error.
    fn read_once(&mut self, stream: Stream) {
        let slot = match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        };
        let Some(fd) = slot else { return };
        match nix::unistd::read(fd.as_fd(), &mut self.buffer) {
            Ok(0) => *slot = None,
            Ok(n) => (self.sink)(ExecEvent::Output {
                stream,
                bytes: self.buffer[..n].to_vec(),
            }),
            Err(Errno::EINTR | Errno::EAGAIN) => {}
            Err(err) => {
                tracing::debug!(fd = fd.as_raw_fd(), %err, "reading task output failed");
                *slot = None;
            }
        }
    }
}
