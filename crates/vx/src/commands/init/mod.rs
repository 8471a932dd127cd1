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

mod scripts;
mod shell;
mod toml;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use vx_core::config::CONFIG_FILE;
use vx_core::Diagnostic;
use vx_workspace::{LoadError, PackageJson};

use self::scripts::{map_scripts, Context, LeftOutWhy, Mapping, Todo, TodoReason};
use self::toml::Head;
use crate::cli::InitArgs;
use crate::error::Failure;
use crate::exit;
use crate::render;
use crate::workspace::io_diagnostic;

/// One `vx.toml` to write.
struct Planned {
    /// Root-relative path.
    rel: String,
    text: String,
    todos: Vec<Todo>,
}

/// Everything `vx init` would do, before it does it.
struct Plan {
    files: Vec<Planned>,
    /// `package.json` files with no script to map (no file is written for them).
    without_scripts: Vec<String>,
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
            std::fs::write(&path, &file.text)
                .map_err(|e| Failure::from(io_diagnostic(Path::new(&file.rel), "write", &e)))?;
        }
        fates.push(Fate::Written);
    }

    if args.dry {
        let mut printed = String::new();
        for (file, fate) in plan.files.iter().zip(&fates) {
            if matches!(fate, Fate::Written) {
                if !printed.is_empty() {
                    printed.push('\n');
                }
                printed.push_str(&format!("==> {} <==\n{}", file.rel, file.text));
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

/// Reads every `package.json`, maps its scripts and renders the files. All manifest problems
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
    let mut plan = Plan {
        files: Vec::new(),
        without_scripts: Vec::new(),
        orchestrating: Vec::new(),
    };
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
    plan.orchestrating = root_mapping
        .left_out
        .iter()
        .filter(|l| l.why == LeftOutWhy::Orchestrates)
        .map(|l| l.name.clone())
        .collect();
    let head = match &workspace {
        Some(w) => Head::MonorepoRoot { source: w.source },
        None => Head::SinglePackage,
    };
    plan.files.push(planned(
        CONFIG_FILE.to_string(),
        head,
        "package.json",
        &root_mapping,
        true,
    )?);

    for (dir, package) in &members {
        let mapping = map_scripts(&package.scripts, &context(dir, package, false));
        let manifest = format!("{dir}/package.json");
        if mapping.tasks.is_empty() && mapping.left_out.is_empty() {
            plan.without_scripts.push(manifest);
            continue;
        }
        let rel = format!("{dir}/{CONFIG_FILE}");
        plan.files
            .push(planned(rel, Head::Project, &manifest, &mapping, false)?);
    }
    Ok(plan)
}

/// Renders one file and checks that vx loads it: a file `vx init` writes that vx then refuses
/// would be a bug in vx.
fn planned(
    rel: String,
    head: Head<'_>,
    manifest: &str,
    mapping: &Mapping,
    is_root: bool,
) -> Result<Planned, Failure> {
    let text = toml::render(head, manifest, mapping);
    if let Err(problems) = vx_workspace::parse_config(&text, &rel, is_root) {
        let first = problems
            .first()
            .map(ToString::to_string)
            .unwrap_or_default();
        return Err(Failure::Internal(format!(
            "vx init generated a {rel} that vx refuses: {first}"
        )));
    }
    Ok(Planned {
        rel,
        text,
        todos: mapping.todos(),
    })
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
    let mut by_reason: BTreeMap<TodoReason, BTreeMap<&str, Vec<&str>>> = BTreeMap::new();
    let mut count = 0;
    for (file, fate) in plan.files.iter().zip(fates) {
        if matches!(fate, Fate::Kept) {
            continue;
        }
        for todo in &file.todos {
            count += 1;
            by_reason
                .entry(todo.reason)
                .or_default()
                .entry(file.rel.as_str())
                .or_default()
                .push(todo.subject.as_str());
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
