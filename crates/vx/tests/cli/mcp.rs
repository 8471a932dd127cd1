//! `vx mcp` driven by the official Model Context Protocol client (the Python SDK from PyPI,
//! over stdio as an agent's host starts it): the reading tools say what the command line
//! says, configuration errors are located, a run is followed live and stopped.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use vx_test_support::editor::mcp_session;
use vx_test_support::fixture::Fixture;
use vx_test_support::process::{unique_marker, wait_until_no_marker};

use crate::vx_bin;

/// `lib` (build), `app` (build after `^build`; test fails after printing), cached builds.
fn workspace() -> Fixture {
    let f = Fixture::new(vx_bin());
    f.write(".gitignore", ".vx/\ndist/\ngo\n");
    f.write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
    f.write("packages/lib/package.json", r#"{ "name": "lib" }"#);
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"mkdir -p dist && echo lib > dist/out && echo built lib\"\ncache = { inputs = [\"package.json\"], outputs = [\"dist/**\"] }\n",
    );
    f.write(
        "packages/app/package.json",
        r#"{ "name": "app", "dependencies": { "lib": "*" } }"#,
    );
    f.write(
        "packages/app/vx.toml",
        concat!(
            "[tasks.build]\ncommand = \"echo built app\"\ndepends-on = [\"^build\"]\n\n",
            "[tasks.test]\ncommand = \"echo checking; echo 'expected 2, got 3' >&2; exit 1\"\n",
        ),
    );
    f.commit();
    f
}

fn session(f: &Fixture, args: &[&str], steps: Value) -> Option<Value> {
    mcp_session(Path::new(vx_bin()), f.root(), args, &steps).map(|s| s["results"].clone())
}

/// A tool's JSON answer, which must not be an error.
fn ok(answer: &Value) -> &Value {
    assert_eq!(answer["is_error"], false, "{answer}");
    &answer["json"]
}

fn cli_json(f: &Fixture, args: &[&str]) -> Value {
    let out = f.vx(args);
    assert_eq!(out.code, 0, "{out:?}");
    serde_json::from_str(&out.stdout).unwrap()
}

#[test]
fn the_tools_are_listed_and_read_only_ones_say_so() {
    let f = workspace();
    let Some(r) = session(&f, &[], json!([{"op": "tools"}])) else {
        return;
    };
    let tools: Vec<(String, bool)> = r[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["read_only"] == true,
            )
        })
        .collect();
    let want = [
        ("config_errors", true),
        ("info", true),
        ("last", true),
        ("plan", true),
        ("run", false),
        ("run_output", true),
        ("run_status", true),
        ("run_stop", false),
        ("show", true),
        ("why", true),
    ];
    let want: Vec<(String, bool)> = want.iter().map(|(n, r)| (n.to_string(), *r)).collect();
    assert_eq!(tools, want);
    // `--read-only` leaves out every tool that runs tasks.
    let Some(r) = session(&f, &["--read-only"], json!([{"op": "tools"}])) else {
        return;
    };
    let names: Vec<&str> = r[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["config_errors", "info", "last", "plan", "show", "why"]
    );
}

#[test]
fn reading_tools_answer_what_the_command_line_prints() {
    let f = workspace();
    assert_eq!(f.vx(&["run", "lib#build"]).code, 0);
    let Some(r) = session(
        &f,
        &[],
        json!([
            {"op": "call", "tool": "show", "arguments": {}},
            {"op": "call", "tool": "show", "arguments": {"target": "app#build"}},
            {"op": "call", "tool": "plan", "arguments": {"tasks": ["build"], "flags": ["--all"]}},
            {"op": "call", "tool": "why", "arguments": {"task": "lib#build"}},
            {"op": "call", "tool": "last", "arguments": {}},
            {"op": "call", "tool": "info", "arguments": {}},
            {"op": "call", "tool": "why", "arguments": {"task": "nope#build"}},
            // Words after `--` go to the tasks, and never turn the plan into a run.
            {"op": "call", "tool": "plan", "arguments": {"tasks": ["build"], "flags": ["--all", "--", "--watch"]}},
        ]),
    ) else {
        return;
    };
    assert_eq!(ok(&r[0]), &cli_json(&f, &["show", "--format", "json"]));
    assert_eq!(
        ok(&r[1]),
        &cli_json(&f, &["show", "app#build", "--format", "json"])
    );
    assert_eq!(
        ok(&r[2]),
        &cli_json(&f, &["run", "build", "--all", "--dry=json"])
    );
    assert_eq!(
        ok(&r[3]),
        &cli_json(&f, &["why", "lib#build", "--format", "json"])
    );
    assert_eq!(ok(&r[4]), &cli_json(&f, &["last", "--format", "json"]));
    // A plan predicts the hit of the build that ran, and the miss of the one that did not.
    let plan = ok(&r[2])["tasks"].as_array().unwrap();
    let cache_of = |id: &str| plan.iter().find(|t| t["id"] == id).unwrap()["cache"].clone();
    assert_ne!(cache_of("lib#build"), cache_of("app#build"), "{plan:?}");
    let info = ok(&r[5]);
    assert_eq!(
        info["projects"],
        cli_json(&f, &["info", "--format", "json"])["projects"]
    );
    let forwarded = ok(&r[7])["tasks"].as_array().unwrap();
    assert_eq!(forwarded.len(), plan.len(), "{}", r[7]);
    assert_eq!(
        ok(&r[4]),
        &cli_json(&f, &["last", "--format", "json"]),
        "no run was recorded after the plans"
    );
    // vx's own refusal, as a tool error the agent reads.
    assert_eq!(r[6]["is_error"], true);
    assert!(
        r[6]["text"].as_str().unwrap().contains("nope#build"),
        "{}",
        r[6]
    );
}

#[test]
fn config_errors_are_located_as_vx_prints_them() {
    let f = workspace();
    f.write(
        "packages/app/vx.toml",
        "[tasks.build]\ncomand = \"x\"\ndepends-on = [\"^build\"]\n",
    );
    let config_errors = |f: &Fixture| {
        let call = json!([{"op": "call", "tool": "config_errors", "arguments": {}}]);
        session(f, &[], call).map(|r| ok(&r[0])["errors"].clone())
    };
    let Some(errors) = config_errors(&f) else {
        return;
    };
    let errors = errors.as_array().unwrap().clone();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let e = &errors[0];
    let printed = f.vx(&["run", "build", "--all"]).stderr;
    let first = printed.lines().next().unwrap();
    assert_eq!(
        first,
        format!(
            "error: {}:{}:{}: {}",
            e["file"].as_str().unwrap(),
            e["line"],
            e["column"],
            e["message"].as_str().unwrap()
        )
    );
    assert_eq!(e["hints"], json!(["did you mean `command`?"]));
    assert_eq!(e["severity"], "error");
    // Mended: no error.
    f.write("packages/app/vx.toml", "[tasks.build]\ncommand = \"x\"\n");
    assert_eq!(config_errors(&f), Some(json!([])));
}

#[test]
fn a_run_is_followed_live_its_output_read_as_written_and_its_failure_kept() {
    let f = workspace();
    // The build waits, after its first line, for a file the client writes.
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"echo begin; while [ ! -f ../../go ]; do sleep 0.05; done; echo done\"\n",
    );
    let Some(r) = session(
        &f,
        &[],
        json!([
            {"op": "call", "tool": "run", "arguments": {"tasks": ["build", "test"], "flags": ["--all"]}},
            {"op": "until", "tool": "run_output", "arguments": {"run": "1", "task": "lib#build"},
             "path": ["text"], "contains": "begin"},
            {"op": "call", "tool": "run_status", "arguments": {"run": "1"}},
            {"op": "touch", "path": "go"},
            {"op": "until", "tool": "run_status", "arguments": {"run": "1"}, "path": ["state"], "equals": "ended"},
            {"op": "call", "tool": "run_output", "arguments": {"run": "1", "task": "lib#build", "offset": 6}},
            {"op": "call", "tool": "run_output", "arguments": {"run": "1", "task": "app#test"}},
            {"op": "call", "tool": "last", "arguments": {}},
        ]),
    ) else {
        return;
    };
    assert_eq!(ok(&r[0])["command"], "vx run build test --all");
    // The first line was read while the task still ran.
    let live = r[1].as_array().unwrap().last().unwrap();
    assert_eq!(ok(live)["text"], "begin\n");
    assert_eq!(ok(live)["finished"], false);
    assert_eq!(ok(live)["next_offset"], 6);
    let rows = ok(&r[2]);
    assert_eq!(rows["state"], "running");
    let state = |rows: &Value, task: &str| {
        rows["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["task"] == task)
            .unwrap()["state"]
            .clone()
    };
    assert_eq!(state(rows, "lib#build"), "running");
    assert_eq!(state(rows, "app#build"), "pending");
    let ended = ok(r[4].as_array().unwrap().last().unwrap());
    assert_eq!(ended["exit_code"], 1);
    assert_eq!(state(ended, "lib#build"), "success");
    assert_eq!(state(ended, "app#build"), "success");
    assert_eq!(state(ended, "app#test"), "failed");
    assert!(
        ended["terminal_tail"].as_str().unwrap().contains("re-run")
            || ended["terminal_tail"].as_str().unwrap().contains("failed"),
        "{ended}"
    );
    // From the offset the client had: the rest.
    assert_eq!(ok(&r[5])["text"], "done\n");
    assert_eq!(ok(&r[5])["finished"], true);
    let test_output = ok(&r[6])["text"].as_str().unwrap();
    assert!(test_output.contains("checking") && test_output.contains("expected 2, got 3"));
    // `last`: the failure with its output's last lines.
    let last = ok(&r[7])["tasks"].as_array().unwrap().clone();
    let failed = last.iter().find(|t| t["id"] == "app#test").unwrap();
    assert_eq!(failed["status"], "failed");
    assert!(
        failed["output_tail"]
            .as_str()
            .unwrap()
            .contains("expected 2, got 3"),
        "{failed}"
    );
}

/// The workspace with a `lib#build` that prints `up` and sleeps, its command carrying a marker
/// (forwarded words go to its closing `true`).
fn sleeping_build(prefix: &str) -> (Fixture, String) {
    let f = workspace();
    let marker = unique_marker(prefix);
    f.write(
        "packages/lib/vx.toml",
        &format!("[tasks.build]\ncommand = \"echo up; sleep 30; true # {marker}\"\n"),
    );
    (f, marker)
}

/// `lib#build` started by the `run` tool (with a word after `--`, which vx gives the task's
/// command, here to its closing `true`), followed until it printed `up`: the events are
/// written.
fn started_and_up() -> Vec<Value> {
    vec![
        json!({"op": "call", "tool": "run", "arguments": {"tasks": ["lib#build"], "flags": ["--", "--extra"]}}),
        json!({"op": "until", "tool": "run_output", "arguments": {"run": "1", "task": "lib#build"},
               "path": ["text"], "contains": "up"}),
    ]
}

#[test]
fn a_stopped_run_ends_as_ctrl_c_ends_it_and_leaves_no_process() {
    let (f, marker) = sleeping_build("vx-mcp-stop");
    let mut steps = started_and_up();
    steps.extend([
        json!({"op": "call", "tool": "run_stop", "arguments": {"run": "1"}}),
        json!({"op": "call", "tool": "run_stop", "arguments": {"run": "2"}}),
    ]);
    let Some(r) = session(&f, &[], Value::Array(steps)) else {
        return;
    };
    let stopped = ok(&r[2]);
    assert_eq!(stopped["state"], "ended");
    assert_eq!(stopped["exit_code"], 130, "{stopped}");
    assert_eq!(
        wait_until_no_marker(&marker, Duration::from_secs(5)),
        Ok(())
    );
    assert_eq!(r[3]["is_error"], true);
    assert_eq!(r[3]["text"], "no run `2` (this session's runs: 1)");
}

#[test]
fn a_run_still_going_when_the_client_leaves_is_stopped() {
    let (f, marker) = sleeping_build("vx-mcp-leave");
    let Some(_) = session(&f, &[], Value::Array(started_and_up())) else {
        return;
    };
    assert_eq!(
        wait_until_no_marker(&marker, Duration::from_secs(10)),
        Ok(())
    );
}

/// The fenced code blocks of one `## ` section of a Markdown page: (language, text).
fn blocks(page: &str, heading: &str) -> Vec<(String, String)> {
    let start = page.find(heading).unwrap_or_else(|| panic!("no {heading}"));
    let rest = &page[start + heading.len()..];
    let section = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
    let mut out = Vec::new();
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        if let Some(lang) = line.strip_prefix("```") {
            let text: Vec<&str> = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .collect();
            out.push((lang.to_string(), text.join("\n") + "\n"));
        }
    }
    out
}

/// Every `{"command": …, "args": […]}` in a JSON value, as argv.
fn json_commands(value: &Value, out: &mut Vec<Vec<String>>) {
    match value {
        Value::Object(map) => {
            if let Some(command) = map.get("command").and_then(Value::as_str) {
                let mut argv = vec![command.to_string()];
                for arg in map["args"].as_array().into_iter().flatten() {
                    argv.push(arg.as_str().unwrap().to_string());
                }
                out.push(argv);
            }
            map.values().for_each(|v| json_commands(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| json_commands(v, out)),
        _ => {}
    }
}

/// `command = "…"` and `args = […]` of a TOML block that parses, as argv.
fn toml_command(text: &str) -> Vec<String> {
    toml_span::parse(text).unwrap_or_else(|e| panic!("{e:?}:\n{text}"));
    let string = regex::Regex::new(r#""([^"]*)""#).unwrap();
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no {key} in\n{text}"))
            .to_string()
    };
    let mut argv: Vec<String> = string
        .captures_iter(&line("command"))
        .map(|c| c[1].to_string())
        .collect();
    argv.extend(
        string
            .captures_iter(&line("args"))
            .map(|c| c[1].to_string()),
    );
    argv
}

#[test]
fn the_setup_snippets_on_the_editors_page_start_a_working_server() {
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/editors.md"
    ))
    .unwrap();
    let f = workspace();
    f.write("packages/app/vx.toml", "[tasks.build]\ncomand = \"x\"\n");

    // Agents: every host's snippet names `vx mcp`, which serves the ten tools.
    let mut agents: Vec<Vec<String>> = Vec::new();
    for (lang, text) in blocks(&page, "## Setting up an agent") {
        match lang.as_str() {
            "json" => {
                let value: Value =
                    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
                json_commands(&value, &mut agents);
            }
            "toml" => agents.push(toml_command(&text)),
            "text" => agents.push(
                text.split(" -- ")
                    .nth(1)
                    .unwrap()
                    .split_whitespace()
                    .map(str::to_string)
                    .collect(),
            ),
            other => panic!("a `{other}` block in the agents' setup"),
        }
    }
    assert_eq!(agents.len(), 5, "{agents:?}");
    for argv in &agents {
        assert_eq!(argv[0], "vx", "{argv:?}");
        let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
        let Some(r) = session(&f, &args, json!([{"op": "tools"}])) else {
            return;
        };
        assert_eq!(r[0].as_array().unwrap().len(), 10, "{argv:?}");
    }

    // Editors: Neovim's `cmd` and Helix's command start `vx lsp`, which publishes the error.
    let mut editors: Vec<Vec<String>> = Vec::new();
    let cmd = regex::Regex::new(r#"cmd = \{ "vx", "lsp" \}"#).unwrap();
    for (lang, text) in blocks(&page, "## Setting up an editor") {
        match lang.as_str() {
            "lua" => {
                assert_eq!(cmd.find_iter(&text).count(), 1, "{text}");
                editors.push(vec!["vx".into(), "lsp".into()]);
            }
            "toml" => editors.push(toml_command(&text)),
            // The VS Code extension's build: the folder it names is the repository's.
            "sh" => {
                let dir = text
                    .lines()
                    .find_map(|l| l.strip_prefix("cd "))
                    .expect("a `cd` into the extension");
                let here = Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../..")
                    .join(dir);
                assert!(here.join("package.json").is_file(), "{text}");
            }
            other => panic!("a `{other}` block in the editors' setup"),
        }
    }
    assert_eq!(editors.len(), 3, "{editors:?}");
    for argv in &editors {
        assert_eq!(argv[..], ["vx", "lsp"]);
        let Some(s) = vx_test_support::editor::lsp_session_with(
            Path::new(vx_bin()),
            f.root(),
            &["lsp"],
            &json!([{"op": "open", "path": "vx.toml"}, {"op": "sync"}]),
        ) else {
            return;
        };
        let said = &s["results"][1]["packages/app/vx.toml"][0]["message"];
        assert!(
            said.as_str().unwrap().starts_with("unknown key `comand`"),
            "{s}"
        );
    }
}
