//! Nx's configuration as vx reads it: `nx.json` and every member's targets, and the JSON
//! helpers its readers share (a target default merged under a project's own, a value shown).

use std::collections::{BTreeMap, BTreeSet};

use vx_core::Location;
use vx_workspace::{JsonValue, JsonValueKind};

use crate::turbo::NotCarried;

/// One project's Nx configuration.
#[derive(Debug, Clone, Default)]
pub struct NxProject {
    /// `project.json` `name`.
    pub name: Option<(String, Location)>,
    /// Targets by name, from `project.json` then the `nx` field of `package.json`.
    pub targets: BTreeMap<String, JsonValue>,
    pub tags: Vec<String>,
    /// `implicitDependencies`: project names, which become `deps`.
    pub implicit: Vec<String>,
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
    /// A project's Nx name (`project.json` or `package.json` `nx.name`) → its vx name (its
    /// `package.json` name), where the two differ.
    pub vx_names: BTreeMap<String, String>,
    /// The root package's targets when the root is an Nx project (its `package.json` has an
    /// `nx` field): `includedScripts`, else every script (`None` for all).
    pub root_targets: Option<Option<BTreeSet<String>>>,
    pub not_carried: Vec<NotCarried>,
    /// `plugins`: names, or `{plugin, options, include, exclude}`.
    pub plugins: Vec<JsonValue>,
    /// Targets inferred from a plugin's configuration file without Nx (`infer.rs`):
    /// (directory, target) → the file and the plugin, for the TODO.
    pub inferred: BTreeMap<(String, String), String>,
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

/// `targetDefaults[name]` with the project's own configuration laid over it key by key.
pub(super) fn merge(default: Option<&JsonValue>, own: Option<&JsonValue>) -> JsonValue {
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

/// A JSON item shown in a message.
pub(super) fn shown(item: &JsonValue) -> String {
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
