//! History: `invocations` and `runs` (HIST-1) and key fingerprints in `key_inputs` (HIST-2).
//!
//! A run is written once, at its end, in one transaction ([`Store::record_run`]); `vx why`
//! reads it back newest first ([`Store::task_runs`]). Rows older than 30 days, and file stamps
//! unseen for as long, are deleted at most once a day by whichever end-of-run write comes first
//! (`housekeep_if_due`).
//!
//! EXEC-16's second flaky rule reads the same rows: a task's key is *flaky* when a `failed` row
//! with that key comes after (higher `id`) its first `success` row with that key
//! ([`Store::key_failures_after_pass`], or [`Store::keys_failed_after_pass`] for a whole run in
//! one statement); `vx info` lists the tasks flaky by either rule ([`Store::flaky_tasks_since`]).

use std::collections::BTreeMap;

use rusqlite::{params, Connection, Row};

use super::{from_sql_u64, now_ms, read, set_meta, to_sql_u64, write_tx, Meta, Store, StoreError};

const DAY_MS: i64 = 24 * 60 * 60 * 1000;
/// How long history rows and unseen file stamps are kept.
const KEEP_MS: i64 = 30 * DAY_MS;

/// One per-component fingerprint of a key (HIST-2): `kind` is `format`, `platform`,
/// `workspace`, `manifest`, `config`, `args`, `env`, `runtime`, `ws-runtime`, `upstream` or
/// `input`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct KeyComponent {
    pub kind: String,
    pub name: String,
    pub digest: String,
}

/// One `invocations` row (HIST-1). Times are milliseconds since the Unix epoch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Invocation {
    /// UUIDv7.
    pub run_id: String,
    /// Masked argv; stored as a JSON array.
    pub argv: Vec<String>,
    pub started_at: i64,
    pub ended_at: i64,
    pub exit_code: i32,
    pub task_count: u64,
    /// Count per status and per cache kind; stored as a JSON object.
    pub counts: BTreeMap<String, u64>,
    pub commit: Option<String>,
    pub branch: Option<String>,
    pub dirty: Option<bool>,
    pub ci_provider: Option<String>,
    pub os: String,
    pub arch: String,
    pub vx_version: String,
    pub concurrency: u32,
    pub cache_policy: String,
}

/// One `runs` row (HIST-1). On write, `id` and `started_at` are ignored (the row id is
/// assigned, `started_at` is the invocation's); on read they are filled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunRow {
    pub id: i64,
    pub run_id: String,
    pub started_at: i64,
    pub project: String,
    pub task: String,
    pub key: Option<String>,
    pub status: String,
    pub cache: String,
    pub placement: Option<String>,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub cpu_ms: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
    pub start_offset_ms: u64,
    pub end_offset_ms: u64,
    pub attempts: u32,
    pub timed_out: bool,
    pub not_ready: bool,
    pub blocked_by: Option<String>,
    pub sandbox_violations: u64,
    pub admission_held_ms: u64,
    pub saved: bool,
    pub unsaved_reason: Option<String>,
}

/// What history holds about a recent period (`vx info`, HIST-6).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecentCounts {
    /// `invocations` that started in the period.
    pub runs: u64,
    /// Their `runs` rows (one per non-group task).
    pub tasks: u64,
    /// Rows served from a cache: up-to-date, or restored from a local or remote layer.
    pub hits: u64,
}

/// The `runs.cache` words that mean a hit (restored kinds in both the short and long spelling).
const HIT_WORDS: &str = "('up-to-date', 'local', 'remote', 'restored-local', 'restored-remote')";

/// EXEC-16's key rule on a `runs` row `f`: it failed, and an earlier row of the same task
/// passed with the same key (`=` is never true for a NULL key).
const FAILED_AFTER_PASS: &str = "f.status = 'failed' AND EXISTS (
    SELECT 1 FROM runs p WHERE p.project = f.project AND p.task = f.task AND p.key = f.key
        AND p.status = 'success' AND p.id < f.id)";

const RUN_COLUMNS: &str = "r.id, r.run_id, i.started_at, r.project, r.task, r.key, r.status,
    r.cache, r.placement, r.exit_code, r.duration_ms, r.cpu_ms, r.peak_rss_bytes,
    r.start_offset_ms, r.end_offset_ms, r.attempts, r.timed_out, r.not_ready, r.blocked_by,
    r.sandbox_violations, r.admission_held_ms, r.saved, r.unsaved_reason";

fn run_row(row: &Row<'_>) -> rusqlite::Result<RunRow> {
    let u64_at = |i: usize| row.get::<_, i64>(i).map(from_sql_u64);
    let opt_u64_at = |i: usize| row.get::<_, Option<i64>>(i).map(|v| v.map(from_sql_u64));
    Ok(RunRow {
        id: row.get(0)?,
        run_id: row.get(1)?,
        started_at: row.get(2)?,
        project: row.get(3)?,
        task: row.get(4)?,
        key: row.get(5)?,
        status: row.get(6)?,
        cache: row.get(7)?,
        placement: row.get(8)?,
        exit_code: row.get(9)?,
        duration_ms: u64_at(10)?,
        cpu_ms: opt_u64_at(11)?,
        peak_rss_bytes: opt_u64_at(12)?,
        start_offset_ms: u64_at(13)?,
        end_offset_ms: u64_at(14)?,
        attempts: row.get(15)?,
        timed_out: row.get(16)?,
        not_ready: row.get(17)?,
        blocked_by: row.get(18)?,
        sandbox_violations: u64_at(19)?,
        admission_held_ms: u64_at(20)?,
        saved: row.get(21)?,
        unsaved_reason: row.get(22)?,
    })
}

impl Store {
    /// Replaces the `key_inputs` rows of `key`.
    pub fn record_key_inputs(
        &mut self,
        key: &str,
        components: &[KeyComponent],
    ) -> Result<(), StoreError> {
        let now = now_ms();
        write_tx(self, |tx, _| {
            tx.prepare_cached("DELETE FROM key_inputs WHERE key = ?1")?
                .execute([key])?;
            let mut insert = tx.prepare_cached(
                "INSERT OR REPLACE INTO key_inputs (key, kind, name, digest, recorded_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for c in components {
                insert.execute(params![key, c.kind, c.name, c.digest, now])?;
            }
            Ok(())
        })
    }

    /// The recorded components of `key`, sorted by kind and name; `None` when none were recorded.
    pub fn key_inputs(&self, key: &str) -> Result<Option<Vec<KeyComponent>>, StoreError> {
        let rows: Vec<KeyComponent> = read(self, |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT kind, name, digest FROM key_inputs WHERE key = ?1 ORDER BY kind, name",
            )?;
            let rows = stmt.query_map([key], |row| {
                Ok(KeyComponent {
                    kind: row.get(0)?,
                    name: row.get(1)?,
                    digest: row.get(2)?,
                })
            })?;
            rows.collect()
        })?;
        Ok((!rows.is_empty()).then_some(rows))
    }

    /// Writes one invocation and its task rows in one transaction. Recording the same `run_id`
    /// again replaces both (a kept persistent task's later exit rewrites its row).
    pub fn record_run(
        &mut self,
        invocation: &Invocation,
        rows: &[RunRow],
    ) -> Result<(), StoreError> {
        let argv = serde_json::to_string(&invocation.argv).unwrap_or_else(|_| "[]".into());
        let counts = serde_json::to_string(&invocation.counts).unwrap_or_else(|_| "{}".into());
        let now = now_ms();
        write_tx(self, |tx, meta| {
            let inv = invocation;
            tx.prepare_cached("DELETE FROM runs WHERE run_id = ?1")?
                .execute([&inv.run_id])?;
            tx.prepare_cached(
                "INSERT OR REPLACE INTO invocations (run_id, argv, started_at, ended_at, exit_code,
                     task_count, counts, \"commit\", branch, dirty, ci_provider, os, arch,
                     vx_version, concurrency, cache_policy)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
            )?
            .execute(params![
                inv.run_id,
                argv,
                inv.started_at,
                inv.ended_at,
                inv.exit_code,
                to_sql_u64(inv.task_count),
                counts,
                inv.commit,
                inv.branch,
                inv.dirty,
                inv.ci_provider,
                inv.os,
                inv.arch,
                inv.vx_version,
                inv.concurrency,
                inv.cache_policy
            ])?;
            let mut insert = tx.prepare_cached(
                "INSERT INTO runs (run_id, project, task, key, status, cache, placement, exit_code,
                     duration_ms, cpu_ms, peak_rss_bytes, start_offset_ms, end_offset_ms,
                     attempts, timed_out, not_ready, blocked_by, sandbox_violations,
                     admission_held_ms, saved, unsaved_reason)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                         ?17, ?18, ?19, ?20, ?21)",
            )?;
            for r in rows {
                insert.execute(params![
                    inv.run_id,
                    r.project,
                    r.task,
                    r.key,
                    r.status,
                    r.cache,
                    r.placement,
                    r.exit_code,
                    to_sql_u64(r.duration_ms),
                    r.cpu_ms.map(to_sql_u64),
                    r.peak_rss_bytes.map(to_sql_u64),
                    to_sql_u64(r.start_offset_ms),
                    to_sql_u64(r.end_offset_ms),
                    r.attempts,
                    r.timed_out,
                    r.not_ready,
                    r.blocked_by,
                    to_sql_u64(r.sandbox_violations),
                    to_sql_u64(r.admission_held_ms),
                    r.saved,
                    r.unsaved_reason
                ])?;
            }
            housekeep_if_due(tx, meta, now)
        })
    }

    /// The latest `runs` rows of `project#task`, newest first, at most `limit`.
    pub fn task_runs(
        &self,
        project: &str,
        task: &str,
        limit: usize,
    ) -> Result<Vec<RunRow>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        read(self, |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM runs r JOIN invocations i ON i.run_id = r.run_id
                 WHERE r.project = ?1 AND r.task = ?2 ORDER BY r.id DESC LIMIT ?3"
            ))?;
            let rows = stmt.query_map(params![project, task, limit], run_row)?;
            rows.collect()
        })
    }

    /// Like [`Store::task_runs`], but starting at the newest row of the task whose `run_id`
    /// starts with `run_prefix` (`vx why --run`): that row, then the ones before it. Dashes
    /// are ignored on both sides, so the 12 digits vx prints for a run id are a valid prefix.
    pub fn task_runs_from(
        &self,
        project: &str,
        task: &str,
        run_prefix: &str,
        limit: usize,
    ) -> Result<Vec<RunRow>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        read(self, |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM runs r JOIN invocations i ON i.run_id = r.run_id
                 WHERE r.project = ?1 AND r.task = ?2 AND r.id <= (
                     SELECT max(id) FROM runs WHERE project = ?1 AND task = ?2
                         AND substr(replace(run_id, '-', ''), 1, length(?3)) = ?3)
                 ORDER BY r.id DESC LIMIT ?4"
            ))?;
            let prefix = run_prefix.replace('-', "");
            let rows = stmt.query_map(params![project, task, prefix, limit], run_row)?;
            rows.collect()
        })
    }

    /// The run ids starting with `prefix` (dashes ignored), newest first (to report an
    /// ambiguous `--run`).
    pub fn run_ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let prefix = prefix.replace('-', "");
        read(self, |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT run_id FROM invocations
                 WHERE substr(replace(run_id, '-', ''), 1, length(?1)) = ?1
                 ORDER BY started_at DESC, run_id DESC",
            )?;
            let rows = stmt.query_map([prefix], |row| row.get(0))?;
            rows.collect()
        })
    }

    /// Runs, task rows and hits of the invocations that started at or after `since_ms`
    /// (milliseconds since the Unix epoch). Zeros without an index.
    pub fn recent_counts(&self, since_ms: i64) -> Result<RecentCounts, StoreError> {
        read(self, |conn| {
            let runs: i64 = conn
                .prepare_cached("SELECT COUNT(*) FROM invocations WHERE started_at >= ?1")?
                .query_row([since_ms], |row| row.get(0))?;
            let (tasks, hits): (i64, i64) = conn
                .prepare_cached(&format!(
                    "SELECT COUNT(*), COALESCE(SUM(r.cache IN {HIT_WORDS}), 0)
                     FROM runs r JOIN invocations i ON i.run_id = r.run_id
                     WHERE i.started_at >= ?1"
                ))?
                .query_row([since_ms], |row| Ok((row.get(0)?, row.get(1)?)))?;
            Ok(RecentCounts {
                runs: from_sql_u64(runs),
                tasks: from_sql_u64(tasks),
                hits: from_sql_u64(hits),
            })
        })
    }

    /// EXEC-16: how many `failed` rows of `project#task` with `key` come after its first
    /// `success` row with `key` (0 when it never passed with that key). Rows without a key never
    /// count.
    pub fn key_failures_after_pass(
        &self,
        project: &str,
        task: &str,
        key: &str,
    ) -> Result<u64, StoreError> {
        let failures: i64 = read(self, |conn| {
            conn.prepare_cached(&format!(
                "SELECT COUNT(*) FROM runs f
                 WHERE f.project = ?1 AND f.task = ?2 AND f.key = ?3 AND {FAILED_AFTER_PASS}"
            ))?
            .query_row(params![project, task, key], |row| row.get(0))
        })?;
        Ok(from_sql_u64(failures))
    }

    /// [`Store::key_failures_after_pass`] of every key that has such failures, in one statement:
    /// `(project, task, key)` → failures. A run reads this once rather than once per task, so
    /// that flaky marking costs one SQL statement per run (PERF-3).
    pub fn keys_failed_after_pass(
        &self,
    ) -> Result<BTreeMap<(String, String, String), u64>, StoreError> {
        read(self, |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT f.project, f.task, f.key, COUNT(*) FROM runs f
                 WHERE f.key IS NOT NULL AND {FAILED_AFTER_PASS}
                 GROUP BY f.project, f.task, f.key"
            ))?;
            let rows = stmt.query_map([], |row| {
                Ok((
                    (row.get(0)?, row.get(1)?, row.get(2)?),
                    from_sql_u64(row.get(3)?),
                ))
            })?;
            rows.collect()
        })
    }

    /// EXEC-16 for `vx info`: the tasks, as `(project, task)` sorted, with a row in an invocation
    /// that started at or after `since_ms` that was flaky: a `success` after more than one
    /// attempt, or a `failed` row whose key had passed before.
    pub fn flaky_tasks_since(&self, since_ms: i64) -> Result<Vec<(String, String)>, StoreError> {
        read(self, |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT DISTINCT f.project, f.task
                 FROM runs f JOIN invocations i ON i.run_id = f.run_id
                 WHERE i.started_at >= ?1
                     AND ((f.status = 'success' AND f.attempts > 1) OR {FAILED_AFTER_PASS})
                 ORDER BY f.project, f.task"
            ))?;
            let rows = stmt.query_map([since_ms], |row| Ok((row.get(0)?, row.get(1)?)))?;
            rows.collect()
        })
    }

    /// The projects that have `runs` rows of a task named `task`, sorted.
    pub fn tasks_with_runs(&self, task: &str) -> Result<Vec<String>, StoreError> {
        read(self, |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT DISTINCT project FROM runs WHERE task = ?1 ORDER BY project",
            )?;
            let rows = stmt.query_map([task], |row| row.get(0))?;
            rows.collect()
        })
    }
}

/// Deletes history older than 30 days, file stamps unseen as long, and key fingerprints no run
/// or entry refers to, unless that was done less than a day ago.
pub(crate) fn housekeep_if_due(
    conn: &Connection,
    meta: &mut Meta,
    now: i64,
) -> rusqlite::Result<()> {
    if meta
        .housekept_at
        .is_some_and(|at| at <= now && now - at < DAY_MS)
    {
        return Ok(());
    }
    let bound = now - KEEP_MS;
    conn.execute("DELETE FROM file_stamps WHERE seen_at < ?1", [bound])?;
    // `runs` rows go with their invocation (ON DELETE CASCADE).
    conn.execute("DELETE FROM invocations WHERE started_at < ?1", [bound])?;
    conn.execute(
        "DELETE FROM key_inputs WHERE recorded_at < ?1
             AND key NOT IN (SELECT key FROM runs WHERE key IS NOT NULL)
             AND key NOT IN (SELECT key FROM entries)",
        [bound],
    )?;
    set_meta(conn, "housekept_at", &now.to_string())?;
    meta.housekept_at = Some(now);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Access;

    fn component(kind: &str, name: &str, digest: &str) -> KeyComponent {
        KeyComponent {
            kind: kind.into(),
            name: name.into(),
            digest: digest.into(),
        }
    }

    fn invocation(run_id: &str, started_at: i64) -> Invocation {
        Invocation {
            run_id: run_id.into(),
            argv: vec!["vx".into(), "run".into(), "build".into()],
            started_at,
            ended_at: started_at + 5,
            counts: [("success".to_owned(), 1)].into(),
            task_count: 1,
            ..Invocation::default()
        }
    }

    fn run(project: &str, task: &str, key: &str) -> RunRow {
        RunRow {
            project: project.into(),
            task: task.into(),
            key: Some(key.into()),
            status: "success".into(),
            cache: "executed".into(),
            exit_code: Some(0),
            duration_ms: 12,
            attempts: 1,
            saved: true,
            ..RunRow::default()
        }
    }

    #[test]
    fn key_inputs_roundtrip_and_replace() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        assert_eq!(store.key_inputs("k").unwrap(), None);
        let first = [
            component("input", "src/a.ts", "100644 aa"),
            component("env", "NODE_ENV", "ff"),
        ];
        store.record_key_inputs("k", &first).unwrap();
        let mut sorted = first.to_vec();
        sorted.sort();
        assert_eq!(store.key_inputs("k").unwrap(), Some(sorted));
        store
            .record_key_inputs("k", &[component("format", "", "1")])
            .unwrap();
        assert_eq!(
            store.key_inputs("k").unwrap(),
            Some(vec![component("format", "", "1")])
        );
    }

    #[test]
    fn runs_come_back_newest_first_with_their_invocation() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        let now = now_ms();
        store
            .record_run(
                &invocation("0193-a", now - 10),
                &[run("web", "build", "k1")],
            )
            .unwrap();
        let mut failed = run("web", "build", "k2");
        failed.status = "failed".into();
        failed.exit_code = Some(2);
        failed.saved = false;
        failed.unsaved_reason = Some("failed".into());
        store
            .record_run(
                &invocation("0193-b", now),
                &[failed.clone(), run("lib", "build", "k3")],
            )
            .unwrap();

        let rows = store.task_runs("web", "build", 10).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].run_id, "0193-b");
        assert_eq!(rows[0].started_at, now);
        assert_eq!(rows[0].key.as_deref(), Some("k2"));
        assert_eq!(rows[0].unsaved_reason.as_deref(), Some("failed"));
        assert_eq!(rows[0].exit_code, Some(2));
        assert!(!rows[0].saved);
        assert_eq!(rows[1].run_id, "0193-a");
        assert!(rows[0].id > rows[1].id);
        assert_eq!(store.task_runs("web", "build", 1).unwrap().len(), 1);

        let from = store.task_runs_from("web", "build", "0193-a", 5).unwrap();
        assert_eq!(from.len(), 1);
        assert_eq!(from[0].run_id, "0193-a");
        assert!(store
            .task_runs_from("web", "build", "zz", 5)
            .unwrap()
            .is_empty());
        assert_eq!(
            store.run_ids_with_prefix("0193").unwrap(),
            ["0193-b", "0193-a"]
        );
        assert_eq!(store.tasks_with_runs("build").unwrap(), ["lib", "web"]);
        assert!(store.tasks_with_runs("test").unwrap().is_empty());

        // Recording a run again replaces its rows.
        store
            .record_run(&invocation("0193-b", now), &[run("web", "build", "k9")])
            .unwrap();
        let rows = store.task_runs("web", "build", 10).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].key.as_deref(), Some("k9"));
        assert!(store.tasks_with_runs("build").unwrap() == ["web"]);
    }

    #[test]
    fn recent_counts_cover_runs_tasks_and_hits_since_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let absent = Store::open(dir.path(), Access::ReadOnly).unwrap();
        assert_eq!(absent.recent_counts(0).unwrap(), RecentCounts::default());
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        let now = now_ms();
        let mut hit = run("lib", "build", "k2");
        hit.cache = "up-to-date".into();
        let mut restored = run("app", "build", "k3");
        restored.cache = "local".into();
        store
            .record_run(&invocation("old", now - DAY_MS - 1), &[hit.clone()])
            .unwrap();
        store
            .record_run(
                &invocation("new", now - 5),
                &[run("web", "build", "k1"), hit, restored],
            )
            .unwrap();
        let counts = store.recent_counts(now - DAY_MS).unwrap();
        assert_eq!(
            counts,
            RecentCounts {
                runs: 1,
                tasks: 3,
                hits: 2
            }
        );
        assert_eq!(store.recent_counts(0).unwrap().runs, 2);
        let read_only = Store::open(dir.path(), Access::ReadOnly).unwrap();
        assert_eq!(read_only.recent_counts(now - DAY_MS).unwrap(), counts);
    }

    /// A row of `project#task` with `status` after `attempts` attempts.
    fn outcome(
        project: &str,
        task: &str,
        key: Option<&str>,
        status: &str,
        attempts: u32,
    ) -> RunRow {
        RunRow {
            key: key.map(Into::into),
            status: status.into(),
            attempts,
            ..run(project, task, "")
        }
    }

    /// Records each row as its own run, in order, `started_at` one millisecond apart from
    /// `from` on.
    fn record_each(store: &mut Store, from: i64, rows: &[RunRow]) {
        for (n, row) in rows.iter().enumerate() {
            let at = from + n as i64;
            store
                .record_run(
                    &invocation(&format!("run-{from}-{n}"), at),
                    std::slice::from_ref(row),
                )
                .unwrap();
        }
    }

    #[test]
    fn key_failures_count_only_failures_after_a_pass_with_the_same_key() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        let web = |key, status| outcome("web", "test", key, status, 1);
        record_each(
            &mut store,
            now_ms() - 100,
            &[
                // k1: pass, fail, pass, fail: two failures after passing.
                web(Some("k1"), "success"),
                web(Some("k1"), "failed"),
                web(Some("k1"), "success"),
                web(Some("k1"), "failed"),
                // k2: fail, then pass: never failed after passing.
                web(Some("k2"), "failed"),
                web(Some("k2"), "success"),
                // k3: the failure before the first pass does not count.
                web(Some("k3"), "failed"),
                web(Some("k3"), "success"),
                web(Some("k3"), "failed"),
                // Rows without a key never match, not even each other.
                web(None, "success"),
                web(None, "failed"),
                // Another task's failure with the same key, and another task name.
                outcome("lib", "test", Some("k2"), "failed", 1),
                outcome("web", "lint", Some("k2"), "failed", 1),
                // Skipped and aborted rows are not failures.
                web(Some("k2"), "skipped"),
                web(Some("k2"), "aborted"),
            ],
        );
        let count =
            |task: &str, key: &str| store.key_failures_after_pass("web", task, key).unwrap();
        assert_eq!(count("test", "k1"), 2);
        assert_eq!(count("test", "k2"), 0);
        assert_eq!(count("test", "k3"), 1);
        assert_eq!(count("test", "k4"), 0);
        assert_eq!(count("lint", "k2"), 0);
        assert_eq!(
            store.key_failures_after_pass("lib", "test", "k2").unwrap(),
            0
        );

        // The whole-run form gives the same counts, and only the keys that have some.
        let all = store.keys_failed_after_pass().unwrap();
        let key = |task: &str, key: &str| ("web".to_owned(), task.to_owned(), key.to_owned());
        assert_eq!(all, [(key("test", "k1"), 2), (key("test", "k3"), 1)].into());

        // A later pass with k2 makes a later failure count.
        record_each(
            &mut store,
            now_ms(),
            &[web(Some("k2"), "success"), web(Some("k2"), "failed")],
        );
        assert_eq!(
            store.key_failures_after_pass("web", "test", "k2").unwrap(),
            1
        );
        assert_eq!(store.keys_failed_after_pass().unwrap().len(), 3);

        // Without an index there is no history.
        let absent = tempfile::tempdir().unwrap();
        let absent = Store::open(absent.path(), Access::ReadOnly).unwrap();
        assert_eq!(
            absent.key_failures_after_pass("web", "test", "k1").unwrap(),
            0
        );
        assert!(absent.keys_failed_after_pass().unwrap().is_empty());
    }

    #[test]
    fn flaky_tasks_are_retried_passes_and_key_failures_within_the_period() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        let now = now_ms();
        // Keep the old rows this test needs: housekeeping ran a moment ago.
        store.meta.housekept_at = Some(now);
        let since = now - KEEP_MS;
        record_each(
            &mut store,
            since - 100,
            &[
                // Before the period: a retried pass, and a pass of the key that fails later.
                outcome("old", "test", Some("o"), "success", 3),
                outcome("web", "e2e", Some("e"), "success", 1),
                outcome("web", "e2e", Some("e"), "failed", 1),
            ],
        );
        assert!(store.flaky_tasks_since(since).unwrap().is_empty());
        record_each(
            &mut store,
            since,
            &[
                // A pass that needed a retry.
                outcome("lib", "test", Some("l"), "success", 2),
                // A failure whose key passed before the period.
                outcome("web", "e2e", Some("e"), "failed", 1),
                // Fail, then pass: not flaky.
                outcome("app", "build", Some("a"), "failed", 1),
                outcome("app", "build", Some("a"), "success", 1),
                // A failure after retries is not a pass.
                outcome("app", "lint", Some("b"), "failed", 3),
                // Rows without a key.
                outcome("app", "test", None, "success", 1),
                outcome("app", "test", None, "failed", 1),
                // Passed with one key, failed with another.
                outcome("lib", "build", Some("x"), "success", 1),
                outcome("lib", "build", Some("y"), "failed", 1),
                // Listed once, however many flaky rows.
                outcome("lib", "test", Some("l"), "success", 3),
            ],
        );
        let flaky = store.flaky_tasks_since(since).unwrap();
        let pair = |p: &str, t: &str| (p.to_owned(), t.to_owned());
        assert_eq!(flaky, [pair("lib", "test"), pair("web", "e2e")]);
        assert_eq!(
            store.flaky_tasks_since(since - 100).unwrap(),
            [pair("lib", "test"), pair("old", "test"), pair("web", "e2e")]
        );
        assert!(store.flaky_tasks_since(now + 1).unwrap().is_empty());
        let read_only = Store::open(dir.path(), Access::ReadOnly).unwrap();
        assert_eq!(read_only.flaky_tasks_since(since).unwrap(), flaky);
    }

    #[test]
    fn history_older_than_thirty_days_is_deleted_once_a_day() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        let now = now_ms();
        store.meta.housekept_at = Some(now);
        store
            .record_run(
                &invocation("old", now - KEEP_MS - 1),
                &[run("web", "build", "k1")],
            )
            .unwrap();
        // Housekeeping was done less than a day ago: the old run stays for now.
        assert_eq!(store.task_runs("web", "build", 10).unwrap().len(), 1);
        store.meta.housekept_at = Some(now - DAY_MS - 1);
        store
            .record_run(&invocation("new", now), &[run("web", "build", "k2")])
            .unwrap();
        let rows = store.task_runs("web", "build", 10).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].run_id, "new");
    }
}
