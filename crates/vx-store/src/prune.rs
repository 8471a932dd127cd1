//! Eviction (STORE-15 `vx cache prune`, STORE-16 automatic retention).
//!
//! [`Store::prune`] first drops rows whose artifact is gone, then evicts entries not accessed
//! within the age bound, then the least recently accessed ones while the total exceeds the size
//! bound (rows first, in one transaction, then files: a crash in between leaves orphans, which
//! the next sweep removes). The sweep removes *stray files*: artifacts without a row, aside
//! copies left by an interrupted replace, and anything in `tmp/`, but only when older than one
//! hour, so a save or a pack in flight in another process is never touched, and only under names
//! vx writes. [`Store::retention`] runs the same policy after a run and sweeps at most once an
//! hour (`meta.orphans_swept_at`).
//!
//! A staging file in `tmp/` is named after the process that writes it (`pack-<pid>-<n>.tmp`):
//! once no process has that pid, it is a crash leftover whatever its age. Every run removes
//! those ([`Store::sweep_dead_temps`]), and the sweep and `vx info`'s dry count include them.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rusqlite::OptionalExtension;

use crate::index::{
    io_at, is_key, now_ms, read, set_meta, write_tx, Access, OpenError, Store, StoreError,
    ARTIFACTS_DIR, ASIDE_PREFIX, TMP_DIR,
};

/// Stray files younger than this are left alone (they may belong to a save in progress).
const STRAY_AGE: Duration = Duration::from_secs(60 * 60);
/// Automatic retention sweeps for stray files at most this often.
const SWEEP_EVERY_MS: i64 = 60 * 60 * 1000;

/// What to evict. With neither bound only missing rows and stray files go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrunePolicy {
    /// Evict entries whose `accessed_at` is older than this.
    pub older_than: Option<Duration>,
    /// Then evict least recently accessed entries while the total compressed size exceeds this.
    pub max_size: Option<u64>,
}

/// What a prune removed (or, when dry, would remove).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneReport {
    pub evicted: u64,
    pub bytes_freed: u64,
    /// Stray files: artifacts without a row, aside copies and temp files.
    pub orphans: u64,
    pub orphan_bytes: u64,
    /// Rows whose artifact was missing (deleted; not counted in `evicted`).
    pub missing: u64,
}

/// Why [`prune_dir`] failed.
#[derive(Debug, thiserror::Error)]
pub enum PruneError {
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Prunes the cache directory `dir`. A directory that does not exist reports zeros and is not
/// created; a dry prune opens the index read-only.
pub fn prune_dir(dir: &Path, policy: &PrunePolicy, dry: bool) -> Result<PruneReport, PruneError> {
    // The run lock lives in `<root>/.vx` too, so the directory may exist without a cache.
    let never_used = !dir.join(crate::index::DB_FILE).exists()
        && !dir.join(crate::index::ARTIFACTS_DIR).is_dir();
    if never_used {
        return Ok(PruneReport::default());
    }
    let access = if dry {
        Access::ReadOnly
    } else {
        Access::ReadWrite
    };
    let mut store = Store::open(dir, access)?;
    Ok(store.prune(policy, dry)?)
}

/// One entry as the eviction sees it.
struct Candidate {
    key: String,
    size: u64,
    accessed_at: i64,
}

impl Store {
    /// `vx cache prune` (STORE-15): evicts by `policy` and sweeps stray files. `dry` changes
    /// nothing and reports what would go. A disabled store reports zeros.
    pub fn prune(&mut self, policy: &PrunePolicy, dry: bool) -> Result<PruneReport, StoreError> {
        self.prune_with(policy, dry, true)
    }

    /// Automatic retention (STORE-16): [`Store::prune`] that sweeps stray files at most once an
    /// hour.
    pub fn retention(&mut self, policy: &PrunePolicy) -> Result<PruneReport, StoreError> {
        let now = now_ms();
        let due = self
            .meta
            .orphans_swept_at
            .is_none_or(|at| at > now || now - at >= SWEEP_EVERY_MS);
        self.prune_with(policy, false, due)
    }

    /// Removes the staging files in `tmp/` whose writer is dead (its pid names no process):
    /// what a `kill -9` during a pack left. Cheap (one read of `tmp/`); every run calls it.
    /// Returns the count and bytes removed.
    pub fn sweep_dead_temps(&self) -> Result<(u64, u64), StoreError> {
        if self.access == Access::ReadOnly || self.conn.is_none() {
            return Ok((0, 0));
        }
        let found = self.strays_in(TMP_DIR, &HashSet::new(), false)?;
        remove_strays(found, false)
    }

    fn prune_with(
        &mut self,
        policy: &PrunePolicy,
        dry: bool,
        sweep: bool,
    ) -> Result<PruneReport, StoreError> {
        if !dry && self.access == Access::ReadOnly {
            return Err(StoreError::ReadOnly {
                path: self.dir.clone(),
            });
        }
        let mut report = PruneReport::default();
        if self.conn.is_none() {
            return Ok(report);
        }
        if !dry {
            self.flush_touches()?;
        }
        let now = now_ms();
        let rows: Vec<(String, i64)> = read(self, |conn| {
            let mut stmt =
                conn.prepare("SELECT key, accessed_at FROM entries ORDER BY accessed_at, key")?;
            let rows = stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
            rows.collect()
        })?;
        let known: HashSet<String> = rows.iter().map(|(key, _)| key.clone()).collect();

        let mut live = Vec::new();
        let mut missing = Vec::new();
        for (key, accessed_at) in rows {
            let path = self.artifact_path(&key);
            match std::fs::symlink_metadata(&path) {
                Ok(stat) if stat.is_file() => live.push(Candidate {
                    key,
                    size: stat.len(),
                    accessed_at,
                }),
                Ok(_) => missing.push(key),
                Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(key),
                Err(e) => return Err(io_at(&path)(e)),
            }
        }

        let mut evict = Vec::new();
        if let Some(age) = policy.older_than {
            let bound = now.saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX));
            let (old, young): (Vec<_>, Vec<_>) =
                live.into_iter().partition(|c| c.accessed_at < bound);
            evict.extend(old);
            live = young;
        }
        if let Some(max) = policy.max_size {
            // `live` is ordered least recently accessed first.
            let mut total: u64 = live.iter().map(|c| c.size).sum();
            let mut oldest = 0;
            while total > max && oldest < live.len() {
                total -= live[oldest].size;
                oldest += 1;
            }
            evict.extend(live.drain(..oldest));
        }

        report.missing = missing.len() as u64;
        report.evicted = evict.len() as u64;
        report.bytes_freed = evict.iter().map(|c| c.size).sum();
        if !dry {
            let missing: Vec<&str> = missing.iter().map(String::as_str).collect();
            self.forget(&missing, false)?;
            let evict: Vec<&str> = evict.iter().map(|c| c.key.as_str()).collect();
            self.forget(&evict, true)?;
        }

        if sweep {
            let (count, bytes) = self.sweep_strays(&known, dry)?;
            report.orphans = count;
            report.orphan_bytes = bytes;
            if !dry {
                write_tx(self, |tx, meta| {
                    set_meta(tx, "orphans_swept_at", &now.to_string())?;
                    meta.orphans_swept_at = Some(now);
                    Ok(())
                })?;
            }
        }
        Ok(report)
    }

    /// Removes (or counts, when `dry`) stray files older than [`STRAY_AGE`], and staging files
    /// of dead writers whatever their age.
    fn sweep_strays(&self, known: &HashSet<String>, dry: bool) -> Result<(u64, u64), StoreError> {
        let mut found = self.strays_in(ARTIFACTS_DIR, known, true)?;
        found.extend(self.strays_in(TMP_DIR, known, true)?);
        remove_strays(found, dry)
    }

    /// The stray files of one subdirectory: in `tmp/`, those of a dead writer, and (with
    /// `aged`) any older than [`STRAY_AGE`]; in `artifacts/`, aged aside copies and artifacts
    /// without a row.
    fn strays_in(
        &self,
        sub: &str,
        known: &HashSet<String>,
        aged: bool,
    ) -> Result<Vec<(PathBuf, u64)>, StoreError> {
        let tmp = sub == TMP_DIR;
        let dir = self.dir.join(sub);
        let listing = match std::fs::read_dir(&dir) {
            Ok(listing) => listing,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_at(&dir)(e)),
        };
        let mut found = Vec::new();
        for item in listing {
            let item = item.map_err(io_at(&dir))?;
            let name = item.file_name();
            let Some(name) = name.to_str() else { continue };
            let path = item.path();
            let Ok(stat) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if !stat.is_file() {
                continue;
            }
            let old = aged
                && stat
                    .modified()
                    .ok()
                    .and_then(|at| SystemTime::now().duration_since(at).ok())
                    .is_some_and(|age| age >= STRAY_AGE);
            let stray = if tmp {
                old || writer_is_dead(name)
            } else {
                old && self.is_stray_artifact_name(name, known)?
            };
            if stray {
                found.push((path, stat.len()));
            }
        }
        Ok(found)
    }

    /// Whether `name` in `artifacts/` is an aside copy or an artifact without a row. A row that
    /// appeared since the entries were listed (another process saved) keeps its file.
    fn is_stray_artifact_name(
        &self,
        name: &str,
        known: &HashSet<String>,
    ) -> Result<bool, StoreError> {
        if name.starts_with(ASIDE_PREFIX) {
            return Ok(true);
        }
        let Some(key) = name.strip_suffix(".tar.zst").filter(|k| is_key(k)) else {
            return Ok(false);
        };
        if known.contains(key) {
            return Ok(false);
        }
        let indexed: Option<i64> = read(self, |conn| {
            conn.prepare_cached("SELECT 1 FROM entries WHERE key = ?1")?
                .query_row([key], |row| row.get(0))
                .optional()
        })?;
        Ok(indexed.is_none())
    }
}

/// Removes (unless `dry`) the files found; a file already gone is not counted.
fn remove_strays(found: Vec<(PathBuf, u64)>, dry: bool) -> Result<(u64, u64), StoreError> {
    let mut count = 0;
    let mut bytes = 0;
    for (path, size) in found {
        if !dry {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_at(&path)(e)),
            }
        }
        count += 1;
        bytes += size;
    }
    Ok((count, bytes))
}

/// Whether a staging file's name (`<prefix><pid>-<n>.tmp`) names a process that no longer
/// exists. Another pid namespace sharing the cache directory would see its live writers'
/// files as dead: its save then fails with a warning, never a wrong entry (STORE-7).
fn writer_is_dead(name: &str) -> bool {
    let Some(rest) = name.strip_suffix(".tmp") else {
        return false;
    };
    let mut parts = rest.rsplitn(3, '-');
    let (Some(_n), Some(pid)) = (parts.next(), parts.next()) else {
        return false;
    };
    let Ok(pid) = pid.parse::<i32>() else {
        return false;
    };
    if pid <= 0 || pid == std::process::id() as i32 {
        return false;
    }
    matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Err(nix::errno::Errno::ESRCH)
    )
}

#[cfg(test)]
mod tests;
