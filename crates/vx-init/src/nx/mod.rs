//! Reading `nx.json` and each project's Nx targets (`project.json`, the `nx` field of
//! `package.json`) for `vx init`, as templates, input sets and tables.
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

use std::collections::BTreeSet;
use std::path::Path;

use vx_core::{Diagnostic, Location};
use vx_workspace::{JsonValue, JsonValueKind};

mod command;
mod config;
pub mod graph;
mod infer;
mod inputs;

use self::config::{merge, shown};
pub use self::config::{Nx, NxProject, Place};
use self::inputs::{apply_inputs, uncached_todo, DEPENDENCY_DEFAULT};
use super::toml::{Cache, Table};
use super::turbo::{read_file, NotCarried};

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
            "plugins" => {
                nx.plugins = value
                    .as_array()
                    .map(<[JsonValue]>::to_vec)
                    .unwrap_or_default();
                nx.not_carried.push(leave(
                    "plugins",
                    at,
                    "the targets plugins infer come from `nx graph`, which could not be asked (the \
                     report says why)",
                ));
            }
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
        let name = name.and_then(JsonValue::as_str).map(str::to_string);
        if let Some(nx_field) = manifest.as_ref().and_then(|j| j.get("nx").cloned()) {
            read_project(&nx_field, &rel, &mut project, &mut nx.not_carried);
        }
        if let Some((nx_name, _)) = &project.name {
            nx.project_names.insert(nx_name.clone());
            if let Some(package) = name.filter(|p| p != nx_name) {
                nx.vx_names.insert(nx_name.clone(), package);
            }
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
            "implicitDependencies" => {
                for item in value.as_array().unwrap_or_default() {
                    match item.as_str() {
                        Some(name) if !name.starts_with('!') && !name.contains('*') => {
                            project.implicit.push(name.to_string());
                        }
                        _ => left.push(NotCarried {
                            what: format!("{rel}: implicitDependencies {}", shown(item)),
                            at: item.at.clone(),
                            why: "vx takes project names in `deps`, not patterns or exclusions"
                                .to_string(),
                        }),
                    }
                }
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
        // A target whose executor (and options) only `targetDefaults` gives runs it, as in Nx.
        let bare = own.get("executor").is_none() && own.get("command").is_none();
        let source = if bare && script.is_none() {
            &merged
        } else {
            own
        };
        let command = self.command(name, source, script, place);
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

    /// A `depends-on` entry with an Nx project name (`ast-spec#build`) under its vx name
    /// (`@typescript-eslint/ast-spec#build`).
    fn vx_task(&self, entry: String) -> String {
        match entry.rsplit_once('#') {
            Some((project, task)) if self.vx_names.contains_key(project) => {
                format!("{}#{task}", self.vx_names[project])
            }
            _ => entry,
        }
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
                    Ok(found) => deps.extend(found.into_iter().map(|d| self.vx_task(d))),
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
            // What Nx resolves for every target (no configuration, parallel) says nothing.
            let default = match key {
                "configurations" => def.get(key).is_some_and(|v| v.entries().is_empty()),
                "parallelism" => def.get(key).and_then(JsonValue::as_bool) == Some(true),
                _ => false,
            };
            if let Some(value) = def.get(key).filter(|_| !default) {
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
        Some(JsonValueKind::Array(patterns)) => {
            let mut found = Vec::new();
            for pattern in patterns.iter().filter_map(JsonValue::as_str) {
                let names = matching_projects(pattern, projects)?;
                found.extend(names.into_iter().map(|p| format!("{p}#{target}")));
            }
            Ok(found)
        }
        Some(_) => Err("a `projects` form vx does not know".to_string()),
    }
}

/// The projects a `dependsOn` `projects` entry names, as Nx's `findMatchingProjects` reads
/// a name: the project of that name, else every project whose name holds it as a whole
/// word (case aside; `storage-js` is `@supabase/storage-js`), else the names a glob
/// matches. Tags and directories are not resolved.
fn matching_projects(pattern: &str, projects: &BTreeSet<String>) -> Result<Vec<String>, String> {
    if projects.contains(pattern) {
        return Ok(vec![pattern.to_string()]);
    }
    if pattern.starts_with("tag:") || pattern.starts_with('!') {
        return Err(format!(
            "the project pattern `{pattern}`: vx resolves names and globs only"
        ));
    }
    let glob = pattern.contains(['*', '?', '[', '{']);
    let found: Vec<String> = if glob {
        let matcher = globset::Glob::new(pattern)
            .map_err(|e| format!("the project pattern `{pattern}`: {e}"))?
            .compile_matcher();
        projects
            .iter()
            .filter(|n| matcher.is_match(n.as_str()))
            .cloned()
            .collect()
    } else {
        projects
            .iter()
            .filter(|n| holds_word(n, pattern))
            .cloned()
            .collect()
    };
    if found.is_empty() {
        return Err(format!("no Nx project is named `{pattern}`"));
    }
    Ok(found)
}

/// Whether `word` occurs in `name` (ASCII case aside) with no letter, digit, `@` or `-`
/// right before or after it.
fn holds_word(name: &str, word: &str) -> bool {
    let (name, word) = (name.to_ascii_lowercase(), word.to_ascii_lowercase());
    let joins =
        |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '@' || c == '-');
    name.match_indices(&word).any(|(at, _)| {
        !joins(name[..at].chars().next_back()) && !joins(name[at + word.len()..].chars().next())
    })
}

#[cfg(test)]
mod tests {
    use super::inputs::fileset;
    use super::*;

    #[test]
    fn projects_in_depends_on_are_matched_as_nx_matches_them() {
        let names: BTreeSet<String> = [
            "@supabase/storage-js",
            "@supabase/storage-js-e2e",
            "storage",
            "web-e2e",
        ]
        .map(String::from)
        .into();
        assert_eq!(matching_projects("storage", &names).unwrap(), ["storage"]);
        // A whole word, not a part of one: `storage-js` is not `storage-js-e2e`'s.
        assert_eq!(
            matching_projects("storage-js", &names).unwrap(),
            ["@supabase/storage-js"]
        );
        assert_eq!(matching_projects("WEB-E2E", &names).unwrap(), ["web-e2e"]);
        assert_eq!(
            matching_projects("@supabase/*", &names).unwrap(),
            ["@supabase/storage-js", "@supabase/storage-js-e2e"]
        );
        assert!(matching_projects("auth-js", &names).is_err());
        assert!(matching_projects("tag:scope:shared", &names).is_err());
    }

    #[test]
    fn nx_names_become_vx_names_and_placeholders_are_filled() {
        let mut nx = Nx::default();
        nx.vx_names
            .insert("ast-spec".into(), "@typescript-eslint/ast-spec".into());
        assert_eq!(
            nx.vx_task("ast-spec#build".into()),
            "@typescript-eslint/ast-spec#build"
        );
        assert_eq!(nx.vx_task("^build".into()), "^build");
        let own = vx_workspace::read_jsonc(
            r#"{"executor": "nx:run-commands",
                "options": {"cwd": "{projectRoot}", "command": "tsc -p {projectRoot}/x --name {projectName}"}}"#,
            "project.json",
        )
        .unwrap();
        let place = Place {
            dir: "packages/a",
            project: "a",
            what: "packages/a/project.json: targets.build".into(),
        };
        let (table, _) = nx.project_table("build", Some(&own), None, &place, &BTreeSet::new());
        assert_eq!(
            table.unwrap().command.as_deref(),
            // `cwd` is the project's directory, where vx runs the command: no `cd`.
            Some("tsc -p packages/a/x --name a")
        );
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
        let projects: BTreeSet<String> = ["lib", "a", "b"].map(String::from).into();
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
