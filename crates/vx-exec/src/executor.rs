//! The `Executor` seam (ARCH-2): how the run loop starts a task attempt without knowing where
//! it runs. [`Supervisor`] is the local-process executor; a remote (REAPI) executor joins in a
//! later milestone; `vx-test-support` has a scripted fake so the run loop can be tested without
//! processes.

use crate::event::{ExecEvent, SpawnSpec};
use crate::supervisor::Supervisor;
use crate::task::TaskHandle;

/// Starts task attempts. Events arrive on the sink, `Completed` last, exactly once.
pub trait Executor: Send + Sync {
    fn spawn(
        &self,
        spec: SpawnSpec,
        sink: Box<dyn FnMut(ExecEvent) + Send>,
    ) -> Box<dyn RunningTask>;
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
        spec: SpawnSpec,
        sink: Box<dyn FnMut(ExecEvent) + Send>,
    ) -> Box<dyn RunningTask> {
        Box::new(Supervisor::spawn(self, spec, sink))
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
