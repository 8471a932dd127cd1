//! Remote execution (REM-10 … REM-15) against real engines on loopback: `buildbox-casd` with its
//! local runner (bubblewrap), and BuildGrid with PostgreSQL and workers that run each action with
//! `buildbox-run`. Outputs land byte-identical to a local build, a repeat is served from the
//! action cache, `--download` keeps outputs on the server, failures and timeouts fail the task
//! with their output, Ctrl-C cancels the operation on the server; secrets, a missing table and
//! a dead server keep tasks local.

use std::time::Duration;

use vx_test_support::fixture::{Fixture, Output};
use vx_test_support::reapi::Casd;
use vx_test_support::tree::tree;

use crate::empty;
use crate::remote_cache::wait_until;

/// lib#build writes a file, an executable, a link and the OS name, and prints to both streams;
/// app#build reads lib's output; app#check runs locally and reads both. `lib#build` and
/// `app#build` are `remote`; `nonce` makes the actions of tests sharing a server differ.
fn workspace(url: &str, nonce: &str, remote_keys: &str) -> Fixture {
    let f = empty();
    f.write(".gitignore", ".vx/\ndist/\nnode_modules/\nsummary.json\n");
    f.write(
        "vx.toml",
        &format!("[workspace]\nmembers = [\"packages/*\"]\n\n[workspace.remote-execution]\nurl = \"{url}\"\n{remote_keys}"),
    );
    f.write(
        "packages/lib/package.json",
        r#"{ "name": "lib", "version": "1.0.0" }"#,
    );
    f.write(
        "packages/app/package.json",
        r#"{ "name": "app", "version": "1.0.0" }"#,
    );
    f.write(
        "packages/lib/src/main.txt",
        &format!("lib source {nonce}\n"),
    );
    f.write(
        "packages/app/src/main.txt",
        &format!("app source {nonce}\n"),
    );
    lib_command(
        &f,
        "mkdir -p dist/bin && cp src/main.txt dist/ && uname -s > dist/os.txt \
         && printf '#!/bin/sh\\\\n' > dist/bin/run && chmod 755 dist/bin/run \
         && ln -sf main.txt dist/link && echo lib-out && echo lib-err >&2",
        "",
    );
    f.write(
        "packages/app/vx.toml",
        "[tasks.build]\ncommand = \"mkdir -p dist && cat src/main.txt ../lib/dist/main.txt > dist/both.txt\"\n\
         depends-on = [\"lib#build\"]\nremote = true\ncache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n\
         [tasks.check]\ncommand = \"cat ../lib/dist/main.txt dist/both.txt\"\ndepends-on = [\"build\", \"lib#build\"]\n\
         cache = { inputs = [\"src/**\"], outputs = [] }\n",
    );
    f.commit();
    f
}

/// Replaces lib#build's command, and adds `extra` keys to its table.
fn lib_command(f: &Fixture, command: &str, extra: &str) {
    f.write(
        "packages/lib/vx.toml",
        &format!(
            "[tasks.build]\ncommand = \"{command}\"\nremote = true\n{extra}cache = {{ inputs = [\"src/**\"], outputs = [\"dist/**\"] }}\n"
        ),
    );
}

/// `vx run <args> --summarize=summary.json`: the output and the summary.
fn run(f: &Fixture, args: &[&str]) -> (Output, serde_json::Value) {
    run_with(f, args, &[])
}

/// [`run`] with these variables in vx's environment.
fn run_with(f: &Fixture, args: &[&str], env: &[(&str, &str)]) -> (Output, serde_json::Value) {
    let summary = f.path("summary.json");
    let _ = std::fs::remove_file(&summary);
    let summarize = format!("--summarize={}", summary.display());
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.push(&summarize);
    let out = f.vx_in("", &all, env);
    let text = std::fs::read_to_string(&summary)
        .unwrap_or_else(|_| panic!("a summary: {}{}", out.stdout, out.stderr));
    (out, serde_json::from_str(&text).expect("JSON"))
}

/// `vx args…` started in the background at the root, its output captured.
fn spawn_vx(f: &Fixture, args: &[&str]) -> std::process::Child {
    f.command(".", args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("vx starts")
}

/// The summary's entry for `id`.
fn task<'a>(summary: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    summary["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("{id} in {summary}"))
}

/// (status, cache, placement) of `id`.
fn outcome(summary: &serde_json::Value, id: &str) -> (String, String, String) {
    let t = task(summary, id);
    let word = |k: &str| t[k].as_str().unwrap_or("").to_string();
    (word("status"), word("cache"), word("placement"))
}

fn said(status: &str, cache: &str, placement: &str) -> (String, String, String) {
    (status.into(), cache.into(), placement.into())
}

/// The origin of the newest local entry of `project#task`.
fn origin(f: &Fixture, project: &str, task: &str) -> Option<String> {
    let db = rusqlite::Connection::open(f.path(".vx/cache.db")).ok()?;
    db.query_row(
        "SELECT origin FROM entries WHERE project = ?1 AND task = ?2 ORDER BY created_at DESC LIMIT 1",
        [project, task],
        |row| row.get(0),
    )
    .ok()
}

/// Runs `app#build` remotely and checks what REM-12 … REM-14 promise of it; the first
/// clone's outputs.
fn builds_remotely_as_a_local_build_would(url: &str, nonce: &str, keys: &str) {
    let remote = workspace(url, nonce, keys);
    let (out, summary) = run(&remote, &["app#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("┌─ app#build @remote"),
        "{}",
        out.stdout
    );
    for id in ["lib#build", "app#build"] {
        assert_eq!(outcome(&summary, id), said("success", "miss", "remote"));
    }
    // The same workspace built locally: the same trees, byte for byte.
    let local = workspace(url, nonce, keys);
    let (out, summary) = run(&local, &["app#build", "--remote-exec=off"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        outcome(&summary, "app#build"),
        said("success", "miss", "local")
    );
    for project in ["lib", "app"] {
        let dist = format!("packages/{project}/dist");
        assert!(!tree(&remote.path(&dist)).is_empty(), "{dist}");
        assert_eq!(
            tree(&remote.path(&dist)),
            tree(&local.path(&dist)),
            "{dist}"
        );
    }
    assert_eq!(remote.read("packages/lib/dist/os.txt"), "Linux\n");
    assert_eq!(
        remote.read("packages/app/dist/both.txt"),
        format!("app source {nonce}\nlib source {nonce}\n")
    );
    // Saved locally with their origin: the next run is up to date.
    assert_eq!(
        origin(&remote, "lib", "build").as_deref(),
        Some("remote-exec")
    );
    let (out, summary) = run(&remote, &["app#build"]);
    assert_eq!(out.code, 0);
    for id in ["lib#build", "app#build"] {
        assert_eq!(outcome(&summary, id).1, "up-to-date");
    }
    // Another checkout with an empty cache: the server's action cache answers.
    let other = workspace(url, nonce, keys);
    let (out, summary) = run(&other, &["app#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    for id in ["lib#build", "app#build"] {
        assert_eq!(
            outcome(&summary, id),
            said("success", "restored-remote", "remote")
        );
    }
    for project in ["lib", "app"] {
        let dist = format!("packages/{project}/dist");
        assert_eq!(tree(&other.path(&dist)), tree(&local.path(&dist)), "{dist}");
    }
}

#[test]
fn remote_tasks_build_on_casd_as_they_build_locally_and_repeat_from_the_action_cache() {
    let Some(casd) = Casd::start_executing() else {
        return;
    };
    builds_remotely_as_a_local_build_would(&casd.url(), "casd", "");
}

/// ACC-37. (The projects live under `packages/`: casd's runner binds the host's `/lib` over
/// the input root's `lib`.)
#[test]
fn acc_37_remote_execution_on_casd() {
    let Some(casd) = Casd::start_executing() else {
        return;
    };
    let f = empty();
    f.write(".gitignore", ".vx/\ndist/\n");
    f.write(
        "vx.toml",
        &format!(
            "[workspace]\nmembers = [\"packages/*\"]\n[workspace.remote-execution]\nurl = \"{}\"\n",
            casd.url()
        ),
    );
    f.write("packages/lib/package.json", r#"{ "name": "lib" }"#);
    f.write(
        "packages/lib/vx.toml",
        "[tasks.remote]\ncommand = \"mkdir -p dist && uname -s > dist/os.txt && echo remote-ok\"\n\
         remote = true\ncache = { inputs = [], outputs = [\"dist/**\"] }\n",
    );
    f.write("packages/app/package.json", r#"{ "name": "app" }"#);
    f.write(
        "packages/app/vx.toml",
        "[tasks.after]\ncommand = \"echo after\"\ndepends-on = [\"lib#remote\"]\n",
    );
    f.commit();
    let out = f.vx(&["run", "lib#remote"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("lib#remote @remote"), "{}", out.stdout);
    assert!(out.stdout.contains("remote-ok"), "{}", out.stdout);
    assert_eq!(f.read("packages/lib/dist/os.txt"), "Linux\n");
    let out = f.vx(&["run", "lib#remote"]);
    assert_eq!(out.code, 0);
    assert!(out.stdout.contains("up-to-date"), "{}", out.stdout);
    f.write(
        "packages/lib/vx.toml",
        "[tasks.remote]\ncommand = \"echo failing && exit 3\"\n\
         remote = true\ncache = { inputs = [], outputs = [\"dist/**\"] }\n",
    );
    f.commit();
    let out = f.vx(&["run", "app#after", "--all"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("failed miss lib#remote @remote"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("failed (exit 3)"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("skipped app#after • blocked by lib#remote"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_failing_remote_command_fails_with_stdout_then_stderr_and_skips_its_dependants() {
    let Some(casd) = Casd::start_executing() else {
        return;
    };
    let f = workspace(&casd.url(), "fails", "");
    lib_command(&f, "echo to-err >&2 && echo to-out && exit 3", "");
    f.commit();
    let (out, summary) = run(&f, &["app#build"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let lib = task(&summary, "lib#build");
    assert_eq!(lib["status"], "failed");
    assert_eq!(lib["exit_code"], 3);
    assert_eq!(lib["placement"], "remote");
    assert_eq!(task(&summary, "app#build")["status"], "skipped");
    // The interleaving is not known remotely: stdout first, then stderr (REM-13).
    assert!(out.stdout.contains("to-out\nto-err\n"), "{}", out.stdout);
    assert!(!f.path("packages/lib/dist").exists());
}

#[test]
fn a_remote_timeout_fails_the_task_with_the_servers_status() {
    let Some(casd) = Casd::start_executing() else {
        return;
    };
    let f = workspace(&casd.url(), "timeout", "");
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"echo started && sleep 20\"\nremote = true\ntimeout = \"1s\"\n\
         cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
    );
    f.commit();
    let (out, summary) = run(&f, &["lib#build"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let lib = task(&summary, "lib#build");
    assert_eq!(lib["status"], "failed");
    assert_eq!(lib["timed_out"], true);
    assert!(
        out.stdout
            .contains("vx: remote execution failed: DEADLINE_EXCEEDED"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("started"), "{}", out.stdout);
    assert!(out.elapsed < Duration::from_secs(15), "{:?}", out.elapsed);
}

/// How many live processes carry `marker` in their argv (the action, on the server's side).
fn running(marker: &str) -> usize {
    vx_test_support::process::pids_with_marker(marker).len()
}

#[test]
fn ctrl_c_cancels_the_operation_on_the_server() {
    let Some(casd) = Casd::start_executing() else {
        return;
    };
    let f = workspace(&casd.url(), "cancel", "");
    let marker = format!("sleep 43.{}", std::process::id() % 1000);
    lib_command(&f, &marker, "");
    f.commit();
    let child = spawn_vx(&f, &["run", "app#build"]);
    wait_until("the action runs on the server", || running(&marker) > 0);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("signalled");
    let out = child.wait_with_output().expect("vx ends");
    assert_eq!(out.status.code(), Some(130));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("aborted"), "{stdout}");
    wait_until("the cancelled action stops on the server", || {
        running(&marker) == 0
    });
}

#[test]
fn download_toplevel_and_none_keep_outputs_on_the_server_until_a_local_task_needs_them() {
    let Some(casd) = Casd::start_executing() else {
        return;
    };
    let f = workspace(&casd.url(), "download", "");
    // toplevel: lib#build's outputs stay on the server, and app#build, remote, gets them by
    // digest.
    let (out, summary) = run(&f, &["app#build", "--download=toplevel"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(!f.path("packages/lib/dist").exists());
    assert_eq!(
        f.read("packages/app/dist/both.txt"),
        "app source download\nlib source download\n"
    );
    assert_eq!(
        outcome(&summary, "lib#build"),
        said("success", "miss", "remote")
    );
    // Not downloaded, so not saved: the next run asks the server again.
    assert_eq!(origin(&f, "lib", "build"), None);
    assert_eq!(origin(&f, "app", "build").as_deref(), Some("remote-exec"));
    // A local task folding remote upstreams whose outputs stayed there downloads them first.
    std::fs::remove_dir_all(f.path(".vx")).unwrap();
    std::fs::remove_dir_all(f.path("packages/app/dist")).unwrap();
    let (out, summary) = run(&f, &["app#check", "--download=toplevel"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    for upstream in ["lib#build", "app#build"] {
        assert!(
            out.stderr.contains(&format!(
                "vx: downloading outputs of {upstream} for app#check, which runs locally\n"
            )),
            "{}",
            out.stderr
        );
    }
    assert_eq!(
        outcome(&summary, "app#check"),
        said("success", "miss", "local")
    );
    assert!(
        out.stdout
            .contains("lib source download\napp source download\nlib source download\n"),
        "{}",
        out.stdout
    );
    assert_eq!(f.read("packages/lib/dist/os.txt"), "Linux\n");
    // none: nothing lands, the logs still show.
    let g = workspace(&casd.url(), "download-none", "");
    let (out, summary) = run(&g, &["app#build", "--download=none"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(!g.path("packages/lib/dist").exists());
    assert!(!g.path("packages/app/dist").exists());
    assert_eq!(
        outcome(&summary, "app#build"),
        said("success", "miss", "remote")
    );
    assert_eq!(origin(&g, "app", "build"), None);
    let (out, summary) = run(&g, &["lib#build", "--download=none"]);
    assert_eq!(out.code, 0);
    assert_eq!(
        outcome(&summary, "lib#build"),
        said("success", "restored-remote", "remote")
    );
    assert!(out.stdout.contains("lib-out\nlib-err\n"), "{}", out.stdout);
}

#[test]
fn extra_inputs_send_ignored_files_and_only_those_named() {
    let Some(casd) = Casd::start_executing() else {
        return;
    };
    let f = workspace(&casd.url(), "extra", "");
    f.write("node_modules/tool/data.txt", "from node_modules\n");
    f.write("node_modules/other/secret.txt", "not sent\n");
    lib_command(
        &f,
        "mkdir -p dist && cat ../../node_modules/tool/data.txt > dist/x && ls ../../node_modules > dist/seen",
        "",
    );
    f.commit();
    let (out, _) = run(&f, &["lib#build"]);
    assert_eq!(
        out.code, 1,
        "without extra-inputs the file is not there: {}",
        out.stdout
    );
    assert!(out.stdout.contains("No such file"), "{}", out.stdout);
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"mkdir -p dist && cat ../../node_modules/tool/data.txt > dist/x && ls ../../node_modules > dist/seen\"\n\
         remote = { extra-inputs = [\"node_modules/tool/**\"] }\ncache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
    );
    f.commit();
    let (out, summary) = run(&f, &["lib#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(outcome(&summary, "lib#build").2, "remote");
    assert_eq!(f.read("packages/lib/dist/x"), "from node_modules\n");
    assert_eq!(f.read("packages/lib/dist/seen"), "tool\n");
}

#[test]
fn remote_tasks_take_no_local_slot_and_max_in_flight_bounds_them() {
    let Some(casd) = Casd::start_executing() else {
        return;
    };
    let f = workspace(&casd.url(), "slots", "max-in-flight = 1\n");
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"true\"\n\
         [tasks.r1]\ncommand = \"sleep 1.5\"\nremote = true\ncache = { inputs = [], outputs = [] }\n\
         [tasks.r2]\ncommand = \"sleep 1.6\"\nremote = true\ncache = { inputs = [], outputs = [] }\n\
         [tasks.local]\ncommand = \"sleep 2\"\n",
    );
    f.commit();
    let (out, summary) = run(&f, &["lib#r1", "lib#r2", "lib#local", "--concurrency=1"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let span = |id: &str| {
        let t = task(&summary, id);
        (
            t["start_offset_ms"].as_u64().unwrap(),
            t["end_offset_ms"].as_u64().unwrap(),
        )
    };
    let overlap = |a: (u64, u64), b: (u64, u64)| a.0 < b.1 && b.0 < a.1;
    let (r1, r2, local) = (span("lib#r1"), span("lib#r2"), span("lib#local"));
    assert!(
        !overlap(r1, r2),
        "one remote action at a time: {r1:?} {r2:?}"
    );
    assert!(
        overlap(r1, local) || overlap(r2, local),
        "the local slot runs beside them: {r1:?} {r2:?} {local:?}"
    );
    assert!(
        out.stdout.contains("local + remote (1 in flight)"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_task_whose_environment_holds_a_secret_runs_locally_with_a_note() {
    let Some(casd) = Casd::start_executing() else {
        return;
    };
    let f = workspace(&casd.url(), "secret", "");
    lib_command(
        &f,
        "mkdir -p dist && echo built",
        "env = { define = { NPM_TOKEN = \"abcdef123456\" }, pass-through = [\"LANG\"] }\n",
    );
    f.commit();
    let (out, summary) = run(&f, &["lib#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(
            "vx: lib#build: runs locally because its environment holds a secret (`NPM_TOKEN`)\n"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(
        outcome(&summary, "lib#build"),
        said("success", "miss", "local")
    );
    assert!(!out.stdout.contains("@remote"));
    // The executor's token, passed through under a name that does not look like a secret, is a
    // secret all the same: it would reach the worker.
    let g = workspace(&casd.url(), "secret-token", "token-env = \"REAPI_JWT\"\n");
    lib_command(
        &g,
        "mkdir -p dist && cp src/main.txt dist/",
        "env = { pass-through = [\"REAPI_JWT\"] }\n",
    );
    g.commit();
    let (out, summary) = run_with(&g, &["app#build"], &[("REAPI_JWT", "jwt-value-123456")]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(
            "vx: lib#build: runs locally because its environment holds a secret (`REAPI_JWT`)\n"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(outcome(&summary, "lib#build").2, "local");
    assert_eq!(
        outcome(&summary, "app#build").2,
        "remote",
        "the others still go"
    );
    assert!(!out.stdout.contains("jwt-value-123456") && !out.stderr.contains("jwt-value-123456"));
}

#[test]
fn a_signal_while_a_task_waits_to_run_locally_ends_the_run() {
    // The server is dead: lib#build falls back to a local slot, which lib#hold keeps busy.
    let f = workspace("grpc://127.0.0.1:1", "waiting", "");
    let marker = vx_test_support::process::unique_marker("hold");
    f.write(
        "packages/lib/vx.toml",
        &format!(
            "[tasks.build]\ncommand = \"mkdir -p dist\"\nremote = true\ncache = {{ inputs = [\"src/**\"], outputs = [\"dist/**\"] }}\n\
             [tasks.hold]\ncommand = \"sleep 30 && echo {marker}\"\n"
        ),
    );
    f.commit();
    let mut child = spawn_vx(&f, &["run", "lib#hold", "lib#build", "--concurrency=1"]);
    wait_until("lib#hold runs", || running(&marker) > 0);
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("signalled");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("vx still runs 20 s after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().expect("vx ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("remote tasks run locally"), "{stderr}");
}

#[test]
fn a_task_that_falls_back_to_local_downloads_its_remote_upstreams_first() {
    let Some(mut casd) = Casd::start_executing() else {
        return;
    };
    // lib#build runs remotely and stays there (not requested); app#build waits for lib#gate,
    // which waits for the test to kill the server; then it cannot run remotely.
    let f = workspace(&casd.url(), "fallback", "");
    let gate = f.path("open");
    f.write(
        "packages/lib/vx.toml",
        &format!(
            "[tasks.build]\ncommand = \"mkdir -p dist && cp src/main.txt dist/\"\nremote = true\ncache = {{ inputs = [\"src/**\"], outputs = [\"dist/**\"] }}\n\
             [tasks.gate]\ncommand = \"while [ ! -f {} ]; do sleep 0.05; done\"\n",
            gate.display()
        ),
    );
    f.write(
        "packages/app/vx.toml",
        "[tasks.build]\ncommand = \"mkdir -p dist && cat src/main.txt ../lib/dist/main.txt > dist/both.txt\"\n\
         depends-on = [\"lib#build\", \"lib#gate\"]\nremote = true\ncache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
    );
    f.commit();
    let child = spawn_vx(&f, &["run", "app#build", "--download=toplevel"]);
    wait_until("lib#build ran on the server", || casd.action_results() > 0);
    // vx reads the result's streams and outputs right after; give it that moment.
    std::thread::sleep(Duration::from_secs(1));
    casd.kill();
    std::fs::write(&gate, "").unwrap();
    let out = child.wait_with_output().expect("vx ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The server is gone, so the download it needs fails, and says so; nothing is built
    // without lib's outputs.
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("remote tasks run locally for the rest of this run"),
        "{stderr}"
    );
    assert!(
        stderr.contains("vx: downloading outputs of lib#build for app#build, which runs locally"),
        "{stderr}"
    );
    assert!(
        stdout.contains("vx: app#build: cannot download the outputs of lib#build: "),
        "{stdout}"
    );
    assert!(!f.path("packages/app/dist/both.txt").exists());
}

#[test]
fn a_root_task_whose_output_glob_has_no_fixed_directory_runs_locally_with_a_note() {
    let f = workspace("grpc://127.0.0.1:1", "root", "");
    let root = f.read("vx.toml");
    f.write(
        "vx.toml",
        &format!(
            "{root}\n[tasks.gen]\ncommand = \"mkdir -p gen && echo a > gen/a.d.ts && echo t > top.d.ts\"\n\
             remote = true\ncache = {{ inputs = [], outputs = [\"**/*.d.ts\"] }}\n"
        ),
    );
    f.write(".gitignore", ".vx/\ndist/\nsummary.json\n*.d.ts\n");
    f.commit();
    let (out, summary) = run(&f, &["//#gen"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(
            "vx: //#gen: runs locally because its output glob `**/*.d.ts` names no directory below the workspace root\n"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(
        outcome(&summary, "//#gen"),
        said("success", "miss", "local")
    );
    assert_eq!(f.read("gen/a.d.ts"), "a\n");
    assert!(
        !out.stderr.contains("warning"),
        "the server was never asked: {}",
        out.stderr
    );
}

#[test]
fn without_the_table_or_with_remote_exec_off_remote_tasks_run_locally() {
    let f = workspace("grpc://127.0.0.1:1", "off", "");
    f.write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
    f.commit();
    let (out, summary) = run(&f, &["app#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr
            .lines()
            .filter(|l| l.contains("remote execution"))
            .collect::<Vec<_>>(),
        ["vx: 2 tasks ask for remote execution, but [workspace.remote-execution] is not configured; running locally"]
    );
    assert_eq!(
        outcome(&summary, "app#build"),
        said("success", "miss", "local")
    );
    // With the table, `--remote-exec=off` says nothing and runs everything here.
    let g = workspace("grpc://127.0.0.1:1", "off", "");
    let (out, summary) = run(&g, &["app#build", "--remote-exec=off"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(!out.stderr.contains("remote"), "{}", out.stderr);
    assert_eq!(outcome(&summary, "lib#build").2, "local");
}

#[test]
fn a_dead_server_never_fails_the_run_its_tasks_run_locally_with_one_warning() {
    // Nothing listens on port 1.
    let f = workspace("grpc://127.0.0.1:1", "dead", "");
    let (out, summary) = run(&f, &["app#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.stderr);
    assert!(
        warnings[0].starts_with("warning: remote execution grpc://127.0.0.1:1: ")
            && warnings[0].ends_with("; remote tasks run locally for the rest of this run"),
        "{}",
        warnings[0]
    );
    for id in ["lib#build", "app#build"] {
        assert_eq!(outcome(&summary, id), said("success", "miss", "local"));
    }
    assert_eq!(
        f.read("packages/app/dist/both.txt"),
        "app source dead\nlib source dead\n"
    );
}

#[test]
fn plans_and_reports_show_the_placement() {
    let f = workspace("grpc://127.0.0.1:1", "plan", "");
    let out = f.vx(&["run", "app#check", "--dry=json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let plan: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let placement = |id: &str| {
        plan["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap()["placement"]
            .clone()
    };
    assert_eq!(placement("lib#build"), "remote");
    assert_eq!(placement("app#build"), "remote");
    assert_eq!(placement("app#check"), "local");
    let out = f.vx(&["run", "app#check", "--dry"]);
    assert!(out.stdout.contains("app#build @remote"), "{}", out.stdout);
    assert!(!out.stdout.contains("app#check @remote"), "{}", out.stdout);
    let out = f.vx(&["run", "app#check", "--dry=json", "--remote-exec=off"]);
    let plan: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    for t in plan["tasks"].as_array().unwrap() {
        assert_eq!(t["placement"], "local", "{t}");
    }
}

/// Remote execution writes its outputs back through directory descriptors. Another
/// process flips an output directory with a symlink to a host directory while vx writes a
/// remote result back (served from casd's action cache, 20 times): nothing lands there. (The
/// command cannot run locally, so a fallback's own writes cannot be mistaken for vx's.)
#[test]
fn a_directory_swapped_for_a_symlink_during_a_write_back_is_never_written_through() {
    let Some(casd) = Casd::start_executing() else {
        return;
    };
    let f = workspace(&casd.url(), "race", "");
    // The command refuses to run in this checkout: should a refused write-back make vx run the
    // task here instead, the shell's own `>` through the link must not count as vx's write.
    let root = f.root().canonicalize().unwrap();
    lib_command(
        &f,
        &format!(
            "case $PWD in '{}'*) exit 3;; esac; mkdir -p dist/a && for i in $(seq 1 200); do echo $i > dist/a/f$i; done",
            root.display()
        ),
        "",
    );
    f.commit();
    let (out, _) = run(&f, &["lib#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let host = tempfile::tempdir_in("/var/tmp").unwrap();
    let dist = f.path("packages/lib/dist");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let racer = {
        let (dist, host, stop) = (dist.clone(), host.path().to_path_buf(), stop.clone());
        std::thread::spawn(move || {
            let (dir, hold, link) = (dist.join("a"), dist.join(".hold"), dist.join(".lnk"));
            let mut seen = false;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let meta = std::fs::symlink_metadata(&dir);
                if meta.as_ref().is_ok_and(|m| m.is_dir()) {
                    if std::fs::rename(&dir, &hold).is_ok() {
                        let _ = std::os::unix::fs::symlink(&host, &link);
                        let _ = std::fs::rename(&link, &dir);
                    }
                } else if meta.is_ok_and(|m| m.file_type().is_symlink()) {
                    let _ = std::fs::remove_file(&dir);
                    let _ = std::fs::rename(&hold, &dir);
                }
                seen |= std::fs::read_dir(&host).is_ok_and(|mut d| d.next().is_some());
            }
            seen
        })
    };
    let mut restored = 0;
    for _ in 0..20 {
        let _ = std::fs::remove_dir_all(&dist);
        let _ = std::fs::remove_dir_all(f.path(".vx"));
        let (out, summary) = run(&f, &["lib#build"]);
        if out.code == 0 && outcome(&summary, "lib#build").1 == "restored-remote" {
            restored += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let seen = racer.join().unwrap();
    assert!(
        !seen,
        "a write-back went through the link into the host directory"
    );
    assert_eq!(std::fs::read_dir(host.path()).unwrap().count(), 0);
    assert!(restored > 0, "no round was served from the action cache");
}

mod buildgrid;
mod load;
mod page;
