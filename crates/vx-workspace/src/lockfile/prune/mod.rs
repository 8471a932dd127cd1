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
mod npm;
mod pnpm;
mod text;
mod yarn1;

use std::collections::{BTreeMap, BTreeSet};

use super::LockfileError;

/// What to keep.
pub struct Keep<'a> {
    /// Root-relative directories of the members kept; `""` is the root, always kept.
    pub dirs: &'a BTreeSet<String>,
    /// For `--production`: by kept directory, the development dependencies to remove (members
    /// left out).
    pub drop_dev: &'a BTreeMap<String, BTreeSet<String>>,
    /// The `package.json` text of a kept directory as written to the output (yarn 1 does not
    /// list the members: their dependencies are read there).
    pub manifest: &'a dyn Fn(&str) -> Option<String>,
    /// Every member's package name with its directory (a dependency on one is a link, not a
    /// package, in yarn 1).
    pub members: &'a BTreeMap<String, String>,
}

impl Keep<'_> {
    fn keeps(&self, dir: &str) -> bool {
        dir.is_empty() || self.dirs.contains(dir)
    }

    fn dropped(&self, dir: &str, name: &str) -> bool {
        self.drop_dev
            .get(dir)
            .is_some_and(|names| names.contains(name))
    }
}

/// How much of the file was kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub kept: usize,
    pub total: usize,
}

/// A pruned lockfile.
#[derive(Debug, Clone)]
pub struct Pruned {
    pub text: String,
    /// The members (importers, workspaces) the file lists.
    pub members: Counts,
    /// The resolved packages.
    pub packages: Counts,
    /// Members left out that what is kept still reaches through the lockfile (a package from
    /// the registry that depends on a workspace package, which the package manager links):
    /// installing needs them, so `vx prune` keeps them too.
    pub needed: BTreeSet<String>,
}

/// The package manager that wrote a lockfile, which `vx prune` runs to check its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackageManager {
    Npm,
    Pnpm,
    Yarn1,
    Berry,
    Bun,
}

impl PackageManager {
    /// The package manager of `file` (a name of [`super::PER_PROJECT`]) with this text.
    pub fn of(file: &str, text: &str) -> Option<PackageManager> {
        Some(match file {
            "pnpm-lock.yaml" => PackageManager::Pnpm,
            "package-lock.json" | "npm-shrinkwrap.json" => PackageManager::Npm,
            "yarn.lock" if text.lines().any(|l| l.starts_with("__metadata:")) => {
                PackageManager::Berry
            }
            "yarn.lock" => PackageManager::Yarn1,
            "bun.lock" => PackageManager::Bun,
            _ => return None,
        })
    }

    /// Its name as users say it.
    pub fn name(self) -> &'static str {
        match self {
            PackageManager::Npm => "npm",
            PackageManager::Pnpm => "pnpm",
            PackageManager::Yarn1 => "yarn 1",
            PackageManager::Berry => "yarn berry",
            PackageManager::Bun => "bun",
        }
    }
}

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
