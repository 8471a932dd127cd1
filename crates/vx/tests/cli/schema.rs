//! `vx schema` checked by the real Taplo (the CLI of Even Better TOML, npm `@taplo/cli`), as an
//! editor would check a `vx.toml`: every vx.toml in this repository passes, a file
//! using every key passes (and vx loads it), and a typo, a wrong type or an unknown table each
//! fails naming the key. `vx init` writes the schema and the `.taplo.toml` rule that maps every
//! `vx.toml` to it, so a plain `taplo check` (or a Taplo-based editor) needs nothing else.

use std::path::{Path, PathBuf};
use std::process::Command;

use vx_test_support::fixture::Fixture;
use vx_test_support::tools::npm_tool;

use crate::empty;

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `taplo check FILES…` in `dir`; the exit code and what it printed.
fn taplo(taplo: &Path, dir: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(taplo)
        .arg("check")
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "error")
        .output()
        .expect("taplo runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// A workspace with `vx schema`'s output in `vx.schema.json`.
fn with_schema() -> Fixture {
    let f = empty();
    let schema = f.vx(&["schema"]);
    assert_eq!(schema.code, 0, "{schema:?}");
    f.write("vx.schema.json", &schema.stdout);
    f
}

#[test]
fn taplo_accepts_every_vx_toml_of_the_repository() {
    let Some(bin) = npm_tool("@taplo/cli", "taplo") else {
        return;
    };
    let f = with_schema();
    let listed = Command::new("git")
        .args(["ls-files", "*vx.toml"])
        .current_dir(repo())
        .output()
        .expect("git runs");
    let files: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(|l| repo().join(l).canonicalize().unwrap().display().to_string())
        .collect();
    assert!(files.len() > 30, "{files:?}");
    let schema = format!("file://{}", f.path("vx.schema.json").display());
    let mut args = vec!["--schema", schema.as_str()];
    args.extend(files.iter().map(String::as_str));
    let (code, text) = taplo(&bin, f.root(), &args);
    assert_eq!(code, 0, "{text}");
}

/// Every key vx knows, in a root and a project file (`#:schema` lines point at the schema):
/// Taplo accepts both with no other setup, and vx loads them, so the schema is not stricter
/// than vx.
#[test]
fn a_file_with_every_key_passes_taplo_and_loads_in_vx() {
    let Some(bin) = npm_tool("@taplo/cli", "taplo") else {
        return;
    };
    let f = with_schema();
    let fixtures = repo().join("crates/vx/tests/fixtures/schema");
    let read = |name: &str| std::fs::read_to_string(fixtures.join(name)).unwrap();
    f.write("vx.toml", &read("root.vx.toml"));
    f.write("packages/lib/vx.toml", &read("project.vx.toml"));
    f.write("packages/lib/package.json", r#"{ "name": "lib" }"#);
    f.commit();
    let (code, text) = taplo(&bin, f.root(), &["vx.toml", "packages/lib/vx.toml"]);
    assert_eq!(code, 0, "{text}");
    let show = f.vx(&["show", "lib", "--format", "json"]);
    assert_eq!(show.code, 0, "{show:?}");
}

/// What an editor would underline: each mistake fails, naming the key.
#[test]
fn taplo_rejects_a_typo_a_wrong_type_and_an_unknown_table_at_the_key() {
    let Some(bin) = npm_tool("@taplo/cli", "taplo") else {
        return;
    };
    let f = with_schema();
    // The setup docs/config.md shows: a .taplo.toml rule for every vx.toml.
    f.write(
        ".taplo.toml",
        "[[rule]]\ninclude = [\"**/vx.toml\"]\n\n[rule.schema]\npath = \"./vx.schema.json\"\n",
    );
    for (file, text, expected) in [
        (
            "typo/vx.toml",
            "[tasks.build]\ncommand = \"make\"\ndepend-on = [\"^build\"]\n",
            "'depend-on' was unexpected",
        ),
        (
            "nested/vx.toml",
            "[tasks.build]\ncommand = \"make\"\ncache = { inputs = [\"src/**\"], outputs = [], portabel = true }\n",
            "'portabel' was unexpected",
        ),
        (
            "type/vx.toml",
            "[tasks.build]\ncommand = 3\n",
            "3 is not of type \"string\"",
        ),
        (
            "table/vx.toml",
            "[workspace]\nmembers = [\"a\"]\n\n[workspace.remote-cach]\nurl = \"http://x\"\n",
            "'remote-cach' was unexpected",
        ),
        (
            "root/vx.toml",
            "[task.build]\ncommand = \"make\"\n",
            "'task' was unexpected",
        ),
    ] {
        f.write(file, text);
        let (code, out) = taplo(&bin, f.root(), &[file]);
        assert_ne!(code, 0, "{file} passed:\n{out}");
        assert!(out.contains(expected), "{file}: `{expected}` not in:\n{out}");
        let at = format!("{file}:");
        assert!(out.contains(&at), "{file}: no location in:\n{out}");
    }
    // Without the mistakes the same files pass.
    f.write(
        "typo/vx.toml",
        "[tasks.build]\ncommand = \"make\"\ndepends-on = [\"^build\"]\n",
    );
    let (code, out) = taplo(&bin, f.root(), &["typo/vx.toml"]);
    assert_eq!(code, 0, "{out}");
}

/// An npm workspace with one package and a script, before `vx init`.
fn npm_workspace() -> Fixture {
    let f = Fixture::new(crate::vx_bin());
    f.write(".gitignore", ".vx/\nnode_modules/\n");
    f.write(
        "package.json",
        r#"{ "name": "root", "private": true, "workspaces": ["packages/*"] }"#,
    );
    f.write(
        "packages/a/package.json",
        r#"{ "name": "a", "scripts": { "build": "echo built" } }"#,
    );
    f.commit();
    f
}

#[test]
fn vx_init_maps_every_vx_toml_to_the_schema_so_plain_taplo_checks_them() {
    let Some(bin) = npm_tool("@taplo/cli", "taplo") else {
        return;
    };
    let f = npm_workspace();
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("wrote vx.schema.json\nwrote .taplo.toml\n"),
        "{}",
        out.stdout
    );
    assert_eq!(f.read("vx.schema.json"), f.vx(&["schema"]).stdout);
    // No argument, no flag: Taplo finds `.taplo.toml` and checks each vx.toml with the schema.
    let (code, text) = taplo(&bin, f.root(), &[]);
    assert_eq!(code, 0, "{text}");
    f.write(
        "packages/a/vx.toml",
        "[tasks.build]\ncomand = \"echo built\"\n",
    );
    let (code, text) = taplo(&bin, f.root(), &[]);
    assert_ne!(code, 0, "{text}");
    assert!(
        text.contains("comand") && text.contains("packages/a/vx.toml"),
        "{text}"
    );
    // Run again: both files are as they should be, and nothing is said of them.
    f.write(
        "packages/a/vx.toml",
        "[tasks.build]\ncommand = \"echo built\"\n",
    );
    let out = f.vx(&["init", "--force"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        !out.stdout.contains("schema.json") && !out.stdout.contains(".taplo.toml"),
        "{}",
        out.stdout
    );
}

#[test]
fn vx_init_adds_its_rule_to_a_taplo_file_and_leaves_a_schema_that_is_not_its_own() {
    let Some(bin) = npm_tool("@taplo/cli", "taplo") else {
        return;
    };
    let f = npm_workspace();
    let own = "[formatting]\nalign_entries = true\n";
    f.write(".taplo.toml", own);
    f.write("vx.schema.json", "{ \"title\": \"something else\" }\n");
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("added a rule for vx.toml to .taplo.toml\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("kept vx.schema.json (it is not vx's schema)\n"),
        "{}",
        out.stdout
    );
    let taplo_file = f.read(".taplo.toml");
    assert!(taplo_file.starts_with(own), "{taplo_file}");
    assert_eq!(
        f.read("vx.schema.json"),
        "{ \"title\": \"something else\" }\n"
    );
    // With vx's schema in place, the appended rule works.
    f.write("vx.schema.json", &f.vx(&["schema"]).stdout);
    f.write("packages/a/vx.toml", "[tasks.build]\ncommand = 3\n");
    let (code, text) = taplo(&bin, f.root(), &[]);
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("packages/a/vx.toml"), "{text}");
    // An older vx's schema is vx's own: written again.
    let old = f
        .vx(&["schema"])
        .stdout
        .replace("Configuration of a vx", "Configuration of an older vx");
    f.write("vx.schema.json", &old);
    let out = f.vx(&["init", "--force"]);
    assert!(
        out.stdout.contains("wrote vx.schema.json\n"),
        "{}",
        out.stdout
    );
    assert_eq!(f.read("vx.schema.json"), f.vx(&["schema"]).stdout);
    assert_eq!(
        f.read(".taplo.toml"),
        taplo_file,
        "the rule is not added twice"
    );
}

/// An editor file that cannot be written is one line of the report; the `vx.toml` files are
/// written and `vx init` succeeds (they are what it is for).
#[test]
fn an_editor_file_that_cannot_be_written_is_said_and_init_still_succeeds() {
    let f = npm_workspace();
    // A directory where the schema goes: renaming the new file over it fails.
    std::fs::create_dir(f.path("vx.schema.json")).unwrap();
    std::fs::write(f.path("vx.schema.json/keep"), "").unwrap();
    let out = f.vx(&["init"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("cannot write vx.schema.json: ")
                && l.ends_with(" (the vx.toml files are written)")),
        "{}",
        out.stdout
    );
    assert!(f.path("vx.toml").is_file());
    assert!(f.path("packages/a/vx.toml").is_file() || f.read("vx.toml").contains("[tasks"));
    assert!(out.stdout.contains("wrote .taplo.toml\n"), "{}", out.stdout);
    assert!(!out.stdout.contains("editors with Taplo"), "{}", out.stdout);
    assert!(
        f.path("vx.schema.json/keep").is_file(),
        "nothing of the user's is lost"
    );
}
