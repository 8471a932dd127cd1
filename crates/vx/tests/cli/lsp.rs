//! `vx lsp` driven by a real Language Server Protocol client (pygls's LanguageClient, from
//! PyPI, over stdio as an editor starts it) on real workspaces: diagnostics that are what `vx`
//! prints, completion, hover, go-to-definition, CodeLens and its commands.

use serde_json::{json, Value};
use vx_test_support::editor::lsp_session;
use vx_test_support::fixture::Fixture;

use crate::vx_bin;

/// Projects `@acme/lib` (build) and `app` (build after `^build`, lint), and a workspace
/// template `test`.
fn workspace() -> Fixture {
    let f = Fixture::new(vx_bin());
    f.write(".gitignore", ".vx/\n");
    f.write(
        "vx.toml",
        "[workspace]\nmembers = [\"packages/*\"]\n\n[workspace.tasks.test]\ncommand = \"echo test\"\n",
    );
    f.write("packages/lib/package.json", r#"{ "name": "@acme/lib" }"#);
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"echo built lib\"\n",
    );
    f.write(
        "packages/app/package.json",
        r#"{ "name": "app", "dependencies": { "@acme/lib": "workspace:*" } }"#,
    );
    f.write("packages/app/vx.toml", APP);
    f.commit();
    f
}

const APP: &str = "[tasks.build]\ncommand = \"echo built app\"\ndepends-on = [\"^build\"]\n\n[tasks.lint]\ncommand = \"echo lint\"\n";

/// What `vx run build lint --all --dry` prints on stderr, as (file, line, column, message and
/// hints) rows: the diagnostics the language server must publish.
fn vx_said(f: &Fixture) -> Vec<(String, u64, u64, String)> {
    let out = f.vx(&["run", "build", "lint", "--all", "--dry"]);
    let mut rows: Vec<(String, u64, u64, String)> = Vec::new();
    for line in out.stderr.lines() {
        if let Some(rest) = line.strip_prefix("error: ") {
            let mut parts = rest.splitn(4, ':');
            let (file, l, c, message) = (
                parts.next().unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
            );
            rows.push((
                file.to_string(),
                l.parse().unwrap(),
                c.parse().unwrap(),
                message.trim_start().to_string(),
            ));
        } else if let Some(hint) = line.trim_start().strip_prefix("hint: ") {
            rows.last_mut()
                .unwrap()
                .3
                .push_str(&format!("\nhint: {hint}"));
        }
    }
    rows.sort();
    rows
}

/// The diagnostics of a `sync` result in the same rows (positions from 1, as vx prints them).
fn published(sync: &Value) -> Vec<(String, u64, u64, String)> {
    let mut rows = Vec::new();
    for (file, list) in sync.as_object().unwrap() {
        for d in list.as_array().unwrap() {
            assert_eq!(d["source"], "vx");
            rows.push((
                file.clone(),
                d["line"].as_u64().unwrap() + 1,
                d["character"].as_u64().unwrap() + 1,
                d["message"].as_str().unwrap().to_string(),
            ));
        }
    }
    rows.sort();
    rows
}

#[test]
fn diagnostics_are_the_errors_vx_prints_for_every_file_at_once_and_follow_typing() {
    let f = workspace();
    // Two broken files, neither open in the editor.
    f.write(
        "packages/lib/package.json",
        "{ \"name\": \"@acme/lib\", }\n",
    );
    f.write(
        "packages/app/vx.toml",
        &APP.replace("command = \"echo lint\"", "comand = \"echo lint\""),
    );
    let on_disk = vx_said(&f);
    assert_eq!(on_disk.len(), 2, "{on_disk:?}");
    assert!(
        on_disk[0].3.contains("did you mean `command`"),
        "{on_disk:?}"
    );

    let fixed_app = APP.replace("\"^build\"]", "\"^build\", \"@acme/lib#nope\", \"lnit\"]");
    let fixed_lib = "{ \"name\": \"@acme/lib\" }\n";
    let Some(session) = lsp_session(
        std::path::Path::new(vx_bin()),
        f.root(),
        &json!([
            {"op": "open", "path": "vx.toml"},
            {"op": "sync"},
            // Typed, not saved: the package.json fixed, the vx.toml given two bad entries.
            {"op": "open", "path": "packages/lib/package.json"},
            {"op": "change", "path": "packages/lib/package.json", "text": fixed_lib},
            {"op": "open", "path": "packages/app/vx.toml"},
            {"op": "change", "path": "packages/app/vx.toml", "text": fixed_app},
            {"op": "sync"},
            {"op": "change", "path": "packages/app/vx.toml", "text": APP},
            {"op": "sync"},
        ]),
    ) else {
        return;
    };
    let results = &session["results"];
    assert_eq!(published(&results[1]), on_disk, "{session}");

    // The unsaved texts, written to disk, make vx print what the server published.
    f.write("packages/lib/package.json", fixed_lib);
    f.write("packages/app/vx.toml", &fixed_app);
    let typed = vx_said(&f);
    assert_eq!(typed.len(), 2, "{typed:?}");
    assert!(
        typed.iter().any(|r| r.3.contains("`@acme/lib#nope`")),
        "{typed:?}"
    );
    assert_eq!(published(&results[6]), typed, "{session}");
    // The lib's diagnostics were cleared (published empty), the app's are gone once fixed.
    assert_eq!(
        results[6]["packages/lib/package.json"],
        json!([]),
        "{session}"
    );
    assert_eq!(published(&results[8]), Vec::new(), "{session}");
    // A diagnostic covers its token: the entry `"lnit"` whole.
    let app = results[6]["packages/app/vx.toml"].as_array().unwrap();
    let lnit = app
        .iter()
        .find(|d| d["message"].as_str().unwrap().contains("`lnit`"))
        .unwrap();
    assert_eq!(
        lnit["end"].as_u64().unwrap() - lnit["character"].as_u64().unwrap(),
        "\"lnit\"".len() as u64
    );
}

/// The labels of a completion result, and the text each would insert.
fn completions(result: &Value) -> Vec<(String, String)> {
    result
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["label"].as_str().unwrap().to_string(),
                i["textEdit"]["newText"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn completion_offers_keys_task_ids_project_names_and_allowed_values() {
    let f = workspace();
    let typing = "deps = [\"\"]\n\n[tasks.build]\ncommand = \"echo built app\"\ndepends-on = [\"^build\", \"\", ]\ncomm\n";
    let Some(session) = lsp_session(
        std::path::Path::new(vx_bin()),
        f.root(),
        &json!([
            {"op": "open", "path": "packages/app/vx.toml"},
            {"op": "change", "path": "packages/app/vx.toml", "text": typing},
            // Inside the empty string of `depends-on`, then after its last comma, unquoted.
            {"op": "complete", "path": "packages/app/vx.toml", "line": 4, "character": 25},
            {"op": "complete", "path": "packages/app/vx.toml", "line": 4, "character": 28},
            // A key being typed in the task table.
            {"op": "complete", "path": "packages/app/vx.toml", "line": 5, "character": 4},
            // `deps`: project names.
            {"op": "complete", "path": "packages/app/vx.toml", "line": 0, "character": 9},
            {"op": "open", "path": "vx.toml"},
            {"op": "change", "path": "vx.toml", "text": "[workspace]\nmembers = [\"packages/*\"]\nui = \n"},
            {"op": "complete", "path": "vx.toml", "line": 2, "character": 5},
            {"op": "complete", "path": "vx.toml", "line": 2, "character": 0},
        ]),
    ) else {
        return;
    };
    let r = &session["results"];
    let ids = completions(&r[2]);
    for want in [
        "^build",
        "^lint",
        "build",
        "lint",
        "@acme/lib#build",
        "app#lint",
    ] {
        assert!(
            ids.iter().any(|(l, t)| l == want && t == want),
            "{want}: {ids:?}"
        );
    }
    // The scoped project matches as its unscoped name is typed (`lib#b…`).
    let scoped = r[2]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["label"] == "@acme/lib#build")
        .unwrap();
    assert_eq!(scoped["filterText"], "lib#build");
    // Outside a string the entry comes quoted.
    let bare = completions(&r[3]);
    assert!(
        bare.iter().any(|(l, t)| l == "^build" && t == "\"^build\""),
        "{bare:?}"
    );
    // Keys of a task table, with the schema's description.
    let keys = r[4].as_array().unwrap();
    let command = keys
        .iter()
        .find(|i| i["label"] == "command")
        .expect("command");
    assert!(
        command["documentation"]["value"]
            .as_str()
            .unwrap()
            .contains("sh -c"),
        "{command}"
    );
    assert!(keys.iter().any(|i| i["label"] == "cache"));
    assert!(!keys.iter().any(|i| i["label"] == "members"), "{keys:?}");
    let projects = completions(&r[5]);
    assert!(
        projects.contains(&("@acme/lib".to_string(), "@acme/lib".to_string())),
        "{projects:?}"
    );
    // The root: an enum's values, and `[workspace]`'s keys.
    let values = completions(&r[8]);
    assert_eq!(
        values,
        vec![
            ("plain".to_string(), "\"plain\"".to_string()),
            ("tui".to_string(), "\"tui\"".to_string())
        ]
    );
    let workspace_keys = completions(&r[9]);
    assert!(
        workspace_keys.iter().any(|(l, _)| l == "cache-dir"),
        "{workspace_keys:?}"
    );
}

#[test]
fn hover_shows_the_resolved_task_and_its_last_result_and_definition_jumps_to_it() {
    let f = workspace();
    assert_eq!(f.vx(&["run", "build", "--all"]).code, 0);
    let Some(session) = lsp_session(
        std::path::Path::new(vx_bin()),
        f.root(),
        &json!([
            {"op": "open", "path": "packages/app/vx.toml"},
            {"op": "hover", "path": "packages/app/vx.toml", "line": 0, "character": 9},
            {"op": "hover", "path": "packages/app/vx.toml", "line": 2, "character": 17},
            {"op": "definition", "path": "packages/app/vx.toml", "line": 2, "character": 17},
            {"op": "hover", "path": "packages/app/vx.toml", "line": 1, "character": 2},
            // A key inside an inline table.
            {"op": "change", "path": "packages/app/vx.toml", "text": APP.replace(
                "[tasks.lint]", "cache = { inputs = [\"src/**\"], outputs = [] }\n\n[tasks.lint]")},
            {"op": "hover", "path": "packages/app/vx.toml", "line": 4, "character": 33},
        ]),
    ) else {
        return;
    };
    let r = &session["results"];
    let header = r[1]["contents"]["value"].as_str().unwrap();
    // `vx show app#build`'s text, whole, then the last run.
    let shown = f.vx(&["show", "app#build"]).stdout;
    assert!(header.contains(&shown), "{header}\n---\n{shown}");
    assert!(header.contains("**Last run** ("), "{header}");
    assert!(header.contains("): success, "), "{header}");
    let entry = r[2]["contents"]["value"].as_str().unwrap();
    assert!(
        entry.starts_with("`^build` runs after `@acme/lib#build`"),
        "{entry}"
    );
    assert!(
        entry.contains("@acme/lib#build  (packages/lib/vx.toml:1)"),
        "{entry}"
    );
    let target = &r[3].as_array().unwrap()[0];
    assert!(
        target["uri"]
            .as_str()
            .unwrap()
            .ends_with("/packages/lib/vx.toml"),
        "{target}"
    );
    // The task name in its header, `[tasks.build]`.
    assert_eq!(target["range"]["start"], json!({"line": 0, "character": 7}));
    assert_eq!(target["range"]["end"], json!({"line": 0, "character": 12}));
    let key = r[4]["contents"]["value"].as_str().unwrap();
    assert!(key.starts_with("`tasks.build.command`: "), "{key}");
    let inline = r[6]["contents"]["value"].as_str().unwrap();
    assert!(
        inline.starts_with("`tasks.build.cache.outputs`: "),
        "{inline}"
    );
}

#[test]
fn code_lenses_run_explain_and_show_the_last_result_of_a_task() {
    let f = workspace();
    let Some(session) = lsp_session(
        std::path::Path::new(vx_bin()),
        f.root(),
        &json!([
            {"op": "open", "path": "packages/app/vx.toml"},
            {"op": "lens", "path": "packages/app/vx.toml"},
            {"op": "execute", "command": "vx.run", "arguments": ["app#build"]},
            {"op": "message", "contains": "vx run app#build: exit"},
            {"op": "execute", "command": "vx.last", "arguments": ["app#build"]},
            {"op": "execute", "command": "vx.why", "arguments": ["app#build"]},
        ]),
    ) else {
        return;
    };
    let r = &session["results"];
    let lenses: Vec<(u64, String, String)> = r[1]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["range"]["start"]["line"].as_u64().unwrap(),
                l["command"]["title"].as_str().unwrap().to_string(),
                l["command"]["arguments"][0].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(u64, String, String)> = [(0, "app#build"), (4, "app#lint")]
        .iter()
        .flat_map(|(line, id)| {
            ["run", "why", "last"]
                .iter()
                .map(move |t| (*line, t.to_string(), id.to_string()))
        })
        .collect();
    assert_eq!(lenses, want);
    assert_eq!(r[3]["type"], 3, "an info message: {}", r[3]);
    assert!(r[3]["message"]
        .as_str()
        .unwrap()
        .starts_with("vx run app#build: exit 0"));
    // The run happened, lib's build before it, and history has it.
    let log = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["kind"] == "log")
        .unwrap();
    let log = log["message"].as_str().unwrap();
    assert!(log.starts_with("$ vx run app#build\n"), "{log}");
    assert!(
        log.contains("built app") && log.contains("2 success"),
        "{log}"
    );
    let last = r[4].as_str().unwrap();
    assert!(
        last.starts_with("app#build (") && last.contains("): success, no-cache"),
        "{last}"
    );
    let why = r[5].as_str().unwrap();
    assert!(why.starts_with("app#build"), "{why}");
    assert_eq!(why, f.vx(&["why", "app#build"]).stdout.as_str());
}

/// Whether a tool the test needs is here; when it is not, the test says it is skipped with the
/// install command (and fails under CI or scripts/test, which install it).
fn present(found: bool, why: &str) -> bool {
    if !found {
        assert!(!vx_test_support::tools::tools_required(), "{why}");
        eprintln!("skipped: {why}");
    }
    found
}

/// contrib/vscode, VS Code's way to start `vx lsp`, installed from its lockfile and packaged
/// by the real `vsce` (scripts/test installs it into `.test-tools/vsce`): the manifest is valid
/// and the package holds the extension and Microsoft's language client. VS Code itself cannot
/// be installed on the test machines (not in Debian, its download host unreachable), so the
/// extension's activation is not run here.
#[test]
fn the_vs_code_extension_packages_with_its_language_client() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let vsce = root.join(".test-tools/vsce/node_modules/.bin/vsce");
    let why = format!(
        "vsce is missing: npm install --prefix {} @vscode/vsce@3.9.2 (scripts/test does)",
        root.join(".test-tools/vsce").display()
    );
    if !present(vsce.exists(), &why) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for file in [
        "package.json",
        "package-lock.json",
        "extension.js",
        "README.md",
        "LICENSE",
    ] {
        std::fs::copy(
            root.join("contrib/vscode").join(file),
            dir.path().join(file),
        )
        .unwrap();
    }
    let run = |program: &std::path::Path, args: &[&str]| {
        let out = std::process::Command::new(program)
            .args(args)
            .current_dir(dir.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{program:?} {args:?}: {text}");
        text
    };
    run(
        std::path::Path::new("npm"),
        &["ci", "--no-audit", "--no-fund", "--silent"],
    );
    let said = run(&vsce, &["package", "--out", "vx.vsix"]);
    assert!(said.contains("Packaged:"), "{said}");
    let listed = run(std::path::Path::new("unzip"), &["-l", "vx.vsix"]);
    for held in [
        "extension/package.json",
        "extension/extension.js",
        "extension/node_modules/vscode-languageclient/package.json",
    ] {
        assert!(listed.contains(held), "{held} missing from\n{listed}");
    }
    // The extension starts the server this test suite drives: `vx lsp`, the `vx.path` setting.
    let source = std::fs::read_to_string(root.join("contrib/vscode/extension.js")).unwrap();
    assert!(source.contains(r#"{ command, args: ["lsp"] }"#), "{source}");
    assert!(
        source.contains(r#"getConfiguration("vx").get("path", "vx")"#),
        "{source}"
    );
}

/// contrib/zed, Zed's way to start `vx lsp`, builds for WebAssembly as Zed builds a dev
/// extension (`wasm32-wasip2`, which scripts/test adds with rustup), from its lockfile. Zed
/// itself cannot be installed on the test machines, so the extension is not loaded here.
#[test]
fn the_zed_extension_builds_for_webassembly() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let installed = std::process::Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("wasm32-wasip2"))
        .unwrap_or(false);
    let why =
        "the wasm32-wasip2 target is missing: rustup target add wasm32-wasip2 (scripts/test does)";
    if !present(installed, why) {
        return;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "build",
            "--release",
            "--locked",
            "--target",
            "wasm32-wasip2",
        ])
        .arg("--manifest-path")
        .arg(root.join("contrib/zed/Cargo.toml"))
        .arg("--target-dir")
        .arg(root.join("target/contrib-zed"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let wasm = root.join("target/contrib-zed/wasm32-wasip2/release/zed_vx.wasm");
    assert!(wasm.is_file(), "{wasm:?}");
    let manifest = std::fs::read_to_string(root.join("contrib/zed/extension.toml")).unwrap();
    toml_span::parse(&manifest).unwrap();
    assert!(manifest.contains("[language_servers.vx]"), "{manifest}");
    let source = std::fs::read_to_string(root.join("contrib/zed/src/lib.rs")).unwrap();
    assert!(
        source.contains(r#"args: vec!["lsp".to_string()]"#),
        "{source}"
    );
}

/// Debian's Neovim (0.7, its built-in LSP client; scripts/test installs it), headless, set up
/// with the snippet docs/editors.md gives for Neovim 0.7 to 0.10 (`vx` replaced by the binary
/// under test): hover and completion answer in the editor, and a typo typed into the buffer
/// (not saved) shows vx's diagnostic.
#[test]
fn neovim_with_the_documented_setup_shows_vx_diagnostics_hover_and_completion() {
    let found = std::process::Command::new("nvim")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !present(
        found,
        "nvim is missing: apt-get install neovim (scripts/test does)",
    ) {
        return;
    }
    let f = workspace();
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/editors.md"
    ))
    .unwrap();
    let from = page
        .find("Neovim 0.7 to 0.10:")
        .expect("the snippet's heading");
    let body = &page[from..];
    let body = &body[body.find("```lua\n").unwrap() + 7..];
    let snippet = &body[..body.find("```").unwrap()];
    assert_eq!(
        snippet.matches(r#"cmd = { "vx", "lsp" }"#).count(),
        1,
        "{snippet}"
    );
    let setup = snippet.replace(
        r#"cmd = { "vx", "lsp" }"#,
        &format!(r#"cmd = {{ "{}", "lsp" }}"#, vx_bin()),
    );
    f.write("init.lua", &setup);
    f.write(
        "check.lua",
        r#"
local out = {}
local function say(s) table.insert(out, (s:gsub("\n", " | "))) end
local doc = { uri = vim.uri_from_bufnr(0) }
vim.wait(15000, function() return #vim.lsp.buf_get_clients(0) > 0 end, 20)
local hover = vim.lsp.buf_request_sync(0, "textDocument/hover",
  { textDocument = doc, position = { line = 0, character = 9 } }, 10000)
for _, r in pairs(hover or {}) do
  if r.result then say("hover " .. r.result.contents.value) end
end
local completion = vim.lsp.buf_request_sync(0, "textDocument/completion",
  { textDocument = doc, position = { line = 1, character = 0 } }, 10000)
for _, r in pairs(completion or {}) do
  for _, item in ipairs(r.result and (r.result.items or r.result) or {}) do
    say("completion " .. item.label)
  end
end
vim.api.nvim_buf_set_lines(0, 1, 2, false, { 'comand = "echo built app"' })
vim.wait(15000, function() return #vim.diagnostic.get(0) > 0 end, 20)
for _, d in ipairs(vim.diagnostic.get(0)) do
  say("diagnostic " .. d.lnum .. ":" .. d.col .. " " .. d.message)
end
vim.fn.writefile(out, "nvim-out.txt")
"#,
    );
    let out = std::process::Command::new("nvim")
        .args(["--headless", "--clean", "-u", "init.lua"])
        .args([
            "-c",
            "edit packages/app/vx.toml",
            "-c",
            "luafile check.lua",
            "-c",
            "qa!",
        ])
        .current_dir(f.root())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let said = f.read("nvim-out.txt");
    let lines: Vec<&str> = said.lines().collect();
    let hover = lines.iter().find(|l| l.starts_with("hover ")).expect(&said);
    assert!(
        hover.contains("app#build  (packages/app/vx.toml:1)"),
        "{hover}"
    );
    for key in [
        "completion command",
        "completion depends-on",
        "completion cache",
    ] {
        assert!(lines.contains(&key), "{key}: {said}");
    }
    let diagnostic = lines
        .iter()
        .find(|l| l.starts_with("diagnostic "))
        .expect(&said);
    assert!(
        diagnostic.starts_with("diagnostic 1:0 unknown key `comand` in `tasks.build`")
            && diagnostic.ends_with("| hint: did you mean `command`?"),
        "{diagnostic}"
    );
}

/// An editor that opened the workspace through a symbolic link (a symlinked home, macOS's
/// `/var`): the server's root is canonical, the client's paths are not; the documents are
/// still matched, and their diagnostics published under the client's own URIs.
#[test]
fn a_workspace_opened_through_a_symbolic_link_is_served_under_the_clients_paths() {
    let f = workspace();
    let links = tempfile::tempdir().unwrap();
    let link = links.path().join("ws");
    std::os::unix::fs::symlink(f.root(), &link).unwrap();
    let typo = APP.replace("command = \"echo lint\"", "comand = \"echo lint\"");
    let Some(session) = lsp_session(
        std::path::Path::new(vx_bin()),
        &link,
        &json!([
            {"op": "open", "path": "packages/app/vx.toml"},
            {"op": "change", "path": "packages/app/vx.toml", "text": typo},
            {"op": "sync"},
            {"op": "complete", "path": "packages/app/vx.toml", "line": 1, "character": 0},
        ]),
    ) else {
        return;
    };
    let r = &session["results"];
    // The unsaved typo is seen, and said under the path the client opened.
    let app = r[2]["packages/app/vx.toml"]
        .as_array()
        .expect("under the link");
    assert_eq!(app.len(), 1, "{session}");
    assert!(app[0]["message"]
        .as_str()
        .unwrap()
        .starts_with("unknown key `comand`"));
    assert!(!completions(&r[3]).is_empty(), "{session}");
}

/// A run a lens started that is still going when the editor's session ends is stopped as
/// Ctrl-C would stop it: no process of it is left.
#[test]
fn a_lens_run_still_going_when_the_session_ends_is_stopped() {
    let f = workspace();
    let marker = vx_test_support::process::unique_marker("vx-lsp-lens");
    f.write(
        "packages/lib/vx.toml",
        &format!("[tasks.build]\ncommand = \"touch started; sleep 30 # {marker}\"\n"),
    );
    let Some(session) = lsp_session(
        std::path::Path::new(vx_bin()),
        f.root(),
        &json!([
            {"op": "open", "path": "packages/lib/vx.toml"},
            {"op": "execute", "command": "vx.run", "arguments": ["@acme/lib#build"]},
            {"op": "wait_file", "path": "packages/lib/started"},
        ]),
    ) else {
        return;
    };
    assert_eq!(session["results"][1]["started"], "@acme/lib#build");
    assert_eq!(
        vx_test_support::process::wait_until_no_marker(&marker, std::time::Duration::from_secs(10)),
        Ok(())
    );
}

/// The first text an editor sends may not load (a file being written): completion still knows
/// the workspace, from what the disk holds — whether the client named the folder (the server
/// loads the disk's workspace at start) or only opened the file (the root found from it).
#[test]
fn completion_knows_the_workspace_even_when_the_first_text_sent_does_not_load() {
    let f = workspace();
    let broken = format!("{APP}depends-on = [\"\"]\ncomm\n");
    let steps = json!([
        {"op": "open", "path": "packages/app/vx.toml", "text": broken},
        {"op": "complete", "path": "packages/app/vx.toml", "line": 6, "character": 15},
    ]);
    let vx = std::path::Path::new(vx_bin());
    let Some(named) = lsp_session(vx, f.root(), &steps) else {
        return;
    };
    let Some(unnamed) = vx_test_support::editor::lsp_session_without_root(vx, f.root(), &steps)
    else {
        return;
    };
    for session in [&named, &unnamed] {
        let ids = completions(&session["results"][1]);
        assert!(ids.iter().any(|(l, _)| l == "@acme/lib#build"), "{session}");
    }
}
