//! The SQLite index schema (STORE-4, HIST-1), version [`VERSION`], kept in `PRAGMA user_version`.
//!
//! Table and column names are the spec's (STORE-4); columns may only grow, with defaults.
//! Integers that are `u64` in Rust (sizes, inodes, devices) are stored as the same 64 bits in an
//! SQLite `INTEGER` (see `index::to_sql_u64`). Times are milliseconds since the Unix epoch unless
//! the column name says `_ns`.
//!
//! | Table | Key | Columns | Written by |
//! |---|---|---|---|
//! | `meta` | `name` | `value`: `key_format` (`vx-key-4` when created or upgraded), `salt` (32 random bytes, hex), `orphans_swept_at`, `housekept_at` (ms), `generation` (raised by triggers on `entries`), `rewrites:<workspace>\0<task>` (JSON array: inputs the task's last checked run rewrote with the same bytes, KEY-16) | open, retention, triggers, save guard |
//! | `entries` | `key` | `project`, `task`, `size_bytes` (compressed), `created_at`, `accessed_at`, `duration_ms`, `cpu_ms`?, `peak_rss_bytes`?, `origin` (`local`, `remote`, `remote-exec`), `produced`? (the digest of the output tree, `artifact::produced_digest`: what a dependant folds, KEY-9) | save, adoption, touches |
//! | `entry_outputs` | (`key`, `path`) | `size`, `mode`, `mtime_ns`; `key` → `entries` ON DELETE CASCADE; `path` is project-relative, or `workspace-outputs/<root-rel>` | save, adoption |
//! | `output_stamps` | (`workspace`, `key`, `path`) | `size`, `mode`, `mtime_ns`, `inode`, `ctime_ns`: `lstat` right after this checkout saved or restored the file (STORE-9) | after save/restore |
//! | `key_inputs` | (`key`, `kind`, `name`) | `digest`, `recorded_at` (HIST-2) | key derivation |
//! | `file_stamps` | (`workspace`, `path`) | `device`, `inode`, `mtime_ns`, `ctime_ns`, `size`, `mode`, `blob_id`, `seen_at` (KEY-11) | end of run |
//! | `invocations` | `run_id` | `argv` (JSON array), `started_at`, `ended_at`, `exit_code`, `task_count`, `counts` (JSON object: status and cache kind → count), `commit`, `branch`, `dirty`, `ci_provider`, `os`, `arch`, `vx_version`, `concurrency`, `cache_policy` (HIST-1), `replay_of`? (a replayed run: the run whose task rows it repeats) | end of run |
//! | `runs` | `id` (autoincrement) | `run_id` → `invocations` ON DELETE CASCADE, `project`, `task`, `key`?, `status`, `cache`, `placement`, `exit_code`?, `duration_ms`, `cpu_ms`?, `peak_rss_bytes`?, `start_offset_ms`, `end_offset_ms`, `attempts`, `timed_out`, `not_ready` (0, or why a persistent task never became ready: 1 exited, 2 timed out, 3 no shell, 4 unneeded), `blocked_by`?, `sandbox_violations`, `admission_held_ms`, `saved`, `unsaved_reason`? (HIST-1), `prev_id`? (the task's previous row), `restore_reason`? (a restored hit: the output that was missing or changed), `output_tail`? (a failed task's last lines of output) | end of run |
//! | `task_latest` | (`project`, `task`) | `last_id`: the task's newest `runs` row | end of run |
//! | `passed_keys` | (`project`, `task`, `key`) | `first_id`: the first `success` row with that key (EXEC-16) | end of run |
//! | `task_recent` | (`project`, `task`) | `durations`, `peaks`: JSON arrays of the milliseconds of the task's last 20 executed successes and the bytes of its last 20 recorded peaks (SCHED-2, SCHED-4; `index/recent.rs`) | end of run |
//!
//! Version 2 added `runs_failed` and `runs_passed`, partial indexes of failed and successful
//! rows, so that the flaky-key check (EXEC-16) reads the failures and, for each, seeks one
//! earlier success with the same key, instead of walking the task's whole history per failure.
//!
//! Version 3 indexes `runs` by task without an index keyed by task. A run appends one row per
//! task, and any index ordered by task takes one entry in every part of itself per run: with a
//! few thousand tasks each run rewrote the whole of each such index (a 1,000-project run that
//! found everything up to date spent 65 ms writing its history, a quarter of its time). Rows
//! now only go at the end (`id` order, and `runs_by_run`, whose entries for one run are
//! together); a task's rows are a chain from `task_latest.last_id` through `prev_id`, and
//! `passed_keys` answers the flaky check. The two small tables take one row per task and per
//! task-and-key, updated in place. `runs_failed` stays: only failures go into it.
//!
//! Version 4 adds `task_recent`, each task's last executions, so that a run reads the
//! scheduler's estimates for every task in one statement.
//!
//! Version 5 adds `runs.restore_reason`: why a hit was restored rather than up to date (the
//! output that was missing or changed), for `vx why`.
//!
//! Version 6 adds what a run snapshot (`vx-engine/src/snapshot.rs`) checks: `meta.generation`, a
//! number two triggers raise whenever an entry is deleted (pruned, found damaged) or saved
//! again over an older body (`size_bytes` or `created_at` updated), so that a snapshot taken
//! before knows an entry it relied on may have changed; and `invocations.replay_of`, the run a
//! replayed run repeats (its task rows are that run's).
//!
//! Version 7 adds `entries.produced`, the digest of each entry's output tree, which a
//! dependant's key folds instead of the upstream's key (KEY-9's early cutoff), and
//! `entries_by_task`, so `--dry` finds a task's newest digest without a scan. A version 4, 5 or
//! 6 index is upgraded in place ([`upgrade`]), keeping its entries and history (entries of the
//! older key format keep no digest; no key of this format names them).
//!
//! Version 8 adds `runs.output_tail`: the last lines of a failed task's output, so that `vx
//! last` (and `vx mcp`'s `last`) show why it failed without running it again. A version 4 to 7
//! index is upgraded in place.
//!
//! An index with an older `user_version` (or `0` with tables in it) is rebuilt by a writing
//! open: every table is dropped and recreated in one `BEGIN IMMEDIATE` transaction (artifacts are
//! re-adopted on demand, STORE-8). A newer version is never touched.

use rusqlite::Transaction;

/// The schema version this vx reads and writes.
pub(crate) const VERSION: u32 = 8;

/// `meta.key_format`.
pub(crate) const KEY_FORMAT: &str = "vx-key-4";

const CREATE: &str = "
CREATE TABLE meta (
    name  TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE entries (
    key            TEXT PRIMARY KEY NOT NULL,
    project        TEXT NOT NULL,
    task           TEXT NOT NULL,
    size_bytes     INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    accessed_at    INTEGER NOT NULL,
    duration_ms    INTEGER NOT NULL DEFAULT 0,
    cpu_ms         INTEGER,
    peak_rss_bytes INTEGER,
    origin         TEXT NOT NULL DEFAULT 'local',
    produced       TEXT
);
CREATE INDEX entries_by_access ON entries (accessed_at);
CREATE INDEX entries_by_task ON entries (project, task, created_at);

CREATE TABLE entry_outputs (
    key      TEXT NOT NULL REFERENCES entries (key) ON DELETE CASCADE,
    path     TEXT NOT NULL,
    size     INTEGER NOT NULL,
    mode     INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    PRIMARY KEY (key, path)
) WITHOUT ROWID;

CREATE TABLE output_stamps (
    workspace TEXT NOT NULL,
    key       TEXT NOT NULL,
    path      TEXT NOT NULL,
    size      INTEGER NOT NULL,
    mode      INTEGER NOT NULL,
    mtime_ns  INTEGER NOT NULL,
    inode     INTEGER NOT NULL,
    ctime_ns  INTEGER NOT NULL,
    PRIMARY KEY (workspace, key, path)
) WITHOUT ROWID;
CREATE INDEX output_stamps_by_key ON output_stamps (key);

CREATE TABLE key_inputs (
    key         TEXT NOT NULL,
    kind        TEXT NOT NULL,
    name        TEXT NOT NULL,
    digest      TEXT NOT NULL,
    recorded_at INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (key, kind, name)
) WITHOUT ROWID;

CREATE TABLE file_stamps (
    workspace TEXT NOT NULL,
    path      TEXT NOT NULL,
    device    INTEGER NOT NULL,
    inode     INTEGER NOT NULL,
    mtime_ns  INTEGER NOT NULL,
    ctime_ns  INTEGER NOT NULL,
    size      INTEGER NOT NULL,
    mode      INTEGER NOT NULL,
    blob_id   TEXT NOT NULL,
    seen_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace, path)
) WITHOUT ROWID;

CREATE TABLE invocations (
    run_id       TEXT PRIMARY KEY NOT NULL,
    argv         TEXT NOT NULL DEFAULT '[]',
    started_at   INTEGER NOT NULL,
    ended_at     INTEGER NOT NULL,
    exit_code    INTEGER NOT NULL,
    task_count   INTEGER NOT NULL DEFAULT 0,
    counts       TEXT NOT NULL DEFAULT '{}',
    \"commit\"   TEXT,
    branch       TEXT,
    dirty        INTEGER,
    ci_provider  TEXT,
    os           TEXT NOT NULL DEFAULT '',
    arch         TEXT NOT NULL DEFAULT '',
    vx_version   TEXT NOT NULL DEFAULT '',
    concurrency  INTEGER NOT NULL DEFAULT 0,
    cache_policy TEXT NOT NULL DEFAULT '',
    replay_of    TEXT
) WITHOUT ROWID;
CREATE INDEX invocations_by_start ON invocations (started_at);

CREATE TABLE runs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id             TEXT NOT NULL REFERENCES invocations (run_id) ON DELETE CASCADE,
    project            TEXT NOT NULL,
    task               TEXT NOT NULL,
    key                TEXT,
    status             TEXT NOT NULL,
    cache              TEXT NOT NULL DEFAULT '',
    placement          TEXT,
    exit_code          INTEGER,
    duration_ms        INTEGER NOT NULL DEFAULT 0,
    cpu_ms             INTEGER,
    peak_rss_bytes     INTEGER,
    start_offset_ms    INTEGER NOT NULL DEFAULT 0,
    end_offset_ms      INTEGER NOT NULL DEFAULT 0,
    attempts           INTEGER NOT NULL DEFAULT 1,
    timed_out          INTEGER NOT NULL DEFAULT 0,
    not_ready          INTEGER NOT NULL DEFAULT 0,
    blocked_by         TEXT,
    sandbox_violations INTEGER NOT NULL DEFAULT 0,
    admission_held_ms  INTEGER NOT NULL DEFAULT 0,
    saved              INTEGER NOT NULL DEFAULT 0,
    unsaved_reason     TEXT,
    prev_id            INTEGER,
    restore_reason     TEXT,
    output_tail        TEXT
);
CREATE INDEX runs_by_run ON runs (run_id);
CREATE INDEX runs_failed ON runs (project, task, key, id) WHERE status = 'failed';

CREATE TABLE task_latest (
    project TEXT NOT NULL,
    task    TEXT NOT NULL,
    last_id INTEGER NOT NULL,
    PRIMARY KEY (project, task)
) WITHOUT ROWID;

CREATE TABLE passed_keys (
    project  TEXT NOT NULL,
    task     TEXT NOT NULL,
    key      TEXT NOT NULL,
    first_id INTEGER NOT NULL,
    PRIMARY KEY (project, task, key)
) WITHOUT ROWID;

CREATE TABLE task_recent (
    project   TEXT NOT NULL,
    task      TEXT NOT NULL,
    durations TEXT NOT NULL DEFAULT '[]',
    peaks     TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (project, task)
) WITHOUT ROWID;
";

/// Version 6's additions, also applied in place to a version 5 index: the entries'
/// generation (see the module documentation).
const GENERATION: &str = "
INSERT OR IGNORE INTO meta (name, value) VALUES ('generation', '0');
CREATE TRIGGER entries_deleted AFTER DELETE ON entries BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE name = 'generation';
END;
CREATE TRIGGER entries_resaved AFTER UPDATE OF size_bytes, created_at ON entries BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE name = 'generation';
END;
";

/// Version 4, 5, 6 or 7 → 8 in place: columns, triggers and an index more, nothing lost.
pub(crate) fn upgrade(tx: &Transaction<'_>, found: u32) -> rusqlite::Result<()> {
    if found == 4 {
        tx.execute_batch("ALTER TABLE runs ADD COLUMN restore_reason TEXT")?;
    }
    if found < 6 {
        tx.execute_batch("ALTER TABLE invocations ADD COLUMN replay_of TEXT")?;
        tx.execute_batch(GENERATION)?;
    }
    if found < 7 {
        tx.execute_batch(
            "ALTER TABLE entries ADD COLUMN produced TEXT;
             CREATE INDEX entries_by_task ON entries (project, task, created_at);",
        )?;
    }
    tx.execute_batch("ALTER TABLE runs ADD COLUMN output_tail TEXT")?;
    tx.pragma_update(None, "user_version", VERSION)?;
    Ok(())
}

/// Drops every table and view (whatever schema wrote them) and creates version [`VERSION`].
/// Runs inside the caller's `BEGIN IMMEDIATE` transaction, with foreign keys off so that the
/// drop order of an unknown older schema does not matter.
pub(crate) fn rebuild(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    let objects: Vec<(String, String)> = {
        let mut stmt = tx.prepare(
            "SELECT type, name FROM sqlite_master
             WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
        )?;
        let rows = stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for (kind, name) in objects {
        let kind = if kind == "view" { "VIEW" } else { "TABLE" };
        let quoted = name.replace('"', "\"\"");
        tx.execute_batch(&format!("DROP {kind} IF EXISTS \"{quoted}\""))?;
    }
    tx.execute_batch(CREATE)?;
    tx.execute_batch(GENERATION)?;
    tx.pragma_update(None, "user_version", VERSION)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    #[test]
    fn a_version_5_index_is_upgraded_in_place_with_its_entries_and_a_working_generation() {
        let mut conn = Connection::open_in_memory().unwrap();
        let tx = conn.transaction().unwrap();
        rebuild(&tx).unwrap();
        tx.commit().unwrap();
        // Version 5 as it was: no generation, no triggers, no `replay_of`.
        conn.execute_batch(
            "DROP TRIGGER entries_deleted; DROP TRIGGER entries_resaved;
             DELETE FROM meta WHERE name = 'generation';
             ALTER TABLE invocations DROP COLUMN replay_of;
             DROP INDEX entries_by_task; ALTER TABLE entries DROP COLUMN produced;
             ALTER TABLE runs DROP COLUMN output_tail;
             PRAGMA user_version = 5;
             INSERT INTO entries (key, project, task, size_bytes, created_at, accessed_at)
                 VALUES ('k', 'p', 't', 1, 2, 3);",
        )
        .unwrap();
        let tx = conn.transaction().unwrap();
        upgrade(&tx, 5).unwrap();
        tx.commit().unwrap();
        let count: i64 = conn
            .query_row("SELECT COUNT(*) FROM entries", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, 1, "entries kept");
        let generation = |conn: &Connection| -> String {
            conn.query_row(
                "SELECT value FROM meta WHERE name = 'generation'",
                [],
                |r| r.get(0),
            )
            .unwrap()
        };
        assert_eq!(generation(&conn), "0");
        conn.execute("DELETE FROM entries WHERE key = 'k'", [])
            .unwrap();
        assert_eq!(generation(&conn), "1");
        conn.execute(
            "INSERT INTO invocations (run_id, started_at, ended_at, exit_code, replay_of)
             VALUES ('r', 1, 2, 0, 'q')",
            [],
        )
        .unwrap();
        // Version 7's column.
        conn.execute(
            "INSERT INTO entries (key, project, task, size_bytes, created_at, accessed_at, produced)
             VALUES ('k2', 'p', 't', 1, 2, 3, 'abc')",
            [],
        )
        .unwrap();
    }

    #[test]
    fn rebuild_replaces_an_unknown_older_schema() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE entries (key TEXT PRIMARY KEY, junk TEXT);
             CREATE TABLE old_thing (x INTEGER PRIMARY KEY AUTOINCREMENT);
             INSERT INTO old_thing (x) VALUES (7);
             CREATE VIEW v AS SELECT * FROM old_thing;",
        )
        .unwrap();
        let tx = conn.transaction().unwrap();
        rebuild(&tx).unwrap();
        tx.commit().unwrap();
        let version: u32 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, VERSION);
        let mut names: Vec<String> = conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        names.sort();
        assert_eq!(
            names,
            [
                "entries",
                "entry_outputs",
                "file_stamps",
                "invocations",
                "key_inputs",
                "meta",
                "output_stamps",
                "passed_keys",
                "runs",
                "task_latest",
                "task_recent"
            ]
        );
        // The new `entries` has the normative columns.
        conn.execute(
            "INSERT INTO entries (key, project, task, size_bytes, created_at, accessed_at)
             VALUES ('k', 'p', 't', 1, 2, 3)",
            [],
        )
        .unwrap();
    }
}
