//! The `Executor` seam (ARCH-2): how the run loop starts a task attempt without knowing where
//! it runs. [`Supervisor`] is the local-process executor; `vx-reapi`'s `RemoteExecutor` runs
//! the attempts placed remotely on a REAPI server and hands the others to a local one;
//! `vx-test-support` has a scripted fake so the run loop can be tested without processes.

use std::path::Path;

use crate::attempt::Attempt;
use crate::event::ExecEvent;
use crate::supervisor::Supervisor;
use crate::task::TaskHandle;

/// Starts task attempts. Events arrive on the sink, exactly one of `Completed` or `Declined`
/// last.
pub trait Executor: Send + Sync {
    fn spawn(
        &self,
        attempt: &Attempt,
        sink: Box<dyn FnMut(ExecEvent) + Send>,
    ) -> Box<dyn RunningTask>;

    /// How many attempts may be in flight off this machine at once (REM-11: they take no
    /// local slot); `None` when every attempt runs here.
    fn off_machine_limit(&self) -> Option<u32> {
        None
    }

    /// Writes into the workspace under `root` the outputs of `task` that an earlier attempt
    /// left with the executor (a completion with `outputs_kept`): a local task needs them on
    /// disk (REM-14). The executor forgets them after.
    fn fetch_kept_outputs(&self, task: &str, root: &Path) -> Result<(), KeptOutputsError> {
        let _ = (task, root);
        Ok(())
    }
}

/// Why the outputs an executor kept could not be written into the workspace (REM-14).
#[derive(Debug, thiserror::Error)]
#[error("remote execution {server}: {source}")]
pub struct KeptOutputsError {
    /// The executor's server as shown (its URL without credentials).
    pub server: String,
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// A started attempt, as the run loop controls it.
pub trait RunningTask: Send {
    /// The leader's pid; `None` when nothing started (the `Completed` event says why).
    fn pid(&self) -> Option<i32>;
    /// Stop politely (EXEC-6): `signal`, the grace, then SIGKILL. Returns at once.
    fn stop(&self, signal: i32);
    /// SIGKILL everything now.
    fn kill(&self);
    /// Blocks until the attempt is complete and a stop begun after that has finished.
    fn wait_stopped(&self);
    fn clone_box(&self) -> Box<dyn RunningTask>;
    /// Writes to the task's stdin when vx holds it (a pipe); false otherwise.
    fn write_stdin(&self, bytes: &[u8]) -> bool {
        let _ = bytes;
        false
    }
}

impl Executor for Supervisor {
    fn spawn(
        &self,
        attempt: &Attempt,
        sink: Box<dyn FnMut(ExecEvent) + Send>,
    ) -> Box<dyn RunningTask> {
        Box::new(Supervisor::spawn(self, attempt.local_spec(), sink))
    }
}

impl RunningTask for TaskHandle {
    fn pid(&self) -> Option<i32> {
        TaskHandle::pid(self)
    }

    fn stop(&self, signal: i32) {
        TaskHandle::stop(self, signal);
    }

    fn kill(&self) {
        TaskHandle::kill(self);
    }

    fn wait_stopped(&self) {
        TaskHandle::wait_stopped(self);
    }

    fn clone_box(&self) -> Box<dyn RunningTask> {
        Box::new(self.clone())
    }

    fn write_stdin(&self, bytes: &[u8]) -> bool {
        TaskHandle::write_stdin(self, bytes)
    }
}
