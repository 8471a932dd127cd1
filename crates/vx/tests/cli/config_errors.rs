//! Configuration errors through the binary (ERR-2, CFG-8 to CFG-12): one line each with a
//! location, all files reported together, exit 2.

use crate::one_project;

#[test]
fn several_errors_across_files_are_reported_together() {
    let f = one_project("[tasks.build]\ncomand = \"x\"\n");
    f.write("packages/other/package.json", r#"{ "name": "other" }"#);
    f.write(
        "packages/other/vx.toml",
        "[tasks.test]\ncommand = \"x\"\ntimeout = \"90\"\n",
    );
    let out = f.vx(&["run", "build", "--all"]);
    assert_eq!(out.code, 2, "{out:?}");
    let errors: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 2, "{}", out.stderr);
    assert!(errors[0].starts_with("error: packages/lib/vx.toml:2:1: unknown key `comand`"));
    assert_eq!(
        errors[1],
        "error: packages/other/vx.toml:3:11: timeout: \"90\" is not a duration; write \"90s\""
    );
}

#[test]
fn later_milestone_keys_are_refused_not_ignored() {
    let f = one_project("[tasks.build]\ncommand = \"echo ran > ran.txt\"\n");
    f.write(
        "vx.toml",
        "[workspace]\nmembers = [\"packages/*\"]\nrules = { exclusive-outputs = false }\n",
    );
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .starts_with("error: vx.toml:3:11: exclusive-outputs = false is not available yet"),
        "{}",
        out.stderr
    );
    assert!(
        !f.path("packages/lib/ran.txt").exists(),
        "the task never runs without its key"
    );
}

#[test]
fn unknown_dependency_names_the_entry_location() {
    let f = one_project("[tasks.build]\ncommand = \"true\"\ndepends-on = [\"codgen\"]\n\n[tasks.codegen]\ncommand = \"true\"\n");
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: packages/lib/vx.toml:3:15: task `lib#build` depends on `codgen`, which project `lib` does not declare\n  hint: did you mean `codegen`?\n"
    );
}

#[test]
fn malformed_toml_names_the_position() {
    let f = one_project("[tasks.build\ncommand = \"x\"\n");
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.starts_with("error: packages/lib/vx.toml:1:"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_directory_named_vx_toml_is_an_error_naming_it_not_an_unknown_project() {
    let f = one_project("[tasks.build]\ncommand = \"x\"\n");
    std::fs::create_dir_all(f.path("packages/z/vx.toml")).unwrap();
    let out = f.vx(&["run", "z#build"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.starts_with(
            "error: packages/z/vx.toml:1:1: `packages/z/vx.toml` is a directory, not a file"
        ),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("unknown project"), "{}", out.stderr);
}

/// A member glob that matches no directory is said, with its location, on every run; the run
/// goes on with the members the other globs found (issue 48).
#[test]
fn a_member_glob_that_matches_nothing_is_a_warning() {
    let f = one_project("[tasks.build]\ncommand = \"true\"\n");
    f.write(
        "vx.toml",
        "[workspace]\nmembers = [\"packages/*\", \"libs/*\"]\n",
    );
    f.commit();
    for _ in 0..2 {
        let out = f.vx(&["run", "lib#build"]);
        assert_eq!(out.code, 0, "{out:?}");
        assert_eq!(
            out.stderr,
            "warning: vx.toml:2:26: members: `libs/*` matches no directory\n"
        );
    }
    // Once it matches, nothing is said.
    f.write("libs/x/vx.toml", "");
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.stderr, "", "{out:?}");
}
