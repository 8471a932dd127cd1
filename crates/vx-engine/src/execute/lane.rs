//! A lane (SCHED-3, STORE-7): jobs run on the lane's own threads, at most `capacity` at once,
//! the rest waiting in order. The restore lane and the save lane are both one of these; each
//! job ends by sending one message (`M`, the loop's) back to the run loop, which then calls
//! [`Lane::done`].
//!
//! The threads are started on demand, up to `capacity`, and then kept for the run: a warm run
//! restores thousands of entries and a cold one saves thousands, and a thread per job cost a
//! thread start, a stack and (with mimalloc) a heap each time.

use std::collections::VecDeque;

use crossbeam_channel::Sender;

/// A job for a lane thread: the node, the job, the work, and where its message goes.
type Job<J, M> = (usize, J, fn(usize, J) -> M, Sender<M>);

pub struct Lane<J, M> {
    name: &'static str,
    capacity: usize,
    running: usize,
    waiting: VecDeque<(usize, J)>,
    /// Threads started so far; each takes one job at a time from `queue`.
    threads: usize,
    queue: Option<Sender<Job<J, M>>>,
    receiver: Option<crossbeam_channel::Receiver<Job<J, M>>>,
}

impl<J: Send + 'static, M: Send + 'static> Lane<J, M> {
    pub fn new(name: &'static str, capacity: usize) -> Lane<J, M> {
        Lane {
            name,
            capacity: capacity.max(1),
            running: 0,
            waiting: VecDeque::new(),
            threads: 0,
            queue: None,
            receiver: None,
        }
    }

    /// Whether a job is running or waiting.
    pub fn busy(&self) -> bool {
        self.running > 0
    }

    /// Starts `job` for node `i` on a lane thread, or queues it when the lane is full. `work`
    /// runs on that thread and gives the message for the loop. `Err(i)` when the lane has no
    /// thread and none could be started: the job is dropped and the caller falls back.
    pub fn submit(
        &mut self,
        i: usize,
        job: J,
        tx: &Sender<M>,
        work: fn(usize, J) -> M,
    ) -> Result<(), usize> {
        if self.running >= self.capacity {
            self.waiting.push_back((i, job));
            return Ok(());
        }
        if self.queue.is_none() {
            let (queue, receiver) = crossbeam_channel::unbounded();
            self.queue = Some(queue);
            self.receiver = Some(receiver);
        }
        // Every thread is busy with a job: one more, up to the capacity.
        if self.threads == self.running && !self.start_thread() && self.threads == 0 {
            return Err(i);
        }
        let queue = self.queue.as_ref().expect("created above");
        if queue.send((i, job, work, tx.clone())).is_err() {
            return Err(i);
        }
        self.running += 1;
        Ok(())
    }

    fn start_thread(&mut self) -> bool {
        let receiver = self.receiver.clone().expect("created with the queue");
        let started = std::thread::Builder::new()
            .name(format!("vx-{}", self.name))
            .spawn(move || {
                for (i, job, work, tx) in receiver.iter() {
                    let _ = tx.send(work(i, job));
                }
            });
        if started.is_ok() {
            self.threads += 1;
        }
        started.is_ok()
    }

    /// A job's message arrived: its place is free. Returns the next waiting job to submit.
    pub fn done(&mut self) -> Option<(usize, J)> {
        self.running -= 1;
        self.waiting.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    enum Msg {
        Signal(i32),
    }

    #[test]
    fn a_full_lane_queues_jobs_in_order_and_hands_them_out_as_places_free() {
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut lane: Lane<i32, Msg> = Lane::new("test", 1);
        let work = |_i, job: i32| Msg::Signal(job);
        assert_eq!(lane.submit(0, 10, &tx, work), Ok(()));
        assert_eq!(lane.submit(1, 11, &tx, work), Ok(()));
        assert_eq!(lane.submit(2, 12, &tx, work), Ok(()));
        assert!(lane.busy());
        let Ok(Msg::Signal(first)) = rx.recv() else {
            panic!("the running job sends its message")
        };
        assert_eq!(first, 10);
        assert!(rx.try_recv().is_err(), "only one job runs at a time");
        assert_eq!(lane.done(), Some((1, 11)));
        assert_eq!(lane.submit(1, 11, &tx, work), Ok(()));
        assert!(matches!(rx.recv(), Ok(Msg::Signal(11))));
        assert_eq!(lane.done(), Some((2, 12)));
        assert_eq!(lane.submit(2, 12, &tx, work), Ok(()));
        assert!(matches!(rx.recv(), Ok(Msg::Signal(12))));
        assert_eq!(lane.done(), None);
        assert!(!lane.busy());
    }

    #[test]
    fn jobs_reuse_the_lanes_threads() {
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut lane: Lane<i32, Msg> = Lane::new("test", 2);
        let work = |_i, job: i32| Msg::Signal(job);
        for job in 0..20 {
            assert_eq!(lane.submit(job as usize, job, &tx, work), Ok(()));
            assert!(matches!(rx.recv(), Ok(Msg::Signal(j)) if j == job));
            assert_eq!(lane.done(), None);
        }
        assert_eq!(lane.threads, 1, "one job at a time needs one thread");
        // Two at once start a second thread, and no more.
        lane.submit(0, 0, &tx, work).unwrap();
        lane.submit(1, 1, &tx, work).unwrap();
        lane.submit(2, 2, &tx, work).unwrap();
        assert_eq!(lane.threads, 2);
        for _ in 0..2 {
            rx.recv().unwrap();
            if let Some((i, job)) = lane.done() {
                lane.submit(i, job, &tx, work).unwrap();
            }
        }
        rx.recv().unwrap();
        assert_eq!(lane.done(), None);
        assert_eq!(lane.threads, 2);
    }
}
