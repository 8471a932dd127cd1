//! Carrying a Turborepo or Nx repository over (INIT-3): `vx init` reads
//! `turbo.json`, `vx migrate turbo` requires it, and the result runs as the original runner
//! does. The comparison tests run the real `turbo` from the npm registry on the same
//! repository: the same task graph, the same output trees when built and when restored, and
//! the same misses after an edit.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use vx_test_support::fixture::Fixture;
use vx_test_support::tools::npm_tool;
use vx_test_support::tree::{tree, Entry};

use crate::{assert_contains, empty};

const TURBO_JSON: &str = r#"{
  "$schema": "https://turborepo.com/schema.json",
  // Settings shared by every task.
  "globalDependencies": ["tsconfig.base.json"],
  "globalEnv": ["NODE_ENV"],
  "ui": "stream",
  "tasks": {
    "build": {
      "dependsOn": ["^build"],
      "outputs": ["dist/**"],
      "env": ["API_URL", "NEXT_PUBLIC_*", "!SECRET_*"],
    },
    "test": { "dependsOn": ["build"], "outputLogs": "errors-only" },
    "lint": {},
    "dev": { "cache": false, "persistent": true },
    "web#build": { "dependsOn": ["^build"], "outputs": [".next/**", "!.next/cache/**"] },
    "//#format": { "cache": false }
  }
}
"#;

/// A small Turborepo on npm workspaces: `util` ← `ui` ← `web`, one package with its own
/// `turbo.json`, a `prebuild` hook, a package without scripts.
fn turborepo() -> Fixture {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "packageManager": "npm@10.8.2",
            "workspaces": ["apps/*", "packages/*"],
            "scripts": {"build": "turbo run build", "format": "echo formatted > formatted.txt"}}"#,
    );
    f.write("turbo.json", TURBO_JSON);
    f.write("tsconfig.base.json", "{}\n");
    f.write(
        ".gitignore",
        "node_modules\ndist\ntypes\n.next\n.turbo\n.vx\n",
    );
    f.write(
        "packages/util/package.json",
        r#"{"name": "util", "version": "1.0.0", "scripts": {
            "build": "mkdir -p dist types && cat src/a.txt > dist/util.js && chmod 755 dist/util.js && ln -sf util.js dist/main.js && echo t > types/util.d.ts",
            "test": "test -f dist/util.js"}}"#,
    );
    f.write(
        "packages/util/turbo.json",
        r#"{"extends": ["//"], "tasks": {"build": {"outputs": ["$TURBO_EXTENDS$", "types/**"]}}}"#,
    );
    f.write("packages/util/src/a.txt", "util source\n");
    f.write(
        "packages/ui/package.json",
        r#"{"name": "ui", "version": "1.0.0", "dependencies": {"util": "*"}, "scripts": {
            "prebuild": "mkdir -p dist && echo pre > dist/pre.txt",
            "build": "cat src/b.txt ../util/dist/util.js > dist/ui.js",
            "test": "test -f dist/ui.js", "lint": "echo lint"}}"#,
    );
    f.write("packages/ui/src/b.txt", "ui source\n");
    f.write(
        "apps/web/package.json",
        r#"{"name": "web", "version": "1.0.0", "dependencies": {"ui": "*"}, "scripts": {
            "build": "mkdir -p .next/cache && cat src/c.txt ../../packages/ui/dist/ui.js > .next/page.html && echo tmp > .next/cache/x",
            "dev": "node server.js", "lint": "echo lint"}}"#,
    );
    f.write("apps/web/src/c.txt", "web source\n");
    f.write(
        "packages/config/package.json",
        r#"{"name": "config", "version": "0.0.0"}"#,
    );
    f
}

/// `npm install` with no registry package to fetch: it links the workspaces and writes the
/// lockfile Turborepo reads.
pub(crate) fn npm_install(f: &Fixture) {
    let out = Command::new("npm")
        .args(["install", "--offline", "--no-audit", "--no-fund"])
        .current_dir(f.root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

pub(crate) fn turbo(f: &Fixture, turbo: &Path, args: &[&str]) -> String {
    let out = vx_test_support::tools::turbo_command(turbo, f.root())
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "turbo {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The JSON document in a command's output (turbo may print a warning line before it).
pub(crate) fn json_of(text: &str) -> serde_json::Value {
    let start = text.find('{').expect("a JSON document");
    serde_json::from_str(&text[start..]).unwrap()
}

/// Task id → its dependencies, from `turbo run --dry=json` (tasks with no script left out).
pub(crate) fn turbo_graph(dry: &serde_json::Value) -> BTreeMap<String, Vec<String>> {
    dry["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["command"] != "<NONEXISTENT>")
        .map(|t| {
            let mut deps: Vec<String> = t["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_str().unwrap().to_string())
                .collect();
            deps.sort();
            (t["taskId"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

/// Task id → its dependencies, from `vx run --dry=json`.
pub(crate) fn vx_graph(dry: &serde_json::Value) -> BTreeMap<String, Vec<String>> {
    dry["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let mut deps: Vec<String> = t["deps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_str().unwrap().to_string())
                .collect();
            deps.sort();
            (t["id"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

const OUTPUT_DIRS: [&str; 4] = [
    "packages/util/dist",
    "packages/util/types",
    "packages/ui/dist",
    "apps/web/.next",
];

/// The trees of `dirs`, each by its path.
fn trees(f: &Fixture, dirs: &[&str]) -> Vec<(String, Vec<Entry>)> {
    dirs.iter()
        .map(|dir| (dir.to_string(), tree(&f.path(dir))))
        .collect()
}

fn remove_all(f: &Fixture, dirs: &[&str]) {
    for dir in dirs {
        let _ = std::fs::remove_dir_all(f.path(dir));
    }
}

fn outputs(f: &Fixture) -> Vec<(String, Vec<Entry>)> {
    trees(f, &OUTPUT_DIRS)
}

fn remove_outputs(f: &Fixture) {
    remove_all(f, &OUTPUT_DIRS);
}

#[test]
fn a_converted_turborepo_runs_as_turbo_does() {
    let Some(turbo_bin) = npm_tool("turbo@2.11.13", "turbo") else {
        return;
    };
    let f = turborepo();
    let init = f.vx(&["init"]);
    assert_eq!(init.code, 0, "{init:?}");
    assert_contains(
        &init.stdout,
        "carried over from turbo.json: 7 task definitions\n",
    );
    npm_install(&f);
    f.commit();

    // The same graph.
    let turbo_dry = json_of(&turbo(
        &f,
        &turbo_bin,
        &["run", "build", "test", "--dry=json"],
    ));
    let vx_dry = f.vx(&["run", "build", "test", "--all", "--dry=json"]);
    assert_eq!(vx_dry.code, 0, "{vx_dry:?}");
    let expected = turbo_graph(&turbo_dry);
    assert_eq!(vx_graph(&json_of(&vx_dry.stdout)), expected);
    assert_eq!(expected.len(), 5, "{expected:?}");

    // The same output trees, built.
    turbo(&f, &turbo_bin, &["run", "build"]);
    let by_turbo = outputs(&f);
    remove_outputs(&f);
    let built = f.vx(&["run", "build", "--all"]);
    assert_eq!(built.code, 0, "{}{}", built.stdout, built.stderr);
    assert_eq!(outputs(&f), by_turbo);

    // And restored: both leave `.next/cache` out.
    remove_outputs(&f);
    turbo(&f, &turbo_bin, &["run", "build"]);
    let restored_by_turbo = outputs(&f);
    remove_outputs(&f);
    let restored = f.vx(&["run", "build", "--all"]);
    assert_eq!(restored.code, 0, "{}{}", restored.stdout, restored.stderr);
    assert_contains(&restored.stdout, "3 tasks · 3 cached (100%)");
    assert_eq!(outputs(&f), restored_by_turbo);

    // One edit: the same tasks miss.
    f.write("packages/ui/src/b.txt", "ui source, edited\n");
    let turbo_dry = json_of(&turbo(&f, &turbo_bin, &["run", "build", "--dry=json"]));
    let turbo_misses: Vec<String> = turbo_dry["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["cache"]["status"] == "MISS" && t["command"] != "<NONEXISTENT>")
        .map(|t| t["taskId"].as_str().unwrap().to_string())
        .collect();
    let vx_misses = crate::dry_misses(&f, &["run", "build", "--all"]);
    assert_eq!(vx_misses, turbo_misses);
    assert_eq!(vx_misses, ["ui#build", "web#build"]);
}

#[test]
fn turbo_json_becomes_templates_and_tables_and_what_is_left_is_listed() {
    let f = turborepo();
    let out = f.vx(&["migrate", "turbo", "--dry"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!f.path("vx.toml").exists(), "--dry writes nothing");
    let files = out.stdout;
    assert_contains(
        &files,
        "[workspace.tasks.build]
depends-on = [\"^build\"]
env = { pass-through = [\"NODE_ENV\", \"API_URL\", \"NEXT_PUBLIC_*\"] }
cache = { workspace-inputs = [\"tsconfig.base.json\"], outputs = [\"dist/**\"], env = [\"NODE_ENV\", \"API_URL\", \"NEXT_PUBLIC_*\"] }
",
    );
    assert_contains(
        &files,
        "[workspace.tasks.dev]\nenv = { pass-through = [\"NODE_ENV\"] }\npersistent = true  # TODO: add ready-when\n",
    );
    // `web#build` replaces the generic definition; `util`'s own turbo.json extends it.
    assert_contains(
        &files,
        "==> apps/web/vx.toml <==
# Written by `vx init` from the scripts of apps/web/package.json: what differs from the
# templates in the root vx.toml.

[tasks.build]
extends = false
command = ",
    );
    assert_contains(
        &files,
        r#"cache = { inputs = ["**", "!.next/**"], workspace-inputs = ["tsconfig.base.json"], outputs = [".next/**", "!.next/cache/**"], env = ["NODE_ENV"] }"#,
    );
    assert_contains(
        &files,
        r#"outputs = ["dist/**", "types/**"], env = ["NODE_ENV", "API_URL", "NEXT_PUBLIC_*"] }"#,
    );
    // The `prebuild` hook npm runs is folded into `ui`'s command.
    assert_contains(
        &files,
        "[tasks.build]\ncommand = \"mkdir -p dist && echo pre > dist/pre.txt && cat src/b.txt ../util/dist/util.js > dist/ui.js\"\n",
    );
    assert_contains(
        &files,
        "[tasks.format]\ncommand = \"echo formatted > formatted.txt\"\nenv = { pass-through = [\"NODE_ENV\"] }\n\n",
    );
    let report = out.stderr;
    // `"ui": "stream"` is vx's default display: nothing to say.
    assert_contains(&report, "not carried over (2):\n");
    assert!(!report.contains("  ui (turbo.json"), "{report}");
    assert_contains(
        &report,
        "  tasks.build.env !SECRET_* (turbo.json:11:43): vx has no negated variable patterns\n",
    );
    assert_contains(&report, "  tasks.test.outputLogs (turbo.json:13:39): ");
    assert_contains(&files, "# TODO: turbo.json gives this task no outputs: Turborepo caches only its logs; check that it writes no files\n");
    assert_contains(
        &report,
        "  check what was carried over (2)\n    vx.toml: lint (template), test (template)\n",
    );

    // Written, it loads and plans as turbo.json says.
    let written = f.vx(&["migrate", "turbo"]);
    assert_eq!(written.code, 0, "{written:?}");
    let shown = f.vx(&["show", "util#build"]);
    assert_contains(
        &shown.stdout,
        "depends-on = [\"^build\"]  # packages/util/vx.toml:",
    );
    let again = f.vx(&["migrate", "turbo"]);
    assert_contains(
        &again.stdout,
        "kept vx.toml (it exists; `--force` replaces it)\n",
    );
    let forced = f.vx(&["migrate", "turbo", "--force"]);
    assert_contains(&forced.stdout, "wrote vx.toml\n");
}

#[test]
fn a_broken_turbo_json_is_reported_at_its_location_and_nothing_is_written() {
    let f = turborepo();
    f.write(
        "turbo.json",
        "{\n  \"tasks\": {\n    \"build\" {}\n  }\n}\n",
    );
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.starts_with("error: turbo.json:3:13: "),
        "{}",
        out.stderr
    );
    assert!(!f.path("vx.toml").exists());

    f.write(
        "turbo.json",
        "{\"tasks\": {\"build\": {\"outputs\": \"dist/**\", \"cache\": \"no\"}}}",
    );
    let out = f.vx(&["migrate", "turbo"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: turbo.json:1:33: tasks.build.outputs: expected an array of strings, found a string\n\
         error: turbo.json:1:53: tasks.build.cache: expected true or false, found a string\n"
    );
}

#[test]
fn migrate_needs_the_tools_file_and_a_known_tool() {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "p", "scripts": {"build": "tsc"}}"#,
    );
    let out = f.vx(&["migrate", "turbo"]);
    assert_eq!(out.code, 2);
    assert_contains(
        &out.stderr,
        "error: vx migrate turbo needs a turbo.json at the workspace root",
    );
    let out = f.vx(&["migrate", "turob"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: unknown tool `turob` for vx migrate; it takes `turbo` or `nx`\n  hint: did you mean `turbo`?\n"
    );
    assert!(!f.path("vx.toml").exists());
}

const NX_JSON: &str = r#"{
  "$schema": "./node_modules/nx/schemas/nx-schema.json",
  "defaultBase": "main",
  "namedInputs": {
    "sharedGlobals": ["{workspaceRoot}/tsconfig.base.json"],
    "default": ["{projectRoot}/**/*", "sharedGlobals"],
    "production": ["default", "!{projectRoot}/**/?(*.)+(spec|test).[jt]s?(x)?(.snap)"]
  },
  "targetDefaults": {
    "build": {
      "dependsOn": ["^build"],
      "inputs": ["production", "^production"],
      "outputs": ["{projectRoot}/dist"],
      "cache": true
    },
    "test": { "dependsOn": ["build"], "inputs": ["default", "^production", {"env": "CI"}], "cache": true },
    "check": { "cache": true, "outputs": [] },
    "compile": { "inputs": ["default", "^production"], "cache": true, "outputs": [] }
  },
  "plugins": []
}
"#;

/// A package-based Nx repository on npm workspaces: `util` ← `ui`, a project whose target
/// is a `project.json` command run from the workspace root, a `package.json` `nx` field that
/// adds an output, and examples the root build leaves out.
fn nx_repo() -> Fixture {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "workspaces": ["packages/*", "examples/*"],
            "scripts": {"build": "nx run-many -t build --exclude=examples/*", "check": "echo check"},
            "nx": {"includedScripts": ["check"]}}"#,
    );
    f.write("nx.json", NX_JSON);
    f.write("tsconfig.base.json", "{}\n");
    f.write(".gitignore", "node_modules\ndist\n.nx\n.vx\n");
    f.write(
        "packages/util/package.json",
        r#"{"name": "util", "version": "1.0.0", "scripts": {
            "build": "mkdir -p dist && cp src/a.txt dist/ && chmod 755 dist/a.txt",
            "test": "test -f dist/a.txt", "compile": "test -f src/a.txt"}}"#,
    );
    f.write("packages/util/src/a.txt", "util\n");
    f.write("packages/util/src/a.spec.ts", "spec\n");
    f.write(
        "packages/ui/package.json",
        r#"{"name": "ui", "version": "1.0.0", "dependencies": {"util": "*"}, "scripts": {
            "build": "mkdir -p dist types && cat src/b.txt ../util/dist/a.txt > dist/b.txt && echo t > types/b.d.ts",
            "test": "test -f dist/b.txt", "compile": "grep -q util ../util/src/a.txt"},
            "nx": {"targets": {"build": {"outputs": ["{projectRoot}/dist", "{projectRoot}/types"]}}}}"#,
    );
    f.write("packages/ui/src/b.txt", "ui\n");
    f.write(
        "packages/gen/package.json",
        r#"{"name": "gen", "version": "1.0.0"}"#,
    );
    f.write(
        "packages/gen/project.json",
        r#"{"name": "gen", "targets": {
            "build": {"command": "mkdir -p packages/gen/dist && echo gen > packages/gen/dist/g.txt",
                      "outputs": ["{projectRoot}/dist"]},
            "serve": {"executor": "@nx/vite:dev-server", "continuous": true},
            "lint": {"executor": "nx:run-commands", "options": {"parallel": true,
                     "commands": ["echo a > packages/gen/a.out", "echo b > packages/gen/b.out"]}}}}"#,
    );
    f.write(
        "examples/demo/package.json",
        r#"{"name": "demo", "version": "1.0.0", "dependencies": {"ui": "*"},
            "scripts": {"build": "mkdir -p dist && cp ../../packages/ui/dist/b.txt dist/"}}"#,
    );
    f
}

/// Runs the real `nx` in the fixture (linked into its `node_modules`), without the daemon,
/// the cloud or the terminal UI; it must succeed.
fn nx(f: &Fixture, args: &[&str]) -> String {
    let (success, text) = nx_status(f, args);
    assert!(success, "nx {args:?}: {text}");
    text
}

/// The task graph `nx <args> --graph=<file>` prints, as task id (`project#task`) → its
/// dependencies, sorted.
pub(crate) fn nx_task_graph(f: &Fixture, args: &[&str]) -> BTreeMap<String, Vec<String>> {
    let file = f.path("nx-graph.json");
    let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    args.push(format!("--graph={}", file.display()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    nx(f, &args);
    let graph: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    std::fs::remove_file(&file).unwrap();
    let mut tasks = BTreeMap::new();
    for (id, deps) in graph["tasks"]["dependencies"].as_object().unwrap() {
        let mut deps: Vec<String> = deps
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap().replace(':', "#"))
            .collect();
        deps.sort();
        tasks.insert(id.replace(':', "#"), deps);
    }
    tasks
}

/// [`nx`], returning whether it succeeded and what it printed.
fn nx_status(f: &Fixture, args: &[&str]) -> (bool, String) {
    let out = Command::new("node")
        .arg(f.path("node_modules/nx/bin/nx.js"))
        .args(args)
        .current_dir(f.root())
        .env("NX_DAEMON", "false")
        .env("NX_NO_CLOUD", "true")
        .env("NX_TUI", "false")
        .env("NX_SKIP_NX_CACHE", "false")
        .env_remove("CI")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

const NX_OUTPUTS: [&str; 4] = [
    "packages/util/dist",
    "packages/ui/dist",
    "packages/ui/types",
    "packages/gen/dist",
];

fn nx_outputs(f: &Fixture) -> Vec<(String, Vec<Entry>)> {
    trees(f, &NX_OUTPUTS)
}

fn remove_nx_outputs(f: &Fixture) {
    remove_all(f, &NX_OUTPUTS);
}

/// The tasks `nx run-many` ran from its cache, and those it ran, from its output.
fn nx_hits(output: &str) -> (Vec<String>, Vec<String>) {
    let mut hits = Vec::new();
    let mut runs = Vec::new();
    for line in output.lines() {
        let Some(rest) = line.trim_start().strip_prefix("> nx run ") else {
            continue;
        };
        let id = rest.split_whitespace().next().unwrap().replace(':', "#");
        if rest.contains("cache") {
            hits.push(id);
        } else {
            runs.push(id);
        }
    }
    hits.sort();
    runs.sort();
    (hits, runs)
}

#[test]
fn a_converted_nx_repository_runs_as_nx_does() {
    let Some(_) = npm_tool("nx@21.6.11", "nx") else {
        return;
    };
    let f = nx_repo();
    let init = f.vx(&["migrate", "nx"]);
    assert_eq!(init.code, 0, "{init:?}");
    assert_contains(&init.stdout, "carried over from nx.json: ");
    npm_install(&f);
    let tools = vx_test_support::tools::npm_tools_dir().join("node_modules/nx");
    std::os::unix::fs::symlink(tools.canonicalize().unwrap(), f.path("node_modules/nx")).unwrap();
    // As npm links a package's bin.
    std::fs::create_dir_all(f.path("node_modules/.bin")).unwrap();
    std::os::unix::fs::symlink("../nx/bin/nx.js", f.path("node_modules/.bin/nx")).unwrap();
    f.commit();

    // The same graph, examples left out as the root build leaves them out.
    let expected = nx_task_graph(
        &f,
        &["run-many", "-t", "build", "test", "--exclude=examples/*"],
    );
    let vx_dry = f.vx(&["run", "build", "test", "--all", "--dry=json"]);
    assert_eq!(vx_dry.code, 0, "{vx_dry:?}");
    assert_eq!(vx_graph(&json_of(&vx_dry.stdout)), expected);
    assert_eq!(expected.len(), 5, "{expected:?}");

    // The same output trees, built and restored.
    let first = nx(&f, &["run-many", "-t", "build", "--exclude=examples/*"]);
    assert_eq!(nx_hits(&first).0, Vec::<String>::new());
    let by_nx = nx_outputs(&f);
    remove_nx_outputs(&f);
    let built = f.vx(&["run", "build", "--all"]);
    assert_eq!(built.code, 0, "{}{}", built.stdout, built.stderr);
    assert_eq!(nx_outputs(&f), by_nx);
    remove_nx_outputs(&f);
    let restored_by_nx = nx(&f, &["run-many", "-t", "build", "--exclude=examples/*"]);
    assert_eq!(nx_hits(&restored_by_nx).0.len(), 3, "{restored_by_nx}");
    let by_nx = nx_outputs(&f);
    remove_nx_outputs(&f);
    let restored = f.vx(&["run", "build", "--all"]);
    assert_contains(&restored.stdout, "3 tasks · 3 cached (100%)");
    assert_eq!(nx_outputs(&f), by_nx);

    // A source edit re-runs what Nx re-runs.
    let misses = |f: &Fixture| crate::dry_misses(f, &["run", "build", "--all"]);
    f.write("packages/util/src/a.txt", "util, edited\n");
    let by_nx = nx(&f, &["run-many", "-t", "build", "--exclude=examples/*"]);
    assert_eq!(misses(&f), nx_hits(&by_nx).1);
    assert_eq!(misses(&f), ["ui#build", "util#build"]);
    assert_eq!(f.vx(&["run", "build", "--all"]).code, 0);
    // A spec file is no production input, so no build of vx misses. (Nx re-runs `ui:build`
    // here, the dependant of the edited project; docs/migrating.md says so.)
    f.write("packages/util/src/a.spec.ts", "spec, edited\n");
    assert_eq!(misses(&f), Vec::<String>::new());

    // `compile` has `^production` and no `dependsOn`, and reads util's source. An
    // edit there that breaks ui makes Nx run ui's compile again and fail; vx too, never a
    // hit from before the edit.
    nx(&f, &["run-many", "-t", "compile"]);
    let compiled = f.vx(&["run", "compile", "--all"]);
    assert_eq!(compiled.code, 0, "{}{}", compiled.stdout, compiled.stderr);
    assert_contains(
        &f.vx(&["run", "compile", "--all"]).stdout,
        "2 cached (100%)",
    );
    f.write("packages/util/src/a.txt", "renamed\n");
    let by_nx = nx_status(&f, &["run-many", "-t", "compile"]);
    assert!(!by_nx.0, "Nx fails: {}", by_nx.1);
    let by_vx = f.vx(&["run", "compile", "--all"]);
    assert_eq!(by_vx.code, 1, "{}{}", by_vx.stdout, by_vx.stderr);
    assert_contains(&by_vx.stdout, "failed miss ui#compile");

    // A target of an executor vx cannot run itself runs through Nx, that one target alone.
    let lint = f.vx(&["run", "gen#lint"]);
    assert_eq!(lint.code, 0, "{}{}", lint.stdout, lint.stderr);
    assert_eq!(f.read("packages/gen/a.out"), "a\n");
    assert_eq!(f.read("packages/gen/b.out"), "b\n");
}

#[test]
fn nx_json_becomes_input_sets_templates_and_tables_and_what_is_left_is_listed() {
    let f = nx_repo();
    let out = f.vx(&["migrate", "nx", "--dry"]);
    assert_eq!(out.code, 0, "{out:?}");
    let files = out.stdout;
    assert_contains(
        &files,
        "[workspace]\naffected-base = \"main\"\n# `--all` leaves out what the root `build` script leaves out:\nexclude-from-all = [\"examples/*\"]\n",
    );
    assert_contains(
        &files,
        "[workspace.input-sets.default]\ninput-sets = [\"sharedGlobals\"]\ninputs = [\"**/*\"]\n",
    );
    assert_contains(&files, "[workspace.input-sets.production]\ninput-sets = [\"default\"]\ninputs = [\"!**/{spec,test}.{j,t}s\", ");
    assert_contains(
        &files,
        "[workspace.tasks.build]\ndepends-on = [\"^build\"]\ncache = { input-sets = [\"production\", \"^production\"], outputs = [\"dist\"] }\n",
    );
    assert_contains(
        &files,
        "[workspace.tasks.test]\ndepends-on = [\"build\"]\nenv = { pass-through = [\"CI\"] }\ncache = { input-sets = [\"default\", \"^production\"], outputs = [], env = [\"CI\"] }\n",
    );
    // Nx runs a `command` from the workspace root; the package.json `nx` field adds an
    // output, and the test inputs take it back (Nx would hash it).
    assert_contains(
        &files,
        "[tasks.build]\ncommand = \"cd ../.. && mkdir -p packages/gen/dist && echo gen > packages/gen/dist/g.txt\"\ncache = { outputs = [\"dist\"] }\n",
    );
    assert_contains(
        &files,
        "[tasks.build]\ncache = { outputs = [\"dist\", \"types\"] }\n\n[tasks.compile]\ncache = { inputs = [\"...\", \"!types\"] }\n\n[tasks.test]\ncache = { inputs = [\"...\", \"!types\"] }\n",
    );
    // The root's `includedScripts` are Nx targets: `targetDefaults` apply to them, so the
    // root task keeps the template (no `extends = false`).
    assert_contains(
        &files,
        "[workspace.tasks.check]\ncache = { input-sets = [\"^default\"], outputs = [] }\n",
    );
    assert_contains(&files, "\n[tasks.check]\ncommand = \"echo check\"\n");
    let report = out.stderr;
    assert_contains(&report, "carried over from nx.json: ");
    // `^production` is carried over as the same input set in the dependency projects.
    assert!(!report.contains("^production"), "{report}");
    // An executor runs through Nx, the one target alone.
    assert_contains(
        &files,
        "[tasks.serve]\ncommand = \"NX_DAEMON=false nx run gen:serve --excludeTaskDependencies --skipNxCache\"\npersistent = true  # TODO: add ready-when\n",
    );

    let broken = nx_repo();
    broken.write(
        "nx.json",
        "{\n  \"targetDefaults\": {\n    \"build\" {}\n}\n",
    );
    let out = broken.vx(&["migrate", "nx"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.starts_with("error: nx.json:3:13: "),
        "{}",
        out.stderr
    );
    let none = empty();
    none.write("package.json", r#"{"name": "p"}"#);
    let out = none.vx(&["migrate", "nx"]);
    assert_contains(
        &out.stderr,
        "error: vx migrate nx needs an nx.json at the workspace root",
    );
}

/// Real repositories' configuration, kept by `scripts/migrate-fixture` under
/// `tests/fixtures/migrate/<name>/` (the files `vx init` reads, the tree listing, the source
/// commit): `vx init` on them writes the recorded files (`expected/`; `VX_BLESS=1` records
/// them again), and the task graph of `vx run build --all` is the one the repository's own
/// runner printed (`graph.json`, recorded from `turbo --dry=json` or `nx --graph`).
#[test]
fn real_repositories_convert_as_recorded() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/migrate");
    let mut names: Vec<_> = std::fs::read_dir(&fixtures)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    assert!(!names.is_empty());
    for fixture in names {
        let f = empty();
        copy_tree(&fixture.join("repo"), f.root());
        f.commit();
        let out = f.vx(&["init"]);
        assert_eq!(out.code, 0, "{}: {out:?}", fixture.display());

        let expected = fixture.join("expected");
        let written = written_configs(f.root());
        if std::env::var_os("VX_BLESS").is_some() {
            let _ = std::fs::remove_dir_all(&expected);
            for (rel, text) in &written {
                let path = expected.join(rel);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            }
        }
        let recorded = written_configs(&expected);
        assert_eq!(
            written.keys().collect::<Vec<_>>(),
            recorded.keys().collect::<Vec<_>>(),
            "{}: the files vx init writes",
            fixture.display()
        );
        for (rel, text) in &written {
            assert_eq!(text, &recorded[rel], "{}: {rel}", fixture.display());
        }

        let graph: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(fixture.join("graph.json")).unwrap())
                .unwrap();
        let expected: BTreeMap<String, Vec<String>> =
            serde_json::from_value(graph["tasks"].clone()).unwrap();
        let dry = f.vx(&["run", "build", "--all", "--dry=json"]);
        assert_eq!(dry.code, 0, "{}: {dry:?}", fixture.display());
        assert_eq!(
            vx_graph(&json_of(&dry.stdout)),
            expected,
            "{}: the graph of {}",
            fixture.display(),
            graph["command"]
        );
    }
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Every `vx.toml` under `root`, by root-relative path.
fn written_configs(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() && !path.ends_with(".git") {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "vx.toml") {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    out
}

/// Found on trpc/trpc: a `dependsOn` entry naming a task some packages lack (`prebuild`) is
/// nothing under Turborepo; and one package's outputs inside a nested package.
#[test]
fn edges_to_tasks_a_package_lacks_and_outputs_of_nested_packages() {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "packageManager": "pnpm@8.15.0",
            "workspaces": ["packages/*", "apps/outer", "apps/outer/inner"]}"#,
    );
    f.write(
        "turbo.json",
        r#"{"tasks": {"prebuild": {"cache": false},
                     "build": {"dependsOn": ["^build", "prebuild"], "outputs": ["dist/**"]},
                     "outer#build": {"outputs": ["inner/dist/**", "out/**"]}}}"#,
    );
    let build = "mkdir -p dist && echo x > dist/x";
    f.write(
        "packages/a/package.json",
        &format!(r#"{{"name": "a", "scripts": {{"prebuild": "echo pre", "build": "{build}"}}}}"#),
    );
    f.write(
        "packages/b/package.json",
        &format!(r#"{{"name": "b", "scripts": {{"build": "{build}"}}}}"#),
    );
    f.write(
        "apps/outer/package.json",
        r#"{"name": "outer", "scripts": {"build": "mkdir -p out && echo o > out/o"}}"#,
    );
    f.write(
        "apps/outer/inner/package.json",
        &format!(r#"{{"name": "inner", "scripts": {{"build": "{build}"}}}}"#),
    );
    f.commit();
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(
        &out.stdout,
        "  apps/outer#build: outputs inner/dist/** (apps/outer/vx.toml:1:1): it lies in the project at apps/outer/inner, whose tasks own it in vx\n",
    );
    assert_contains(
        &f.read("vx.toml"),
        "[workspace.tasks.build]\ndepends-on = [\"^build\"]\n",
    );
    assert_contains(
        &f.read("packages/a/vx.toml"),
        "[tasks.build]\ndepends-on = [\"^build\", \"prebuild\"]\n",
    );
    let dry = f.vx(&["run", "build", "--all", "--dry=json"]);
    assert_eq!(dry.code, 0, "{dry:?}");
    let graph = vx_graph(&json_of(&dry.stdout));
    assert_eq!(graph["a#build"], ["a#prebuild"]);
    assert_eq!(graph["b#build"], Vec::<String>::new());
    assert_eq!(f.vx(&["run", "build", "--all"]).code, 0);
}
