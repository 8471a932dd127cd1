//! The discovered workspace: its root settings and its projects with their dependency edges
//! (DISC-1 …). `vx-workspace` builds it from disk; everything after discovery reads only this.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::config::{ProjectConfig, WorkspaceConfig};
use crate::location::Location;

#[derive(Debug, Clone)]
pub struct Workspace {
    /// Absolute, canonical path of the workspace root.
    pub root: PathBuf,
    /// `[workspace]` of the root `vx.toml`, or defaults when the root came from a
    /// package-manager file.
    pub settings: WorkspaceConfig,
    /// Sorted by name. The root project, when it exists, is named `//` and has `dir` "".
    pub projects: Vec<Project>,
    /// Index into `projects` by name.
    pub by_name: BTreeMap<String, usize>,
    /// Root-relative paths finding the members looked at: every directory listed or probed
    /// and every directory a member glob matched (a run snapshot records their stat data).
    pub discovered_from: Vec<String>,
    /// What loading found worth saying that does not stop a run: a member glob that matches
    /// no directory.
    pub warnings: Vec<crate::Diagnostic>,
}

impl Workspace {
    pub fn project(&self, name: &str) -> Option<&Project> {
        self.by_name.get(name).map(|&i| &self.projects[i])
    }

    /// The deepest project whose directory contains `rel` (a root-relative path, "" for the
    /// root itself), nested projects winning over outer ones (DISC-6).
    pub fn project_containing(&self, rel: &str) -> Option<&Project> {
        self.projects
            .iter()
            .filter(|p| {
                p.dir.is_empty()
                    || rel == p.dir
                    || (rel.starts_with(&p.dir) && rel.as_bytes().get(p.dir.len()) == Some(&b'/'))
            })
            .max_by_key(|p| p.dir.len())
    }

    /// Every project `project` depends on, directly or not, by any kind of edge (what a
    /// `^name` input set reaches, as Nx's `^production` does), sorted by index; never
    /// `project` itself, even through a cycle.
    pub fn dependency_closure(&self, project: usize) -> Vec<usize> {
        let mut seen = vec![false; self.projects.len()];
        seen[project] = true;
        let mut stack = vec![project];
        let mut found = Vec::new();
        while let Some(at) = stack.pop() {
            for edge in &self.projects[at].deps {
                if let Some(&to) = self.by_name.get(&edge.to) {
                    if !seen[to] {
                        seen[to] = true;
                        found.push(to);
                        stack.push(to);
                    }
                }
            }
        }
        found.sort_unstable();
        found
    }
}

#[derive(Debug, Clone)]
pub struct Project {
    pub name: String,
    /// Root-relative directory with `/` separators; "" for the root project.
    pub dir: String,
    /// `package.json` `version`, when there is one.
    pub version: Option<String>,
    pub has_vx_toml: bool,
    pub has_package_json: bool,
    /// The project's `vx.toml` (empty when it has none).
    pub config: ProjectConfig,
    /// Direct project dependencies, sorted by target name (DISC-5).
    pub deps: Vec<ProjectEdge>,
    /// `[workspace] exclude-from-all` names its directory: `--all` (and `--affected`) leave
    /// it out unless a `--filter` names it.
    pub outside_all: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectEdge {
    /// Name of the project depended on.
    pub to: String,
    pub kind: EdgeKind,
    /// Where the edge was declared (the `package.json` entry or the `deps` entry).
    pub at: Location,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EdgeKind {
    /// `dependencies`, `devDependencies`, `optionalDependencies`, or `deps` in `vx.toml`.
    Normal,
    /// `peerDependencies`: in a cycle, kept for selection only (DISC-5).
    Peer,
    /// A peer edge inside a cycle: selection walks it, ordering does not.
    SelectionOnly,
}

#[cfg(test)]
mod tests {
    use crate::testing::{workspace, P};

    fn p<'a>(name: &'a str, deps: &'a [&'a str]) -> P<'a> {
        P {
            name,
            deps,
            tags: &[],
            tasks: &[],
        }
    }

    #[test]
    fn the_dependency_closure_is_transitive_and_survives_a_cycle() {
        // app → ui → core → ui (a cycle), util alone; a dependency on an unknown name is
        // ignored.
        let ws = workspace(&[
            p("app", &["ui", "missing"]),
            p("ui", &["core"]),
            p("core", &["ui"]),
            p("util", &[]),
        ]);
        let names = |i: usize| -> Vec<&str> {
            ws.dependency_closure(i)
                .into_iter()
                .map(|d| ws.projects[d].name.as_str())
                .collect()
        };
        assert_eq!(names(ws.by_name["app"]), ["core", "ui"]);
        assert_eq!(names(ws.by_name["ui"]), ["core"]);
        assert_eq!(names(ws.by_name["core"]), ["ui"]);
        assert!(names(ws.by_name["util"]).is_empty());
    }
}
