//! The supervisor: the one owner of every child of the vx process, and its reaper thread.
//!
//! How this works: the first [`Supervisor::new`] makes vx a child subreaper (Linux) and starts
//! one reaper thread; every later `Supervisor` value shares them, because two threads calling
//! `waitpid(-1)` would steal each other's children. The reaper blocks in `wait4(-1)` and, for
//! each child that ends, looks the pid up in the registry: a task leader's status goes to its
//! task (which wakes the task's thread); any other pid is a descendant that was orphaned and
//! adopted by vx, and reaping it is all that is needed.
//!
//! [`Supervisor::spawn`] forks while holding the registry lock and registers the pid before
//! releasing it, so the reaper, which takes the lock to look a pid up, can never see a leader's
//! exit before its registration. When vx has no child, `wait4` fails with ECHILD; the reaper
//! then sleeps on a condition variable until the spawn counter moves past the value it read
//! *before* calling `wait4`, so a spawn between the two can never be missed.
//!
//! Invariant: while a supervisor exists, nothing else in the process may wait for children
//! (`std::process::Child::wait`, `Command::output`): the reaper would take their statuses.
//! Use [`Supervisor::output`] for short helper commands instead.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::child::Prepared;
use crate::event::{Completion, ExecEvent, ExitReason, ResourceUsage, SpawnSpec, Stream};
use crate::task::{LeaderExit, Sessions, TaskHandle, TaskShared, Worker};

/// One per vx process; owns every child. Cloning it, or calling [`Supervisor::new`] again,
/// gives another handle on the same reaper.
#[derive(Clone)]
pub struct Supervisor {
    shared: Arc<SupervisorShared>,
}

pub(crate) struct SupervisorShared {
    registry: Mutex<Registry>,
    /// Signalled after every successful fork (the reaper waits on it when vx has no child).
    spawned: Condvar,
    next_task_id: AtomicU64,
}

#[derive(Default)]
struct Registry {
    /// Task leaders not yet reaped.
    leaders: HashMap<i32, Arc<TaskShared>>,
    /// Which task a session id (= leader pid) belongs to. A task whose leader and processes are
    /// all gone may have its pid reused by a later task; only the newest owner may signal it.
    sessions: HashMap<i32, u64>,
    /// Counts forks, for the reaper's ECHILD wait.
    spawns: u64,
    /// Leaders of interactive tasks holding the terminal (EXEC-14): a stop of one (Ctrl-Z) is
    /// passed on to vx's own job.
    terminal: std::collections::HashSet<i32>,
}

/// What [`Supervisor::output`] collected.
#[derive(Debug)]
pub struct Output {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub completion: Completion,
}

/// The one supervisor of the process, made by the first [`Supervisor::new`].
static SHARED: OnceLock<Arc<SupervisorShared>> = OnceLock::new();

impl Supervisor {
    /// The registry as the tasks see it.
    fn sessions(&self) -> Arc<dyn Sessions> {
        Arc::clone(&self.shared) as Arc<dyn Sessions>
    }

    /// Makes vx a child subreaper (`PR_SET_CHILD_SUBREAPER` on Linux) and starts the single
    /// reaper thread, the first time; afterwards returns another handle on them.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Supervisor {
        let shared = SHARED.get_or_init(|| {
            #[cfg(target_os = "linux")]
            match nix::sys::prctl::set_child_subreaper(true) {
                Ok(()) => crate::process_tree::IS_SUBREAPER.store(true, Ordering::Relaxed),
                Err(err) => {
                    tracing::warn!(%err, "could not become a child subreaper; orphans go to init")
                }
            }
            let shared = Arc::new(SupervisorShared {
                registry: Mutex::new(Registry::default()),
                spawned: Condvar::new(),
                next_task_id: AtomicU64::new(1),
            });
            let reaper = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("vx-reaper".into())
                .spawn(move || reaper.reap_forever())
                .expect("the reaper thread must start: vx cannot supervise children without it");
            shared
        });
        Supervisor {
            shared: Arc::clone(shared),
        }
    }

    /// How many processes this process has spawned through the supervisor (tasks, probes, git
    /// commands), the spawn counter of PERF-3: 0 when no supervisor was made. Reading it makes
    /// none, for making one starts the reaper, whose `wait4(-1)` takes every child of the
    /// process, those of a `std::process::Command` included (the unit tests' `git`).
    pub fn spawned_so_far() -> u64 {
        SHARED
            .get()
            .map_or(0, |shared| shared.next_task_id.load(Ordering::Relaxed) - 1)
    }

    /// Spawns a task. Never fails: a spawn failure is reported as a `Completed` event with
    /// [`ExitReason::SpawnFailed`] and exit code 127. Events are delivered on the task's own
    /// thread (one of `threads::tasks`, reused across tasks), never inside this call (except
    /// if even that thread cannot be had).
    pub fn spawn(&self, spec: SpawnSpec, mut sink: Box<dyn FnMut(ExecEvent) + Send>) -> TaskHandle {
        let task_id = self.shared.next_task_id.fetch_add(1, Ordering::Relaxed);
        let (start_tx, start_rx) = std::sync::mpsc::channel::<Worker>();
        // The thread comes first (an idle task thread, or a new one): if it cannot be had
        // nothing has been forked yet, and the failure can still be reported to the sink.
        let thread = crate::threads::tasks().run(Box::new(move || {
            if let Ok(worker) = start_rx.recv() {
                worker.run();
            }
        }));
        if let Err(err) = thread {
            sink(ExecEvent::Completed(Completion::spawn_failed(err)));
            return TaskHandle::failed(task_id, self.sessions(), spec.kill_grace);
        }

        let failed = |sink, err| {
            let handle = TaskHandle::failed(task_id, self.sessions(), spec.kill_grace);
            let _ = start_tx.send(Worker::failed(handle.shared(), sink, err));
            handle
        };
        let started = Instant::now();
        // A sandboxed task needs no cgroup: its pid namespace ends with its init, taking every
        // process in it along (SBX-9), and a cgroup around bubblewrap's namespaces cost 4–5 ms
        // per task (docs/benchmarks.md).
        let cgroup = spec
            .sandbox
            .is_none()
            .then(|| crate::cgroup::TaskCgroup::create(task_id))
            .flatten();
        let join = cgroup.as_ref().map(crate::cgroup::TaskCgroup::join);
        let prepared = match Prepared::new(&spec, join) {
            Ok(prepared) => prepared,
            Err(err) => return failed(sink, err),
        };
        let created = TaskShared::new(task_id, self.sessions(), spec.kill_grace, cgroup);
        let (task, wake) = match created {
            Ok(created) => created,
            Err(err) => return failed(sink, err),
        };
        let (forked, replaced) = {
            let mut registry = self.shared.lock();
            let forked = prepared.fork();
            let mut replaced = None;
            if let Ok(pid) = forked {
                task.set_pid(pid);
                replaced = registry.leaders.insert(pid, Arc::clone(&task));
                registry.sessions.insert(pid, task_id);
                if spec.stdin == crate::event::StdinMode::Terminal {
                    registry.terminal.insert(pid);
                }
                registry.spawns += 1;
                self.shared.spawned.notify_all();
            }
            (forked, replaced)
        };
        // Dropped outside the lock: dropping a task takes the lock to release its session.
        drop(replaced);
        let (exec_result, ends) = prepared.exec_result();
        let pid = forked.as_ref().ok().copied();
        if let Err(err) = forked.and(exec_result) {
            // A child that failed to exec exits 127 and the reaper reaps it, which removes it
            // from `leaders`. The handle the caller gets has no pid.
            if let Some(pid) = pid {
                self.shared.release_session(pid, task_id);
            }
            if spec.stdin == crate::event::StdinMode::Terminal {
                // The child may have taken the foreground before its exec failed.
                crate::process_tree::take_foreground();
            }
            return failed(sink, err);
        }
        task.hold_stdin(ends.stdin_hold);
        let handle = TaskHandle::new(Arc::clone(&task));
        task.hold_control(ends.control);
        let worker = Worker::new(task, wake, sink, ends.stdout, ends.stderr, &spec, started);
        let worker = worker.with_report(ends.report);
        let _ = start_tx.send(worker);
        handle
    }

    /// Runs a short helper command (a git command, a runtime probe) to the end and collects
    /// its output, through the same supervision as a task. Blocks the calling thread.
    pub fn output(&self, spec: SpawnSpec) -> Output {
        let (tx, rx) = crossbeam_channel::unbounded();
        self.spawn(
            spec,
            Box::new(move |event| {
                let _ = tx.send(event);
            }),
        );
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        for event in rx {
            match event {
                ExecEvent::Output {
                    stream: Stream::Stdout,
                    bytes,
                } => stdout.extend_from_slice(&bytes),
                ExecEvent::Output {
                    stream: Stream::Stderr,
                    bytes,
                } => stderr.extend_from_slice(&bytes),
                ExecEvent::Completed(completion) => {
                    return Output {
                        stdout,
                        stderr,
                        completion,
                    }
                }
                ExecEvent::TimedOut
                | ExecEvent::OutputCut
                | ExecEvent::LeftoversStopped(_)
                | ExecEvent::Access(_)
                | ExecEvent::Note(_)
                | ExecEvent::Aside(_) => {}
                ExecEvent::Declined(line) => {
                    unreachable!("the supervisor declines nothing: {line}")
                }
            }
        }
        unreachable!("a task's thread always sends Completed before dropping its sink")
    }
}

impl SupervisorShared {
    fn lock(&self) -> MutexGuard<'_, Registry> {
        // A panic while holding the lock leaves the maps consistent (every update is a single
        // insert or remove), so a poisoned lock is still usable.
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn reap_forever(&self) {
        loop {
            let spawns_before = self.lock().spawns;
            let mut status: libc::c_int = 0;
            // SAFETY: an all-zero rusage is a valid value of this plain C struct.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: wait4 writes only to the two out-pointers, which point to locals.
            let pid = unsafe { libc::wait4(-1, &mut status, libc::WUNTRACED, &mut usage) };
            if pid > 0 && libc::WIFSTOPPED(status) {
                // EXEC-14: Ctrl-Z stopped the interactive task in the terminal's foreground;
                // vx's job stops too, so the shell that started vx takes the terminal, and
                // `fg` resumes both. Any other child's stop is its own business.
                if self.lock().terminal.contains(&pid) {
                    crate::process_tree::pass_on_stop(pid);
                }
                continue;
            }
            if pid > 0 {
                let at = Instant::now();
                let task = {
                    let mut registry = self.lock();
                    registry.terminal.remove(&pid);
                    registry.leaders.remove(&pid)
                };
                match task {
                    Some(task) => task.leader_exited(LeaderExit {
                        reason: decode_status(status),
                        usage: decode_usage(&usage),
                        at,
                    }),
                    None => tracing::trace!(pid, "reaped an adopted orphan"),
                }
                continue;
            }
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => {}
                Some(libc::ECHILD) => {
                    let mut registry = self.lock();
                    while registry.spawns == spawns_before {
                        registry = self
                            .spawned
                            .wait(registry)
                            .unwrap_or_else(|e| e.into_inner());
                    }
                }
                _ => {
                    // Not expected from wait4(-1, 0); avoid spinning if it ever happens.
                    tracing::error!(err = %io::Error::last_os_error(), "wait4 failed");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }
}

impl Sessions for SupervisorShared {
    /// Whether `session` still belongs to task `task_id`, i.e. no later task got the same pid.
    fn owns_session(&self, session: i32, task_id: u64) -> bool {
        self.lock().sessions.get(&session) == Some(&task_id)
    }

    /// Forgets a finished task's session, unless a later task already took the pid.
    fn release_session(&self, session: i32, task_id: u64) {
        let mut registry = self.lock();
        if registry.sessions.get(&session) == Some(&task_id) {
            registry.sessions.remove(&session);
        }
    }
}

fn decode_status(status: libc::c_int) -> ExitReason {
    if libc::WIFSIGNALED(status) {
        ExitReason::Signal(libc::WTERMSIG(status))
    } else {
        ExitReason::Code(libc::WEXITSTATUS(status))
    }
}

fn decode_usage(usage: &libc::rusage) -> ResourceUsage {
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    let max_rss = usage.ru_maxrss.max(0) as u64;
    ResourceUsage {
        user_cpu: time(usage.ru_utime),
        system_cpu: time(usage.ru_stime),
        max_rss_bytes: if cfg!(target_os = "macos") {
            max_rss
        } else {
            max_rss * 1024
        },
    }
}
