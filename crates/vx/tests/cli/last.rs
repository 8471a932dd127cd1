//! `vx last` (HIST-4): recorded runs read back.

use regex::Regex;
use serde_json::Value;
use vx_test_support::fixture::Fixture;

use crate::{one_project, w};

/// Dates, durations, keys and run ids replaced (UI-11).
fn stable(text: &str, f: &Fixture) -> String {
    let date = Regex::new(r"\d{4}-\d\d-\d\d \d\d:\d\d").unwrap();
    let text = date.replace_all(text, "[date]");
    let long_id = Regex::new(r"\b[0-9a-f]{8,32}\b").unwrap();
    let text = vx_test_support::fixture::redact(&text, f.root());
    let text = long_id.replace_all(&text, "[id]");
    // CPU parallelism depends on the machine's load; it is checked in the unit tests.
    let cpu = Regex::new(r"\d+\.\d× cpu(?: · )?").unwrap();
    let text = cpu.replace_all(&text, "");
    let text: String = text
        .lines()
        .map(|l| l.trim_end().to_string() + "\n")
        .collect();
    // Columns are padded to the widths of the values redacted above.
    Regex::new(r" {2,}")
        .unwrap()
        .replace_all(&text, "  ")
        .into_owned()
}

#[test]
fn an_empty_history_says_so() {
    let f = w();
    let out = f.vx(&["last"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "vx: history is empty\n"),
        "{out:?}"
    );
    let out = f.vx(&["last", "--list"]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "history is empty\n"),
        "{out:?}"
    );
}

#[test]
fn the_latest_run_failures_first_then_a_re_run_line() {
    let f = w();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"echo no; exit 3\"\n",
    );
    assert_eq!(f.vx(&["run", "build", "--all"]).code, 1);
    let out = f.vx(&["last"]);
    assert_eq!(out.code, 0, "{out:?}");
    insta::assert_snapshot!(stable(&out.stdout, &f));
}

#[test]
fn failed_picks_the_latest_failure_and_a_prefix_picks_a_run() {
    let f = w();
    f.write(
        "packages/docs/vx.toml",
        "[tasks.build]\ncommand = \"exit 5\"\n",
    );
    assert_eq!(f.vx(&["run", "docs#build"]).code, 1);
    f.write(
        "packages/docs/vx.toml",
        "[tasks.build]\ncommand = \"echo fixed\"\n",
    );
    assert_eq!(f.vx(&["run", "docs#build"]).code, 0);
    let latest = f.vx(&["last", "--format", "json"]);
    let latest: Value = serde_json::from_str(&latest.stdout).unwrap();
    assert_eq!(latest["invocation"]["exit_code"], 0);
    let failed = f.vx(&["last", "--failed", "--format", "json"]);
    let failed: Value = serde_json::from_str(&failed.stdout).unwrap();
    assert_eq!(failed["invocation"]["exit_code"], 1);
    assert_eq!(failed["tasks"][0]["exit_code"], 5);
    let id = failed["invocation"]["run_id"]
        .as_str()
        .unwrap()
        .replace('-', "");
    let by_prefix = f.vx(&["last", &id[..14]]);
    assert_eq!(by_prefix.code, 0, "{by_prefix:?}");
    assert!(by_prefix.stdout.contains("exit 5"), "{}", by_prefix.stdout);
    let unknown = f.vx(&["last", "ffffffffffff"]);
    assert_eq!(
        (unknown.code, unknown.stderr.as_str()),
        (1, "vx: history has no run `ffffffffffff`\n")
    );
    let list = f.vx(&["last", "--list", "--failed"]);
    assert_eq!(list.stdout.lines().count(), 1, "{}", list.stdout);
    let list = f.vx(&["last", "--list=1", "--format", "json"]);
    let list: Value = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(list["runs"].as_array().unwrap().len(), 1);
    assert_eq!(list["runs"][0]["run_id"], latest["invocation"]["run_id"]);
    let both = f.vx(&["last", &id[..14], "--list"]);
    assert_eq!(both.code, 2, "{both:?}");
}

#[test]
fn list_shows_recent_runs_newest_first() {
    let f = w();
    for _ in 0..3 {
        assert_eq!(f.vx(&["run", "docs#build"]).code, 0);
    }
    let out = f.vx(&["last", "--list=2"]);
    assert_eq!(out.code, 0, "{out:?}");
    insta::assert_snapshot!(stable(&out.stdout, &f));
}

#[test]
fn only_the_sixteen_slowest_hits_are_listed() {
    let tasks: String = (0..20)
        .map(|n| format!("[tasks.t{n:02}]\ncommand = \"echo {n}\"\ncache = {{ inputs = [], outputs = [] }}\n"))
        .collect();
    let f = one_project(&tasks);
    let ids: Vec<String> = (0..20).map(|n| format!("lib#t{n:02}")).collect();
    let mut args = vec!["run"];
    args.extend(ids.iter().map(String::as_str));
    assert_eq!(f.vx(&args).code, 0);
    assert_eq!(f.vx(&args).code, 0);
    let out = f.vx(&["last"]);
    let hits = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("up-to-date"))
        .count();
    assert_eq!(hits, 16, "{}", out.stdout);
    crate::assert_contains(&out.stdout, "… and 4 more cache hits\n");
    assert!(!out.stdout.contains("re-run"), "{}", out.stdout);
}

/// ACC-23's last part: the retried task's attempts are in `vx last --format json`.
#[test]
fn acc23_attempts_are_recorded() {
    let counter = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(counter.path(), "0").unwrap();
    let f = one_project(&format!(
        "[tasks.flaky]\ncommand = \"n=$(cat {0}); echo $((n+1)) > {0}; test $n -ge 1\"\nretries = 2\n",
        counter.path().display()
    ));
    assert_eq!(f.vx(&["run", "lib#flaky"]).code, 0);
    let out = f.vx(&["last", "--format", "json"]);
    let last: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(last["tasks"][0]["attempts"], 2, "{last}");
    let text = f.vx(&["last"]);
    crate::assert_contains(&text.stdout, "2 attempts");
}

/// HIST-1: a history write that fails is one warning line; the run's exit code stands.
#[test]
fn a_history_write_failure_is_one_line_and_keeps_the_exit_code() {
    let f = w();
    assert_eq!(f.vx(&["run", "docs#build"]).code, 0);
    let db = rusqlite::Connection::open(f.path(".vx/cache.db")).unwrap();
    db.execute_batch(
        "CREATE TRIGGER refuse BEFORE INSERT ON invocations
         BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END;",
    )
    .unwrap();
    drop(db);
    let out = f.vx(&["run", "docs#build"]);
    assert_eq!(out.code, 0, "{out:?}");
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("history"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.stderr);
    assert!(
        warnings[0].starts_with("warning: could not record this run in history: ")
            && warnings[0].contains("refused by a test trigger"),
        "{}",
        warnings[0]
    );
    // The earlier run is still there, and is still the latest.
    let last = f.vx(&["last", "--list"]);
    assert_eq!(last.stdout.lines().count(), 1, "{}", last.stdout);
}

/// HIST-1: the run's context is recorded: the branch and commit `HEAD` names, the CI provider,
/// and the command line with the arguments forwarded to tasks replaced by digests.
#[test]
fn the_branch_commit_ci_provider_and_masked_argv_are_recorded() {
    let f = one_project("[tasks.deploy]\ncommand = \"true\"\n");
    let out = f.vx_in(
        "",
        &["run", "lib#deploy", "--", "--token", "hunter2"],
        &[("GITHUB_ACTIONS", "true"), ("CI", "true")],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let last = f.vx(&["last", "--format", "json"]);
    let run: Value = serde_json::from_str(&last.stdout).unwrap();
    let invocation = &run["invocation"];
    assert_eq!(invocation["branch"], "main");
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(f.root())
        .output()
        .unwrap();
    assert_eq!(
        invocation["commit"].as_str().unwrap(),
        String::from_utf8_lossy(&head.stdout).trim()
    );
    assert_eq!(invocation["ci_provider"], "github-actions");
    let argv: Vec<&str> = invocation["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(&argv[1..4], ["run", "lib#deploy", "--"]);
    assert!(
        argv[4..].iter().all(|a| a.starts_with("[forwarded ")),
        "{argv:?}"
    );
    assert!(!last.stdout.contains("hunter2"), "{}", last.stdout);
    let text = f.vx(&["last"]);
    crate::assert_contains(&text.stdout, "ci         github-actions\n");
}

/// `vx why` of a task vx never caches says what the task is, not a cache reason that does
/// not apply (`writes-off`, `skipped`); a skipped task names what blocked it.
#[test]
fn why_says_what_a_never_cached_task_is() {
    let f = one_project(concat!(
        "[tasks.test]\ncommand = \"true\"\n\n",
        "[tasks.dev]\ncommand = \"true\"\npersistent = true\n\n",
        "[tasks.sh]\ncommand = \"true\"\ninteractive = true\n\n",
        "[tasks.check]\ndepends-on = [\"test\"]\n\n",
        "[tasks.broken]\ncommand = \"exit 3\"\n\n",
        "[tasks.after]\ncommand = \"true\"\ndepends-on = [\"broken\"]\n",
        "cache = { inputs = [], outputs = [] }\n",
    ));
    for _ in 0..2 {
        assert_eq!(f.vx(&["run", "lib#test"]).code, 0);
    }
    // The reason its result was not saved, as history records it.
    let last = f.vx(&["last", "--format", "json"]);
    let last: Value = serde_json::from_str(&last.stdout).unwrap();
    assert_eq!(last["tasks"][0]["unsaved_reason"], "uncached", "{last}");
    assert_eq!(f.vx(&["run", "lib#dev"]).code, 0);
    assert_eq!(f.vx(&["run", "lib#check"]).code, 0);
    assert_eq!(f.vx(&["run", "lib#after"]).code, 1);
    let why = |task: &str| {
        let out = f.vx(&["why", task]);
        assert_eq!(out.code, 0, "{out:?}");
        let verdict = out.stdout.lines().find(|l| l.starts_with("verdict"));
        verdict.unwrap_or_default().to_string()
    };
    assert_eq!(
        why("lib#test"),
        "verdict    `lib#test` has no `cache` table: it runs every time"
    );
    assert_eq!(
        why("lib#dev"),
        "verdict    `lib#dev` is persistent: never cached"
    );
    // Never run: the configuration alone says what it is.
    assert_eq!(
        why("lib#sh"),
        "verdict    `lib#sh` is interactive: never cached"
    );
    assert_eq!(
        why("lib#check"),
        "verdict    `lib#check` is a group: it runs nothing itself, so it has no key"
    );
    assert_eq!(
        why("lib#after"),
        "verdict    skipped: blocked by lib#broken, so it has no key"
    );
}

/// A failed task's last lines are kept in history (schema 8): `vx last` shows ten under its
/// row, `--format json` the thirty history keeps; a task that passed keeps none.
#[test]
fn a_failed_tasks_last_lines_are_kept_and_shown() {
    let f = w();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"for i in $(seq 1 40); do echo line $i; done; exit 3\"\n",
    );
    f.write(
        "packages/docs/vx.toml",
        "[tasks.build]\ncommand = \"echo fine\"\n",
    );
    assert_eq!(f.vx(&["run", "lib#build", "docs#build"]).code, 1);
    let out = f.vx(&["last"]);
    let shown: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("  │ "))
        .collect();
    let want: Vec<String> = (31..=40).map(|i| format!("line {i}")).collect();
    assert_eq!(shown, want, "{}", out.stdout);
    let after_failed = out
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("failed"))
        .nth(1)
        .unwrap();
    assert_eq!(after_failed, "  │ line 31");
    let json: Value = serde_json::from_str(&f.vx(&["last", "--format", "json"]).stdout).unwrap();
    let tasks = json["tasks"].as_array().unwrap();
    let lib = tasks.iter().find(|t| t["id"] == "lib#build").unwrap();
    let kept: Vec<String> = (11..=40).map(|i| format!("line {i}")).collect();
    assert_eq!(lib["output_tail"].as_str().unwrap(), kept.join("\n"));
    let docs = tasks.iter().find(|t| t["id"] == "docs#build").unwrap();
    assert!(docs.get("output_tail").is_none(), "{docs}");
}
