//! The edges and outputs `vx init` must adjust where vx is stricter than Turborepo and Nx:
//! a same-project `depends-on` entry names a task that must exist, and no two projects may
//! claim one directory.

use std::collections::BTreeSet;

use vx_core::config::CONFIG_FILE;
use vx_workspace::PackageJson;

use super::toml::{File, Table};
use super::turbo::NotCarried;

/// Same-project `depends-on` entries (`prebuild`, no `^`, `#` or `*`) name a task that must
/// exist in vx, while Turborepo and Nx skip one the package does not have. A template keeps
/// such an entry only when every package it applies to declares that task; the packages that
/// do get the whole list in their own table. A package's own table keeps only what it declares.
pub(super) fn optional_edges(
    templates: &mut [Table],
    files: &mut Vec<File>,
    declared: &[(String, BTreeSet<String>)],
    members: &[(String, PackageJson)],
) {
    let plain = |d: &str| !d.starts_with('^') && !d.contains(['#', '*']);
    for template in templates.iter_mut() {
        let Some(list) = template.depends_on.clone() else {
            continue;
        };
        // The packages the template applies to: a script of its name, or a table.
        let applies: Vec<&(String, BTreeSet<String>)> = declared
            .iter()
            .filter(|(dir, names)| {
                let script = members
                    .iter()
                    .any(|(d, p)| d == dir && p.scripts.contains_key(&template.name));
                script || names.contains(&template.name)
            })
            .collect();
        let missing: BTreeSet<&String> = list
            .iter()
            .filter(|d| plain(d))
            .filter(|d| applies.iter().any(|(_, names)| !names.contains(*d)))
            .collect();
        if missing.is_empty() {
            continue;
        }
        template.depends_on = Some(
            list.iter()
                .filter(|d| !missing.contains(d))
                .cloned()
                .collect(),
        );
        for (dir, names) in applies {
            let kept: Vec<String> = list
                .iter()
                .filter(|d| !plain(d) || names.contains(*d))
                .cloned()
                .collect();
            if Some(&kept) == template.depends_on.as_ref() {
                continue;
            }
            let rel = format!("{dir}/{CONFIG_FILE}");
            let at = match files.iter().position(|f| f.rel == rel) {
                Some(at) => at,
                None => {
                    files.push(File {
                        rel: rel.clone(),
                        header: vec![
                            format!("Written by `vx init`: what differs from the templates in the root vx.toml for {dir}."),
                        ],
                        ..File::default()
                    });
                    files.len() - 1
                }
            };
            let tables = &mut files[at].tasks;
            match tables.iter_mut().find(|t| t.name == template.name) {
                Some(table) if table.depends_on.is_some() || table.no_template => {}
                Some(table) => table.depends_on = Some(kept),
                None => {
                    tables.push(Table {
                        name: template.name.clone(),
                        depends_on: Some(kept),
                        ..Table::default()
                    });
                    tables.sort_by(|a, b| a.name.cmp(&b.name));
                }
            }
        }
    }
    for (file, names) in files.iter_mut().filter_map(|f| {
        let dir = f.rel.strip_suffix(&format!("/{CONFIG_FILE}"))?.to_string();
        let names = declared.iter().find(|(d, _)| *d == dir)?.1.clone();
        Some((f, names))
    }) {
        for table in &mut file.tasks {
            if let Some(list) = &mut table.depends_on {
                list.retain(|d| !plain(d) || names.contains(d));
            }
        }
    }
}

/// Turborepo runs a task a package has no script for as a no-op that still waits for its
/// own `dependsOn`: `docs` → `build` in a package without a `build` script waits for the
/// dependencies' builds (`^build`) all the same. So where a task a package declares names
/// such a task of turbo.json, the package gets it as a group with the same `depends-on`
/// (`extends = false`, nothing to run), and `declared` says so; repeated while a group
/// brings up another.
pub(super) fn hollow_tasks(
    templates: &[Table],
    files: &mut Vec<File>,
    declared: &mut [(String, BTreeSet<String>)],
) {
    let plain = |d: &str| !d.starts_with('^') && !d.contains(['#', '*']);
    let template_deps = |name: &str| {
        templates
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.depends_on.clone())
            .filter(|deps| !deps.is_empty())
    };
    for (dir, names) in declared.iter_mut() {
        let rel = format!("{dir}/{CONFIG_FILE}");
        loop {
            let own = files.iter().find(|f| f.rel == rel);
            let lists: Vec<Vec<String>> = names
                .iter()
                .filter_map(|name| {
                    let table = own.and_then(|f| f.tasks.iter().find(|t| t.name == *name));
                    match table.and_then(|t| t.depends_on.clone()) {
                        Some(list) => Some(list),
                        None if table.is_some_and(|t| t.no_template) => None,
                        None => template_deps(name),
                    }
                })
                .collect();
            let hollow: BTreeSet<String> = lists
                .into_iter()
                .flatten()
                .filter(|d| plain(d) && !names.contains(d) && template_deps(d).is_some())
                .collect();
            if hollow.is_empty() {
                break;
            }
            let at = match files.iter().position(|f| f.rel == rel) {
                Some(at) => at,
                None => {
                    files.push(File {
                        rel: rel.clone(),
                        header: vec![format!(
                            "Written by `vx init`: what differs from the templates in the root vx.toml for {dir}."
                        )],
                        ..File::default()
                    });
                    files.len() - 1
                }
            };
            for name in hollow {
                files[at].tasks.push(Table {
                    name: name.clone(),
                    no_template: true,
                    comments: vec![format!(
                        "No `{name}` script here: Turborepo runs nothing for it but still waits for its dependsOn."
                    )],
                    depends_on: template_deps(&name),
                    ..Table::default()
                });
                names.insert(name);
            }
            files[at].tasks.sort_by(|a, b| a.name.cmp(&b.name));
        }
    }
}

/// Leaves out of the tables of the project at `dir` the outputs that lie in a nested
/// member's directory, each with a line saying so.
pub(super) fn nested_outputs(
    dir: &str,
    members: &[String],
    tables: &mut [Table],
    left: &mut Vec<NotCarried>,
) {
    let nested: Vec<&String> = members
        .iter()
        .filter(|m| m.starts_with(&format!("{dir}/")))
        .collect();
    if nested.is_empty() {
        return;
    }
    for table in tables.iter_mut() {
        let Some(cache) = table.cache.as_mut() else {
            continue;
        };
        cache.outputs.retain(|glob| {
            let body = glob.trim_start_matches('!');
            let path = format!("{dir}/{}", vx_core::globs::literal_prefix(body));
            let inside = nested
                .iter()
                .find(|m| path == ***m || path.starts_with(&format!("{m}/")));
            if let Some(member) = inside {
                left.push(NotCarried {
                    what: format!("{dir}#{}: outputs {glob}", table.name),
                    at: vx_core::Location::new(format!("{dir}/{CONFIG_FILE}"), 1, 1),
                    why: format!("it lies in the project at {member}, whose tasks own it in vx"),
                });
            }
            inside.is_none()
        });
    }
}
