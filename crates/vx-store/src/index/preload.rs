//! Index rows read ahead (PERF-1): the lookups of a run in which little changed cost no SQL
//! each.

use std::collections::HashMap;

use super::{from_sql_u64, AtIndex, Entry, KeysByTask, Store, StoreError};
use crate::artifact::FileMeta;

impl Store {
    /// Reads ahead, in two statements, the rows of every entry this workspace last saved or
    /// restored (the keys of its `output_stamps`), so that the lookups of a run in which little
    /// changed cost no SQL each (PERF-1). A preloaded row is used at most once and still checked
    /// against the artifact file, so a row another process changed since is caught as for any
    /// lookup (a missing file is a miss, a different size re-validates).
    ///
    /// Returns the keys whose stamps this workspace holds, by (project, task): more than one for
    /// a task means stamps of outputs since replaced (see [`Store::set_output_stamps`]).
    pub fn preload(&mut self, workspace: &str) -> Result<KeysByTask, StoreError> {
        let Some(conn) = self.conn.as_ref() else {
            return Ok(KeysByTask::new());
        };
        let read = || -> rusqlite::Result<HashMap<String, Entry>> {
            let mut entries: HashMap<String, Entry> = HashMap::new();
            let mut stmt = conn.prepare(
                "SELECT e.key, e.project, e.task, e.size_bytes, e.created_at, e.accessed_at,
                        e.duration_ms, e.cpu_ms, e.peak_rss_bytes, e.origin, e.produced
                 FROM entries e
                 WHERE e.key IN (SELECT DISTINCT key FROM output_stamps WHERE workspace = ?1)",
            )?;
            let mut rows = stmt.query([workspace])?;
            while let Some(row) = rows.next()? {
                let key: String = row.get(0)?;
                entries.insert(
                    key.clone(),
                    Entry {
                        key,
                        project: row.get(1)?,
                        task: row.get(2)?,
                        size_bytes: from_sql_u64(row.get(3)?),
                        created_at: row.get(4)?,
                        accessed_at: row.get(5)?,
                        duration_ms: from_sql_u64(row.get(6)?),
                        cpu_ms: row.get::<_, Option<i64>>(7)?.map(from_sql_u64),
                        peak_rss_bytes: row.get::<_, Option<i64>>(8)?.map(from_sql_u64),
                        origin: row.get(9)?,
                        outputs: Vec::new(),
                        produced: row.get(10)?,
                    },
                );
            }
            let mut stmt = conn.prepare(
                "SELECT o.key, o.path, o.size, o.mode, o.mtime_ns FROM entry_outputs o
                 WHERE o.key IN (SELECT DISTINCT key FROM output_stamps WHERE workspace = ?1)
                 ORDER BY o.key, o.path",
            )?;
            let mut rows = stmt.query([workspace])?;
            while let Some(row) = rows.next()? {
                let key: String = row.get(0)?;
                if let Some(entry) = entries.get_mut(&key) {
                    entry.outputs.push((
                        row.get(1)?,
                        FileMeta {
                            size: from_sql_u64(row.get(2)?),
                            mode: row.get(3)?,
                            mtime_ns: row.get(4)?,
                        },
                    ));
                }
            }
            Ok(entries)
        };
        self.preloaded = read().at(&self.db)?;
        let mut by_task = KeysByTask::new();
        for entry in self.preloaded.values() {
            by_task
                .entry((entry.project.clone(), entry.task.clone()))
                .or_default()
                .push(entry.key.clone());
        }
        Ok(by_task)
    }

    /// Drops the preloaded rows no lookup has used: a lookup of one of those keys reads its row
    /// from the index again. For when the lookups the preload was for are done (a run's hits
    /// served ahead, every level of them): after an edit that moved many keys, most of them
    /// are never asked for.
    pub fn drop_preloaded(&mut self) {
        self.preloaded = HashMap::new();
    }
}
