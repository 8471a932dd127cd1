//! Reading `nx.json` and each project's Nx targets (`project.json`, the `nx` field of
//! `package.json`) for `vx init` (issue 20), as templates, input sets and tables.
//!
//! Start at [`read`], then [`Nx::templates`] and [`Nx::project_tables`]. Nx's rules, as
//! carried over:
//!
//! - `namedInputs` become `[workspace.input-sets]`; a target's `inputs` name them in
//!   `cache.input-sets`, with `{projectRoot}/x` as `inputs` and `{workspaceRoot}/x` as
//!   `workspace-inputs`, `{env}` and `{runtime}` folded into the key;
//! - `targetDefaults.<name>` becomes the template `[workspace.tasks.<name>]`: it applies, as in
//!   Nx, to every project that has the target (a script, or a `project.json` target);
//! - a project's own target configuration is laid over the default key by key, as Nx does:
//!   the project's table sets only those keys (its `cache` extends the template's);
//! - a target is cached when `cache: true` (or listed in the old `cacheableOperations`), never
//!   when continuous or long-running (`serve`, `dev`, `start`, `*-watch`); `continuous`
//!   becomes `persistent`;
//! - `nx:run-commands` targets (and the `command` shorthand) run from the workspace root, as
//!   Nx runs them; `nx:run-script` runs the script; any other executor (and parallel
//!   `commands`) runs through `nx run <project>:<target>`, its dependencies left to vx.
//!
//! What is not carried over is listed with its location and the reason ([`NotCarried`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use vx_core::{Diagnostic, Location};
use vx_workspace::{JsonValue, JsonValueKind};

use super::scripts::TodoReason;
use super::toml::{Cache, InputSetTable, Table};
use super::turbo::{read_file, NotCarried};

/// One project's Nx configuration.
#[derive(Debug, Clone, Default)]
pub struct NxProject {
    /// `project.json` `name`.
    pub name: Option<(String, Location)>,
    /// Targets by name, from `project.json` then the `nx` field of `package.json`.
    pub targets: BTreeMap<String, JsonValue>,
    pub tags: Vec<String>,
}

/// `nx.json` and every member's targets.
#[derive(Debug, Clone, Default)]
pub struct Nx {
    /// `namedInputs`, with where each was written.
    pub named: BTreeMap<String, JsonValue>,
    /// `targetDefaults` by target name (executor keys are listed as not carried).
    pub defaults: BTreeMap<String, JsonValue>,
    /// `tasksRunnerOptions.default.options.cacheableOperations` (Nx 16 and older).
    pub cacheable: BTreeSet<String>,
    pub affected_base: Option<String>,
    pub parallel: Option<u32>,
    /// Member directory → its Nx configuration.
    pub projects: BTreeMap<String, NxProject>,
    /// Every project name, to read `project:target` in `dependsOn` as Nx does (a first
    /// segment that is no project name is part of a target name with colons).
    pub project_names: BTreeSet<String>,
    /// The root package's targets when the root is an Nx project (its `package.json` has an
    /// `nx` field): `includedScripts`, else every script (`None` for all).
    pub root_targets: Option<Option<BTreeSet<String>>>,
    pub not_carried: Vec<NotCarried>,
}

/// Reads `nx.json` at `root` and each member's `project.json` and `package.json` `nx` field.
/// `None` when there is no `nx.json`.
pub fn read(root: &Path, members: &[String], errors: &mut Vec<Diagnostic>) -> Option<Nx> {
    let json = read_file(root, "nx.json", errors)?;
    let mut nx = Nx::default();
    // `targetDefaults` keys that are globs (`*build*`), applied once every target name is known.
    let mut glob_defaults: Vec<(String, JsonValue)> = Vec::new();
    let leave = |what: &str, at: &Location, why: &str| NotCarried {
        what: what.to_string(),
        at: at.clone(),
        why: why.to_string(),
    };
    for (key, value) in json.entries() {
        let at = &key.at;
        match key.value.as_str() {
            "$schema" | "extends" | "npmScope" => {}
            "namedInputs" => {
                for (name, inputs) in value.entries() {
                    nx.named.insert(name.value.clone(), inputs.clone());
                }
            }
            "targetDefaults" => {
                for (name, def) in value.entries() {
                    if name.value.contains(['*', '?', '{', '[']) {
                        glob_defaults.push((name.value.clone(), def.clone()));
                        continue;
                    }
                    if name.value.contains(':') && name.value.contains('/')
                        || name.value.starts_with("nx:")
                    {
                        nx.not_carried.push(leave(
                            &format!("targetDefaults.{}", name.value),
                            &name.at,
                            "defaults by executor: vx runs commands, not Nx executors",
                        ));
                        continue;
                    }
                    nx.defaults.insert(name.value.clone(), def.clone());
                }
            }
            "defaultBase" => nx.affected_base = value.as_str().map(str::to_string),
            "affected" => {
                nx.affected_base = value
                    .get("defaultBase")
                    .and_then(JsonValue::as_str)
                    .map(str::to_string)
                    .or(nx.affected_base.take());
            }
            "parallel" => nx.parallel = number(value),
            "tasksRunnerOptions" => {
                let options = value.get("default").and_then(|d| d.get("options"));
                for op in options
                    .and_then(|o| o.get("cacheableOperations"))
                    .and_then(JsonValue::as_array)
                    .unwrap_or_default()
                {
                    nx.cacheable.extend(op.as_str().map(str::to_string));
                }
                if let Some(parallel) = options.and_then(|o| o.get("parallel")) {
                    nx.parallel = nx.parallel.or(number(parallel));
                }
                let runner = value
                    .get("default")
                    .and_then(|d| d.get("runner"))
                    .and_then(JsonValue::as_str);
                if let Some(runner) = runner.filter(|r| *r != "nx/tasks-runners/default") {
                    nx.not_carried.push(leave(
                        "tasksRunnerOptions.default.runner",
                        at,
                        &format!("the runner `{runner}` (a remote cache is set in `[workspace.remote-cache]`)"),
                    ));
                }
            }
            "plugins" => nx.not_carried.push(leave(
                "plugins",
                at,
                "vx does not run Nx plugins: a target a plugin infers (from vite.config.ts, \
                 jest.config.ts, …) becomes a task only where a script or project.json defines it",
            )),
            "cacheDirectory" => nx.not_carried.push(leave(
                "cacheDirectory",
                at,
                "vx keeps its own store (`[workspace] cache-dir`, default `.vx`)",
            )),
            "nxCloudId" | "nxCloudAccessToken" | "nxCloudUrl" | "neverConnectToCloud" => {
                nx.not_carried.push(leave(
                    &key.value,
                    at,
                    "a remote cache is set in `[workspace.remote-cache]`",
                ))
            }
            other => nx.not_carried.push(leave(
                other,
                at,
                "no vx equivalent (vx reads nx.json only for tasks and their inputs)",
            )),
        }
    }

    if let Some(root_nx) =
        read_file(root, "package.json", &mut Vec::new()).and_then(|j| j.get("nx").cloned())
    {
        let included = root_nx
            .get("includedScripts")
            .and_then(JsonValue::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            });
        nx.root_targets = Some(included);
    }
    for dir in members {
        let mut project = NxProject::default();
        let rel = format!("{dir}/project.json");
        if let Some(json) = read_file(root, &rel, errors) {
            read_project(&json, &rel, &mut project, &mut nx.not_carried);
        }
        let rel = format!("{dir}/package.json");
        let manifest = read_file(root, &rel, &mut Vec::new());
        let name = manifest.as_ref().and_then(|j| j.get("name"));
        if let Some(name) = name.and_then(JsonValue::as_str) {
            nx.project_names.insert(name.to_string());
        }
        if let Some(nx_field) = manifest.and_then(|j| j.get("nx").cloned()) {
            read_project(&nx_field, &rel, &mut project, &mut nx.not_carried);
        }
        if let Some((name, _)) = &project.name {
            nx.project_names.insert(name.clone());
        }
        nx.projects.insert(dir.clone(), project);
    }

    // A glob key applies to each target name it matches that has no key of its own; the
    // longest matching key wins, as in Nx.
    if !glob_defaults.is_empty() {
        let mut names: BTreeSet<String> = nx
            .projects
            .values()
            .flat_map(|p| p.targets.keys().cloned())
            .collect();
        for dir in members {
            let rel = format!("{dir}/package.json");
            if let Some(json) = read_file(root, &rel, &mut Vec::new()) {
                let scripts = json
                    .get("scripts")
                    .map(JsonValue::entries)
                    .unwrap_or_default();
                names.extend(scripts.iter().map(|(k, _)| k.value.clone()));
            }
        }
        for name in names {
            if nx.defaults.contains_key(&name) {
                continue;
            }
            let best = glob_defaults
                .iter()
                .filter(|(key, _)| {
                    globset::Glob::new(key).is_ok_and(|g| g.compile_matcher().is_match(&name))
                })
                .max_by_key(|(key, _)| key.len());
            if let Some((_, def)) = best {
                nx.defaults.insert(name, def.clone());
            }
        }
    }
    Some(nx)
}

fn number(value: &JsonValue) -> Option<u32> {
    match &value.kind {
        JsonValueKind::Number(n) => n.parse().ok().filter(|n| *n >= 1),
        _ => None,
    }
}

fn read_project(json: &JsonValue, rel: &str, project: &mut NxProject, left: &mut Vec<NotCarried>) {
    for (key, value) in json.entries() {
        match key.value.as_str() {
            "targets" => {
                for (name, def) in value.entries() {
                    project
                        .targets
                        .entry(name.value.clone())
                        .or_insert_with(|| def.clone());
                }
            }
            "name" => {
                project.name = value.as_str().map(|n| (n.to_string(), value.at.clone()));
            }
            "tags" => {
                let tags = value.as_array().unwrap_or_default();
                project
                    .tags
                    .extend(tags.iter().filter_map(|t| t.as_str().map(str::to_string)));
            }
            "$schema" | "root" | "sourceRoot" | "projectType" | "includedScripts" => {}
            other => left.push(NotCarried {
                what: format!("{rel}: {other}"),
                at: key.at.clone(),
                why: "no vx equivalent".to_string(),
            }),
        }
    }
}

/// Target names Nx never caches: long-running by name.
fn long_running(name: &str) -> bool {
    matches!(name, "serve" | "dev" | "start")
        || name.ends_with("-watch")
        || name.ends_with(":watch")
}

/// A set name vx takes (letters, digits, `-`, `_`).
fn set_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The cache keys an Nx `inputs` list becomes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Inputs {
    input_sets: Vec<String>,
    inputs: Vec<String>,
    workspace_inputs: Vec<String>,
    env: Vec<String>,
    runtime: Vec<String>,
    /// Inputs Nx hashes that vx cannot fold (each in words): a task with any is left
    /// uncached, never cached over fewer inputs than Nx sees.
    narrower: Vec<String>,
}

/// What a project's task needs to know to become vx keys.
pub struct Place<'a> {
    /// Root-relative directory of the project ("" for the root).
    pub dir: &'a str,
    /// The project's name under Nx (`project.json` `name`, else the package's).
    pub project: &'a str,
    /// For messages: `targetDefaults.build`, `packages/a/project.json: targets.build`.
    pub what: String,
}

/// The command that has Nx run one target, without its dependencies (vx runs those) and
/// without Nx's cache (vx caches it), nor a daemon left behind.
fn through_nx(project: &str, target: &str) -> String {
    format!(
        "NX_DAEMON=false nx run {}:{} --excludeTaskDependencies --skipNxCache",
        shell_word(project),
        shell_word(target)
    )
}

/// A word for `sh -c`: as it is when it is safe, else in single quotes.
fn shell_word(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@/._-:+=".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// `{options.x}` and `{options.x.y}` placeholders of `text` replaced by the string values at
/// those paths of a target's `options`; the others are left.
fn fill_options(text: &str, options: &JsonValue) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("{options.") {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        let path = &rest[start + "{options.".len()..start + len];
        let value = path
            .split('.')
            .try_fold(options, |at, key| at.get(key))
            .and_then(JsonValue::as_str);
        out.push_str(&rest[..start]);
        match value {
            Some(v) => out.push_str(v),
            None => out.push_str(&rest[start..=start + len]),
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    out
}

impl Nx {
    /// Whether the root package's script `name` is an Nx target (so `targetDefaults` apply).
    pub fn is_root_target(&self, name: &str) -> bool {
        match &self.root_targets {
            Some(Some(included)) => included.contains(name),
            Some(None) => true,
            None => false,
        }
    }

    /// Whether Nx caches target `name` with configuration `def`.
    fn cached(&self, name: &str, def: &JsonValue) -> bool {
        if long_running(name) || def.get("continuous").and_then(JsonValue::as_bool) == Some(true) {
            return false;
        }
        match def.get("cache").and_then(JsonValue::as_bool) {
            Some(cache) => cache,
            None => self.cacheable.contains(name),
        }
    }

    /// The input sets of `namedInputs` (and the implicit `default`, when used but not
    /// defined), with what was not carried.
    pub fn input_sets(&self) -> (Vec<InputSetTable>, Vec<NotCarried>) {
        let mut left = Vec::new();
        let mut sets = Vec::new();
        for (name, list) in &self.named {
            let what = format!("namedInputs.{name}");
            let inputs = self.inputs(list, &what, &mut left);
            sets.push(InputSetTable {
                name: set_name(name),
                // `^name` is carried onto each target that uses the set (`target_inputs`).
                input_sets: inputs
                    .input_sets
                    .into_iter()
                    .filter(|s| !s.starts_with('^'))
                    .collect(),
                inputs: inputs.inputs,
                workspace_inputs: inputs.workspace_inputs,
                env: inputs.env,
                runtime: inputs.runtime,
            });
        }
        // `default`, `^default`, or a cached target with no `inputs` (Nx folds `^default`).
        let names_default = |i: &JsonValue| {
            matches!(i.as_str(), Some("default" | "^default"))
                || i.get("input").and_then(JsonValue::as_str) == Some("default")
        };
        let targets = self
            .defaults
            .iter()
            .chain(self.projects.values().flat_map(|p| p.targets.iter()));
        let used_default = sets
            .iter()
            .any(|s| s.input_sets.iter().any(|n| n == "default"))
            || self
                .named
                .values()
                .flat_map(|i| i.as_array().unwrap_or_default())
                .any(names_default)
            || targets.into_iter().any(|(name, own)| {
                let merged = merge(self.defaults.get(name), Some(own));
                match merged.get("inputs") {
                    Some(list) => list
                        .as_array()
                        .unwrap_or_default()
                        .iter()
                        .any(names_default),
                    None => self.cached(name, &merged),
                }
            });
        if used_default && !self.named.contains_key("default") {
            sets.push(InputSetTable {
                name: "default".to_string(),
                inputs: vec!["**".to_string()],
                ..InputSetTable::default()
            });
        }
        sets.sort_by(|a, b| a.name.cmp(&b.name));
        (sets, left)
    }

    /// An Nx `inputs` list as vx cache keys. `^name` (and `{ "input": name, "dependencies":
    /// true }`) becomes the `^name` input set: the set in every dependency project.
    fn inputs(&self, list: &JsonValue, what: &str, left: &mut Vec<NotCarried>) -> Inputs {
        let mut out = Inputs::default();
        let is_set = |name: &str| self.named.contains_key(name) || name == "default";
        for item in list.as_array().unwrap_or_default() {
            let mut leave = |why: &str| {
                left.push(NotCarried {
                    what: format!("{what}: {}", shown(item)),
                    at: item.at.clone(),
                    why: why.to_string(),
                });
            };
            if let Some(text) = item.as_str() {
                if let Some(dep) = text.strip_prefix('^') {
                    if is_set(dep) {
                        out.input_sets.push(format!("^{}", set_name(dep)));
                    } else {
                        let why = "files of the dependency projects by a glob: vx folds them \
                                   as a named set (`^name`); name them in namedInputs";
                        leave(why);
                        out.narrower.push(format!("`{text}`"));
                    }
                } else if is_set(text) {
                    out.input_sets.push(set_name(text));
                } else {
                    match fileset(text) {
                        Ok((true, globs)) => out.workspace_inputs.extend(globs),
                        Ok((false, globs)) => out.inputs.extend(globs),
                        Err(why) => {
                            leave(&why);
                            out.narrower.push(format!("`{text}`"));
                        }
                    }
                }
                continue;
            }
            if let Some(text) = item.get("fileset").and_then(JsonValue::as_str) {
                match fileset(text) {
                    Ok((true, globs)) => out.workspace_inputs.extend(globs),
                    Ok((false, globs)) => out.inputs.extend(globs),
                    Err(why) => {
                        leave(&why);
                        out.narrower.push(format!("the fileset `{text}`"));
                    }
                }
            } else if let Some(var) = item.get("env").and_then(JsonValue::as_str) {
                out.env.push(var.to_string());
            } else if let Some(command) = item.get("runtime").and_then(JsonValue::as_str) {
                out.runtime.push(command.to_string());
            } else if item.get("externalDependencies").is_some() {
                leave(
                    "external dependencies: vx folds each project's resolved dependencies from the lockfile instead",
                );
            } else if item.get("dependentTasksOutputFiles").is_some() {
                leave(
                    "upstream outputs: vx folds the keys of the tasks this one depends on, \
                     which cover what they write",
                );
            } else if let Some(input) = item.get("input").and_then(JsonValue::as_str) {
                let dependencies =
                    item.get("dependencies").and_then(JsonValue::as_bool) == Some(true);
                if item.get("projects").is_some() || !is_set(input) {
                    leave("another project's inputs: vx folds a set of its own project's or of every dependency project's");
                    out.narrower.push(format!("the input {}", shown(item)));
                } else if dependencies {
                    out.input_sets.push(format!("^{}", set_name(input)));
                } else {
                    out.input_sets.push(set_name(input));
                }
            } else {
                leave("an input vx does not know");
                out.narrower.push(format!("the input {}", shown(item)));
            }
        }
        out
    }

    /// A target's `inputs` as vx cache keys: [`Nx::inputs`], with what the named sets it uses
    /// hold that a vx set cannot (`^name` entries, which vx takes only in a task's list, and
    /// inputs vx cannot fold) moved onto the target.
    fn target_inputs(&self, list: &JsonValue, what: &str, left: &mut Vec<NotCarried>) -> Inputs {
        let mut out = self.inputs(list, what, left);
        let mut seen = BTreeSet::new();
        let mut stack: Vec<String> = out
            .input_sets
            .iter()
            .filter(|s| !s.starts_with('^'))
            .cloned()
            .collect();
        while let Some(name) = stack.pop() {
            if !seen.insert(name.clone()) {
                continue;
            }
            let Some((nx_name, list)) = self.named.iter().find(|(n, _)| set_name(n) == name) else {
                continue;
            };
            let nested = self.inputs(list, &format!("namedInputs.{nx_name}"), &mut Vec::new());
            for set in nested.input_sets {
                if set.starts_with('^') {
                    if !out.input_sets.contains(&set) {
                        out.input_sets.push(set);
                    }
                } else {
                    stack.push(set);
                }
            }
            out.narrower.extend(
                nested
                    .narrower
                    .into_iter()
                    .map(|n| format!("{n} (namedInputs.{nx_name})")),
            );
        }
        out
    }

    /// The template of a `targetDefaults` entry.
    pub fn template(&self, name: &str, def: &JsonValue) -> (Table, Vec<NotCarried>) {
        let mut left = Vec::new();
        let what = format!("targetDefaults.{name}");
        let mut table = self.common(name, def, &what, &mut left);
        if self.cached(name, def) {
            let mut cache = Cache::default();
            let narrower = match def.get("inputs") {
                Some(list) => {
                    let inputs = self.target_inputs(list, &what, &mut left);
                    let narrower = inputs.narrower.clone();
                    apply_inputs(&mut cache, inputs);
                    narrower
                }
                // Nx's inputs when none are given: the project's files (the template's
                // default inputs) and `^default`.
                None => {
                    cache.input_sets = vec![DEPENDENCY_DEFAULT.to_string()];
                    Vec::new()
                }
            };
            let (outputs, workspace) = self.outputs(name, def, None, &what, &mut left);
            cache.outputs = outputs;
            cache.workspace_outputs = workspace;
            table.pass_through = self.env_of(&cache);
            match uncached_todo(&narrower) {
                Some(todo) => table.todos.push(todo),
                None => table.cache = Some(cache),
            }
        }
        (table, left)
    }

    /// Whether Nx caches target `name` with configuration `def` and vx can fold every input
    /// Nx hashes for it.
    fn caches(&self, name: &str, def: &JsonValue) -> bool {
        self.cached(name, def) && self.narrower(def).is_empty()
    }

    /// The inputs of `def` vx cannot fold, in words.
    fn narrower(&self, def: &JsonValue) -> Vec<String> {
        def.get("inputs")
            .map(|list| self.target_inputs(list, "", &mut Vec::new()).narrower)
            .unwrap_or_default()
    }

    /// The variables a cache table folds, its sets' included: Nx gives a task the whole
    /// environment, vx only what it passes, so these are passed too.
    fn env_of(&self, cache: &Cache) -> Vec<String> {
        let mut env = cache.env.clone();
        let mut stack: Vec<String> = cache.input_sets.clone();
        let mut seen = BTreeSet::new();
        while let Some(name) = stack.pop() {
            if !seen.insert(name.clone()) {
                continue;
            }
            let Some(list) = self
                .named
                .iter()
                .find(|(n, _)| set_name(n) == name.trim_start_matches('^'))
                .map(|(_, l)| l)
            else {
                continue;
            };
            let inputs = self.inputs(list, "", &mut Vec::new());
            env.extend(inputs.env);
            stack.extend(inputs.input_sets);
        }
        env.sort();
        env.dedup();
        env
    }

    /// A project's table for target `name`: its own configuration `own` over the default
    /// (laid key by key, as Nx does), and the command from `script` when the target runs one.
    #[allow(clippy::too_many_arguments)]
    pub fn project_table(
        &self,
        name: &str,
        own: Option<&JsonValue>,
        script: Option<&str>,
        place: &Place<'_>,
        outputs_elsewhere: &BTreeSet<String>,
    ) -> (Option<Table>, Vec<NotCarried>) {
        let mut left = Vec::new();
        let default = self.defaults.get(name);
        let nothing = JsonValue {
            at: Location::default(),
            kind: JsonValueKind::Object(Vec::new()),
        };
        let own = own.unwrap_or(&nothing);
        let merged = merge(default, Some(own));
        let what = &place.what;
        let command = self.command(name, own, script, place);
        let mut table = Table {
            name: name.to_string(),
            command,
            ..Table::default()
        };
        let template_cached = default.is_some_and(|d| self.caches(name, d));
        // A target Nx caches over inputs vx cannot fold is left uncached, with a TODO (once,
        // at the template, when the template is where they come from).
        let narrower = self.narrower(&merged);
        // A target with nothing to run (no command, executor nor script) is a group, which
        // vx never caches.
        let runs = table.command.is_some() || script.is_some();
        let nx_cached = self.cached(name, &merged) && runs;
        let cached = nx_cached && narrower.is_empty();
        let template_says = own.get("inputs").is_none()
            && default.is_some_and(|d| self.cached(name, d) && !template_cached);
        if nx_cached && !template_says {
            table.todos.extend(uncached_todo(&narrower));
        }
        let full = default.is_some() && template_cached && !cached;
        // Keys the project sets replace the default's; a full table restates them all.
        let from = |key: &str| own.get(key).is_some() || full || default.is_none();
        let common = self.common(name, &merged, what, &mut left);
        if from("dependsOn") {
            table.depends_on = common.depends_on;
        }
        if from("continuous") {
            table.persistent = common.persistent;
        }
        if full {
            table.no_template = true;
        }
        if cached {
            // Over a cached template, only the keys that differ (the table extends it).
            let partial = template_cached;
            let mut cache = Cache {
                partial,
                ..Cache::default()
            };
            let inputs_from_own = own.get("inputs").is_some() || !partial;
            match merged.get("inputs") {
                Some(list) if inputs_from_own => {
                    let inputs = self.target_inputs(list, what, &mut left);
                    apply_inputs(&mut cache, inputs);
                    // Every input key is written, so none of the template's stays.
                    cache.inputs.get_or_insert_with(Vec::new);
                    cache.input_sets_set = true;
                }
                None if !partial => {
                    // Nx's default: the project's files (its outputs left out, as vx needs)
                    // and `^default`.
                    let mut inputs = vec!["**".to_string()];
                    inputs.extend(outputs_elsewhere.iter().map(|o| format!("!{o}")));
                    cache.inputs = Some(inputs);
                    cache.input_sets = vec![DEPENDENCY_DEFAULT.to_string()];
                }
                _ => {}
            }
            let (outputs, workspace) =
                self.outputs(name, &merged, Some(place.dir), what, &mut left);
            let outputs_from_own = own.get("outputs").is_some() || !partial;
            let template_workspace = default
                .map(|d| self.outputs(name, d, None, what, &mut Vec::new()).1)
                .unwrap_or_default();
            if outputs_from_own {
                cache.outputs = outputs;
                cache.outputs_set = true;
            }
            if workspace != template_workspace {
                cache.workspace_outputs = workspace;
                cache.workspace_outputs_set = true;
            }
            let sets_something =
                cache.input_sets_set || cache.outputs_set || cache.workspace_outputs_set;
            if cache.input_sets_set || !partial {
                table.pass_through = self.env_of(&cache);
            }
            if !partial || sets_something {
                table.cache = Some(cache);
            }
        }
        let empty = Table {
            name: name.to_string(),
            command: table.command.clone(),
            ..Table::default()
        };
        if table == empty && script.is_some() && table.command.as_deref() == script {
            return (None, left);
        }
        (Some(table), left)
    }

    /// The keys of a target that are not about the cache: `dependsOn`, `continuous`.
    fn common(&self, name: &str, def: &JsonValue, what: &str, left: &mut Vec<NotCarried>) -> Table {
        let mut table = Table {
            name: name.to_string(),
            ..Table::default()
        };
        if let Some(list) = def.get("dependsOn").and_then(JsonValue::as_array) {
            let mut deps = Vec::new();
            for item in list {
                match depends_on(item, &self.project_names) {
                    Ok(found) => deps.extend(found),
                    Err(why) => left.push(NotCarried {
                        what: format!("{what}.dependsOn: {}", shown(item)),
                        at: item.at.clone(),
                        why,
                    }),
                }
            }
            table.depends_on = Some(deps);
        }
        if def.get("continuous").and_then(JsonValue::as_bool) == Some(true) {
            table.persistent = Some(true);
        }
        for key in ["configurations", "parallelism", "syncGenerators"] {
            if let Some(value) = def.get(key) {
                left.push(NotCarried {
                    what: format!("{what}.{key}"),
                    at: value.at.clone(),
                    why: match key {
                        "configurations" => {
                            "vx tasks have one configuration; make one task per configuration"
                        }
                        "parallelism" => "vx runs every task that has a slot; use `--concurrency`",
                        _ => "vx runs no Nx generators",
                    }
                    .to_string(),
                });
            }
        }
        table
    }

    /// The command of a project's target: `command`, `nx:run-commands`, `nx:run-script`, or
    /// the script of the same name.
    fn command(
        &self,
        name: &str,
        own: &JsonValue,
        script: Option<&str>,
        place: &Place<'_>,
    ) -> Option<String> {
        let executor = own.get("executor").and_then(JsonValue::as_str);
        let options = own.get("options");
        let shorthand = own.get("command").and_then(JsonValue::as_str);
        let up = |cwd: Option<&str>| {
            let depth = place.dir.split('/').filter(|s| !s.is_empty()).count();
            let mut path = vec![".."; depth].join("/");
            if let Some(cwd) = cwd.filter(|c| !c.is_empty()) {
                path = if path.is_empty() {
                    cwd.to_string()
                } else {
                    format!("{path}/{cwd}")
                };
            }
            path
        };
        let in_dir = |dir: String, command: &str| {
            if dir.is_empty() {
                command.to_string()
            } else {
                format!("cd {dir} && {command}")
            }
        };
        match (executor, shorthand) {
            (_, Some(command)) => {
                let cwd = options
                    .and_then(|o| o.get("cwd"))
                    .and_then(JsonValue::as_str);
                Some(in_dir(up(cwd), command))
            }
            (Some("nx:run-commands"), None) => {
                let options = options?;
                let cwd = options.get("cwd").and_then(JsonValue::as_str);
                if let Some(command) = options.get("command").and_then(JsonValue::as_str) {
                    return Some(in_dir(up(cwd), command));
                }
                let commands: Vec<String> = options
                    .get("commands")
                    .and_then(JsonValue::as_array)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|c| {
                        c.as_str()
                            .or_else(|| c.get("command").and_then(JsonValue::as_str))
                            .map(str::to_string)
                    })
                    .collect();
                let parallel = options.get("parallel").and_then(JsonValue::as_bool) != Some(false);
                match commands.as_slice() {
                    [one] => Some(in_dir(up(cwd), one)),
                    many if !parallel && !many.is_empty() => {
                        Some(in_dir(up(cwd), &many.join(" && ")))
                    }
                    // Several commands at once (or none): Nx runs them as it does.
                    _ => Some(through_nx(place.project, name)),
                }
            }
            (Some("nx:run-script"), None) => script.map(str::to_string),
            // An executor is Nx code: the task asks Nx to run that one target, its
            // dependencies left to vx and the cache to vx.
            (Some(_), None) => Some(through_nx(place.project, name)),
            (None, None) => script.map(str::to_string),
        }
    }

    /// A target's outputs: project-relative, and root-relative. Placeholders that need the
    /// project (`{workspaceRoot}/dist/{projectRoot}`) resolve only with `dir`.
    fn outputs(
        &self,
        name: &str,
        def: &JsonValue,
        dir: Option<&str>,
        what: &str,
        left: &mut Vec<NotCarried>,
    ) -> (Vec<String>, Vec<String>) {
        let mut project = Vec::new();
        let mut workspace = Vec::new();
        let Some(list) = def.get("outputs").and_then(JsonValue::as_array) else {
            // Nx's outputs for a `build` or `prepare` without any: `dist` in the project and
            // `dist/<project>` at the root (also `build` and `public`, often sources, which
            // vx would clean before a build: left to you).
            if matches!(name, "build" | "prepare") {
                project.push("dist".to_string());
                if let Some(dir) = dir.filter(|d| !d.is_empty()) {
                    workspace.push(format!("dist/{dir}"));
                }
            }
            return (project, workspace);
        };
        let options = def.get("options");
        for item in list {
            let Some(text) = item.as_str() else { continue };
            let (negated, body) = match text.strip_prefix('!') {
                Some(rest) => ("!", rest),
                None => ("", text),
            };
            let body = match options {
                Some(options) => fill_options(body, options),
                None => body.to_string(),
            };
            if let Some(rest) = body.strip_prefix("{projectRoot}/") {
                if matches!(rest, "package.json" | "vx.toml") {
                    left.push(NotCarried {
                        what: format!("{what}.outputs: {text}"),
                        at: item.at.clone(),
                        why: "the project's own manifest is never an output in vx: it is folded \
                              into every key of the project"
                            .to_string(),
                    });
                    continue;
                }
                if !rest.contains('{') {
                    project.push(format!("{negated}{rest}"));
                    continue;
                }
            }
            let Some(dir) = dir else {
                // Needs the project: given by each project's table.
                continue;
            };
            let resolved = body
                .replace("{projectRoot}", if dir.is_empty() { "." } else { dir })
                .replace("{workspaceRoot}/", "");
            if resolved.contains('{') {
                left.push(NotCarried {
                    what: format!("{what}.outputs: {text}"),
                    at: item.at.clone(),
                    why: "a placeholder vx cannot resolve".to_string(),
                });
                continue;
            }
            let resolved = resolved.trim_start_matches("./").to_string();
            match resolved.strip_prefix(&format!("{dir}/")) {
                Some(inside) if !dir.is_empty() => project.push(format!("{negated}{inside}")),
                _ => workspace.push(format!("{negated}{resolved}")),
            }
        }
        (project, workspace)
    }
}

impl Nx {
    /// For each cached target of the project whose inputs its template gives, the outputs
    /// of the project's other cached targets that git does not ignore: Nx would hash them as
    /// inputs (and miss after every build); vx needs them left out, so the project's table
    /// takes them back (`inputs = ["...", "!types"]`).
    pub fn outputs_to_take_back(
        &self,
        dir: &str,
        names: &BTreeSet<String>,
        is_ignored: &dyn Fn(&str) -> bool,
    ) -> BTreeMap<String, Vec<String>> {
        let own = self.projects.get(dir);
        let mut outputs: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        let mut template_inputs = BTreeSet::new();
        for name in names {
            let target = own.and_then(|p| p.targets.get(name));
            let merged = merge(self.defaults.get(name), target);
            if !self.cached(name, &merged) {
                continue;
            }
            let (found, _) = self.outputs(name, &merged, Some(dir), "", &mut Vec::new());
            let visible = found.into_iter().filter(|o| {
                let path = if dir.is_empty() {
                    o.clone()
                } else {
                    format!("{dir}/{o}")
                };
                !o.starts_with('!') && !is_ignored(&path)
            });
            outputs.insert(name, visible.collect());
            let own_inputs = target.is_some_and(|t| t.get("inputs").is_some());
            if self.defaults.contains_key(name.as_str()) && !own_inputs {
                template_inputs.insert(name.as_str());
            }
        }
        let mut out = BTreeMap::new();
        for name in template_inputs {
            let others: Vec<String> = outputs
                .iter()
                .filter(|(other, _)| **other != name)
                .flat_map(|(_, list)| list.iter().map(|o| format!("!{o}")))
                .collect();
            if !others.is_empty() {
                out.insert(name.to_string(), others);
            }
        }
        out
    }

    /// The project-relative outputs of every cached target of the project at `dir`: a
    /// project's own cache table spells its default inputs out as `**` less these.
    pub fn project_outputs(&self, dir: &str, names: &BTreeSet<String>) -> BTreeSet<String> {
        let own = self.projects.get(dir);
        let mut out = BTreeSet::new();
        for name in names {
            let merged = merge(
                self.defaults.get(name),
                own.and_then(|p| p.targets.get(name)),
            );
            if self.cached(name, &merged) {
                let (outputs, _) = self.outputs(name, &merged, Some(dir), "", &mut Vec::new());
                out.extend(outputs.into_iter().filter(|o| !o.starts_with('!')));
            }
        }
        out
    }
}

/// `targetDefaults[name]` with the project's own configuration laid over it key by key.
fn merge(default: Option<&JsonValue>, own: Option<&JsonValue>) -> JsonValue {
    let mut entries: Vec<(vx_core::Spanned<String>, JsonValue)> =
        default.map(|d| d.entries().to_vec()).unwrap_or_default();
    for (key, value) in own.map(JsonValue::entries).unwrap_or_default() {
        entries.retain(|(k, _)| k.value != key.value);
        entries.push((key.clone(), value.clone()));
    }
    JsonValue {
        at: own.or(default).map(|v| v.at.clone()).unwrap_or_default(),
        kind: JsonValueKind::Object(entries),
    }
}

/// `^default`: Nx folds it when a target gives no `inputs`.
const DEPENDENCY_DEFAULT: &str = "^default";

/// The TODO of a task Nx caches over inputs vx cannot fold, which is left uncached.
fn uncached_todo(narrower: &[String]) -> Option<(TodoReason, String)> {
    (!narrower.is_empty()).then(|| {
        (
            TodoReason::Uncached,
            format!(
                "left uncached: Nx hashes {} for this target, which vx cannot fold, and a \
                 cache over fewer inputs could serve a stale result",
                narrower.join(", ")
            ),
        )
    })
}

fn apply_inputs(cache: &mut Cache, inputs: Inputs) {
    cache.input_sets = inputs.input_sets;
    cache.inputs = (!inputs.inputs.is_empty()).then_some(inputs.inputs);
    cache.workspace_inputs = inputs.workspace_inputs;
    cache.env = inputs.env;
    cache.runtime = inputs.runtime;
}

/// An Nx `dependsOn` entry as vx `depends-on` entries.
fn depends_on(item: &JsonValue, projects: &BTreeSet<String>) -> Result<Vec<String>, String> {
    if let Some(text) = item.as_str() {
        return Ok(vec![match text.split_once(':') {
            Some((project, target)) if projects.contains(project) => format!("{project}#{target}"),
            _ => text.to_string(),
        }]);
    }
    let Some(target) = item.get("target").and_then(JsonValue::as_str) else {
        return Err("an entry without `target`".to_string());
    };
    if item.get("dependencies").and_then(JsonValue::as_bool) == Some(true) {
        return Ok(vec![format!("^{target}")]);
    }
    match item.get("projects").map(|p| &p.kind) {
        None => Ok(vec![target.to_string()]),
        Some(JsonValueKind::String(p)) if p == "self" || p == "{self}" => {
            Ok(vec![target.to_string()])
        }
        Some(JsonValueKind::String(p)) if p == "dependencies" || p == "{dependencies}" => {
            Ok(vec![format!("^{target}")])
        }
        Some(JsonValueKind::Array(projects)) => Ok(projects
            .iter()
            .filter_map(JsonValue::as_str)
            .map(|p| format!("{p}#{target}"))
            .collect()),
        Some(_) => Err("a `projects` form vx does not know".to_string()),
    }
}

/// An Nx file set as vx globs: `(root-relative, globs)`.
fn fileset(text: &str) -> Result<(bool, Vec<String>), String> {
    let (negated, body) = match text.strip_prefix('!') {
        Some(rest) => ("!", rest),
        None => ("", text),
    };
    let (workspace, rest) = if let Some(rest) = body.strip_prefix("{projectRoot}/") {
        (false, rest)
    } else if body == "{projectRoot}" {
        (false, "**")
    } else if let Some(rest) = body.strip_prefix("{workspaceRoot}/") {
        (true, rest)
    } else {
        (true, body)
    };
    if rest.contains('{') && rest.contains('}') && rest.contains("Root}") {
        return Err("a placeholder inside the path".to_string());
    }
    let globs = extglob_to_braces(rest).ok_or("an extended glob vx cannot write as braces")?;
    Ok((
        workspace,
        globs.into_iter().map(|g| format!("{negated}{g}")).collect(),
    ))
}

/// Nx globs may use character classes and extended globs (`?(x)`, `+(a|b)`, `@(a|b)`), which
/// vx does not take: `[jt]` → `{j,t}`, `+(a|b)` and `@(a|b)` → `{a,b}`, and `?(x)` (x or
/// nothing) → two globs, since a brace set cannot hold an empty alternative. `None` when the
/// glob nests them or uses a negated class.
fn extglob_to_braces(glob: &str) -> Option<Vec<String>> {
    let chars: Vec<char> = glob.chars().collect();
    let mut globs = vec![String::new()];
    let push = |globs: &mut Vec<String>, text: &str| {
        for g in globs.iter_mut() {
            g.push_str(text);
        }
    };
    let mut i = 0;
    let mut depth = 0usize;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match (c, next) {
            ('?' | '+' | '@', Some('(')) => {
                let close = chars[i + 2..].iter().position(|&c| c == ')')? + i + 2;
                let body: String = chars[i + 2..close].iter().collect();
                if body.contains(['(', '{', '[']) || depth > 0 {
                    return None;
                }
                let choice = if body.contains('|') {
                    format!("{{{}}}", body.replace('|', ","))
                } else {
                    body
                };
                if c == '?' {
                    let with: Vec<String> = globs.iter().map(|g| format!("{g}{choice}")).collect();
                    globs.extend(with);
                } else {
                    push(&mut globs, &choice);
                }
                i = close + 1;
            }
            // A bare group of alternatives, `(spec|test)`, as Nx's globs read it.
            ('(', _) => {
                let close = chars[i + 1..].iter().position(|&c| c == ')')? + i + 1;
                let body: String = chars[i + 1..close].iter().collect();
                if !body.contains('|') || body.contains(['(', '{', '[']) || depth > 0 {
                    return None;
                }
                push(&mut globs, &format!("{{{}}}", body.replace('|', ",")));
                i = close + 1;
            }
            ('[', _) => {
                let close = chars[i + 1..].iter().position(|&c| c == ']')? + i + 1;
                let members: Vec<String> =
                    chars[i + 1..close].iter().map(|c| c.to_string()).collect();
                if members.iter().any(|m| m == "-" || m == "!" || m == "^") || depth > 0 {
                    return None;
                }
                push(&mut globs, &format!("{{{}}}", members.join(",")));
                i = close + 1;
            }
            _ => {
                match c {
                    '{' => depth += 1,
                    '}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                push(&mut globs, &c.to_string());
                i += 1;
            }
        }
    }
    if globs.len() > 64 {
        return None;
    }
    Some(globs)
}

/// A JSON item shown in a message.
fn shown(item: &JsonValue) -> String {
    match &item.kind {
        JsonValueKind::String(s) => s.clone(),
        JsonValueKind::Object(entries) => {
            let parts: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", k.value, shown(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        JsonValueKind::Array(items) => {
            format!(
                "[{}]",
                items.iter().map(shown).collect::<Vec<_>>().join(", ")
            )
        }
        JsonValueKind::Bool(b) => b.to_string(),
        JsonValueKind::Number(n) => n.clone(),
        JsonValueKind::Null => "null".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_placeholders_follow_dotted_paths_and_unknown_ones_stay() {
        let options = vx_workspace::read_jsonc(
            r#"{"outputPath": {"base": "dist/apps/web", "browser": ""}, "outputFile": "r.json"}"#,
            "project.json",
        )
        .unwrap();
        assert_eq!(
            fill_options("{workspaceRoot}/{options.outputPath.base}", &options),
            "{workspaceRoot}/dist/apps/web"
        );
        assert_eq!(fill_options("{options.outputFile}", &options), "r.json");
        assert_eq!(
            fill_options("{options.missing.x}/a", &options),
            "{options.missing.x}/a"
        );
        assert_eq!(
            fill_options("{options.outputPath}", &options),
            "{options.outputPath}"
        );
    }

    #[test]
    fn an_executor_runs_through_nx_with_safe_words() {
        assert_eq!(
            through_nx("@scope/web", "build:prod"),
            "NX_DAEMON=false nx run @scope/web:build:prod --excludeTaskDependencies --skipNxCache"
        );
        assert_eq!(shell_word("it's"), "'it'\\''s'");
    }

    #[test]
    fn nx_globs_become_brace_sets() {
        let globs = extglob_to_braces("**/?(*.)+(spec|test).[jt]s?(x)?(.snap)").unwrap();
        assert_eq!(globs.len(), 8);
        assert_eq!(globs[0], "**/{spec,test}.{j,t}s");
        assert!(globs.contains(&"**/*.{spec,test}.{j,t}sx.snap".to_string()));
        assert_eq!(extglob_to_braces("src/**/*.ts").unwrap(), ["src/**/*.ts"]);
        assert_eq!(
            extglob_to_braces("src/**/*.(spec|test).(j|t)s").unwrap(),
            ["src/**/*.{spec,test}.{j,t}s"]
        );
        assert!(extglob_to_braces("{a,?(b)}").is_none());
        let compiled = vx_core::globs::TaskGlobs::new(globs.iter().map(String::as_str));
        assert!(compiled.is_match("src/a.spec.ts"));
        assert!(compiled.is_match("src/spec.ts"));
        assert!(compiled.is_match("src/a.test.tsx.snap"));
        assert!(!compiled.is_match("src/a.ts"));
    }

    #[test]
    fn filesets_and_depends_on_forms() {
        let one = |(root, globs): (bool, Vec<String>)| (root, globs[0].clone());
        assert_eq!(
            one(fileset("{projectRoot}/src/**/*").unwrap()),
            (false, "src/**/*".into())
        );
        assert_eq!(
            one(fileset("!{projectRoot}/**/*.spec.ts").unwrap()),
            (false, "!**/*.spec.ts".into())
        );
        assert_eq!(
            one(fileset("{workspaceRoot}/tsconfig.base.json").unwrap()),
            (true, "tsconfig.base.json".into())
        );
        let json = vx_workspace::read_jsonc(
            r#"["^build", "lint", "lib:gen", "build:browser:dev", {"target": "build", "dependencies": true},
                {"target": "x", "projects": ["a", "b"]}]"#,
            "nx.json",
        )
        .unwrap();
        let projects: BTreeSet<String> = ["lib".to_string()].into();
        let all: Vec<String> = json
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|i| depends_on(i, &projects).unwrap())
            .collect();
        assert_eq!(
            all,
            [
                "^build",
                "lint",
                "lib#gen",
                "build:browser:dev",
                "^build",
                "a#x",
                "b#x"
            ]
        );
    }
}
