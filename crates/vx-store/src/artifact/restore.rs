//! Restoring (STORE-10 steps 2–3): stage every output beside its target while the archive
//! streams through the validity check, then rename them all, or remove everything this attempt
//! created.
//!
//! Regular files are staged as they stream by; once the archive proved valid, the directories
//! `meta.json` lists are created and each symlink is made under a hidden temporary name beside
//! its target (after checking that its text leads inside the workspace). The commit renames
//! files and symlinks into place, then applies the directories' modes, deepest first, so a
//! read-only directory is filled before it is closed.
//!
//! A file whose directory this attempt created is written under its own name at once (created
//! exclusively, so nothing is ever replaced): nothing else can stand there, and an attempt that
//! fails removes it with the directory. The way to each directory is checked once per attempt.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::read::{read_archive, Fail};
use super::{
    create_temp, create_unique, link_into_wall, link_target, ArtifactMeta, Damage, EntryKind,
    FileMeta, KEPT_MODE_BITS, RESTORE_TEMP_PREFIX,
};

/// Where one entry goes.
#[derive(Debug, Clone)]
pub struct Target {
    /// Absolute destination.
    pub path: PathBuf,
    /// The project directory (or the root, for workspace outputs): nothing is written through a
    /// symlinked directory resolving outside it.
    pub contain: PathBuf,
    /// The workspace root: a restored symlink must lead inside it ([`link_target`]).
    pub root: PathBuf,
}

#[derive(Debug, Clone)]
pub struct RestoredFile {
    pub path: PathBuf,
    pub meta: FileMeta,
}

#[derive(Debug)]
pub struct Restored {
    pub meta: ArtifactMeta,
    /// The encoded log (see [`crate::log::decode`]).
    pub log: Vec<u8>,
    /// In archive order.
    pub files: Vec<RestoredFile>,
}

#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("{0}")]
    Damaged(Damage),
    #[error("the artifact was removed by another process")]
    Vanished,
    /// A file or directory that is not an output stands where an output must go.
    #[error("`{}` stands where an output must go", path.display())]
    Blocked { path: PathBuf },
    /// A parent directory is a symlink resolving outside `contain`.
    #[error("`{}` is a symlink leaving the project", path.display())]
    Unsafe { path: PathBuf },
    /// A stored symlink would lead outside this workspace (an absolute link made in another
    /// checkout, or a hostile entry): the entry cannot be restored here.
    #[error("symlink `{}` would lead outside the workspace (to `{text}`)", path.display())]
    LinkLeaves { path: PathBuf, text: String },
    #[error("{}", crate::fault::io_text(path, source))]
    Io { path: PathBuf, source: io::Error },
}

/// STORE-10 steps 2–3: streams the archive, checking each entry before anything is written for
/// it; writes each file to a hidden temporary beside its target (with mode and mtime from
/// `meta.json`); and only when the whole archive proved valid renames them into place. On any
/// failure the temporaries and the directories this attempt created are removed. An existing
/// regular file at a target is replaced by the rename.
pub fn restore(
    path: &Path,
    key: &str,
    accept: &dyn Fn(&str) -> bool,
    cap: u64,
    target: &dyn Fn(&str) -> Target,
) -> Result<Restored, RestoreError> {
    let mut staging = Staging::default();
    let mut stage =
        |name: &str, file: &FileMeta, body: &mut dyn Read| staging.stage(target(name), file, body);
    let read = read_archive(path, key, accept, cap, &mut stage);
    let result = read.and_then(|(meta, log)| {
        staging.stage_tree(&meta, target)?;
        let files = staging.commit()?;
        Ok(Restored { meta, log, files })
    });
    result.map_err(|fail| {
        staging.abort();
        match fail {
            Fail::Damaged(damage) => RestoreError::Damaged(damage),
            Fail::Vanished => RestoreError::Vanished,
            Fail::Io { path, source } => RestoreError::Io { path, source },
            Fail::Blocked { path } => RestoreError::Blocked { path },
            Fail::Unsafe { path } => RestoreError::Unsafe { path },
            Fail::LinkLeaves { path, text } => RestoreError::LinkLeaves { path, text },
            Fail::Source(source) => RestoreError::Io {
                path: path.to_path_buf(),
                source,
            },
        }
    })
}

/// One file or symlink written to its temporary, waiting for the commit.
struct Staged {
    temp: PathBuf,
    target: PathBuf,
    meta: FileMeta,
}

/// The temporaries and created directories of one restore attempt.
#[derive(Default)]
struct Staging {
    staged: Vec<Staged>,
    /// The directories `meta.json` lists, with their modes, applied at the commit.
    dirs: Vec<(PathBuf, FileMeta)>,
    created_dirs: Vec<PathBuf>,
    /// Parent directories whose way was checked (or made) in this attempt.
    checked: HashSet<PathBuf>,
    /// Directories this attempt created: what is written in them needs no temporary.
    fresh: HashSet<PathBuf>,
    canonical: HashMap<PathBuf, PathBuf>,
}

impl Staging {
    /// The directories and symlinks of `meta` (in name order, so parents come first), once
    /// every regular file was staged and the archive proved valid.
    fn stage_tree(
        &mut self,
        meta: &ArtifactMeta,
        target: &dyn Fn(&str) -> Target,
    ) -> Result<(), Fail> {
        for (name, file) in &meta.files {
            match file.kind() {
                EntryKind::Dir => {
                    let target = target(name);
                    self.prepare_parent(&target)?;
                    match fs::symlink_metadata(&target.path) {
                        Ok(md) if md.is_dir() => {}
                        Ok(_) => return Err(Fail::Blocked { path: target.path }),
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {
                            fs::create_dir(&target.path).map_err(|source| Fail::Io {
                                path: target.path.clone(),
                                source,
                            })?;
                            self.created_dirs.push(target.path.clone());
                        }
                        Err(source) => {
                            return Err(Fail::Io {
                                path: target.path,
                                source,
                            })
                        }
                    }
                    self.dirs.push((target.path, *file));
                }
                EntryKind::Symlink => {
                    let text = &meta.links[name];
                    self.stage_link(target(name), file, text)?;
                }
                EntryKind::File | EntryKind::Other => {}
            }
        }
        Ok(())
    }

    /// A symlink made under a temporary name beside its target, once its text proved to lead
    /// inside the workspace.
    fn stage_link(&mut self, target: Target, file: &FileMeta, text: &str) -> Result<(), Fail> {
        let parent = self.prepare(&target)?;
        let real_parent = self.canonical(&parent)?;
        let root = self.canonical(&target.root)?;
        let place = link_target(text, &real_parent);
        if place.as_ref().is_some_and(|p| link_into_wall(p, &root)) {
            return Err(Fail::Damaged(Damage::new(format!(
                "a symlink into .git or .vx: {}",
                target.path.display()
            ))));
        }
        if !place.is_some_and(|place| place.starts_with(&root)) {
            return Err(Fail::LinkLeaves {
                path: target.path,
                text: text.to_string(),
            });
        }
        let temp = create_unique(&parent, RESTORE_TEMP_PREFIX, ".tmp", |temp| {
            std::os::unix::fs::symlink(text, temp)
        })
        .map_err(|source| Fail::Io {
            path: parent.clone(),
            source,
        })?;
        self.staged.push(Staged {
            temp,
            target: target.path,
            meta: *file,
        });
        Ok(())
    }

    fn stage(&mut self, target: Target, file: &FileMeta, body: &mut dyn Read) -> Result<(), Fail> {
        let in_place = self.create_in_place(&target)?;
        let (temp, out) = match in_place {
            Some(out) => (target.path.clone(), out),
            None => {
                let parent = self.prepare(&target)?;
                create_temp(&parent, RESTORE_TEMP_PREFIX, ".tmp", 0o600).map_err(|source| {
                    Fail::Io {
                        path: parent.clone(),
                        source,
                    }
                })?
            }
        };
        self.staged.push(Staged {
            temp: temp.clone(),
            target: target.path,
            meta: *file,
        });
        let at_temp = |source| Fail::Io {
            path: temp.clone(),
            source,
        };
        let mut out = BufWriter::with_capacity(64 << 10, out);
        let mut buf = vec![0; 64 << 10];
        loop {
            let n = match body.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Fail::Source(e)),
            };
            out.write_all(&buf[..n]).map_err(at_temp)?;
        }
        let out = out.into_inner().map_err(|e| at_temp(e.into_error()))?;
        out.set_permissions(fs::Permissions::from_mode(file.mode & KEPT_MODE_BITS))
            .map_err(at_temp)?;
        out.set_modified(system_time(file.mtime_ns))
            .map_err(at_temp)?;
        Ok(())
    }

    /// The file at `target` itself, created exclusively, when its directory is one this
    /// attempt created; `None` when it must be staged under a temporary name.
    fn create_in_place(&mut self, target: &Target) -> Result<Option<fs::File>, Fail> {
        let parent = self.prepare_parent(target)?;
        if !self.fresh.contains(&parent) {
            return Ok(None);
        }
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&target.path)
        {
            Ok(out) => Ok(Some(out)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(None),
            Err(source) => Err(Fail::Io {
                path: target.path.clone(),
                source,
            }),
        }
    }

    /// Checks the way to `target` and creates missing parent directories; returns the parent.
    /// A directory standing at the target itself blocks it.
    fn prepare(&mut self, target: &Target) -> Result<PathBuf, Fail> {
        let dir = self.prepare_parent(target)?;
        match fs::symlink_metadata(&target.path) {
            Ok(md) if md.is_dir() => Err(Fail::Blocked {
                path: target.path.clone(),
            }),
            Ok(_) => Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(dir),
            Err(source) => Err(Fail::Io {
                path: target.path.clone(),
                source,
            }),
        }
    }

    /// Checks the way to `target` and creates missing parent directories; returns the parent.
    fn prepare_parent(&mut self, target: &Target) -> Result<PathBuf, Fail> {
        let unsafe_target = || Fail::Unsafe {
            path: target.path.clone(),
        };
        let relative = target
            .path
            .strip_prefix(&target.contain)
            .map_err(|_| unsafe_target())?;
        let normal = relative
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
        let Some(parent) = relative.parent().filter(|_| normal) else {
            return Err(unsafe_target());
        };
        let whole = target.contain.join(parent);
        if self.checked.contains(&whole) {
            return Ok(whole);
        }
        let contain = self.canonical(&target.contain)?;
        let mut dir = target.contain.clone();
        for component in parent.components() {
            dir.push(component);
            let io_at = |source| Fail::Io {
                path: dir.clone(),
                source,
            };
            match fs::symlink_metadata(&dir) {
                Ok(md) if md.is_dir() => {}
                Ok(md) if md.file_type().is_symlink() => match fs::canonicalize(&dir) {
                    Ok(real) if !real.starts_with(&contain) => {
                        return Err(Fail::Unsafe { path: dir });
                    }
                    Ok(real) if real.is_dir() => {}
                    Ok(_) => return Err(Fail::Blocked { path: dir }),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        return Err(Fail::Blocked { path: dir });
                    }
                    Err(e) => return Err(io_at(e)),
                },
                Ok(_) => return Err(Fail::Blocked { path: dir }),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    fs::create_dir(&dir).map_err(io_at)?;
                    self.created_dirs.push(dir.clone());
                    self.fresh.insert(dir.clone());
                }
                Err(e) => return Err(io_at(e)),
            }
        }
        self.checked.insert(dir.clone());
        Ok(dir)
    }

    fn canonical(&mut self, dir: &Path) -> Result<PathBuf, Fail> {
        if let Some(known) = self.canonical.get(dir) {
            return Ok(known.clone());
        }
        let real = fs::canonicalize(dir).map_err(|source| Fail::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        self.canonical.insert(dir.to_path_buf(), real.clone());
        Ok(real)
    }

    /// Renames every temporary into place. A rename can only fail if something changed the
    /// tree during the restore; the files not yet renamed then stay temporaries for
    /// [`Staging::abort`].
    fn commit(&mut self) -> Result<Vec<RestoredFile>, Fail> {
        let mut files = Vec::with_capacity(self.staged.len());
        let staged = std::mem::take(&mut self.staged);
        let mut staged = staged.into_iter();
        while let Some(next) = staged.next() {
            if next.temp == next.target {
                files.push(RestoredFile {
                    path: next.target,
                    meta: next.meta,
                });
                continue;
            }
            if let Err(source) = fs::rename(&next.temp, &next.target) {
                let _ = fs::remove_file(&next.temp);
                self.staged = staged.collect();
                let path = next.target;
                return Err(if source.raw_os_error() == Some(libc::EISDIR) {
                    Fail::Blocked { path }
                } else {
                    Fail::Io { path, source }
                });
            }
            files.push(RestoredFile {
                path: next.target,
                meta: next.meta,
            });
        }
        // Deepest first: a directory's mode is set once nothing more is written into it.
        let mut dirs = std::mem::take(&mut self.dirs);
        dirs.sort_by(|a, b| b.0.cmp(&a.0));
        for (path, meta) in dirs {
            let mode = fs::Permissions::from_mode(meta.mode & KEPT_MODE_BITS);
            fs::set_permissions(&path, mode).map_err(|source| Fail::Io {
                path: path.clone(),
                source,
            })?;
            files.push(RestoredFile { path, meta });
        }
        Ok(files)
    }

    /// Removes the temporaries and the directories this attempt created (deepest first; a
    /// directory that holds anything else stays).
    fn abort(&mut self) {
        for staged in self.staged.drain(..) {
            let _ = fs::remove_file(&staged.temp);
        }
        for dir in self.created_dirs.drain(..).rev() {
            let _ = fs::remove_dir(&dir);
        }
    }
}

fn system_time(mtime_ns: i64) -> SystemTime {
    let magnitude = Duration::from_nanos(mtime_ns.unsigned_abs());
    if mtime_ns >= 0 {
        UNIX_EPOCH + magnitude
    } else {
        UNIX_EPOCH - magnitude
    }
}
