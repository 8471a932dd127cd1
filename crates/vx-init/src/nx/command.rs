//! The command and outputs of an Nx target as vx keys: `command`, `nx:run-commands`,
//! `nx:run-script`, any other executor through `nx run`; outputs with their placeholders
//! resolved per project, and the outputs a project's other tasks must take back.

use std::collections::{BTreeMap, BTreeSet};

use vx_workspace::JsonValue;

use super::super::turbo::NotCarried;
use super::config::{merge, Nx, Place};

/// The command that has Nx run one target, without its dependencies (vx runs those) and
/// without Nx's cache (vx caches it), nor a daemon left behind.
pub(super) fn through_nx(project: &str, target: &str) -> String {
    format!(
        "NX_DAEMON=false nx run {}:{} --excludeTaskDependencies --skipNxCache",
        shell_word(project),
        shell_word(target)
    )
}

/// A word for `sh -c`: as it is when it is safe, else in single quotes.
pub(super) fn shell_word(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@/._-:+=".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// `{options.x}` and `{options.x.y}` placeholders of `text` replaced by the string values at
/// those paths of a target's `options`; the others are left.
pub(super) fn fill_options(text: &str, options: &JsonValue) -> String {
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
    /// The command of a project's target: `command`, `nx:run-commands`, `nx:run-script`, or
    /// the script of the same name.
    pub(super) fn command(
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
            let cwd = cwd.map(|c| {
                c.replace("{projectRoot}", place.dir)
                    .replace("{workspaceRoot}/", "")
                    .replace("{workspaceRoot}", "")
            });
            // The project's own directory, where vx runs the command anyway: no `cd`.
            if cwd.as_deref() == Some(place.dir) && !place.dir.is_empty() {
                return String::new();
            }
            if let Some(cwd) = cwd.as_deref().filter(|c| !c.is_empty() && *c != ".") {
                path = if path.is_empty() {
                    cwd.to_string()
                } else {
                    format!("{path}/{cwd}")
                };
            }
            path
        };
        // Nx fills these in a command; it runs from the workspace root unless `cwd` says.
        let filled = |command: &str| {
            command
                .replace("{projectRoot}", place.dir)
                .replace("{projectName}", place.project)
        };
        let in_dir = |dir: String, command: &str| {
            let command = &filled(command);
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
            // Nx's target that only orders others: a group.
            (Some("nx:noop"), None) => None,
            // An executor is Nx code: the task asks Nx to run that one target, its
            // dependencies left to vx and the cache to vx.
            (Some(_), None) => Some(through_nx(place.project, name)),
            (None, None) => script.map(str::to_string),
        }
    }

    /// A target's outputs: project-relative, and root-relative. Placeholders that need the
    /// project (`{workspaceRoot}/dist/{projectRoot}`) resolve only with `dir`.
    pub(super) fn outputs(
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
}
