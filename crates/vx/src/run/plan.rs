//! The first half of the run pipeline (ARCH-3): discover the workspace, load configuration,
//! select projects, resolve the requested tasks and build the task graph. Nothing executes here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use vx_core::graph::{ExcludeDependencies, TaskGraph, TaskTable};
use vx_core::request::{resolve_requests, Scope};
use vx_core::selection::{select, ProjectWalks};
use vx_core::suggest::did_you_mean;
use vx_core::{Diagnostic, TaskId, Workspace};

use crate::error::Failure;
use crate::options::RunOptions;
use crate::workspace::load;

pub struct Plan {
    pub workspace: Workspace,
    pub graph: TaskGraph,
    /// Every task of the workspace with its resolved edges: keys fold upstreams that the run
    /// does not schedule (CLI-13) through it.
    pub table: TaskTable,
    /// Nodes displayed as requested: the requested ones plus members surfaced from requested
    /// groups (GRAPH-7).
    pub shown_as_requested: BTreeSet<usize>,
    /// The selected (or scoped) projects; with the graph's projects, the footer's count.
    pub projects_in_run: usize,
}

pub fn plan(cwd: &Path, options: &RunOptions) -> Result<Plan, Failure> {
    let workspace = load(cwd)?;
    refuse_nested_run(&workspace)?;
    let table = TaskTable::resolve(&workspace)?;
    check_excluded_names(&workspace, &options.exclude)?;

    let scope = if options.has_selection() {
        let walks = ProjectWalks::new(&workspace, &table);
        let selection = select(&workspace, &walks, options.all, &options.filters)?;
        for warning in &selection.warnings {
            crate::render::warning(warning);
        }
        Scope::Selection(selection.projects)
    } else {
        match cwd_project(&workspace, cwd) {
            Some(p) => Scope::Project(p),
            None => Scope::Outside,
        }
    };
    let requested = resolve_requests(
        &workspace,
        &options.tasks,
        &scope,
        !options.forwarded.is_empty(),
    )?;
    let graph = TaskGraph::build(&workspace, &table, &requested, &options.exclude)?;
    let shown_as_requested = surface(&workspace, &graph);
    let projects: BTreeSet<usize> = graph.nodes.iter().map(|n| n.project).collect();
    Ok(Plan {
        projects_in_run: projects.len(),
        workspace,
        graph,
        table,
        shown_as_requested,
    })
}

/// CLI-10: a `vx run` inside a task of the same workspace would recurse.
fn refuse_nested_run(workspace: &Workspace) -> Result<(), Failure> {
    let Some(outer) = std::env::var_os("VX_RUN_WORKSPACE") else {
        return Ok(());
    };
    let same = PathBuf::from(&outer)
        .canonicalize()
        .is_ok_and(|p| p == workspace.root);
    if !same {
        return Ok(());
    }
    let task = std::env::var("VX_RUN_TASK").unwrap_or_default();
    Err(Diagnostic::new(format!(
        "`vx run` inside task `{task}` of the same workspace would recurse; add the work as a dependency instead"
    ))
    .into())
}

fn check_excluded_names(
    workspace: &Workspace,
    exclude: &ExcludeDependencies,
) -> Result<(), Failure> {
    let ExcludeDependencies::Names(names) = exclude else {
        return Ok(());
    };
    let declared: BTreeSet<&str> = workspace
        .projects
        .iter()
        .flat_map(|p| p.config.tasks.keys().map(String::as_str))
        .collect();
    for name in names {
        if !declared.contains(name.as_str()) {
            return Err(Diagnostic::new(format!(
                "--exclude-dependencies names `{name}`, which no project declares"
            ))
            .suggest(did_you_mean(name, declared.iter().copied()))
            .into());
        }
    }
    Ok(())
}

/// CLI-6: the deepest project whose directory contains the current directory, by real path.
fn cwd_project(workspace: &Workspace, cwd: &Path) -> Option<usize> {
    let real = cwd.canonicalize().ok()?;
    let rel = real.strip_prefix(&workspace.root).ok()?;
    let rel = rel.to_string_lossy().replace('\\', "/");
    let project = workspace.project_containing(&rel)?;
    workspace.by_name.get(&project.name).copied()
}

/// GRAPH-7: members of requested groups in the same project, descending nested groups.
fn surface(workspace: &Workspace, graph: &TaskGraph) -> BTreeSet<usize> {
    let mut shown: BTreeSet<usize> = BTreeSet::new();
    let mut stack: Vec<usize> = Vec::new();
    for (i, node) in graph.nodes.iter().enumerate() {
        if node.requested {
            shown.insert(i);
            stack.push(i);
        }
    }
    while let Some(i) = stack.pop() {
        let node = &graph.nodes[i];
        if !is_group(workspace, &node.id) {
            continue;
        }
        for &d in &node.deps {
            if graph.nodes[d].project == node.project && shown.insert(d) {
                stack.push(d);
            }
        }
    }
    shown
}

pub fn is_group(workspace: &Workspace, id: &TaskId) -> bool {
    vx_core::graph::task_config(workspace, id).is_some_and(|t| t.is_group())
}
