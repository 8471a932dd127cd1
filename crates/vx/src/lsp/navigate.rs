//! Hover and go-to-definition in `vx.toml`.
//!
//! - On a task's header (`[tasks.build]`): its resolved form as `vx show project#task` prints
//!   it (each key with the file and line it came from, what it runs after and what needs it)
//!   and its last result from the history `vx last` reads.
//! - On a `depends-on` entry: the tasks it resolves to (each with its resolved form when it is
//!   one), and go-to-definition jumps to their tables.
//! - On a `deps` entry: go-to-definition jumps to that project's `vx.toml` (or `package.json`).
//! - On any other key: the key's description from the schema.

use std::path::Path;

use lsp_types::{
    GotoDefinitionParams, GotoDefinitionResponse, Hover, HoverContents, HoverParams, Location,
    MarkupContent, MarkupKind, Position, Range,
};

use vx_core::{TaskId, Workspace};

use super::complete;
use super::context::{self, split_key, Spot};
use super::state::{is_config, Server};
use super::text::{is_word, Lines};

pub fn hover(server: &Server<'_>, params: HoverParams) -> Option<Hover> {
    let at = params.text_document_position_params;
    let (_, rel, text) = server.document(&at.text_document.uri)?;
    if !is_config(&rel) {
        return None;
    }
    let lines = Lines::new(text);
    let loaded = server.loaded.as_ref();
    let markdown = if let Some(task) = header_task(&lines, at.position) {
        let ws = &loaded?.workspace;
        let project = server.project_of(&rel)?;
        task_markdown(server, ws, &TaskId::new(&project.name, &task))?
    } else if let Some((entry, targets)) = entry_targets(server, &rel, &lines, at.position) {
        let ws = &loaded?.workspace;
        let mut out = format!("`{entry}` runs after ");
        if targets.is_empty() {
            out.push_str("nothing: no project it depends on has that task");
        } else {
            let ids: Vec<String> = targets.iter().map(|t| format!("`{t}`")).collect();
            out.push_str(&ids.join(", "));
            if let [one] = targets.as_slice() {
                out.push_str("\n\n");
                out.push_str(&task_markdown(server, ws, one)?);
            }
        }
        out
    } else {
        // The key under the cursor, in the table its start is in (inline tables included).
        let cursor = lines.offset(at.position);
        let line_start = lines.offset(Position::new(at.position.line, 0));
        let line = lines.line(at.position.line as usize);
        let within = (cursor - line_start).min(line.len());
        let start = line[..within]
            .char_indices()
            .rev()
            .take_while(|&(_, c)| is_word(c))
            .last()
            .map_or(within, |(i, _)| i);
        let end = line[within..]
            .find(|c: char| !is_word(c))
            .map_or(line.len(), |e| within + e);
        let key = &line[start..end];
        let ctx = context::at(text, line_start + start);
        if ctx.spot != Spot::Key || key.is_empty() {
            return None;
        }
        let mut path = ctx.path.clone();
        path.extend(split_key(key));
        let schema = vx_core::config::json_schema();
        let node = complete::node_at(&schema, &path, rel == "vx.toml")?;
        let doc = complete::description(&schema, node);
        if doc.is_empty() {
            return None;
        }
        format!("`{}`: {doc}", path.join("."))
    };
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: markdown,
        }),
        range: None,
    })
}

pub fn definition(
    server: &Server<'_>,
    params: GotoDefinitionParams,
) -> Option<GotoDefinitionResponse> {
    let at = params.text_document_position_params;
    let (_, rel, text) = server.document(&at.text_document.uri)?;
    let lines = Lines::new(text);
    let loaded = server.loaded.as_ref()?;
    let root = server.root.as_ref()?;
    let ws = &loaded.workspace;
    let mut found = Vec::new();
    if let Some((_, targets)) = entry_targets(server, &rel, &lines, at.position) {
        for id in targets {
            if let Some(task) = vx_core::graph::task_config(ws, &id) {
                found.push(location_of(
                    server,
                    root,
                    &task.at.file,
                    task.at.line,
                    task.at.column,
                )?);
            }
        }
    } else {
        // A `deps` entry: the project it names.
        let project = server.project_of(&rel)?;
        let edge = project
            .deps
            .iter()
            .find(|e| *e.at.file == *rel && covers(&lines, e.at.line, e.at.column, at.position))?;
        let target = ws.project(&edge.to)?;
        let file = if target.has_vx_toml {
            "vx.toml"
        } else {
            "package.json"
        };
        let rel = if target.dir.is_empty() {
            file.to_string()
        } else {
            format!("{}/{file}", target.dir)
        };
        found.push(location_of(server, root, &rel, 1, 1)?);
    }
    Some(GotoDefinitionResponse::Array(found))
}

fn location_of(
    server: &Server<'_>,
    root: &Path,
    rel: &str,
    line: u32,
    column: u32,
) -> Option<Location> {
    let path = root.join(rel);
    let range = server.with_text(&path, |lines| lines.token_range(line.max(1), column.max(1)));
    Some(Location::new(server.uri_for(&path)?, range))
}

/// The task whose header the cursor is on (`[tasks.build]`, `[tasks.build.cache]`).
fn header_task(lines: &Lines<'_>, pos: Position) -> Option<String> {
    let line = lines.line(pos.line as usize).trim_start();
    let inner = line.strip_prefix('[')?.trim_start_matches('[');
    let inner = &inner[..inner.find(']')?];
    let path = split_key(inner);
    match path.as_slice() {
        [tasks, name, ..] if tasks == "tasks" => Some(name.clone()),
        _ => None,
    }
}

/// The `depends-on` entry under the cursor (as written) and the tasks it resolved to.
fn entry_targets(
    server: &Server<'_>,
    rel: &str,
    lines: &Lines<'_>,
    pos: Position,
) -> Option<(String, Vec<TaskId>)> {
    let loaded = server.loaded.as_ref()?;
    let project = server.project_of(rel)?;
    for (name, task) in &project.config.tasks {
        for entry in &task.depends_on {
            if *entry.at.file != *rel || !covers(lines, entry.at.line, entry.at.column, pos) {
                continue;
            }
            let id = TaskId::new(&project.name, name);
            let targets = loaded
                .table
                .as_ref()
                .and_then(|t| t.edges.get(&id))
                .into_iter()
                .flatten()
                .filter(|e| e.at == entry.at)
                .map(|e| e.to.clone())
                .collect();
            return Some((entry.value.clone(), targets));
        }
    }
    None
}

/// Whether the token at a vx location (line, column from 1) covers a protocol position.
fn covers(lines: &Lines<'_>, line: u32, column: u32, pos: Position) -> bool {
    let Range { start, end } = lines.token_range(line, column);
    start.line == pos.line && start.character <= pos.character && pos.character <= end.character
}

/// A task's resolved form (`vx show`'s text) and its last result.
fn task_markdown(server: &Server<'_>, ws: &Workspace, id: &TaskId) -> Option<String> {
    let project = ws.project(&id.project)?;
    let task = project.config.tasks.get(&id.task)?;
    let host = vx_engine::host::env::host_env();
    let table = server.loaded.as_ref().and_then(|l| l.table.as_ref());
    let shown = crate::commands::show::task_text(&id.project, &id.task, task, &host, table);
    let mut out = format!("```toml\n{}```\n", shown);
    match last_result(server, id) {
        Some(last) => out.push_str(&format!("\n**Last run** {last}\n")),
        None => out.push_str("\n**Last run**: none recorded\n"),
    }
    Some(out)
}

/// The task's newest history row, in words: `vx last`'s fields.
pub fn last_result(server: &Server<'_>, id: &TaskId) -> Option<String> {
    let root = server.root.as_ref()?;
    let (_, dir) = vx_engine::workspace::store_location(root, None).ok()?;
    if !dir.exists() {
        return None;
    }
    let store = crate::commands::why::open_read_only(&dir).ok()?;
    let row = store
        .task_runs(&id.project, &id.task, 1)
        .ok()?
        .into_iter()
        .next()?;
    let key = row
        .key
        .as_deref()
        .map(|k| &k[..k.len().min(12)])
        .unwrap_or("-");
    Some(format!(
        "({}): {}, {}, {} ms, key `{key}`, run `{}`",
        vx_engine::clock::rfc3339(row.started_at / 1000),
        row.status,
        row.cache,
        row.duration_ms,
        &row.run_id[..row.run_id.len().min(13)],
    ))
}
