//! Without the repository's Nx installed: the targets the common Nx
//! plugins would infer, from the same configuration files they read.
//!
//! [`Nx::infer_from_files`] looks, in each project, for the file each plugin that `nx.json`
//! lists starts from (`vite.config.*` for `@nx/vite/plugin`, `jest.config.*` for
//! `@nx/jest/plugin`, …) and adds the targets that plugin would add under the names its
//! options give (`buildTargetName`, `targetName`, …): the tool's own command in the project's
//! directory, `dependsOn: ["^<name>"]` for a build, `continuous` for a server. A project's own
//! target or script of that name wins, as under Nx. They are written **uncached**, each with
//! a TODO: the plugin reads outputs and inputs from the configuration file's contents, which
//! vx does not evaluate, so a cache would be a guess. `vx init --force` after installing Nx
//! carries over what Nx itself resolves. A plugin vx does not know is left to that.

use std::path::Path;

use vx_core::Location;
use vx_workspace::{JsonValue, JsonValueKind};

use super::Nx;

/// The extensions a JavaScript or TypeScript configuration file may have.
const SCRIPT_EXTS: [&str; 6] = ["ts", "mts", "cts", "js", "mjs", "cjs"];

/// One target a plugin infers: the option naming it, its default name, the command, and
/// whether it is a server (`continuous`) or a build (`dependsOn: ["^build"]`).
struct Inferred {
    option: &'static str,
    default: String,
    command: String,
    continuous: bool,
    build: bool,
}

fn target(option: &'static str, default: &str, command: &str) -> Inferred {
    Inferred {
        option,
        default: default.to_string(),
        command: command.to_string(),
        continuous: false,
        build: false,
    }
}

fn server(option: &'static str, default: &str, command: &str) -> Inferred {
    Inferred {
        continuous: true,
        ..target(option, default, command)
    }
}

fn build(option: &'static str, default: &str, command: &str) -> Inferred {
    Inferred {
        build: true,
        ..target(option, default, command)
    }
}

/// The first of `stem.<ext>` in `dir` (root-relative).
fn config(root: &Path, dir: &str, stem: &str, exts: &[&str]) -> Option<String> {
    exts.iter()
        .map(|ext| format!("{stem}.{ext}"))
        .find(|name| root.join(dir).join(name).is_file())
}

/// What `plugin` infers in the project at `dir`, with the file it read.
fn plugin_targets(
    root: &Path,
    dir: &str,
    plugin: &str,
    options: Option<&JsonValue>,
) -> Option<(String, Vec<Inferred>)> {
    let has = |file: &str| root.join(dir).join(file).is_file();
    let plugin = plugin.trim_end_matches("/plugin");
    match plugin {
        "@nx/vite" => {
            let file = config(root, dir, "vite.config", &SCRIPT_EXTS)?;
            let mut targets = vec![
                build("buildTargetName", "build", "vite build"),
                server("serveTargetName", "serve", "vite"),
                server("devTargetName", "dev", "vite"),
                server("previewTargetName", "preview", "vite preview"),
            ];
            if config(root, dir, "vitest.config", &SCRIPT_EXTS).is_some() {
                targets.push(target("testTargetName", "test", "vitest"));
            }
            if has("tsconfig.json") {
                targets.push(target("typecheckTargetName", "typecheck", "tsc --noEmit"));
            }
            Some((file, targets))
        }
        "@nx/vitest" => {
            let file = config(root, dir, "vitest.config", &SCRIPT_EXTS)
                .or_else(|| config(root, dir, "vite.config", &SCRIPT_EXTS))?;
            Some((file, vec![target("testTargetName", "test", "vitest")]))
        }
        "@nx/jest" => {
            let mut exts = SCRIPT_EXTS.to_vec();
            exts.push("json");
            let file = config(root, dir, "jest.config", &exts)?;
            Some((file, vec![target("targetName", "test", "jest")]))
        }
        "@nx/eslint" => {
            let file = config(root, dir, "eslint.config", &SCRIPT_EXTS).or_else(|| {
                config(
                    root,
                    dir,
                    ".eslintrc",
                    &["json", "js", "cjs", "yml", "yaml"],
                )
            })?;
            Some((file, vec![target("targetName", "lint", "eslint .")]))
        }
        "@nx/js/typescript" => {
            if !has("tsconfig.json") {
                return None;
            }
            let mut targets = Vec::new();
            let typecheck = options.and_then(|o| o.get("typecheck"));
            if !matches!(typecheck.map(|t| &t.kind), Some(JsonValueKind::Bool(false))) {
                let name = typecheck
                    .and_then(|t| t.get("targetName"))
                    .and_then(JsonValue::as_str)
                    .unwrap_or("typecheck");
                targets.push(target("", name, "tsc --build --emitDeclarationOnly"));
            }
            if let Some(build_options) = options.and_then(|o| o.get("build")) {
                let config_name = build_options
                    .get("configName")
                    .and_then(JsonValue::as_str)
                    .unwrap_or("tsconfig.lib.json");
                if has(config_name) {
                    let name = build_options
                        .get("targetName")
                        .and_then(JsonValue::as_str)
                        .unwrap_or("build");
                    targets.push(build("", name, &format!("tsc --build {config_name}")));
                }
            }
            Some(("tsconfig.json".to_string(), targets))
        }
        "@nx/playwright" => {
            let file = config(root, dir, "playwright.config", &SCRIPT_EXTS)?;
            Some((file, vec![target("targetName", "e2e", "playwright test")]))
        }
        "@nx/cypress" => {
            let file = config(root, dir, "cypress.config", &SCRIPT_EXTS)?;
            Some((file, vec![target("targetName", "e2e", "cypress run")]))
        }
        "@nx/next" => {
            let file = config(root, dir, "next.config", &SCRIPT_EXTS)?;
            Some((
                file,
                vec![
                    build("buildTargetName", "build", "next build"),
                    server("devTargetName", "dev", "next dev"),
                    server("startTargetName", "start", "next start"),
                ],
            ))
        }
        "@nx/rsbuild" => {
            let file = config(root, dir, "rsbuild.config", &SCRIPT_EXTS)?;
            Some((
                file,
                vec![
                    build("buildTargetName", "build", "rsbuild build"),
                    server("devTargetName", "dev", "rsbuild dev"),
                ],
            ))
        }
        "@nx/webpack" => {
            let file = config(root, dir, "webpack.config", &SCRIPT_EXTS)?;
            Some((
                file,
                vec![
                    build("buildTargetName", "build", "webpack-cli build"),
                    server("serveTargetName", "serve", "webpack-cli serve"),
                ],
            ))
        }
        "@nx/rollup" => {
            let file = config(root, dir, "rollup.config", &SCRIPT_EXTS)?;
            let command = format!("rollup -c {file}");
            Some((file, vec![build("buildTargetName", "build", &command)]))
        }
        _ => None,
    }
}

/// Whether the plugin entry's `include` and `exclude` globs let `file` (root-relative) in.
fn admitted(entry: &JsonValue, file: &str) -> bool {
    let matches = |key: &str| {
        entry.get(key).and_then(JsonValue::as_array).map(|globs| {
            globs
                .iter()
                .filter_map(JsonValue::as_str)
                .filter_map(|g| globset::Glob::new(g).ok())
                .any(|g| g.compile_matcher().is_match(file))
        })
    };
    matches("include").unwrap_or(true) && !matches("exclude").unwrap_or(false)
}

impl Nx {
    /// Adds the targets the listed plugins would infer in each project from its
    /// configuration files; how many were added.
    pub fn infer_from_files(
        &mut self,
        root: &Path,
        has_script: &dyn Fn(&str, &str) -> bool,
    ) -> usize {
        let mut added = 0;
        let plugins = self.plugins.clone();
        let dirs: Vec<String> = self
            .projects
            .keys()
            .filter(|d| !d.is_empty())
            .cloned()
            .collect();
        for dir in dirs {
            for entry in &plugins {
                let (name, options) = match entry.as_str() {
                    Some(name) => (name, None),
                    None => match entry.get("plugin").and_then(JsonValue::as_str) {
                        Some(name) => (name, entry.get("options")),
                        None => continue,
                    },
                };
                let Some((file, targets)) = plugin_targets(root, &dir, name, options) else {
                    continue;
                };
                if !admitted(entry, &format!("{dir}/{file}")) {
                    continue;
                }
                for inferred in targets {
                    let target_name = options
                        .and_then(|o| o.get(inferred.option))
                        .and_then(JsonValue::as_str)
                        .map_or_else(|| inferred.default.clone(), str::to_string);
                    let project = self.projects.get_mut(&dir).expect("a project of the list");
                    if project.targets.contains_key(&target_name) || has_script(&dir, &target_name)
                    {
                        continue;
                    }
                    project.targets.insert(
                        target_name.clone(),
                        definition(&dir, &target_name, &inferred),
                    );
                    self.inferred.insert(
                        (dir.clone(), target_name),
                        format!("{dir}/{file} (as {name} would)"),
                    );
                    added += 1;
                }
            }
        }
        added
    }
}

/// The target as Nx would resolve it: the command in the project's directory, uncached; a
/// build waits for the same target of the dependencies (`^<name>`).
fn definition(dir: &str, name: &str, inferred: &Inferred) -> JsonValue {
    let value = |kind| JsonValue {
        at: Location::default(),
        kind,
    };
    let key = |k: &str| vx_core::Spanned::new(k.to_string(), Location::default());
    let text = |s: &str| value(JsonValueKind::String(s.to_string()));
    let mut entries = vec![
        (key("executor"), text("nx:run-commands")),
        (
            key("options"),
            value(JsonValueKind::Object(vec![
                (key("command"), text(&inferred.command)),
                (key("cwd"), text(dir)),
            ])),
        ),
        (key("cache"), value(JsonValueKind::Bool(false))),
    ];
    if inferred.continuous {
        entries.push((key("continuous"), value(JsonValueKind::Bool(true))));
    }
    if inferred.build {
        entries.push((
            key("dependsOn"),
            value(JsonValueKind::Array(vec![text(&format!("^{name}"))])),
        ));
    }
    value(JsonValueKind::Object(entries))
}
