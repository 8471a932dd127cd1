//! Project edges (DISC-5).

use crate::fixture::{edges, Fixture};

/// A workspace with `@acme/ui` 1.4.0 in `packages/ui` and `@acme/web` in `apps/web`, whose
/// `package.json` has `extra`.
fn web_with(extra: &str) -> Fixture {
    let f = Fixture::new();
    f.file(
        "vx.toml",
        "[workspace]\nmembers = [\"apps/*\", \"packages/*\"]\n",
    )
    .package("packages/ui", "@acme/ui", "1.4.0", "")
    .package("apps/web", "@acme/web", "1.0.0", extra);
    f
}

fn web_edges(section: &str, specifier: &str) -> Vec<String> {
    let f = web_with(&format!(
        "\"{section}\": {{ \"@acme/ui\": \"{specifier}\" }}"
    ));
    edges(&f.workspace(""), "@acme/web")
}

#[test]
fn specifiers_that_link_the_workspace_copy_make_edges() {
    let linked = [
        "workspace:*",
        "workspace:^",
        "workspace:~",
        "workspace:^1.2.0",
        "workspace:1.4.0",
        "workspace:../../packages/ui",
        "file:../../packages/ui",
        "link:../../packages/ui",
        "../../packages/ui",
        "^1.0.0",
        "~1.4.0",
        ">=1.0.0 <2.0.0",
        "1.x",
        "1.4.0",
        "*",
        "",
    ];
    for specifier in linked {
        assert_eq!(
            web_edges("dependencies", specifier),
            ["@acme/ui Normal"],
            "{specifier}"
        );
    }
}

#[test]
fn registry_specifiers_make_no_edge() {
    let registry = [
        "^2.0.0",
        "1.3.0",
        "latest",
        "next",
        "https://example.com/ui.tgz",
        "github:acme/ui",
        "git+ssh://git@github.com/acme/ui.git",
        "acme/ui",
        "npm:@acme/ui@^1",
        "file:../../vendor/ui",
        "file:../../packages/ui/ui-1.4.0.tgz",
        "../ui",
    ];
    for specifier in registry {
        assert!(
            web_edges("dependencies", specifier).is_empty(),
            "{specifier}"
        );
    }
}

#[test]
fn every_dependency_section_counts() {
    for section in ["dependencies", "devDependencies", "optionalDependencies"] {
        assert_eq!(
            web_edges(section, "workspace:*"),
            ["@acme/ui Normal"],
            "{section}"
        );
    }
    assert_eq!(
        web_edges("peerDependencies", "workspace:*"),
        ["@acme/ui Peer"]
    );
}

#[test]
fn a_workspace_range_the_version_does_not_satisfy_is_an_error() {
    let f = web_with("\"dependencies\": {\n    \"@acme/ui\": \"workspace:^2\"\n  }");
    assert_eq!(
        f.errors(),
        "apps/web/package.json:5:5: `@acme/ui@workspace:^2` does not match the workspace version 1.4.0\n"
    );
}

#[test]
fn a_workspace_path_that_names_another_directory_is_an_error() {
    let f = web_with("\"dependencies\": { \"@acme/ui\": \"workspace:../ui\" }");
    assert_eq!(
        f.errors(),
        "apps/web/package.json:4:21: `@acme/ui@workspace:../ui` does not name the directory of `@acme/ui` (packages/ui)\n"
    );
}

#[test]
fn self_references_are_ignored() {
    let f = web_with("\"devDependencies\": { \"@acme/web\": \"workspace:*\" }");
    assert!(edges(&f.workspace(""), "@acme/web").is_empty());
}

#[test]
fn a_normal_edge_wins_over_a_peer_edge_to_the_same_project() {
    let f = web_with(
        "\"peerDependencies\": { \"@acme/ui\": \"^1\" }, \"devDependencies\": { \"@acme/ui\": \"workspace:*\" }",
    );
    let workspace = f.workspace("");
    assert_eq!(edges(&workspace, "@acme/web"), ["@acme/ui Normal"]);
    let edge = &workspace.project("@acme/web").unwrap().deps[0];
    assert_eq!(edge.at.to_string(), "apps/web/package.json:4:66");
}

#[test]
fn peer_edges_inside_a_cycle_are_for_selection_only() {
    let f = Fixture::new();
    f.file("vx.toml", "[workspace]\nmembers = [\"p/*\"]\n")
        .package(
            "p/a",
            "a",
            "1.0.0",
            "\"dependencies\": { \"b\": \"workspace:*\" }",
        )
        .package(
            "p/b",
            "b",
            "1.0.0",
            "\"dependencies\": { \"c\": \"*\" }, \"peerDependencies\": { \"d\": \"*\" }",
        )
        .package(
            "p/c",
            "c",
            "1.0.0",
            "\"peerDependencies\": { \"a\": \"*\" }",
        )
        .package("p/d", "d", "1.0.0", "");
    let workspace = f.workspace("");
    assert_eq!(edges(&workspace, "a"), ["b Normal"]);
    assert_eq!(edges(&workspace, "b"), ["c Normal", "d Peer"]);
    assert_eq!(edges(&workspace, "c"), ["a SelectionOnly"]);
}

#[test]
fn vx_toml_deps_add_normal_edges_sorted_by_target() {
    let f = Fixture::new();
    f.file("vx.toml", "[workspace]\nmembers = [\"tools/*\"]\n")
        .file(
            "tools/gen/vx.toml",
            "deps = [\"tools/z\", \"tools/a\", \"tools/gen\"]\n[tasks.run]\ncommand = \"x\"\n",
        )
        .file("tools/a/vx.toml", "[tasks.t]\ncommand = \"x\"\n")
        .file("tools/z/vx.toml", "[tasks.t]\ncommand = \"x\"\n");
    let workspace = f.workspace("");
    assert_eq!(
        edges(&workspace, "tools/gen"),
        ["tools/a Normal", "tools/z Normal"]
    );
    let edge = &workspace.project("tools/gen").unwrap().deps[1];
    assert_eq!(edge.at.to_string(), "tools/gen/vx.toml:1:9");
}

#[test]
fn unknown_deps_are_errors_with_a_suggestion() {
    let f = Fixture::new();
    f.file("vx.toml", "[workspace]\nmembers = [\"tools/*\"]\n")
        .file(
            "tools/gen/vx.toml",
            "deps = [\"tools/lnt\"]\n[tasks.run]\ncommand = \"x\"\n",
        )
        .file("tools/lint/vx.toml", "[tasks.t]\ncommand = \"x\"\n");
    assert_eq!(
        f.errors(),
        "tools/gen/vx.toml:1:9: deps: no project is named `tools/lnt`\n  hint: did you mean `tools/lint`?\n"
    );
}
