//! Whole runs read back from history (`vx last`, HIST-4): the invocations, newest first, and
//! the task rows of one run.

use rusqlite::{params, OptionalExtension, Row};

use super::runs::{run_row, RUN_COLUMNS};
use super::{from_sql_u64, read, Invocation, RunRow, Store, StoreError};

const INVOCATION_COLUMNS: &str = "run_id, argv, started_at, ended_at, exit_code, task_count,
    counts, \"commit\", branch, dirty, ci_provider, os, arch, vx_version, concurrency, cache_policy,
    replay_of";

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
        replay_of: row.get(16)?,
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

    /// The task rows of run `run_id`, in the order they were written; a replayed run's are
    /// those of the run it repeats.
    pub fn run_rows(&self, run_id: &str) -> Result<Vec<RunRow>, StoreError> {
        read(self, |conn| {
            let repeated: Option<String> = conn
                .prepare_cached("SELECT replay_of FROM invocations WHERE run_id = ?1")?
                .query_row([run_id], |row| row.get(0))
                .optional()?
                .flatten();
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM runs r JOIN invocations i ON i.run_id = r.run_id
                 WHERE r.run_id = ?1 ORDER BY r.id"
            ))?;
            let rows = stmt.query_map([repeated.as_deref().unwrap_or(run_id)], run_row)?;
            rows.collect()
        })
    }

    /// Records a replayed run (`invocation.replay_of` set): its invocation row alone, and the
    /// entries the repeated run's tasks used marked as used now — at most once an hour each,
    /// so that a replay writes nothing else most of the time.
    pub fn record_replay(&mut self, invocation: &Invocation) -> Result<(), StoreError> {
        self.record_run(invocation, &[])?;
        let Some(repeated) = invocation.replay_of.as_deref() else {
            return Ok(());
        };
        let now = super::now_ms();
        super::write_tx(self, |tx, _| {
            tx.prepare_cached(
                "UPDATE entries SET accessed_at = ?1
                 WHERE key IN (SELECT key FROM runs WHERE run_id = ?2 AND key IS NOT NULL)
                     AND accessed_at < ?1 - ?3",
            )?
            .execute(params![now, repeated, super::MARKED_USED_EVERY_MS])?;
            Ok(())
        })
    }

    /// What a run snapshot checks of the store: the salt (a new one when the index was
    /// rebuilt), the entries' generation, and whether run `run_id` is still recorded.
    pub fn snapshot_state(&self, run_id: &str) -> Result<Option<(String, i64)>, StoreError> {
        let salt = super::open::hex(&self.salt);
        read(self, |conn| {
            let generation: Option<String> = conn
                .prepare_cached("SELECT value FROM meta WHERE name = 'generation'")?
                .query_row([], |row| row.get(0))
                .optional()?;
            let known = conn
                .prepare_cached("SELECT 1 FROM invocations WHERE run_id = ?1")?
                .query_row([run_id], |_| Ok(()))
                .optional()?
                .is_some();
            Ok(generation
                .and_then(|g| g.parse().ok())
                .filter(|_| known)
                .map(|g| (salt, g)))
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

    #[test]
    fn a_replayed_run_reads_the_rows_of_the_run_it_repeats_and_touches_their_entries() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        let key = crate::index::tests::key(1);
        crate::index::tests::save(&mut store, &key, "body");
        crate::index::tests::set_accessed(&store, &key, 1_000);
        let now = crate::index::now_ms();
        let row = RunRow {
            project: "web".into(),
            task: "build".into(),
            key: Some(key.clone()),
            status: "success".into(),
            cache: "up-to-date".into(),
            ..RunRow::default()
        };
        store
            .record_run(&invocation("first", now - 20, 0), &[row])
            .unwrap();
        let replay = Invocation {
            replay_of: Some("first".into()),
            ..invocation("again", now - 10, 0)
        };
        store.record_replay(&replay).unwrap();
        assert_eq!(store.invocation("again").unwrap().unwrap(), replay);
        let rows = store.run_rows("again").unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].key.as_deref(), Some(key.as_str()));
        assert_eq!(rows[0].started_at, now - 20, "the repeated run's rows");
        let accessed: i64 = store
            .conn
            .as_ref()
            .unwrap()
            .query_row(
                "SELECT accessed_at FROM entries WHERE key = ?1",
                [&key],
                |r| r.get(0),
            )
            .unwrap();
        assert!(accessed >= now, "touched: {accessed}");
        let (salt, generation) = store.snapshot_state("first").unwrap().unwrap();
        assert_eq!(salt.len(), 64);
        assert_eq!(store.snapshot_state("missing").unwrap(), None);
        // A touch is not a change of the entry; a deletion is. What the store read at open
        // stays, so a run can tell that entries changed while it went on.
        assert_eq!(store.generation_at_open(), Some(generation));
        store.forget(&[key.as_str()], true).unwrap();
        assert_eq!(
            store.snapshot_state("first").unwrap().unwrap().1,
            generation + 1
        );
        assert_eq!(store.generation_at_open(), Some(generation));
        drop(store);
        let reopened = Store::open(dir.path(), Access::ReadWrite).unwrap();
        assert_eq!(reopened.generation_at_open(), Some(generation + 1));
    }

    #[test]
    fn saving_an_entry_again_raises_the_generation_and_a_new_entry_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        store
            .record_run(&invocation("r", crate::index::now_ms(), 0), &[])
            .unwrap();
        let start = store_generation(&store);
        crate::index::tests::save(&mut store, &crate::index::tests::key(1), "one");
        crate::index::tests::save(&mut store, &crate::index::tests::key(2), "two");
        assert_eq!(
            store_generation(&store),
            start,
            "new entries change nothing a snapshot relied on"
        );
        crate::index::tests::set_accessed(&store, &crate::index::tests::key(1), 5);
        assert_eq!(
            store_generation(&store),
            start,
            "an access time is not the entry"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
        crate::index::tests::save(&mut store, &crate::index::tests::key(1), "one again");
        assert_eq!(store_generation(&store), start + 1);
    }

    fn store_generation(store: &Store) -> i64 {
        store.snapshot_state("r").unwrap().unwrap().1
    }

    #[test]
    fn history_keeps_an_old_run_that_a_kept_replay_repeats() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        let now = crate::index::now_ms();
        let day = 24 * 60 * 60 * 1000;
        let replay = Invocation {
            replay_of: Some("old".into()),
            ..invocation("replay", now - 1, 0)
        };
        store.record_replay(&replay).unwrap();
        // Housekeeping just ran: these two stay until it is due again.
        for (id, age) in [("old", 40), ("older", 41)] {
            store
                .record_run(&invocation(id, now - age * day, 0), &[])
                .unwrap();
        }
        store.meta.housekept_at = None;
        store.record_run(&invocation("new", now, 0), &[]).unwrap();
        let mut ids = store.all_run_ids().unwrap();
        ids.sort();
        assert_eq!(ids, ["new", "old", "replay"]);
    }
}
