//! Stamps: what `lstat` said about files, so unchanged files need no reading.
//!
//! `output_stamps` (STORE-9) hold, per workspace and key, what `lstat` reported for each output
//! right after this checkout saved or restored it; a hit is up-to-date only when the files still
//! match. `file_stamps` (KEY-11) is the identity memo of input files: loaded once per run with
//! [`Store::file_stamps`], written back once at the end with [`Store::put_file_stamps`].

use std::collections::HashMap;

use rusqlite::params;

use super::entries::{put_output_stamps, OutputStamp, Stamping};
use super::history::housekeep_if_due;
use super::sql::{from_sql_u64, now_ms, to_sql_u64};
use super::{read, write_tx, Store, StoreError};

/// The identity of one input file when its blob id was last computed (KEY-11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStamp {
    pub device: u64,
    pub inode: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub size: u64,
    pub mode: u32,
    pub blob_id: String,
}

impl Store {
    /// Every `output_stamps` row of this workspace, by key: loaded once per run, so the
    /// up-to-date check and the "vx wrote it" exemption of STORE-10 cost no statement per task.
    pub fn workspace_output_stamps(
        &self,
        workspace: &str,
    ) -> Result<HashMap<String, Vec<OutputStamp>>, StoreError> {
        read(self, |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT key, path, size, mode, mtime_ns, inode, ctime_ns FROM output_stamps
                 WHERE workspace = ?1 ORDER BY key, path",
            )?;
            let rows = stmt.query_map([workspace], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    OutputStamp {
                        path: row.get(1)?,
                        size: from_sql_u64(row.get(2)?),
                        mode: row.get(3)?,
                        mtime_ns: row.get(4)?,
                        inode: from_sql_u64(row.get(5)?),
                        ctime_ns: row.get(6)?,
                    },
                ))
            })?;
            let mut out: HashMap<String, Vec<OutputStamp>> = HashMap::new();
            for row in rows {
                let (key, stamp) = row?;
                out.entry(key).or_default().push(stamp);
            }
            Ok(out)
        })
    }

    /// This workspace's `output_stamps` rows of `key`, sorted by path.
    pub fn output_stamps(
        &self,
        workspace: &str,
        key: &str,
    ) -> Result<Vec<OutputStamp>, StoreError> {
        read(self, |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT path, size, mode, mtime_ns, inode, ctime_ns FROM output_stamps
                 WHERE workspace = ?1 AND key = ?2 ORDER BY path",
            )?;
            let rows = stmt.query_map([workspace, key], |row| {
                Ok(OutputStamp {
                    path: row.get(0)?,
                    size: from_sql_u64(row.get(1)?),
                    mode: row.get(2)?,
                    mtime_ns: row.get(3)?,
                    inode: from_sql_u64(row.get(4)?),
                    ctime_ns: row.get(5)?,
                })
            })?;
            rows.collect()
        })
    }

    /// Replaces every `output_stamps` row of (`workspace`, `key`), and deletes the workspace's
    /// rows of `superseded` keys (see [`Stamping`]).
    pub fn set_output_stamps(
        &mut self,
        workspace: &str,
        key: &str,
        stamps: &[OutputStamp],
        superseded: &[String],
    ) -> Result<(), StoreError> {
        let stamping = Stamping {
            workspace,
            rows: stamps,
            superseded,
        };
        write_tx(self, |tx, _| put_output_stamps(tx, key, &stamping))
    }

    /// [`Store::set_output_stamps`] for many entries of one workspace, in one transaction:
    /// (key, rows, superseded keys) each.
    pub fn set_output_stamps_many(
        &mut self,
        workspace: &str,
        entries: &[(String, Vec<OutputStamp>, Vec<String>)],
    ) -> Result<(), StoreError> {
        write_tx(self, |tx, _| {
            for (key, rows, superseded) in entries {
                let stamping = Stamping {
                    workspace,
                    rows,
                    superseded,
                };
                put_output_stamps(tx, key, &stamping)?;
            }
            Ok(())
        })
    }

    /// Every `file_stamps` row of `workspace`, by workspace-relative path.
    pub fn file_stamps(&self, workspace: &str) -> Result<HashMap<String, FileStamp>, StoreError> {
        read(self, |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT path, device, inode, mtime_ns, ctime_ns, size, mode, blob_id
                 FROM file_stamps WHERE workspace = ?1",
            )?;
            let rows = stmt.query_map([workspace], |row| {
                let stamp = FileStamp {
                    device: from_sql_u64(row.get(1)?),
                    inode: from_sql_u64(row.get(2)?),
                    mtime_ns: row.get(3)?,
                    ctime_ns: row.get(4)?,
                    size: from_sql_u64(row.get(5)?),
                    mode: row.get(6)?,
                    blob_id: row.get(7)?,
                };
                Ok((row.get(0)?, stamp))
            })?;
            rows.collect()
        })
    }

    /// Upserts `rows` with `seen_at` = now in one transaction. Pass the rows whose identity
    /// changed, and any unchanged rows whose use should keep them alive: rows unseen for 30 days
    /// are deleted (at most once a day, in the same transaction).
    pub fn put_file_stamps(
        &mut self,
        workspace: &str,
        rows: &[(String, FileStamp)],
    ) -> Result<(), StoreError> {
        let now = now_ms();
        write_tx(self, |tx, meta| {
            let mut upsert = tx.prepare_cached(
                "INSERT INTO file_stamps
                     (workspace, path, device, inode, mtime_ns, ctime_ns, size, mode, blob_id, seen_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                 ON CONFLICT (workspace, path) DO UPDATE SET
                     device = excluded.device, inode = excluded.inode,
                     mtime_ns = excluded.mtime_ns, ctime_ns = excluded.ctime_ns,
                     size = excluded.size, mode = excluded.mode,
                     blob_id = excluded.blob_id, seen_at = excluded.seen_at",
            )?;
            for (path, s) in rows {
                upsert.execute(params![
                    workspace,
                    path,
                    to_sql_u64(s.device),
                    to_sql_u64(s.inode),
                    s.mtime_ns,
                    s.ctime_ns,
                    to_sql_u64(s.size),
                    s.mode,
                    s.blob_id,
                    now
                ])?;
            }
            housekeep_if_due(tx, meta, now)
        })
    }
}

/// The keys whose `output_stamps` a workspace holds, by (project, task).
pub type KeysByTask = HashMap<(String, String), Vec<String>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Access;

    fn stamp(inode: u64) -> FileStamp {
        FileStamp {
            device: u64::MAX - 3,
            inode,
            mtime_ns: 1_700_000_000_123_456_789,
            ctime_ns: -5,
            size: 42,
            mode: 0o100644,
            blob_id: "b".repeat(40),
        }
    }

    #[test]
    fn output_stamps_are_replaced_per_workspace_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        let s = |path: &str, inode| OutputStamp {
            path: path.into(),
            size: 3,
            mode: 0o100644,
            mtime_ns: 9,
            inode,
            ctime_ns: 10,
        };
        store
            .set_output_stamps("ws", "k", &[s("b", 1), s("a", u64::MAX)], &[])
            .unwrap();
        store
            .set_output_stamps("other", "k", &[s("z", 2)], &[])
            .unwrap();
        assert_eq!(
            store.output_stamps("ws", "k").unwrap(),
            [s("a", u64::MAX), s("b", 1)]
        );
        store
            .set_output_stamps("ws", "k", &[s("c", 3)], &[])
            .unwrap();
        assert_eq!(store.output_stamps("ws", "k").unwrap(), [s("c", 3)]);
        assert_eq!(store.output_stamps("other", "k").unwrap(), [s("z", 2)]);
    }

    #[test]
    fn file_stamps_roundtrip_and_old_rows_expire() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        store
            .put_file_stamps(
                "ws",
                &[("a.ts".into(), stamp(1)), ("b.ts".into(), stamp(2))],
            )
            .unwrap();
        let loaded = store.file_stamps("ws").unwrap();
        assert_eq!(loaded.len(), 2);
        assert_eq!(loaded["a.ts"], stamp(1));
        assert!(store.file_stamps("elsewhere").unwrap().is_empty());

        // Age one row past 30 days and make housekeeping due again.
        let conn = store.conn.as_ref().unwrap();
        conn.execute("UPDATE file_stamps SET seen_at = 0 WHERE path = 'a.ts'", [])
            .unwrap();
        store.meta.housekept_at = Some(0);
        store
            .put_file_stamps("ws", &[("b.ts".into(), stamp(3))])
            .unwrap();
        let loaded = store.file_stamps("ws").unwrap();
        assert_eq!(loaded.keys().collect::<Vec<_>>(), ["b.ts"]);
        assert_eq!(loaded["b.ts"].inode, 3);
    }
}
