//! The index's errors: opening a cache directory ([`OpenError`]), using it ([`StoreError`]),
//! and a restore that did not happen ([`RestoreFailure`]); every one names its path.

use std::io;
use std::path::{Path, PathBuf};

use crate::artifact::Damage;

/// Why a cache directory could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot create `{path}`: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// SQLite found the file not a database, or corrupt: rendered as `error: <path> is not a
    /// valid cache index (<reason>)` with a hint to delete it. No other failure says so.
    #[error("{} is not a valid cache index ({reason})", path.display())]
    Corrupt { path: PathBuf, reason: String },
    /// The cache directory cannot be written (a read-only or full file system, no permission);
    /// a read-write open falls back to reading (see [`Store::read_only_reason`](super::Store::read_only_reason)).
    #[error("{reason}")]
    ReadOnly { reason: String },
    /// Any other failure to open the index.
    #[error("cannot open the cache index {} ({reason})", path.display())]
    Failed { path: PathBuf, reason: String },
    /// Another process held the index longer than the busy timeout.
    #[error("{} is locked by another process ({reason})", path.display())]
    Busy { path: PathBuf, reason: String },
    /// A read-only open found another schema version.
    #[error("the cache index has schema {found}, this vx reads {expected}")]
    Schema { found: u32, expected: u32 },
}

/// A failure of the index or the artifact files after a successful open.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}", index_failure(path, source))]
    Index {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{}", crate::fault::io_text(path, source))]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the cache at `{}` is open read-only", path.display())]
    ReadOnly { path: PathBuf },
    #[error("`{key}` is not a cache key")]
    BadKey { key: String },
}

/// An index failure in words: a full file system is named as such.
fn index_failure(path: &Path, source: &rusqlite::Error) -> String {
    match crate::fault::of_sqlite_at(source, path) {
        crate::fault::Fault::Full => crate::fault::full_text(path.parent().unwrap_or(path)),
        _ => format!("{}: {source}", path.display()),
    }
}

/// Why [`Store::restore`](super::Store::restore) did not restore.
#[derive(Debug, thiserror::Error)]
pub enum RestoreFailure {
    /// The artifact is not valid; the entry was discarded (read-write) or ignored (read-only).
    #[error("{0}")]
    Damaged(Damage),
    /// The artifact disappeared after the probe (pruned by another process).
    #[error("the cache entry was removed by another process")]
    Vanished,
    #[error("`{}` stands where an output must go", path.display())]
    Blocked { path: PathBuf },
    #[error("refusing to write through `{}`: it is a symlink, and a restore never follows one", path.display())]
    Unsafe { path: PathBuf },
    /// The entry holds a symlink leading outside this workspace; it is kept for the checkout
    /// that made it.
    #[error("symlink `{}` would lead outside the workspace (to `{text}`)", path.display())]
    LinkLeaves { path: PathBuf, text: String },
    #[error("`{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Adds the index path to an SQLite error.
pub(crate) trait AtIndex<T> {
    fn at(self, db: &Path) -> Result<T, StoreError>;
}

impl<T> AtIndex<T> for rusqlite::Result<T> {
    fn at(self, db: &Path) -> Result<T, StoreError> {
        self.map_err(|source| StoreError::Index {
            path: db.to_path_buf(),
            source,
        })
    }
}

pub(crate) fn io_at(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}
