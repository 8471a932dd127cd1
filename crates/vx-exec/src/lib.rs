//! Process supervision for vx: spawning tasks in their own sessions, reading their output,
//! timeouts, stopping whole process trees, and reaping every child (EXEC-1..EXEC-13).
//!
//! This is the only crate of vx that uses `unsafe` (fork/exec and `wait4`); every block says
//! why it is sound. It prints nothing: everything a caller needs to know arrives as
//! [`ExecEvent`]s.
//!
//! How this works:
//! - [`Supervisor`] (`supervisor.rs`) is one per process. It makes vx a child subreaper and runs
//!   the single reaper thread that waits for every child, dispatching task leaders' exits and
//!   silently reaping adopted orphans.
//! - [`Supervisor::spawn`] forks a leader (`child.rs`): a new session and process group, the
//!   complete environment given, stdin `/dev/null` or a held pipe, stdout and stderr as two
//!   pipes.
//! - Each task has one thread (`task.rs`) that reads both pipes with `poll`, enforces the
//!   timeout and stops, drains output after the leader exits, stops leftovers, and reports
//!   [`ExecEvent::Completed`] last. [`TaskHandle`] stops or kills it from outside.
//! - `process_tree.rs` finds a task's live processes (its group and session, from `/proc` on Linux) and
//!   signals them, always by process group.
//!
//! - `guard.rs` is EXEC-7's guard: a helper process, started before the first spawn, that
//!   every child registers with before `exec` and that kills them all if vx dies.
//! - `cgroup.rs` contains each task in a cgroup of its own where vx may create cgroups, so a
//!   process that left the task's session is found and stopped all the same.
//!
//! - `sandbox.rs` plans a sandboxed task's view of the file system as bubblewrap mounts
//!   (SBX-2 to SBX-5); it is data only. `sandbox_init.rs` is the sandbox's pid 1 (SBX-9): vx
//!   re-executed inside bubblewrap, forwarding signals to the command and reporting its exit.
//!   `trace.rs` observes a command tree's file-system calls with a seccomp filter and ptrace
//!   (SBX-7), for init to report. A [`SpawnSpec`] with a [`SandboxLaunch`] starts `bwrap` as
//!   the leader, init's control and report pipes on fds 3 and 4 (`child.rs`); the task's
//!   thread reads the report (`task.rs`), and stops other than SIGKILL go to init by name.
//!
//! - `executor.rs` is the seam the run loop programs against (ARCH-2): [`Executor`] and
//!   [`RunningTask`], implemented by [`Supervisor`] and [`TaskHandle`].
//!
//! Start reading at `supervisor.rs`, then `task.rs`.

pub mod allocator;
mod attempt;
pub mod cgroup;
mod child;
mod event;
mod executor;
pub mod guard;
pub mod host;
pub mod learn;
pub mod load;
pub mod process_tree;
pub mod sandbox;
pub mod sandbox_init;
pub mod subprocess;
mod supervisor;
mod task;
mod threads;
pub mod trace;

pub use attempt::{Attempt, Local, Remote};
pub use event::{
    Completion, ExecEvent, ExitReason, ResourceUsage, SandboxEnd, SandboxLaunch, SpawnSpec,
    StdinMode, Stream,
};
pub use executor::{Executor, KeptOutputsError, RunningTask};
pub use supervisor::{Output, Supervisor};
pub use task::TaskHandle;
