//! What the run reads of a planned node: its configuration, its kind and its environment.

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

/// Node `i`'s task configuration.
pub fn task(plan: &Plan, i: usize) -> &TaskConfig {
    let id: &TaskId = &plan.graph.nodes[i].id;
    vx_core::graph::task_config(&plan.workspace, id).expect("every node is a declared task")
}

pub fn kind_of(config: &TaskConfig) -> Kind {
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
    i: usize,
) -> BTreeMap<String, String> {
    let node = &plan.graph.nodes[i];
    let project = &plan.workspace.projects[node.project];
    let dir = plan.workspace.root.join(&project.dir);
    let root = plan.workspace.root.to_string_lossy().into_owned();
    task_environment(&EnvInputs {
        host,
        config: task(plan, i).env.as_deref(),
        project_dir: &dir.to_string_lossy(),
        root_dir: &root,
        workspace_root: &root,
        task_id: &node.id.to_string(),
    })
}
