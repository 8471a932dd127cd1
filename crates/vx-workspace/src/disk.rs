//! The file-system calls of discovery, each failure turned into [`LoadError::Io`] naming the
//! path and the operation (ERR-3).
//!
//! This plays the role `fs-err` plays elsewhere: the path travels in the error variant itself,
//! so the binary can both print it and match on the `io::ErrorKind` for the ERR-3 wording.
//! A path that does not exist is an answer here (`None`, an empty listing), not an error.

use std::ffi::OsString;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::LoadError;

fn io<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(std::io::Error) -> LoadError + 'a {
    move |source| LoadError::Io {
        path: path.to_path_buf(),
        op,
        source,
    }
}

/// Whether an error means "there is nothing here": a missing path, or a file where a
/// directory was expected on the way.
fn is_absent(error: &std::io::Error) -> bool {
    matches!(error.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory)
}

/// The bytes of a file, or `None` when it does not exist.
pub(crate) fn read(path: &Path) -> Result<Option<Vec<u8>>, LoadError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if is_absent(&e) => Ok(None),
        // A directory named `vx.toml` or `package.json` is not a file vx reads.
        Err(e) if e.kind() == ErrorKind::IsADirectory => Ok(None),
        Err(e) => Err(io(path, "read")(e)),
    }
}

pub(crate) struct DirEntry {
    pub(crate) name: OsString,
    pub(crate) is_dir: bool,
    pub(crate) is_symlink: bool,
}

/// The entries of a directory; empty when it does not exist or is not a directory.
pub(crate) fn list_dir(path: &Path) -> Result<Vec<DirEntry>, LoadError> {
    let entries = match std::fs::read_dir(path) {
        Ok(entries) => entries,
        Err(e) if is_absent(&e) => return Ok(Vec::new()),
        Err(e) => return Err(io(path, "list")(e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io(path, "list"))?;
        // On most file systems the type comes with the listing, without a `stat`.
        let file_type = entry.file_type().map_err(io(path, "list"))?;
        out.push(DirEntry {
            name: entry.file_name(),
            is_dir: file_type.is_dir(),
            is_symlink: file_type.is_symlink(),
        });
    }
    Ok(out)
}

/// `Some(via_link)` when `path` is a directory (`true` when it is a link to one), else `None`.
pub(crate) fn dir_kind(path: &Path) -> Option<bool> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.is_dir() {
        Some(false)
    } else if meta.file_type().is_symlink() {
        std::fs::metadata(path).ok()?.is_dir().then_some(true)
    } else {
        None
    }
}

pub(crate) fn canonical(path: &Path) -> Result<PathBuf, LoadError> {
    std::fs::canonicalize(path).map_err(io(path, "resolve"))
}
