//! Git repositories as the tree sees them: where their files live (`.git` directories, `.git`
//! files of worktrees and submodules, `commondir`), their index read in-process with
//! `gix-index`, and their ignore rules outside `.gitignore` files.
//!
//! Only the layout on disk is used: `GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE` and friends are
//! never read (ENV-1), so a listing always describes the work tree and its real index.

use std::collections::HashSet;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use gix_index::entry::{Flags, Mode as IndexMode, Stage, Stat as IndexStat};

use super::config::{self, ConfigSet, RepoSettings};
use super::error::TreeError;
use super::excludes::{self, Exclusions, RepoExcludes};
use super::identity::ObjectFormat;

/// Where one repository keeps its files.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub(crate) worktree: PathBuf,
    /// The per-worktree git directory (holds `index`).
    pub(crate) git_dir: PathBuf,
    /// The shared git directory (holds `config`, `info/`); `git_dir` unless `commondir` says
    /// otherwise.
    pub(crate) common_dir: PathBuf,
}

/// The layout of the repository whose work tree is `dir`. `Ok(None)` when `dir` has no `.git`
/// or its `.git` is not a repository (git then treats `dir` as a plain directory); `Err` with a
/// reason when a `.git` file cannot be read or does not say `gitdir: …`.
pub(crate) fn layout_at(dir: &Path) -> Result<Option<Layout>, String> {
    let dot_git = dir.join(".git");
    let meta = match std::fs::metadata(&dot_git) {
        Ok(meta) => meta,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(None)
        }
        Err(e) => return Err(e.to_string()),
    };
    let git_dir = if meta.is_dir() {
        dot_git
    } else {
        let text = std::fs::read(&dot_git).map_err(|e| e.to_string())?;
        let target = text
            .strip_prefix(b"gitdir:")
            .map(|rest| rest.trim_ascii())
            .filter(|rest| !rest.is_empty())
            .ok_or_else(|| "invalid gitfile format".to_string())?;
        dir.join(std::ffi::OsStr::from_bytes(target))
    };
    if !git_dir.join("HEAD").exists() {
        return Ok(None);
    }
    let common_dir = match std::fs::read(git_dir.join("commondir")) {
        Ok(text) => git_dir.join(std::ffi::OsStr::from_bytes(text.trim_ascii())),
        Err(_) => git_dir.clone(),
    };
    Ok(Some(Layout {
        worktree: dir.to_path_buf(),
        git_dir,
        common_dir,
    }))
}

/// The repository whose work tree contains `root`: the nearest ancestor (or `root` itself)
/// with a `.git`.
pub(crate) fn find_outer(root: &Path) -> Result<Option<Layout>, TreeError> {
    for dir in root.ancestors() {
        match layout_at(dir) {
            Ok(Some(layout)) => return Ok(Some(layout)),
            Ok(None) => {}
            Err(reason) => {
                return Err(TreeError::Git {
                    path: dir.join(".git"),
                    reason,
                })
            }
        }
    }
    Ok(None)
}

/// One file entry of an index.
pub(crate) struct IndexFile {
    /// Repository-relative.
    pub(crate) path: Vec<u8>,
    pub(crate) stat: IndexStat,
    pub(crate) id: gix_hash::ObjectId,
    /// `0o100644`, `0o100755` or `0o120000`.
    pub(crate) mode: u32,
    /// Stage 0, no merge conflict, not skip-worktree, assume-unchanged or intent-to-add: the
    /// stat data can vouch for the file (KEY-11).
    pub(crate) vouches: bool,
}

/// What the tree keeps of an index.
pub(crate) struct Index {
    /// Sorted by path, one entry per path.
    pub(crate) files: Vec<IndexFile>,
    /// Repository-relative paths of submodules.
    pub(crate) gitlinks: Vec<Vec<u8>>,
    /// The index file's mtime (seconds, nanoseconds): entries at or after it are racily clean.
    pub(crate) timestamp: (i64, u32),
}

/// Reads `git_dir/index`; an empty index when there is none yet.
pub(crate) fn read_index(layout: &Layout, format: ObjectFormat) -> Result<Index, TreeError> {
    let path = layout.git_dir.join("index");
    let kind = match format {
        ObjectFormat::Sha1 => gix_hash::Kind::Sha1,
        ObjectFormat::Sha256 => gix_hash::Kind::Sha256,
    };
    let file = match gix_index::File::at(&path, kind, false, Default::default()) {
        Ok(file) => file,
        Err(_) if !path.exists() => {
            return Ok(Index {
                files: Vec::new(),
                gitlinks: Vec::new(),
                timestamp: (0, 0),
            })
        }
        Err(e) => {
            return Err(TreeError::Git {
                path,
                reason: format!("cannot read the index: {e}"),
            })
        }
    };
    let timestamp = (
        file.timestamp().unix_seconds(),
        file.timestamp().nanoseconds(),
    );
    let mut files: Vec<IndexFile> = Vec::with_capacity(file.entries().len());
    let mut gitlinks = Vec::new();
    for entry in file.entries() {
        let path = entry.path(&file).to_vec();
        if entry.mode == IndexMode::COMMIT {
            gitlinks.push(path);
            continue;
        }
        // Directory entries of a sparse index stand for files that are not checked out.
        if !matches!(
            entry.mode,
            IndexMode::FILE | IndexMode::FILE_EXECUTABLE | IndexMode::SYMLINK
        ) {
            continue;
        }
        let vouches = entry.stage() == Stage::Unconflicted
            && !entry
                .flags
                .intersects(Flags::ASSUME_VALID | Flags::SKIP_WORKTREE | Flags::INTENT_TO_ADD);
        // Entries are sorted by path, then stage: a conflicted path comes as several entries.
        if let Some(last) = files.last_mut().filter(|last| last.path == path) {
            last.vouches = false;
            continue;
        }
        files.push(IndexFile {
            path,
            stat: entry.stat,
            id: entry.id,
            mode: entry.mode.bits(),
            vouches,
        });
    }
    Ok(Index {
        files,
        gitlinks,
        timestamp,
    })
}

/// One repository (or the plain walk outside git) as the walk needs it.
pub(crate) struct Repo {
    pub(crate) worktree: PathBuf,
    /// Root-relative path of the work tree; empty for the outer repository (whose work tree may
    /// be the workspace root or above it) and outside git.
    pub(crate) rel: Vec<u8>,
    pub(crate) excludes: RepoExcludes,
    /// Root-relative paths of submodules, which the walk leaves to their own repository.
    pub(crate) gitlinks: HashSet<Vec<u8>>,
    /// Root-relative paths of tracked files, excluded paths left out.
    pub(crate) tracked: HashSet<Vec<u8>>,
}

impl Repo {
    /// The plain walk outside git: `.gitignore` files only.
    pub(crate) fn plain(root: &Path) -> Repo {
        Repo {
            worktree: root.to_path_buf(),
            rel: Vec::new(),
            excludes: RepoExcludes::default(),
            gitlinks: HashSet::new(),
            tracked: HashSet::new(),
        }
    }

    /// A repository whose `index` has been read. `to_root` turns a repository-relative path
    /// into a root-relative one, or `None` for paths outside the workspace.
    pub(crate) fn new(
        layout: &Layout,
        settings: &RepoSettings,
        rel: Vec<u8>,
        index: &Index,
        exclusions: &Exclusions,
        to_root: impl Fn(&[u8]) -> Option<Vec<u8>>,
    ) -> Repo {
        let mut files = Vec::new();
        let info = layout.common_dir.join("info/exclude");
        files.extend(excludes::matcher(
            &info,
            &layout.worktree,
            settings.ignore_case,
        ));
        if let Some(global) = &settings.excludes_file {
            files.extend(excludes::matcher(
                global,
                &layout.worktree,
                settings.ignore_case,
            ));
        }
        let tracked = index
            .files
            .iter()
            .filter_map(|f| to_root(&f.path))
            .filter(|p| !exclusions.excludes(p))
            .collect();
        let gitlinks = index
            .gitlinks
            .iter()
            .filter_map(|p| to_root(p))
            .filter(|p| !exclusions.excludes(p))
            .collect();
        Repo {
            worktree: layout.worktree.clone(),
            rel,
            excludes: RepoExcludes {
                files,
                ignore_case: settings.ignore_case,
            },
            gitlinks,
            tracked,
        }
    }

    /// A repository nested in the workspace (a submodule's checkout or a directory with its
    /// own `.git`), at root-relative `rel`. `None` when `worktree` is not a repository after
    /// all. Its files are always hashed by content, so only its paths are kept.
    pub(crate) fn open_nested(
        worktree: &Path,
        rel: &[u8],
        global: &ConfigSet,
        exclusions: &Exclusions,
    ) -> Result<Option<Repo>, TreeError> {
        let Ok(Some(layout)) = layout_at(worktree) else {
            return Ok(None);
        };
        let settings = config::repo_config(global, &layout.common_dir, &layout.git_dir)
            .settings(&layout.worktree);
        let index = read_index(&layout, settings.object_format)?;
        let prefix = [rel, b"/"].concat();
        Ok(Some(Repo::new(
            &layout,
            &settings,
            rel.to_vec(),
            &index,
            exclusions,
            |p| Some([prefix.as_slice(), p].concat()),
        )))
    }
}
