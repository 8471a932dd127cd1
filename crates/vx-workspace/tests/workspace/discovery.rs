//! Root finding (DISC-1), members (DISC-2) and projects (DISC-3).

use vx_workspace::LoadError;

use crate::fixture::{projects, same_path, Fixture};

const TASK: &str = "[tasks.build]\ncommand = \"true\"\n";

#[test]
fn root_is_found_from_a_nested_cwd() {
    let f = Fixture::new();
    f.file("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n")
        .file("packages/a/vx.toml", TASK);
    let workspace = f.workspace("packages/a/src/deep");
    assert_eq!(workspace.root, f.root());
    assert_eq!(projects(&workspace), ["packages/a (packages/a)"]);
}

#[test]
fn a_vx_toml_root_wins_over_a_nearer_package_manager_root() {
    let f = Fixture::new();
    f.file("vx.toml", "[workspace]\nmembers = [\"tools/*\"]\n")
        .file("tools/x/pnpm-workspace.yaml", "packages: ['*']\n")
        .file("tools/x/vx.toml", TASK);
    assert!(same_path(&f.workspace("tools/x/sub").root, &f.root()));
}

#[test]
fn a_vx_toml_without_workspace_is_not_a_root() {
    let f = Fixture::new();
    f.file("vx.toml", "[workspace]\nmembers = [\"a\"]\n")
        .file("a/vx.toml", TASK);
    assert_eq!(f.workspace("a").root, f.root());
}

#[test]
fn outside_any_workspace_the_hint_depends_on_package_json() {
    let f = Fixture::new();
    f.dir("x/y");
    match f.discover("x/y") {
        Err(
            e @ LoadError::NotInWorkspace {
                package_json_above: false,
                ..
            },
        ) => {
            assert_eq!(
                e.hint(),
                Some("create a `vx.toml` with a `[workspace]` table at the repository root")
            );
            assert!(e
                .to_string()
                .starts_with("not inside a vx workspace (no vx.toml with [workspace] from /"));
        }
        other => panic!("{other:?}"),
    }
    f.file("x/package.json", "{\"name\": \"x\"}");
    match f.discover("x/y") {
        Err(
            e @ LoadError::NotInWorkspace {
                package_json_above: true,
                ..
            },
        ) => assert_eq!(e.hint(), Some("run `vx init` at the repository root")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn members_come_from_pnpm_workspace_yaml() {
    let f = Fixture::new();
    f.file(
        "pnpm-workspace.yaml",
        "packages:\n  - 'apps/*'\n  - packages/**\n  - '!**/test/**'\n",
    )
    .file(
        "package.json",
        "{\"name\": \"root\", \"workspaces\": [\"ignored/*\"]}",
    )
    .package("apps/web", "web", "1.0.0", "")
    .package("packages/ui", "ui", "1.0.0", "")
    .package("packages/nested/deep", "deep", "1.0.0", "")
    .package("packages/test/fixture", "fixture", "1.0.0", "")
    .package("ignored/x", "x", "1.0.0", "");
    let workspace = f.workspace("apps/web");
    assert_eq!(workspace.root, f.root());
    assert_eq!(
        projects(&workspace),
        [
            "deep (packages/nested/deep)",
            "ui (packages/ui)",
            "web (apps/web)"
        ]
    );
}

#[test]
fn members_come_from_package_json_workspaces_in_both_forms() {
    for workspaces in [
        "[\"libs/*\"]",
        "{\"packages\": [\"libs/*\"], \"nohoist\": []}",
    ] {
        let f = Fixture::new();
        f.file("package.json", &format!("{{\"workspaces\": {workspaces}}}"))
            .package("libs/a", "a", "1.0.0", "")
            .file("libs/b/vx.toml", TASK);
        let workspace = f.workspace("libs");
        assert_eq!(
            projects(&workspace),
            ["a (libs/a)", "libs/b (libs/b)"],
            "{workspaces}"
        );
        assert!(workspace.settings.members.is_none());
    }
}

#[test]
fn members_key_wins_over_package_manager_files() {
    let f = Fixture::new();
    f.file("vx.toml", "[workspace]\nmembers = [\"one/*\"]\n")
        .file("pnpm-workspace.yaml", "packages: ['two/*']\n")
        .file("one/a/vx.toml", TASK)
        .file("two/b/vx.toml", TASK);
    assert_eq!(projects(&f.workspace("")), ["one/a (one/a)"]);
}

#[test]
fn the_package_manager_root_that_claims_cwd_is_preferred() {
    let f = Fixture::new();
    f.file("package.json", "{\"workspaces\": [\"apps/*\"]}")
        .file(
            "apps/web/package.json",
            "{\"name\": \"web\", \"workspaces\": [\"lib/*\"]}",
        );
    // apps/web is itself a package-manager root, but its globs do not claim `src`.
    assert_eq!(f.workspace("apps/web/src").root, f.root());
    // From inside one of its own members, the nearer root claims cwd and wins.
    f.file("apps/web/lib/x/package.json", "{\"name\": \"x\"}");
    assert_eq!(
        f.workspace("apps/web/lib/x").root,
        f.path("apps/web").canonicalize().unwrap()
    );
}

#[test]
fn excludes_subtract_members_and_what_lies_below_them() {
    let f = Fixture::new();
    f.file(
        "vx.toml",
        "[workspace]\nmembers = [\"packages/**\", \"!packages/legacy\", \"packages/legacy/keep\"]\n",
    )
    .file("packages/a/vx.toml", TASK)
    .file("packages/legacy/vx.toml", TASK)
    .file("packages/legacy/old/vx.toml", TASK)
    .file("packages/legacy/keep/vx.toml", TASK);
    assert_eq!(projects(&f.workspace("")), ["packages/a (packages/a)"]);
}

#[test]
fn node_modules_git_and_vx_directories_are_never_members() {
    let f = Fixture::new();
    f.file(
        "vx.toml",
        "[workspace]\nmembers = [\"**\", \".vx/*\", \"node_modules/x\"]\n",
    )
    .package("a", "a", "1.0.0", "")
    .package("a/node_modules/dep", "dep", "1.0.0", "")
    .package("node_modules/x", "x", "1.0.0", "")
    .package(".git/hooks", "hooks", "1.0.0", "")
    .package(".vx/cache", "cache", "1.0.0", "");
    assert_eq!(projects(&f.workspace("")), ["a (a)"]);
}

#[test]
fn wildcards_do_not_match_hidden_directories() {
    let f = Fixture::new();
    f.file(
        "vx.toml",
        "[workspace]\nmembers = [\"packages/*\", \"tools/.*\"]\n",
    )
    .file("packages/.cache/vx.toml", TASK)
    .file("packages/a/vx.toml", TASK)
    .file("tools/.hidden/vx.toml", TASK);
    assert_eq!(
        projects(&f.workspace("")),
        ["packages/a (packages/a)", "tools/.hidden (tools/.hidden)"]
    );
}

#[test]
fn character_classes_and_braces_select_members() {
    let f = Fixture::new();
    f.file(
        "vx.toml",
        "[workspace]\nmembers = [\"{apps,libs}/[ab]*\"]\n",
    )
    .file("apps/alpha/vx.toml", TASK)
    .file("apps/cat/vx.toml", TASK)
    .file("libs/beta/vx.toml", TASK);
    assert_eq!(
        projects(&f.workspace("")),
        ["apps/alpha (apps/alpha)", "libs/beta (libs/beta)"]
    );
}

#[test]
fn members_without_vx_toml_or_package_json_are_skipped_and_nested_projects_kept() {
    let f = Fixture::new();
    f.file("vx.toml", "[workspace]\nmembers = [\"packages/**\"]\n")
        .dir("packages/empty/src")
        .file("packages/a/vx.toml", TASK)
        .file("packages/a/sub/vx.toml", TASK);
    assert_eq!(
        projects(&f.workspace("")),
        ["packages/a (packages/a)", "packages/a/sub (packages/a/sub)"]
    );
}

#[test]
fn the_root_is_a_project_only_with_a_tasks_table() {
    let f = Fixture::new();
    f.file("vx.toml", "[workspace]\nmembers = []\n");
    assert!(f.workspace("").projects.is_empty());
    f.file(
        "vx.toml",
        "[workspace]\nmembers = []\n\n[tasks.lint]\ncommand = \"eslint .\"\n",
    );
    let workspace = f.workspace("");
    assert_eq!(projects(&workspace), ["// ()"]);
    assert!(workspace
        .project("//")
        .unwrap()
        .config
        .tasks
        .contains_key("lint"));
}

#[test]
fn globs_outside_the_root_and_extglobs_are_refused() {
    let f = Fixture::new();
    f.file(
        "package.json",
        "{\n  \"workspaces\": [\"../other/*\", \"/abs\", \"@(a|b)\"]\n}",
    );
    assert_eq!(
        f.errors(),
        "package.json:2:18: members: `../other/*` is outside the workspace root (`..`)\n\
         package.json:2:32: members: `/abs` is outside the workspace root; member globs are root-relative\n\
         package.json:2:40: members: `@(a|b)` is an extglob, which member globs do not support\n"
    );
}

#[test]
fn a_member_that_links_outside_the_root_is_refused() {
    let outside = Fixture::new();
    outside.package("lib", "lib", "1.0.0", "");
    let f = Fixture::new();
    f.file("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n")
        .dir("packages");
    std::os::unix::fs::symlink(outside.path("lib"), f.path("packages/lib")).unwrap();
    assert_eq!(
        f.errors(),
        "vx.toml:2:12: members: `packages/*` matches `packages/lib`, which resolves outside the workspace root\n"
    );
}

#[test]
fn a_member_linked_inside_the_root_is_followed() {
    let f = Fixture::new();
    f.file("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n")
        .package("real/lib", "lib", "1.0.0", "")
        .dir("packages");
    std::os::unix::fs::symlink(f.path("real/lib"), f.path("packages/lib")).unwrap();
    assert_eq!(projects(&f.workspace("")), ["lib (packages/lib)"]);
}

#[test]
fn many_projects_are_discovered_quickly() {
    let f = Fixture::new();
    f.file("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
    for i in 0..2000 {
        f.package(&format!("packages/p{i}"), &format!("p{i}"), "1.0.0", "")
            .file(&format!("packages/p{i}/src/index.ts"), "");
    }
    let start = std::time::Instant::now();
    let workspace = f.workspace("");
    assert_eq!(workspace.projects.len(), 2000);
    assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
}

/// `vx lsp`'s loads: texts in place of files, and only changed files parsed again, with the
/// same workspace and the same problems as a load from scratch.
#[test]
fn a_load_with_a_memo_parses_only_what_changed_and_gives_what_a_fresh_load_gives() {
    use std::collections::BTreeMap;
    let f = Fixture::new();
    f.file("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n")
        .file("packages/a/vx.toml", TASK)
        .file("packages/b/vx.toml", TASK)
        .package("packages/b", "b", "1.0.0", "");
    let parsed = vx_workspace::Parsed::default();
    let first = vx_workspace::load_planned_with(&f.root(), &BTreeMap::new(), &parsed).unwrap();
    // Three vx.toml files and one package.json.
    assert_eq!(parsed.parses(), 4);
    assert_eq!(projects(&first), projects(&f.workspace("")));

    // The same texts again: nothing parsed.
    let again = vx_workspace::load_planned_with(&f.root(), &BTreeMap::new(), &parsed).unwrap();
    assert_eq!(parsed.parses(), 4);
    assert_eq!(
        format!("{:?}", again.projects),
        format!("{:?}", first.projects)
    );

    // An unsaved text with a typo: that file alone is parsed, and its problem is the one a
    // fresh load of the same text reports.
    let typo = "[tasks.build]\ncomand = \"true\"\n";
    let planned = BTreeMap::from([("packages/a/vx.toml".to_string(), typo.to_string())]);
    let Err(LoadError::Config(memo)) =
        vx_workspace::load_planned_with(&f.root(), &planned, &parsed)
    else {
        panic!("the typo is an error");
    };
    assert_eq!(parsed.parses(), 5);
    let Err(LoadError::Config(fresh)) = vx_workspace::load_planned(&f.root(), &planned) else {
        panic!("the typo is an error");
    };
    assert_eq!(
        crate::fixture::render(&memo),
        crate::fixture::render(&fresh)
    );
    assert!(crate::fixture::render(&memo).contains("packages/a/vx.toml:2:1"));
}
