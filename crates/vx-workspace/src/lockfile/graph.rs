//! The graph every lockfile reader produces: the importers (workspace members) with their
//! direct dependencies and the resolved packages with theirs, and the path helpers the readers
//! share. `mod.rs` walks it into each project's dependency set.

use std::collections::HashMap;

/// What one edge of the graph leads to.
#[derive(Debug, Clone)]
pub(crate) enum Edge {
    /// An index into [`Graph::packages`].
    Package(usize),
    /// Another workspace member, by root-relative directory.
    Workspace(String),
    /// A dependency the lockfile does not resolve: (name, what the manifest asks for).
    Unresolved(String, String),
}

/// One resolved package.
#[derive(Debug, Clone, Default)]
pub(crate) struct Package {
    pub(crate) name: String,
    /// The resolved version as the lockfile writes it (with pnpm's peer suffix, a git
    /// commit, a tarball address).
    pub(crate) version: String,
    pub(crate) deps: Vec<Edge>,
}

/// A workspace member the lockfile installs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Importer {
    /// `dependencies`, `optionalDependencies` and `peerDependencies`.
    pub(crate) deps: Vec<Edge>,
    /// `devDependencies`: part of the member's own set, not of the members linking to it.
    pub(crate) dev: Vec<Edge>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Graph {
    pub(crate) packages: Vec<Package>,
    pub(crate) importers: HashMap<String, Importer>,
}

/// `name@version` split at the `@` that ends the name (a scope's leading `@` is part of it).
pub(crate) fn split_ident(ident: &str) -> Option<(&str, &str)> {
    // A name may start with a character of several bytes: the search starts after a scope's
    // `@`, not at byte 1.
    let from = usize::from(ident.starts_with('@'));
    let at = ident[from..].find('@')? + from;
    Some((&ident[..at], &ident[at + 1..]))
}

/// The root-relative directory `rel` names from the root-relative directory `from`
/// (`../a` from `packages/b` is `packages/a`); `None` when it leaves the root.
pub(crate) fn join_dir(from: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = from.split('/').filter(|p| !p.is_empty()).collect();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}
