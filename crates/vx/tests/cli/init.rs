//! `vx init` (INIT-1, INIT-2, ACC-39): the files it writes, what it keeps, `--dry`,
//! `--force`, the report, and its errors. Every written workspace is loaded by vx afterwards.

use crate::{assert_contains, empty};

const ACC_39: &str = r#"{
  "name": "demo",
  "version": "1.0.0",
  "scripts": {
    "prebuild": "rm -rf dist",
    "build": "tsc",
    "dev": "vite",
    "test": "vitest run",
    "ci": "npm run build && npm run test"
  }
}"#;

#[test]
fn acceptance_39_init_maps_scripts_keeps_the_file_and_keeps_the_chain() {
    let f = empty();
    f.write("package.json", ACC_39);
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        f.read("vx.toml"),
        r#"# Written by `vx init` from the scripts of package.json: one package, whose tasks
# are the workspace root's (`//`).

[workspace]
members = []

[tasks.build]
command = "rm -rf dist && tsc"
depends-on = ["^build"]
# TODO: check inputs and outputs, then uncomment to cache this task
# cache = { inputs = ["**", "!dist/**"], outputs = ["dist/**"] }

[tasks.ci]
command = "npm run build && npm run test"

[tasks.dev]
command = "vite"
persistent = true  # TODO: add ready-when

[tasks.test]
command = "vitest run"
depends-on = ["build"]
"#
    );
    assert!(!f.read("vx.toml").contains("\ncache"), "no cache table");
    assert_eq!(
        out.stdout,
        "wrote vx.toml\n\
         cache: 0 of 3 tasks are cached; the others run every time (1 suggested cache table is \
         commented out: check it, then uncomment it)\n\
         TODO comments, by reason (2):\n  \
           add ready-when to persistent tasks (1)\n    \
             vx.toml: dev\n  \
           check the suggested cache table, then uncomment it (1)\n    \
             vx.toml: build\n\
         wrote vx.schema.json\n\
         wrote .taplo.toml\n\
         editors with Taplo (Even Better TOML) now check vx.toml against the schema; `vx lsp` \
         does more (docs/editors.md)\n\
         next: vx run build --all\n"
    );

    let again = f.vx(&["init"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert_contains(&again.stdout, "kept vx.toml");

    // Over ACC-39's group: the chain keeps its order and its stop at the first
    // failure, so `ci` is its own command and plans alone.
    let plan = f.vx(&["run", "ci", "--dry"]);
    assert_eq!(plan.code, 0, "{plan:?}");
    assert_contains(&plan.stdout, "//#ci");
    assert!(!plan.stdout.contains("//#dev"), "{}", plan.stdout);
}

/// A script that runs other scripts in a chain means the same under vx as
/// under the package manager: the same output, the same exit, in order, stopping at the first
/// failure. Run with npm (the machine's Node.js) on one package, then with vx after `vx init`.
#[test]
fn a_chain_of_scripts_means_the_same_under_vx_as_under_the_package_manager() {
    if std::process::Command::new("npm")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(!vx_test_support::tools::tools_required(), "npm is missing");
        eprintln!("skipped: npm is missing (install Node.js and npm)");
        return;
    }
    let package = r#"{
  "name": "p",
  "version": "1.0.0",
  "scripts": {
    "build": "npm run gen && npm run use",
    "gen": "sleep 1 && echo generated > out.txt",
    "use": "cat out.txt",
    "failing": "npm run nope-exit && npm run use2",
    "nope-exit": "exit 3",
    "use2": "echo ran > second.txt"
  }
}"#;
    let by_npm = empty();
    by_npm.write("package.json", package);
    let npm = |script: &str| {
        std::process::Command::new("npm")
            .args(["run", "--silent", script])
            .current_dir(by_npm.root())
            .output()
            .unwrap()
    };
    let built = npm("build");
    assert!(built.status.success(), "{built:?}");
    let failed = npm("failing");
    assert!(!failed.status.success());

    let by_vx = empty();
    by_vx.write("package.json", package);
    assert_eq!(by_vx.vx(&["init"]).code, 0);
    let out = by_vx.vx(&["run", "//#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(by_vx.read("out.txt"), by_npm.read("out.txt"));
    assert_contains(&out.stdout, "generated");
    let out = by_vx.vx(&["run", "//#failing"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        !by_vx.path("second.txt").exists(),
        "the chain stopped at the failure"
    );
    assert!(!by_npm.path("second.txt").exists());
}

/// A pnpm monorepo with Turborepo: members from `pnpm-workspace.yaml`, an existing file kept,
/// a package without scripts, root scripts that drive the workspace left out.
fn monorepo() -> vx_test_support::fixture::Fixture {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "scripts": {"build": "turbo run build", "dev": "pnpm -r --parallel dev", "format": "prettier -w ."}}"#,
    );
    f.write("pnpm-workspace.yaml", "packages:\n  - 'packages/*'\n");
    f.write("turbo.json", "{}\n");
    f.write(
        "packages/web/package.json",
        r#"{"name": "@m/web", "version": "2.0.0", "dependencies": {"@m/ui": "workspace:*"},
            "scripts": {"build": "next build", "dev": "next dev", "typecheck": "tsc --noEmit",
                        "tag": "echo $npm_package_name", "lint *": "eslint"}}"#,
    );
    f.write(
        "packages/ui/package.json",
        r#"{"name": "@m/ui", "scripts": {"build": "tsup src --outDir lib"}}"#,
    );
    f.write(
        "packages/ui/vx.toml",
        "[tasks.build]\ncommand = \"echo mine\"\n",
    );
    f.write("packages/types/package.json", r#"{"name": "@m/types"}"#);
    f
}

#[test]
fn a_monorepo_gets_a_root_file_without_members_and_one_file_per_package() {
    let f = monorepo();
    let out = f.vx_in("packages/web", &["init"], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "wrote vx.toml
kept packages/ui/vx.toml (it exists; `--force` replaces it)
wrote packages/web/vx.toml
no scripts to map in packages/types/package.json
not mapped: root scripts that drive the whole workspace (`build`, `dev`)
cache: 0 of 5 tasks are cached; the others run every time (1 suggested cache table is commented out: check it, then uncomment it)
TODO comments, by reason (3):
  add ready-when to persistent tasks (1)
    packages/web/vx.toml: dev
  check the suggested cache table, then uncomment it (1)
    packages/web/vx.toml: build
  scripts that cannot become tasks (1)
    packages/web/vx.toml: lint *
wrote vx.schema.json
wrote .taplo.toml
editors with Taplo (Even Better TOML) now check vx.toml against the schema; `vx lsp` does more (docs/editors.md)
next: vx run build --all
"
    );
    let root = f.read("vx.toml");
    assert_contains(&root, "[workspace]\n");
    assert!(!root.contains("members ="), "{root}");
    // Both packages have `build`: the template holds what they share, the scripts are the
    // commands, and each package's file holds only what differs (here, web's suggestion).
    assert_contains(
        &root,
        "[workspace.tasks.build]\ndepends-on = [\"^build\"]\n\n",
    );
    assert_contains(&root, "[tasks.format]\ncommand = \"prettier -w .\"\n");
    assert_contains(&root, "#   build: turbo run build\n");
    let web = f.read("packages/web/vx.toml");
    assert_contains(
        &web,
        "[tasks.build]\n# TODO: check inputs and outputs, then uncomment to cache this task\n",
    );
    assert_contains(
        &web,
        r#"# cache = { inputs = ["**", "!.next/**"], outputs = [".next/**", "!.next/cache/**"] }"#,
    );
    assert_contains(
        &web,
        "[tasks.tag]\ncommand = \"echo $npm_package_name\"\nenv = { define = { npm_package_name = \"@m/web\" } }\n",
    );
    assert_contains(
        &web,
        "[tasks.typecheck]\ncommand = \"tsc --noEmit\"\ndepends-on = [\"build\"]\n",
    );
    assert_contains(&web, "# TODO: script \"lint *\" is not mapped");
    assert_eq!(
        f.read("packages/ui/vx.toml"),
        "[tasks.build]\ncommand = \"echo mine\"\n"
    );
    assert!(!f.path("packages/types/vx.toml").exists());

    let plan = f.vx(&["run", "build", "--all", "--dry"]);
    assert_eq!(plan.code, 0, "{plan:?}");
    assert_contains(&plan.stdout, "@m/web#build");
    assert_contains(&plan.stdout, "@m/ui#build");
}

#[test]
fn dry_prints_the_files_and_writes_nothing() {
    let f = monorepo();
    let out = f.vx(&["init", "--dry"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .starts_with("==> vx.toml <==\n# Written by `vx init`"),
        "{}",
        out.stdout
    );
    assert_contains(&out.stdout, "\n==> packages/web/vx.toml <==\n");
    assert!(
        !out.stdout.contains("packages/ui/vx.toml"),
        "{}",
        out.stdout
    );
    assert_contains(&out.stderr, "would write packages/web/vx.toml\n");
    assert_contains(&out.stderr, "kept packages/ui/vx.toml");
    assert_contains(&out.stderr, "next: vx run build --all\n");
    assert!(!f.path("vx.toml").exists());
    assert!(!f.path("packages/web/vx.toml").exists());
}

#[test]
fn force_replaces_existing_files() {
    let f = monorepo();
    let out = f.vx(&["init", "--force"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "wrote packages/ui/vx.toml\n");
    assert_contains(
        &f.read("packages/ui/vx.toml"),
        "[tasks.build]\n# TODO: check inputs and outputs, then uncomment to cache this task\n# cache = { inputs = [\"**\", \"!lib/**\"], outputs = [\"lib/**\"] }\n",
    );
    let shown = f.vx(&["show", "@m/ui#build"]);
    assert_eq!(shown.code, 0, "{shown:?}");
    assert_contains(
        &shown.stdout,
        "command = \"tsup src --outDir lib\"  # packages/ui/package.json:1",
    );
    assert_contains(&shown.stdout, "depends-on = [\"^build\"]  # vx.toml:");
}

#[test]
fn package_json_workspaces_are_a_member_list_too() {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "r", "workspaces": ["apps/*"], "scripts": {"test": "npm run test --workspaces"}}"#,
    );
    f.write(
        "apps/api/package.json",
        r#"{"name": "api", "scripts": {"start": "node server.js", "build": "tsc"}}"#,
    );
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 0, "{out:?}");
    let root = f.read("vx.toml");
    assert!(
        root.contains("[workspace]\n") && !root.contains("members ="),
        "{root}"
    );
    assert!(!root.contains("[tasks"), "{root}");
    assert_contains(
        &f.read("apps/api/vx.toml"),
        "[tasks.start]\ncommand = \"node server.js\"\npersistent = true  # TODO: add ready-when\n",
    );
    let plan = f.vx(&["run", "build", "--all", "--dry"]);
    assert_eq!(plan.code, 0, "{plan:?}");
    assert_contains(&plan.stdout, "api#build");
}

#[test]
fn hooks_stay_tasks_when_the_package_manager_would_not_run_them() {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "p", "packageManager": "yarn@4.1.0", "scripts": {"prebuild": "rm -rf dist", "build": "tsc"}}"#,
    );
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 0, "{out:?}");
    let text = f.read("vx.toml");
    assert_contains(&text, "[tasks.build]\ncommand = \"tsc\"\n");
    assert_contains(&text, "[tasks.prebuild]\ncommand = \"rm -rf dist\"\n");
    assert_contains(&text, "`packageManager` is yarn@4.1.0");

    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "p", "scripts": {"pretest": "echo pre", "test": "echo test"}}"#,
    );
    f.write(".npmrc", "ignore-scripts = true\n");
    assert_eq!(f.vx(&["init"]).code, 0);
    assert_contains(&f.read("vx.toml"), "[tasks.pretest]\n");
    assert_contains(&f.read("vx.toml"), ".npmrc sets `ignore-scripts`");

    // pnpm 6 to 8 run hooks only when `.npmrc` turns them on; pnpm 9 runs them.
    for (manager, npmrc, folded) in [
        ("pnpm@8.15.0", "", false),
        ("pnpm@8.15.0", "enable-pre-post-scripts=true\n", true),
        ("pnpm@9.1.0", "", true),
    ] {
        let f = empty();
        f.write(
            "package.json",
            &format!(
                r#"{{"name": "p", "packageManager": "{manager}", "scripts": {{"prebuild": "echo pre", "build": "echo b"}}}}"#
            ),
        );
        f.write(".npmrc", npmrc);
        assert_eq!(f.vx(&["init"]).code, 0);
        let text = f.read("vx.toml");
        assert_eq!(
            text.contains("command = \"echo pre && echo b\""),
            folded,
            "{manager} {npmrc}: {text}"
        );
    }
}

#[test]
fn without_a_package_json_init_is_refused() {
    let f = empty();
    f.write("src/a.txt", "a\n");
    let out = f.vx_in("src", &["init"], &[]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr_redacted(&f),
        "error: vx init needs a package.json (none found from [root]/src upward)\n"
    );
    assert!(!f.path("vx.toml").exists());
}

#[test]
fn an_unparseable_package_json_is_reported_at_its_location() {
    let f = empty();
    f.write("package.json", r#"{"workspaces": ["packages/*"]}"#);
    f.write("packages/a/package.json", "{\n  \"name\": \"a\",\n}\n");
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: packages/a/package.json:2:14: invalid JSON: trailing commas are not allowed\n"
    );
    assert!(!f.path("vx.toml").exists(), "nothing is written");
}

#[test]
fn init_takes_only_its_flags() {
    let f = empty();
    f.write("package.json", "{}");
    let out = f.vx(&["init", "--dyr"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: unknown flag `--dyr` for `vx init`\n  hint: did you mean `--dry`?\n"
    );
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&f.read("vx.toml"), "[workspace]\nmembers = []\n");
    assert_eq!(f.vx(&["show"]).code, 0);
}

/// Scripts that repeat across packages become `[workspace.tasks]`
/// templates in the root file; a package gets a file only for what differs (a folded hook,
/// an npm variable, a group), and the workspace then runs as the scripts say.
#[test]
fn repeated_scripts_become_templates_and_packages_hold_only_what_differs() {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "workspaces": ["packages/*"], "scripts": {"build": "turbo run build"}}"#,
    );
    let plain = |name: &str, deps: &str| {
        format!(
            r#"{{"name": "{name}", "version": "1.0.0", "dependencies": {{{deps}}},
                "scripts": {{"build": "mkdir -p dist && echo {name} > dist/out.txt",
                            "test": "test -f dist/out.txt", "lint": "echo lint"}}}}"#
        )
    };
    f.write("packages/a/package.json", &plain("a", ""));
    f.write("packages/b/package.json", &plain("b", r#""a": "*""#));
    f.write("packages/c/package.json", &plain("c", r#""a": "*""#));
    f.write(
        "packages/d/package.json",
        r#"{"name": "d", "version": "3.1.0",
            "scripts": {"prebuild": "echo pre > pre.txt", "build": "mkdir -p dist && cp pre.txt dist/out.txt",
                        "test": "test -f dist/out.txt", "lint": "echo $npm_package_version > lint.txt",
                        "check": "run-p lint test"}}"#,
    );
    f.commit();

    let out = f.vx(&["init"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "wrote vx.toml\nwrote packages/d/vx.toml\n");
    assert_contains(
        &out.stdout,
        "no file needed: the templates describe the scripts of 3 packages\n",
    );
    for plain in ["a", "b", "c"] {
        assert!(!f.path(&format!("packages/{plain}/vx.toml")).exists());
    }
    let root = f.read("vx.toml");
    assert_contains(
        &root,
        "\n[workspace.tasks.build]\ndepends-on = [\"^build\"]\n# TODO: check inputs and outputs, then uncomment to cache this task\n# cache = { outputs = [\"dist/**\"] }\n",
    );
    assert_contains(&root, "\n[workspace.tasks.lint]\n");
    assert_contains(
        &root,
        "\n[workspace.tasks.test]\ndepends-on = [\"build\"]\n",
    );
    assert!(!root.contains("command ="), "{root}");
    let d = f.read("packages/d/vx.toml");
    assert_eq!(
        d,
        "# Written by `vx init` from the scripts of packages/d/package.json: what differs from the
# templates in the root vx.toml.

[tasks.build]
command = \"echo pre > pre.txt && mkdir -p dist && cp pre.txt dist/out.txt\"

[tasks.check]
depends-on = [\"lint\", \"test\"]

[tasks.lint]
env = { define = { npm_package_version = \"3.1.0\" } }
"
    );

    // The template's edges hold: `b` and `c` build after `a`; every build ran its script.
    let run = f.vx(&["run", "test", "--all"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    for (dir, text) in [("a", "a\n"), ("b", "b\n"), ("c", "c\n"), ("d", "pre\n")] {
        assert_eq!(f.read(&format!("packages/{dir}/dist/out.txt")), text);
    }
    let plan = f.vx(&["run", "build", "-F", "b", "--dry"]);
    assert_contains(&plan.stdout, "a#build");
    let check = f.vx(&["run", "d#check"]);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
    assert_eq!(f.read("packages/d/lint.txt"), "3.1.0\n");
}

/// No suggestion for a script that cleans, publishes, packs, serves or
/// reads a sibling package; the suggested inputs are the package less its outputs (so a
/// config edit is a miss); two suggestions never share a directory; and every suggestion
/// uncommented at once loads, runs, and hits on the second run.
#[test]
fn every_cache_suggestion_can_be_uncommented_safely() {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "workspaces": ["packages/*"]}"#,
    );
    let scripts = r#""build": "mkdir -p dist && cat src/in.txt tsconfig.json > dist/out.txt",
        "test:build": "mkdir -p dist && echo t > dist/test.txt",
        "docs": "mkdir -p build && echo docs > build/index.html",
        "clean": "rm -rf dist && mkdir -p dist",
        "publish:npm": "npm publish dist",
        "pack:tgz": "npm pack",
        "start": "serve dist""#;
    f.write(
        "packages/a/package.json",
        &format!(r#"{{"name": "a", "scripts": {{{scripts}}}}}"#),
    );
    f.write(
        "packages/b/package.json",
        &format!(
            r#"{{"name": "b", "scripts": {{{scripts}, "vendor": "mkdir -p dist && cp ../a/dist/out.txt dist/a.txt"}}}}"#
        ),
    );
    for dir in ["a", "b"] {
        f.write(&format!("packages/{dir}/src/in.txt"), "source\n");
        f.write(&format!("packages/{dir}/tsconfig.json"), "{}\n");
    }
    f.write(".gitignore", "dist/\nbuild/\n");
    f.commit();

    assert_eq!(f.vx(&["init"]).code, 0);
    let root = f.read("vx.toml");
    let b = f.read("packages/b/vx.toml");
    let all = format!("{root}{b}");
    let suggested: Vec<&str> = all
        .lines()
        .filter(|l| l.starts_with("# cache = "))
        .collect();
    assert_eq!(
        suggested,
        [
            r#"# cache = { outputs = ["dist/**"] }"#,
            r#"# cache = { outputs = ["build/**"] }"#,
        ],
        "only build and docs get one:\n{root}\n{b}"
    );
    assert_contains(
        &root,
        "[workspace.tasks.build]\ndepends-on = [\"^build\"]\n# TODO",
    );
    assert_contains(&root, "[workspace.tasks.docs]\n# TODO");
    assert_contains(
        &b,
        "[tasks.vendor]\ncommand = \"mkdir -p dist && cp ../a/dist/out.txt dist/a.txt\"\n",
    );

    // Uncomment every suggestion as the TODO asks.
    for rel in ["vx.toml", "packages/b/vx.toml"] {
        let text = f.read(rel).replace("\n# cache = ", "\ncache = ");
        f.write(rel, &text);
    }
    f.commit();
    let first = f.vx(&["run", "build", "docs", "--all"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let second = f.vx(&["run", "build", "docs", "--all"]);
    assert_eq!(second.code, 0, "{}{}", second.stdout, second.stderr);
    assert_contains(&second.stdout, "4 tasks · 4 cached (100%)");
    // A tool config is an input: editing it re-runs that package's build, and only it.
    f.write("packages/a/tsconfig.json", "{\"strict\": true}\n");
    let third = f.vx(&["run", "build", "--all"]);
    assert_eq!(third.code, 0, "{}{}", third.stdout, third.stderr);
    assert_contains(&third.stdout, "2 tasks · 1 cached (50%)");
    let why = f.vx(&["why", "a#build"]);
    assert_contains(&why.stdout, "tsconfig.json");
}

/// Members the repository's own build leaves out (examples) are left out
/// of `--all` and `--affected` by `[workspace] exclude-from-all`, which `vx init` reads from
/// the root build script; a `--filter` naming them still selects them.
#[test]
fn members_the_repositorys_build_leaves_out_stay_out_of_all() {
    let f = empty();
    f.write(
        "package.json",
        r#"{"name": "root", "private": true, "workspaces": ["packages/*", "examples/*"],
            "scripts": {"build": "npm run build:all", "build:all": "turbo run build --filter=!./examples/*"}}"#,
    );
    let build = r#""scripts": {"build": "echo built > out.txt"}"#;
    f.write(
        "packages/lib/package.json",
        &format!(r#"{{"name": "lib", {build}}}"#),
    );
    f.write(
        "packages/app/package.json",
        &format!(r#"{{"name": "app", "dependencies": {{"lib": "*"}}, {build}}}"#),
    );
    f.write(
        "examples/demo/package.json",
        &format!(r#"{{"name": "demo", "dependencies": {{"lib": "*"}}, {build}}}"#),
    );
    f.write("packages/lib/src.txt", "v1\n");
    f.commit();
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(
        &f.read("vx.toml"),
        "[workspace]\n# `--all` leaves out what the root `build:all` script leaves out:\nexclude-from-all = [\"examples/*\"]\n",
    );
    f.commit();

    let ids = |args: &[&str]| -> Vec<String> {
        let out = f.vx(args);
        assert_eq!(out.code, 0, "{out:?}");
        let json: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        json["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        ids(&["run", "build", "--all", "--dry=json"]),
        ["app#build", "lib#build"]
    );
    assert_eq!(
        ids(&["run", "build", "-F", "./examples/*", "--dry=json"]),
        ["demo#build", "lib#build"]
    );
    f.write("packages/lib/src.txt", "v2\n");
    assert_eq!(
        ids(&["run", "build", "--affected=HEAD", "--dry=json"]),
        ["app#build", "lib#build"]
    );

    // A build that names what it builds (`--filter=./packages/*`) leaves the rest out.
    let g = empty();
    g.write(
        "package.json",
        r#"{"name": "root", "private": true, "workspaces": ["packages/*", "examples/*", "www"],
            "scripts": {"build": "turbo --filter=./packages/* build"}}"#,
    );
    for (dir, name) in [
        ("packages/lib", "lib"),
        ("examples/demo", "demo"),
        ("www", "www"),
    ] {
        g.write(
            &format!("{dir}/package.json"),
            &format!(r#"{{"name": "{name}", {build}}}"#),
        );
    }
    assert_eq!(g.vx(&["init"]).code, 0);
    assert_contains(
        &g.read("vx.toml"),
        "exclude-from-all = [\"examples/*\", \"www\"]\n",
    );

    f.write(
        "vx.toml",
        "[workspace]\nexclude-from-all = [\"!examples/*\"]\n",
    );
    let out = f.vx(&["run", "build", "--all"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: vx.toml:2:21: exclude-from-all: `!examples/*` is a negation; list the directories `--all` leaves out\n"
    );
}

/// Turborepo 2.11's input objects: `jit` globs are plain inputs (every vx key is taken just
/// before the task runs), or dropped where they name what an upstream of the package writes
/// (vx folds that through the upstream); `dependencyOutputs` is vx's default unless its globs narrow it,
/// and a list the upstream's other dependants do not share is not carried, with the reason;
/// any other object is an error at its location.
#[test]
fn turbos_input_objects_become_inputs_or_dependants_read_or_an_error() {
    let turbo_json = |tasks: &str| {
        let f = empty();
        f.write(
            "package.json",
            r#"{"name": "root", "private": true, "workspaces": ["packages/*"]}"#,
        );
        f.write(
            "packages/a/package.json",
            r#"{"name": "a", "scripts": {"build": "echo a", "test": "echo t", "codegen": "echo g"}}"#,
        );
        f.write("turbo.json", &format!("{{\"tasks\": {{{tasks}}}}}"));
        f
    };
    let f = turbo_json(
        r#""codegen": {"outputs": ["gen/**"]},
           "build": {"dependsOn": ["codegen", "^build"], "outputs": ["dist/**"],
                     "inputs": ["src/**", {"mode": "jit", "globs": ["gen/**", "config/**"]},
                                {"mode": "dependencyOutputs", "globs": ["dist/**/*.d.ts"], "from": ["^build"]}]},
           "test": {"dependsOn": ["^build"], "outputs": []}"#,
    );
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 0, "{out:?}");
    let root = f.read("vx.toml");
    assert_contains(
        &root,
        "cache = { inputs = [\"src/**\", \"config/**\"], outputs = [\"dist/**\"] }\n",
    );
    assert_contains(
        &out.stdout,
        "tasks.build.inputs gen/** (turbo.json:2:21): a `jit` glob over what `codegen` writes: vx folds those outputs through `codegen`",
    );
    // `test` depends on `^build` too, without the list: vx folds all of build's outputs.
    assert_contains(
        &out.stdout,
        "tasks.build.inputs dependencyOutputs globs (turbo.json:4:33): vx keeps this list on the upstream",
    );
    assert_contains(
        &out.stdout,
        "`tasks.test` depends on `build` without the same list: vx folds all of `build`'s outputs",
    );
    // `from` leaves codegen out of the narrowing: nothing for it either.
    assert!(!root.contains("dependants-read = "), "{root}");

    let f = turbo_json(r#""build": {"inputs": [{"mode": "startup"}]}"#);
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_contains(
        &out.stderr,
        "error: turbo.json:1:33: tasks.build.inputs: expected a glob, or an object with `mode` `jit` or `dependencyOutputs`, found an object\n",
    );
    assert!(!f.path("vx.toml").exists());
}
