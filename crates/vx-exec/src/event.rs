//! What a caller asks for ([`SpawnSpec`]) and what it hears back ([`ExecEvent`], ending with one
//! [`Completion`]).
//!
//! These are plain data; the state machine that produces the events lives in `task.rs`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Everything needed to start one task attempt. The caller resolves the program and builds the
/// complete environment; nothing is inherited from vx except what `env` lists.
#[derive(Debug, Clone)]
pub struct SpawnSpec {
    /// The program to execute, already resolved (`/bin/sh`); it is not searched on any `PATH`.
    pub program: PathBuf,
    /// What the program sees as `argv[0]` (`sh`).
    pub arg0: OsString,
    /// The arguments after `argv[0]` (`["-c", script]`).
    pub args: Vec<OsString>,
    /// The working directory.
    pub cwd: PathBuf,
    /// The complete environment: vx's own environment is cleared first.
    pub env: Vec<(OsString, OsString)>,
    pub stdin: StdinMode,
    /// When the task is stopped as timed out (EXEC-8); `None` is no limit.
    pub timeout: Option<Duration>,
    /// How long a stopped task gets between the first signal and SIGKILL (`VX_KILL_GRACE`).
    pub kill_grace: Duration,
    /// How long output is still read after the leader exits (EXEC-11: 250 ms).
    pub drain: Duration,
    /// Stop whatever is left in the task's group and session once the leader has exited and the
    /// drain is over. True for one-shot tasks; persistent tasks leave this to
    /// [`TaskHandle::stop`](crate::TaskHandle::stop).
    pub stop_leftovers_on_exit: bool,
    /// Run the command inside bubblewrap, under vx's sandbox init (SBX-9); `None` runs it
    /// directly.
    pub sandbox: Option<SandboxLaunch>,
}

/// How to start a sandboxed task: `bwrap <options> -- <init> __vx_sandbox_init 3 4 --
/// <program> <args>…`. bubblewrap is the leader vx supervises; the command runs as init's
/// child inside the sandbox. Signals other than SIGKILL travel over the control pipe (fd 3 in
/// init), the command's accesses and end over the report pipe (fd 4), as
/// [`ExecEvent::Access`] events and the completion's [`SandboxEnd`].
#[derive(Debug, Clone)]
pub struct SandboxLaunch {
    /// The `bwrap` binary, resolved.
    pub bwrap: PathBuf,
    /// bubblewrap's options: namespaces and mounts, everything before `--`.
    pub options: Vec<OsString>,
    /// The init binary as the sandbox sees it (vx's own, mounted read-only).
    pub init: PathBuf,
    /// The network proxy's Unix socket, mounted in the sandbox, which init bridges to
    /// `127.0.0.1:`[`PROXY_PORT`](crate::sandbox_init::PROXY_PORT) (SBX-6).
    pub proxy: Option<PathBuf>,
}

/// The task's standard input (EXEC-10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdinMode {
    /// `/dev/null`: a prompt sees end-of-file at once.
    Null,
    /// A pipe vx holds open and never writes, so a server that exits on end-of-file stays up
    /// while vx lives (persistent tasks). The write end is closed when the last
    /// [`TaskHandle`](crate::TaskHandle) clone is dropped and the task is complete.
    HeldPipe,
    /// An interactive task on a terminal (EXEC-14): stdin, stdout and stderr are vx's own, the
    /// task leads a new process group inside vx's session (not a session of its own) and holds
    /// the terminal's foreground until its leader exits, when vx takes it back (EXEC-1). No
    /// output events: nothing is captured.
    Terminal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// What a task reports to its sink, in order, from the task's own thread.
#[derive(Debug)]
pub enum ExecEvent {
    /// A chunk of output, as read, live.
    Output { stream: Stream, bytes: Vec<u8> },
    /// The timeout expired; the supervisor is now stopping the task (EXEC-8).
    TimedOut,
    /// A descendant still held stdout or stderr `drain` after the leader exited; nothing after
    /// this event is read (EXEC-11).
    OutputCut,
    /// This many processes were still in the task's group or session after the drain and have
    /// been stopped (EXEC-11).
    LeftoversStopped(usize),
    /// A sandboxed task's process opened, executed, created, removed or renamed a path
    /// (SBX-7), as the sandbox init saw it, live; each (kind, path) once per attempt.
    Access(crate::trace::Access),
    /// A line from the executor about this attempt, for the task's log (why the server failed
    /// the action).
    Note(String),
    /// A line about what happened to the machine that ran the attempt rather than to the task
    /// (a remote executor that lost a worker and ran the action again): shown live, and not
    /// stored with the result, so a later hit does not replay it.
    Aside(String),
    /// The executor could not run the attempt (its server cannot be used): nothing ran, and the
    /// caller may run it elsewhere. The last event, instead of `Completed`.
    Declined(String),
    /// The last event, exactly once, unless the attempt was declined.
    Completed(Completion),
}

/// How a task attempt ended.
#[derive(Debug)]
pub struct Completion {
    /// How the leader (the process vx spawned) ended.
    pub exit: ExitReason,
    /// The code, or 128 + the signal. A timed-out task is 143, or 137 when SIGKILL was needed,
    /// whatever the leader did (EXEC-8); a spawn failure is 127.
    pub exit_code: i32,
    /// The timeout expired while the leader was running.
    pub timed_out: bool,
    /// [`TaskHandle::stop`](crate::TaskHandle::stop) or
    /// [`TaskHandle::kill`](crate::TaskHandle::kill) was called while the leader was running.
    pub stopped: bool,
    /// A timeout or a stop needed SIGKILL for some process of the task. Stopping leftovers of a
    /// task that ended by itself never sets this.
    pub killed: bool,
    /// From just before the spawn to the leader's exit (zero for a spawn failure).
    pub duration: Duration,
    /// The leader's resource usage from `wait4`; `None` for a spawn failure. For a sandboxed
    /// task, the command's, as init reported it.
    pub usage: Option<ResourceUsage>,
    /// For a sandboxed task, whether its init reported the command's end; `None` when the task
    /// was not sandboxed.
    pub sandbox: Option<SandboxEnd>,
    /// A remote executor answered from its action cache: nothing ran (REM-13).
    pub from_action_cache: bool,
    /// A remote executor kept the outputs instead of writing them into the workspace (REM-14).
    pub outputs_kept: bool,
}

impl Completion {
    /// An end known only by its exit code and duration (no resource usage), as a remote
    /// executor or a fake reports one.
    pub fn of_code(exit_code: i32, duration: Duration) -> Completion {
        Completion {
            exit: ExitReason::Code(exit_code),
            exit_code,
            timed_out: false,
            stopped: false,
            killed: false,
            duration,
            usage: None,
            sandbox: None,
            from_action_cache: false,
            outputs_kept: false,
        }
    }

    /// A task whose process could not be started: exit 127, as a shell reports it.
    pub(crate) fn spawn_failed(err: std::io::Error) -> Completion {
        Completion {
            exit: ExitReason::SpawnFailed(err),
            exit_code: 127,
            timed_out: false,
            stopped: false,
            killed: false,
            duration: Duration::ZERO,
            usage: None,
            sandbox: None,
            from_action_cache: false,
            outputs_kept: false,
        }
    }
}

/// How a sandboxed task's init ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxEnd {
    /// Init reported the command's exit: `exit`, `exit_code` and `usage` are the command's.
    Reported,
    /// No report: bubblewrap failed before init ran, or init was killed (SIGKILL escalation).
    /// `exit` is bubblewrap's own.
    Unreported,
    /// The report held something init does not write (a line that does not parse, a second
    /// `exit`, an endless line): nothing in it can be trusted.
    Unreadable,
}

/// How the leader ended.
#[derive(Debug)]
pub enum ExitReason {
    Code(i32),
    Signal(i32),
    /// No program ran: a pipe, fork, `chdir` or `exec` failed. The error is the OS error, so
    /// callers can tell EMFILE from ENOENT.
    SpawnFailed(std::io::Error),
}

/// The leader's resource usage, from `wait4` (EXEC-18). It covers the leader and those of its
/// descendants that it waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceUsage {
    pub user_cpu: Duration,
    pub system_cpu: Duration,
    /// `ru_maxrss` converted to bytes (the kernel reports KiB on Linux and bytes on macOS).
    /// On Linux a forked child starts with vx's own high-water mark; the caller applies the
    /// parent floor of EXEC-18.
    pub max_rss_bytes: u64,
}

impl ExitReason {
    /// The shell convention: the code, or 128 + the signal, or 127 when nothing could run.
    pub fn exit_code(&self) -> i32 {
        match self {
            ExitReason::Code(code) => *code,
            ExitReason::Signal(signal) => 128 + signal,
            ExitReason::SpawnFailed(_) => 127,
        }
    }
}
