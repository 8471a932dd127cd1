//! `vx.lock` (INIT-4) and the frozen load of `vx run --frozen` (INIT-5).
//!
//! The lock is JSON with its keys in a fixed order (the order of the structs below, maps sorted
//! by key) and a trailing newline: the lock format version, the blob ids of the root's
//! `vx.toml` and `package.json`, the member directories as the globs expanded, and per project
//! (by name) its directory, the blob ids of its two files, its `package.json` version, tags,
//! dependency edges and resolved tasks — each task as `vx show --format json` would write its
//! configuration, with the workspace templates laid under it and every key left at its
//! default left out. Locations are not kept: an error a frozen run finds in the configuration
//! names the file, not the line.
//!
//! A frozen load still reads the root's files (the `[workspace]` table, the member globs),
//! expands the member globs, and checks every file the lock names by blob id — from the git
//! index when its entry vouches for the file, else hashed ([`crate::tree::blob_ids`]); any
//! difference fails before anything runs. It never reads a project's `vx.toml` or
//! `package.json`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};
pub use vx_core::config::LOCK_FILE;
use vx_core::config::{EnvConfig, ProjectConfig, TaskConfig, CONFIG_FILE};
use vx_core::env::is_secret_name;
use vx_core::{Diagnostic, EdgeKind, Location, Project, ProjectEdge, Workspace, ROOT_PROJECT};

use crate::load::{finish, read_root, OutsideAll};
use crate::LoadError;

/// The lock format this vx writes and reads.
pub const LOCK_VERSION: u32 = 1;

const MANIFEST: &str = "package.json";

/// The whole lock; `T` is a task as written (a JSON value with its defaults left out) or as
/// read back (`TaskConfig`).
#[derive(Debug, Serialize, Deserialize, PartialEq)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    bound(deserialize = "T: Deserialize<'de>")
)]
struct LockFile<T> {
    lock_version: u32,
    root: Files,
    members: Vec<String>,
    projects: BTreeMap<String, LockedProject<T>>,
}

/// Blob ids of a directory's two configuration files; absent when there is no file.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
struct Files {
    #[serde(rename = "vx.toml", default, skip_serializing_if = "Option::is_none")]
    vx_toml: Option<String>,
    #[serde(
        rename = "package.json",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    package_json: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    bound(deserialize = "T: Deserialize<'de>")
)]
struct LockedProject<T> {
    dir: String,
    #[serde(rename = "vx.toml", default, skip_serializing_if = "Option::is_none")]
    vx_toml: Option<String>,
    #[serde(
        rename = "package.json",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    package_json: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    deps: Vec<LockedEdge>,
    #[serde(default)]
    tasks: BTreeMap<String, T>,
}

impl<T> LockedProject<T> {
    fn files(&self) -> Files {
        Files {
            vx_toml: self.vx_toml.clone(),
            package_json: self.package_json.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
struct LockedEdge {
    to: String,
    #[serde(default, skip_serializing_if = "Kind::is_normal")]
    kind: Kind,
}

/// [`EdgeKind`] in words.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum Kind {
    #[default]
    Normal,
    Peer,
    SelectionOnly,
}

impl Kind {
    fn is_normal(&self) -> bool {
        *self == Kind::Normal
    }
}

impl From<EdgeKind> for Kind {
    fn from(kind: EdgeKind) -> Kind {
        match kind {
            EdgeKind::Normal => Kind::Normal,
            EdgeKind::Peer => Kind::Peer,
            EdgeKind::SelectionOnly => Kind::SelectionOnly,
        }
    }
}

impl From<Kind> for EdgeKind {
    fn from(kind: Kind) -> EdgeKind {
        match kind {
            Kind::Normal => EdgeKind::Normal,
            Kind::Peer => EdgeKind::Peer,
            Kind::SelectionOnly => EdgeKind::SelectionOnly,
        }
    }
}

fn file_path(dir: &str, file: &str) -> String {
    if dir.is_empty() {
        file.to_string()
    } else {
        format!("{dir}/{file}")
    }
}

/// A resolved lock, ready to write or compare.
#[derive(Debug, PartialEq)]
pub struct Lock {
    file: LockFile<serde_json::Value>,
}

impl Lock {
    /// The lock's text: pretty JSON and a trailing newline.
    pub fn text(&self) -> String {
        let mut text = serde_json::to_string_pretty(&self.file).expect("a lock always serialises");
        text.push('\n');
        text
    }

    pub fn projects(&self) -> usize {
        self.file.projects.len()
    }

    pub fn tasks(&self) -> usize {
        self.file.projects.values().map(|p| p.tasks.len()).sum()
    }
}

/// The lock of a workspace loaded in full (INIT-4). Refused, naming each location, when a
/// task's `env.define` holds a secret value (EXEC-5): the lock would record it.
pub fn lock(workspace: &Workspace) -> Result<Lock, LoadError> {
    let secrets = secret_defines(workspace);
    if !secrets.is_empty() {
        return Err(LoadError::Config(secrets));
    }
    let members = members(workspace);
    let mut paths = vec![CONFIG_FILE.to_string(), MANIFEST.to_string()];
    for dir in &members {
        paths.push(file_path(dir, CONFIG_FILE));
        paths.push(file_path(dir, MANIFEST));
    }
    let blobs = blobs(&workspace.root, &paths)?;
    let files_of = |dir: &str| Files {
        vx_toml: blobs.get(&file_path(dir, CONFIG_FILE)).cloned().flatten(),
        package_json: blobs.get(&file_path(dir, MANIFEST)).cloned().flatten(),
    };
    let projects = workspace
        .projects
        .iter()
        .map(|p| {
            let tasks = p
                .config
                .tasks
                .iter()
                .map(|(name, task)| (name.clone(), task_value(task)))
                .collect();
            let files = files_of(&p.dir);
            let locked = LockedProject {
                dir: p.dir.clone(),
                vx_toml: files.vx_toml,
                package_json: files.package_json,
                version: p.version.clone(),
                tags: p.config.tags.clone(),
                deps: p
                    .deps
                    .iter()
                    .map(|e| LockedEdge {
                        to: e.to.clone(),
                        kind: e.kind.into(),
                    })
                    .collect(),
                tasks,
            };
            (p.name.clone(), locked)
        })
        .collect();
    Ok(Lock {
        file: LockFile {
            lock_version: LOCK_VERSION,
            root: files_of(""),
            members,
            projects,
        },
    })
}

/// The member projects' directories, sorted: the member directories that hold a `vx.toml` or a
/// `package.json` (an empty directory a glob matches is no member).
fn members(workspace: &Workspace) -> Vec<String> {
    let mut dirs: Vec<String> = workspace
        .projects
        .iter()
        .filter(|p| !p.dir.is_empty())
        .map(|p| p.dir.clone())
        .collect();
    dirs.sort();
    dirs
}

/// A task's configuration as the lock writes it: every key at its default left out (reading
/// it back gives the defaults again).
fn task_value(task: &TaskConfig) -> serde_json::Value {
    let mut value = serde_json::to_value(task).expect("a task always serialises");
    prune(&mut value, &TaskConfig::default());
    for (key, default) in [
        ("cache", to_value(&vx_core::config::CacheConfig::default())),
        ("env", to_value(&EnvConfig::default())),
        (
            "sandbox",
            to_value(&vx_core::config::SandboxConfig::default()),
        ),
        (
            "remote",
            to_value(&vx_core::config::RemoteTaskConfig::default()),
        ),
    ] {
        if let Some(inner @ serde_json::Value::Object(_)) = value.get_mut(key) {
            prune_against(inner, &default);
        }
    }
    value
}

fn to_value<T: Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).expect("configuration always serialises")
}

fn prune<T: Serialize>(value: &mut serde_json::Value, default: &T) {
    prune_against(value, &to_value(default));
}

fn prune_against(value: &mut serde_json::Value, default: &serde_json::Value) {
    if let serde_json::Value::Object(map) = value {
        map.retain(|key, v| default.get(key) != Some(v));
    }
}

/// `env.define` values of secret-named or `env.secret`-listed variables (EXEC-5's names), whatever
/// their length (a short one is still a credential), one problem per place written.
fn secret_defines(workspace: &Workspace) -> Vec<Diagnostic> {
    let mut found: BTreeMap<(Location, String), Vec<String>> = BTreeMap::new();
    for project in &workspace.projects {
        for (name, task) in &project.config.tasks {
            let Some(env) = task.env.as_deref() else {
                continue;
            };
            for (variable, value) in &env.define {
                let secret = is_secret_name(variable) || env.secret.contains(variable);
                if secret && !value.is_empty() {
                    let at = task
                        .key_locations
                        .get("env")
                        .cloned()
                        .unwrap_or_else(|| task.at.clone());
                    found
                        .entry((at, variable.clone()))
                        .or_default()
                        .push(format!("{}#{name}", project.name));
                }
            }
        }
    }
    found
        .into_iter()
        .map(|((at, variable), tasks)| {
            let shown = match tasks.as_slice() {
                [one] => format!("task `{one}`"),
                [first, rest @ ..] => format!("task `{first}` and {} more", rest.len()),
                [] => unreachable!("an entry has a task"),
            };
            Diagnostic::at(
                at,
                format!(
                    "env.define `{variable}` of {shown} holds a secret value; vx.lock would record it"
                ),
            )
            .hint(format!(
                "pass it from the environment instead: env.pass-through = [\"{variable}\"]"
            ))
        })
        .collect()
}

fn blobs(root: &Path, paths: &[String]) -> Result<BTreeMap<String, Option<String>>, LoadError> {
    let ids = crate::tree::blob_ids(root, paths).map_err(|e| match e {
        crate::TreeError::Io { path, source } => LoadError::Io {
            path,
            op: "read",
            source,
        },
        crate::TreeError::Git { path, reason } => {
            LoadError::Config(vec![Diagnostic::new(format!(
                "cannot use the git repository at {}: {reason}",
                path.display()
            ))])
        }
    })?;
    Ok(paths.iter().cloned().zip(ids.ids).collect())
}

/// Why a lock cannot be used, for `vx run --frozen` and `vx info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockState {
    Absent,
    /// Every file it names has the blob id it records, and the members are the same.
    Fresh,
    /// The first difference, as `apps/web/vx.toml changed since it was locked`.
    Stale(String),
}

fn read_text(root: &Path) -> Result<Option<String>, LoadError> {
    let path = root.join(LOCK_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(LoadError::Io {
            path,
            op: "read",
            source,
        }),
    }
}

/// Parses the lock's text; a lock this vx cannot read is a problem at its line and column.
fn parse<T: for<'de> Deserialize<'de>>(text: &str) -> Result<LockFile<T>, LoadError> {
    let other_format = |version: &dyn std::fmt::Display| {
        LoadError::Config(vec![Diagnostic::at(
            Location::new(LOCK_FILE, 1, 1),
            format!("vx.lock has lock format {version}; this vx reads format {LOCK_VERSION}"),
        )
        .hint("run `vx lock` to write it again")])
    };
    let lock: LockFile<T> = serde_json::from_str(text).map_err(|e| {
        #[derive(Deserialize)]
        #[serde(rename_all = "kebab-case")]
        struct Version {
            lock_version: Option<serde_json::Value>,
        }
        let version = serde_json::from_str::<Version>(text)
            .ok()
            .and_then(|v| v.lock_version);
        match version {
            Some(v) if v != serde_json::json!(LOCK_VERSION) => other_format(&v),
            _ => LoadError::Config(vec![Diagnostic::at(
                Location::new(LOCK_FILE, e.line() as u32, e.column().max(1) as u32),
                format!(
                    "not a lock this vx can read: {}",
                    strip_position(&e.to_string())
                ),
            )
            .hint("run `vx lock` to write it again")]),
        }
    })?;
    if lock.lock_version != LOCK_VERSION {
        return Err(other_format(&lock.lock_version));
    }
    Ok(lock)
}

/// serde_json's message without its ` at line L column C` tail (the location says it).
fn strip_position(message: &str) -> &str {
    message
        .rfind(" at line ")
        .map_or(message, |at| &message[..at])
}

/// Compares a lock with the files and members on disk: the first difference, in path order.
fn staleness<T>(
    root: &Path,
    lock: &LockFile<T>,
    members: &[String],
) -> Result<LockState, LoadError> {
    let now: BTreeSet<&String> = members.iter().collect();
    let then: BTreeSet<&String> = lock.members.iter().collect();
    let mut problems: Vec<String> = now
        .difference(&then)
        .map(|d| format!("{d} became a member since it was locked"))
        .chain(
            then.difference(&now)
                .map(|d| format!("{d} is no longer a member")),
        )
        .collect();
    for (name, project) in &lock.projects {
        let is_root = project.dir.is_empty() && name == ROOT_PROJECT;
        if !is_root && !then.contains(&project.dir) {
            problems.push(format!(
                "it names project `{name}` in `{}`, which is not a member",
                project.dir
            ));
        }
    }
    let by_dir: BTreeMap<&str, Files> = lock
        .projects
        .values()
        .map(|p| (p.dir.as_str(), p.files()))
        .chain([("", lock.root.clone())])
        .collect();
    let mut locked: Vec<(String, Option<String>)> = Vec::new();
    // A member that came or went is said once, without its files.
    let kept = lock.members.iter().filter(|d| now.contains(d));
    for dir in std::iter::once(&String::new()).chain(kept) {
        let files = by_dir.get(dir.as_str()).cloned().unwrap_or_default();
        locked.push((file_path(dir, CONFIG_FILE), files.vx_toml));
        locked.push((file_path(dir, MANIFEST), files.package_json));
    }
    let paths: Vec<String> = locked.iter().map(|(p, _)| p.clone()).collect();
    let blobs = blobs(root, &paths)?;
    for (path, then) in &locked {
        let now = blobs.get(path).cloned().flatten();
        match (then, now) {
            (Some(a), Some(b)) if *a != b => {
                problems.push(format!("{path} changed since it was locked"))
            }
            (None, Some(_)) => problems.push(format!("{path} was created since it was locked")),
            (Some(_), None) => problems.push(format!("{path} was deleted since it was locked")),
            _ => {}
        }
    }
    Ok(match problems.len() {
        0 => LockState::Fresh,
        1 => LockState::Stale(problems.remove(0)),
        n => LockState::Stale(format!("{} (and {} more)", problems[0], n - 1)),
    })
}

/// Whether the lock at `workspace`'s root would serve `vx run --frozen` (`vx info`).
pub fn lock_state(workspace: &Workspace) -> Result<LockState, LoadError> {
    let Some(text) = read_text(&workspace.root)? else {
        return Ok(LockState::Absent);
    };
    let lock: LockFile<serde_json::Value> = parse(&text)?;
    staleness(&workspace.root, &lock, &members(workspace))
}

/// One project that moved since the lock was written, for `vx lock --check`: its directory
/// (`""` for the root) and what moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    pub dir: String,
    pub what: String,
}

/// INIT-4's `--check`: `None` when there is no lock; else what differs between it and `lock`,
/// the workspace resolved again (empty when nothing does).
pub fn drift(root: &Path, lock: &Lock) -> Result<Option<Vec<Drift>>, LoadError> {
    let Some(text) = read_text(root)? else {
        return Ok(None);
    };
    let old: LockFile<serde_json::Value> = parse(&text)?;
    let new = &lock.file;
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let say = |found: &mut BTreeMap<String, Vec<String>>, dir: &str, what: String| {
        found.entry(dir.to_string()).or_default().push(what)
    };
    let changed_files = |a: &Files, b: &Files| -> Vec<String> {
        let mut what = Vec::new();
        if a.vx_toml != b.vx_toml {
            what.push(format!("{CONFIG_FILE} changed"));
        }
        if a.package_json != b.package_json {
            what.push(format!("{MANIFEST} changed"));
        }
        what
    };
    for what in changed_files(&old.root, &new.root) {
        say(&mut found, "", what);
    }
    for (name, project) in &new.projects {
        let Some(before) = old.projects.get(name) else {
            say(&mut found, &project.dir, "new project".to_string());
            continue;
        };
        let mut what = changed_files(&before.files(), &project.files());
        if what.is_empty() {
            if before.dir != project.dir {
                what.push(format!("moved from {}", before.dir));
            }
            if before.tasks != project.tasks {
                what.push("tasks changed".to_string());
            }
            if before.deps != project.deps {
                what.push("dependencies changed".to_string());
            }
            if before.version != project.version || before.tags != project.tags {
                what.push("project changed".to_string());
            }
        }
        for what in what {
            say(&mut found, &project.dir, what);
        }
    }
    for (name, project) in &old.projects {
        if !new.projects.contains_key(name) {
            say(
                &mut found,
                &project.dir,
                format!("project `{name}` is gone"),
            );
        }
    }
    if found.is_empty() && old.members != new.members {
        say(&mut found, "", "members changed".to_string());
    }
    Ok(Some(
        found
            .into_iter()
            .map(|(dir, mut what)| {
                what.dedup();
                Drift {
                    dir,
                    what: what.join(", "),
                }
            })
            .collect(),
    ))
}

/// INIT-5: the workspace from `vx.lock`, once the lock is found fresh.
pub(crate) fn load_frozen(root: &Path) -> Result<Workspace, LoadError> {
    let mut errors = Vec::new();
    let rooted = read_root(root, None, None, &mut errors)?;
    if !errors.is_empty() {
        return Err(LoadError::Config(
            vx_core::Diagnostics(errors).into_sorted(),
        ));
    }
    let Some(text) = read_text(root)? else {
        return Err(LoadError::Config(vec![Diagnostic::new(
            "--frozen needs vx.lock; run `vx lock`",
        )]));
    };
    let lock: LockFile<TaskConfig> = parse(&text)?;
    // As a full load finds them: a member directory with either file is a project.
    let mut members: Vec<String> = rooted
        .dirs
        .iter()
        .filter(|dir| {
            let dir = root.join(dir);
            dir.join(CONFIG_FILE).exists() || dir.join(MANIFEST).exists()
        })
        .cloned()
        .collect();
    members.sort();
    if let LockState::Stale(why) = staleness(root, &lock, &members)? {
        return Err(LoadError::Config(vec![Diagnostic::new(format!(
            "vx.lock is stale: {why}"
        ))
        .hint("run `vx lock`")]));
    }
    // A hand-edited lock is held to what a full load guarantees: every edge names a project.
    for (name, project) in &lock.projects {
        if let Some(edge) = project
            .deps
            .iter()
            .find(|e| !lock.projects.contains_key(&e.to))
        {
            return Err(LoadError::Config(vec![Diagnostic::at(
                Location::new(LOCK_FILE, 0, 0),
                format!(
                    "project `{name}` depends on `{}`, which is no project of the lock",
                    edge.to
                ),
            )
            .hint("run `vx lock` to write it again")]));
        }
    }
    let outside_all = OutsideAll::new(&rooted.settings);
    let projects = lock
        .projects
        .into_iter()
        .map(|(name, p)| {
            // Where an error about this project's configuration points: its file.
            let file = if p.vx_toml.is_some() {
                file_path(&p.dir, CONFIG_FILE)
            } else {
                file_path(&p.dir, MANIFEST)
            };
            let at = Location::new(file, 0, 0);
            let tasks = p
                .tasks
                .into_iter()
                .map(|(task_name, mut task)| {
                    task.at = at.clone();
                    for entry in &mut task.depends_on {
                        entry.at = at.clone();
                    }
                    (task_name, Box::new(task))
                })
                .collect();
            let deps = p
                .deps
                .into_iter()
                .map(|e| ProjectEdge {
                    to: e.to,
                    kind: e.kind.into(),
                    at: at.clone(),
                })
                .collect();
            Project {
                outside_all: outside_all.claims(&p.dir),
                name,
                version: p.version,
                has_vx_toml: p.vx_toml.is_some(),
                has_package_json: p.package_json.is_some(),
                config: ProjectConfig {
                    tags: p.tags,
                    tasks,
                    ..ProjectConfig::default()
                },
                deps,
                dir: p.dir,
            }
        })
        .collect();
    finish(
        root,
        rooted.settings,
        projects,
        rooted.discovered_from,
        rooted.warnings,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Everything a task can say survives the lock: read back, every task serialises as the
    /// full load's did, and the projects have the same edges, tags and files.
    #[test]
    fn a_frozen_load_gives_back_the_workspace_a_full_load_gave() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        write(
            &root,
            "vx.toml",
            concat!(
                "[workspace]\nmembers = [\"packages/*\"]\nexclude-from-all = [\"packages/peer\"]\n\n",
                "[workspace.tasks.build]\ntimeout = \"5m\"\ncache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n\n",
                "[tasks.lint]\ncommand = \"true\"\n",
            ),
        );
        write(
            &root,
            "packages/lib/package.json",
            r#"{ "name": "lib", "version": "2.0.0", "scripts": { "test": "echo t" } }"#,
        );
        write(
            &root,
            "packages/lib/vx.toml",
            concat!(
                "tags = [\"core\"]\n\n",
                "[tasks.build]\ncommand = \"make\"\ndescription = \"d\"\nretries = 2\n",
                "env = { pass-through = [\"HOME\"], define = { MODE = \"x\" }, secret = [\"S\"] }\n",
                "cache = { inputs = [], workspace-inputs = [\"tsconfig.json\"], env = [\"CI\"], runtime = [\"node -v\"], upstream = [], outputs = [], portable = true }\n\n",
                "[tasks.serve]\ncommand = \"serve\"\npersistent = { ready-when = \"listening\" }\n\n",
                "[tasks.remote]\ncommand = \"r\"\nremote = { platform = { OSFamily = \"linux\" }, extra-inputs = [\"x\"] }\n",
                "cache = { inputs = [\"src/**\"], outputs = [\"out/**\"] }\n",
                "sandbox = { read = [\"/opt\"], network = [\"example.com\"] }\n",
            ),
        );
        write(
            &root,
            "packages/app/package.json",
            r#"{ "name": "app", "dependencies": { "lib": "workspace:*" }, "peerDependencies": { "peer": "*" } }"#,
        );
        write(
            &root,
            "packages/app/vx.toml",
            "[tasks.build]\ncommand = \"b\"\ndepends-on = [\"^build\", \"lib#test\"]\n",
        );
        write(&root, "packages/peer/package.json", r#"{ "name": "peer" }"#);
        let full = crate::load::load_workspace(&root, None, None).unwrap();
        let lock = lock(&full).unwrap();
        std::fs::write(root.join(LOCK_FILE), lock.text()).unwrap();
        let frozen = load_frozen(&root).unwrap();
        assert_eq!(full.by_name, frozen.by_name);
        for (a, b) in full.projects.iter().zip(&frozen.projects) {
            assert_eq!(
                (&a.name, &a.dir, &a.version, &a.config.tags),
                (&b.name, &b.dir, &b.version, &b.config.tags)
            );
            assert_eq!(
                (a.has_vx_toml, a.has_package_json, a.outside_all),
                (b.has_vx_toml, b.has_package_json, b.outside_all),
                "{}",
                a.name
            );
            let edges = |p: &Project| -> Vec<(String, EdgeKind)> {
                p.deps.iter().map(|e| (e.to.clone(), e.kind)).collect()
            };
            assert_eq!(edges(a), edges(b));
            assert_eq!(
                serde_json::to_value(&a.config.tasks).unwrap(),
                serde_json::to_value(&b.config.tasks).unwrap(),
                "{}",
                a.name
            );
        }
        assert!(frozen.project("peer").unwrap().outside_all);
        assert_eq!(frozen.projects.len(), 4);
    }
}
