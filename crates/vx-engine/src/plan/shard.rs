//! `--shard K/N` (SCHED-8), the plan side: the whole plan is split with
//! `vx_core::schedule::shard::partition` the same way on every runner, and this runner keeps its
//! part and what its part needs from the others (their tasks stay in its graph, to be restored
//! from the cache the other runners fill, or run here when they are not there).
//!
//! The inputs every runner must share: the plan (same commit, same command line) and the
//! durations, which the runners agree on through the remote cache (`split.rs`). A task without
//! a recorded duration counts as the median of the known ones (a group nothing); with none
//! known, every task counts the same, so the split balances task counts along the graph's
//! shape, and the run says so. The slots a runner is assumed to have are `--concurrency` (a count), else the workspace's
//! `concurrency`, else [`DEFAULT_SLOTS`]: never this machine's CPU count, which another runner
//! may not share.

use vx_core::graph::{task_config, ExcludeDependencies, TaskGraph, TaskTable};
use vx_core::schedule::shard::{partition, Partition};
use vx_core::{TaskId, Workspace};

use crate::error::Failure;
use crate::options::{Concurrency, RunOptions};
use crate::plan::split::{Agreement, Inputs};

/// The slots a runner is assumed to have when neither the command line nor the workspace says.
pub const DEFAULT_SLOTS: usize = 2;
/// What a task counts for without recorded durations (a second).
const UNIT_MS: u64 = 1000;
/// What a dependency on another runner is assumed to cost the dependant: the producer's upload,
/// this runner's download through the remote cache (its ask comes every quarter second at
/// first, then less often), and runners that do not start at the same moment.
const HANDOFF_MS: u64 = 500;
/// The same without recorded durations, in task units: three tasks' worth, so that a task
/// leaves its dependencies only to save more than that when nothing says how long tasks take.
const HANDOFF_UNITS: u64 = 3 * UNIT_MS;

/// This runner's part.
#[derive(Debug, Clone)]
pub struct ShardPlan {
    /// 1-based, as given.
    pub k: u32,
    pub n: u32,
    /// Per node of the narrowed graph: the shard (1-based) that runs it, and when the split
    /// expects it to start (milliseconds from the run's start).
    pub owner: Vec<u32>,
    pub planned_start_ms: Vec<u64>,
    /// Per node: when the split expects it to finish (for another part's task: when its entry
    /// can be expected in the remote cache).
    pub planned_finish_ms: Vec<u64>,
    /// Non-group tasks of this part, of the others' that it needs, and of the whole plan.
    pub mine: usize,
    pub needed: usize,
    pub total: usize,
    /// Tasks of the whole plan with a recorded duration.
    pub known: usize,
    /// What the split was computed from.
    pub inputs: Inputs,
    /// The whole plan's graph and the slots assumed: the split again under other inputs
    /// (`split::verify`).
    pub whole: TaskGraph,
    pub slots: usize,
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
        let by = by_words(self.known, self.total, &self.inputs);
        let agreed = match self.inputs.agreement {
            Agreement::Adopted => {
                "; the split is the one the first runner recorded in the remote cache"
            }
            Agreement::Written => {
                "; this runner recorded the split in the remote cache for the others"
            }
            Agreement::Failed => "; this runner runs the whole plan",
            Agreement::Shared | Agreement::Alone => "",
        };
        format!(
            "--shard {}/{}: this runner runs {} of {} tasks{needed}; the parts are balanced by {by}{agreed}",
            self.k, self.n, self.mine, self.total
        )
    }

    /// The tasks this part owns when the whole plan is split by `inputs` instead, and does not
    /// own in its own split.
    pub fn owned_under(&self, workspace: &Workspace, inputs: &Inputs) -> Vec<TaskId> {
        let split = split(workspace, &self.whole, inputs, self.n as usize, self.slots);
        let mine = split_nodes(
            workspace,
            &self.whole,
            &self.inputs,
            self.n,
            self.slots,
            self.k,
        );
        split
            .nodes_of(self.k as usize - 1)
            .filter(|i| !mine.contains(i))
            .filter(|&i| {
                task_config(workspace, &self.whole.nodes[i].id).is_some_and(|c| !c.is_group())
            })
            .map(|i| self.whole.nodes[i].id.clone())
            .collect()
    }
}

fn split_nodes(
    workspace: &Workspace,
    graph: &TaskGraph,
    inputs: &Inputs,
    n: u32,
    slots: usize,
    k: u32,
) -> std::collections::BTreeSet<usize> {
    split(workspace, graph, inputs, n as usize, slots)
        .nodes_of(k as usize - 1)
        .collect()
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

/// Each node's cost for the partition: a group or a persistent task nothing, a task its
/// recorded duration, else the median of the recorded ones, else one unit.
pub fn durations(workspace: &Workspace, graph: &TaskGraph, inputs: &Inputs) -> Vec<u64> {
    let costs: Vec<Option<u64>> = graph
        .nodes
        .iter()
        .map(|node| match task_config(workspace, &node.id) {
            Some(config) if config.is_group() || config.is_persistent() => Some(0),
            _ => inputs.durations.get(&node.id.to_string()).copied(),
        })
        .collect();
    let known: Vec<u64> = costs
        .iter()
        .flatten()
        .copied()
        .filter(|&ms| ms > 0)
        .collect();
    let fallback = vx_core::schedule::median(&known).unwrap_or(UNIT_MS);
    costs
        .into_iter()
        .map(|cost| cost.unwrap_or(fallback))
        .collect()
}

/// The partition of the whole plan into `n` parts.
pub fn split(
    workspace: &Workspace,
    graph: &TaskGraph,
    inputs: &Inputs,
    n: usize,
    slots: usize,
) -> Partition {
    let handoff = if known(workspace, graph, inputs).0 == 0 {
        HANDOFF_UNITS
    } else {
        HANDOFF_MS
    };
    partition(
        graph,
        &durations(workspace, graph, inputs),
        n,
        slots,
        handoff,
    )
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
    inputs: Inputs,
) -> Result<(TaskGraph, ShardPlan), Failure> {
    let mut split = split(workspace, &graph, &inputs, n as usize, slots);
    if inputs.agreement == Agreement::Failed {
        // No split every runner shares: this one runs the whole plan (`split.rs`).
        split.shard_of.iter_mut().for_each(|s| *s = k as usize - 1);
    }
    let group = |id: &TaskId| task_config(workspace, id).is_some_and(|c| c.is_group());
    let (known, total) = known(workspace, &graph, &inputs);
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
    let mut planned_start_ms = Vec::with_capacity(narrowed.nodes.len());
    let mut planned_finish_ms = Vec::with_capacity(narrowed.nodes.len());
    for node in &mut narrowed.nodes {
        let whole = graph.index[&node.id];
        node.requested = graph.nodes[whole].requested;
        owner.push(split.shard_of[whole] as u32 + 1);
        planned_start_ms.push(split.start_ms[whole]);
        planned_finish_ms.push(split.finish_ms[whole]);
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
            planned_start_ms,
            planned_finish_ms,
            mine,
            needed,
            total,
            known,
            inputs,
            whole: graph,
            slots,
        },
    ))
}

/// How many tasks of `graph` (not groups or persistent tasks, which weigh nothing) have a
/// duration in `inputs`, and of how many.
pub fn known(workspace: &Workspace, graph: &TaskGraph, inputs: &Inputs) -> (usize, usize) {
    let tasks = graph.nodes.iter().filter(|node| {
        task_config(workspace, &node.id).is_none_or(|c| !c.is_group() && !c.is_persistent())
    });
    let (mut known, mut total) = (0, 0);
    for node in tasks {
        total += 1;
        known += usize::from(inputs.durations.contains_key(&node.id.to_string()));
    }
    (known, total)
}

/// What the split says it balanced by: recorded durations, or task counts and why.
pub fn balanced_by(workspace: &Workspace, graph: &TaskGraph, inputs: &Inputs) -> String {
    let (known, total) = known(workspace, graph, inputs);
    by_words(known, total, inputs)
}

fn by_words(known: usize, total: usize, inputs: &Inputs) -> String {
    if known == 0 {
        let why = if inputs.durations.is_empty() {
            inputs.source.as_str()
        } else {
            "no runner has recorded durations of these tasks yet"
        };
        format!("task count along the graph: {why}")
    } else {
        format!(
            "recorded durations of {known} of {total} tasks (from {})",
            inputs.source
        )
    }
}

/// `--dry --shard auto`: the expected wall of the whole plan on 1 to 16 runners in
/// milliseconds (of task units, a task 1,000, when `inputs` know no duration), and the most
/// tasks one runner gets.
pub fn auto(
    workspace: &Workspace,
    graph: &TaskGraph,
    inputs: &Inputs,
    slots: usize,
) -> Vec<(usize, u64, usize)> {
    let group = |i: usize| task_config(workspace, &graph.nodes[i].id).is_some_and(|c| c.is_group());
    (1..=16)
        .map(|n| {
            let split = split(workspace, graph, inputs, n, slots);
            let most = (0..n)
                .map(|k| split.nodes_of(k).filter(|&i| !group(i)).count())
                .max()
                .unwrap_or(0);
            (n, split.makespan_ms(), most)
        })
        .collect()
}
