//! What `vx init` would do, before it does it: the [`Plan`] of every file, made by [`plan`] from
//! the manifests, the scripts and the other runner's configuration; the root it works from
//! ([`choose_root`]); and each planned file's [`Fate`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use vx_core::config::CONFIG_FILE;
use vx_workspace::{LoadError, PackageJson};

use crate::carried::{carried_tables, no_script, nx_tables, Carried};
use crate::edges::{hollow_tasks, nested_outputs, optional_edges};
use crate::layout::left_out;
use crate::learn::propose::Learned;
use crate::manifest::{hooks_off, read_manifest};
use crate::nx::graph::{graph_deps, vx_name_of};
use crate::scripts::{map_scripts, script_text, Context, LeftOutWhy, Mapping};
use crate::toml::{File, WorkspaceTable};
use crate::turbo::NotCarried;
use crate::{compare, layout, nx, scripts, turbo};
use vx_engine::error::Failure;
use vx_engine::workspace::io_diagnostic;

/// Everything `vx init` would do, before it does it.
pub(crate) struct Plan {
    pub(crate) files: Vec<File>,
    /// `package.json` files with no script to map (no file is written for them).
    pub(crate) without_scripts: Vec<String>,
    /// `package.json` files whose scripts the templates describe exactly (no file needed).
    pub(crate) by_templates: Vec<String>,
    /// Root scripts left out because they drive the whole workspace.
    pub(crate) orchestrating: Vec<String>,
    /// How many task definitions were carried over, and from which file.
    pub(crate) carried: usize,
    pub(crate) carried_from: &'static str,
    /// What was not carried over, and why.
    pub(crate) not_carried: Vec<NotCarried>,
    /// The repository's own Nx asked for its graph: (its version, the targets its plugins
    /// inferred that became tasks), or why it could not be asked and how many targets were
    /// inferred from the plugins' configuration files instead.
    pub(crate) nx_graph: Option<Result<(String, usize), (String, usize)>>,
    /// Each member project by its vx name: its directory and its scripts as commands, for
    /// writing a task's table whole when vx needs to change it ([`write`]).
    pub(crate) projects: BTreeMap<String, (String, BTreeMap<String, String>)>,
    /// (cached, all) tasks that run a command, once the planned files are checked.
    pub(crate) cached_tasks: Option<(usize, usize)>,
    /// The runner whose configuration was carried over, to compare plans with once the
    /// files are written, and what the comparison found.
    pub(crate) peer: Option<compare::Peer>,
    pub(crate) comparison: Option<Result<compare::Comparison, String>>,
    /// The report's lines about the editor files (`editor.rs`), once written.
    pub(crate) editor: String,
    /// `--learn`: each task traced and what came of it, or why nothing could be learned.
    pub(crate) learned: Option<Result<Learned, String>>,
}

/// The root: the workspace root discovery finds (DISC-1) when it holds a `package.json` or a
/// `pnpm-workspace.yaml`, else the nearest directory with a `package.json`.
pub(crate) fn choose_root(cwd: &Path, nearest: &Path) -> Result<PathBuf, Failure> {
    match vx_workspace::find_root(cwd) {
        Ok(root)
            if root.join("package.json").is_file()
                || root.join("pnpm-workspace.yaml").is_file() =>
        {
            Ok(root)
        }
        Ok(_) | Err(LoadError::NotInWorkspace { .. }) => Ok(nearest.to_path_buf()),
        Err(error) => Err(load_failure(error)),
    }
}

pub(crate) fn load_failure(error: LoadError) -> Failure {
    match error {
        LoadError::Config(diagnostics) => Failure::User(diagnostics),
        LoadError::Io { path, op, source } => Failure::from(io_diagnostic(&path, op, &source)),
        other => Failure::usage(other.to_string()),
    }
}

/// Reads every `package.json` (and `turbo.json`), maps the scripts and lays out the files.
/// All problems of the files read are reported together (ERR-2, CFG-10).
pub(crate) fn plan(root: &Path, from: From) -> Result<Plan, Failure> {
    let workspace = vx_workspace::package_workspace(root).map_err(load_failure)?;
    let mut errors = Vec::new();
    let root_manifest = read_manifest(root, "", &mut errors);
    let mut members = Vec::new();
    for dir in workspace.iter().flat_map(|w| &w.members) {
        if let Some(manifest) = read_manifest(root, dir, &mut errors) {
            members.push((dir.clone(), manifest));
        }
    }
    // Two members with one name (examples copied from one template): vx names projects
    // uniquely, so the later ones are left out of the members, and the list is written out.
    let mut first_of: BTreeMap<String, String> = BTreeMap::new();
    let mut duplicates: Vec<NotCarried> = Vec::new();
    members.retain(|(dir, package)| {
        let Some(name) = &package.name else {
            return true;
        };
        match first_of.get(name) {
            Some(first) => {
                duplicates.push(NotCarried {
                    what: format!("{dir} (a member)"),
                    at: vx_core::Location::new(format!("{dir}/package.json"), 1, 1),
                    why: format!(
                        "its name `{name}` is also {first}'s, and vx names each project once: left out of [workspace] members"
                    ),
                });
                false
            }
            None => {
                first_of.insert(name.clone(), dir.clone());
                true
            }
        }
    });
    // The repository's own Nx, when it uses Nx and has it installed: the projects and the
    // targets its plugins infer.
    let wants_nx = match from {
        From::Turbo => false,
        From::Nx => true,
        From::Scripts => !root.join("turbo.json").is_file(),
    };
    let graph = (wants_nx && root.join("nx.json").is_file()).then(|| nx::graph::read(root));
    // Nx projects outside the package-manager members: the graph's, or, without Nx to ask,
    // every directory with a project.json.
    let nx_roots: Vec<String> = match &graph {
        Some(Ok(graph)) => graph.projects.iter().map(|p| p.root.clone()).collect(),
        Some(Err(_)) => nx::graph::project_json_dirs(root),
        None => Vec::new(),
    };
    let mut outside_members = Vec::new();
    for dir in nx_roots {
        let known = members.iter().any(|(d, _)| *d == dir);
        if !dir.is_empty() && !known {
            let manifest = read_manifest(root, &dir, &mut errors);
            outside_members.push(dir.clone());
            members.push((dir, manifest.unwrap_or_default()));
        }
    }
    let dirs: Vec<String> = members.iter().map(|(dir, _)| dir.clone()).collect();
    let turbo = match from {
        From::Nx => None,
        From::Scripts | From::Turbo => turbo::read(root, &dirs, &mut errors),
    };
    let mut nx = match from {
        From::Turbo => None,
        From::Nx => nx::read(root, &dirs, &mut errors),
        From::Scripts if turbo.is_none() => nx::read(root, &dirs, &mut errors),
        From::Scripts => None,
    };
    let mut inferred = None;
    if let (Some(nx), Some(graph)) = (nx.as_mut(), &graph) {
        let has_script = |dir: &str, name: &str| {
            members
                .iter()
                .any(|(d, p)| d == dir && p.scripts.contains_key(name))
        };
        inferred = Some(match graph {
            Ok(graph) => Ok((graph.version.clone(), nx.add_graph(graph, &has_script))),
            // Without Nx: what the common plugins would infer from the files they read.
            Err(why) => Err((why.clone(), nx.infer_from_files(root, &has_script))),
        });
    }
    if !errors.is_empty() {
        return Err(Failure::User(vx_core::Diagnostics(errors).into_sorted()));
    }
    let missing = match from {
        From::Turbo if turbo.is_none() => Some(("turbo", "a turbo.json")),
        From::Nx if nx.is_none() => Some(("nx", "an nx.json")),
        _ => None,
    };
    if let Some((tool, file)) = missing {
        return Err(Failure::usage(format!(
            "vx migrate {tool} needs {file} at the workspace root ({})",
            root.display()
        )));
    }

    let root_package = root_manifest.clone().unwrap_or_default();
    let context = |dir: &str, package: &PackageJson, monorepo_root: bool| Context {
        name: package.name.clone(),
        version: package.version.clone(),
        hooks_off: hooks_off(root, dir, package, &root_package),
        monorepo_root,
        // Nx runs a script with no dependencies unless its configuration gives some.
        no_edges: nx.is_some(),
    };
    let root_context = context(
        "",
        &root_package,
        workspace.is_some() || !outside_members.is_empty(),
    );
    let mut root_mapping = map_scripts(&root_package.scripts, &root_context);
    let contexts: Vec<Context> = members
        .iter()
        .map(|(dir, package)| context(dir, package, false))
        .collect();
    let mut mappings: Vec<Mapping> = members
        .iter()
        .zip(&contexts)
        .map(|((_, package), context)| map_scripts(&package.scripts, context))
        .collect();
    // Nx runs no script of a project outside the package-manager workspaces.
    let mut graph_only: Vec<NotCarried> = Vec::new();
    let mut not_targets: BTreeMap<String, Vec<String>> = BTreeMap::new();
    if let Some(Ok(graph)) = &graph {
        for ((dir, _), mapping) in members.iter().zip(mappings.iter_mut()) {
            if outside_members.contains(dir) {
                if let Some((dropped, note)) = nx::graph::graph_targets_only(graph, dir, mapping) {
                    not_targets.insert(dir.clone(), dropped);
                    graph_only.push(note);
                }
            }
        }
    }

    // The names turbo.json or Nx defines for packages come from them, not from the scripts'
    // shapes.
    let root_has = |name: &str| {
        root_manifest
            .as_ref()
            .is_some_and(|p| p.scripts.contains_key(name))
    };
    let mut carried = Carried::new(turbo.as_ref(), &members, &root_has);
    if let Some(nx) = &nx {
        carried.add_nx(nx);
    }
    let by_scripts: Vec<Mapping> = mappings
        .iter()
        .map(|m| Mapping {
            tasks: m
                .tasks
                .iter()
                .filter(|t| !carried.names.contains(&t.name))
                .cloned()
                .collect(),
            ..m.clone()
        })
        .collect();
    let layout = layout::monorepo(
        &members
            .iter()
            .zip(&by_scripts)
            .map(|((_, package), mapping)| layout::Member {
                scripts: &package.scripts,
                mapping,
            })
            .collect::<Vec<_>>(),
    );
    let mut templates = carried.templates.clone();
    templates.extend(layout.templates);
    templates.sort_by(|a, b| a.name.cmp(&b.name));
    let template_names: BTreeSet<String> = templates.iter().map(|t| t.name.clone()).collect();

    // The root's tasks: turbo.json's `//#name`, then the other scripts.
    let mut not_carried: Vec<NotCarried> = turbo
        .iter()
        .flat_map(|t| t.not_carried.iter().cloned())
        .chain(nx.iter().flat_map(|n| n.not_carried.iter().cloned()))
        .chain(carried.not_carried.iter().cloned())
        .chain(duplicates.iter().cloned())
        .chain(graph_only)
        .collect();
    let mut root_tables = Vec::new();
    if let Some(turbo) = &turbo {
        for (name, def) in &turbo.root {
            let text = script_text(name, &root_package.scripts, &root_context);
            let place = format!("tasks.//#{name}");
            if text.is_empty() {
                not_carried.push(no_script(&place, def, "the root package.json"));
                continue;
            }
            let outputs = turbo.outputs_for("", None);
            let target = turbo::Target {
                template: false,
                dir: Some(""),
                outputs: &outputs,
            };
            let (mut table, left) = turbo.table(name, def, target, &place);
            not_carried.extend(left);
            table.command = Some(text);
            table.no_template = template_names.contains(name);
            root_tables.push(table);
        }
        root_mapping
            .tasks
            .retain(|t| !turbo.root.contains_key(&t.name));
        root_mapping
            .left_out
            .retain(|l| !turbo.root.contains_key(&l.name));
        // A root script named like a task turbo.json gives the packages is never run by
        // `turbo run <name>` (only `//#<name>` would be): as a root task, `vx run <name>
        // --all` would run it beside the packages' (a second `eslint --fix` over the same
        // files, say). It stays the package manager's.
        root_mapping.tasks.retain(|t| {
            let generic = turbo.generic.contains_key(&t.name);
            if generic {
                not_carried.push(NotCarried {
                    what: format!("the root's `{}` script", t.name),
                    at: vx_core::Location::new("package.json", 1, 1),
                    why: format!(
                        "turbo.json defines `{0}` for the packages, not the root (`//#{0}`): \
                         `turbo run {0}` never runs it, and `vx run {0} --all` does not either; \
                         the package manager still does",
                        t.name
                    ),
                });
            }
            !generic
        });
    }
    let mut own_root = layout::alone(&root_mapping, &template_names);
    if let Some(nx) = &nx {
        // The root's Nx targets get their `targetDefaults`, as under Nx.
        for table in &mut own_root {
            if nx.is_root_target(&table.name) && nx.defaults.contains_key(&table.name) {
                table.no_template = false;
                table.depends_on = None;
                table.persistent = None;
                table.suggestion = None;
            }
        }
    }
    root_tables.extend(own_root);
    root_tables.sort_by(|a, b| a.name.cmp(&b.name));

    let mut root_file = File {
        rel: CONFIG_FILE.to_string(),
        workspace: Some(WorkspaceTable {
            concurrency: turbo
                .as_ref()
                .and_then(|t| t.concurrency)
                .or(nx.as_ref().and_then(|n| n.parallel)),
            tui: turbo.as_ref().is_some_and(|t| t.tui),
            affected_base: nx.as_ref().and_then(|n| n.affected_base.clone()),
            exclude_from_all: excluded_by_root_build(&root_package.scripts, &dirs),
            ..WorkspaceTable::default()
        }),
        tasks: root_tables,
        ..File::default()
    };
    // Nx projects outside the package-manager members: the member list is written out.
    let source = match (&workspace, outside_members.is_empty()) {
        (Some(w), true) if !duplicates.is_empty() => Some(format!(
            "The members are the packages {} lists, but those named as another.",
            w.source
        )),
        (Some(w), true) => Some(format!("The members are the packages {} lists.", w.source)),
        (Some(w), false) => Some(format!(
            "The members are the packages {} lists and the Nx projects outside them.",
            w.source
        )),
        (None, false) => Some("The members are the projects Nx has.".to_string()),
        (None, true) => None,
    };
    if !outside_members.is_empty() || !duplicates.is_empty() {
        let mut all = dirs.clone();
        all.sort();
        if let Some(table) = root_file.workspace.as_mut() {
            table.members = Some(all);
        }
    }
    match source {
        Some(source) => {
            root_file
                .header
                .push(format!("Written by `vx init`. {source}"));
            let tool = match (&turbo, &nx) {
                (Some(_), _) => Some("turbo.json"),
                (None, Some(_)) => Some("nx.json and the projects' Nx targets"),
                _ => None,
            };
            if let Some(tool) = tool {
                root_file.header.push(format!(
                    "Tasks are carried over from {tool}; the other scripts"
                ));
                root_file
                    .header
                    .push("are mapped from their text.".to_string());
            }
            if !templates.is_empty() {
                root_file.header.extend([
                    "The templates under [workspace.tasks] apply to every package that has a"
                        .to_string(),
                    "script of their name, which is the command; a package's own vx.toml holds"
                        .to_string(),
                    "only what differs.".to_string(),
                ]);
            }
            if !root_file.tasks.is_empty() {
                root_file
                    .header
                    .push("The [tasks] tables come from the scripts of package.json.".to_string());
            }
            root_file.templates = templates;
            root_file.input_sets = carried.input_sets.clone();
        }
        None => {
            root_file.header.extend([
                "Written by `vx init` from the scripts of package.json: one package, whose tasks"
                    .to_string(),
                "are the workspace root's (`//`).".to_string(),
            ]);
            root_file.workspace = Some(WorkspaceTable {
                members: Some(Vec::new()),
                ..WorkspaceTable::default()
            });
        }
    }
    left_out(&mut root_file, &root_mapping);
    let orchestrating = root_mapping
        .left_out
        .iter()
        .filter(|l| l.why == LeftOutWhy::Orchestrates)
        .map(|l| l.name.clone())
        .collect();
    let mut plan = Plan {
        files: Vec::new(),
        without_scripts: Vec::new(),
        by_templates: Vec::new(),
        orchestrating,
        carried: carried.count,
        carried_from: if nx.is_some() {
            "nx.json"
        } else {
            "turbo.json"
        },
        not_carried: Vec::new(),
        nx_graph: inferred,
        cached_tasks: None,
        peer: compare::Peer::of(turbo.as_ref(), nx.as_ref(), graph.as_ref()),
        comparison: None,
        editor: String::new(),
        learned: None,
        projects: members
            .iter()
            .zip(&contexts)
            .map(|((dir, package), context)| {
                let name = package.name.clone().unwrap_or_else(|| dir.clone());
                let commands = package
                    .scripts
                    .keys()
                    .map(|n| (n.clone(), script_text(n, &package.scripts, context)))
                    .collect();
                (name, (dir.clone(), commands))
            })
            .collect(),
    };

    let names: BTreeSet<&str> = members
        .iter()
        .filter_map(|(_, p)| p.name.as_deref())
        .collect();
    if let Some(turbo) = &turbo {
        for (package, tasks) in &turbo.by_package {
            if !names.contains(package.as_str()) {
                for (name, def) in tasks {
                    let at = def.at.clone().unwrap_or_default();
                    not_carried.push(NotCarried {
                        what: format!("tasks.{package}#{name}"),
                        at,
                        why: format!("no package is named `{package}`"),
                    });
                }
            }
        }
    }
    let ignore = vx_workspace::tree::IgnoreRules::new(root);
    let mut member_files = Vec::new();
    for ((((dir, package), mapping), tables), context) in members
        .iter()
        .zip(&mappings)
        .zip(layout.members)
        .zip(&contexts)
    {
        let manifest = format!("{dir}/package.json");
        let mut tables = tables;
        if let Some(turbo) = &turbo {
            let (own, left) = carried_tables(
                turbo,
                &carried,
                dir,
                package,
                mapping,
                context,
                &template_names,
            );
            tables.extend(own);
            not_carried.extend(left);
            tables.sort_by(|a, b| a.name.cmp(&b.name));
        }
        let mut project_name = None;
        let mut tags = Vec::new();
        if let Some(nx) = &nx {
            let (own, left) = nx_tables(nx, &carried, dir, package, mapping, context, &ignore);
            tables.extend(own);
            not_carried.extend(left);
            tables.sort_by(|a, b| a.name.cmp(&b.name));
            let project = nx.projects.get(dir.as_str());
            tags = project.map(|p| p.tags.clone()).unwrap_or_default();
            if let Some((name, at)) = project.and_then(|p| p.name.clone()) {
                match &package.name {
                    None => project_name = Some(name),
                    Some(own) if *own != name => not_carried.push(NotCarried {
                        what: format!("{dir}/project.json: name"),
                        at,
                        why: format!("vx names the project `{own}` after its package.json"),
                    }),
                    Some(_) => {}
                }
            }
        }
        if let Some(dropped) = not_targets.get(dir) {
            let outs = nx::graph::opt_outs(dropped, &template_names);
            tables.retain(|t| !outs.iter().any(|o| o.name == t.name));
            tables.extend(outs);
            tables.sort_by(|a, b| a.name.cmp(&b.name));
        }
        // An Nx project with no package.json is a vx project only through its vx.toml.
        let nx_only = outside_members.contains(dir) && !root.join(&manifest).is_file();
        if mapping.tasks.is_empty() && mapping.left_out.is_empty() && tables.is_empty() && !nx_only
        {
            plan.without_scripts.push(manifest);
            continue;
        }
        let from = if nx_only {
            format!("the Nx project in {dir}")
        } else {
            format!("the scripts of {manifest}")
        };
        // Edges no package.json gives: Nx's `implicitDependencies`, and every edge Nx
        // knows of a project with no package.json.
        let mut deps: Vec<String> = Vec::new();
        if let Some(nx) = &nx {
            let implicit = nx.projects.get(dir.as_str()).map(|p| p.implicit.as_slice());
            for name in implicit.unwrap_or_default() {
                match vx_name_of(nx, name, &members) {
                    Some(vx) => deps.push(vx),
                    None => not_carried.push(NotCarried {
                        what: format!("{dir}: implicitDependencies {name}"),
                        at: vx_core::Location::new(format!("{dir}/project.json"), 1, 1),
                        why: "no project has that name".to_string(),
                    }),
                }
            }
        }
        if let (Some(Ok(graph)), true) = (&graph, outside_members.contains(dir)) {
            deps.extend(graph_deps(graph, dir, &members));
        }
        deps.sort();
        deps.dedup();
        let mut file = File {
            rel: format!("{dir}/{CONFIG_FILE}"),
            header: vec![format!(
                "Written by `vx init` from {from}: what differs from the"
            )],
            name: project_name,
            tags,
            deps,
            tasks: tables,
            ..File::default()
        };
        file.header
            .push("templates in the root vx.toml.".to_string());
        left_out(&mut file, mapping);
        if file.tasks.is_empty()
            && file.trailer.is_empty()
            && file.name.is_none()
            && file.tags.is_empty()
            && !nx_only
        {
            // A file is needed only to replace one that exists (with `--force`), or to
            // report it kept: the templates apply to its tasks too.
            if !root.join(&file.rel).exists() {
                plan.by_templates.push(manifest);
                continue;
            }
            file.header = vec![
                "Written by `vx init`: the templates in the root vx.toml describe the".to_string(),
                format!("scripts of {manifest}; nothing differs."),
            ];
        }
        member_files.push(file);
    }
    // A same-project dependency on a task a project does not have is a no-op under
    // Turborepo (one that waits for its own dependsOn: a group here) and nothing under Nx;
    // vx requires it, so each list keeps only what the project declares.
    if turbo.is_some() || nx.is_some() {
        let mut declared: Vec<(String, BTreeSet<String>)> = members
            .iter()
            .zip(&mappings)
            .map(|((dir, _), mapping)| {
                let mut names: BTreeSet<String> =
                    mapping.tasks.iter().map(|t| t.name.clone()).collect();
                if let Some(file) = member_files
                    .iter()
                    .find(|f| f.rel == format!("{dir}/{CONFIG_FILE}"))
                {
                    names.extend(file.tasks.iter().map(|t| t.name.clone()));
                }
                (dir.clone(), names)
            })
            .collect();
        if turbo.is_some() {
            hollow_tasks(&root_file.templates, &mut member_files, &mut declared);
        }
        optional_edges(
            &mut root_file.templates,
            &mut member_files,
            &declared,
            &members,
        );
    }

    // Outputs inside a nested project are that project's: vx never lets two projects'
    // tasks claim one directory (GRAPH-8), where Turborepo and Nx do not check.
    for file in &mut member_files {
        let dir = file.rel.trim_end_matches(CONFIG_FILE).trim_end_matches('/');
        nested_outputs(dir, &dirs, &mut file.tasks, &mut not_carried);
    }

    // One line per setting: a global or inherited one is met by many tables.
    let mut seen = BTreeSet::new();
    not_carried.retain(|n| {
        let item = n.what.rsplit('.').next().unwrap_or(&n.what).to_string();
        seen.insert((n.at.clone(), item, n.why.clone()))
    });
    not_carried.sort_by(|a, b| {
        (&a.at.file, a.at.line, a.at.column).cmp(&(&b.at.file, b.at.line, b.at.column))
    });
    if !not_carried.is_empty() {
        let mut block = vec!["Not carried over:".to_string()];
        block.extend(
            not_carried
                .iter()
                .map(|n| format!("  {} ({}): {}", n.what, n.at, n.why)),
        );
        root_file.trailer.push(block);
    }
    plan.not_carried = not_carried;
    // A package that `edges.rs` gave a file is no longer described by the templates alone.
    plan.by_templates.retain(|manifest| {
        let dir = manifest
            .trim_end_matches("package.json")
            .trim_end_matches('/');
        let rel = format!("{dir}/{CONFIG_FILE}");
        !member_files.iter().any(|f| f.rel == rel)
    });
    plan.files.push(root_file);
    plan.files.extend(member_files);
    Ok(plan)
}

/// What the repository's own build leaves out: the directories the root `build` script
/// (or a root script it runs) filters out, with the script's name.
fn excluded_by_root_build(
    scripts: &BTreeMap<String, String>,
    members: &[String],
) -> Option<(Vec<String>, String)> {
    let mut queue = vec!["build".to_string()];
    let mut seen = BTreeSet::new();
    while let Some(name) = queue.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let Some(text) = scripts.get(&name) else {
            continue;
        };
        let dirs = scripts::excluded_directories(text);
        if !dirs.is_empty() {
            return Some((dirs, name));
        }
        let kept = scripts::included_directories(text);
        if !kept.is_empty() {
            let dirs = outside(&kept, members);
            return (!dirs.is_empty()).then_some((dirs, name));
        }
        queue.extend(scripts::root_references(text));
    }
    None
}

/// The member directories the directory globs `kept` do not match, as globs: `parent/*`
/// when no kept member lies in that parent, else the directory itself.
fn outside(kept: &[String], members: &[String]) -> Vec<String> {
    let matchers: Vec<globset::GlobMatcher> = kept
        .iter()
        .filter_map(|k| {
            globset::GlobBuilder::new(k)
                .literal_separator(true)
                .build()
                .ok()
        })
        .map(|g| g.compile_matcher())
        .collect();
    let is_kept = |dir: &str| matchers.iter().any(|m| m.is_match(dir));
    let mut out: Vec<String> = Vec::new();
    for dir in members.iter().filter(|d| !is_kept(d)) {
        let glob = match dir.rsplit_once('/') {
            Some((parent, _)) => {
                let kept_inside = members
                    .iter()
                    .any(|m| is_kept(m) && m.starts_with(&format!("{parent}/")));
                if kept_inside {
                    dir.clone()
                } else {
                    format!("{parent}/*")
                }
            }
            None => dir.clone(),
        };
        if !out.contains(&glob) {
            out.push(glob);
        }
    }
    out
}

/// Where the tasks come from, besides the scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum From {
    /// `vx init`: the scripts, and `turbo.json` when there is one.
    Scripts,
    /// `vx migrate turbo`: `turbo.json` must exist.
    Turbo,
    /// `vx migrate nx`: `nx.json` must exist.
    Nx,
}

/// What happened to a planned file.
pub(crate) enum Fate {
    Written,
    Kept,
}

/// The planned `vx.toml` of the project at `dir`, added (and the project no longer listed as
/// described by the templates alone) when there is none yet.
pub(crate) fn project_file<'a>(plan: &'a mut Plan, dir: &str) -> &'a mut File {
    let rel = if dir.is_empty() {
        vx_core::config::CONFIG_FILE.to_string()
    } else {
        format!("{dir}/{}", vx_core::config::CONFIG_FILE)
    };
    match plan.files.iter().position(|f| f.rel == rel) {
        Some(at) => &mut plan.files[at],
        None => {
            let manifest = format!("{dir}/package.json");
            plan.by_templates.retain(|m| *m != manifest);
            plan.files.push(File {
                rel,
                header: vec![format!(
                    "Written by `vx init`: what differs from the templates in the root vx.toml for {dir}."
                )],
                ..File::default()
            });
            plan.files.last_mut().expect("just pushed")
        }
    }
}
