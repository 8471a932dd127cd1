//! In-memory workspaces for unit tests of the graph, selection and request code.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::config::{ProjectConfig, TaskConfig};
use crate::graph::{Node, TaskGraph};
use crate::id::TaskId;
use crate::location::{Location, Spanned};
use crate::project::{EdgeKind, Project, ProjectEdge, Workspace};

/// A project: name, project deps, tags, and tasks as `(name, command?, depends-on)`.
pub struct P<'a> {
    pub name: &'a str,
    pub deps: &'a [&'a str],
    pub tags: &'a [&'a str],
    pub tasks: &'a [(&'a str, Option<&'a str>, &'a [&'a str])],
}

pub fn workspace(projects: &[P<'_>]) -> Workspace {
    let mut list: Vec<Project> = projects
        .iter()
        .map(|p| {
            let file = format!("packages/{}/vx.toml", p.name);
            let tasks: BTreeMap<String, Box<TaskConfig>> = p
                .tasks
                .iter()
                .enumerate()
                .map(|(line, (name, command, depends))| {
                    let task = TaskConfig {
                        command: command.map(str::to_string),
                        depends_on: depends
                            .iter()
                            .map(|d| {
                                Spanned::new(
                                    d.to_string(),
                                    Location::new(file.as_str(), line as u32 + 1, 15),
                                )
                            })
                            .collect(),
                        at: Location::new(file.as_str(), line as u32 + 1, 1),
                        ..TaskConfig::default()
                    };
                    (name.to_string(), Box::new(task))
                })
                .collect();
            Project {
                name: p.name.to_string(),
                dir: format!("packages/{}", p.name),
                version: Some("1.0.0".into()),
                has_vx_toml: true,
                has_package_json: true,
                outside_all: false,
                config: ProjectConfig {
                    tags: p.tags.iter().map(|t| t.to_string()).collect(),
                    tasks,
                    ..ProjectConfig::default()
                },
                deps: p
                    .deps
                    .iter()
                    .map(|d| ProjectEdge {
                        to: d.to_string(),
                        kind: EdgeKind::Normal,
                        at: Location::new(format!("packages/{}/package.json", p.name), 1, 1),
                    })
                    .collect(),
            }
        })
        .collect();
    list.sort_by(|a, b| a.name.cmp(&b.name));
    let by_name = list
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name.clone(), i))
        .collect();
    Workspace {
        root: PathBuf::from("/ws"),
        settings: Default::default(),
        projects: list,
        by_name,
        discovered_from: Vec::new(),
        warnings: Vec::new(),
    }
}

/// A graph from `(name, deps)` pairs; names are task names of project `p`.
pub fn graph(spec: &[(&str, &[&str])]) -> TaskGraph {
    let names: Vec<&str> = spec.iter().map(|(n, _)| *n).collect();
    let mut nodes: Vec<Node> = spec
        .iter()
        .map(|(name, deps)| Node {
            id: TaskId::new("p", *name),
            project: 0,
            requested: true,
            deps: deps
                .iter()
                .map(|d| names.iter().position(|n| n == d).unwrap())
                .collect(),
            dependants: vec![],
            folds_dropped: false,
        })
        .collect();
    for i in 0..nodes.len() {
        for d in nodes[i].deps.clone() {
            nodes[d].dependants.push(i);
        }
    }
    let index = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.clone(), i))
        .collect();
    TaskGraph { nodes, index }
}
