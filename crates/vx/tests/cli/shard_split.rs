//! SCHED-8: the parts of a sharded run split by the durations earlier runs recorded (this
//! machine's history, else the parts' records in the real turborepo-remote-cache), agree on
//! one split (and, under `--affected=last-green`, one base) through the remote cache, and a
//! part that finds the split replaced under it fails rather than leave tasks unrun.

use std::collections::{BTreeMap, BTreeSet};

use vx_test_support::fixture::{Fixture, Output};
use vx_test_support::http_cache::{HttpCacheServer, TOKEN};

use crate::shard::{runner_of, workspace_with};

const ENV: [(&str, &str); 2] = [("CI", "true"), ("VX_REMOTE_CACHE_TOKEN", TOKEN)];

/// Nine projects on their own, each with the cached `build` and `test` of `shard.rs`, p1's
/// build taking `p1_build` (a shell command run before its copy).
fn independent(url: &str, p1_build: &str) -> Fixture {
    let names: Vec<String> = (1..=9).map(|n| format!("p{n}")).collect();
    let deps: Vec<(&str, &[&str])> = names.iter().map(|n| (n.as_str(), &[][..])).collect();
    let f = workspace_with(Some(url), &deps);
    build_doing(&f, "p1", p1_build);
    f.commit();
    f
}

/// Project `name`'s build runs `first` before copying its source to `dist/`.
fn build_doing(f: &Fixture, name: &str, first: &str) {
    f.write(
        &format!("packages/{name}/vx.toml"),
        &format!(
            concat!(
                "[tasks.build]\n",
                "command = \"{} && mkdir -p dist && cp src/main.txt dist/\"\n",
                "cache = {{ inputs = [\"src/**\"], outputs = [\"dist/**\"] }}\n\n",
                "[tasks.test]\n",
                "command = \"test -f dist/main.txt\"\n",
                "depends-on = [\"build\"]\n",
                "cache = {{ inputs = [\"src/**\"], outputs = [] }}\n",
            ),
            first
        ),
    );
}

/// A new commit of `f` in which every project's source changed (no entry of an earlier commit
/// applies).
fn change_everything(f: &Fixture, text: &str) {
    for n in 1..=9 {
        f.write(&format!("packages/p{n}/src/main.txt"), text);
    }
    f.commit();
}

/// `vx run build test --all --concurrency=1 --shard=K/2 [extra…]` on `runner`, as a CI job.
fn part(runner: &Fixture, k: u64, extra: &[&str]) -> Output {
    let shard = format!("--shard={k}/2");
    let mut args = vec!["--concurrency=1", shard.as_str()];
    args.extend(extra);
    build_test(runner, &args, &ENV)
}

/// `vx run build test --all EXTRA…` in `runner` with `env`.
fn build_test(runner: &Fixture, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut args = vec!["run", "build", "test", "--all"];
    args.extend(extra);
    runner.vx_in(".", &args, env)
}

/// Each task's part as `runner`'s `--dry=json --shard=K/2` plans it, for K = 1 and 2 (a dry
/// run adopts the split record and writes none); panics if two parts claim one task.
fn owners(runner: &Fixture) -> BTreeMap<String, u64> {
    let mut owner = BTreeMap::new();
    for k in 1..=2u64 {
        let shard = format!("--shard={k}/2");
        let args = [
            "run",
            "build",
            "test",
            "--all",
            "--concurrency=1",
            "--dry=json",
            &shard,
        ];
        let out = runner.vx_in(".", &args, &ENV);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        for task in doc["tasks"].as_array().unwrap() {
            if task["shard"].as_u64() == Some(k) {
                let id = task["id"].as_str().unwrap().to_string();
                assert!(owner.insert(id.clone(), k).is_none(), "{id} claimed twice");
            }
        }
    }
    owner
}

/// The tasks of part `k`.
fn part_of(owner: &BTreeMap<String, u64>, k: u64) -> BTreeSet<String> {
    owner
        .iter()
        .filter(|(_, &o)| o == k)
        .map(|(id, _)| id.clone())
        .collect()
}

#[test]
fn later_runs_split_by_the_durations_the_parts_recorded_in_the_remote_cache() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let f = independent(&server.url(), "sleep 1.5");
    for k in 1..=2 {
        let out = part(&runner_of(&f), k, &[]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(
            out.stderr.contains("the parts are balanced by task count along the graph: no runner has recorded durations of these tasks yet"),
            "{}",
            out.stderr
        );
    }
    change_everything(&f, "two\n");
    // Fresh runners: nothing in their history, the durations the parts recorded on main.
    let first = part(&runner_of(&f), 1, &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first.stderr.contains("the parts are balanced by recorded durations of 18 of 18 tasks (from the remote cache's records of main); this runner recorded the split in the remote cache for the others\n"),
        "{}",
        first.stderr
    );
    let second = part(&runner_of(&f), 2, &[]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(
        second.stderr.contains("(from the remote cache's records of main); the split is the one the first runner recorded in the remote cache\n"),
        "{}",
        second.stderr
    );
    // One slot per runner: the 1.5 s build (and its test) alone on one part, the sixteen quick
    // tasks on the other; by task count each part had nine.
    let owner = owners(&runner_of(&f));
    let slow = owner["p1#build"];
    assert_eq!(
        part_of(&owner, slow),
        BTreeSet::from(["p1#build".to_string(), "p1#test".to_string()]),
        "{owner:?}"
    );
    assert_eq!(part_of(&owner, 3 - slow).len(), 16, "{owner:?}");
    // `--dry --shard auto` predicts from the same durations, in time.
    let out = build_test(
        &runner_of(&f),
        &["--dry", "--shard=auto", "--concurrency=1"],
        &ENV,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let header = out.stdout.lines().next().unwrap();
    assert!(
        header.ends_with("(1 tasks at once on each; recorded durations of 18 of 18 tasks (from the remote cache's records of main))"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains(" tasks  "), "{}", out.stdout);
    // A runner that may read the remote cache but not write it (outside CI here, a fork's pull
    // request in CI) cannot agree with the others: the durations records may change between
    // two runners' reads, so it splits by what cannot, the task counts.
    change_everything(&f, "three\n");
    let out = build_test(
        &runner_of(&f),
        &["--concurrency=1", "--shard=1/2"],
        &[("VX_REMOTE_CACHE_TOKEN", TOKEN)],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("the parts are balanced by task count along the graph: a remote cache this run cannot write cannot hold the runners' split\n"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_runner_that_cannot_reach_the_remote_cache_runs_the_whole_plan() {
    // Nothing listens on port 9 of the loopback: the split record cannot be read.
    let f = independent("http://127.0.0.1:9", "true");
    let summary = f.root().join(".git/summary.json");
    let out = build_test(
        &f,
        &["--shard=2/2", &format!("--summarize={}", summary.display())],
        &ENV,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("could not be read for the runners' split ("),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("this runner runs the whole plan, so that no task is left to a split the other runners may not share\n"),
        "{}",
        out.stderr
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let executed = doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["cache"] == "miss" && t["shard"] == 2)
        .count();
    assert_eq!(executed, 18, "{doc}");
}

#[test]
fn a_runner_with_history_proposes_the_split_and_the_others_adopt_it() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let f = independent(&server.url(), "sleep 1.5");
    let a = runner_of(&f);
    // This machine ran the tasks before, unsharded and outside CI: nothing went to the remote.
    let out = build_test(&a, &[], &[("VX_REMOTE_CACHE_TOKEN", TOKEN)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    change_everything(&f, "two\n");
    a.git(&["pull", "-q", "--ff-only"]);
    let first = part(&a, 1, &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first.stderr.contains("balanced by recorded durations of 18 of 18 tasks (from this machine's history); this runner recorded the split in the remote cache for the others\n"),
        "{}",
        first.stderr
    );
    // A fresh runner has no history, and takes the first runner's split.
    let b = runner_of(&f);
    let second = part(&b, 2, &[]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(
        second.stderr.contains("balanced by recorded durations of 18 of 18 tasks (from this machine's history); the split is the one the first runner recorded in the remote cache\n"),
        "{}",
        second.stderr
    );
    let owner = owners(&runner_of(&f));
    assert_eq!(part_of(&owner, owner["p1#build"]).len(), 2, "{owner:?}");
}

/// The key of the split record of `scope` at `commit` in `n` parts (as `plan/split.rs` makes
/// it), which the test removes from the server's storage.
fn split_key(scope: &str, commit: &str, n: u32) -> String {
    let mut hasher = blake3::Hasher::new();
    for part in ["vx shard split 1", scope, commit, &n.to_string()] {
        hasher.update(part.as_bytes());
        hasher.update(b"\0");
    }
    hasher.finalize().to_hex().to_string()
}

fn head(f: &Fixture) -> String {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(f.root())
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn a_part_whose_split_was_replaced_under_it_fails_naming_what_may_not_have_run() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    // Every build waits while a `gate` file exists at its runner's root; p1's takes 1 s.
    let url = server.url();
    let f = independent(&url, "while [ -e ../../gate ]; do sleep 0.1; done; sleep 1");
    for n in 2..=9 {
        build_doing(
            &f,
            &format!("p{n}"),
            "while [ -e ../../gate ]; do sleep 0.1; done",
        );
    }
    f.commit();
    let b = runner_of(&f);
    let out = build_test(&b, &[], &[("VX_REMOTE_CACHE_TOKEN", TOKEN)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    change_everything(&f, "two\n");
    b.git(&["pull", "-q", "--ff-only"]);
    // The split each would propose: by count (a fresh runner), by b's history (the slow
    // build alone on one part, sixteen tasks on the other).
    let by_count = owners(&runner_of(&f));
    let by_history = owners(&b);
    let k = (1..=2)
        .find(|&k| !part_of(&by_history, k).is_subset(&part_of(&by_count, k)))
        .expect("the two splits differ");
    // Runner a starts part k, records its split (by count) and waits at the gate.
    let a = runner_of(&f);
    a.write("gate", "");
    let key = split_key("vx run build test", &head(&f), 2);
    let record = server.storage.path().join("store/team_vx").join(&key);
    let shard = format!("--shard={k}/2");
    let started = a
        .command(
            ".",
            &["run", "build", "test", "--all", "--concurrency=1", &shard],
        )
        .envs(ENV)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !record.exists() {
        assert!(std::time::Instant::now() < deadline, "no split record");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // A runner that started at the same moment but wrote later: the record a read is gone,
    // and b records its own split (by its history) and runs its part of that.
    std::thread::sleep(std::time::Duration::from_secs(2));
    std::fs::remove_file(&record).unwrap();
    let out = part(&b, 3 - k, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("this runner recorded the split in the remote cache for the others"),
        "{}",
        out.stderr
    );
    std::fs::remove_file(a.path("gate")).unwrap();
    let started = started.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&started.stderr);
    assert_eq!(started.status.code(), Some(1), "{stderr}");
    let missing: Vec<String> = part_of(&by_history, k)
        .difference(&part_of(&by_count, k))
        .cloned()
        .collect();
    assert!(
        stderr.contains(&format!(
            "warning: --shard {k}/2: another runner replaced the split record after this one adopted it; in the split the other parts use, this part also owns {} it did not run (",
            if missing.len() == 1 { "1 task".to_string() } else { format!("{} tasks", missing.len()) }
        )),
        "{stderr}"
    );
    assert!(stderr.contains(&missing[0]), "{stderr}");
}

#[test]
fn every_part_compares_with_the_base_the_parts_agreed_on() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let f = independent(&server.url(), "true");
    let c1 = head(&f);
    let short = |c: &str| c[..7].to_string();
    // The push build at c1, two parts one after the other: the last part to end green
    // records the run.
    let out = part(&runner_of(&f), 1, &["--affected=last-green"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "vx: this green run is not recorded for --affected=last-green: it is part 1 of 2, and 1 of the 2 parts are green at {} so far (the last part to end green records the run)\n",
            short(&c1)
        )),
        "{}",
        out.stderr
    );
    let out = part(&runner_of(&f), 2, &["--affected=last-green"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "vx: recorded {} as green for `vx run build test` on main, on this machine and in the remote cache\n",
            short(&c1)
        )),
        "{}",
        out.stderr
    );
    // c2 changes p5; a runner outside CI finds it green there, on its machine alone.
    f.write("packages/p5/src/main.txt", "two\n");
    f.commit();
    let x = runner_of(&f);
    let out = build_test(
        &x,
        &["--affected=last-green"],
        &[("VX_REMOTE_CACHE_TOKEN", TOKEN)],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let c2 = head(&f);
    assert!(
        out.stderr
            .contains(&format!("vx: recorded {} as green", short(&c2))),
        "{}",
        out.stderr
    );
    // c3 changes p6. A fresh runner's base is c1 (the remote's); x's own would be c2, but x
    // takes the base the first part recorded.
    f.write("packages/p6/src/main.txt", "two\n");
    f.commit();
    x.git(&["pull", "-q", "--ff-only"]);
    let first = part(&runner_of(&f), 1, &["--affected=last-green"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first
            .stderr
            .contains(&format!("vx: --affected compares with {}: ", short(&c1))),
        "{}",
        first.stderr
    );
    // Without writes to the remote cache, and no split recorded for three parts, the parts
    // could each find another base: refused.
    let out = build_test(
        &x,
        &["--shard=2/3", "--affected=last-green"],
        &[("VX_REMOTE_CACHE_TOKEN", TOKEN)],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.starts_with("error: `--shard` with `--affected=last-green` needs a remote cache this run can read and write\n"),
        "{}",
        out.stderr
    );
    let second = part(&x, 2, &["--affected=last-green"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(
        second.stderr.contains(&format!(
            "vx: --affected compares with {}: the last green run of `vx run build test` on main that HEAD descends from (recorded in the remote cache) (agreed by the --shard parts)\n",
            short(&c1)
        )),
        "{}",
        second.stderr
    );
}
