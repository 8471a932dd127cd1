//! The REAPI remote cache where servers are: one that answers a byte at a time is cut at the
//! request timeout, one that hangs costs one idle timeout, and one at its call limit
//! (`RESOURCE_EXHAUSTED`) gets fewer calls at once and serves every entry — on the real
//! buildbox-casd (behind the latency proxy, or frozen) and the real BuildGrid.

use std::time::Duration;

use super::*;

#[test]
fn casd_answering_a_byte_at_a_time_is_cut_at_the_request_timeout() {
    let Some(casd) = Casd::start() else {
        return;
    };
    let f = workspace_keyed(
        &casd.url(),
        "drip",
        "idle-timeout = \"30s\"\nrequest-timeout = \"3s\"\ndownload-concurrency = 1\n",
    );
    run(&f, "true", &[]);
    forget(&f);
    // casd's answers a byte every 200 ms: never idle for 30 s, never done in 3 s.
    let proxy = vx_test_support::latency::LatencyProxy::start(
        ([127, 0, 0, 1], casd.port).into(),
        vx_test_support::latency::Link {
            round_trip: Duration::ZERO,
            drip: Some(Duration::from_millis(200)),
        },
    );
    let url = format!("grpc://{}", proxy.addr());
    let out = f.vx_in(
        ".",
        &["run", "build", "--all"],
        &[("VX_REMOTE_CACHE_URL", url.as_str()), ("CI", "")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        warnings(&out.stderr),
        [
            format!("warning: remote cache: download failed (no answer within the request timeout (3 s)) at {url}; treating as a miss"),
            format!("warning: remote cache {url} stalled; it is not asked again in this run, continuing with the local cache only"),
        ],
        "{}",
        out.stderr
    );
    assert!(out.elapsed < Duration::from_secs(20), "{:?}", out.elapsed);
    assert!(f.path("packages/app/dist/main.txt").is_file());
}

/// `n` independent projects whose `build` writes one file, against the cache at `url`.
fn many_projects(url: &str, n: usize) -> Fixture {
    let f = crate::empty();
    f.write(".gitignore", ".vx/\ndist/\n");
    f.write(
        "vx.toml",
        &format!("[workspace]\nmembers = [\"packages/*\"]\n\n[workspace.remote-cache]\nurl = \"{url}\"\n"),
    );
    for i in 0..n {
        f.write(
            &format!("packages/p{i}/package.json"),
            &format!(r#"{{ "name": "p{i}", "version": "1.0.0" }}"#),
        );
        f.write(&format!("packages/p{i}/src/main.txt"), &format!("p{i}\n"));
        f.write(
            &format!("packages/p{i}/vx.toml"),
            "[tasks.build]\ncommand = \"mkdir -p dist && cp src/main.txt dist/\"\ncache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
        );
    }
    f.commit();
    f
}

#[test]
fn buildgrid_at_its_call_limit_gets_fewer_calls_at_once_and_serves_every_entry() {
    // Five calls at once (BuildGrid's least; its default is 5 per core): vx's 64 uploads and 64
    // downloads at once are refused with RESOURCE_EXHAUSTED until vx sends fewer.
    let Some(server) = BuildGrid::cache_only_with_threads(5) else {
        return;
    };
    let first = many_projects(&server.url(), 40);
    let out = first.vx_in(".", &["run", "build", "--all"], &[("CI", "true")]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(warnings(&out.stderr), Vec::<&str>::new(), "{}", out.stderr);
    for line in [
        format!("vx: remote cache: uploaded 40 results to {}", server.url()),
        format!("vx: remote cache {}: the server refused calls for load (RESOURCE_EXHAUSTED); vx sent as few as ", server.url()),
    ] {
        assert!(
            out.stderr.lines().any(|l| l.starts_with(&line)),
            "{line}: {}",
            out.stderr
        );
    }
    let second = many_projects(&server.url(), 40);
    let summary = run(&second, "", &[]);
    assert_eq!(
        summary["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["cache"] == "restored-remote")
            .count(),
        40,
        "{summary}"
    );
}

#[test]
fn casd_hung_costs_one_idle_timeout_and_is_not_asked_again() {
    let Some(casd) = Casd::start() else {
        return;
    };
    let f = workspace_keyed(
        &casd.url(),
        "hung",
        "idle-timeout = \"3s\"\ndownload-concurrency = 1\n",
    );
    run(&f, "true", &[]);
    forget(&f);
    casd.freeze();
    let out = f.vx_in(".", &["run", "build", "--all"], &[("CI", "")]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let url = casd.url();
    assert_eq!(
        warnings(&out.stderr),
        [
            format!("warning: remote cache: download failed (no progress within the idle timeout) at {url}; treating as a miss"),
            format!("warning: remote cache {url} stalled; it is not asked again in this run, continuing with the local cache only"),
        ],
        "{}",
        out.stderr
    );
    // One idle timeout, not one per request (two tasks, each with its lookup).
    assert!(out.elapsed < Duration::from_secs(7), "{:?}", out.elapsed);
    assert!(f.path("packages/app/dist/main.txt").is_file());
}
