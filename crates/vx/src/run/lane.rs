//! A lane (SCHED-3, STORE-7): jobs run on their own threads, at most `capacity` at once, the
//! rest waiting in order. The restore lane and the save lane are both one of these; each job
//! ends by sending one message back to the run loop, which then calls [`Lane::done`].

use std::collections::VecDeque;

use crossbeam_channel::Sender;

use super::execute::Msg;

pub struct Lane<J> {
    name: &'static str,
    capacity: usize,
    running: usize,
    waiting: VecDeque<(usize, J)>,
}

impl<J: Send + 'static> Lane<J> {
    pub fn new(name: &'static str, capacity: usize) -> Lane<J> {
        Lane {
            name,
            capacity: capacity.max(1),
            running: 0,
            waiting: VecDeque::new(),
        }
    }

    /// Whether a job is running or waiting.
    pub fn busy(&self) -> bool {
        self.running > 0
    }

    /// Starts `job` for node `i` on a thread, or queues it when the lane is full. `work` runs on
    /// that thread and gives the message for the loop. `Err(i)` when no thread could be
    /// started: the job is dropped and the caller falls back.
    pub fn submit(
        &mut self,
        i: usize,
        job: J,
        tx: &Sender<Msg>,
        work: fn(usize, J) -> Msg,
    ) -> Result<(), usize> {
        if self.running >= self.capacity {
            self.waiting.push_back((i, job));
            return Ok(());
        }
        let tx = tx.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("vx-{}", self.name))
            .spawn(move || {
                let _ = tx.send(work(i, job));
            });
        match spawned {
            Ok(_) => {
                self.running += 1;
                Ok(())
            }
            Err(_) => Err(i),
        }
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

    #[test]
    fn a_full_lane_queues_jobs_in_order_and_hands_them_out_as_places_free() {
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut lane: Lane<i32> = Lane::new("test", 1);
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
}
