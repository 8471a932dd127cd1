//! What a run says at its end: a failure printed once, a `re-run:` line naming
//! everything the command still owes, an interrupted run's footer, and `no file matches` once
//! per glob.

use std::time::{Duration, Instant};

use crate::guard::spawn_vx;
use crate::{assert_contains, one_project, w};

/// A failure frame with another task's frame after it (the CI flow prints every frame as it
/// comes): the recap repeats the failure's last lines, since they are no longer right above.
#[test]
fn the_recap_repeats_output_only_when_other_output_came_between() {
    let f = w();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"echo boom >&2; exit 3\"\n",
    );
    let out = f.vx_in(
        "",
        &["run", "build", "--all", "--concurrency", "1"],
        &[("CI", "true")],
    );
    assert_eq!(out.code, 1, "{out:?}");
    let stdout = out.stdout_redacted(&f);
    // lib#build starts first (most dependants); docs#build's frame follows it.
    let failure = stdout.find("┌─ lib#build").expect("lib's frame");
    let docs = stdout.find("┌─ docs#build").expect("docs' frame");
    assert!(failure < docs, "{stdout}");
    let recap = &stdout[stdout.find("── failures").expect("a recap")..];
    assert!(
        recap.contains("◼ lib#build  failed (exit 3)\nboom\n"),
        "{recap}"
    );
    assert!(!recap.contains("output above"), "{recap}");
    assert_eq!(
        stdout.matches("\nboom\n").count(),
        2,
        "frame and recap: {stdout}"
    );
}

/// The `re-run:` line names the failed tasks, always, then the owed tasks nothing else owed
/// depends on: running those runs the rest as their dependencies.
#[test]
fn the_re_run_line_names_the_failures_and_the_owed_tasks_on_top() {
    let mut tasks = String::from("[tasks.base]\ncommand = \"exit 1\"\n");
    let mut all = Vec::new();
    for n in 0..22 {
        tasks.push_str(&format!(
            "[tasks.t{n}]\ncommand = \"true\"\ndepends-on = [\"base\"]\n"
        ));
        all.push(format!("\"t{n}\""));
    }
    tasks.push_str(&format!(
        "[tasks.all]\ncommand = \"true\"\ndepends-on = [{}]\n",
        all.join(", ")
    ));
    let f = one_project(&tasks);
    let out = f.vx(&["run", "lib#all"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stdout, "re-run: vx run lib#base lib#all\n");
    // The 23 tasks the failure blocked are one line.
    assert_contains(
        &out.stdout,
        "⊘ 23 skipped: blocked by lib#base (vx last lists them)\n",
    );
    assert!(!out.stdout.contains("skipped lib#t0"), "{}", out.stdout);
    // Every one of them with `--output-logs=full`.
    let full = f.vx(&["run", "lib#all", "--output-logs=full"]);
    let skipped = full
        .stdout
        .lines()
        .filter(|l| l.contains(" skipped lib#"))
        .count();
    assert_eq!(skipped, 23, "{}", full.stdout);
    // A chain: the failure and the top, not the task between them.
    let f = one_project(
        "[tasks.base]\ncommand = \"exit 1\"\n\
         [tasks.mid]\ncommand = \"true\"\ndepends-on = [\"base\"]\n\
         [tasks.top]\ncommand = \"true\"\ndepends-on = [\"mid\"]\n",
    );
    let out = f.vx(&["run", "lib#top"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stdout, "re-run: vx run lib#base lib#top\n");
}

/// The `re-run:` line (and `vx last`'s) is a command line to paste, so a
/// task id the shell would split or run (`a;touch X`) is quoted; pasted into `sh` with a `vx`
/// that prints its arguments, it is one argument and nothing else runs.
#[test]
fn the_re_run_line_quotes_ids_for_the_shell() {
    let f = one_project("[tasks.\"a;touch X\"]\ncommand = \"exit 1\"\n");
    let out = f.vx(&["run", "lib#a;touch X"]);
    assert_eq!(out.code, 1, "{out:?}");
    let line = "re-run: vx run 'lib#a;touch X'";
    assert!(out.stdout.lines().any(|l| l == line), "{}", out.stdout);
    let last = f.vx(&["last"]);
    assert!(last.stdout.lines().any(|l| l == line), "{}", last.stdout);
    // Pasted: a stand-in `vx` prints each argument on its own line.
    let bin = f.path("stand-in");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("vx"), "#!/bin/sh\nprintf '%s\\n' \"$@\"\n").unwrap();
    std::fs::set_permissions(
        bin.join("vx"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let pasted = std::process::Command::new("sh")
        .arg("-c")
        .arg(line.strip_prefix("re-run: ").unwrap())
        .current_dir(f.root())
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&pasted.stdout),
        "run\nlib#a;touch X\n"
    );
    assert!(!f.path("X").exists(), "pasting the line ran `touch X`");
    // Plain ids stay as they are.
    let f = one_project("[tasks.base]\ncommand = \"exit 1\"\n");
    let out = f.vx(&["run", "lib#base"]);
    assert!(
        out.stdout.lines().any(|l| l == "re-run: vx run lib#base"),
        "{}",
        out.stdout
    );
}

/// After Ctrl-C the footer says the run was interrupted and counts what never started; it
/// gives no cached share of a run that did not finish, and the `re-run:` line names what the
/// command still owes.
#[test]
fn an_interrupted_run_says_so_and_counts_what_never_started() {
    let f = one_project(
        "[tasks.quick]\ncommand = \"true\"\n\
         [tasks.slow]\ncommand = \"touch started; sleep 30\"\ndepends-on = [\"quick\"]\n\
         [tasks.after1]\ncommand = \"true\"\ndepends-on = [\"slow\"]\n\
         [tasks.after2]\ncommand = \"true\"\ndepends-on = [\"slow\"]\n\
         [tasks.all]\ncommand = \"true\"\ndepends-on = [\"after1\", \"after2\"]\n",
    );
    let vx = spawn_vx(&f, &["run", "lib#all"], true);
    let started = f.path("packages/lib/started");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !started.exists() {
        assert!(Instant::now() < deadline, "slow never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let child = vx.take();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_contains(
        &stdout,
        "tasks      1 success · 1 aborted · 3 not run · 5 total\n",
    );
    assert_contains(
        &stdout,
        "result     interrupted by SIGINT · 1 of 5 tasks ended · 0 cached ·",
    );
    assert!(!stdout.contains("(100%)"), "{stdout}");
    assert!(!stdout.contains("not counted"), "{stdout}");
    // `all` runs the rest as its dependencies.
    assert_contains(&stdout, "re-run: vx run lib#all\n");
}

/// KEY-10: a glob that matches nothing is said once per run, naming its tasks.
#[test]
fn an_unmatched_output_glob_is_said_once_naming_the_tasks() {
    let f = crate::empty();
    f.write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
    for name in ["a", "b", "c"] {
        f.write(
            &format!("packages/{name}/package.json"),
            &format!(r#"{{ "name": "{name}" }}"#),
        );
        f.write(
            &format!("packages/{name}/vx.toml"),
            "[tasks.test]\ncommand = \"true\"\n\
             cache = { inputs = [\"package.json\"], outputs = [\"coverage/**\"] }\n",
        );
    }
    f.commit();
    let out = f.vx(&["run", "test", "--all"]);
    assert_eq!(out.code, 0, "{out:?}");
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("no file matches"))
        .collect();
    assert_eq!(
        lines,
        ["vx: no file matches cache.outputs (coverage/**) in 3 tasks: a#test, b#test, c#test"],
        "{}",
        out.stderr
    );
}

/// `--ui=tui` off a terminal (a pipe, CI logs) is plain output; `[workspace] ui` is checked
/// like every key, and a wrong `--ui` value names what it expects.
#[test]
fn the_task_ui_is_plain_output_off_a_terminal() {
    let f = w();
    let out = f.vx(&["run", "build", "--all", "--ui=tui"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stdout.contains('\x1b'), "{:?}", out.stdout);
    assert_contains(&out.stdout, "success no-cache docs#build\n");
    let out = f.vx(&["run", "build", "--all", "--ui=fancy"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: invalid value `fancy` for --ui (expected plain or tui)\n"
    );
    f.write(
        "vx.toml",
        "[workspace]\nmembers = [\"packages/*\"]\nui = \"fancy\"\n",
    );
    let out = f.vx(&["run", "build", "--all"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_contains(
        &out.stderr,
        "error: vx.toml:3:6: ui: `fancy` must be `plain` or `tui`",
    );
}

/// A multi-line command (TOML's `"""` block) shows in its frame line for line, without the
/// blank line its last newline would make.
#[test]
fn a_multi_line_command_shows_without_a_trailing_blank_line() {
    let f = crate::one_project("[tasks.two]\ncommand = \"\"\"\necho one\necho two\n\"\"\"\n");
    let out = f.vx(&["run", "lib#two"]);
    assert_eq!(out.code, 0, "{out:?}");
    crate::assert_contains(&out.stdout, "$ echo one\necho two\none\ntwo\n└─ lib#two");
}
