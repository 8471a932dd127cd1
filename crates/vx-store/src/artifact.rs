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
//! [`pack`] (in `pack`) writes an artifact to a staging file and reads it back. [`validate`] (in
//! `read`) is the one validity check; it streams the archive and keeps only `log` and
//! `meta.json` in memory. [`restore`] (in `restore`) runs the same walk, writing each output to a
//! hidden temporary beside its target, and renames them only once the archive proved valid.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

mod pack;
mod read;
mod restore;
#[cfg(test)]
mod tests;

pub use pack::{pack, PackError, Packed};
pub use read::{read_log, validate, ReadError, Validated};
pub use restore::{restore, RestoreError, Restored, RestoredFile, Target};

/// The artifact format version (`meta.json` `format`).
pub const FORMAT: u32 = 1;

/// The cap on an artifact's uncompressed size (2 GiB).
pub const SIZE_CAP: u64 = 2 << 30;

/// Prefix of the staging files [`pack`] creates in the cache's `tmp/` directory
/// (`pack-<pid>-<n>.tmp`), for the orphan sweep of STORE-15.
pub const PACK_TEMP_PREFIX: &str = "pack-";
/// Prefix of the hidden temporaries [`restore`] creates beside their targets
/// (`.vx-restore-<pid>-<n>.tmp`).
pub const RESTORE_TEMP_PREFIX: &str = ".vx-restore-";

/// The tar block size.
const BLOCK: u64 = 512;

/// One output file to pack: its entry name (`outputs/<project-relative>` or
/// `workspace-outputs/<root-relative>`) and where it is on disk.
#[derive(Debug, Clone)]
pub struct OutputFile {
    pub name: String,
    pub path: PathBuf,
    /// The directory a symlink among the outputs must resolve inside (the project directory,
    /// or the root for workspace outputs).
    pub contain: PathBuf,
}

/// Exact mode and mtime of one stored file, as `meta.json` records them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileMeta {
    pub mode: u32,
    pub mtime_ns: i64,
    pub size: u64,
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
    pub exec: ExecMeta,
    pub producer: Producer,
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
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{prefix}{}-{n}{suffix}", std::process::id()));
        let opened = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&path);
        match opened {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}
