//! Lockfiles pruned to the workspace members a deployable subset keeps (`vx prune`). Start at
//! [`prune`].
//!
//! # How this works
//!
//! Each format's pruner reads the file twice: once as data, to find what the kept members
//! reach (their entries, the packages they depend on, transitively), and once as text, to
//! drop the entries nothing kept reaches. Everything else stays byte for byte as the package
//! manager wrote it: the header, the settings, catalogs, overrides and patch lists, the order,
//! the quoting, the blank lines. What is left is what the package manager itself would write
//! for the smaller workspace, so its frozen install accepts it; `vx prune` checks that by
//! running it.
//!
//! - pnpm (`pnpm-lock.yaml` 6 and 9): `importers` of the kept members, the root's among them;
//!   `snapshots` (9) or `packages` (6) reached from them; in 9, the `packages` entries of the
//!   snapshots kept.
//! - npm (`package-lock.json` 2 and 3): the install paths reached as Node resolves them from
//!   the kept members, their links, and in 2 the legacy `dependencies` tree to match.
//! - yarn 1: the entries the kept members' manifests reach, each header left with the
//!   descriptors still asked for.
//! - yarn berry: the same over its YAML, the kept members' `workspace:` entries included.
//! - bun (`bun.lock`): the kept `workspaces` and the `packages` paths reached from them.
//!
//! Development dependencies on members left out (`vx prune --production`) are removed from
//! the kept members' entries where the format lists them.

mod berry;
mod bun;
mod model;
mod npm;
mod npm_flags;
mod pnpm;
mod text;
mod yarn1;

use std::path::Path;

use super::LockfileError;

pub use model::{Counts, Keep, PackageManager, Pruned};

/// `text`, the lockfile `file`, with only what `keep`'s members reach.
pub fn prune(file: &str, text: &str, keep: &Keep) -> Result<Pruned, LockfileError> {
    let pm = PackageManager::of(file, text).ok_or(if file == super::BINARY {
        LockfileError::Binary
    } else {
        LockfileError::Unknown
    })?;
    let pruned = match pm {
        PackageManager::Pnpm => pnpm::prune(text, keep),
        PackageManager::Npm => npm::prune(text, keep),
        PackageManager::Yarn1 => yarn1::prune(text, keep),
        PackageManager::Berry => berry::prune(text, keep),
        PackageManager::Bun => bun::prune(text, keep),
    };
    pruned.map_err(LockfileError::Format)
}

/// The patch files the package manager's configuration names outside `patches/`: pnpm's
/// `patchedDependencies` (in `pnpm-workspace.yaml` or the root `package.json`'s `pnpm`) and
/// bun's (the root `package.json`), root-relative.
pub fn patch_files(root: &Path, manifest: Option<&str>) -> Vec<String> {
    let mut tables: Vec<serde_json::Value> = Vec::new();
    if let Some(manifest) = manifest.and_then(|m| serde_json::from_str::<serde_json::Value>(m).ok())
    {
        tables.extend(manifest.get("patchedDependencies").cloned());
        tables.extend(manifest.pointer("/pnpm/patchedDependencies").cloned());
    }
    let workspace_yaml = std::fs::read_to_string(root.join("pnpm-workspace.yaml")).ok();
    if let Some(yaml) =
        workspace_yaml.and_then(|t| serde_yaml::from_str::<serde_json::Value>(&t).ok())
    {
        tables.extend(yaml.get("patchedDependencies").cloned());
    }
    tables
        .iter()
        .filter_map(serde_json::Value::as_object)
        .flat_map(|table| table.values())
        .filter_map(serde_json::Value::as_str)
        .filter(|path| !path.starts_with('/') && !path.split('/').any(|p| p == ".."))
        .map(|path| path.trim_start_matches("./").to_string())
        .collect()
}

#[cfg(test)]
mod tests;
