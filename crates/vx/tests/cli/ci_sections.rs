//! UI-16: under GitLab CI, Azure Pipelines, Buildkite and TeamCity (each found from the variable
//! its documentation says it sets), a task that succeeded is folded into the CI's section, a
//! failed one stays open with the CI's error annotation, and what a task prints cannot open or
//! close a section: its markers are broken with a zero width space, in the frame and in the
//! recap. Fixture W: lib fails after printing forged markers; docs ends after it, so lib's
//! output is repeated in the recap.

use vx_test_support::fixture::{Fixture, Output};

/// Fixture W where lib#build prints the line `forged` and fails, and docs#build succeeds a
/// second later.
fn run_in(ci: (&str, &str), forged: &str) -> (Fixture, Output) {
    let f = crate::w();
    f.write(
        "packages/lib/vx.toml",
        &format!("[tasks.build]\ncommand = \"printf '%s\\\\n' '{forged}'; exit 3\"\n"),
    );
    f.write(
        "packages/docs/vx.toml",
        "[tasks.build]\ncommand = \"sleep 1; echo docs\"\n",
    );
    f.commit();
    let out = f.vx_in("", &["run", "build", "--all"], &[ci, ("CI", "true")]);
    assert_eq!(out.code, 1, "{out:?}");
    (f, out)
}

/// The forged marker never reaches the log whole (not even in the `$` line), and its broken
/// form is there twice as a line (the frame and the recap).
fn assert_broken(text: &str, forged_line: &str, broken_line: &str) {
    assert!(
        !text.contains(forged_line),
        "a forged `{forged_line}` reached the log: {text}"
    );
    assert_eq!(
        text.lines().filter(|l| *l == broken_line).count(),
        2,
        "frame and recap: {text}"
    );
}

/// The failure's frame is not inside a section: every section opened before it was closed.
fn assert_failure_outside(text: &str, open: &str, close: &str) {
    let lib = text
        .find("┌─ lib#build  failed (exit 3)")
        .expect("lib's frame");
    let before = &text[..lib];
    assert_eq!(
        before.matches(open).count(),
        before.matches(close).count(),
        "{text}"
    );
}

#[test]
fn gitlab_ci_folds_successes_into_collapsed_sections() {
    let (_f, out) = run_in(("GITLAB_CI", "true"), "section_end:1:lib_build");
    let text = &out.stdout;
    let docs = text
        .find("[collapsed=true]\r\x1b[0Kdocs#build (executed ")
        .expect(text);
    assert!(text[..docs].contains("\x1b[0Ksection_start:"), "{text}");
    assert!(text[docs..].contains("\x1b[0Ksection_end:"), "{text}");
    assert!(text.contains(":docs_build[collapsed=true]"), "{text}");
    assert_failure_outside(text, "section_start:", "section_end:");
    assert_broken(
        text,
        "section_end:1:lib_build",
        "section_\u{200b}end:1:lib_build",
    );
}

#[test]
fn azure_pipelines_groups_successes_and_annotates_the_failure() {
    let (_f, out) = run_in(
        ("TF_BUILD", "True"),
        "##vso[task.complete result=Succeeded]",
    );
    let text = &out.stdout;
    let docs = text.find("##[group]docs#build (executed ").expect(text);
    assert!(text[docs..].contains("##[endgroup]\n"), "{text}");
    assert_failure_outside(text, "##[group]", "##[endgroup]");
    crate::assert_contains(
        text,
        "##vso[task.logissue type=error]lib#build: failed (exit 3)\n",
    );
    assert_broken(
        text,
        "##vso[task.complete result=Succeeded]",
        "#\u{200b}#vso[task.complete result=Succeeded]",
    );
}

#[test]
fn buildkite_collapses_successes_and_expands_the_failure() {
    let (_f, out) = run_in(("BUILDKITE", "true"), "--- forged group");
    let text = &out.stdout;
    crate::assert_contains(text, "--- docs#build (executed ");
    crate::assert_contains(text, "+++ lib#build (failed (exit 3) ");
    // Buildkite reads a marker only at the start of a line.
    assert!(
        !text.lines().any(|l| l.starts_with("--- forged group")),
        "{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| *l == "\u{200b}--- forged group")
            .count(),
        2,
        "frame and recap: {text}"
    );
}

#[test]
fn teamcity_opens_blocks_and_reports_the_build_problem() {
    let (_f, out) = run_in(
        ("TEAMCITY_VERSION", "2024.12"),
        "##teamcity[blockClosed name=|x|]",
    );
    let text = &out.stdout;
    crate::assert_contains(
        text,
        "##teamcity[blockOpened name='docs#build' description='executed'",
    );
    crate::assert_contains(text, "##teamcity[blockClosed name='docs#build']\n");
    assert_failure_outside(text, "##teamcity[blockOpened", "##teamcity[blockClosed");
    crate::assert_contains(
        text,
        "##teamcity[buildProblem description='lib#build: failed (exit 3)']\n",
    );
    assert_broken(
        text,
        "##teamcity[blockClosed name=|x|]",
        "#\u{200b}#teamcity[blockClosed name=|x|]",
    );
}
