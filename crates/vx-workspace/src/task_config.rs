//! `[tasks.<name>]` tables (CFG-4) and workspace task templates (CFG-13): keys, types, the
//! CFG-9 constraints that concern one task, and the later-milestone refusals (CFG-12).
//!
//! Start at [`walk_tasks`]. Sub-tables (`env`, `cache`, `sandbox`, `persistent`, `remote`) have
//! their own walkers in `task_tables`; this file checks the task as a whole once every key has
//! been read.

use std::collections::BTreeMap;

use toml_span::value::{Key, ValueInner};
use toml_span::Value;
use vx_core::config::{Persistent, TaskConfig};
use vx_core::{Location, Spanned};

use crate::task_tables::{self, CacheWalk};
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

/// Walks a `tasks` table: `parent` is `""` for a project's `[tasks]` and `"workspace"` for the
/// templates of `[workspace.tasks]`.
pub(crate) fn walk_tasks(
    w: &mut Walker,
    value: &Value,
    parent: &str,
) -> BTreeMap<String, TaskConfig> {
    let path = join(parent, "tasks");
    let mut tasks = BTreeMap::new();
    let Some(table) = w.table(value, &path) else {
        return tasks;
    };
    let template = !parent.is_empty();
    for (key, value) in table {
        check_task_name(w, key);
        if let Some(task) = walk_task(w, key, value, &path, template) {
            tasks.insert(key.name.to_string(), task);
        }
    }
    tasks
}

/// CFG-9 task-name rules.
fn check_task_name(w: &mut Walker, key: &Key) {
    let name = key.name.as_ref();
    let problem = if name.is_empty() {
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
        return;
    };
    let at = w.key_at(key);
    w.error(at, problem);
}

/// Locations of the keys the whole-task checks point at.
#[derive(Default)]
struct Seen {
    cache: Option<Location>,
    retries: Option<Location>,
    sandbox: Option<Location>,
    ready_when: Option<Location>,
    remote: Option<Location>,
    cache_walk: Option<CacheWalk>,
    /// The table has a key vx does not know (already reported); a missing `command` is then
    /// most likely that key misspelt, so the "needs either" error would only add noise.
    unknown_key: bool,
}

fn walk_task(
    w: &mut Walker,
    key: &Key,
    value: &Value,
    parent: &str,
    template: bool,
) -> Option<TaskConfig> {
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
    let mut seen = Seen::default();
    for (key, value) in table {
        let key_name = key.name.as_ref();
        let at = w.key_at(key);
        if allowed.contains(&key_name) {
            task.key_locations.insert(key_name.to_string(), at.clone());
        } else {
            seen.unknown_key = true;
        }
        match key_name {
            "description" => task.description = w.string(value, "description"),
            "command" => task.command = command(w, value, "command"),
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
            "env" => task.env = task_tables::env(w, value, &path),
            "timeout" => task.timeout = w.duration(value, "timeout"),
            "retries" => {
                task.retries = w.count(value, "retries");
                w.milestone("task.retries", at.clone());
                seen.retries = Some(at);
            }
            "persistent" => {
                task.persistent = task_tables::persistent(w, value, &path, &mut seen.ready_when);
            }
            "interactive" => {
                task.interactive = w.bool(value, "interactive");
                w.milestone("task.interactive", at);
            }
            "sandbox" => {
                task.sandbox = w.gated("task.sandbox", at.clone(), |w| {
                    task_tables::sandbox(w, value, &path)
                });
                seen.sandbox = Some(at);
            }
            "cache" => {
                seen.cache_walk = w.gated("task.cache", at.clone(), |w| {
                    task_tables::cache(w, value, &path)
                });
                task.cache = seen.cache_walk.as_ref().map(|c| c.config.clone());
                seen.cache = Some(at);
            }
            "remote" => {
                task.remote = w.gated("task.remote", at.clone(), |w| {
                    task_tables::remote(w, value, &path)
                });
                seen.remote = Some(at);
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
    check_task(w, name, &task, &seen, template);
    Some(task)
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

/// A shell command (`command`, `cache.runtime` probes): non-empty, no NUL.
pub(crate) fn command(w: &mut Walker, value: &Value, name: &str) -> Option<String> {
    let text = w.string(value, name)?;
    let problem = if text.trim().is_empty() {
        "must not be empty"
    } else if text.contains('\0') {
        "must not contain a NUL character"
    } else {
        return Some(text);
    };
    let at = w.value_at(value);
    w.error(at, format!("`{name}` {problem}"));
    None
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

/// The CFG-9 constraints between the keys of one task.
fn check_task(w: &mut Walker, name: &str, task: &TaskConfig, seen: &Seen, template: bool) {
    let persistent = matches!(
        task.persistent,
        Some(Persistent::Plain(true) | Persistent::Ready(_))
    );
    let interactive = task.interactive == Some(true);
    // A `command` with a bad value was reported already; treating the task as a group too
    // would only add noise.
    let has_command = task.key_locations.contains_key("command");
    if !template && !has_command && task.depends_on.is_empty() && !seen.unknown_key {
        w.error(
            task.at.clone(),
            format!("task `{name}` needs either `command` or `depends-on`"),
        );
    }
    let mut refuse = |at: &Option<Location>, what: &str, on: &str| {
        if let Some(at) = at {
            w.error(at.clone(), format!("`{what}` is not allowed on {on}"));
        }
    };
    if !template && !has_command {
        refuse(&seen.cache, "cache", "a group task (it has no `command`)");
    }
    if persistent {
        refuse(&seen.cache, "cache", "a persistent task");
        refuse(&seen.retries, "retries", "a persistent task");
        refuse(&seen.remote, "remote", "a persistent task");
    }
    if interactive {
        refuse(&seen.cache, "cache", "an interactive task");
        refuse(
            &seen.ready_when,
            "persistent.ready-when",
            "an interactive task",
        );
        refuse(&seen.sandbox, "sandbox", "an interactive task");
        refuse(&seen.remote, "remote", "an interactive task");
    }
    if let (Some(at), None) = (&seen.remote, &seen.cache) {
        w.error(
            at.clone(),
            "`remote` needs a `cache` table: only cached tasks run remotely",
        );
    }
    if let (Some(at), Some(cache)) = (&seen.cache, &seen.cache_walk) {
        if cache.config.inputs.is_none() && !template {
            w.error(at.clone(), "`cache` needs `inputs`");
        }
        if cache.config.outputs.is_none() {
            w.error(at.clone(), "`cache` needs `outputs`")
                .hints
                .push("write `outputs = []` for a task that writes no files".into());
        }
        if !template {
            check_upstream(w, &cache.upstream, &task.depends_on);
        }
    }
}

/// `cache.upstream` exact entries must name a `depends-on` entry of the same task (CFG-9).
fn check_upstream(w: &mut Walker, upstream: &[Spanned<String>], depends_on: &[Spanned<String>]) {
    for entry in upstream {
        let target = entry.value.strip_prefix('!').unwrap_or(&entry.value);
        if target.contains('*') || depends_on.iter().any(|d| d.value == target) {
            continue;
        }
        w.error(
            entry.at.clone(),
            format!(
                "cache.upstream: `{}` is not a `depends-on` entry of this task",
                entry.value
            ),
        );
    }
}
