//! The cache index: [`Store`] is one open cache directory (STORE-1..4, STORE-7, STORE-8).
//!
//! # How this works
//!
//! A cache directory holds `cache.db` (the SQLite index, schema in `schema.rs`), one
//! `artifacts/<key>.tar.zst` per entry and a `tmp/` for staging. The index is the fast path and
//! the artifacts are the truth: a probe ([`Store::lookup`]) reads the `entries` row and `stat`s the
//! artifact without opening it. A row whose file is gone is deleted (a miss); a file without a row
//! (the index was reset or deleted) is *adopted*: fully validated by [`crate::artifact::validate`]
//! and indexed again. Only names `artifacts/<64 hex>.tar.zst` are ever looked at, so temp and
//! aside files are never hits.
//!
//! A save ([`Store::save`]) renames the packed temp file into place inside one `BEGIN IMMEDIATE`
//! transaction that upserts the row, so other processes see the row and the file together; a
//! replaced artifact is renamed aside first and unlinked after the commit, and a failed commit
//! puts everything back. Every write transaction is `IMMEDIATE` so that two vx processes sharing
//! a cache queue on the busy timeout instead of failing to upgrade a read lock.
//!
//! Three modes: a *read-write* store; a *read-only* store (`--dry`, `vx why`) that never creates
//! or changes anything and treats a missing `cache.db` as an empty cache; and a *disabled* store
//! (the index has a newer schema) on which every call is a no-op miss. `accessed_at` updates are
//! kept in memory ([`Store::touch`]) and written in one transaction at the end of the run.
//!
//! Opening (layout, SQLite settings, schema upgrade) is in `index/open.rs`; stamps
//! (`output_stamps`, `file_stamps`) in `index/stamps.rs`; history (`runs`, `invocations`,
//! `key_inputs`) in `index/history.rs`; each task's recent executions (`task_recent`) in
//! `index/recent.rs`.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::artifact::{self, Damage, Packed, ReadError, RestoreError};
use crate::artifact::{Restored, Target};

mod entries;
mod errors;
mod history;
mod last;
mod open;
mod preload;
mod recent;
mod rewrites;
mod runs;
mod sql;
mod stamps;
#[cfg(test)]
pub(crate) mod tests;

pub use entries::{output_path, Entry, OutputStamp, Stamping};
pub use history::{Invocation, KeyComponent, RecentCounts};
pub use recent::{Recent, RECENT_RUNS};
pub use runs::RunRow;
pub(crate) use sql::{from_sql_u64, now_ms, to_sql_u64};
pub use stamps::{FileStamp, KeysByTask};

use entries::{entry_from_meta, read_entry, write_entry};
pub(crate) use errors::{io_at, AtIndex};
pub use errors::{OpenError, RestoreFailure, StoreError};
pub(crate) use open::{create_vx_dir, set_meta};

/// The index file inside a cache directory.
pub const DB_FILE: &str = "cache.db";
/// Where artifacts live inside a cache directory.
pub const ARTIFACTS_DIR: &str = "artifacts";
/// Where staging files live inside a cache directory.
pub const TMP_DIR: &str = "tmp";

/// Adopted entries whose rows are written together (see `Store::pending_rows`).
const ROW_BATCH: usize = 256;
/// Prefix of the names an artifact being replaced is renamed to (inside `artifacts/`).
pub(crate) const ASIDE_PREFIX: &str = ".aside-";

/// Whether a store may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    ReadWrite,
    /// Never creates or modifies anything (`--dry`, `vx why`).
    ReadOnly,
}

/// The result of a probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    Hit(Entry),
    Miss,
    /// The artifact failed validation on adoption; it was deleted (read-write) or kept
    /// (read-only). Treat as a miss and say why (STORE-12).
    Damaged(Damage),
}

/// Values of the `meta` table this store uses after open.
#[derive(Debug, Default)]
pub(crate) struct Meta {
    pub(crate) orphans_swept_at: Option<i64>,
    pub(crate) housekept_at: Option<i64>,
    /// The entries' generation when the store was opened (schema 6).
    pub(crate) generation: Option<i64>,
}

/// An entry found marked used less than this long ago (ms) is not marked again by this run, nor
/// by a replay: retention counts days, and a warm run of 30,000 hits would otherwise rewrite
/// 30,000 rows (and their `accessed_at` index) every time.
pub const MARKED_USED_EVERY_MS: i64 = 3_600_000;

/// One open cache directory. See the module documentation.
pub struct Store {
    pub(crate) dir: PathBuf,
    pub(crate) db: PathBuf,
    pub(crate) access: Access,
    /// `None` when the store is disabled or read-only without a `cache.db`.
    pub(crate) conn: Option<Connection>,
    disabled: Option<u32>,
    /// Why a read-write open fell back to reading: the directory cannot be written.
    read_only_reason: Option<String>,
    salt: [u8; 32],
    pub(crate) meta: Meta,
    /// The entries used in this run: when (written by [`Store::flush_touches`]), or `None` for
    /// one marked used less than [`MARKED_USED_EVERY_MS`] ago, which is not marked again.
    touches: BTreeMap<String, Option<i64>>,
    /// Rows of entries adopted by [`Store::adopt_validated`] not written yet: a run that
    /// adopts a thousand prefetched bodies one or two at a time writes their rows by the batch
    /// ([`ROW_BATCH`]) and in [`Store::flush_touches`]. A process that dies first loses nothing:
    /// an artifact without a row is validated and indexed when it is next looked up.
    pending_rows: Vec<Entry>,
    statements: Arc<AtomicU64>,
    aside_seq: u64,
    /// Rows read ahead by [`Store::preload`]; a lookup of one of these keys issues no SQL.
    preloaded: HashMap<String, Entry>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("dir", &self.dir)
            .field("access", &self.access)
            .field("disabled", &self.disabled)
            .finish_non_exhaustive()
    }
}

/// Whether `key` has the shape of a cache key (64 lowercase hex digits), so it is safe in a path.
pub fn is_key(key: &str) -> bool {
    key.len() == 64 && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl Store {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn access(&self) -> Access {
        self.access
    }

    /// The newer schema version found at open, when the local cache and history are off.
    pub fn disabled(&self) -> Option<u32> {
        self.disabled
    }

    /// Why a store opened for writing only reads (STORE-14: a read-only file system or a
    /// directory vx may not write): hits are served, nothing is written.
    pub fn read_only_reason(&self) -> Option<&str> {
        self.read_only_reason.as_deref()
    }

    /// The store's random salt for value-bearing key fingerprints (HIST-2); zeros when there is
    /// no index.
    pub fn salt(&self) -> [u8; 32] {
        self.salt
    }

    /// SQL statements executed through this store so far (PERF-3).
    pub fn statements(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }

    /// `artifacts/<key>.tar.zst`.
    /// The entries' generation as it was when the store was opened: a run snapshot is written
    /// only when no entry was deleted or saved again since (`snapshot_state` reads it now).
    pub fn generation_at_open(&self) -> Option<i64> {
        self.meta.generation
    }

    pub fn artifact_path(&self, key: &str) -> PathBuf {
        self.dir.join(ARTIFACTS_DIR).join(format!("{key}.tar.zst"))
    }

    /// Whether this store writes: read-write and not disabled.
    pub(crate) fn writable(&self) -> bool {
        self.access == Access::ReadWrite && self.conn.is_some()
    }

    /// Probes `key` (STORE-8). A hit is also [touched](Store::touch).
    pub fn lookup(
        &mut self,
        key: &str,
        accept: &dyn Fn(&str) -> bool,
    ) -> Result<Lookup, StoreError> {
        let Some(conn) = self.conn.as_ref() else {
            return Ok(Lookup::Miss);
        };
        if !is_key(key) {
            return Ok(Lookup::Miss);
        }
        let row = match self.preloaded.remove(key) {
            Some(entry) => Some(entry),
            None => read_entry(conn, key).at(&self.db)?,
        };
        let path = self.artifact_path(key);
        let stat = match std::fs::symlink_metadata(&path) {
            Ok(stat) => Some(stat),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_at(&path)(e)),
        };
        match (row, stat) {
            (Some(entry), Some(stat)) if stat.is_file() && stat.len() == entry.size_bytes => {
                if now_ms() - entry.accessed_at < MARKED_USED_EVERY_MS {
                    if self.writable() {
                        self.touches.entry(key.to_owned()).or_insert(None);
                    }
                } else {
                    self.touch(key);
                }
                Ok(Lookup::Hit(entry))
            }
            // A file that differs from its row is re-validated like a file without a row.
            (_, Some(stat)) if stat.is_file() => self.adopt(key, &path, stat.len(), accept),
            (Some(_), _) => {
                self.forget(&[key], false)?;
                Ok(Lookup::Miss)
            }
            (None, _) => Ok(Lookup::Miss),
        }
    }

    /// Validates an artifact that has no (matching) row and indexes it.
    fn adopt(
        &mut self,
        key: &str,
        path: &Path,
        size_bytes: u64,
        accept: &dyn Fn(&str) -> bool,
    ) -> Result<Lookup, StoreError> {
        match artifact::validate(path, key, accept, artifact::SIZE_CAP) {
            Ok(valid) => {
                let created_at = std::fs::metadata(path)
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .and_then(|d| i64::try_from(d.as_millis()).ok())
                    .unwrap_or_else(now_ms);
                let entry = entry_from_meta(&valid.meta, size_bytes, created_at, now_ms());
                if self.writable() {
                    let conn = self.conn.as_mut().expect("writable");
                    let tx = conn
                        .transaction_with_behavior(TransactionBehavior::Immediate)
                        .at(&self.db)?;
                    write_entry(&tx, &entry).at(&self.db)?;
                    tx.commit().at(&self.db)?;
                }
                Ok(Lookup::Hit(entry))
            }
            Err(ReadError::Damaged(damage)) => {
                self.forget(&[key], true)?;
                Ok(Lookup::Damaged(damage))
            }
            Err(ReadError::Vanished) => {
                self.forget(&[key], false)?;
                Ok(Lookup::Miss)
            }
            Err(ReadError::Io { path, source }) => Err(StoreError::Io { path, source }),
        }
    }

    /// Adopts an artifact another layer delivered into `file` (REM-5): it is validated as a
    /// restore would (STORE-5), moved into place and indexed with `origin`. A body that fails
    /// validation is [`Lookup::Damaged`]; the file is consumed either way. Needs a writable
    /// store (a read-only one answers [`Lookup::Miss`]).
    pub fn adopt_download(
        &mut self,
        key: &str,
        file: &Path,
        accept: &dyn Fn(&str) -> bool,
        origin: &str,
    ) -> Result<Lookup, StoreError> {
        let result = self.adopt_download_inner(key, file, accept, origin);
        let _ = std::fs::remove_file(file);
        result
    }

    fn adopt_download_inner(
        &mut self,
        key: &str,
        file: &Path,
        accept: &dyn Fn(&str) -> bool,
        origin: &str,
    ) -> Result<Lookup, StoreError> {
        if !self.writable() || !is_key(key) {
            return Ok(Lookup::Miss);
        }
        let size_bytes = std::fs::metadata(file).map_err(io_at(file))?.len();
        let valid = match artifact::validate(file, key, accept, artifact::SIZE_CAP) {
            Ok(valid) => valid,
            Err(ReadError::Damaged(damage)) => return Ok(Lookup::Damaged(damage)),
            Err(ReadError::Vanished) => return Ok(Lookup::Miss),
            Err(ReadError::Io { path, source }) => return Err(StoreError::Io { path, source }),
        };
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600))
            .map_err(io_at(file))?;
        let now = now_ms();
        let mut entry = entry_from_meta(&valid.meta, size_bytes, now, now);
        entry.origin = origin.to_owned();
        let target = self.artifact_path(key);
        let conn = self.conn.as_mut().expect("writable");
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .at(&self.db)?;
        std::fs::rename(file, &target).map_err(io_at(file))?;
        if let Err(e) = write_entry(&tx, &entry).and_then(|()| tx.commit()) {
            let _ = std::fs::remove_file(&target);
            return Err(StoreError::Index {
                path: self.db.clone(),
                source: e,
            });
        }
        Ok(Lookup::Hit(entry))
    }

    /// Adopts bodies another layer delivered and that were validated already (REM-6: on the
    /// threads that downloaded them): each is moved into place and indexed with `origin`, its
    /// row written with the next batch (see `pending_rows`). Returns the entries adopted; a body
    /// that cannot be moved is dropped (a miss). Every file is consumed. Needs a writable store.
    pub fn adopt_validated(
        &mut self,
        bodies: Vec<artifact::Arrived>,
        origin: &str,
    ) -> Result<Vec<(String, Entry)>, StoreError> {
        if !self.writable() {
            for body in bodies {
                let _ = std::fs::remove_file(body.path);
            }
            return Ok(Vec::new());
        }
        let now = now_ms();
        let mut adopted = Vec::with_capacity(bodies.len());
        for body in bodies {
            if !is_key(&body.key) {
                let _ = std::fs::remove_file(&body.path);
                continue;
            }
            let target = self.artifact_path(&body.key);
            let moved = std::fs::metadata(&body.path).and_then(|meta| {
                std::fs::set_permissions(&body.path, std::fs::Permissions::from_mode(0o600))?;
                std::fs::rename(&body.path, &target)?;
                Ok(meta.len())
            });
            let Ok(size_bytes) = moved else {
                let _ = std::fs::remove_file(&body.path);
                continue;
            };
            let mut entry = entry_from_meta(&body.valid.meta, size_bytes, now, now);
            entry.origin = origin.to_owned();
            self.pending_rows.push(entry.clone());
            adopted.push((body.key, entry));
        }
        if self.pending_rows.len() >= ROW_BATCH {
            self.flush_touches()?;
        }
        Ok(adopted)
    }

    /// A new path in `tmp/` for a download or a pack; nothing is created.
    pub fn tmp_path(&mut self, what: &str) -> PathBuf {
        self.aside_seq += 1;
        self.dir
            .join(TMP_DIR)
            .join(format!("{what}-{}-{}", std::process::id(), self.aside_seq))
    }

    /// Whether a lookup may adopt entries from other layers (read-write, enabled).
    pub fn can_adopt(&self) -> bool {
        self.writable()
    }

    /// Moves a packed artifact into place and indexes it (STORE-7 step 3). The temp file is
    /// consumed: on any failure it is removed. A disabled store just removes it.
    pub fn save(&mut self, packed: Packed, project: &str, task: &str) -> Result<(), StoreError> {
        self.save_with_stamps(packed, project, task, None, "local")
    }

    /// [`Store::save`], and in the same transaction the workspace's `output_stamps` of the
    /// entry (STORE-7 steps 3 and 4), as [`Store::set_output_stamps`] writes them. One commit
    /// per saved task instead of two. `origin` is the entry's (`local`, or `remote-exec` for
    /// a result executed remotely, REM-14).
    pub fn save_with_stamps(
        &mut self,
        packed: Packed,
        project: &str,
        task: &str,
        stamps: Option<Stamping<'_>>,
        origin: &str,
    ) -> Result<(), StoreError> {
        let result = self.save_inner(&packed, project, task, stamps, origin);
        if result.is_err() || self.conn.is_none() {
            let _ = std::fs::remove_file(&packed.path);
        }
        result
    }

    fn save_inner(
        &mut self,
        packed: &Packed,
        project: &str,
        task: &str,
        stamps: Option<Stamping<'_>>,
        origin: &str,
    ) -> Result<(), StoreError> {
        if self.access == Access::ReadOnly {
            return Err(StoreError::ReadOnly {
                path: self.dir.clone(),
            });
        }
        if self.conn.is_none() {
            return Ok(());
        }
        let key = packed.meta.key.as_str();
        if !is_key(key) {
            return Err(StoreError::BadKey { key: key.into() });
        }
        std::fs::set_permissions(&packed.path, std::fs::Permissions::from_mode(0o600))
            .map_err(io_at(&packed.path))?;
        let now = now_ms();
        let mut entry = entry_from_meta(&packed.meta, packed.size_bytes, now, now);
        entry.project = project.to_owned();
        entry.task = task.to_owned();
        entry.origin = origin.to_owned();

        let target = self.artifact_path(key);
        self.aside_seq += 1;
        let aside = self.dir.join(ARTIFACTS_DIR).join(format!(
            "{ASIDE_PREFIX}{key}-{}-{}",
            std::process::id(),
            self.aside_seq
        ));
        let conn = self.conn.as_mut().expect("checked above");
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .at(&self.db)?;
        let set_aside = match std::fs::rename(&target, &aside) {
            Ok(()) => true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(io_at(&target)(e)),
        };
        let put_back = |target: &Path| {
            if set_aside {
                let _ = std::fs::rename(&aside, target);
            }
        };
        if let Err(e) = std::fs::rename(&packed.path, &target) {
            put_back(&target);
            return Err(io_at(&packed.path)(e));
        }
        let written = write_entry(&tx, &entry).and_then(|()| match stamps {
            Some(stamping) => entries::put_output_stamps(&tx, key, &stamping),
            None => Ok(()),
        });
        if let Err(e) = written.and_then(|()| tx.commit()) {
            let _ = std::fs::remove_file(&target);
            put_back(&target);
            return Err(StoreError::Index {
                path: self.db.clone(),
                source: e,
            });
        }
        if set_aside {
            let _ = std::fs::remove_file(&aside);
        }
        Ok(())
    }

    /// Restores the entry `key` through [`artifact::restore`]. Damage discards the entry
    /// (read-write; a read-only store keeps it); a vanished artifact loses its row.
    pub fn restore(
        &mut self,
        key: &str,
        accept: &dyn Fn(&str) -> bool,
        target: &dyn Fn(&str) -> Target,
    ) -> Result<Restored, RestoreFailure> {
        if self.conn.is_none() || !is_key(key) {
            return Err(RestoreFailure::Vanished);
        }
        let path = self.artifact_path(key);
        match artifact::restore(&path, key, accept, artifact::SIZE_CAP, target) {
            Ok(restored) => {
                self.touch(key);
                Ok(restored)
            }
            Err(RestoreError::Damaged(damage)) => {
                self.forget(&[key], true)?;
                Err(RestoreFailure::Damaged(damage))
            }
            Err(RestoreError::Vanished) => {
                self.forget(&[key], false)?;
                Err(RestoreFailure::Vanished)
            }
            Err(RestoreError::Blocked { path }) => Err(RestoreFailure::Blocked { path }),
            Err(RestoreError::Unsafe { path }) => Err(RestoreFailure::Unsafe { path }),
            Err(RestoreError::LinkLeaves { path, text }) => {
                Err(RestoreFailure::LinkLeaves { path, text })
            }
            Err(RestoreError::Io { path, source }) => Err(RestoreFailure::Io { path, source }),
        }
    }

    /// Deletes the entry's row and artifact. A no-op on a read-only or disabled store.
    pub fn discard(&mut self, key: &str) -> Result<(), StoreError> {
        self.forget(&[key], true)
    }

    /// Deletes the rows of `keys` (with their outputs and stamps) in one transaction, then, when
    /// `files`, their artifacts. Does nothing unless the store is writable.
    pub(crate) fn forget(&mut self, keys: &[&str], files: bool) -> Result<(), StoreError> {
        if !self.writable() {
            return Ok(());
        }
        let conn = self.conn.as_mut().expect("writable");
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .at(&self.db)?;
        {
            let mut entry = tx
                .prepare_cached("DELETE FROM entries WHERE key = ?1")
                .at(&self.db)?;
            let mut stamps = tx
                .prepare_cached("DELETE FROM output_stamps WHERE key = ?1")
                .at(&self.db)?;
            for key in keys {
                entry.execute([key]).at(&self.db)?;
                stamps.execute([key]).at(&self.db)?;
            }
        }
        tx.commit().at(&self.db)?;
        if files {
            for key in keys.iter().filter(|k| is_key(k)) {
                let path = self.artifact_path(key);
                match std::fs::remove_file(&path) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(io_at(&path)(e)),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Records that `key` was used now; written by [`Store::flush_touches`] unless its lookup
    /// found it marked used less than [`MARKED_USED_EVERY_MS`] ago.
    pub fn touch(&mut self, key: &str) {
        if self.writable() && self.touches.get(key) != Some(&None) {
            self.touches.insert(key.to_owned(), Some(now_ms()));
        }
    }

    /// Writes the rows of adopted entries not written yet and the collected `accessed_at`
    /// updates, in one transaction.
    pub fn flush_touches(&mut self) -> Result<(), StoreError> {
        // Nothing but entries found marked used within the hour: no transaction (nor the
        // write lock).
        // (A store that cannot be written collects no touches.)
        let marks = self.touches.values().any(Option::is_some);
        if !self.writable() || (!marks && self.pending_rows.is_empty()) {
            self.touches.clear();
            return Ok(());
        }
        let conn = self.conn.as_mut().expect("writable");
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .at(&self.db)?;
        for entry in &self.pending_rows {
            write_entry(&tx, entry).at(&self.db)?;
        }
        {
            let mut update = tx
                .prepare_cached(
                    "UPDATE entries SET accessed_at = max(accessed_at, ?2) WHERE key = ?1",
                )
                .at(&self.db)?;
            for (key, at) in &self.touches {
                if let Some(at) = at {
                    update.execute(params![key, at]).at(&self.db)?;
                }
            }
        }
        tx.commit().at(&self.db)?;
        self.touches.clear();
        self.pending_rows.clear();
        Ok(())
    }

    /// Total compressed size and number of entries.
    pub fn totals(&self) -> Result<(u64, u64), StoreError> {
        let Some(conn) = self.conn.as_ref() else {
            return Ok((0, 0));
        };
        let (size, count): (i64, i64) = conn
            .prepare_cached("SELECT COALESCE(SUM(size_bytes), 0), COUNT(*) FROM entries")
            .and_then(|mut s| s.query_row([], |r| Ok((r.get(0)?, r.get(1)?))))
            .at(&self.db)?;
        Ok((from_sql_u64(size), from_sql_u64(count)))
    }

    /// The indexed entry of `key`, without probing the artifact.
    pub fn entry(&self, key: &str) -> Result<Option<Entry>, StoreError> {
        match self.conn.as_ref() {
            Some(conn) => read_entry(conn, key).at(&self.db),
            None => Ok(None),
        }
    }

    /// The digest of the output tree of `key`'s entry (KEY-9's early cutoff), if the index
    /// holds the entry and knows it.
    pub fn produced_of(&self, key: &str) -> Result<Option<String>, StoreError> {
        let Some(conn) = self.conn.as_ref() else {
            return Ok(None);
        };
        // A row read ahead (`--dry` of a workspace whose entries it holds): no SQL.
        if let Some(entry) = self.preloaded.get(key) {
            return Ok(entry.produced.clone());
        }
        conn.prepare_cached("SELECT produced FROM entries WHERE key = ?1")
            .and_then(|mut stmt| {
                stmt.query_row([key], |row| row.get::<_, Option<String>>(0))
                    .optional()
            })
            .map(Option::flatten)
            .at(&self.db)
    }

    /// The output digest of the task's newest entry: what `--dry` expects a task that will run
    /// to produce again (its history), for predicting the early cutoff of its dependants.
    pub fn latest_produced(&self, project: &str, task: &str) -> Result<Option<String>, StoreError> {
        let Some(conn) = self.conn.as_ref() else {
            return Ok(None);
        };
        conn.prepare_cached(
            "SELECT produced FROM entries
             WHERE project = ?1 AND task = ?2 AND produced IS NOT NULL
             ORDER BY created_at DESC LIMIT 1",
        )
        .and_then(|mut stmt| stmt.query_row([project, task], |row| row.get(0)).optional())
        .at(&self.db)
    }

    /// Whether the store may hold any entry a lookup could serve: a file in `artifacts/` (a
    /// hit needs its artifact, indexed or not). False for a cold cache: then no lookup can hit,
    /// and a run need not take every key ahead of time to look. One directory read, no SQL.
    pub fn may_hold_entries(&self) -> bool {
        self.disabled.is_none()
            && std::fs::read_dir(self.dir.join(ARTIFACTS_DIR))
                .is_ok_and(|mut files| files.next().is_some())
    }

    /// Whether an entry exists for `key`, for `--dry` (UI-12: existence only): a row whose
    /// artifact file is present, or an artifact file that a lookup would adopt. Changes
    /// nothing and opens no artifact.
    pub fn has_entry(&self, key: &str) -> bool {
        if !is_key(key) || self.disabled.is_some() {
            return false;
        }
        self.artifact_path(key).is_file()
    }
}

/// Runs `f` on the connection when the store is writable (a no-op otherwise) inside one
/// `BEGIN IMMEDIATE` transaction.
pub(crate) fn write_tx<T: Default>(
    store: &mut Store,
    f: impl FnOnce(&rusqlite::Transaction<'_>, &mut Meta) -> rusqlite::Result<T>,
) -> Result<T, StoreError> {
    if !store.writable() {
        return Ok(T::default());
    }
    let conn = store.conn.as_mut().expect("writable");
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .at(&store.db)?;
    let value = f(&tx, &mut store.meta).at(&store.db)?;
    tx.commit().at(&store.db)?;
    Ok(value)
}

/// Runs a read `f` when the store has an index; `T::default()` otherwise.
pub(crate) fn read<T: Default>(
    store: &Store,
    f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
) -> Result<T, StoreError> {
    match store.conn.as_ref() {
        Some(conn) => f(conn).at(&store.db),
        None => Ok(T::default()),
    }
}
