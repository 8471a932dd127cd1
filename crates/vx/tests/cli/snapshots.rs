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
