//! Completion in `vx.toml`: the keys a table allows (from the JSON Schema `vx schema` prints,
//! with each key's description), the task ids a `depends-on` entry can name (`build`,
//! `^build`, `project#build`; a scoped project also matches by its unscoped name as typed),
//! the project names of `deps`, and a key's allowed values where the schema lists them.

use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionParams, CompletionResponse, CompletionTextEdit,
    Documentation, MarkupContent, MarkupKind, Range, TextEdit,
};
use serde_json::Value;

use super::context::{self, Spot};
use super::state::{is_config, Server};
use super::text::Lines;

pub fn complete(server: &Server<'_>, params: CompletionParams) -> Option<CompletionResponse> {
    let at = params.text_document_position;
    let (_, rel, text) = server.document(&at.text_document.uri)?;
    if !is_config(&rel) {
        return None;
    }
    let lines = Lines::new(text);
    let cursor = lines.offset(at.position);
    let ctx = context::at(text, cursor);
    let range = Range::new(lines.position(ctx.word_start), at.position);
    let schema = vx_core::config::json_schema();
    let items = match ctx.spot {
        Spot::Comment => Vec::new(),
        Spot::Key => keys(&schema, &ctx.path, rel == "vx.toml")
            .into_iter()
            .map(|(key, doc)| item(key.clone(), key, CompletionItemKind::PROPERTY, doc, range))
            .collect(),
        Spot::Header => headers(server, &schema, &ctx.path, rel == "vx.toml")
            .into_iter()
            .map(|(name, doc)| item(name.clone(), name, CompletionItemKind::MODULE, doc, range))
            .collect(),
        Spot::Value { quoted } => {
            let quote = |s: &str| {
                if quoted {
                    s.to_string()
                } else {
                    format!("\"{s}\"")
                }
            };
            let mut items = Vec::new();
            match ctx.path.last().map(String::as_str) {
                Some("depends-on") => {
                    // A scoped project matches by its unscoped name unless the scope is typed.
                    let scoped = text[ctx.word_start.min(cursor)..cursor].starts_with('@');
                    for (label, filter, doc) in task_ids(server, &rel, &ctx.path) {
                        let filter = filter.filter(|_| !scoped);
                        let mut i = item(
                            label.clone(),
                            quote(&label),
                            CompletionItemKind::REFERENCE,
                            doc,
                            range,
                        );
                        i.filter_text = filter;
                        items.push(i);
                    }
                }
                Some("deps") if ctx.path.len() == 1 => {
                    for name in project_names(server) {
                        items.push(item(
                            name.clone(),
                            quote(&name),
                            CompletionItemKind::MODULE,
                            String::new(),
                            range,
                        ));
                    }
                }
                _ => {
                    let node = node_at(&schema, &ctx.path, rel == "vx.toml");
                    for value in node
                        .and_then(|n| n.get("enum"))
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(s) = value.as_str() {
                            items.push(item(
                                s.to_string(),
                                quote(s),
                                CompletionItemKind::ENUM_MEMBER,
                                String::new(),
                                range,
                            ));
                        }
                    }
                }
            }
            items
        }
    };
    Some(CompletionResponse::Array(items))
}

fn item(
    label: String,
    insert: String,
    kind: CompletionItemKind,
    doc: String,
    range: Range,
) -> CompletionItem {
    CompletionItem {
        label,
        kind: Some(kind),
        documentation: (!doc.is_empty()).then_some(Documentation::MarkupContent(MarkupContent {
            kind: MarkupKind::Markdown,
            value: doc,
        })),
        text_edit: Some(CompletionTextEdit::Edit(TextEdit::new(range, insert))),
        ..CompletionItem::default()
    }
}

/// The keys the table at `path` allows, with their descriptions.
fn keys(schema: &Value, path: &[String], is_root: bool) -> Vec<(String, String)> {
    let Some(node) = node_at(schema, path, is_root) else {
        return Vec::new();
    };
    let Some(props) = node.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .filter(|(key, _)| is_root || !path.is_empty() || key.as_str() != "workspace")
        .map(|(key, v)| (key.clone(), description(schema, v)))
        .collect()
}

/// Table names for a header: the tables the schema allows under `path`, and the tasks this
/// workspace has under `tasks`.
fn headers(
    server: &Server<'_>,
    schema: &Value,
    path: &[String],
    is_root: bool,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = keys(schema, path, is_root)
        .into_iter()
        .filter(|(key, _)| {
            let mut child = path.to_vec();
            child.push(key.clone());
            node_at(schema, &child, is_root).is_some_and(|n| {
                n.get("type").and_then(Value::as_str) == Some("object")
                    || n.get("properties").is_some()
            })
        })
        .collect();
    if path.last().map(String::as_str) == Some("tasks") {
        let mut names: Vec<String> = server
            .loaded
            .iter()
            .flat_map(|l| l.workspace.projects.iter())
            .flat_map(|p| p.config.tasks.keys().cloned())
            .collect();
        names.sort();
        names.dedup();
        out.extend(names.into_iter().map(|n| (n, String::new())));
    }
    out
}

/// The schema node of the value at `path`: `$ref`s followed, of `anyOf`/`oneOf` the table form.
pub fn node_at<'s>(schema: &'s Value, path: &[String], is_root: bool) -> Option<&'s Value> {
    let mut node = resolve(schema, schema);
    for (depth, segment) in path.iter().enumerate() {
        if depth == 0 && segment == "workspace" && !is_root {
            return None;
        }
        let child = node
            .get("properties")
            .and_then(|p| p.get(segment))
            .or_else(|| node.get("additionalProperties").filter(|a| a.is_object()))?;
        node = resolve(schema, child);
    }
    Some(node)
}

fn resolve<'s>(schema: &'s Value, mut node: &'s Value) -> &'s Value {
    for _ in 0..8 {
        if let Some(name) = node
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
        {
            match schema.get("$defs").and_then(|d| d.get(name)) {
                Some(target) => node = target,
                None => return node,
            }
        } else if let Some(variants) = node
            .get("anyOf")
            .or_else(|| node.get("oneOf"))
            .and_then(Value::as_array)
        {
            let table = variants
                .iter()
                .map(|v| resolve(schema, v))
                .find(|v| v.get("properties").is_some());
            match table.or_else(|| variants.first()) {
                Some(v) => node = v,
                None => return node,
            }
        } else {
            return node;
        }
    }
    node
}

/// A key's description, its `$ref`'s when it has none itself.
pub fn description(schema: &Value, node: &Value) -> String {
    node.get("description")
        .or_else(|| resolve(schema, node).get("description"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// What a `depends-on` entry of this file can name: (label, filter text, documentation).
fn task_ids(
    server: &Server<'_>,
    rel: &str,
    path: &[String],
) -> Vec<(String, Option<String>, String)> {
    let Some(loaded) = &server.loaded else {
        return Vec::new();
    };
    let ws = &loaded.workspace;
    let template = path.first().map(String::as_str) == Some("workspace");
    let own = server.project_of(rel);
    let mut out = Vec::new();
    let mut names: Vec<&String> = ws
        .projects
        .iter()
        .flat_map(|p| p.config.tasks.keys())
        .collect();
    names.sort();
    names.dedup();
    for name in &names {
        out.push((
            format!("^{name}"),
            None,
            format!("`{name}` of the nearest projects this one depends on that have it"),
        ));
    }
    if template {
        // A template's bare names are the project's own tasks, whichever project it lands in.
        out.extend(names.iter().map(|n| {
            (
                n.to_string(),
                None,
                "a task of the same project".to_string(),
            )
        }));
        return out;
    }
    if let Some(project) = own {
        for name in project.config.tasks.keys() {
            out.push((name.clone(), None, format!("`{}#{name}`", project.name)));
        }
    }
    for project in &ws.projects {
        let unscoped = project
            .name
            .strip_prefix('@')
            .and_then(|n| n.split_once('/'))
            .map(|(_, n)| n);
        for name in project.config.tasks.keys() {
            let id = format!("{}#{name}", project.name);
            let filter = unscoped.map(|u| format!("{u}#{name}"));
            out.push((id, filter, format!("in `{}`", shown_dir(&project.dir))));
        }
    }
    out
}

fn shown_dir(dir: &str) -> &str {
    if dir.is_empty() {
        "."
    } else {
        dir
    }
}

fn project_names(server: &Server<'_>) -> Vec<String> {
    server
        .loaded
        .iter()
        .flat_map(|l| l.workspace.projects.iter())
        .map(|p| p.name.clone())
        .collect()
}
