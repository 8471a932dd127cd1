//! File identity (KEY-11): the git blob id of a file's worktree bytes and its mode, taken from
//! the index when its stat data proves the file clean, else hashed in-process.
//!
//! [`Tree::identity`](super::Tree::identity) does one `lstat` and then, in order: the index
//! shortcut ([`IndexStat::vouches_for`]), the caller's memo ([`StampMemo`]), and hashing. The
//! index comparison mirrors git's `ie_match_stat`: the index keeps 32-bit truncated seconds,
//! device, inode and size, so the `lstat` values are truncated the same way before comparing;
//! nanoseconds are compared too (git records them on Linux). A hashed file is memoised unless
//! its mtime or ctime is too close to now for the stat to prove a later write would show.

use std::fs::Metadata;
use std::io::{ErrorKind, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gix_index::entry::Stat as EntryStat;

use super::error::TreeError;

/// The hash function of blob ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ObjectFormat {
    Sha1,
    Sha256,
}

/// What `lstat` said about a file when its identity was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stat {
    pub device: u64,
    pub inode: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub size: u64,
    /// `st_mode`: file type and permission bits.
    pub mode: u32,
}

impl Stat {
    pub(crate) fn from_metadata(meta: &Metadata) -> Stat {
        Stat {
            device: meta.dev(),
            inode: meta.ino(),
            mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
            ctime_ns: meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
            size: meta.size(),
            mode: meta.mode(),
        }
    }

    /// Whether this stat was taken so close to a change that a later write could go unseen
    /// (KEY-11): mtime or ctime within 50 ms of `now`, or within 2 s on file systems with
    /// one-second timestamps (both nanosecond parts zero).
    pub(crate) fn is_too_recent(&self, now: SystemTime) -> bool {
        let whole_seconds =
            self.mtime_ns % 1_000_000_000 == 0 && self.ctime_ns % 1_000_000_000 == 0;
        let window = if whole_seconds {
            Duration::from_secs(2)
        } else {
            Duration::from_millis(50)
        };
        let now_ns = now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        let limit = now_ns - i64::try_from(window.as_nanos()).unwrap_or(i64::MAX);
        self.mtime_ns >= limit || self.ctime_ns >= limit
    }
}

/// A file's git mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    Regular,
    /// A regular file executable by its owner.
    Executable,
    Symlink,
}

impl Mode {
    /// The mode as git writes it in trees.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Regular => "100644",
            Mode::Executable => "100755",
            Mode::Symlink => "120000",
        }
    }

    fn bits(self) -> u32 {
        match self {
            Mode::Regular => 0o100644,
            Mode::Executable => 0o100755,
            Mode::Symlink => 0o120000,
        }
    }

    /// The mode of what `lstat` describes; `None` for directories and special files.
    pub(crate) fn from_metadata(meta: &Metadata) -> Option<Mode> {
        let kind = meta.file_type();
        if kind.is_symlink() {
            Some(Mode::Symlink)
        } else if kind.is_file() && meta.mode() & 0o100 != 0 {
            Some(Mode::Executable)
        } else if kind.is_file() {
            Some(Mode::Regular)
        } else {
            None
        }
    }
}

/// A file's identity, the part of a key it contributes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Identity {
    /// Nothing there (or a directory, or a file git cannot track).
    Absent,
    Present {
        mode: Mode,
        /// Lowercase hex: 40 digits (SHA-1) or 64 (SHA-256).
        blob: String,
    },
}

/// An identity with the `lstat` it was taken with, for the re-checks of KEY-15 and KEY-16.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileId {
    pub identity: Identity,
    /// `None` when the path was absent.
    pub stat: Option<Stat>,
}

impl FileId {
    pub(crate) fn absent() -> FileId {
        FileId {
            identity: Identity::Absent,
            stat: None,
        }
    }
}

/// Where in-process hashes are remembered across runs (`file_stamps`, STORE-4): a blob id is
/// reused when the path's stat is unchanged.
pub trait StampMemo {
    fn recall(&self, path: &str) -> Option<(Stat, String)>;
    fn remember(&mut self, path: &str, stat: Stat, blob: String);
}

/// A memo that remembers nothing.
pub struct NoMemo;

impl StampMemo for NoMemo {
    fn recall(&self, _path: &str) -> Option<(Stat, String)> {
        None
    }

    fn remember(&mut self, _path: &str, _stat: Stat, _blob: String) {}
}

/// What the tree keeps of one index entry of the outer repository.
#[derive(Debug, Clone)]
pub(crate) struct IndexStat {
    pub(crate) stat: EntryStat,
    pub(crate) id: gix_hash::ObjectId,
    /// `0o100644`, `0o100755` or `0o120000`.
    pub(crate) mode: u32,
}

/// The repository-wide conditions of the index shortcut.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ShortcutRules {
    /// Configuration and attributes allow it at all.
    pub(crate) allowed: bool,
    /// `core.fileMode`: compare the executable bit.
    pub(crate) file_mode: bool,
    /// The index file's mtime (seconds, nanoseconds).
    pub(crate) index_time: (i64, u32),
}

impl IndexStat {
    /// Whether this entry proves the file `lstat` describes clean (KEY-11), so its blob id is
    /// the entry's.
    pub(crate) fn vouches_for(&self, meta: &Metadata, mode: Mode, rules: ShortcutRules) -> bool {
        let s = &self.stat;
        let same_mode = if rules.file_mode {
            mode.bits() == self.mode
        } else {
            // Only the type counts: regular or symlink.
            (mode == Mode::Symlink) == (self.mode == Mode::Symlink.bits())
        };
        // Git smudges racily clean entries by recording size 0; such an entry proves nothing
        // unless it really is the empty blob.
        let smudged = s.size == 0 && !self.id.is_empty_blob();
        // Truncation to 32 bits is what git stores and compares.
        let same_stat = s.mtime.secs == meta.mtime() as u32
            && s.mtime.nsecs == meta.mtime_nsec() as u32
            && s.ctime.secs == meta.ctime() as u32
            && s.ctime.nsecs == meta.ctime_nsec() as u32
            && s.dev == meta.dev() as u32
            && s.ino == meta.ino() as u32
            && s.uid == meta.uid()
            && s.gid == meta.gid()
            && u64::from(s.size) == meta.size();
        rules.allowed && same_mode && !smudged && same_stat && !self.is_racy(rules.index_time)
    }

    /// An entry whose mtime is not older than the index file may have been written after git
    /// hashed it, within the timestamp granularity.
    fn is_racy(&self, (secs, nanos): (i64, u32)) -> bool {
        let entry = (i64::from(self.stat.mtime.secs), self.stat.mtime.nsecs);
        entry >= (secs, nanos)
    }
}

/// The git blob id of `bytes`: the hash of `blob <len>\0<bytes>`.
///
/// Should SHA-1's collision detection flag `bytes` as an attack (as git would refuse them),
/// the SHA-256 blob id is returned instead: it cannot equal any SHA-1 id, so crafted
/// collisions never share an identity.
pub fn blob_id(format: ObjectFormat, bytes: &[u8]) -> String {
    let mut hasher = BlobHasher::new(format, bytes.len() as u64);
    hasher.update(bytes);
    hasher
        .finish()
        .unwrap_or_else(|| blob_id(ObjectFormat::Sha256, bytes))
}

struct BlobHasher(gix_hash::Hasher);

impl BlobHasher {
    fn new(format: ObjectFormat, len: u64) -> BlobHasher {
        let kind = match format {
            ObjectFormat::Sha1 => gix_hash::Kind::Sha1,
            ObjectFormat::Sha256 => gix_hash::Kind::Sha256,
        };
        let mut hasher = gix_hash::hasher(kind);
        hasher.update(format!("blob {len}\0").as_bytes());
        BlobHasher(hasher)
    }

    fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// `None` when SHA-1 collision detection fired.
    fn finish(self) -> Option<String> {
        self.0.try_finalize().ok().map(|id| id.to_string())
    }
}

/// The identity of the file at `abs` as a full run would take it now, without the git index's
/// shortcut: `(mode, blob id)` of a regular file or symbolic link that stayed as `lstat`
/// described it while it was read, with that `lstat`; `None` when it is absent, is not a file,
/// or changed while it was read. A run snapshot checks a file whose times moved with it
/// (the blob ids it recorded are of the bytes, as this hashes them).
pub fn identity_now(
    abs: &Path,
    format: ObjectFormat,
) -> Result<Option<(Mode, String, Metadata)>, TreeError> {
    let meta = match std::fs::symlink_metadata(abs) {
        Ok(meta) => meta,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(None)
        }
        Err(source) => {
            return Err(TreeError::Io {
                path: abs.to_path_buf(),
                source,
            })
        }
    };
    let Some(mode) = Mode::from_metadata(&meta) else {
        return Ok(None);
    };
    match hash_path(abs, mode, &Stat::from_metadata(&meta), format)? {
        Hashed::Blob { blob, steady: true } => Ok(Some((mode, blob, meta))),
        _ => Ok(None),
    }
}

/// The outcome of hashing a path.
pub(crate) enum Hashed {
    /// The path vanished (or turned into something that is not a file) meanwhile.
    Gone,
    /// The blob id, and whether the file stayed as `lstat` described it while it was read.
    Blob { blob: String, steady: bool },
}

/// Hashes the worktree bytes of `abs`: a symlink's target string, a regular file's content.
pub(crate) fn hash_path(
    abs: &Path,
    mode: Mode,
    before: &Stat,
    format: ObjectFormat,
) -> Result<Hashed, TreeError> {
    let io = |source| TreeError::Io {
        path: abs.to_path_buf(),
        source,
    };
    let gone = |e: &std::io::Error| {
        matches!(
            e.kind(),
            ErrorKind::NotFound | ErrorKind::NotADirectory | ErrorKind::InvalidInput
        )
    };
    if mode == Mode::Symlink {
        return match std::fs::read_link(abs) {
            Ok(target) => Ok(Hashed::Blob {
                blob: blob_id(format, target.as_os_str().as_bytes()),
                steady: true,
            }),
            Err(e) if gone(&e) => Ok(Hashed::Gone),
            Err(e) => Err(io(e)),
        };
    }
    let mut file = match std::fs::File::open(abs) {
        Ok(file) => file,
        Err(e) if gone(&e) => return Ok(Hashed::Gone),
        Err(e) => return Err(io(e)),
    };
    let opened = file.metadata().map_err(io)?;
    if !opened.is_file() {
        // Replaced by a directory or a special file after the `lstat`: never read a fifo.
        return Ok(Hashed::Gone);
    }
    let len = opened.size();
    let mut hasher = BlobHasher::new(format, len);
    let mut buf = vec![0u8; 256 * 1024];
    let mut total: u64 = 0;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        total += n as u64;
        if total > len {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let after = file.metadata().map_err(io)?;
    let after = Stat::from_metadata(&after);
    if total != len {
        // The file changed size while it was read: hash what is there now, in one read.
        let bytes = match std::fs::read(abs) {
            Ok(bytes) => bytes,
            Err(e) if gone(&e) => return Ok(Hashed::Gone),
            Err(e) => return Err(io(e)),
        };
        return Ok(Hashed::Blob {
            blob: blob_id(format, &bytes),
            steady: false,
        });
    }
    let steady = after.mtime_ns == before.mtime_ns
        && after.ctime_ns == before.ctime_ns
        && after.size == before.size
        && after.inode == before.inode;
    let blob = match hasher.finish() {
        Some(blob) => blob,
        None => {
            let bytes = std::fs::read(abs).map_err(io)?;
            blob_id(ObjectFormat::Sha256, &bytes)
        }
    };
    Ok(Hashed::Blob { blob, steady })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_ids_match_git() {
        assert_eq!(
            blob_id(ObjectFormat::Sha1, b""),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
        assert_eq!(
            blob_id(ObjectFormat::Sha1, b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        assert_eq!(
            blob_id(ObjectFormat::Sha256, b""),
            "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813"
        );
    }

    #[test]
    fn recent_stats_are_not_memoised() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let ns = |secs: i64, nanos: i64| secs * 1_000_000_000 + nanos;
        let stat = |mtime_ns, ctime_ns| Stat {
            device: 1,
            inode: 1,
            mtime_ns,
            ctime_ns,
            size: 1,
            mode: 0o100644,
        };
        assert!(!stat(ns(999_999, 1), ns(999_999, 1)).is_too_recent(now));
        assert!(stat(ns(999_999, 960_000_000), ns(999_999, 1)).is_too_recent(now));
        assert!(stat(ns(999_999, 1), ns(999_999, 990_000_000)).is_too_recent(now));
        // One-second timestamps: a 2 s window.
        assert!(stat(ns(999_999, 0), ns(999_998, 0)).is_too_recent(now));
        assert!(!stat(ns(999_997, 0), ns(999_997, 0)).is_too_recent(now));
        // In the future.
        assert!(stat(ns(1_000_100, 5), ns(1, 5)).is_too_recent(now));
    }

    #[test]
    fn modes_have_git_spellings() {
        assert_eq!(Mode::Regular.as_str(), "100644");
        assert_eq!(Mode::Executable.as_str(), "100755");
        assert_eq!(Mode::Symlink.as_str(), "120000");
    }
}
