//! Workspace task templates (CFG-13): laying `[workspace.tasks.<name>]` under a project's
//! tasks, and checking every task as it finally is (CFG-9).
//!
//! Start at [`resolve_tasks`], which turns one project's declared tasks into its resolved
//! tasks:
//!
//! - a template applies to every task the project declares under its name (unless the task
//!   says `extends = false`) and, outside the root project, to every `package.json` script of
//!   its name;
//! - the project's keys replace the template's key by key, whole (`cache`, `env` and `sandbox`
//!   included); the key locations follow, so `vx show` points at the template's line for a
//!   key the template gave;
//! - with no `command` on either side, the script's text is the command (located at the
//!   script in `package.json`);
//! - a template's `cache` without `inputs` gets them spelled out: `**` less every declared
//!   output of the project's tasks, so the default never reaches another task's outputs
//!   (GRAPH-9) and the key derivation sees them written (KEY-5);
//! - every task is then checked (`task_config::check_task`); a problem of a template-given
//!   task names the template's location and the project it was applied to. Problems of the
//!   template alone were reported once when it was walked and are not repeated per project.

use std::collections::{BTreeMap, BTreeSet};

use vx_core::config::{CacheConfig, InputSet, TaskConfig};
use vx_core::{Diagnostic, Location, Spanned, ROOT_PROJECT};

use crate::task_config::{check_task, TaskFacts};
use crate::task_tables::{set_reference, unknown_set, SPLICE};
use crate::toml_config::LoadedConfig;

/// The templates of `[workspace.tasks]`.
#[derive(Clone, Copy)]
pub(crate) struct Templates<'a> {
    pub(crate) tasks: &'a BTreeMap<String, TaskConfig>,
    pub(crate) facts: &'a BTreeMap<String, TaskFacts>,
    /// `[workspace.input-sets]`.
    pub(crate) input_sets: &'a BTreeMap<String, InputSet>,
}

/// One project's declared tasks and what resolving them needs.
pub(crate) struct ProjectTasks<'a> {
    /// The project's name, for messages.
    pub(crate) name: &'a str,
    /// Root-relative directory ("" for the root project).
    pub(crate) dir: &'a str,
    /// The root project gets templates only through its own `[tasks.<name>]`; its scripts
    /// usually drive the whole workspace.
    pub(crate) is_root: bool,
    pub(crate) tasks: BTreeMap<String, Box<TaskConfig>>,
    pub(crate) facts: &'a BTreeMap<String, TaskFacts>,
    /// `package.json` `scripts`.
    pub(crate) scripts: Option<&'a BTreeMap<String, Spanned<String>>>,
}

/// A task being resolved.
struct Resolving<'a> {
    task: TaskConfig,
    facts: TaskFacts,
    /// The template laid under it, with its facts.
    template: Option<(&'a TaskConfig, &'a TaskFacts)>,
    /// A template's `cache` table applies to it (alone or under the project's), so its
    /// `inputs` may be left out.
    cache_from_template: bool,
}

/// The project's resolved tasks, by name. Problems are appended to `errors`.
pub(crate) fn resolve_tasks(
    project: ProjectTasks<'_>,
    templates: Templates<'_>,
    errors: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Box<TaskConfig>> {
    let no_facts = TaskFacts::default();
    let scripts = project.scripts.filter(|_| !project.is_root);
    let mut names: BTreeSet<&str> = project.tasks.keys().map(String::as_str).collect();
    if let Some(scripts) = scripts {
        names.extend(
            scripts
                .keys()
                .map(String::as_str)
                .filter(|name| templates.tasks.contains_key(*name)),
        );
    }

    let mut resolving: BTreeMap<String, Resolving<'_>> = BTreeMap::new();
    for name in names {
        let own = project.tasks.get(name).map(|task| &**task);
        // `extends = false` and nothing else: the project has no task of this name, though a
        // template would give it one from its script.
        if own.is_some_and(opts_out) {
            continue;
        }
        let own_facts = project.facts.get(name).unwrap_or(&no_facts);
        let template = templates
            .tasks
            .get(name)
            .filter(|_| own.is_none_or(|t| t.extends != Some(false)))
            .map(|t| (t, templates.facts.get(name).unwrap_or(&no_facts)));
        let entry = match (template, own) {
            (None, Some(own)) => Resolving {
                task: own.clone(),
                facts: own_facts.clone(),
                template: None,
                cache_from_template: false,
            },
            (Some((template, template_facts)), own) => {
                let mut task = overlay(template, own, own_facts);
                let facts = overlay_facts(template, template_facts, own, own_facts);
                let cache_from_template = template.cache.is_some();
                if !task.key_locations.contains_key("command") {
                    if let Some(script) = scripts.and_then(|s| s.get(name)) {
                        script_as_command(&mut task, script, name, &project, template, errors);
                    }
                }
                Resolving {
                    task,
                    facts,
                    template: Some((template, template_facts)),
                    cache_from_template,
                }
            }
            (None, None) => continue,
        };
        resolving.insert(name.to_string(), entry);
    }

    // Input sets first: the default inputs apply only where neither the task, its template
    // nor a set gives any.
    for r in resolving.values_mut() {
        if let Some(cache) = r.task.cache.as_mut() {
            let own: Vec<&Spanned<String>> = r
                .facts
                .input_sets
                .iter()
                .filter(|s| !is_template_entry(s, r.template))
                .collect();
            for unknown in expand_input_sets(cache, templates.input_sets) {
                if let Some(entry) = own.iter().find(|s| s.value == unknown) {
                    errors.push(unknown_set(entry, templates.input_sets));
                }
            }
        }
    }
    let default_inputs = default_inputs(resolving.values().map(|r| &r.task), project.dir);
    for r in resolving.values_mut() {
        if let Some(cache) = r.task.cache.as_mut() {
            if r.cache_from_template && cache.inputs.is_none() {
                cache.inputs = Some(default_inputs.clone());
                if let Some(at) = r.task.key_locations.get("cache") {
                    for glob in &default_inputs {
                        cache
                            .locations
                            .insert(("inputs".to_string(), glob.clone()), at.clone());
                    }
                }
            }
        }
    }

    let mut resolved = BTreeMap::new();
    for (name, r) in resolving {
        let mut problems = check_task(&name, &r.task, &r.facts, false);
        if let Some((template, template_facts)) = r.template {
            let reported = check_task(&name, template, template_facts, true);
            problems.retain(|d| !reported.contains(d));
            for d in &mut problems {
                d.message = applied(&d.message, &template.at, project.name);
            }
        }
        errors.extend(problems);
        resolved.insert(name, Box::new(r.task));
    }
    resolved
}

/// Resolves the tasks of one `vx.toml` read on its own ([`crate::parse_config`]): the file's
/// own templates apply to its own tasks, as at the root of a workspace; a project file alone
/// has none, and no `package.json` scripts.
pub(crate) fn resolve_alone(loaded: &mut LoadedConfig, rel_path: &str, is_root: bool) {
    let templates = loaded
        .config
        .workspace
        .as_ref()
        .map(|ws| ws.tasks.clone())
        .unwrap_or_default();
    let dir = rel_path.rsplit_once('/').map_or("", |(dir, _)| dir);
    let project = ProjectTasks {
        name: if is_root { ROOT_PROJECT } else { dir },
        dir,
        is_root,
        tasks: std::mem::take(&mut loaded.config.project.tasks),
        facts: &loaded.task_facts,
        scripts: None,
    };
    let input_sets = loaded
        .config
        .workspace
        .as_ref()
        .map(|ws| ws.input_sets.clone())
        .unwrap_or_default();
    let templates = Templates {
        tasks: &templates,
        facts: &loaded.template_facts,
        input_sets: &input_sets,
    };
    loaded.config.project.tasks = resolve_tasks(project, templates, &mut loaded.errors);
}

/// Whether an `input-sets` entry was written in the template (reported there, once).
fn is_template_entry(entry: &Spanned<String>, template: Option<(&TaskConfig, &TaskFacts)>) -> bool {
    template.is_some_and(|(_, facts)| facts.input_sets.iter().any(|t| t.at == entry.at))
}

/// Adds the entries of the input sets a cache table names (and of the sets they include) to
/// its lists; returns the entries that name no set. A `^name` entry adds the set's `inputs`
/// to `dependency-inputs` (matched in every dependency project) and the rest of it, which
/// does not depend on a project's directory, to the table's own lists.
pub(crate) fn expand_input_sets(
    cache: &mut CacheConfig,
    sets: &BTreeMap<String, InputSet>,
) -> Vec<String> {
    let mut unknown = Vec::new();
    let mut order: Vec<(&InputSet, bool)> = Vec::new();
    let mut seen: BTreeSet<(&str, bool)> = BTreeSet::new();
    let mut stack: Vec<(&str, bool, &str)> = cache
        .input_sets
        .iter()
        .rev()
        .map(|entry| {
            let (name, upstream) = set_reference(entry);
            (name, upstream, entry.as_str())
        })
        .collect();
    while let Some((name, upstream, entry)) = stack.pop() {
        if !seen.insert((name, upstream)) {
            continue;
        }
        match sets.get_key_value(name) {
            Some((_, set)) => {
                order.push((set, upstream));
                stack.extend(
                    set.input_sets
                        .iter()
                        .rev()
                        .map(|nested| (nested.as_str(), upstream, entry)),
                );
            }
            None => unknown.push(entry.to_string()),
        }
    }
    for (set, upstream) in order {
        for ((key, glob), at) in &set.locations {
            let key = match key.as_str() {
                "inputs" if upstream => "dependency-inputs".to_string(),
                _ => key.clone(),
            };
            cache
                .locations
                .entry((key, glob.clone()))
                .or_insert_with(|| at.clone());
        }
        if upstream {
            cache.dependency_inputs.extend(set.inputs.iter().cloned());
        } else if !set.inputs.is_empty() {
            cache
                .inputs
                .get_or_insert_with(Vec::new)
                .extend(set.inputs.iter().cloned());
        }
        cache
            .workspace_inputs
            .extend(set.workspace_inputs.iter().cloned());
        cache.env.extend(set.env.iter().cloned());
        cache.runtime.extend(set.runtime.iter().cloned());
        cache
            .workspace_runtime
            .extend(set.workspace_runtime.iter().cloned());
    }
    for list in [
        cache.inputs.as_mut(),
        Some(&mut cache.workspace_inputs),
        Some(&mut cache.dependency_inputs),
        Some(&mut cache.env),
        Some(&mut cache.runtime),
        Some(&mut cache.workspace_runtime),
    ]
    .into_iter()
    .flatten()
    {
        let mut kept = BTreeSet::new();
        list.retain(|entry| kept.insert(entry.clone()));
    }
    unknown
}

/// The project's table laid over the template: each key the project sets replaces the
/// template's whole, except `cache`, whose keys are laid over the template's one by one (a
/// list holding `...` takes the template's entries there); the rest come from the template,
/// with their locations.
fn overlay(template: &TaskConfig, own: Option<&TaskConfig>, own_facts: &TaskFacts) -> TaskConfig {
    let Some(own) = own else {
        return template.clone();
    };
    let mut task = own.clone();
    if let (Some(template_cache), Some(own_cache)) = (&template.cache, &own.cache) {
        task.cache = Some(Box::new(merge_cache(
            template_cache,
            own_cache,
            &own_facts.cache_keys,
        )));
    }
    for (key, at) in &template.key_locations {
        if own.key_locations.contains_key(key) {
            continue;
        }
        match key.as_str() {
            "description" => task.description = template.description.clone(),
            "command" => task.command = template.command.clone(),
            "depends-on" => task.depends_on = template.depends_on.clone(),
            "env" => task.env = template.env.clone(),
            "timeout" => task.timeout = template.timeout,
            "retries" => task.retries = template.retries,
            "persistent" => task.persistent = template.persistent.clone(),
            "interactive" => task.interactive = template.interactive,
            "sandbox" => task.sandbox = template.sandbox.clone(),
            "cache" => task.cache = template.cache.clone(),
            "remote" => task.remote = template.remote.clone(),
            _ => continue,
        }
        task.key_locations.insert(key.clone(), at.clone());
    }
    task
}

/// A project's `cache` keys over the template's: a key the project sets replaces the
/// template's, with `...` in a list standing for the template's entries.
fn merge_cache(template: &CacheConfig, own: &CacheConfig, keys: &BTreeSet<String>) -> CacheConfig {
    let list = |key: &str, template: &[String], own: &[String]| -> Vec<String> {
        if keys.contains(key) {
            splice(own, template)
        } else {
            template.to_vec()
        }
    };
    let optional = |key: &str, template: &Option<Vec<String>>, own: &Option<Vec<String>>| {
        if keys.contains(key) {
            own.as_ref()
                .map(|own| splice(own, template.as_deref().unwrap_or_default()))
        } else {
            template.clone()
        }
    };
    CacheConfig {
        input_sets: list("input-sets", &template.input_sets, &own.input_sets),
        inputs: optional("inputs", &template.inputs, &own.inputs),
        workspace_inputs: list(
            "workspace-inputs",
            &template.workspace_inputs,
            &own.workspace_inputs,
        ),
        // Filled when the input sets are expanded, after this.
        dependency_inputs: Vec::new(),
        env: list("env", &template.env, &own.env),
        runtime: list("runtime", &template.runtime, &own.runtime),
        workspace_runtime: list(
            "workspace-runtime",
            &template.workspace_runtime,
            &own.workspace_runtime,
        ),
        upstream: optional("upstream", &template.upstream, &own.upstream),
        upstream_keys: list("upstream-keys", &template.upstream_keys, &own.upstream_keys),
        outputs: optional("outputs", &template.outputs, &own.outputs),
        dependants_read: optional(
            "dependants-read",
            &template.dependants_read,
            &own.dependants_read,
        ),
        workspace_outputs: list(
            "workspace-outputs",
            &template.workspace_outputs,
            &own.workspace_outputs,
        ),
        portable: if keys.contains("portable") {
            own.portable
        } else {
            template.portable
        },
        locations: template
            .locations
            .iter()
            .chain(&own.locations)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }
}

/// `own` with each `...` replaced by `template`'s entries.
fn splice(own: &[String], template: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for entry in own {
        if entry == SPLICE {
            out.extend(template.iter().cloned());
        } else {
            out.push(entry.clone());
        }
    }
    out
}

/// The facts that go with the keys [`overlay`] took from each side.
fn overlay_facts(
    template: &TaskConfig,
    template_facts: &TaskFacts,
    own: Option<&TaskConfig>,
    own_facts: &TaskFacts,
) -> TaskFacts {
    let Some(own) = own else {
        return template_facts.clone();
    };
    let from_own = |key: &str| {
        own.key_locations.contains_key(key) || !template.key_locations.contains_key(key)
    };
    // Within `cache`, a list comes from the project when it sets that key.
    let from_own_cache = |key: &str| {
        from_own("cache") && (template.cache.is_none() || own_facts.cache_keys.contains(key))
    };
    let input_sets = if from_own_cache("input-sets") {
        let spliced = own_facts.input_sets.iter().any(|s| s.value == SPLICE);
        own_facts
            .input_sets
            .iter()
            .filter(|s| s.value != SPLICE)
            .chain(template_facts.input_sets.iter().filter(|_| spliced))
            .cloned()
            .collect()
    } else {
        template_facts.input_sets.clone()
    };
    TaskFacts {
        ready_when: if from_own("persistent") {
            own_facts.ready_when.clone()
        } else {
            template_facts.ready_when.clone()
        },
        upstream: if from_own_cache("upstream") {
            own_facts.upstream.clone()
        } else {
            template_facts.upstream.clone()
        },
        upstream_keys: if from_own_cache("upstream-keys") {
            own_facts.upstream_keys.clone()
        } else {
            template_facts.upstream_keys.clone()
        },
        input_sets,
        cache_keys: own_facts
            .cache_keys
            .union(&template_facts.cache_keys)
            .cloned()
            .collect(),
        unknown_key: own_facts.unknown_key || template_facts.unknown_key,
    }
}

/// A project's table that only says `extends = false`.
fn opts_out(task: &TaskConfig) -> bool {
    task.extends == Some(false)
        && task.command.is_none()
        && task.depends_on.is_empty()
        && task.key_locations.keys().all(|key| key == "extends")
}

/// With no `command` on either side, the script's text is the command (CFG-13), run like any
/// command; an empty one cannot be.
fn script_as_command(
    task: &mut TaskConfig,
    script: &Spanned<String>,
    name: &str,
    project: &ProjectTasks<'_>,
    template: &TaskConfig,
    errors: &mut Vec<Diagnostic>,
) {
    let problem = if script.value.trim().is_empty() {
        "is empty"
    } else if script.value.contains('\0') {
        "contains a NUL character"
    } else {
        ""
    };
    if problem.is_empty() {
        task.command = Some(script.value.clone());
    } else {
        let message = format!(
            "script `{name}` {problem}, so it cannot be the command of `{}#{name}`",
            project.name
        );
        errors.push(Diagnostic::at(
            script.at.clone(),
            applied(&message, &template.at, project.name),
        ));
    }
    // Located even when refused: the task has its command, only a bad one, and calling it a
    // group as well would only add noise.
    task.key_locations
        .insert("command".to_string(), script.at.clone());
}

/// `["**"]` less every declared output of the project's tasks (CFG-13): their `outputs`, and
/// their `workspace-outputs` that lie in the project, made project-relative. Negations of
/// outputs are left out (they take nothing back from the inputs).
fn default_inputs<'a>(tasks: impl Iterator<Item = &'a TaskConfig>, dir: &str) -> Vec<String> {
    let mut outputs: BTreeSet<String> = BTreeSet::new();
    for cache in tasks.filter_map(|t| t.cache.as_ref()) {
        let own = cache.outputs.iter().flatten().cloned();
        let workspace = cache
            .workspace_outputs
            .iter()
            .filter_map(|glob| inside(glob, dir));
        outputs.extend(own.chain(workspace).filter(|g| !g.starts_with('!')));
    }
    std::iter::once("**".to_string())
        .chain(outputs.into_iter().map(|glob| format!("!{glob}")))
        .collect()
}

/// A root-relative glob made relative to `dir`, when it lies in it.
fn inside(glob: &str, dir: &str) -> Option<String> {
    if dir.is_empty() {
        return Some(glob.to_string());
    }
    let rest = glob.strip_prefix(dir)?.strip_prefix('/')?;
    (!rest.is_empty()).then(|| rest.to_string())
}

/// A message about a template-given task, naming the template and the project (CFG-13).
fn applied(message: &str, template_at: &Location, project: &str) -> String {
    format!("{message} (from the template at {template_at}, applied to `{project}`)")
}

#[cfg(test)]
mod tests;
