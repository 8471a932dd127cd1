//! The sub-tables of a task: `env` (CFG-5), `cache` (CFG-6, CFG-7), `sandbox` (SBX-3),
//! `persistent` and `remote` (CFG-4). Each walker checks its own keys and values; constraints
//! between a task's keys live in `task_config`.

use std::collections::{BTreeMap, BTreeSet};

use toml_span::value::ValueInner;
use toml_span::Value;
use vx_core::config::InputSet;
use vx_core::config::{
    CacheConfig, EnvConfig, Persistent, ReadyWhen, RemoteTask, RemoteTaskConfig, SandboxConfig,
};
use vx_core::{Diagnostic, Location, Spanned};

use crate::glob_rules::{check_task_glob, is_literal, GlobBase, GlobList};
use crate::toml_walk::{env_entry_problem, join, Walker};

const ENV_KEYS: [&str; 3] = ["define", "pass-through", "secret"];
const CACHE_KEYS: [&str; 12] = [
    "dependants-read",
    "env",
    "input-sets",
    "inputs",
    "outputs",
    "portable",
    "runtime",
    "upstream",
    "upstream-keys",
    "workspace-inputs",
    "workspace-outputs",
    "workspace-runtime",
];
const SANDBOX_KEYS: [&str; 3] = ["network", "read", "write"];
const PERSISTENT_KEYS: [&str; 1] = ["ready-when"];
const REMOTE_KEYS: [&str; 2] = ["extra-inputs", "platform"];

pub(crate) fn env(w: &mut Walker, value: &Value, task_path: &str) -> Option<EnvConfig> {
    let Some(table) = value.as_table() else {
        let at = w.value_at(value);
        let d = w.error(at, "`env` must be a table");
        if value.as_array().is_some() {
            d.hints.push(
                "forward variables with `env = { pass-through = [...] }`; fold them into the key \
                 with `cache.env`"
                    .into(),
            );
        }
        return None;
    };
    let mut env = EnvConfig::default();
    let mut defined = Vec::new();
    for (key, value) in table {
        match key.name.as_ref() {
            "pass-through" => {
                env.pass_through = env_names(w, value, "env.pass-through", true);
            }
            "secret" => env.secret = env_names(w, value, "env.secret", false),
            "define" => {
                for (at, name, text) in w.string_table(value, "env.define").unwrap_or_default() {
                    if let Some(problem) = env_entry_problem(&name, false) {
                        w.error(at.clone(), format!("env.define: `{name}` {problem}"));
                    }
                    if text.value.contains('\0') {
                        w.error(
                            text.at,
                            format!("env.define.{name}: the value contains a NUL character"),
                        );
                    }
                    env.define.insert(name.clone(), text.value);
                    defined.push((at, name));
                }
            }
            _ => w.unknown_key(key, &join(task_path, "env"), &ENV_KEYS, None),
        }
    }
    for (at, name) in defined {
        if env.pass_through.contains(&name) {
            w.error(
                at,
                format!("env: `{name}` is both in `pass-through` and in `define`; keep one"),
            );
        }
    }
    Some(env)
}

/// In a project's cache list laid over a template's, `...` stands for the template's entries.
pub(crate) const SPLICE: &str = "...";

/// A list of variable names (or, with `wildcards`, prefixes ending in `*`).
pub(crate) fn env_names(w: &mut Walker, value: &Value, name: &str, wildcards: bool) -> Vec<String> {
    let entries = w.strings(value, name).unwrap_or_default();
    for entry in &entries {
        if name == "cache.env" && entry.value == SPLICE {
            continue;
        }
        if let Some(problem) = env_entry_problem(&entry.value, wildcards) {
            w.error(
                entry.at.clone(),
                format!("{name}: `{}` {problem}", entry.value),
            );
        }
    }
    entries.into_iter().map(|e| e.value).collect()
}

/// A glob list checked against CFG-7; entries are stored in their normal form and refused
/// entries are left out.
pub(crate) fn globs(
    w: &mut Walker,
    value: &Value,
    name: &str,
    base: GlobBase,
) -> Option<Vec<Spanned<String>>> {
    let entries = w.strings(value, name)?;
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        if entry.value == SPLICE && name.starts_with("cache.") {
            out.push(entry);
            continue;
        }
        match check_task_glob(&entry.value, base) {
            Ok(normal) => out.push(Spanned::new(normal, entry.at)),
            Err(problem) => {
                w.error(entry.at, format!("{name}: `{}` {problem}", entry.value));
            }
        }
    }
    // A set's list is added to a table's: negations alone take from what the table selects.
    let spliced = out.iter().any(|g| g.value == SPLICE) || name.starts_with("input-sets.");
    if !out.is_empty() && !spliced && out.iter().all(|g| g.value.starts_with('!')) {
        let at = w.value_at(value);
        w.error(
            at,
            format!("`{name}` selects nothing: every entry is a negation"),
        );
    }
    Some(out)
}

/// Records where each glob of list `key` was written.
fn locate(config: &mut CacheConfig, key: &str, globs: Option<&[Spanned<String>]>) {
    for glob in globs.unwrap_or_default() {
        config
            .locations
            .insert((key.to_string(), glob.value.clone()), glob.at.clone());
    }
}

/// The same for an input set.
pub(crate) fn locate_set(
    set: &mut vx_core::config::InputSet,
    key: &str,
    globs: Option<&[Spanned<String>]>,
) {
    for glob in globs.unwrap_or_default() {
        set.locations
            .insert((key.to_string(), glob.value.clone()), glob.at.clone());
    }
}

pub(crate) fn values(globs: Option<Vec<Spanned<String>>>) -> Option<Vec<String>> {
    globs.map(|g| g.into_iter().map(|s| s.value).collect())
}

/// A walked `cache` table: the model, plus what the whole-task checks need.
pub(crate) struct CacheWalk {
    pub(crate) config: CacheConfig,
    pub(crate) upstream: Vec<Spanned<String>>,
    /// `upstream-keys` entries with their locations.
    pub(crate) upstream_keys: Vec<Spanned<String>>,
    /// `input-sets` entries with their locations.
    pub(crate) input_sets: Vec<Spanned<String>>,
    /// The keys the table sets, for laying a project's table over a template's.
    pub(crate) keys: BTreeSet<String>,
}

pub(crate) fn cache(w: &mut Walker, value: &Value, task_path: &str) -> Option<CacheWalk> {
    let Some(table) = value.as_table() else {
        let at = w.value_at(value);
        let d = w.error(at, "`cache` must be a table");
        d.hints.push(match value.as_bool() {
            Some(false) => {
                "tasks without a `cache` table are not cached; remove the `cache` table".into()
            }
            _ => "write `cache = { inputs = [...], outputs = [...] }`".into(),
        });
        return None;
    };
    let mut config = CacheConfig::default();
    let mut inputs = None;
    let mut outputs = None;
    let mut upstream = Vec::new();
    let mut upstream_keys = Vec::new();
    let mut input_sets = Vec::new();
    let mut keys = BTreeSet::new();
    for (key, value) in table {
        keys.insert(key.name.to_string());
        match key.name.as_ref() {
            "input-sets" => {
                input_sets = set_names(w, value, "cache.input-sets", true);
                config.input_sets = input_sets.iter().map(|s| s.value.clone()).collect();
            }
            "inputs" => {
                inputs = globs(w, value, "cache.inputs", GlobBase::Project);
                locate(&mut config, "inputs", inputs.as_deref());
            }
            "outputs" => {
                outputs = globs(w, value, "cache.outputs", GlobBase::Project);
                locate(&mut config, "outputs", outputs.as_deref());
            }
            "dependants-read" => {
                let found = globs(w, value, "cache.dependants-read", GlobBase::Project);
                locate(&mut config, "dependants-read", found.as_deref());
                config.dependants_read = values(found);
            }
            "workspace-inputs" => {
                let found = globs(w, value, "cache.workspace-inputs", GlobBase::Root);
                locate(&mut config, "workspace-inputs", found.as_deref());
                config.workspace_inputs = values(found).unwrap_or_default();
            }
            "workspace-outputs" => {
                let found = globs(w, value, "cache.workspace-outputs", GlobBase::Root);
                locate(&mut config, "workspace-outputs", found.as_deref());
                config.workspace_outputs = values(found).unwrap_or_default();
            }
            "env" => config.env = env_names(w, value, "cache.env", true),
            "runtime" => config.runtime = commands(w, value, "cache.runtime"),
            "workspace-runtime" => {
                config.workspace_runtime = commands(w, value, "cache.workspace-runtime");
            }
            "upstream" => {
                upstream = w.strings(value, "cache.upstream").unwrap_or_default();
                config.upstream = Some(upstream.iter().map(|s| s.value.clone()).collect());
            }
            "upstream-keys" => {
                upstream_keys = w.strings(value, "cache.upstream-keys").unwrap_or_default();
                config.upstream_keys = upstream_keys.iter().map(|s| s.value.clone()).collect();
            }
            "portable" => config.portable = w.bool(value, "cache.portable"),
            _ => w.unknown_key(key, &join(task_path, "cache"), &CACHE_KEYS, None),
        }
    }
    if let (Some(inputs), Some(outputs)) = (&inputs, &outputs) {
        check_overlap(w, inputs, outputs);
    }
    config.inputs = values(inputs);
    config.outputs = values(outputs);
    Some(CacheWalk {
        config,
        upstream,
        upstream_keys,
        input_sets,
        keys,
    })
}

/// A list of input set names (`cache.input-sets`, a set's own `input-sets`): each a name
/// `[workspace.input-sets]` can hold (checked against the sets once all are read). A cache
/// table's list (`dependencies`) may also name a set `^name`: that set in every project the
/// task's project depends on.
pub(crate) fn set_names(
    w: &mut Walker,
    value: &Value,
    name: &str,
    dependencies: bool,
) -> Vec<Spanned<String>> {
    let entries = w.strings(value, name).unwrap_or_default();
    for entry in &entries {
        let (set, upstream) = set_reference(&entry.value);
        if upstream && !dependencies {
            let d = w.error(
                entry.at.clone(),
                format!(
                    "{name}: `{}` names a set in the dependency projects, which only a task's \
                     `cache.input-sets` can do",
                    entry.value
                ),
            );
            d.hints
                .push("write `^name` in the `cache.input-sets` of the tasks instead".into());
        } else if entry.value != SPLICE && !is_set_name(set) {
            w.error(
                entry.at.clone(),
                format!(
                    "{name}: `{}` is not an input set name (letters, digits, `-` and `_`, \
                     after a `^` for the dependency projects' set)",
                    entry.value
                ),
            );
        }
    }
    entries
}

/// `cache.input-sets` names a set `[workspace.input-sets]` does not have.
pub(crate) fn unknown_set(
    entry: &Spanned<String>,
    sets: &BTreeMap<String, InputSet>,
) -> Diagnostic {
    let (name, upstream) = set_reference(&entry.value);
    let mut d = Diagnostic::at(
        entry.at.clone(),
        format!("cache.input-sets: no input set is named `{name}` in [workspace.input-sets]"),
    );
    if let Some(best) = vx_core::suggest::did_you_mean(name, sets.keys().map(String::as_str)) {
        let caret = if upstream { "^" } else { "" };
        d = d.hint(format!("did you mean `{caret}{best}`?"));
    }
    d
}

/// An `input-sets` entry as (set name, whether it names the set in the dependency projects).
pub(crate) fn set_reference(entry: &str) -> (&str, bool) {
    match entry.strip_prefix('^') {
        Some(name) => (name, true),
        None => (entry, false),
    }
}

/// An input set's name: letters, digits, `-` and `_`.
pub(crate) fn is_set_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// CFG-9: outputs must not cover the project's own manifests, and a literal input must not be
/// taken back whole by the outputs.
fn check_overlap(w: &mut Walker, inputs: &[Spanned<String>], outputs: &[Spanned<String>]) {
    let all_outputs = GlobList::new(outputs.iter().map(|g| g.value.as_str()));
    for output in outputs.iter().filter(|g| !g.value.starts_with('!')) {
        let this = GlobList::new([output.value.as_str()]);
        let covered = ["vx.toml", "package.json"]
            .into_iter()
            .find(|file| this.is_match(file) && all_outputs.is_match(file));
        if let Some(file) = covered {
            w.error(
                output.at.clone(),
                format!(
                    "cache.outputs: `{}` covers the project's own `{file}`",
                    output.value
                ),
            );
        }
    }
    for input in inputs {
        if is_literal(&input.value) && all_outputs.is_match(&input.value) {
            w.error(
                input.at.clone(),
                format!("cache.inputs: `{}` is also an output", input.value),
            );
        }
    }
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

pub(crate) fn commands(w: &mut Walker, value: &Value, name: &str) -> Vec<String> {
    let Some(items) = value.as_array() else {
        w.strings(value, name);
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| command(w, item, name))
        .collect()
}

pub(crate) fn sandbox(w: &mut Walker, value: &Value, task_path: &str) -> Option<SandboxConfig> {
    let table = w.table(value, "sandbox")?;
    let mut sandbox = SandboxConfig::default();
    for (key, value) in table {
        let name = format!("sandbox.{}", key.name);
        match key.name.as_ref() {
            "read" => sandbox.read = grants(w, value, &name),
            "write" => sandbox.write = grants(w, value, &name),
            "network" => {
                let hosts = w.strings(value, &name).unwrap_or_default();
                for host in &hosts {
                    if let Some(problem) = host_pattern_problem(&host.value) {
                        w.error(
                            host.at.clone(),
                            format!("{name}: `{}` {problem}", host.value),
                        );
                    }
                }
                sandbox.network = hosts.into_iter().map(|h| h.value).collect();
            }
            _ => w.unknown_key(key, &join(task_path, "sandbox"), &SANDBOX_KEYS, None),
        }
    }
    Some(sandbox)
}

/// SBX-6: a network entry is a host (`example.com`, `localhost`) or a subdomain pattern
/// (`*.example.com`), with an optional `:port`; why `text` is not one.
pub(crate) fn host_pattern_problem(text: &str) -> Option<&'static str> {
    if text.contains("://") {
        return Some("is not a host pattern: write the host without a scheme (`example.com`)");
    }
    if text.contains('/') {
        return Some("is not a host pattern: write the host without a path");
    }
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (text, None),
    };
    if let Some(port) = port {
        if !port.parse::<u16>().is_ok_and(|p| p > 0) {
            return Some("has an invalid port (1 to 65535)");
        }
    }
    let name = host.strip_prefix("*.").unwrap_or(host);
    if host == "*" {
        return Some("would allow every host; list the hosts");
    }
    let valid_label = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if name.is_empty() || !name.split('.').all(valid_label) {
        return Some("is not a host pattern (`example.com`, `*.example.com`, `localhost:8080`)");
    }
    if host.starts_with("*.") && !name.contains('.') {
        return Some("would allow a whole top-level domain; name the domain (`*.example.com`)");
    }
    None
}

/// Sandbox grants are paths, not globs (SBX-3).
fn grants(w: &mut Walker, value: &Value, name: &str) -> Vec<String> {
    let entries = w.strings(value, name).unwrap_or_default();
    for entry in &entries {
        let problem = if entry.value.is_empty() {
            "is empty; write `.` for the project directory"
        } else if entry.value.contains(['*', '?']) {
            "is not allowed: sandbox grants are paths, not globs; grant the directory"
        } else if entry.value.contains('\0') {
            "contains a NUL character"
        } else {
            continue;
        };
        w.error(
            entry.at.clone(),
            format!("{name}: `{}` {problem}", entry.value),
        );
    }
    entries.into_iter().map(|e| e.value).collect()
}

/// `persistent = true`, `false` (not persistent) or `{ ready-when = "<regex>" }`; records where
/// `ready-when` was written.
pub(crate) fn persistent(
    w: &mut Walker,
    value: &Value,
    task_path: &str,
    ready_when_at: &mut Option<Location>,
) -> Option<Persistent> {
    match value.as_ref() {
        ValueInner::Boolean(true) => Some(Persistent::Plain(true)),
        ValueInner::Boolean(false) => None,
        ValueInner::Table(table) => {
            let mut pattern = None;
            for (key, value) in table {
                if key.name != "ready-when" {
                    w.unknown_key(key, &join(task_path, "persistent"), &PERSISTENT_KEYS, None);
                    continue;
                }
                let at = w.key_at(key);
                *ready_when_at = Some(at.clone());
                pattern = w.string(value, "persistent.ready-when");
                if let Some(problem) = pattern.as_deref().and_then(regex_problem) {
                    let value_at = w.value_at(value);
                    w.error(
                        value_at,
                        format!(
                            "persistent.ready-when is not a valid regular expression: {problem}"
                        ),
                    );
                }
                w.milestone("task.persistent.ready-when", at);
            }
            if ready_when_at.is_none() {
                let at = w.value_at(value);
                w.error(at, "`persistent` table needs `ready-when`")
                    .hints
                    .push("write `persistent = true` for a task with no readiness pattern".into());
            }
            Some(match pattern {
                Some(ready_when) => Persistent::Ready(ReadyWhen { ready_when }),
                None => Persistent::Plain(true),
            })
        }
        _ => {
            let at = w.value_at(value);
            w.error(
                at,
                "`persistent` must be `true` or `{ ready-when = \"<regex>\" }`",
            );
            None
        }
    }
}

/// The regex crate's error without its multi-line source excerpt (the location already points
/// at the pattern).
fn regex_problem(pattern: &str) -> Option<String> {
    let error = regex::Regex::new(pattern).err()?.to_string();
    let last = error.lines().last().unwrap_or_default();
    Some(last.strip_prefix("error: ").unwrap_or(last).to_string())
}

pub(crate) fn remote(w: &mut Walker, value: &Value, task_path: &str) -> Option<RemoteTask> {
    match value.as_ref() {
        ValueInner::Boolean(true) => Some(RemoteTask::Plain(true)),
        ValueInner::Boolean(false) => None,
        ValueInner::Table(table) => {
            let mut remote = RemoteTaskConfig::default();
            for (key, value) in table {
                match key.name.as_ref() {
                    "platform" => {
                        for (_, name, text) in
                            w.string_table(value, "remote.platform").unwrap_or_default()
                        {
                            remote.platform.insert(name, text.value);
                        }
                    }
                    "extra-inputs" => {
                        remote.extra_inputs =
                            values(globs(w, value, "remote.extra-inputs", GlobBase::Root))
                                .unwrap_or_default();
                    }
                    _ => w.unknown_key(key, &join(task_path, "remote"), &REMOTE_KEYS, None),
                }
            }
            Some(RemoteTask::Detailed(remote))
        }
        _ => {
            let at = w.value_at(value);
            w.error(
                at,
                "`remote` must be `true` or a table `{ platform?, extra-inputs? }`",
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::host_pattern_problem;

    #[test]
    fn network_entries_are_host_patterns() {
        for good in [
            "example.com",
            "*.example.com",
            "registry.npmjs.org:443",
            "localhost",
            "localhost:8080",
            "10-0-0-1.internal",
        ] {
            assert_eq!(host_pattern_problem(good), None, "{good}");
        }
        for bad in [
            "https://example.com",
            "example.com/path",
            "*",
            "*.com",
            "example.com:0",
            "example.com:99999",
            "exa mple.com",
            "",
            "-bad.com",
            "*.*.com",
        ] {
            assert!(host_pattern_problem(bad).is_some(), "{bad}");
        }
    }
}
