//! `vx show` (HIST-5): projects, and the resolved configuration of their tasks with the file
//! and line each field came from. Secret values are masked.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use vx_core::config::TaskConfig;
use vx_core::env::secret_values;
use vx_core::mask::Masker;
use vx_core::suggest::did_you_mean;
use vx_core::{Diagnostic, Project, TaskId, Workspace};

use crate::cli::ShowArgs;
use crate::render::out_str;
use vx_engine::error::Failure;
use vx_engine::{exit, workspace};

pub fn show(cwd: &std::path::Path, args: ShowArgs) -> Result<i32, Failure> {
    let json = super::json_format(args.format.as_deref())?;
    let ws = workspace::load(cwd)?;
    let host = vx_engine::host::env::host_env();
    let text = match args.target.as_deref() {
        None => projects(&ws, json),
        Some(target) => {
            // `web` names `@acme/web` when only that scope has a `web`, as in `vx run`.
            let named = ws.project(target).or_else(|| {
                (!target.contains('#'))
                    .then(|| vx_core::request::project_named(&ws, target).ok())
                    .flatten()
                    .map(|i| &ws.projects[i])
            });
            if let Some(project) = named {
                project_view(&ws, project, json, &host)
            } else if let Some(id) = TaskId::parse(target) {
                // `web#build` names `@acme/web` when only that scope has a `web`.
                let project = &ws.projects[vx_core::request::project_named(&ws, &id.project)?];
                let task = project
                    .config
                    .tasks
                    .get(&id.task)
                    .ok_or_else(|| unknown(&ws, target))?;
                task_view(&ws, project, &id.task, task, json, &host)
            } else {
                let holders: Vec<&Project> = ws
                    .projects
                    .iter()
                    .filter(|p| p.config.tasks.contains_key(target))
                    .collect();
                if holders.is_empty() {
                    return Err(unknown(&ws, target).into());
                }
                if json {
                    // One task in several projects: a JSON array of the `PROJECT#TASK` form.
                    let list: Vec<Value> = holders
                        .iter()
                        .map(|p| task_doc(p, target, &p.config.tasks[target], &host))
                        .collect();
                    format!(
                        "{}\n",
                        serde_json::to_string_pretty(&list).unwrap_or_default()
                    )
                } else {
                    holders
                        .iter()
                        .map(|p| task_view(&ws, p, target, &p.config.tasks[target], false, &host))
                        .collect::<Vec<_>>()
                        .join("\n")
                }
            }
        }
    };
    out_str(&text);
    Ok(exit::SUCCESS)
}

fn unknown(ws: &Workspace, target: &str) -> Diagnostic {
    let mut names: Vec<String> = ws.projects.iter().map(|p| p.name.clone()).collect();
    for p in &ws.projects {
        names.extend(p.config.tasks.keys().cloned());
    }
    let d = Diagnostic::new(format!("`{target}` is neither a project nor a task here"));
    match did_you_mean(target, names.iter().map(String::as_str)) {
        Some(s) => d.hint(format!("did you mean `{s}`?")),
        None => {
            let first: Vec<&str> = ws
                .projects
                .iter()
                .take(8)
                .map(|p| p.name.as_str())
                .collect();
            d.hint(format!("projects: {}", first.join(", ")))
        }
    }
}

fn projects(ws: &Workspace, json: bool) -> String {
    if json {
        let list: Vec<Value> = ws
            .projects
            .iter()
            .map(|p| {
                json!({
                    "name": p.name,
                    "dir": p.dir,
                    "tags": p.config.tags,
                    "tasks": p.config.tasks.keys().collect::<Vec<_>>(),
                })
            })
            .collect();
        return format!(
            "{}\n",
            serde_json::to_string_pretty(&list).unwrap_or_default()
        );
    }
    let width = ws.projects.iter().map(|p| p.name.len()).max().unwrap_or(0);
    let dir_width = ws
        .projects
        .iter()
        .map(|p| display_dir(p).len())
        .max()
        .unwrap_or(0);
    let mut text = String::new();
    for p in &ws.projects {
        let count = p.config.tasks.len();
        let mut line = format!(
            "{:width$}  {:dir_width$}  {count} task{}",
            p.name,
            display_dir(p),
            if count == 1 { "" } else { "s" }
        );
        if !p.config.tags.is_empty() {
            line.push_str(&format!("  [{}]", p.config.tags.join(", ")));
        }
        if !p.has_vx_toml {
            line.push_str("  (no vx.toml)");
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

fn display_dir(p: &Project) -> String {
    if p.dir.is_empty() {
        ".".to_string()
    } else {
        p.dir.clone()
    }
}

fn project_view(
    ws: &Workspace,
    p: &Project,
    json: bool,
    host: &BTreeMap<String, String>,
) -> String {
    let _ = ws;
    if json {
        let tasks: serde_json::Map<String, Value> = p
            .config
            .tasks
            .iter()
            .map(|(name, t)| (name.clone(), task_json(t, host)))
            .collect();
        let doc = json!({ "name": p.name, "dir": p.dir, "tasks": tasks });
        return format!(
            "{}\n",
            serde_json::to_string_pretty(&doc).unwrap_or_default()
        );
    }
    let mut text = format!("{}  ({})\n", p.name, display_dir(p));
    let depends: Vec<&str> = p.deps.iter().map(|e| e.to.as_str()).collect();
    let dependents: Vec<&str> = ws
        .projects
        .iter()
        .filter(|q| q.deps.iter().any(|e| e.to == p.name))
        .map(|q| q.name.as_str())
        .collect();
    text.push_str(&format!("  depends on  {}\n", list_or_none(&depends)));
    text.push_str(&format!("  dependents  {}\n", list_or_none(&dependents)));
    if !p.config.tags.is_empty() {
        text.push_str(&format!("  tags        {}\n", p.config.tags.join(", ")));
    }
    if p.config.tasks.is_empty() {
        text.push_str("  no tasks\n");
    }
    let table = vx_core::graph::TaskTable::resolve(ws).ok();
    for (name, task) in &p.config.tasks {
        text.push('\n');
        text.push_str(&task_text(&p.name, name, task, host, table.as_ref()));
    }
    text
}

fn list_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "(none)".to_string()
    } else {
        names.join(", ")
    }
}

fn task_view(
    ws: &Workspace,
    p: &Project,
    name: &str,
    task: &TaskConfig,
    json: bool,
    host: &BTreeMap<String, String>,
) -> String {
    if json {
        let doc =
            json!({ "name": p.name, "dir": p.dir, "task": name, "config": task_json(task, host) });
        return format!(
            "{}\n",
            serde_json::to_string_pretty(&doc).unwrap_or_default()
        );
    }
    let table = vx_core::graph::TaskTable::resolve(ws).ok();
    task_text(&p.name, name, task, host, table.as_ref())
}

fn task_doc(p: &Project, name: &str, task: &TaskConfig, host: &BTreeMap<String, String>) -> Value {
    json!({ "name": p.name, "dir": p.dir, "task": name, "config": task_json(task, host) })
}

fn masker(task: &TaskConfig, host: &BTreeMap<String, String>) -> Masker {
    Masker::new(&secret_values(host, task.env.as_deref()).0)
}

fn task_json(task: &TaskConfig, host: &BTreeMap<String, String>) -> Value {
    let value = serde_json::to_value(task).unwrap_or(Value::Null);
    let text = masker(task, host).mask_str(&value.to_string());
    let mut value: Value = serde_json::from_str(&text).unwrap_or(value);
    if let Value::Object(map) = &mut value {
        map.retain(|_, v| !v.is_null() && v != &json!([]) && v != &json!({}));
    }
    value
}

/// A task as TOML-like rows (`key = value`, inline tables flattened to dotted keys, a
/// multi-line command kept whole), each key with the file and line it came from, then the tasks
/// it runs after and those that need it.
pub(crate) fn task_text(
    project: &str,
    name: &str,
    task: &TaskConfig,
    host: &BTreeMap<String, String>,
    table: Option<&vx_core::graph::TaskTable>,
) -> String {
    let mut text = format!("{project}#{name}  ({}:{})\n", task.at.file, task.at.line);
    let value = task_json(task, host);
    if task.is_group() {
        text.push_str("  (a group: no command)\n");
    }
    if let Value::Object(map) = value {
        for (key, v) in map {
            let at = task
                .key_locations
                .get(&key)
                .map(|l| format!("  # {}:{}", l.file, l.line))
                .unwrap_or_default();
            let mut rows = Vec::new();
            rows_of(&key, &v, &mut rows);
            for (n, row) in rows.iter().enumerate() {
                let comment = if n == 0 { at.as_str() } else { "" };
                text.push_str(&format!("  {row}{comment}\n"));
            }
        }
    }
    if let Some(table) = table {
        let id = TaskId::new(project, name);
        let after: Vec<String> = table
            .edges
            .get(&id)
            .into_iter()
            .flatten()
            .map(|e| e.to.to_string())
            .collect();
        let needed: Vec<String> = table
            .edges
            .iter()
            .filter(|(_, edges)| edges.iter().any(|e| e.to == id))
            .map(|(from, _)| from.to_string())
            .collect();
        let after: Vec<&str> = after.iter().map(String::as_str).collect();
        let needed: Vec<&str> = needed.iter().map(String::as_str).collect();
        text.push_str(&format!("  runs after  {}\n", list_or_none(&after)));
        text.push_str(&format!("  needed by   {}\n", list_or_none(&needed)));
    }
    text
}

/// `key = value` rows of one configured value: tables become dotted keys, empty lists and
/// tables are left out, and a string with line breaks is a `"""` block, its lines indented.
fn rows_of(key: &str, value: &Value, rows: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if v.is_null() || v == &json!([]) || v == &json!({}) {
                    continue;
                }
                let dotted = if k
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                {
                    format!("{key}.{k}")
                } else {
                    format!("{key}.{}", toml_string(k))
                };
                rows_of(&dotted, v, rows);
            }
        }
        Value::String(s) if s.contains('\n') => {
            let mut block = format!("{key} = \"\"\"");
            for line in s.trim_end_matches('\n').split('\n') {
                block.push_str("\n    ");
                block.push_str(line);
            }
            block.push_str("\n    \"\"\"");
            rows.push(block);
        }
        other => rows.push(format!("{key} = {}", toml_value(other))),
    }
}

/// A JSON value written as TOML would write it.
fn toml_value(value: &Value) -> String {
    match value {
        Value::String(s) => toml_string(s),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(toml_value).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{ {} }}",
            map.iter()
                .map(|(k, v)| format!("{k} = {}", toml_value(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}
