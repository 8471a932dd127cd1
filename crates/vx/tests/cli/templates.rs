//! Workspace task templates through the binary (CFG-13): which projects a template reaches,
//! how a project's keys replace the template's, `extends = false`, the script as the command,
//! where `vx show` says each key came from, and errors naming the template and the project.

use vx_test_support::fixture::Fixture;

use crate::{assert_contains, empty};

/// A root template and these projects under `packages/`, each given as (directory, package.json, vx.toml).
fn workspace(template: &str, projects: &[(&str, Option<&str>, Option<&str>)]) -> Fixture {
    let f = empty();
    f.write(
        "vx.toml",
        &format!("[workspace]\nmembers = [\"packages/*\"]\n\n{template}"),
    );
    for (dir, package, config) in projects {
        if let Some(package) = package {
            f.write(&format!("packages/{dir}/package.json"), package);
        }
        if let Some(config) = config {
            f.write(&format!("packages/{dir}/vx.toml"), config);
        }
    }
    f.commit();
    f
}

const BUILD_TEMPLATE: &str = "[workspace.tasks.build]\n\
                              command = \"echo template > built.txt\"\n\
                              description = \"Compile\"\n";

fn package(name: &str, scripts: &str) -> String {
    format!("{{\n  \"name\": \"{name}\",\n  \"scripts\": {{ {scripts} }}\n}}\n")
}

#[test]
fn a_template_reaches_projects_with_the_script_or_the_task() {
    let web = package("web", "\"build\": \"echo script > built.txt\"");
    let docs = package("docs", "\"lint\": \"echo lint\"");
    let f = workspace(
        BUILD_TEMPLATE,
        &[
            ("web", Some(&web), None),
            ("lib", None, Some("name = \"lib\"\n[tasks.build]\n")),
            ("docs", Some(&docs), None),
        ],
    );
    let out = f.vx(&["run", "build", "--all"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(f.read("packages/web/built.txt"), "template\n");
    assert_eq!(f.read("packages/lib/built.txt"), "template\n");
    assert!(!f.path("packages/docs/built.txt").exists());
    assert!(!out.stdout.contains("docs#build"), "{}", out.stdout);
}

#[test]
fn a_projects_keys_replace_the_templates() {
    let f = workspace(
        BUILD_TEMPLATE,
        &[(
            "lib",
            None,
            Some("name = \"lib\"\n[tasks.build]\ncommand = \"echo own-build\"\n"),
        )],
    );
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "own-build");
    let shown = f.vx(&["show", "lib#build"]);
    assert_eq!(shown.code, 0, "{shown:?}");
    assert_contains(
        &shown.stdout,
        "  command = \"echo own-build\"  # packages/lib/vx.toml:3\n",
    );
    assert_contains(&shown.stdout, "  description = \"Compile\"  # vx.toml:6\n");
}

#[test]
fn extends_false_keeps_the_template_off() {
    let template = format!("{BUILD_TEMPLATE}depends-on = [\"prepare\"]\n");
    let f = workspace(
        &template,
        &[(
            "lib",
            None,
            Some("name = \"lib\"\n[tasks.build]\ncommand = \"echo own-build\"\nextends = false\n"),
        )],
    );
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "own-build");
    let shown = f.vx(&["show", "lib#build"]);
    assert!(!shown.stdout.contains("Compile"), "{}", shown.stdout);
    assert!(!shown.stdout.contains("prepare"), "{}", shown.stdout);
}

#[test]
fn without_a_command_the_script_is_the_command() {
    let template = "[workspace.tasks.test]\ndescription = \"Unit tests\"\n";
    let web = package("web", "\"test\": \"echo script-test\"");
    let f = workspace(template, &[("web", Some(&web), None)]);
    let out = f.vx(&["run", "web#test"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "script-test");
    let shown = f.vx(&["show", "web"]);
    assert_eq!(shown.code, 0, "{shown:?}");
    assert_contains(
        &shown.stdout,
        "  command = \"echo script-test\"  # packages/web/package.json:3\n",
    );
    assert_contains(
        &shown.stdout,
        "  description = \"Unit tests\"  # vx.toml:5\n",
    );
    let listing = f.vx(&["show"]);
    assert_contains(&listing.stdout, "1 task  (no vx.toml)");
}

#[test]
fn a_template_given_task_counts_as_declared_for_dependencies() {
    let lib = package("lib", "\"build\": \"echo lib-script\"");
    let app = r#"{ "name": "app", "dependencies": { "lib": "workspace:*" }, "scripts": { "build": "x" } }"#;
    let template = "[workspace.tasks.build]\ndepends-on = [\"^build\"]\n";
    let f = workspace(
        template,
        &[("lib", Some(&lib), None), ("app", Some(app), None)],
    );
    let out = f.vx(&["run", "app#build", "--dry=json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stdout, "lib#build");
}

#[test]
fn errors_of_a_resolved_task_name_the_template_and_the_project() {
    let template = "[workspace.tasks.check]\ndescription = \"All checks\"\n";
    let f = workspace(
        template,
        &[(
            "lib",
            None,
            Some("name = \"lib\"\n[tasks.check]\ntimeout = \"1m\"\n"),
        )],
    );
    let out = f.vx(&["run", "check", "--all"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: packages/lib/vx.toml:2:8: task `check` needs either `command` or `depends-on` \
         (from the template at vx.toml:4:18, applied to `lib`)\n"
    );
}

#[test]
fn a_template_dependency_error_names_the_project() {
    let template = "[workspace.tasks.build]\ncommand = \"true\"\ndepends-on = [\"codgen\"]\n";
    let web = package("web", "\"build\": \"x\", \"codegen\": \"y\"");
    let f = workspace(template, &[("web", Some(&web), None)]);
    let out = f.vx(&["run", "web#build"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: vx.toml:6:15: task `web#build` depends on `codgen`, which project `web` does not declare\n"
    );
}

/// A list of inputs written once as a set and used by several templates;
/// a project that adds one output to its template's without restating the rest.
#[test]
fn input_sets_are_written_once_and_a_projects_cache_extends_its_templates() {
    let sets = "[workspace.input-sets.shared-globals]\n\
                workspace-inputs = [\"tsconfig.base.json\", \"babel.config.json\"]\n\n\
                [workspace.input-sets.production]\n\
                input-sets = [\"shared-globals\"]\n\
                inputs = [\"**\", \"!**/*.spec.txt\"]\n\n\
                [workspace.tasks.build]\n\
                command = \"mkdir -p dist && cp src.txt dist/\"\n\
                cache = { input-sets = [\"production\"], outputs = [\"dist/**\"] }\n\n\
                [workspace.tasks.lint]\n\
                command = \"echo lint\"\n\
                cache = { input-sets = [\"shared-globals\"], inputs = [\"src.txt\"], outputs = [] }\n";
    let f = workspace(
        sets,
        &[
            ("lib", None, Some("[tasks.build]\n[tasks.lint]\n")),
            (
                "web",
                None,
                Some(
                    "[tasks.build]\ncommand = \"mkdir -p dist types && cp src.txt dist/ && echo t > types/t.txt\"\n\
                     cache = { outputs = [\"...\", \"types/**\"] }\n\n[tasks.lint]\n",
                ),
            ),
        ],
    );
    for dir in ["lib", "web"] {
        f.write(&format!("packages/{dir}/src.txt"), "source\n");
        f.write(&format!("packages/{dir}/a.spec.txt"), "spec\n");
    }
    f.write("tsconfig.base.json", "{}\n");
    f.write("babel.config.json", "{}\n");
    f.commit();

    let shown = f.vx(&["show", "packages/web#build", "--format", "json"]);
    assert_eq!(shown.code, 0, "{shown:?}");
    let json: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    let cache = &json["config"]["cache"];
    assert_eq!(cache["outputs"], serde_json::json!(["dist/**", "types/**"]));
    assert_eq!(cache["inputs"], serde_json::json!(["**", "!**/*.spec.txt"]));
    assert_eq!(
        cache["workspace-inputs"],
        serde_json::json!(["tsconfig.base.json", "babel.config.json"])
    );

    let first = f.vx(&["run", "build", "lint", "--all"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    // The extra output is restored with the template's.
    std::fs::remove_dir_all(f.path("packages/web/types")).unwrap();
    std::fs::remove_dir_all(f.path("packages/web/dist")).unwrap();
    let restored = f.vx(&["run", "packages/web#build"]);
    assert_contains(&restored.stdout, "1 cached (100%)");
    assert_eq!(f.read("packages/web/types/t.txt"), "t\n");
    // A spec file is not a production input; a shared global is an input of every task.
    f.write("packages/web/a.spec.txt", "spec, edited\n");
    let after_spec = f.vx(&["run", "build", "lint", "--all"]);
    assert_contains(&after_spec.stdout, "4 tasks · 4 cached (100%)");
    f.write("babel.config.json", "{\"presets\": []}\n");
    let after_global = f.vx(&["run", "build", "lint", "--all"]);
    assert_contains(&after_global.stdout, "4 tasks · 0 cached (0%)");
}

/// A template's input glob that meets outputs in many projects is one error
/// at its `file:line:column`, naming the outputs it meets; outputs git ignores are never
/// inputs, so they are not flagged at all.
#[test]
fn an_overlapping_template_glob_is_one_located_error_and_ignored_outputs_are_not_flagged() {
    let root = "[workspace.tasks.test]\n\
                command = \"echo test\"\n\
                cache = { inputs = [\"**\"], outputs = [] }\n\n\
                [workspace.tasks.gen]\n\
                command = \"mkdir -p gen && echo g > gen/g.txt\"\n\
                cache = { inputs = [\"schema.txt\"], outputs = [\"gen/**\"] }\n";
    let project = |name: &str| package(name, "\"test\": \"t\", \"gen\": \"g\"");
    let names = ["a", "b", "c", "d", "e"];
    let packages: Vec<String> = names.iter().map(|n| project(n)).collect();
    let projects: Vec<(&str, Option<&str>, Option<&str>)> = names
        .iter()
        .zip(&packages)
        .map(|(n, p)| (*n, Some(p.as_str()), None))
        .collect();
    let f = workspace(root, &projects);
    let out = f.vx(&["run", "test", "--all", "--dry"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: vx.toml:6:21: input `**` of 5 tasks can match outputs of `a#gen` (gen/**), `b#gen` (gen/**), `c#gen` (gen/**) and 2 more\n  \
         hint: add \"!gen/**\" to its inputs, or set [workspace.rules] upfront-keys = false\n"
    );

    f.write(".gitignore", "gen/\n");
    f.commit();
    let out = f.vx(&["run", "gen", "test", "--all"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    // The generated files are ignored, so they are not inputs: a second run is all hits.
    let again = f.vx(&["run", "gen", "test", "--all"]);
    assert_contains(&again.stdout, "10 tasks · 10 cached (100%)");
}

/// `^production` (a set named with `^`) folds that set's files in every
/// project the task's project depends on, transitively, without a `depends-on` edge; an
/// upstream edit that breaks a dependant makes the dependant run (and fail) instead of
/// being served, and `vx why` names the upstream file. The upstream's outputs are left out.
#[test]
fn a_caret_input_set_folds_the_dependency_projects_files_transitively() {
    let root = "[workspace.input-sets.default]\n\
                inputs = [\"**\"]\n\n\
                [workspace.input-sets.production]\n\
                inputs = [\"src/**\"]\n\n\
                [workspace.tasks.compile]\n\
                command = \"mkdir -p dist && date +%N > dist/stamp && (test ! -f check.sh || sh check.sh)\"\n\
                cache = { input-sets = [\"default\", \"^production\"], outputs = [\"dist/**\"] }\n";
    let manifest = |name: &str, dep: Option<&str>| {
        let deps = dep.map_or(String::new(), |d| {
            format!(", \"dependencies\": {{ \"{d}\": \"workspace:*\" }}")
        });
        format!("{{ \"name\": \"{name}\", \"scripts\": {{ \"compile\": \"x\" }}{deps} }}\n")
    };
    let (core, ui, app) = (
        manifest("core", None),
        manifest("ui", Some("core")),
        manifest("app", Some("ui")),
    );
    let f = workspace(
        root,
        &[
            ("core", Some(&core), None),
            ("ui", Some(&ui), None),
            ("app", Some(&app), None),
        ],
    );
    f.write("packages/core/src/api.txt", "export foo\n");
    f.write("packages/core/README.md", "core\n");
    for dir in ["ui", "app"] {
        f.write(
            &format!("packages/{dir}/check.sh"),
            "grep -q 'export foo' ../core/src/api.txt\n",
        );
    }
    f.commit();

    let shown = f.vx(&["show", "app#compile", "--format", "json"]);
    assert_eq!(shown.code, 0, "{shown:?}");
    let json: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(
        json["config"]["cache"]["dependency-inputs"],
        serde_json::json!(["src/**"])
    );

    let first = f.vx(&["run", "compile", "--all"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    // core's outputs (not ignored by git) are no input of its dependants.
    let second = f.vx(&["run", "compile", "--all"]);
    assert_contains(&second.stdout, "3 tasks · 3 cached (100%)");
    // A file outside the set moves core only.
    f.write("packages/core/README.md", "core, edited\n");
    let readme = f.vx(&["run", "compile", "--all"]);
    assert_eq!(readme.code, 0, "{}{}", readme.stdout, readme.stderr);
    assert_contains(&readme.stdout, "3 tasks · 2 cached");

    // The export the dependants use is removed: both run again and fail, as Nx would.
    f.write("packages/core/src/api.txt", "export bar\n");
    let broken = f.vx(&["run", "compile", "--all", "--continue"]);
    assert_eq!(broken.code, 1, "{}{}", broken.stdout, broken.stderr);
    assert_contains(&broken.stdout, "3 tasks · 0 cached");
    let why = f.vx(&["why", "app#compile"]);
    assert_eq!(why.code, 0, "{}{}", why.stdout, why.stderr);
    assert_contains(&why.stdout, "changed  input     packages/core/src/api.txt");

    // --affected sees the same: a change in core seeds its transitive dependants.
    let affected = f.vx(&["run", "compile", "--affected=HEAD", "--dry"]);
    assert_eq!(affected.code, 0, "{}{}", affected.stdout, affected.stderr);
    for id in ["core#compile", "ui#compile", "app#compile"] {
        assert_contains(&affected.stdout, id);
    }
}

/// `^name` belongs in a task's `cache.input-sets`; in a set's own list it is refused, and an
/// unknown `^name` gets a did-you-mean that keeps the caret.
#[test]
fn a_caret_set_is_refused_inside_a_set_and_an_unknown_one_is_named() {
    let f = workspace(
        "[workspace.input-sets.production]\ninputs = [\"src/**\"]\n\n\
         [workspace.input-sets.all]\ninput-sets = [\"^production\"]\n\n\
         [workspace.tasks.compile]\ncommand = \"true\"\n\
         cache = { input-sets = [\"^prodution\"], outputs = [] }\n",
        &[(
            "core",
            Some("{ \"name\": \"core\", \"scripts\": { \"compile\": \"x\" } }"),
            None,
        )],
    );
    let out = f.vx(&["run", "compile", "--all", "--dry"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_contains(
        &out.stderr,
        "vx.toml:8:15: input-sets.all.input-sets: `^production` names a set in the dependency projects, which only a task's `cache.input-sets` can do",
    );
    assert_contains(
        &out.stderr,
        "cache.input-sets: no input set is named `prodution` in [workspace.input-sets]\n  hint: did you mean `^production`?",
    );
}

/// SCHED-6 with `^name`: a task folding its dependencies' files has a predicted key while an
/// uncached task upstream in the run (here another project's generator) may still write
/// them, as for `workspace-inputs`.
#[test]
fn a_caret_input_set_makes_the_key_a_prediction_behind_an_uncached_writer() {
    let root = "[workspace.input-sets.src]\ninputs = [\"src/**\"]\n";
    let f = workspace(
        root,
        &[
            (
                "lib",
                Some("{ \"name\": \"lib\" }"),
                Some("[tasks.gen]\ncommand = \"mkdir -p src && echo g > src/g.txt\"\n"),
            ),
            (
                "app",
                Some("{ \"name\": \"app\", \"dependencies\": { \"lib\": \"workspace:*\" } }"),
                Some(
                    "[tasks.check]\ncommand = \"true\"\ndepends-on = [\"lib#gen\"]\n\
                     cache = { input-sets = [\"^src\"], inputs = [], outputs = [] }\n\n\
                     [tasks.plain]\ncommand = \"true\"\ndepends-on = [\"lib#gen\"]\n\
                     cache = { inputs = [], outputs = [] }\n",
                ),
            ),
        ],
    );
    let doc = crate::dry_json(&f, &["run", "app#check", "app#plain"]);
    let prediction = |id: &str| crate::dry_task(&doc, id)["key_is_prediction"].clone();
    assert_eq!(prediction("app#check"), true, "lib#gen may write lib's src");
    assert_eq!(
        prediction("app#plain"),
        false,
        "app#plain folds nothing of lib's"
    );
}

/// `vx.lock` carries a task's dependency inputs: under `--frozen` an upstream edit still
/// moves the dependant's key.
#[test]
fn a_frozen_run_keeps_the_dependency_inputs() {
    let root = "[workspace.input-sets.src]\ninputs = [\"src/**\"]\n";
    let f = workspace(
        root,
        &[
            (
                "lib",
                Some("{ \"name\": \"lib\" }"),
                Some("[tasks.build]\ncommand = \"true\"\n"),
            ),
            (
                "app",
                Some("{ \"name\": \"app\", \"dependencies\": { \"lib\": \"workspace:*\" } }"),
                Some(
                    "[tasks.check]\ncommand = \"true\"\n\
                     cache = { input-sets = [\"^src\"], inputs = [], outputs = [] }\n",
                ),
            ),
        ],
    );
    f.write("packages/lib/src/a.txt", "a\n");
    f.commit();
    assert_eq!(f.vx(&["lock"]).code, 0);
    let lock = f.read("vx.lock");
    assert_contains(&lock, "\"dependency-inputs\": [");
    let first = f.vx(&["run", "app#check", "--frozen"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    assert_contains(&f.vx(&["run", "app#check", "--frozen"]).stdout, "1 cached");
    f.write("packages/lib/src/a.txt", "a, edited\n");
    let edited = f.vx(&["run", "app#check", "--frozen"]);
    assert_contains(&edited.stdout, "0 cached");
}
