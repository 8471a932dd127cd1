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

use rusqlite::types::Value;
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
    /// A replayed run (a run snapshot found nothing moved): the run whose task rows it repeats.
    /// Such a run has no rows of its own; [`Store::run_rows`] reads the repeated run's.
    pub replay_of: Option<String>,
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
    /// A persistent task that never became ready, and why: 0 ready (or not persistent),
    /// 1 it exited, 2 it timed out, 3 no shell ran, 4 vx stopped it as unneeded.
    pub not_ready: u8,
    pub blocked_by: Option<String>,
    pub sandbox_violations: u64,
    pub admission_held_ms: u64,
    pub saved: bool,
    pub unsaved_reason: Option<String>,
    /// A restored hit: why its outputs were not up to date (the one missing or changed).
    pub restore_reason: Option<String>,
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
pub(super) const HIT_WORDS: &str =
    "('up-to-date', 'local', 'remote', 'restored-local', 'restored-remote')";

/// EXEC-16's key rule on a `runs` row `f`: it failed, and an earlier row of the same task
/// passed with the same key (`=` is never true for a NULL key).
const FAILED_AFTER_PASS: &str = "f.status = 'failed' AND EXISTS (
    SELECT 1 FROM passed_keys p WHERE p.project = f.project AND p.task = f.task
        AND p.key = f.key AND p.first_id < f.id)";

/// The ids of one task's rows, newest first: the chain from `task_latest` through `prev_id`
/// (schema 3). `?1` is the project, `?2` the task, `?3` the most rows to follow.
const CHAIN: &str = "WITH RECURSIVE chain(id, n) AS (
    SELECT last_id, 1 FROM task_latest WHERE project = ?1 AND task = ?2
    UNION ALL
    SELECT r.prev_id, chain.n + 1 FROM chain JOIN runs r ON r.id = chain.id
        WHERE r.prev_id IS NOT NULL AND chain.n < ?3)";

pub(super) const RUN_COLUMNS: &str =
    "r.id, r.run_id, i.started_at, r.project, r.task, r.key, r.status,
    r.cache, r.placement, r.exit_code, r.duration_ms, r.cpu_ms, r.peak_rss_bytes,
    r.start_offset_ms, r.end_offset_ms, r.attempts, r.timed_out, r.not_ready, r.blocked_by,
    r.sandbox_violations, r.admission_held_ms, r.saved, r.unsaved_reason, r.restore_reason";

pub(super) fn run_row(row: &Row<'_>) -> rusqlite::Result<RunRow> {
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
        restore_reason: row.get(23)?,
    })
}

impl Store {
    /// Replaces the `key_inputs` rows of `key`.
    pub fn record_key_inputs(
        &mut self,
        key: &str,
        components: &[KeyComponent],
    ) -> Result<(), StoreError> {
        self.record_keys_inputs(&[(key.to_string(), components.to_vec())])
    }

    /// [`Store::record_key_inputs`] of many keys in one transaction and a few statements (the
    /// end of a run that derived thousands of keys).
    pub fn record_keys_inputs(
        &mut self,
        keys: &[(String, Vec<KeyComponent>)],
    ) -> Result<(), StoreError> {
        if keys.is_empty() {
            return Ok(());
        }
        let now = now_ms();
        let written = write_tx(self, |tx, _| {
            for chunk in keys.chunks(KEYS_PER_DELETE) {
                let sql = format!(
                    "DELETE FROM key_inputs WHERE key IN ({})",
                    vec!["?"; chunk.len()].join(", ")
                );
                tx.prepare_cached(&sql)?
                    .execute(rusqlite::params_from_iter(chunk.iter().map(|(k, _)| k)))?;
            }
            let rows: Vec<(&str, &KeyComponent)> = keys
                .iter()
                .flat_map(|(key, components)| components.iter().map(|c| (key.as_str(), c)))
                .collect();
            for chunk in rows.chunks(COMPONENTS_PER_INSERT) {
                let sql = format!(
                    "INSERT OR REPLACE INTO key_inputs (key, kind, name, digest, recorded_at)
                     VALUES {}",
                    vec!["(?, ?, ?, ?, ?)"; chunk.len()].join(", ")
                );
                let values: Vec<Value> = chunk
                    .iter()
                    .flat_map(|(key, c)| {
                        [
                            Value::Text(key.to_string()),
                            Value::Text(c.kind.clone()),
                            Value::Text(c.name.clone()),
                            Value::Text(c.digest.clone()),
                            Value::Integer(now),
                        ]
                    })
                    .collect();
                tx.prepare_cached(&sql)?
                    .execute(rusqlite::params_from_iter(values))?;
            }
            Ok(())
        });
        self.forget_bulk_statements();
        written
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
        let written = write_tx(self, |tx, meta| {
            let inv = invocation;
            // Usually none: a run is recorded again only when a kept persistent task ends later.
            let earlier: BTreeMap<(String, String), i64> = {
                let mut stmt =
                    tx.prepare_cached("SELECT project, task, id FROM runs WHERE run_id = ?1")?;
                let found = stmt.query_map([&inv.run_id], |row| {
                    Ok(((row.get(0)?, row.get(1)?), row.get(2)?))
                })?;
                found.collect::<rusqlite::Result<_>>()?
            };
            tx.prepare_cached(
                // An upsert, not `OR REPLACE`: replacing would delete the run's rows (ON
                // DELETE CASCADE) and break the chains of later runs through them.
                "INSERT INTO invocations (run_id, argv, started_at, ended_at, exit_code,
                     task_count, counts, \"commit\", branch, dirty, ci_provider, os, arch,
                     vx_version, concurrency, cache_policy, replay_of)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                     ?17)
                 ON CONFLICT (run_id) DO UPDATE SET argv = excluded.argv,
                     started_at = excluded.started_at, ended_at = excluded.ended_at,
                     exit_code = excluded.exit_code, task_count = excluded.task_count,
                     counts = excluded.counts, \"commit\" = excluded.\"commit\",
                     branch = excluded.branch, dirty = excluded.dirty,
                     ci_provider = excluded.ci_provider, os = excluded.os, arch = excluded.arch,
                     vx_version = excluded.vx_version, concurrency = excluded.concurrency,
                     cache_policy = excluded.cache_policy, replay_of = excluded.replay_of",
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
                inv.cache_policy,
                inv.replay_of
            ])?;
            let (again, new): (Vec<&RunRow>, Vec<&RunRow>) = rows
                .iter()
                .partition(|r| earlier.contains_key(&(r.project.clone(), r.task.clone())));
            if !earlier.is_empty() {
                rerecord(tx, &inv.run_id, &earlier, &again)?;
            }
            for chunk in new.chunks(ROWS_PER_INSERT) {
                insert_rows(tx, &inv.run_id, chunk)?;
            }
            if !rows.is_empty() {
                link_rows(tx, &inv.run_id)?;
            }
            if new.iter().any(|r| super::recent::executed(r)) {
                let after = earlier.values().copied().max().unwrap_or(0);
                super::recent::remember(tx, &inv.run_id, after)?;
            }
            housekeep_if_due(tx, meta, now)
        });
        self.forget_bulk_statements();
        written
    }

    /// Drops the cached statements, the multi-row ones with them: a statement of
    /// [`ROWS_PER_INSERT`] rows holds thousands of parameters, and at 10,000 tasks the cached
    /// ones held about 12 MB until the end of the run. They are cached for the chunks of one
    /// call; the small statements prepared again after this cost microseconds.
    fn forget_bulk_statements(&self) {
        if let Some(conn) = &self.conn {
            conn.flush_prepared_statement_cache();
        }
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
                "{CHAIN} SELECT {RUN_COLUMNS} FROM chain JOIN runs r ON r.id = chain.id
                     JOIN invocations i ON i.run_id = r.run_id
                 ORDER BY r.id DESC LIMIT ?3"
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
                "{CHAIN} SELECT {RUN_COLUMNS} FROM chain JOIN runs r ON r.id = chain.id
                     JOIN invocations i ON i.run_id = r.run_id
                 WHERE r.id <= (
                     SELECT max(x.id) FROM chain c JOIN runs x ON x.id = c.id
                     WHERE substr(replace(x.run_id, '-', ''), 1, length(?4)) = ?4)
                 ORDER BY r.id DESC LIMIT ?5"
            ))?;
            let prefix = run_prefix.replace('-', "");
            let rows = stmt.query_map(params![project, task, i64::MAX, prefix, limit], run_row)?;
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
                "SELECT project FROM task_latest WHERE task = ?1 ORDER BY project",
            )?;
            let rows = stmt.query_map([task], |row| row.get(0))?;
            rows.collect()
        })
    }
}

/// Rows per multi-row `INSERT` (22 parameters each, far below SQLite's limit of 32,766). A
/// prepared statement's memory grows with its parameters, and one is alive while the history is
/// written at the end of a run, its peak; a hundred rows per statement is still few statements.
const ROWS_PER_INSERT: usize = 100;
/// Keys per `DELETE … IN (…)` and key components per multi-row `INSERT` (5 parameters each):
/// these statements are written every 500 keys and dropped after each write.
const KEYS_PER_DELETE: usize = 500;
const COMPONENTS_PER_INSERT: usize = 1000;

/// The `runs` columns a writer sets, in the order of [`row_values`].
const INSERT_COLUMNS: &str = "run_id, project, task, key, status, cache, placement, exit_code,
    duration_ms, cpu_ms, peak_rss_bytes, start_offset_ms, end_offset_ms, attempts, timed_out,
    not_ready, blocked_by, sandbox_violations, admission_held_ms, saved, unsaved_reason,
    restore_reason";

fn row_values(run_id: &str, r: &RunRow) -> [Value; 22] {
    let text = |s: &str| Value::Text(s.to_string());
    let opt_text = |s: &Option<String>| s.as_deref().map_or(Value::Null, text);
    let int = |v: i64| Value::Integer(v);
    let opt_u64 = |v: Option<u64>| v.map_or(Value::Null, |v| int(to_sql_u64(v)));
    [
        text(run_id),
        text(&r.project),
        text(&r.task),
        opt_text(&r.key),
        text(&r.status),
        text(&r.cache),
        opt_text(&r.placement),
        r.exit_code.map_or(Value::Null, |c| int(i64::from(c))),
        int(to_sql_u64(r.duration_ms)),
        opt_u64(r.cpu_ms),
        opt_u64(r.peak_rss_bytes),
        int(to_sql_u64(r.start_offset_ms)),
        int(to_sql_u64(r.end_offset_ms)),
        int(i64::from(r.attempts)),
        int(i64::from(r.timed_out)),
        int(i64::from(r.not_ready)),
        opt_text(&r.blocked_by),
        int(to_sql_u64(r.sandbox_violations)),
        int(to_sql_u64(r.admission_held_ms)),
        int(i64::from(r.saved)),
        opt_text(&r.unsaved_reason),
        opt_text(&r.restore_reason),
    ]
}

/// Appends rows of one run in one statement.
fn insert_rows(tx: &Connection, run_id: &str, rows: &[&RunRow]) -> rusqlite::Result<()> {
    let one = format!("({})", vec!["?"; 22].join(", "));
    let sql = format!(
        "INSERT INTO runs ({INSERT_COLUMNS}) VALUES {}",
        vec![one.as_str(); rows.len()].join(", ")
    );
    let values: Vec<Value> = rows.iter().flat_map(|r| row_values(run_id, r)).collect();
    tx.prepare_cached(&sql)?
        .execute(rusqlite::params_from_iter(values))?;
    Ok(())
}

/// Threads the rows just written for `run_id` into their tasks' chains: each new row's
/// `prev_id` is its task's latest row so far (a row written again keeps its own), then the
/// newest becomes the latest; a success is its key's first unless an earlier one is known
/// (EXEC-16). Three statements, whatever the number of rows.
fn link_rows(tx: &Connection, run_id: &str) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "UPDATE runs SET prev_id = (
             SELECT t.last_id FROM task_latest t
             WHERE t.project = runs.project AND t.task = runs.task AND t.last_id < runs.id)
         WHERE run_id = ?1 AND prev_id IS NULL",
    )?
    .execute([run_id])?;
    tx.prepare_cached(
        "INSERT INTO task_latest (project, task, last_id)
         SELECT project, task, max(id) FROM runs WHERE run_id = ?1 GROUP BY project, task
         ON CONFLICT (project, task) DO UPDATE SET last_id = max(last_id, excluded.last_id)",
    )?
    .execute([run_id])?;
    tx.prepare_cached(
        "INSERT OR IGNORE INTO passed_keys (project, task, key, first_id)
         SELECT project, task, key, min(id) FROM runs
         WHERE run_id = ?1 AND status = 'success' AND key IS NOT NULL
         GROUP BY project, task, key",
    )?
    .execute([run_id])?;
    Ok(())
}

/// A run recorded again (a kept persistent task ended after the first record): its rows are
/// rewritten in place, so their ids, and the chains of later runs through them, stay valid;
/// rows it no longer has are unlinked and deleted.
fn rerecord(
    tx: &Connection,
    run_id: &str,
    earlier: &BTreeMap<(String, String), i64>,
    again: &[&RunRow],
) -> rusqlite::Result<()> {
    let set: Vec<String> = INSERT_COLUMNS
        .split(',')
        .map(str::trim)
        .enumerate()
        .map(|(i, column)| format!("{column} = ?{}", i + 1))
        .collect();
    let sql = format!(
        "UPDATE runs SET {} WHERE id = ?{}",
        set.join(", "),
        set.len() + 1
    );
    let mut update = tx.prepare_cached(&sql)?;
    let mut kept = std::collections::BTreeSet::new();
    for r in again {
        let id = earlier[&(r.project.clone(), r.task.clone())];
        kept.insert(id);
        let mut values = row_values(run_id, r).to_vec();
        values.push(Value::Integer(id));
        update.execute(rusqlite::params_from_iter(values))?;
    }
    for &id in earlier.values().filter(|id| !kept.contains(id)) {
        // A later run's row of the same task goes on to the row before this one.
        tx.execute(
            "UPDATE runs SET prev_id = (SELECT prev_id FROM runs WHERE id = ?1)
             WHERE prev_id = ?1",
            [id],
        )?;
        tx.execute("DELETE FROM runs WHERE id = ?1", [id])?;
    }
    if kept.len() < earlier.len() {
        rebuild_task_latest(tx)?;
    }
    // Outcomes and keys may have changed anywhere in the task's history order: each key's first
    // success is found again. A rare path (a kept server's late exit), so a full pass is fine.
    rebuild_passed_keys(tx)
}

/// Every task's newest row, found again from `runs`.
fn rebuild_task_latest(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute("DELETE FROM task_latest", [])?;
    conn.execute(
        "INSERT INTO task_latest (project, task, last_id)
         SELECT project, task, max(id) FROM runs GROUP BY project, task",
        [],
    )?;
    Ok(())
}

/// Every key's first success, found again from `runs`.
fn rebuild_passed_keys(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute("DELETE FROM passed_keys", [])?;
    conn.execute(
        "INSERT INTO passed_keys (project, task, key, first_id)
         SELECT project, task, key, min(id) FROM runs
         WHERE status = 'success' AND key IS NOT NULL GROUP BY project, task, key",
        [],
    )?;
    Ok(())
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
    // `runs` rows go with their invocation (ON DELETE CASCADE); a chain through a deleted row
    // ends there. The tables that point into `runs` follow: a task with no rows left has no
    // latest, and each key's first success is found again among the rows that are left.
    // (Invocations are deleted by start time and rows are chained in the order runs were
    // recorded, so a long run recorded late can leave a gap: a task's chain then ends there,
    // and its latest row is found again from what is left.)
    // A run that a kept replayed run repeats stays: the replay's rows are its rows.
    let deleted = conn.execute(
        "DELETE FROM invocations WHERE started_at < ?1 AND run_id NOT IN
             (SELECT replay_of FROM invocations WHERE replay_of IS NOT NULL
                 AND started_at >= ?1)",
        [bound],
    )?;
    if deleted > 0 {
        rebuild_task_latest(conn)?;
        rebuild_passed_keys(conn)?;
    }
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
    fn many_keys_are_recorded_in_one_transaction_of_few_statements() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        store
            .record_key_inputs("k0", &[component("format", "", "old")])
            .unwrap();
        // 1,500 keys of 3 components: more than one DELETE and one INSERT chunk (3 deletes of
        // 500 keys, 5 inserts of 1,000 components).
        let keys: Vec<(String, Vec<KeyComponent>)> = (0..1500)
            .map(|n| {
                let components = vec![
                    component("format", "", "1"),
                    component("input", &format!("src/{n}.txt"), &format!("d{n}")),
                    component("env", "CI", "e"),
                ];
                (format!("k{n}"), components)
            })
            .collect();
        let before = store.statements();
        store.record_keys_inputs(&keys).unwrap();
        assert!(
            store.statements() - before < 12,
            "{}",
            store.statements() - before
        );
        // k0's old row was replaced, not kept beside the new ones.
        let k0 = store.key_inputs("k0").unwrap().unwrap();
        assert_eq!(k0.len(), 3);
        assert!(k0.contains(&component("format", "", "1")));
        let mut k1499 = keys[1499].1.clone();
        k1499.sort();
        assert_eq!(store.key_inputs("k1499").unwrap(), Some(k1499));
    }

    /// Schema 4 → 5 is an `ALTER TABLE`: history (and everything else) survives the upgrade,
    /// and the new `restore_reason` round-trips.
    #[test]
    fn a_version_4_index_is_upgraded_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let now = now_ms();
        {
            let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
            store
                .record_run(&invocation("0193-a", now), &[run("web", "build", "k1")])
                .unwrap();
        }
        // Make it what vx of schema 4 wrote: no column, user_version 4.
        let db = rusqlite::Connection::open(dir.path().join(crate::index::DB_FILE)).unwrap();
        db.execute_batch(
            "ALTER TABLE runs DROP COLUMN restore_reason;
             ALTER TABLE invocations DROP COLUMN replay_of;
             DROP TRIGGER entries_deleted; DROP TRIGGER entries_resaved;
             DELETE FROM meta WHERE name = 'generation';
             PRAGMA user_version = 4;",
        )
        .unwrap();
        drop(db);
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        let rows = store.task_runs("web", "build", 10).unwrap();
        assert_eq!(rows.len(), 1, "history kept");
        assert_eq!(rows[0].restore_reason, None);
        let mut restored = run("web", "build", "k1");
        restored.restore_reason = Some("`dist/a.js` was missing".into());
        store
            .record_run(&invocation("0193-b", now + 1), &[restored])
            .unwrap();
        let rows = store.task_runs("web", "build", 10).unwrap();
        assert_eq!(
            rows[0].restore_reason.as_deref(),
            Some("`dist/a.js` was missing")
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

    #[test]
    fn housekeeping_finds_each_keys_first_success_again_among_the_rows_left() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        let now = now_ms();
        store.meta.housekept_at = Some(now);
        let old = now - KEEP_MS - 10;
        // k1 passed long ago and again recently; k2 passed only long ago.
        record_each(
            &mut store,
            old,
            &[
                outcome("web", "build", Some("k1"), "success", 1),
                outcome("web", "build", Some("k2"), "success", 1),
            ],
        );
        record_each(
            &mut store,
            now - 100,
            &[outcome("web", "build", Some("k1"), "success", 1)],
        );
        store.meta.housekept_at = Some(now - DAY_MS - 1);
        record_each(
            &mut store,
            now - 50,
            &[
                outcome("web", "build", Some("k1"), "failed", 1),
                outcome("web", "build", Some("k2"), "failed", 1),
            ],
        );
        assert_eq!(store.task_runs("web", "build", 10).unwrap().len(), 3);
        // k1 still passed before its failure; k2's only pass is gone with its run.
        assert_eq!(
            store.key_failures_after_pass("web", "build", "k1").unwrap(),
            1
        );
        assert_eq!(
            store.key_failures_after_pass("web", "build", "k2").unwrap(),
            0
        );
    }

    #[test]
    fn a_run_recorded_again_keeps_the_chains_of_later_runs_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        let now = now_ms();
        let a = [run("web", "build", "k1"), run("web", "serve", "k1")];
        store.record_run(&invocation("a", now - 20), &a).unwrap();
        store
            .record_run(&invocation("b", now - 10), &[run("web", "build", "k2")])
            .unwrap();
        // `a` is recorded again after `b` (its kept server ended), with a new outcome for
        // build and without serve.
        let mut again = outcome("web", "build", Some("k1"), "failed", 1);
        again.exit_code = Some(3);
        store
            .record_run(&invocation("a", now - 20), &[again])
            .unwrap();
        let rows = store.task_runs("web", "build", 10).unwrap();
        let runs: Vec<&str> = rows.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(runs, ["b", "a"]);
        assert_eq!(rows[1].status, "failed");
        assert_eq!(rows[1].exit_code, Some(3));
        assert!(store.task_runs("web", "serve", 10).unwrap().is_empty());
        assert!(store.tasks_with_runs("serve").unwrap().is_empty());
        // k1's only success was rewritten as a failure: nothing passed before it.
        assert_eq!(
            store.key_failures_after_pass("web", "build", "k1").unwrap(),
            0
        );
        let from = store.task_runs_from("web", "build", "a", 10).unwrap();
        assert_eq!(from.len(), 1);
        assert_eq!(from[0].run_id, "a");
    }

    #[test]
    fn a_row_dropped_by_a_record_again_leaves_the_rows_around_it_chained() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        let now = now_ms();
        let serve = |key: &str| outcome("web", "serve", Some(key), "success", 1);
        store
            .record_run(&invocation("z", now - 30), &[serve("k0")])
            .unwrap();
        store
            .record_run(
                &invocation("a", now - 20),
                &[run("web", "build", "k1"), serve("k1")],
            )
            .unwrap();
        // `b` passes with k1 too, after `a`.
        store
            .record_run(&invocation("b", now - 10), &[serve("k1")])
            .unwrap();
        // `a` again, without serve: b's row now follows z's.
        store
            .record_run(&invocation("a", now - 20), &[run("web", "build", "k1")])
            .unwrap();
        let rows = store.task_runs("web", "serve", 10).unwrap();
        let runs: Vec<&str> = rows.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(runs, ["b", "z"]);
        // k1's first success is now b's row: a failure after it counts, one before it would not.
        store
            .record_run(
                &invocation("c", now),
                &[outcome("web", "serve", Some("k1"), "failed", 1)],
            )
            .unwrap();
        assert_eq!(
            store.key_failures_after_pass("web", "serve", "k1").unwrap(),
            1
        );
    }

    #[test]
    fn a_run_of_many_tasks_is_a_few_statements() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        let rows: Vec<RunRow> = (0..1200)
            .map(|n| run(&format!("p{n}"), "build", &format!("k{n}")))
            .collect();
        store
            .record_run(&invocation("a", now_ms() - 5), &rows)
            .unwrap();
        let before = store.statements();
        store.record_run(&invocation("b", now_ms()), &rows).unwrap();
        // Look-up, invocation, twelve inserts of at most 100 rows, three linking statements,
        // and the transaction's own; not one per row.
        assert!(
            store.statements() - before < 25,
            "{}",
            store.statements() - before
        );
        let latest = store.task_runs("p7", "build", 10).unwrap();
        let runs: Vec<&str> = latest.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(runs, ["b", "a"]);
    }
}
