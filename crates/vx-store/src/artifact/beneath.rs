//! Paths below a trusted directory, resolved from directory descriptors: every
//! component is opened with `O_NOFOLLOW` relative to the one before it, so a process that swaps
//! a directory for a symlink while vx packs or restores can never send a read or a write
//! anywhere else. What vx opened stays what it uses: a directory renamed away after vx opened it
//! keeps receiving vx's writes, wherever it went, and the symlink put in its place is never
//! followed.
//!
//! [`Walker`] keeps the descriptors of the directories it opened last (bounded, so a tree of
//! thousands of directories does not exhaust descriptors); a directory it forgot is opened
//! again the same way, from the trusted base.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use nix::errno::Errno;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fstatat, mkdirat, FileStat, Mode};
use nix::unistd::UnlinkatFlags;

/// How many directory descriptors a walker keeps open at most.
const KEEP_OPEN: usize = 64;

/// Why a directory below the base could not be opened.
#[derive(Debug)]
pub(crate) enum WalkError {
    /// A component on the way is a symlink: never followed.
    Symlink(PathBuf),
    /// A component on the way is not a directory.
    NotDir(PathBuf),
    Io(PathBuf, io::Error),
}

/// Opens directories below one trusted base (a project directory or the workspace root, itself
/// opened by path) without following a symlink below it.
pub(crate) struct Walker {
    base: PathBuf,
    base_fd: Option<Arc<OwnedFd>>,
    open: HashMap<PathBuf, Arc<OwnedFd>>,
}

impl Walker {
    pub(crate) fn new(base: &Path) -> Walker {
        Walker {
            base: base.to_path_buf(),
            base_fd: None,
            open: HashMap::new(),
        }
    }

    pub(crate) fn base(&self) -> &Path {
        &self.base
    }

    fn base_fd(&mut self) -> Result<Arc<OwnedFd>, WalkError> {
        if let Some(fd) = &self.base_fd {
            return Ok(fd.clone());
        }
        let fd = openat(
            nix::fcntl::AT_FDCWD,
            &self.base,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| WalkError::Io(self.base.clone(), e.into()))?;
        let fd = Arc::new(fd);
        self.base_fd = Some(fd.clone());
        Ok(fd)
    }

    /// The directory `rel` below the base (empty: the base). With `created`, missing
    /// directories are made (mode 0777 less the umask) and their paths pushed there, parents
    /// first.
    pub(crate) fn dir(
        &mut self,
        rel: &Path,
        mut created: Option<&mut Vec<PathBuf>>,
    ) -> Result<Arc<OwnedFd>, WalkError> {
        if let Some(fd) = self.open.get(rel) {
            return Ok(fd.clone());
        }
        let mut fd = self.base_fd()?;
        let mut at = PathBuf::new();
        for component in rel.components() {
            let Component::Normal(name) = component else {
                return Err(WalkError::Io(
                    self.base.join(rel),
                    io::Error::new(io::ErrorKind::InvalidInput, "not a plain relative path"),
                ));
            };
            at.push(name);
            if let Some(known) = self.open.get(&at) {
                fd = known.clone();
                continue;
            }
            let next = match open_dir_at(fd.as_fd(), name) {
                Err(Errno::ENOENT) if created.is_some() => {
                    match mkdirat(fd.as_fd(), name, Mode::from_bits_truncate(0o777)) {
                        Ok(()) => {
                            if let Some(list) = created.as_deref_mut() {
                                list.push(self.base.join(&at));
                            }
                        }
                        Err(Errno::EEXIST) => {}
                        Err(e) => return Err(WalkError::Io(self.base.join(&at), e.into())),
                    }
                    open_dir_at(fd.as_fd(), name)
                }
                other => other,
            };
            let next = match next {
                Ok(next) => next,
                Err(errno) => return Err(self.judge(fd.as_fd(), name, &at, errno)),
            };
            if self.open.len() >= KEEP_OPEN {
                self.open.clear();
            }
            let next = Arc::new(next);
            self.open.insert(at.clone(), next.clone());
            fd = next;
        }
        Ok(fd)
    }

    /// What a failed open of a directory component means.
    fn judge(&self, dir: BorrowedFd<'_>, name: &OsStr, at: &Path, errno: Errno) -> WalkError {
        let path = self.base.join(at);
        if matches!(errno, Errno::ELOOP | Errno::ENOTDIR) {
            return match lstat_at(dir, name) {
                Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFLNK => WalkError::Symlink(path),
                Ok(_) => WalkError::NotDir(path),
                Err(e) => WalkError::Io(path, e.into()),
            };
        }
        WalkError::Io(path, errno.into())
    }

    /// Forgets every open descriptor but the base's (after a failure, say).
    pub(crate) fn forget(&mut self) {
        self.open.clear();
    }
}

fn open_dir_at(dir: BorrowedFd<'_>, name: &OsStr) -> nix::Result<OwnedFd> {
    openat(
        dir,
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

/// `lstat` of `name` in `dir`.
pub(crate) fn lstat_at(dir: BorrowedFd<'_>, name: &OsStr) -> nix::Result<FileStat> {
    fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
}

/// Opens the regular file `name` in `dir` for reading, never through a symlink and never
/// blocking on a FIFO; the descriptor's own type is checked, not the path's.
pub(crate) fn open_regular_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<std::fs::File> {
    let fd = openat(
        dir,
        name,
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::ELOOP => io::Error::other("it became a symlink while it was packed"),
        e => e.into(),
    })?;
    let file = std::fs::File::from(fd);
    if !file.metadata()?.file_type().is_file() {
        return Err(io::Error::other(
            "it stopped being a regular file while it was packed",
        ));
    }
    Ok(file)
}

/// Creates `name` in `dir` exclusively (never through a symlink: `O_EXCL` refuses one).
pub(crate) fn create_at(dir: BorrowedFd<'_>, name: &OsStr) -> nix::Result<std::fs::File> {
    let fd = openat(
        dir,
        name,
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )?;
    Ok(std::fs::File::from(fd))
}

/// Removes the file (or, with `dir_entry`, the empty directory) `name` in `dir`.
pub(crate) fn unlink_at(dir: BorrowedFd<'_>, name: &OsStr, dir_entry: bool) -> nix::Result<()> {
    let flag = if dir_entry {
        UnlinkatFlags::RemoveDir
    } else {
        UnlinkatFlags::NoRemoveDir
    };
    nix::unistd::unlinkat(dir, name, flag)
}

/// The parent (relative to the base) and the last component of a relative path.
pub(crate) fn split(rel: &Path) -> Option<(&Path, &OsStr)> {
    Some((rel.parent()?, rel.file_name()?))
}

/// Removes paths below a trusted directory through descriptors: cleaning outputs
/// never deletes through a directory that was swapped for a symlink, wherever it leads.
pub struct Unlinker {
    walker: Walker,
}

impl Unlinker {
    /// Paths given to [`Unlinker::remove`] are relative to `base` (opened by path).
    pub fn new(base: &Path) -> Unlinker {
        Unlinker {
            walker: Walker::new(base),
        }
    }

    /// Removes the file or symlink (or, with `dir`, the empty directory) at `rel`. A symlink on
    /// the way is an error (never followed); a path that is not there is `NotFound`.
    pub fn remove(&mut self, rel: &Path, dir: bool) -> io::Result<()> {
        let (parent, name) = split(rel).ok_or_else(|| io::Error::other("not a file name"))?;
        let fd = self.walker.dir(parent, None).map_err(|e| match e {
            WalkError::Symlink(path) => io::Error::other(format!(
                "`{}` is a symlink, and vx never removes through one",
                path.display()
            )),
            WalkError::NotDir(path) => {
                io::Error::new(io::ErrorKind::NotFound, path.display().to_string())
            }
            WalkError::Io(_, e) => e,
        })?;
        unlink_at(fd.as_fd(), name, dir).map_err(io::Error::from)
    }
}

/// Why [`OutputWriter`] refused a path.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// A directory on the way is a symlink (never followed), or is not a directory.
    #[error("`{}` is a symlink or not a directory", path.display())]
    Unsafe { path: PathBuf },
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Writes paths below a trusted directory through descriptors, for outputs that come
/// from elsewhere than an artifact (remote execution's results): missing directories are made,
/// a symlink or a file on the way is refused, a file or link standing at the name is replaced,
/// and the new file is created exclusively, so no write ever goes through a link.
pub struct OutputWriter {
    walker: Walker,
}

impl OutputWriter {
    pub fn new(base: &Path) -> OutputWriter {
        OutputWriter {
            walker: Walker::new(base),
        }
    }

    fn parent(&mut self, rel: &Path) -> Result<(Arc<OwnedFd>, OsString), WriteError> {
        let (parent, name) = split(rel).ok_or_else(|| WriteError::Unsafe {
            path: self.walker.base().join(rel),
        })?;
        let mut created = Vec::new();
        let fd = self
            .walker
            .dir(parent, Some(&mut created))
            .map_err(|e| match e {
                WalkError::Symlink(path) | WalkError::NotDir(path) => WriteError::Unsafe { path },
                WalkError::Io(_, e) => WriteError::Io(e),
            })?;
        Ok((fd, name.to_os_string()))
    }

    /// Removes a file or symlink standing at `name`; a directory there stays (the caller's
    /// create then fails on it).
    fn clear(dir: BorrowedFd<'_>, name: &OsStr) -> Result<(), WriteError> {
        match lstat_at(dir, name) {
            Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => Ok(()),
            Ok(_) => match unlink_at(dir, name, false) {
                Ok(()) | Err(Errno::ENOENT) => Ok(()),
                Err(e) => Err(WriteError::Io(e.into())),
            },
            Err(Errno::ENOENT) => Ok(()),
            Err(e) => Err(WriteError::Io(e.into())),
        }
    }

    /// A new regular file at `rel` (mode 0600 until the caller sets it), replacing a file or
    /// link that stood there.
    pub fn create_file(&mut self, rel: &Path) -> Result<std::fs::File, WriteError> {
        let (dir, name) = self.parent(rel)?;
        Self::clear(dir.as_fd(), &name)?;
        create_at(dir.as_fd(), &name).map_err(|e| WriteError::Io(e.into()))
    }

    /// The directory `rel`, made if missing (its parents too); a symlink there is refused.
    pub fn create_dir(&mut self, rel: &Path) -> Result<(), WriteError> {
        let mut created = Vec::new();
        self.walker
            .dir(rel, Some(&mut created))
            .map(|_| ())
            .map_err(|e| match e {
                WalkError::Symlink(path) | WalkError::NotDir(path) => WriteError::Unsafe { path },
                WalkError::Io(_, e) => WriteError::Io(e),
            })
    }

    /// A symlink at `rel` with the text `target`, replacing a file or link that stood there.
    pub fn symlink(&mut self, target: &str, rel: &Path) -> Result<(), WriteError> {
        let (dir, name) = self.parent(rel)?;
        Self::clear(dir.as_fd(), &name)?;
        nix::unistd::symlinkat(target, dir.as_fd(), name.as_os_str())
            .map_err(|e| WriteError::Io(e.into()))
    }
}
