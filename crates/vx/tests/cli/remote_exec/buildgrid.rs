//! Remote execution on BuildGrid with PostgreSQL (REM-12 … REM-14): workers that run each action
//! with `buildbox-run` build as a local build would, platform properties route tasks to the
//! workers that match, and an action whose worker is killed runs again on another.

use vx_test_support::buildgrid::{BuildGrid, Worker};

use super::*;

/// A workspace on the shared BuildGrid whose remote tasks ask for the pool `pool` (workers of
/// other tests serve other pools).
fn on_buildgrid(server: &BuildGrid, pool: &str) -> Fixture {
    workspace(
        &server.url(),
        pool,
        &format!("platform = {{ OSFamily = \"linux\", pool = \"{pool}\" }}\n"),
    )
}

/// A unique pool name for this test process.
fn pool(name: &str) -> String {
    format!("{name}-{}", std::process::id())
}

fn worker(server: &BuildGrid, pool: &str, name: &str) -> Option<Worker> {
    server.start_worker(name, &[("pool", pool)])
}

#[test]
fn remote_tasks_build_on_buildgrid_workers_as_they_build_locally() {
    let Some(server) = BuildGrid::shared() else {
        return;
    };
    let pool = pool("same");
    let Some(_worker) = worker(server, &pool, "same") else {
        return;
    };
    builds_remotely_as_a_local_build_would(
        &server.url(),
        &pool,
        &format!("platform = {{ OSFamily = \"linux\", pool = \"{pool}\" }}\n"),
    );
}

/// ACC-38.
#[test]
fn acc_38_buildgrid_and_download_toplevel() {
    let Some(server) = BuildGrid::shared() else {
        return;
    };
    let pool = pool("acc38");
    let Some(_worker) = worker(server, &pool, "acc38") else {
        return;
    };
    let f = on_buildgrid(server, &pool);
    let (out, summary) = run(&f, &["app#build", "--download=toplevel"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    for id in ["lib#build", "app#build"] {
        assert_eq!(outcome(&summary, id), said("success", "miss", "remote"));
    }
    assert!(!f.path("packages/lib/dist").exists());
    assert_eq!(
        f.read("packages/app/dist/both.txt"),
        format!("app source {pool}\nlib source {pool}\n")
    );
    let (out, _) = run(&f, &["app#check", "--download=toplevel", "--force"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("vx: downloading outputs of lib#build for app#check, which runs locally\n"),
        "{}",
        out.stderr
    );
    assert_eq!(
        f.read("packages/lib/dist/main.txt"),
        format!("lib source {pool}\n")
    );
}

#[test]
fn platform_properties_route_tasks_to_the_workers_that_match() {
    let Some(server) = BuildGrid::shared() else {
        return;
    };
    let (a, b) = (pool("route-a"), pool("route-b"));
    let Some(worker_a) = worker(server, &a, "route-a") else {
        return;
    };
    let Some(worker_b) = worker(server, &b, "route-b") else {
        return;
    };
    // The workspace asks for pool a; app#build overrides it with pool b.
    let f = on_buildgrid(server, &a);
    f.write(
        "packages/app/vx.toml",
        &format!(
            "[tasks.build]\ncommand = \"mkdir -p dist && cat src/main.txt ../lib/dist/main.txt > dist/both.txt\"\n\
             depends-on = [\"lib#build\"]\nremote = {{ platform = {{ pool = \"{b}\" }} }}\n\
             cache = {{ inputs = [\"src/**\"], outputs = [\"dist/**\"] }}\n"
        ),
    );
    f.commit();
    let (out, _) = run(&f, &["app#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let ran = |w: &Worker| {
        w.log()
            .lines()
            .filter(|l| l.contains("running an action on"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let (on_a, on_b) = (ran(&worker_a), ran(&worker_b));
    assert_eq!(on_a.len(), 1, "{on_a:?}");
    assert_eq!(on_b.len(), 1, "{on_b:?}");
    assert!(on_a[0].contains(&format!("pool={a}")) && on_a[0].contains("OSFamily=linux"));
    assert!(on_b[0].contains(&format!("pool={b}")) && on_b[0].contains("OSFamily=linux"));
}

#[test]
fn a_worker_killed_mid_action_is_run_again_on_another_and_reported() {
    let Some(server) = BuildGrid::shared() else {
        return;
    };
    let pool = pool("killed");
    let (Some(one), Some(two)) = (
        worker(server, &pool, "killed-1"),
        worker(server, &pool, "killed-2"),
    ) else {
        return;
    };
    let f = on_buildgrid(server, &pool);
    lib_command(
        &f,
        "sleep 3 && echo building && mkdir -p dist && echo survived > dist/out.txt",
        "",
    );
    f.commit();
    let summary = f.path("summary.json");
    let summarize = format!("--summarize={}", summary.display());
    let child = spawn_vx(&f, &["run", "lib#build", &summarize]);
    let running = |w: &Worker| w.log().contains("running an action");
    wait_until("a worker takes the action", || {
        running(&one) || running(&two)
    });
    let (mut first, second) = if running(&one) {
        (one, two)
    } else {
        (two, one)
    };
    first.kill();
    // BuildGrid gives the action to the other worker once the first one's session expires
    // (its keepalive timeout, 10 s here), and says so in the operation's stage; vx notes it.
    let out = child.wait_with_output().expect("vx ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        second.log().contains("running an action"),
        "{}",
        second.log()
    );
    assert!(
        stdout.contains(
            "vx: the remote executor lost a worker running this task and ran it again (once)"
        ),
        "{stdout}"
    );
    assert_eq!(f.read("packages/lib/dist/out.txt"), "survived\n");
    // The task took what the run waited (the lost worker's session included), not the second
    // worker's 3 s.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let waited = task(&summary, "lib#build")["duration_ms"].as_u64().unwrap();
    assert!(waited >= 10_000, "{waited} ms");
    // What happened to the worker is not the task's output: a hit does not replay it.
    std::fs::remove_dir_all(f.path("packages/lib/dist")).unwrap();
    let hit = f.vx(&["run", "lib#build", "--output-logs=full"]);
    assert_eq!(hit.code, 0, "{hit:?}");
    assert!(
        hit.stdout.contains("building"),
        "the log replayed: {}",
        hit.stdout
    );
    assert!(!hit.stdout.contains("lost a worker"), "{}", hit.stdout);
    assert_eq!(f.read("packages/lib/dist/out.txt"), "survived\n");
}
