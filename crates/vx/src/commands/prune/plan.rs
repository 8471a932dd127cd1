//! What `vx prune` writes: the projects kept, the files of `json/` and `full/`, and the pruned
//! lockfile. Nothing here writes; `output` does, and `verify` runs the package manager.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use vx_core::{EdgeKind, Workspace};
use vx_workspace::lockfile::prune::{Keep, PackageManager, Pruned};
use vx_workspace::lockfile::{self, LockfileError};
use vx_workspace::tree::{Tree, TreeOptions};

use vx_engine::error::Failure;

/// One file of the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// The workspace's file (or symbolic link) at this path, as it is.
    Copy(PathBuf),
    /// Bytes vx wrote (a pruned lockfile, an edited manifest, an empty stub), with the mode
    /// of the file they stand for.
    Written(Vec<u8>, u32),
}

/// The lockfile as pruned.
pub struct PrunedLock {
    pub file: String,
    pub pm: PackageManager,
    pub pruned: Pruned,
}

pub struct Plan {
    /// Names of the projects kept, sorted.
    pub kept: Vec<String>,
    /// How many projects the workspace has (the root's not counted).
    pub projects: usize,
    /// What installing needs (the `json/` of `--docker`), by output-relative path.
    pub json: BTreeMap<String, Content>,
    /// Everything (the `full/` of `--docker`, the whole output without it).
    pub full: BTreeMap<String, Content>,
    pub lock: Option<PrunedLock>,
    /// What was left out on purpose, one line each.
    pub notes: Vec<String>,
}

/// The files at the root a package manager reads when it installs: copied into `json/`.
const INSTALL_FILES: [&str; 8] = [
    "package.json",
    "pnpm-workspace.yaml",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    "bunfig.toml",
    ".pnpmfile.cjs",
    ".pnpmfile.mjs",
];

/// Directories at the root installing reads (yarn's own release and plugins, patches).
const INSTALL_DIRS: [&str; 4] = [
    ".yarn/releases",
    ".yarn/plugins",
    ".yarn/patches",
    "patches",
];

/// What every step reads of the workspace, read once: its files, and of each manifest (the
/// root's and each project's) its package name and the names it lists only in
/// `devDependencies`, by root-relative directory.
pub struct Facts {
    tree: Tree,
    dev_only: BTreeMap<String, BTreeSet<String>>,
    /// Every member's package name with its directory (links in yarn 1, `--production`).
    members: BTreeMap<String, String>,
}

impl Facts {
    /// Reads them, the output directory `out` left out of the listing.
    pub fn read(workspace: &Workspace, out: &Path) -> Result<Facts, Failure> {
        let root = &workspace.root;
        let tree = Tree::scan(&TreeOptions {
            root: root.clone(),
            excluded: vec![out.to_path_buf()],
        })
        .map_err(|e| Failure::usage(format!("cannot list the workspace's files: {e}")))?;
        let mut dev_only = BTreeMap::new();
        let mut members = BTreeMap::new();
        let dirs = workspace
            .projects
            .iter()
            .map(|p| p.dir.as_str())
            .chain([""]);
        for dir in dirs {
            let Some(manifest) = read_manifest(root, dir) else {
                continue;
            };
            let name = manifest.get("name").and_then(serde_json::Value::as_str);
            if let (Some(name), false) = (name, dir.is_empty()) {
                members.insert(name.to_string(), dir.to_string());
            }
            dev_only.insert(dir.to_string(), dev_only_names(&manifest));
        }
        Ok(Facts {
            tree,
            dev_only,
            members,
        })
    }

    fn dev_only(&self, dir: &str) -> Option<&BTreeSet<String>> {
        self.dev_only.get(dir)
    }
}

/// The plan for `targets`, grown until the pruned lockfile reaches nothing left out: a package
/// from the registry that depends on a workspace package is linked to it (that project, and
/// what it depends on, come too), and a local package (`file:`) comes whole. Both are said.
pub fn settle(
    workspace: &Workspace,
    facts: &Facts,
    targets: &[usize],
    production: bool,
) -> Result<Plan, Failure> {
    let mut kept = closure(workspace, facts, targets, production);
    let mut linked: Vec<String> = Vec::new();
    let mut extras: BTreeSet<String> = BTreeSet::new();
    loop {
        let mut plan = plan(workspace, facts, &kept, &extras, production)?;
        let mut more = Vec::new();
        let mut grew = false;
        for path in plan.lock.iter().flat_map(|l| &l.pruned.needed) {
            match workspace.projects.iter().position(|p| &p.dir == path) {
                Some(i) if !kept.contains(&i) => more.push(i),
                Some(_) => {}
                None => grew |= extras.insert(path.clone()),
            }
        }
        if more.is_empty() && !grew {
            for name in &linked {
                plan.notes.push(format!(
                    "{name} kept: a package the lockfile installs depends on it"
                ));
            }
            for path in &extras {
                plan.notes.push(format!(
                    "{path} kept: a local package (file:, link:) a kept project installs"
                ));
            }
            return Ok(plan);
        }
        linked.extend(more.iter().map(|&i| workspace.projects[i].name.clone()));
        kept.extend(closure(workspace, facts, &more, production));
    }
}

/// Projects kept: `targets` and every project they depend on, transitively (project edges,
/// and the projects a task's `depends-on` names as `project#task`); with `production`, not
/// through a `devDependencies` entry. The root's dependencies are followed too (its
/// `package.json` is always kept, so what it links to must be).
fn closure(
    workspace: &Workspace,
    facts: &Facts,
    targets: &[usize],
    production: bool,
) -> BTreeSet<usize> {
    let mut kept: BTreeSet<usize> = BTreeSet::new();
    let mut stack: Vec<usize> = targets.to_vec();
    stack.extend(workspace.by_name.get("//"));
    while let Some(at) = stack.pop() {
        if !kept.insert(at) {
            continue;
        }
        let project = &workspace.projects[at];
        let declared: BTreeSet<&str> = project
            .config
            .deps
            .iter()
            .map(|d| d.value.as_str())
            .collect();
        let named = project
            .config
            .tasks
            .values()
            .flat_map(|task| &task.depends_on)
            .filter_map(|entry| entry.value.rsplit_once('#').map(|(p, _)| p))
            .filter_map(|name| workspace.by_name.get(name));
        stack.extend(named);
        let dev_only = facts.dev_only(&project.dir);
        for edge in &project.deps {
            let Some(&to) = workspace.by_name.get(&edge.to) else {
                continue;
            };
            let dev = edge.kind == EdgeKind::Normal
                && dev_only.is_some_and(|d| d.contains(&edge.to))
                && !declared.contains(edge.to.as_str());
            if !(production && dev) {
                stack.push(to);
            }
        }
    }
    kept
}

/// The names a manifest lists only in `devDependencies`.
fn dev_only_names(manifest: &serde_json::Value) -> BTreeSet<String> {
    let names = |list: &str| -> BTreeSet<String> {
        manifest
            .get(list)
            .and_then(serde_json::Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    let mut dev = names("devDependencies");
    for list in ["dependencies", "optionalDependencies", "peerDependencies"] {
        for name in names(list) {
            dev.remove(&name);
        }
    }
    dev
}

fn read_manifest(root: &Path, dir: &str) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(root.join(dir).join("package.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Everything `vx prune` writes for the projects `kept` (indices, the root's among them).
fn plan(
    workspace: &Workspace,
    facts: &Facts,
    kept: &BTreeSet<usize>,
    extras: &BTreeSet<String>,
    production: bool,
) -> Result<Plan, Failure> {
    let root = &workspace.root;
    let projects: BTreeSet<String> = kept
        .iter()
        .map(|&i| workspace.projects[i].dir.clone())
        .filter(|d| !d.is_empty())
        .collect();
    // The lockfile keeps the local packages' entries too.
    let dirs: BTreeSet<String> = projects.iter().chain(extras).cloned().collect();
    let members = &facts.members;
    let tree = &facts.tree;
    let mut json: BTreeMap<String, Content> = BTreeMap::new();
    let mut notes = Vec::new();
    // Manifests, with `--production`'s development links to projects left out removed.
    let mut drop_dev: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut manifests: BTreeMap<String, String> = BTreeMap::new();
    for dir in projects.iter().map(String::as_str).chain([""]) {
        let rel = manifest_path(dir);
        let Ok(text) = std::fs::read_to_string(root.join(&rel)) else {
            continue;
        };
        let dropped: BTreeSet<String> = if production {
            facts
                .dev_only(dir)
                .into_iter()
                .flatten()
                .filter(|name| members.get(*name).is_some_and(|d| !dirs.contains(d)))
                .cloned()
                .collect()
        } else {
            BTreeSet::new()
        };
        let text = if dropped.is_empty() {
            json.insert(rel.clone(), Content::Copy(root.join(&rel)));
            text
        } else {
            let edited =
                without_dev(&text, &dropped).map_err(|e| Failure::usage(format!("{rel}: {e}")))?;
            json.insert(
                rel.clone(),
                written(root, &rel, edited.clone().into_bytes()),
            );
            notes.push(format!(
                "{rel}: devDependencies {} removed (--production: projects left out)",
                dropped.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
            drop_dev.insert(dir.to_string(), dropped);
            edited
        };
        manifests.insert(dir.to_string(), text);
        // Installing links each `bin` of a member; its files come with `full/`, empty stubs
        // stand in for them in `json/`.
        if !dir.is_empty() {
            for bin in bins(&manifests[dir]) {
                let rel = format!("{dir}/{bin}");
                if root.join(&rel).is_file() {
                    json.insert(rel.clone(), written(root, &rel, Vec::new()));
                }
            }
        }
    }
    for file in INSTALL_FILES.iter().skip(1) {
        if root.join(file).is_file() {
            json.insert((*file).to_string(), Content::Copy(root.join(file)));
        }
    }
    // A local package (`file:`) is installed from its files: all of them, in both parts.
    for dir in INSTALL_DIRS
        .iter()
        .copied()
        .chain(extras.iter().map(String::as_str))
    {
        let listed = tree.files().iter().find(|f| f.path == dir);
        for file in listed.into_iter().chain(tree.files_under(dir)) {
            json.insert(file.path.clone(), Content::Copy(root.join(&file.path)));
        }
    }
    let root_manifest = manifests.get("").map(String::as_str);
    for file in vx_workspace::lockfile::prune::patch_files(root, root_manifest) {
        if root.join(&file).is_file() {
            json.insert(file.clone(), Content::Copy(root.join(&file)));
        }
    }
    let lock = prune_lockfile(root, &dirs, &drop_dev, &manifests, members)?;
    if let Some(lock) = &lock {
        json.insert(
            lock.file.clone(),
            written(root, &lock.file, lock.pruned.text.clone().into_bytes()),
        );
    } else {
        notes.push("no lockfile at the root: nothing to prune or verify".into());
    }
    let mut full = full_files(workspace, kept, tree, &mut notes)?;
    // What `json/` holds wins: the pruned lockfile, the edited manifests; never a `bin` stub
    // (full/ has the file, or the build writes it).
    for (path, content) in &json {
        let stub = matches!(content, Content::Written(bytes, _) if bytes.is_empty());
        if !stub {
            full.insert(path.clone(), content.clone());
        }
    }
    let mut names: Vec<String> = kept
        .iter()
        .map(|&i| workspace.projects[i].name.clone())
        .filter(|n| n != "//")
        .collect();
    names.sort();
    Ok(Plan {
        kept: names,
        projects: workspace
            .projects
            .iter()
            .filter(|p| !p.dir.is_empty())
            .count(),
        json,
        full,
        lock,
        notes,
    })
}

fn manifest_path(dir: &str) -> String {
    if dir.is_empty() {
        "package.json".into()
    } else {
        format!("{dir}/package.json")
    }
}

/// Bytes vx wrote in place of the file at `rel`, with that file's mode.
fn written(root: &Path, rel: &str, bytes: Vec<u8>) -> Content {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(root.join(rel)).map_or(0o644, |m| m.permissions().mode() & 0o777);
    Content::Written(bytes, mode)
}

/// The paths a manifest's `bin` names (a string, or an object of them).
fn bins(manifest: &str) -> Vec<String> {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(manifest) else {
        return Vec::new();
    };
    let paths: Vec<&str> = match value.get("bin") {
        Some(serde_json::Value::String(path)) => vec![path],
        Some(serde_json::Value::Object(map)) => map.values().filter_map(|v| v.as_str()).collect(),
        _ => Vec::new(),
    };
    paths
        .into_iter()
        .map(|p| p.trim_start_matches("./").to_string())
        .filter(|p| !p.is_empty() && !p.starts_with('/') && !p.split('/').any(|s| s == ".."))
        .collect()
}

/// `text` without `names` in `devDependencies`, written with the file's own indentation.
fn without_dev(text: &str, names: &BTreeSet<String>) -> Result<String, String> {
    let mut value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if let Some(serde_json::Value::Object(dev)) = value.get_mut("devDependencies") {
        dev.retain(|name, _| !names.contains(name));
    }
    let indent: String = text
        .lines()
        .nth(1)
        .map(|l| l.chars().take_while(|c| *c == ' ' || *c == '\t').collect())
        .filter(|i: &String| !i.is_empty())
        .unwrap_or_else(|| "  ".into());
    let mut bytes = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, formatter);
    serde::Serialize::serialize(&value, &mut serializer).map_err(|e| e.to_string())?;
    let mut out = String::from_utf8(bytes).map_err(|e| e.to_string())?;
    if text.ends_with('\n') {
        out.push('\n');
    }
    if text.contains("\r\n") {
        out = out.replace('\n', "\r\n");
    }
    Ok(out)
}

/// The root's lockfile pruned to `dirs`, or `None` when there is none.
fn prune_lockfile(
    root: &Path,
    dirs: &BTreeSet<String>,
    drop_dev: &BTreeMap<String, BTreeSet<String>>,
    manifests: &BTreeMap<String, String>,
    members: &BTreeMap<String, String>,
) -> Result<Option<PrunedLock>, Failure> {
    let Some(file) = lockfile::PER_PROJECT
        .iter()
        .chain([&lockfile::BINARY])
        .find(|f| root.join(f).is_file())
    else {
        return Ok(None);
    };
    let cannot = |why: String| Failure::usage(format!("cannot prune {file}: {why}"));
    if *file == lockfile::BINARY {
        return Err(cannot(
            "it is bun's binary lockfile; `bun install --save-text-lockfile` writes bun.lock, \
             which vx prunes"
                .into(),
        ));
    }
    let text = std::fs::read_to_string(root.join(file)).map_err(|e| cannot(e.to_string()))?;
    let pm = PackageManager::of(file, &text).ok_or_else(|| cannot("not a lockfile".into()))?;
    let manifest = |dir: &str| manifests.get(dir).cloned();
    let keep = Keep {
        dirs,
        drop_dev,
        manifest: &manifest,
        members,
    };
    let pruned = lockfile::prune::prune(file, &text, &keep)
        .map_err(|e: LockfileError| cannot(e.to_string()))?;
    Ok(Some(PrunedLock {
        file: (*file).to_string(),
        pm,
        pruned,
    }))
}

/// `full/`: the kept projects' files (their nested projects left out unless kept), the files
/// at the root, what the kept tasks' `workspace-inputs` name, and the root `vx.toml` with its
/// `members` trimmed to the kept projects.
fn full_files(
    workspace: &Workspace,
    kept: &BTreeSet<usize>,
    tree: &Tree,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<String, Content>, Failure> {
    let root = &workspace.root;
    let kept_dirs: BTreeSet<&str> = kept
        .iter()
        .map(|&i| workspace.projects[i].dir.as_str())
        .collect();
    // The kept projects' tasks, not the root's: a root task (a repository-wide lint) is not
    // part of building what is deployed.
    let mut globs = globset::GlobSetBuilder::new();
    for &i in kept
        .iter()
        .filter(|&&i| !workspace.projects[i].dir.is_empty())
    {
        for task in workspace.projects[i].config.tasks.values() {
            for glob in task.cache.iter().flat_map(|c| &c.workspace_inputs) {
                if let Ok(glob) = globset::Glob::new(glob) {
                    globs.add(glob);
                }
            }
        }
    }
    let inputs = globs
        .build()
        .map_err(|e| Failure::usage(format!("workspace-inputs: {e}")))?;
    let mut full = BTreeMap::new();
    for file in tree.files() {
        let path = &file.path;
        // A `workspace-inputs` glob reaches the root's files; a project left out stays out
        // (`**/package.json` must not bring back its manifest).
        let owner = workspace
            .project_containing(path)
            .map_or("", |p| p.dir.as_str());
        let wanted = if owner.is_empty() {
            !path.contains('/') || inputs.is_match(path)
        } else {
            kept_dirs.contains(owner)
        };
        if wanted && root.join(path).symlink_metadata().is_ok() {
            full.insert(path.clone(), Content::Copy(root.join(path)));
        }
    }
    follow_links(workspace, &kept_dirs, tree, &mut full, notes);
    if full.remove(vx_workspace::LOCK_FILE).is_some() {
        notes.push(format!(
            "{} left out: it names every project; run `vx lock` in the output if you use --frozen",
            vx_workspace::LOCK_FILE
        ));
    }
    if let Some(text) = trimmed_members(workspace, &kept_dirs) {
        full.insert(
            "vx.toml".into(),
            written(root, "vx.toml", text.into_bytes()),
        );
    }
    Ok(full)
}

/// A symbolic link in the output to a file or directory elsewhere in the workspace
/// (`packages/a/root.tsdown.config.js -> ../../scripts/getTsdownConfig.js`) would dangle: what it
/// names is copied too when the root owns it; a link into a project left out is said.
fn follow_links(
    workspace: &Workspace,
    kept_dirs: &BTreeSet<&str>,
    tree: &Tree,
    full: &mut BTreeMap<String, Content>,
    notes: &mut Vec<String>,
) {
    let root = &workspace.root;
    let links: Vec<(String, PathBuf)> = full
        .keys()
        .filter_map(|path| {
            let text = std::fs::read_link(root.join(path)).ok()?;
            Some((path.clone(), text))
        })
        .collect();
    for (link, text) in links {
        let parent = Path::new(&link).parent().unwrap_or(Path::new(""));
        let Some(target) = within(&parent.join(&text)) else {
            continue;
        };
        if target.is_empty() || full.contains_key(&target) {
            continue;
        }
        let owner = workspace
            .project_containing(&target)
            .map_or("", |p| p.dir.as_str());
        if !owner.is_empty() {
            if !kept_dirs.contains(owner) {
                notes.push(format!(
                    "{link} links to {target}, in {owner}, a project left out: it dangles"
                ));
            }
            continue;
        }
        // Only what the walk lists (never an ignored `.env`) and what no project owns (a
        // directory of projects brings none of them).
        let under = format!("{target}/");
        let listed = tree.files().iter().find(|f| f.path == target);
        let files: Vec<&str> = listed
            .into_iter()
            .chain(tree.files_under(&target))
            .map(|f| f.path.as_str())
            .filter(|p| *p == target || p.starts_with(&under))
            .filter(|p| {
                workspace
                    .project_containing(p)
                    .is_none_or(|owner| owner.dir.is_empty())
            })
            .collect();
        if files.is_empty() {
            notes.push(format!(
                "{link} links to {target}: ignored, or other projects' files, so not copied; it dangles"
            ));
        }
        for file in files {
            if root.join(file).symlink_metadata().is_ok() {
                full.entry(file.to_string())
                    .or_insert_with(|| Content::Copy(root.join(file)));
            }
        }
    }
}

/// A root-relative path with `.` and `..` resolved, or `None` when it leaves the root (or is
/// absolute).
fn within(path: &Path) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    for part in path.components() {
        match part {
            std::path::Component::Normal(p) => parts.push(p.to_str()?.to_string()),
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                parts.pop()?;
            }
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

/// The root `vx.toml` with its `[workspace] members` listing the kept projects' directories
/// (added under `[workspace]` when it has none), or `None` when it has no `[workspace]` table.
fn trimmed_members(workspace: &Workspace, kept_dirs: &BTreeSet<&str>) -> Option<String> {
    let text = std::fs::read_to_string(workspace.root.join("vx.toml")).ok()?;
    let list: Vec<String> = kept_dirs
        .iter()
        .filter(|d| !d.is_empty())
        .map(|d| format!("\"{}\"", d.replace('\\', "\\\\").replace('"', "\\\"")))
        .collect();
    let Some(members) = workspace.settings.members.as_ref() else {
        // The members come from pnpm-workspace.yaml or package.json, whose globs name
        // directories the output does not have (and which installing reads as they are):
        // the kept ones are listed in vx.toml instead, under its `[workspace]` header.
        let header = text
            .split_inclusive('\n')
            .scan(0, |at, line| {
                let start = *at;
                *at += line.len();
                Some((start, line))
            })
            .find(|(_, line)| line.split('#').next().unwrap_or("").trim() == "[workspace]")?;
        let after = header.0 + header.1.len();
        let newline = if header.1.ends_with('\n') { "" } else { "\n" };
        return Some(format!(
            "{}{newline}members = [{}]  # vx prune: the projects kept\n{}",
            &text[..after],
            list.join(", "),
            &text[after..]
        ));
    };
    let offset = |line: u32, column: u32| -> Option<usize> {
        let start: usize = text
            .split_inclusive('\n')
            .take(line.checked_sub(1)? as usize)
            .map(str::len)
            .sum();
        let rest = &text[start..];
        let chars = rest.char_indices().nth(column.checked_sub(1)? as usize)?;
        Some(start + chars.0)
    };
    let (first, last) = (members.first()?, members.last()?);
    let from = offset(first.at.line, first.at.column)?;
    let last_start = offset(last.at.line, last.at.column)?;
    let end = last_start + toml_string_len(&text[last_start..])?;
    Some(format!(
        "{}{}{}",
        &text[..from],
        list.join(", "),
        &text[end..]
    ))
}

/// The length of the TOML string literal at the start of `text` (basic or literal, one line).
fn toml_string_len(text: &str) -> Option<usize> {
    let quote = text.chars().next()?;
    if quote != '"' && quote != '\'' {
        return None;
    }
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        if quote == '"' && c == '\\' && !escaped {
            escaped = true;
            continue;
        }
        if c == quote && !escaped {
            return Some(i + 1);
        }
        escaped = false;
    }
    None
}
