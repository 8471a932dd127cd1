//! Whole runs read back from history (`vx last`, HIST-4): the invocations, newest first, and
//! the task rows of one run.

use rusqlite::{params, OptionalExtension, Row};

use super::history::{run_row, RUN_COLUMNS};
use super::{from_sql_u64, read, Invocation, RunRow, Store, StoreError};

const INVOCATION_COLUMNS: &str = "run_id, argv, started_at, ended_at, exit_code, task_count,
    counts, \"commit\", branch, dirty, ci_provider, os, arch, vx_version, concurrency, cache_policy";

fn invocation(row: &Row<'_>) -> rusqlite::Result<Invocation> {
    let argv: String = row.get(1)?;
    let counts: String = row.get(6)?;
    Ok(Invocation {
        run_id: row.get(0)?,
        argv: serde_json::from_str(&argv).unwrap_or_default(),
        started_at: row.get(2)?,
        ended_at: row.get(3)?,
        exit_code: row.get(4)?,
        task_count: from_sql_u64(row.get(5)?),
        counts: serde_json::from_str(&counts).unwrap_or_default(),
        commit: row.get(7)?,
        branch: row.get(8)?,
        dirty: row.get(9)?,
        ci_provider: row.get(10)?,
        os: row.get(11)?,
        arch: row.get(12)?,
        vx_version: row.get(13)?,
        concurrency: row.get(14)?,
        cache_policy: row.get(15)?,
    })
}

impl Store {
    /// The latest invocations, newest first, at most `limit`; only failed ones with
    /// `failed_only`.
    pub fn invocations(
        &self,
        limit: usize,
        failed_only: bool,
    ) -> Result<Vec<Invocation>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        read(self, |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {INVOCATION_COLUMNS} FROM invocations
                 WHERE (?1 = 0 OR exit_code != 0)
                 ORDER BY started_at DESC, run_id DESC LIMIT ?2"
            ))?;
            let rows = stmt.query_map(params![failed_only, limit], invocation)?;
            rows.collect()
        })
    }

    /// The invocation `run_id`, if recorded.
    pub fn invocation(&self, run_id: &str) -> Result<Option<Invocation>, StoreError> {
        read(self, |conn| {
            conn.prepare_cached(&format!(
                "SELECT {INVOCATION_COLUMNS} FROM invocations WHERE run_id = ?1"
            ))?
            .query_row([run_id], invocation)
            .optional()
        })
    }

    /// Every recorded run id (for the shortest unique prefixes).
    pub fn all_run_ids(&self) -> Result<Vec<String>, StoreError> {
        read(self, |conn| {
            let mut stmt = conn.prepare_cached("SELECT run_id FROM invocations")?;
            let rows = stmt.query_map([], |row| row.get(0))?;
            rows.collect()
        })
    }

    /// The task rows of run `run_id`, in the order they were written.
    pub fn run_rows(&self, run_id: &str) -> Result<Vec<RunRow>, StoreError> {
        read(self, |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM runs r JOIN invocations i ON i.run_id = r.run_id
                 WHERE r.run_id = ?1 ORDER BY r.id"
            ))?;
            let rows = stmt.query_map([run_id], run_row)?;
            rows.collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Access;

    fn invocation(run_id: &str, started_at: i64, exit_code: i32) -> Invocation {
        Invocation {
            run_id: run_id.into(),
            argv: vec!["vx".into(), "run".into()],
            started_at,
            ended_at: started_at + 5,
            exit_code,
            task_count: 1,
            counts: [("success".to_owned(), 1)].into(),
            commit: Some("abc".into()),
            branch: Some("main".into()),
            ..Invocation::default()
        }
    }

    #[test]
    fn runs_read_back_newest_first_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        let row = |task: &str| RunRow {
            project: "web".into(),
            task: task.into(),
            status: "success".into(),
            duration_ms: 7,
            ..RunRow::default()
        };
        let now = crate::index::now_ms();
        store
            .record_run(&invocation("a", now - 30, 0), &[row("build"), row("test")])
            .unwrap();
        store
            .record_run(&invocation("b", now - 20, 1), &[row("build")])
            .unwrap();
        store
            .record_run(&invocation("c", now - 10, 0), &[row("lint")])
            .unwrap();
        let ids = |list: Vec<Invocation>| list.into_iter().map(|i| i.run_id).collect::<Vec<_>>();
        assert_eq!(ids(store.invocations(10, false).unwrap()), ["c", "b", "a"]);
        assert_eq!(ids(store.invocations(2, false).unwrap()), ["c", "b"]);
        assert_eq!(ids(store.invocations(10, true).unwrap()), ["b"]);
        let a = store.invocation("a").unwrap().unwrap();
        assert_eq!(a, invocation("a", now - 30, 0));
        assert_eq!(store.invocation("zz").unwrap(), None);
        let rows = store.run_rows("a").unwrap();
        let tasks: Vec<&str> = rows.iter().map(|r| r.task.as_str()).collect();
        assert_eq!(tasks, ["build", "test"]);
        assert_eq!(rows[0].started_at, now - 30);
        let mut all = store.all_run_ids().unwrap();
        all.sort();
        assert_eq!(all, ["a", "b", "c"]);
    }
}
