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
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, BufWriter, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::errno::Errno;
use nix::sys::stat::Mode;

use super::beneath::{self, create_at, lstat_at, unlink_at, WalkError, Walker};
use super::read::{read_archive, Fail, Produced};
use super::{
    link_into_wall, link_target, ArtifactMeta, Damage, EntryKind, FileMeta, KEPT_MODE_BITS,
    RESTORE_TEMP_PREFIX,
};

/// Where one entry goes.
#[derive(Debug, Clone)]
pub struct Target {
    /// Absolute destination.
    pub path: PathBuf,
    /// The project directory (or the root, for workspace outputs): everything below it is
    /// resolved from its descriptor, never through a symlink.
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
    /// A directory on the way is a symlink (never followed, wherever it leads), or the target
    /// is not a plain path below `contain`.
    #[error("`{}` is a symlink vx does not write through", path.display())]
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
    let read = read_archive(path, key, accept, cap, Produced::Skipped, &mut stage);
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
    /// Which walker (by base) and which directory below it.
    base: PathBuf,
    dir: PathBuf,
    /// The temporary's name in that directory; the same as `name` when written in place.
    temp: OsString,
    name: OsString,
    target: PathBuf,
    meta: FileMeta,
}

/// The temporaries and created directories of one restore attempt. Every file operation goes
/// through a directory descriptor opened without following a symlink below the project (or the
/// root): see [`Walker`].
#[derive(Default)]
struct Staging {
    staged: Vec<Staged>,
    /// The directories `meta.json` lists (base, path below it, target), with their modes,
    /// applied at the commit.
    dirs: Vec<(PathBuf, PathBuf, PathBuf, FileMeta)>,
    /// Directories this attempt created (absolute, parents first).
    created_dirs: Vec<PathBuf>,
    /// Directories this attempt created: what is written in them needs no temporary.
    fresh: HashSet<PathBuf>,
    walkers: Vec<Walker>,
    canonical: HashMap<PathBuf, PathBuf>,
}

/// A target split as the walker needs it: its base, its directory below the base, its name.
struct Place {
    base: PathBuf,
    dir: PathBuf,
    name: OsString,
}

impl Staging {
    fn walker(&mut self, base: &Path) -> &mut Walker {
        match self.walkers.iter().position(|w| w.base() == base) {
            Some(at) => &mut self.walkers[at],
            None => {
                self.walkers.push(Walker::new(base));
                self.walkers.last_mut().expect("pushed")
            }
        }
    }

    /// Where `target` goes, once its path proved to be plain names below its base.
    fn place(target: &Target) -> Result<Place, Fail> {
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
        match (relative.parent(), relative.file_name()) {
            (Some(dir), Some(name)) if normal => Ok(Place {
                base: target.contain.clone(),
                dir: dir.to_path_buf(),
                name: name.to_os_string(),
            }),
            _ => Err(unsafe_target()),
        }
    }

    /// The directory `dir` below `base`, creating what is missing (recorded for the abort).
    fn open_dir(&mut self, base: &Path, dir: &Path) -> Result<Arc<OwnedFd>, Fail> {
        let mut created = Vec::new();
        let opened = self.walker(base).dir(dir, Some(&mut created));
        for path in &created {
            self.fresh.insert(path.clone());
        }
        self.created_dirs.extend(created);
        opened.map_err(|e| match e {
            WalkError::Symlink(path) => Fail::Unsafe { path },
            WalkError::NotDir(path) => Fail::Blocked { path },
            WalkError::Io(path, source) => Fail::Io { path, source },
        })
    }

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
                    let place = Self::place(&target)?;
                    let whole = place.dir.join(&place.name);
                    // Opening it checks it is a directory (not a symlink), creating it if
                    // missing.
                    self.open_dir(&place.base, &whole)?;
                    self.dirs.push((place.base, whole, target.path, *file));
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
        let place = Self::place(&target)?;
        let dir = self.prepare(&target, &place)?;
        // No symlink below the base was followed: the directory's real path is the base's
        // real path and the plain names below it.
        let real_parent = self.canonical(&place.base)?.join(&place.dir);
        let root = self.canonical(&target.root)?;
        let link = link_target(text, &real_parent);
        if link.as_ref().is_some_and(|p| link_into_wall(p, &root)) {
            return Err(Fail::Damaged(Damage::new(format!(
                "a symlink into .git or .vx: {}",
                target.path.display()
            ))));
        }
        if !link.is_some_and(|link| link.starts_with(&root)) {
            return Err(Fail::LinkLeaves {
                path: target.path,
                text: text.to_string(),
            });
        }
        let temp = create_unique_at(&dir, |temp| nix::unistd::symlinkat(text, dir.as_fd(), temp))
            .map_err(|source| Fail::Io {
            path: target.path.clone(),
            source,
        })?;
        self.staged.push(Staged {
            base: place.base,
            dir: place.dir,
            temp,
            name: place.name,
            target: target.path,
            meta: *file,
        });
        Ok(())
    }

    fn stage(&mut self, target: Target, file: &FileMeta, body: &mut dyn Read) -> Result<(), Fail> {
        let place = Self::place(&target)?;
        let dir = self.prepare(&target, &place)?;
        let fresh = self.fresh.contains(&place.base.join(&place.dir));
        let in_place = if fresh {
            match create_at(dir.as_fd(), &place.name) {
                Ok(out) => Some(out),
                Err(Errno::EEXIST) => None,
                Err(e) => {
                    return Err(Fail::Io {
                        path: target.path.clone(),
                        source: e.into(),
                    })
                }
            }
        } else {
            None
        };
        let (temp, out) = match in_place {
            Some(out) => (place.name.clone(), out),
            None => {
                let mut out = None;
                let temp = create_unique_at(&dir, |temp| {
                    out = Some(create_at(dir.as_fd(), temp)?);
                    Ok(())
                })
                .map_err(|source| Fail::Io {
                    path: target.path.clone(),
                    source,
                })?;
                (temp, out.expect("created above"))
            }
        };
        let shown = target.path.clone();
        self.staged.push(Staged {
            base: place.base,
            dir: place.dir,
            temp,
            name: place.name,
            target: target.path,
            meta: *file,
        });
        let at_temp = |source| Fail::Io {
            path: shown.clone(),
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

    /// Opens (creating) the directory of `target`; a directory standing at the target itself
    /// blocks it.
    fn prepare(&mut self, target: &Target, place: &Place) -> Result<Arc<OwnedFd>, Fail> {
        let dir = self.open_dir(&place.base, &place.dir)?;
        match lstat_at(dir.as_fd(), &place.name) {
            Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => Err(Fail::Blocked {
                path: target.path.clone(),
            }),
            Ok(_) | Err(Errno::ENOENT) => Ok(dir),
            Err(e) => Err(Fail::Io {
                path: target.path.clone(),
                source: e.into(),
            }),
        }
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

    /// Renames every temporary into place, within its directory's descriptor (a rename
    /// replaces a symlink standing at the target; it never follows one). A rename can only fail
    /// if something changed the tree during the restore; the files not yet renamed then stay
    /// temporaries for [`Staging::abort`].
    fn commit(&mut self) -> Result<Vec<RestoredFile>, Fail> {
        let mut files = Vec::with_capacity(self.staged.len());
        let staged = std::mem::take(&mut self.staged);
        let mut staged = staged.into_iter();
        while let Some(next) = staged.next() {
            if next.temp != next.name {
                let renamed = self
                    .open_dir(&next.base, &next.dir)
                    .map_err(|fail| (fail, None))
                    .and_then(|dir| {
                        nix::fcntl::renameat(
                            dir.as_fd(),
                            next.temp.as_os_str(),
                            dir.as_fd(),
                            next.name.as_os_str(),
                        )
                        .map_err(|e| {
                            let path = next.target.clone();
                            let fail = if e == Errno::EISDIR {
                                Fail::Blocked { path }
                            } else {
                                Fail::Io {
                                    path,
                                    source: e.into(),
                                }
                            };
                            (fail, Some(dir))
                        })
                    });
                if let Err((fail, dir)) = renamed {
                    if let Some(dir) = dir {
                        let _ = unlink_at(dir.as_fd(), &next.temp, false);
                    }
                    self.staged = staged.collect();
                    return Err(fail);
                }
            }
            files.push(RestoredFile {
                path: next.target,
                meta: next.meta,
            });
        }
        // Deepest first: a directory's mode is set once nothing more is written into it.
        let mut dirs = std::mem::take(&mut self.dirs);
        dirs.sort_by(|a, b| b.2.cmp(&a.2));
        for (base, dir, path, meta) in dirs {
            let fd = self.open_dir(&base, &dir)?;
            let mode = Mode::from_bits_truncate(meta.mode & KEPT_MODE_BITS);
            nix::sys::stat::fchmod(fd.as_fd(), mode).map_err(|e| Fail::Io {
                path: path.clone(),
                source: e.into(),
            })?;
            files.push(RestoredFile { path, meta });
        }
        Ok(files)
    }

    /// Removes the temporaries and the directories this attempt created (deepest first; a
    /// directory that holds anything else stays), each through its directory's descriptor.
    fn abort(&mut self) {
        for staged in std::mem::take(&mut self.staged) {
            if let Ok(dir) = self.walker(&staged.base).dir(&staged.dir, None) {
                let _ = unlink_at(dir.as_fd(), &staged.temp, false);
            }
        }
        for created in std::mem::take(&mut self.created_dirs).into_iter().rev() {
            let Some(walker) = self
                .walkers
                .iter_mut()
                .find(|w| created.starts_with(w.base()))
            else {
                continue;
            };
            let Some((dir, name)) = created
                .strip_prefix(walker.base())
                .ok()
                .and_then(beneath::split)
            else {
                continue;
            };
            walker.forget();
            if let Ok(fd) = walker.dir(dir, None) {
                let _ = unlink_at(fd.as_fd(), name, true);
            }
        }
    }
}

/// Runs `create` on `<prefix><pid>-<n>.tmp` in `dir` for n = 0, 1, … until it does not fail
/// with `EEXIST`; returns the name it took.
fn create_unique_at(
    _dir: &OwnedFd,
    mut create: impl FnMut(&OsStr) -> nix::Result<()>,
) -> io::Result<OsString> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = OsString::from(format!(
            "{RESTORE_TEMP_PREFIX}{}-{n}.tmp",
            std::process::id()
        ));
        match create(&name) {
            Ok(()) => return Ok(name),
            Err(Errno::EEXIST) => continue,
            Err(e) => return Err(e.into()),
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
