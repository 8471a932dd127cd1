//! Reading `turbo.json` (INIT-3): the root file and the package files that extend
//! it, as task definitions `vx init` turns into templates and tables.
//!
//! Start at [`read`]. Turborepo's rules, as carried over:
//!
//! - a task `build` applies to every package with a `build` script: a `[workspace.tasks]`
//!   template, whose command is each package's script;
//! - `web#build` replaces `build` for the package named `web`, and a package's own
//!   `turbo.json` (`"extends": ["//"]`) overrides the root's definition key by key, an array
//!   starting with `$TURBO_EXTENDS$` appending to the root's: either way the package gets
//!   its whole table, with `extends = false`;
//! - `//#format` is the root package's `format` script: a root `[tasks]` table;
//! - a task is cached unless `cache: false` (or persistent or interactive, which vx never
//!   caches); its inputs default to the package's files, as vx's template default does;
//! - `env` and `globalEnv` are folded into the key and passed to the task;
//!   `passThroughEnv` and `globalPassThroughEnv` are only passed; `globalDependencies` are
//!   workspace inputs of every cached task.
//!
//! Every key vx does not carry over is kept with its location and the reason
//! ([`NotCarried`]), for the report and the root file's comments.

use std::collections::{BTreeMap, BTreeSet};

use vx_core::Location;

pub use self::read::{read, read_file};

use self::deferred::DependencyOutputs;
use super::scripts::TodoReason;
use super::toml::{Cache, Table};

mod deferred;
mod read;

/// A `turbo.json` setting that is not carried over, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotCarried {
    /// The key's path, such as `tasks.build.outputLogs`.
    pub what: String,
    pub at: Location,
    pub why: String,
}

/// One task definition: each key `None` when the file does not set it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurboTask {
    pub at: Option<Location>,
    pub description: Option<String>,
    pub depends_on: Option<Vec<String>>,
    pub inputs: Option<Vec<String>>,
    /// The globs of `{ "mode": "jit" }` inputs (among `inputs` too).
    pub jit: Vec<String>,
    /// A `{ "mode": "dependencyOutputs" }` input.
    pub dependency_outputs: Option<DependencyOutputs>,
    pub outputs: Option<Vec<String>>,
    pub cache: Option<bool>,
    pub persistent: Option<bool>,
    pub interactive: Option<bool>,
    pub env: Option<Vec<String>>,
    pub pass_through_env: Option<Vec<String>>,
    /// Where each list item was written: (key, item) → location.
    pub items: BTreeMap<(String, String), Location>,
}

/// Everything read from the root `turbo.json` and the package files.
#[derive(Debug, Clone, Default)]
pub struct Turbo {
    /// `build`: for every package with the script.
    pub generic: BTreeMap<String, TurboTask>,
    /// `web#build`: package name → task → definition (replacing the generic one).
    pub by_package: BTreeMap<String, BTreeMap<String, TurboTask>>,
    /// A package's own `turbo.json`: package directory → task → the merged definition.
    pub package_files: BTreeMap<String, BTreeMap<String, TurboTask>>,
    /// `//#format`.
    pub root: BTreeMap<String, TurboTask>,
    pub global_dependencies: Vec<String>,
    pub global_env: Vec<String>,
    pub global_pass_through: Vec<String>,
    /// `concurrency` when it is a count.
    pub concurrency: Option<u32>,
    /// `"ui": "tui"`: vx's task UI, `[workspace] ui = "tui"`.
    pub tui: bool,
    pub not_carried: Vec<NotCarried>,
    /// Where each item of a global list was written: (key, item) → location.
    pub items: BTreeMap<(String, String), Location>,
    /// Task name → the `cache.dependants-read` its dependants' `dependencyOutputs` globs give.
    pub dependants_read: BTreeMap<String, Vec<String>>,
}

/// What the conversion of one definition needs to know of the package it lands in.
pub struct Target<'a> {
    /// A template (its inputs may be left to the default) or a package's own table.
    pub template: bool,
    /// The root-relative directory globs that leave the package (`../../tsconfig.json`) are
    /// resolved from: the package's, or for a template, that of the packages it is written
    /// for ([`Turbo::leaving_globs`]). `None` where no package has the task.
    pub dir: Option<&'a str>,
    /// Every output glob of the package's cached tasks: a package's own table spells its
    /// default inputs out as `**` less these.
    pub outputs: &'a BTreeSet<String>,
}

impl Turbo {
    /// The outputs of every cached definition that can apply to the package at `dir` named
    /// `name` (project-relative globs, negations left out).
    pub fn outputs_for(&self, dir: &str, name: Option<&str>) -> BTreeSet<String> {
        let own = name.and_then(|n| self.by_package.get(n));
        let file = self.package_files.get(dir);
        // Per task, the definition that applies: `pkg#task`, else the package's own file,
        // else the generic one.
        let mut defs: BTreeMap<&str, &TurboTask> = BTreeMap::new();
        let layers = [Some(&self.generic), file, own];
        for layer in layers.into_iter().flatten() {
            for (task, def) in layer {
                defs.insert(task, def);
            }
        }
        defs.into_values()
            .filter(|d| cached(d))
            .flat_map(|d| d.outputs.iter().flatten())
            .filter(|g| !g.starts_with('!') && !g.starts_with("$TURBO_ROOT$"))
            .cloned()
            .collect()
    }

    /// The table of definition `def` of task `name`, and what of it is not carried over.
    pub fn table(
        &self,
        name: &str,
        def: &TurboTask,
        target: Target<'_>,
        place: &str,
    ) -> (Table, Vec<NotCarried>) {
        let mut left = Vec::new();
        let at = def.at.clone().unwrap_or_default();
        // An item is reported where it was written: a global one once, at the root.
        let mut leave = |key: &str, item: &str, why: &str| {
            let global = key.starts_with("global");
            let spot = (key.to_string(), item.to_string());
            let located = if global {
                self.items.get(&spot)
            } else {
                def.items.get(&spot)
            };
            left.push(NotCarried {
                what: if global {
                    format!("{key} {item}")
                } else {
                    format!("{place}.{key} {item}")
                },
                at: located.cloned().unwrap_or_else(|| at.clone()),
                why: why.to_string(),
            });
        };
        let mut table = Table {
            name: name.to_string(),
            description: def.description.clone(),
            persistent: def.persistent.filter(|p| *p),
            interactive: def.interactive == Some(true),
            ..Table::default()
        };
        let depends_on: Vec<String> = def
            .depends_on
            .iter()
            .flatten()
            .filter(|d| {
                let env = d.starts_with('$');
                if env {
                    leave(
                        "dependsOn",
                        d,
                        "an environment variable in `dependsOn` (Turborepo 1.5 and older): vx folds variables listed in `cache.env`",
                    );
                }
                !env
            })
            .cloned()
            .collect();
        if !depends_on.is_empty() {
            table.depends_on = Some(depends_on);
        }

        let mut env = Vec::new();
        let mut pass_through = Vec::new();
        let global_env = self.global_env.iter().map(|v| ("globalEnv", v));
        let task_env = def.env.iter().flatten().map(|v| ("env", v));
        for (key, var) in global_env.chain(task_env) {
            match env_entry(var) {
                Ok(entry) => {
                    env.push(entry.clone());
                    pass_through.push(entry);
                }
                Err(why) => leave(key, var, why),
            }
        }
        let global = self
            .global_pass_through
            .iter()
            .map(|v| ("globalPassThroughEnv", v));
        let task = def
            .pass_through_env
            .iter()
            .flatten()
            .map(|v| ("passThroughEnv", v));
        for (key, var) in global.chain(task) {
            match env_entry(var) {
                Ok(entry) => pass_through.push(entry),
                Err(why) => leave(key, var, why),
            }
        }
        dedup(&mut env);
        dedup(&mut pass_through);
        table.pass_through = pass_through;

        // A glob that leaves the package (Turborepo takes `../x`, relative to the package)
        // is root-relative once resolved; one that leaves the workspace cannot be folded.
        let mut escaping = Vec::new();
        let mut resolve = |glob: &str| -> Option<Option<String>> {
            if !leaves_package(glob) {
                return None;
            }
            let resolved = target.dir.and_then(|dir| resolve_from(dir, glob));
            if resolved.is_none() {
                escaping.push(glob.to_string());
            }
            Some(resolved)
        };
        if cached(def) {
            let mut cache = Cache {
                env,
                ..Cache::default()
            };
            for output in def.outputs.iter().flatten() {
                if let Some(resolved) = resolve(output) {
                    cache.workspace_outputs.extend(resolved);
                    continue;
                }
                match root_relative(output) {
                    Some(rest) => cache.workspace_outputs.push(rest),
                    None => {
                        let output = output.trim_start_matches("./");
                        if matches!(output, "package.json" | "vx.toml") {
                            leave(
                                "outputs",
                                output,
                                "the project's own manifest is never an output in vx: it is \
                                 folded into every key of the project, so a build that rewrites \
                                 it must write the same bytes",
                            );
                            continue;
                        }
                        cache.outputs.push(output.to_string());
                    }
                }
            }
            if cache.outputs.is_empty() && cache.workspace_outputs.is_empty() {
                table.todos.push((
                    TodoReason::Carried,
                    "turbo.json gives this task no outputs: Turborepo caches only its logs; \
                     check that it writes no files"
                        .to_string(),
                ));
            }
            let default = || {
                std::iter::once("**".to_string())
                    .chain(target.outputs.iter().map(|g| format!("!{g}")))
                    .collect::<Vec<_>>()
            };
            let mut inputs = Vec::new();
            match &def.inputs {
                None if target.template => {}
                None => inputs = default(),
                Some(list) => {
                    for input in list {
                        if let Some(upstream) = self.writer_upstream(def, input) {
                            leave(
                                "inputs",
                                input,
                                &format!(
                                    "a `jit` glob over what `{upstream}` writes: vx folds those \
                                     outputs through `{upstream}`, which this task depends on"
                                ),
                            );
                        } else if let Some(resolved) = resolve(input) {
                            cache.workspace_inputs.extend(resolved);
                        } else if input == "$TURBO_DEFAULT$" {
                            inputs.extend(default());
                        } else if let Some(rest) = root_relative(input) {
                            cache.workspace_inputs.push(rest);
                        } else {
                            inputs.push(input.trim_start_matches("./").to_string());
                        }
                    }
                }
            }
            if def.inputs.is_some() || !target.template {
                dedup(&mut inputs);
                cache.inputs = Some(inputs);
            }
            cache
                .workspace_inputs
                .extend(self.global_dependencies.iter().cloned());
            dedup(&mut cache.workspace_inputs);
            cache.dependants_read = self.dependants_read.get(name).cloned();
            if escaping.is_empty() {
                table.cache = Some(cache);
            } else {
                // Never a cache narrower than Turborepo's: the task is left uncached.
                table.todos.push((
                    TodoReason::Uncached,
                    format!(
                        "left uncached: {} leaves the workspace from {}, so vx cannot fold it, \
                         and a cache over fewer inputs could serve a stale result",
                        escaping.join(", "),
                        target.dir.map_or("a task no package has".to_string(), |d| {
                            if d.is_empty() {
                                "the root".to_string()
                            } else {
                                format!("`{d}`")
                            }
                        })
                    ),
                ));
            }
        }
        (table, left)
    }

    /// For a `jit` glob of `def`, the task of the same package `def` depends on whose outputs
    /// it reaches ([`deferred::reaches`]).
    fn writer_upstream(&self, def: &TurboTask, glob: &str) -> Option<String> {
        if !def.jit.iter().any(|j| j == glob) {
            return None;
        }
        let same_package = def
            .depends_on
            .iter()
            .flatten()
            .filter(|d| !d.contains(['^', '#']));
        same_package
            .filter(|upstream| {
                let outputs = self
                    .generic
                    .get(upstream.as_str())
                    .and_then(|u| u.outputs.as_ref());
                outputs
                    .into_iter()
                    .flatten()
                    .any(|o| deferred::reaches(glob, o))
            })
            .map(|upstream| upstream.to_string())
            .next()
    }

    /// The names of the aggregate tasks: defined for every package with a `dependsOn`, and no
    /// package (nor the root) has a script of that name. Turborepo runs such a task in every
    /// package as a no-op whose dependencies run; vx makes it a group in each package.
    pub fn aggregates(&self, has_script: &dyn Fn(&str) -> bool) -> BTreeSet<String> {
        self.generic
            .iter()
            .filter(|(name, def)| {
                def.depends_on.as_ref().is_some_and(|d| !d.is_empty())
                    && def.persistent != Some(true)
                    && !has_script(name)
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The `depends-on` of aggregate task `name` in a package where `has(task)` says which
    /// tasks it has: a task it lacks (an aggregate too) is replaced by that task's own
    /// `dependsOn`, which Turborepo still runs, so the group reaches the same tasks.
    pub fn aggregate_deps(&self, name: &str, has: &dyn Fn(&str) -> bool) -> Vec<String> {
        fn expand(
            turbo: &Turbo,
            list: &[String],
            has: &dyn Fn(&str) -> bool,
            seen: &mut BTreeSet<String>,
            out: &mut Vec<String>,
        ) {
            for entry in list {
                let kept = if entry.starts_with('$') {
                    false
                } else {
                    entry.starts_with('^') || entry.contains('#') || has(entry)
                };
                if kept {
                    if !out.contains(entry) {
                        out.push(entry.clone());
                    }
                } else if seen.insert(entry.clone()) {
                    if let Some(deps) = turbo.generic.get(entry).and_then(|d| d.depends_on.as_ref())
                    {
                        expand(turbo, deps, has, seen, out);
                    }
                }
            }
        }
        let mut out = Vec::new();
        let mut seen = BTreeSet::from([name.to_string()]);
        let list = self
            .generic
            .get(name)
            .and_then(|d| d.depends_on.clone())
            .unwrap_or_default();
        expand(self, &list, has, &mut seen, &mut out);
        out
    }

    /// The globs of a definition that leave the package (`../x`), as they resolve from
    /// `dir`: packages at different places resolve them differently, and a template holds
    /// one resolution.
    pub fn leaving_globs(def: &TurboTask, dir: &str) -> Vec<Option<String>> {
        def.inputs
            .iter()
            .flatten()
            .chain(def.outputs.iter().flatten())
            .filter(|g| leaves_package(g))
            .map(|g| resolve_from(dir, g))
            .collect()
    }
}

/// Whether a glob (negated or not) starts above the package: `../x`, `./../x`.
fn leaves_package(glob: &str) -> bool {
    let glob = glob.strip_prefix('!').unwrap_or(glob);
    glob.trim_start_matches("./").starts_with("../")
}

/// A package-relative glob that may start with `../`, made root-relative from the package at
/// `dir`; `None` when it leaves the workspace.
fn resolve_from(dir: &str, glob: &str) -> Option<String> {
    let (negated, glob) = match glob.strip_prefix('!') {
        Some(rest) => ("!", rest),
        None => ("", glob),
    };
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    let mut rest = glob;
    loop {
        if let Some(next) = rest.strip_prefix("./") {
            rest = next;
        } else if let Some(next) = rest.strip_prefix("../") {
            parts.pop()?;
            rest = next;
        } else {
            break;
        }
    }
    parts.push(rest);
    Some(format!("{negated}{}", parts.join("/")))
}

/// Whether Turborepo caches a definition and vx can: not `cache: false`, and neither
/// persistent nor interactive (vx caches neither).
fn cached(def: &TurboTask) -> bool {
    def.cache != Some(false) && def.persistent != Some(true) && def.interactive != Some(true)
}

/// `$TURBO_ROOT$/x` → `x`, root-relative.
fn root_relative(glob: &str) -> Option<String> {
    let (negated, glob) = match glob.strip_prefix('!') {
        Some(rest) => ("!", rest),
        None => ("", glob),
    };
    let rest = glob.strip_prefix("$TURBO_ROOT$/")?;
    Some(format!("{negated}{rest}"))
}

/// A variable name, or a prefix ending in `*`, as vx takes them; Turborepo's negations and
/// inner wildcards have no vx form.
fn env_entry(var: &str) -> Result<String, &'static str> {
    let name = var.strip_suffix('*').unwrap_or(var);
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if var.starts_with('!') {
        Err("vx has no negated variable patterns")
    } else if valid {
        Ok(var.to_string())
    } else {
        Err("vx takes variable names, or a prefix ending in `*`")
    }
}

fn dedup(items: &mut Vec<String>) {
    let mut seen = BTreeSet::new();
    items.retain(|i| seen.insert(i.clone()));
}
