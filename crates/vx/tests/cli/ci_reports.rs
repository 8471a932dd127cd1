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
