//! Restored = executed (STORE-5): a restore brings back exactly the tree the task
//! left — the same entries, types, modes, link texts and bytes — and everything the declared
//! output globs match, `node_modules` inside an output directory included. What vx leaves out
//! on purpose is said.

use std::path::Path;

use vx_test_support::fixture::Fixture;
use vx_test_support::tree::tree;

use crate::{assert_contains, one_project};

fn run(f: &Fixture, id: &str) -> vx_test_support::fixture::Output {
    let out = f.vx(&["run", id]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    out
}

/// A task writing a file, an executable, an empty directory with its own mode, a relative
/// link to a project file, an absolute link inside the workspace, a link to a directory, a
/// dangling link inside the workspace, and a package with its `node_modules`.
const TREE_COMMAND: &str = concat!(
    "mkdir -p out/bin out/empty out/pkg/node_modules/x && ",
    "echo main > out/index.js && ",
    "printf '#!/bin/sh\\necho tool\\n' > out/bin/tool && chmod 755 out/bin/tool && ",
    "chmod 700 out/empty && ",
    "ln -s ../private.txt out/rel && ",
    "ln -s \"$PWD/src/a.txt\" out/abs && ",
    "ln -s bin out/to-dir && ",
    "ln -s ../not-yet out/dangling && ",
    "echo hi > out/pkg/node_modules/x/a.js",
);

fn tree_project() -> Fixture {
    let f = one_project(&format!(
        "[tasks.build]\ncommand = {TREE_COMMAND:?}\ncache = {{ inputs = [\"src/**\"], outputs = [\"out/**\"] }}\n"
    ));
    f.write(".gitignore", ".vx/\nout/\n");
    f.write("packages/lib/src/a.txt", "a\n");
    f.write("packages/lib/private.txt", "private v1\n");
    f.commit();
    f
}

#[test]
fn a_restored_output_tree_equals_the_executed_one_entry_by_entry() {
    let f = tree_project();
    let out_dir = f.path("packages/lib/out");
    assert_contains(&run(&f, "lib#build").stdout, "cache      1 miss\n");
    let executed = tree(&out_dir);
    let kinds: String = executed.iter().map(|e| e.1).collect();
    assert!(
        kinds.contains('l') && kinds.contains('d') && kinds.contains('f'),
        "{executed:?}"
    );

    std::fs::remove_dir_all(&out_dir).unwrap();
    assert_contains(&run(&f, "lib#build").stdout, "cache      1 local\n");
    assert_eq!(tree(&out_dir), executed);

    // What was restored is what vx recorded: the next run finds it up to date.
    assert_contains(&run(&f, "lib#build").stdout, "cache      1 up-to-date\n");

    // A link restored as a link reads the file as it is now, not stale bytes.
    f.write("packages/lib/private.txt", "private v2\n");
    std::fs::remove_dir_all(&out_dir).unwrap();
    run(&f, "lib#build");
    assert_eq!(f.read("packages/lib/out/rel"), "private v2\n");
}

#[test]
fn a_file_where_the_entry_has_a_link_is_not_up_to_date() {
    let f = tree_project();
    run(&f, "lib#build");
    let rel = f.path("packages/lib/out/rel");
    std::fs::remove_file(&rel).unwrap();
    std::fs::write(&rel, "private v1\n").unwrap();
    assert_contains(&run(&f, "lib#build").stdout, "cache      1 local\n");
    assert!(std::fs::symlink_metadata(&rel)
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn node_modules_inside_an_output_directory_are_saved_and_restored() {
    let f = one_project(concat!(
        "[tasks.build]\n",
        "command = \"mkdir -p dist/node_modules/x && echo hi > dist/node_modules/x/a.js && echo main > dist/index.js\"\n",
        "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
    ));
    run(&f, "lib#build");
    std::fs::remove_dir_all(f.path("packages/lib/dist")).unwrap();
    assert_contains(&run(&f, "lib#build").stdout, "cache      1 local\n");
    assert_eq!(f.read("packages/lib/dist/node_modules/x/a.js"), "hi\n");
    assert_eq!(f.read("packages/lib/dist/index.js"), "main\n");
}

#[test]
fn the_projects_installed_node_modules_are_not_outputs_of_a_wildcard_glob() {
    let f = one_project(concat!(
        "[tasks.build]\n",
        "command = \"echo out > main.out\"\n",
        "cache = { inputs = [\"src/**\"], outputs = [\"**/*.out\"] }\n",
    ));
    f.write("packages/lib/node_modules/dep/index.out", "installed\n");
    run(&f, "lib#build");
    std::fs::remove_file(f.path("packages/lib/main.out")).unwrap();
    run(&f, "lib#build");
    assert_eq!(f.read("packages/lib/main.out"), "out\n");
    assert_eq!(
        f.read("packages/lib/node_modules/dep/index.out"),
        "installed\n",
        "cleaning never touched the installed dependency"
    );
}

#[test]
fn a_git_directory_inside_an_output_directory_is_named_not_silently_left_out() {
    let f = one_project(concat!(
        "[tasks.build]\n",
        "command = \"mkdir -p dist/vendor/.git && echo ref > dist/vendor/.git/HEAD && echo x > dist/vendor/x.js\"\n",
        "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
    ));
    let out = run(&f, "lib#build");
    assert_contains(
        &out.stderr,
        "vx: lib#build: `packages/lib/dist/vendor/.git` is not saved with the outputs: vx never saves or restores `.git`, `.vx`, the cache directory or a nested project",
    );
}

#[test]
fn a_link_into_a_sibling_project_is_kept_as_a_link() {
    let f = one_project(concat!(
        "[tasks.build]\n",
        "command = \"mkdir -p dist && ln -s ../../app/shared.txt dist/shared\"\n",
        "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
    ));
    f.write("packages/app/shared.txt", "shared\n");
    f.commit();
    run(&f, "lib#build");
    std::fs::remove_dir_all(f.path("packages/lib/dist")).unwrap();
    assert_contains(&run(&f, "lib#build").stdout, "cache      1 local\n");
    let link = f.path("packages/lib/dist/shared");
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("../../app/shared.txt")
    );
}
