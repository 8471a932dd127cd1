//! Finds the vx workspace, loads and validates its configuration, and discovers its projects
//! and their dependency edges (DISC-1 …, GRAPH-1 …).
//!
//! The public API is two functions: [`discover`] turns a current directory into a
//! [`vx_core::Workspace`], and [`parse_config`] checks one `vx.toml` text. The pipeline inside
//! `discover`, in order:
//!
//! - `root`: walk up to the workspace root (DISC-1);
//! - `load`: read the root's files, expand member globs (`members`), read each project's
//!   `vx.toml` (`toml_config`, `task_config`, `task_tables`) and `package.json` (`manifest`),
//!   name the projects, lay the workspace task templates under their tasks and check each
//!   task (`templates`), and resolve their edges (`edges`, `npm_range`);
//! - once everything loaded, the declared outputs of every cached task are checked
//!   (`vx_core::outputs`, GRAPH-8, GRAPH-9);
//! - every problem is collected as a [`vx_core::Diagnostic`] with a location (`source`), and
//!   returned together, sorted (CFG-10).
//!
//! Keys of later milestones are refused in one place, `milestones` (CFG-12).
//!
//! `frozen` writes and checks `vx.lock` ([`lock`], [`drift`], [`lock_state`]) and loads a
//! workspace from it ([`discover_frozen`]) without reading any project's files.
//!
//! For `vx init`, which runs before any `vx.toml` exists, `packages` offers
//! [`read_package_json`] and [`package_workspace`] (the member list of a package-manager
//! workspace, expanded), and [`task_name_problem`] says which script names cannot be tasks.

mod disk;
mod edges;
mod error;
mod frozen;
mod glob_rules;
mod json;
mod jsonc;
mod load;
pub mod lockfile;
mod manifest;
mod members;
mod milestones;
mod npm_range;
mod packages;
pub mod par;
mod pnpm;
mod root;
mod source;
mod task_config;
mod task_tables;
mod templates;
mod toml_config;
mod toml_walk;
pub mod tree;

use std::path::{Path, PathBuf};

pub use error::LoadError;
pub use frozen::{drift, lock, lock_state, Drift, Lock, LockState, LOCK_FILE, LOCK_VERSION};
pub use jsonc::{read_jsonc, JsonValue, JsonValueKind};
pub use load::Parsed;
pub use packages::{package_workspace, read_package_json, PackageJson, PackageWorkspace};
pub use task_config::task_name_problem;
pub use tree::{Tree, TreeError, TreeOptions};

use vx_core::config::ConfigFile;
use vx_core::{Diagnostic, Diagnostics, Workspace};

/// Finds the workspace that contains `cwd` and loads it: root settings, projects sorted by
/// name, and their edges.
pub fn discover(cwd: &Path) -> Result<Workspace, LoadError> {
    let cwd = disk::canonical(cwd)?;
    let found = root::find_root(&cwd)?;
    load::load_workspace(&found.dir, None, None)
}

/// The workspace at `root` as it would load with these `vx.toml` and `package.json` texts (by
/// root-relative path) in place of the files there: `vx init` checks what it would write before
/// it writes anything, and `vx lsp` checks what an editor holds before it is saved.
pub fn load_planned(
    root: &Path,
    planned: &std::collections::BTreeMap<String, String>,
) -> Result<Workspace, LoadError> {
    let root = disk::canonical(root)?;
    load::load_workspace(&root, Some(planned), None)
}

/// [`load_planned`] that parses again only the files whose text changed since an earlier load
/// with the same `parsed` (`vx lsp` loads after every edit).
pub fn load_planned_with(
    root: &Path,
    planned: &std::collections::BTreeMap<String, String>,
    parsed: &Parsed,
) -> Result<Workspace, LoadError> {
    let root = disk::canonical(root)?;
    load::load_workspace(&root, Some(planned), Some(parsed))
}

/// [`discover`] for `vx run --frozen` (INIT-5): projects, edges and tasks from `vx.lock` once
/// every file it names is found unchanged; a missing or stale lock is a configuration error.
pub fn discover_frozen(cwd: &Path) -> Result<Workspace, LoadError> {
    let cwd = disk::canonical(cwd)?;
    let found = root::find_root(&cwd)?;
    frozen::load_frozen(&found.dir)
}

/// Finds the root of the workspace containing `cwd` (DISC-1) without loading any project:
/// verbs that read only history and the `[workspace]` table (`vx why`, `vx cache prune`) work
/// while a project's `vx.toml` is broken.
pub fn find_root(cwd: &Path) -> Result<PathBuf, LoadError> {
    let cwd = disk::canonical(cwd)?;
    Ok(root::find_root(&cwd)?.dir)
}

/// Parses and validates one `vx.toml` text (used by [`discover`]; public for tests and for
/// `vx show`). `rel_path` is the root-relative path used in locations; `is_root` allows
/// `[workspace]`. Errors are sorted by location.
pub fn parse_config(
    text: &str,
    rel_path: &str,
    is_root: bool,
) -> Result<ConfigFile, Vec<Diagnostic>> {
    let mut loaded = toml_config::load_config(text, rel_path, is_root);
    templates::resolve_alone(&mut loaded, rel_path, is_root);
    if loaded.errors.is_empty() {
        Ok(loaded.config)
    } else {
        Err(Diagnostics(loaded.errors).into_sorted())
    }
}
