//! `vx completions` (INIT-6): the bash script sourced in a real bash and asked for
//! completions as a Tab would, with the built vx first on PATH.

use std::process::Command;

use vx_test_support::fixture::Fixture;

use crate::{assert_contains, w};

/// What bash offers for the words of `line` (the last one being completed) in `dir`.
fn complete(f: &Fixture, dir: &str, line: &[&str]) -> Vec<String> {
    let bin = std::path::Path::new(crate::vx_bin()).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let words: Vec<String> = line.iter().map(|w| format!("'{w}'")).collect();
    let script = format!(
        r#"source <(vx completions bash) || exit 9
COMP_WORDS=({words})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
COMPREPLY=()
$(complete -p vx | sed 's/.*-F \([^ ]*\) .*/\1/') vx "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}""#,
        words = words.join(" ")
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(f.path(dir))
        .env("PATH", path)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.trim_end().to_string())
        .collect()
}

#[test]
fn bash_completes_verbs_flags_projects_and_task_ids() {
    let f = w();
    assert_eq!(complete(&f, "", &["vx", "wh"]), ["why"]);
    assert_eq!(complete(&f, "", &["vx", "comp"]), ["completions"]);
    assert_eq!(
        complete(&f, "", &["vx", "run", "--con"]),
        ["--concurrency", "--continue"]
    );
    // Task names, then ids, of this workspace.
    assert_eq!(
        complete(&f, "", &["vx", "run", "app#"]),
        ["app#build", "app#check", "app#test"]
    );
    assert_eq!(complete(&f, "", &["vx", "run", "che"]), ["check"]);
    assert_eq!(complete(&f, "", &["vx", "watch", "t"]), ["test"]);
    assert_eq!(complete(&f, "", &["vx", "why", "li"]), ["lib#build"]);
    // Project names for --filter, projects and tasks for show, from any directory inside.
    assert_eq!(
        complete(&f, "packages/app", &["vx", "run", "build", "--filter", "d"]),
        ["docs"]
    );
    assert_eq!(
        complete(&f, "", &["vx", "show", "do"]),
        ["docs", "docs#build"]
    );
    // A new task is offered at once: nothing is cached.
    f.write(
        "packages/docs/vx.toml",
        "[tasks.build]\ncommand = \"echo docs\"\n[tasks.deploy]\ncommand = \"true\"\n",
    );
    assert_eq!(
        complete(&f, "", &["vx", "run", "docs#"]),
        ["docs#build", "docs#deploy"]
    );
}

#[test]
fn outside_a_workspace_only_verbs_and_flags_complete() {
    let f = crate::empty();
    assert_eq!(complete(&f, "", &["vx", "run", "b"]), Vec::<String>::new());
    assert_eq!(complete(&f, "", &["vx", "sh"]), ["show"]);
}

#[test]
fn every_shell_gets_a_script_and_an_unknown_one_a_suggestion() {
    let f = w();
    for shell in ["bash", "zsh", "fish"] {
        let out = f.vx(&["completions", shell]);
        assert_eq!(out.code, 0, "{out:?}");
        assert_contains(&out.stdout, "VX_COMPLETE");
    }
    let out = f.vx(&["completions", "fsh"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: unknown shell `fsh`\n  hint: did you mean `fish`?\n"
    );
    let out = f.vx(&["completions"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: `vx completions` needs a shell: bash, zsh, fish\n"
    );
}

/// A flag's value completes from the words it takes, and a scoped project's tasks complete
/// without the scope, as `vx run` reads them (issue 48).
#[test]
fn flag_values_and_unscoped_ids_complete() {
    let f = w();
    assert_eq!(
        complete(&f, "", &["vx", "run", "--output-logs", "h"]),
        ["hash-only"]
    );
    assert_eq!(
        complete(&f, "", &["vx", "run", "--ui", ""]),
        ["plain", "tui"]
    );
    assert_eq!(
        complete(&f, "", &["vx", "run", "--log-order", "s"]),
        ["stream"]
    );
    assert_eq!(complete(&f, "", &["vx", "why", "--format", "j"]), ["json"]);

    let f = crate::empty();
    f.write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
    for (dir, name) in [
        ("web", "@acme/web"),
        ("ui", "@acme/ui"),
        ("ui2", "@other/ui"),
    ] {
        f.write(
            &format!("packages/{dir}/package.json"),
            &format!("{{ \"name\": \"{name}\" }}"),
        );
        f.write(
            &format!("packages/{dir}/vx.toml"),
            "[tasks.build]\ncommand = \"true\"\n",
        );
    }
    assert_eq!(complete(&f, "", &["vx", "run", "web#"]), ["web#build"]);
    // Two scopes have a `ui`: the bare name would be ambiguous, so only the scoped ids.
    assert_eq!(
        complete(&f, "", &["vx", "run", "ui#"]),
        Vec::<String>::new()
    );
    assert_eq!(
        complete(&f, "", &["vx", "run", "@acme/"]),
        ["@acme/ui#build", "@acme/web#build"]
    );
}
