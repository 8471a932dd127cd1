//! UI-17: `--report junit=PATH` (read back with Python's XML parser, as a CI's renderer would
//! read it) and GitHub Actions' job summary (Markdown appended to `$GITHUB_STEP_SUMMARY`), on
//! Fixture W where lib#build fails with output that XML and Markdown must escape.

use std::process::Command;

use vx_test_support::fixture::Fixture;

/// Fixture W where lib#build prints `<boom & "bang">` and fails with exit 3.
fn failing() -> Fixture {
    let f = crate::w();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"echo 'compiling'; echo '<boom & \\\"bang\\\">'; exit 3\"\n",
    );
    f.commit();
    f
}

#[test]
fn a_junit_report_has_a_test_case_per_task_and_the_failures_output() {
    let f = failing();
    let out = f.vx(&[
        "run",
        "build",
        "--all",
        "--report",
        "junit=reports/junit.xml",
    ]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    crate::assert_contains(&out.stderr, "vx: wrote reports/junit.xml\n");
    // Parsed by a real XML parser: each test case as `suite|name|classname|outcome|message|text`.
    let script = r#"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
print(root.tag, root.get("tests"), root.get("failures"), root.get("skipped"))
for suite in root:
    for case in suite:
        outcome = [c for c in case]
        kind = outcome[0].tag if outcome else "passed"
        message = outcome[0].get("message") if outcome else ""
        text = (outcome[0].text or "").strip().replace("\n", "/") if outcome else ""
        print("|".join([suite.get("name"), case.get("name"), case.get("classname"), kind, message, text]))
"#;
    let parsed = Command::new("python3")
        .args(["-c", script])
        .arg(f.path("reports/junit.xml"))
        .output()
        .expect("python3");
    assert!(parsed.status.success(), "{parsed:?}");
    let text = String::from_utf8(parsed.stdout).unwrap();
    assert_eq!(
        text,
        "testsuites 3 1 1\n\
         app|build|app|skipped|blocked by lib#build|\n\
         docs|build|docs|passed||\n\
         lib|build|lib|failure|failed (exit 3)|compiling/<boom & \"bang\">\n",
        "{}",
        f.read("reports/junit.xml")
    );
}

#[test]
fn github_actions_gets_a_job_summary_appended() {
    let f = failing();
    let file = f.path(".git/step_summary.md");
    std::fs::write(&file, "earlier step\n").unwrap();
    let out = f.vx_in(
        ".",
        &["run", "build", "--all"],
        &[
            ("GITHUB_ACTIONS", "true"),
            ("CI", "true"),
            ("GITHUB_STEP_SUMMARY", file.to_str().unwrap()),
        ],
    );
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let summary = std::fs::read_to_string(&file).unwrap();
    assert!(
        summary.starts_with("earlier step\n### ❌ `vx run build --all` — 1 of 3 tasks succeeded\n"),
        "{summary}"
    );
    for part in [
        "<details open><summary><code>lib#build</code> failed (exit 3)</summary>\n\n```text\ncompiling\n<boom & \"bang\">\n```",
        "Re-run the failed tasks: `vx run lib#build`",
        "| executed | restored (local) | restored (remote) | up to date | no cache | failed | skipped | time |",
        "| 0 | 0 | 0 | 0 | 2 | 1 | 1 | ",
        "| `docs#build` | ",
    ] {
        assert!(summary.contains(part), "{part} in:\n{summary}");
    }
}

#[test]
fn report_formats_and_plans_are_refused() {
    let f = crate::w();
    let out = f.vx(&["run", "build", "--all", "--report", "xml=out.xml"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        "error: invalid value `xml=out.xml` for --report (expected junit=PATH)\n"
    );
    let out = f.vx(&["run", "build", "--all", "--dry", "--report", "junit=x.xml"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        "error: `--dry` cannot be combined with `--report`\n"
    );
}

#[test]
fn the_job_summary_says_what_summarize_says() {
    let f = Fixture::w_cached(crate::vx_bin());
    let first = f.vx(&["run", "build", "--all"]);
    assert_eq!(first.code, 0, "{first:?}");
    // The second run restores lib and app: the summary's counts and time saved are the
    // `--summarize` record's.
    let file = f.path(".git/step_summary.md");
    let out = f.vx_in(
        ".",
        &["run", "build", "--all", "--summarize=summary.json"],
        &[("GITHUB_STEP_SUMMARY", file.to_str().unwrap())],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let json: serde_json::Value = serde_json::from_str(&f.read("summary.json")).unwrap();
    let count = |k: &str| json["counts"][k].as_u64().unwrap();
    // What the hits took when they ran, less what serving them cost, as the footer counts it.
    let stored: i64 = json["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["stored_duration_ms"].as_i64())
        .sum();
    assert!(stored > 0, "{json}");
    let saved: i64 = json["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| Some(t["stored_duration_ms"].as_i64()? - t["duration_ms"].as_i64()?))
        .sum();
    let row = format!(
        "| {} | {} | {} | {} | {} | {} | {} | {:.3} s (saved {:.3} s) |",
        count("executed"),
        count("restored_local"),
        count("restored_remote"),
        count("up_to_date"),
        count("no_cache"),
        count("failed"),
        count("skipped") + count("not_run"),
        json["total_ms"].as_u64().unwrap() as f64 / 1000.0,
        saved as f64 / 1000.0
    );
    let summary = std::fs::read_to_string(&file).unwrap();
    assert!(summary.contains(&row), "{row} in:\n{summary}");
    assert!(
        summary.contains(&format!(
            "— {} of {} tasks succeeded",
            count("success"),
            count("total")
        )),
        "{summary}"
    );
}

#[test]
fn the_critical_path_is_the_longest_chain_and_both_reports_name_it() {
    let f = Fixture::w_cached(crate::vx_bin());
    // lib (0.3 s) → app (0.3 s) is longer than docs alone (0.1 s), however the two interleave.
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"sleep 0.3 && mkdir -p dist && cat src/*.txt > dist/out.txt\"\n",
    );
    f.write(
        "packages/docs/vx.toml",
        "[tasks.build]\ncommand = \"sleep 0.1\"\n",
    );
    f.commit();
    let file = f.path(".git/step_summary.md");
    let out = f.vx_in(
        ".",
        &["run", "build", "--all", "--summarize=summary.json"],
        &[("GITHUB_STEP_SUMMARY", file.to_str().unwrap())],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let json: serde_json::Value = serde_json::from_str(&f.read("summary.json")).unwrap();
    let path = &json["critical_path"];
    assert_eq!(
        path["tasks"],
        serde_json::json!(["lib#build", "app#build"]),
        "{json}"
    );
    let took = |id: &str| {
        json["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap()["duration_ms"]
            .as_u64()
            .unwrap()
    };
    let total = took("lib#build") + took("app#build");
    assert_eq!(path["duration_ms"].as_u64().unwrap(), total);
    let summary = std::fs::read_to_string(&file).unwrap();
    let line = format!(
        "Critical path ({:.3} s): `lib#build` → `app#build`",
        total as f64 / 1000.0
    );
    assert!(summary.contains(&line), "{line} in:\n{summary}");
}

#[test]
fn a_report_that_cannot_be_written_is_one_line_and_changes_no_exit_code() {
    let f = crate::w();
    f.write("blocker", "a file, not a folder\n");
    let not_a_dir = f.path("blocker");
    let out = f.vx_in(
        ".",
        &[
            "run",
            "build",
            "--all",
            "--report",
            "junit=blocker/junit.xml",
        ],
        &[(
            "GITHUB_STEP_SUMMARY",
            not_a_dir.join("summary.md").to_str().unwrap(),
        )],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("could not write"))
        .collect();
    assert_eq!(lines.len(), 2, "{}", out.stderr);
    assert!(
        lines.iter().all(|l| l.starts_with("vx: could not write ")),
        "{}",
        out.stderr
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("vx: could not write the job summary to ")),
        "{}",
        out.stderr
    );
}
