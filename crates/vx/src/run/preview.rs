//! `--dry` and `--graph` (UI-12, UI-13): the plan, printed instead of run. In this release no
//! task is cached, so every task is `no-cache` and no key is shown.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::json;

use super::plan::{is_group, Plan};
use crate::error::Failure;
use crate::render::out_str;
use crate::{exit, render};

/// The non-group tasks a node stands for: itself, or a group's members, transitively.
fn real_deps(plan: &Plan, i: usize) -> BTreeSet<usize> {
    let mut found = BTreeSet::new();
    let mut stack: Vec<usize> = plan.graph.nodes[i].deps.clone();
    let mut seen = BTreeSet::new();
    while let Some(d) = stack.pop() {
        if !seen.insert(d) {
            continue;
        }
        if is_group(&plan.workspace, &plan.graph.nodes[d].id) {
            stack.extend(plan.graph.nodes[d].deps.iter().copied());
        } else {
            found.insert(d);
        }
    }
    found
}

fn description(plan: &Plan, i: usize) -> Option<String> {
    vx_core::graph::task_config(&plan.workspace, &plan.graph.nodes[i].id)?
        .description
        .clone()
}

fn rows(plan: &Plan) -> Vec<usize> {
    (0..plan.graph.nodes.len())
        .filter(|&i| !is_group(&plan.workspace, &plan.graph.nodes[i].id))
        .collect()
}

pub fn dry_text(plan: &Plan) -> i32 {
    let rows = rows(plan);
    let mut text = String::from("would run:\n");
    for &i in &rows {
        let _ = writeln!(text, "  · {}", plan.graph.nodes[i].id);
        if let Some(d) = description(plan, i) {
            let _ = writeln!(text, "      {d}");
        }
    }
    let n = rows.len();
    let tasks = plural(n, "task");
    let _ = writeln!(text, "{tasks} planned: 0 cache hits, {n} would run");
    let _ = writeln!(
        text,
        "predicted: ~0ms wall · ~0ms total ({tasks} without history)"
    );
    out_str(&text);
    exit::SUCCESS
}

pub fn dry_json(plan: &Plan) -> i32 {
    let rows = rows(plan);
    let tasks: Vec<serde_json::Value> = rows
        .iter()
        .map(|&i| {
            let node = &plan.graph.nodes[i];
            let deps: Vec<String> = real_deps(plan, i)
                .into_iter()
                .map(|d| plan.graph.nodes[d].id.to_string())
                .collect();
            let mut task = json!({
                "id": node.id.to_string(),
                "project": node.id.project,
                "task": node.id.task,
                "cache": "no-cache",
                "deps": deps,
                "placement": "local",
            });
            if let Some(d) = description(plan, i) {
                task["description"] = json!(d);
            }
            task
        })
        .collect();
    let doc = json!({
        "tasks": tasks,
        "predicted": { "wall_ms": 0, "work_ms": 0, "unknown": rows.len() },
    });
    out_str(&format!(
        "{}\n",
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    ));
    exit::SUCCESS
}

/// Graphviz DOT, to stdout or a file whose parent directories are created.
pub fn graph(plan: &Plan, path: Option<&str>) -> Result<i32, Failure> {
    let mut dot = String::from("digraph vx {\n  rankdir=LR;\n  node [shape=box, style=filled];\n");
    for node in &plan.graph.nodes {
        let colour = if is_group(&plan.workspace, &node.id) {
            "violet"
        } else {
            "grey"
        };
        let _ = writeln!(
            dot,
            "  \"{}\" [fillcolor={colour}];",
            escape(&node.id.to_string())
        );
    }
    for node in &plan.graph.nodes {
        for &d in &node.deps {
            let _ = writeln!(
                dot,
                "  \"{}\" -> \"{}\";",
                escape(&node.id.to_string()),
                escape(&plan.graph.nodes[d].id.to_string())
            );
        }
    }
    dot.push_str("}\n");
    match path {
        None => out_str(&dot),
        Some(path) => {
            let path = std::path::Path::new(path);
            let write = || -> std::io::Result<()> {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    fs_err::create_dir_all(parent)?;
                }
                fs_err::write(path, &dot)
            };
            if let Err(e) = write() {
                return Err(crate::workspace::io_diagnostic(path, "write", &e).into());
            }
            render::notice(&format!("wrote {}", path.display()));
        }
    }
    Ok(exit::SUCCESS)
}

/// `1 task`, `3 tasks`.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}
