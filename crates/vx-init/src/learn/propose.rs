//! One task's trace turned into a `cache` table, or the reason it stays uncached.
//!
//! Each path the task's processes opened, executed, created, removed or renamed is placed by
//! the project that holds it (the longest member directory above it; the root project holds
//! the rest):
//! - **written**, in its own project: an output — its top directory whole (`dist/**`) when
//!   every file there now is one the task wrote, else the file itself; in another project,
//!   under `.git`, under `node_modules` (but its caches), or outside the workspace (but the
//!   temporary and cache directories): the task stays uncached. A written file git tracks
//!   stays uncached too: vx cleans a task's outputs before it runs.
//! - **read**, in its own project: an input, by top directory (`src/**`) or the file at the
//!   top; elsewhere: a `workspace-input`, within the project that holds it (`packages/b/src/**`)
//!   or, outside every project, by top directory (`scripts/**`). A file git ignores is named
//!   exactly (a glob never selects it; a literal does). A file an upstream task wrote is left
//!   to that task's key; one a task that is not upstream wrote keeps it uncached. A read under
//!   `.git` keeps it uncached (the output may depend on the commit).
//! - **looked for and not found** (a configuration file a tool probes for): the same place,
//!   named exactly, so that creating it is a miss (a literal that names nothing folds as
//!   absent), unless a glob already covers it.
//! - **listed** (a directory opened): that directory whole — the project itself as `**` less
//!   the outputs; a directory holding another project keeps it uncached.
//! - **a connection** to a non-loopback address keeps it uncached.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use vx_exec::trace::AccessKind;

/// What tracing one task proposed, or why it stays uncached.
pub(crate) type Outcome = Result<Proposal, String>;

/// Each task traced, by id: its project's directory and what came of it.
pub(crate) type Learned = BTreeMap<String, (String, Outcome)>;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Proposal {
    pub inputs: Vec<String>,
    pub workspace_inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub env: Vec<String>,
}

/// One task to learn: its id, its project's directory, its command, and every project's
/// directory (a read in another project is globbed within that project).
pub(crate) struct Subject {
    pub id: String,
    pub dir: String,
    pub command: String,
    pub projects: Vec<String>,
}

/// Directories whose files are never a task's inputs or outputs.
const NEVER: [&str; 6] = ["node_modules", ".git", ".vx", ".turbo", ".nx", ".yarn"];

/// Directories under `node_modules` that tools write their caches to: not outputs.
const TOOL_CACHES: [&str; 4] = [".cache", ".vite", ".vitest", ".tmp"];

/// Files vx folds into every key by other means (the lockfile's resolved dependencies).
const FOLDED: [&str; 5] = [
    "pnpm-lock.yaml",
    "package-lock.json",
    "yarn.lock",
    "bun.lock",
    "npm-shrinkwrap.json",
];

/// What the trace is checked against besides the files on disk.
pub(crate) struct Context<'a> {
    pub root: &'a Path,
    /// Files other traced tasks wrote, by the task that wrote them.
    pub writers: &'a BTreeMap<String, String>,
    /// The tasks upstream of this one (its key folds theirs).
    pub upstream: &'a BTreeSet<String>,
    pub ignored: &'a dyn Fn(&str) -> bool,
    pub tracked: &'a dyn Fn(&str) -> bool,
    /// The home directory, whose tool caches a task may write.
    pub home: Option<&'a Path>,
}

/// Where a path lies.
pub(super) enum Place {
    /// In the workspace, root-relative.
    Inside(String),
    /// Under one of [`NEVER`], root-relative.
    Never(String),
    Outside,
}

pub(crate) fn propose(
    cx: &Context<'_>,
    subject: &Subject,
    accesses: &[(AccessKind, PathBuf)],
) -> Result<Proposal, String> {
    let holder = |rel: &str| -> String {
        subject
            .projects
            .iter()
            .filter(|d| !d.is_empty() && (rel == d.as_str() || rel.starts_with(&format!("{d}/"))))
            .max_by_key(|d| d.len())
            .cloned()
            .unwrap_or_default()
    };
    let own = |rel: &str| holder(rel) == subject.dir;
    let in_project = |rel: &str| -> String {
        if subject.dir.is_empty() {
            rel.to_string()
        } else if rel == subject.dir {
            String::new()
        } else {
            rel[subject.dir.len() + 1..].to_string()
        }
    };
    let project_root = cx.root.join(&subject.dir);
    let mut wrote = BTreeSet::new();
    let mut read = BTreeSet::new();
    let mut missing = BTreeSet::new();
    let mut listed = BTreeSet::new();
    for (kind, path) in accesses {
        if *kind == AccessKind::Net {
            return Err(format!(
                "it connected to {}: what it fetched is no input vx can see",
                path.display()
            ));
        }
        let rel = match place(cx.root, path) {
            Place::Inside(rel) => rel,
            Place::Never(rel) => {
                never(&rel, *kind)?;
                continue;
            }
            Place::Outside => {
                if *kind == AccessKind::Write && !scratch(path, cx.home) {
                    return Err(format!(
                        "it wrote {}, outside the workspace",
                        path.display()
                    ));
                }
                continue;
            }
        };
        let full = cx.root.join(&rel);
        match kind {
            AccessKind::Write if full.is_file() => {
                if !own(&rel) {
                    return Err(format!("it wrote {rel}, outside its project"));
                }
                if (cx.tracked)(&rel) {
                    return Err(format!(
                        "it rewrote {rel}, which git tracks: vx cleans a task's outputs before it runs"
                    ));
                }
                wrote.insert(rel);
            }
            AccessKind::Write => {} // a directory, or a file it removed again
            _ if full.is_dir() => {
                listed.insert(rel);
            }
            _ if full.is_file() => {
                read.insert(rel);
            }
            _ => {
                missing.insert(rel);
            }
        }
    }
    // The project's root listed: `rel` is "" for the root project.
    let listed_self = accesses
        .iter()
        .any(|(kind, path)| *kind == AccessKind::Read && lexical(path) == lexical(&project_root))
        || listed.contains(&subject.dir);

    let mut proposal = Proposal::default();
    let mut outputs = BTreeSet::new();
    // Each top directory is walked once, not once per file written in it.
    let mut whole: BTreeMap<String, bool> = BTreeMap::new();
    for rel in &wrote {
        let inner = in_project(rel);
        let top = inner.split_once('/').map(|(top, _)| top.to_string());
        let all_written = top.as_ref().is_some_and(|top| {
            *whole
                .entry(top.clone())
                .or_insert_with(|| only_written(&project_root.join(top), cx.root, &wrote))
        });
        outputs.insert(match top {
            Some(top) if all_written => format!("{top}/**"),
            _ => inner,
        });
    }
    let output_dirs: BTreeSet<String> = outputs
        .iter()
        .filter_map(|o| o.strip_suffix("/**").map(str::to_string))
        .collect();
    let mut inputs = BTreeSet::new();
    let mut workspace_inputs = BTreeSet::new();
    for rel in read.difference(&wrote) {
        if FOLDED.contains(&rel.as_str()) {
            continue;
        }
        if let Some(writer) = cx.writers.get(rel) {
            if cx.upstream.contains(writer) {
                continue;
            }
            return Err(format!(
                "it read {rel}, which {writer} wrote, and it does not depend on {writer}"
            ));
        }
        let ignored = (cx.ignored)(rel);
        if own(rel) {
            let inner = in_project(rel);
            inputs.insert(if ignored {
                inner
            } else {
                coarse(&inner, &project_root, &output_dirs)
            });
        } else {
            workspace_inputs.insert(if ignored {
                rel.clone()
            } else {
                elsewhere(rel, cx.root, &subject.projects)
            });
        }
    }
    for rel in &listed {
        if *rel == subject.dir {
            continue;
        }
        if own(rel) {
            let inner = in_project(rel);
            let top = inner.split('/').next().unwrap_or("");
            if !output_dirs.contains(top) {
                inputs.insert(format!("{top}/**"));
            }
            continue;
        }
        let holds_project = subject.projects.iter().any(|d| {
            d == rel || d.starts_with(&format!("{rel}/")) || (rel.is_empty() && !d.is_empty())
        });
        if holds_project {
            return Err(format!(
                "it listed {}, which holds another project: a new file there is no input vx can name",
                if rel.is_empty() { "the workspace root" } else { rel }
            ));
        }
        workspace_inputs.insert(elsewhere(&format!("{rel}/-"), cx.root, &subject.projects));
    }
    if listed_self {
        inputs = ["**".to_string()].into();
        inputs.extend(outputs.iter().map(|o| format!("!{o}")));
    }
    // Files it looked for and did not find, where no glob already covers them.
    for rel in &missing {
        if own(rel) {
            let inner = in_project(rel);
            let top = inner.split('/').next().unwrap_or("");
            let covered =
                listed_self || inputs.contains(&format!("{top}/**")) || output_dirs.contains(top);
            if !covered {
                inputs.insert(inner);
            }
        } else if !workspace_inputs.iter().any(|g| {
            g.strip_suffix("/**")
                .is_some_and(|d| rel.starts_with(&format!("{d}/")))
        }) {
            workspace_inputs.insert(rel.clone());
        }
    }
    proposal.outputs = outputs.into_iter().collect();
    // What is taken, then what is taken back.
    let (back, take): (Vec<String>, Vec<String>) =
        inputs.into_iter().partition(|i| i.starts_with('!'));
    proposal.inputs = take.into_iter().chain(back).collect();
    proposal.workspace_inputs = workspace_inputs.into_iter().collect();
    proposal.env = variables(&subject.command);
    Ok(proposal)
}

/// A write or read under one of [`NEVER`]: a tool's cache is fine; `node_modules` (a generated
/// client), `.git` (a tag, a version stamp) are not.
fn never(rel: &str, kind: AccessKind) -> Result<(), String> {
    let parts: Vec<&str> = rel.split('/').collect();
    if parts.contains(&".git") {
        return Err(match kind {
            AccessKind::Write => format!("it wrote {rel}, in git's own directory"),
            _ => format!("it read {rel}: its output may depend on the commit"),
        });
    }
    if kind != AccessKind::Write {
        return Ok(());
    }
    match parts.iter().position(|p| *p == "node_modules") {
        Some(at) if !parts.get(at + 1).is_some_and(|p| TOOL_CACHES.contains(p)) => Err(format!(
            "it wrote {rel}, in node_modules: a hit would not bring it back"
        )),
        _ => Ok(()),
    }
}

/// Whether a write outside the workspace goes where nothing lasts or only a tool's cache
/// does: temporary directories, devices, and the caches in the home directory.
fn scratch(path: &Path, home: Option<&Path>) -> bool {
    let path = lexical(path);
    let system = ["/tmp", "/var/tmp", "/dev", "/proc", "/run", "/sys"];
    if system.iter().any(|p| path.starts_with(p)) {
        return true;
    }
    let caches = [
        ".cache",
        ".npm",
        ".local/share/pnpm",
        ".yarn",
        ".bun",
        ".pnpm-store",
    ];
    home.is_some_and(|home| caches.iter().any(|c| path.starts_with(home.join(c))))
}

/// Whether every file under `dir` now is one the task wrote.
fn only_written(dir: &Path, root: &Path, wrote: &BTreeSet<String>) -> bool {
    let walk = ignore::WalkBuilder::new(dir)
        .standard_filters(false)
        .build();
    walk.flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .all(|e| {
            e.path()
                .strip_prefix(root)
                .is_ok_and(|rel| wrote.contains(&rel.to_string_lossy().replace('\\', "/")))
        })
}

/// The glob for a file at `rel` (relative to `base`, its project): its top directory whole
/// (`src/**`), or the file itself when it lies at the top or under an output directory.
fn coarse(rel: &str, base: &Path, outputs: &BTreeSet<String>) -> String {
    match rel.split_once('/') {
        Some((top, _)) if base.join(top).is_dir() && !outputs.contains(top) => {
            format!("{top}/**")
        }
        _ => rel.to_string(),
    }
}

/// The glob for a file outside the task's project: within the project that holds it
/// (`packages/b/src/**`), or, outside every project, its top directory when that holds no
/// project (`scripts/**`), else the file itself.
fn elsewhere(rel: &str, root: &Path, projects: &[String]) -> String {
    let holder = projects
        .iter()
        .filter(|dir| !dir.is_empty() && rel.starts_with(&format!("{dir}/")))
        .max_by_key(|dir| dir.len());
    if let Some(dir) = holder {
        let inner = coarse(&rel[dir.len() + 1..], &root.join(dir), &BTreeSet::new());
        return format!("{dir}/{inner}");
    }
    let top = rel.split('/').next().unwrap_or(rel);
    let holds_project = projects
        .iter()
        .any(|dir| dir == top || dir.starts_with(&format!("{top}/")));
    if holds_project {
        rel.to_string()
    } else {
        coarse(rel, root, &BTreeSet::new())
    }
}

/// `path` without `.` and `..` (as named: links are not followed).
fn lexical(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal
}

/// Where `path` lies, relative to the workspace root (`/`-separated, lexically normalized).
pub(super) fn place(root: &Path, path: &Path) -> Place {
    let normal = lexical(path);
    let canonical = root.canonicalize().ok();
    let rest = normal.strip_prefix(root).ok().or_else(|| {
        canonical
            .as_deref()
            .and_then(|c| normal.strip_prefix(c).ok())
    });
    let Some(rest) = rest else {
        return Place::Outside;
    };
    let rel = rest.to_string_lossy().replace('\\', "/");
    if rel.split('/').any(|part| NEVER.contains(&part)) {
        Place::Never(rel)
    } else {
        Place::Inside(rel)
    }
}

/// The variables a command's text names (`$NODE_ENV`, `${API_URL}`), less the shell's own and
/// the ones vx always sets.
pub(crate) fn variables(command: &str) -> Vec<String> {
    const OWN: [&str; 6] = ["HOME", "PATH", "PWD", "SHELL", "USER", "VX_RUN_TASK"];
    let bytes = command.as_bytes();
    let mut found = BTreeSet::new();
    for (at, _) in command.match_indices('$') {
        let start = at + 1 + usize::from(bytes.get(at + 1) == Some(&b'{'));
        let name: String = command[start..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if valid && !OWN.contains(&name.as_str()) && !name.starts_with("npm_") {
            found.insert(name);
        }
    }
    found.into_iter().collect()
}

#[cfg(test)]
mod tests;
