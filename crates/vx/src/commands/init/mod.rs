//! `vx init` (INIT-1): writes `vx.toml` files from `package.json` scripts.
//!
//! Start at [`init`]. It finds the repository's root (the package-manager workspace root, or
//! the nearest directory with a `package.json`), reads every `package.json` vx would load
//! (`vx_workspace::package_workspace` expands the member globs exactly as discovery does),
//! maps each one's scripts (`scripts`, INIT-2) and renders the files (`toml`). Every file is
//! parsed back with vx's own loader before anything is written, so a file `vx init` writes
//! always loads. Existing files are kept unless `--force`; `--dry` prints the files instead
//! of writing them. The report lists what was written or kept, the TODO comments grouped by
//! reason, and the next command to run.

mod layout;
mod nx;
mod scripts;
mod shell;
mod toml;
mod turbo;
mod write;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use vx_core::config::CONFIG_FILE;
use vx_core::Diagnostic;
use vx_workspace::{LoadError, PackageJson};

use self::nx::Nx;
use self::scripts::{map_scripts, script_text, Context, LeftOutWhy, Mapping, Todo, TodoReason};
use self::toml::{File, InputSetTable, Table, WorkspaceTable};
use self::turbo::{NotCarried, Turbo};
use crate::cli::{InitArgs, MigrateArgs};
use crate::error::Failure;
use crate::workspace::io_diagnostic;

/// Everything `vx init` would do, before it does it.
struct Plan {
    files: Vec<File>,
    /// `package.json` files with no script to map (no file is written for them).
    without_scripts: Vec<String>,
    /// `package.json` files whose scripts the templates describe exactly (no file needed).
    by_templates: Vec<String>,
    /// Root scripts left out because they drive the whole workspace.
    orchestrating: Vec<String>,
    /// How many task definitions were carried over, and from which file.
    carried: usize,
    carried_from: &'static str,
    /// What was not carried over, and why.
    not_carried: Vec<NotCarried>,
}

pub fn init(cwd: &Path, args: InitArgs) -> Result<i32, Failure> {
    write::write(cwd, args, From::Scripts)
}

/// `vx migrate turbo|nx`: `vx init` with that tool's configuration required.
pub fn migrate(cwd: &Path, args: MigrateArgs) -> Result<i32, Failure> {
    let from = match args.tool.as_str() {
        "turbo" => From::Turbo,
        "nx" => From::Nx,
        other => {
            let mut problem = Diagnostic::new(format!(
                "unknown tool `{other}` for vx migrate; it takes `turbo` or `nx`"
            ));
            if let Some(best) = vx_core::suggest::did_you_mean(other, ["turbo", "nx"]) {
                problem = problem.hint(format!("did you mean `{best}`?"));
            }
            return Err(Failure::from(problem));
        }
    };
    let args = InitArgs {
        dry: args.dry,
        force: args.force,
    };
    write::write(cwd, args, from)
}

/// The root: the workspace root discovery finds (DISC-1) when it holds a `package.json` or a
/// `pnpm-workspace.yaml`, else the nearest directory with a `package.json`.
fn choose_root(cwd: &Path, nearest: &Path) -> Result<PathBuf, Failure> {
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

fn load_failure(error: LoadError) -> Failure {
    match error {
        LoadError::Config(diagnostics) => Failure::User(diagnostics),
        LoadError::Io { path, op, source } => Failure::from(io_diagnostic(&path, op, &source)),
        other => Failure::usage(other.to_string()),
    }
}

/// Reads every `package.json` (and `turbo.json`), maps the scripts and lays out the files.
/// All problems of the files read are reported together (ERR-2, CFG-10).
fn plan(root: &Path, from: From) -> Result<Plan, Failure> {
    let workspace = vx_workspace::package_workspace(root).map_err(load_failure)?;
    let mut errors = Vec::new();
    let root_manifest = read_manifest(root, "", &mut errors);
    let mut members = Vec::new();
    for dir in workspace.iter().flat_map(|w| &w.members) {
        if let Some(manifest) = read_manifest(root, dir, &mut errors) {
            members.push((dir.clone(), manifest));
        }
    }
    let dirs: Vec<String> = members.iter().map(|(dir, _)| dir.clone()).collect();
    let turbo = match from {
        From::Nx => None,
        From::Scripts | From::Turbo => turbo::read(root, &dirs, &mut errors),
    };
    let nx = match from {
        From::Turbo => None,
        From::Nx => nx::read(root, &dirs, &mut errors),
        From::Scripts if turbo.is_none() => nx::read(root, &dirs, &mut errors),
        From::Scripts => None,
    };
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
    let root_context = context("", &root_package, workspace.is_some());
    let mut root_mapping = map_scripts(&root_package.scripts, &root_context);
    let contexts: Vec<Context> = members
        .iter()
        .map(|(dir, package)| context(dir, package, false))
        .collect();
    let mappings: Vec<Mapping> = members
        .iter()
        .zip(&contexts)
        .map(|((_, package), context)| map_scripts(&package.scripts, context))
        .collect();

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
    match &workspace {
        Some(w) => {
            root_file.header.push(format!(
                "Written by `vx init`. The members are the packages {} lists.",
                w.source
            ));
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
        if mapping.tasks.is_empty() && mapping.left_out.is_empty() && tables.is_empty() {
            plan.without_scripts.push(manifest);
            continue;
        }
        let mut file = File {
            rel: format!("{dir}/{CONFIG_FILE}"),
            header: vec![format!(
                "Written by `vx init` from the scripts of {manifest}: what differs from the"
            )],
            name: project_name,
            tags,
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
    // A same-project dependency on a task a project does not have is nothing under Turborepo
    // and Nx; vx requires it, so each list keeps only what the project declares.
    if turbo.is_some() || nx.is_some() {
        let declared: Vec<(String, BTreeSet<String>)> = members
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

/// Same-project `depends-on` entries (`prebuild`, no `^`, `#` or `*`) name a task that must
/// exist in vx, while Turborepo and Nx skip one the package does not have. A template keeps
/// such an entry only when every package it applies to declares that task; the packages that
/// do get the whole list in their own table. A package's own table keeps only what it declares.
fn optional_edges(
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

/// Leaves out of the tables of the project at `dir` the outputs that lie in a nested
/// member's directory, each with a line saying so.
fn nested_outputs(dir: &str, members: &[String], tables: &mut [Table], left: &mut Vec<NotCarried>) {
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

/// Where the tasks come from, besides the scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum From {
    /// `vx init`: the scripts, and `turbo.json` when there is one.
    Scripts,
    /// `vx migrate turbo`: `turbo.json` must exist.
    Turbo,
    /// `vx migrate nx`: `nx.json` must exist.
    Nx,
}

/// What `turbo.json` gives every package: its templates and the names it defines.
struct Carried {
    templates: Vec<Table>,
    /// `[workspace.input-sets]` (from Nx's `namedInputs`).
    input_sets: Vec<InputSetTable>,
    /// Every task name turbo.json defines for packages (generic, `pkg#name`, package files).
    names: BTreeSet<String>,
    /// How many task definitions were carried over.
    count: usize,
    not_carried: Vec<NotCarried>,
    /// Turborepo's aggregate tasks ([`Turbo::aggregates`]): a group in each package, no
    /// template.
    aggregates: BTreeSet<String>,
    /// (task, package directory): a generic definition whose globs leaving the package
    /// (`../x`) resolve there otherwise than in the template, so the package gets the whole
    /// definition as its own table.
    apart: BTreeSet<(String, String)>,
}

impl Carried {
    fn new(
        turbo: Option<&Turbo>,
        members: &[(String, PackageJson)],
        root_has: &dyn Fn(&str) -> bool,
    ) -> Carried {
        let mut carried = Carried {
            templates: Vec::new(),
            input_sets: Vec::new(),
            names: BTreeSet::new(),
            count: 0,
            not_carried: Vec::new(),
            aggregates: BTreeSet::new(),
            apart: BTreeSet::new(),
        };
        let Some(turbo) = turbo else {
            return carried;
        };
        carried.aggregates = turbo.aggregates(&|name| {
            members.iter().any(|(_, p)| p.scripts.contains_key(name)) || root_has(name)
        });
        let outputs = turbo.outputs_for("", None);
        for (name, def) in &turbo.generic {
            let place = format!("tasks.{name}");
            if carried.aggregates.contains(name) {
                carried.names.insert(name.clone());
                continue;
            }
            if let Some(problem) = vx_workspace::task_name_problem(name) {
                carried.not_carried.push(NotCarried {
                    what: place,
                    at: def.at.clone().unwrap_or_default(),
                    why: problem,
                });
                continue;
            }
            // The template holds the resolution most of its packages share; the others get
            // their own table.
            let mut groups: BTreeMap<Vec<Option<String>>, Vec<&str>> = BTreeMap::new();
            for (dir, _) in members.iter().filter(|(_, p)| p.scripts.contains_key(name)) {
                groups
                    .entry(Turbo::leaving_globs(def, dir))
                    .or_default()
                    .push(dir);
            }
            let chosen = groups.values().max_by_key(|dirs| dirs.len()).cloned();
            for dirs in groups.values().filter(|d| Some(*d) != chosen.as_ref()) {
                carried
                    .apart
                    .extend(dirs.iter().map(|d| (name.clone(), d.to_string())));
            }
            let target = turbo::Target {
                template: true,
                dir: chosen.as_ref().map(|dirs| dirs[0]),
                outputs: &outputs,
            };
            let (table, left) = turbo.table(name, def, target, &place);
            carried.not_carried.extend(left);
            carried.templates.push(table);
            carried.names.insert(name.clone());
        }
        let package_names = turbo
            .by_package
            .values()
            .chain(turbo.package_files.values())
            .flat_map(|tasks| tasks.keys())
            .filter(|name| vx_workspace::task_name_problem(name).is_none());
        carried.names.extend(package_names.cloned());
        carried.count = turbo.generic.len()
            + turbo.root.len()
            + turbo.by_package.values().map(BTreeMap::len).sum::<usize>()
            + turbo
                .package_files
                .values()
                .map(BTreeMap::len)
                .sum::<usize>();
        carried
    }
}

impl Carried {
    /// Nx's `targetDefaults` as templates, `namedInputs` as input sets, and every target
    /// name a project defines.
    fn add_nx(&mut self, nx: &Nx) {
        let (sets, left) = nx.input_sets();
        self.input_sets = sets;
        self.not_carried.extend(left);
        for (name, def) in &nx.defaults {
            if let Some(problem) = vx_workspace::task_name_problem(name) {
                self.not_carried.push(NotCarried {
                    what: format!("targetDefaults.{name}"),
                    at: def.at.clone(),
                    why: problem,
                });
                continue;
            }
            let (table, left) = nx.template(name, def);
            self.not_carried.extend(left);
            self.templates.push(table);
            self.names.insert(name.clone());
        }
        let targets = nx.projects.values().flat_map(|p| p.targets.keys());
        self.names.extend(
            targets
                .filter(|name| vx_workspace::task_name_problem(name).is_none())
                .cloned(),
        );
        self.count +=
            nx.defaults.len() + nx.projects.values().map(|p| p.targets.len()).sum::<usize>();
    }
}

/// A project's tables for the names Nx defines (`targetDefaults` and its own targets): only
/// what differs from the template (a folded hook, the project's own target keys), or a whole
/// table where the project's target is all there is.
/// `...`: the template's entries, in a package's list over its template's.
fn vx_splice() -> String {
    "...".to_string()
}

fn nx_tables(
    nx: &Nx,
    carried: &Carried,
    dir: &str,
    package: &PackageJson,
    mapping: &Mapping,
    context: &Context,
    ignore: &vx_workspace::tree::IgnoreRules,
) -> (Vec<Table>, Vec<NotCarried>) {
    let mut tables = Vec::new();
    let mut left = Vec::new();
    let project = nx.projects.get(dir);
    let names: BTreeSet<String> = carried
        .names
        .iter()
        .filter(|n| {
            package.scripts.contains_key(*n) || project.is_some_and(|p| p.targets.contains_key(*n))
        })
        .cloned()
        .collect();
    let outputs = nx.project_outputs(dir, &names);
    let take_back = nx.outputs_to_take_back(dir, &names, &|path| ignore.is_ignored(path, true));
    for name in &names {
        let text = script_text(name, &package.scripts, context);
        let script = (!text.is_empty()).then_some(text.as_str());
        let own = project.and_then(|p| p.targets.get(name));
        let file = if own.is_some() && project.is_some_and(|p| p.name.is_some()) {
            format!("{dir}/project.json")
        } else {
            format!("{dir}/package.json")
        };
        let place = nx::Place {
            dir,
            project: project
                .and_then(|p| p.name.as_ref().map(|(n, _)| n.as_str()))
                .or(package.name.as_deref())
                .unwrap_or(dir),
            what: format!("{file}: targets.{name}"),
        };
        let (table, not) = nx.project_table(name, own, script, &place, &outputs);
        left.extend(not);
        let mapped = mapping.tasks.iter().find(|t| &t.name == name);
        let raw = package.scripts.get(name).map(|s| s.trim());
        let mut table = match table {
            Some(table) => table,
            None if nx.defaults.contains_key(name) && script.is_some() && script != raw => Table {
                name: name.clone(),
                command: script.map(str::to_string),
                ..Table::default()
            },
            None => Table {
                name: name.clone(),
                ..Table::default()
            },
        };
        // Under a template, a command equal to the script needs no restating.
        if nx.defaults.contains_key(name) && !table.no_template && table.command.as_deref() == raw {
            table.command = None;
        }
        table.define = mapped.map(|t| t.define.clone()).unwrap_or_default();
        table.todos.extend(
            mapped
                .iter()
                .flat_map(|t| &t.notes)
                .map(|n| (TodoReason::NpmVariable, n.clone())),
        );
        if let Some(negations) = take_back.get(name) {
            let cache = table.cache.get_or_insert_with(|| toml::Cache {
                partial: true,
                ..toml::Cache::default()
            });
            let mut inputs = vec![vx_splice()];
            inputs.extend(cache.inputs.take().unwrap_or_default());
            inputs.extend(negations.iter().cloned());
            cache.inputs = Some(inputs);
        }
        let runnable = table.command.is_some()
            || table.depends_on.as_ref().is_some_and(|d| !d.is_empty())
            || (nx.defaults.contains_key(name) && !table.no_template && raw.is_some());
        if !table.is_empty() && runnable {
            tables.push(table);
        }
    }
    (tables, left)
}

/// A package's tables for the names turbo.json defines: its whole table where `pkg#name` or
/// its own `turbo.json` defines the task, else only what differs from the template (a folded
/// hook, an npm variable).
fn carried_tables(
    turbo: &Turbo,
    carried: &Carried,
    dir: &str,
    package: &PackageJson,
    mapping: &Mapping,
    context: &Context,
    templates: &BTreeSet<String>,
) -> (Vec<Table>, Vec<NotCarried>) {
    let mut tables = Vec::new();
    let mut left = Vec::new();
    let by_name = package
        .name
        .as_deref()
        .and_then(|n| turbo.by_package.get(n));
    let file = turbo.package_files.get(dir);
    let outputs = turbo.outputs_for(dir, package.name.as_deref());
    for name in &carried.names {
        if carried.aggregates.contains(name) {
            let has = |task: &str| !script_text(task, &package.scripts, context).is_empty();
            let depends_on = turbo.aggregate_deps(name, &has);
            if !depends_on.is_empty() {
                tables.push(Table {
                    name: name.clone(),
                    description: turbo.generic[name].description.clone(),
                    depends_on: Some(depends_on),
                    ..Table::default()
                });
            }
            continue;
        }
        let own = by_name
            .and_then(|tasks| {
                tasks.get(name).map(|d| {
                    (
                        d,
                        format!("tasks.{}#{name}", package.name.as_deref().unwrap_or(dir)),
                    )
                })
            })
            .or_else(|| {
                file.and_then(|tasks| {
                    tasks
                        .get(name)
                        .map(|d| (d, format!("{dir}/turbo.json: tasks.{name}")))
                })
            })
            .or_else(|| {
                let apart = carried.apart.contains(&(name.clone(), dir.to_string()));
                let generic = turbo.generic.get(name).filter(|_| apart);
                generic.map(|d| (d, format!("tasks.{name}")))
            });
        let text = script_text(name, &package.scripts, context);
        if text.is_empty() {
            if let Some((def, place)) = own {
                left.push(no_script(&place, def, &format!("{dir}/package.json")));
            }
            continue;
        }
        let mapped = mapping.tasks.iter().find(|t| &t.name == name);
        let define = mapped.map(|t| t.define.clone()).unwrap_or_default();
        let todos = mapped
            .map(|t| {
                t.notes
                    .iter()
                    .map(|n| (TodoReason::NpmVariable, n.clone()))
                    .collect()
            })
            .unwrap_or_default();
        match own {
            Some((def, place)) => {
                let target = turbo::Target {
                    template: false,
                    dir: Some(dir),
                    outputs: &outputs,
                };
                let (mut table, not) = turbo.table(name, def, target, &place);
                left.extend(not);
                table.command = Some(text);
                table.no_template = templates.contains(name);
                table.define = define;
                table.todos.extend(todos);
                tables.push(table);
            }
            None if turbo.generic.contains_key(name) => {
                let raw = package.scripts.get(name).map(|s| s.trim());
                let table = Table {
                    name: name.clone(),
                    command: (Some(text.as_str()) != raw).then_some(text),
                    define,
                    todos,
                    ..Table::default()
                };
                if !table.is_empty() {
                    tables.push(table);
                }
            }
            None => {}
        }
    }
    (tables, left)
}

fn no_script(place: &str, def: &turbo::TurboTask, manifest: &str) -> NotCarried {
    let name = place.rsplit(['.', '#']).next().unwrap_or(place);
    NotCarried {
        what: place.to_string(),
        at: def.at.clone().unwrap_or_default(),
        why: format!("{manifest} has no `{name}` script, so Turborepo runs nothing"),
    }
}

/// The comments for scripts that are not tasks: hooks kept apart, scripts that drive the
/// workspace, and scripts that cannot be tasks (each with a TODO).
fn left_out(file: &mut File, mapping: &Mapping) {
    if let Some((hooks, why)) = &mapping.unfolded_hooks {
        let names: Vec<String> = hooks.iter().map(|h| format!("`{h}`")).collect();
        file.trailer.push(vec![
            "Kept as tasks of their own, not folded into the scripts they precede or follow"
                .to_string(),
            format!(
                "({why}, so the package manager does not run them): {}.",
                names.join(", ")
            ),
        ]);
    }
    let orchestrating: Vec<String> = mapping
        .left_out
        .iter()
        .filter(|l| l.why == LeftOutWhy::Orchestrates)
        .map(|l| format!("  {}: {}", l.name, l.text))
        .collect();
    if !orchestrating.is_empty() {
        let mut block = vec![
            "Not mapped: these scripts drive the whole workspace; `vx run <task> --all` does that."
                .to_string(),
        ];
        block.extend(orchestrating);
        file.trailer.push(block);
    }
    for left in &mapping.left_out {
        if let LeftOutWhy::Unmappable(problem) = &left.why {
            let text = format!("script {:?} is not mapped: {problem}", left.name);
            file.trailer
                .push(vec![format!("TODO: {text}"), format!("  {}", left.text)]);
            file.loose_todos.push(Todo {
                reason: TodoReason::Unmappable,
                subject: left.name.clone(),
                text,
            });
        }
    }
}

/// The `package.json` in `dir` (root-relative), if there is one; problems go to `errors`.
fn read_manifest(root: &Path, dir: &str, errors: &mut Vec<Diagnostic>) -> Option<PackageJson> {
    let rel = if dir.is_empty() {
        "package.json".to_string()
    } else {
        format!("{dir}/package.json")
    };
    let text = match std::fs::read(root.join(&rel)) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            errors.push(io_diagnostic(Path::new(&rel), "read", &e));
            return None;
        }
    };
    match vx_workspace::read_package_json(&text, &rel) {
        Ok(package) => Some(package),
        Err(mut problems) => {
            errors.append(&mut problems);
            None
        }
    }
}

/// Why the package manager would not run `pre`/`post` scripts for this package (INIT-2), if
/// it would not: `ignore-scripts` or pnpm's `enable-pre-post-scripts=false` in the package's
/// or the root's `.npmrc`, or `packageManager` yarn 2 or later.
fn hooks_off(
    root: &Path,
    dir: &str,
    package: &PackageJson,
    root_package: &PackageJson,
) -> Option<String> {
    let mut dirs = vec![dir];
    if !dir.is_empty() {
        dirs.push("");
    }
    let mut pre_post_on = false;
    for dir in dirs {
        let rel = if dir.is_empty() {
            ".npmrc".to_string()
        } else {
            format!("{dir}/.npmrc")
        };
        let Ok(text) = std::fs::read_to_string(root.join(&rel)) else {
            continue;
        };
        let settings = npmrc(&text);
        if settings.get("ignore-scripts").is_some_and(|v| v == "true") {
            return Some(format!("{rel} sets `ignore-scripts`"));
        }
        match settings.get("enable-pre-post-scripts").map(String::as_str) {
            Some("false") => {
                return Some(format!("{rel} turns off `enable-pre-post-scripts`"));
            }
            Some("true") => pre_post_on = true,
            _ => {}
        }
    }
    let manager = package
        .package_manager
        .as_deref()
        .or(root_package.package_manager.as_deref())?;
    let (tool, version) = manager.split_once('@')?;
    let major: u32 = version.split('.').next()?.parse().ok()?;
    // Yarn 2 dropped them; pnpm 6 to 8 run them only with `enable-pre-post-scripts=true`
    // (pnpm 9 turned them back on by default).
    let off = match tool {
        "yarn" => major >= 2,
        "pnpm" => (6..=8).contains(&major) && !pre_post_on,
        _ => false,
    };
    off.then(|| format!("`packageManager` is {manager}"))
}

/// The `key=value` settings of an `.npmrc` (comments start with `#` or `;`).
fn npmrc(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.starts_with(['#', ';']))
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| {
            let value = value.trim().trim_matches(['"', '\'']);
            (key.trim().to_string(), value.to_string())
        })
        .collect()
}
