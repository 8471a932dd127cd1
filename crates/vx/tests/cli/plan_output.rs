//! `--dry`, `--graph`, `vx show` and `vx schema`: products on stdout (ERR-5).

use crate::assert_contains;
use crate::w;

#[test]
fn dry_text_lists_the_plan_and_runs_nothing() {
    let f = w();
    let out = f.vx(&["run", "build", "--all", "--dry"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout_redacted(&f),
        "would run:\n  · app#build  [key]\n  · docs#build  [key]\n  · lib#build  [key]\n3 tasks planned: 0 cache hits, 3 would run\npredicted: ~[t] wall · ~[t] total (3 tasks without history)\n"
    );
    assert!(!f.path("packages/lib/dist").exists());
}

#[test]
fn dry_json_lists_tasks_with_their_dependencies() {
    let f = w();
    let out = f.vx_in("packages/app", &["run", "check", "--dry=json"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let tasks = doc["tasks"].as_array().unwrap();
    let ids: Vec<&str> = tasks.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["app#build", "app#test", "lib#build"]);
    assert_eq!(tasks[1]["deps"], serde_json::json!(["app#build"]));
    assert_eq!(tasks[0]["cache"], "no-cache");
    assert_eq!(doc["predicted"]["unknown"], 3);
}

#[test]
fn graph_prints_dot_with_nodes_and_edges() {
    let f = w();
    let out = f.vx(&["run", "build", "--all", "--graph"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.starts_with("digraph vx {"), "{}", out.stdout);
    assert_eq!(
        out.stdout.matches("[fillcolor=").count(),
        3,
        "{}",
        out.stdout
    );
    assert_eq!(out.stdout.matches(" -> ").count(), 1, "{}", out.stdout);
    assert_contains(&out.stdout, "\"app#build\" -> \"lib#build\"");

    let out = f.vx(&["run", "build", "--all", "--graph=out/plan.dot"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(f.read("out/plan.dot").starts_with("digraph vx {"));
    let out = f.vx(&["run", "build", "--all", "--graph=plan.svg"]);
    assert_eq!(out.code, 2);
    assert_contains(&out.stderr, "hint: pipe the DOT output into `dot -Tsvg`");
}

#[test]
fn show_lists_projects_and_task_configuration() {
    let f = w();
    let out = f.vx(&["show"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "app   packages/app   3 tasks\ndocs  packages/docs  1 task\nlib   packages/lib   1 task\n"
    );
    let out = f.vx(&["show", "app#test"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(
        &out.stdout,
        "command     test -s dist/app.txt && echo ok  (packages/app/vx.toml:6)",
    );
    let out = f.vx(&["show", "app", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        doc["tasks"]["test"]["depends-on"],
        serde_json::json!(["build"])
    );
    let out = f.vx(&["show", "buidl"]);
    assert_eq!(out.code, 2);
    assert_contains(&out.stderr, "did you mean `build`?");
}

#[test]
fn schema_is_json_schema_of_both_shapes() {
    let f = w();
    let out = f.vx(&["schema"]);
    assert_eq!(out.code, 0);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        doc["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert!(doc["properties"]["workspace"].is_object(), "{doc}");
    assert!(doc["properties"]["tasks"].is_object(), "{doc}");
}

#[test]
fn dry_text_uses_the_singular_for_one_task() {
    let f = w();
    let out = f.vx(&["run", "lib#build", "--dry"]);
    assert_contains(&out.stdout, "1 task planned: 0 cache hits, 1 would run\n");
    assert_contains(&out.stdout, "(1 task without history)");
}
