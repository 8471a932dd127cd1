//! Command-line handling (CLI-1 to CLI-4, CLI-12, CLI-18): verbs, flags, values.

use crate::assert_contains;
use crate::{empty, w};

#[test]
fn unknown_verb_suggests_the_closest_verb() {
    let f = w();
    let out = f.vx(&["rnu"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: unknown command `rnu`\n  hint: did you mean `run`?\n"
    );
}

#[test]
fn a_task_name_as_verb_hints_the_run_command() {
    let f = w();
    let out = f.vx(&["build"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: unknown command `build`\n  hint: to run a task, use `vx run build --all`\n"
    );
    let out = f.vx_in("packages/app", &["build"], &[]);
    assert_contains(&out.stderr, "use `vx run build`\n");
    let out = f.vx(&["app#build"]);
    assert_contains(&out.stderr, "hint: use `vx run app#build`");
}

/// The hint resolves `web#build` as `vx run` does (an unscoped name), and at a root project
/// that lacks the task it adds `--all`.
#[test]
fn the_run_hint_resolves_unscoped_names_and_the_root_project() {
    let f = empty();
    f.write(
        "vx.toml",
        "[workspace]\nmembers = [\"packages/*\"]\n[tasks.lint]\ncommand = \"true\"\n",
    );
    f.write("packages/web/package.json", r#"{ "name": "@acme/web" }"#);
    f.write(
        "packages/web/vx.toml",
        "[tasks.build]\ncommand = \"true\"\n",
    );
    f.commit();
    let out = f.vx(&["build"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_contains(
        &out.stderr,
        "hint: to run a task, use `vx run build --all`\n",
    );
    let out = f.vx(&["web#build"]);
    assert_contains(&out.stderr, "hint: use `vx run web#build`\n");
}

#[test]
fn unknown_flag_names_the_verb_and_the_nearest_flag() {
    let f = w();
    let out = f.vx(&["run", "build", "--concurency", "2"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: unknown flag `--concurency` for `vx run`\n  hint: did you mean `--concurrency`?\n"
    );
}

#[test]
fn invalid_values_name_the_flag_and_what_it_expects() {
    let f = w();
    let out = f.vx(&["run", "build", "--concurrency", "0"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: invalid value `0` for --concurrency (expected N or N%, N ≥ 1)\n"
    );
    let out = f.vx(&["run", "build", "--timeout", "90"]);
    assert_eq!(
        out.stderr,
        "error: invalid value `90` for --timeout (expected a duration such as 90s)\n"
    );
}

#[test]
fn repeated_single_valued_flag_is_an_error() {
    let f = w();
    let out = f.vx(&["run", "build", "--concurrency", "1", "--concurrency=2"]);
    assert_eq!(out.code, 2);
    assert_eq!(out.stderr, "error: --concurrency given twice\n");
}

#[test]
fn a_value_starting_with_a_dash_is_refused() {
    let f = w();
    let out = f.vx(&["run", "build", "--timeout", "-5s"]);
    assert_eq!(out.code, 2);
    assert_eq!(out.stderr, "error: --timeout needs a value\n");
}

#[test]
fn optional_values_need_an_equals_sign() {
    let f = w();
    // `--dry build`: `build` is a positional, not the value of --dry.
    let out = f.vx(&["run", "--dry", "build", "--all"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.starts_with("would run, in dependency order"),
        "{}",
        out.stdout
    );
}

#[test]
fn repeated_optional_value_flag_names_the_flag() {
    let f = w();
    let out = f.vx(&["run", "build", "--all", "--dry", "--dry=json"]);
    assert_eq!(out.code, 2);
    assert_eq!(out.stderr, "error: --dry given twice\n");
}

#[test]
fn dry_and_graph_cannot_be_combined() {
    let f = w();
    let out = f.vx(&["run", "build", "--all", "--dry", "--graph"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: `--dry` cannot be combined with `--graph`\n"
    );
}

#[test]
fn a_plan_cannot_be_summarized_or_profiled() {
    let f = w();
    let out = f.vx(&["run", "build", "--all", "--dry", "--summarize"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: `--dry` cannot be combined with `--summarize`\n"
    );
    assert!(!f.path(".vx").exists());
}

#[test]
fn download_takes_its_words() {
    let f = w();
    let out = f.vx(&["run", "build", "--download=some"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: invalid value `some` for --download (expected all, toplevel or none)\n"
    );
}

#[test]
fn version_and_help() {
    let f = empty();
    let out = f.vx(&["--version"]);
    assert_eq!(out.code, 0);
    // CLI-4, DIST-4: `vx 0.1.0 (<commit>, <target>)`, the commit this checkout is at.
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=10", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    let target = format!(
        "{}-unknown-{}-gnu",
        std::env::consts::ARCH,
        std::env::consts::OS
    );
    assert_eq!(
        out.stdout,
        format!("vx {} ({head}, {target})\n", env!("CARGO_PKG_VERSION")),
    );
    let out = f.vx(&["version", "extra"]);
    assert_eq!(out.code, 2);
    let out = f.vx(&[]);
    assert_eq!(out.code, 0);
    assert_contains(&out.stdout, "run");
    let out = f.vx(&["run", "--help"]);
    assert_eq!(out.code, 0);
    assert_contains(&out.stdout, "--concurrency");
    assert_contains(&out.stdout, "Examples:");
    let out = f.vx(&["help", "run"]);
    assert_eq!(out.code, 0);
    assert_contains(&out.stdout, "--filter");
}

#[test]
fn dash_c_runs_as_if_started_in_the_directory() {
    let f = w();
    let out = f.vx_in("", &["-C", "packages/app", "run", "build"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "┌─ app#build");
    let out = f.vx(&["-C", "nope", "run", "build"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.starts_with("error: -C `nope`"), "{}", out.stderr);
}

#[test]
fn outside_any_workspace_is_an_error_with_a_hint() {
    let f = empty();
    let out = f.vx(&["run", "build"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.starts_with("error: not inside a vx workspace"),
        "{}",
        out.stderr
    );
    assert_contains(&out.stderr, "hint: create a `vx.toml`");
}

/// At the workspace root, where Turborepo and Nx users type `turbo run
/// build` and `nx run-many -t build`, a name the root does not declare runs everywhere; in
/// a directory that is no project it is still refused.
#[test]
fn bare_name_outside_a_project_asks_for_all() {
    let f = w();
    let at_root = f.vx(&["run", "build"]);
    assert_eq!(at_root.code, 0, "{}{}", at_root.stdout, at_root.stderr);
    assert_contains(
        &format!("{}{}", at_root.stdout, at_root.stderr),
        "vx: the workspace root declares no task `build`: running it in every project, as `--all` does",
    );
    let all = f.vx(&["run", "build", "--all", "--dry=json"]);
    let root = f.vx(&["run", "build", "--dry=json"]);
    let ids = |text: &str| -> Vec<String> {
        let doc: serde_json::Value =
            serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
        doc["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&root.stdout), ids(&all.stdout));

    f.write("notes/todo.txt", "x\n");
    let out = f.vx_in("notes", &["run", "build"], &[]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: `build` names a task, but the current directory is not inside a project\n  hint: run `vx run build --all`, or name a project: `vx run <project>#build`\n"
    );
}

#[test]
fn no_task_given_lists_tasks_here() {
    let f = w();
    let out = f.vx_in("packages/app", &["run"], &[]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: name a task to run\n  hint: tasks here: app#build, app#check, app#test\n"
    );
}

/// Nx's `project:task` is the task id it means; one the project lacks is pointed
/// to the vx form; Nx's verbs are answered with the vx command line.
#[test]
fn other_runners_project_colon_task_spelling_is_pointed_to_the_vx_form() {
    let f = w();
    let out = f.vx(&["run", "app:build", "--dry=json"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stdout, "\"id\": \"app#build\"");
    let out = f.vx(&["run", "app:biuld", "--all"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.ends_with("  hint: use `app#biuld`\n"),
        "{}",
        out.stderr
    );
    let out = f.vx(&["run-many", "-t", "build", "-p", "app", "--exclude", "lib"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        "error: vx has no `run-many` (an Nx command); in vx: vx run build --filter app --filter '!lib'\n"
    );
}

#[test]
fn unknown_project_in_a_task_id() {
    let f = w();
    let out = f.vx(&["run", "ap#build"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: unknown project `ap`\n  hint: did you mean `app`?\n"
    );
    let out = f.vx(&["run", "app#biuld"]);
    assert_eq!(
        out.stderr,
        "error: project `app` has no task `biuld`\n  hint: did you mean `build`?\n"
    );
}

/// A workspace of scoped packages: `@acme/web`, `@acme/api`, `@other/api`.
fn scoped() -> vx_test_support::fixture::Fixture {
    let f = empty();
    f.write("vx.toml", "[workspace]\nmembers = [\"apps/*\"]\n");
    for (dir, name) in [
        ("web", "@acme/web"),
        ("api", "@acme/api"),
        ("api2", "@other/api"),
    ] {
        f.write(
            &format!("apps/{dir}/package.json"),
            &format!(r#"{{ "name": "{name}" }}"#),
        );
        f.write(
            &format!("apps/{dir}/vx.toml"),
            &format!("[tasks.build]\ncommand = \"echo built {name}\"\n"),
        );
    }
    f.commit();
    f
}

#[test]
fn an_unscoped_project_name_resolves_when_exactly_one_scope_has_it() {
    let f = scoped();
    let out = f.vx(&["run", "web#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stdout, "built @acme/web");
    let out = f.vx(&["run", "api#build"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: project `api` is ambiguous: `@acme/api`, `@other/api` have that name after their scope\n  hint: name the project with its scope\n"
    );
    let out = f.vx(&["run", "wbe#build"]);
    assert_eq!(
        out.stderr,
        "error: unknown project `wbe`\n  hint: did you mean `@acme/web`?\n"
    );
    // A project named by its directory is pointed to by its last segment.
    f.write(
        "tools/gen/vx.toml",
        "[tasks.build]\ncommand = \"echo gen\"\n",
    );
    let root = f
        .read("vx.toml")
        .replace("members = [", "members = [\"tools/*\", ");
    f.write("vx.toml", &root);
    let out = f.vx(&["run", "gen#build"]);
    assert_eq!(
        out.stderr,
        "error: unknown project `gen`\n  hint: did you mean `tools/gen`?\n"
    );
}

#[test]
fn scripts_without_tasks_point_to_vx_init() {
    let f = empty();
    f.write(
        "package.json",
        r#"{ "name": "root", "private": true, "workspaces": ["packages/*"] }"#,
    );
    f.write(
        "packages/a/package.json",
        r#"{ "name": "a", "scripts": { "build": "echo a" } }"#,
    );
    f.commit();
    let out = f.vx(&["run", "build", "--all"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: no selected project declares task `build`\n  hint: no project declares any task yet; `vx init` writes them from the package.json scripts\n"
    );
    let info = f.vx(&["info"]);
    assert_contains(
        &info.stdout,
        "tasks               0 (`vx init` writes tasks from the package.json scripts)\n",
    );
}

#[test]
fn vx_show_takes_an_unscoped_task_id_too() {
    let f = scoped();
    let out = f.vx(&["show", "web#build"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "echo built @acme/web");
}

/// CLI-17: other runners' flags that vx has no equivalent for are refused with the vx
/// spelling, never silently ignored.
#[test]
fn foreign_flags_are_refused_with_the_vx_spelling() {
    let f = w();
    let out = f.vx(&["run", "build", "--scope", "app"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: vx has no --scope; use --filter <name>\n"
    );
    for (args, pointer) in [
        (
            &["run", "build", "--since=main"][..],
            "use --affected=<ref>",
        ),
        (&["run", "build", "--env-mode=loose"], "env.pass-through"),
        (&["run", "build", "--color"], "use FORCE_COLOR=1"),
        (&["run", "build", "--no-color"], "use NO_COLOR=1"),
        (
            &["run", "build", "--token", "t"],
            "[workspace.remote-cache] token-env",
        ),
        (
            &["run", "build", "--team=x"],
            "[workspace.remote-cache] url",
        ),
        (
            &["run", "build", "--api=http://x"],
            "[workspace.remote-cache] url",
        ),
        (&["run", "build", "--daemon"], "vx has no daemon"),
        (&["run", "build", "--no-daemon"], "vx has no daemon"),
        (
            &["run", "build", "--log-prefix=none"],
            "use --log-order=stream",
        ),
        (&["watch", "build", "--verbose"], "use VX_LOG=debug"),
    ] {
        let out = f.vx(args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(
            out.stderr.starts_with("error: vx has no --") && out.stderr.contains(pointer),
            "{args:?}: {}",
            out.stderr
        );
    }
    // After a bare `--` they are the tasks' arguments.
    let out = f.vx(&["run", "docs#build", "--", "--verbose"]);
    assert_eq!(out.code, 0, "{out:?}");
}

/// CLI-17: the aliases do what the vx flags do.
#[test]
fn foreign_aliases_work_like_the_vx_flags() {
    let f = w();
    let dry = f.vx(&["run", "build", "--all", "--dry-run"]);
    assert_eq!(dry.code, 0, "{dry:?}");
    assert_eq!(dry.stdout, f.vx(&["run", "build", "--all", "--dry"]).stdout);
    let json = f.vx(&["run", "build", "--all", "--dry-run=json"]);
    assert!(json.stdout.starts_with('{'), "{json:?}");
    let parallel = f.vx(&["run", "build", "--all", "--parallel", "1"]);
    assert_contains(&parallel.stdout, "workers    1 · local");
    let parallel = f.vx(&["run", "build", "--all", "--parallel=3"]);
    assert_contains(&parallel.stdout, "workers    3 · local");
    // A cached task hits; with --skip-nx-cache it executes again, like --force.
    let f = crate::w_cached();
    assert_eq!(f.vx(&["run", "lib#build"]).code, 0);
    let hit = f.vx(&["run", "lib#build"]);
    assert_contains(&hit.stdout, "cache      1 up-to-date");
    let skip = f.vx(&["run", "lib#build", "--skip-nx-cache"]);
    assert_contains(&skip.stdout, "cache      1 miss");
    let cont = f.vx(&[
        "run",
        "build",
        "--all",
        "--continue=dependencies-successful",
    ]);
    assert_eq!(cont.code, 0, "{cont:?}");
}

/// Hints that lead somewhere (issue 48): `-C` after the verb, a flag meant for the tasks, a
/// nested verb misspelled.
#[test]
fn misplaced_flags_and_nested_verbs_get_a_hint_that_works() {
    let f = w();
    let out = f.vx(&["run", "-C", "packages/lib", "build"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: unknown flag `-C` for `vx run`\n  hint: `-C` goes before the verb: `vx -C DIR run …`\n"
    );
    // The hinted line runs.
    assert_eq!(f.vx(&["-C", "packages/lib", "run", "build"]).code, 0);

    let out = f.vx(&["run", "lib#build", "--verbose"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_contains(
        &out.stderr,
        "hint: to give it to the tasks, put it after `--`: `vx run lib#build -- --verbose`\n",
    );
    let out = f.vx(&["run", "lib#build", "--frobnicate"]);
    assert_contains(
        &out.stderr,
        "hint: to give `--frobnicate` to the tasks, put it after `--`: `vx run … -- --frobnicate`\n",
    );
    // Outside `run` and `watch`, `--verbose` is only vx's.
    let out = f.vx(&["show", "--verbose"]);
    assert!(!out.stderr.contains("after `--`"), "{}", out.stderr);

    let out = f.vx(&["cache", "clear"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: unknown verb `clear` for `vx cache`\n  hint: did you mean `vx cache clean`?\n"
    );
    let out = f.vx(&["cache", "frob"]);
    assert_contains(&out.stderr, "hint: `vx cache` has: prune, clean\n");
    // `vx help run` names every format `--graph` writes, not DOT alone.
    let help = f.vx(&["help", "run"]).stdout.replace('\n', " ");
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_contains(&help, "(.dot, .html, .svg, .png, .pdf, .mermaid, .json)");
}
