//! SCHED-8: `--shard K/N` splits one plan the same way on every runner, each task in exactly one
//! part; a part holds its tasks and what they depend on, and takes the other parts' results from
//! the remote cache (the real turborepo-remote-cache) when they are there.

use std::collections::{BTreeMap, BTreeSet};

use vx_test_support::fixture::Fixture;
use vx_test_support::http_cache::{HttpCacheServer, TOKEN};

use crate::vx_bin;

/// Nine projects: p1 ← p2 ← p4, p1 ← p3, and p5…p9 on their own; each has a cached `build`
/// (after its dependencies' builds) and a cached `test` (after its build).
fn workspace(remote: Option<&str>) -> Fixture {
    let deps: [(&str, &[&str]); 9] = [
        ("p1", &[]),
        ("p2", &["p1"]),
        ("p3", &["p1"]),
        ("p4", &["p2"]),
        ("p5", &[]),
        ("p6", &[]),
        ("p7", &[]),
        ("p8", &[]),
        ("p9", &[]),
    ];
    workspace_with(remote, &deps)
}

/// Projects `deps` (name, the projects it depends on), each with the cached `build` and `test`
/// of [`workspace`].
pub(crate) fn workspace_with(remote: Option<&str>, deps: &[(&str, &[&str])]) -> Fixture {
    let f = Fixture::new(vx_bin());
    f.write(".gitignore", "dist/\n.vx/\n");
    let remote = remote.map_or(String::new(), |url| {
        format!("\n[workspace.remote-cache]\nurl = \"{url}\"\nteam = \"team_vx\"\n")
    });
    f.write(
        "vx.toml",
        &format!("[workspace]\nmembers = [\"packages/*\"]\n{remote}"),
    );
    for &(name, on) in deps {
        let dependencies: Vec<String> = on
            .iter()
            .map(|d| format!("\"{d}\": \"workspace:*\""))
            .collect();
        f.write(
            &format!("packages/{name}/package.json"),
            &format!(
                "{{ \"name\": \"{name}\", \"version\": \"1.0.0\", \"dependencies\": {{ {} }} }}",
                dependencies.join(", ")
            ),
        );
        f.write(
            &format!("packages/{name}/src/main.txt"),
            &format!("{name}\n"),
        );
        f.write(
            &format!("packages/{name}/vx.toml"),
            concat!(
                "[tasks.build]\n",
                "command = \"mkdir -p dist && cp src/main.txt dist/\"\n",
                "depends-on = [\"^build\"]\n",
                "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n\n",
                "[tasks.test]\n",
                "command = \"test -f dist/main.txt\"\n",
                "depends-on = [\"build\"]\n",
                "cache = { inputs = [\"src/**\"], outputs = [] }\n",
            ),
        );
    }
    f.commit();
    f
}

/// `vx run build test --all --dry=json [--shard K/N]` in `f`: each planned task and its part.
fn planned(f: &Fixture, shard: Option<&str>) -> BTreeMap<String, Option<u64>> {
    let flag = shard.map(|part| format!("--shard={part}"));
    planned_with(
        f,
        flag.as_deref().into_iter().collect::<Vec<_>>().as_slice(),
        &[],
    )
}

/// `vx run build test --all --dry=json ARGS…` in `f` with `env`: each planned task and its part.
fn planned_with(f: &Fixture, args: &[&str], env: &[(&str, &str)]) -> BTreeMap<String, Option<u64>> {
    let mut all = vec!["run", "build", "test", "--all", "--dry=json"];
    all.extend(args);
    let out = f.vx_in(".", &all, env);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["id"].as_str().unwrap().to_string(), t["shard"].as_u64()))
        .collect()
}

/// Each task of the whole plan with its part, from every runner's own `--dry=json`; panics if
/// two runners claim one task.
fn split(f: &Fixture, n: u64) -> BTreeMap<String, u64> {
    let mut owner = BTreeMap::new();
    for k in 1..=n {
        for (id, part) in planned(f, Some(&format!("{k}/{n}"))) {
            let part = part.expect("every task of a sharded plan names its part");
            if part == k {
                assert!(owner.insert(id.clone(), k).is_none(), "{id} claimed twice");
            }
        }
    }
    owner
}

#[test]
fn every_task_is_in_exactly_one_part_and_every_runner_splits_alike() {
    let f = workspace(None);
    let whole: BTreeSet<String> = planned(&f, None).into_keys().collect();
    assert_eq!(whole.len(), 18);
    for n in [1, 2, 3, 5] {
        let owner = split(&f, n);
        let covered: BTreeSet<String> = owner.keys().cloned().collect();
        assert_eq!(covered, whole, "N = {n}");
        if n == 2 {
            // Balanced by count, each project's build and test together and p1…p4 (a chain
            // of dependencies) on one runner: 10 and 8.
            let first = owner.values().filter(|&&k| k == 1).count();
            assert_eq!(first, 10, "{owner:?}");
            for project in ["p2", "p3", "p4"] {
                assert_eq!(owner[&format!("{project}#build")], owner["p1#build"]);
            }
        }
    }
    // Another runner's clone, with its own (empty) history, splits the same way.
    let clone = crate::clone_of(f.root(), &[]);
    // A run in the first clone gives it history: the split must not depend on it.
    assert_eq!(f.vx(&["run", "build", "test", "--all"]).code, 0);
    assert_eq!(split(&clone, 3), split(&f, 3));
}

#[test]
fn a_part_holds_its_tasks_and_only_what_they_depend_on() {
    let f = workspace(None);
    let owner = split(&f, 3);
    for k in 1..=3u64 {
        let out = f.vx_in(
            ".",
            &[
                "run",
                "build",
                "test",
                "--all",
                "--dry=json",
                &format!("--shard={k}/3"),
            ],
            &[],
        );
        let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        let tasks = doc["tasks"].as_array().unwrap();
        let deps: BTreeMap<&str, Vec<&str>> = tasks
            .iter()
            .map(|t| {
                let on = t["deps"].as_array().unwrap().iter();
                (
                    t["id"].as_str().unwrap(),
                    on.map(|d| d.as_str().unwrap()).collect(),
                )
            })
            .collect();
        // What this part's own tasks reach through their dependencies.
        let mut reached: BTreeSet<&str> = BTreeSet::new();
        let mut stack: Vec<&str> = tasks
            .iter()
            .filter(|t| t["shard"].as_u64() == Some(k))
            .map(|t| t["id"].as_str().unwrap())
            .collect();
        while let Some(id) = stack.pop() {
            if reached.insert(id) {
                stack.extend(deps[id].iter().copied());
            }
        }
        for task in tasks {
            let id = task["id"].as_str().unwrap();
            assert_eq!(task["shard"].as_u64(), Some(owner[id]), "{id}");
            assert!(
                reached.contains(id),
                "{id} is in part {k} but nothing of it needs it"
            );
        }
    }
}

/// Runs part 1 then part 2 of `f`'s plan, each on a fresh clone with the remote cache of `f`:
/// every task executed by its own part; returns how many of part 1's tasks part 2 took from
/// the server, and how many of part 2's part 1 had to run itself.
fn run_parts_in_turn(f: &Fixture) -> (usize, usize) {
    let owner = split(f, 2);
    let mut executed: Vec<String> = Vec::new();
    let (mut shared, mut twice) = (0, 0);
    for k in 1..=2u64 {
        // Each part on a fresh runner: a clone with no `.vx/` and no outputs.
        let runner = crate::clone_of(f.root(), &[]);
        let summary = runner.root().join(".git/summary.json");
        let shard = format!("--shard={k}/2");
        let arg = format!("--summarize={}", summary.display());
        let out = runner.vx_in(
            ".",
            &["run", "build", "test", "--all", &shard, &arg],
            // Part 2 has not run yet when part 1 needs its work: no point waiting long.
            &[
                ("CI", "true"),
                ("VX_REMOTE_CACHE_TOKEN", TOKEN),
                ("VX_SHARD_WAIT", "1s"),
            ],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(
            out.stderr
                .contains(&format!("vx: --shard {k}/2: this runner runs ")),
            "{}",
            out.stderr
        );
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
        for task in doc["tasks"].as_array().unwrap() {
            let id = task["id"].as_str().unwrap().to_string();
            let cache = task["cache"].as_str().unwrap();
            if owner[&id] == k {
                assert_eq!(cache, "miss", "{id} is executed by its own part");
                executed.push(id);
            } else if owner[&id] < k {
                // An earlier part ran it: this part takes it from the server.
                assert_eq!(cache, "restored-remote", "{id}");
                shared += 1;
            } else {
                // A later part's task that this one needs now: run here.
                assert_eq!(cache, "miss", "{id}");
                twice += 1;
            }
        }
    }
    executed.sort();
    let all: Vec<String> = owner.keys().cloned().collect();
    assert_eq!(executed, all, "every task executed by its own part");
    (shared, twice)
}

#[test]
fn parts_run_on_two_runners_run_nothing_twice() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    // Each project's build and test together, p1…p4 on one runner: nothing crosses parts.
    let f = workspace(Some(&server.url()));
    assert_eq!(run_parts_in_turn(&f), (0, 0));
}

#[test]
fn a_part_takes_what_another_part_built_from_the_remote_cache() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    // One base that ten projects build on: splitting them pays for the hand-over.
    let names: Vec<String> = (1..=10).map(|n| format!("q{n:02}")).collect();
    let mut deps: Vec<(&str, &[&str])> = vec![("base", &[])];
    deps.extend(names.iter().map(|n| (n.as_str(), &["base"][..])));
    let f = workspace_with(Some(&server.url()), &deps);
    // What each part's plan holds of the other's.
    let across = |k: u64| {
        let plan = planned(&f, Some(&format!("{k}/2")));
        plan.values().filter(|&&part| part != Some(k)).count()
    };
    let (of_first, of_second) = (across(2), across(1));
    assert!(of_first > 0, "part 2 needs part 1's work here");
    assert_eq!(run_parts_in_turn(&f), (of_first, of_second));
}

#[test]
fn the_flag_is_checked_and_auto_predicts_one_to_sixteen_runners() {
    let f = workspace(None);
    for bad in ["0/2", "3/2", "2", "a/b", "1/257"] {
        let out = f.vx_in(".", &["run", "build", &format!("--shard={bad}")], &[]);
        assert_eq!(out.code, 2, "{bad}");
        assert_eq!(
            out.stderr,
            format!("error: invalid value `{bad}` for --shard (expected K/N with 1 ≤ K ≤ N ≤ 256, `ci`, or `auto` with --dry)\n")
        );
    }
    let out = f.vx_in(".", &["run", "build", "--shard=auto"], &[]);
    assert_eq!(out.code, 2);
    assert!(out
        .stderr
        .starts_with("error: `--shard auto` needs `--dry`\n"));
    let out = f.vx_in(
        ".",
        &[
            "run",
            "build",
            "test",
            "--all",
            "--dry",
            "--shard=auto",
            "--concurrency=1",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows: Vec<&str> = out.stdout.lines().skip(1).collect();
    assert_eq!(rows.len(), 16, "{}", out.stdout);
    // One runner with one slot runs the 18 tasks one after another.
    assert!(rows[0].contains("18.0 tasks"), "{}", out.stdout);
    assert!(rows[0].ends_with("1.00× one runner"), "{}", out.stdout);
    // Two runners halve it (the chains fit), at most 9 tasks each.
    assert!(rows[1].contains("9.0 tasks"), "{}", out.stdout);
}

/// The fan-out workspace of [`a_part_takes_what_another_part_built_from_the_remote_cache`]
/// with a base build that takes 2 s, and its split into two parts: base's part first.
fn slow_base(url: &str) -> (Fixture, BTreeMap<String, u64>) {
    base_doing(url, "sleep 2 && mkdir -p dist && cp src/main.txt dist/")
}

/// The fan-out workspace with base's build running `command`, and its split into two parts.
fn base_doing(url: &str, command: &str) -> (Fixture, BTreeMap<String, u64>) {
    let names: Vec<String> = (1..=10).map(|n| format!("q{n:02}")).collect();
    let mut deps: Vec<(&str, &[&str])> = vec![("base", &[])];
    deps.extend(names.iter().map(|n| (n.as_str(), &["base"][..])));
    let f = workspace_with(Some(url), &deps);
    f.write(
        "packages/base/vx.toml",
        &format!(
            concat!(
                "[tasks.build]\n",
                "command = \"{}\"\n",
                "cache = {{ inputs = [\"src/**\"], outputs = [\"dist/**\"] }}\n\n",
                "[tasks.test]\n",
                "command = \"test -f dist/main.txt\"\n",
                "depends-on = [\"build\"]\n",
                "cache = {{ inputs = [\"src/**\"], outputs = [] }}\n",
            ),
            command
        ),
    );
    f.commit();
    let owner = split(&f, 2);
    (f, owner)
}

/// A fresh clone of `f` for one runner.
pub(crate) fn runner_of(f: &Fixture) -> Fixture {
    crate::clone_of(f.root(), &[])
}

/// The cache word of each task in a run's summary (empty for a task that did not start).
fn words(runner: &Fixture) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(runner.root().join(".git/summary.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_string(),
                t["cache"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Parts `parts` of `f`'s plan started at once on two fresh runners, as a CI matrix starts
/// them: the runners and what each printed.
fn both_at_once(f: &Fixture, parts: [u64; 2]) -> ([Fixture; 2], Vec<std::process::Output>) {
    let runners = [runner_of(f), runner_of(f)];
    let children: Vec<_> = parts
        .iter()
        .zip(&runners)
        .map(|(k, runner)| {
            let summary = format!(
                "--summarize={}",
                runner.root().join(".git/summary.json").display()
            );
            let shard = format!("--shard={k}/2");
            runner
                .command(".", &["run", "build", "test", "--all", &shard, &summary])
                .envs([("CI", "true"), ("VX_REMOTE_CACHE_TOKEN", TOKEN)])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    (runners, outputs)
}

#[test]
fn a_runner_waits_for_another_parts_upload_rather_than_run_it_twice() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let (f, owner) = slow_base(&server.url());
    let first = owner["base#build"];
    let second = 3 - first;
    assert!(owner.values().any(|&k| k == second), "{owner:?}");
    let (runners, outputs) = both_at_once(&f, [first, second]);
    for out in &outputs {
        assert!(out.status.success(), "{out:?}");
    }
    let waited = String::from_utf8_lossy(&outputs[1].stderr);
    assert!(
        waited.contains(&format!(
            "vx: --shard: base#build belongs to part {first}; waiting up to 30s for its runner to upload it\n"
        )),
        "{waited}"
    );
    assert_eq!(
        words(&runners[1])["base#build"],
        "restored-remote",
        "{waited}"
    );
    // Every task of the other part this one needed came from its runner; none ran twice.
    let needed = planned(&f, Some(&format!("{second}/2")))
        .values()
        .filter(|&&part| part != Some(second))
        .count();
    assert!(
        waited.contains(&format!(
            "vx: --shard {second}/2: of the other parts' tasks this part needed, {needed} came from the remote cache ("
        )) && waited.contains(" after waiting for their runner), none run here\n"),
        "{waited}"
    );
    assert_eq!(words(&runners[0])["base#build"], "miss");
    // One recap of both parts: every task of each part executed by its runner, nothing twice.
    let report = merge(&f, &runners);
    assert_eq!(report.code, 0, "{}{}", report.stdout, report.stderr);
    for k in 1..=2u64 {
        let own = owner.values().filter(|&&o| o == k).count();
        let row = report
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{k}/2 ")))
            .unwrap_or_else(|| panic!("{}", report.stdout));
        let cells: Vec<&str> = row.split_whitespace().collect();
        // part, own tasks, executed, restored, failed, from others, run for others, wall
        assert_eq!(cells[1], own.to_string(), "{row}");
        assert_eq!(cells[2], own.to_string(), "{row}");
        assert_eq!(cells[6], "0", "{row}");
    }
    assert!(
        report.stdout.ends_with("every part succeeded\n"),
        "{}",
        report.stdout
    );
}

/// `vx report --merge` of the runners' summaries, run in `f`.
fn merge(f: &Fixture, runners: &[Fixture]) -> vx_test_support::fixture::Output {
    let files: Vec<String> = runners
        .iter()
        .map(|r| r.root().join(".git/summary.json").display().to_string())
        .collect();
    let mut args = vec!["report", "--merge"];
    args.extend(files.iter().map(String::as_str));
    f.vx_in(".", &args, &[])
}

#[test]
fn a_part_not_uploaded_in_time_is_run_here_and_said() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let (f, owner) = slow_base(&server.url());
    let second = 3 - owner["base#build"];
    // The other runner never comes: after VX_SHARD_WAIT this one builds base itself.
    let runner = runner_of(&f);
    let summary = format!(
        "--summarize={}",
        runner.root().join(".git/summary.json").display()
    );
    let out = runner.vx_in(
        ".",
        &[
            "run",
            "build",
            "test",
            "--all",
            &format!("--shard={second}/2"),
            &summary,
        ],
        &[
            ("CI", "true"),
            ("VX_REMOTE_CACHE_TOKEN", TOKEN),
            ("VX_SHARD_WAIT", "1s"),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "vx: --shard: part {}'s runner did not upload base#build within 1s; running it here\n",
            3 - second
        )),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(" after waiting for their runner), ")
            && out.stderr.contains(" run here (base#build"),
        "{}",
        out.stderr
    );
    assert_eq!(words(&runner)["base#build"], "miss");
}

#[test]
fn a_failure_on_its_own_runner_fails_the_waiting_runner_without_running_it_again() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let (f, owner) = base_doing(&server.url(), "sleep 1 && echo broken && exit 3");
    let first = owner["base#build"];
    let second = 3 - first;
    let (runners, outputs) = both_at_once(&f, [first, second]);
    assert_eq!(outputs[0].status.code(), Some(1), "{:?}", outputs[0]);
    let told = String::from_utf8_lossy(&outputs[1].stderr);
    assert_eq!(outputs[1].status.code(), Some(1), "{told}");
    let stdout = String::from_utf8_lossy(&outputs[1].stdout);
    assert!(
        stdout.contains(&format!(
            "vx: base#build failed on part {first}'s runner (exit 3); its output is in that runner's log"
        )),
        "{stdout}{told}"
    );
    assert!(
        !told.contains("did not upload"),
        "it did not wait out the limit: {told}"
    );
    assert!(
        !stdout.contains("broken"),
        "base#build did not run here: {stdout}"
    );
    assert_eq!(words(&runners[1])["base#build"], "", "not executed here");
    assert!(
        told.contains("1 failed on their runners (base#build)"),
        "{told}"
    );
    // The recap names the failure once, on the part that had it; a lost part is named too.
    let report = merge(&f, &runners);
    assert_eq!(report.code, 1, "{}", report.stdout);
    assert_eq!(
        report.stdout.matches("failed: ").count(),
        1,
        "{}",
        report.stdout
    );
    assert!(
        report
            .stdout
            .contains(&format!("failed: base#build on part {first} (exit 3)\n")),
        "{}",
        report.stdout
    );
    let lost = merge(&f, &runners[1..]);
    assert_eq!(lost.code, 1);
    assert!(
        lost.stdout.contains(&format!(
            "{first}/2   no summary: the runner of this part did not finish; its tasks are not accounted for\n"
        )),
        "{}",
        lost.stdout
    );
    assert!(
        lost.stdout.ends_with("1 of 2 parts missing\n"),
        "{}",
        lost.stdout
    );
    // Files that are not the parts of one run are refused, naming the file.
    f.write("broken.json", "{ \"tasks\": [ }");
    let out = f.vx(&["report", "--merge", "broken.json"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .starts_with("error: broken.json:1:14: not a run summary: "),
        "{}",
        out.stderr
    );
    f.write("plain.json", "{ \"tasks\": [] }");
    let out = f.vx(&["report", "--merge", "plain.json"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.starts_with(
            "error: plain.json is not the summary of a part of a `--shard` run (it has no `shard`)\n"
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn ci_takes_the_part_from_the_cis_parallel_jobs() {
    let f = workspace(None);
    let owned = |env: &[(&str, &str)]| {
        let out = f.vx_in(
            ".",
            &["run", "build", "test", "--all", "--dry=json", "--shard=ci"],
            env,
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        let mine: BTreeSet<String> = doc["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["shard"].as_u64() == Some(2))
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect();
        (out.stderr.clone(), mine)
    };
    let by_flag = |k: u64| -> BTreeSet<String> {
        split(&f, 3)
            .into_iter()
            .filter(|(_, part)| *part == k)
            .map(|(id, _)| id)
            .collect()
    };
    // GitLab's `parallel: 3`, second job (1-based); CircleCI's and Buildkite's are 0-based.
    for env in [
        &[("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "3")][..],
        &[("CIRCLE_NODE_INDEX", "1"), ("CIRCLE_NODE_TOTAL", "3")][..],
        &[
            ("BUILDKITE_PARALLEL_JOB", "1"),
            ("BUILDKITE_PARALLEL_JOB_COUNT", "3"),
        ][..],
    ] {
        let (stderr, mine) = owned(env);
        assert!(stderr.starts_with("vx: --shard 2/3: "), "{stderr}");
        assert_eq!(mine, by_flag(2), "{env:?}");
    }
    let out = f.vx_in(
        ".",
        &["run", "build", "--shard=ci"],
        &[("CI_NODE_INDEX", "4"), ("CI_NODE_TOTAL", "3")],
    );
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: `--shard=ci`: the CI's parallel-job variables give part 4 of 3\n"
    );
    let out = f.vx_in(".", &["run", "build", "--shard=ci"], &[]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .starts_with("error: `--shard=ci` found no parallel-job variables of a CI it knows\n"),
        "{}",
        out.stderr
    );
}

#[test]
fn vx_shard_gives_the_part_when_the_flag_does_not() {
    let f = workspace(None);
    let mine = |args: &[&str], env: &[(&str, &str)]| -> BTreeSet<String> {
        planned_with(&f, args, env)
            .into_iter()
            .filter(|(_, part)| *part == Some(2))
            .map(|(id, _)| id)
            .collect()
    };
    let by_flag = mine(&["--shard=2/3"], &[]);
    assert!(!by_flag.is_empty());
    assert_eq!(mine(&[], &[("VX_SHARD", "2/3")]), by_flag);
    assert_eq!(
        mine(
            &[],
            &[
                ("VX_SHARD", "ci"),
                ("CI_NODE_INDEX", "2"),
                ("CI_NODE_TOTAL", "3")
            ]
        ),
        by_flag
    );
    // The flag wins over the variable.
    assert_eq!(mine(&["--shard=2/3"], &[("VX_SHARD", "1/2")]), by_flag);
    // Without either, no task has a part.
    let out = f.vx_in(".", &["run", "build", "--all", "--dry=json"], &[]);
    assert!(!out.stdout.contains("\"shard\""), "{}", out.stdout);
    for bad in ["auto", "3/2"] {
        let out = f.vx_in(".", &["run", "build"], &[("VX_SHARD", bad)]);
        assert_eq!(out.code, 2, "{bad}");
        assert_eq!(
            out.stderr,
            format!("error: invalid value `{bad}` for VX_SHARD (expected K/N with 1 ≤ K ≤ N ≤ 256, or `ci`)\n")
        );
    }
    // `vx watch` on a machine that sets it builds every project: VX_SHARD is for CI runners.
    let mut watch = f
        .command(".", &["watch", "build", "--all"])
        .env("VX_SHARD", "1/2")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let built = || (1..=9).all(|n| f.path(&format!("packages/p{n}/dist/main.txt")).exists());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !built() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(watch.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    );
    let _ = watch.wait();
    assert!(built(), "the watch built only a part");
    // Nor does it read the variable: a value a run refuses does not stop a watch.
    let out = f.vx_in(".", &["watch", "nosuch"], &[("VX_SHARD", "auto")]);
    assert_eq!(out.code, 2);
    assert!(!out.stderr.contains("VX_SHARD"), "{}", out.stderr);
}

#[test]
fn ctrl_c_while_waiting_for_another_part_stops_at_once() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let (f, owner) = slow_base(&server.url());
    let second = 3 - owner["base#build"];
    // The other runner never comes, and this one would wait a minute for it.
    let runner = runner_of(&f);
    let log = runner.root().join(".git/stderr.txt");
    let child = runner
        .command(
            ".",
            &[
                "run",
                "build",
                "test",
                "--all",
                &format!("--shard={second}/2"),
            ],
        )
        .envs([
            ("CI", "true"),
            ("VX_REMOTE_CACHE_TOKEN", TOKEN),
            ("VX_SHARD_WAIT", "60s"),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    crate::remote_cache::wait_until("the wait is said", || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("waiting up to 60s"))
    });
    let (code, _, after) = crate::remote_cache::interrupt(child);
    assert_eq!(
        code,
        Some(130),
        "{}",
        std::fs::read_to_string(&log).unwrap()
    );
    // Not the minute the wait had left: the run did not hold on for the other runner.
    assert!(after < std::time::Duration::from_secs(30), "{after:?}");
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(!said.contains("running it here"), "{said}");
}
