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
use rusqlite::{params, Connection};

use super::recent::HIT_WORDS;
use super::runs::{run_row, RunRow, RUN_COLUMNS};
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

/// Rows per multi-row `INSERT` (23 parameters each, far below SQLite's limit of 32,766). A
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
    restore_reason, output_tail";

fn row_values(run_id: &str, r: &RunRow) -> [Value; 23] {
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
        opt_text(&r.output_tail),
    ]
}

/// Appends rows of one run in one statement.
fn insert_rows(tx: &Connection, run_id: &str, rows: &[&RunRow]) -> rusqlite::Result<()> {
    let one = format!("({})", vec!["?"; 23].join(", "));
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
mod tests;
