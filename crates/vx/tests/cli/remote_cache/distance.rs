//! The HTTP remote cache where servers are, on another machine (REM-7, REM-8): a server that
//! hangs costs one timeout and is not asked again, one that answers a byte at a time is cut at
//! the request timeout, refusals stop being asked, and a CI run says what it uploaded. The real
//! `turborepo-remote-cache` on loopback, reached directly or through the latency proxy of
//! vx-test-support.

use std::time::Duration;

use vx_test_support::latency::{LatencyProxy, Link};

use super::*;

/// A server at `url`'s port reached through a proxy doing `link`: the proxy, and the URL to use.
fn through(url: &str, link: Link) -> (LatencyProxy, String) {
    let target = url
        .trim_start_matches("http://")
        .parse()
        .expect("host:port");
    let proxy = LatencyProxy::start(target, link);
    let url = format!("http://{}", proxy.addr());
    (proxy, url)
}

/// `vx run build --all` in `f` with the token, without CI, against `url`: its stderr (it must
/// exit 0) and how long it took.
fn run_at(f: &Fixture, url: &str) -> (String, Duration) {
    let out = f.vx_in(
        ".",
        &["run", "build", "--all"],
        &[
            ("VX_REMOTE_CACHE_TOKEN", TOKEN),
            ("VX_REMOTE_CACHE_URL", url),
            ("CI", ""),
        ],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    (out.stderr, out.elapsed)
}

/// `vx run build --all ARGS` in `f` as a CI job (uploads on) with the token: its stderr, after
/// checking it exited 0.
fn ci_run(f: &Fixture, args: &[&str]) -> String {
    let mut all = vec!["run", "build", "--all"];
    all.extend_from_slice(args);
    let out = f.vx_in(".", &all, &[("VX_REMOTE_CACHE_TOKEN", TOKEN), ("CI", "1")]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    out.stderr
}

/// The warnings of a run whose first download from `url` failed with `why`: that one, and the
/// layer switched off as stalled, nothing else.
fn assert_stalled_once(stderr: &str, url: &str, why: &str) {
    assert_eq!(
        warnings(stderr),
        [
            format!("warning: remote cache: download failed ({why}) at {url}; treating as a miss"),
            format!("warning: remote cache {url} stalled; it is not asked again in this run, continuing with the local cache only"),
        ],
        "{stderr}"
    );
}

/// `stderr` has `line` as a whole line.
fn assert_line(stderr: &str, line: &str) {
    assert!(stderr.lines().any(|l| l == line), "`{line}` in:\n{stderr}");
}

#[test]
fn a_hung_server_costs_one_idle_timeout_and_is_not_asked_again() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    // One download at a time: the first stalls, and none after it is tried.
    let f = workspace_with(
        &server.url(),
        "idle-timeout = \"4s\"\ndownload-concurrency = 1\n",
    );
    run(&f, "1", &[]);
    forget(&f);
    server.freeze();
    let (stderr, elapsed) = run_at(&f, &server.url());
    assert_stalled_once(
        &stderr,
        &server.url(),
        "no progress within the idle timeout",
    );
    assert!(
        !stderr.contains("more failure"),
        "one request waited: {stderr}"
    );
    // The bound docs/cache.md states: one idle timeout, not one per request (two tasks here).
    assert!(elapsed < Duration::from_secs(8), "{elapsed:?}: {stderr}");
    assert!(f.path("packages/app/dist/main.txt").is_file());
}

#[test]
fn a_hung_server_drops_the_upload_queue_and_the_run_says_how_many_went_up() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let f = workspace_with(
        &server.url(),
        "idle-timeout = \"3s\"\nupload-concurrency = 1\n",
    );
    server.freeze();
    // Reads off: only the uploads meet the hung server. The first waits its idle timeout,
    // the second is never tried.
    let stderr = ci_run(&f, &["--cache=remote:w"]);
    assert_line(
        &stderr,
        &format!(
            "vx: remote cache: uploaded 0 of 2 results to {}: 1 failed, 1 not tried once the server was switched off",
            server.url()
        ),
    );
    assert!(!stderr.contains("abandoned"), "{stderr}");
}

#[test]
fn a_ci_run_says_how_many_results_it_uploaded() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let f = workspace(&server.url());
    let stderr = ci_run(&f, &[]);
    assert_line(
        &stderr,
        &format!("vx: remote cache: uploaded 2 results to {}", server.url()),
    );
    assert_eq!(server.results(TEAM).len(), 2);
}

#[test]
fn an_answer_that_drips_is_cut_at_the_request_timeout() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let f = workspace_with(
        &server.url(),
        "idle-timeout = \"30s\"\nrequest-timeout = \"3s\"\ndownload-concurrency = 1\n",
    );
    run(&f, "1", &[]);
    forget(&f);
    // A byte every 200 ms: never idle for 30 s, never done in 3 s.
    let (_proxy, url) = through(
        &server.url(),
        Link {
            round_trip: Duration::ZERO,
            drip: Some(Duration::from_millis(200)),
        },
    );
    let (stderr, elapsed) = run_at(&f, &url);
    assert_stalled_once(&stderr, &url, "no answer within the request timeout (3 s)");
    assert!(elapsed < Duration::from_secs(30), "{elapsed:?}");
}

#[test]
fn a_request_without_a_token_is_told_to_set_one_and_not_repeated() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let f = workspace_with(&server.url(), "download-concurrency = 1\n");
    run(&f, "1", &[]);
    forget(&f);
    // turborepo-remote-cache answers 400, not 401, to a request without credentials.
    let out = f.vx_in(".", &["run", "build", "--all"], &[("CI", "")]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        warnings(&out.stderr),
        [
            format!("warning: remote cache: download failed (HTTP 400) at {}; treating as a miss", server.url()),
            format!("warning: remote cache {} refused the credentials; no further downloads are tried in this run", server.url()),
        ],
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("\nhint: no token was sent: set $VX_REMOTE_CACHE_TOKEN\n"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("more failure"), "{}", out.stderr);
}

#[test]
fn a_server_failing_every_request_is_asked_three_times_in_a_row() {
    let fake = FakeHttpCache::start();
    fake.answer_all(Answer::Status(400));
    // One upload at a time and reads off: the requests are made one after another.
    let f = workspace_with(&fake.url(), "upload-concurrency = 1\n");
    for name in ["one", "two", "three", "four"] {
        f.write(
            &format!("packages/{name}/vx.toml"),
            "[tasks.build]\ncommand = \"mkdir -p dist && echo x > dist/x\"\ncache = { inputs = [\"vx.toml\"], outputs = [\"dist/**\"] }\n",
        );
    }
    f.commit();
    let stderr = ci_run(&f, &["--cache=remote:w"]);
    let url = fake.url();
    assert_line(
        &stderr,
        &format!("warning: remote cache {url} failed 3 times in a row; it is not asked again in this run, continuing with the local cache only"),
    );
    assert_line(
        &stderr,
        &format!("vx: remote cache: uploaded 0 of 6 results to {url}: 3 failed, 3 not tried once the server was switched off"),
    );
    let asked = fake
        .seen()
        .iter()
        .filter(|r| r.contains("/v8/artifacts/"))
        .count();
    assert_eq!(asked, 3, "{:?}", fake.seen());
}

/// A hit from the remote shows what serving it cost (its download and restore), not the
/// replay's 0ms, and the footer's "saved" takes that off what the tasks took when they ran:
/// over a slow link it is less than nothing, and says so (issue 48).
#[test]
fn a_remote_hit_shows_what_serving_it_cost_and_saved_counts_it() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let f = workspace(&server.url());
    run(&f, "1", &[]);
    forget(&f);
    let rtt = Duration::from_millis(400);
    let link = Link {
        round_trip: rtt,
        drip: None,
    };
    let (_proxy, url) = through(&server.url(), link);
    let out = f.vx_in(
        ".",
        &["run", "build", "--all", "--output-logs", "hash-only"],
        &[
            ("VX_REMOTE_CACHE_TOKEN", TOKEN),
            ("VX_REMOTE_CACHE_URL", &url),
            ("CI", ""),
        ],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    for id in ["lib#build", "app#build"] {
        let line = out
            .stdout
            .lines()
            .find(|l| l.contains(" success remote ") && l.contains(id))
            .unwrap_or_else(|| panic!("no remote hit of {id} in:\n{}", out.stdout));
        let shown = line.split_whitespace().nth(1).unwrap_or_default();
        // `812ms` or `1.20s`, as the one-liner writes it.
        let took = match shown.strip_suffix("ms") {
            Some(ms) => ms.parse().ok().map(Duration::from_millis),
            None => shown
                .strip_suffix('s')
                .and_then(|s| s.parse().ok())
                .map(Duration::from_secs_f64),
        }
        .unwrap_or_else(|| panic!("a duration in {line:?}"));
        assert!(
            took >= rtt,
            "{id} served in {shown}, under the round trip: {line}"
        );
    }
    let result = out
        .stdout
        .lines()
        .find(|l| l.starts_with("result "))
        .unwrap_or_default();
    assert!(
        result.contains(" · −")
            && result.ends_with(" saved (serving the hits took longer than running them did)"),
        "{result}"
    );
}

/// While an entry downloads, the live region has a row for it with the bytes so far and the
/// rate, in a real terminal (tmux); the row goes with the download (issue 48).
#[test]
fn a_download_under_way_has_a_live_row_with_its_bytes_and_rate() {
    let Some(server) = HttpCacheServer::start() else {
        return;
    };
    let f = workspace(&server.url());
    // 64 KiB that do not compress: the download takes a while through a dripping link.
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"mkdir -p dist && head -c 65536 /dev/urandom > dist/blob\"\ncache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
    );
    f.commit();
    run(&f, "1", &[]);
    forget(&f);
    let link = Link {
        round_trip: Duration::ZERO,
        drip: Some(Duration::from_micros(40)),
    };
    let (_proxy, url) = through(&server.url(), link);
    let env = [
        ("VX_REMOTE_CACHE_TOKEN", TOKEN),
        ("VX_REMOTE_CACHE_URL", url.as_str()),
        ("VX_LOG", "off"),
    ];
    let bin = std::path::Path::new(crate::vx_bin());
    let Some(term) = vx_test_support::tmux::Tmux::start(
        f.root(),
        bin,
        &["run", "build", "--all"],
        &env,
        (100, 24),
    ) else {
        return;
    };
    let row = regex::Regex::new(
        r"(?m)^⇣ +[0-9.]+m?s  lib#build  downloading [0-9.]+ (B|KiB) · [0-9.]+ (B|KiB|MiB)/s$",
    )
    .unwrap();
    let screen = term.wait_until("a row for the download", |s| row.is_match(s));
    assert!(screen.contains("0/2 tasks"), "{screen}");
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(!screen.contains("downloading"), "the row went:\n{screen}");
    assert!(screen.contains("result     2 tasks · 2 cached"), "{screen}");
}
