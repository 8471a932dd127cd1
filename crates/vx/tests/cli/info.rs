//! `vx info` (HIST-6): the health report, its JSON form, and that it reads without changing
//! anything and exits 0 on a broken configuration.

use vx_test_support::fixture::{Fixture, Output};

use crate::{assert_contains, empty, vx_bin, w};

/// Rows whose values depend on the machine or the build.
/// Rows whose values depend on the machine; the sandbox row on whether bubblewrap is installed
/// (tests/cli/sandbox.rs checks it both ways).
const MACHINE_ROWS: [&str; 7] = [
    "vx",
    "git",
    "concurrency",
    "memory budget",
    "cache size",
    "sandbox",
    "containment",
];

/// stdout with the temporary root redacted and machine-dependent values replaced by `[…]`.
fn stable(out: &Output, f: &Fixture) -> String {
    out.stdout_redacted(f)
        .lines()
        .map(|line| {
            let label = line.split("  ").next().unwrap_or_default();
            if MACHINE_ROWS.contains(&label) {
                format!("{label:<20}[…]")
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

#[test]
fn info_reports_projects_cache_and_recent_history() {
    let f = Fixture::w_cached(vx_bin());
    assert_eq!(f.vx(&["run", "build", "--all"]).code, 0);
    assert_eq!(f.vx(&["run", "build", "--all"]).code, 0);
    let out = f.vx(&["info"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stderr, "");
    insta::assert_snapshot!(stable(&out, &f));
}

#[test]
fn json_gives_the_same_facts_as_typed_fields() {
    let f = Fixture::w_cached(vx_bin());
    assert_eq!(f.vx(&["run", "build", "--all"]).code, 0);
    assert_eq!(f.vx(&["run", "build", "--all"]).code, 0);
    let out = f.vx(&["info", "--format", "json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let info = json(&out);
    assert_eq!(info["vx_version"], env!("CARGO_PKG_VERSION"));
    assert!(info["git_version"].is_string(), "{info}");
    assert_eq!(info["git_repository"], true, "{info}");
    assert!(!out.stdout.contains("repository  "), "{}", out.stdout);
    let root = f.root().canonicalize().unwrap();
    assert_eq!(info["workspace_root"], root.display().to_string());
    assert_eq!(info["projects"], 3);
    assert_eq!(info["tasks"], 5);
    assert_eq!(info["configuration_errors"], serde_json::json!([]));
    assert!(info["concurrency"].as_u64().unwrap() >= 1);
    assert!(
        ["cpus", "cgroup quota"].contains(&info["concurrency_source"].as_str().unwrap()),
        "{info}"
    );
    // SCHED-9: four per CPU, at least 10.
    let cpus = info["concurrency"].as_u64().unwrap();
    assert_eq!(
        info["concurrency_ceiling"].as_u64(),
        Some((cpus * 4).max(10)),
        "{info}"
    );
    let cache = &info["cache"];
    assert_eq!(cache["dir"], root.join(".vx").display().to_string());
    assert_eq!(cache["exists"], true);
    assert_eq!(cache["entries"], 2);
    assert!(cache["size_bytes"].as_u64().unwrap() > 0);
    assert_eq!(cache["index_schema"], vx_store::SCHEMA_VERSION);
    assert_eq!(cache["key_format"], "vx-key-4");
    let containment = info["containment"].as_str().unwrap();
    assert!(
        containment.starts_with("cgroup ")
            || containment.starts_with("sessions and process groups ("),
        "{containment}"
    );
    assert_eq!(cache["orphaned_files"], 0);
    let history = &info["history"];
    assert_eq!(history["runs_24h"], 2);
    assert_eq!(history["tasks_24h"], 6);
    assert_eq!(history["hits_24h"], 2);
    assert_eq!(history["flaky_tasks_30d"], serde_json::json!([]));
    assert!(info["sandbox"]["available"].is_boolean(), "{info}");
    assert_eq!(info["sandbox"]["sandboxed_tasks"], 0);
    assert!(info["remote_cache"].is_null());
    assert!(info["remote_execution"].is_null());
    assert_eq!(info["lock"]["present"], false);
    assert!(info["lock"]["fresh"].is_null());
}

/// EXEC-16: a task that passed only on its second attempt is listed as flaky, in text and JSON.
#[test]
fn info_lists_a_task_that_passed_after_a_retry_as_flaky() {
    // The attempt counter lives outside the workspace, so the task's key never changes.
    let counter = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(counter.path(), "0").unwrap();
    let f = crate::one_project(&format!(
        concat!(
            "[tasks.test]\n",
            "command = \"n=$(cat {0}); echo $((n+1)) > {0}; test $n -ge 1\"\n",
            "retries = 1\n\n",
            "[tasks.build]\ncommand = \"true\"\n",
        ),
        counter.path().display()
    ));
    let before = f.vx(&["info"]);
    assert_contains(&before.stdout, "flaky tasks (30 d)  none recorded\n");
    let out = f.vx(&["run", "lib#test", "lib#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stdout, "flaky: passed after 2 attempts");

    let out = f.vx(&["info"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "flaky tasks (30 d)  lib#test\n");
    let info = json(&f.vx(&["info", "--format", "json"]));
    assert_eq!(
        info["history"]["flaky_tasks_30d"],
        serde_json::json!(["lib#test"])
    );
}

#[test]
fn configuration_errors_are_listed_and_info_still_succeeds() {
    let f = w();
    f.write("packages/lib/vx.toml", "[tasks.build]\ncomand = \"echo\"\n");
    let out = f.vx(&["info"]);
    assert_eq!(out.code, 0, "{out:?}");
    let text = stable(&out, &f);
    assert_contains(
        &text,
        "projects            unknown (configuration errors)\n",
    );
    assert_contains(
        &text,
        "configuration       1 error\n                    packages/lib/vx.toml:2:1: unknown key `comand` in `tasks.build`",
    );
    assert_contains(
        &text,
        "                      hint: did you mean `command`?\n",
    );
    let info = json(&f.vx(&["info", "--format=json"]));
    assert!(info["projects"].is_null());
    let errors = info["configuration_errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert!(errors[0]
        .as_str()
        .unwrap()
        .starts_with("packages/lib/vx.toml:2:1: unknown key `comand`"));
}

#[test]
fn info_reads_without_creating_or_changing_the_cache() {
    let f = w();
    let out = f.vx(&["info"]);
    assert_eq!(out.code, 0, "{out:?}");
    let text = stable(&out, &f);
    assert_contains(&text, "cache directory     [root]/.vx (not created yet)\n");
    assert_contains(
        &text,
        &format!(
            "index schema        none yet (this vx writes {})\n",
            vx_store::SCHEMA_VERSION
        ),
    );
    assert_contains(&text, "runs (last 24 h)    0\n");
    assert!(!f.path(".vx").exists(), "vx info created the cache");

    let f = Fixture::w_cached(vx_bin());
    assert_eq!(f.vx(&["run", "build", "--all"]).code, 0);
    let db = f.path(".vx/cache.db");
    let before = std::fs::read(&db).unwrap();
    assert_eq!(f.vx(&["info"]).code, 0);
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

#[test]
fn settings_and_environment_change_their_rows() {
    let f = w();
    f.write(
        "vx.toml",
        "[workspace]\nmembers = [\"packages/*\"]\nconcurrency = 3\n",
    );
    f.write("vx.lock", "{}\n");
    let out = f.vx_in("", &["info"], &[("VX_MEMORY_BUDGET", "2G")]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "concurrency         3 (workspace)\n");
    assert_contains(
        &out.stdout,
        "memory budget       2.0 GiB (VX_MEMORY_BUDGET)\n",
    );
    assert_contains(
        &out.stdout,
        "vx.lock             cannot be read: vx.lock:1:2: not a lock this vx can read: missing field `lock-version`\n",
    );
    let out = f.vx_in("", &["info"], &[("VX_MEMORY_BUDGET", "off")]);
    assert_contains(&out.stdout, "memory budget       off (VX_MEMORY_BUDGET)\n");
    let out = f.vx_in("", &["info"], &[("VX_MEMORY_BUDGET", "lots")]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stderr, "warning: ignoring VX_MEMORY_BUDGET=`lots`");
    // Without git on PATH the row says so.
    let out = f.vx_in("", &["info"], &[("PATH", "/nonexistent")]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "git                 not found\n");
    // `--cache-dir` is honoured (relative to the current directory).
    let out = f.vx_in("packages", &["info", "--cache-dir", "elsewhere"], &[]);
    assert_contains(
        &out.stdout_redacted(&f),
        "cache directory     [root]/packages/elsewhere (not created yet)\n",
    );
}

#[test]
fn outside_a_workspace_info_exits_2() {
    let f = empty();
    let out = f.vx(&["info"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .starts_with("error: not inside a vx workspace (no vx.toml with [workspace] from "),
        "{}",
        out.stderr
    );
    assert_eq!(out.stdout, "");
}

/// Outside git, `vx info` says so (vx still works, walking the files), and outside a
/// workspace its error says there is no repository either (issue 48).
#[test]
fn outside_git_info_says_so() {
    let f = empty();
    std::fs::remove_dir_all(f.path(".git")).unwrap();
    let out = f.vx(&["info"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .ends_with(" is not in a git repository either (`git init` makes one)\n"),
        "{}",
        out.stderr
    );
    f.write("vx.toml", "[workspace]\nmembers = []\n");
    let out = f.vx(&["info"]);
    assert_eq!(out.code, 0, "{out:?}");
    crate::assert_contains(
        &out.stdout,
        "repository          not a git repository: files are found by a walk honouring \
         .gitignore; --affected and the branch features need git\n",
    );
    let out = f.vx(&["info", "--format", "json"]);
    assert_eq!(json(&out)["git_repository"], false);
}

#[test]
fn bad_format_values_are_refused() {
    let f = w();
    let out = f.vx(&["info", "--format", "yaml"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: invalid value `yaml` for --format (expected pretty or json)\n"
    );
    let out = f.vx(&["info", "--json"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: unknown flag `--json` for `vx info`\n  hint: use `--format json`\n"
    );
}

#[test]
fn an_unreadable_index_is_a_fact_not_an_error() {
    let f = w();
    f.write(".vx/cache.db", &"not a database ".repeat(20));
    let out = f.vx(&["info"]);
    assert_eq!(out.code, 0, "{out:?}");
    let text = stable(&out, &f);
    assert_contains(&text, "cache entries       unknown\n");
    assert_contains(
        &text,
        "cache problem       [root]/.vx/cache.db is not a valid cache index (file is not a database)\n",
    );
    let info = json(&f.vx(&["info", "--format", "json"]));
    assert!(info["cache"]["entries"].is_null());
    assert!(info["cache"]["problem"]
        .as_str()
        .unwrap()
        .contains("not a valid cache index"));
}

/// A variable that is not UTF-8 in vx's environment is left aside, not a crash (`vx info`,
/// `vx show` and `vx run` read the environment).
#[test]
fn a_non_utf8_environment_variable_is_no_crash() {
    use std::os::unix::ffi::OsStrExt;
    let f = Fixture::w(vx_bin());
    for args in [&["info"][..], &["show"], &["run", "lib#build"]] {
        let out = f
            .command("", args)
            .env("VX_TEST_ODD", std::ffi::OsStr::from_bytes(b"caf\xe9"))
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
