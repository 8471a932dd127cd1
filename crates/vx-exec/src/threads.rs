//! The task threads: one per running task (its pipes, its timers, its events), kept when the
//! task ends and given the next one. A thread start costs a stack mapping, a clone and a
//! thread's heap, and a cold run starts thousands of tasks; the threads that exist are at
//! most as many as tasks ever ran at once.
//!
//! A thread that finishes its job counts itself idle and waits on the one queue; a caller that
//! finds an idle thread takes it from the count and queues its job, so every queued job has a
//! thread waiting for it. Idle threads live as long as the process.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use crossbeam_channel::{Receiver, Sender};

type Job = Box<dyn FnOnce() + Send>;

/// A set of reusable threads; see the module documentation.
#[derive(Clone)]
pub(crate) struct Pool(Arc<Inner>);

struct Inner {
    name: &'static str,
    queue: Sender<Job>,
    jobs: Receiver<Job>,
    idle: AtomicUsize,
}

/// The task threads of the process.
pub(crate) fn tasks() -> &'static Pool {
    static TASKS: OnceLock<Pool> = OnceLock::new();
    TASKS.get_or_init(|| Pool::new("vx-task"))
}

impl Pool {
    pub(crate) fn new(name: &'static str) -> Pool {
        let (queue, jobs) = crossbeam_channel::unbounded();
        Pool(Arc::new(Inner {
            name,
            queue,
            jobs,
            idle: AtomicUsize::new(0),
        }))
    }

    /// Runs `job` on an idle thread, or on a new one; `Err` when none is idle and no thread
    /// can be started (the job is dropped).
    pub(crate) fn run(&self, job: Job) -> io::Result<()> {
        let inner = &self.0;
        let took_idle = inner
            .idle
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if took_idle {
            inner
                .queue
                .send(job)
                .expect("the pool holds its own receiver");
            return Ok(());
        }
        let inner = Arc::clone(inner);
        std::thread::Builder::new()
            .name(inner.name.into())
            .spawn(move || {
                let mut job = job;
                loop {
                    job();
                    inner.idle.fetch_add(1, Ordering::SeqCst);
                    match inner.jobs.recv() {
                        Ok(next) => job = next,
                        Err(_) => return,
                    }
                }
            })
            .map(drop)
    }

    /// How many threads wait for a job.
    #[cfg(test)]
    fn idle(&self) -> usize {
        self.0.idle.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_thread_takes_the_next_job() {
        let pool = Pool::new("test");
        let (tx, rx) = crossbeam_channel::unbounded();
        let first = tx.clone();
        pool.run(Box::new(move || {
            first.send(std::thread::current().id()).unwrap();
        }))
        .unwrap();
        let one = rx.recv().unwrap();
        // The thread counts itself idle just after its job: wait for that.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while pool.idle() == 0 && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        let second = tx.clone();
        pool.run(Box::new(move || {
            second.send(std::thread::current().id()).unwrap();
        }))
        .unwrap();
        assert_eq!(
            rx.recv().unwrap(),
            one,
            "the idle thread ran the second job"
        );
    }

    #[test]
    fn jobs_at_once_each_get_a_thread() {
        let pool = Pool::new("test");
        let (tx, rx) = crossbeam_channel::unbounded();
        let gate = std::sync::Arc::new(std::sync::Barrier::new(4));
        for _ in 0..4 {
            let tx = tx.clone();
            let gate = std::sync::Arc::clone(&gate);
            pool.run(Box::new(move || {
                // All four must be running together to pass the barrier.
                gate.wait();
                tx.send(std::thread::current().id()).unwrap();
            }))
            .unwrap();
        }
        let ids: std::collections::HashSet<_> = (0..4).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(ids.len(), 4);
    }
}
