//! The files a run writes about itself: `--summarize` (UI-14), `--profile` (UI-15) and
//! `--events` (the run as it happens, for programs; `vx mcp` reads it).

use serde_json::Value;
use vx_test_support::fixture::Fixture;
use vx_test_support::process::test_child_path;

use crate::{assert_contains, one_project, w, w_cached};

/// The path from the `vx: wrote <path>` line, relative to the root.
fn written(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("vx: wrote "))
        .unwrap_or_else(|| panic!("no `vx: wrote` line in {stderr:?}"))
        .to_string()
}

fn read_json(f: &Fixture, rel: &str) -> Value {
    serde_json::from_str(&f.read(rel)).expect("valid JSON")
}

/// The run-dependent values replaced, so the rest can be a snapshot (UI-11).
fn redacted(mut summary: Value) -> String {
    for field in ["run_id", "started_at", "ended_at", "total_ms"] {
        summary[field] = Value::String(format!("[{field}]"));
    }
    summary["git"]["commit"] = Value::String("[commit]".into());
    // Which chain is longest depends on timing; ci_reports.rs checks it where it does not.
    summary["critical_path"] = Value::String("[critical_path]".into());
    for task in summary["tasks"].as_array_mut().unwrap() {
        let task = task.as_object_mut().unwrap();
        for field in [
            "duration_ms",
            "key",
            "cpu_ms",
            "peak_rss_bytes",
            "stored_duration_ms",
            "start_offset_ms",
            "end_offset_ms",
        ] {
            if task.contains_key(field) {
                task.insert(field.into(), Value::String(format!("[{field}]")));
            }
        }
    }
    serde_json::to_string_pretty(&summary).unwrap()
}

#[test]
fn summarize_writes_the_run_as_json_in_the_cache_directory() {
    let f = w_cached();
    let out = f.vx(&["run", "build", "--all", "--summarize"]);
    assert_eq!(out.code, 0, "{out:?}");
    let path = written(&out.stderr);
    assert!(
        path.starts_with(".vx/runs/") && path.ends_with(".json"),
        "{path}"
    );
    let summary = read_json(&f, &path);
    assert_eq!(
        path,
        format!(".vx/runs/{}.json", summary["run_id"].as_str().unwrap())
    );
    // The line comes before the footer, which is the last thing printed.
    assert!(out
        .stdout
        .trim_end()
        .lines()
        .last()
        .unwrap()
        .starts_with("result"));
    insta::assert_snapshot!(redacted(summary));

    // The second run: every cached task up to date, docs (uncached) runs again.
    let again = f.vx(&["run", "build", "--all", "--summarize"]);
    let summary = read_json(&f, &written(&again.stderr));
    let counts = &summary["counts"];
    assert_eq!(
        (&counts["up_to_date"], &counts["no_cache"], &counts["total"]),
        (&Value::from(2), &Value::from(1), &Value::from(3))
    );
    let lib = &summary["tasks"].as_array().unwrap()[2];
    assert_eq!(lib["id"], "lib#build");
    assert!(lib["stored_duration_ms"].is_u64(), "{lib}");
    assert_eq!(lib["key"].as_str().unwrap().len(), 64);
}

/// Like Turborepo's summary, each task's command, input files with their hashes, and
/// variable names (never values), and the run's commit and vx version.
#[test]
fn summarize_records_commands_inputs_env_names_and_the_commit() {
    let f = w();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"mkdir -p dist && cat src/*.txt > dist/out.txt && echo\"\n\
         env = { pass-through = [\"LANG_EXTRA\"], define = { MODE = \"production\" }, secret = [\"API_TOKEN\"] }\n\
         cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"], env = [\"MODE\"] }\n",
    );
    f.commit();
    let first = f.vx(&["run", "lib#build"]);
    assert_eq!(first.code, 0, "{first:?}");
    // A hit keeps what its key was derived from too.
    let out = f.vx_in(
        "",
        &["run", "lib#build", "--summarize=s.json"],
        &[("API_TOKEN", "s3cret-value"), ("LANG_EXTRA", "x-value")],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "cache      1 up-to-date");
    let text = f.read("s.json");
    let summary: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(summary["vx_version"], env!("CARGO_PKG_VERSION"));
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(f.root())
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    assert_eq!(summary["git"]["commit"], head.as_str());
    let lib = &summary["tasks"][0];
    assert_eq!(lib["id"], "lib#build");
    assert_eq!(
        lib["env"],
        serde_json::json!({
            "key": ["MODE"],
            "pass_through": ["LANG_EXTRA"],
            "define": ["MODE"],
            "secret": ["API_TOKEN"],
        })
    );
    let blob = std::process::Command::new("git")
        .args(["hash-object", "packages/lib/src/a.txt"])
        .current_dir(f.root())
        .output()
        .unwrap();
    let blob = String::from_utf8_lossy(&blob.stdout).trim().to_string();
    assert_eq!(
        lib["inputs"],
        serde_json::json!([{ "path": "packages/lib/src/a.txt", "hash": blob }])
    );
    // The executed command with the forwarded argument, the secret masked; no value anywhere.
    let f2 = run_and_read(&f);
    assert!(f2["tasks"][0]["command"]
        .as_str()
        .unwrap()
        .starts_with("mkdir -p dist && cat src/*.txt > dist/out.txt && echo"));
    for value in ["s3cret-value", "x-value", "production"] {
        assert!(!text.contains(value), "`{value}` in the summary:\n{text}");
    }
}

/// Runs lib#build with a forwarded secret (executing: `--force`) and reads its summary.
fn run_and_read(f: &Fixture) -> Value {
    let out = f.vx_in(
        "",
        &[
            "run",
            "lib#build",
            "--force",
            "--summarize=t.json",
            "--",
            "s3cret-value",
        ],
        &[("API_TOKEN", "s3cret-value")],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let text = f.read("t.json");
    assert!(!text.contains("s3cret-value"), "{text}");
    let summary: Value = serde_json::from_str(&text).unwrap();
    assert!(
        summary["tasks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with(" ***"),
        "{summary}"
    );
    summary
}

#[test]
fn summarize_to_a_path_records_failures_and_skips() {
    let f = w_cached();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"exit 3\"\n",
    );
    let out = f.vx_in(
        "packages",
        &["run", "build", "--all", "--summarize=out/run.json"],
        &[],
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(written(&out.stderr), "out/run.json");
    let summary = read_json(&f, "packages/out/run.json");
    assert_eq!(
        (&summary["ok"], &summary["exit_code"]),
        (&Value::from(false), &Value::from(1))
    );
    let tasks = summary["tasks"].as_array().unwrap();
    let by_id = |id: &str| tasks.iter().find(|t| t["id"] == id).unwrap();
    assert_eq!(by_id("lib#build")["status"], "failed");
    assert_eq!(by_id("lib#build")["exit_code"], 3);
    assert_eq!(by_id("app#build")["status"], "skipped");
    assert_eq!(by_id("app#build")["blocked_by"], "lib#build");
    assert!(by_id("app#build").get("cache").is_none());
    assert_eq!(
        summary["counts"]["total"].as_u64(),
        Some(tasks.len() as u64)
    );
}

#[test]
fn a_summary_that_cannot_be_written_is_one_line_and_changes_nothing_else() {
    let f = w_cached();
    let out = f.vx(&["run", "build", "--all", "--summarize=/dev/null/run.json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("/dev/null/run.json"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].starts_with("vx: could not write /dev/null/run.json: "),
        "{}",
        lines[0]
    );
}

#[test]
fn profile_writes_one_event_per_task_attempt() {
    let counter = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(counter.path(), "0").unwrap();
    let f = one_project(&format!(
        concat!(
            "[tasks.flaky]\n",
            "command = \"n=$(cat {0}); echo $((n+1)) > {0}; test $n -ge 1\"\n",
            "retries = 2\n\n",
            "[tasks.build]\n",
            "command = \"echo built\"\n",
        ),
        counter.path().display()
    ));
    let out = f.vx(&["run", "lib#flaky", "lib#build", "--profile"]);
    assert_eq!(out.code, 0, "{out:?}");
    let path = written(&out.stderr);
    assert!(path.ends_with(".trace.json"), "{path}");
    let trace = read_json(&f, &path);
    let events = trace["traceEvents"].as_array().unwrap();
    let attempts: Vec<&Value> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] != "vx")
        .collect();
    let named = |name: &str| attempts.iter().filter(|e| e["name"] == name).count();
    assert_eq!((named("lib#flaky"), named("lib#build")), (2, 1), "{trace}");
    assert_eq!(attempts.len(), 3);
    let flaky: Vec<&&Value> = attempts
        .iter()
        .filter(|e| e["name"] == "lib#flaky")
        .collect();
    assert_eq!(
        (&flaky[0]["cat"], &flaky[1]["cat"]),
        (&Value::from("failed"), &Value::from("success"))
    );
    assert!(flaky[0]["ts"].as_u64() <= flaky[1]["ts"].as_u64());
    // vx's own phases, and the project's thread.
    assert!(events
        .iter()
        .any(|e| e["cat"] == "vx" && e["name"] == "plan"));
    assert!(events
        .iter()
        .any(|e| e["ph"] == "M" && e["args"]["name"] == "lib"));
}

/// The plan's own phases, and the helper beside it: with no cache yet it lists the workspace's
/// files, with one it opens the cache, from the start of the run (before the workspace is
/// loaded, not after).
#[test]
fn profile_shows_the_helper_beside_the_plan_from_the_start() {
    let f = one_project(
        "[tasks.build]\ncommand = \"echo built\"\ncache = { inputs = [], outputs = [] }\n",
    );
    let phases = |out: &vx_test_support::fixture::Output| {
        assert_eq!(out.code, 0, "{out:?}");
        let trace = read_json(&f, &written(&out.stderr));
        let events = trace["traceEvents"].as_array().unwrap().clone();
        let beside = events
            .iter()
            .find(|e| e["ph"] == "M" && e["args"]["name"] == "vx (beside)")
            .map(|e| e["tid"].clone())
            .expect("a `vx (beside)` thread");
        let find = move |name: &str, tid: &Value| {
            events
                .iter()
                .find(|e| e["cat"] == "vx" && e["name"] == name && &e["tid"] == tid)
                .map(|e| (e["ts"].as_u64().unwrap(), e["dur"].as_u64().unwrap()))
                .unwrap_or_else(|| panic!("no phase {name:?} on thread {tid}: {events:?}"))
        };
        (find, beside)
    };
    let out = f.vx(&["run", "lib#build", "--profile"]);
    let (find, beside) = phases(&out);
    let (load_at, load_took) = find("load the workspace", &Value::from(0));
    let (graph_at, _) = find("resolve the tasks, build the graph", &Value::from(0));
    assert_eq!(load_at, 0);
    assert!(graph_at >= load_at + load_took);
    let (listed_at, _) = find("list the workspace's files", &beside);
    assert!(
        listed_at < load_at + load_took,
        "the listing starts before the workspace is loaded"
    );
    let out = f.vx(&["run", "lib#build", "--profile"]);
    let (find, beside) = phases(&out);
    let (_, load_took) = find("load the workspace", &Value::from(0));
    let (opened_at, _) = find("open the cache", &beside);
    assert!(
        opened_at < load_took,
        "the cache is opened beside the loading"
    );
}

/// ACC-30: two tasks of 200 MiB each. Run 1 (no history): their spans overlap in the trace.
/// Run 2 with `--force` and a 300 MiB budget: 256 MiB reserved each, no overlap, and one of
/// them was held for memory.
#[test]
fn acc30_memory_admission_in_the_trace_and_the_summary() {
    let child = test_child_path().display().to_string();
    let task = |name: &str| {
        format!(
            "[tasks.{name}]\ncommand = \"{child} alloc 200 sleep 1\"\ncache = {{ inputs = [], outputs = [] }}\n"
        )
    };
    let f = one_project(&format!("{}{}", task("one"), task("two")));
    // Each task's span in a trace, sorted by start.
    let spans = |path: &str| {
        let trace = read_json(&f, path);
        let mut spans: Vec<(u64, u64)> = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] != "vx")
            .map(|e| {
                let ts = e["ts"].as_u64().unwrap();
                (ts, ts + e["dur"].as_u64().unwrap())
            })
            .collect();
        spans.sort();
        assert_eq!(spans.len(), 2, "{trace}");
        spans
    };
    let first = f.vx_in(
        "",
        &[
            "run",
            "lib#one",
            "lib#two",
            "--concurrency",
            "2",
            "--profile",
        ],
        &[("VX_MEMORY_BUDGET", "300M")],
    );
    assert_eq!(first.code, 0, "{first:?}");
    let s = spans(&written(&first.stderr));
    assert!(s[1].0 < s[0].1, "run 1 overlaps: {s:?}");

    let second = f.vx_in(
        "",
        &[
            "run",
            "lib#one",
            "lib#two",
            "--concurrency",
            "2",
            "--force",
            "--profile",
            "--summarize",
        ],
        &[("VX_MEMORY_BUDGET", "300M")],
    );
    assert_eq!(second.code, 0, "{second:?}");
    let paths: Vec<&str> = second
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("vx: wrote "))
        .collect();
    assert_eq!(paths.len(), 2, "{}", second.stderr);
    let trace = paths.iter().find(|p| p.ends_with(".trace.json")).unwrap();
    let s = spans(trace);
    assert!(s[0].1 <= s[1].0, "run 2 does not overlap: {s:?}");
    let summary = read_json(
        &f,
        paths.iter().find(|p| !p.ends_with(".trace.json")).unwrap(),
    );
    let held: Vec<u64> = summary["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["admission_held_ms"].as_u64().unwrap())
        .collect();
    assert!(held.iter().filter(|&&h| h > 0).count() == 1, "{held:?}");
}

#[test]
fn a_kept_servers_exit_rewrites_the_summarys_exit_code() {
    let f =
        one_project("[tasks.dev]\ncommand = \"echo up; sleep 0.3; exit 3\"\npersistent = true\n");
    let out = f.vx(&["run", "lib#dev", "--summarize=run.json"]);
    assert_eq!(out.code, 1, "{out:?}");
    crate::assert_contains(&out.stderr, "lib#dev ended (exit 3)");
    let summary = read_json(&f, "run.json");
    assert_eq!(
        (&summary["ok"], &summary["exit_code"]),
        (&Value::from(false), &Value::from(1)),
        "{summary}"
    );
    // History records the run again with the final exit code and the task's end.
    let last = f.vx(&["last", "--format", "json"]);
    let last: Value = serde_json::from_str(&last.stdout).unwrap();
    assert_eq!(last["invocation"]["exit_code"], 1, "{last}");
    assert_eq!(last["invocation"]["run_id"], summary["run_id"]);
    assert_eq!(last["tasks"][0]["status"], "failed", "{last}");
    assert_eq!(last["tasks"][0]["exit_code"], 3, "{last}");
}

/// UI-9: under GitHub Actions a success is a group titled with its status and duration, a
/// failure stays outside groups with an `::error` annotation, and task output (in frames and in
/// the recap) is fenced so a task cannot issue workflow commands.
#[test]
fn github_actions_groups_frames_and_fences_task_output() {
    let f = crate::w();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"echo ::warning::from-lib; exit 3\"\n",
    );
    // docs ends after lib, so lib's frame is not the last one above the recap, and the recap
    // repeats its output (fenced too).
    f.write(
        "packages/docs/vx.toml",
        "[tasks.build]\ncommand = \"sleep 1; echo docs\"\n",
    );
    let out = f.vx_in(
        "",
        &["run", "build", "--all"],
        &[("GITHUB_ACTIONS", "true"), ("CI", "true")],
    );
    assert_eq!(out.code, 1, "{out:?}");
    let text = &out.stdout;
    let token = text
        .lines()
        .find_map(|l| l.strip_prefix("::stop-commands::"))
        .expect("a fence")
        .to_string();
    assert_eq!(token.len(), 32, "{token}");
    // Every line a task printed lies inside a fence.
    let mut fenced = false;
    for line in text.lines() {
        if line == format!("::stop-commands::{token}") {
            fenced = true;
        } else if line == format!("::{token}::") {
            fenced = false;
        } else if line.starts_with("::warning::") {
            assert!(fenced, "unfenced task output: {text}");
        }
    }
    let printed = text
        .lines()
        .filter(|l| l.starts_with("::warning::from-lib"))
        .count();
    assert_eq!(printed, 2, "frame and recap: {text}");
    let docs = text
        .find("::group::docs#build (executed ")
        .expect("docs grouped");
    assert!(text[docs..].contains("::endgroup::"), "{text}");
    let lib = text
        .find("┌─ lib#build  failed (exit 3)")
        .expect("lib's frame");
    let before_lib = &text[..lib];
    assert!(
        before_lib.matches("::group::").count() == before_lib.matches("::endgroup::").count(),
        "the failure is outside any group: {text}"
    );
    crate::assert_contains(text, "::error title=lib#build::failed (exit 3)\n");
    // Another run, another token.
    let again = f.vx_in(
        "",
        &["run", "build", "--all"],
        &[("GITHUB_ACTIONS", "true"), ("CI", "true")],
    );
    assert!(!again.stdout.contains(&token));
}

/// UI-3: `--output-logs=hash-only` prints one line per task with its short key, the same key
/// whether the task executed or hit.
#[test]
fn hash_only_lines_carry_the_short_key() {
    let f = w_cached();
    let keys = |out: &vx_test_support::fixture::Output| -> Vec<(String, String)> {
        let line =
            regex::Regex::new(r"(?m)^\S+ \S+ success \S+ (\S+#\S+)  ([0-9a-f]{12})$").unwrap();
        let mut keys: Vec<(String, String)> = line
            .captures_iter(&out.stdout)
            .map(|c| (c[1].to_string(), c[2].to_string()))
            .collect();
        keys.sort();
        keys
    };
    let first = f.vx(&["run", "build", "--all", "--output-logs", "hash-only"]);
    assert_eq!(first.code, 0, "{first:?}");
    let executed = keys(&first);
    assert_eq!(executed.len(), 3, "{}", first.stdout);
    let again = f.vx(&["run", "build", "--all", "--output-logs", "hash-only"]);
    let hits = keys(&again);
    // lib and app hit with the keys they executed with; docs (uncached) executes again.
    assert_eq!(hits, executed, "{}", again.stdout);
    crate::assert_contains(&again.stdout, "up-to-date lib#build");
}

/// `--log-order=stream` holds a task's unfinished line until it ends, except a line that grows
/// past 64 KiB without ending (a progress bar redrawn with `\r`): that is printed while the task
/// still runs. The task here prints 70 000 bytes with no newline, then waits until the test has
/// seen them on vx's stdout (or 30 s).
#[test]
fn log_order_stream_prints_a_line_that_never_ends_once_it_is_long() {
    use std::io::Read;
    let f = one_project(
        "[tasks.bar]\ncommand = \"head -c 70000 /dev/zero | tr '\\\\0' x; \
         i=0; while [ ! -f seen ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; echo; echo end\"\n",
    );
    let mut child = f
        .command("", &["run", "lib#bar", "--log-order=stream"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 8192];
    let started = std::time::Instant::now();
    // Until 64 KiB of x's have come out, which only the cap lets happen before the task ends.
    while seen.iter().filter(|&&b| b == b'x').count() < 64 * 1024 {
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "vx ended first: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    let waited = started.elapsed();
    f.write("packages/lib/seen", "");
    stdout.read_to_end(&mut seen).unwrap();
    assert!(child.wait().unwrap().success());
    assert!(
        waited < std::time::Duration::from_secs(25),
        "the long line came out only when the task ended ({waited:?})"
    );
    let text = String::from_utf8_lossy(&seen);
    let xs: Vec<&str> = text.lines().filter(|l| l.contains("xxxx")).collect();
    assert!(
        xs.iter().all(|l| l.starts_with("lib#bar │ ")),
        "every piece has the prefix"
    );
    let printed: usize = xs.iter().map(|l| l.matches('x').count()).sum();
    assert_eq!(printed, 70_000, "every byte, once");
    assert_contains(&text, "lib#bar │ end\n");
}

/// The events of a run, parsed.
fn events(f: &Fixture, rel: &str) -> Vec<Value> {
    f.read(rel)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

#[test]
fn events_say_the_run_as_it_happens_one_json_object_per_line() {
    let f = w_cached();
    f.write(
        "packages/docs/vx.toml",
        "[tasks.build]\ncommand = \"echo half; echo oops >&2; exit 4\"\n",
    );
    let out = f.vx(&["run", "build", "--all", "--events=events.ndjson"]);
    assert_eq!(out.code, 1, "{out:?}");
    let all = events(&f, "events.ndjson");
    assert_eq!(
        all[0],
        serde_json::json!({"event": "plan", "tasks": ["app#build", "docs#build", "lib#build"]})
    );
    let of = |task: &str, kind: &str| -> Vec<&Value> {
        all.iter()
            .filter(|e| e["task"] == task && e["event"] == kind)
            .collect()
    };
    for task in ["app#build", "docs#build", "lib#build"] {
        let started = all
            .iter()
            .position(|e| e["task"] == task && e["event"] == "started");
        let finished = all
            .iter()
            .position(|e| e["task"] == task && e["event"] == "finished");
        assert!(started.unwrap() < finished.unwrap(), "{task}: {all:?}");
    }
    let docs = of("docs#build", "finished")[0];
    assert_eq!(
        (&docs["status"], &docs["cache"], &docs["exit_code"]),
        (
            &Value::from("failed"),
            &Value::from("no-cache"),
            &Value::from(4)
        )
    );
    let text: String = of("docs#build", "output")
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "half\noops\n");
    let end = all.last().unwrap();
    assert_eq!(end["event"], "end");
    assert_eq!(
        end["counts"],
        serde_json::json!({"failed": 1, "success": 2})
    );
    // A hit: its stored log, marked as such, and never a replay of the run snapshot.
    let out = f.vx(&["run", "lib#build", "--events=again.ndjson"]);
    assert_eq!(out.code, 0, "{out:?}");
    let out = f.vx(&["run", "lib#build", "--events=again.ndjson"]);
    assert_eq!(out.code, 0, "{out:?}");
    let again = events(&f, "again.ndjson");
    let stored = again
        .iter()
        .find(|e| e["event"] == "output")
        .expect("the hit's log");
    assert_eq!(stored["stored"], true);
    assert_eq!(stored["text"], "built lib\n");
    let hit = again.iter().find(|e| e["event"] == "finished").unwrap();
    assert_eq!(hit["cache"], "up-to-date");
}

#[test]
fn events_that_cannot_be_written_are_said_once_and_the_run_goes_on() {
    let f = w();
    let out = f.vx(&["run", "lib#build", "--events=no/such/dir/events.ndjson"]);
    assert_eq!(out.code, 0, "{out:?}");
    let said: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("--events"))
        .collect();
    assert_eq!(said.len(), 1, "{}", out.stderr);
    assert!(said[0].contains("no/such/dir/events.ndjson"), "{}", said[0]);
    let out = f.vx(&["run", "lib#build", "--dry", "--events=e.ndjson"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: `--dry` cannot be combined with `--events`\n"
    );
}

/// A character split between two of a task's writes comes whole in the events, as the
/// terminal shows it.
#[test]
fn a_character_split_between_two_writes_is_one_in_the_events() {
    let f = w();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"printf '\\\\342'; sleep 0.3; printf '\\\\234\\\\223 done\\\\n'\"\n",
    );
    let out = f.vx(&["run", "lib#build", "--events=e.ndjson"]);
    assert_eq!(out.code, 0, "{out:?}");
    let text: String = events(&f, "e.ndjson")
        .iter()
        .filter(|e| e["event"] == "output")
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(text, "✓ done\n");
}
