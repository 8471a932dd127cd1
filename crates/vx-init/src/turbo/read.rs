//! Reading `turbo.json` files into [`Turbo`]: the root file, each package's own file laid over
//! it ([`merged`]), and the `dependencyOutputs` lists carried to the upstreams (`deferred.rs`).

use std::collections::BTreeMap;
use std::path::Path;

use vx_core::{Diagnostic, Location};
use vx_workspace::JsonValue;

use super::deferred::{dependants_read, read_inputs, task_of, DependencyOutputs};
use super::{NotCarried, Turbo, TurboTask};

/// Reads `turbo.json` at `root` and the `turbo.json` of each member directory. `None` when
/// the root has none. Problems (syntax, a key of the wrong type) go to `errors`.
pub fn read(root: &Path, members: &[String], errors: &mut Vec<Diagnostic>) -> Option<Turbo> {
    let json = read_file(root, "turbo.json", errors)?;
    let mut turbo = Turbo::default();
    let mut reader = Reader {
        errors,
        not_carried: &mut turbo.not_carried,
    };
    for (key, value) in json.entries() {
        match key.value.as_str() {
            "$schema" => {}
            "tasks" | "pipeline" => {
                for (name, def) in value.entries() {
                    let path = format!("{}.{}", key.value, name.value);
                    let task = reader.task(def, &path);
                    if let Some(task_name) = name.value.strip_prefix("//#") {
                        turbo.root.insert(task_name.to_string(), task);
                    } else if let Some((package, task_name)) = name.value.rsplit_once('#') {
                        turbo
                            .by_package
                            .entry(package.to_string())
                            .or_default()
                            .insert(task_name.to_string(), task);
                    } else {
                        turbo.generic.insert(name.value.clone(), task);
                    }
                }
            }
            "globalDependencies" => {
                turbo.global_dependencies = reader.strings(value, &key.value).unwrap_or_default();
            }
            "globalEnv" => {
                turbo.global_env = reader.strings(value, &key.value).unwrap_or_default();
                reader.locate(value, "globalEnv", &mut turbo.items);
            }
            "globalPassThroughEnv" => {
                turbo.global_pass_through = reader.strings(value, &key.value).unwrap_or_default();
                reader.locate(value, "globalPassThroughEnv", &mut turbo.items);
            }
            // `stream` is what vx shows by default.
            "ui" if matches!(value.as_str(), Some("tui" | "stream")) => {
                turbo.tui = value.as_str() == Some("tui");
            }
            "concurrency" => {
                let count = match &value.kind {
                    vx_workspace::JsonValueKind::Number(n) => n.parse::<u32>().ok(),
                    vx_workspace::JsonValueKind::String(s) => s.parse::<u32>().ok(),
                    _ => None,
                };
                match count.filter(|n| *n >= 1) {
                    Some(n) => turbo.concurrency = Some(n),
                    None => reader.leave(
                        &key.value,
                        &key.at,
                        "vx takes a count of tasks (`[workspace] concurrency`), not a percentage",
                    ),
                }
            }
            other => {
                let why = root_key_reason(other);
                reader.leave(&key.value, &key.at, why);
            }
        }
    }

    for dir in members {
        let rel = format!("{dir}/turbo.json");
        let Some(json) = read_file(root, &rel, reader.errors) else {
            continue;
        };
        let mut tasks = BTreeMap::new();
        for (key, value) in json.entries() {
            match key.value.as_str() {
                "$schema" | "extends" => {}
                "tasks" | "pipeline" => {
                    for (name, def) in value.entries() {
                        let path = format!("{rel}: {}.{}", key.value, name.value);
                        let own = reader.task(def, &path);
                        let base = turbo.generic.get(&name.value).cloned().unwrap_or_default();
                        tasks.insert(name.value.clone(), merged(base, own));
                    }
                }
                other => {
                    let why = root_key_reason(other);
                    reader.leave(&format!("{rel}: {other}"), &key.at, why);
                }
            }
        }
        turbo.package_files.insert(dir.clone(), tasks);
    }
    narrowings(&mut turbo);
    Some(turbo)
}

/// Fills [`Turbo::dependants_read`] from the definitions' `dependencyOutputs` globs
/// (`deferred.rs`), and says which lists are not carried.
fn narrowings(turbo: &mut Turbo) {
    let mut defs: Vec<(String, &TurboTask)> = Vec::new();
    defs.extend(turbo.generic.iter().map(|(n, d)| (format!("tasks.{n}"), d)));
    defs.extend(turbo.root.iter().map(|(n, d)| (format!("tasks.//#{n}"), d)));
    for (package, tasks) in &turbo.by_package {
        defs.extend(
            tasks
                .iter()
                .map(|(n, d)| (format!("tasks.{package}#{n}"), d)),
        );
    }
    for (dir, tasks) in &turbo.package_files {
        defs.extend(
            tasks
                .iter()
                .map(|(n, d)| (format!("{dir}/turbo.json: tasks.{n}"), d)),
        );
    }
    // Upstream task → (the place of each definition depending on it, its narrowing there).
    let mut dependants: BTreeMap<&str, Vec<(String, Option<&DependencyOutputs>)>> = BTreeMap::new();
    for (place, def) in &defs {
        for entry in def.depends_on.iter().flatten() {
            let upstream = task_of(entry);
            let narrowing = def.dependency_outputs.as_ref().filter(|o| {
                o.from
                    .as_ref()
                    .is_none_or(|from| from.iter().any(|f| task_of(f) == upstream))
            });
            let list = dependants.entry(upstream).or_default();
            list.push((place.clone(), narrowing));
        }
    }
    for (upstream, list) in dependants {
        match dependants_read(upstream, &list) {
            Ok(Some(globs)) => {
                turbo.dependants_read.insert(upstream.to_string(), globs);
            }
            Ok(None) => {}
            Err(why) => {
                let (place, at) = list
                    .iter()
                    .find_map(|(place, o)| o.filter(|o| o.globs.is_some()).map(|o| (place, o)))
                    .map(|(place, o)| (place.clone(), o.at.clone()))
                    .unwrap_or_default();
                turbo.not_carried.push(NotCarried {
                    what: format!("{place}.inputs dependencyOutputs globs"),
                    at,
                    why,
                });
            }
        }
    }
}

/// Why a top-level key is not carried over.
fn root_key_reason(key: &str) -> &'static str {
    match key {
        "ui" | "experimentalUI" => "vx chooses its display itself (docs/running.md)",
        "daemon" => "vx has no daemon; `vx watch` watches files",
        "envMode" => {
            "vx always runs a task with only the variables it passes (Turborepo's `strict`)"
        }
        "remoteCache" => "a remote cache is set in `[workspace.remote-cache]`",
        "cacheDir" => "vx keeps its own store (`[workspace] cache-dir`, default `.vx`)",
        "boundaries" | "tags" => "vx has no boundary rules",
        "dangerouslyDisablePackageManagerCheck" | "noUpdateNotifier" | "futureFlags" => {
            "no vx equivalent"
        }
        _ => "not a turbo.json key vx knows",
    }
}

/// The JSON object in the root-relative file `rel`, or `None` when there is none; a read
/// error, a syntax error or a value that is no object goes to `errors` at its location.
pub fn read_file(root: &Path, rel: &str, errors: &mut Vec<Diagnostic>) -> Option<JsonValue> {
    let bytes = match std::fs::read(root.join(rel)) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            errors.push(vx_engine::workspace::io_diagnostic(
                Path::new(rel),
                "read",
                &e,
            ));
            return None;
        }
    };
    match vx_workspace::read_jsonc(&String::from_utf8_lossy(&bytes), rel) {
        Ok(json) if matches!(json.kind, vx_workspace::JsonValueKind::Object(_)) => Some(json),
        Ok(json) => {
            errors.push(Diagnostic::at(
                json.at,
                format!("{rel} must hold an object"),
            ));
            None
        }
        Err(error) => {
            errors.push(error);
            None
        }
    }
}

/// A package's definition laid over the root's: each key it sets replaces the root's, an
/// array starting with `$TURBO_EXTENDS$` appends to it.
fn merged(base: TurboTask, own: TurboTask) -> TurboTask {
    let list = |base: Option<Vec<String>>, own: Option<Vec<String>>| match own {
        None => base,
        Some(own) if own.first().is_some_and(|f| f == "$TURBO_EXTENDS$") => {
            let mut all = base.unwrap_or_default();
            all.extend(own.into_iter().skip(1));
            Some(all)
        }
        Some(own) => Some(own),
    };
    TurboTask {
        at: own.at.or(base.at),
        description: own.description.or(base.description),
        depends_on: list(base.depends_on, own.depends_on),
        // An input list that replaces the root's replaces its input objects too.
        jit: match &own.inputs {
            Some(own_inputs) if own_inputs.first().is_none_or(|f| f != "$TURBO_EXTENDS$") => {
                own.jit
            }
            _ => base.jit.into_iter().chain(own.jit).collect(),
        },
        dependency_outputs: match &own.inputs {
            Some(own_inputs) if own_inputs.first().is_none_or(|f| f != "$TURBO_EXTENDS$") => {
                own.dependency_outputs
            }
            _ => own.dependency_outputs.or(base.dependency_outputs),
        },
        inputs: list(base.inputs, own.inputs),
        outputs: list(base.outputs, own.outputs),
        cache: own.cache.or(base.cache),
        persistent: own.persistent.or(base.persistent),
        interactive: own.interactive.or(base.interactive),
        env: list(base.env, own.env),
        pass_through_env: list(base.pass_through_env, own.pass_through_env),
        items: base.items.into_iter().chain(own.items).collect(),
    }
}

struct Reader<'a> {
    errors: &'a mut Vec<Diagnostic>,
    not_carried: &'a mut Vec<NotCarried>,
}

impl Reader<'_> {
    fn leave(&mut self, what: &str, at: &Location, why: &str) {
        self.not_carried.push(NotCarried {
            what: what.to_string(),
            at: at.clone(),
            why: why.to_string(),
        });
    }

    fn task(&mut self, def: &JsonValue, path: &str) -> TurboTask {
        let mut task = TurboTask {
            at: Some(def.at.clone()),
            ..TurboTask::default()
        };
        if def.entries().is_empty() && !matches!(def.kind, vx_workspace::JsonValueKind::Object(_)) {
            self.wrong_type(def, path, "an object");
            return task;
        }
        for (key, value) in def.entries() {
            let what = format!("{path}.{}", key.value);
            match key.value.as_str() {
                "dependsOn" => {
                    task.depends_on = self.strings(value, &what);
                    self.locate(value, "dependsOn", &mut task.items);
                }
                "inputs" => {
                    let mut wrong = |item: &JsonValue, expected: &str| {
                        self.wrong_type(item, &what, expected);
                    };
                    if let Some(read) = read_inputs(value, &mut wrong) {
                        task.inputs = Some(read.globs);
                        task.jit = read.jit;
                        task.dependency_outputs = read.dependency_outputs;
                    }
                }
                "outputs" => task.outputs = self.strings(value, &what),
                "env" => {
                    task.env = self.strings(value, &what);
                    self.locate(value, "env", &mut task.items);
                }
                "passThroughEnv" => {
                    task.pass_through_env = self.strings(value, &what);
                    self.locate(value, "passThroughEnv", &mut task.items);
                }
                "cache" => task.cache = self.boolean(value, &what),
                "persistent" => task.persistent = self.boolean(value, &what),
                "interactive" => task.interactive = self.boolean(value, &what),
                "description" => match value.as_str() {
                    Some(text) => task.description = Some(text.to_string()),
                    None => self.wrong_type(value, &what, "a string"),
                },
                "outputLogs" | "outputMode" => self.leave(
                    &what,
                    &key.at,
                    "vx shows each task's output by its own rules (docs/running.md)",
                ),
                "interruptible" => self.leave(
                    &what,
                    &key.at,
                    "`vx watch` restarts persistent tasks by its own rules",
                ),
                "with" => self.leave(
                    &what,
                    &key.at,
                    "vx has no sidecar tasks; a group task with both in `depends-on` runs them together",
                ),
                _ => self.leave(&what, &key.at, "not a turbo.json task key vx knows"),
            }
        }
        task
    }

    /// Records where each string item of `value` was written, under `key`.
    fn locate(
        &self,
        value: &JsonValue,
        key: &str,
        items: &mut BTreeMap<(String, String), Location>,
    ) {
        for item in value.as_array().unwrap_or_default() {
            if let Some(text) = item.as_str() {
                items.insert((key.to_string(), text.to_string()), item.at.clone());
            }
        }
    }

    fn strings(&mut self, value: &JsonValue, what: &str) -> Option<Vec<String>> {
        let Some(items) = value.as_array() else {
            self.wrong_type(value, what, "an array of strings");
            return None;
        };
        let mut out = Vec::new();
        for item in items {
            match item.as_str() {
                Some(text) => out.push(text.to_string()),
                None => self.wrong_type(item, what, "a string"),
            }
        }
        Some(out)
    }

    fn boolean(&mut self, value: &JsonValue, what: &str) -> Option<bool> {
        let b = value.as_bool();
        if b.is_none() {
            self.wrong_type(value, what, "true or false");
        }
        b
    }

    fn wrong_type(&mut self, value: &JsonValue, what: &str, expected: &str) {
        self.errors.push(Diagnostic::at(
            value.at.clone(),
            format!("{what}: expected {expected}, found {}", value.type_name()),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::super::{env_entry, leaves_package, resolve_from, root_relative};
    use super::*;

    #[test]
    fn a_package_definition_overrides_by_key_and_extends_arrays() {
        let base = TurboTask {
            outputs: Some(vec!["dist/**".into()]),
            depends_on: Some(vec!["^build".into()]),
            env: Some(vec!["A".into()]),
            ..TurboTask::default()
        };
        let own = TurboTask {
            outputs: Some(vec!["$TURBO_EXTENDS$".into(), "types/**".into()]),
            env: Some(vec!["B".into()]),
            ..TurboTask::default()
        };
        let m = merged(base, own);
        assert_eq!(m.outputs.unwrap(), ["dist/**", "types/**"]);
        assert_eq!(m.env.unwrap(), ["B"]);
        assert_eq!(m.depends_on.unwrap(), ["^build"]);
    }

    #[test]
    fn globs_above_the_package_resolve_from_its_directory() {
        assert_eq!(
            resolve_from("packages/a", "../../tsconfig.json").as_deref(),
            Some("tsconfig.json")
        );
        assert_eq!(
            resolve_from("packages/a", "!./../shared/src/**").as_deref(),
            Some("!packages/shared/src/**")
        );
        assert_eq!(
            resolve_from("apps/web/site", "../../../tsup.config.base.ts").as_deref(),
            Some("tsup.config.base.ts")
        );
        assert_eq!(resolve_from("packages/a", "../../../x"), None);
        assert_eq!(resolve_from("", "../x"), None);
        assert!(leaves_package("!../x") && leaves_package("./../x"));
        assert!(!leaves_package("src/../x") && !leaves_package("$TURBO_ROOT$/x"));
    }

    #[test]
    fn variables_vx_cannot_express_are_refused() {
        assert_eq!(env_entry("NEXT_PUBLIC_*"), Ok("NEXT_PUBLIC_*".to_string()));
        assert!(env_entry("!SECRET").is_err());
        assert!(env_entry("*_KEY").is_err());
        assert_eq!(
            root_relative("$TURBO_ROOT$/tsconfig.json").unwrap(),
            "tsconfig.json"
        );
        assert_eq!(root_relative("src/**"), None);
    }
}
