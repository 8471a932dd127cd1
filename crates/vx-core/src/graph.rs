//! The task graph (GRAPH-1 …): which tasks a run holds and what each waits for.
//!
//! How this works: [`DependsOn`] resolution turns every `depends-on` entry of every task of the
//! workspace into edges (so a typo anywhere is caught before anything runs, GRAPH-2), with `^name`
//! resolved to the nearest holders along project edges (GRAPH-3). [`TaskGraph::build`] then takes
//! the requested tasks and adds, breadth first, everything their edges reach (GRAPH-1), applies
//! `--exclude-dependencies` by contracting dropped edges (CLI-13), and refuses cycles with their
//! path (GRAPH-5). Nothing recurses in proportion to depth (GRAPH-6); every list is sorted by task
//! id so the result is deterministic.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use crate::config::TaskConfig;
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::id::{TaskId, ROOT_PROJECT};
use crate::location::Location;
use crate::project::{EdgeKind, Workspace};
use crate::suggest::did_you_mean;

/// One resolved `depends-on` edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub to: TaskId,
    /// The `depends-on` entry that produced the edge.
    pub at: Location,
}

/// Every task of the workspace with its resolved edges, sorted by task id.
#[derive(Debug, Clone, Default)]
pub struct TaskTable {
    pub edges: BTreeMap<TaskId, Vec<Edge>>,
    /// Per task, the projects its `^name` entries passed through without a holder, as
    /// (project, name) pairs sorted and unique: each contributes a pass-through fingerprint
    /// to the task's key (GRAPH-3, KEY-9).
    pub pass_through: BTreeMap<TaskId, Vec<(String, String)>>,
}

impl TaskTable {
    /// Resolves every `depends-on` entry of every task; errors are collected (CFG-10).
    pub fn resolve(workspace: &Workspace) -> Result<TaskTable, Vec<Diagnostic>> {
        let mut resolver = Resolver::new(workspace);
        let mut diagnostics = Diagnostics::default();
        let mut edges = BTreeMap::new();
        let mut pass_through = BTreeMap::new();
        for project in &workspace.projects {
            for (name, task) in &project.config.tasks {
                let id = TaskId::new(&project.name, name);
                let mut out: Vec<Edge> = Vec::new();
                let mut passed: Vec<(String, String)> = Vec::new();
                for entry in &task.depends_on {
                    if let Some(caret) = entry.value.strip_prefix('^') {
                        let index = workspace.by_name[&project.name];
                        for p in resolver.passed_through(index, caret) {
                            passed.push((workspace.projects[p].name.clone(), caret.to_string()));
                        }
                    }
                    match resolver.entry(&id, name, &entry.value) {
                        Ok(targets) => {
                            // CFG-9: an interactive persistent task holds the terminal to the
                            // end of the run (EXEC-14), so nothing could start after it.
                            if let Some(held) =
                                targets.iter().find(|to| holds_terminal(workspace, to))
                            {
                                diagnostics.push(Diagnostic {
                                    at: Some(entry.at.clone()),
                                    ..Diagnostic::new(format!(
                                        "task `{id}` depends on `{held}`, an interactive persistent task, which holds the terminal until the end of the run, so `{id}` could never start"
                                    ))
                                    .hint("run the interactive task on its own, or make it not `persistent`")
                                });
                            }
                            out.extend(targets.into_iter().map(|to| Edge {
                                to,
                                at: entry.at.clone(),
                            }))
                        }
                        Err(d) => diagnostics.push(Diagnostic {
                            at: Some(entry.at.clone()),
                            ..d
                        }),
                    }
                }
                out.sort_by(|a, b| a.to.cmp(&b.to));
                out.dedup_by(|a, b| a.to == b.to);
                // Kept for the whole run: without the growth's slack (about 10 MB at 30,000
                // tasks).
                out.shrink_to_fit();
                passed.sort();
                passed.dedup();
                if !passed.is_empty() {
                    pass_through.insert(id.clone(), passed);
                }
                edges.insert(id, out);
            }
        }
        if diagnostics.is_empty() {
            Ok(TaskTable {
                edges,
                pass_through,
            })
        } else {
            Err(diagnostics.into_sorted())
        }
    }

    pub fn contains(&self, id: &TaskId) -> bool {
        self.edges.contains_key(id)
    }
}

/// Whether `id` is an interactive persistent task (EXEC-14).
fn holds_terminal(workspace: &Workspace, id: &TaskId) -> bool {
    workspace
        .project(&id.project)
        .and_then(|project| project.config.tasks.get(&id.task))
        .is_some_and(|task| task.interactive == Some(true) && task.is_persistent())
}

struct Resolver<'w> {
    workspace: &'w Workspace,
    /// Every task name declared anywhere, for `^name` checks and suggestions.
    all_names: BTreeSet<&'w str>,
    /// (start project, name) → (holders, projects passed through).
    holders: HashMap<(usize, String), (Vec<usize>, Vec<usize>)>,
}

impl<'w> Resolver<'w> {
    fn new(workspace: &'w Workspace) -> Resolver<'w> {
        let all_names = workspace
            .projects
            .iter()
            .flat_map(|p| p.config.tasks.keys().map(String::as_str))
            .collect();
        Resolver {
            workspace,
            all_names,
            holders: HashMap::new(),
        }
    }

    fn entry(&mut self, from: &TaskId, own: &str, text: &str) -> Result<Vec<TaskId>, Diagnostic> {
        let ws = self.workspace;
        let project_index = ws.by_name[&from.project];
        let project = &ws.projects[project_index];
        if text == "*" || text == "^*" || text.starts_with('!') {
            return Err(Diagnostic::new(format!(
                "`{text}` is not a `depends-on` form (it belongs to `cache.upstream`)"
            ))
            .hint("write `name`, `^name`, `project#name`, or a pattern such as `build:*`"));
        }
        if let Some((target_project, task)) = text.split_once('#') {
            if task.contains('*') {
                return Err(Diagnostic::new(format!(
                    "patterns are not allowed with `project#` in `{text}`"
                )));
            }
            let Some(target) = ws.project(target_project) else {
                let names = ws.projects.iter().map(|p| p.name.as_str());
                return Err(Diagnostic::new(format!(
                    "task `{from}` depends on `{text}`, but there is no project `{target_project}`"
                ))
                .suggest(did_you_mean(target_project, names)));
            };
            if !target.config.tasks.contains_key(task) {
                let names = target.config.tasks.keys().map(String::as_str);
                return Err(Diagnostic::new(format!(
                    "task `{from}` depends on `{text}`, which project `{}` does not declare",
                    target.name
                ))
                .suggest(did_you_mean(task, names)));
            }
            let _ = ROOT_PROJECT;
            return Ok(vec![TaskId::new(&target.name, task)]);
        }
        if let Some(name) = text.strip_prefix('^') {
            let pattern = name.contains('*');
            if !pattern && !self.all_names.contains(name) {
                return Err(Diagnostic::new(format!(
                    "task `{from}` depends on `^{name}`, but no project declares `{name}`"
                ))
                .suggest(did_you_mean(name, self.all_names.iter().copied())));
            }
            let mut out = Vec::new();
            for holder in self.nearest_holders(project_index, name) {
                let holder = &ws.projects[holder];
                for task in holder.config.tasks.keys() {
                    if wildcard_match(name, task) {
                        out.push(TaskId::new(&holder.name, task));
                    }
                }
            }
            return Ok(out);
        }
        if text.contains('*') {
            return Ok(project
                .config
                .tasks
                .keys()
                .filter(|t| t.as_str() != own && wildcard_match(text, t))
                .map(|t| TaskId::new(&project.name, t))
                .collect());
        }
        if project.config.tasks.contains_key(text) {
            return Ok(vec![TaskId::new(&project.name, text)]);
        }
        let names = project.config.tasks.keys().map(String::as_str);
        Err(Diagnostic::new(format!(
            "task `{from}` depends on `{text}`, which project `{}` does not declare",
            project.name
        ))
        .suggest(did_you_mean(text, names)))
    }

    /// GRAPH-3: walk project edges from the direct dependencies; a dependency that declares a
    /// matching task is a holder and the walk stops there; others are passed through.
    fn nearest_holders(&mut self, start: usize, name: &str) -> Vec<usize> {
        self.walk(start, name).0
    }

    /// The projects a `^name` walk from `start` passed through without finding a holder.
    fn passed_through(&mut self, start: usize, name: &str) -> Vec<usize> {
        self.walk(start, name).1
    }

    fn walk(&mut self, start: usize, name: &str) -> (Vec<usize>, Vec<usize>) {
        let key = (start, name.to_string());
        if let Some(found) = self.holders.get(&key) {
            return found.clone();
        }
        let ws = self.workspace;
        let declares = |p: usize| {
            ws.projects[p]
                .config
                .tasks
                .keys()
                .any(|t| wildcard_match(name, t))
        };
        let mut seen = BTreeSet::from([start]);
        let mut queue: VecDeque<usize> = VecDeque::new();
        let mut holders = BTreeSet::new();
        let mut passed = BTreeSet::new();
        let push_deps = |p: usize, queue: &mut VecDeque<usize>, seen: &mut BTreeSet<usize>| {
            for edge in &ws.projects[p].deps {
                if edge.kind == EdgeKind::SelectionOnly {
                    continue;
                }
                if let Some(&i) = ws.by_name.get(&edge.to) {
                    if seen.insert(i) {
                        queue.push_back(i);
                    }
                }
            }
        };
        push_deps(start, &mut queue, &mut seen);
        while let Some(p) = queue.pop_front() {
            if declares(p) {
                holders.insert(p);
            } else {
                passed.insert(p);
                push_deps(p, &mut queue, &mut seen);
            }
        }
        let found = (
            holders.into_iter().collect::<Vec<_>>(),
            passed.into_iter().collect::<Vec<_>>(),
        );
        self.holders.insert(key, found.clone());
        found
    }
}

/// `*` matches any run of characters; everything else is literal.
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(i) => rest = &rest[i + middle.len()..],
            None => return false,
        }
    }
    true
}

/// `--exclude-dependencies`: bare (every edge but a requested group's to its members) or a
/// list of task names whose incoming edges are dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExcludeDependencies {
    None,
    All,
    Names(BTreeSet<String>),
}

/// A node of the run's graph.
#[derive(Debug, Clone)]
pub struct Node {
    pub id: TaskId,
    /// Index of the project in `Workspace::projects`.
    pub project: usize,
    pub requested: bool,
    /// Indices of the nodes this one waits for, sorted.
    pub deps: Vec<usize>,
    /// Indices of the nodes that wait for this one, sorted.
    pub dependants: Vec<usize>,
    /// Some dependency was dropped by `--exclude-dependencies` (its outputs are unproven).
    pub folds_dropped: bool,
}

/// The run's graph: nodes sorted by task id.
#[derive(Debug, Clone, Default)]
pub struct TaskGraph {
    pub nodes: Vec<Node>,
    pub index: HashMap<TaskId, usize>,
}

impl TaskGraph {
    /// GRAPH-1: the requested tasks and everything their edges reach.
    pub fn build(
        workspace: &Workspace,
        table: &TaskTable,
        requested: &[TaskId],
        exclude: &ExcludeDependencies,
    ) -> Result<TaskGraph, Diagnostic> {
        let requested_set: BTreeSet<&TaskId> = requested.iter().collect();
        let is_group = |id: &TaskId| task_config(workspace, id).is_some_and(TaskConfig::is_group);
        let dropped = |from: &TaskId, to: &TaskId| match exclude {
            ExcludeDependencies::None => false,
            ExcludeDependencies::All => !(requested_set.contains(from) && is_group(from)),
            ExcludeDependencies::Names(names) => names.contains(&to.task),
        };

        // Everything reachable through any edge: dropped edges still matter for ordering
        // through a dropped task (CLI-13).
        let mut reach: BTreeSet<TaskId> = requested.iter().cloned().collect();
        let mut queue: VecDeque<TaskId> = requested.iter().cloned().collect();
        while let Some(id) = queue.pop_front() {
            for edge in table.edges.get(&id).into_iter().flatten() {
                if reach.insert(edge.to.clone()) {
                    queue.push_back(edge.to.clone());
                }
            }
        }
        // What is scheduled: reachable from a request through kept edges.
        let mut scheduled: BTreeSet<TaskId> = requested.iter().cloned().collect();
        let mut queue: VecDeque<TaskId> = requested.iter().cloned().collect();
        while let Some(id) = queue.pop_front() {
            for edge in table.edges.get(&id).into_iter().flatten() {
                if !dropped(&id, &edge.to) && scheduled.insert(edge.to.clone()) {
                    queue.push_back(edge.to.clone());
                }
            }
        }

        let ids: Vec<TaskId> = scheduled.into_iter().collect();
        let index: HashMap<TaskId, usize> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.clone(), i))
            .collect();
        let mut nodes: Vec<Node> = ids
            .iter()
            .map(|id| Node {
                id: id.clone(),
                project: workspace.by_name[&id.project],
                requested: requested_set.contains(id),
                deps: Vec::new(),
                dependants: Vec::new(),
                folds_dropped: false,
            })
            .collect();
        for (i, id) in ids.iter().enumerate() {
            let mut deps = BTreeSet::new();
            let mut folds_dropped = false;
            // Walk through unscheduled tasks to the scheduled ones behind them (contraction).
            let mut seen: BTreeSet<&TaskId> = BTreeSet::new();
            let mut stack: Vec<&TaskId> = Vec::new();
            for edge in table.edges.get(id).into_iter().flatten() {
                stack.push(&edge.to);
            }
            while let Some(to) = stack.pop() {
                if let Some(&j) = index.get(to) {
                    deps.insert(j);
                    continue;
                }
                folds_dropped = true;
                if seen.insert(to) {
                    for edge in table.edges.get(to).into_iter().flatten() {
                        stack.push(&edge.to);
                    }
                }
            }
            nodes[i].deps = deps.into_iter().collect();
            nodes[i].folds_dropped = folds_dropped;
        }
        for i in 0..nodes.len() {
            for d in nodes[i].deps.clone() {
                nodes[d].dependants.push(i);
            }
        }
        let graph = TaskGraph { nodes, index };
        if let Some(cycle) = graph.find_cycle() {
            let path: Vec<String> = cycle
                .iter()
                .map(|&i| graph.nodes[i].id.to_string())
                .collect();
            let at = edge_location(table, &graph, cycle[0], cycle[1]);
            return Err(
                Diagnostic::new(format!("cycle in task graph: {}", path.join(" -> ")))
                    .hint(format!("see {at}")),
            );
        }
        Ok(graph)
    }

    /// A cycle as a closed path of node indices starting at its smallest task id, if any.
    fn find_cycle(&self) -> Option<Vec<usize>> {
        let n = self.nodes.len();
        let mut pending: Vec<usize> = self.nodes.iter().map(|node| node.deps.len()).collect();
        let mut ready: Vec<usize> = (0..n).filter(|&i| pending[i] == 0).collect();
        let mut done = 0;
        while let Some(i) = ready.pop() {
            done += 1;
            for &d in &self.nodes[i].dependants {
                pending[d] -= 1;
                if pending[d] == 0 {
                    ready.push(d);
                }
            }
        }
        if done == n {
            return None;
        }
        // Every node left has a dependency left; following those must revisit a node.
        let start = (0..n).find(|&i| pending[i] > 0)?;
        let mut position: HashMap<usize, usize> = HashMap::new();
        let mut path = Vec::new();
        let mut at = start;
        while !position.contains_key(&at) {
            position.insert(at, path.len());
            path.push(at);
            at = *self.nodes[at].deps.iter().find(|&&d| pending[d] > 0)?;
        }
        let mut cycle: Vec<usize> = path[position[&at]..].to_vec();
        let min = (0..cycle.len()).min_by_key(|&k| &self.nodes[cycle[k]].id)?;
        cycle.rotate_left(min);
        cycle.push(cycle[0]);
        Some(cycle)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// The `depends-on` entry behind the graph edge `from` → `to`: the first one met walking
/// `from`'s edges (through unscheduled tasks) the way [`TaskGraph::build`] contracts them.
/// Only a cycle's message needs it, so it is looked up then instead of kept for every edge.
fn edge_location<'t>(
    table: &'t TaskTable,
    graph: &TaskGraph,
    from: usize,
    to: usize,
) -> &'t Location {
    let target = &graph.nodes[to].id;
    let mut seen: BTreeSet<&TaskId> = BTreeSet::new();
    let mut stack: Vec<(&TaskId, &Location)> = Vec::new();
    for edge in table.edges.get(&graph.nodes[from].id).into_iter().flatten() {
        stack.push((&edge.to, &edge.at));
    }
    let mut found = None;
    while let Some((id, at)) = stack.pop() {
        if graph.index.contains_key(id) {
            if id == target && found.is_none() {
                found = Some(at);
            }
            continue;
        }
        if seen.insert(id) {
            for edge in table.edges.get(id).into_iter().flatten() {
                stack.push((&edge.to, at));
            }
        }
    }
    found.expect("a graph edge comes from a depends-on entry")
}

/// The configuration of a task, if the workspace declares it.
pub fn task_config<'w>(workspace: &'w Workspace, id: &TaskId) -> Option<&'w TaskConfig> {
    workspace
        .project(&id.project)?
        .config
        .tasks
        .get(&id.task)
        .map(|task| &**task)
}

#[cfg(test)]
mod tests;
