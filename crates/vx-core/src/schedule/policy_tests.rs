//! The scheduling policies' tests (`policy.rs`).

use super::*;
use crate::schedule::{ContinueMode, Finish, Scheduler};
use crate::testing::graph;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

#[test]
fn a_reservation_is_a_quarter_more_than_the_peak_in_whole_steps() {
    let cases = [
        (None, 0),
        (Some(0), 0),
        (Some(1), 64 * MIB),
        (Some(51 * MIB), 64 * MIB),
        (Some(52 * MIB), 128 * MIB),
        (Some(GIB), 1280 * MIB),
        (Some(GIB + 1), 1344 * MIB),
        (Some(u64::MAX), u64::MAX),
    ];
    for (peak, expected) in cases {
        assert_eq!(reservation(peak), expected, "peak {peak:?}");
    }
}

#[test]
fn median_of_odd_and_even_counts() {
    let cases: [(&[u64], Option<u64>); 5] = [
        (&[], None),
        (&[7], Some(7)),
        (&[9, 1, 5], Some(5)),
        (&[4, 1, 3, 2], Some(2)),
        (&[u64::MAX, u64::MAX], Some(u64::MAX)),
    ];
    for (values, expected) in cases {
        assert_eq!(median(values), expected, "{values:?}");
    }
}

fn with_durations(durations: &[Option<u64>]) -> Vec<Estimate> {
    durations
        .iter()
        .map(|&duration_ms| Estimate {
            duration_ms,
            ..Estimate::default()
        })
        .collect()
}

#[test]
fn priority_is_the_expected_remaining_critical_path() {
    // a <- b <- c (a long chain), and d <- {e, f, g} (many short dependants).
    let g = graph(&[
        ("a", &[]),
        ("b", &["a"]),
        ("c", &["b"]),
        ("d", &[]),
        ("e", &["d"]),
        ("f", &["d"]),
        ("g", &["d"]),
    ]);
    let policy = HistoryPolicy::new(
        with_durations(&[
            Some(10),
            Some(10),
            Some(100),
            Some(10),
            Some(5),
            Some(20),
            Some(5),
        ]),
        None,
    );
    assert_eq!(policy.priorities(&g), vec![120, 110, 100, 30, 5, 20, 5]);
    // By dependant count d (3 dependants) would start before a (2).
    assert_eq!(DependantCount.priorities(&g)[..4], [2, 1, 0, 3]);
}

#[test]
fn a_task_without_history_expects_the_median_of_the_known_medians() {
    let g = graph(&[("a", &[]), ("b", &["a"]), ("c", &[]), ("d", &[])]);
    let policy = HistoryPolicy::new(with_durations(&[None, Some(10), Some(30), Some(50)]), None);
    assert_eq!(policy.expected_durations(), Some(vec![30, 10, 30, 50]));
    assert_eq!(policy.priorities(&g), vec![40, 10, 30, 50]);
}

#[test]
fn group_and_persistent_tasks_expect_nothing() {
    let g = graph(&[("a", &[]), ("group", &["a"])]);
    let mut estimates = with_durations(&[Some(10), Some(500)]);
    estimates[1].kind = TaskKind::Group;
    let policy = HistoryPolicy::new(estimates, None);
    assert_eq!(policy.priorities(&g), vec![10, 0]);
}

#[test]
fn without_any_history_priority_is_the_dependant_count() {
    let g = graph(&[("a", &[]), ("b", &["a"]), ("c", &["b"]), ("d", &[])]);
    let mut estimates = with_durations(&[None, None, None, None]);
    // A persistent task's history does not count as the run's.
    estimates[3] = Estimate {
        duration_ms: Some(9),
        peak_rss_bytes: None,
        kind: TaskKind::Persistent,
    };
    let policy = HistoryPolicy::new(estimates, None);
    assert_eq!(policy.priorities(&g), DependantCount.priorities(&g));
}

#[test]
fn admission_against_the_budget() {
    struct Case {
        budget: Option<u64>,
        peaks: &'static [Option<u64>],
        executing: &'static [usize],
        node: usize,
        admitted: bool,
    }
    const ONE: Option<u64> = Some(GIB);
    let cases = [
        // Admission off: anything goes.
        Case {
            budget: None,
            peaks: &[ONE, ONE, ONE],
            executing: &[0, 1],
            node: 2,
            admitted: true,
        },
        // 1280 MiB each: one fits in 2 GiB, two do not.
        Case {
            budget: Some(2 * GIB),
            peaks: &[ONE, ONE],
            executing: &[],
            node: 1,
            admitted: true,
        },
        Case {
            budget: Some(2 * GIB),
            peaks: &[ONE, ONE],
            executing: &[0],
            node: 1,
            admitted: false,
        },
        Case {
            budget: Some(3 * GIB),
            peaks: &[ONE, ONE],
            executing: &[0],
            node: 1,
            admitted: true,
        },
        // No recorded peak reserves nothing, so it fits beside anything that fits.
        Case {
            budget: Some(2 * GIB),
            peaks: &[ONE, None],
            executing: &[0],
            node: 1,
            admitted: true,
        },
        // Larger than the whole budget: only when nothing else executes, and then alone.
        Case {
            budget: Some(GIB),
            peaks: &[ONE, None],
            executing: &[1],
            node: 0,
            admitted: false,
        },
        Case {
            budget: Some(GIB),
            peaks: &[ONE, None],
            executing: &[],
            node: 0,
            admitted: true,
        },
        Case {
            budget: Some(GIB),
            peaks: &[ONE, None],
            executing: &[0],
            node: 1,
            admitted: false,
        },
        // Exactly the budget fits.
        Case {
            budget: Some(1280 * MIB),
            peaks: &[ONE],
            executing: &[],
            node: 0,
            admitted: true,
        },
        Case {
            budget: Some(1280 * MIB),
            peaks: &[Some(MIB), Some(GIB)],
            executing: &[0],
            node: 1,
            admitted: false,
        },
    ];
    for (n, case) in cases.iter().enumerate() {
        let estimates: Vec<Estimate> = case
            .peaks
            .iter()
            .map(|&peak_rss_bytes| Estimate {
                peak_rss_bytes,
                ..Estimate::default()
            })
            .collect();
        let policy = HistoryPolicy::new(estimates, case.budget);
        assert_eq!(
            policy.admits(case.node, case.executing) == Admission::Start,
            case.admitted,
            "case {n}"
        );
    }
}

#[test]
fn a_group_is_never_held() {
    let estimates = vec![
        Estimate {
            peak_rss_bytes: Some(4 * GIB),
            ..Estimate::default()
        },
        Estimate {
            kind: TaskKind::Group,
            ..Estimate::default()
        },
        Estimate::default(),
    ];
    let policy = HistoryPolicy::new(estimates, Some(GIB));
    // The oversize task executes alone: a task waits, a group does not.
    assert_eq!(policy.admits(2, &[0]), Admission::Wait);
    assert_eq!(policy.admits(1, &[0]), Admission::Start);
    assert_eq!(policy.admits(0, &[2]), Admission::Alone);
}

/// Plays a run: every node takes `durations[i]`, `slots` execute at once; returns the
/// wall time and the most nodes of `watched` executing at once.
fn simulate(
    g: &TaskGraph,
    durations: &[u64],
    policy: Box<dyn SchedulerPolicy>,
    slots: usize,
    watched: &[usize],
) -> (u64, usize) {
    let mut s = Scheduler::new(g, ContinueMode::DepsOk, policy);
    let mut now = 0;
    let mut executing: Vec<(u64, usize)> = Vec::new();
    let mut most = 0;
    loop {
        while executing.len() < slots {
            let Some(i) = s.next_ready() else { break };
            executing.push((now + durations[i], i));
        }
        most = most.max(
            executing
                .iter()
                .filter(|(_, i)| watched.contains(i))
                .count(),
        );
        let Some(first) = executing.iter().copied().min() else {
            break;
        };
        executing.retain(|&e| e != first);
        now = first.0;
        s.stopped_executing(first.1);
        s.finish(first.1, Finish::Success);
    }
    assert!(s.is_done(), "every node ran");
    (now, most)
}

#[test]
fn three_large_tasks_never_execute_together_beyond_the_budget() {
    let g = graph(&[("big1", &[]), ("big2", &[]), ("big3", &[]), ("small", &[])]);
    let peaks = [Some(GIB), Some(GIB), Some(GIB), None];
    let estimates = |budget| {
        let e = peaks
            .iter()
            .map(|&peak_rss_bytes| Estimate {
                duration_ms: Some(100),
                peak_rss_bytes,
                kind: TaskKind::OneShot,
            })
            .collect();
        HistoryPolicy::new(e, budget)
    };
    let durations = [100, 100, 100, 100];
    let (free, together) = simulate(&g, &durations, Box::new(estimates(None)), 3, &[0, 1, 2]);
    assert_eq!((free, together), (200, 3));
    // 1280 MiB each in 3 GiB: two at a time; the small task fills the third slot.
    let (wall, together) = simulate(
        &g,
        &durations,
        Box::new(estimates(Some(3 * GIB))),
        3,
        &[0, 1, 2],
    );
    assert_eq!((wall, together), (200, 2));
    let (_, together) = simulate(
        &g,
        &durations,
        Box::new(estimates(Some(2 * GIB))),
        3,
        &[0, 1, 2],
    );
    assert_eq!(together, 1);
    // Each is larger than 1 GiB: each runs alone, the small task included.
    let (wall, together) = simulate(
        &g,
        &durations,
        Box::new(estimates(Some(GIB))),
        3,
        &[0, 1, 2, 3],
    );
    assert_eq!((wall, together), (400, 1));
}

#[test]
fn a_task_larger_than_the_budget_drains_the_machine_for_its_turn() {
    // `huge` needs more than the budget; while `a` executes, `huge` is ready first and
    // nothing behind it (`b`, `c`) may start, so it runs as soon as `a` is done.
    let g = graph(&[("a", &[]), ("huge", &[]), ("b", &[]), ("c", &[])]);
    let estimates = vec![
        Estimate {
            duration_ms: Some(500),
            ..Estimate::default()
        },
        Estimate {
            duration_ms: Some(400),
            peak_rss_bytes: Some(4 * GIB),
            ..Estimate::default()
        },
        Estimate {
            duration_ms: Some(10),
            ..Estimate::default()
        },
        Estimate {
            duration_ms: Some(10),
            ..Estimate::default()
        },
    ];
    let mut s = Scheduler::new(
        &g,
        ContinueMode::DepsOk,
        Box::new(HistoryPolicy::new(estimates, Some(GIB))),
    );
    assert_eq!(s.next_ready(), Some(0), "the longest first");
    assert_eq!(
        s.next_ready(),
        None,
        "huge waits alone, and b and c wait behind it"
    );
    assert_eq!(s.held(), &[1]);
    s.stopped_executing(0);
    assert_eq!(s.next_ready(), Some(1));
    assert_eq!(s.next_ready(), None, "nothing beside it");
    s.finish(1, Finish::Success);
    assert_eq!(s.next_ready(), Some(2));
}

#[test]
fn a_held_task_keeps_its_place_while_smaller_ones_pass() {
    // big (highest priority) waits for memory; the small ones start beside the executing
    // medium task; big starts as soon as the medium one has stopped executing.
    let g = graph(&[("medium", &[]), ("big", &[]), ("s1", &[]), ("s2", &[])]);
    let estimates = vec![
        Estimate {
            duration_ms: Some(300),
            peak_rss_bytes: Some(GIB),
            kind: TaskKind::OneShot,
        },
        Estimate {
            duration_ms: Some(200),
            peak_rss_bytes: Some(GIB),
            kind: TaskKind::OneShot,
        },
        Estimate {
            duration_ms: Some(10),
            peak_rss_bytes: None,
            kind: TaskKind::OneShot,
        },
        Estimate {
            duration_ms: Some(10),
            peak_rss_bytes: None,
            kind: TaskKind::OneShot,
        },
    ];
    let mut s = Scheduler::new(
        &g,
        ContinueMode::DepsOk,
        Box::new(HistoryPolicy::new(estimates, Some(2 * GIB))),
    );
    assert_eq!(s.next_ready(), Some(0), "the longest first");
    assert_eq!(s.next_ready(), Some(2), "big does not fit; s1 passes it");
    assert_eq!(s.held(), &[1]);
    assert_eq!(s.next_ready(), Some(3));
    assert_eq!(s.next_ready(), None);
    assert_eq!(s.held(), &[1], "big is still held");
    s.stopped_executing(0);
    assert_eq!(
        s.next_ready(),
        Some(1),
        "memory freed when medium's process ended"
    );
    assert!(s.held().is_empty());
}

/// PERF-2's reference: the list schedule that always starts the ready task with the longest
/// remaining path, computed offline and independently of the scheduler.
fn list_schedule(g: &TaskGraph, durations: &[u64], slots: usize) -> u64 {
    let n = g.nodes.len();
    let mut remaining = vec![0u64; n];
    for i in (0..n).rev() {
        // Layers are generated in order, so a dependant always has a higher index.
        let after = g.nodes[i].dependants.iter().map(|&d| remaining[d]).max();
        remaining[i] = durations[i] + after.unwrap_or(0);
    }
    let mut pending: Vec<usize> = g.nodes.iter().map(|node| node.deps.len()).collect();
    let mut ready: Vec<usize> = (0..n).filter(|&i| pending[i] == 0).collect();
    let mut executing: Vec<(u64, usize)> = Vec::new();
    let mut now = 0;
    loop {
        ready.sort_by_key(|&i| (std::cmp::Reverse(remaining[i]), i));
        while executing.len() < slots && !ready.is_empty() {
            let i = ready.remove(0);
            executing.push((now + durations[i], i));
        }
        let Some(first) = executing.iter().copied().min() else {
            return now;
        };
        executing.retain(|&e| e != first);
        now = first.0;
        for &d in &g.nodes[first.1].dependants {
            pending[d] -= 1;
            if pending[d] == 0 {
                ready.push(d);
            }
        }
    }
}

/// A layered graph: `widths[k]` nodes in layer k, each depending on up to `fan_in` nodes
/// of the layer below, picked by a fixed pseudo-random sequence.
fn layered(widths: &[usize], fan_in: usize, seed: u64) -> TaskGraph {
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as usize
    };
    let mut names: Vec<String> = Vec::new();
    let mut deps: Vec<Vec<String>> = Vec::new();
    let mut below: Vec<String> = Vec::new();
    for (layer, &width) in widths.iter().enumerate() {
        let here: Vec<String> = (0..width).map(|k| format!("l{layer:02}n{k:04}")).collect();
        for name in &here {
            let mut mine: Vec<String> = Vec::new();
            for _ in 0..fan_in.min(below.len()) {
                let pick = below[next() % below.len()].clone();
                if !mine.contains(&pick) {
                    mine.push(pick);
                }
            }
            names.push(name.clone());
            deps.push(mine);
        }
        below = here;
    }
    let spec: Vec<(&str, Vec<&str>)> = names
        .iter()
        .zip(&deps)
        .map(|(n, d)| (n.as_str(), d.iter().map(String::as_str).collect()))
        .collect();
    let spec: Vec<(&str, &[&str])> = spec.iter().map(|(n, d)| (*n, d.as_slice())).collect();
    graph(&spec)
}

/// No priorities: ready tasks start in the order they became ready, then by id.
struct IdOrder;

impl SchedulerPolicy for IdOrder {
    fn priorities(&self, graph: &TaskGraph) -> Vec<u64> {
        vec![0; graph.nodes.len()]
    }
}

/// Three nodes that each feed ten leaves (many dependants, a short path) beside one that
/// starts a chain of five (fewer dependants, the longest path): ordering by dependant count
/// starts the chain late.
fn fan_outs_beside_a_chain() -> TaskGraph {
    let mut spec: Vec<(String, Vec<String>)> = Vec::new();
    for f in 0..3 {
        spec.push((format!("f{f}"), vec![]));
        for leaf in 0..10 {
            spec.push((format!("f{f}leaf{leaf}"), vec![format!("f{f}")]));
        }
    }
    spec.push(("q0".into(), vec![]));
    for q in 1..6 {
        spec.push((format!("q{q}"), vec![format!("q{}", q - 1)]));
    }
    let deps: Vec<Vec<&str>> = spec
        .iter()
        .map(|(_, d)| d.iter().map(String::as_str).collect())
        .collect();
    let spec: Vec<(&str, &[&str])> = spec
        .iter()
        .zip(&deps)
        .map(|((n, _), d)| (n.as_str(), d.as_slice()))
        .collect();
    graph(&spec)
}

#[test]
fn perf_2_layered_graphs_with_uniform_durations_meet_the_list_schedule() {
    let shapes: [(&[usize], usize); 4] = [
        (&[40, 30, 20, 10, 5, 1], 3),
        (&[1, 50, 50, 50, 1], 4),
        (&[200, 100, 50, 25, 12, 6, 3, 1], 2),
        (&[10, 10, 10, 10, 10, 10, 10, 10, 10, 10], 2),
    ];
    let mut graphs: Vec<(String, TaskGraph)> = Vec::new();
    for (shape, (widths, fan_in)) in shapes.iter().enumerate() {
        for seed in 1..=3 {
            graphs.push((
                format!("shape {shape}, seed {seed}"),
                layered(widths, *fan_in, seed),
            ));
        }
    }
    graphs.push(("fan-outs beside a chain".into(), fan_outs_beside_a_chain()));
    let mut id_order_misses = 0;
    for (name, g) in &graphs {
        for slots in [2, 3, 8] {
            let durations = vec![100; g.nodes.len()];
            // History of an earlier run: every task took its duration.
            let estimates = with_durations(&vec![Some(100); g.nodes.len()]);
            let policy = Box::new(HistoryPolicy::new(estimates, None));
            let (wall, _) = simulate(g, &durations, policy, slots, &[]);
            let best = list_schedule(g, &durations, slots);
            assert_eq!(
                predicted_wall(g, &durations, slots),
                best,
                "{name}, {slots} slots"
            );
            assert!(
                wall * 100 <= best * 102,
                "{name}, {slots} slots: {wall} against {best}"
            );
            let (in_id_order, _) = simulate(g, &durations, Box::new(IdOrder), slots, &[]);
            if in_id_order * 100 > best * 102 {
                id_order_misses += 1;
            }
        }
    }
    // The shapes need the priority: starting ready tasks in id order misses somewhere.
    assert!(id_order_misses > 0);
}
