//! Where each mapped script goes: a `[workspace.tasks]` template in the root `vx.toml` when
//! packages repeat it, else a `[tasks]` table in the package's own `vx.toml`.
//!
//! Start at [`monorepo`]. A script name becomes a template when two or more packages map it
//! to a command task and every package that has the script maps it (a folded `pre` hook or an
//! empty script would otherwise gain a task). The template holds what most of those packages
//! agree on (`depends-on`, `persistent`, the cache suggestion) and no `command`: each package's
//! script is its command (CFG-13). A package's file then holds only what differs: a folded
//! hook chain as `command`, other edges, `env.define`, its own suggestion, or the whole table
//! with `extends = false` for a group. A package whose tasks the templates describe exactly
//! gets no file.
//!
//! Every suggested `cache` table can be uncommented as it is, alone or with all the others:
//! its inputs are the package less every output suggested for it (what a template's default
//! inputs are), and no two suggestions of one package share a directory
//! (`scripts::exclusive_suggestions`).

use std::collections::{BTreeMap, BTreeSet};

use super::scripts::{LeftOutWhy, Mapping, Task, Todo, TodoReason};
use super::toml::{Cache, File, Table};

/// One package of the workspace, mapped.
pub struct Member<'a> {
    pub scripts: &'a BTreeMap<String, String>,
    pub mapping: &'a Mapping,
}

/// The templates, and each member's tables in member order.
pub struct Layout {
    pub templates: Vec<Table>,
    pub members: Vec<Vec<Table>>,
}

/// Lays out the tasks of a monorepo's packages (see the module documentation).
pub fn monorepo(members: &[Member<'_>]) -> Layout {
    let mut holders: BTreeMap<&str, Vec<&Task>> = BTreeMap::new();
    for member in members {
        for task in &member.mapping.tasks {
            holders.entry(task.name.as_str()).or_default().push(task);
        }
    }
    let mut templates: BTreeMap<&str, Table> = BTreeMap::new();
    for (name, tasks) in &holders {
        let commands: Vec<&Task> = tasks
            .iter()
            .copied()
            .filter(|t| t.command.is_some())
            .collect();
        let everywhere = members.iter().all(|m| {
            !m.scripts.contains_key(*name) || m.mapping.tasks.iter().any(|t| t.name == *name)
        });
        if commands.len() < 2 || !everywhere {
            continue;
        }
        let depends_on = most_common(commands.iter().map(|t| t.depends_on.clone()));
        let persistent = most_common(commands.iter().map(|t| t.persistent));
        // A suggestion goes in the template only when most packages share it.
        let outputs = most_common(commands.iter().map(|t| t.suggested_outputs.clone()));
        let sharing = commands
            .iter()
            .filter(|t| t.suggested_outputs == outputs)
            .count();
        let outputs = if sharing * 2 > commands.len() {
            outputs
        } else {
            Vec::new()
        };
        let template = Table {
            name: name.to_string(),
            depends_on: (!depends_on.is_empty()).then_some(depends_on),
            persistent: persistent.then_some(true),
            suggestion: (!outputs.is_empty()).then(|| Cache {
                outputs,
                ..Cache::default()
            }),
            ..Table::default()
        };
        templates.insert(name, template);
    }

    let tables = members
        .iter()
        .map(|member| {
            let applied: Vec<&Table> = member
                .mapping
                .tasks
                .iter()
                .filter_map(|t| templates.get(t.name.as_str()))
                .collect();
            let suggested = suggested_outputs(
                member.mapping,
                applied.iter().filter_map(|t| t.suggestion.as_ref()),
            );
            member
                .mapping
                .tasks
                .iter()
                .filter_map(|task| match templates.get(task.name.as_str()) {
                    None => Some(full_table(task, &suggested)),
                    Some(template) => {
                        let script = member.scripts.get(&task.name).map(|s| s.trim());
                        let table = difference(task, template, script, &suggested);
                        (!table.is_empty()).then_some(table)
                    }
                })
                .collect()
        })
        .collect();
    Layout {
        templates: templates.into_values().collect(),
        members: tables,
    }
}

/// The tables of a package without templates (a single package, or the root of a monorepo,
/// whose tasks keep templates off with `extends = false`).
pub fn alone(mapping: &Mapping, templates: &BTreeSet<String>) -> Vec<Table> {
    let suggested = suggested_outputs(mapping, std::iter::empty());
    mapping
        .tasks
        .iter()
        .map(|task| Table {
            no_template: templates.contains(&task.name),
            ..full_table(task, &suggested)
        })
        .collect()
}

/// Every output glob suggested for a package: its own suggestions and those of the templates
/// that apply to it.
fn suggested_outputs<'a>(
    mapping: &Mapping,
    templates: impl Iterator<Item = &'a Cache>,
) -> BTreeSet<String> {
    mapping
        .tasks
        .iter()
        .flat_map(|t| t.suggested_outputs.iter().cloned())
        .chain(templates.flat_map(|c| c.outputs.iter().cloned()))
        .filter(|g| !g.starts_with('!'))
        .collect()
}

/// `["**"]` less every suggested output: the inputs a template's cache table defaults to
/// (CFG-13), spelled out for a package's own table, which must name its inputs.
fn inputs_less(suggested: &BTreeSet<String>) -> Vec<String> {
    std::iter::once("**".to_string())
        .chain(suggested.iter().map(|g| format!("!{g}")))
        .collect()
}

/// A task's whole table.
pub(super) fn full_table(task: &Task, suggested: &BTreeSet<String>) -> Table {
    Table {
        name: task.name.clone(),
        command: task.command.clone(),
        depends_on: (!task.depends_on.is_empty()).then(|| task.depends_on.clone()),
        define: task.define.clone(),
        persistent: task.persistent.then_some(true),
        suggestion: own_suggestion(task, suggested),
        todos: notes(task),
        ..Table::default()
    }
}

fn own_suggestion(task: &Task, suggested: &BTreeSet<String>) -> Option<Cache> {
    (!task.suggested_outputs.is_empty()).then(|| Cache {
        inputs: Some(inputs_less(suggested)),
        outputs: task.suggested_outputs.clone(),
        ..Cache::default()
    })
}

fn notes(task: &Task) -> Vec<(TodoReason, String)> {
    task.notes
        .iter()
        .map(|n| (TodoReason::NpmVariable, n.clone()))
        .collect()
}

/// What a package's task sets beyond its template: a group is written whole with
/// `extends = false`; otherwise each key that differs.
fn difference(
    task: &Task,
    template: &Table,
    script: Option<&str>,
    suggested: &BTreeSet<String>,
) -> Table {
    if task.command.is_none() {
        return Table {
            no_template: true,
            ..full_table(task, suggested)
        };
    }
    let depends_on = template.depends_on.clone().unwrap_or_default();
    let persistent = template.persistent == Some(true);
    let outputs = template
        .suggestion
        .as_ref()
        .map(|c| c.outputs.clone())
        .unwrap_or_default();
    Table {
        name: task.name.clone(),
        command: task.command.clone().filter(|c| Some(c.as_str()) != script),
        depends_on: (task.depends_on != depends_on).then(|| task.depends_on.clone()),
        define: task.define.clone(),
        persistent: (task.persistent != persistent).then_some(task.persistent),
        suggestion: own_suggestion(task, suggested).filter(|_| task.suggested_outputs != outputs),
        todos: notes(task),
        ..Table::default()
    }
}

/// The value most items have; the first of them on a tie.
fn most_common<T: PartialEq + Default>(items: impl Iterator<Item = T>) -> T {
    let mut counts: Vec<(T, usize)> = Vec::new();
    for item in items {
        match counts.iter_mut().find(|(value, _)| *value == item) {
            Some((_, n)) => *n += 1,
            None => counts.push((item, 1)),
        }
    }
    let best = counts.iter().map(|(_, n)| *n).max().unwrap_or(0);
    counts
        .into_iter()
        .find(|(_, n)| *n == best)
        .map(|(value, _)| value)
        .unwrap_or_default()
}

/// The comments for scripts that are not tasks: hooks kept apart, scripts that drive the
/// workspace, and scripts that cannot be tasks (each with a TODO).
pub(super) fn left_out(file: &mut File, mapping: &Mapping) {
    if let Some((hooks, why)) = &mapping.unfolded_hooks {
        let names: Vec<String> = hooks.iter().map(|h| format!("`{h}`")).collect();
        file.trailer.push(vec![
            "Kept as tasks of their own, not folded into the scripts they precede or follow"
                .to_string(),
            format!(
                "({why}, so the package manager does not run them): {}.",
                names.join(", ")
            ),
        ]);
    }
    let orchestrating: Vec<String> = mapping
        .left_out
        .iter()
        .filter(|l| l.why == LeftOutWhy::Orchestrates)
        .map(|l| format!("  {}: {}", l.name, l.text))
        .collect();
    if !orchestrating.is_empty() {
        let mut block = vec![
            "Not mapped: these scripts drive the whole workspace; `vx run <task> --all` does that."
                .to_string(),
        ];
        block.extend(orchestrating);
        file.trailer.push(block);
    }
    for left in &mapping.left_out {
        if let LeftOutWhy::Unmappable(problem) = &left.why {
            let text = format!("script {:?} is not mapped: {problem}", left.name);
            file.trailer
                .push(vec![format!("TODO: {text}"), format!("  {}", left.text)]);
            file.loose_todos.push(Todo {
                reason: TodoReason::Unmappable,
                subject: left.name.clone(),
                text,
            });
        }
    }
}
