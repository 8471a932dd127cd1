//! The `entries` and `entry_outputs` rows of one cache entry: made from an artifact's
//! `meta.json`, read and written.

use rusqlite::{params, Connection};

use super::{from_sql_u64, output_path, to_sql_u64, Entry};
use crate::artifact::{ArtifactMeta, FileMeta};

pub(super) fn entry_from_meta(
    meta: &ArtifactMeta,
    size_bytes: u64,
    created_at: i64,
    now: i64,
) -> Entry {
    let (project, task) = meta.task.split_once('#').unwrap_or(("", &meta.task));
    Entry {
        key: meta.key.clone(),
        project: project.to_owned(),
        task: task.to_owned(),
        size_bytes,
        created_at,
        accessed_at: now,
        duration_ms: meta.exec.duration_ms,
        cpu_ms: meta.exec.cpu_ms,
        peak_rss_bytes: meta.exec.peak_rss_bytes,
        origin: "local".to_owned(),
        outputs: meta
            .files
            .iter()
            .map(|(name, file)| (output_path(name).to_owned(), *file))
            .collect(),
    }
}

pub(super) fn read_entry(conn: &Connection, key: &str) -> rusqlite::Result<Option<Entry>> {
    let mut stmt = conn.prepare_cached(
        "SELECT e.project, e.task, e.size_bytes, e.created_at, e.accessed_at, e.duration_ms,
                e.cpu_ms, e.peak_rss_bytes, e.origin, o.path, o.size, o.mode, o.mtime_ns
         FROM entries e LEFT JOIN entry_outputs o ON o.key = e.key
         WHERE e.key = ?1 ORDER BY o.path",
    )?;
    let mut rows = stmt.query([key])?;
    let mut entry: Option<Entry> = None;
    while let Some(row) = rows.next()? {
        let entry = match &mut entry {
            Some(entry) => entry,
            None => entry.insert(Entry {
                key: key.to_owned(),
                project: row.get(0)?,
                task: row.get(1)?,
                size_bytes: from_sql_u64(row.get(2)?),
                created_at: row.get(3)?,
                accessed_at: row.get(4)?,
                duration_ms: from_sql_u64(row.get(5)?),
                cpu_ms: row.get::<_, Option<i64>>(6)?.map(from_sql_u64),
                peak_rss_bytes: row.get::<_, Option<i64>>(7)?.map(from_sql_u64),
                origin: row.get(8)?,
                outputs: Vec::new(),
            }),
        };
        if let Some(path) = row.get::<_, Option<String>>(9)? {
            let meta = FileMeta {
                size: from_sql_u64(row.get(10)?),
                mode: row.get(11)?,
                mtime_ns: row.get(12)?,
            };
            entry.outputs.push((path, meta));
        }
    }
    Ok(entry)
}

/// Upserts `entries` and replaces the entry's `entry_outputs`.
pub(super) fn write_entry(conn: &Connection, entry: &Entry) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO entries (key, project, task, size_bytes, created_at, accessed_at,
                              duration_ms, cpu_ms, peak_rss_bytes, origin)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT (key) DO UPDATE SET
             project = excluded.project, task = excluded.task,
             size_bytes = excluded.size_bytes, created_at = excluded.created_at,
             accessed_at = excluded.accessed_at, duration_ms = excluded.duration_ms,
             cpu_ms = excluded.cpu_ms, peak_rss_bytes = excluded.peak_rss_bytes,
             origin = excluded.origin",
    )?
    .execute(params![
        entry.key,
        entry.project,
        entry.task,
        to_sql_u64(entry.size_bytes),
        entry.created_at,
        entry.accessed_at,
        to_sql_u64(entry.duration_ms),
        entry.cpu_ms.map(to_sql_u64),
        entry.peak_rss_bytes.map(to_sql_u64),
        entry.origin,
    ])?;
    conn.prepare_cached("DELETE FROM entry_outputs WHERE key = ?1")?
        .execute([&entry.key])?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO entry_outputs (key, path, size, mode, mtime_ns) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (path, file) in &entry.outputs {
        insert.execute(params![
            entry.key,
            path,
            to_sql_u64(file.size),
            file.mode,
            file.mtime_ns
        ])?;
    }
    Ok(())
}
