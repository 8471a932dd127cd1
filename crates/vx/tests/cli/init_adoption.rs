//! `vx init` on the shapes real repositories have that it used to
//! crash on or under-convert — Turborepo globs that leave the package (`../../x`), Nx
//! executors, tables vx would refuse, a broken file of the user's — and that it checks
//! everything before writing anything, then writes all of it or nothing.

use std::path::Path;

use vx_test_support::fixture::Fixture;

use crate::{assert_contains, empty};

/// The `vx.toml` files under the root, relative, sorted.
fn configs(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && !path.ends_with(".git") {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "vx.toml") {
                let rel = path.strip_prefix(root).unwrap();
                found.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    found.sort();
    found
}

/// Packages at three depths, whose `build` reads a config file above the package
/// (`../../tsup.config.base.ts`, as Turborepo 1 repositories write it).
fn turbo_with_parent_globs() -> Fixture {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true,
            "workspaces": ["packages/*", "tools/deep/*", "solo"]}"#,
    );
    f.write(
        "turbo.json",
        r#"{"pipeline": {"build": {
            "inputs": ["src/**", "../../tsup.config.base.ts"],
            "outputs": ["dist/**"]}}}"#,
    );
    f.write(".gitignore", "dist\n.vx\n");
    f.write("tsup.config.base.ts", "root config\n");
    f.write("tools/tsup.config.base.ts", "tools config\n");
    let build = "mkdir -p dist && cat src/x.txt > dist/x.txt";
    for (dir, name) in [
        ("packages/a", "a"),
        ("packages/b", "b"),
        ("tools/deep/c", "c"),
        ("solo", "solo"),
    ] {
        f.write(
            &format!("{dir}/package.json"),
            &format!(r#"{{"name": "{name}", "scripts": {{"build": "{build}"}}}}"#),
        );
        f.write(&format!("{dir}/src/x.txt"), &format!("{name}\n"));
    }
    f.commit();
    f
}

#[test]
fn turbo_globs_above_the_package_resolve_per_package_and_none_is_narrower() {
    let f = turbo_with_parent_globs();
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    // Most packages sit two levels down: the template holds their resolution.
    let root = f.read("vx.toml");
    assert_contains(
        &root,
        "cache = { inputs = [\"src/**\"], workspace-inputs = [\"tsup.config.base.ts\"], outputs = [\"dist/**\"] }",
    );
    // A package three levels down gets the whole definition as it resolves there.
    assert_contains(
        &f.read("tools/deep/c/vx.toml"),
        "[tasks.build]\nextends = false\ncommand = \"mkdir -p dist && cat src/x.txt > dist/x.txt\"\n\
         cache = { inputs = [\"src/**\"], workspace-inputs = [\"tools/tsup.config.base.ts\"], outputs = [\"dist/**\"] }\n",
    );
    // From one level down the glob leaves the workspace: left uncached, and said.
    let solo = f.read("solo/vx.toml");
    assert_contains(
        &solo,
        "# TODO: left uncached: ../../tsup.config.base.ts leaves the workspace from `solo`",
    );
    assert!(!solo.contains("cache ="), "{solo}");
    assert_contains(
        &out.stdout,
        "tasks left uncached (each TODO says why) (1)\n    solo/vx.toml: build\n",
    );

    let first = f.vx(&["run", "build", "--all"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let again = f.vx(&["run", "build", "--all"]);
    assert_contains(&again.stdout, "3 cached");
    // The root config moves the packages that read it, and only those.
    f.write("tsup.config.base.ts", "root config, edited\n");
    let mut misses = crate::dry_misses(&f, &["run", "build", "--all"]);
    misses.sort();
    assert_eq!(misses, ["a#build", "b#build"]);
}

/// An Nx repository with a `dependsOn` on a target its project does not have: the table vx
/// would refuse is left out with vx's own message, and the rest is written and loads.
#[test]
fn a_table_vx_would_refuse_is_left_out_with_its_reason_and_the_rest_is_written() {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "workspaces": ["packages/*"]}"#,
    );
    f.write(
        "nx.json",
        r#"{"targetDefaults": {"build": {"cache": true, "outputs": ["{projectRoot}/dist"]}}}"#,
    );
    f.write(
        "packages/lib/package.json",
        r#"{"name": "lib", "scripts": {"build": "mkdir -p dist && echo lib > dist/l.txt"}}"#,
    );
    f.write(
        "packages/web/package.json",
        r#"{"name": "web", "dependencies": {"lib": "*"}, "scripts": {"build": "mkdir -p dist && echo web > dist/w.txt"},
            "nx": {"targets": {"build": {"dependsOn": ["lib:gen"]}}}}"#,
    );
    f.commit();
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_contains(
        &out.stdout,
        "packages/web/vx.toml: [tasks.build] (packages/web/vx.toml:",
    );
    assert_contains(
        &out.stdout,
        "vx refuses the table vx init wrote: task `web#build` depends on `lib#gen`",
    );
    let web = f.read("packages/web/vx.toml");
    assert_contains(
        &web,
        "# Left out: [tasks.build], which vx refuses as vx init wrote it:\n",
    );
    assert!(!web.contains("\n[tasks.build]"), "{web}");
    let run = f.vx(&["run", "build", "--all"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(f.read("packages/web/dist/w.txt"), "web\n");
}

/// A `vx.toml` of the user's that vx refuses, kept by `vx init`: nothing is written (not
/// even the files that would load), and the problem is the user's, at its location.
#[test]
fn a_broken_file_of_the_users_means_nothing_is_written() {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "workspaces": ["packages/*"]}"#,
    );
    for name in ["a", "b"] {
        f.write(
            &format!("packages/{name}/package.json"),
            &format!(r#"{{"name": "{name}", "scripts": {{"build": "echo {name}"}}}}"#),
        );
    }
    f.write("packages/b/vx.toml", "[tasks.build]\ncomand = \"echo b\"\n");
    f.commit();
    let before = configs(f.root());
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_contains(
        &out.stderr,
        "error: packages/b/vx.toml:2:1: unknown key `comand`",
    );
    assert_eq!(configs(f.root()), before, "nothing written");
    // No temporary file is left either.
    let leftovers: Vec<String> = std::fs::read_dir(f.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("vx-init"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A Turborepo task no package has a script for, whose `dependsOn` lists
/// others (`check` → build, test, lint), becomes a group in each package that runs what
/// `turbo run check` runs; `"ui": "tui"` becomes `ui = "tui"`.
#[test]
fn turbo_aggregate_tasks_become_groups_that_run_what_turbo_runs() {
    let Some(turbo_bin) = vx_test_support::tools::npm_tool("turbo@2.11.13", "turbo") else {
        return;
    };
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "packageManager": "npm@10.8.2",
            "workspaces": ["packages/*"]}"#,
    );
    f.write(
        "turbo.json",
        r#"{"ui": "tui", "tasks": {
            "build": {"dependsOn": ["^build"], "outputs": ["dist/**"]},
            "test": {"dependsOn": ["build"], "outputs": []},
            "lint": {"outputs": []},
            "typecheck": {"dependsOn": ["^build"], "outputs": []},
            "check": {"dependsOn": ["lint", "test", "typecheck"]},
            "ci": {"dependsOn": ["check", "//#format"]},
            "//#format": {"cache": false}}}"#,
    );
    f.write(".gitignore", "node_modules\ndist\n.turbo\n.vx\n");
    let scripts = |s: &str| format!("\"scripts\": {{{s}}}");
    f.write(
        "package.json",
        &format!(
            r#"{{"name": "root", "private": true, "packageManager": "npm@10.8.2",
                "workspaces": ["packages/*"], {}}}"#,
            scripts(r#""format": "echo format""#)
        ),
    );
    f.write(
        "packages/a/package.json",
        &format!(
            r#"{{"name": "a", "version": "1.0.0", {}}}"#,
            scripts(r#""build": "mkdir -p dist && echo a > dist/a", "test": "test -f dist/a", "lint": "echo lint""#)
        ),
    );
    // b has no lint, no typecheck; its test needs a's build through ^build.
    f.write(
        "packages/b/package.json",
        &format!(
            r#"{{"name": "b", "version": "1.0.0", "dependencies": {{"a": "*"}}, {}}}"#,
            scripts(
                r#""build": "mkdir -p dist && cp ../a/dist/a dist/b", "test": "test -f dist/b""#
            )
        ),
    );
    // c has only typecheck.
    f.write(
        "packages/c/package.json",
        &format!(
            r#"{{"name": "c", "version": "1.0.0", "dependencies": {{"b": "*"}}, {}}}"#,
            scripts(r#""typecheck": "test -f ../b/dist/b""#)
        ),
    );
    let init = f.vx(&["init"]);
    assert_eq!(init.code, 0, "{}{}", init.stdout, init.stderr);
    assert_contains(&f.read("vx.toml"), "[workspace]\nui = \"tui\"\n");
    assert_contains(
        &f.read("packages/b/vx.toml"),
        // b has no lint; its missing typecheck still runs what it depends on, as in turbo.
        "[tasks.check]\ndepends-on = [\"test\", \"^build\"]\n",
    );
    crate::migrate::npm_install(&f);
    f.commit();

    for task in ["check", "ci"] {
        let by_turbo = crate::migrate::json_of(&crate::migrate::turbo(
            &f,
            &turbo_bin,
            &["run", task, "--dry=json"],
        ));
        let by_vx = f.vx(&["run", task, "--all", "--dry=json"]);
        assert_eq!(by_vx.code, 0, "{}{}", by_vx.stdout, by_vx.stderr);
        // The tasks that run, and their edges: turbo's no-op tasks and vx's groups left out
        // on both sides, the edges through them followed.
        let expected = runnable(&crate::migrate::turbo_graph(&by_turbo));
        let got = runnable(&crate::migrate::vx_graph(&crate::migrate::json_of(
            &by_vx.stdout,
        )));
        assert_eq!(got, expected, "{task}");
        assert!(expected.contains_key("b#build") && expected.contains_key("c#typecheck"));
    }
    let run = f.vx(&["run", "ci", "--all"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

/// The graph restricted to the tasks that run a command, each with the runnable tasks it
/// reaches through tasks that do not (turbo's `<NONEXISTENT>`, vx's groups).
fn runnable(
    graph: &std::collections::BTreeMap<String, Vec<String>>,
) -> std::collections::BTreeMap<String, Vec<String>> {
    let runs = |id: &str| {
        let task = id.rsplit('#').next().unwrap_or(id);
        !matches!(task, "check" | "ci")
    };
    let mut out = std::collections::BTreeMap::new();
    for (id, _) in graph.iter().filter(|(id, _)| runs(id)) {
        let mut reached = std::collections::BTreeSet::new();
        let mut stack: Vec<&String> = graph[id].iter().collect();
        while let Some(next) = stack.pop() {
            if runs(next) {
                reached.insert(next.clone());
            } else if let Some(deps) = graph.get(next) {
                stack.extend(deps);
            }
        }
        out.insert(id.clone(), reached.into_iter().collect::<Vec<_>>());
    }
    out
}

/// An "integrated" Nx repository whose targets a plugin infers (here a
/// local one, `tools/infer.js`, inferring `build` from `vite.config.js` as `@nx/vite` does)
/// and whose projects have only a `project.json`: with the repository's Nx installed, `vx
/// init` takes the projects, their targets and their edges from `nx graph`, and vx builds
/// what `nx run-many -t build` builds, in the same graph.
#[test]
fn nx_plugin_inferred_targets_and_project_json_projects_come_from_nx_graph() {
    let Some(_) = vx_test_support::tools::npm_tool("nx@21.6.11", "nx") else {
        return;
    };
    let f = empty();
    f.write("package.json", r#"{"name": "root", "private": true}"#);
    f.write(
        "nx.json",
        r#"{"plugins": ["./tools/infer.js"],
            "targetDefaults": {"build": {"dependsOn": ["^build"], "cache": true},
                               "test": {"cache": true}}}"#,
    );
    f.write(
        "tools/infer.js",
        r#"const { dirname } = require("node:path");
exports.createNodesV2 = ["**/vite.config.js", async (files) => files.map((file) => {
  const root = dirname(file);
  return [file, { projects: { [root]: { targets: { build: {
    command: "node ../../tools/build.js", options: { cwd: root },
    inputs: ["default", "^default"], outputs: ["{projectRoot}/dist"], cache: true } } } } }];
})];
"#,
    );
    f.write(
        "tools/build.js",
        r#"const fs = require("node:fs");
if (process.cwd().endsWith("web") && !fs.existsSync("../../libs/util/dist/out.txt")) {
  console.error("util is not built"); process.exit(1);
}
fs.mkdirSync("dist", { recursive: true });
fs.writeFileSync("dist/out.txt", fs.readdirSync("src").map((n) => fs.readFileSync("src/" + n, "utf8")).join(""));
"#,
    );
    f.write(
        "apps/web/project.json",
        r#"{"name": "web", "implicitDependencies": ["util"]}"#,
    );
    f.write("apps/web/vite.config.js", "");
    f.write("apps/web/src/a.txt", "web\n");
    f.write("libs/util/project.json", r#"{"name": "util"}"#);
    // A script Nx makes no target of (as of a project outside the package-manager
    // workspaces, from Nx 22 on) is no task either.
    f.write(
        "libs/util/package.json",
        r#"{"name": "util", "scripts": {"test": "exit 1"}, "nx": {"includedScripts": []}}"#,
    );
    f.write("libs/util/vite.config.js", "");
    f.write("libs/util/src/u.txt", "util\n");
    f.write(".gitignore", "node_modules\ndist\n.nx\n.vx\n");
    let tools = vx_test_support::tools::npm_tools_dir().join("node_modules/nx");
    std::fs::create_dir_all(f.path("node_modules")).unwrap();
    std::os::unix::fs::symlink(tools.canonicalize().unwrap(), f.path("node_modules/nx")).unwrap();
    f.commit();

    let init = f.vx(&["init"]);
    assert_eq!(init.code, 0, "{}{}", init.stdout, init.stderr);
    assert_contains(
        &init.stdout,
        "Nx 21.6.11 (the repository's own): 2 targets its plugins infer became tasks\n",
    );
    // Every task is cached: nothing to say about caching.
    assert!(!init.stdout.contains("\ncache: "), "{}", init.stdout);
    assert_contains(
        &init.stdout,
        "compared with Nx 21.6.11 (`nx run-many -t build --graph`): the same 2 tasks and 1 edge\n",
    );
    // The `test` template would still make util's script a task: util says it has none.
    assert_contains(
        &f.read("libs/util/vx.toml"),
        "[tasks.test]\n# Nx makes no target of this script here: no task, though the template would give one.\n\
         extends = false\n",
    );
    let tests = f.vx(&["run", "test", "--all", "--dry=json"]);
    assert_eq!(tests.code, 2, "{}{}", tests.stdout, tests.stderr);
    assert_contains(
        &tests.stderr,
        "error: no selected project declares task `test`\n",
    );
    assert_contains(
        &init.stdout,
        "  libs/util/package.json: scripts test (libs/util/package.json:1:1): the project is outside \
         the package-manager workspaces, and Nx's graph gives it no target of these names: not tasks\n",
    );
    assert_contains(
        &f.read("vx.toml"),
        "members = [\"apps/web\", \"libs/util\"]\n",
    );
    assert_contains(
        &f.read("apps/web/vx.toml"),
        "name = \"web\"\ndeps = [\"util\"]\n\n[tasks.build]\ncommand = \"node ../../tools/build.js\"\n",
    );

    // The graph Nx would run.
    let expected = crate::migrate::nx_task_graph(&f, &["run-many", "-t", "build"]);
    let dry = f.vx(&["run", "build", "--all", "--dry=json"]);
    assert_eq!(dry.code, 0, "{}{}", dry.stdout, dry.stderr);
    let got = crate::migrate::vx_graph(&crate::migrate::json_of(&dry.stdout));
    assert_eq!(got, expected);
    assert_eq!(got["web#build"], ["util#build"]);

    let run = f.vx(&["run", "build", "--all"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(f.read("apps/web/dist/out.txt"), "web\n");
    assert_contains(&f.vx(&["run", "build", "--all"]).stdout, "2 cached (100%)");
}

/// A run whose plan holds only groups would run nothing and exit 0: refused.
#[test]
fn a_plan_of_only_groups_is_no_green_run() {
    let f = empty();
    f.write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
    f.write(
        "packages/a/vx.toml",
        "[tasks.build]\ndepends-on = [\"^build\"]\n\n[tasks.lint]\ncommand = \"true\"\n",
    );
    f.commit();
    let out = f.vx(&["run", "build", "--all"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        "error: nothing to run: packages/a#build is a group whose depends-on reaches no task with a command\n  \
         hint: give the tasks it groups a `command`, or name tasks that have one\n"
    );
    let with_lint = f.vx(&["run", "build", "lint", "--all"]);
    assert_eq!(
        with_lint.code, 0,
        "{}{}",
        with_lint.stdout, with_lint.stderr
    );
}

/// Found on supabase-js and discord.js: two tasks of a package whose outputs overlap (`docs`
/// and `docs:json` both writing `docs/`), which Turborepo and Nx allow and vx refuses (one
/// cached task owns a directory): the second is written uncached, with a TODO, instead of
/// a `vx init` that writes nothing.
#[test]
fn overlapping_outputs_leave_one_task_uncached_instead_of_failing() {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "workspaces": ["packages/*"]}"#,
    );
    f.write(
        "turbo.json",
        r#"{"tasks": {"docs": {"outputs": ["docs/**"]}, "docs:json": {"outputs": ["docs/**"]},
                      "build": {"outputs": ["dist/**"]}}}"#,
    );
    f.write(
        "packages/a/package.json",
        r#"{"name": "a", "scripts": {"docs": "mkdir -p docs && echo html > docs/i.html",
            "docs:json": "mkdir -p docs && echo {} > docs/i.json", "build": "mkdir -p dist && echo a > dist/a"}}"#,
    );
    f.write(".gitignore", "docs\ndist\n.vx\n");
    f.commit();
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_contains(
        &out.stdout,
        "a#docs:json: cache (packages/a/vx.toml:1:1): its outputs overlap those of `a#docs` under `docs/`: left uncached\n",
    );
    let table = f.read("packages/a/vx.toml");
    assert_contains(
        &table,
        "[tasks.\"docs:json\"]\nextends = false\ncommand = \"mkdir -p docs && echo {} > docs/i.json\"\n# TODO: left uncached: its outputs overlap those of `a#docs`",
    );
    let run = f.vx(&["run", "build", "docs", "docs:json", "--all"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let again = f.vx(&["run", "build", "docs", "--all"]);
    assert_contains(&again.stdout, "2 cached (100%)");
}

/// Found on code-pushup/cli: an integrated Nx repository with its dependencies not
/// installed. Its projects (a `project.json` each, no package-manager workspace) are found
/// all the same, and a target whose executor only `targetDefaults` gives runs through Nx;
/// the report says Nx could not be asked for what its plugins infer.
#[test]
fn without_nx_installed_project_json_projects_are_found_and_the_report_says_so() {
    let f = empty();
    f.write("package.json", r#"{"name": "root", "private": true}"#);
    f.write(
        "nx.json",
        r#"{"plugins": ["@nx/vite/plugin"],
            "targetDefaults": {"build": {"executor": "@nx/js:tsc", "dependsOn": ["^build"], "cache": true,
                                         "outputs": ["{workspaceRoot}/dist/{projectRoot}"]}}}"#,
    );
    f.write(
        "packages/core/project.json",
        r#"{"name": "core", "targets": {"build": {}}}"#,
    );
    f.write(
        "packages/cli/project.json",
        r#"{"name": "cli", "implicitDependencies": ["core"], "targets": {"build": {}}}"#,
    );
    f.write("node_modules/x/project.json", "{}");
    f.write(".gitignore", "node_modules\n");
    // The files the plugins read: vite's config gives `cli` a `bundle` (its option) and the
    // servers; jest's gives `core` a test, but `exclude` leaves `cli`'s out; eslint's a lint.
    f.write(
        "nx.json",
        r#"{"plugins": [{"plugin": "@nx/vite/plugin", "options": {"buildTargetName": "bundle"}},
                        {"plugin": "@nx/jest/plugin", "exclude": ["packages/cli/**"]},
                        "@nx/eslint/plugin", "@acme/unknown"],
            "targetDefaults": {"build": {"executor": "@nx/js:tsc", "dependsOn": ["^build"], "cache": true,
                                         "outputs": ["{workspaceRoot}/dist/{projectRoot}"]}}}"#,
    );
    f.write("packages/cli/vite.config.ts", "export default {}\n");
    f.write("packages/core/vite.config.mts", "export default {}\n");
    f.write("packages/cli/jest.config.ts", "export default {}\n");
    f.write("packages/core/jest.config.js", "module.exports = {}\n");
    f.write("packages/core/eslint.config.mjs", "export default []\n");
    f.commit();
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_contains(
        &out.stdout,
        "targets Nx plugins infer: not asked, Nx is not installed (no node_modules/nx); 10 inferred \
         from the plugins' configuration files instead, each uncached with a TODO",
    );
    let cli = f.read("packages/cli/vx.toml");
    assert_contains(
        &cli,
        "[tasks.bundle]\ncommand = \"vite build\"\ndepends-on = [\"^bundle\"]\n# TODO: inferred without Nx from \
         packages/cli/vite.config.ts (as @nx/vite/plugin would): check the command and give it a cache",
    );
    assert_contains(&cli, "[tasks.serve]\ncommand = \"vite\"\n");
    assert!(!cli.contains("[tasks.test]"), "{cli}");
    let core = f.read("packages/core/vx.toml");
    assert_contains(&core, "[tasks.test]\ncommand = \"jest\"\n");
    assert_contains(&core, "[tasks.lint]\ncommand = \"eslint .\"\n");
    let bundle = f.vx(&["run", "bundle", "--all", "--dry=json"]);
    assert_eq!(bundle.code, 0, "{}{}", bundle.stdout, bundle.stderr);
    let graph = crate::migrate::vx_graph(&crate::migrate::json_of(&bundle.stdout));
    assert_eq!(graph["cli#bundle"], ["core#bundle"]);
    assert_contains(
        &f.read("vx.toml"),
        "members = [\"packages/cli\", \"packages/core\"]\n",
    );
    assert_contains(
        &f.read("packages/cli/vx.toml"),
        "name = \"cli\"\ndeps = [\"core\"]\n\n[tasks.build]\ncommand = \"NX_DAEMON=false nx run cli:build --excludeTaskDependencies --skipNxCache\"\n",
    );
    let dry = f.vx(&["run", "build", "--all", "--dry=json"]);
    assert_eq!(dry.code, 0, "{}{}", dry.stdout, dry.stderr);
    let graph = crate::migrate::vx_graph(&crate::migrate::json_of(&dry.stdout));
    assert_eq!(graph["cli#build"], ["core#build"]);
}

/// Found on unjs/unhead: two examples copied from one template share a package name, which
/// pnpm tolerates and vx refuses (DISC-4): the later one is left out of the members, which
/// are then written out, and said.
#[test]
fn members_sharing_a_name_leave_the_later_one_out() {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "workspaces": ["packages/*", "examples/*"]}"#,
    );
    f.write(
        "packages/a/package.json",
        r#"{"name": "a", "scripts": {"build": "echo a"}}"#,
    );
    for dir in ["examples/one", "examples/two"] {
        f.write(
            &format!("{dir}/package.json"),
            r#"{"name": "starter", "scripts": {"build": "echo s"}}"#,
        );
    }
    f.commit();
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_contains(
        &out.stdout,
        "examples/two (a member) (examples/two/package.json:1:1): its name `starter` is also examples/one's",
    );
    assert_contains(
        &f.read("vx.toml"),
        "members = [\"examples/one\", \"packages/a\"]\n",
    );
    let run = f.vx(&["run", "build", "--all"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

/// A `project.json` target that only names inputs Nx does not cache over, with no
/// `targetDefaults` entry, still runs its script (it used to vanish); `nx:noop` orders
/// others and runs nothing: a group; a `dependsOn` `projects` entry is read as Nx reads it
/// (`util` is `@scope/util`).
#[test]
fn nx_targets_with_only_inputs_noops_and_loose_project_names_carry_over() {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "workspaces": ["packages/*"]}"#,
    );
    f.write(
        "nx.json",
        r#"{"namedInputs": {"default": ["{projectRoot}/**/*"], "testing": ["default"]},
            "targetDefaults": {"build": {"dependsOn": ["^build"]}}}"#,
    );
    f.write(
        "packages/util/package.json",
        r#"{"name": "@scope/util", "scripts": {"build": "mkdir -p dist && echo u > dist/u"}}"#,
    );
    f.write(
        "packages/app/package.json",
        r#"{"name": "app", "dependencies": {"@scope/util": "*"}, "scripts": {
            "build": "echo app", "test:all": "npm run a && npm run b", "a": "echo a", "b": "echo b",
            "e2e": "test -f ../util/dist/u"}}"#,
    );
    f.write(
        "packages/app/project.json",
        r#"{"name": "app", "targets": {
            "test:all": {"inputs": ["testing", "^default"]},
            "build-deps": {"executor": "nx:noop", "dependsOn": ["^build"]},
            "e2e": {"dependsOn": [{"projects": ["util"], "target": "build"}]}}}"#,
    );
    f.write(".gitignore", "node_modules\ndist\n.vx\n");
    f.commit();
    let init = f.vx(&["init"]);
    assert_eq!(init.code, 0, "{}{}", init.stdout, init.stderr);
    let app = f.read("packages/app/vx.toml");
    assert_contains(
        &app,
        "[tasks.\"test:all\"]\ncommand = \"npm run a && npm run b\"\n",
    );
    assert_contains(&app, "[tasks.build-deps]\ndepends-on = [\"^build\"]\n");
    assert!(!app.contains("nx run app:build-deps"), "{app}");
    assert_contains(&app, "depends-on = [\"@scope/util#build\"]");
    let dry = f.vx(&["run", "e2e", "build-deps", "--filter", "app", "--dry=json"]);
    assert_eq!(dry.code, 0, "{}{}", dry.stdout, dry.stderr);
    let graph = crate::migrate::vx_graph(&crate::migrate::json_of(&dry.stdout));
    assert_eq!(graph["app#e2e"], ["@scope/util#build"]);
    let run = f.vx(&["run", "e2e", "--filter", "app"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}
