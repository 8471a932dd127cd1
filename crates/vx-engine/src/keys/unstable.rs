//! SCHED-6: which keys are predictions, because a task upstream in the run may still write
//! what they fold.

use vx_core::graph::{task_config, TaskGraph};

/// SCHED-6: which nodes have unstable keys — some transitive upstream in the run can change
/// their inputs: an uncached task (one with a command) of the same project, or of the root
/// project, or any uncached task when the task has `workspace-inputs`; a task declaring
/// `workspace-outputs`; any uncached task when it has `^name` input sets; or an unstable upstream. Sandboxes (M3) and `upfront-keys = false` add
/// cases later (with `upfront-keys = false`, every cached upstream of the same project counts too).
///
/// Linear in the graph: facts flow in topological order, each node carrying the set of
/// projects that hold uncached upstream writers (a set that grows past a bound is treated as
/// "every project", which only makes more keys unstable, never fewer).
pub fn unstable_nodes(plan: &crate::plan::Plan) -> Vec<bool> {
    const MANY: usize = 64;
    let graph = &plan.graph;
    let ws = &plan.workspace;
    let upfront = ws.settings.rules.as_ref().and_then(|r| r.upfront_keys) != Some(false);
    let n = graph.nodes.len();
    // Per node, from its configuration, looked up once.
    let mut writer = vec![false; n];
    let mut cached = vec![false; n];
    let mut wide = vec![false; n];
    let mut reaches_dependencies = vec![false; n];
    let mut writes_anywhere = vec![false; n];
    for (i, node) in graph.nodes.iter().enumerate() {
        if let Some(config) = task_config(ws, &node.id) {
            let cache = config.cache.as_ref();
            cached[i] = cache.is_some();
            writer[i] = cache.is_none() && !config.is_group();
            wide[i] = cache.is_some_and(|c| !c.workspace_inputs.is_empty());
            reaches_dependencies[i] = cache.is_some_and(|c| !c.dependency_inputs.is_empty());
            writes_anywhere[i] = cache.is_some_and(|c| !c.workspace_outputs.is_empty());
        }
    }
    let root = ws.projects.iter().position(|p| p.dir.is_empty());
    // Projects holding uncached (or, without up-front keys, any) writers upstream; `None` = many.
    let mut writers: Vec<Option<Vec<usize>>> = vec![Some(Vec::new()); n];
    let mut anywhere = vec![false; n];
    let mut unstable = vec![false; n];
    for i in topological(graph) {
        let node = &graph.nodes[i];
        let mut set: Option<Vec<usize>> = Some(Vec::new());
        let mut reached_anywhere = false;
        let mut upstream_unstable = false;
        for &d in &node.deps {
            upstream_unstable |= unstable[d];
            reached_anywhere |= anywhere[d] || writes_anywhere[d];
            let direct = (writer[d] || (!upfront && cached[d])).then_some(graph.nodes[d].project);
            set = match (set, &writers[d]) {
                (None, _) | (_, None) => None,
                (Some(mut own), Some(theirs)) => {
                    own.extend(theirs.iter().copied());
                    own.extend(direct);
                    own.sort_unstable();
                    own.dedup();
                    (own.len() <= MANY).then_some(own)
                }
            };
        }
        let unstable_here = upstream_unstable
            || reached_anywhere
            || match &set {
                None => true,
                Some(projects) => {
                    projects.contains(&node.project)
                        || root.is_some_and(|r| projects.contains(&r))
                        // `^name` inputs read other projects' files: as for
                        // `workspace-inputs`, any upstream writer counts.
                        || ((wide[i] || reaches_dependencies[i]) && !projects.is_empty())
                }
            };
        unstable[i] = unstable_here;
        anywhere[i] = reached_anywhere;
        writers[i] = set;
    }
    unstable
}

/// Node indices with every node after its dependencies.
pub fn topological(graph: &TaskGraph) -> Vec<usize> {
    let mut pending: Vec<usize> = graph.nodes.iter().map(|n| n.deps.len()).collect();
    let mut ready: Vec<usize> = (0..graph.nodes.len())
        .filter(|&i| pending[i] == 0)
        .collect();
    let mut order = Vec::with_capacity(graph.nodes.len());
    while let Some(i) = ready.pop() {
        order.push(i);
        for &d in &graph.nodes[i].dependants {
            pending[d] -= 1;
            if pending[d] == 0 {
                ready.push(d);
            }
        }
    }
    order
}
