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
mod scripts;
mod shell;
mod toml;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use vx_core::config::CONFIG_FILE;
use vx_core::Diagnostic;
use vx_workspace::{LoadError, PackageJson};

use self::scripts::{map_scripts, Context, LeftOutWhy, Mapping, Todo, TodoReason};
use self::toml::{File, WorkspaceTable};
use crate::cli::InitArgs;
use crate::error::Failure;
use crate::exit;
use crate::render;
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
}

/// What happened to a planned file.
enum Fate {
    Written,
    Kept,
}

pub fn init(cwd: &Path, args: InitArgs) -> Result<i32, Failure> {
    let real = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let Some(nearest) = real
        .ancestors()
        .find(|dir| dir.join("package.json").is_file())
    else {
        return Err(Failure::usage(format!(
            "vx init needs a package.json (none found from {} upward)",
            cwd.display()
        )));
    };
    let root = choose_root(&real, nearest)?;
    let plan = plan(&root)?;

    let mut fates = Vec::new();
    for file in &plan.files {
        let path = root.join(&file.rel);
        let exists = std::fs::symlink_metadata(&path).is_ok();
        if exists && !args.force {
            fates.push(Fate::Kept);
            continue;
        }
        if !args.dry {
            std::fs::write(&path, file.render())
                .map_err(|e| Failure::from(io_diagnostic(Path::new(&file.rel), "write", &e)))?;
        }
        fates.push(Fate::Written);
    }

    let all_written = fates.iter().all(|f| matches!(f, Fate::Written));
    if !args.dry && all_written {
        // The files as the loader reads them, templates and scripts applied.
        if let Err(error) = vx_workspace::discover(&root) {
            let first = match &error {
                LoadError::Config(problems) => problems.first().map(ToString::to_string),
                _ => None,
            };
            return Err(Failure::Internal(format!(
                "vx init wrote files that vx refuses: {}",
                first.unwrap_or_else(|| error.to_string())
            )));
        }
    }
    if args.dry {
        let mut printed = String::new();
        for (file, fate) in plan.files.iter().zip(&fates) {
            if matches!(fate, Fate::Written) {
                if !printed.is_empty() {
                    printed.push('\n');
                }
                printed.push_str(&format!("==> {} <==\n{}", file.rel, file.render()));
            }
        }
        render::out_str(&printed);
    }
    let report = report(&root, &plan, &fates, args.dry);
    if args.dry {
        render::stderr(&report);
    } else {
        render::out_str(&report);
    }
    Ok(exit::SUCCESS)
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

/// Reads every `package.json`, maps its scripts and lays out the files. All manifest problems
/// are reported together (ERR-2, CFG-10).
fn plan(root: &Path) -> Result<Plan, Failure> {
    let workspace = vx_workspace::package_workspace(root).map_err(load_failure)?;
    let mut errors = Vec::new();
    let root_manifest = read_manifest(root, "", &mut errors);
    let mut members = Vec::new();
    for dir in workspace.iter().flat_map(|w| &w.members) {
        if let Some(manifest) = read_manifest(root, dir, &mut errors) {
            members.push((dir.clone(), manifest));
        }
    }
    if !errors.is_empty() {
        return Err(Failure::User(vx_core::Diagnostics(errors).into_sorted()));
    }

    let root_package = root_manifest.clone().unwrap_or_default();
    let context = |dir: &str, package: &PackageJson, monorepo_root: bool| Context {
        name: package.name.clone(),
        version: package.version.clone(),
        hooks_off: hooks_off(root, dir, package, &root_package),
        monorepo_root,
    };
    let root_mapping = map_scripts(
        &root_package.scripts,
        &context("", &root_package, workspace.is_some()),
    );
    let mappings: Vec<Mapping> = members
        .iter()
        .map(|(dir, package)| map_scripts(&package.scripts, &context(dir, package, false)))
        .collect();
    let layout = layout::monorepo(
        &members
            .iter()
            .zip(&mappings)
            .map(|((_, package), mapping)| layout::Member {
                scripts: &package.scripts,
                mapping,
            })
            .collect::<Vec<_>>(),
    );
    let template_names = layout.templates.iter().map(|t| t.name.clone()).collect();

    let mut root_file = File {
        rel: CONFIG_FILE.to_string(),
        workspace: Some(WorkspaceTable::default()),
        tasks: layout::alone(&root_mapping, &template_names),
        ..File::default()
    };
    match &workspace {
        Some(w) => {
            root_file.header.push(format!(
                "Written by `vx init`. The members are the packages {} lists.",
                w.source
            ));
            if !layout.templates.is_empty() {
                root_file.header.extend([
                    "The templates under [workspace.tasks] apply to every package that has a"
                        .to_string(),
                    "script of their name, which is the command; a package's own vx.toml holds"
                        .to_string(),
                    "only what differs.".to_string(),
                ]);
            }
            if !root_mapping.tasks.is_empty() {
                root_file
                    .header
                    .push("The [tasks] tables come from the scripts of package.json.".to_string());
            }
            root_file.templates = layout.templates;
        }
        None => {
            root_file.header.extend([
                "Written by `vx init` from the scripts of package.json: one package, whose tasks"
                    .to_string(),
                "are the workspace root's (`//`).".to_string(),
            ]);
            root_file.workspace = Some(WorkspaceTable {
                members: Some(Vec::new()),
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
        files: vec![root_file],
        without_scripts: Vec::new(),
        by_templates: Vec::new(),
        orchestrating,
    };

    for (((dir, _), mapping), tables) in members.iter().zip(&mappings).zip(layout.members) {
        let manifest = format!("{dir}/package.json");
        if mapping.tasks.is_empty() && mapping.left_out.is_empty() {
            plan.without_scripts.push(manifest);
            continue;
        }
        let mut file = File {
            rel: format!("{dir}/{CONFIG_FILE}"),
            header: vec![format!(
                "Written by `vx init` from the scripts of {manifest}: what differs from the"
            )],
            tasks: tables,
            ..File::default()
        };
        file.header
            .push("templates in the root vx.toml.".to_string());
        left_out(&mut file, mapping);
        if file.tasks.is_empty() && file.trailer.is_empty() {
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
        plan.files.push(file);
    }
    for file in &plan.files {
        check(file)?;
    }
    Ok(plan)
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

/// Checks that vx loads a file `vx init` writes: one vx refuses would be a bug in vx. A
/// package's file may hold only what differs from a template, so it is checked as the
/// templates and its scripts resolve it, by the loader, once the files are written; here
/// its syntax and keys are checked.
fn check(file: &File) -> Result<(), Failure> {
    let is_root = file.rel == CONFIG_FILE;
    let text = file.render();
    let problems = match vx_workspace::parse_config(&text, &file.rel, is_root) {
        Ok(_) => return Ok(()),
        Err(problems) => problems,
    };
    let real = problems
        .iter()
        .find(|d| is_root || !d.message.contains("needs either `command` or `depends-on`"));
    match real {
        None => Ok(()),
        Some(first) => Err(Failure::Internal(format!(
            "vx init generated a {} that vx refuses: {first}",
            file.rel
        ))),
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
        if settings
            .get("enable-pre-post-scripts")
            .is_some_and(|v| v == "false")
        {
            return Some(format!("{rel} turns off `enable-pre-post-scripts`"));
        }
    }
    let manager = package
        .package_manager
        .as_deref()
        .or(root_package.package_manager.as_deref())?;
    let version = manager.strip_prefix("yarn@")?;
    let major: u32 = version.split('.').next()?.parse().ok()?;
    (major >= 2).then(|| format!("`packageManager` is {manager}"))
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

/// The report: each file written or kept, manifests without scripts, root scripts left out,
/// the TODO comments by reason, and what to run next.
fn report(root: &Path, plan: &Plan, fates: &[Fate], dry: bool) -> String {
    let mut out = String::new();
    let wrote = if dry { "would write" } else { "wrote" };
    for (file, fate) in plan.files.iter().zip(fates) {
        match fate {
            Fate::Written => out.push_str(&format!("{wrote} {}\n", file.rel)),
            Fate::Kept => out.push_str(&format!(
                "kept {} (it exists; `--force` replaces it)\n",
                file.rel
            )),
        }
    }
    for manifest in &plan.without_scripts {
        out.push_str(&format!("no scripts to map in {manifest}\n"));
    }
    if !plan.by_templates.is_empty() {
        out.push_str(&format!(
            "no file needed: the templates describe the scripts of {} package{}\n",
            plan.by_templates.len(),
            if plan.by_templates.len() == 1 {
                ""
            } else {
                "s"
            }
        ));
    }
    if !plan.orchestrating.is_empty() {
        let names: Vec<String> = plan
            .orchestrating
            .iter()
            .map(|n| format!("`{n}`"))
            .collect();
        out.push_str(&format!(
            "not mapped: root scripts that drive the whole workspace ({})\n",
            names.join(", ")
        ));
    }

    // Reason → file → subjects, for the files written.
    let mut by_reason: BTreeMap<TodoReason, BTreeMap<&str, Vec<String>>> = BTreeMap::new();
    let mut count = 0;
    for (file, fate) in plan.files.iter().zip(fates) {
        if matches!(fate, Fate::Kept) {
            continue;
        }
        for todo in &file.todos() {
            count += 1;
            by_reason
                .entry(todo.reason)
                .or_default()
                .entry(file.rel.as_str())
                .or_default()
                .push(todo.subject.clone());
        }
    }
    if count == 0 {
        out.push_str("TODO comments: none\n");
    } else {
        out.push_str(&format!("TODO comments, by reason ({count}):\n"));
        for (reason, files) in &by_reason {
            let n: usize = files.values().map(Vec::len).sum();
            out.push_str(&format!("  {} ({n})\n", reason.heading()));
            for (rel, subjects) in files {
                out.push_str(&format!("    {rel}: {}\n", subjects.join(", ")));
            }
        }
    }
    out.push_str("next: vx run build --all\n");
    if root.join("turbo.json").is_file() {
        out.push_str(
            "  hint: this repository uses Turborepo; `vx migrate turbo` carries over its task settings\n",
        );
    }
    out
}
