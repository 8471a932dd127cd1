//! Issue 40, items 2 and 3: `vx init` on the shapes real repositories have that it used to
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
        "tasks left uncached: vx cannot fold all their inputs (1)\n    solo/vx.toml: build\n",
    );

    let first = f.vx(&["run", "build", "--all"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let again = f.vx(&["run", "build", "--all"]);
    assert_contains(&again.stdout, "3 cached");
    // The root config moves the packages that read it, and only those.
    f.write("tsup.config.base.ts", "root config, edited\n");
    let edited = f.vx(&["run", "build", "--all", "--dry=json"]);
    let json: serde_json::Value = serde_json::from_str(&edited.stdout).unwrap();
    let mut misses: Vec<&str> = json["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["cache"] == "miss")
        .map(|t| t["id"].as_str().unwrap())
        .collect();
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
