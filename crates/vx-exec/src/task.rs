//! One task's state machine: reading its output, its timeout, stopping it, its drain and its
//! leftovers, ending in exactly one `Completed` event.
//!
//! How this works: every task has one thread (the [`Worker`]) that owns the read ends of the
//! task's stdout and stderr and a wake pipe, and waits for all three with `poll(2)`, so a full
//! pipe never blocks the child. The reaper and [`TaskHandle`] never touch the output: they
//! change the shared [`TaskState`] and write a byte to the wake pipe.
//!
//! The worker goes through three phases:
//! 1. *Running*, until the reaper reports the leader's exit. Output is forwarded as read. At the
//!    timeout the worker emits `TimedOut` and begins a stop; when a stop's grace runs out it
//!    sends SIGKILL to whatever is left.
//! 2. *Drain*: output is read for at most `drain` after the exit; pipes still open then are
//!    closed unread (`OutputCut`), because a background process holding them must not keep
//!    the task going (EXEC-11).
//! 3. *Settle*: if a stop began while the leader ran, wait for the group and session to empty
//!    until the stop's grace ends, then SIGKILL what is left (EXEC-8); otherwise, for one-shot
//!    tasks, stop whatever is left (`LeftoversStopped`). Then `Completed`.
//!
//! A stop is begun once (by [`TaskHandle::stop`], [`TaskHandle::kill`] or the timeout): the
//! signal is sent at once by whoever begins it, and the kill deadline is recorded for the
//! worker to enforce. After `Completed`, a stop of a persistent task's leftovers runs on a
//! short-lived thread of its own.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use nix::fcntl::{fcntl, FcntlArg, OFlag};

use crate::event::{ExecEvent, ExitReason, ResourceUsage};
use crate::process_tree;

/// What a task asks of the supervisor that started it: whether its session id (its leader's
/// pid) is still its own, and to forget it once the task is done. A trait, so a task knows
/// nothing else of the supervisor.
pub(crate) trait Sessions: Send + Sync {
    fn owns_session(&self, session: i32, task_id: u64) -> bool;
    /// Forgets a finished task's session, unless a later task already took the pid.
    fn release_session(&self, session: i32, task_id: u64);
}

mod worker;
pub(crate) use worker::Worker;

type Sink = Box<dyn FnMut(ExecEvent) + Send>;

/// How often an emptiness wait looks at the process table: often enough that a stopped task
/// completes promptly, rarely enough to cost nothing measurable.
const LIVENESS_POLL: Duration = Duration::from_millis(10);

/// How long to wait for SIGKILLed processes to disappear before giving up (a process in
/// uninterruptible sleep can take a while; vx reports the task complete regardless).
const AFTER_SIGKILL: Duration = Duration::from_secs(1);

const READ_CHUNK: usize = 64 * 1024;

/// The leader's end, as the reaper saw it.
pub(crate) struct LeaderExit {
    pub reason: ExitReason,
    pub usage: ResourceUsage,
    pub at: Instant,
}

/// A handle on a spawned task, to stop or kill it. Cheap to clone.
#[derive(Clone)]
pub struct TaskHandle {
    shared: Arc<TaskShared>,
}

pub(crate) struct TaskShared {
    id: u64,
    /// The leader's pid, which is also the task's process group and session id. Unset when the
    /// spawn failed.
    pid: OnceLock<i32>,
    /// The thread that forked the leader: its `children` list is where a child the leader
    /// makes with `CLONE_PARENT` appears (`process_tree::count_or_proof`).
    spawner: OnceLock<i32>,
    supervisor: Arc<dyn Sessions>,
    kill_grace: Duration,
    state: Mutex<TaskState>,
    /// Signalled on every state change: leader exit, stop, completion.
    changed: Condvar,
    /// The write end of the worker's wake pipe (non-blocking).
    wake: Option<OwnedFd>,
    /// The write end of a held stdin pipe (EXEC-10), closed when the task is dropped.
    stdin_hold: Mutex<Option<OwnedFd>>,
    /// A sandboxed task's control pipe to its init (SBX-9): signals other than SIGKILL are
    /// written there as names, since a signal sent to `bwrap` would not reach the command.
    control: Mutex<Option<OwnedFd>>,
    /// The guard has been told vx is finished with this task's pid (EXEC-7).
    guard_released: AtomicBool,
    /// No process of the task is alive, proven (see `process_tree::Liveness::ProvenEmpty`).
    proven_empty: AtomicBool,
    /// The task's own cgroup, where vx contains tasks in cgroups (`cgroup.rs`): its members
    /// count as the task's processes beside its session and group.
    cgroup: Option<crate::cgroup::TaskCgroup>,
}

#[derive(Default)]
struct TaskState {
    leader_exit: Option<LeaderExit>,
    stop: Option<Stop>,
    /// SIGKILL was needed by a stop that began while the leader was running.
    killed: bool,
    /// `Completed` has been emitted (or is about to be, and nothing else will be).
    finished: bool,
    /// A stop begun after `Completed` is still waiting for the processes to go.
    stopping_after_finish: bool,
}

struct Stop {
    cause: StopCause,
    /// The stop began while the leader was running, so it decides the task's outcome.
    before_exit: bool,
    kill_at: Instant,
    kill_sent: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum StopCause {
    Handle,
    Timeout,
}

impl TaskHandle {
    pub(crate) fn new(shared: Arc<TaskShared>) -> TaskHandle {
        TaskHandle { shared }
    }

    /// A handle for a task that never started: no pid, already complete.
    pub(crate) fn failed(
        id: u64,
        supervisor: Arc<dyn Sessions>,
        kill_grace: Duration,
    ) -> TaskHandle {
        let shared = TaskShared {
            id,
            pid: OnceLock::new(),
            spawner: OnceLock::new(),
            supervisor,
            kill_grace,
            state: Mutex::new(TaskState {
                finished: true,
                ..TaskState::default()
            }),
            changed: Condvar::new(),
            wake: None,
            stdin_hold: Mutex::new(None),
            control: Mutex::new(None),
            guard_released: AtomicBool::new(false),
            proven_empty: AtomicBool::new(false),
            cgroup: None,
        };
        TaskHandle {
            shared: Arc::new(shared),
        }
    }

    pub(crate) fn shared(&self) -> Arc<TaskShared> {
        Arc::clone(&self.shared)
    }

    /// Writes `bytes` to the task's held stdin pipe (EXEC-10): what a user types into an
    /// interactive task in the task UI. False when it has none or the write failed (the task
    /// closed its stdin or ended).
    pub fn write_stdin(&self, bytes: &[u8]) -> bool {
        let hold = self
            .shared
            .stdin_hold
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match hold.as_ref() {
            Some(fd) => nix::unistd::write(fd, bytes).is_ok_and(|n| n == bytes.len()),
            None => false,
        }
    }

    /// The leader's pid (also the task's process group and session id); `None` if the spawn
    /// failed.
    pub fn pid(&self) -> Option<i32> {
        self.shared.pid.get().copied()
    }

    /// Stops the task (EXEC-6): sends `signal` (SIGTERM normally; SIGINT when forwarding
    /// Ctrl-C) to the task's process group and session once, then, up to `kill_grace` later,
    /// SIGKILL to whatever is still alive (zombies do not count). Idempotent: only the first
    /// stop or kill sends anything.
    ///
    /// Returns at once. While the task runs, its `Completed` event (with `stopped: true`) marks
    /// the end. After `Completed` (leftovers of a persistent task), the waiting happens on a
    /// thread of its own; [`TaskHandle::wait_stopped`] waits for it.
    pub fn stop(&self, signal: i32) {
        self.shared.begin_stop(signal, StopCause::Handle);
    }

    /// SIGKILLs the whole group and session now (a second Ctrl-C).
    pub fn kill(&self) {
        self.shared.kill();
    }

    /// Blocks until the task is complete (its `Completed` event has been emitted) and a stop
    /// begun after that has finished.
    pub fn wait_stopped(&self) {
        let mut state = self.shared.lock();
        while !state.finished || state.stopping_after_finish {
            state = self
                .shared
                .changed
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl TaskShared {
    /// Returns the shared state and the read end of its wake pipe.
    pub(crate) fn new(
        id: u64,
        supervisor: Arc<dyn Sessions>,
        kill_grace: Duration,
        cgroup: Option<crate::cgroup::TaskCgroup>,
    ) -> std::io::Result<(Arc<TaskShared>, OwnedFd)> {
        let (wake_read, wake_write) = crate::child::pipe()?;
        for end in [&wake_read, &wake_write] {
            fcntl(end, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        }
        let shared = TaskShared {
            id,
            pid: OnceLock::new(),
            spawner: OnceLock::new(),
            supervisor,
            kill_grace,
            state: Mutex::new(TaskState::default()),
            changed: Condvar::new(),
            wake: Some(wake_write),
            stdin_hold: Mutex::new(None),
            control: Mutex::new(None),
            guard_released: AtomicBool::new(false),
            proven_empty: AtomicBool::new(false),
            cgroup,
        };
        Ok((Arc::new(shared), wake_read))
    }

    /// Called on the thread that forked the leader, right after the fork.
    pub(crate) fn set_pid(&self, pid: i32) {
        let _ = self.pid.set(pid);
        let _ = self.spawner.set(nix::unistd::gettid().as_raw());
    }

    pub(crate) fn hold_stdin(&self, write_end: Option<OwnedFd>) {
        *self.stdin_hold.lock().unwrap_or_else(|e| e.into_inner()) = write_end;
    }

    pub(crate) fn hold_control(&self, write_end: Option<OwnedFd>) {
        *self.control.lock().unwrap_or_else(|e| e.into_inner()) = write_end;
    }

    fn lock(&self) -> MutexGuard<'_, TaskState> {
        // Every update is a few plain assignments, so state behind a poisoned lock is whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Called by the reaper.
    pub(crate) fn leader_exited(&self, exit: LeaderExit) {
        self.lock().leader_exit = Some(exit);
        self.changed.notify_all();
        self.wake();
    }

    fn wake(&self) {
        if let Some(wake) = &self.wake {
            // A full pipe already holds a pending wake-up, so EAGAIN is fine.
            let _ = nix::unistd::write(wake, &[1]);
        }
    }

    /// The pid to signal, unless the spawn failed or a later task has taken over the pid
    /// (which can only happen once every process of this task is gone).
    fn signal_target(&self) -> Option<i32> {
        let pid = *self.pid.get()?;
        self.supervisor.owns_session(pid, self.id).then_some(pid)
    }

    fn signal_all(&self, signal: i32) {
        if signal != libc::SIGKILL && self.tell_init(signal) {
            return;
        }
        // SIGKILL of a sandboxed task goes to bwrap's group, which holds init: init's end
        // ends the pid namespace and every process in it (SBX-9).
        let sent = match self.signal_target() {
            Some(pid) => process_tree::signal_tree(pid, signal),
            None => Vec::new(),
        };
        // Whatever left the session (a `setsid` daemon) is still in the task's cgroup.
        if let Some(cgroup) = &self.cgroup {
            cgroup.signal(signal, &sent);
        }
    }

    /// Asks a sandboxed task's init to send `signal` to the command's group; false when the
    /// task is not sandboxed. A closed pipe (init already gone) needs nothing more: SIGPIPE is
    /// ignored in vx and the sandbox is ending anyway.
    fn tell_init(&self, signal: i32) -> bool {
        let control = self.control.lock().unwrap_or_else(|e| e.into_inner());
        let Some(pipe) = control.as_ref() else {
            return false;
        };
        let word: &[u8] = if signal == libc::SIGINT {
            b"INT\n"
        } else {
            b"TERM\n"
        };
        let _ = nix::unistd::write(pipe, word);
        true
    }

    /// How many processes of the task are alive. Once the task is proven empty that is
    /// remembered: every task is asked at least twice after its leader exits (leftovers, the
    /// guard's release), and the proof reads `/proc` for vx's children.
    fn live_count(&self) -> usize {
        if self.proven_empty.load(Ordering::Relaxed) {
            return 0;
        }
        let in_cgroup = self.cgroup.as_ref().map_or(0, |c| c.members().len());
        let Some(pid) = self.signal_target() else {
            return in_cgroup;
        };
        // Empty for good only when the cgroup is empty too: nothing can join either again.
        match (
            process_tree::count_or_proof(pid, self.spawner.get().copied()),
            in_cgroup,
        ) {
            (process_tree::Liveness::ProvenEmpty, 0) => {
                self.proven_empty.store(true, Ordering::Relaxed);
                0
            }
            (process_tree::Liveness::ProvenEmpty, n) => n,
            (process_tree::Liveness::Counted(n), m) => n.max(m),
        }
    }

    fn begin_stop(self: &Arc<Self>, signal: i32, cause: StopCause) {
        let mut state = self.lock();
        if state.stop.is_some() || self.pid.get().is_none() {
            return;
        }
        state.stop = Some(Stop {
            cause,
            before_exit: state.leader_exit.is_none(),
            kill_at: Instant::now() + self.kill_grace,
            kill_sent: false,
        });
        let after_finish = state.finished;
        state.stopping_after_finish |= after_finish;
        drop(state);
        self.signal_all(signal);
        self.wake();
        self.changed.notify_all();
        if after_finish {
            self.settle_in_background();
        }
    }

    /// Waits, on a thread of its own, for a stop begun after `Completed` to finish.
    fn settle_in_background(self: &Arc<Self>) {
        // Only waiting is left to do; if no thread can be had, wait here instead.
        let task = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("vx-stop".into())
            .spawn(move || task.settle_after_finish());
        if spawned.is_err() {
            self.settle_after_finish();
        }
    }

    fn settle_after_finish(&self) {
        self.wait_until_empty(None);
        self.release_guard();
        self.lock().stopping_after_finish = false;
        self.changed.notify_all();
    }

    fn kill(self: &Arc<Self>) {
        let mut state = self.lock();
        if self.pid.get().is_none() {
            return;
        }
        let now = Instant::now();
        let before_exit = state.leader_exit.is_none();
        let stop = state.stop.get_or_insert(Stop {
            cause: StopCause::Handle,
            before_exit,
            kill_at: now,
            kill_sent: true,
        });
        stop.kill_at = stop.kill_at.min(now);
        stop.kill_sent = true;
        if stop.before_exit {
            state.killed = true;
        }
        let settle = state.finished && !state.stopping_after_finish;
        state.stopping_after_finish |= settle;
        drop(state);
        self.signal_all(libc::SIGKILL);
        self.wake();
        self.changed.notify_all();
        if settle {
            self.settle_in_background();
        }
    }

    /// Sends SIGKILL if a stop's grace has run out; otherwise returns when it will.
    fn escalate_if_due(&self, now: Instant) -> Option<Instant> {
        let state = self.lock();
        let stop = state.stop.as_ref()?;
        if stop.kill_sent {
            return None;
        }
        if now < stop.kill_at {
            return Some(stop.kill_at);
        }
        drop(state);
        self.send_kill();
        None
    }

    /// SIGKILLs whatever is left and records whether that was needed.
    fn send_kill(&self) {
        let needed = self.live_count() > 0;
        let mut state = self.lock();
        let mut counts = false;
        if let Some(stop) = state.stop.as_mut() {
            stop.kill_sent = true;
            counts = stop.before_exit;
        }
        if needed && counts {
            state.killed = true;
        }
        drop(state);
        if needed {
            self.signal_all(libc::SIGKILL);
        }
    }

    /// Waits until no process of the task is alive. If `limit` or the stop's kill deadline
    /// passes first, SIGKILLs what is left and waits a little for it to go.
    fn wait_until_empty(&self, limit: Option<Instant>) {
        loop {
            if self.live_count() == 0 {
                return;
            }
            let state = self.lock();
            let stop_deadline = state.stop.as_ref().map(|stop| stop.kill_at);
            let deadline = earliest(limit, stop_deadline);
            let now = Instant::now();
            if deadline.is_some_and(|deadline| now >= deadline) {
                drop(state);
                self.send_kill();
                let gone_by = Instant::now() + AFTER_SIGKILL;
                while self.live_count() > 0 && Instant::now() < gone_by {
                    std::thread::sleep(LIVENESS_POLL);
                }
                return;
            }
            // The condition variable wakes this early for a kill() or a new stop.
            let nap = deadline.map_or(LIVENESS_POLL, |d| LIVENESS_POLL.min(d - now));
            drop(
                self.changed
                    .wait_timeout(state, nap)
                    .unwrap_or_else(|e| e.into_inner()),
            );
        }
    }
}

impl TaskShared {
    /// Tells the guard, once, that vx is finished with this task's pid (EXEC-7). Called as soon
    /// as no process of the task is left: from then on its pid may be reused by an unrelated
    /// process, which the guard must never kill.
    fn release_guard(&self) {
        if let Some(&pid) = self.pid.get() {
            if !self.guard_released.swap(true, Ordering::AcqRel) {
                crate::guard::done(pid);
            }
        }
        if let Some(cgroup) = &self.cgroup {
            cgroup.release();
        }
    }
}

impl Drop for TaskShared {
    fn drop(&mut self) {
        if let Some(&pid) = self.pid.get() {
            self.supervisor.release_session(pid, self.id);
        }
        // Every handle is gone, so vx will never stop what may be left of the task (a
        // persistent task's daemon nobody stopped): the guard need not either.
        self.release_guard();
    }
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
