//! Project names (DISC-4, CFG-9).

use crate::fixture::{projects, Fixture};

const TASK: &str = "[tasks.build]\ncommand = \"true\"\n";

fn workspace_of(members: &str) -> Fixture {
    let f = Fixture::new();
    f.file("vx.toml", &format!("[workspace]\nmembers = [{members}]\n"));
    f
}

#[test]
fn names_come_from_package_json_then_vx_toml_then_the_directory() {
    let f = workspace_of("\"apps/*\", \"tools/*\"");
    f.package("apps/web", "@acme/web", "1.0.0", "")
        .file("apps/web/vx.toml", &format!("name = \"@acme/web\"\n{TASK}"))
        .file("tools/gen/vx.toml", &format!("name = \"gen\"\n{TASK}"))
        .file("tools/lint/vx.toml", TASK);
    let workspace = f.workspace("");
    assert_eq!(
        projects(&workspace),
        [
            "@acme/web (apps/web)",
            "gen (tools/gen)",
            "tools/lint (tools/lint)"
        ]
    );
    let web = workspace.project("@acme/web").unwrap();
    assert!(web.has_vx_toml && web.has_package_json);
    assert_eq!(web.version.as_deref(), Some("1.0.0"));
    assert_eq!(workspace.by_name["tools/lint"], 2);
}

#[test]
fn a_vx_toml_name_that_disagrees_with_package_json_is_an_error() {
    let f = workspace_of("\"apps/*\"");
    f.package("apps/web", "@acme/web", "1.0.0", "")
        .file("apps/web/vx.toml", &format!("name = \"web\"\n{TASK}"));
    assert_eq!(
        f.errors(),
        "apps/web/vx.toml:1:8: name `web` disagrees with package.json name `@acme/web`; remove one\n"
    );
}

#[test]
fn two_projects_with_one_name_are_an_error() {
    let f = workspace_of("\"packages/*\", \"legacy/*\"");
    f.package("packages/ui", "ui", "1.0.0", "")
        .package("legacy/ui", "ui", "0.1.0", "");
    assert_eq!(
        f.errors(),
        "legacy/ui/package.json:2:11: two projects are named `ui`: packages/ui and legacy/ui\n"
    );
}

#[test]
fn project_names_follow_cfg9() {
    let f = workspace_of("\"p/*\"");
    f.package("p/a", "a#b", "1.0.0", "")
        .package("p/b", " b", "1.0.0", "")
        .file("p/c/vx.toml", &format!("name = \"//\"\n{TASK}"));
    assert_eq!(
        f.errors(),
        "p/a/package.json:2:11: project name `a#b` must not contain `#`\n\
         p/b/package.json:2:11: project name ` b` must not start or end with whitespace\n\
         p/c/vx.toml:1:8: project name `//` is reserved for the workspace root\n"
    );
}

#[test]
fn the_root_vx_toml_takes_no_name() {
    let f = Fixture::new();
    f.file("vx.toml", "name = \"acme\"\n[workspace]\n");
    assert_eq!(
        f.errors(),
        "vx.toml:1:8: the workspace root project is always named `//`; remove `name`\n"
    );
}
