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
        "would run, in dependency order (⏺ executes · ⇢ local hit · ⇣ remote hit · − does not start · ◇ group):\n\
         level 1\n  \
         ⏺ no-cache    docs#build  [key]\n  \
         ⏺ no-cache    lib#build  [key]\n\
         level 2\n  \
         ⏺ no-cache    app#build  [key]  ← lib#build\n\
         3 tasks planned: 0 cache hits, 3 would run\n\
         predicted: no history yet (3 tasks never recorded a duration here)\n"
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
    // Without Graphviz, an image is refused naming the package; DOT needs nothing.
    let out = f.vx_in(
        "",
        &["run", "build", "--all", "--graph=plan.svg"],
        &[("PATH", "/nonexistent")],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: --graph=plan.svg needs Graphviz, and its `dot` is not on PATH\n  \
         hint: install the `graphviz` package (apt-get install graphviz, brew install graphviz), \
         or write .dot, .mermaid, .json or .html, which need nothing\n"
    );
    assert!(!f.path("plan.svg").exists());
}

/// UI-13: nodes filled by the predicted cache state, and every format the file
/// name asks for.
#[test]
fn graph_colours_nodes_by_prediction_and_writes_every_format() {
    let f = crate::w_cached();
    assert_eq!(f.vx(&["run", "lib#build"]).code, 0);
    let out = f.vx(&["run", "build", "--all", "--graph"]);
    assert_eq!(out.code, 0, "{out:?}");
    for line in [
        "\"lib#build\" [fillcolor=\"#8fd98f\", tooltip=\"local hit\"];",
        "\"app#build\" [fillcolor=\"#ffb347\", tooltip=\"would execute\"];",
        "\"docs#build\" [fillcolor=\"#d3d3d3\", tooltip=\"no cache\"];",
    ] {
        assert_contains(&out.stdout, line);
    }
    let check = f.vx(&["run", "check", "--all", "--graph"]);
    assert_contains(
        &check.stdout,
        "\"app#check\" [fillcolor=\"#ee82ee\", tooltip=\"group\"];",
    );

    let mermaid = f.vx(&["run", "check", "--all", "--graph=out/plan.mermaid"]);
    assert_eq!(mermaid.code, 0, "{mermaid:?}");
    assert_contains(&mermaid.stderr, "vx: wrote out/plan.mermaid");
    let text = f.read("out/plan.mermaid");
    assert!(text.starts_with("flowchart RL\n"), "{text}");
    assert_contains(&text, "classDef hitLocal fill:#8fd98f,stroke:#333");
    assert_eq!(text.matches(" --> ").count(), 4, "{text}");
    assert_contains(&text, "[\"app#check\"]:::group");

    assert_eq!(
        f.vx(&["run", "check", "--all", "--graph=plan.json"]).code,
        0
    );
    let doc: serde_json::Value = serde_json::from_str(&f.read("plan.json")).unwrap();
    let nodes = doc["nodes"].as_array().unwrap();
    let lib = nodes.iter().find(|n| n["id"] == "lib#build").unwrap();
    assert_eq!(lib["cache"], "hit-local");
    let group = nodes.iter().find(|n| n["id"] == "app#check").unwrap();
    assert_eq!(group["group"], true);
    let edges = doc["edges"].as_array().unwrap();
    assert!(
        edges
            .iter()
            .any(|e| e["from"] == "app#build" && e["to"] == "lib#build"),
        "{doc}"
    );

    assert_eq!(
        f.vx(&["run", "check", "--all", "--graph=plan.html"]).code,
        0
    );
    let html = f.read("plan.html");
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    for id in ["lib#build", "app#build", "app#test", "app#check"] {
        assert!(html.contains(&format!(">{id}</text>")), "{id} not drawn");
    }
    // Self-contained: nothing to fetch; its one script is inline (graph_browser.rs runs it).
    for outside in [
        "<script src",
        "src=",
        "href=",
        "<link",
        "@import",
        "url(http",
    ] {
        assert!(!html.contains(outside), "`{outside}` in the page");
    }
    assert_eq!(html.matches("<script>").count(), 1);
    assert_eq!(html.matches("marker-end=").count(), 4, "one path per edge");
}

/// `.svg`, `.png` and `.pdf` are drawn by the real Graphviz (installed by scripts/test).
#[test]
fn graph_images_are_drawn_by_graphviz() {
    if std::process::Command::new("dot")
        .arg("-V")
        .output()
        .is_err()
    {
        let why =
            "Graphviz is missing: install it with `apt-get install graphviz` (scripts/test does)";
        assert!(!vx_test_support::tools::tools_required(), "{why}");
        eprintln!("skipped: {why}");
        return;
    }
    let f = w();
    for (name, magic) in [
        ("img/plan.svg", &b"<?xml"[..]),
        ("img/plan.png", &b"\x89PNG"[..]),
        ("img/plan.pdf", &b"%PDF"[..]),
    ] {
        let out = f.vx(&["run", "build", "--all", &format!("--graph={name}")]);
        assert_eq!(out.code, 0, "{out:?}");
        let bytes = std::fs::read(f.path(name)).unwrap();
        assert!(
            bytes.starts_with(magic),
            "{name}: {:?}",
            &bytes[..8.min(bytes.len())]
        );
    }
    let svg = f.read("img/plan.svg");
    assert_contains(&svg, "app#build");
    assert_contains(&svg, "fill=\"#d3d3d3\"");
    // The drawing has a legend, which written DOT does not.
    assert_contains(&svg, ">legend</text>");
    for word in ["local hit", "would execute", "group"] {
        assert_contains(&svg, &format!(">{word}</text>"));
    }
    assert!(!f
        .vx(&["run", "build", "--all", "--graph"])
        .stdout
        .contains("legend"));
    // When dot fails (here it cannot write over a directory), its own words follow, exit 2,
    // and the temporary DOT file is gone.
    std::fs::create_dir_all(f.path("taken.svg")).unwrap();
    let out = f.vx(&["run", "build", "--all", "--graph=taken.svg"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .starts_with("error: Graphviz's `dot -Tsvg` failed (exit "),
        "{}",
        out.stderr
    );
    assert_contains(&out.stderr, "taken.svg");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    let left: Vec<_> = std::fs::read_dir(f.path(""))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".vx-graph-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
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
        "command = \"test -s dist/app.txt && echo ok\"  # packages/app/vx.toml:6",
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
    assert_contains(
        &out.stdout,
        "predicted: no history yet (1 task never recorded a duration here)\n",
    );
}

/// `--dry` in dependency order, groups shown with what they wait for, and the
/// one-liners' glyphs with a legend.
#[test]
fn dry_text_is_in_dependency_order_with_groups_and_a_legend() {
    let f = crate::w_cached();
    assert_eq!(f.vx(&["run", "lib#build"]).code, 0);
    let out = f.vx(&["run", "check", "--all", "--dry"]);
    assert_eq!(out.code, 0, "{out:?}");
    let text = out.stdout_redacted(&f);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("⏺ executes · ⇢ local hit"), "{text}");
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("`{needle}` not in:\n{text}"))
    };
    assert!(at("level 1") < at("⇢ local       lib#build"));
    assert!(at("level 2") < at("⏺ miss        app#build  [key]  ← lib#build"));
    // app#build never ran: what it produces decides app#test's key (KEY-9).
    assert!(
        at("level 3")
            < at("app#test  unknown (app#build runs first; its outputs decide)  ← app#build")
    );
    assert!(at("level 4") < at("◇ group       app#check  ← app#build, app#test"));
    let doc = crate::dry_json(&f, &["run", "check", "--all"]);
    assert_eq!(crate::dry_task(&doc, "app#test")["level"], 3);
}

/// `vx show` writes a task as TOML-like rows (inline tables as dotted keys), keeps a
/// multi-line command whole, and names what the task runs after and what needs it.
#[test]
fn show_writes_toml_rows_and_keeps_a_multi_line_command() {
    let f = w();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"\"\"\nmkdir -p dist\ncat src/*.txt > dist/out.txt\n\"\"\"\n\
         env = { define = { MODE = \"prod\" }, pass-through = [\"HOME\"] }\n\
         cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
    );
    let out = f.vx(&["show", "lib#build"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(
        &out.stdout,
        "  command = \"\"\"\n    mkdir -p dist\n    cat src/*.txt > dist/out.txt\n    \"\"\"  # packages/lib/vx.toml:2\n",
    );
    assert_contains(
        &out.stdout,
        "  env.pass-through = [\"HOME\"]  # packages/lib/vx.toml:6\n  env.define.MODE = \"prod\"\n",
    );
    assert_contains(
        &out.stdout,
        "  cache.inputs = [\"src/**\"]  # packages/lib/vx.toml:7\n  cache.outputs = [\"dist/**\"]\n",
    );
    assert_contains(
        &out.stdout,
        "  runs after  (none)\n  needed by   app#build\n",
    );
    let out = f.vx(&["show", "lib"]);
    assert_contains(
        &out.stdout,
        "lib  (packages/lib)\n  depends on  (none)\n  dependents  app\n",
    );
}
