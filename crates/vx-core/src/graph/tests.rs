//! The task graph's tests: edges and their errors, patterns, cycles, exclusions, deep chains.

use super::*;
use crate::testing::{workspace, P};

fn ids(graph: &TaskGraph) -> Vec<String> {
    graph.nodes.iter().map(|n| n.id.to_string()).collect()
}

fn deps_of(graph: &TaskGraph, id: &str) -> Vec<String> {
    let node = &graph.nodes[graph.index[&TaskId::parse(id).unwrap()]];
    node.deps
        .iter()
        .map(|&d| graph.nodes[d].id.to_string())
        .collect()
}

/// app → mid (no build) → lib: `^build` passes through mid to lib (GRAPH-3).
fn chain() -> Workspace {
    workspace(&[
        P {
            name: "app",
            deps: &["mid"],
            tags: &[],
            tasks: &[
                ("build", Some("x"), &["^build"]),
                ("test", Some("x"), &["build"]),
            ],
        },
        P {
            name: "mid",
            deps: &["lib"],
            tags: &[],
            tasks: &[("lint", Some("x"), &[])],
        },
        P {
            name: "lib",
            deps: &[],
            tags: &[],
            tasks: &[
                ("build", Some("x"), &["^build", "gen"]),
                ("gen", Some("x"), &[]),
            ],
        },
    ])
}

#[test]
fn caret_edges_pass_through_projects_that_do_not_declare_the_task() {
    let ws = chain();
    let table = TaskTable::resolve(&ws).unwrap();
    let g = TaskGraph::build(
        &ws,
        &table,
        &[TaskId::new("app", "test")],
        &ExcludeDependencies::None,
    )
    .unwrap();
    assert_eq!(ids(&g), ["app#build", "app#test", "lib#build", "lib#gen"]);
    assert_eq!(deps_of(&g, "app#build"), ["lib#build"]);
    assert_eq!(deps_of(&g, "lib#build"), ["lib#gen"]);
    let passed = &table.pass_through[&TaskId::new("app", "build")];
    assert_eq!(passed, &[("mid".to_string(), "build".to_string())]);
    assert!(!table
        .pass_through
        .contains_key(&TaskId::new("lib", "build")));
}

#[test]
fn unknown_dependency_is_an_error_at_the_entry() {
    let ws = workspace(&[P {
        name: "a",
        deps: &[],
        tags: &[],
        tasks: &[
            ("build", Some("x"), &["codgen"]),
            ("codegen", Some("x"), &[]),
        ],
    }]);
    let errors = TaskTable::resolve(&ws).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].to_string(),
        "packages/a/vx.toml:1:15: task `a#build` depends on `codgen`, which project `a` does not declare"
    );
    assert_eq!(errors[0].hints, ["did you mean `codegen`?"]);
}

#[test]
fn depending_on_an_interactive_persistent_task_is_an_error_at_the_entry() {
    let mut ws = workspace(&[P {
        name: "a",
        deps: &[],
        tags: &[],
        tasks: &[
            ("e2e", Some("x"), &["shell"]),
            ("shell", Some("x"), &[]),
            ("other", Some("x"), &["login"]),
            ("login", Some("x"), &[]),
        ],
    }]);
    let tasks = &mut ws.projects[0].config.tasks;
    let shell = tasks.get_mut("shell").unwrap();
    shell.interactive = Some(true);
    shell.persistent = Some(crate::config::Persistent::Plain(true));
    // An interactive task that is not persistent ends, so depending on it is fine.
    tasks.get_mut("login").unwrap().interactive = Some(true);
    let errors = TaskTable::resolve(&ws).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0]
            .to_string()
            .starts_with("packages/a/vx.toml:1:15: task `a#e2e` depends on `a#shell`, an interactive persistent task"),
        "{}",
        errors[0]
    );
}

#[test]
fn caret_name_nobody_declares_is_an_error_but_no_holder_is_fine() {
    let ws = workspace(&[P {
        name: "a",
        deps: &[],
        tags: &[],
        tasks: &[("build", Some("x"), &["^biuld"])],
    }]);
    let errors = TaskTable::resolve(&ws).unwrap_err();
    assert!(
        errors[0].message.contains("no project declares `biuld`"),
        "{:?}",
        errors
    );
    let ws = workspace(&[P {
        name: "a",
        deps: &[],
        tags: &[],
        tasks: &[("build", Some("x"), &["^build"])],
    }]);
    assert!(TaskTable::resolve(&ws).is_ok());
}

#[test]
fn patterns_match_same_project_tasks_except_itself() {
    let ws = workspace(&[P {
        name: "a",
        deps: &[],
        tags: &[],
        tasks: &[
            ("build", Some("x"), &["build:*"]),
            ("build:css", Some("x"), &[]),
            ("build:js", Some("x"), &[]),
            ("lint", Some("x"), &["l*"]),
        ],
    }]);
    let table = TaskTable::resolve(&ws).unwrap();
    let g = TaskGraph::build(
        &ws,
        &table,
        &[TaskId::new("a", "build"), TaskId::new("a", "lint")],
        &ExcludeDependencies::None,
    )
    .unwrap();
    assert_eq!(deps_of(&g, "a#build"), ["a#build:css", "a#build:js"]);
    assert!(deps_of(&g, "a#lint").is_empty());
}

#[test]
fn refused_forms_in_depends_on() {
    for form in ["*", "^*", "!x", "b#x*"] {
        let ws = workspace(&[P {
            name: "a",
            deps: &[],
            tags: &[],
            tasks: &[("build", Some("x"), &[form])],
        }]);
        assert!(TaskTable::resolve(&ws).is_err(), "{form}");
    }
}

#[test]
fn cycles_are_reported_from_the_smallest_id_with_a_location() {
    let ws = workspace(&[
        P {
            name: "app",
            deps: &["lib"],
            tags: &[],
            tasks: &[("build", Some("x"), &["^build"])],
        },
        P {
            name: "lib",
            deps: &[],
            tags: &[],
            tasks: &[("build", Some("x"), &["app#build"])],
        },
    ]);
    let table = TaskTable::resolve(&ws).unwrap();
    let err = TaskGraph::build(
        &ws,
        &table,
        &[TaskId::new("lib", "build")],
        &ExcludeDependencies::None,
    )
    .unwrap_err();
    assert_eq!(
        err.message,
        "cycle in task graph: app#build -> lib#build -> app#build"
    );
    assert_eq!(err.hints, ["see packages/app/vx.toml:1:15"]);
}

#[test]
fn self_edge_is_a_cycle() {
    let ws = workspace(&[P {
        name: "a",
        deps: &[],
        tags: &[],
        tasks: &[("build", Some("x"), &["a#build"])],
    }]);
    let table = TaskTable::resolve(&ws).unwrap();
    let err = TaskGraph::build(
        &ws,
        &table,
        &[TaskId::new("a", "build")],
        &ExcludeDependencies::None,
    )
    .unwrap_err();
    assert_eq!(err.message, "cycle in task graph: a#build -> a#build");
}

#[test]
fn exclude_dependencies_keeps_ordering_through_dropped_tasks() {
    // test → gen → build, both test and build requested, gen dropped.
    let ws = workspace(&[P {
        name: "a",
        deps: &[],
        tags: &[],
        tasks: &[
            ("build", Some("x"), &[]),
            ("gen", Some("x"), &["build"]),
            ("test", Some("x"), &["gen"]),
        ],
    }]);
    let table = TaskTable::resolve(&ws).unwrap();
    let names = ExcludeDependencies::Names(["gen".to_string()].into());
    let req = [TaskId::new("a", "build"), TaskId::new("a", "test")];
    let g = TaskGraph::build(&ws, &table, &req, &names).unwrap();
    assert_eq!(ids(&g), ["a#build", "a#test"]);
    assert_eq!(deps_of(&g, "a#test"), ["a#build"]);
    assert!(g.nodes[g.index[&TaskId::new("a", "test")]].folds_dropped);
    // Only test requested: nothing else runs.
    let g = TaskGraph::build(&ws, &table, &req[1..], &ExcludeDependencies::All).unwrap();
    assert_eq!(ids(&g), ["a#test"]);
}

#[test]
fn bare_exclude_keeps_a_requested_groups_members() {
    let ws = workspace(&[P {
        name: "a",
        deps: &[],
        tags: &[],
        tasks: &[
            ("build", Some("x"), &["gen"]),
            ("check", None, &["build", "lint"]),
            ("gen", Some("x"), &[]),
            ("lint", Some("x"), &[]),
        ],
    }]);
    let table = TaskTable::resolve(&ws).unwrap();
    let g = TaskGraph::build(
        &ws,
        &table,
        &[TaskId::new("a", "check")],
        &ExcludeDependencies::All,
    )
    .unwrap();
    assert_eq!(ids(&g), ["a#build", "a#check", "a#lint"]);
}

#[test]
fn deep_chains_build_without_recursion() {
    // 50,000 projects in a chain, each build depending on ^build.
    let names: Vec<String> = (0..50_000).map(|i| format!("p{i:05}")).collect();
    let deps: Vec<Vec<&str>> = (0..names.len())
        .map(|i| {
            if i + 1 < names.len() {
                vec![names[i + 1].as_str()]
            } else {
                vec![]
            }
        })
        .collect();
    let projects: Vec<P<'_>> = (0..names.len())
        .map(|i| P {
            name: &names[i],
            deps: &deps[i],
            tags: &[],
            tasks: &[("build", Some("x"), &["^build"])],
        })
        .collect();
    let ws = workspace(&projects);
    let table = TaskTable::resolve(&ws).unwrap();
    let g = TaskGraph::build(
        &ws,
        &table,
        &[TaskId::new("p00000", "build")],
        &ExcludeDependencies::None,
    )
    .unwrap();
    assert_eq!(g.len(), 50_000);
}
