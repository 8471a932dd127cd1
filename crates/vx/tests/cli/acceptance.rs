//! The acceptance scenarios (ACC-n) of milestone M1 on fixture W.

use crate::assert_contains;
use crate::{lines_about, w};

/// ACC-1: order, one line per task in the broad flow, footer counts.
#[test]
fn acc1_build_all_runs_in_dependency_order_with_counts() {
    let f = w();
    let out = f.vx(&["run", "build", "--all"]);
    assert_eq!(out.code, 0, "{out:?}");
    let stdout = out.stdout_redacted(&f);
    let lib = stdout.find("success no-cache lib#build").expect("lib line");
    let app = stdout.find("success no-cache app#build").expect("app line");
    assert!(
        lib < app,
        "lib#build must finish before app#build:\n{stdout}"
    );
    assert!(
        stdout.contains("⏺ [t] success no-cache docs#build"),
        "{stdout}"
    );
    assert_eq!(f.read("packages/app/dist/app.txt"), "a\nb\n");
    assert!(
        stdout.contains("tasks      3 success · 3 total"),
        "{stdout}"
    );
    // Broad flow: one line per task, no frames.
    assert!(!stdout.contains("┌─"), "{stdout}");
    assert!(!stdout.contains("built lib"), "{stdout}");
}

/// ACC-2: scope from the current directory; dependencies are silent.
#[test]
fn acc2_scope_from_cwd_shows_only_the_requested_frame() {
    let f = w();
    let out = f.vx_in("packages/app", &["run", "build"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let stdout = out.stdout_redacted(&f);
    assert!(stdout.contains("┌─ app#build"), "{stdout}");
    assert!(stdout.contains("built app"), "{stdout}");
    assert!(!stdout.contains("lib#build"), "{stdout}");
    assert!(!stdout.contains("docs"), "{stdout}");
    assert!(f.path("packages/lib/dist/out.txt").exists());
    assert!(!f.path("packages/docs/dist").exists());
    assert!(stdout.contains("2 success · 2 total"), "{stdout}");
}

/// ACC-3: an unknown task name with a did-you-mean; nothing runs.
#[test]
fn acc3_unknown_task_suggests_the_closest_name() {
    let f = w();
    let out = f.vx(&["run", "biuld", "--all"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: no selected project declares task `biuld`\n  hint: did you mean `build`?\n"
    );
    assert!(out.stdout.is_empty());
    assert!(!f.path("packages/lib/dist").exists());
}

/// ACC-4: configuration errors carry file:line:column and a hint.
#[test]
fn acc4_config_errors_have_locations_and_hints() {
    let f = w();
    let lib = f.read("packages/lib/vx.toml").replace("command", "comand");
    f.write("packages/lib/vx.toml", &lib);
    let out = f.vx(&["run", "build", "--all"]);
    assert_eq!(out.code, 2, "{out:?}");
    let first = out.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("error: packages/lib/vx.toml:2:1: unknown key `comand`"),
        "{}",
        out.stderr
    );
    assert!(
        first.contains("command"),
        "allowed keys are listed: {first}"
    );
    assert_contains(&out.stderr, "  hint: did you mean `command`?");

    let lib = lib.replace("comand", "command") + "dependsOn = [\"^build\"]\n";
    f.write("packages/lib/vx.toml", &lib);
    let out = f.vx(&["run", "build", "--all"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_contains(&out.stderr, "`dependsOn`");
    assert_contains(&out.stderr, "depends-on");
}

/// ACC-5: a cycle is refused with its path and a location.
#[test]
fn acc5_cycle_is_refused_with_its_path() {
    let f = w();
    let lib = f.read("packages/lib/vx.toml") + "depends-on = [\"app#build\"]\n";
    f.write("packages/lib/vx.toml", &lib);
    let out = f.vx(&["run", "build", "--all"]);
    assert_eq!(out.code, 2, "{out:?}");
    let mut lines = out.stderr.lines();
    assert_eq!(
        lines.next(),
        Some("error: cycle in task graph: app#build -> lib#build -> app#build")
    );
    let hint = lines.next().unwrap_or_default();
    assert!(
        hint.starts_with("  hint: see packages/app/vx.toml:"),
        "{hint}"
    );
}

/// ACC-6: failure propagation under the default `--continue=deps-ok`.
#[test]
fn acc6_failure_skips_dependants_and_recaps() {
    let f = w();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"echo boom >&2; exit 3\"\n",
    );
    let out = f.vx(&["run", "build", "--all"]);
    assert_eq!(out.code, 1, "{out:?}");
    let stdout = out.stdout_redacted(&f);
    assert!(
        stdout.contains("◼ [t] failed no-cache lib#build"),
        "{stdout}"
    );
    assert!(stdout.contains("┌─ lib#build  failed (exit 3)"), "{stdout}");
    assert!(
        stdout.contains("⊘ [t] skipped app#build • blocked by lib#build"),
        "{stdout}"
    );
    assert!(stdout.contains("success no-cache docs#build"), "{stdout}");
    // Printed once: the frame right above the recap is not repeated in it.
    assert_eq!(stdout.matches("\nboom\n").count(), 1, "{stdout}");
    let recap = &stdout[stdout.find("── failures").expect("a recap")..];
    assert!(
        recap.contains("◼ lib#build  failed (exit 3)  · output above"),
        "{recap}"
    );
    // What the command still owes: the failure and the task it blocked.
    assert!(
        recap.contains("re-run: vx run lib#build app#build\n"),
        "{recap}"
    );
}

/// ACC-6, second half: `--continue=never` skips what has not started, without blocked-by.
#[test]
fn acc6_continue_never_skips_unstarted_tasks() {
    let f = w();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"echo boom >&2; exit 3\"\n",
    );
    f.write(
        "packages/docs/vx.toml",
        "[tasks.build]\ncommand = \"sleep 2; echo docs\"\n",
    );
    let out = f.vx(&[
        "run",
        "build",
        "--all",
        "--continue=never",
        "--concurrency",
        "1",
    ]);
    assert_eq!(out.code, 1, "{out:?}");
    let stdout = out.stdout_redacted(&f);
    // lib#build has the most dependants, so it starts first and docs never starts.
    assert!(stdout.contains("⊘ [t] skipped docs#build\n"), "{stdout}");
    assert!(!stdout.contains("docs#build •"), "{stdout}");
    assert!(stdout.contains("⊘ [t] skipped app#build"), "{stdout}");
    assert!(!stdout.contains("docs\n"), "docs never ran: {stdout}");
}

/// ACC-24: filters.
#[test]
fn acc24_filters_select_projects() {
    let f = w();
    let out = f.vx(&["run", "build", "--filter", "...lib"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        lines_about(&out.stdout, "lib#build").len(),
        1,
        "{}",
        out.stdout
    );
    assert_eq!(
        lines_about(&out.stdout, "app#build").len(),
        1,
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("docs#build"), "{}", out.stdout);

    let out = f.vx(&["run", "build", "--all", "--filter", "!docs"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("app#build") && !out.stdout.contains("docs#build"));

    let out = f.vx(&["run", "build", "--filter", "lbi"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_contains(&out.stderr, "  hint: did you mean `lib`?");

    let out = f.vx(&["run", "build", "--filter", "./packages/app"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "app#build");
    assert!(
        f.path("packages/lib/dist/out.txt").exists(),
        "lib#build ran as a dependency"
    );
    assert!(!out.stdout.contains("docs#build"), "{}", out.stdout);
}

/// ACC-27: requesting a group surfaces its members; groups are never counted.
#[test]
fn acc27_groups_surface_members_and_are_not_counted() {
    let f = w();
    let out = f.vx_in("packages/app", &["run", "check"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let stdout = out.stdout_redacted(&f);
    assert!(stdout.contains("┌─ app#build"), "{stdout}");
    assert!(stdout.contains("┌─ app#test"), "{stdout}");
    assert!(!stdout.contains("lib#build"), "{stdout}");
    assert!(!stdout.contains("check"), "{stdout}");
    assert!(stdout.contains("3 success · 3 total"), "{stdout}");

    let out = f.vx_in("packages/app", &["run", "check", "--", "x"], &[]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: no task would receive the arguments after `--` (`check` is a group)\n"
    );
}

/// ACC-29: a nested `vx run` of the same workspace fails inside the task.
#[test]
fn acc29_nested_run_is_refused() {
    let f = w();
    let vx = crate::vx_bin();
    f.write(
        "packages/docs/vx.toml",
        &format!("[tasks.build]\ncommand = \"{vx} run lib#build\"\n"),
    );
    let out = f.vx(&["run", "docs#build"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stdout, "error: `vx run` inside task `docs#build` of the same workspace would recurse; add the work as a dependency instead");
}

/// CLI-13: `--exclude-dependencies` runs only what was asked, and checks its names.
#[test]
fn exclude_dependencies_runs_only_the_requested_tasks() {
    let f = w();
    let out = f.vx(&["run", "app#build", "--only"]);
    assert_eq!(
        out.code, 1,
        "app#build runs without lib#build and fails: {out:?}"
    );
    assert!(!f.path("packages/lib/dist").exists());
    let out = f.vx(&["run", "app#build", "--exclude-dependencies=biuld"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_contains(&out.stderr, "did you mean `build`?");
    // Both requested: the edge between them is kept, so lib builds first.
    let out = f.vx(&["run", "app#build", "lib#build", "--only"]);
    assert_eq!(out.code, 0, "{out:?}");
}

/// UI-4: a requested task that would have streamed but was skipped gets its one-liner, with
/// the task that blocked it.
#[test]
fn a_skipped_requested_task_gets_a_one_liner_not_a_dangling_frame() {
    let f = w();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"exit 3\"\n",
    );
    let out = f.vx_in("packages/app", &["run", "build"], &[]);
    assert_eq!(out.code, 1, "{out:?}");
    let stdout = out.stdout_redacted(&f);
    assert!(
        stdout.contains("⊘ [t] skipped app#build • blocked by lib#build\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("└─ app#build"), "{stdout}");
}

/// HIST-5: a task name held by several projects gives one JSON array.
#[test]
fn show_of_a_task_in_several_projects_is_one_json_array() {
    let f = w();
    let out = f.vx(&["show", "build", "--format", "json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).expect("valid JSON");
    let names: Vec<&str> = doc
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app", "docs", "lib"]);
}
