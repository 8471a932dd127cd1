//! The history tables' tests: recording runs and keys, reading them back, housekeeping.

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

/// A store with one recorded run of `web#build`, made what an older vx wrote by `older` (SQL
/// that takes the newer schema's parts out), then opened again (upgraded in place): the one row
/// of history, kept, and the store, to record more.
fn upgraded_from(older: &str) -> (tempfile::TempDir, Store, Vec<RunRow>) {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
        store
            .record_run(
                &invocation("0193-a", now_ms()),
                &[run("web", "build", "k1")],
            )
            .unwrap();
    }
    let db = rusqlite::Connection::open(dir.path().join(crate::index::DB_FILE)).unwrap();
    db.execute_batch(older).unwrap();
    drop(db);
    let store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let rows = store.task_runs("web", "build", 10).unwrap();
    assert_eq!(rows.len(), 1, "history kept");
    (dir, store, rows)
}

/// Schema 4 → 5 is an `ALTER TABLE`: history (and everything else) survives the upgrade,
/// and the new `restore_reason` round-trips.
#[test]
fn a_version_4_index_is_upgraded_in_place() {
    // What vx of schema 4 wrote: none of the later columns, triggers or index.
    let (_dir, mut store, rows) = upgraded_from(
        "ALTER TABLE runs DROP COLUMN restore_reason;
         ALTER TABLE runs DROP COLUMN output_tail;
         ALTER TABLE invocations DROP COLUMN replay_of;
         DROP INDEX entries_by_task; ALTER TABLE entries DROP COLUMN produced;
         DROP TRIGGER entries_deleted; DROP TRIGGER entries_resaved;
         DELETE FROM meta WHERE name = 'generation';
         PRAGMA user_version = 4;",
    );
    assert_eq!(rows[0].restore_reason, None);
    let mut restored = run("web", "build", "k1");
    restored.restore_reason = Some("`dist/a.js` was missing".into());
    store
        .record_run(&invocation("0193-b", now_ms() + 1), &[restored])
        .unwrap();
    let rows = store.task_runs("web", "build", 10).unwrap();
    assert_eq!(
        rows[0].restore_reason.as_deref(),
        Some("`dist/a.js` was missing")
    );
}

/// Schema 7 → 8 is an `ALTER TABLE`: history survives, and a failed task's output tail
/// round-trips.
#[test]
fn a_version_7_index_gains_the_output_tail_in_place() {
    let (_dir, mut store, rows) =
        upgraded_from("ALTER TABLE runs DROP COLUMN output_tail; PRAGMA user_version = 7;");
    assert_eq!(rows[0].output_tail, None);
    let mut failed = run("web", "build", "k1");
    failed.status = "failed".into();
    failed.output_tail = Some("error TS2304: Cannot find name 'x'.".into());
    store
        .record_run(&invocation("0193-b", now_ms() + 1), &[failed])
        .unwrap();
    let rows = store.task_runs("web", "build", 10).unwrap();
    assert_eq!(
        rows[0].output_tail.as_deref(),
        Some("error TS2304: Cannot find name 'x'.")
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
fn outcome(project: &str, task: &str, key: Option<&str>, status: &str, attempts: u32) -> RunRow {
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
    let count = |task: &str, key: &str| store.key_failures_after_pass("web", task, key).unwrap();
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
