//! The configuration model: what a `vx.toml` means once it has been parsed and validated.
//!
//! The loader in `vx-workspace` builds these types from the TOML tree (keeping source locations
//! for everything a later error may need to point at), and `vx schema` derives its JSON Schema
//! from the same types, so the schema and the loader cannot drift apart. Every key of every
//! milestone is modelled here (CFG-12); the loader refuses keys whose feature is not built yet.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::location::{Location, Spanned};

/// Where each key or glob of a table was written: a sorted vector, small per task (a
/// `BTreeMap` leaf reserves eleven slots; at tens of thousands of tasks that was about 1.5 KB
/// each).
pub type Locations<K> = litemap::LiteMap<K, Location>;
/// The file name vx reads in every project and at the root.
pub const CONFIG_FILE: &str = "vx.toml";

/// The lock `vx lock` writes at the root (INIT-4): in no key (KEY-13).
pub const LOCK_FILE: &str = "vx.lock";

/// A whole `vx.toml`: the root file may carry `[workspace]`; any file may declare a project.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
#[schemars(
    title = "vx.toml",
    description = "Configuration of a vx workspace root or project"
)]
pub struct ConfigFile {
    /// Workspace settings; only in the root `vx.toml`. Its presence marks the workspace root.
    pub workspace: Option<WorkspaceConfig>,
    #[serde(flatten)]
    pub project: ProjectConfig,
}

/// `[workspace]`: settings of the whole workspace, only in the root `vx.toml`.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct WorkspaceConfig {
    /// Member directory globs, root-relative; `!` entries exclude. Default: `pnpm-workspace.yaml`
    /// `packages`, else `package.json` `workspaces`.
    pub members: Option<Vec<Spanned<String>>>,
    /// Member directories `--all` leaves out (examples, integrations): globs as in `members`.
    #[schemars(extend("default" = []))]
    pub exclude_from_all: Vec<Spanned<String>>,
    /// Default `--concurrency`: a positive integer. Default: the available CPUs.
    #[schemars(range(min = 1))]
    pub concurrency: Option<u32>,
    /// Store location: root-relative, `~/`, or absolute. Default `.vx`.
    pub cache_dir: Option<String>,
    /// Lowest-precedence default task timeout, a duration such as `30m`.
    #[serde(with = "opt_duration")]
    #[schemars(with = "Option<String>")]
    pub timeout: Option<Duration>,
    /// Automatic prune after each run; at least one key.
    pub cache_retention: Option<CacheRetention>,
    /// Default base ref for bare `--affected`.
    pub affected_base: Option<String>,
    /// The interface of `vx run` and `vx watch` on a terminal: `plain` (default) or `tui` (the
    /// full-screen task UI); `--ui` overrides it.
    #[schemars(extend("enum" = ["plain", "tui"]))]
    pub ui: Option<String>,
    /// Task templates: a `[workspace.tasks.<name>]` table gives defaults to every project's task
    /// of that name.
    #[schemars(extend("default" = {}))]
    pub tasks: BTreeMap<String, TaskConfig>,
    /// Named input sets, used by `cache.input-sets` of templates and tasks.
    #[schemars(extend("default" = {}))]
    pub input_sets: BTreeMap<String, InputSet>,
    /// The remote cache layer.
    pub remote_cache: Option<RemoteCacheConfig>,
    /// The remote executor.
    pub remote_execution: Option<RemoteExecutionConfig>,
    /// Graph checks.
    pub rules: Option<RulesConfig>,
}

/// `[workspace.input-sets.<name>]`: inputs many cache tables share, added to a cache table
/// that names the set in its `input-sets`.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct InputSet {
    /// Project-relative input globs.
    #[schemars(extend("default" = []))]
    pub inputs: Vec<String>,
    /// Root-relative input globs.
    #[schemars(extend("default" = []))]
    pub workspace_inputs: Vec<String>,
    /// Environment variables (or prefixes ending in `*`) folded into the key.
    #[schemars(extend("default" = []))]
    pub env: Vec<String>,
    /// Probes run in the project directory.
    #[schemars(extend("default" = []))]
    pub runtime: Vec<String>,
    /// Probes run at the root.
    #[schemars(extend("default" = []))]
    pub workspace_runtime: Vec<String>,
    /// Other sets this one includes.
    #[schemars(extend("default" = []))]
    pub input_sets: Vec<String>,
    /// Where each glob was written, as in [`CacheConfig::locations`].
    #[serde(skip)]
    #[schemars(skip)]
    pub locations: Locations<(String, String)>,
}

/// `cache-retention = { older-than?, max-size? }`.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct CacheRetention {
    /// Remove entries not used for this long (a duration).
    pub older_than: Option<String>,
    /// Keep the store under this size (a size such as `20G`).
    pub max_size: Option<String>,
}

/// `[workspace.rules]`.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct RulesConfig {
    /// Refuse cached tasks whose outputs overlap. Default `true`.
    pub exclusive_outputs: Option<bool>,
    /// Refuse inputs that could match another task's outputs. Default `true`.
    pub upfront_keys: Option<bool>,
}

/// `[workspace.remote-cache]`: a cache shared across machines (HTTP or a REAPI server).
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct RemoteCacheConfig {
    /// `http(s)://…` (HTTP protocol) or `grpc(s)://host:port` (REAPI). Required.
    pub url: Option<String>,
    /// HTTP namespace sent as `slug`.
    pub team: Option<String>,
    /// HTTP namespace sent as `teamId`.
    pub team_id: Option<String>,
    /// REAPI instance name. Default `""`.
    pub instance_name: Option<String>,
    /// Variable holding the bearer token. Default `VX_REMOTE_CACHE_TOKEN`.
    pub token_env: Option<String>,
    /// `ci`, `always` or `never`. Default `ci`.
    pub write: Option<String>,
    /// Variable holding the artifact signing key (HTTP only).
    pub signature_key_env: Option<String>,
    /// Per connection attempt, a duration. Default `2s`.
    pub connect_timeout: Option<String>,
    /// A transfer with no progress for this long fails. Default `30s`.
    pub idle_timeout: Option<String>,
    /// A whole request (connecting, sending, the answer) must end within this. Default `60s`.
    pub request_timeout: Option<String>,
    /// Compressed size cap for one artifact. Default `1G`.
    pub max_download_size: Option<String>,
    /// Parallel background uploads. Default 32.
    pub upload_concurrency: Option<u32>,
    /// Downloads and existence checks in flight at once. Default 64.
    pub download_concurrency: Option<u32>,
}

/// `[workspace.remote-execution]`: a Remote Execution API server that runs `remote` tasks.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct RemoteExecutionConfig {
    /// The server: a `grpc://` or `grpcs://` URL. Required.
    pub url: Option<String>,
    /// The REAPI instance name. Default `""`.
    pub instance_name: Option<String>,
    /// Variable holding the token. Default `VX_REMOTE_EXEC_TOKEN`.
    pub token_env: Option<String>,
    /// Platform properties every action asks for (`OSFamily = "linux"`), sent verbatim.
    pub platform: BTreeMap<String, String>,
    /// The `PATH` tail on the worker. Default `/usr/local/bin:/usr/bin:/bin`.
    pub path: Option<String>,
    /// Actions sent at once. Default 4 × the run concurrency.
    pub max_in_flight: Option<u32>,
}

/// The project keys of a `vx.toml`.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct ProjectConfig {
    /// Project name when there is no `package.json` `name`.
    pub name: Option<Spanned<String>>,
    /// Extra project dependency edges (project names).
    #[schemars(extend("default" = []))]
    pub deps: Vec<Spanned<String>>,
    /// Labels for `--filter tag:…`.
    #[schemars(extend("default" = []))]
    pub tags: Vec<String>,
    /// The tasks, by name.
    #[schemars(extend("default" = {}))]
    pub tasks: BTreeMap<String, Box<TaskConfig>>,
}

/// One `[tasks.<name>]` table: a task of the project.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct TaskConfig {
    /// Shown by `--dry` and `vx show`; not in the key.
    pub description: Option<String>,
    /// Run with `sh -c` in the project directory. Absent: a group task.
    pub command: Option<String>,
    /// Edges: `name`, `^name`, `project#name`, `pre*`, `^pre*`.
    #[schemars(extend("default" = []))]
    pub depends_on: Vec<Spanned<String>>,
    /// The child environment.
    pub env: Option<Box<EnvConfig>>,
    /// Bound on the run (for persistent tasks, on readiness), a duration such as `10m`.
    #[serde(with = "opt_duration")]
    #[schemars(with = "Option<String>")]
    pub timeout: Option<Duration>,
    /// Extra attempts after a failure. Default 0.
    pub retries: Option<u32>,
    /// `true`, or `{ ready-when = "<regex>" }`: a long-running task.
    pub persistent: Option<Persistent>,
    /// The task owns the terminal. Default `false`.
    pub interactive: Option<bool>,
    /// Opt-in sandbox.
    pub sandbox: Option<Box<SandboxConfig>>,
    /// Opt-in caching.
    pub cache: Option<Box<CacheConfig>>,
    /// Opt in to remote execution: `true` or `{ platform?, extra-inputs? }`.
    pub remote: Option<Box<RemoteTask>>,
    /// `false`: the workspace template of the same name does not apply. Default `true`.
    pub extends: Option<bool>,
    /// Where `[tasks.<name>]` was declared.
    #[serde(skip)]
    #[schemars(skip)]
    pub at: Location,
    /// Where each key of the table was written, for `vx show` and errors.
    #[serde(skip)]
    #[schemars(skip)]
    pub key_locations: Locations<String>,
}

impl TaskConfig {
    /// A group task has no command; it only has dependencies (GRAPH-4).
    pub fn is_group(&self) -> bool {
        self.command.is_none()
    }

    pub fn is_persistent(&self) -> bool {
        self.persistent.is_some()
    }
}

/// `persistent = true` or `persistent = { ready-when = "<regex>" }`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Persistent {
    Plain(bool),
    Ready(ReadyWhen),
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ReadyWhen {
    /// A regular expression matched against each output line.
    pub ready_when: String,
}

/// `env = { pass-through?, define?, secret? }`: the task's environment (by default only a
/// short allowlist of vx's own).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct EnvConfig {
    /// Names (or prefixes ending in `*`) copied from vx's environment.
    #[schemars(extend("default" = []))]
    pub pass_through: Vec<String>,
    /// Literal `NAME = "value"` pairs.
    #[schemars(extend("default" = {}))]
    pub define: BTreeMap<String, String>,
    /// Names whose values are masked in all output.
    #[schemars(extend("default" = []))]
    pub secret: Vec<String>,
}

/// `sandbox = { read?, write?, network? }`: run the task in a sandbox that allows only these
/// besides its inputs and outputs.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// Paths the task may read.
    #[schemars(extend("default" = []))]
    pub read: Vec<String>,
    /// Paths the task may write (implies read).
    #[schemars(extend("default" = []))]
    pub write: Vec<String>,
    /// Host patterns the task may reach through the proxy.
    #[schemars(extend("default" = []))]
    pub network: Vec<String>,
}

/// `cache = { … }`: cache the task's results, keyed by its inputs.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct CacheConfig {
    /// Named input sets (`[workspace.input-sets]`) whose entries are added to this table's.
    #[schemars(extend("default" = []))]
    pub input_sets: Vec<String>,
    /// Project-relative input globs. Required unless an input set or a workspace template
    /// gives them.
    pub inputs: Option<Vec<String>>,
    /// Root-relative input globs.
    #[schemars(extend("default" = []))]
    pub workspace_inputs: Vec<String>,
    /// Project-relative globs matched in every project this one depends on, transitively,
    /// less the outputs of those projects' cached tasks: what a `^name` entry of
    /// `input-sets` adds (Nx's `^production`). Not a key a user writes; `vx.lock` and
    /// `vx show` carry it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(skip)]
    pub dependency_inputs: Vec<String>,
    /// Environment variables (or prefixes ending in `*`) folded into the key.
    #[schemars(extend("default" = []))]
    pub env: Vec<String>,
    /// Probes run in the project directory; their output is folded into the key.
    #[schemars(extend("default" = []))]
    pub runtime: Vec<String>,
    /// Probes run at the root, deduplicated across the run.
    #[schemars(extend("default" = []))]
    pub workspace_runtime: Vec<String>,
    /// Which upstream keys to fold. Default: all.
    pub upstream: Option<Vec<String>>,
    /// Upstreams (same patterns as `upstream`) whose key is folded instead of the digest of
    /// their outputs: for a task that reads something of an upstream that is not among its
    /// declared outputs. Default: none (early cutoff for every upstream with outputs).
    #[schemars(extend("default" = []))]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub upstream_keys: Vec<String>,
    /// Project-relative output globs; `[]` = a cached task with no files. Required.
    pub outputs: Option<Vec<String>>,
    /// Project-relative globs over `outputs`: the ones a dependant's key folds (early cutoff);
    /// the rest (source maps, say) can change without re-running dependants. Default: all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependants_read: Option<Vec<String>>,
    /// Root-relative output globs.
    #[schemars(extend("default" = []))]
    pub workspace_outputs: Vec<String>,
    /// The outputs do not depend on the OS or the CPU. Default `false`.
    pub portable: Option<bool>,
    /// Where each glob was written: (`inputs`, `workspace-inputs`, …; the entry) → location,
    /// for errors about one glob (GRAPH-9). An entry a template's default gave is located at
    /// that template's `cache`.
    #[serde(skip)]
    #[schemars(skip)]
    pub locations: Locations<(String, String)>,
}

/// `remote = true` or `remote = { platform?, extra-inputs? }`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RemoteTask {
    Plain(bool),
    Detailed(RemoteTaskConfig),
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct RemoteTaskConfig {
    /// Platform properties for this task's actions, over the workspace's.
    #[schemars(extend("default" = {}))]
    pub platform: BTreeMap<String, String>,
    /// Root-relative globs of files the task reads besides its cache inputs.
    #[schemars(extend("default" = []))]
    pub extra_inputs: Vec<String>,
}

/// The JSON Schema (draft 2020-12) of `vx.toml` (CFG-11): strict (an unknown key is an error)
/// and with no key required that has a default, so an editor checks a file as vx would.
pub fn json_schema() -> serde_json::Value {
    // TOML has no null: an absent key is how a value is left out, so no `null` alternative (an
    // `anyOf` of a table and null would also hide which key of the table is wrong).
    let schema = schemars::schema_for!(ConfigFile);
    let mut value = serde_json::to_value(schema).expect("a schema always serialises");
    drop_null(&mut value);
    value
}

/// Takes `null` out of every schema: `"type": ["string", "null"]` becomes `"string"`,
/// `"anyOf": [X, {"type": "null"}]` becomes X, and `"default": null` goes (the default of an
/// optional key is its absence).
fn drop_null(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            if map.get("default").is_some_and(Value::is_null) {
                map.remove("default");
            }
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".into(), only);
                }
            }
            let null = serde_json::json!({ "type": "null" });
            if let Some(Value::Array(alternatives)) = map.get_mut("anyOf") {
                alternatives.retain(|a| *a != null);
                if alternatives.len() == 1 {
                    let Some(Value::Object(only)) = alternatives.pop() else {
                        unreachable!("a schema is an object")
                    };
                    map.remove("anyOf");
                    map.extend(only);
                }
            }
            map.values_mut().for_each(drop_null);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null),
        _ => {}
    }
}

mod opt_duration {
    use std::time::Duration;

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        let text: Option<String> = serde::Deserialize::deserialize(deserializer)?;
        text.map(|t| {
            crate::units::parse_duration(&t)
                .ok_or_else(|| serde::de::Error::custom(format!("`{t}` is not a duration")))
        })
        .transpose()
    }

    pub fn serialize<S: serde::Serializer>(
        value: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => serializer.serialize_some(&crate::units::format_config_duration(*d)),
            None => serializer.serialize_none(),
        }
    }
}

impl serde::Serialize for Location {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Read back without its location (a frozen run's configuration comes from `vx.lock`, which
/// keeps none); the caller places it.
impl<'de, T: Deserialize<'de>> Deserialize<'de> for Spanned<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(|value| Spanned::new(value, Location::default()))
    }
}

impl<T: Serialize> Serialize for Spanned<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_describes_root_and_project_keys() {
        let schema = json_schema();
        let text = schema.to_string();
        assert!(text.contains("2020-12"), "{text}");
        for key in [
            "workspace",
            "members",
            "cache-retention",
            "depends-on",
            "pass-through",
            "ready-when",
            "workspace-inputs",
            "extra-inputs",
            "exclusive-outputs",
        ] {
            assert!(text.contains(&format!("\"{key}\"")), "schema lacks {key}");
        }
    }

    /// Written for users and for editors: every table strict, nothing required but the one
    /// key of `{ ready-when }`, no `null`, and no spec ids in the descriptions.
    #[test]
    fn schema_is_strict_and_requires_only_what_has_no_default() {
        let schema = json_schema();
        let text = schema.to_string();
        assert!(!text.contains("null"), "{text}");
        let ids = regex::Regex::new(r"\b(CFG|GRAPH|REM|STORE|KEY|EXEC|UI)-\d+").unwrap();
        assert!(
            !ids.is_match(&text),
            "{}",
            ids.find(&text).unwrap().as_str()
        );
        let defs = schema["$defs"].as_object().unwrap();
        let mut tables = vec![&schema];
        tables.extend(defs.values().filter(|d| d["type"] == "object"));
        for table in tables {
            assert_eq!(table["additionalProperties"], false, "{table}");
            let required = table.get("required").map(|r| r.to_string());
            assert!(
                required.is_none() || required.as_deref() == Some(r#"["ready-when"]"#),
                "{table}"
            );
        }
    }
}
