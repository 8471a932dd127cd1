//! The REAPI remote cache (REM-4) against the real `buildbox-casd` on loopback (REM-15): one
//! clone builds and uploads, another restores from it; the faults a real server can be made to
//! show (killed, missing blobs, damaged blobs, no SHA-256) on the real server, the others
//! (a status on every call, a token refused, call counts) on the in-process fake.

use std::path::PathBuf;

use vx_reapi::proto::digest_function;
use vx_reapi::Code;
use vx_test_support::buildgrid::BuildGrid;
use vx_test_support::fixture::Fixture;
use vx_test_support::http_cache::TOKEN;
use vx_test_support::reapi::Casd;
use vx_test_support::reapi_fake::FakeReapi;
use vx_test_support::tree::tree;

use crate::remote_cache::{
    app_waits_for_a_file, assert_every_task, assert_restored_exactly, forget, outputs, run,
    run_against_fake, spawn_vx, wait_until, warnings, workspace_with,
};

mod limits;

/// A real REAPI server under test.
trait RealServer {
    fn url(&self) -> String;
    fn kill(&mut self);
    /// The files that hold its CAS blobs.
    fn blob_files(&self) -> Vec<PathBuf>;
}

impl RealServer for BuildGrid {
    fn url(&self) -> String {
        BuildGrid::url(self)
    }

    fn kill(&mut self) {
        BuildGrid::kill(self);
    }

    fn blob_files(&self) -> Vec<PathBuf> {
        BuildGrid::blob_files(self)
    }
}

/// The shared server, which no test may kill.
impl RealServer for &BuildGrid {
    fn url(&self) -> String {
        BuildGrid::url(self)
    }

    fn kill(&mut self) {
        panic!("the shared BuildGrid is never killed");
    }

    fn blob_files(&self) -> Vec<PathBuf> {
        BuildGrid::blob_files(self)
    }
}

impl RealServer for Casd {
    fn url(&self) -> String {
        Casd::url(self)
    }

    fn kill(&mut self) {
        Casd::kill(self);
    }

    fn blob_files(&self) -> Vec<PathBuf> {
        Casd::blob_files(self)
    }
}

/// The two-project workspace of the HTTP tests, pointed at `url`, with `nonce` in both
/// projects' sources: tests that share one server do not share keys.
fn workspace(url: &str, nonce: &str) -> Fixture {
    workspace_keyed(url, nonce, "")
}

/// [`workspace`] with more `[workspace.remote-cache]` keys.
fn workspace_keyed(url: &str, nonce: &str, remote_keys: &str) -> Fixture {
    let f = workspace_with(url, remote_keys);
    for project in ["lib", "app"] {
        f.write(&format!("packages/{project}/src/nonce.txt"), nonce);
    }
    f.commit();
    f
}

/// The server's files holding the artifacts in `clone`'s local cache (their SHA-256 names the
/// blob).
fn artifact_blobs(server: &impl RealServer, clone: &Fixture) -> Vec<PathBuf> {
    let blobs = server.blob_files();
    let artifacts = tree(&clone.path(".vx/artifacts"));
    let found: Vec<PathBuf> = artifacts
        .iter()
        .filter(|(path, ..)| path.ends_with(".tar.zst"))
        .map(|(path, ..)| {
            let digest = vx_reapi::digest_of_file(&clone.path(&format!(".vx/artifacts/{path}")))
                .expect("an artifact");
            let tail = format!("{}/{}", &digest.hash[..2], &digest.hash[2..]);
            blobs
                .iter()
                .find(|b| b.ends_with(&tail))
                .unwrap_or_else(|| panic!("the server holds no blob {}", digest.hash))
                .clone()
        })
        .collect();
    assert_eq!(found.len(), 2, "{artifacts:?}");
    found
}

/// Builds in one clone with uploads on; a second clone with an empty cache must restore both
/// tasks from the server, byte for byte.
fn a_second_clone_restores_every_task(server: &impl RealServer) {
    let first = workspace(&server.url(), "restores");
    let built = run(&first, "true", &[]);
    assert_every_task(&built, "miss");
    let second = workspace(&server.url(), "restores");
    let restored = run(&second, "", &[]);
    assert_restored_exactly(&first, &second, &restored);
    let again = run(&second, "", &[]);
    assert_every_task(&again, "up-to-date");
}

/// A workspace whose `lib#build` writes `bytes` random (incompressible) bytes.
fn big_workspace(url: &str, bytes: usize, remote_keys: &str) -> Fixture {
    let f = workspace_keyed(url, "big", remote_keys);
    f.write(
        "packages/lib/vx.toml",
        &format!("[tasks.build]\ncommand = \"mkdir -p dist && head -c {bytes} /dev/urandom > dist/big.bin\"\ncache = {{ inputs = [\"src/**\"], outputs = [\"dist/**\"] }}\n"),
    );
    f.commit();
    f
}

/// An artifact over the batch limit goes up and comes back whole.
fn a_large_artifact_round_trips(url: &str, bytes: usize) {
    a_large_artifact_round_trips_with(url, bytes, "");
}

fn a_large_artifact_round_trips_with(url: &str, bytes: usize, remote_keys: &str) {
    let first = big_workspace(url, bytes, remote_keys);
    run(&first, "true", &[]);
    let second = big_workspace(url, bytes, remote_keys);
    let restored = run(&second, "", &[]);
    assert_every_task(&restored, "restored-remote");
    let big = "packages/lib/dist/big.bin";
    assert_eq!(
        std::fs::metadata(second.path(big)).unwrap().len(),
        bytes as u64
    );
    let dist = "packages/lib/dist";
    assert_eq!(tree(&second.path(dist)), tree(&first.path(dist)));
}

/// `lib#build` uploads to the live server; the server dies while `app#build` runs; the run
/// completes with exit 0 and one warning.
fn a_server_killed_in_the_middle_of_a_run_fails_nothing(server: &mut impl RealServer) {
    let f = workspace(&server.url(), "killed");
    let killed = app_waits_for_a_file(&f);
    let child = spawn_vx(&f, &["run", "build", "--all"], "true");
    let blobs_before = server.blob_files().len();
    wait_until("lib#build never uploaded", || {
        server.blob_files().len() > blobs_before
    });
    // The blobs land before the action result: give the result a moment.
    std::thread::sleep(std::time::Duration::from_millis(300));
    server.kill();
    std::fs::write(&killed, "").unwrap();
    let out = child.wait_with_output().expect("vx ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let warned = warnings(&stderr);
    assert_eq!(warned.len(), 1, "{stderr}");
    assert!(
        warned[0].starts_with("warning: remote cache: upload failed (")
            && warned[0].contains(&format!(") at {}", server.url())),
        "{stderr}"
    );
    assert!(f.path("packages/app/dist/main.txt").is_file());
    assert!(f.path("packages/lib/dist/main.txt").is_file());
}

/// A result whose blob the server lost is a plain miss: no warning, the task runs.
fn a_result_whose_blob_is_gone_is_a_plain_miss(server: &impl RealServer) {
    let first = workspace(&server.url(), "gone");
    run(&first, "true", &[]);
    for blob in artifact_blobs(server, &first) {
        std::fs::remove_file(blob).unwrap();
    }
    let second = workspace(&server.url(), "gone");
    let summary = second.path("summary.json");
    let out = second.vx_in(
        ".",
        &[
            "run",
            "build",
            "--all",
            &format!("--summarize={}", summary.display()),
        ],
        &[("CI", "")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(warnings(&out.stderr).is_empty(), "{}", out.stderr);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(summary).unwrap()).unwrap();
    assert_every_task(&summary, "miss");
}

/// [`workspace`] whose two artifacts are over the 64 KiB that ride in an action result: each
/// build also copies 100 KB of incompressible bytes (the same in every clone), so restores
/// read the blob.
fn workspace_of_blobs(url: &str, nonce: &str) -> Fixture {
    let f = workspace(url, nonce);
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let bytes: Vec<u8> = (0..100_000)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 56) as u8
        })
        .collect();
    for project in ["lib", "app"] {
        std::fs::write(f.path(&format!("packages/{project}/src/blob.bin")), &bytes).unwrap();
        let toml = f.read(&format!("packages/{project}/vx.toml"));
        f.write(
            &format!("packages/{project}/vx.toml"),
            &toml.replace(
                "cp src/main.txt dist/",
                "cp src/main.txt src/blob.bin dist/",
            ),
        );
    }
    f.commit();
    f
}

/// Flips a byte in the middle of each blob on the server that holds one of `clone`'s artifacts.
fn damage_artifact_blobs(server: &impl RealServer, clone: &Fixture) {
    for blob in artifact_blobs(server, clone) {
        let mut bytes = std::fs::read(&blob).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        std::fs::write(&blob, bytes).unwrap();
    }
}

/// A small artifact rides in its action result: a restore takes it from there, checked
/// against its digest, and does not read the blob (damaged here, so a read would be a miss).
fn a_small_entry_is_restored_from_its_result_alone(server: &impl RealServer) {
    let first = workspace(&server.url(), "inline");
    run(&first, "true", &[]);
    damage_artifact_blobs(server, &first);
    let second = workspace(&server.url(), "inline");
    let out = second.vx_in(
        ".",
        &["run", "build", "--all", "--summarize=summary.json"],
        &[("CI", "")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(warnings(&out.stderr).is_empty(), "{}", out.stderr);
    let summary: serde_json::Value = serde_json::from_str(&second.read("summary.json")).unwrap();
    assert_restored_exactly(&first, &second, &summary);
}

/// A blob whose bytes no longer match its digest is a miss of the class `invalid artifact`.
fn a_damaged_blob_is_an_invalid_artifact_miss(server: &impl RealServer) {
    let first = workspace_of_blobs(&server.url(), "damaged");
    run(&first, "true", &[]);
    damage_artifact_blobs(server, &first);
    let second = workspace_of_blobs(&server.url(), "damaged");
    let stderr = run_against_fake(&second, "");
    let warned = warnings(&stderr);
    assert_eq!(warned.len(), 1, "{stderr}");
    assert!(
        warned[0].starts_with("warning: remote cache: download failed (invalid artifact: "),
        "{stderr}"
    );
    for project in ["lib", "app"] {
        let dist = format!("packages/{project}/dist");
        assert_eq!(tree(&second.path(&dist)), tree(&first.path(&dist)));
    }
}

#[test]
fn casd_a_second_clone_restores_every_task_from_the_remote_exactly() {
    let Some(casd) = Casd::start() else {
        return;
    };
    a_second_clone_restores_every_task(&casd);
}

#[test]
fn casd_an_artifact_over_the_batch_limit_goes_through_bytestream_both_ways() {
    // casd announces no batch limit, which is 4 MiB (REM-4); its gRPC server also refuses a
    // message over 4 MiB, so a 6 MB artifact only goes up and down through ByteStream.
    let Some(casd) = Casd::start() else {
        return;
    };
    a_large_artifact_round_trips(&casd.url(), 6_000_000);
}

#[test]
fn casd_serves_a_named_instance_through_bytestream_too() {
    // `instance-name` goes with every call and prefixes ByteStream's resource names
    // (`vx-ci/uploads/…`, `vx-ci/blobs/…`); casd serves only the instances it was given.
    let Some(casd) = Casd::start_with(&["--local-server-instance=vx-ci"]) else {
        return;
    };
    a_large_artifact_round_trips_with(&casd.url(), 6_000_000, "instance-name = \"vx-ci\"\n");
    let elsewhere = workspace_keyed(&casd.url(), "", "instance-name = \"other\"\n");
    let stderr = run_against_fake(&elsewhere, "true");
    assert!(
        stderr.contains(&format!(
            "at {} (instance `other`); treating as a miss",
            casd.url()
        )),
        "{stderr}"
    );
}

#[test]
fn casd_killed_in_the_middle_of_a_run_fails_nothing() {
    let Some(mut casd) = Casd::start() else {
        return;
    };
    a_server_killed_in_the_middle_of_a_run_fails_nothing(&mut casd);
}

#[test]
fn casd_a_result_whose_blob_is_gone_is_a_plain_miss() {
    let Some(casd) = Casd::start() else {
        return;
    };
    a_result_whose_blob_is_gone_is_a_plain_miss(&casd);
}

#[test]
fn casd_a_small_entry_is_restored_from_its_result_alone() {
    let Some(casd) = Casd::start() else {
        return;
    };
    a_small_entry_is_restored_from_its_result_alone(&casd);
}

#[test]
fn casd_a_damaged_blob_is_an_invalid_artifact_miss() {
    let Some(casd) = Casd::start() else {
        return;
    };
    a_damaged_blob_is_an_invalid_artifact_miss(&casd);
}

#[test]
fn a_server_without_sha256_switches_the_layer_off_with_one_warning() {
    let Some(casd) = Casd::start_with(&["--digest-function=SHA512"]) else {
        return;
    };
    let f = workspace(&casd.url(), "");
    let stderr = run_against_fake(&f, "true");
    let warned = warnings(&stderr);
    assert_eq!(
        warned,
        [format!(
            "warning: remote cache {}: the server does not offer SHA-256 digests (it offers SHA512); continuing with the local cache only",
            casd.url()
        )],
        "{stderr}"
    );
    assert_eq!(casd.action_results(), 0, "nothing uploaded");
}

#[test]
fn a_dead_server_is_a_miss_with_one_warning_and_then_switched_off() {
    let url = format!("grpc://127.0.0.1:{}", vx_test_support::net::free_port());
    let f = workspace(&url, "");
    let stderr = run_against_fake(&f, "true");
    let warned = warnings(&stderr);
    assert!(
        warned.contains(
            &format!("warning: remote cache: download failed (connection refused) at {url}; treating as a miss").as_str()
        ),
        "{stderr}"
    );
    assert!(
        warned.contains(&"warning: remote cache unreachable; continuing with the local cache only"),
        "{stderr}"
    );
}

#[test]
fn unavailable_and_internal_statuses_are_misses_and_dropped_uploads() {
    for (code, word) in [
        (Code::Unavailable, "shutting down"),
        (Code::Internal, "gRPC INTERNAL: disk on fire"),
    ] {
        let fake = FakeReapi::start();
        fake.fail_all(
            code,
            if code == Code::Internal {
                "disk on fire"
            } else {
                "shutting down"
            },
        );
        let f = workspace(&fake.url(), "");
        let stderr = run_against_fake(&f, "true");
        let warned = warnings(&stderr);
        assert!(
            warned
                .first()
                .is_some_and(|w| w.contains(&format!("failed ({word}) at {}", fake.url()))),
            "{stderr}"
        );
        assert_eq!(fake.results(), 0);
    }
}

#[test]
fn unauthenticated_names_the_token_variable_and_the_right_token_works() {
    let fake = FakeReapi::start();
    fake.require_token(TOKEN);
    let f = workspace_with(&fake.url(), "token-env = \"REAPI_TOKEN\"\n");
    let out = f.vx_in(
        ".",
        &["run", "build", "--all"],
        &[("REAPI_TOKEN", "wrong-token"), ("CI", "true")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "warning: remote cache: download failed (UNAUTHENTICATED) at {}; treating as a miss\nhint: check the token in $REAPI_TOKEN",
            fake.url()
        )),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("wrong-token"));
    assert_eq!(fake.results(), 0);
    std::fs::remove_dir_all(f.path(".vx")).unwrap();
    let out = f.vx_in(
        ".",
        &["run", "build", "--all"],
        &[("REAPI_TOKEN", TOKEN), ("CI", "true")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(warnings(&out.stderr).is_empty(), "{}", out.stderr);
    // Both results, and the record of what lib#build produced, which app#build folds (KEY-9).
    assert_eq!(fake.results(), 3, "both results uploaded with the token");
}

#[test]
fn blobs_over_the_batch_limit_use_bytestream_and_small_ones_the_batch_calls() {
    let fake = FakeReapi::start();
    fake.set_max_batch(64 * 1024);
    a_large_artifact_round_trips(&fake.url(), 300_000);
    let calls = fake.calls();
    let count = |method: &str| calls.iter().filter(|c| *c == method).count();
    // lib's artifact is over the limit: written and read through ByteStream. app's artifact
    // and every command and action blob are small: batch calls; app's artifact also rides in
    // its action result, so it needs no read at all.
    assert_eq!(count("ByteStream.Write"), 1, "{calls:?}");
    assert_eq!(count("ByteStream.Read"), 1, "{calls:?}");
    assert!(count("BatchUpdateBlobs") >= 2, "{calls:?}");
    assert_eq!(count("BatchReadBlobs"), 0, "{calls:?}");
    // Only lib's entry (over 256 KiB) is asked about before it goes up; app's goes up at once.
    assert_eq!(count("FindMissingBlobs"), 1, "{calls:?}");
    // Capabilities once per run (two runs), blobs before each action result.
    assert_eq!(count("GetCapabilities"), 2, "{calls:?}");
    let first_result = calls
        .iter()
        .position(|c| c == "UpdateActionResult")
        .expect("a result uploaded");
    let before = &calls[..first_result];
    assert!(
        before
            .iter()
            .any(|c| c == "BatchUpdateBlobs" || c == "ByteStream.Write"),
        "blobs go before the action result: {calls:?}"
    );
}

#[test]
fn a_small_artifact_inlined_in_the_result_is_checked_and_needs_no_read() {
    let fake = FakeReapi::start();
    fake.inline_results();
    let first = workspace(&fake.url(), "");
    run(&first, "true", &[]);
    let second = workspace(&fake.url(), "");
    let restored = run(&second, "", &[]);
    assert_every_task(&restored, "restored-remote");
    let reads: Vec<String> = fake
        .calls()
        .into_iter()
        .filter(|c| c == "BatchReadBlobs" || c == "ByteStream.Read")
        .collect();
    assert!(reads.is_empty(), "{reads:?}");
    fake.corrupt_reads();
    let third = workspace(&fake.url(), "");
    let stderr = run_against_fake(&third, "");
    assert!(
        stderr.contains(
            "download failed (invalid artifact: the blob's bytes do not match its digest)"
        ),
        "{stderr}"
    );
}

#[test]
fn bytes_that_do_not_match_their_digest_are_an_invalid_artifact_miss() {
    let fake = FakeReapi::start();
    let first = workspace(&fake.url(), "");
    run(&first, "true", &[]);
    fake.corrupt_reads();
    let second = workspace(&fake.url(), "");
    let stderr = run_against_fake(&second, "");
    assert!(
        stderr.contains(
            "download failed (invalid artifact: the blob's bytes do not match its digest)"
        ),
        "{stderr}"
    );
}

#[test]
fn a_server_that_refuses_updates_is_read_but_never_written() {
    let fake = FakeReapi::start();
    fake.refuse_updates();
    let f = workspace(&fake.url(), "");
    let stderr = run_against_fake(&f, "true");
    assert!(
        stderr.contains("upload failed (the server does not accept action results from clients)"),
        "{stderr}"
    );
    let calls = fake.calls();
    assert!(calls.iter().any(|c| c == "GetActionResult"), "{calls:?}");
    assert!(
        !calls
            .iter()
            .any(|c| c == "UpdateActionResult" || c == "BatchUpdateBlobs"),
        "{calls:?}"
    );
}

#[test]
fn capabilities_are_asked_once_per_run_even_when_they_fail() {
    // Every prefetch thread and upload waits on the one answer: a server that cannot answer
    // costs one call (and one timeout), not one per thread.
    let fake = FakeReapi::start();
    fake.fail_all(Code::Internal, "not today");
    let f = workspace(&fake.url(), "");
    run_against_fake(&f, "true");
    assert_eq!(fake.calls(), ["GetCapabilities"]);
}

#[test]
fn a_fake_without_sha256_is_never_asked_for_an_entry() {
    let fake = FakeReapi::start();
    fake.offer_digest_functions(&[digest_function::Value::Sha1, digest_function::Value::Md5]);
    let f = workspace(&fake.url(), "");
    let stderr = run_against_fake(&f, "true");
    assert!(
        stderr.contains("does not offer SHA-256 digests (it offers SHA1, MD5)"),
        "{stderr}"
    );
    assert_eq!(fake.calls(), ["GetCapabilities"]);
}

#[test]
fn dry_asks_the_action_cache_and_downloads_nothing() {
    let Some(casd) = Casd::start() else {
        return;
    };
    let first = workspace(&casd.url(), "");
    run(&first, "true", &[]);
    let second = workspace(&casd.url(), "");
    let out = second.vx_in(".", &["run", "build", "--all", "--dry=json"], &[("CI", "")]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    for task in doc["tasks"].as_array().expect("tasks") {
        assert_eq!(task["cache"], "hit-remote", "{doc}");
    }
    let artifacts = second.path(".vx/artifacts");
    assert_eq!(std::fs::read_dir(&artifacts).map_or(0, |d| d.count()), 0);
}

#[test]
fn info_shows_a_reapi_remote_and_whether_it_answers() {
    let Some(mut casd) = Casd::start() else {
        return;
    };
    let f = workspace_with(&casd.url(), "instance-name = \"\"\n");
    let info = |f: &Fixture| {
        let out = f.vx_in(".", &["info", "--format", "json"], &[("CI", "")]);
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        let doc: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
        doc["remote_cache"].clone()
    };
    let remote = info(&f);
    assert_eq!(remote["protocol"], "reapi");
    assert_eq!(remote["url"], casd.url());
    assert_eq!(remote["answered"], true);
    casd.kill();
    assert_eq!(info(&f)["answered"], false);
}

#[test]
fn buildgrid_a_second_clone_restores_every_task_from_the_remote_exactly() {
    let Some(server) = BuildGrid::shared() else {
        return;
    };
    a_second_clone_restores_every_task(&server);
}

#[test]
fn buildgrid_an_artifact_over_the_batch_limit_goes_through_bytestream_both_ways() {
    // BuildGrid's batch limit is 4,193,280 bytes.
    let Some(server) = BuildGrid::shared() else {
        return;
    };
    a_large_artifact_round_trips(&server.url(), 6_000_000);
}

#[test]
fn buildgrid_a_result_whose_blob_is_gone_is_a_plain_miss() {
    let Some(server) = BuildGrid::shared() else {
        return;
    };
    a_result_whose_blob_is_gone_is_a_plain_miss(&server);
}

#[test]
fn buildgrid_a_small_entry_is_restored_from_its_result_alone() {
    let Some(server) = BuildGrid::shared() else {
        return;
    };
    a_small_entry_is_restored_from_its_result_alone(&server);
}

#[test]
fn buildgrid_a_damaged_blob_is_an_invalid_artifact_miss() {
    let Some(server) = BuildGrid::shared() else {
        return;
    };
    a_damaged_blob_is_an_invalid_artifact_miss(&server);
}

#[test]
fn buildgrid_killed_in_the_middle_of_a_run_fails_nothing() {
    let Some(mut server) = BuildGrid::cache_only(None) else {
        return;
    };
    a_server_killed_in_the_middle_of_a_run_fails_nothing(&mut server);
}

#[test]
fn buildgrid_refuses_a_bad_token_with_a_hint_and_takes_a_valid_one() {
    // BuildGrid with JWT authorization (HS256): a wrong token is UNAUTHENTICATED, and the
    // warning's hint names the variable `token-env` designates; a signed token works.
    let secret = "vx-test-jwt-secret";
    let Some(server) = BuildGrid::cache_only(Some(secret)) else {
        return;
    };
    let keys = "token-env = \"REAPI_TOKEN\"\n";
    let f = workspace_with(&server.url(), keys);
    let out = f.vx_in(
        ".",
        &["run", "build", "--all"],
        &[("REAPI_TOKEN", "not-a-jwt"), ("CI", "true")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let refused = format!(
        "warning: remote cache: download failed (UNAUTHENTICATED) at {}; treating as a miss\nhint: check the token in $REAPI_TOKEN",
        server.url()
    );
    assert!(out.stderr.contains(&refused), "{}", out.stderr);
    assert!(server.blob_files().is_empty(), "nothing uploaded");
    let token = BuildGrid::jwt(secret);
    let out = f.vx_in(
        ".",
        &["run", "build", "--all", "--force"],
        &[("REAPI_TOKEN", token.as_str()), ("CI", "true")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(warnings(&out.stderr).is_empty(), "{}", out.stderr);
    let second = workspace_with(&server.url(), keys);
    let out = second.vx_in(
        ".",
        &["run", "build", "--all"],
        &[("REAPI_TOKEN", token.as_str()), ("CI", "")],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("cache      2 remote\n"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains(&token) && !out.stderr.contains(&token));
}

#[test]
fn grpcs_speaks_tls_and_trusts_the_system_roots_only() {
    // REM-4: `grpcs://` is TLS with the system's roots. BuildGrid's certificate is signed by a
    // throwaway authority: untrusted, every call fails (a warning, a miss); trusted through
    // `SSL_CERT_FILE` (which the system-roots loader honours), entries go up and come back.
    let Some(server) = BuildGrid::cache_only_tls() else {
        return;
    };
    assert!(server.url().starts_with("grpcs://127.0.0.1:"));
    let first = workspace(&server.url(), "tls");
    let stderr = run_against_fake(&first, "true");
    assert!(
        stderr.contains(&format!(
            "download failed (invalid peer certificate: UnknownIssuer) at {}",
            server.url()
        )),
        "{stderr}"
    );
    assert!(server.blob_files().is_empty(), "nothing uploaded untrusted");
    let authority = server.tls_authority();
    let trusted = [
        ("SSL_CERT_FILE", authority.to_str().unwrap()),
        ("CI", "true"),
    ];
    std::fs::remove_dir_all(first.path(".vx")).unwrap();
    let out = first.vx_in(".", &["run", "build", "--all"], &trusted);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(warnings(&out.stderr).is_empty(), "{}", out.stderr);
    let second = workspace(&server.url(), "tls");
    let out = second.vx_in(".", &["run", "build", "--all"], &[trusted[0], ("CI", "")]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("cache      2 remote\n"),
        "{}",
        out.stdout
    );
}

/// ACC-36: ACC-35's round trip against `buildbox-casd`: CI uploads, another checkout restores
/// from the remote, an unknown key is a silent miss, and a server that disappears degrades to
/// misses with one warning.
#[test]
fn acc36_reapi_round_trip_on_buildbox_casd() {
    let Some(mut casd) = Casd::start() else {
        return;
    };
    let f = workspace(&casd.url(), "acc36");
    let built = run(&f, "1", &[]);
    assert_every_task(&built, "miss");
    // Both results, and the record of what lib#build produced, which app#build folds (KEY-9).
    assert_eq!(casd.action_results(), 3, "CI uploads both results");
    let produced = outputs(&f);
    let blobs = casd.blob_files();
    forget(&f);
    let restored = run(&f, "", &[]);
    assert_every_task(&restored, "restored-remote");
    assert_eq!(outputs(&f), produced);
    assert_eq!(casd.blob_files(), blobs, "nothing uploaded without CI");
    // An unknown key: a miss, and not a word about it.
    f.write("packages/lib/src/main.txt", "lib source, edited\n");
    f.commit();
    let out = f.vx_in(".", &["run", "build", "--all"], &[("CI", "")]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(warnings(&out.stderr).is_empty(), "{}", out.stderr);
    assert!(out.stdout.contains("cache      2 miss\n"), "{}", out.stdout);
    // The server goes away: one warning, both tasks execute, exit 0.
    casd.kill();
    forget(&f);
    let out = f.vx_in(".", &["run", "build", "--all"], &[("CI", "")]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        warnings(&out.stderr),
        [format!(
            "warning: remote cache: download failed (connection refused) at {}; treating as a miss",
            casd.url()
        )],
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("cache      2 miss\n"), "{}", out.stdout);
    assert!(f.path("packages/app/dist/main.txt").is_file());
}
