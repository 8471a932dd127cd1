//! The HTTP remote cache (REM-3, REM-5, REM-8) against the real `turborepo-remote-cache`
//! server on loopback (REM-15): one clone builds and uploads, another restores from it.

use vx_test_support::fixture::Fixture;
use vx_test_support::http_cache::{HttpCacheServer, TOKEN};
use vx_test_support::http_fake::{Answer, FakeHttpCache};
use vx_test_support::tree::tree;

use crate::empty;

const TEAM: &str = "team_vx";

/// Two cached builds writing files with distinct modes, `app` folding `lib`.
fn workspace(url: &str) -> Fixture {
    workspace_with(url, "")
}

/// [`workspace`] with more `[workspace.remote-cache]` keys. An HTTP URL gets the team `TEAM`.
pub(crate) fn workspace_with(url: &str, remote_keys: &str) -> Fixture {
    let f = empty();
    f.write(".gitignore", ".vx/\ndist/\n");
    let team = if url.starts_with("http") {
        format!("team = \"{TEAM}\"\n")
    } else {
        String::new()
    };
    f.write(
        "vx.toml",
        &format!("[workspace]\nmembers = [\"packages/*\"]\n\n[workspace.remote-cache]\nurl = \"{url}\"\n{team}{remote_keys}"),
    );
    for (name, deps) in [("lib", ""), ("app", "depends-on = [\"lib#build\"]\n")] {
        f.write(
            &format!("packages/{name}/package.json"),
            &format!(r#"{{ "name": "{name}", "version": "1.0.0" }}"#),
        );
        f.write(
            &format!("packages/{name}/src/main.txt"),
            &format!("{name} source\n"),
        );
        f.write(
            &format!("packages/{name}/vx.toml"),
            &format!(
                "[tasks.build]\ncommand = \"mkdir -p dist/bin && cp src/main.txt dist/ && printf '#!/bin/sh\\\\n' > dist/bin/run && chmod 755 dist/bin/run\"\n{deps}cache = {{ inputs = [\"src/**\"], outputs = [\"dist/**\"] }}\n"
            ),
        );
    }
    f.commit();
    f
}

/// `vx run build --all` with the token and `CI` set to `ci`: it must exit 0, and the token
/// appears nowhere. The run's summary.
pub(crate) fn run(f: &Fixture, ci: &str, extra: &[&str]) -> serde_json::Value {
    let summary = f.path("summary.json");
    let summary_arg = format!("--summarize={}", summary.display());
    let mut args = vec!["run", "build", "--all", summary_arg.as_str()];
    args.extend_from_slice(extra);
    let out = f.vx_in(".", &args, &[("VX_REMOTE_CACHE_TOKEN", TOKEN), ("CI", ci)]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains(TOKEN) && !out.stderr.contains(TOKEN));
    let text = std::fs::read_to_string(&summary).expect("a summary");
    assert!(!text.contains(TOKEN));
    serde_json::from_str(&text).expect("JSON")
}

/// `vx args…` started in the background at the root, with the token, `CI` set to `ci`, and its
/// output captured.
pub(crate) fn spawn_vx(f: &Fixture, args: &[&str], ci: &str) -> std::process::Child {
    f.command(".", args)
        .envs([("VX_REMOTE_CACHE_TOKEN", TOKEN), ("CI", ci)])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("vx starts")
}

/// Waits (up to a minute) until `ready` holds.
pub(crate) fn wait_until(what: &str, ready: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !ready() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Sends SIGINT to `child` and waits for it: its exit code and stderr, and how long it took
/// after the signal.
pub(crate) fn interrupt(child: std::process::Child) -> (Option<i32>, String, std::time::Duration) {
    let signalled = std::time::Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("signalled");
    let out = child.wait_with_output().expect("vx ends");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        signalled.elapsed(),
    )
}

/// A fake that takes every request and never answers, and [`workspace`] pointed at it with
/// these further `[workspace.remote-cache]` keys.
fn silent_server(remote_keys: &str) -> (FakeHttpCache, Fixture) {
    let fake = FakeHttpCache::start();
    fake.answer_all(Answer::Silence);
    let f = workspace_with(&fake.url(), remote_keys);
    (fake, f)
}

/// The stderr lines of REM-7's warnings, without the summary of repeats.
pub(crate) fn warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("warning: remote cache") && !l.contains("more failure"))
        .collect()
}

/// Makes `app#build` wait until a file exists before it builds; the file's path.
pub(crate) fn app_waits_for_a_file(f: &Fixture) -> std::path::PathBuf {
    let marker = f.path("killed");
    f.write(
        "packages/app/vx.toml",
        &format!(
            "[tasks.build]\ncommand = \"while [ ! -f {} ]; do sleep 0.05; done; mkdir -p dist && cp src/main.txt dist/\"\ndepends-on = [\"lib#build\"]\ncache = {{ inputs = [\"src/**\"], outputs = [\"dist/**\"] }}\n",
            marker.display()
        ),
    );
    f.commit();
    marker
}

/// Both projects' outputs, as trees.
pub(crate) fn outputs(f: &Fixture) -> [Vec<vx_test_support::tree::Entry>; 2] {
    ["lib", "app"].map(|p| tree(&f.path(&format!("packages/{p}/dist"))))
}

/// Deletes the local cache and both projects' outputs: a fresh checkout's state.
pub(crate) fn forget(f: &Fixture) {
    std::fs::remove_dir_all(f.path(".vx")).unwrap();
    for project in ["lib", "app"] {
        std::fs::remove_dir_all(f.path(&format!("packages/{project}/dist"))).unwrap();
    }
}

/// Both tasks of `second` were restored from the remote (its run's summary says so), and their
/// outputs are exactly `first`'s.
pub(crate) fn assert_restored_exactly(
    first: &Fixture,
    second: &Fixture,
    summary: &serde_json::Value,
) {
    assert_eq!(
        cache_words(summary),
        [
            ("app#build".to_string(), "restored-remote".to_string()),
            ("lib#build".to_string(), "restored-remote".to_string())
        ],
        "{summary}"
    );
    for project in ["lib", "app"] {
        let dist = format!("packages/{project}/dist");
        assert!(!tree(&second.path(&dist)).is_empty());
        assert_eq!(tree(&second.path(&dist)), tree(&first.path(&dist)));
    }
}

/// Every task of the run `summary` describes has the cache word `word`.
pub(crate) fn assert_every_task(summary: &serde_json::Value, word: &str) {
    assert!(
        cache_words(summary).iter().all(|(_, c)| c == word),
        "every task {word}: {summary}"
    );
}

pub(crate) fn cache_words(summary: &serde_json::Value) -> Vec<(String, String)> {
    summary["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap_or("").to_string(),
                t["cache"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn a_second_clone_restores_every_task_from_the_remote_exactly() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let first = workspace(&server.url());
    let built = run(&first, "true", &[]);
    assert_every_task(&built, "miss");
    assert_eq!(
        server.results(TEAM).len(),
        2,
        "CI uploads both results: {}",
        server.log()
    );

    let second = workspace(&server.url());
    let restored = run(&second, "", &[]);
    assert_restored_exactly(&first, &second, &restored);
    // History says so too (HIST-1): `vx last` words each hit `restored-remote`.
    let last = second.vx(&["last", "--format", "json"]);
    assert_eq!(last.code, 0, "{}", last.stderr);
    assert_eq!(
        last.stdout.matches("\"restored-remote\"").count(),
        2,
        "{}",
        last.stdout
    );
    let text = second.vx(&["last"]);
    assert!(text.stdout.contains("2 remote"), "{}", text.stdout);
    // The token is nowhere in the cache directories (index, history, logs, artifacts).
    for clone in [&first, &second] {
        for (path, kind, _, bytes) in tree(&clone.path(".vx")) {
            assert!(
                kind != 'f' || !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
                ".vx/{path} holds the token"
            );
        }
    }
    // A third run finds them locally: nothing more is asked of the server.
    let again = run(&second, "", &[]);
    assert_every_task(&again, "up-to-date");
}

/// REM-3: an `https://` URL is checked against the system's trust store, as `grpcs://` is. A
/// server whose certificate a throwaway authority signed is refused (a warning, every task
/// executes, exit 0, nothing uploaded) until `SSL_CERT_FILE` names that authority; then entries
/// go up and a second clone restores them.
#[test]
fn a_remote_hit_with_nothing_to_write_is_labelled_restored_remote() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let f = workspace(&server.url());
    // A check: cached, with no outputs, so a hit writes nothing.
    f.write(
        "packages/check/package.json",
        r#"{ "name": "check", "version": "1.0.0" }"#,
    );
    f.write(
        "packages/check/vx.toml",
        "[tasks.build]\ncommand = \"echo checked\"\ncache = { inputs = [\"vx.toml\"], outputs = [] }\n",
    );
    f.commit();
    run(&f, "1", &[]);
    assert_eq!(server.results(TEAM).len(), 3);
    forget(&f);
    let restored = run(&f, "", &[]);
    assert_every_task(&restored, "restored-remote");
    // Served locally from then on: up to date.
    let again = run(&f, "", &[]);
    assert_every_task(&again, "up-to-date");
}

#[test]
fn https_trusts_the_system_store_and_ssl_cert_file() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let Some(front) = server.tls_front() else {
        return;
    };
    let first = workspace(&front.url());
    let untrusted = [("VX_REMOTE_CACHE_TOKEN", TOKEN), ("CI", "true")];
    let out = first.vx_in(".", &["run", "build", "--all"], &untrusted);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("UnknownIssuer") && out.stderr.contains(&front.url()),
        "{}",
        out.stderr
    );
    assert!(
        server.results(TEAM).is_empty(),
        "nothing uploaded untrusted"
    );
    std::fs::remove_dir_all(first.path(".vx")).unwrap();
    let authority = front.authority();
    let authority = authority.to_str().unwrap();
    let trusted = [
        ("VX_REMOTE_CACHE_TOKEN", TOKEN),
        ("CI", "true"),
        ("SSL_CERT_FILE", authority),
    ];
    let out = first.vx_in(".", &["run", "build", "--all"], &trusted);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    assert_eq!(server.results(TEAM).len(), 2, "{}", server.log());
    let second = workspace(&front.url());
    let out = second.vx_in(
        ".",
        &["run", "build", "--all"],
        &[trusted[0], ("CI", ""), trusted[2]],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("cache      2 remote\n"),
        "{}",
        out.stdout
    );
}

#[test]
fn without_ci_nothing_is_uploaded_and_cache_remote_w_forces_it() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let f = workspace(&server.url());
    run(&f, "", &[]);
    assert!(
        server.results(TEAM).is_empty(),
        "write = \"ci\" and CI is not set"
    );
    std::fs::remove_dir_all(f.path(".vx")).unwrap();
    run(&f, "", &["--cache=remote:w"]);
    assert_eq!(server.results(TEAM).len(), 2);
}

#[test]
fn with_local_writes_off_results_are_uploaded_from_tmp_and_not_kept() {
    // REM-8: `--cache=local:r,remote:rw` packs each result in `tmp/` for the upload and
    // deletes it afterwards; nothing is indexed or kept locally.
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let first = workspace(&server.url());
    let built = run(&first, "true", &["--cache=local:r,remote:rw"]);
    assert_every_task(&built, "miss");
    assert_eq!(server.results(TEAM).len(), 2, "{}", server.log());
    let kept: Vec<String> = tree(&first.path(".vx"))
        .into_iter()
        .map(|(path, ..)| path)
        .filter(|path| path.ends_with(".tar.zst") || path.starts_with("tmp/"))
        .collect();
    assert!(kept.is_empty(), "nothing kept locally: {kept:?}");
    // What was uploaded is what the task produced.
    let second = workspace(&server.url());
    let restored = run(&second, "", &[]);
    assert_restored_exactly(&first, &second, &restored);
}

#[test]
fn a_dead_server_slows_nothing_down_and_fails_nothing() {
    let Some(mut server) = HttpCacheServer::start() else {
        return;
    };
    server.kill();
    let f = workspace(&server.url());
    let out = f.vx_in(
        ".",
        &["run", "build", "--all"],
        &[("VX_REMOTE_CACHE_TOKEN", TOKEN), ("CI", "true")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let warned: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning: remote cache"))
        .collect();
    assert!(
        warned
            .iter()
            .any(|l| l.contains("download failed (connection refused) at http://127.0.0.1:")),
        "{}",
        out.stderr
    );
    assert_eq!(
        warned.len(),
        warned
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        "each failure class once: {warned:?}"
    );
}

#[test]
fn a_server_killed_in_the_middle_of_a_run_fails_nothing() {
    // `lib#build` uploads to the live server; then the server dies while `app#build` runs, and
    // `app#build`'s upload meets a closed port: one warning, the run completes, exit 0.
    let Some(mut server) = HttpCacheServer::start() else {
        return;
    };
    let f = workspace(&server.url());
    let killed = app_waits_for_a_file(&f);
    let child = spawn_vx(&f, &["run", "build", "--all"], "true");
    wait_until("lib#build never uploaded", || {
        !server.results(TEAM).is_empty()
    });
    server.kill();
    std::fs::write(&killed, "").unwrap();
    let out = child.wait_with_output().expect("vx ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // One warning for the failure class; `lib#build`'s own upload may have been cut by the kill
    // too, and is then counted in the one summary line of REM-7.
    let warned: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: remote cache") && !l.contains("more failure"))
        .collect();
    assert_eq!(warned.len(), 1, "{stderr}");
    // Refused, or broken on the kept-alive connection: either way one upload warning.
    assert!(
        warned[0].starts_with("warning: remote cache: upload failed (")
            && warned[0].contains(") at http://127.0.0.1:"),
        "{stderr}"
    );
    assert!(f.path("packages/app/dist/main.txt").is_file());
    assert!(f.path("packages/lib/dist/main.txt").is_file());
}

#[test]
fn dry_asks_the_remote_whether_entries_exist_and_downloads_nothing() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let first = workspace(&server.url());
    run(&first, "true", &[]);
    let second = workspace(&server.url());
    let out = second.vx_in(
        ".",
        &["run", "build", "--all", "--dry=json"],
        &[("VX_REMOTE_CACHE_TOKEN", TOKEN), ("CI", "")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    for task in doc["tasks"].as_array().expect("tasks") {
        assert_eq!(task["cache"], "hit-remote", "{doc}");
    }
    let artifacts = second.path(".vx/artifacts");
    let downloaded = std::fs::read_dir(&artifacts).map_or(0, |d| d.count());
    assert_eq!(downloaded, 0, "an existence check downloads nothing");
}

#[test]
fn info_shows_the_remote_as_a_run_here_would_use_it() {
    let Some(mut server) = HttpCacheServer::start() else {
        return;
    };
    let f = workspace(&server.url());
    let info = |f: &Fixture| {
        let out = f.vx_in(
            ".",
            &["info", "--format", "json"],
            &[("VX_REMOTE_CACHE_TOKEN", TOKEN), ("CI", "")],
        );
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        assert!(!out.stdout.contains(TOKEN));
        let doc: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
        doc["remote_cache"].clone()
    };
    let remote = info(&f);
    assert_eq!(remote["protocol"], "http");
    assert_eq!(remote["url"], server.url());
    assert_eq!(remote["team"], format!("slug={TEAM}"));
    assert_eq!(
        (remote["reads"].as_bool(), remote["writes"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(remote["token_env"], "VX_REMOTE_CACHE_TOKEN");
    assert_eq!(remote["token_set"], true);
    assert_eq!(remote["answered"], true);
    server.kill();
    assert_eq!(info(&f)["answered"], false);
}

/// The workspace of [`workspace`], signing with the key in `VX_SIGNING_KEY` (REM-16).
fn signed_workspace(url: &str) -> Fixture {
    let f = workspace(url);
    f.write(
        "vx.toml",
        &format!("[workspace]\nmembers = [\"packages/*\"]\n\n[workspace.remote-cache]\nurl = \"{url}\"\nteam = \"{TEAM}\"\nsignature-key-env = \"VX_SIGNING_KEY\"\n"),
    );
    f.commit();
    f
}

fn run_signed(f: &Fixture, ci: &str, key: &str) -> vx_test_support::fixture::Output {
    let summary = f.path("summary.json");
    let summary_arg = format!("--summarize={}", summary.display());
    let out = f.vx_in(
        ".",
        &["run", "build", "--all", summary_arg.as_str()],
        &[
            ("VX_REMOTE_CACHE_TOKEN", TOKEN),
            ("VX_SIGNING_KEY", key),
            ("CI", ci),
        ],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains(key) && !out.stderr.contains(key));
    out
}

#[test]
fn signed_artifacts_are_restored_only_with_the_right_key() {
    const KEY: &str = "team-signing-key";
    let Some(server) = HttpCacheServer::start_with(Some(KEY)) else {
        return;
    };
    let first = signed_workspace(&server.url());
    run_signed(&first, "true", KEY);
    assert_eq!(
        server
            .results(TEAM)
            .iter()
            .filter(|a| a.ends_with(".tag"))
            .count(),
        2,
        "tagged uploads"
    );

    let second = signed_workspace(&server.url());
    run_signed(&second, "", KEY);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(second.path("summary.json")).unwrap())
            .unwrap();
    assert_every_task(&summary, "restored-remote");

    let third = signed_workspace(&server.url());
    let out = run_signed(&third, "", "a-wrong-signing-key");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(third.path("summary.json")).unwrap())
            .unwrap();
    assert_every_task(&summary, "miss");
    assert!(
        out.stderr.contains(
            "warning: remote cache: download failed (bad signature) at http://127.0.0.1:"
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("\nhint: the entry was signed with another key, or not signed: check that every machine uses the same signing key\n"),
        "{}",
        out.stderr
    );
    // Like turbo, vx says when a key is too short to be safe.
    assert!(
        out.stderr.contains("warning: remote cache: the signing key in $VX_SIGNING_KEY is 19 bytes; a key of at least 32 random bytes is hard to guess\n"),
        "{}",
        out.stderr
    );
}

#[test]
fn without_the_signing_key_the_remote_is_off_with_one_warning() {
    let Some(server) = HttpCacheServer::start_with(Some("k")) else {
        return;
    };
    let f = signed_workspace(&server.url());
    let out = f.vx_in(
        ".",
        &["run", "build", "--all"],
        &[("VX_REMOTE_CACHE_TOKEN", TOKEN), ("CI", "true")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr
            .matches("warning: remote cache: $VX_SIGNING_KEY is not set, and signing is configured; the remote cache is off")
            .count(),
        1,
        "{}",
        out.stderr
    );
    assert!(server.results(TEAM).is_empty());
}

/// A task sees the token only when its `env` passes it through, and even then never shows it,
/// whatever the variable is called (one named like a secret is masked anyway, EXEC-5).
#[test]
fn the_token_is_masked_in_task_output() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let f = workspace(&server.url());
    let url = server.url();
    f.write(
        "vx.toml",
        &format!("[workspace]\nmembers = [\"packages/*\"]\n\n[workspace.remote-cache]\nurl = \"{url}\"\nteam = \"{TEAM}\"\ntoken-env = \"CACHE_AUTH\"\n"),
    );
    let lib = f.read("packages/lib/vx.toml");
    f.write(
        "packages/lib/vx.toml",
        &format!("{lib}\n[tasks.show]\ncommand = \"echo token=$CACHE_AUTH\"\nenv = {{ pass-through = [\"CACHE_AUTH\"] }}\n"),
    );
    f.commit();
    let out = f.vx_in(
        ".",
        &["run", "lib#show"],
        &[("CACHE_AUTH", TOKEN), ("CI", "")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("token=***"), "{}", out.stdout);
    assert!(!out.stdout.contains(TOKEN));
}

/// A run against the fault-injecting fake; the exit code is always 0 and both tasks execute.
pub(crate) fn run_against_fake(f: &Fixture, ci: &str) -> String {
    let summary = f.path("summary.json");
    let summary_arg = format!("--summarize={}", summary.display());
    let out = f.vx_in(
        ".",
        &["run", "build", "--all", summary_arg.as_str()],
        &[("VX_REMOTE_CACHE_TOKEN", TOKEN), ("CI", ci)],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).expect("a summary")).unwrap();
    assert!(
        cache_words(&summary).iter().all(|(_, c)| c == "miss"),
        "{summary}{}",
        out.stderr
    );
    out.stderr
}

mod cutoff;
mod distance;
mod faults;
