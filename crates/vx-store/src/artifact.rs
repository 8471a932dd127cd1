//! Artifacts (STORE-5): the `<key>.tar.zst` format, packing, the one validity check, and the
//! staged restore of STORE-10 steps 2–3.
//!
//! An artifact is one zstd frame (with a checksum and, since round 2 of PERF-1, the size of the
//! tar it holds; older frames without it read the same) of a ustar stream with entries `log`,
//! `meta.json`, `outputs/…`
//! (sorted), `workspace-outputs/…` (sorted) and `digest` last: the BLAKE3 of every preceding
//! entry's name and body. Names too long for ustar get a pax `path` record, never a GNU long
//! name. Headers carry no owner, mode 0644 and mtime 0; the exact mode and nanosecond mtime of
//! each file are in `meta.json`.
//!
//! Format 2 keeps the output tree exactly as the task left it: `meta.json` lists every output
//! entry with its whole `st_mode` (the type bits say file, directory or symlink), and each
//! symlink's text in `links`. Only regular files have a tar entry (their bytes); directories
//! and symlinks live in `meta.json` alone, which the digest covers. `meta.json`'s `unread`
//! names the entries left out of the produced digest (`cache.dependants-read`).
//!
//! [`pack`] (in `pack`) writes an artifact to a staging file and reads it back. [`validate`] (in
//! `read`) is the one validity check; it streams the archive and keeps only `log` and
//! `meta.json` in memory. [`restore`] (in `restore`) runs the same walk, writing each output to a
//! hidden temporary beside its target, and renames them only once the archive proved valid.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

mod beneath;
mod pack;
mod read;
mod restore;
#[cfg(test)]
mod tests;

pub use beneath::{OutputWriter, Unlinker, WriteError};
pub use pack::{pack, PackError, Packed};
pub use read::{read_log, validate, Arrived, ReadError, Validated};
pub use restore::{restore, RestoreError, Restored, RestoredFile, Target};

/// The artifact format version (`meta.json` `format`): 2 since symlinks and directories are
/// kept as such (format 1 stored a symlink as its target's bytes).
pub const FORMAT: u32 = 2;

/// The cap on an artifact's uncompressed size (2 GiB).
pub const SIZE_CAP: u64 = 2 << 30;

/// Prefix of the staging files [`pack`] creates in the cache's `tmp/` directory
/// (`pack-<pid>-<n>.tmp`), for the orphan sweep of STORE-15.
pub const PACK_TEMP_PREFIX: &str = "pack-";
/// Prefix of the hidden temporaries [`restore`] creates beside their targets
/// (`.vx-restore-<pid>-<n>.tmp`).
pub const RESTORE_TEMP_PREFIX: &str = ".vx-restore-";

/// The permission bits an output keeps: never setuid or setgid (Bazel's rule). [`pack`]
/// stores a mode without them and [`restore`] applies none, whatever an entry says.
pub const KEPT_MODE_BITS: u32 = 0o1777;

/// Whether a mode carries the setuid or setgid bit.
pub fn is_setid(mode: u32) -> bool {
    mode & 0o6000 != 0
}

/// The tar block size.
const BLOCK: u64 = 512;

/// One output entry to pack (a regular file, a directory or a symlink): its entry name
/// (`outputs/<project-relative>` or `workspace-outputs/<root-relative>`) and where it is on
/// disk.
#[derive(Debug, Clone)]
pub struct OutputFile {
    pub name: String,
    pub path: PathBuf,
    /// The directory a symlink among the outputs must lead inside (vx passes the workspace
    /// root; see [`link_target`]).
    pub contain: PathBuf,
}

/// One stored entry as `meta.json` records it: the whole `st_mode` (type bits and
/// permissions), the mtime, and the size (a symlink's: the length of its text; a directory's:
/// 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileMeta {
    pub mode: u32,
    pub mtime_ns: i64,
    pub size: u64,
}

/// What an output entry is, from the type bits of its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    /// A FIFO, socket or device: never stored.
    Other,
}

impl FileMeta {
    pub fn kind(&self) -> EntryKind {
        kind_of(self.mode)
    }
}

/// The kind of an entry whose `st_mode` is `mode`.
pub fn kind_of(mode: u32) -> EntryKind {
    match mode & libc::S_IFMT {
        libc::S_IFREG => EntryKind::File,
        libc::S_IFDIR => EntryKind::Dir,
        libc::S_IFLNK => EntryKind::Symlink,
        _ => EntryKind::Other,
    }
}

/// Where a symlink with text `text` in the directory `parent` (a real path: no symlink in it)
/// leads, when vx can tell without following any other link: an absolute text without `.` or
/// `..` components, or a relative one whose `..` components all come first (`../../lib/x`).
/// `None` for any other text (`a/../b` climbs out of `a`, which may itself be a link). The
/// caller checks that the place lies inside the workspace (STORE-5).
pub fn link_target(text: &str, parent: &Path) -> Option<PathBuf> {
    if text.is_empty() || text.contains('\0') {
        return None;
    }
    let link = Path::new(text);
    let mut place = if link.is_absolute() {
        PathBuf::from("/")
    } else {
        parent.to_path_buf()
    };
    let mut descended = false;
    for part in text.split('/') {
        match part {
            "" | "." => {
                if part == "." && link.is_absolute() {
                    return None;
                }
            }
            ".." if descended || link.is_absolute() => return None,
            ".." => {
                if !place.pop() {
                    return None;
                }
            }
            name => {
                descended = true;
                place.push(name);
            }
        }
    }
    Some(place)
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExecMeta {
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cpu_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub peak_rss_bytes: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Producer {
    pub vx_version: String,
    pub os: String,
    pub arch: String,
    /// RFC 3339.
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub commit: Option<String>,
}

/// `meta.json`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ArtifactMeta {
    pub format: u32,
    pub key: String,
    pub task: String,
    pub command: String,
    pub files: BTreeMap<String, FileMeta>,
    /// The text of each symlink among `files`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub links: BTreeMap<String, String>,
    /// Entries among `files` that no dependant reads (`cache.dependants-read` left them out):
    /// [`produced_digest`] skips them. Names, not globs, so any reader computes the same
    /// digest without knowing the task's configuration.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub unread: BTreeSet<String>,
    pub exec: ExecMeta,
    pub producer: Producer,
    /// The digest of the output tree ([`produced_digest`]), set when the artifact is read or
    /// packed; never written to `meta.json`, since any reader computes it from the entries.
    #[serde(skip)]
    pub produced: Option<String>,
}

/// The digest of an output tree as a dependant sees it (KEY-9's early cutoff): BLAKE3 over
/// `vx-outputs-1` and, for each entry in name order, its name, its kind (`file`, `file+x` when
/// any execute bit is set, `dir`, `link`) and its content (the BLAKE3 of a file's bytes, a
/// symlink's text, nothing for a directory), each as KEY-1's length-prefixed item. Times,
/// sizes apart from the bytes, and permission bits other than execute do not count: two runs
/// that wrote the same tree under different umasks produce the same digest. `blobs` holds the
/// BLAKE3 of each regular file's bytes. Entries `meta.unread` names are left out.
pub fn produced_digest(meta: &ArtifactMeta, blobs: &BTreeMap<String, [u8; 32]>) -> String {
    let mut hasher = blake3::Hasher::new();
    let mut item = |bytes: &[u8]| {
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    item(b"vx-outputs-1");
    for (name, file) in meta.files.iter().filter(|(n, _)| !meta.unread.contains(*n)) {
        let (kind, content): (&str, Vec<u8>) = match file.kind() {
            EntryKind::File => {
                let blob = blobs.get(name).copied().unwrap_or_default();
                let kind = if file.mode & 0o111 != 0 {
                    "file+x"
                } else {
                    "file"
                };
                (kind, blake3::Hash::from(blob).to_hex().as_bytes().to_vec())
            }
            EntryKind::Dir => ("dir", Vec::new()),
            EntryKind::Symlink => (
                "link",
                meta.links
                    .get(name)
                    .cloned()
                    .unwrap_or_default()
                    .into_bytes(),
            ),
            EntryKind::Other => ("other", Vec::new()),
        };
        item(name.as_bytes());
        item(kind.as_bytes());
        item(&content);
    }
    hasher.finalize().to_hex().to_string()
}

/// Why an artifact is not valid for a requested key; `reason` is the short text shown in
/// `discarded damaged cache entry <short key> (<reason>)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Damage {
    pub reason: String,
}

impl Damage {
    pub fn new(reason: impl Into<String>) -> Damage {
        Damage {
            reason: reason.into(),
        }
    }
}

/// Whether `place` (where a symlink leads, see [`link_target`]) lies inside a `.git` or `.vx`
/// directory below `root`: such a link is never saved, and an artifact holding one is damaged
/// (a restore could otherwise write into the repository or the cache through it).
pub fn link_into_wall(place: &Path, root: &Path) -> bool {
    place.strip_prefix(root).is_ok_and(|rel| {
        rel.components()
            .any(|c| matches!(c.as_os_str().to_str(), Some(".git" | ".vx")))
    })
}

/// The name check of STORE-10 step 2: relative; no `..`, `.` or empty segments; no backslash or
/// NUL; under `outputs/` or `workspace-outputs/` (with something after it).
pub fn safe_name(name: &str) -> bool {
    let Some(rest) = name
        .strip_prefix("outputs/")
        .or_else(|| name.strip_prefix("workspace-outputs/"))
    else {
        return false;
    };
    !name.contains(['\\', '\0'])
        && rest
            .split('/')
            .all(|segment| !matches!(segment, "" | "." | ".."))
}

/// Feeds `u64le(len(name)) ‖ name ‖ u64le(len(body))` of one entry to the digest.
pub(crate) fn hash_prefix(hasher: &mut blake3::Hasher, name: &str, size: u64) {
    hasher.update(&(name.len() as u64).to_le_bytes());
    hasher.update(name.as_bytes());
    hasher.update(&size.to_le_bytes());
}

/// A reader that feeds what it reads to a hasher and counts it.
pub(crate) struct HashingReader<'h, R> {
    pub(crate) inner: R,
    pub(crate) hasher: &'h mut blake3::Hasher,
    pub(crate) count: u64,
    /// Whether `inner` failed (as opposed to whoever consumes this reader).
    pub(crate) failed: bool,
}

impl<R: Read> Read for HashingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf).inspect_err(|_| self.failed = true)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
}

/// Creates a new file `<dir>/<prefix><pid>-<n><suffix>` that did not exist before.
pub(crate) fn create_temp(
    dir: &Path,
    prefix: &str,
    suffix: &str,
    mode: u32,
) -> io::Result<(PathBuf, File)> {
    let mut opened = None;
    let path = create_unique(dir, prefix, suffix, |path| {
        opened = Some(
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(path)?,
        );
        Ok(())
    })?;
    Ok((path, opened.expect("created above")))
}

/// Runs `create` on `<dir>/<prefix><pid>-<n><suffix>` for n = 0, 1, … until it does not fail
/// with `AlreadyExists` (a file, or a symlink, that must be new); returns the name it took.
pub(crate) fn create_unique(
    dir: &Path,
    prefix: &str,
    suffix: &str,
    mut create: impl FnMut(&Path) -> io::Result<()>,
) -> io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{prefix}{}-{n}{suffix}", std::process::id()));
        match create(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}
