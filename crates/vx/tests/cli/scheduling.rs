//! Memory-aware admission (SCHED-4) on the real binary: tasks that allocate real memory, their
//! peaks recorded by one run and used by the next, checked from the start and end times the
//! run recorded in history.

use vx_test_support::process::test_child_path;

use crate::one_project;

/// Three tasks that each allocate and touch 1 GiB and hold it a while, and a small one.
fn three_big_tasks() -> vx_test_support::fixture::Fixture {
    let child = test_child_path().display().to_string();
    let big = |name: &str| format!("[tasks.{name}]\ncommand = \"{child} alloc 1024 sleep 0.6\"\n");
    one_project(&format!(
        "{}{}{}[tasks.small]\ncommand = \"{child} sleep 0.6\"\n",
        big("big1"),
        big("big2"),
        big("big3")
    ))
}

/// `(task, start, end)` in milliseconds from the start of the latest recorded run.
fn latest_run(f: &vx_test_support::fixture::Fixture) -> Vec<(String, u64, u64)> {
    let db = rusqlite::Connection::open(f.path(".vx/cache.db")).expect("the index");
    let mut stmt = db
        .prepare(
            "SELECT task, start_offset_ms, end_offset_ms FROM runs
             WHERE run_id = (SELECT run_id FROM invocations ORDER BY started_at DESC, rowid DESC LIMIT 1)
             ORDER BY task",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get::<_, i64>(1)? as u64,
                r.get::<_, i64>(2)? as u64,
            ))
        })
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// The most tasks among `tasks` executing at one moment.
fn most_at_once(rows: &[(String, u64, u64)], tasks: &[&str]) -> usize {
    let spans: Vec<(u64, u64)> = rows
        .iter()
        .filter(|(t, _, _)| tasks.contains(&t.as_str()))
        .map(|(_, s, e)| (*s, *e))
        .collect();
    spans
        .iter()
        .map(|&(start, _)| {
            spans
                .iter()
                .filter(|&&(s, e)| s <= start && start < e)
                .count()
        })
        .max()
        .unwrap_or(0)
}

fn run(f: &vx_test_support::fixture::Fixture, budget: &str) -> vx_test_support::fixture::Output {
    f.vx_in(
        "",
        &[
            "run",
            "lib#big1",
            "lib#big2",
            "lib#big3",
            "lib#small",
            "--concurrency",
            "3",
        ],
        &[("VX_MEMORY_BUDGET", budget)],
    )
}

#[test]
fn recorded_peaks_keep_large_tasks_within_the_memory_budget() {
    let f = three_big_tasks();
    let first = run(&f, "2GiB");
    assert_eq!(first.code, 0, "{first:?}");
    let rows = latest_run(&f);
    assert_eq!(rows.len(), 4, "{rows:?}");
    // Nothing recorded yet: nothing reserved, all three at once.
    assert_eq!(
        most_at_once(&rows, &["big1", "big2", "big3"]),
        3,
        "{rows:?}"
    );
    assert!(!first.stdout.contains("admission held"), "{}", first.stdout);

    let second = run(&f, "2GiB");
    assert_eq!(second.code, 0, "{second:?}");
    let rows = latest_run(&f);
    let big = ["big1", "big2", "big3"];
    assert!(most_at_once(&rows, &big) <= 2, "{rows:?}");
    assert!(
        second.stdout.contains("admission held"),
        "{}",
        second.stdout
    );
}

#[test]
fn a_task_larger_than_the_budget_runs_alone() {
    let f = three_big_tasks();
    assert_eq!(run(&f, "off").code, 0);
    let out = run(&f, "1GiB");
    assert_eq!(out.code, 0, "{out:?}");
    let rows = latest_run(&f);
    for big in ["big1", "big2", "big3"] {
        let (_, s, e) = rows
            .iter()
            .find(|(t, _, _)| t == big)
            .expect("recorded")
            .clone();
        for (other, os, oe) in &rows {
            if other != big {
                assert!(*oe <= s || e <= *os, "{big} overlaps {other}: {rows:?}");
            }
        }
    }
}

#[test]
fn history_puts_the_longest_expected_path_first() {
    // By dependant count `quick` (one dependant) goes before `slow` (none); once history
    // knows their durations, `slow` is the longer path and starts first.
    let f = one_project(
        "[tasks.slow]\ncommand = \"sleep 0.5\"\n\
         [tasks.quick]\ncommand = \"true\"\n\
         [tasks.after]\ncommand = \"true\"\ndepends-on = [\"quick\"]\n",
    );
    let order = |f: &vx_test_support::fixture::Fixture| {
        let out = f.vx(&["run", "lib#slow", "lib#after", "--concurrency", "1"]);
        assert_eq!(out.code, 0, "{out:?}");
        let mut rows = latest_run(f);
        rows.sort_by_key(|(_, start, end)| (*start, *end));
        rows.into_iter().map(|(t, _, _)| t).collect::<Vec<_>>()
    };
    assert_eq!(order(&f), ["quick", "slow", "after"]);
    assert_eq!(order(&f), ["slow", "quick", "after"]);
}

/// UI-12 with history: each task's median, and the run predicted from them with the list
/// schedule at the run's concurrency.
#[test]
fn dry_predicts_the_run_from_history() {
    let f = one_project(
        "[tasks.a]\ncommand = \"sleep 0.3\"\n\
         [tasks.b]\ncommand = \"sleep 0.3\"\n\
         [tasks.c]\ncommand = \"sleep 0.3\"\ndepends-on = [\"a\"]\n",
    );
    let args = ["run", "lib#b", "lib#c", "--concurrency", "2"];
    let before = f.vx(&[&args[..], &["--dry"]].concat());
    crate::assert_contains(
        &before.stdout,
        "predicted: no history yet (3 tasks never recorded a duration here)\n",
    );
    assert_eq!(f.vx(&args).code, 0);
    let text = f.vx(&[&args[..], &["--dry"]].concat());
    let row = regex::Regex::new(r"(?m)^  ⏺ no-cache    lib#a  [0-9a-f]{12}  ~\d+ms$").unwrap();
    assert!(row.is_match(&text.stdout), "{}", text.stdout);
    assert!(!text.stdout.contains("without history"), "{}", text.stdout);
    let json = f.vx(&[&args[..], &["--dry=json"]].concat());
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let medians: Vec<u64> = doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["median_ms"].as_u64().expect("a median"))
        .collect();
    let predicted = &doc["predicted"];
    let (wall, work) = (
        predicted["wall_ms"].as_u64().unwrap(),
        predicted["work_ms"].as_u64().unwrap(),
    );
    assert_eq!(work, medians.iter().sum::<u64>());
    // Two slots: b beside the chain a → c, so the wall is the chain's.
    assert_eq!(wall, (medians[0] + medians[2]).max(medians[1]), "{doc}");
    assert_eq!(predicted["unknown"], 0);
    let one_slot = f.vx(&["run", "lib#b", "lib#c", "--concurrency", "1", "--dry=json"]);
    let doc: serde_json::Value = serde_json::from_str(&one_slot.stdout).unwrap();
    assert_eq!(doc["predicted"]["wall_ms"].as_u64(), Some(work));
}

/// SCHED-9 in the run loop: with neither `--concurrency` nor `[workspace] concurrency`, the
/// slot count grows past the CPU count while CPUs stand idle and tasks wait for a slot, stays
/// at the CPU count while they are busy, and a fixed `--concurrency` is never passed. The
/// machine's load is simulated through `VX_PROC_STAT`: a thread of this test rewrites that
/// file every 20 ms as `/proc/stat` would read on an idle or a busy machine (the real file is
/// read by `vx-exec/src/load.rs`'s own test). The tasks sleep, so the real machine's load does
/// not matter here.
#[test]
fn adaptive_concurrency_follows_the_idle_cpus() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let child = test_child_path().display().to_string();
    let info = one_project("");
    let shown = info.vx(&["info", "--format", "json"]);
    let info: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    let cpus = info["concurrency"].as_u64().unwrap() as usize;
    let names: Vec<String> = (0..cpus * 3 + 3).map(|n| format!("t{n}")).collect();
    let tasks: String = names
        .iter()
        .map(|n| format!("[tasks.{n}]\ncommand = \"{child} sleep 0.8\"\n"))
        .collect();
    let f = one_project(&tasks);
    let stat = f.path("stat");
    let run = |idle: bool, extra: &[&str]| {
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let (mut busy, mut free) = (0u64, 0u64);
                while !done.load(Ordering::Relaxed) {
                    if idle {
                        free += 10
                    } else {
                        busy += 10
                    }
                    let line = format!("cpu0 {busy} 0 0 {free} 0 0 0 0 0 0\n");
                    std::fs::write(&stat, format!("cpu  {}cpu0{}", &line[4..], &line[4..]))
                        .unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
            });
            let mut args: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
            let ids: Vec<String> = args.iter().map(|n| format!("lib#{n}")).collect();
            args = vec!["run"];
            args.extend(ids.iter().map(String::as_str));
            args.extend(extra);
            let out = f.vx_in("", &args, &[("VX_PROC_STAT", stat.to_str().unwrap())]);
            done.store(true, Ordering::Relaxed);
            assert_eq!(out.code, 0, "{out:?}");
        });
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        most_at_once(&latest_run(&f), &names)
    };
    let idle = run(true, &[]);
    assert!(
        idle > cpus,
        "an idle machine: more than {cpus} at once, got {idle}"
    );
    let busy = run(false, &[]);
    assert!(
        busy <= cpus,
        "a busy machine: at most {cpus} at once, got {busy}"
    );
    let fixed = run(true, &["--concurrency", "2"]);
    assert!(
        fixed <= 2,
        "--concurrency 2: at most 2 at once, got {fixed}"
    );
}
