//! INIT-2 cases: a `scripts` object in, a readable dump of the tasks out.

use super::*;

fn scripts(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// One line per task: `name: command | group [deps] persistent define outputs`.
fn dump(mapping: &Mapping) -> Vec<String> {
    mapping
        .tasks
        .iter()
        .map(|t| {
            let mut line = format!("{}: {}", t.name, t.command.as_deref().unwrap_or("(group)"));
            if !t.depends_on.is_empty() {
                line.push_str(&format!(" {:?}", t.depends_on));
            }
            if t.persistent {
                line.push_str(" persistent");
            }
            for (k, v) in &t.define {
                line.push_str(&format!(" {k}={v}"));
            }
            if !t.suggested_outputs.is_empty() {
                line.push_str(&format!(" outputs={:?}", t.suggested_outputs));
            }
            line
        })
        .collect()
}

fn map(pairs: &[(&str, &str)]) -> Vec<String> {
    dump(&map_scripts(&scripts(pairs), &Context::default()))
}

#[test]
fn acceptance_39_scripts() {
    let mapping = map_scripts(
        &scripts(&[
            ("prebuild", "rm -rf dist"),
            ("build", "tsc"),
            ("dev", "vite"),
            ("test", "vitest run"),
            ("ci", "npm run build && npm run test"),
        ]),
        &Context::default(),
    );
    assert_eq!(
        dump(&mapping),
        [
            r#"build: rm -rf dist && tsc ["^build"] outputs=["dist/**"]"#,
            r#"ci: npm run build && npm run test"#,
            "dev: vite persistent",
            r#"test: vitest run ["build"]"#,
        ]
    );
}

#[test]
fn hooks_fold_unless_the_package_manager_would_not_run_them() {
    let pairs = [
        ("pretest", "echo a; echo b"),
        ("test", "jest"),
        ("posttest", "echo done"),
        ("prettier", "prettier --check ."),
        ("postcss", "echo css"),
        ("css", "sass in.scss out.css"),
    ];
    assert_eq!(
        map(&pairs),
        [
            "css: sass in.scss out.css && echo css",
            "prettier: prettier --check .",
            "test: (echo a; echo b) && jest && echo done",
        ]
    );
    let context = Context {
        hooks_off: Some("`packageManager` is yarn@4.1.0".into()),
        ..Context::default()
    };
    let mapping = map_scripts(&scripts(&pairs), &context);
    assert_eq!(mapping.tasks.len(), 6);
    let (hooks, why) = mapping.unfolded_hooks.unwrap();
    assert_eq!(hooks, ["postcss", "posttest", "pretest"]);
    assert!(why.contains("yarn"));
}

#[test]
fn lifecycle_scripts_are_not_tasks() {
    assert_eq!(
        map(&[
            ("prepare", "husky install"),
            ("postinstall", "patch-package"),
            ("prepublishOnly", "npm run build"),
            ("version", "changeset version"),
            ("prepack", "cp ../README.md ."),
            ("pack", "npm pack"),
            ("lint", "eslint ."),
        ]),
        ["lint: eslint .", "pack: npm pack"]
    );
}

#[test]
fn groups_are_scripts_that_only_run_other_scripts_in_parallel() {
    assert_eq!(
        map(&[
            ("a", "echo a"),
            ("b", "echo b"),
            ("c", "echo c"),
            ("npm", "npm run a && npm run-script b && npm test"),
            ("test", "echo t"),
            ("pnpm", "pnpm a && pnpm run -s b"),
            ("yarn", "yarn c"),
            ("runs", "run-s a b c"),
            ("runp", "npm-run-all --parallel a b"),
            ("args", "npm run a -- --watch=false"),
            ("glob", "run-s 'a*'"),
            ("semi", "npm run a; npm run b"),
            ("self", "npm run self"),
            ("unknown", "npm run nope"),
            ("install", "npm run a"),
        ]),
        [
            "a: echo a",
            "args: npm run a -- --watch=false",
            "b: echo b",
            "c: echo c",
            "glob: run-s 'a*'",
            "npm: npm run a && npm run-script b && npm test",
            "pnpm: pnpm a && pnpm run -s b",
            r#"runp: (group) ["a", "b"]"#,
            "runs: run-s a b c",
            "self: npm run self",
            "semi: npm run a; npm run b",
            "test: echo t",
            "unknown: npm run nope",
            "yarn: yarn c",
        ]
    );
}

#[test]
fn build_test_and_typecheck_get_their_edges() {
    assert_eq!(
        map(&[
            ("build", "tsc -b"),
            ("typecheck", "tsc --noEmit"),
            ("test", "npm run unit && npm run e2e"),
            ("unit", "vitest run"),
            ("e2e", "playwright test"),
        ]),
        [
            r#"build: tsc -b ["^build"]"#,
            "e2e: playwright test",
            r#"test: npm run unit && npm run e2e ["build"]"#,
            r#"typecheck: tsc --noEmit ["build"]"#,
            "unit: vitest run",
        ]
    );
    assert_eq!(map(&[("test", "jest")]), ["test: jest"]);
    // A parallel runner is a command too where the task has an edge of its own: its members
    // would not wait for `^build`.
    assert_eq!(
        map(&[("build", "run-p a b"), ("a", "x"), ("b", "y")]),
        ["a: x", "b: y", r#"build: run-p a b ["^build"]"#]
    );
}

#[test]
fn servers_and_watchers_are_persistent() {
    let persistent: Vec<String> = map(&[
        ("start", "node server.js"),
        ("serve", "echo"),
        ("watch", "echo"),
        ("preview", "echo"),
        ("w", "tsc --watch"),
        ("w2", "jest --watchAll"),
        ("w3", "tsc -w -p ."),
        ("nw", "vitest --watch=false"),
        ("v", "cross-env PORT=3 vite --port 3000"),
        ("vb", "vite build"),
        ("n", "next dev"),
        ("nb", "next build"),
        ("y", "yarn next start"),
        ("sb", "storybook dev -p 6006"),
        ("nd", "nodemon src/index.ts"),
        ("wp", "webpack serve --mode development"),
    ])
    .into_iter()
    .filter(|line| line.ends_with("persistent"))
    .map(|line| line.split(':').next().unwrap().to_string())
    .collect();
    assert_eq!(
        persistent,
        ["n", "nd", "preview", "sb", "serve", "start", "v", "w", "w2", "w3", "watch", "wp", "y"]
    );
}

#[test]
fn npm_package_variables_become_defines() {
    let context = Context {
        name: Some("@acme/web".into()),
        version: Some("1.2.3".into()),
        ..Context::default()
    };
    let mapping = map_scripts(
        &scripts(&[
            (
                "tag",
                "docker build -t $npm_package_name:${npm_package_version} .",
            ),
            ("other", "echo $npm_config_port $HOME"),
        ]),
        &context,
    );
    assert_eq!(
        dump(&mapping),
        [
            "other: echo $npm_config_port $HOME",
            "tag: docker build -t $npm_package_name:${npm_package_version} . npm_package_name=@acme/web npm_package_version=1.2.3",
        ]
    );
    let notes: Vec<&String> = mapping.tasks.iter().flat_map(|t| &t.notes).collect();
    assert_eq!(notes.len(), 1);
    assert!(notes[0].contains("$npm_config_port"), "{notes:?}");
}

#[test]
fn invalid_names_are_left_out_with_a_todo() {
    let mapping = map_scripts(
        &scripts(&[("lint:*", "eslint"), ("#x", "echo"), ("ok:name", "echo")]),
        &Context::default(),
    );
    assert_eq!(dump(&mapping), ["ok:name: echo"]);
    let problems: Vec<&String> = mapping
        .left_out
        .iter()
        .filter_map(|l| match &l.why {
            LeftOutWhy::Unmappable(problem) => Some(problem),
            LeftOutWhy::Orchestrates => None,
        })
        .collect();
    assert_eq!(problems.len(), 2);
    assert!(problems[1].contains("must not contain `*`"), "{problems:?}");
}

#[test]
fn output_directories_are_guessed_from_the_command() {
    let outputs = |command: &str| guess_outputs(&shell::parse(command));
    assert_eq!(outputs("tsc"), Vec::<String>::new());
    assert_eq!(outputs("tsc --outDir lib"), ["lib/**"]);
    assert_eq!(outputs("tsc --outDir=./types/"), ["types/**"]);
    assert_eq!(outputs("vite build"), ["dist/**"]);
    assert_eq!(outputs("vite build --outDir public"), ["public/**"]);
    assert_eq!(outputs("next build"), [".next/**", "!.next/cache/**"]);
    assert_eq!(outputs("react-scripts build"), ["build/**"]);
    assert_eq!(outputs("storybook build"), ["storybook-static/**"]);
    assert_eq!(outputs("rimraf out && node gen.js"), ["out/**"]);
    assert_eq!(outputs("rm -rf dist"), Vec::<String>::new());
    assert_eq!(outputs("cp -r public build/"), ["build/**"]);
    assert_eq!(outputs("npm run build"), Vec::<String>::new());
    assert_eq!(outputs("tsc --outDir ../x"), Vec::<String>::new());
}

#[test]
fn root_scripts_that_drive_the_workspace_are_not_mapped() {
    let context = Context {
        monorepo_root: true,
        ..Context::default()
    };
    let mapping = map_scripts(
        &scripts(&[
            ("build", "turbo run build"),
            ("dev", "pnpm -r --parallel dev"),
            ("test", "npm run test --workspaces"),
            ("each", "yarn workspaces foreach -A run lint"),
            ("nx", "npx nx run-many -t build"),
            ("lerna", "lerna run build"),
            ("format", "prettier --write ."),
        ]),
        &context,
    );
    assert_eq!(dump(&mapping), ["format: prettier --write ."]);
    assert_eq!(mapping.left_out.len(), 6);
    // The same scripts in a package are ordinary tasks.
    assert_eq!(map(&[("build", "turbo run build")]).len(), 1);
}

#[test]
fn empty_scripts_are_not_tasks_and_empty_hooks_are_not_joined() {
    assert_eq!(
        map(&[
            ("empty", "  "),
            ("prebuild", ""),
            ("build", "tsc"),
            ("pretest", "echo pre"),
            ("test", ""),
        ]),
        [r#"build: tsc ["^build"]"#, r#"test: echo pre ["build"]"#]
    );
}

#[test]
fn a_nul_in_a_script_leaves_it_out_with_a_todo() {
    let mapping = map_scripts(&scripts(&[("x", "echo \0")]), &Context::default());
    assert!(mapping.tasks.is_empty());
    assert!(
        matches!(&mapping.left_out[0].why, LeftOutWhy::Unmappable(p) if p.contains("NUL")),
        "{:?}",
        mapping.left_out
    );
}

#[test]
fn root_scripts_that_run_an_orchestrating_script_are_left_out_too() {
    let context = Context {
        monorepo_root: true,
        ..Context::default()
    };
    let mapping = map_scripts(
        &scripts(&[
            ("build", "turbo run build"),
            ("ci", "npm run lint && npm run build -- --force"),
            ("release", "run-s ci publish-all"),
            ("lint", "eslint ."),
        ]),
        &context,
    );
    assert_eq!(dump(&mapping), ["lint: eslint ."]);
    let left: Vec<&str> = mapping.left_out.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(left, ["build", "ci", "release"]);
}

#[test]
fn no_suggestion_for_scripts_with_side_effects_or_shared_directories() {
    assert_eq!(
        map(&[
            ("build", "tsc --outDir dist"),
            ("test:build", "vite build"),
            ("clean", "rimraf dist && tsc -b --clean"),
            ("prep", "tsc -b --clean && tsc --outDir dist"),
            ("publish:ci", "pnpm publish --access public"),
            ("bundle", "npm pack && mkdir -p out && mv *.tgz out/"),
            ("copy", "mkdir -p build && cp -r ../lib/dist build/"),
            ("docs", "typedoc --out build/docs && echo done > /dev/null"),
        ]),
        [
            r#"build: tsc --outDir dist ["^build"] outputs=["dist/**"]"#,
            "bundle: npm pack && mkdir -p out && mv *.tgz out/",
            "clean: rimraf dist && tsc -b --clean",
            "copy: mkdir -p build && cp -r ../lib/dist build/",
            r#"docs: typedoc --out build/docs && echo done > /dev/null outputs=["build/**"]"#,
            "prep: tsc -b --clean && tsc --outDir dist",
            "publish:ci: pnpm publish --access public",
            "test:build: vite build",
        ]
    );
    // Neither is `build`: two tasks that write `dist` get no suggestion.
    assert_eq!(
        map(&[("bundle", "rollup -c"), ("compile", "tsc --outDir dist")]),
        ["bundle: rollup -c", "compile: tsc --outDir dist"]
    );
}

#[test]
fn directories_a_root_build_leaves_out_are_read_from_its_filters() {
    assert_eq!(
        excluded_directories(
            "turbo run build --filter=!./examples/* --filter='!./integrations/**'"
        ),
        ["examples/*", "integrations/**"]
    );
    assert_eq!(
        excluded_directories("pnpm -r -F '!./examples/**' -F '!@acme/docs' build"),
        ["examples/**"]
    );
    assert_eq!(
        excluded_directories("nx run-many -t build --exclude=examples/**,e2e/* && size-limit"),
        ["examples/**", "e2e/*"]
    );
    assert_eq!(
        excluded_directories("lerna run build --ignore '@acme/*'"),
        Vec::<String>::new()
    );
    assert_eq!(
        excluded_directories("turbo run build --filter=web"),
        Vec::<String>::new()
    );
}
