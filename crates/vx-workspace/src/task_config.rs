//! `[tasks.<name>]` tables (CFG-4) and workspace task templates (CFG-13): keys, types, the
//! CFG-9 constraints that concern one task, and the later-milestone refusals (CFG-12).
//!
//! Start at [`walk_tasks`]. Sub-tables (`env`, `cache`, `sandbox`, `persistent`, `remote`) have
//! their own walkers in `task_tables`. The constraints between a task's keys ([`check_task`])
//! are checked on the task as it finally is: a template's right away, a project's once the
//! workspace templates are laid under it (`templates`), since a template may give it the key
//! that makes it valid (or invalid).

use std::collections::BTreeMap;

use toml_span::value::{Key, ValueInner};
use toml_span::Value;
use vx_core::config::{Persistent, TaskConfig};
use vx_core::{Diagnostic, Location, Spanned};

use crate::task_tables;
use crate::toml_walk::{join, Walker};

/// The keys of a task table (CFG-4), in the order the allowed list shows them.
pub(crate) const TASK_KEYS: [&str; 12] = [
    "cache",
    "command",
    "depends-on",
    "description",
    "env",
    "extends",
    "interactive",
    "persistent",
    "remote",
    "retries",
    "sandbox",
    "timeout",
];

/// A template takes every task key but `extends` (CFG-13).
const TEMPLATE_KEYS: [&str; 11] = [
    "cache",
    "command",
    "depends-on",
    "description",
    "env",
    "interactive",
    "persistent",
    "remote",
    "retries",
    "sandbox",
    "timeout",
];

/// A walked `tasks` table: the tasks, and what the whole-task checks need about each.
#[derive(Debug, Default)]
pub(crate) struct WalkedTasks {
    pub(crate) tasks: BTreeMap<String, TaskConfig>,
    pub(crate) facts: BTreeMap<String, TaskFacts>,
}

/// What [`check_task`] needs beyond the model: locations inside sub-tables, and whether the
/// table had a key vx does not know.
#[derive(Debug, Clone, Default)]
pub(crate) struct TaskFacts {
    /// Where `persistent.ready-when` was written.
    pub(crate) ready_when: Option<Location>,
    /// `cache.upstream` entries with their locations.
    pub(crate) upstream: Vec<Spanned<String>>,
    /// `cache.upstream-keys` entries with their locations.
    pub(crate) upstream_keys: Vec<Spanned<String>>,
    /// `cache.input-sets` entries with their locations.
    pub(crate) input_sets: Vec<Spanned<String>>,
    /// The keys the `cache` table sets.
    pub(crate) cache_keys: std::collections::BTreeSet<String>,
    /// The table has a key vx does not know (already reported); a missing `command` is then
    /// most likely that key misspelt, so the "needs either" error would only add noise.
    pub(crate) unknown_key: bool,
}

/// Walks a `tasks` table: `parent` is `""` for a project's `[tasks]` and `"workspace"` for the
/// templates of `[workspace.tasks]`. Templates are checked as a whole here; project tasks
/// later, by `templates`.
pub(crate) fn walk_tasks(w: &mut Walker, value: &Value, parent: &str) -> WalkedTasks {
    let path = join(parent, "tasks");
    let mut walked = WalkedTasks::default();
    let Some(table) = w.table(value, &path) else {
        return walked;
    };
    let template = !parent.is_empty();
    for (key, value) in table {
        check_task_name(w, key);
        if let Some((task, facts)) = walk_task(w, key, value, &path, template) {
            if template {
                w.errors
                    .extend(check_task(key.name.as_ref(), &task, &facts, true));
            }
            walked.tasks.insert(key.name.to_string(), task);
            walked.facts.insert(key.name.to_string(), facts);
        }
    }
    walked
}

/// CFG-9 task-name rules.
fn check_task_name(w: &mut Walker, key: &Key) {
    if let Some(problem) = task_name_problem(key.name.as_ref()) {
        let at = w.key_at(key);
        w.error(at, problem);
    }
}

/// Why `name` cannot be a task name (CFG-9), if it cannot: empty, surrounding whitespace,
/// control characters, `#` or `*`, or a leading `^` or `!`.
pub fn task_name_problem(name: &str) -> Option<String> {
    Some(if name.is_empty() {
        "task names must not be empty".to_string()
    } else if name.trim() != name {
        format!("task name `{name}` must not start or end with whitespace")
    } else if name.chars().any(char::is_control) {
        format!("task name {name:?} must not contain control characters")
    } else if let Some(c) = name.chars().find(|c| matches!(c, '#' | '*')) {
        format!("task name `{name}` must not contain `{c}`")
    } else if let Some(c) = name.chars().next().filter(|c| matches!(c, '^' | '!')) {
        format!("task name `{name}` must not start with `{c}`")
    } else {
        return None;
    })
}

fn walk_task(
    w: &mut Walker,
    key: &Key,
    value: &Value,
    parent: &str,
    template: bool,
) -> Option<(TaskConfig, TaskFacts)> {
    let name = key.name.as_ref();
    let path = join(parent, name);
    let Some(table) = value.as_table() else {
        let at = w.value_at(value);
        let d = w.error(at, format!("task `{name}` must be a table"));
        if let ValueInner::String(command) = value.as_ref() {
            d.hints.push(format!(
                "write `[{path}]` with `command = {command:?}` on the next line"
            ));
        }
        return None;
    };
    let allowed: &[&str] = if template { &TEMPLATE_KEYS } else { &TASK_KEYS };
    let mut task = TaskConfig {
        at: w.key_at(key),
        ..TaskConfig::default()
    };
    let mut facts = TaskFacts::default();
    for (key, value) in table {
        let key_name = key.name.as_ref();
        let at = w.key_at(key);
        if allowed.contains(&key_name) {
            task.key_locations.insert(key_name.to_string(), at.clone());
        } else {
            facts.unknown_key = true;
        }
        match key_name {
            "description" => task.description = w.string(value, "description"),
            "command" => task.command = task_tables::command(w, value, "command"),
            "depends-on" => {
                task.depends_on = w.strings(value, "depends-on").unwrap_or_default();
                for entry in &task.depends_on {
                    if let Some(problem) = depends_on_problem(&entry.value) {
                        w.error(
                            entry.at.clone(),
                            format!("depends-on: `{}` {problem}", entry.value),
                        );
                    }
                }
            }
            "env" => task.env = task_tables::env(w, value, &path).map(Box::new),
            "timeout" => task.timeout = w.duration(value, "timeout"),
            "retries" => {
                task.retries = w.count(value, "retries");
                w.milestone("task.retries", at);
            }
            "persistent" => {
                task.persistent = task_tables::persistent(w, value, &path, &mut facts.ready_when);
            }
            "interactive" => {
                task.interactive = w.bool(value, "interactive");
                w.milestone("task.interactive", at);
            }
            "sandbox" => {
                task.sandbox = w
                    .gated("task.sandbox", at, |w| {
                        task_tables::sandbox(w, value, &path)
                    })
                    .map(Box::new);
            }
            "cache" => {
                let walked = w.gated("task.cache", at, |w| task_tables::cache(w, value, &path));
                if let Some(walked) = walked {
                    task.cache = Some(Box::new(walked.config));
                    facts.upstream = walked.upstream;
                    facts.upstream_keys = walked.upstream_keys;
                    facts.input_sets = walked.input_sets;
                    facts.cache_keys = walked.keys;
                }
            }
            "remote" => {
                task.remote = w
                    .gated("task.remote", at, |w| task_tables::remote(w, value, &path))
                    .map(Box::new);
            }
            "extends" if !template => {
                task.extends = w.bool(value, "extends");
                w.milestone("task.extends", at);
            }
            other => {
                let pointer = task_key_pointer(other);
                w.unknown_key(key, &path, allowed, pointer);
            }
        }
    }
    Some((task, facts))
}

/// Pointers for keys of other tools written at task level (CFG-8).
fn task_key_pointer(key: &str) -> Option<String> {
    let vx = match key {
        "dependsOn" => "depends-on",
        "outputs" => "cache.outputs",
        "inputs" => "cache.inputs",
        "passThroughEnv" => "env.pass-through",
        "cmd" | "run" | "script" => "command",
        _ => return None,
    };
    Some(format!("did you mean `{vx}`?"))
}

/// The GRAPH-2 forms that can be refused without knowing the other projects, phrased to
/// follow the quoted entry.
fn depends_on_problem(entry: &str) -> Option<&'static str> {
    let pattern_part = entry.strip_prefix('^').unwrap_or(entry);
    if entry.trim().is_empty() {
        Some("is empty; name a task")
    } else if pattern_part == "*" || entry.starts_with('!') {
        Some("is only allowed in `cache.upstream`")
    } else if let Some((project, task)) = entry.split_once('#') {
        if project.is_empty() || task.is_empty() || project.starts_with('^') {
            Some("is not a task reference; write `project#task`")
        } else if task.contains('*') {
            Some("is a pattern; patterns are not allowed with `project#`")
        } else {
            None
        }
    } else {
        None
    }
}

/// The CFG-9 constraints between the keys of one task, as it finally is. Key locations come
/// from `task.key_locations`, so a key a template gave is pointed at in the template. With
/// `template`, the checks that depend on the project the template is applied to are left
/// out.
pub(crate) fn check_task(
    name: &str,
    task: &TaskConfig,
    facts: &TaskFacts,
    template: bool,
) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    let located = |key: &str| task.key_locations.get(key).cloned();
    let (cache_at, retries_at, sandbox_at, remote_at) = (
        located("cache"),
        located("retries"),
        located("sandbox"),
        located("remote"),
    );
    let persistent = matches!(
        task.persistent,
        Some(Persistent::Plain(true) | Persistent::Ready(_))
    );
    let interactive = task.interactive == Some(true);
    // A `command` with a bad value was reported already; treating the task as a group too
    // would only add noise.
    let has_command = task.key_locations.contains_key("command");
    if !template && !has_command && task.depends_on.is_empty() && !facts.unknown_key {
        errors.push(Diagnostic::at(
            task.at.clone(),
            format!("task `{name}` needs either `command` or `depends-on`"),
        ));
    }
    let mut refuse = |at: &Option<Location>, what: &str, on: &str| {
        if let Some(at) = at {
            errors.push(Diagnostic::at(
                at.clone(),
                format!("`{what}` is not allowed on {on}"),
            ));
        }
    };
    if !template && !has_command {
        refuse(&cache_at, "cache", "a group task (it has no `command`)");
    }
    if persistent {
        refuse(&cache_at, "cache", "a persistent task");
        refuse(&retries_at, "retries", "a persistent task");
        refuse(&remote_at, "remote", "a persistent task");
    }
    if interactive {
        refuse(&cache_at, "cache", "an interactive task");
        refuse(
            &facts.ready_when,
            "persistent.ready-when",
            "an interactive task",
        );
        refuse(&sandbox_at, "sandbox", "an interactive task");
        refuse(&remote_at, "remote", "an interactive task");
    }
    if let (Some(at), None) = (&remote_at, &cache_at) {
        errors.push(Diagnostic::at(
            at.clone(),
            "`remote` needs a `cache` table: only cached tasks run remotely",
        ));
    }
    if let (Some(at), Some(cache)) = (&cache_at, &task.cache) {
        let lists = [
            cache.inputs.as_deref().unwrap_or_default(),
            cache.outputs.as_deref().unwrap_or_default(),
            &cache.workspace_inputs,
            &cache.workspace_outputs,
            &cache.env,
            &cache.input_sets,
        ];
        if lists
            .iter()
            .any(|l| l.iter().any(|e| e == crate::task_tables::SPLICE))
        {
            let message = if template {
                "`...` stands for a template's entries: it belongs in a project's `cache`, laid over this template"
            } else {
                "`...` stands for the template's entries, but no template's `cache` applies to this task"
            };
            errors.push(Diagnostic::at(at.clone(), message));
        }
        if cache.inputs.is_none() && !template {
            errors.push(Diagnostic::at(at.clone(), "`cache` needs `inputs`"));
        }
        if cache.outputs.is_none() {
            errors.push(
                Diagnostic::at(at.clone(), "`cache` needs `outputs`")
                    .hint("write `outputs = []` for a task that writes no files"),
            );
        }
        if !template {
            check_upstream(&mut errors, "upstream", &facts.upstream, &task.depends_on);
            check_upstream(
                &mut errors,
                "upstream-keys",
                &facts.upstream_keys,
                &task.depends_on,
            );
        }
    }
    errors
}

/// `cache.upstream` and `cache.upstream-keys` exact entries must name a `depends-on` entry of
/// the same task (CFG-9).
fn check_upstream(
    errors: &mut Vec<Diagnostic>,
    name: &str,
    upstream: &[Spanned<String>],
    depends_on: &[Spanned<String>],
) {
    for entry in upstream {
        let target = entry.value.strip_prefix('!').unwrap_or(&entry.value);
        if target.contains('*') || depends_on.iter().any(|d| d.value == target) {
            continue;
        }
        errors.push(Diagnostic::at(
            entry.at.clone(),
            format!(
                "cache.{name}: `{}` is not a `depends-on` entry of this task",
                entry.value
            ),
        ));
    }
}
