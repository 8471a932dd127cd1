//! Templates through the whole load (CFG-13), on a temporary workspace. Tests of a template's
//! `cache` load with every later-milestone key available (`milestones::test_gate`), since
//! `cache` is still refused by this build.

use std::path::Path;

use vx_core::config::TaskConfig;
use vx_core::{Diagnostic, Workspace};

use crate::load::load_workspace;
use crate::milestones::test_gate::with_every_key_available;
use crate::LoadError;

struct Files(tempfile::TempDir);

impl Files {
    fn new(files: &[(&str, &str)]) -> Files {
        let dir = tempfile::tempdir().expect("a temporary directory");
        for (rel, text) in files {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().expect("a parent")).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Files(dir)
    }

    fn root(&self) -> &Path {
        self.0.path()
    }
}

fn load(files: &[(&str, &str)]) -> Result<Workspace, Vec<Diagnostic>> {
    let files = Files::new(files);
    match load_workspace(files.root(), None, None) {
        Ok(ws) => Ok(ws),
        Err(LoadError::Config(errors)) => Err(errors),
        Err(other) => panic!("{other:?}"),
    }
}

fn loaded(files: &[(&str, &str)]) -> Workspace {
    load(files).unwrap_or_else(|errors| panic!("config errors:\n{}", render(&errors)))
}

fn errors(files: &[(&str, &str)]) -> String {
    match load(files) {
        Ok(_) => panic!("expected configuration errors"),
        Err(errors) => render(&errors),
    }
}

fn render(errors: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in errors {
        out.push_str(&format!("{d}\n"));
        for hint in &d.hints {
            out.push_str(&format!("  hint: {hint}\n"));
        }
    }
    out
}

fn task<'w>(ws: &'w Workspace, project: &str, name: &str) -> &'w TaskConfig {
    ws.project(project)
        .unwrap_or_else(|| panic!("no project {project}"))
        .config
        .tasks
        .get(name)
        .unwrap_or_else(|| panic!("no task {project}#{name}"))
}

/// `key file:line` for each located key of a task.
fn sources(task: &TaskConfig) -> Vec<String> {
    task.key_locations
        .iter()
        .map(|(key, at)| format!("{key} {}:{}", at.file, at.line))
        .collect()
}

const ROOT: &str = "[workspace]\nmembers = [\"packages/*\"]\n\n\
                    [workspace.tasks.build]\n\
                    command = \"tsc -b\"\n\
                    depends-on = [\"^build\"]\n\
                    description = \"Compile\"\n";

fn package(name: &str, scripts: &str) -> String {
    format!("{{\n  \"name\": \"{name}\",\n  \"scripts\": {{ {scripts} }}\n}}\n")
}

#[test]
fn a_template_applies_to_scripts_and_declared_tasks_and_yields_key_by_key() {
    let web = package("web", "\"build\": \"vite build\"");
    let docs = package("docs", "\"lint\": \"eslint .\"");
    let ws = loaded(&[
        ("vx.toml", ROOT),
        ("packages/web/package.json", &web),
        ("packages/lib/vx.toml", "[tasks.build]\ncommand = \"own\"\n"),
        ("packages/docs/package.json", &docs),
    ]);
    let web = task(&ws, "web", "build");
    assert_eq!(
        web.command.as_deref(),
        Some("tsc -b"),
        "the template's command wins over the script"
    );
    assert_eq!(web.depends_on[0].value, "^build");
    assert_eq!(web.at.to_string(), "vx.toml:4:18");
    assert_eq!(
        sources(web),
        [
            "command vx.toml:5",
            "depends-on vx.toml:6",
            "description vx.toml:7"
        ]
    );
    let lib = task(&ws, "packages/lib", "build");
    assert_eq!(lib.command.as_deref(), Some("own"));
    assert_eq!(lib.description.as_deref(), Some("Compile"));
    assert_eq!(
        sources(lib),
        [
            "command packages/lib/vx.toml:2",
            "depends-on vx.toml:6",
            "description vx.toml:7"
        ]
    );
    assert!(ws.project("docs").unwrap().config.tasks.is_empty());
}

#[test]
fn without_a_command_the_script_is_the_command() {
    let root = "[workspace]\nmembers = [\"packages/*\"]\n[workspace.tasks.test]\nenv = { define = { CI = \"1\" } }\n";
    let web = package("web", "\"test\": \"vitest run\"");
    let ws = loaded(&[("vx.toml", root), ("packages/web/package.json", &web)]);
    let test = task(&ws, "web", "test");
    assert_eq!(test.command.as_deref(), Some("vitest run"));
    assert_eq!(
        sources(test),
        ["command packages/web/package.json:3", "env vx.toml:4"]
    );
}

#[test]
fn extends_false_keeps_the_template_off() {
    let web = package("web", "\"build\": \"vite build\"");
    let ws = loaded(&[
        ("vx.toml", ROOT),
        ("packages/web/package.json", &web),
        (
            "packages/web/vx.toml",
            "[tasks.build]\ncommand = \"make\"\nextends = false\n",
        ),
    ]);
    let build = task(&ws, "web", "build");
    assert_eq!(build.command.as_deref(), Some("make"));
    assert!(build.depends_on.is_empty());
    assert_eq!(build.description, None);
}

#[test]
fn extends_false_alone_means_no_task_of_that_name() {
    let web = package("web", "\"build\": \"vite build\", \"lint\": \"eslint .\"");
    let ws = loaded(&[
        ("vx.toml", &format!("{ROOT}\n[workspace.tasks.lint]\n")),
        ("packages/web/package.json", &web),
        ("packages/web/vx.toml", "[tasks.lint]\nextends = false\n"),
    ]);
    let tasks = &ws.project("web").unwrap().config.tasks;
    assert!(tasks.contains_key("build"));
    assert!(!tasks.contains_key("lint"), "{tasks:?}");
    // With any other key it is a task of its own, which needs something to run.
    let refused = errors(&[
        ("vx.toml", ROOT),
        ("packages/web/package.json", &web),
        (
            "packages/web/vx.toml",
            "[tasks.build]\nextends = false\ndescription = \"x\"\n",
        ),
    ]);
    assert!(
        refused.contains("task `build` needs either `command` or `depends-on`"),
        "{refused}"
    );
}

#[test]
fn the_root_gets_a_template_only_through_its_own_task() {
    let root_package = package("root", "\"build\": \"vx run build\"");
    let ws = loaded(&[
        (
            "vx.toml",
            &format!("{ROOT}\n[tasks.lint]\ncommand = \"x\"\n"),
        ),
        ("package.json", &root_package),
    ]);
    let tasks = &ws.project("//").unwrap().config.tasks;
    assert!(!tasks.contains_key("build"), "{tasks:?}");

    let root = format!("{ROOT}\n[tasks.build]\ndescription = \"all\"\n");
    let ws = loaded(&[("vx.toml", &root), ("package.json", &root_package)]);
    let build = task(&ws, "//", "build");
    assert_eq!(build.command.as_deref(), Some("tsc -b"));
    assert_eq!(build.description.as_deref(), Some("all"));
}

#[test]
fn a_project_task_may_rely_on_the_template_for_its_command() {
    let ws = loaded(&[
        ("vx.toml", ROOT),
        (
            "packages/lib/vx.toml",
            "[tasks.build]\nenv = { pass-through = [\"NODE_ENV\"] }\n",
        ),
    ]);
    assert_eq!(
        task(&ws, "packages/lib", "build").command.as_deref(),
        Some("tsc -b")
    );
}

#[test]
fn without_command_and_script_the_usual_rules_apply() {
    let root = "[workspace]\nmembers = [\"packages/*\"]\n[workspace.tasks.check]\ndescription = \"all checks\"\n";
    assert_eq!(
        errors(&[
            ("vx.toml", root),
            ("packages/lib/vx.toml", "[tasks.check]\ntimeout = \"1m\"\n"),
        ]),
        "packages/lib/vx.toml:1:8: task `check` needs either `command` or `depends-on` (from the \
         template at vx.toml:3:18, applied to `packages/lib`)\n"
    );
}

#[test]
fn an_empty_script_cannot_be_the_command() {
    let root =
        "[workspace]\nmembers = [\"packages/*\"]\n[workspace.tasks.test]\ntimeout = \"1m\"\n";
    let web = package("web", "\"test\": \"\"");
    assert_eq!(
        errors(&[("vx.toml", root), ("packages/web/package.json", &web)]),
        "packages/web/package.json:3:16: script `test` is empty, so it cannot be the command of \
         `web#test` (from the template at vx.toml:3:18, applied to `web`)\n"
    );
}

const CACHED_ROOT: &str = "[workspace]\nmembers = [\"packages/*\"]\n\n\
                           [workspace.tasks.build]\n\
                           command = \"tsc -b\"\n\
                           cache = { outputs = [\"dist/**\"] }\n";

#[test]
fn a_template_cache_without_inputs_takes_everything_but_the_projects_outputs() {
    let ws = with_every_key_available(|| {
        loaded(&[
            ("vx.toml", CACHED_ROOT),
            (
                "packages/web/vx.toml",
                "[tasks.build]\n\n\
                 [tasks.codegen]\ncommand = \"gen\"\n\
                 cache = { inputs = [\"schema.graphql\"], outputs = [\"src/gen/**\", \"!src/gen/keep\"], \
                 workspace-outputs = [\"packages/web/types/**\", \"shared/**\"] }\n",
            ),
        ])
    });
    let build = task(&ws, "packages/web", "build");
    let cache = build.cache.as_ref().unwrap();
    assert_eq!(
        cache.inputs.as_deref().unwrap(),
        ["**", "!dist/**", "!src/gen/**", "!types/**"]
    );
    assert_eq!(sources(build)[0], "cache vx.toml:6");
}

#[test]
fn a_projects_cache_extends_the_templates_key_by_key() {
    let ws = with_every_key_available(|| {
        loaded(&[
            (
                "vx.toml",
                "[workspace]\nmembers = [\"packages/*\"]\n\n\
                 [workspace.tasks.build]\ncommand = \"tsc -b\"\n\
                 cache = { outputs = [\"dist/**\"], env = [\"NODE_ENV\"] }\n",
            ),
            (
                "packages/web/vx.toml",
                "[tasks.build]\ncache = { outputs = [\"...\", \"types/**\"] }\n",
            ),
            (
                "packages/api/vx.toml",
                "[tasks.build]\ncache = { inputs = [\"src/**\"], env = [] }\n",
            ),
        ])
    });
    let web = task(&ws, "packages/web", "build").cache.as_ref().unwrap();
    assert_eq!(web.outputs.as_deref().unwrap(), ["dist/**", "types/**"]);
    assert_eq!(web.env, ["NODE_ENV"], "a key the project leaves out stays");
    // The default inputs see the outputs as extended.
    assert_eq!(
        web.inputs.as_deref().unwrap(),
        ["**", "!dist/**", "!types/**"]
    );
    let api = task(&ws, "packages/api", "build").cache.as_ref().unwrap();
    assert_eq!(api.inputs.as_deref().unwrap(), ["src/**"]);
    assert_eq!(api.outputs.as_deref().unwrap(), ["dist/**"]);
    assert!(
        api.env.is_empty(),
        "a key the project sets replaces the template's"
    );
}

#[test]
fn a_splice_without_a_template_is_refused() {
    let found = with_every_key_available(|| {
        errors(&[
            ("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n"),
            (
                "packages/web/vx.toml",
                "[tasks.build]\ncommand = \"x\"\ncache = { inputs = [\"**\"], outputs = [\"...\"] }\n",
            ),
        ])
    });
    assert_eq!(
        found,
        "packages/web/vx.toml:3:1: `...` stands for the template's entries, but no template's `cache` applies to this task\n"
    );
}

const SETS_ROOT: &str = "[workspace]\nmembers = [\"packages/*\"]\n\n\
    [workspace.tasks.build]\ncommand = \"tsc -b\"\n\
    cache = { input-sets = [\"production\"], outputs = [\"dist/**\"] }\n\n\
    [workspace.input-sets.shared]\nworkspace-inputs = [\"tsconfig.base.json\"]\nenv = [\"NODE_ENV\"]\n\n\
    [workspace.input-sets.production]\ninput-sets = [\"shared\"]\ninputs = [\"**\", \"!**/*.spec.ts\"]\n";

#[test]
fn input_sets_add_their_entries_to_templates_and_tasks() {
    let ws = with_every_key_available(|| {
        loaded(&[
            ("vx.toml", SETS_ROOT),
            ("packages/web/vx.toml", "[tasks.build]\n"),
            (
                "packages/api/vx.toml",
                "[tasks.test]\ncommand = \"jest\"\n\
                 cache = { input-sets = [\"shared\"], inputs = [\"src/**\"], outputs = [] }\n",
            ),
        ])
    });
    let web = task(&ws, "packages/web", "build").cache.as_ref().unwrap();
    assert_eq!(web.inputs.as_deref().unwrap(), ["**", "!**/*.spec.ts"]);
    assert_eq!(web.workspace_inputs, ["tsconfig.base.json"]);
    assert_eq!(web.env, ["NODE_ENV"]);
    let api = task(&ws, "packages/api", "test").cache.as_ref().unwrap();
    assert_eq!(api.inputs.as_deref().unwrap(), ["src/**"]);
    assert_eq!(api.workspace_inputs, ["tsconfig.base.json"]);
}

#[test]
fn unknown_and_circular_input_sets_are_refused_where_written() {
    let found = with_every_key_available(|| {
        errors(&[
            (
                "vx.toml",
                "[workspace]\nmembers = [\"packages/*\"]\n\n\
                 [workspace.input-sets.a]\ninput-sets = [\"b\"]\n\n\
                 [workspace.input-sets.b]\ninput-sets = [\"a\", \"prod\"]\n\n\
                 [workspace.input-sets.production]\ninputs = [\"**\"]\n",
            ),
            (
                "packages/web/vx.toml",
                "[tasks.build]\ncommand = \"x\"\ncache = { input-sets = [\"productoin\"], outputs = [] }\n",
            ),
        ])
    });
    assert_eq!(
        found,
        "packages/web/vx.toml:3:1: `cache` needs `inputs`\n\
         packages/web/vx.toml:3:25: cache.input-sets: no input set is named `productoin` in [workspace.input-sets]\n\
         \x20 hint: did you mean `production`?\n\
         vx.toml:4:23: input set `a` includes itself: a → b → a\n\
         vx.toml:7:23: input set `b` includes itself: b → a → b\n\
         vx.toml:8:20: input-sets.b.input-sets: no input set is named `prod`\n"
    );
}

#[test]
fn resolved_tasks_are_checked_and_errors_name_the_template_and_project() {
    let found = with_every_key_available(|| {
        errors(&[
            ("vx.toml", CACHED_ROOT),
            ("packages/web/vx.toml", "[tasks.build]\npersistent = true\n"),
            ("packages/lib/vx.toml", "[tasks.build]\n"),
        ])
    });
    assert_eq!(
        found,
        "vx.toml:6:1: `cache` is not allowed on a persistent task (from the template at \
         vx.toml:4:18, applied to `packages/web`)\n"
    );
}

#[test]
fn a_templates_own_problem_is_reported_once() {
    let root = format!("{CACHED_ROOT}persistent = true\n");
    let found = with_every_key_available(|| {
        errors(&[
            ("vx.toml", &root),
            ("packages/web/vx.toml", "[tasks.build]\n"),
            ("packages/lib/vx.toml", "[tasks.build]\n"),
        ])
    });
    assert_eq!(
        found,
        "vx.toml:6:1: `cache` is not allowed on a persistent task\n"
    );
}

#[test]
fn upstream_entries_are_checked_against_the_resolved_depends_on() {
    let root = "[workspace]\nmembers = [\"packages/*\"]\n[workspace.tasks.build]\ncommand = \"x\"\n\
                cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"], upstream = [\"codegen\"] }\n";
    let codegen = "[tasks.codegen]\ncommand = \"gen\"\n";
    let found = with_every_key_available(|| {
        errors(&[
            ("vx.toml", root),
            ("packages/web/vx.toml", &format!("[tasks.build]\n{codegen}")),
        ])
    });
    assert_eq!(
        found,
        "vx.toml:5:67: cache.upstream: `codegen` is not a `depends-on` entry of this task (from \
         the template at vx.toml:3:18, applied to `packages/web`)\n"
    );
    with_every_key_available(|| {
        loaded(&[
            ("vx.toml", root),
            (
                "packages/web/vx.toml",
                &format!("[tasks.build]\ndepends-on = [\"codegen\"]\n{codegen}"),
            ),
        ])
    });
}

#[test]
fn overlapping_outputs_are_refused_at_load() {
    let found = with_every_key_available(|| {
        errors(&[
            ("vx.toml", CACHED_ROOT),
            (
                "packages/web/vx.toml",
                "[tasks.build]\n[tasks.types]\ncommand = \"tsc\"\n\
                 cache = { inputs = [\"src/**\"], outputs = [\"dist/types/**\"] }\n",
            ),
        ])
    });
    assert_eq!(
        found,
        "`packages/web#build` and `packages/web#types` both declare outputs under `dist/`\n  \
         hint: give each its own directory, or let one task write both\n"
    );
}

#[test]
fn inputs_reaching_outputs_are_refused_unless_the_rule_is_off() {
    let project = "[tasks.codegen]\ncommand = \"gen\"\n\
                   cache = { inputs = [\"schema.graphql\"], outputs = [\"src/__generated__/**\"] }\n\
                   [tasks.test]\ncommand = \"vitest\"\ncache = { inputs = [\"src/**\"], outputs = [] }\n";
    let root = "[workspace]\nmembers = [\"packages/*\"]\n";
    let found = with_every_key_available(|| {
        errors(&[("vx.toml", root), ("packages/web/vx.toml", project)])
    });
    assert_eq!(
        found,
        "packages/web/vx.toml:6:21: `packages/web#test` input `src/**` can match outputs of `packages/web#codegen` \
         (src/__generated__/**)\n  hint: add \"!src/__generated__/**\" to its inputs, or set \
         [workspace.rules] upfront-keys = false\n"
    );
    let root = format!("{root}[workspace.rules]\nupfront-keys = false\n");
    with_every_key_available(|| loaded(&[("vx.toml", &root), ("packages/web/vx.toml", project)]));
}

#[test]
fn a_file_alone_resolves_its_own_templates() {
    let text = "[workspace]\n[workspace.tasks.lint]\ncommand = \"eslint .\"\n[tasks.lint]\n";
    let config = crate::parse_config(text, "vx.toml", true).unwrap();
    assert_eq!(
        config.project.tasks["lint"].command.as_deref(),
        Some("eslint .")
    );
}
