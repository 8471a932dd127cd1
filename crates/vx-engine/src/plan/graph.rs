//! `--graph[=FILE]` (UI-13): the plan as a graph, in the format the file name asks for, each
//! node coloured by what `--dry` predicts for it.
//!
//! `.dot`/`.gv` (and stdout): Graphviz DOT. `.svg`, `.png`, `.pdf`: that DOT drawn by Graphviz's
//! `dot`, when it is installed. `.mermaid`/`.mmd`: a Mermaid flowchart. `.json`: nodes and
//! edges. `.html`: one self-contained page (`html.rs`). Every drawing puts dependencies on the
//! left of what needs them.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;

use super::preview::{DryCache, DryRow};

mod html;
use super::{is_group, Plan};
use crate::error::Failure;
use crate::outcome::Notice;

/// What a node is predicted to do: a `--dry` status, a group, or unknown (no row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Task(DryCache),
    Group,
}

impl State {
    /// UI-13's colours.
    fn colour(self) -> &'static str {
        match self {
            State::Task(DryCache::HitLocal) => "#8fd98f",
            State::Task(DryCache::HitRemote) => "#87ceeb",
            State::Task(DryCache::Miss) => "#ffb347",
            State::Task(DryCache::NoCache) => "#d3d3d3",
            State::Task(DryCache::NotStarted) => "#ffffff",
            State::Group => "#ee82ee",
        }
    }

    fn word(self) -> &'static str {
        match self {
            State::Task(DryCache::HitLocal) => "local hit",
            State::Task(DryCache::HitRemote) => "remote hit",
            State::Task(DryCache::Miss) => "would execute",
            State::Task(DryCache::NoCache) => "no cache",
            State::Task(DryCache::NotStarted) => "would not start",
            State::Group => "group",
        }
    }

    fn json(self) -> &'static str {
        match self {
            State::Task(cache) => cache.json(),
            State::Group => "group",
        }
    }

    const LEGEND: [State; 6] = [
        State::Task(DryCache::HitLocal),
        State::Task(DryCache::HitRemote),
        State::Task(DryCache::Miss),
        State::Task(DryCache::NoCache),
        State::Task(DryCache::NotStarted),
        State::Group,
    ];
}

/// What `--graph` produced.
pub enum GraphOutput {
    /// DOT for stdout.
    Text(String),
    /// Written to a file: the line that says so.
    Written(Notice),
}

/// The formats, by the file name's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Dot,
    /// Drawn by Graphviz: its `-T` name.
    Graphviz(&'static str),
    Mermaid,
    Json,
    Html,
}

fn format_of(path: &Path) -> Format {
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "svg" => Format::Graphviz("svg"),
        "png" => Format::Graphviz("png"),
        "pdf" => Format::Graphviz("pdf"),
        "mermaid" | "mmd" => Format::Mermaid,
        "json" => Format::Json,
        "html" | "htm" => Format::Html,
        _ => Format::Dot,
    }
}

/// The plan's graph for stdout (DOT) or written to `path` in the format its name asks for
/// (parent directories created). `rows`: `--dry`'s prediction of every non-group task.
pub fn graph(
    plan: &Plan,
    rows: &[DryRow],
    path: Option<&str>,
    host_env: &std::collections::BTreeMap<String, String>,
) -> Result<GraphOutput, Failure> {
    let mut states = vec![State::Task(DryCache::NoCache); plan.graph.nodes.len()];
    for (i, node) in plan.graph.nodes.iter().enumerate() {
        if is_group(&plan.workspace, &node.id) {
            states[i] = State::Group;
        }
    }
    for row in rows {
        states[row.node] = State::Task(row.cache);
    }
    let Some(path) = path else {
        return Ok(GraphOutput::Text(dot(plan, &states)));
    };
    let path = Path::new(path);
    let bytes = match format_of(path) {
        Format::Dot => dot(plan, &states).into_bytes(),
        Format::Mermaid => mermaid(plan, &states).into_bytes(),
        Format::Json => json_graph(plan, &states).into_bytes(),
        Format::Html => html(plan, &states).into_bytes(),
        Format::Graphviz(format) => {
            graphviz(&drawn_dot(plan, &states), format, path, host_env)?;
            return Ok(GraphOutput::Written(Notice::note(format!(
                "wrote {}",
                path.display()
            ))));
        }
    };
    let write = || -> std::io::Result<()> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs_err::create_dir_all(parent)?;
        }
        fs_err::write(path, &bytes)
    };
    if let Err(e) = write() {
        return Err(crate::workspace::io_diagnostic(path, "write", &e).into());
    }
    Ok(GraphOutput::Written(Notice::note(format!(
        "wrote {}",
        path.display()
    ))))
}

fn id(plan: &Plan, i: usize) -> String {
    plan.graph.nodes[i].id.to_string()
}

/// Edges from dependant to dependency.
fn edges(plan: &Plan) -> impl Iterator<Item = (usize, usize)> + '_ {
    plan.graph
        .nodes
        .iter()
        .enumerate()
        .flat_map(|(i, node)| node.deps.iter().map(move |&d| (i, d)))
}

/// DOT with dependencies on the left of what needs them (`rankdir=RL`: edges go from a task to
/// its dependencies, right to left), as the HTML page draws it.
fn dot(plan: &Plan, states: &[State]) -> String {
    let mut dot = String::from("digraph vx {\n  rankdir=RL;\n  node [shape=box, style=filled];\n");
    for (i, state) in states.iter().enumerate() {
        let _ = writeln!(
            dot,
            "  \"{}\" [fillcolor=\"{}\", tooltip=\"{}\"];",
            escape_dot(&id(plan, i)),
            state.colour(),
            state.word()
        );
    }
    for (from, to) in edges(plan) {
        let _ = writeln!(
            dot,
            "  \"{}\" -> \"{}\";",
            escape_dot(&id(plan, from)),
            escape_dot(&id(plan, to))
        );
    }
    dot.push_str("}\n");
    dot
}

/// [`dot`] with a legend for a drawing (SVG, PNG, PDF): a box per colour, above the graph. Not
/// in written DOT, whose nodes are the plan's only.
fn drawn_dot(plan: &Plan, states: &[State]) -> String {
    let mut text = dot(plan, states);
    text.truncate(text.len() - 2);
    text.push_str("  subgraph cluster_legend {\n    label=\"legend\"; style=dashed; rank=same;\n");
    for (n, state) in State::LEGEND.iter().enumerate() {
        let _ = writeln!(
            text,
            "    \"vx-legend-{n}\" [label=\"{}\", fillcolor=\"{}\"];",
            state.word(),
            state.colour()
        );
    }
    text.push_str("  }\n}\n");
    text
}

fn escape_dot(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Has Graphviz's `dot` draw `dot_text` into `path` as `format`, through vx's supervisor (only
/// it may wait for children): the DOT goes in a temporary file beside the output.
fn graphviz(
    dot_text: &str,
    format: &str,
    path: &Path,
    host_env: &std::collections::BTreeMap<String, String>,
) -> Result<(), Failure> {
    let search = host_env.get("PATH").map(String::as_str).unwrap_or("");
    let Some(dot) = vx_exec::subprocess::find_on_path("dot", search) else {
        return Err(vx_core::Diagnostic::new(format!(
            "--graph={} needs Graphviz, and its `dot` is not on PATH",
            path.display()
        ))
        .hint("install the `graphviz` package (apt-get install graphviz, brew install graphviz), or write .dot, .mermaid, .json or .html, which need nothing")
        .into());
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let failed = |e: std::io::Error| -> Failure {
        crate::workspace::io_diagnostic(path, "write", &e).into()
    };
    fs_err::create_dir_all(dir).map_err(failed)?;
    let source = tempfile::Builder::new()
        .prefix(".vx-graph-")
        .suffix(".dot")
        .tempfile_in(dir)
        .map_err(failed)?;
    fs_err::write(source.path(), dot_text).map_err(failed)?;
    let env: Vec<(std::ffi::OsString, std::ffi::OsString)> =
        host_env.iter().map(|(k, v)| (k.into(), v.into())).collect();
    let output = vx_exec::subprocess::run(
        dot,
        "dot",
        vec![
            format!("-T{format}").into(),
            "-o".into(),
            path.as_os_str().to_owned(),
            source.path().as_os_str().to_owned(),
        ],
        &std::env::current_dir().unwrap_or_else(|_| dir.to_path_buf()),
        env,
        std::time::Duration::from_secs(120),
    );
    if output.completion.exit_code != 0 {
        let reason = String::from_utf8_lossy(&output.stderr);
        return Err(Failure::usage(format!(
            "Graphviz's `dot -T{format}` failed (exit {}): {}",
            output.completion.exit_code,
            reason.trim()
        )));
    }
    Ok(())
}

fn mermaid(plan: &Plan, states: &[State]) -> String {
    let mut text = String::from("flowchart RL\n");
    for state in State::LEGEND {
        let _ = writeln!(
            text,
            "  classDef {} fill:{},stroke:#333",
            class(state),
            state.colour()
        );
    }
    for (i, state) in states.iter().enumerate() {
        let _ = writeln!(
            text,
            "  n{i}[\"{}\"]:::{}",
            id(plan, i).replace('"', "#quot;"),
            class(*state)
        );
    }
    for (from, to) in edges(plan) {
        let _ = writeln!(text, "  n{from} --> n{to}");
    }
    text
}

fn class(state: State) -> &'static str {
    match state {
        State::Task(DryCache::HitLocal) => "hitLocal",
        State::Task(DryCache::HitRemote) => "hitRemote",
        State::Task(DryCache::Miss) => "miss",
        State::Task(DryCache::NoCache) => "noCache",
        State::Task(DryCache::NotStarted) => "notStarted",
        State::Group => "group",
    }
}

fn json_graph(plan: &Plan, states: &[State]) -> String {
    let nodes: Vec<serde_json::Value> = states
        .iter()
        .enumerate()
        .map(|(i, state)| {
            let node = &plan.graph.nodes[i];
            json!({
                "id": node.id.to_string(),
                "project": node.id.project,
                "task": node.id.task,
                "group": *state == State::Group,
                "cache": state.json(),
            })
        })
        .collect();
    let edges: Vec<serde_json::Value> = edges(plan)
        .map(|(from, to)| json!({ "from": id(plan, from), "to": id(plan, to) }))
        .collect();
    let doc = json!({ "nodes": nodes, "edges": edges });
    format!(
        "{}\n",
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    )
}

fn html(plan: &Plan, states: &[State]) -> String {
    html::page(&html::Drawing {
        nodes: states
            .iter()
            .enumerate()
            .map(|(i, state)| (id(plan, i), state.colour(), state.word()))
            .collect(),
        levels: super::levels(plan),
        deps: plan.graph.nodes.iter().map(|n| n.deps.clone()).collect(),
        legend: State::LEGEND
            .iter()
            .map(|state| (state.colour(), state.word()))
            .collect(),
    })
}
