//! What a valid `vx.toml` becomes: values and the locations kept for later errors.

use std::time::Duration;

use vx_core::config::Persistent;
use vx_workspace::parse_config;

const ROOT: &str = r#"[workspace]
members = ["apps/*", "!apps/old"]
concurrency = 8
timeout = "30m"

[tasks.format-check]
command = "prettier --check ."
"#;

const PROJECT: &str = r#"name = "web"
deps = ["gen"]
tags = ["frontend"]

[tasks.build]
description = "Production bundle"
command = "vite build"
depends-on = ["^build", "codegen"]
env = { pass-through = ["SENTRY_DSN", "VITE_*"], define = { NODE_ENV = "production" }, secret = ["TOKEN"] }
timeout = "10m"

[tasks.dev]
command = "vite"
persistent = true

[tasks.check]
depends-on = ["lint", "test"]
persistent = false
"#;

#[test]
fn the_root_file_keeps_workspace_settings_and_member_locations() {
    let config = parse_config(ROOT, "vx.toml", true).unwrap();
    let ws = config.workspace.unwrap();
    let members: Vec<String> = ws
        .members
        .unwrap()
        .iter()
        .map(|m| format!("{} {}", m.at, m.value))
        .collect();
    assert_eq!(members, ["vx.toml:2:12 apps/*", "vx.toml:2:22 !apps/old"]);
    assert_eq!(ws.concurrency, Some(8));
    assert_eq!(ws.timeout, Some(Duration::from_secs(1800)));
    assert!(config.project.tasks.contains_key("format-check"));
}

#[test]
fn a_project_file_keeps_tasks_with_their_locations() {
    let config = parse_config(PROJECT, "apps/web/vx.toml", false).unwrap();
    let project = config.project;
    assert!(config.workspace.is_none());
    let name = project.name.unwrap();
    assert_eq!(
        (name.value.as_str(), name.at.to_string().as_str()),
        ("web", "apps/web/vx.toml:1:8")
    );
    assert_eq!(project.deps[0].at.to_string(), "apps/web/vx.toml:2:9");
    assert_eq!(project.tags, ["frontend"]);

    let build = &project.tasks["build"];
    assert_eq!(build.at.to_string(), "apps/web/vx.toml:5:8");
    assert_eq!(build.command.as_deref(), Some("vite build"));
    assert_eq!(build.description.as_deref(), Some("Production bundle"));
    assert_eq!(build.timeout, Some(Duration::from_secs(600)));
    let depends: Vec<String> = build
        .depends_on
        .iter()
        .map(|d| format!("{} {}", d.at, d.value))
        .collect();
    assert_eq!(
        depends,
        [
            "apps/web/vx.toml:8:15 ^build",
            "apps/web/vx.toml:8:25 codegen"
        ]
    );
    let keys: Vec<String> = build
        .key_locations
        .iter()
        .map(|(k, at)| format!("{k}@{}:{}", at.line, at.column))
        .collect();
    assert_eq!(
        keys,
        [
            "command@7:1",
            "depends-on@8:1",
            "description@6:1",
            "env@9:1",
            "timeout@10:1"
        ]
    );
    let env = build.env.as_ref().unwrap();
    assert_eq!(env.pass_through, ["SENTRY_DSN", "VITE_*"]);
    assert_eq!(env.define["NODE_ENV"], "production");
    assert_eq!(env.secret, ["TOKEN"]);

    assert!(matches!(
        project.tasks["dev"].persistent,
        Some(Persistent::Plain(true))
    ));
    let check = &project.tasks["check"];
    assert!(check.is_group() && !check.is_persistent());
}

#[test]
fn dotted_and_inline_forms_mean_the_same() {
    let text = "tasks.lint.command = \"eslint .\"\n[tasks.test]\nenv.define.CI = \"1\"\ncommand = \"vitest\"\n";
    let config = parse_config(text, "vx.toml", false).unwrap();
    assert_eq!(
        config.project.tasks["lint"].command.as_deref(),
        Some("eslint .")
    );
    assert_eq!(
        config.project.tasks["test"].env.as_ref().unwrap().define["CI"],
        "1"
    );
}
