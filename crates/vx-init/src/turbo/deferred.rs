//! Turborepo 2.11's input objects (`{ "mode": "jit", … }`, `{ "mode": "dependencyOutputs", … }`)
//! and where `vx init` carries them.
//!
//! - `jit` globs are hashed just before the task runs: every vx key is taken then (KEY-14),
//!   so they are plain inputs — unless they reach the outputs of a task of the same package
//!   this one depends on (`codegen`'s `src/generated/**`): vx refuses an input that reaches
//!   another task's outputs (GRAPH-9) and folds those outputs through the upstream instead, so
//!   such a glob is dropped ([`reaches`]).
//! - `dependencyOutputs` folds the outputs of the tasks a task depends on, where vx folds them
//!   by default (early cutoff). Its `globs` narrow those outputs on the dependant's side; vx
//!   keeps that list on the upstream (`cache.dependants-read`), so it is carried only when every
//!   definition that depends on the upstream task gives the same list ([`dependants_read`]):
//!   otherwise some dependant would fold less than Turborepo folds for it.

use vx_core::globs::literal_prefix;
use vx_core::Location;
use vx_workspace::JsonValue;

/// A `{ "mode": "dependencyOutputs" }` input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DependencyOutputs {
    /// `globs`: which of the upstreams' outputs are folded (all when `None`).
    pub globs: Option<Vec<String>>,
    /// `from`: the upstream entries it applies to (the task's `dependsOn` when `None`).
    pub from: Option<Vec<String>>,
    pub at: Location,
}

/// A task's `inputs` as read.
#[derive(Debug, Default)]
pub struct Inputs {
    /// Every glob, the `jit` ones last.
    pub globs: Vec<String>,
    /// The `jit` globs.
    pub jit: Vec<String>,
    pub dependency_outputs: Option<DependencyOutputs>,
}

/// A task's `inputs`, or `None` when it is not an array. `wrong(value, expected)` reports an
/// item of the wrong shape.
pub fn read_inputs(value: &JsonValue, wrong: &mut dyn FnMut(&JsonValue, &str)) -> Option<Inputs> {
    let Some(items) = value.as_array() else {
        wrong(value, "an array of strings and input objects");
        return None;
    };
    let mut read = Inputs::default();
    let strings = |value: Option<&JsonValue>, wrong: &mut dyn FnMut(&JsonValue, &str)| {
        let value = value?;
        let Some(items) = value.as_array() else {
            wrong(value, "an array of strings");
            return None;
        };
        let mut out = Vec::new();
        for item in items {
            match item.as_str() {
                Some(text) => out.push(text.to_string()),
                None => wrong(item, "a string"),
            }
        }
        Some(out)
    };
    for item in items {
        if let Some(text) = item.as_str() {
            read.globs.push(text.to_string());
            continue;
        }
        match item.get("mode").and_then(JsonValue::as_str) {
            Some("jit") => read
                .jit
                .extend(strings(item.get("globs"), wrong).unwrap_or_default()),
            Some("dependencyOutputs") => {
                read.dependency_outputs = Some(DependencyOutputs {
                    globs: strings(item.get("globs"), wrong),
                    from: strings(item.get("from"), wrong),
                    at: item.at.clone(),
                });
            }
            _ => wrong(
                item,
                "a glob, or an object with `mode` `jit` or `dependencyOutputs`",
            ),
        }
    }
    read.globs.extend(read.jit.iter().cloned());
    Some(read)
}

/// Whether an input glob reaches what an output glob names, by their literal prefixes (the
/// path up to the first wildcard), either below the other.
pub fn reaches(input: &str, output: &str) -> bool {
    let under = |a: &str, b: &str| {
        b.is_empty() || a == b || a.strip_prefix(b).is_some_and(|rest| rest.starts_with('/'))
    };
    let prefix = |glob: &str| {
        let glob = glob.trim_start_matches("./");
        literal_prefix(glob).trim_end_matches('/').to_string()
    };
    let (input, output) = (prefix(input), prefix(output));
    under(&input, &output) || under(&output, &input)
}

/// The task a `dependsOn` (or `from`) entry names: `^build`, `build`, `web#build`, `//#build`
/// all name `build`.
pub fn task_of(entry: &str) -> &str {
    let entry = entry.trim_start_matches('^');
    entry.rsplit_once('#').map_or(entry, |(_, task)| task)
}

/// What `cache.dependants-read` of task `upstream` carries: `dependants` are, for each
/// definition (its place, `tasks.web#test`) that depends on `upstream`, its
/// `dependencyOutputs`. `Ok(None)` when none narrows the outputs; `Err` says why a list some
/// definition gives is not carried.
pub fn dependants_read(
    upstream: &str,
    dependants: &[(String, Option<&DependencyOutputs>)],
) -> Result<Option<Vec<String>>, String> {
    let narrowed: Vec<&Vec<String>> = dependants
        .iter()
        .filter_map(|(_, outputs)| outputs.and_then(|o| o.globs.as_ref()))
        .collect();
    let Some(first) = narrowed.first() else {
        return Ok(None);
    };
    if let Some((place, _)) = dependants
        .iter()
        .find(|(_, outputs)| outputs.and_then(|o| o.globs.as_ref()) != Some(first))
    {
        return Err(format!(
            "vx keeps this list on the upstream (`cache.dependants-read` of `{upstream}`), and \
             `{place}` depends on `{upstream}` without the same list: vx folds all of \
             `{upstream}`'s outputs"
        ));
    }
    if let Some(glob) = first.iter().find(|g| g.contains("$TURBO_ROOT$")) {
        return Err(format!(
            "`{glob}`: `cache.dependants-read` is over the upstream's own outputs: vx folds all \
             of `{upstream}`'s outputs"
        ));
    }
    Ok(Some(first.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outputs(globs: Option<&[&str]>) -> DependencyOutputs {
        DependencyOutputs {
            globs: globs.map(|g| g.iter().map(|s| s.to_string()).collect()),
            from: None,
            at: Location::default(),
        }
    }

    #[test]
    fn a_list_is_carried_only_when_every_dependant_gives_it() {
        let maps = outputs(Some(&["dist/**", "!**/*.map"]));
        let types = outputs(Some(&["dist/**/*.d.ts"]));
        let all = outputs(None);
        let of = |list: &[Option<&DependencyOutputs>]| {
            let list: Vec<(String, Option<&DependencyOutputs>)> = list
                .iter()
                .enumerate()
                .map(|(i, o)| (format!("tasks.t{i}"), *o))
                .collect();
            dependants_read("build", &list)
        };
        assert_eq!(
            of(&[Some(&maps), Some(&maps)]),
            Ok(Some(vec!["dist/**".into(), "!**/*.map".into()]))
        );
        assert_eq!(of(&[Some(&all), None]), Ok(None));
        let mixed = of(&[Some(&maps), Some(&types)]).unwrap_err();
        assert!(mixed.contains("`tasks.t1` depends on `build`"), "{mixed}");
        assert!(of(&[Some(&maps), None]).is_err());
        assert_eq!(task_of("^build"), "build");
        assert_eq!(task_of("web#build"), "build");
        assert_eq!(task_of("//#build"), "build");
    }

    #[test]
    fn a_glob_reaches_outputs_at_or_below_its_prefix_or_above_it() {
        assert!(reaches("src/generated/**", "src/generated/**"));
        assert!(reaches("src/generated/api.ts", "src/generated"));
        assert!(reaches("src/**", "src/generated/**"));
        assert!(reaches("**/*.ts", "gen/**"));
        assert!(!reaches("src/gen/**", "src/generated/**"));
        assert!(!reaches("config/*.json", "dist/**"));
    }
}
