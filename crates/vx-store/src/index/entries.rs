//! The `entries` and `entry_outputs` rows of one cache entry: made from an artifact's
//! `meta.json`, read and written; and the `output_stamps` rows written with it.

use rusqlite::{params, Connection};

use super::sql::{from_sql_u64, to_sql_u64};
use crate::artifact::{ArtifactMeta, FileMeta};

/// One indexed cache entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub project: String,
    pub task: String,
    /// Compressed size of the artifact.
    pub size_bytes: u64,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    pub accessed_at: i64,
    pub duration_ms: u64,
    pub cpu_ms: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
    /// `local`, `remote` or `remote-exec`.
    pub origin: String,
    /// `entry_outputs` rows, sorted: project-relative paths, and `workspace-outputs/<root-rel>`.
    pub outputs: Vec<(String, FileMeta)>,
    /// The digest of the output tree (`artifact::produced_digest`); `None` for an entry an
    /// older vx indexed.
    pub produced: Option<String>,
}

/// The `entry_outputs` path of an artifact entry name: project outputs lose their `outputs/`
/// prefix, workspace outputs keep `workspace-outputs/`.
pub fn output_path(entry_name: &str) -> &str {
    entry_name.strip_prefix("outputs/").unwrap_or(entry_name)
}

/// What `lstat` reported for one output file (`path` is root-relative, as the run writes it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputStamp {
    pub path: String,
    pub size: u64,
    pub mode: u32,
    pub mtime_ns: i64,
    pub inode: u64,
    pub ctime_ns: i64,
}

/// What to record as a workspace's `output_stamps` of an entry.
pub struct Stamping<'a> {
    /// The workspace identity.
    pub workspace: &'a str,
    /// The rows: the outputs as written.
    pub rows: &'a [OutputStamp],
    /// Other keys of the same task whose stamps this workspace still holds: their outputs have
    /// just been replaced, so their rows are deleted (they could only ever fail to match), and
    /// a workspace keeps one key's stamps per task instead of one per edit ever made.
    pub superseded: &'a [String],
}

/// Replaces the `output_stamps` rows of (`workspace`, `key`) and deletes the superseded keys'
/// rows, inside the caller's transaction.
pub(crate) fn put_output_stamps(
    tx: &rusqlite::Connection,
    key: &str,
    stamping: &Stamping<'_>,
) -> rusqlite::Result<()> {
    let Stamping {
        workspace,
        rows: stamps,
        superseded,
    } = *stamping;
    let mut delete =
        tx.prepare_cached("DELETE FROM output_stamps WHERE workspace = ?1 AND key = ?2")?;
    delete.execute([workspace, key])?;
    for old in superseded {
        delete.execute([workspace, old.as_str()])?;
    }
    let mut insert = tx.prepare_cached(
        "INSERT INTO output_stamps (workspace, key, path, size, mode, mtime_ns, inode, ctime_ns)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for s in stamps {
        insert.execute(params![
            workspace,
            key,
            s.path,
            to_sql_u64(s.size),
            s.mode,
            s.mtime_ns,
            to_sql_u64(s.inode),
            s.ctime_ns
        ])?;
    }
    Ok(())
}

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
        produced: meta.produced.clone(),
    }
}

pub(super) fn read_entry(conn: &Connection, key: &str) -> rusqlite::Result<Option<Entry>> {
    let mut stmt = conn.prepare_cached(
        "SELECT e.project, e.task, e.size_bytes, e.created_at, e.accessed_at, e.duration_ms,
                e.cpu_ms, e.peak_rss_bytes, e.origin, o.path, o.size, o.mode, o.mtime_ns,
                e.produced
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
                produced: row.get(13)?,
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
                              duration_ms, cpu_ms, peak_rss_bytes, origin, produced)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
         ON CONFLICT (key) DO UPDATE SET
             project = excluded.project, task = excluded.task,
             size_bytes = excluded.size_bytes, created_at = excluded.created_at,
             accessed_at = excluded.accessed_at, duration_ms = excluded.duration_ms,
             cpu_ms = excluded.cpu_ms, peak_rss_bytes = excluded.peak_rss_bytes,
             origin = excluded.origin, produced = excluded.produced",
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
        entry.produced,
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
