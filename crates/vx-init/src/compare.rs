//! After writing: the old runner's plan beside vx's.
//!
//! When the repository's own Turborepo or Nx is installed, [`compare`] asks it for the task
//! graph of every task name it defines (`turbo run … --dry=json`, `nx run-many -t … --graph`)
//! and asks vx for the same names (`vx run … --all --dry=json`, this binary in a child
//! process, exactly as a user would), then lists every task and edge that differs. Both sides
//! are read as "the tasks that run a command": Turborepo's `<NONEXISTENT>` tasks, Nx's
//! `nx:noop` targets and vx's group tasks pass their edges through, as each runner's own
//! scheduler does. Tasks of projects vx leaves out of `--all` (`exclude-from-all`) are
//! counted, not compared.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::nx::graph::output_within;

/// The runner whose configuration was carried over, with the task names it defines.
pub(super) enum Peer {
    Turbo {
        names: BTreeSet<String>,
    },
    Nx {
        names: BTreeSet<String>,
        /// Nx project name → vx project name, where they differ.
        vx_names: BTreeMap<String, String>,
    },
}

impl Peer {
    /// The runner to compare plans with after writing, with every task name it defines.
    pub(super) fn of(
        turbo: Option<&super::turbo::Turbo>,
        nx: Option<&super::nx::Nx>,
        graph: Option<&Result<super::nx::graph::NxGraph, String>>,
    ) -> Option<Peer> {
        if let Some(turbo) = turbo {
            let names = turbo
                .generic
                .keys()
                .chain(turbo.by_package.values().flat_map(BTreeMap::keys))
                .chain(turbo.package_files.values().flat_map(BTreeMap::keys))
                .chain(turbo.root.keys())
                .cloned()
                .collect();
            return Some(Peer::Turbo { names });
        }
        let (Some(nx), Some(Ok(graph))) = (nx, graph) else {
            return None;
        };
        let names = graph
            .projects
            .iter()
            .flat_map(|p| p.targets.keys())
            .cloned()
            .collect();
        Some(Peer::Nx {
            names,
            vx_names: nx.vx_names.clone(),
        })
    }
}

/// Task id (`project#task`, vx's names) → the ids it waits for.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// What the two plans have and lack.
#[derive(Debug, Default)]
pub(super) struct Comparison {
    /// `turbo 2.5.0`, `Nx 21.6.11`.
    pub tool: String,
    /// The command that printed the runner's plan.
    pub command: String,
    pub tasks: usize,
    pub edges: usize,
    /// Task names the runner runs somewhere and vx declares nowhere, with how many tasks.
    pub names_vx_lacks: Vec<(String, usize)>,
    pub only_peer: Vec<String>,
    pub only_vx: Vec<String>,
    /// (task, dependency).
    pub edges_only_peer: Vec<(String, String)>,
    pub edges_only_vx: Vec<(String, String)>,
    /// Tasks of projects vx leaves out of `--all`, not compared.
    pub outside_all: usize,
}

impl Comparison {
    pub fn differences(&self) -> usize {
        self.names_vx_lacks.len()
            + self.only_peer.len()
            + self.only_vx.len()
            + self.edges_only_peer.len()
            + self.edges_only_vx.len()
    }

    /// The report's lines: one when the plans agree, else one per difference (at most
    /// [`SHOWN`], then a count).
    pub fn render(&self) -> String {
        let mut out = String::new();
        let outside = if self.outside_all > 0 {
            format!(
                "; {} task{} of projects outside `--all` (exclude-from-all) not compared",
                self.outside_all,
                if self.outside_all == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        if self.differences() == 0 {
            out.push_str(&format!(
                "compared with {} (`{}`): the same {} task{} and {} edge{}{outside}\n",
                self.tool,
                self.command,
                self.tasks,
                if self.tasks == 1 { "" } else { "s" },
                self.edges,
                if self.edges == 1 { "" } else { "s" },
            ));
            return out;
        }
        let n = self.differences();
        out.push_str(&format!(
            "compared with {} (`{}`): {n} difference{}{outside}\n",
            self.tool,
            self.command,
            if n == 1 { "" } else { "s" }
        ));
        let tool = self.tool.split(' ').next().unwrap_or("");
        let mut lines = Vec::new();
        for (name, count) in &self.names_vx_lacks {
            let why = if super::scripts::LIFECYCLE.contains(&name.as_str()) {
                " (a lifecycle script: the package manager runs it)"
            } else {
                ""
            };
            lines.push(format!(
                "  {tool} runs `{name}` ({count} task{}); vx declares no task `{name}`{why}",
                if *count == 1 { "" } else { "s" }
            ));
        }
        for id in &self.only_peer {
            lines.push(format!("  only {tool} runs {id}"));
        }
        for id in &self.only_vx {
            lines.push(format!("  only vx runs {id}"));
        }
        for (task, dep) in &self.edges_only_peer {
            lines.push(format!("  only {tool}: {task} waits for {dep}"));
        }
        for (task, dep) in &self.edges_only_vx {
            lines.push(format!("  only vx: {task} waits for {dep}"));
        }
        for line in lines.iter().take(SHOWN) {
            out.push_str(line);
            out.push('\n');
        }
        if lines.len() > SHOWN {
            out.push_str(&format!(
                "  … and {} more (`vx run <tasks> --all --dry=json` shows vx's plan)\n",
                lines.len() - SHOWN
            ));
        }
        out
    }
}

/// How many differences the report lists one by one.
const SHOWN: usize = 20;

/// Compares the plans; `Ok(None)` when the runner is not installed (nothing to ask), `Err`
/// when it or vx could not say.
pub(super) fn compare(root: &Path, peer: &Peer) -> Result<Option<Comparison>, String> {
    let workspace = vx_engine::plan::discover(root, false).map_err(|e| match e {
        vx_engine::error::Failure::User(problems) => problems
            .first()
            .map_or_else(String::new, |d| d.message.clone()),
        vx_engine::error::Failure::Internal(why) => why,
        vx_engine::error::Failure::Signalled(_) => "interrupted".to_string(),
    })?;
    let root_name = workspace
        .projects
        .iter()
        .find(|p| p.dir.is_empty())
        .map(|p| p.name.clone());
    let outside: BTreeSet<&str> = workspace
        .projects
        .iter()
        .filter(|p| p.outside_all)
        .map(|p| p.name.as_str())
        .collect();
    let declared: BTreeSet<&str> = workspace
        .projects
        .iter()
        .flat_map(|p| p.config.tasks.keys())
        .map(String::as_str)
        .collect();

    let (tool, command, peer_graph) = match peer {
        Peer::Turbo { names } => {
            let Some(found) = turbo_graph(root, names, root_name.as_deref())? else {
                return Ok(None);
            };
            found
        }
        Peer::Nx { names, vx_names } => {
            let Some(found) = nx_graph(root, names, vx_names, root_name.as_deref())? else {
                return Ok(None);
            };
            found
        }
    };

    let mut comparison = Comparison {
        tool,
        command,
        ..Comparison::default()
    };
    // The runner's tasks vx could plan: a name vx declares, a project inside `--all`.
    let mut lacking: BTreeMap<String, usize> = BTreeMap::new();
    let mut compared = Graph::new();
    for (id, deps) in &peer_graph {
        let (project, task) = id.rsplit_once('#').unwrap_or(("", id));
        if outside.contains(project) {
            comparison.outside_all += 1;
        } else if !declared.contains(task) {
            *lacking.entry(task.to_string()).or_default() += 1;
        } else {
            compared.insert(id.clone(), deps.clone());
        }
    }
    comparison.names_vx_lacks = lacking.into_iter().collect();
    let asked: BTreeSet<&str> = compared
        .keys()
        .map(|id| id.rsplit_once('#').map_or(id.as_str(), |(_, t)| t))
        .collect();
    let vx = if asked.is_empty() {
        Graph::new()
    } else {
        vx_graph(root, &asked)?
    };

    for id in compared.keys() {
        if !vx.contains_key(id) {
            comparison.only_peer.push(id.clone());
        }
    }
    for id in vx.keys() {
        if !compared.contains_key(id) {
            comparison.only_vx.push(id.clone());
        }
    }
    for (id, deps) in &compared {
        let Some(theirs) = vx.get(id) else { continue };
        comparison.tasks += 1;
        comparison.edges += deps.intersection(theirs).count();
        for dep in deps.difference(theirs) {
            // An edge to a task the other side lacks is already said once.
            if vx.contains_key(dep) {
                comparison.edges_only_peer.push((id.clone(), dep.clone()));
            }
        }
        for dep in theirs.difference(deps) {
            if compared.contains_key(dep) {
                comparison.edges_only_vx.push((id.clone(), dep.clone()));
            }
        }
    }
    Ok(Some(comparison))
}

/// `turbo run <names> --dry=json`: (tool, command, graph), `None` without turbo installed.
fn turbo_graph(
    root: &Path,
    names: &BTreeSet<String>,
    root_name: Option<&str>,
) -> Result<Option<(String, String, Graph)>, String> {
    let turbo = root.join("node_modules/.bin/turbo");
    if !turbo.is_file() || names.is_empty() {
        return Ok(None);
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let output = output_within(
        Command::new(&turbo)
            .arg("run")
            .args(&names)
            .arg("--dry=json")
            .current_dir(root)
            .env("TURBO_TELEMETRY_DISABLED", "1")
            .env("DO_NOT_TRACK", "1")
            .env("TURBO_NO_UPDATE_NOTIFIER", "1")
            .env_remove("CI"),
    )
    .map_err(|e| format!("turbo could not be run: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`turbo run --dry=json` failed: {}",
            last_line(&output)
        ));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| format!("turbo printed what vx cannot read: {e}"))?;
    let version = json
        .get("turboVersion")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    let vx_id = |id: &str| match (id.strip_prefix("//#"), root_name) {
        (Some(task), Some(root)) => format!("{root}#{task}"),
        _ => id.to_string(),
    };
    let mut graph = Graph::new();
    let mut hollow = BTreeSet::new();
    for task in json
        .get("tasks")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
    {
        let Some(id) = task.get("taskId").and_then(Value::as_str) else {
            continue;
        };
        if task.get("command").and_then(Value::as_str) == Some("<NONEXISTENT>") {
            hollow.insert(vx_id(id));
        }
        let deps = strings(task.get("dependencies"))
            .map(|d| vx_id(&d))
            .collect();
        graph.insert(vx_id(id), deps);
    }
    Ok(Some((
        format!("turbo {version}"),
        format!("turbo run {} --dry=json", listed(&names, " ")),
        through(&graph, &hollow),
    )))
}

/// `nx run-many -t <names> --graph=FILE`: (tool, command, graph), `None` without Nx installed.
fn nx_graph(
    root: &Path,
    names: &BTreeSet<String>,
    vx_names: &BTreeMap<String, String>,
    root_name: Option<&str>,
) -> Result<Option<(String, String, Graph)>, String> {
    let Some((entry, version)) = super::nx::graph::nx_entry(root) else {
        return Ok(None);
    };
    if names.is_empty() {
        return Ok(None);
    }
    let targets = names.iter().cloned().collect::<Vec<_>>().join(",");
    let dir = super::nx::graph::tempfile_dir()?;
    let file = dir.join("tasks.json");
    let output = output_within(
        super::nx::graph::nx_command(root, &entry)
            .args(["run-many", "-t", &targets])
            .arg(format!("--graph={}", file.display())),
    );
    let text = match output {
        Err(e) => Err(format!("`node` could not run Nx: {e}")),
        Ok(out) if !out.status.success() => {
            Err(format!("`nx run-many --graph` failed: {}", last_line(&out)))
        }
        Ok(_) => fs_err::read_to_string(&file)
            .map_err(|e| format!("`nx run-many --graph` wrote no graph: {e}")),
    };
    let _ = std::fs::remove_dir_all(&dir);
    let json: Value =
        serde_json::from_str(&text?).map_err(|e| format!("Nx wrote what vx cannot read: {e}"))?;
    // Nx project name → vx project name: the workspace root's is vx's root project, the
    // others' their package name where it differs.
    let nodes = json.get("graph").and_then(|g| g.get("nodes"));
    let mut projects: BTreeMap<&str, String> = BTreeMap::new();
    for (name, node) in nodes.and_then(Value::as_object).into_iter().flatten() {
        let dir = node
            .get("data")
            .and_then(|d| d.get("root"))
            .and_then(Value::as_str);
        let vx = match (dir, root_name) {
            (Some("" | "."), Some(root)) => root.to_string(),
            _ => vx_names.get(name).cloned().unwrap_or_else(|| name.clone()),
        };
        projects.insert(name, vx);
    }
    let vx_project = |p: &str| projects.get(p).cloned().unwrap_or_else(|| p.to_string());
    // Task id → its vx id, from each task's own project and target (target names may hold
    // colons, so the id is not split).
    let mut ids: BTreeMap<String, String> = BTreeMap::new();
    let tasks = json.get("tasks");
    for (id, task) in tasks
        .and_then(|t| t.get("tasks"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let target = task.get("target");
        let project = target
            .and_then(|t| t.get("project"))
            .and_then(Value::as_str);
        let name = target.and_then(|t| t.get("target")).and_then(Value::as_str);
        if let (Some(project), Some(name)) = (project, name) {
            ids.insert(id.clone(), format!("{}#{name}", vx_project(project)));
        }
    }
    // `nx:noop` targets, from the project graph in the same file.
    let mut hollow = BTreeSet::new();
    for (project, node) in nodes.and_then(Value::as_object).into_iter().flatten() {
        let targets = node.get("data").and_then(|d| d.get("targets"));
        for (name, target) in targets.and_then(Value::as_object).into_iter().flatten() {
            if target.get("executor").and_then(Value::as_str) == Some("nx:noop") {
                hollow.insert(format!("{}#{name}", vx_project(project)));
            }
        }
    }
    let vx_id = |id: &str| ids.get(id).cloned().unwrap_or_else(|| id.replace(':', "#"));
    let mut graph = Graph::new();
    let deps = tasks.and_then(|t| t.get("dependencies"));
    for (id, list) in deps.and_then(Value::as_object).into_iter().flatten() {
        graph.insert(vx_id(id), strings(Some(list)).map(|d| vx_id(&d)).collect());
    }
    Ok(Some((
        format!("Nx {version}"),
        format!(
            "nx run-many -t {} --graph",
            listed(&names.iter().map(String::as_str).collect::<Vec<_>>(), ",")
        ),
        through(&graph, &hollow),
    )))
}

/// `vx run <names> --all --dry=json`, by this very binary.
fn vx_graph(root: &Path, names: &BTreeSet<&str>) -> Result<Graph, String> {
    let exe = std::env::current_exe().map_err(|e| format!("vx cannot find itself: {e}"))?;
    let output = output_within(
        Command::new(exe)
            .arg("run")
            .args(names)
            .args(["--all", "--dry=json"])
            .current_dir(root)
            .env_remove("VX_LOG"),
    )
    .map_err(|e| format!("vx could not plan: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`vx run --dry=json` failed: {}",
            last_line(&output)
        ));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let json: Value =
        serde_json::from_str(&text).map_err(|e| format!("vx printed what it cannot read: {e}"))?;
    let mut graph = Graph::new();
    for task in json
        .get("tasks")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
    {
        if let Some(id) = task.get("id").and_then(Value::as_str) {
            graph.insert(id.to_string(), strings(task.get("deps")).collect());
        }
    }
    Ok(graph)
}

/// The graph without its hollow tasks (no command: they order, they do not run), each edge
/// to one replaced by that task's own dependencies, transitively.
fn through(graph: &Graph, hollow: &BTreeSet<String>) -> Graph {
    fn real(
        id: &str,
        graph: &Graph,
        hollow: &BTreeSet<String>,
        memo: &mut BTreeMap<String, BTreeSet<String>>,
    ) -> BTreeSet<String> {
        if let Some(done) = memo.get(id) {
            return done.clone();
        }
        memo.insert(id.to_string(), BTreeSet::new()); // a cycle ends here
        let mut out = BTreeSet::new();
        for dep in graph.get(id).into_iter().flatten() {
            if hollow.contains(dep) {
                out.extend(real(dep, graph, hollow, memo));
            } else {
                out.insert(dep.clone());
            }
        }
        memo.insert(id.to_string(), out.clone());
        out
    }
    let mut memo = BTreeMap::new();
    graph
        .keys()
        .filter(|id| !hollow.contains(*id))
        .map(|id| (id.clone(), real(id, graph, hollow, &mut memo)))
        .collect()
}

fn strings(value: Option<&Value>) -> impl Iterator<Item = String> + '_ {
    value
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter_map(Value::as_str)
        .map(String::from)
}

/// The names as typed, or the first few and a count when there are many.
fn listed(names: &[&str], sep: &str) -> String {
    const NAMED: usize = 4;
    if names.len() <= NAMED + 1 {
        return names.join(sep);
    }
    format!("{}{sep}… ({} names)", names[..NAMED].join(sep), names.len())
}

fn last_line(output: &std::process::Output) -> String {
    let text = String::from_utf8_lossy(&output.stderr);
    let text = if text.trim().is_empty() {
        String::from_utf8_lossy(&output.stdout)
    } else {
        text
    };
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> Graph {
        edges
            .iter()
            .map(|(id, deps)| (id.to_string(), deps.iter().map(|d| d.to_string()).collect()))
            .collect()
    }

    #[test]
    fn hollow_tasks_pass_their_edges_through() {
        let g = graph(&[
            ("web#build", &["ui#build"]),
            ("ui#build", &["util#build"]),
            ("util#build", &[]),
            ("web#check", &["web#build", "web#lint"]),
            ("web#lint", &[]),
        ]);
        let hollow: BTreeSet<String> = ["ui#build".to_string(), "web#check".to_string()].into();
        let out = through(&g, &hollow);
        assert_eq!(
            out,
            graph(&[
                ("web#build", &["util#build"]),
                ("util#build", &[]),
                ("web#lint", &[]),
            ])
        );
    }

    #[test]
    fn a_difference_is_one_line_and_agreement_one_line() {
        let same = Comparison {
            tool: "turbo 2.5.0".into(),
            command: "turbo run build --dry=json".into(),
            tasks: 3,
            edges: 2,
            ..Comparison::default()
        };
        assert_eq!(
            same.render(),
            "compared with turbo 2.5.0 (`turbo run build --dry=json`): the same 3 tasks and 2 edges\n"
        );
        let differ = Comparison {
            edges_only_peer: vec![("web#build".into(), "ui#build".into())],
            names_vx_lacks: vec![("check".into(), 2)],
            ..same
        };
        assert_eq!(
            differ.render(),
            "compared with turbo 2.5.0 (`turbo run build --dry=json`): 2 differences\n  \
             turbo runs `check` (2 tasks); vx declares no task `check`\n  \
             only turbo: web#build waits for ui#build\n"
        );
    }
}
