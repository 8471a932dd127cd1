use super::*;
use crate::testing::{workspace, P};

/// lib, app (depends on lib, build → ^build, test → build, check = group) and docs.
fn ws() -> Workspace {
    let mut ws = workspace(&[
        P {
            name: "lib",
            deps: &[],
            tags: &[],
            tasks: &[("build", Some("b"), &[]), ("lint", Some("l"), &[])],
        },
        P {
            name: "app",
            deps: &["lib"],
            tags: &[],
            tasks: &[
                ("build", Some("b"), &["^build"]),
                ("test", Some("t"), &["build"]),
                ("check", None, &["build", "test"]),
            ],
        },
        P {
            name: "docs",
            deps: &[],
            tags: &[],
            tasks: &[("build", Some("d"), &[])],
        },
    ]);
    for (project, task) in [("lib", "build"), ("app", "build"), ("app", "test")] {
        let i = ws.by_name[project];
        ws.projects[i].config.tasks.get_mut(task).unwrap().cache = Some(Box::new(CacheConfig {
            inputs: Some(vec!["src/**".into()]),
            outputs: Some(vec!["dist/**".into()]),
            ..CacheConfig::default()
        }));
    }
    ws
}

fn seeded(ws: &Workspace, paths: &[ChangedPath]) -> Vec<String> {
    seed(ws, paths, false)
        .tasks
        .iter()
        .map(|(id, path)| format!("{id} <- {path}"))
        .collect()
}

fn files(paths: &[&str]) -> Vec<ChangedPath> {
    paths.iter().map(|p| ChangedPath::file(*p)).collect()
}

#[test]
fn a_dependency_input_seeds_the_dependants_that_fold_it_but_not_its_outputs() {
    // app#test folds `src/**` of every project app depends on (lib), as `^production`.
    let mut ws = ws();
    let app = ws.by_name["app"];
    let test = ws.projects[app].config.tasks.get_mut("test").unwrap();
    test.cache.as_mut().unwrap().dependency_inputs = vec!["src/**".into(), "dist/**".into()];
    assert_eq!(
        seeded(&ws, &files(&["packages/lib/src/a.txt"])),
        [
            "app#test <- packages/lib/src/a.txt",
            "lib#build <- packages/lib/src/a.txt",
            "lib#lint <- packages/lib/src/a.txt"
        ]
    );
    // lib#build's outputs are left out, as the key leaves them out.
    assert_eq!(
        seeded(&ws, &files(&["packages/lib/dist/a.js"])),
        ["lib#lint <- packages/lib/dist/a.js"]
    );
    // docs is no dependency of app.
    assert_eq!(
        seeded(&ws, &files(&["packages/docs/src/a.txt"])),
        ["docs#build <- packages/docs/src/a.txt"]
    );
}

#[test]
fn an_input_seeds_the_cached_task_and_any_project_path_seeds_uncached_ones() {
    let ws = ws();
    assert_eq!(
        seeded(&ws, &files(&["packages/lib/src/a.txt"])),
        [
            "lib#build <- packages/lib/src/a.txt",
            "lib#lint <- packages/lib/src/a.txt"
        ]
    );
    // README is no input of the cached build, but lint is uncached.
    assert_eq!(
        seeded(&ws, &files(&["packages/lib/README.md"])),
        ["lib#lint <- packages/lib/README.md"]
    );
    // A task's own outputs are not its inputs.
    let i = ws.by_name["lib"];
    let mut ws2 = ws.clone();
    ws2.projects[i].config.tasks.get_mut("build").unwrap().cache = Some(Box::new(CacheConfig {
        inputs: Some(vec!["**".into()]),
        outputs: Some(vec!["dist/**".into()]),
        ..CacheConfig::default()
    }));
    assert!(!seeded(&ws2, &files(&["packages/lib/dist/out.txt"]))
        .iter()
        .any(|s| s.starts_with("lib#build")));
}

#[test]
fn the_vx_lock_seeds_nothing_even_for_a_root_task_folding_every_root_file() {
    let mut ws = ws();
    let mut root = ws.projects[0].clone();
    root.name = "//".into();
    root.dir = String::new();
    root.config.tasks = [(
        "check".to_string(),
        Box::new(crate::config::TaskConfig {
            command: Some("true".into()),
            ..Default::default()
        }),
    )]
    .into();
    ws.projects.push(root);
    ws.by_name.insert("//".into(), ws.projects.len() - 1);
    assert!(seeded(&ws, &files(&["vx.lock"])).is_empty());
    // A frozen run takes its configuration from the lock: every task.
    assert_eq!(seed(&ws, &files(&["vx.lock"]), true).tasks.len(), 6);
    assert_eq!(
        seeded(&ws, &files(&["notes.txt"])),
        ["//#check <- notes.txt"]
    );
}

#[test]
fn root_files_seed_every_task_and_other_root_paths_seed_nothing() {
    let ws = ws();
    for file in ["pnpm-lock.yaml", "vx.toml", "package.json", ".npmrc"] {
        let seeds = seed(&ws, &files(&[file]), false);
        assert_eq!(seeds.tasks.len(), 5, "{file}");
        assert!(!seeds.tasks.contains_key(&TaskId::new("app", "check")));
        assert_eq!(seeds.projects.len(), 3);
    }
    assert_eq!(seed(&ws, &files(&["README.md"]), false), Seeds::default());
    // Only at the root.
    assert!(seeded(&ws, &files(&["packages/docs/sub/pnpm-lock.yaml"]))
        .iter()
        .all(|s| s.starts_with("docs#")));
}

#[test]
fn a_lockfile_read_per_project_seeds_only_the_projects_it_names() {
    let ws = ws();
    let mut lock = ChangedPath::file("pnpm-lock.yaml");
    lock.only = Some(vec!["packages/lib".into()]);
    let seeds = seed(&ws, &[lock.clone()], false);
    assert_eq!(
        seeded(&ws, &[lock.clone()]),
        ["lib#build <- pnpm-lock.yaml", "lib#lint <- pnpm-lock.yaml"]
    );
    assert_eq!(seeds.projects, BTreeSet::from([ws.by_name["lib"]]));
    lock.only = Some(Vec::new());
    assert_eq!(seed(&ws, &[lock], false), Seeds::default());
}

#[test]
fn a_project_manifest_seeds_every_task_of_its_project() {
    let ws = ws();
    for file in ["packages/app/vx.toml", "packages/app/package.json"] {
        assert_eq!(
            seeded(&ws, &files(&[file])),
            [
                format!("app#build <- {file}"),
                format!("app#test <- {file}")
            ]
        );
    }
}

#[test]
fn nested_projects_own_their_paths() {
    let mut ws = ws();
    let docs = ws.by_name["docs"];
    ws.projects[docs].dir = "packages/lib/docs".into();
    assert_eq!(
        seeded(&ws, &files(&["packages/lib/docs/x.md"])),
        ["docs#build <- packages/lib/docs/x.md"]
    );
    // The outer project's inputs never reach into the nested one.
    let lib = ws.by_name["lib"];
    ws.projects[lib]
        .config
        .tasks
        .get_mut("build")
        .unwrap()
        .cache = Some(Box::new(CacheConfig {
        inputs: Some(vec!["**".into()]),
        outputs: Some(vec![]),
        ..CacheConfig::default()
    }));
    assert!(!seeded(&ws, &files(&["packages/lib/docs/x.md"]))
        .iter()
        .any(|s| s.starts_with("lib#")));
    assert_eq!(
        seed(&ws, &files(&["packages/lib/docs/x.md"]), false).projects,
        BTreeSet::from([docs])
    );
}

#[test]
fn workspace_inputs_cross_project_boundaries() {
    let mut ws = ws();
    let app = ws.by_name["app"];
    ws.projects[app]
        .config
        .tasks
        .get_mut("test")
        .unwrap()
        .cache
        .as_mut()
        .unwrap()
        .workspace_inputs = vec!["tsconfig.base.json".into(), "packages/lib/src/**".into()];
    assert_eq!(
        seeded(&ws, &files(&["tsconfig.base.json"])),
        ["app#test <- tsconfig.base.json"]
    );
    assert_eq!(
        seeded(&ws, &files(&["packages/lib/src/a.txt"])),
        [
            "app#test <- packages/lib/src/a.txt",
            "lib#build <- packages/lib/src/a.txt",
            "lib#lint <- packages/lib/src/a.txt"
        ]
    );
}

#[test]
fn a_changed_subtree_seeds_the_projects_under_it() {
    let ws = ws();
    assert_eq!(
        seeded(&ws, &[ChangedPath::subtree("packages/app")]),
        ["app#build <- packages/app", "app#test <- packages/app"]
    );
    // Inside a project: its uncached tasks, and cached ones whose inputs reach below.
    assert_eq!(
        seeded(&ws, &[ChangedPath::subtree("packages/lib/vendor/x")]),
        ["lib#lint <- packages/lib/vendor/x"]
    );
    assert_eq!(
        seeded(&ws, &[ChangedPath::subtree("packages/lib/src/gen")]),
        [
            "lib#build <- packages/lib/src/gen",
            "lib#lint <- packages/lib/src/gen"
        ]
    );
}

#[test]
fn the_first_path_in_order_names_the_seed() {
    let ws = ws();
    let seeds = seed(
        &ws,
        &files(&["packages/lib/src/b.txt", "packages/lib/src/a.txt"]),
        false,
    );
    assert_eq!(
        seeds.tasks[&TaskId::new("lib", "build")],
        "packages/lib/src/a.txt"
    );
}

#[test]
fn reach_follows_dependants_with_the_shortest_chain() {
    let ws = ws();
    let table = TaskTable::resolve(&ws).unwrap();
    let seeds = seed(&ws, &files(&["packages/lib/src/a.txt"]), false);
    let reached = reach(&table, &seeds);
    let id = |s: &str| TaskId::parse(s).unwrap();
    assert_eq!(
        reached[&id("lib#build")],
        Reason::Changed("packages/lib/src/a.txt".into())
    );
    assert_eq!(
        reached[&id("app#build")],
        Reason::Via {
            chain: vec![id("lib#build")],
            path: "packages/lib/src/a.txt".into()
        }
    );
    assert_eq!(
        reached[&id("app#test")],
        Reason::Via {
            chain: vec![id("app#build"), id("lib#build")],
            path: "packages/lib/src/a.txt".into()
        }
    );
    assert!(reached.contains_key(&id("app#check")));
    assert!(!reached.contains_key(&id("docs#build")));
    assert_eq!(reach(&table, &Seeds::default()), BTreeMap::new());
}

#[test]
fn refs_are_checked_before_git_sees_them() {
    assert_eq!(check_ref("origin/main"), Ok("origin/main".into()));
    assert_eq!(check_ref("HEAD~1"), Ok("HEAD~1".into()));
    assert_eq!(check_ref("main@{10:30}"), Ok("main@{10:30}".into()));
    assert_eq!(check_ref("main...HEAD"), Ok("main".into()));
    assert_eq!(check_ref("main..."), Ok("main".into()));
    assert_eq!(check_ref(""), Err(RefProblem::Empty));
    assert_eq!(check_ref("-x"), Err(RefProblem::Dash));
    let base = |b: &str| b.to_string();
    assert_eq!(
        check_ref("a..b"),
        Err(RefProblem::Range { base: base("a") })
    );
    assert_eq!(
        check_ref("a...b"),
        Err(RefProblem::Range { base: base("a") })
    );
    assert_eq!(
        check_ref("..b"),
        Err(RefProblem::Range { base: base("HEAD") })
    );
    assert_eq!(
        check_ref("^a"),
        Err(RefProblem::Exclusion { base: base("a") })
    );
    assert_eq!(
        check_ref("a:src/x"),
        Err(RefProblem::Path { base: base("a") })
    );
}

#[test]
fn ref_refusals_name_the_base_to_pass() {
    let d = RefProblem::Range { base: "a".into() }.diagnostic("a..b", RefSite::Flag);
    assert_eq!(
        d.message,
        "--affected takes one base ref; `a..b` is a range"
    );
    assert_eq!(d.hints, ["pass `--affected=a` instead"]);
    let d =
        RefProblem::Exclusion { base: "a".into() }.diagnostic("^a", RefSite::Filter("web...[^a]"));
    assert_eq!(
        d.message,
        "invalid filter `web...[^a]`: the ref `^a` is an exclusion"
    );
    assert_eq!(d.hints, ["write `web...[a]` instead"]);
    let d = RefProblem::Empty.diagnostic("", RefSite::Flag);
    assert_eq!(d.message, "`--affected=` names no ref");
    let d = RefProblem::Empty.diagnostic("", RefSite::Filter("[]"));
    assert_eq!(d.message, "invalid filter `[]`: the ref is empty");
}
