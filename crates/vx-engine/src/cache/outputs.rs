//! A cached task's declared outputs on disk: finding what the output globs match, and the
//! up-to-date check (STORE-9).
//!
//! How this works: each positive glob is walked from its literal prefix (`dist` for
//! `dist/**`), never descending into walls — `.git`, `.vx`, the cache directory, nested
//! projects, and `node_modules` unless the glob names it literally or it lies inside the
//! directory the glob names (`dist/node_modules` is an output of `dist/**`; the project's own
//! installed dependencies are not an output of `**/*.js`) — and never following a symlinked
//! directory. What the globs match is returned whatever it is: regular files, symlinks and
//! directories, so an entry keeps the tree exactly (STORE-5). A wall met inside a directory a
//! glob names is listed as skipped, so a save can say so. Cleaning what is found is
//! `clean.rs`'s.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use std::sync::Arc;
use vx_core::config::CacheConfig;

use vx_core::globs::{literal_prefix, GlobCache, TaskGlobs};
use vx_store::index::OutputStamp;

use crate::keys::{is_under, join, relative};

/// The output globs of one cached task, resolved against the workspace.
#[derive(Clone)]
pub struct Outputs {
    /// The project directory, root-relative.
    pub dir: String,
    pub project: Arc<TaskGlobs>,
    pub workspace: Arc<TaskGlobs>,
    /// `cache.dependants-read`: the project outputs a dependant's key folds (all when unset).
    read: Option<Arc<TaskGlobs>>,
    /// Root-relative directories never walked or cleaned.
    walls: Vec<String>,
}

/// What the output globs match on disk, and the walls vx did not enter inside a directory a
/// glob names (root-relative).
pub struct Listing {
    pub found: Vec<Found>,
    pub skipped: Vec<String>,
    /// Every path the walk looked at (`lstat`ed, there or not): with their stat data, what
    /// proves the listing unchanged (a run snapshot).
    pub visited: Vec<String>,
}

/// One matched path: root-relative, with its `lstat`.
#[derive(Debug, Clone)]
pub struct Found {
    pub path: String,
    pub meta: fs::Metadata,
}

impl Outputs {
    pub fn new(
        dir: &str,
        cache: &CacheConfig,
        walls: Vec<String>,
        globs: &mut GlobCache,
    ) -> Outputs {
        Outputs {
            dir: dir.to_string(),
            project: globs.get(cache.outputs.as_deref().unwrap_or_default()),
            workspace: globs.get(&cache.workspace_outputs),
            read: cache.dependants_read.as_deref().map(|read| globs.get(read)),
            walls,
        }
    }

    /// Whether no dependant reads the artifact entry `entry`: a project output
    /// `cache.dependants-read` does not match (KEY-9). Workspace outputs are always read.
    pub fn unread(&self, entry: &str) -> bool {
        match (&self.read, entry.strip_prefix("outputs/")) {
            (Some(read), Some(rel)) => !read.is_match(rel),
            _ => false,
        }
    }

    /// Whether a root-relative path is a declared output.
    pub fn covers(&self, path: &str) -> bool {
        (is_under(path, &self.dir) && self.project.is_match(relative(path, &self.dir)))
            || self.workspace.is_match(path)
    }

    /// The artifact entry name of a root-relative output path (STORE-5).
    pub fn entry_name(&self, path: &str) -> String {
        if is_under(path, &self.dir) && self.project.is_match(relative(path, &self.dir)) {
            format!("outputs/{}", relative(path, &self.dir))
        } else {
            format!("workspace-outputs/{path}")
        }
    }

    /// The root-relative path of an artifact entry name.
    pub fn path_of(&self, entry: &str) -> Option<String> {
        if let Some(rel) = entry.strip_prefix("outputs/") {
            Some(join(&self.dir, rel))
        } else {
            entry.strip_prefix("workspace-outputs/").map(str::to_string)
        }
    }

    /// Whether an artifact entry name is matched by the declared outputs (STORE-5).
    pub fn accepts(&self, entry: &str) -> bool {
        if let Some(rel) = entry.strip_prefix("outputs/") {
            self.project.is_match(rel)
        } else if let Some(path) = entry.strip_prefix("workspace-outputs/") {
            self.workspace.is_match(path)
        } else {
            false
        }
    }

    /// The literal prefixes of the positive globs, root-relative (kept when cleaning).
    pub fn prefixes(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .project
            .positives()
            .iter()
            .map(|g| join(&self.dir, literal_prefix(g)))
            .chain(
                self.workspace
                    .positives()
                    .iter()
                    .map(|g| literal_prefix(g).to_string()),
            )
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Every file, symlink and directory on disk that the globs match, sorted by path.
    pub fn find(&self, root: &Path) -> io::Result<Vec<Found>> {
        self.list(root).map(|listing| listing.found)
    }

    /// [`Outputs::find`], and the walls met inside a directory a glob names: the paths a glob
    /// would match that vx never saves (`dist/vendor/.git`, a nested project).
    pub fn list(&self, root: &Path) -> io::Result<Listing> {
        let mut found: BTreeMap<String, fs::Metadata> = BTreeMap::new();
        let mut skipped: Vec<String> = Vec::new();
        let mut visited: Vec<String> = Vec::new();
        let starts: Vec<(String, bool, bool)> = self
            .project
            .positives()
            .iter()
            .map(|g| {
                (
                    join(&self.dir, literal_prefix(g)),
                    g,
                    !literal_prefix(g).is_empty(),
                )
            })
            .chain(self.workspace.positives().iter().map(|g| {
                (
                    literal_prefix(g).to_string(),
                    g,
                    !literal_prefix(g).is_empty(),
                )
            }))
            .map(|(start, g, named)| (start, g.contains("node_modules"), named))
            .collect();
        for (start, names_node_modules, named) in starts {
            let mut stack = vec![start.clone()];
            while let Some(rel) = stack.pop() {
                // Inside a directory the glob names, its `node_modules` are the task's output.
                let inside = named && rel != start;
                if self.is_wall(&rel, names_node_modules || inside) {
                    // Said only when a glob would match the wall or a file directly in it (a
                    // name standing for any file there): `dist/**` meets `dist/vendor/.git`,
                    // `dist/*.js` does not.
                    let any_file = join(&rel, "any-file");
                    if inside && (self.covers(&rel) || self.covers(&any_file)) {
                        skipped.push(rel);
                    }
                    continue;
                }
                visited.push(rel.clone());
                let meta = match fs::symlink_metadata(root.join(&rel)) {
                    Ok(meta) => meta,
                    Err(e) if is_missing(&e) => continue,
                    Err(e) => return Err(e),
                };
                if meta.is_dir() {
                    let entries = match fs::read_dir(root.join(&rel)) {
                        Ok(entries) => entries,
                        Err(e) if is_missing(&e) => continue,
                        Err(e) => return Err(e),
                    };
                    for entry in entries {
                        let entry = entry?;
                        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                            continue;
                        };
                        stack.push(join(&rel, &name));
                    }
                }
                if self.covers(&rel) {
                    found.insert(rel, meta);
                }
            }
        }
        skipped.sort();
        skipped.dedup();
        Ok(Listing {
            found: found
                .into_iter()
                .map(|(path, meta)| Found { path, meta })
                .collect(),
            skipped,
            visited,
        })
    }

    /// Whether the walk must not enter `rel`; `node_modules` is entered when `keep_node_modules`.
    fn is_wall(&self, rel: &str, keep_node_modules: bool) -> bool {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        name == ".git"
            || name == ".vx"
            || (name == "node_modules" && !keep_node_modules)
            || self.walls.iter().any(|w| is_under(rel, w))
    }
}

/// An IO error's reason without Rust's `(os error N)` suffix.
pub fn plain(error: &io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_lowercase(),
        None => text.to_lowercase(),
    }
}

pub fn is_missing(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// The stamp of a file as `lstat` reports it now (STORE-9).
pub fn stamp(path: &str, meta: &fs::Metadata) -> OutputStamp {
    OutputStamp {
        path: path.to_string(),
        size: meta.len(),
        mode: meta.mode(),
        mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
        inode: meta.ino(),
        ctime_ns: meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
    }
}

/// STORE-9: why the outputs on disk are not the entry's, or `None` when they are up to date: the
/// entries on disk equal the entry's set, with equal size and mode (type bits included: a file
/// where the entry has a symlink is not up to date), and each `lstat` equals the stamp recorded
/// when this checkout last saved or restored it. The reason names the first output that
/// differs, for `vx why`.
pub fn stale_output(
    found: &[Found],
    entry: &[(String, vx_store::artifact::FileMeta)],
    stamps: &[OutputStamp],
    outputs: &Outputs,
) -> Option<String> {
    let stamps: BTreeMap<&str, &OutputStamp> =
        stamps.iter().map(|s| (s.path.as_str(), s)).collect();
    let listed = entry.len();
    let entry: BTreeMap<String, &vx_store::artifact::FileMeta> = entry
        .iter()
        .filter_map(|(name, meta)| {
            let name = entry_row_name(name);
            Some((outputs.path_of(&name)?, meta))
        })
        .collect();
    if entry.len() != listed {
        return Some("the entry holds outputs this task's globs do not place".into());
    }
    let on_disk: std::collections::BTreeSet<&str> = found.iter().map(|f| f.path.as_str()).collect();
    if let Some(missing) = entry.keys().find(|path| !on_disk.contains(path.as_str())) {
        return Some(format!("`{missing}` was missing"));
    }
    for f in found {
        let Some(meta) = entry.get(&f.path) else {
            return Some(format!("`{}` was there but is not in the entry", f.path));
        };
        let now = stamp(&f.path, &f.meta);
        if !((now.size == meta.size || f.meta.is_dir()) && now.mode == meta.mode) {
            return Some(format!("`{}` differed from the entry", f.path));
        }
        match stamps.get(f.path.as_str()) {
            None => {
                return Some(format!(
                    "`{}` was not written by vx in this checkout",
                    f.path
                ))
            }
            Some(s) if **s != now => return Some(format!("`{}` changed", f.path)),
            Some(_) => {}
        }
    }
    None
}

/// `entry_outputs` stores project outputs without their `outputs/` prefix (and workspace
/// outputs with theirs); this gives the artifact entry name back.
pub fn entry_row_name(row: &str) -> String {
    if row.starts_with("workspace-outputs/") {
        row.to_string()
    } else {
        format!("outputs/{row}")
    }
}
