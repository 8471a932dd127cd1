//! The recent executions of each task (`task_recent`), which the scheduler's estimates come
//! from (SCHED-2, SCHED-4).
//!
//! How this works: `runs` keeps every row, but a task's rows are a chain through `prev_id`, so
//! reading the last twenty executions of every task in a run would be thousands of lookups
//! before anything starts. Instead [`Store::record_run`] keeps, per task, the durations of its
//! last [`RECENT_RUNS`] executed successful runs and the peak RSS of its last [`RECENT_RUNS`]
//! executed runs that recorded one (a run served from the cache changes neither), and a run
//! reads them all in one statement ([`Store::recent_executions`]). Retention deletes `runs`
//! rows, never these summaries: a task's estimate is its latest executions, however old.

use std::collections::HashMap;

use rusqlite::{params, Connection};

use super::runs::RunRow;
use super::{read, Store, StoreError};

/// The `runs.cache` words that mean a hit (restored kinds in both the short and long spelling).
pub(super) const HIT_WORDS: &str =
    "('up-to-date', 'local', 'remote', 'restored-local', 'restored-remote')";

/// How many executions a task's estimates look back over (SCHED-2, SCHED-4).
pub const RECENT_RUNS: usize = 20;

/// What the last executions of one task recorded, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recent {
    /// Durations of executed successful runs, in milliseconds.
    pub durations_ms: Vec<u64>,
    /// Peak RSS of executed runs that recorded one, in bytes.
    pub peaks_bytes: Vec<u64>,
}

impl Store {
    /// Every task's recent executions, by `(project, task)`.
    pub fn recent_executions(&self) -> Result<HashMap<(String, String), Recent>, StoreError> {
        read(self, |conn| {
            let mut stmt =
                conn.prepare_cached("SELECT project, task, durations, peaks FROM task_recent")?;
            let rows = stmt.query_map([], |row| {
                Ok((
                    (row.get(0)?, row.get(1)?),
                    Recent {
                        durations_ms: parse(row.get_ref(2)?.as_str()?),
                        peaks_bytes: parse(row.get_ref(3)?.as_str()?),
                    },
                ))
            })?;
            rows.collect()
        })
    }
}

/// Adds the executions among the rows of `run_id` with an id above `after` (the rows just
/// inserted) to their tasks' summaries, in one statement inside `record_run`'s transaction.
/// Each summary is a JSON array, oldest first; a run adds at most one value to each, so at
/// most one falls off the front. A row written again (a kept persistent task that ended
/// later) is not added twice: it is not above `after`.
pub(super) fn remember(tx: &Connection, run_id: &str, after: i64) -> rusqlite::Result<()> {
    let append = |column: &str| {
        format!(
            "CASE WHEN excluded.{column} = '[]' THEN task_recent.{column}
                  WHEN json_array_length(task_recent.{column}) >= {RECENT_RUNS}
                  THEN json_insert(json_remove(task_recent.{column}, '$[0]'), '$[#]',
                                   excluded.{column} ->> 0)
                  ELSE json_insert(task_recent.{column}, '$[#]', excluded.{column} ->> 0) END"
        )
    };
    let sql = format!(
        "INSERT INTO task_recent (project, task, durations, peaks)
         SELECT project, task,
                CASE WHEN status = 'success' THEN json_array(duration_ms) ELSE '[]' END,
                CASE WHEN peak_rss_bytes IS NULL THEN '[]' ELSE json_array(peak_rss_bytes) END
         FROM runs
         WHERE run_id = ?1 AND id > ?2 AND status IN ('success', 'failed')
           AND cache NOT IN {HIT_WORDS}
           AND (status = 'success' OR peak_rss_bytes IS NOT NULL)
         ON CONFLICT (project, task) DO UPDATE SET durations = {}, peaks = {}",
        append("durations"),
        append("peaks")
    );
    tx.prepare_cached(&sql)?.execute(params![run_id, after])?;
    Ok(())
}

/// Whether a row feeds the summaries: the task executed (its result did not come from a
/// cache) and succeeded or recorded a peak. The same test as `remember`'s SQL.
pub(super) fn executed(row: &RunRow) -> bool {
    let hit = HIT_WORDS.contains(&format!("'{}'", row.cache));
    matches!(row.status.as_str(), "success" | "failed")
        && !hit
        && (row.status == "success" || row.peak_rss_bytes.is_some())
}

/// A JSON array of numbers; anything else reads as empty.
fn parse(text: &str) -> Vec<u64> {
    serde_json::from_str(text).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{Access, Invocation};

    fn row(task: &str, status: &str, cache: &str, duration_ms: u64, peak: Option<u64>) -> RunRow {
        RunRow {
            project: "web".into(),
            task: task.into(),
            status: status.into(),
            cache: cache.into(),
            duration_ms,
            peak_rss_bytes: peak,
            ..RunRow::default()
        }
    }

    fn invocation(run_id: &str) -> Invocation {
        Invocation {
            run_id: run_id.into(),
            ..Invocation::default()
        }
    }

    #[test]
    fn only_executions_feed_the_summaries() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        store
            .record_run(
                &invocation("a"),
                &[
                    row("build", "success", "miss", 100, Some(1000)),
                    row("test", "failed", "no-cache", 7, Some(3000)),
                    row("lint", "success", "up-to-date", 50, None),
                    row("e2e", "skipped", "", 0, None),
                ],
            )
            .unwrap();
        store
            .record_run(
                &invocation("b"),
                &[
                    row("build", "success", "local", 1, Some(9)),
                    row("test", "success", "miss", 30, None),
                ],
            )
            .unwrap();
        let recent = store.recent_executions().unwrap();
        let of = |task: &str| recent.get(&("web".to_string(), task.to_string())).cloned();
        assert_eq!(
            of("build"),
            Some(Recent {
                durations_ms: vec![100],
                peaks_bytes: vec![1000]
            }),
            "a restore changes nothing"
        );
        assert_eq!(
            of("test"),
            Some(Recent {
                durations_ms: vec![30],
                peaks_bytes: vec![3000]
            }),
            "a failure's peak counts, its duration does not"
        );
        assert_eq!(of("lint"), None);
        assert_eq!(of("e2e"), None);
    }

    #[test]
    fn a_summary_keeps_the_last_twenty_executions() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        for n in 1..=25u64 {
            store
                .record_run(
                    &invocation(&format!("r{n}")),
                    &[row("build", "success", "miss", n, Some(n * 10))],
                )
                .unwrap();
        }
        let recent = store.recent_executions().unwrap();
        let build = &recent[&("web".to_string(), "build".to_string())];
        assert_eq!(build.durations_ms, (6..=25).collect::<Vec<u64>>());
        assert_eq!(
            build.peaks_bytes,
            (6..=25).map(|n| n * 10).collect::<Vec<u64>>()
        );
        assert_eq!(parse("not json"), Vec::<u64>::new());
    }
}
