//! The per-task sandbox on the real binary with the real bubblewrap (SBX-1 to SBX-10, TEST-3):
//! what a sandboxed task may read and write, the violations that fail it, the credential files
//! it never sees, and processes that never outlive it. Each test asks `bwrap_or_skip` first:
//! without a usable bubblewrap it reports itself skipped with the install command, and under
//! `CI` it fails.

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use vx_test_support::fixture::Fixture;
use vx_test_support::process::{bwrap_or_skip, test_child_path, unique_marker};

use crate::guard::{kill_vx_and_expect_no_survivor, spawn_vx, wait_for_markers};
use crate::{assert_contains, assert_no_survivor, empty, one_project, w};

/// Whether sandboxed tasks can run here: bubblewrap usable (`bwrap_or_skip`) and vx's own
/// probe passing (tracing allowed), asked once per test process. Otherwise the test reports
/// itself skipped with the reason, and under `CI` fails (TEST-3).
pub(crate) fn sandbox_or_skip() -> bool {
    static PROBED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let probed = PROBED.get_or_init(|| {
        bwrap_or_skip().ok_or("bubblewrap is missing or unusable")?;
        let f = lib("[tasks.build]\ncommand = 'true'\nsandbox = {}\n");
        let out = f.vx(&["info", "--format", "json"]);
        let info: serde_json::Value = serde_json::from_str(&out.stdout)
            .map_err(|e| format!("vx info printed no JSON ({e}): {out:?}"))?;
        match info["sandbox"]["available"].as_bool() {
            Some(true) => Ok(()),
            _ => Err(format!(
                "vx cannot sandbox here: {}",
                info["sandbox"]["reason"]
            )),
        }
    });
    match probed {
        Ok(()) => true,
        Err(why) => {
            assert!(!vx_test_support::tools::tools_required(), "{why}");
            eprintln!("skipped: {why}");
            false
        }
    }
}

/// A PATH of one directory holding sh, git and a few tools, and no bwrap (the directory goes
/// when the first value is dropped).
fn path_without_bwrap() -> (tempfile::TempDir, String) {
    let bin = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for tool in ["sh", "git", "true", "touch", "echo"] {
        let found = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| std::path::Path::new(d).join(tool))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("{tool} is installed"));
        std::os::unix::fs::symlink(found, bin.path().join(tool)).unwrap();
    }
    let path = bin.path().display().to_string();
    (bin, path)
}

/// The test child as a command, and as a read grant: the build may live under /tmp, which the
/// sandbox replaces with its own.
fn child() -> String {
    test_child_path().display().to_string()
}

/// `lib` with `src/a.txt` and the task table `tasks`, committed.
fn lib(tasks: &str) -> Fixture {
    let f = one_project(tasks);
    f.write("packages/lib/src/a.txt", "content of a\n");
    f.commit();
    f
}

/// ACC-31 on fixture W.
#[test]
fn acc31_sandbox_violations() {
    if !sandbox_or_skip() {
        return;
    }
    let f = w();
    let lib = |command: &str, read: &str| {
        f.write(
            "packages/lib/vx.toml",
            &format!(
                "[tasks.build]\ncommand = \"{command}\"\nsandbox = {{ read = [{read}], write = [\"dist\"] }}\n"
            ),
        );
    };
    let build = "mkdir -p dist && cat src/*.txt > dist/out.txt && cat ../app/src/b.txt";
    lib(build, "\".\"");
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(
        &out.stdout,
        "SANDBOX VIOLATIONS (1)\n│ read  packages/app/src/b.txt\n",
    );
    lib(build, "\".\", \"//packages/app/src\"");
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 0, "{out:?}");
    lib("echo x > other.txt", "\".\"");
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stdout, "│ write packages/lib/other.txt\n");
    assert!(!f.path("packages/lib/other.txt").exists());
    lib("cat ../../.git/HEAD", "\"//\"");
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(!out.stdout.contains("refs/heads"), "{}", out.stdout);
    assert_contains(&out.stdout, "│ read  .git/HEAD\n");
}

/// ACC-32: with `bwrap` absent from vx's PATH the sandboxed task fails, its command never
/// runs, unsandboxed tasks still run, exit 1.
#[test]
fn acc32_the_sandbox_never_falls_back() {
    let f = w();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"touch side-effect\"\nsandbox = {}\n",
    );
    let (_bin, path) = path_without_bwrap();
    let out = f.vx_in(
        "",
        &["run", "build", "--all", "--continue"],
        &[("PATH", &path)],
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stdout, "vx: lib#build: cannot sandbox: ");
    assert!(!f.path("packages/lib/side-effect").exists());
    assert_contains(&out.stdout, "docs");
}

#[test]
fn reading_an_undeclared_file_fails_the_task_naming_the_path() {
    if !sandbox_or_skip() {
        return;
    }
    // `|| true`: the task exits 0, and still fails for the read (SBX-7).
    let f = lib("[tasks.build]\ncommand = 'cat src/a.txt || true'\nsandbox = {}\n");
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(
        &out.stdout,
        "├─ SANDBOX VIOLATIONS (1)\n│ read  packages/lib/src/a.txt\n",
    );
    assert_contains(
        &out.stdout,
        r#"hint: grant what the task needs in its sandbox table: read = ["src/a.txt"]"#,
    );
    assert_contains(&out.stdout, "└─ lib#build");
    assert!(!out.stdout.contains("content of a"), "{}", out.stdout);
    // Never cached: the next run executes it again and fails again.
    let again = f.vx(&["run", "lib#build", "--summarize=summary.json"]);
    assert_eq!(again.code, 1, "{again:?}");
    assert_contains(&again.stdout, "SANDBOX VIOLATIONS (1)");
    // Counted in the summary and in history.
    let summary: serde_json::Value = serde_json::from_str(&f.read("summary.json")).unwrap();
    assert_eq!(summary["tasks"][0]["sandbox_violations"], 1, "{summary}");
    let last = f.vx(&["last"]);
    assert_contains(&last.stdout, "1 sandbox violation");
}

#[test]
fn a_granted_read_works_and_the_result_is_cached() {
    if !sandbox_or_skip() {
        return;
    }
    let f = lib(concat!(
        "[tasks.build]\ncommand = 'mkdir -p dist && cat src/a.txt > dist/out.txt && cat dist/out.txt'\n",
        "sandbox = { read = ['src'], write = ['dist'] }\n",
        "cache = { inputs = ['src/**'], outputs = ['dist/**'] }\n",
    ));
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "content of a");
    assert!(!out.stdout.contains("SANDBOX VIOLATIONS"), "{}", out.stdout);
    assert_eq!(f.read("packages/lib/dist/out.txt"), "content of a\n");
    let again = f.vx(&["run", "lib#build"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert_contains(&again.stdout, "lib#build  up-to-date");
}

#[test]
fn writing_outside_the_write_grants_fails_and_writes_nothing() {
    if !sandbox_or_skip() {
        return;
    }
    let f = lib(concat!(
        "[tasks.build]\ncommand = 'echo x > src/extra.txt; echo y > dist/ok.txt; echo z > $TMPDIR/scratch; true'\n",
        "sandbox = { read = ['src'], write = ['dist'] }\n",
    ));
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(
        &out.stdout,
        "├─ SANDBOX VIOLATIONS (1)\n│ write packages/lib/src/extra.txt\n",
    );
    assert!(!f.path("packages/lib/src/extra.txt").exists());
    // The write grant and TMPDIR were writable.
    assert_eq!(f.read("packages/lib/dist/ok.txt"), "y\n");
}

/// SBX-4: a broad `read = ["."]` at the root shows the root's files, but nested projects and
/// `.git` stay empty walls.
#[test]
fn a_root_read_grant_does_not_expose_nested_projects_or_git() {
    if !sandbox_or_skip() {
        return;
    }
    let f = empty();
    f.write(
        "vx.toml",
        concat!(
            "[workspace]\nmembers = ['packages/*']\n\n",
            "[tasks.peek]\n",
            "command = 'cat root.txt; ls -A packages/lib; ls -A .git; cat packages/lib/package.json; true'\n",
            "sandbox = { read = ['.'] }\n",
        ),
    );
    f.write("root.txt", "root file\n");
    f.write(
        "packages/lib/package.json",
        r#"{ "name": "lib-secret-name" }"#,
    );
    f.write("packages/lib/vx.toml", "[tasks.noop]\ncommand = 'true'\n");
    f.commit();
    let out = f.vx(&["run", "//#peek"]);
    assert_contains(&out.stdout, "root file");
    assert!(!out.stdout.contains("lib-secret-name"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("HEAD"),
        ".git was listed:\n{}",
        out.stdout
    );
    assert!(
        !out.stdout.contains("vx.toml\n"),
        "lib was listed:\n{}",
        out.stdout
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stdout, "│ read  packages/lib/package.json\n");
}

/// SBX-5: credential files under `$HOME` read as empty, even with `$HOME` itself granted.
#[test]
fn credential_files_are_unreadable() {
    if !sandbox_or_skip() {
        return;
    }
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_ed25519"), "PRIVATE-KEY-TEXT").unwrap();
    std::fs::write(
        home.path().join(".npmrc"),
        "//registry/:_authToken=NPM-TOKEN-TEXT",
    )
    .unwrap();
    std::fs::write(home.path().join("notes.txt"), "ordinary file").unwrap();
    let f = lib(concat!(
        "[tasks.build]\n",
        "command = 'cat $HOME/notes.txt; cat $HOME/.npmrc; cat $HOME/.ssh/id_ed25519; ls -A $HOME/.ssh; true'\n",
        "sandbox = { read = ['~'] }\n",
    ));
    let home_text = home.path().display().to_string();
    let out = f.vx_in("", &["run", "lib#build"], &[("HOME", &home_text)]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "ordinary file");
    assert!(!out.stdout.contains("NPM-TOKEN-TEXT"), "{}", out.stdout);
    assert!(!out.stdout.contains("PRIVATE-KEY-TEXT"), "{}", out.stdout);
    assert!(
        !out.stdout.lines().any(|l| l == "id_ed25519"),
        "the hidden .ssh was listed:\n{}",
        out.stdout
    );
}

/// EXEC-8 inside the sandbox: the timeout's SIGTERM reaches the task's own processes through
/// init, and nothing of the task outlives it.
#[test]
fn a_timeout_inside_the_sandbox_leaves_no_process() {
    if !sandbox_or_skip() {
        return;
    }
    let marker = unique_marker("sbx-timeout");
    let f = lib(&format!(
        "[tasks.build]\ncommand = '{} --marker {marker} fork-tree 2 sleep 300'\ntimeout = '1s'\nsandbox = {{ read = ['{}'] }}\n",
        child(),
        child()
    ));
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stdout, "vx: timed out after 1.00s; stopping the task");
    assert_contains(&out.stdout, "failed (timed out, exit 143)");
    assert_no_survivor(&marker);
}

/// SBX-9: a task that ignores SIGTERM is killed at the end of the grace, and its namespace
/// with it.
#[test]
fn a_task_ignoring_sigterm_in_the_sandbox_is_killed_whole() {
    if !sandbox_or_skip() {
        return;
    }
    let marker = unique_marker("sbx-ignore");
    let f = lib(&format!(
        "[tasks.build]\ncommand = '{c} --marker {marker} fork-tree 1 ignore-term forever -- ignore-term forever'\ntimeout = '1s'\nsandbox = {{ read = ['{c}'] }}\n",
        c = child(),
    ));
    let out = f.vx_in("", &["run", "lib#build"], &[("VX_KILL_GRACE", "500ms")]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stdout, "failed (timed out, exit 137)");
    assert_no_survivor(&marker);
}

/// A sandboxed persistent server is stopped cleanly once its dependant is done, and its
/// violations are warnings that do not stop it (SBX-8).
#[test]
fn a_sandboxed_persistent_server_is_stopped_cleanly() {
    if !sandbox_or_skip() {
        return;
    }
    let marker = unique_marker("sbx-server");
    let f = lib(&format!(
        concat!(
            "[tasks.server]\n",
            "command = 'trap \"echo stopped by TERM > out/term; exit 0\" TERM; cat src/a.txt; ",
            "echo Listening; {c} --marker {marker} forever & wait'\n",
            "persistent = {{ ready-when = 'Listening' }}\ntimeout = '20s'\n",
            "sandbox = {{ read = ['{c}'], write = ['out'] }}\n\n",
            "[tasks.e2e]\ncommand = 'echo e2e done'\ndepends-on = ['server']\n",
        ),
        c = child(),
        marker = marker,
    ));
    let out = f.vx(&["run", "lib#e2e"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "e2e done");
    assert_contains(
        &out.stderr,
        "warning: lib#server: sandbox violation: read packages/lib/src/a.txt (a persistent task is not stopped for it)",
    );
    assert_no_survivor(&marker);
    // Stopped with SIGTERM through init, not killed with bubblewrap.
    assert_eq!(f.read("packages/lib/out/term"), "stopped by TERM\n");
}

/// A sandboxed task cannot reach its init's report through /proc (init is not dumpable) to
/// forge an exit or hide a violation.
#[test]
fn a_task_cannot_forge_the_sandbox_report() {
    if !sandbox_or_skip() {
        return;
    }
    let f = lib(concat!(
        "[tasks.build]\n",
        "command = 'printf \"exit 0 0 0 0 0\\n\" > /proc/1/fd/4; ls /proc/1/fd; cat src/a.txt; exit 3'\n",
        "sandbox = {}\n",
    ));
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stdout, "failed (exit 3)");
    assert_contains(&out.stdout, "│ read  packages/lib/src/a.txt\n");
    assert_contains(&out.stdout, "Permission denied");
}

/// The command starts with every signal at its default, as an unsandboxed task does: vx's
/// init ignores SIGPIPE, which must not leak into the task.
#[test]
fn signals_are_default_in_the_sandboxed_command() {
    if !sandbox_or_skip() {
        return;
    }
    let f = lib("[tasks.build]\ncommand = 'grep -E \"^Sig(Ign|Blk)\" /proc/self/status; yes | head -n 1'\nsandbox = {}\n");
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 0, "{out:?}");
    for field in ["SigBlk:", "SigIgn:"] {
        assert!(
            out.stdout
                .lines()
                .any(|l| l.starts_with(field) && l.ends_with(":0000000000000000")
                    || l.starts_with(field) && l.ends_with("\t0000000000000000")),
            "{field} is not empty:\n{}",
            out.stdout
        );
    }
    assert!(!out.stdout.contains("Broken pipe"), "{}", out.stdout);
}

/// A violation is not retried: another attempt would break the sandbox again.
#[test]
fn a_task_that_broke_its_sandbox_is_not_retried() {
    if !sandbox_or_skip() {
        return;
    }
    let f = lib("[tasks.build]\ncommand = 'cat src/a.txt'\nretries = 2\nsandbox = {}\n");
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out.stdout, "SANDBOX VIOLATIONS (1)");
    assert!(!out.stdout.contains("attempt 2"), "{}", out.stdout);
}

/// SBX-9 and EXEC-7: `kill -9` of vx; the guard kills bubblewrap and init, and the end of the
/// pid namespace takes every process in the sandbox.
#[test]
fn kill_9_of_vx_leaves_no_sandboxed_process() {
    if !sandbox_or_skip() {
        return;
    }
    let marker = unique_marker("sbx-kill9");
    let f = lib(&format!(
        "[tasks.build]\ncommand = '{c} --marker {marker} fork-tree 2 sleep 300'\nsandbox = {{ read = ['{c}'] }}\n",
        c = child(),
    ));
    let vx = spawn_vx(&f, &["run", "lib#build"], false);
    wait_for_markers(&marker, 3);
    kill_vx_and_expect_no_survivor(vx, &marker);
}

/// EXEC-9: Ctrl-C reaches the sandboxed command (through init), which ends; vx exits 130.
#[test]
fn ctrl_c_reaches_the_sandboxed_command() {
    if !sandbox_or_skip() {
        return;
    }
    let marker = unique_marker("sbx-int");
    let f = lib(&format!(
        "[tasks.build]\ncommand = 'trap \"echo got INT; exit 3\" INT; {c} --marker {marker} sleep 300 & wait'\nsandbox = {{ read = ['{c}'] }}\n",
        c = child(),
    ));
    let vx = spawn_vx(&f, &["run", "lib#build"], true);
    wait_for_markers(&marker, 1);
    let mut vx = vx.take();
    kill(Pid::from_raw(vx.id() as i32), Signal::SIGINT).unwrap();
    let status = vx.wait().unwrap();
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut vx.stdout.take().unwrap(), &mut stdout).unwrap();
    assert_eq!(status.code(), Some(130), "{stdout}");
    assert_contains(&stdout, "got INT");
    assert_no_survivor(&marker);
}

/// SBX-1: without bubblewrap every sandboxed task fails with the reason; nothing runs
/// unsandboxed, and unsandboxed tasks still run.
#[test]
fn without_bwrap_a_sandboxed_task_fails_and_never_runs_unsandboxed() {
    let f = lib(concat!(
        "[tasks.build]\ncommand = 'touch ran-anyway'\nsandbox = {}\n",
        "[tasks.plain]\ncommand = 'echo plain ran'\n",
    ));
    // A PATH with sh and git, and no bwrap.
    let (_bin, path) = path_without_bwrap();
    let out = f.vx_in(
        "",
        &["run", "lib#build", "lib#plain", "--continue"],
        &[("PATH", &path)],
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(
        &out.stdout,
        "vx: lib#build: cannot sandbox: sandbox not available: `bwrap` is not on PATH (install bubblewrap: apt-get install bubblewrap)",
    );
    assert_contains(&out.stdout, "plain ran");
    assert!(!f.path("packages/lib/ran-anyway").exists());
}

#[test]
fn vx_info_reports_the_sandbox() {
    let available = bwrap_or_skip().is_some();
    let f = lib("[tasks.build]\ncommand = 'true'\nsandbox = {}\n");
    let out = f.vx(&["info", "--format", "json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let info: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(info["sandbox"]["available"], available, "{info}");
    assert_eq!(info["sandbox"]["sandboxed_tasks"], 1, "{info}");
    let bare = f.vx_in(
        "",
        &["info", "--format", "json"],
        &[("PATH", "/nonexistent")],
    );
    let info: serde_json::Value = serde_json::from_str(&bare.stdout).unwrap();
    assert_eq!(info["sandbox"]["available"], false, "{info}");
    assert!(
        info["sandbox"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("bwrap")),
        "{info}"
    );
}

/// A real HTTP server on the host's loopback, answering every request with `hello from the
/// host`, on a thread for the rest of the test process.
fn loopback_server() -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut request = Vec::new();
                let mut buffer = [0u8; 1024];
                while !request.ends_with(b"\r\n\r\n") {
                    match stream.read(&mut buffer) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buffer[..n]),
                    }
                }
                let body = "hello from the host";
                let _ = write!(
                    stream,
                    "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    port
}

/// curl, or `None` after saying how to install it (a failure under `CI`).
fn curl_or_skip() -> Option<()> {
    let found = std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        let why = "curl is missing; install it with `apt-get install curl`";
        assert!(!vx_test_support::tools::tools_required(), "{why}");
        eprintln!("skipped: {why}");
    }
    found.then_some(())
}

/// `vx run lib#build` with the tasks `tasks(port, test child)` against a [`loopback_server`]:
/// its port and the output; `None` when the test skips (no sandbox, no curl).
fn run_against_a_loopback_server(
    tasks: impl Fn(u16, &str) -> String,
) -> Option<(u16, vx_test_support::fixture::Output)> {
    if !sandbox_or_skip() || curl_or_skip().is_none() {
        return None;
    }
    let port = loopback_server();
    let f = lib(&tasks(port, &child()));
    Some((port, f.vx(&["run", "lib#build"])))
}

/// SBX-6: without a grant neither curl nor a raw TCP connection reaches a server on the host's
/// loopback; requests the proxy refuses and direct connections out are violations.
#[test]
fn the_network_is_closed_without_a_grant() {
    let Some((port, out)) = run_against_a_loopback_server(|port, c| {
        format!(
            concat!(
                "[tasks.build]\n",
                "command = 'curl -sS -m 5 http://127.0.0.1:{port}/; {c} tcp-get 127.0.0.1:{port}; ",
                "{c} proxy-get 127.0.0.1:{port}; curl -sS -m 5 http://example.invalid/; ",
                "{c} tcp-get 10.255.255.1:443; true'\n",
                "sandbox = {{ read = ['{c}'] }}\n",
            ),
            c = c,
            port = port,
        )
    }) else {
        return;
    };
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        !out.stdout.contains("hello from the host"),
        "{}",
        out.stdout
    );
    assert_contains(&out.stdout, "├─ SANDBOX VIOLATIONS (3)\n");
    assert_contains(&out.stdout, "│ net   10.255.255.1:443\n");
    assert_contains(&out.stdout, &format!("│ net   127.0.0.1:{port}\n"));
    assert_contains(&out.stdout, "│ net   example.invalid:80\n");
    assert_contains(&out.stdout, "network = [");
}

/// SBX-6: `localhost:<port>` opens the host's loopback on that port through the proxy, to curl
/// and to a raw TCP connection made with `CONNECT`; other hosts stay closed.
#[test]
fn a_network_grant_opens_the_host_loopback_through_the_proxy() {
    let Some((_, out)) = run_against_a_loopback_server(|port, c| {
        format!(
            concat!(
                "[tasks.build]\n",
                "command = 'curl -sS -m 5 http://127.0.0.1:{port}/ && echo && {c} proxy-get 127.0.0.1:{port}'\n",
                "sandbox = {{ read = ['{c}'], network = ['localhost:{port}'] }}\n",
            ),
            c = c,
            port = port,
        )
    }) else {
        return;
    };
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout.matches("hello from the host").count(),
        2,
        "{}",
        out.stdout
    );
}

/// SBX-3: the workspace packages linked in `node_modules` are default reads — for a cached
/// task only those whose tasks its key folds; reading another is a violation whose hint names
/// the dependency that would key it.
#[test]
fn linked_workspace_packages_are_readable_when_the_key_folds_them() {
    if !sandbox_or_skip() {
        return;
    }
    let f = empty();
    f.write("vx.toml", "[workspace]\nmembers = ['packages/*']\n");
    f.write(
        "packages/lib/package.json",
        r#"{ "name": "@acme/lib", "version": "1.0.0", "description": "lib-manifest" }"#,
    );
    f.write("packages/lib/vx.toml", "[tasks.build]\ncommand = 'true'\n");
    f.write(
        "packages/app/package.json",
        r#"{ "name": "app", "dependencies": { "@acme/lib": "workspace:*" } }"#,
    );
    f.write(
        "packages/app/vx.toml",
        concat!(
            "[tasks.keyed]\ncommand = 'cat node_modules/@acme/lib/package.json'\n",
            "depends-on = ['^build']\ncache = { inputs = [], outputs = [] }\nsandbox = {}\n\n",
            "[tasks.build]\ncommand = 'cat node_modules/@acme/lib/package.json; true'\n",
            "cache = { inputs = [], outputs = [] }\nsandbox = {}\n\n",
            "[tasks.uncached]\ncommand = 'cat node_modules/@acme/lib/package.json'\nsandbox = {}\n",
        ),
    );
    f.commit();
    std::fs::create_dir_all(f.path("packages/app/node_modules/@acme")).unwrap();
    std::os::unix::fs::symlink(
        "../../../lib",
        f.path("packages/app/node_modules/@acme/lib"),
    )
    .unwrap();

    let keyed = f.vx(&["run", "app#keyed"]);
    assert_eq!(keyed.code, 0, "{keyed:?}");
    assert_contains(&keyed.stdout, "lib-manifest");
    let uncached = f.vx(&["run", "app#uncached"]);
    assert_eq!(uncached.code, 0, "{uncached:?}");
    assert_contains(&uncached.stdout, "lib-manifest");

    let unkeyed = f.vx(&["run", "app#build"]);
    assert_eq!(unkeyed.code, 1, "{unkeyed:?}");
    assert!(
        !unkeyed.stdout.contains("lib-manifest"),
        "{}",
        unkeyed.stdout
    );
    assert_contains(
        &unkeyed.stdout,
        "│ read  packages/app/node_modules/@acme/lib/package.json\n",
    );
    assert_contains(
        &unkeyed.stdout,
        "│ hint: @acme/lib is a workspace package linked in node_modules that this task's key does not fold; add depends-on = [\"@acme/lib#build\"]\n",
    );
}
