//! `--shard K/N` (SCHED-8): one run's tasks split across N runners, computed the same way on
//! each from the same graph and durations, with no coordinator.
//!
//! # How this works
//!
//! [`partition`] is list scheduling with communication costs (HEFT's shape): every task's rank is
//! its expected remaining critical path ([`critical_path`]); tasks are placed in decreasing rank
//! (so the critical path is placed first, and a dependency before its dependants: ties go by
//! topological position), each on the shard where it would *finish* earliest, simulating each
//! shard as `slots` parallel slots. A task may go into an idle gap an earlier-placed task left
//! in a slot (HEFT's insertion policy): tasks are placed by rank, not by time, so without it a
//! slot's timeline would only grow, and a short task ready early would queue behind a long one
//! ready late. A dependency on another shard costs `handoff_ms` before the
//! dependant can start there (its entry has to travel through the remote cache), so a task
//! stays with its dependencies unless another shard finishes it sooner even after paying that:
//! dependency closures stay together where splitting them would cost more than it gains. Equal
//! finishes go to the shard holding more of the task's dependencies (by duration), then to the
//! lowest shard. Integer milliseconds and index tie-breaks make the result a function of its
//! inputs alone.

use crate::graph::TaskGraph;

use super::critical_path;

/// Where each task runs, and when the simulation expects it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// Per node: its shard, 0-based.
    pub shard_of: Vec<usize>,
    /// Per node: its expected start and finish, milliseconds from the run's start.
    pub start_ms: Vec<u64>,
    pub finish_ms: Vec<u64>,
    /// Per shard: when its last task is expected to finish.
    pub wall_ms: Vec<u64>,
}

impl Partition {
    /// The expected wall time of the whole run: its slowest shard.
    pub fn makespan_ms(&self) -> u64 {
        self.wall_ms.iter().copied().max().unwrap_or(0)
    }

    /// The nodes shard `k` runs.
    pub fn nodes_of(&self, k: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.shard_of.len()).filter(move |&i| self.shard_of[i] == k)
    }
}

/// Splits `graph` across `shards` runners of `slots` slots each; `durations` are each node's
/// expected milliseconds. See the module documentation.
pub fn partition(
    graph: &TaskGraph,
    durations: &[u64],
    shards: usize,
    slots: usize,
    handoff_ms: u64,
) -> Partition {
    let n = graph.nodes.len();
    let shards = shards.max(1);
    let slots = slots.max(1);
    let rank = critical_path(graph, durations);
    let position = topological_positions(graph);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(rank[i]), position[i]));
    // Per shard and slot: the busy intervals, sorted by start.
    let mut busy: Vec<Vec<Vec<(u64, u64)>>> = vec![vec![Vec::new(); slots]; shards];
    let mut shard_of = vec![0usize; n];
    let mut start_ms = vec![0u64; n];
    let mut finish_ms = vec![0u64; n];
    for i in order {
        let deps = &graph.nodes[i].deps;
        let mut best: Option<(u64, std::cmp::Reverse<u64>, usize, usize, u64)> = None;
        for (s, slot_times) in busy.iter().enumerate() {
            let ready = deps
                .iter()
                .map(|&d| finish_ms[d] + if shard_of[d] == s { 0 } else { handoff_ms })
                .max()
                .unwrap_or(0);
            let (slot, start) = slot_times
                .iter()
                .enumerate()
                .map(|(k, intervals)| (k, earliest_fit(intervals, ready, durations[i])))
                .min_by_key(|&(k, t)| (t, k))
                .expect("a shard has a slot");
            let finish = start + durations[i];
            let near: u64 = deps
                .iter()
                .filter(|&&d| shard_of[d] == s)
                .map(|&d| durations[d].max(1))
                .sum();
            let candidate = (finish, std::cmp::Reverse(near), s, slot, start);
            if best.is_none_or(|b| (candidate.0, candidate.1, candidate.2) < (b.0, b.1, b.2)) {
                best = Some(candidate);
            }
        }
        let (finish, _, s, slot, start) = best.expect("at least one shard");
        let intervals = &mut busy[s][slot];
        let at = intervals.partition_point(|&(b, _)| b < start);
        intervals.insert(at, (start, finish));
        shard_of[i] = s;
        start_ms[i] = start;
        finish_ms[i] = finish;
    }
    let mut wall_ms = vec![0u64; shards];
    for i in 0..n {
        wall_ms[shard_of[i]] = wall_ms[shard_of[i]].max(finish_ms[i]);
    }
    Partition {
        shard_of,
        start_ms,
        finish_ms,
        wall_ms,
    }
}

/// The earliest start at or after `ready` where `duration` fits between `intervals` (busy,
/// sorted by start, not overlapping).
fn earliest_fit(intervals: &[(u64, u64)], ready: u64, duration: u64) -> u64 {
    // The first interval that ends after `ready` is the first that can be in the way.
    let from = intervals.partition_point(|&(_, end)| end <= ready);
    let mut start = ready;
    for &(b, e) in &intervals[from..] {
        if start + duration <= b {
            return start;
        }
        start = start.max(e);
    }
    start
}

/// Each node's position in a topological order (dependencies first; ready nodes by index).
fn topological_positions(graph: &TaskGraph) -> Vec<usize> {
    let n = graph.nodes.len();
    let mut waiting: Vec<usize> = graph.nodes.iter().map(|node| node.deps.len()).collect();
    let mut ready: std::collections::BTreeSet<usize> =
        (0..n).filter(|&i| waiting[i] == 0).collect();
    let mut position = vec![0; n];
    let mut next = 0;
    while let Some(i) = ready.pop_first() {
        position[i] = next;
        next += 1;
        for &d in &graph.nodes[i].dependants {
            waiting[d] -= 1;
            if waiting[d] == 0 {
                ready.insert(d);
            }
        }
    }
    position
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::graph;

    #[test]
    fn independent_tasks_are_balanced_by_duration_longest_first() {
        let g = graph(&[("a", &[]), ("b", &[]), ("c", &[]), ("d", &[]), ("e", &[])]);
        // 8 + 2 on one shard, 5 + 4 + 1 on the other: both 10.
        let p = partition(&g, &[8, 5, 4, 2, 1], 2, 1, 0);
        assert_eq!(p.makespan_ms(), 10);
        assert_ne!(
            p.shard_of[0], p.shard_of[1],
            "the two longest start at once"
        );
    }

    #[test]
    fn a_short_task_goes_into_the_gap_a_handoff_left() {
        // p and q on their own shards; r needs both, so it waits for a handoff (2) after 10 on
        // either shard; s (2) is placed last but fits in shard 0's gap from 10 to 12.
        let g = graph(&[("p", &[]), ("q", &[]), ("r", &["p", "q"]), ("s", &[])]);
        let p = partition(&g, &[10, 10, 5, 2], 2, 1, 2);
        assert_eq!((p.shard_of[2], p.start_ms[2]), (0, 12));
        assert_eq!((p.shard_of[3], p.start_ms[3], p.finish_ms[3]), (0, 10, 12));
        assert_eq!(p.makespan_ms(), 17);
    }

    #[test]
    fn a_chain_stays_on_one_shard_when_a_handoff_would_cost_more() {
        // a → b → c, and a lone d: splitting the chain would only add handoffs.
        let g = graph(&[("a", &[]), ("b", &["a"]), ("c", &["b"]), ("d", &[])]);
        let p = partition(&g, &[10, 10, 10, 10], 2, 1, 5);
        assert_eq!(p.shard_of[0], p.shard_of[1]);
        assert_eq!(p.shard_of[1], p.shard_of[2]);
        assert_ne!(p.shard_of[3], p.shard_of[0]);
        assert_eq!(p.makespan_ms(), 30);
    }

    #[test]
    fn fan_out_crosses_shards_when_that_finishes_sooner_even_after_the_handoff() {
        // One build, then four long tests that each need it.
        let g = graph(&[
            ("build", &[]),
            ("t1", &["build"]),
            ("t2", &["build"]),
            ("t3", &["build"]),
            ("t4", &["build"]),
        ]);
        let p = partition(&g, &[10, 100, 100, 100, 100], 4, 1, 5);
        let shards: std::collections::BTreeSet<usize> = p.shard_of[1..].iter().copied().collect();
        assert_eq!(shards.len(), 4, "{p:?}");
        // The tests on other shards start after the build plus the handoff.
        assert_eq!(p.makespan_ms(), 10 + 5 + 100);
    }

    #[test]
    fn the_critical_path_is_placed_first_and_the_result_depends_on_the_inputs_alone() {
        let g = graph(&[
            ("a", &[]),
            ("b", &["a"]),
            ("c", &[]),
            ("d", &[]),
            ("e", &["c", "d"]),
        ]);
        let durations = [50, 50, 10, 10, 10];
        let one = partition(&g, &durations, 2, 1, 3);
        assert_eq!(
            one.start_ms[0], 0,
            "the head of the longest path starts at once"
        );
        for _ in 0..3 {
            assert_eq!(partition(&g, &durations, 2, 1, 3), one);
        }
        // Every node on exactly one shard, each shard's wall its last finish.
        for k in 0..2 {
            let last = one.nodes_of(k).map(|i| one.finish_ms[i]).max().unwrap_or(0);
            assert_eq!(one.wall_ms[k], last);
        }
    }

    #[test]
    fn without_durations_tasks_are_balanced_by_count() {
        let g = graph(&[("a", &[]), ("b", &[]), ("c", &[]), ("d", &[])]);
        let p = partition(&g, &[1, 1, 1, 1], 2, 1, 0);
        assert_eq!(p.nodes_of(0).count(), 2);
        assert_eq!(p.nodes_of(1).count(), 2);
    }
}
