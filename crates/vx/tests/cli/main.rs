//! The integration tests of the `vx` binary (TEST-1): each test builds a workspace in a
//! temporary git repository, runs the real `vx`, and checks exit code, stdout and stderr.
//! Process tests use the `vx-test-child` program and check for survivors by a marker in argv
//! (TEST-2).

mod acceptance;
mod affected;
mod affected_ci;
mod cache;
mod cache_keys;
mod cache_safety;
mod ci_recipes;
mod ci_reports;
mod ci_sections;
mod cli_errors;
mod completions;
mod config_errors;
mod containment;
mod cutoff;
mod distribution;
mod doc_commands;
mod execution;
mod fuzz;
mod graph_browser;
mod guard;
mod info;
mod init;
mod init_adoption;
mod init_compare;
mod init_learn;
mod interactive;
mod last;
mod last_green;
mod live;
mod lock;
mod lockfiles;
mod lsp;
mod mcp;
mod migrate;
mod perf3;
mod plan_output;
mod processes;
mod prune;
mod pty;
mod readiness;
mod reapi_cache;
mod recap;
mod remote_cache;
mod remote_exec;
mod replay;
mod reports;
mod restore_exact;
mod sandbox;
mod sandbox_init;
mod sandbox_walls;
mod scheduling;
mod schema;
mod shard;
mod shard_split;
mod snapshots;
mod storage_faults;
mod store_races;
mod telemetry;
mod templates;
mod terminal;
mod watch;

use vx_test_support::fixture::Fixture;

/// The `vx` binary under test.
pub fn vx_bin() -> &'static str {
    env!("CARGO_BIN_EXE_vx")
}

/// A clone of the repository at `origin` (`git clone -q ARGS… ORIGIN .`), as another runner or
/// machine checks it out: no `.vx/`, no outputs.
pub fn clone_of(origin: &std::path::Path, args: &[&str]) -> Fixture {
    let clone = Fixture::new(vx_bin());
    std::fs::remove_dir_all(clone.root().join(".git")).unwrap();
    let out = std::process::Command::new("git")
        .arg("clone")
        .arg("-q")
        .args(args)
        .arg(origin)
        .arg(".")
        .current_dir(clone.root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    clone
}

/// Fixture W, the acceptance scenarios' workspace.
pub fn w() -> Fixture {
    Fixture::w(vx_bin())
}

/// Fixture W with lib#build, app#build and app#test cached, as the acceptance scenarios take it.
pub fn w_cached() -> Fixture {
    Fixture::w_cached(vx_bin())
}

/// An empty git repository.
pub fn empty() -> Fixture {
    Fixture::new(vx_bin())
}

/// A workspace with one project `lib` at `packages/lib` whose vx.toml is `tasks`.
pub fn one_project(tasks: &str) -> Fixture {
    let f = empty();
    f.write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
    f.write(
        "packages/lib/package.json",
        r#"{ "name": "lib", "version": "1.0.0" }"#,
    );
    f.write("packages/lib/vx.toml", tasks);
    f.commit();
    f
}

/// Lines of `text` that are one-liners or frame headers for task `id`.
pub fn lines_about<'a>(text: &'a str, id: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|l| l.ends_with(id) || l.contains(&format!("{id} ")))
        .collect()
}

/// `vx <args> --dry=json` at the root, parsed.
pub fn dry_json(f: &Fixture, args: &[&str]) -> serde_json::Value {
    // Before any `--`, after which every word goes to the tasks.
    let mut argv: Vec<&str> = args.to_vec();
    let at = argv.iter().position(|a| *a == "--").unwrap_or(argv.len());
    argv.insert(at, "--dry=json");
    let out = f.vx(&argv);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    serde_json::from_str(&out.stdout).expect("--dry=json prints JSON")
}

/// The ids of the tasks a `--dry=json` plan of `args` would execute (cache `miss`), in
/// plan order.
pub fn dry_misses(f: &Fixture, args: &[&str]) -> Vec<String> {
    dry_json(f, args)["tasks"]
        .as_array()
        .expect("a task list")
        .iter()
        .filter(|t| t["cache"] == "miss")
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect()
}

/// One task's object in a `--dry=json` document.
pub fn dry_task(doc: &serde_json::Value, id: &str) -> serde_json::Value {
    doc["tasks"]
        .as_array()
        .expect("a task list")
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("{id} is not in the plan: {doc}"))
        .clone()
}

/// Asserts that `haystack` contains `needle`, printing the whole text when it does not.
#[track_caller]
pub fn assert_contains(haystack: &str, needle: &str) {
    assert!(
        haystack.contains(needle),
        "expected {needle:?} in:\n{haystack}"
    );
}

/// Asserts that no process with `marker` in its argv survives (waiting up to one second).
#[track_caller]
pub fn assert_no_survivor(marker: &str) {
    let result =
        vx_test_support::process::wait_until_no_marker(marker, std::time::Duration::from_secs(1));
    assert_eq!(result, Ok(()), "processes with marker {marker} survived");
}
