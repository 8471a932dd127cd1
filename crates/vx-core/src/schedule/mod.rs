//! The scheduler (SCHED-1, SCHED-2, SCHED-4, SCHED-7, EXEC-17): which ready task starts next,
//! and what a finished task releases or blocks.
//!
//! How this works: the scheduler is a pure state machine fed by the run loop. It tracks, per
//! node, how many dependencies are unfinished; a node whose count reaches zero joins the ready
//! heap ordered by priority (the policy's: the expected remaining critical path, see
//! `policy.rs`), then by when it became ready, then by task id. The run loop asks
//! [`Scheduler::next_ready`] while it has a free slot: the first ready node in that order that
//! the policy admits beside the executing ones starts, and the nodes it passed over are
//! *held* (SCHED-4) and keep their place. The loop reports a process's end with
//! [`Scheduler::stopped_executing`] and the task's end with [`Scheduler::finish`]; failures
//! propagate per `--continue`. No clock, no processes: tests drive it with events.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::graph::TaskGraph;

pub mod adaptive;
mod policy;
pub mod shard;

pub use policy::{
    critical_path, median, predicted_wall, reservation, Admission, DependantCount, Estimate,
    HistoryPolicy, PlannedOrder, SchedulerPolicy, TaskKind, RESERVATION_STEP,
};

/// `--continue` (EXEC-17).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ContinueMode {
    Never,
    #[default]
    DepsOk,
    Always,
}

/// How a node ended, as far as its dependants care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    Success,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeState {
    Waiting,
    Ready,
    Running,
    Succeeded,
    Failed,
    /// Not started because an upstream failed; holds the root cause's index (`None` under
    /// `--continue=never`).
    Skipped(Option<usize>),
}

pub struct Scheduler {
    deps: Vec<Vec<usize>>,
    dependants: Vec<Vec<usize>>,
    pending: Vec<usize>,
    state: Vec<NodeState>,
    /// The failed task that caused each failure chain, per node (for `blocked by`).
    root_cause: Vec<Option<usize>>,
    /// Tainted: ran although an upstream failed (`--continue=always`).
    tainted: Vec<bool>,
    priority: Vec<u64>,
    ready: BinaryHeap<(u64, Reverse<u64>, Reverse<usize>)>,
    ready_seq: u64,
    mode: ContinueMode,
    halted: bool,
    policy: Box<dyn SchedulerPolicy>,
    /// Nodes executing: started and not yet [`Scheduler::stopped_executing`] or finished.
    running: Vec<usize>,
    /// Ready nodes the policy did not admit in the latest [`Scheduler::next_ready`].
    held: Vec<usize>,
    /// Bumped by every change that can start a node (one ready, one done executing, …);
    /// `settled` is its value when [`Scheduler::next_ready`] last found nothing to start, so
    /// an unchanged scheduler answers at once instead of asking the policy about every held
    /// node again (the run loop dispatches after every message).
    generation: u64,
    settled: Option<u64>,
    /// SCHED-5: interactive tasks (on a terminal), and whether each is persistent.
    interactive: Vec<Option<Interactive>>,
    /// Ready interactive persistent tasks, held until everything else has finished.
    last: Vec<usize>,
    /// An interactive persistent task has started: it holds the terminal to the end of the run,
    /// so no other one may start.
    terminal_held: bool,
    /// REM-11: nodes that run remotely, and those of them that are ready. They start through
    /// [`Scheduler::next_ready_remote`], beside the local slots, and never count as executing
    /// here (they take no local memory).
    remote: Vec<bool>,
    ready_remote: BinaryHeap<(u64, Reverse<u64>, Reverse<usize>)>,
    /// Remote nodes started and not finished: an interactive task waits for them too.
    remote_running: Vec<usize>,
}

/// How an interactive task is scheduled (SCHED-5, EXEC-14).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interactive {
    /// Starts when nothing is executing; nothing else starts while it runs.
    OneShot,
    /// Holds the terminal to the end of the run: starts only once every other task has
    /// finished (ready persistent tasks count as finished).
    Persistent,
}

impl Scheduler {
    pub fn new(
        graph: &TaskGraph,
        mode: ContinueMode,
        policy: Box<dyn SchedulerPolicy>,
    ) -> Scheduler {
        let n = graph.nodes.len();
        let deps: Vec<Vec<usize>> = graph.nodes.iter().map(|node| node.deps.clone()).collect();
        let dependants: Vec<Vec<usize>> = graph
            .nodes
            .iter()
            .map(|node| node.dependants.clone())
            .collect();
        let priority = policy.priorities(graph);
        assert_eq!(priority.len(), n, "a policy gives one priority per node");
        let mut scheduler = Scheduler {
            pending: deps.iter().map(Vec::len).collect(),
            deps,
            dependants,
            state: vec![NodeState::Waiting; n],
            root_cause: vec![None; n],
            tainted: vec![false; n],
            priority,
            ready: BinaryHeap::new(),
            ready_seq: 0,
            mode,
            halted: false,
            policy,
            running: Vec::new(),
            held: Vec::new(),
            generation: 0,
            settled: None,
            interactive: vec![None; n],
            last: Vec::new(),
            terminal_held: false,
            remote: vec![false; n],
            ready_remote: BinaryHeap::new(),
            remote_running: Vec::new(),
        };
        for i in 0..n {
            if scheduler.pending[i] == 0 {
                scheduler.make_ready(i);
            }
        }
        scheduler
    }

    fn make_ready(&mut self, i: usize) {
        self.generation += 1;
        self.state[i] = NodeState::Ready;
        let entry = (self.priority[i], Reverse(self.ready_seq), Reverse(i));
        if self.remote[i] {
            self.ready_remote.push(entry);
        } else {
            self.ready.push(entry);
        }
        self.ready_seq += 1;
    }

    /// REM-11: node `i` runs remotely (`true`) or locally again (`false`, when the remote
    /// executor cannot be used). A ready node moves to the other queue and keeps its place.
    pub fn set_remote(&mut self, i: usize, remote: bool) {
        if self.remote[i] == remote {
            return;
        }
        self.generation += 1;
        self.remote[i] = remote;
        let (from, to) = if remote {
            (&mut self.ready, &mut self.ready_remote)
        } else {
            (&mut self.ready_remote, &mut self.ready)
        };
        let mut moved = None;
        from.retain(|entry| {
            let this = entry.2 .0 == i;
            if this {
                moved = Some(*entry);
            }
            !this
        });
        to.extend(moved);
    }

    pub fn is_remote(&self, i: usize) -> bool {
        self.remote[i]
    }

    /// The ready remote node to start next, marked running; `None` when none is ready or
    /// dispatch stopped. A remote node takes no local slot and no local memory (REM-11), so no
    /// policy is asked; it waits only, like every node, while an interactive task runs.
    pub fn next_ready_remote(&mut self) -> Option<usize> {
        if self.halted || self.holds_terminal() {
            return None;
        }
        while let Some((_, _, Reverse(i))) = self.ready_remote.pop() {
            if self.state[i] == NodeState::Ready {
                self.state[i] = NodeState::Running;
                self.remote_running.push(i);
                return Some(i);
            }
        }
        None
    }

    /// An interactive task is running: nothing else may start beside it (SCHED-5).
    pub fn holds_terminal(&self) -> bool {
        self.running.iter().any(|&r| self.interactive[r].is_some())
    }

    /// The remote executor cannot be used any more: every node not started yet runs locally,
    /// those taken ahead included (they come back through [`Scheduler::give_back`]), and the
    /// ready remote ones join the local queue in their places.
    pub fn disable_remote(&mut self) {
        self.generation += 1;
        for (i, remote) in self.remote.iter_mut().enumerate() {
            if !self.remote_running.contains(&i) {
                *remote = false;
            }
        }
        let ready: Vec<_> = self.ready_remote.drain().collect();
        self.ready.extend(ready);
    }

    /// A running remote node now executes locally (its server could not be used): it counts
    /// as executing for admission until it stops.
    pub fn executing_locally(&mut self, i: usize) {
        self.generation += 1;
        self.remote_running.retain(|&r| r != i);
        if !self.running.contains(&i) {
            self.running.push(i);
        }
    }

    /// Marks a node as an interactive task on a terminal (SCHED-5). Call before dispatching.
    pub fn set_interactive(&mut self, i: usize, kind: Interactive) {
        self.generation += 1;
        self.interactive[i] = Some(kind);
    }

    /// The ready node to start next, marked running. `None` when nothing is ready and
    /// admitted, or dispatch stopped (`--continue=never` after a failure, or a signal).
    ///
    /// SCHED-4: a ready node the policy does not admit beside the executing ones is held and
    /// keeps its place; the next one in priority order that is admitted starts instead.
    /// SCHED-5: nothing starts beside a running interactive task; an interactive task at the
    /// head of the queue waits until nothing is running, and nothing else starts meanwhile (so
    /// it cannot be starved); an interactive persistent task is set aside until every other
    /// node has finished.
    pub fn next_ready(&mut self) -> Option<usize> {
        if self.settled == Some(self.generation) {
            return None;
        }
        self.held.clear();
        if self.halted {
            return None;
        }
        if self.running.iter().any(|&r| self.interactive[r].is_some()) {
            return None;
        }
        let mut passed_over = Vec::new();
        let found = loop {
            // A node finished ahead of its turn (SCHED-3) may still sit in the heap.
            let Some(&(_, _, Reverse(i))) = self.ready.peek() else {
                break None;
            };
            if self.state[i] != NodeState::Ready {
                self.ready.pop();
                continue;
            }
            match self.interactive[i] {
                Some(Interactive::Persistent) => {
                    self.ready.pop();
                    self.last.push(i);
                    continue;
                }
                Some(Interactive::OneShot)
                    if !self.running.is_empty() || !self.remote_running.is_empty() =>
                {
                    break None
                }
                _ => {}
            }
            let entry = self.ready.pop().expect("peeked");
            match self.policy.admits(i, &self.running) {
                Admission::Start => break Some(self.mark_running(i)),
                Admission::Wait => {
                    self.held.push(i);
                    passed_over.push(entry);
                }
                Admission::Alone => {
                    self.held.push(i);
                    passed_over.push(entry);
                    break None;
                }
            }
        };
        let heap_was_empty = self.ready.is_empty() && passed_over.is_empty();
        self.ready.extend(passed_over);
        let found = match found {
            Some(i) => Some(i),
            None if heap_was_empty => self.next_last(),
            None => None,
        };
        if found.is_none() {
            self.settled = Some(self.generation);
        }
        found
    }

    /// Ready nodes the policy did not admit in the latest [`Scheduler::next_ready`] (SCHED-4):
    /// when that call left a slot free, they waited only for memory.
    pub fn held(&self) -> &[usize] {
        &self.held
    }

    /// A started node's processes have ended (its save may still run): it no longer counts as
    /// executing for admission. [`Scheduler::finish`] ends it.
    pub fn stopped_executing(&mut self, i: usize) {
        self.generation += 1;
        self.running.retain(|&r| r != i);
        self.remote_running.retain(|&r| r != i);
    }

    /// An interactive persistent task, once nothing else is running or left to run.
    fn next_last(&mut self) -> Option<usize> {
        if self.last.is_empty() || !self.running.is_empty() || self.last_never_starts() {
            return None;
        }
        let others_left = (0..self.state.len()).any(|n| {
            !self.last.contains(&n)
                && matches!(
                    self.state[n],
                    NodeState::Waiting | NodeState::Ready | NodeState::Running
                )
        });
        if others_left {
            return None;
        }
        let i = self.last.remove(0);
        self.terminal_held = true;
        Some(self.mark_running(i))
    }

    /// Whether the interactive persistent tasks still set aside will never start: one already
    /// holds the terminal, or the run has failed (a failed or skipped task; not under
    /// `--continue=always`), so starting a shell only to stop it at once would be wrong. They
    /// stay unstarted, which the run reports as skipped.
    fn last_never_starts(&self) -> bool {
        self.terminal_held
            || (self.mode != ContinueMode::Always
                && self
                    .state
                    .iter()
                    .any(|s| matches!(s, NodeState::Failed | NodeState::Skipped(_))))
    }

    fn mark_running(&mut self, i: usize) -> usize {
        self.state[i] = NodeState::Running;
        self.running.push(i);
        i
    }

    /// Records the end of a running node. Returns the nodes that became skipped.
    pub fn finish(&mut self, i: usize, finish: Finish) -> Vec<usize> {
        self.generation += 1;
        self.running.retain(|&r| r != i);
        self.remote_running.retain(|&r| r != i);
        let mut skipped = Vec::new();
        match finish {
            Finish::Success => {
                self.state[i] = NodeState::Succeeded;
                self.release(i);
            }
            Finish::Failed => {
                self.state[i] = NodeState::Failed;
                match self.mode {
                    ContinueMode::DepsOk => self.skip_dependants(i, Some(i), &mut skipped),
                    ContinueMode::Always => {
                        for d in self.dependants[i].clone() {
                            self.tainted[d] = true;
                        }
                        self.release(i);
                    }
                    ContinueMode::Never => {
                        self.halt();
                    }
                }
            }
        }
        skipped
    }

    /// SCHED-3: a node served by the restore lane before its dependencies finished. It
    /// succeeds now and releases its dependants; it is never dispatched, and it keeps its
    /// outcome whatever its dependencies do later. Only a node that has not started may
    /// finish ahead.
    pub fn finish_ahead(&mut self, i: usize) {
        self.generation += 1;
        debug_assert!(matches!(
            self.state[i],
            NodeState::Waiting | NodeState::Ready
        ));
        self.state[i] = NodeState::Succeeded;
        self.release(i);
    }

    /// SCHED-3: the restore lane takes a node that has not started, before its dependencies
    /// finished, to restore it. It is never dispatched while taken; [`Scheduler::finish`] ends
    /// it as usual, or [`Scheduler::give_back`] returns it to the normal schedule.
    pub fn take_ahead(&mut self, i: usize) {
        self.generation += 1;
        debug_assert!(matches!(
            self.state[i],
            NodeState::Waiting | NodeState::Ready
        ));
        self.state[i] = NodeState::Running;
    }

    /// A node the restore lane took but could not serve (no usable entry): it waits for its
    /// dependencies again, or is ready when they are done. If one of them failed meanwhile, it
    /// is skipped like any dependant (returned with its root cause).
    pub fn give_back(&mut self, i: usize) -> Vec<usize> {
        self.generation += 1;
        let failed = self.deps[i]
            .iter()
            .copied()
            .find(|&d| matches!(self.state[d], NodeState::Failed | NodeState::Skipped(_)));
        if let (Some(d), ContinueMode::DepsOk) = (failed, self.mode) {
            let cause = self.root_cause[d].or(Some(d));
            let mut skipped = Vec::new();
            self.state[i] = NodeState::Skipped(cause);
            self.root_cause[i] = cause;
            skipped.push(i);
            self.skip_dependants(i, cause, &mut skipped);
            skipped.sort_unstable();
            return skipped;
        }
        if self.pending[i] == 0 {
            self.make_ready(i);
        } else {
            self.state[i] = NodeState::Waiting;
        }
        Vec::new()
    }

    /// Stops all dispatch (`--continue=never` after a failure, or a signal to vx).
    pub fn halt(&mut self) {
        self.generation += 1;
        self.halted = true;
    }

    pub fn is_halted(&self) -> bool {
        self.halted
    }

    fn release(&mut self, i: usize) {
        let tainted = self.tainted[i];
        for d in self.dependants[i].clone() {
            if tainted {
                self.tainted[d] = true;
            }
            self.pending[d] -= 1;
            if matches!(
                self.state[d],
                NodeState::Skipped(_) | NodeState::Succeeded | NodeState::Running
            ) {
                continue;
            }
            if self.pending[d] == 0 {
                self.make_ready(d);
            }
        }
    }

    fn skip_dependants(&mut self, from: usize, cause: Option<usize>, skipped: &mut Vec<usize>) {
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            for &d in &self.dependants[n] {
                if matches!(self.state[d], NodeState::Waiting) {
                    self.state[d] = NodeState::Skipped(cause);
                    self.root_cause[d] = cause;
                    skipped.push(d);
                    stack.push(d);
                }
            }
        }
        skipped.sort_unstable();
    }

    /// Nodes that never started, in index order (at the end of a halted run they are skipped
    /// under `--continue=never`, or `not run` after a signal).
    pub fn unstarted(&self) -> Vec<usize> {
        (0..self.state.len())
            .filter(|&i| matches!(self.state[i], NodeState::Waiting | NodeState::Ready))
            .collect()
    }

    /// Nodes not started yet, among those `counted` says to count: ready (waiting only for a
    /// slot, or for memory) and waiting for dependencies.
    pub fn waiting(&self, counted: impl Fn(usize) -> bool) -> (usize, usize) {
        let (mut ready, mut on_deps) = (0, 0);
        for (i, state) in self.state.iter().enumerate() {
            match state {
                NodeState::Ready if counted(i) => ready += 1,
                NodeState::Waiting if counted(i) => on_deps += 1,
                _ => {}
            }
        }
        (ready, on_deps)
    }

    /// Whether some node may be ready: the heap is not empty. It may still hold a node that
    /// finished ahead of its turn (SCHED-3), which costs its caller one needless look.
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    pub fn state(&self, i: usize) -> NodeState {
        self.state[i]
    }

    pub fn is_tainted(&self, i: usize) -> bool {
        self.tainted[i]
    }

    pub fn priority(&self, i: usize) -> u64 {
        self.priority[i]
    }

    /// Every node is finished or skipped, or dispatch stopped and nothing is running.
    pub fn is_done(&self) -> bool {
        let last_never_starts = self.last_never_starts();
        self.state.iter().enumerate().all(|(i, s)| {
            matches!(
                s,
                NodeState::Succeeded | NodeState::Failed | NodeState::Skipped(_)
            ) || (self.halted && matches!(s, NodeState::Waiting | NodeState::Ready))
                || (last_never_starts && self.last.contains(&i))
        })
    }

    /// Dependencies of a node (for group outcomes).
    pub fn deps(&self, i: usize) -> &[usize] {
        &self.deps[i]
    }
}

#[cfg(test)]
mod tests;
