//! What the pruners share: what to keep, what they return, and which package manager wrote
//! a lockfile.

use std::collections::{BTreeMap, BTreeSet};

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
    pub(super) fn keeps(&self, dir: &str) -> bool {
        dir.is_empty() || self.dirs.contains(dir)
    }

    pub(super) fn dropped(&self, dir: &str, name: &str) -> bool {
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
    /// Directories (or files) left out that what is kept still reaches through the lockfile:
    /// a member a package from the registry depends on (the package manager links it), a local
    /// package (`file:tooling/cfg`). Installing needs them, so `vx prune` keeps them too.
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
    /// The package manager of `file` (a name of [`crate::lockfile::PER_PROJECT`]) with this text.
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
