//! Whole-output snapshots (TEST-1, UI-11): what a user sees, with durations and temporary
//! paths redacted. `--concurrency 1` makes the order of independent tasks deterministic.

use crate::w;

#[test]
fn broad_run_prints_one_line_per_task_and_the_footer() {
    let f = w();
    let out = f.vx(&["run", "build", "--all", "--concurrency", "1"]);
    assert_eq!(out.code, 0, "{out:?}");
    insta::assert_snapshot!(out.stdout_redacted(&f));
}

#[test]
fn focused_run_prints_frames_of_requested_tasks() {
    let f = w();
    let out = f.vx_in("packages/app", &["run", "check", "--concurrency", "1"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    insta::assert_snapshot!(out.stdout_redacted(&f));
}

#[test]
fn failure_prints_the_frame_and_recap_above_the_footer() {
    let f = w();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"echo working; echo boom >&2; exit 3\"\n",
    );
    let out = f.vx(&["run", "build", "--all", "--concurrency", "1"]);
    assert_eq!(out.code, 1, "{out:?}");
    insta::assert_snapshot!(out.stdout_redacted(&f));
}

#[test]
fn show_prints_a_projects_tasks_with_their_sources() {
    let f = w();
    let out = f.vx(&["show", "app"]);
    assert_eq!(out.code, 0, "{out:?}");
    insta::assert_snapshot!(out.stdout);
}

/// Fixture W with `lib#build` cached (`src/**` → `dist/**`), committed.
fn w_with_a_cached_lib() -> vx_test_support::fixture::Fixture {
    let f = w();
    f.write("packages/lib/vx.toml", vx_test_support::fixture::CACHED_LIB);
    f.commit();
    f
}

#[test]
fn every_configuration_error_is_printed_at_once_with_its_place() {
    let f = w();
    f.write(
        "packages/docs/vx.toml",
        "[tasks.build]\ncomand = \"echo x\"\n[tasks.test]\ncache = { inputs = 3 }\n",
    );
    let out = f.vx(&["run", "build", "--all"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stdout, "");
    insta::assert_snapshot!(out.stderr_redacted(&f));
}

#[test]
fn an_unknown_task_and_an_unknown_flag_get_a_did_you_mean() {
    let f = w();
    let task = f.vx(&["run", "biuld", "--all"]);
    assert_eq!(task.code, 2, "{task:?}");
    let flag = f.vx(&["run", "build", "--concurency", "2"]);
    assert_eq!(flag.code, 2, "{flag:?}");
    insta::assert_snapshot!(format!(
        "$ vx run biuld --all\n{}$ vx run build --concurency 2\n{}",
        task.stderr_redacted(&f),
        flag.stderr_redacted(&f)
    ));
}

#[test]
fn dry_prints_the_plan_by_level_with_each_prediction() {
    let f = w_with_a_cached_lib();
    assert_eq!(f.vx(&["run", "build", "--all"]).code, 0);
    f.write("packages/app/src/b.txt", "changed\n");
    let out = f.vx(&["run", "check", "--all", "--dry"]);
    assert_eq!(out.code, 0, "{out:?}");
    insta::assert_snapshot!(out.stdout_redacted(&f));
}

#[test]
fn the_ci_flow_frames_every_task_and_ends_with_the_footer() {
    let f = w_with_a_cached_lib();
    let out = f.vx_in(
        "",
        &["run", "build", "--all", "--concurrency", "1"],
        &[("CI", "true")],
    );
    assert_eq!(out.code, 0, "{out:?}");
    insta::assert_snapshot!(out.stdout_redacted(&f));
}

#[test]
fn an_up_to_date_task_is_not_shown_and_the_footer_counts_it() {
    let f = w_with_a_cached_lib();
    assert_eq!(
        f.vx(&["run", "build", "--all", "--concurrency", "1"]).code,
        0
    );
    let out = f.vx(&["run", "build", "--all", "--concurrency", "1"]);
    assert_eq!(out.code, 0, "{out:?}");
    // The two uncached tasks start in the order the scheduler's history gives them, which the
    // first run's timings decide: their lines are pinned, not their order.
    let text = out.stdout_redacted(&f);
    let (mut tasks, rest): (Vec<&str>, Vec<&str>) = text.lines().partition(|l| l.starts_with('⏺'));
    tasks.sort_unstable();
    insta::assert_snapshot!(format!("{}\n{}", tasks.join("\n"), rest.join("\n")));
}

#[test]
fn hash_only_prints_each_task_with_its_key() {
    let f = w_with_a_cached_lib();
    let out = f.vx(&[
        "run",
        "build",
        "--all",
        "--concurrency",
        "1",
        "--output-logs",
        "hash-only",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    insta::assert_snapshot!(out.stdout_redacted(&f));
}

#[test]
fn a_failure_in_the_broad_flow_skips_its_dependants_and_recaps() {
    let f = w();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"echo compiling; echo 'src/a.ts:1: bad' >&2; exit 2\"\n",
    );
    let out = f.vx(&["run", "check", "--all", "--concurrency", "1"]);
    assert_eq!(out.code, 1, "{out:?}");
    insta::assert_snapshot!(format!(
        "{}--- stderr\n{}",
        out.stdout_redacted(&f),
        out.stderr_redacted(&f)
    ));
}

#[test]
fn show_prints_a_tasks_settings_with_their_lines_and_its_neighbours() {
    let f = w();
    let out = f.vx(&["show", "app#build"]);
    assert_eq!(out.code, 0, "{out:?}");
    insta::assert_snapshot!(out.stdout);
}

#[test]
fn graph_prints_the_task_graph_as_dot() {
    let f = w_with_a_cached_lib();
    assert_eq!(f.vx(&["run", "build", "--all"]).code, 0);
    let out = f.vx(&["run", "check", "--all", "--graph"]);
    assert_eq!(out.code, 0, "{out:?}");
    insta::assert_snapshot!(out.stdout);
}
