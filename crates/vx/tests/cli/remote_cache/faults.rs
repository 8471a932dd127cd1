//! The HTTP remote cache against the fault-injecting fake (REM-7, REM-8): a server that never
//! answers, refusals, server errors and corrupt bodies are misses and dropped uploads with one
//! warning each, and scheduling never waits for the prefetch.

use super::*;

#[test]
fn a_server_that_never_answers_is_a_miss_after_its_idle_timeout() {
    let (_fake, f) = silent_server("idle-timeout = \"1s\"\nconnect-timeout = \"1s\"\n");
    let stderr = run_against_fake(&f, "");
    assert!(
        stderr.contains("warning: remote cache: download failed (no progress within the idle timeout) at http://127.0.0.1:"),
        "{stderr}"
    );
}

#[test]
fn scheduling_never_waits_for_the_prefetch() {
    // REM-6: `lib#build`'s download is answered only once `app#stamp`, which needs nothing,
    // has run. A run that waited for its downloads before scheduling would time out on it.
    let fake = FakeHttpCache::start();
    let f = workspace_with(&fake.url(), "idle-timeout = \"30s\"\n");
    let marker = f.path("stamped");
    fake.answer_all(Answer::When(marker.clone()));
    f.write(
        "packages/app/vx.toml",
        &format!(
            "[tasks.build]\ncommand = \"mkdir -p dist\"\ndepends-on = [\"lib#build\"]\ncache = {{ inputs = [\"src/**\"], outputs = [\"dist/**\"] }}\n\n[tasks.stamp]\ncommand = \"touch {}\"\n",
            marker.display()
        ),
    );
    f.commit();
    let out = f.vx_in(
        ".",
        &["run", "build", "app#stamp", "--all", "--concurrency=2"],
        &[("VX_REMOTE_CACHE_TOKEN", TOKEN), ("CI", "")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        !out.stderr.contains("warning: remote cache"),
        "{}",
        out.stderr
    );
    let seen = fake.seen();
    assert!(
        seen.iter()
            .any(|r| r.starts_with("RELEASED /v8/artifacts/")),
        "{seen:?}"
    );
    assert!(!seen.iter().any(|r| r.starts_with("GAVE UP")), "{seen:?}");
}

#[test]
fn refusals_and_server_errors_are_misses_and_dropped_uploads_with_one_warning_each() {
    let fake = FakeHttpCache::start();
    fake.answer_all(Answer::Status(500));
    // One request of each kind at a time, so none is in flight when the layer goes off.
    let f = workspace_with(
        &fake.url(),
        "download-concurrency = 1\nupload-concurrency = 1\n",
    );
    let stderr = run_against_fake(&f, "true");
    assert_eq!(
        stderr.matches("download failed (HTTP 500)").count(),
        1,
        "{stderr}"
    );
    assert_eq!(
        stderr
            .matches("warning: remote cache: upload failed (HTTP 500) at http://127.0.0.1:")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("; not uploaded"), "{stderr}");
    // Whatever their order, the third failure (two downloads and an upload, or a download, an
    // upload and a download) switches the layer off, and the last upload is not tried.
    assert_eq!(
        stderr
            .matches("warning: remote cache: 1 more failure of the kinds above")
            .count(),
        1,
        "the repeat of one class, counted once: {stderr}"
    );
    assert!(
        stderr.contains("failed 3 times in a row; it is not asked again in this run"),
        "{stderr}"
    );
    assert!(
        stderr.contains(": 1 failed, 1 not tried once the server was switched off\n"),
        "{stderr}"
    );
    assert!(fake
        .seen()
        .iter()
        .any(|r| r.starts_with("PUT /v8/artifacts/")));
    for code in [401, 403] {
        fake.answer_all(Answer::Status(code));
        std::fs::remove_dir_all(f.path(".vx")).unwrap();
        let stderr = run_against_fake(&f, "true");
        assert!(
            stderr.contains(&format!("download failed (HTTP {code})"))
                && stderr.contains(&format!("upload failed (HTTP {code})")),
            "{stderr}"
        );
        assert_eq!(
            stderr
                .matches("hint: check the token in $VX_REMOTE_CACHE_TOKEN")
                .count(),
            2,
            "one hint per failure class: {stderr}"
        );
        // A refusal stops what was refused, each once: downloads, then uploads.
        for what in ["downloads", "uploads"] {
            assert_eq!(
                stderr
                    .matches(&format!(
                        "refused the credentials; no further {what} are tried in this run"
                    ))
                    .count(),
                1,
                "{stderr}"
            );
        }
    }
}

#[test]
fn a_flipped_byte_a_truncated_body_and_an_oversize_body_are_misses() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    // Real artifacts first, from the real server.
    let first = workspace(&server.url());
    run(&first, "true", &[]);
    let keys = server.results(TEAM);
    assert_eq!(keys.len(), 2);
    let body = |key: &str| {
        std::fs::read(server.storage.path().join("store").join(TEAM).join(key)).unwrap()
    };

    let fake = FakeHttpCache::start();
    let mut flipped = body(&keys[0]);
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0xff;
    fake.answer(&keys[0], Answer::Body(flipped));
    let whole = body(&keys[1]);
    fake.answer(
        &keys[1],
        Answer::Truncated {
            bytes: whole[..whole.len() / 2].to_vec(),
            declared: whole.len(),
        },
    );
    let second = workspace(&fake.url());
    let stderr = run_against_fake(&second, "");
    assert!(
        stderr.contains("download failed (invalid artifact: "),
        "{stderr}"
    );
    assert!(
        stderr.contains("download failed (the connection broke)"),
        "{stderr}"
    );

    let oversize = FakeHttpCache::start();
    oversize.answer_all(Answer::Body(vec![0u8; 5000]));
    let third = workspace_with(&oversize.url(), "max-download-size = \"1K\"\n");
    let stderr = run_against_fake(&third, "");
    assert!(
        stderr.contains("download failed (the artifact is over max-download-size (1024 bytes))"),
        "{stderr}"
    );
}

#[test]
fn slow_uploads_are_waited_for_and_said_and_never_fail_the_run() {
    // Uploads give up after the idle timeout, after the end-of-run line (reads are off: a
    // stalled read would switch the layer off before anything is uploaded).
    let (_fake, f) = silent_server("idle-timeout = \"3s\"\n");
    let out = f.vx_in(
        ".",
        &["run", "build", "--all", "--cache=remote:w"],
        &[("VX_REMOTE_CACHE_TOKEN", TOKEN), ("CI", "true")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let stderr = out.stderr;
    assert_eq!(
        stderr.matches("vx: finishing 2 uploads…").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr
            .contains("warning: remote cache: upload failed (no progress within the idle timeout)"),
        "{stderr}"
    );
}

#[test]
fn uploads_still_pending_after_60_s_are_abandoned_with_one_warning() {
    // REM-8: the end of the run waits up to 60 s; an upload the server never answers (its idle
    // timeout is longer) is then abandoned, and the run's exit code is the tasks'.
    let (_fake, f) = silent_server(
        "idle-timeout = \"10m\"\nrequest-timeout = \"10m\"\nconnect-timeout = \"1s\"\n",
    );
    // Reads are off, so only the uploads meet the silent server.
    let out = f.vx_in(
        ".",
        &["run", "build", "--all", "--cache=remote:w"],
        &[("VX_REMOTE_CACHE_TOKEN", TOKEN)],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr
            .matches("warning: remote cache: 2 uploads abandoned after 60 s")
            .count(),
        1,
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(": 2 abandoned at the end of the run\n"),
        "the upload line counts them: {}",
        out.stderr
    );
    assert!(
        out.elapsed >= std::time::Duration::from_secs(60),
        "it waited: {:?}",
        out.elapsed
    );
}

#[test]
fn a_run_stopped_by_a_signal_abandons_its_uploads() {
    // REM-8: Ctrl-C ends the run without the end-of-run wait for uploads.
    let (fake, f) = silent_server("idle-timeout = \"10m\"\nconnect-timeout = \"1s\"\n");
    // `lib#build` is saved and its upload hangs; `slow#wait` keeps the run going meanwhile.
    f.write(
        "packages/slow/package.json",
        r#"{ "name": "slow", "version": "1.0.0" }"#,
    );
    f.write(
        "packages/slow/vx.toml",
        "[tasks.wait]\ncommand = \"sleep 120\"\n",
    );
    f.commit();
    let child = spawn_vx(
        &f,
        &["run", "lib#build", "slow#wait", "--cache=remote:w"],
        "",
    );
    wait_until("no upload started", || {
        fake.seen().iter().any(|r| r.starts_with("PUT "))
    });
    let (code, stderr, took) = interrupt(child);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(!stderr.contains("finishing"), "{stderr}");
    assert!(
        took < std::time::Duration::from_secs(30),
        "ended without waiting 60 s for the upload: {took:?}"
    );
}

#[test]
fn a_run_stopped_by_a_signal_does_not_wait_for_its_downloads() {
    // REM-6: tasks held for their download are let go when the run stops.
    let (fake, f) = silent_server("idle-timeout = \"10m\"\nconnect-timeout = \"1s\"\n");
    let child = spawn_vx(&f, &["run", "build", "--all"], "");
    wait_until("no download started", || {
        fake.seen().iter().any(|r| r.starts_with("GET "))
    });
    let (code, stderr, took) = interrupt(child);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        took < std::time::Duration::from_secs(30),
        "ended without waiting for the download: {took:?}"
    );
}

/// A Turborepo on npm workspaces that vx also runs (`vx.toml` beside `turbo.json`), both pointed
/// at one server and team.
fn shared_with_turbo(url: &str) -> Fixture {
    let f = workspace(url);
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "packageManager": "npm@10.8.2", "workspaces": ["packages/*"]}"#,
    );
    f.write(
        "turbo.json",
        r#"{"tasks": {"build": {"dependsOn": ["^build"], "outputs": ["dist/**"]}}}"#,
    );
    f.write(".gitignore", ".vx/\ndist/\nnode_modules\n.turbo\n");
    for (name, deps) in [("lib", ""), ("app", r#", "dependencies": {"lib": "*"}"#)] {
        f.write(
            &format!("packages/{name}/package.json"),
            &format!(
                r#"{{"name": "{name}", "version": "1.0.0"{deps}, "scripts": {{"build": "mkdir -p dist && cp src/main.txt dist/"}}}}"#
            ),
        );
    }
    let out = std::process::Command::new("npm")
        .args(["install", "--offline", "--no-audit", "--no-fund"])
        .current_dir(f.root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    f.commit();
    f
}

fn turbo_build(f: &Fixture, turbo: &std::path::Path, url: &str) -> String {
    let out = vx_test_support::tools::turbo_command(turbo, f.root())
        .args(["run", "build"])
        .env("TURBO_API", url)
        .env("TURBO_TOKEN", TOKEN)
        .env("TURBO_TEAM", TEAM)
        .output()
        .unwrap();
    assert!(out.status.success(), "turbo: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn turbo_and_vx_share_one_server_without_colliding() {
    let Some(turbo) = vx_test_support::tools::npm_tool("turbo", "turbo") else {
        return;
    };
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let url = server.url();
    let first = shared_with_turbo(&url);
    // Both tools build the same workspace at the same time through the same team.
    std::thread::scope(|scope| {
        scope.spawn(|| turbo_build(&first, &turbo, &url));
        run(&first, "true", &[]);
    });
    let stored = server.results(TEAM);
    let (ours, theirs): (Vec<&String>, Vec<&String>) = stored.iter().partition(|a| a.len() == 64);
    assert_eq!(ours.len(), 2, "{stored:?}");
    assert_eq!(theirs.len(), 2, "turbo's entries beside vx's: {stored:?}");

    // Another clone: each tool hits its own entries.
    let second = shared_with_turbo(&url);
    let turbo_out = turbo_build(&second, &turbo, &url);
    assert!(turbo_out.contains("FULL TURBO"), "{turbo_out}");
    std::fs::remove_dir_all(second.path("packages/lib/dist")).unwrap();
    std::fs::remove_dir_all(second.path("packages/app/dist")).unwrap();
    let restored = run(&second, "", &[]);
    assert_every_task(&restored, "restored-remote");
}

/// ACC-35: `turborepo-remote-cache` with a token: CI uploads both entries; a checkout without
/// `.vx` and outputs restores them from the remote and uploads nothing; a stopped server is one
/// `connection refused` warning and both tasks execute; a wrong token is one warning with the
/// token hint. Every run exits 0.
#[test]
fn acc35_http_round_trip_on_turborepo_remote_cache() {
    let Some(mut server) = HttpCacheServer::start() else {
        return;
    };
    let f = workspace(&server.url());
    run(&f, "1", &[]);
    let uploaded = server.results(TEAM);
    assert_eq!(uploaded.len(), 2, "{}", server.log());
    let produced = outputs(&f);
    let stored = tree(&server.storage.path().join("store"));
    forget(&f);
    let restored = run(&f, "", &[]);
    assert_every_task(&restored, "restored-remote");
    assert_eq!(outputs(&f), produced);
    assert_eq!(
        tree(&server.storage.path().join("store")),
        stored,
        "no PUT without CI"
    );
    // A wrong token: one warning with the hint.
    forget(&f);
    let out = f.vx_in(
        ".",
        &["run", "build", "--all"],
        &[("VX_REMOTE_CACHE_TOKEN", "wrong-token"), ("CI", "")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let warned = warnings(&out.stderr);
    assert_eq!(warned.len(), 2, "{}", out.stderr);
    assert!(
        warned[1].ends_with("refused the credentials; no further downloads are tried in this run"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("\nhint: check the token in $VX_REMOTE_CACHE_TOKEN\n"),
        "{}",
        out.stderr
    );
    // The server stops: one `connection refused` warning, both tasks execute.
    server.kill();
    forget(&f);
    let out = f.vx_in(
        ".",
        &["run", "build", "--all"],
        &[("VX_REMOTE_CACHE_TOKEN", TOKEN), ("CI", "")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let warned = warnings(&out.stderr);
    assert_eq!(
        warned,
        [format!(
            "warning: remote cache: download failed (connection refused) at {}; treating as a miss",
            server.url()
        )],
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("cache      2 miss\n"), "{}", out.stdout);
}
