//! Remote execution through the client against the real `buildbox-casd` with its local runner
//! (REM-12, REM-13, REM-15): an input root goes up, the action runs in bubblewrap, the result's
//! exit code, output streams and output tree come back; a repeat is served from the action
//! cache; a cancelled execution ends at once.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::collections::BTreeMap;

use vx_reapi::proto::Digest;
use vx_reapi::{Blob, Client, ClientConfig, Error, FileDigests, Input, InputRoot, RemoteTask};
use vx_test_support::buildgrid::BuildGrid;
use vx_test_support::reapi::Casd;

fn client(url: &str) -> Client {
    Client::new(&ClientConfig {
        url: url.to_string(),
        instance_name: String::new(),
        token: None,
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(30),
        request_timeout: None,
    })
    .expect("a client")
}

/// The task of these tests: `script` in `pkg`, its outputs under `pkg/out`, on `platform`.
fn task(script: &str, platform: &[(&str, &str)]) -> RemoteTask {
    RemoteTask {
        script: script.to_string(),
        dir: "pkg".into(),
        env: BTreeMap::new(),
        path_tail: "/usr/bin:/bin".into(),
        outputs: vec!["out/**".into()],
        workspace_outputs: Vec::new(),
        platform: platform
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        timeout: None,
    }
}

/// Uploads `root` and `task`'s `Command` and `Action` (only the blobs the server lacks);
/// returns the action's digest.
fn prepare(client: &Client, root: &InputRoot, task: &RemoteTask) -> Digest {
    let built = root.build().expect("a tree");
    let action = task.build(&built.digest);
    let mut blobs = built.blobs;
    blobs.push(Blob::from_bytes(action.command));
    blobs.push(Blob::from_bytes(action.action));
    let digests: Vec<Digest> = blobs.iter().map(|b| b.digest.clone()).collect();
    let missing = client.find_missing(&digests).expect("FindMissingBlobs");
    let to_send: Vec<Blob> = blobs
        .into_iter()
        .filter(|b| missing.contains(&b.digest))
        .collect();
    client.upload(&to_send, 4 << 20).expect("upload");
    action.digest
}

/// An input root with `pkg/` only.
fn empty_root() -> InputRoot {
    let mut root = InputRoot::new();
    root.add("pkg", Input::Directory).unwrap();
    root
}

#[test]
fn an_action_runs_on_casd_and_its_outputs_streams_and_exit_code_come_back() {
    let Some(casd) = Casd::start_executing() else {
        return;
    };
    let client = client(&casd.url());
    let local = tempfile::tempdir().unwrap();
    let input = local.path().join("in.txt");
    std::fs::write(&input, "input bytes\n").unwrap();
    let digests = FileDigests::new();
    let (digest, executable) = digests.digest(&input).unwrap();
    let mut root = InputRoot::new();
    root.add(
        "pkg/src/in.txt",
        Input::Local {
            path: input,
            digest,
            executable,
        },
    )
    .unwrap();
    root.add("pkg/empty", Input::Directory).unwrap();
    let script = "test -d empty && mkdir -p out/sub && cp src/in.txt out/copy.txt \
                  && printf '#!/bin/sh\\n' > out/sub/run && chmod 755 out/sub/run \
                  && ln -s copy.txt out/link && echo to-stdout && echo to-stderr >&2 && exit 3";
    let action = prepare(&client, &root, &task(script, &[]));
    let never = AtomicBool::new(false);
    let mut names = Vec::new();
    let done = client
        .execute(&action, false, &never, |n| names.push(n.to_string()))
        .expect("executed");
    assert_eq!(done.failure(), None);
    let result = done.result();
    assert_eq!(result.exit_code, 3);
    assert!(!names.is_empty(), "the operation has a name");
    let stdout = client
        .read_bytes(result.stdout_digest.as_ref().unwrap(), 4 << 20)
        .unwrap()
        .unwrap();
    assert_eq!(stdout, b"to-stdout\n");
    let stderr = client
        .read_bytes(result.stderr_digest.as_ref().unwrap(), 4 << 20)
        .unwrap()
        .unwrap();
    assert_eq!(stderr, b"to-stderr\n");
    let out = tempfile::tempdir().unwrap();
    let mut written = client
        .write_outputs(&result, out.path(), 4 << 20, &|_| true)
        .expect("outputs");
    written.sort();
    assert_eq!(
        written,
        ["pkg/out/copy.txt", "pkg/out/link", "pkg/out/sub/run"]
    );
    assert_eq!(
        std::fs::read_to_string(out.path().join("pkg/out/copy.txt")).unwrap(),
        "input bytes\n"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &str| {
        std::fs::metadata(out.path().join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("pkg/out/sub/run"), 0o755);
    assert_eq!(mode("pkg/out/copy.txt"), 0o644);
    assert_eq!(
        std::fs::read_link(out.path().join("pkg/out/link")).unwrap(),
        std::path::Path::new("copy.txt")
    );
    // Only what the filter accepts is written.
    let filtered = tempfile::tempdir().unwrap();
    let kept = client
        .write_outputs(&result, filtered.path(), 4 << 20, &|p| p.ends_with(".txt"))
        .unwrap();
    assert_eq!(kept, ["pkg/out/copy.txt"]);
    assert!(!filtered.path().join("pkg/out/sub/run").exists());
}

#[test]
fn a_repeat_is_served_from_the_action_cache() {
    let Some(casd) = Casd::start_executing() else {
        return;
    };
    let client = client(&casd.url());
    let action = prepare(
        &client,
        &empty_root(),
        &task("mkdir -p out && date +%N > out/t", &[]),
    );
    let never = AtomicBool::new(false);
    let first = client.execute(&action, false, &never, |_| {}).unwrap();
    assert!(!first.cached());
    let second = client.execute(&action, false, &never, |_| {}).unwrap();
    assert!(second.cached(), "served from the action cache");
    assert_eq!(
        first.result().output_directories,
        second.result().output_directories
    );
    let third = client.execute(&action, true, &never, |_| {}).unwrap();
    assert!(!third.cached(), "skip_cache_lookup runs it again");
}

/// How many live processes carry `marker` in their argv (the action, on the server's side).
fn running(marker: &str) -> usize {
    vx_test_support::process::pids_with_marker(marker).len()
}

#[test]
fn a_cancelled_execution_returns_at_once_and_stops_the_action_on_the_server() {
    let Some(casd) = Casd::start_executing() else {
        return;
    };
    let client = client(&casd.url());
    // A duration no other test uses, so that its process can be found.
    let marker = format!("sleep 41.{}", std::process::id() % 1000);
    let action = prepare(&client, &empty_root(), &task(&marker, &[]));
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let seen = marker.clone();
    let watcher = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        while running(&seen) == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let was_running = running(&seen) > 0;
        flag.store(true, std::sync::atomic::Ordering::Relaxed);
        was_running
    });
    let mut named = false;
    let start = Instant::now();
    let ended = client.execute(&action, false, &cancel, |_| named = true);
    assert!(matches!(ended, Err(Error::Cancelled)), "{ended:?}");
    assert!(
        watcher.join().unwrap(),
        "the action was running on the server"
    );
    assert!(named, "casd names the operation before it ends");
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while running(&marker) > 0 {
        assert!(
            Instant::now() < deadline,
            "the cancelled action still runs on the server"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn buildgrid_routes_actions_to_workers_by_platform_and_they_run_them() {
    // BuildGrid schedules, two workers (REMOTE.md's bot with buildbox-run) execute; the
    // `pool` platform property decides which.
    let Some(server) = BuildGrid::shared() else {
        return;
    };
    let Some(_a) = server.start_worker("a", &[("pool", "a")]) else {
        return;
    };
    let Some(_b) = server.start_worker("b", &[("pool", "b")]) else {
        return;
    };
    let client = client(&server.url());
    let never = AtomicBool::new(false);
    let nonce = format!("{:?}", Instant::now());
    for pool in ["b", "a"] {
        let script = format!("mkdir -p out && echo {pool} {nonce} > out/pool.txt && exit 4");
        let platform = [("OSFamily", "linux"), ("pool", pool)];
        let action = prepare(&client, &empty_root(), &task(&script, &platform));
        let done = client
            .execute(&action, false, &never, |_| {})
            .expect("executed");
        assert_eq!(done.failure(), None);
        let result = done.result();
        assert_eq!(result.exit_code, 4);
        let worker = result.execution_metadata.unwrap_or_default().worker;
        assert!(
            worker.ends_with(&format!("-{pool}")),
            "{pool} ran on {worker}"
        );
        let out = tempfile::tempdir().unwrap();
        client
            .write_outputs(&done.result(), out.path(), 4 << 20, &|_| true)
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(out.path().join("pkg/out/pool.txt")).unwrap(),
            format!("{pool} {nonce}\n")
        );
    }
}
