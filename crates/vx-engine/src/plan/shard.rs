//! `--shard K/N` (SCHED-8), the plan side: the whole plan is split with
//! `vx_core::schedule::shard::partition` the same way on every runner, and this runner keeps its
//! part and what its part needs from the others (their tasks stay in its graph, to be restored
//! from the cache the other runners fill, or run here when they are not there).
//!
//! The inputs every runner must share: the plan (same commit, same command line) and the
//! durations. Until the durations are shared between runners, each task counts the same (a
//! group nothing), so the split balances task counts along the graph's shape, and the run says
//! so. The slots a runner is assumed to have are `--concurrency` (a count), else the workspace's
//! `concurrency`, else [`DEFAULT_SLOTS`]: never this machine's CPU count, which another runner
//! may not share.

use vx_core::graph::{task_config, ExcludeDependencies, TaskGraph, TaskTable};
use vx_core::schedule::shard::{partition, Partition};
use vx_core::{TaskId, Workspace};

use crate::error::Failure;
use crate::options::{Concurrency, RunOptions};

/// The slots a runner is assumed to have when neither the command line nor the workspace says.
pub const DEFAULT_SLOTS: usize = 2;
/// What a task counts for without recorded durations (a second).
const UNIT_MS: u64 = 1000;
/// What a dependency on another runner is assumed to cost the dependant: the producer's upload,
/// this runner's download through the remote cache, and runners that do not start at the same
/// moment. Three tasks' worth: a task moves away from its dependencies only to save more.
const HANDOFF_MS: u64 = 3000;

/// This runner's part.
#[derive(Debug, Clone)]
pub struct ShardPlan {
    /// 1-based, as given.
    pub k: u32,
    pub n: u32,
    /// Per node of the narrowed graph: the shard (1-based) that runs it.
    pub owner: Vec<u32>,
    /// Non-group tasks of this part, of the others' that it needs, and of the whole plan.
    pub mine: usize,
    pub needed: usize,
    pub total: usize,
}

impl ShardPlan {
    /// What this runner's part is, on one line.
    pub fn line(&self) -> String {
        let needed = match self.needed {
            0 => String::new(),
            1 => " and 1 task of another part that it needs (restored from the cache, or run here)"
                .to_string(),
            n => format!(
                " and {n} tasks of other parts that it needs (restored from the cache, or run here)"
            ),
        };
        format!(
            "--shard {}/{}: this runner runs {} of {} tasks{needed}; the parts are balanced by task count along the graph (durations are not shared between runners yet)",
            self.k, self.n, self.mine, self.total
        )
    }
}

/// `--shard ci`: this job's part (1-based) and the number of parts, from the variables of a
/// CI's parallel jobs: GitLab's `CI_NODE_INDEX`/`CI_NODE_TOTAL` (1-based), Buildkite's
/// `BUILDKITE_PARALLEL_JOB`/`BUILDKITE_PARALLEL_JOB_COUNT` and CircleCI's
/// `CIRCLE_NODE_INDEX`/`CIRCLE_NODE_TOTAL` (0-based).
pub fn from_ci(env: &std::collections::BTreeMap<String, String>) -> Result<(u32, u32), Failure> {
    let number = |name: &str| env.get(name).and_then(|v| v.trim().parse::<u32>().ok());
    let found = [
        ("CI_NODE_INDEX", "CI_NODE_TOTAL", 0),
        ("BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", 1),
        ("CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", 1),
    ]
    .into_iter()
    .find_map(|(index, total, shift)| Some((number(index)? + shift, number(total)?)));
    match found {
        Some((k, n)) if (1..=n).contains(&k) && n <= 256 => Ok((k, n)),
        Some((k, n)) => Err(Failure::usage(format!(
            "`--shard=ci`: the CI's parallel-job variables give part {k} of {n}"
        ))),
        None => Err(vx_core::Diagnostic::new(
            "`--shard=ci` found no parallel-job variables of a CI it knows",
        )
        .hint("GitLab's `parallel:` sets CI_NODE_INDEX and CI_NODE_TOTAL, Buildkite's `parallelism:` BUILDKITE_PARALLEL_JOB and BUILDKITE_PARALLEL_JOB_COUNT, CircleCI's `parallelism:` CIRCLE_NODE_INDEX and CIRCLE_NODE_TOTAL; elsewhere pass `--shard=K/N`")
        .into()),
    }
}

/// The slots the partition assumes for each runner (see the module documentation).
pub fn slots(workspace: &Workspace, options: &RunOptions) -> usize {
    match options.concurrency {
        Some(Concurrency::Count(n)) => n as usize,
        _ => workspace
            .settings
            .concurrency
            .map_or(DEFAULT_SLOTS, |n| n as usize),
    }
    .max(1)
}

/// Each node's cost for the partition: a group nothing, any other task one unit.
fn durations(workspace: &Workspace, graph: &TaskGraph) -> Vec<u64> {
    graph
        .nodes
        .iter()
        .map(|node| match task_config(workspace, &node.id) {
            Some(config) if config.is_group() => 0,
            _ => UNIT_MS,
        })
        .collect()
}

/// The partition of the whole plan into `n` parts.
pub fn split(workspace: &Workspace, graph: &TaskGraph, n: usize, slots: usize) -> Partition {
    partition(graph, &durations(workspace, graph), n, slots, HANDOFF_MS)
}

/// Narrows the whole plan's `graph` to part `k` of `n`: the tasks it owns and everything they
/// depend on. The requested marks stay those of the whole plan.
pub fn narrow(
    workspace: &Workspace,
    table: &TaskTable,
    graph: TaskGraph,
    exclude: &ExcludeDependencies,
    (k, n): (u32, u32),
    slots: usize,
) -> Result<(TaskGraph, ShardPlan), Failure> {
    let split = split(workspace, &graph, n as usize, slots);
    let group = |id: &TaskId| task_config(workspace, id).is_some_and(|c| c.is_group());
    let total = graph.nodes.iter().filter(|node| !group(&node.id)).count();
    let owned: Vec<TaskId> = split
        .nodes_of(k as usize - 1)
        .map(|i| graph.nodes[i].id.clone())
        .collect();
    let mut narrowed = if owned.is_empty() {
        TaskGraph::default()
    } else {
        TaskGraph::build(workspace, table, &owned, exclude).map_err(Failure::from)?
    };
    let mut owner = Vec::with_capacity(narrowed.nodes.len());
    for node in &mut narrowed.nodes {
        let whole = graph.index[&node.id];
        node.requested = graph.nodes[whole].requested;
        owner.push(split.shard_of[whole] as u32 + 1);
    }
    let mine = narrowed
        .nodes
        .iter()
        .zip(&owner)
        .filter(|(node, &o)| o == k && !group(&node.id))
        .count();
    let needed = narrowed
        .nodes
        .iter()
        .zip(&owner)
        .filter(|(node, &o)| o != k && !group(&node.id))
        .count();
    Ok((
        narrowed,
        ShardPlan {
            k,
            n,
            owner,
            mine,
            needed,
            total,
        },
    ))
}

/// `--dry --shard auto`: the expected wall of the whole plan on 1 to 16 runners, in
/// milliseconds of task units (a task 1,000), and the most tasks one runner gets.
pub fn auto(workspace: &Workspace, graph: &TaskGraph, slots: usize) -> Vec<(usize, u64, usize)> {
    let group = |i: usize| task_config(workspace, &graph.nodes[i].id).is_some_and(|c| c.is_group());
    (1..=16)
        .map(|n| {
            let split = split(workspace, graph, n, slots);
            let most = (0..n)
                .map(|k| split.nodes_of(k).filter(|&i| !group(i)).count())
                .max()
                .unwrap_or(0);
            (n, split.makespan_ms(), most)
        })
        .collect()
}
