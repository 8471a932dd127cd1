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
mod pnpm;
mod text;
mod yarn1;

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

#[cfg(test)]
mod tests;
