//! Execution basics through the binary: environment (EXEC-4), masking (EXEC-5), forwarded
//! arguments (CLI-16, EXEC-3), exit explanations (EXEC-12), output visibility (UI-3).

use crate::assert_contains;
use crate::{one_project, w};
use vx_test_support::process::test_child_path;

/// ACC-16: only the allowlist reaches a task; pass-through forwards; secrets are masked.
#[test]
fn acc16_strict_environment_and_masking() {
    let f = one_project("[tasks.dump]\ncommand = \"env\"\n");
    let env = [("MY_TOKEN", "supersecret123"), ("OTHER", "1")];
    let out = f.vx_in("", &["run", "lib#dump"], &env);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stdout.contains("OTHER="), "{}", out.stdout);
    assert!(!out.stdout.contains("MY_TOKEN"), "{}", out.stdout);
    assert_contains(&out.stdout, "VX_RUN_TASK=lib#dump");

    f.write(
        "packages/lib/vx.toml",
        "[tasks.dump]\ncommand = \"env; echo token is $MY_TOKEN\"\nenv = { pass-through = [\"OTHER\", \"MY_TOKEN\"] }\n",
    );
    let out = f.vx_in("", &["run", "lib#dump"], &env);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "OTHER=1");
    assert_contains(&out.stdout, "MY_TOKEN=***");
    assert_contains(&out.stdout, "token is ***");
    assert!(!out.stdout.contains("supersecret123"));
    assert!(!out.stderr.contains("supersecret123"));
}

#[test]
fn secrets_split_across_writes_are_masked() {
    let f = one_project(
        "[tasks.leak]\ncommand = \"printf 'a supers'; sleep 0.2; printf 'ecret123 b'\"\nenv = { secret = [\"MY_PASS\"] }\n",
    );
    let out = f.vx_in("", &["run", "lib#leak"], &[("MY_PASS", "supersecret123")]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "a *** b");
}

#[test]
fn define_values_reach_the_task() {
    let f = one_project(
        "[tasks.show]\ncommand = \"echo mode=$NODE_ENV\"\nenv = { define = { NODE_ENV = \"production\" } }\n",
    );
    let out = f.vx(&["run", "lib#show"]);
    assert_contains(&out.stdout, "mode=production");
}

/// ACC-15's M1 part: forwarded arguments go to the requested task only, quoted.
#[test]
fn forwarded_arguments_reach_only_requested_tasks() {
    let f = w();
    let app = f.read("packages/app/vx.toml")
        + "\n[tasks.show]\ncommand = \"printf '[%s]'\"\ndepends-on = [\"build\"]\n";
    f.write("packages/app/vx.toml", &app);
    let build = f
        .read("packages/app/vx.toml")
        .replace("&& echo built app", "&& echo built app with \\\"$*\\\"");
    f.write("packages/app/vx.toml", &build);
    let out = f.vx(&["run", "app#show", "--", "a b", "c"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "[a b][c]");
    assert_contains(&out.stdout, "$ printf '[%s]' 'a b' c\n");
}

/// ACC-22: exit-code explanations.
#[test]
fn acc22_missing_program_is_explained() {
    let f = one_project("[tasks.build]\ncommand = \"definitely-not-a-tool --x\"\n");
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stdout, "failed (exit 127)");
    assert_contains(
        &out.stdout,
        "vx: `definitely-not-a-tool` was not found on this task's PATH",
    );
}

#[test]
fn acc22_crlf_shebang_is_explained() {
    let f = one_project("[tasks.build]\ncommand = \"./script.sh\"\n");
    f.write("packages/lib/script.sh", "#!/bin/sh\r\necho hi\r\n");
    let path = f.path("packages/lib/script.sh");
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&path)
        .status()
        .unwrap();
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stdout, "CRLF");
}

#[test]
fn acc22_native_crash_is_explained() {
    let child = test_child_path();
    let f = one_project(&format!(
        "[tasks.build]\ncommand = \"{} segv\"\n",
        child.display()
    ));
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stdout, "failed (exit 139)");
    assert_contains(&out.stdout, "a native crash");
}

#[test]
fn stdout_and_stderr_are_both_captured_in_order() {
    let f = one_project(
        "[tasks.build]\ncommand = \"echo one; sleep 0.1; echo two >&2; sleep 0.1; echo three\"\n",
    );
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 0, "{out:?}");
    let body = out.stdout.split_once("echo three\n").expect("the $ line").1;
    assert!(body.starts_with("one\ntwo\nthree\n"), "{}", out.stdout);
}

#[test]
fn ci_flow_prints_frames_for_every_task() {
    let f = w();
    let out = f.vx_in("", &["run", "build", "--all"], &[("CI", "true")]);
    assert_eq!(out.code, 0, "{out:?}");
    for id in ["lib#build", "app#build", "docs#build"] {
        assert_contains(&out.stdout, &format!("┌─ {id}  executed"));
    }
    assert!(out.stdout.contains("built lib"));
}

#[test]
fn output_logs_none_prints_only_the_footer() {
    let f = w();
    let out = f.vx(&["run", "build", "--all", "--output-logs=none"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.starts_with("── vx"), "{}", out.stdout);
}

#[test]
fn colour_escapes_are_stripped_when_not_colouring() {
    let f = one_project("[tasks.build]\ncommand = \"printf '\\\\033[31mred\\\\033[0m\\\\n'\"\n");
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("\nred\n"), "{:?}", out.stdout);
    assert!(!out.stdout.contains('\u{1b}'), "{:?}", out.stdout);
}

#[test]
fn closed_stdout_does_not_change_the_exit_code() {
    let f = w();
    let mut command = f.command("", &["run", "build", "--all"]);
    command.stdout(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

/// UI-10: FORCE_COLOR colours vx's output (ids, glyphs, the footer meter); NO_COLOR wins.
#[test]
fn force_color_colours_and_no_color_wins() {
    let f = w();
    let out = f.vx_in("", &["run", "build", "--all"], &[("FORCE_COLOR", "1")]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("\u{1b}["), "{:?}", out.stdout);
    assert!(
        out.stdout.contains('█'),
        "the footer meter: {:?}",
        out.stdout
    );
    let out = f.vx_in(
        "",
        &["run", "build", "--all"],
        &[("FORCE_COLOR", "1"), ("NO_COLOR", "1")],
    );
    assert!(!out.stdout.contains('\u{1b}'), "{:?}", out.stdout);
    let out = f.vx_in("", &["run", "build", "--all"], &[("FORCE_COLOR", "0")]);
    assert!(!out.stdout.contains('\u{1b}'), "{:?}", out.stdout);
}

/// ACC-23 (without `vx last`, M3): a task that fails once and then passes, `retries = 2`.
#[test]
fn acc23_retries_show_the_attempt_line_and_the_flaky_note() {
    let counter = tempfile::NamedTempFile::new().unwrap();
    let f = crate::one_project(&format!(
        concat!(
            "[tasks.flaky]\n",
            "command = \"n=$(cat {0}); echo $((n+1)) > {0}; echo attempt $((n+1)); test $n -ge 1\"\n",
            "retries = 2\n",
            "cache = {{ inputs = [], outputs = [] }}\n",
        ),
        counter.path().display()
    ));
    std::fs::write(counter.path(), "0").unwrap();
    let out = f.vx(&["run", "--all", "flaky"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    crate::assert_contains(&out.stdout, "flaky: passed after 2 attempts");
    let frame = f.vx_in("", &["run", "lib#flaky", "--force"], &[]);
    assert_eq!(frame.code, 0, "{}{}", frame.stdout, frame.stderr);
    std::fs::write(counter.path(), "0").unwrap();
    let frame = f.vx(&["run", "lib#flaky", "--force"]);
    crate::assert_contains(
        &frame.stdout,
        "vx: lib#flaky failed (exit 1); attempt 2 of 3",
    );
    crate::assert_contains(&frame.stdout, "attempt 1\n");
    crate::assert_contains(&frame.stdout, "attempt 2\n");
    // Only the successful attempt's log is stored: the hit replays it alone.
    let hit = f.vx(&["run", "lib#flaky"]);
    crate::assert_contains(&hit.stdout, "up-to-date");
    crate::assert_contains(&hit.stdout, "attempt 2\n");
    assert!(!hit.stdout.contains("attempt 1\n"), "{}", hit.stdout);
}

/// EXEC-16's key rule: a key that failed after it had passed marks the task flaky in later
/// runs, whether they pass or fail, and `vx info` lists it. The task is uncached (it runs every
/// time, with the same key); its counter lives outside the workspace.
#[test]
fn a_key_that_failed_after_passing_is_marked_flaky() {
    let counter = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(counter.path(), "0").unwrap();
    let f = one_project(&format!(
        concat!(
            "[tasks.test]\n",
            // Runs 2 and 4 fail; runs 1 and 3 pass.
            "command = \"n=$(cat {0}); echo $((n+1)) > {0}; test $n -ne 1 && test $n -ne 3\"\n",
        ),
        counter.path().display()
    ));
    let run = |code: i32| {
        let out = f.vx(&["run", "lib#test"]);
        assert_eq!(out.code, code, "{}{}", out.stdout, out.stderr);
        out.stdout
    };
    // Pass, then fail with the same key: the failure is not marked (history has no failure
    // after a pass yet), but `vx info` now lists the task.
    assert!(!run(0).contains("flaky"));
    assert!(!run(1).contains("flaky"));
    assert_contains(&f.vx(&["info"]).stdout, "flaky tasks (30 d)  lib#test\n");
    // Pass again: the key failed once after passing.
    let third = run(0);
    assert_contains(&third, "flaky: this key failed 1× after passing");
    // A failure is marked too; this run's own result is not counted until it is recorded.
    let fourth = run(1);
    assert_contains(&fourth, "flaky: this key failed 1× after passing");
    assert_contains(&run(0), "flaky: this key failed 2× after passing");
}

#[test]
fn retry_flag_is_the_default_and_retries_zero_wins() {
    let f = crate::one_project(concat!(
        "[tasks.fail]\ncommand = \"echo once; exit 3\"\n\n",
        "[tasks.never]\ncommand = \"echo never; exit 3\"\nretries = 0\n",
    ));
    let out = f.vx(&["run", "lib#fail", "lib#never", "--retry", "2", "--continue"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    // The frames, before the recap repeats their tails.
    let frames = out.stdout.split("── failures").next().unwrap();
    assert_eq!(frames.matches("once\n").count(), 3, "{}", out.stdout);
    crate::assert_contains(frames, "vx: lib#fail failed (exit 3); attempt 3 of 3");
    assert_eq!(frames.matches("never\n").count(), 1, "{}", out.stdout);
    let bad = f.vx(&["run", "lib#fail", "--retry", "x"]);
    assert_eq!(bad.code, 2);
    crate::assert_contains(&bad.stderr, "invalid value `x` for --retry");
}
