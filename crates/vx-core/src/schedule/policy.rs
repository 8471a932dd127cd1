//! Scheduling policies (SCHED-2, SCHED-4, SCHED-7): which ready node is preferred, and whether
//! it may start beside the nodes executing now.
//!
//! How this works: a policy is a pure function of the graph, what history estimates for each
//! node ([`Estimate`]: a median duration and a largest peak RSS) and the memory budget. The
//! [`Scheduler`](super::Scheduler) asks it once for every node's priority and, for each ready
//! node in priority order, whether it is admitted. [`HistoryPolicy`] is the M3 policy: the
//! expected remaining critical path as priority, and memory reservations against the budget.
//! [`DependantCount`] is the M1 policy it falls back to when nothing in the run has history.

use crate::graph::TaskGraph;

/// The scheduling policy seam (ARCH-2): priority of every node and admission of a ready one.
/// [`HistoryPolicy`] is the run's policy; `vx-test-support` has a fake for tests.
pub trait SchedulerPolicy {
    /// One priority per node of the graph; the ready node with the highest starts first.
    fn priorities(&self, graph: &TaskGraph) -> Vec<u64>;

    /// Whether a ready node may start beside the executing ones. Restores, persistent tasks
    /// that are ready and tasks whose processes have ended (a save may still be running) are
    /// not executing.
    fn admits(&self, _node: usize, _executing: &[usize]) -> Admission {
        Admission::Start
    }
}

/// A policy's answer for a ready node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Start,
    /// It does not fit beside the executing nodes now: it is held, and nodes behind it in
    /// priority order may start meanwhile.
    Wait,
    /// It needs nothing else executing: it is held, and nothing behind it starts either, so the
    /// executing nodes drain and it gets its turn (a node larger than the whole budget).
    Alone,
}

/// SCHED-8: one part of a sharded run starts its ready tasks in the order its split planned
/// them (earliest planned start first), so that what other parts wait for comes when the split
/// expected it; admission is `inner`'s.
pub struct PlannedOrder<P> {
    pub inner: P,
    /// Per node: its planned start, milliseconds from the run's start.
    pub start_ms: Vec<u64>,
}

impl<P: SchedulerPolicy> SchedulerPolicy for PlannedOrder<P> {
    fn priorities(&self, graph: &TaskGraph) -> Vec<u64> {
        assert_eq!(self.start_ms.len(), graph.nodes.len(), "one start per node");
        self.start_ms.iter().map(|&s| u64::MAX - s).collect()
    }

    fn admits(&self, node: usize, executing: &[usize]) -> Admission {
        self.inner.admits(node, executing)
    }
}

/// SCHED-2 in its M1 form: priority is the number of transitive dependants in the run.
pub struct DependantCount;

impl SchedulerPolicy for DependantCount {
    fn priorities(&self, graph: &TaskGraph) -> Vec<u64> {
        dependant_counts(graph)
    }
}

/// What history says about one node of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Estimate {
    /// SCHED-2: the median of the task's last executed successful durations, in milliseconds.
    pub duration_ms: Option<u64>,
    /// SCHED-4: the largest peak RSS of the task's last executed runs, in bytes.
    pub peak_rss_bytes: Option<u64>,
    pub kind: TaskKind,
}

/// What a node is, as far as the policy cares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TaskKind {
    /// A task with a command that ends.
    #[default]
    OneShot,
    /// Expected duration 0; it holds its reservation until it is ready (the run loop then
    /// finishes it in the scheduler).
    Persistent,
    /// Expected duration 0, never held: it takes no slot and no memory.
    Group,
}

/// Reservations are whole multiples of this (SCHED-4).
pub const RESERVATION_STEP: u64 = 64 << 20;

/// SCHED-4: a task's reservation is 1.25 × its largest recorded peak, rounded up to a multiple
/// of 64 MiB; no recorded peak reserves nothing.
pub fn reservation(peak_rss_bytes: Option<u64>) -> u64 {
    let Some(peak) = peak_rss_bytes.filter(|&p| p > 0) else {
        return 0;
    };
    let scaled = peak.saturating_add(peak.div_ceil(4));
    scaled
        .div_ceil(RESERVATION_STEP)
        .saturating_mul(RESERVATION_STEP)
}

/// The median of some durations (of an even count, the mean of the two middle ones, rounded
/// down); `None` for none.
pub fn median(values: &[u64]) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let mid = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        sorted[mid - 1] / 2 + sorted[mid] / 2 + (sorted[mid - 1] % 2 + sorted[mid] % 2) / 2
    })
}

/// SCHED-2 and SCHED-4 from history: priority is the expected remaining critical path, and a
/// node starts only if its reservation fits in the budget beside the executing nodes' (one
/// larger than the whole budget starts only when nothing else is executing).
pub struct HistoryPolicy {
    estimates: Vec<Estimate>,
    reservations: Vec<u64>,
    /// `None`: admission is off (`VX_MEMORY_BUDGET=off`, or memory could not be measured).
    budget: Option<u64>,
}

impl HistoryPolicy {
    /// One estimate per node of the graph, in node order.
    pub fn new(estimates: Vec<Estimate>, budget: Option<u64>) -> HistoryPolicy {
        let reservations = estimates
            .iter()
            .map(|e| reservation(e.peak_rss_bytes))
            .collect();
        HistoryPolicy {
            estimates,
            reservations,
            budget,
        }
    }

    pub fn reservation(&self, node: usize) -> u64 {
        self.reservations[node]
    }

    /// Each node's expected duration: its median; a node without history gets the median of
    /// the known medians; group and persistent nodes 0. `None` when no node has history.
    pub fn expected_durations(&self) -> Option<Vec<u64>> {
        let known: Vec<u64> = self
            .estimates
            .iter()
            .filter(|e| e.kind == TaskKind::OneShot)
            .filter_map(|e| e.duration_ms)
            .collect();
        let fallback = median(&known)?;
        Some(
            self.estimates
                .iter()
                .map(|e| match e.kind {
                    TaskKind::OneShot => e.duration_ms.unwrap_or(fallback),
                    TaskKind::Persistent | TaskKind::Group => 0,
                })
                .collect(),
        )
    }
}

impl SchedulerPolicy for HistoryPolicy {
    fn priorities(&self, graph: &TaskGraph) -> Vec<u64> {
        assert_eq!(
            self.estimates.len(),
            graph.nodes.len(),
            "one estimate per node"
        );
        match self.expected_durations() {
            Some(durations) => critical_path(graph, &durations),
            None => dependant_counts(graph),
        }
    }

    fn admits(&self, node: usize, executing: &[usize]) -> Admission {
        let Some(budget) = self.budget else {
            return Admission::Start;
        };
        if self.estimates[node].kind == TaskKind::Group {
            return Admission::Start;
        }
        let wanted = self.reservations[node];
        if wanted > budget {
            return if executing.is_empty() {
                Admission::Start
            } else {
                Admission::Alone
            };
        }
        let reserved: u64 = executing
            .iter()
            .map(|&n| self.reservations[n])
            .fold(0, u64::saturating_add);
        if reserved.saturating_add(wanted) <= budget {
            Admission::Start
        } else {
            Admission::Wait
        }
    }
}

/// UI-12's prediction: the wall time of the list schedule that starts the ready node with the
/// longest remaining path first, with `slots` nodes at once and each node taking
/// `durations[i]` milliseconds (0 for a node that will not execute).
pub fn predicted_wall(graph: &TaskGraph, durations: &[u64], slots: usize) -> u64 {
    let policy = PathOnly(durations.to_vec());
    let mut scheduler = super::Scheduler::new(graph, super::ContinueMode::DepsOk, Box::new(policy));
    let mut now = 0u64;
    let mut executing: Vec<(u64, usize)> = Vec::new();
    loop {
        while executing.len() < slots.max(1) {
            let Some(i) = scheduler.next_ready() else {
                break;
            };
            executing.push((now.saturating_add(durations[i]), i));
        }
        let Some(first) = executing.iter().copied().min() else {
            return now;
        };
        executing.retain(|&e| e != first);
        now = first.0;
        scheduler.finish(first.1, super::Finish::Success);
    }
}

/// The critical path of known durations, for [`predicted_wall`].
struct PathOnly(Vec<u64>);

impl SchedulerPolicy for PathOnly {
    fn priorities(&self, graph: &TaskGraph) -> Vec<u64> {
        critical_path(graph, &self.0)
    }
}

/// SCHED-2: each node's own expected duration plus the largest priority among its dependants.
pub fn critical_path(graph: &TaskGraph, durations: &[u64]) -> Vec<u64> {
    let mut priority = vec![0u64; graph.nodes.len()];
    for i in reverse_topological(graph) {
        let after = graph.nodes[i]
            .dependants
            .iter()
            .map(|&d| priority[d])
            .max()
            .unwrap_or(0);
        priority[i] = durations[i].saturating_add(after);
    }
    priority
}

/// Graphs up to this many nodes get exact transitive-dependant counts (a bitset per node);
/// larger ones use the longest chain of dependants, which keeps memory linear.
const EXACT_PRIORITY_LIMIT: usize = 8192;

/// Priority of each node: its number of transitive dependants (exact for graphs up to
/// `EXACT_PRIORITY_LIMIT` nodes), else the length of its longest chain of dependants.
fn dependant_counts(graph: &TaskGraph) -> Vec<u64> {
    let n = graph.nodes.len();
    let dependants = |i: usize| &graph.nodes[i].dependants;
    let order = reverse_topological(graph);
    if n <= EXACT_PRIORITY_LIMIT {
        let words = n.div_ceil(64);
        let mut sets = vec![0u64; n * words];
        for &i in &order {
            for &d in dependants(i) {
                sets[i * words + d / 64] |= 1 << (d % 64);
                for w in 0..words {
                    let bits = sets[d * words + w];
                    sets[i * words + w] |= bits;
                }
            }
        }
        (0..n)
            .map(|i| {
                sets[i * words..(i + 1) * words]
                    .iter()
                    .map(|w| u64::from(w.count_ones()))
                    .sum()
            })
            .collect()
    } else {
        let mut depth = vec![0u64; n];
        for &i in &order {
            depth[i] = dependants(i)
                .iter()
                .map(|&d| depth[d] + 1)
                .max()
                .unwrap_or(0);
        }
        depth
    }
}

/// Nodes ordered so that every node comes after all of its dependants.
fn reverse_topological(graph: &TaskGraph) -> Vec<usize> {
    let n = graph.nodes.len();
    let mut remaining: Vec<usize> = graph
        .nodes
        .iter()
        .map(|node| node.dependants.len())
        .collect();
    let mut stack: Vec<usize> = (0..n).filter(|&i| remaining[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = stack.pop() {
        order.push(i);
        for &d in &graph.nodes[i].deps {
            remaining[d] -= 1;
            if remaining[d] == 0 {
                stack.push(d);
            }
        }
    }
    order
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
