//! The scheduler's tests, driven by events (no clock, no processes).
use super::*;
use crate::testing::graph;

fn name(g: &TaskGraph, i: usize) -> &str {
    &g.nodes[i].id.task
}

#[test]
fn dependencies_finish_before_dependants_and_priority_orders_ready_tasks() {
    // a <- b <- c, and d alone: a has two dependants so it starts before d.
    let g = graph(&[("a", &[]), ("b", &["a"]), ("c", &["b"]), ("d", &[])]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    assert_eq!(s.priority(0), 2);
    let first = s.next_ready().unwrap();
    assert_eq!(name(&g, first), "a");
    assert_eq!(name(&g, s.next_ready().unwrap()), "d");
    assert_eq!(s.next_ready(), None);
    s.finish(first, Finish::Success);
    assert_eq!(name(&g, s.next_ready().unwrap()), "b");
}

#[test]
fn remote_nodes_start_from_their_own_queue_and_still_obey_the_graph() {
    // a <- r1 <- b, and r2 alone; r1 and r2 run remotely.
    let g = graph(&[("a", &[]), ("r1", &["a"]), ("b", &["r1"]), ("r2", &[])]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    s.set_remote(1, true);
    s.set_remote(3, true);
    assert!(s.is_remote(3) && !s.is_remote(0));
    // r2 was ready already: it moved to the remote queue.
    assert_eq!(s.next_ready_remote(), Some(3));
    assert_eq!(s.next_ready_remote(), None, "r1 waits for a");
    let a = s.next_ready().unwrap();
    assert_eq!(name(&g, a), "a");
    assert_eq!(
        s.next_ready(),
        None,
        "remote nodes never come from the local queue"
    );
    s.finish(a, Finish::Success);
    assert_eq!(s.next_ready_remote(), Some(1));
    assert_eq!(s.state(1), NodeState::Running);
    s.finish(1, Finish::Success);
    assert_eq!(name(&g, s.next_ready().unwrap()), "b");
    s.finish(3, Finish::Success);
    s.finish(2, Finish::Success);
    assert!(s.is_done());
}

#[test]
fn a_remote_node_set_local_again_keeps_its_place_in_the_local_queue() {
    let g = graph(&[("r", &[]), ("d", &[])]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    s.set_remote(0, true);
    s.set_remote(0, false);
    assert_eq!(s.next_ready_remote(), None);
    assert_eq!(name(&g, s.next_ready().unwrap()), "r");
    assert_eq!(name(&g, s.next_ready().unwrap()), "d");
    // Remote dispatch stops with the run, as local dispatch does.
    let g = graph(&[("r", &[])]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    s.set_remote(0, true);
    s.halt();
    assert_eq!(s.next_ready_remote(), None);
}

#[test]
fn disabling_remote_sends_every_unstarted_node_to_the_local_queue() {
    // r1 runs remotely; r2 is ready remotely; r3 was taken ahead and comes back later.
    let g = graph(&[("r1", &[]), ("r2", &[]), ("r3", &[]), ("x", &["r1"])]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    for i in 0..4 {
        s.set_remote(i, true);
    }
    s.take_ahead(2);
    let r1 = s.next_ready_remote().unwrap();
    assert_eq!(name(&g, r1), "r1");
    s.disable_remote();
    assert!(s.is_remote(r1), "the one in flight stays what it is");
    assert_eq!(s.next_ready_remote(), None);
    assert_eq!(name(&g, s.next_ready().unwrap()), "r2");
    s.give_back(2);
    assert_eq!(name(&g, s.next_ready().unwrap()), "r3");
    s.finish(r1, Finish::Success);
    assert_eq!(
        name(&g, s.next_ready().unwrap()),
        "x",
        "its dependant runs locally"
    );
}

#[test]
fn an_interactive_task_waits_for_remote_ones_too() {
    let g = graph(&[("r", &[]), ("tty", &[])]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    s.set_remote(0, true);
    s.set_interactive(1, Interactive::OneShot);
    assert_eq!(s.next_ready_remote(), Some(0));
    assert_eq!(s.next_ready(), None, "a remote task is running");
    s.finish(0, Finish::Success);
    assert_eq!(s.next_ready(), Some(1));
    assert!(s.holds_terminal());
}

#[test]
fn deps_ok_skips_transitive_dependants_with_the_root_cause() {
    let g = graph(&[("a", &[]), ("b", &["a"]), ("c", &["b"]), ("d", &[])]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    let a = s.next_ready().unwrap();
    let skipped = s.finish(a, Finish::Failed);
    assert_eq!(skipped, vec![1, 2]);
    assert_eq!(s.state(2), NodeState::Skipped(Some(0)));
    assert_eq!(name(&g, s.next_ready().unwrap()), "d");
}

#[test]
fn a_node_finished_ahead_is_never_dispatched_and_keeps_its_outcome() {
    // a <- b <- c: b is restored ahead while a runs; a then fails.
    let g = graph(&[("a", &[]), ("b", &["a"]), ("c", &["b"]), ("d", &["a"])]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    s.finish_ahead(1);
    assert_eq!(s.state(1), NodeState::Succeeded);
    let a = s.next_ready().unwrap();
    assert_eq!(name(&g, a), "a");
    assert_eq!(
        name(&g, s.next_ready().unwrap()),
        "c",
        "b's dependant is released"
    );
    let skipped = s.finish(a, Finish::Failed);
    assert_eq!(skipped, vec![3], "d is skipped; b keeps its outcome");
    assert_eq!(s.state(1), NodeState::Succeeded);
    assert_eq!(s.next_ready(), None, "b is never dispatched");
}

#[test]
fn a_node_taken_ahead_and_given_back_runs_after_its_dependencies() {
    let g = graph(&[("a", &[]), ("b", &["a"])]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    s.take_ahead(1);
    let a = s.next_ready().unwrap();
    s.finish(a, Finish::Success);
    assert_eq!(s.next_ready(), None, "a taken node is not dispatched");
    assert!(s.give_back(1).is_empty());
    assert_eq!(s.next_ready(), Some(1));
}

#[test]
fn a_node_given_back_after_its_dependency_failed_is_skipped() {
    let g = graph(&[("a", &[]), ("b", &["a"]), ("c", &["b"])]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    s.take_ahead(1);
    let a = s.next_ready().unwrap();
    let skipped = s.finish(a, Finish::Failed);
    assert!(skipped.is_empty(), "b is taken; c waits for b's restore");
    assert_eq!(s.give_back(1), vec![1, 2]);
    assert_eq!(s.state(1), NodeState::Skipped(Some(0)));
    assert!(s.is_done());
}

#[test]
fn a_ready_node_finished_ahead_leaves_the_ready_queue() {
    let g = graph(&[("a", &[]), ("b", &[])]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    s.finish_ahead(0);
    assert_eq!(s.next_ready(), Some(1));
    assert_eq!(s.next_ready(), None);
}

#[test]
fn never_halts_dispatch_after_the_first_failure() {
    let g = graph(&[("a", &[]), ("b", &[]), ("c", &[])]);
    let mut s = Scheduler::new(&g, ContinueMode::Never, Box::new(DependantCount));
    let a = s.next_ready().unwrap();
    s.finish(a, Finish::Failed);
    assert_eq!(s.next_ready(), None);
    assert_eq!(s.unstarted().len(), 2);
    assert!(s.is_done());
}

#[test]
fn always_runs_dependants_and_taints_them() {
    let g = graph(&[("a", &[]), ("b", &["a"]), ("c", &["b"])]);
    let mut s = Scheduler::new(&g, ContinueMode::Always, Box::new(DependantCount));
    let a = s.next_ready().unwrap();
    s.finish(a, Finish::Failed);
    let b = s.next_ready().unwrap();
    assert!(s.is_tainted(b));
    s.finish(b, Finish::Success);
    let c = s.next_ready().unwrap();
    assert!(s.is_tainted(c));
}

/// A policy that admits one node at a time and prefers the last node.
struct OneAtATime;

impl SchedulerPolicy for OneAtATime {
    fn priorities(&self, graph: &TaskGraph) -> Vec<u64> {
        (0..graph.nodes.len() as u64).collect()
    }
    fn admits(&self, _node: usize, running: &[usize]) -> Admission {
        if running.is_empty() {
            Admission::Start
        } else {
            Admission::Wait
        }
    }
}

#[test]
fn the_policy_decides_priority_and_admission() {
    let g = graph(&[("a", &[]), ("b", &[]), ("c", &[])]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(OneAtATime));
    let first = s.next_ready().unwrap();
    assert_eq!(name(&g, first), "c");
    assert_eq!(s.next_ready(), None, "held by admission");
    s.finish(first, Finish::Success);
    assert_eq!(name(&g, s.next_ready().unwrap()), "b");
}

#[test]
fn diamond_counts_shared_dependants_once() {
    let g = graph(&[("a", &[]), ("b", &["a"]), ("c", &["a"]), ("d", &["b", "c"])]);
    let s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    assert_eq!(s.priority(0), 3);
}

#[test]
fn an_interactive_task_waits_for_an_empty_machine_and_runs_alone() {
    // a and b are ordinary; t is interactive, with the most dependants so it heads the
    // queue once a has started.
    let g = graph(&[
        ("a", &[]),
        ("t", &[]),
        ("b", &[]),
        ("x", &["t"]),
        ("y", &["t"]),
    ]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    s.set_interactive(1, Interactive::OneShot);
    let a = s.next_ready().unwrap();
    assert_eq!(
        name(&g, a),
        "t",
        "t has the highest priority and nothing runs yet"
    );
    assert_eq!(
        s.next_ready(),
        None,
        "nothing starts beside an interactive task"
    );
    s.finish(a, Finish::Success);
    let (first, second) = (s.next_ready().unwrap(), s.next_ready().unwrap());
    assert!(first != second && first != a && second != a);
    assert!(
        s.next_ready().is_some(),
        "ordinary tasks start side by side again"
    );

    // The other way round: an ordinary task runs, so the interactive one waits and blocks
    // what is behind it.
    let g = graph(&[("a", &[]), ("t", &[]), ("b", &[])]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    s.set_interactive(1, Interactive::OneShot);
    let first = s.next_ready().unwrap();
    assert_eq!(name(&g, first), "a");
    assert_eq!(
        s.next_ready(),
        None,
        "t waits, and b may not jump ahead of it"
    );
    s.finish(first, Finish::Success);
    assert_eq!(name(&g, s.next_ready().unwrap()), "t");
    assert_eq!(s.next_ready(), None);
}

#[test]
fn an_interactive_persistent_task_starts_last() {
    // t is ready at once but must wait for a, b and c, which depend on nothing of it.
    let g = graph(&[("t", &[]), ("a", &[]), ("b", &["a"]), ("c", &[])]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    s.set_interactive(0, Interactive::Persistent);
    let mut order = Vec::new();
    while let Some(i) = s.next_ready() {
        order.push(name(&g, i).to_string());
        if s.state(0) != NodeState::Running {
            s.finish(i, Finish::Success);
        }
    }
    assert_eq!(order.last().map(String::as_str), Some("t"), "{order:?}");
    assert_eq!(order.len(), 4);
    assert!(s.unstarted().is_empty());
}

#[test]
fn an_interactive_persistent_task_waits_for_running_tasks_too() {
    let g = graph(&[("t", &[]), ("a", &[])]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    s.set_interactive(0, Interactive::Persistent);
    let a = s.next_ready().unwrap();
    assert_eq!(name(&g, a), "a");
    assert_eq!(s.next_ready(), None, "a still runs");
    assert_eq!(s.unstarted(), vec![0], "t is still unstarted");
    s.finish(a, Finish::Success);
    assert_eq!(s.next_ready(), Some(0));
}

#[test]
fn only_one_interactive_persistent_task_starts_and_none_after_a_failure() {
    let g = graph(&[("s1", &[]), ("s2", &[]), ("a", &[])]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    s.set_interactive(0, Interactive::Persistent);
    s.set_interactive(1, Interactive::Persistent);
    let a = s.next_ready().unwrap();
    assert_eq!(name(&g, a), "a");
    s.finish(a, Finish::Success);
    let first = s.next_ready().unwrap();
    // Ready at spawn: the run loop finishes it at once.
    s.finish(first, Finish::Success);
    assert_eq!(s.next_ready(), None, "the terminal is held");
    assert!(s.is_done(), "the other one stays unstarted");
    assert_eq!(s.unstarted().len(), 1);

    let g = graph(&[("shell", &[]), ("lint", &[])]);
    let mut s = Scheduler::new(&g, ContinueMode::DepsOk, Box::new(DependantCount));
    s.set_interactive(0, Interactive::Persistent);
    let lint = s.next_ready().unwrap();
    s.finish(lint, Finish::Failed);
    assert_eq!(s.next_ready(), None, "no shell after a failure");
    assert!(s.is_done());
    assert_eq!(s.unstarted(), vec![0]);

    let mut s = Scheduler::new(&g, ContinueMode::Always, Box::new(DependantCount));
    s.set_interactive(0, Interactive::Persistent);
    let lint = s.next_ready().unwrap();
    s.finish(lint, Finish::Failed);
    assert_eq!(
        s.next_ready(),
        Some(0),
        "--continue=always starts it anyway"
    );
}
