//! A whole `vx.toml`: the top level (CFG-3), `[workspace]` (CFG-2) and its sub-tables, built
//! into [`ConfigFile`] with every problem collected (CFG-8 to CFG-12).
//!
//! Start at [`load_config`]. Task tables are walked by `task_config`. The walk always returns
//! a best-effort model along with the errors, so discovery can go on and report the problems
//! of every file together (CFG-10).

use std::collections::{BTreeMap, BTreeSet};

use toml_span::value::{Key, Table};
use toml_span::Value;
use vx_core::config::{
    CacheRetention, ConfigFile, InputSet, RemoteCacheConfig, RemoteExecutionConfig, RulesConfig,
    WorkspaceConfig,
};
use vx_core::{Diagnostic, Location, Spanned};

use crate::members::check_member_glob;
use crate::source::SourceText;
use crate::task_config::{walk_tasks, TaskFacts, TASK_KEYS};
use crate::toml_walk::{env_entry_problem, Walker};

const ROOT_KEYS: [&str; 5] = ["deps", "name", "tags", "tasks", "workspace"];
const PROJECT_KEYS: [&str; 4] = ["deps", "name", "tags", "tasks"];
const WORKSPACE_KEYS: [&str; 13] = [
    "affected-base",
    "cache-dir",
    "cache-retention",
    "concurrency",
    "exclude-from-all",
    "input-sets",
    "members",
    "remote-cache",
    "remote-execution",
    "rules",
    "tasks",
    "timeout",
    "ui",
];
const RETENTION_KEYS: [&str; 2] = ["max-size", "older-than"];
const RULES_KEYS: [&str; 2] = ["exclusive-outputs", "upfront-keys"];
const REMOTE_CACHE_KEYS: [&str; 13] = [
    "connect-timeout",
    "download-concurrency",
    "idle-timeout",
    "instance-name",
    "max-download-size",
    "request-timeout",
    "signature-key-env",
    "team",
    "team-id",
    "token-env",
    "upload-concurrency",
    "url",
    "write",
];
const REMOTE_EXECUTION_KEYS: [&str; 6] = [
    "instance-name",
    "max-in-flight",
    "path",
    "platform",
    "token-env",
    "url",
];

/// One `vx.toml`, walked.
#[derive(Clone)]
pub(crate) struct LoadedConfig {
    pub(crate) config: ConfigFile,
    /// Whether the file has a `tasks` table, even an empty one: that makes the root a
    /// project (CFG-1).
    pub(crate) has_tasks_table: bool,
    /// What the whole-task checks need about each task of `[tasks]`, which are checked once
    /// the workspace templates are laid under them (`templates`).
    pub(crate) task_facts: BTreeMap<String, TaskFacts>,
    /// The same for the templates of `[workspace.tasks]`.
    pub(crate) template_facts: BTreeMap<String, TaskFacts>,
    pub(crate) errors: Vec<Diagnostic>,
}

/// Parses and checks one `vx.toml`. `rel_path` is root-relative; `is_root` allows
/// `[workspace]`.
pub(crate) fn load_config(text: &str, rel_path: &str, is_root: bool) -> LoadedConfig {
    let mut loaded = LoadedConfig {
        config: ConfigFile::default(),
        has_tasks_table: false,
        task_facts: BTreeMap::new(),
        template_facts: BTreeMap::new(),
        errors: Vec::new(),
    };
    let tree = match toml_span::parse(text) {
        Ok(tree) => tree,
        Err(error) => {
            let at = SourceText::new(rel_path, text).location(error.span.start);
            loaded
                .errors
                .push(Diagnostic::at(at, format!("invalid TOML: {error}")));
            return loaded;
        }
    };
    let mut w = Walker::new(rel_path, text);
    // The parser always returns a table for a whole document.
    let Some(table) = tree.as_table() else {
        return loaded;
    };
    let config = &mut loaded.config;
    let allowed: &[&str] = if is_root { &ROOT_KEYS } else { &PROJECT_KEYS };
    for (key, value) in table {
        match key.name.as_ref() {
            "name" => {
                config.project.name = w.spanned_string(value, "name");
                if let Some(name) = &config.project.name {
                    check_name(&mut w, name, is_root);
                }
            }
            "deps" => config.project.deps = w.strings(value, "deps").unwrap_or_default(),
            "tags" => {
                let tags = w.strings(value, "tags").unwrap_or_default();
                for tag in &tags {
                    if tag.value.trim().is_empty() || tag.value.contains(char::is_whitespace) {
                        w.error(
                            tag.at.clone(),
                            format!("tags: `{}` is not a tag (no spaces)", tag.value),
                        );
                    }
                }
                config.project.tags = tags.into_iter().map(|t| t.value).collect();
            }
            "tasks" => {
                loaded.has_tasks_table = true;
                let walked = walk_tasks(&mut w, value, "");
                config.project.tasks = walked
                    .tasks
                    .into_iter()
                    .map(|(name, task)| (name, Box::new(task)))
                    .collect();
                loaded.task_facts = walked.facts;
            }
            "workspace" if is_root => {
                config.workspace = workspace(&mut w, value, &mut loaded.template_facts);
            }
            "workspace" => {
                let at = w.key_at(key);
                w.error(at, "`[workspace]` is only allowed in the root `vx.toml`")
                    .hints
                    .push("the workspace root is the nearest directory above whose `vx.toml` has `[workspace]`".into());
            }
            other => {
                let pointer = top_level_pointer(other, is_root);
                w.unknown_key(key, "vx.toml", allowed, pointer);
            }
        }
    }
    loaded.errors = w.errors;
    loaded
}

/// Pointers for keys that belong elsewhere or to other tools (CFG-8).
fn top_level_pointer(key: &str, is_root: bool) -> Option<String> {
    if key == "pipeline" {
        return Some(
            "vx declares tasks in `[tasks]` of each project's `vx.toml`, or as templates in \
             `[workspace.tasks]`"
                .into(),
        );
    }
    if WORKSPACE_KEYS.contains(&key) && key != "tasks" {
        let table = if is_root {
            "the `[workspace]` table"
        } else {
            "the `[workspace]` table of the root `vx.toml`"
        };
        return Some(format!("`{key}` belongs in {table}"));
    }
    if TASK_KEYS.contains(&key) || key == "dependsOn" {
        return Some(format!(
            "`{key}` belongs in a task table such as `[tasks.build]`"
        ));
    }
    None
}

/// CFG-9 project-name rules, for a `name` in `vx.toml`.
fn check_name(w: &mut Walker, name: &Spanned<String>, is_root: bool) {
    let problem = if is_root {
        Some("the workspace root project is always named `//`; remove `name`".to_string())
    } else {
        project_name_problem(&name.value)
    };
    if let Some(problem) = problem {
        w.error(name.at.clone(), problem);
    }
}

/// Why `name` cannot be a project name (CFG-9), if it cannot.
pub(crate) fn project_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("project names must not be empty".into())
    } else if name.trim() != name {
        Some(format!(
            "project name `{name}` must not start or end with whitespace"
        ))
    } else if name.contains('#') {
        Some(format!("project name `{name}` must not contain `#`"))
    } else if name == vx_core::ROOT_PROJECT {
        Some("project name `//` is reserved for the workspace root".into())
    } else {
        None
    }
}

fn workspace(
    w: &mut Walker,
    value: &Value,
    template_facts: &mut BTreeMap<String, TaskFacts>,
) -> Option<WorkspaceConfig> {
    let table = w.table(value, "workspace")?;
    let mut ws = WorkspaceConfig::default();
    for (key, value) in table {
        let at = w.key_at(key);
        match key.name.as_ref() {
            "members" => {
                let members = w.strings(value, "members").unwrap_or_default();
                for member in &members {
                    if let Err(problem) = check_member_glob(&member.value) {
                        w.error(
                            member.at.clone(),
                            format!("members: `{}` {problem}", member.value),
                        );
                    }
                }
                ws.members = Some(members);
            }
            "exclude-from-all" => {
                let globs = w.strings(value, "exclude-from-all").unwrap_or_default();
                for glob in &globs {
                    let problem = if glob.value.starts_with('!') {
                        Err("is a negation; list the directories `--all` leaves out".to_string())
                    } else {
                        check_member_glob(&glob.value)
                    };
                    if let Err(problem) = problem {
                        w.error(
                            glob.at.clone(),
                            format!("exclude-from-all: `{}` {problem}", glob.value),
                        );
                    }
                }
                ws.exclude_from_all = globs;
            }
            "concurrency" => ws.concurrency = w.positive_integer(value, "concurrency"),
            "timeout" => ws.timeout = w.duration(value, "timeout"),
            "cache-dir" => {
                ws.cache_dir = w.non_empty_string(value, "cache-dir");
                w.milestone("workspace.cache-dir", at);
            }
            "affected-base" => {
                ws.affected_base = w.non_empty_string(value, "affected-base");
                w.milestone("workspace.affected-base", at);
            }
            "ui" => {
                ws.ui = w.string(value, "ui");
                if let Some(ui) = ws.ui.as_deref().filter(|u| !["plain", "tui"].contains(u)) {
                    let at = w.value_at(value);
                    w.error(at, format!("ui: `{ui}` must be `plain` or `tui`"));
                }
            }
            "cache-retention" => {
                ws.cache_retention =
                    w.gated("workspace.cache-retention", at, |w| retention(w, value));
            }
            "tasks" => {
                let walked = w.gated("workspace.tasks", at, |w| walk_tasks(w, value, "workspace"));
                ws.tasks = walked.tasks;
                *template_facts = walked.facts;
            }
            "rules" => ws.rules = w.gated("workspace.rules", at, |w| rules(w, value)),
            "input-sets" => ws.input_sets = input_sets(w, value),
            "remote-cache" => {
                ws.remote_cache = w.gated("workspace.remote-cache", at, |w| remote_cache(w, value));
            }
            "remote-execution" => {
                ws.remote_execution = w.gated("workspace.remote-execution", at, |w| {
                    remote_execution(w, value)
                });
            }
            other => {
                let pointer = match other {
                    "packages" | "workspaces" => Some("did you mean `members`?".to_string()),
                    "pipeline" => Some("did you mean `tasks` (`[workspace.tasks]`)?".to_string()),
                    _ => None,
                };
                w.unknown_key(key, "workspace", &WORKSPACE_KEYS, pointer);
            }
        }
    }
    // Templates may name sets written after them: checked once all are read.
    for facts in template_facts.values() {
        for entry in &facts.input_sets {
            let splice = entry.value == crate::task_tables::SPLICE;
            let (set, _) = crate::task_tables::set_reference(&entry.value);
            if !splice && !ws.input_sets.contains_key(set) {
                let d = crate::task_tables::unknown_set(entry, &ws.input_sets);
                let hints = d.hints.clone();
                w.error(d.at.clone().unwrap_or_default(), d.message.clone())
                    .hints
                    .extend(hints);
            }
        }
    }
    Some(ws)
}

const INPUT_SET_KEYS: [&str; 6] = [
    "env",
    "input-sets",
    "inputs",
    "runtime",
    "workspace-inputs",
    "workspace-runtime",
];

/// `[workspace.input-sets.<name>]` tables; every set a set includes must exist, and no set
/// may include itself, directly or not.
fn input_sets(w: &mut Walker, value: &Value) -> BTreeMap<String, InputSet> {
    use crate::glob_rules::GlobBase;
    use crate::task_tables::{commands, env_names, globs, is_set_name, locate_set, set_names};
    let Some(table) = w.table(value, "input-sets") else {
        return BTreeMap::new();
    };
    let mut sets = BTreeMap::new();
    let mut includes: BTreeMap<String, (Location, Vec<Spanned<String>>)> = BTreeMap::new();
    for (key, value) in table {
        let name = key.name.to_string();
        let at = w.key_at(key);
        if !is_set_name(&name) {
            w.error(
                at.clone(),
                format!("input set name `{name}` may hold only letters, digits, `-` and `_`"),
            );
        }
        let path = format!("input-sets.{name}");
        let Some(entries) = w.table(value, &path) else {
            continue;
        };
        let mut set = InputSet::default();
        let mut nested = Vec::new();
        let values = |g: Option<Vec<Spanned<String>>>| {
            g.unwrap_or_default().into_iter().map(|s| s.value).collect()
        };
        for (key, value) in entries {
            let what = format!("{path}.{}", key.name);
            match key.name.as_ref() {
                "inputs" => {
                    let found = globs(w, value, &what, GlobBase::Project);
                    locate_set(&mut set, "inputs", found.as_deref());
                    set.inputs = values(found);
                }
                "workspace-inputs" => {
                    let found = globs(w, value, &what, GlobBase::Root);
                    locate_set(&mut set, "workspace-inputs", found.as_deref());
                    set.workspace_inputs = values(found);
                }
                "env" => set.env = env_names(w, value, &what, true),
                "runtime" => set.runtime = commands(w, value, &what),
                "workspace-runtime" => set.workspace_runtime = commands(w, value, &what),
                "input-sets" => {
                    nested = set_names(w, value, &what, false);
                    set.input_sets = nested.iter().map(|s| s.value.clone()).collect();
                }
                _ => w.unknown_key(key, &path, &INPUT_SET_KEYS, None),
            }
        }
        includes.insert(name.clone(), (at, nested));
        sets.insert(name, set);
    }
    for (name, (at, nested)) in &includes {
        for entry in nested {
            if !sets.contains_key(&entry.value) {
                let d = w.error(
                    entry.at.clone(),
                    format!(
                        "input-sets.{name}.input-sets: no input set is named `{}`",
                        entry.value
                    ),
                );
                if let Some(best) =
                    vx_core::suggest::did_you_mean(&entry.value, sets.keys().map(String::as_str))
                {
                    d.hints.push(format!("did you mean `{best}`?"));
                }
            }
        }
        if let Some(path) = cycle_through(name, &sets) {
            w.error(
                at.clone(),
                format!("input set `{name}` includes itself: {}", path.join(" → ")),
            );
        }
    }
    sets
}

/// The chain of sets by which `start` includes itself, if it does.
fn cycle_through(start: &str, sets: &BTreeMap<String, InputSet>) -> Option<Vec<String>> {
    fn walk(
        at: &str,
        start: &str,
        sets: &BTreeMap<String, InputSet>,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in sets
            .get(at)
            .map(|s| s.input_sets.as_slice())
            .unwrap_or_default()
        {
            path.push(next.clone());
            if next == start {
                return true;
            }
            if seen.insert(next.clone()) && walk(next, start, sets, path, seen) {
                return true;
            }
            path.pop();
        }
        false
    }
    let mut path = vec![start.to_string()];
    let mut seen = BTreeSet::new();
    walk(start, start, sets, &mut path, &mut seen).then_some(path)
}

fn retention(w: &mut Walker, value: &Value) -> Option<CacheRetention> {
    let table = w.table(value, "cache-retention")?;
    let mut retention = CacheRetention::default();
    for (key, value) in table {
        match key.name.as_ref() {
            "older-than" => {
                retention.older_than = w.duration_text(value, "cache-retention.older-than");
            }
            "max-size" => {
                retention.max_size = w.size_text(value, "cache-retention.max-size", true);
            }
            _ => w.unknown_key(key, "workspace.cache-retention", &RETENTION_KEYS, None),
        }
    }
    if table.is_empty() {
        let at = w.value_at(value);
        w.error(at, "`cache-retention` needs `older-than` or `max-size`");
    }
    Some(retention)
}

fn rules(w: &mut Walker, value: &Value) -> Option<RulesConfig> {
    let table = w.table(value, "rules")?;
    let mut rules = RulesConfig::default();
    for (key, value) in table {
        match key.name.as_ref() {
            "exclusive-outputs" => {
                rules.exclusive_outputs = w.bool(value, "rules.exclusive-outputs");
                if rules.exclusive_outputs == Some(false) {
                    let at = w.key_at(key);
                    w.milestone("workspace.rules.exclusive-outputs=false", at);
                }
            }
            "upfront-keys" => rules.upfront_keys = w.bool(value, "rules.upfront-keys"),
            _ => w.unknown_key(key, "workspace.rules", &RULES_KEYS, None),
        }
    }
    Some(rules)
}

/// `url`: required, with one of the given schemes.
fn url(
    w: &mut Walker,
    table: &Table,
    table_at: &Value,
    name: &str,
    schemes: &[&str],
) -> Option<String> {
    let Some((_, value)) = table.iter().find(|(k, _)| k.name == "url") else {
        let at = w.value_at(table_at);
        w.error(at, format!("`{name}` needs `url`"));
        return None;
    };
    let url = w.non_empty_string(value, &format!("{name}.url"))?;
    if !schemes.iter().any(|s| url.starts_with(&format!("{s}://"))) {
        let at = w.value_at(value);
        let list: Vec<String> = schemes.iter().map(|s| format!("`{s}://`")).collect();
        w.error(
            at,
            format!("{name}.url: `{url}` must start with {}", list.join(" or ")),
        );
    }
    Some(url)
}

fn env_name_key(w: &mut Walker, value: &Value, name: &str) -> Option<String> {
    let text = w.string(value, name)?;
    if let Some(problem) = env_entry_problem(&text, false) {
        let at = w.value_at(value);
        w.error(at, format!("{name}: `{text}` {problem}"));
    }
    Some(text)
}

fn remote_cache(w: &mut Walker, value: &Value) -> Option<RemoteCacheConfig> {
    let table = w.table(value, "remote-cache")?;
    let mut remote = RemoteCacheConfig {
        url: url(
            w,
            table,
            value,
            "remote-cache",
            &["http", "https", "grpc", "grpcs"],
        ),
        ..RemoteCacheConfig::default()
    };
    let mut team_keys: Vec<&Key> = Vec::new();
    for (key, value) in table {
        let name = format!("remote-cache.{}", key.name);
        match key.name.as_ref() {
            "url" => {}
            "team" => {
                remote.team = w.non_empty_string(value, &name);
                team_keys.push(key);
            }
            "team-id" => {
                remote.team_id = w.non_empty_string(value, &name);
                team_keys.push(key);
            }
            "instance-name" => remote.instance_name = w.string(value, &name),
            "token-env" => remote.token_env = env_name_key(w, value, &name),
            "signature-key-env" => {
                let at = w.key_at(key);
                w.milestone("workspace.remote-cache.signature-key-env", at);
                remote.signature_key_env = env_name_key(w, value, &name);
            }
            "write" => {
                remote.write = w.string(value, &name);
                if let Some(mode) = remote
                    .write
                    .as_deref()
                    .filter(|m| !["ci", "always", "never"].contains(m))
                {
                    let at = w.value_at(value);
                    w.error(
                        at,
                        format!("{name}: `{mode}` must be `ci`, `always` or `never`"),
                    );
                }
            }
            "connect-timeout" => remote.connect_timeout = w.duration_text(value, &name),
            "idle-timeout" => remote.idle_timeout = w.duration_text(value, &name),
            "request-timeout" => remote.request_timeout = w.duration_text(value, &name),
            "max-download-size" => remote.max_download_size = w.size_text(value, &name, true),
            "upload-concurrency" => remote.upload_concurrency = w.positive_integer(value, &name),
            "download-concurrency" => {
                remote.download_concurrency = w.positive_integer(value, &name)
            }
            other => {
                let pointer = (other == "token")
                    .then(|| "tokens are never written in config; set `token-env`".to_string());
                w.unknown_key(key, "workspace.remote-cache", &REMOTE_CACHE_KEYS, pointer);
            }
        }
    }
    if let [_, second] = team_keys[..] {
        let at = w.key_at(second);
        w.error(at, "`remote-cache` takes `team` or `team-id`, not both");
    }
    let grpc = remote
        .url
        .as_deref()
        .is_some_and(|u| u.starts_with("grpc://") || u.starts_with("grpcs://"));
    // REM-2: the HTTP protocol sends a namespace; exactly one of the two keys names it.
    if remote.url.is_some() && !grpc && team_keys.is_empty() {
        let at = w.value_at(value);
        w.error(
            at,
            "`remote-cache` with an HTTP `url` needs `team` or `team-id`",
        );
    }
    if let Some((key, _)) = table
        .iter()
        .find(|(k, _)| k.name == "signature-key-env")
        .filter(|_| grpc)
    {
        let at = w.key_at(key);
        w.error(
            at,
            "`signature-key-env` signs HTTP artifacts; a `grpc://` remote cache cannot use it",
        );
    }
    Some(remote)
}

fn remote_execution(w: &mut Walker, value: &Value) -> Option<RemoteExecutionConfig> {
    let table = w.table(value, "remote-execution")?;
    let mut remote = RemoteExecutionConfig {
        url: url(w, table, value, "remote-execution", &["grpc", "grpcs"]),
        ..RemoteExecutionConfig::default()
    };
    for (key, value) in table {
        let name = format!("remote-execution.{}", key.name);
        match key.name.as_ref() {
            "url" => {}
            "instance-name" => remote.instance_name = w.string(value, &name),
            "token-env" => remote.token_env = env_name_key(w, value, &name),
            "path" => remote.path = w.non_empty_string(value, &name),
            "max-in-flight" => remote.max_in_flight = w.positive_integer(value, &name),
            "platform" => {
                for (_, key, text) in w.string_table(value, &name).unwrap_or_default() {
                    remote.platform.insert(key, text.value);
                }
            }
            other => {
                let pointer = (other == "token")
                    .then(|| "tokens are never written in config; set `token-env`".to_string());
                w.unknown_key(
                    key,
                    "workspace.remote-execution",
                    &REMOTE_EXECUTION_KEYS,
                    pointer,
                );
            }
        }
    }
    Some(remote)
}
