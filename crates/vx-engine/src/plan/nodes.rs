//! What the run reads of a planned node: its row (identity, configuration and kind, built once
//! per run) and its environment.

use std::collections::BTreeMap;

use vx_core::config::TaskConfig;
use vx_core::env::{task_environment, EnvInputs};
use vx_core::TaskId;

use super::Plan;

/// How a node runs: not at all (a group), once, or until stopped (EXEC-13).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Group,
    OneShot,
    Persistent,
}

/// One planned task as the run reads it, built once from the plan ([`rows`]): the identity
/// used throughout (its node index and its id) with its configuration and kind, so the loop,
/// the cache and the retries read fields rather than look a task up by name.
#[derive(Clone, Copy)]
pub struct Row<'p> {
    /// Its index in the plan's graph: the scheduler's and the loop's handle.
    pub node: usize,
    pub id: &'p TaskId,
    pub config: &'p TaskConfig,
    pub kind: Kind,
}

/// Every node's row, in node order.
pub fn rows(plan: &Plan) -> Vec<Row<'_>> {
    plan.graph
        .nodes
        .iter()
        .enumerate()
        .map(|(node, n)| {
            let config = vx_core::graph::task_config(&plan.workspace, &n.id)
                .expect("every node is a declared task");
            Row {
                node,
                id: &n.id,
                config,
                kind: kind_of(config),
            }
        })
        .collect()
}

fn kind_of(config: &TaskConfig) -> Kind {
    if config.is_group() {
        Kind::Group
    } else if config.is_persistent() {
        Kind::Persistent
    } else {
        Kind::OneShot
    }
}

/// The child environment of node `i` (EXEC-4).
pub fn environment(
    plan: &Plan,
    host: &BTreeMap<String, String>,
    row: Row<'_>,
) -> BTreeMap<String, String> {
    let node = &plan.graph.nodes[row.node];
    let config = row.config;
    let project = &plan.workspace.projects[node.project];
    let dir = plan.workspace.root.join(&project.dir);
    let root = plan.workspace.root.to_string_lossy().into_owned();
    task_environment(&EnvInputs {
        host,
        config: config.env.as_deref(),
        project_dir: &dir.to_string_lossy(),
        root_dir: &root,
        workspace_root: &root,
        task_id: &node.id.to_string(),
    })
}
