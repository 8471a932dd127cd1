//! Nx's inputs as vx cache keys: `namedInputs` as input sets, a target's `inputs` (with
//! `^name` carried as the same set in the dependency projects, and what vx cannot fold
//! named so the task is left uncached), the variables a cache folds, and Nx's globs as vx's.

use std::collections::BTreeSet;

use vx_workspace::JsonValue;

use super::super::scripts::TodoReason;
use super::super::toml::{Cache, InputSetTable};
use super::super::turbo::NotCarried;
use super::config::{merge, shown, Nx};

/// A set name vx takes (letters, digits, `-`, `_`).
pub(super) fn set_name(name: &str) -> String {
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
pub(super) struct Inputs {
    pub(super) input_sets: Vec<String>,
    pub(super) inputs: Vec<String>,
    pub(super) workspace_inputs: Vec<String>,
    pub(super) env: Vec<String>,
    pub(super) runtime: Vec<String>,
    /// Inputs Nx hashes that vx cannot fold (each in words): a task with any is left
    /// uncached, never cached over fewer inputs than Nx sees.
    pub(super) narrower: Vec<String>,
}

impl Nx {
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
    pub(super) fn inputs(
        &self,
        list: &JsonValue,
        what: &str,
        left: &mut Vec<NotCarried>,
    ) -> Inputs {
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
                    "upstream outputs: vx folds what the tasks this one depends on produced; \
                     to fold only some of their outputs, set `cache.dependants-read` on them",
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
    pub(super) fn target_inputs(
        &self,
        list: &JsonValue,
        what: &str,
        left: &mut Vec<NotCarried>,
    ) -> Inputs {
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

    /// Whether Nx caches target `name` with configuration `def` and vx can fold every input
    /// Nx hashes for it.
    pub(super) fn caches(&self, name: &str, def: &JsonValue) -> bool {
        self.cached(name, def) && self.narrower(def).is_empty()
    }

    /// The inputs of `def` vx cannot fold, in words.
    pub(super) fn narrower(&self, def: &JsonValue) -> Vec<String> {
        def.get("inputs")
            .map(|list| self.target_inputs(list, "", &mut Vec::new()).narrower)
            .unwrap_or_default()
    }

    /// The variables a cache table folds, its sets' included: Nx gives a task the whole
    /// environment, vx only what it passes, so these are passed too.
    pub(super) fn env_of(&self, cache: &Cache) -> Vec<String> {
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
}

/// `^default`: Nx folds it when a target gives no `inputs`.
pub(super) const DEPENDENCY_DEFAULT: &str = "^default";

/// The TODO of a task Nx caches over inputs vx cannot fold, which is left uncached.
pub(super) fn uncached_todo(narrower: &[String]) -> Option<(TodoReason, String)> {
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

pub(super) fn apply_inputs(cache: &mut Cache, inputs: Inputs) {
    cache.input_sets = inputs.input_sets;
    cache.inputs = (!inputs.inputs.is_empty()).then_some(inputs.inputs);
    cache.workspace_inputs = inputs.workspace_inputs;
    cache.env = inputs.env;
    cache.runtime = inputs.runtime;
}

/// An Nx file set as vx globs: `(root-relative, globs)`.
pub(super) fn fileset(text: &str) -> Result<(bool, Vec<String>), String> {
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
pub(super) fn extglob_to_braces(glob: &str) -> Option<Vec<String>> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
