//! Writing the `vx.toml` text of `vx init`: the header, the `[workspace]` table when asked,
//! one `[tasks.<name>]` table per mapped task, and the comments for what was not mapped.
//!
//! The text is written by hand rather than serialised, because most of what makes it useful
//! is comments: TODOs, the commented cache suggestion, the scripts left out.

use std::fmt::Write;

use super::scripts::{LeftOutWhy, Mapping};

/// What goes before the tasks.
pub enum Head<'a> {
    /// A project's `vx.toml`.
    Project,
    /// The root `vx.toml` of a monorepo whose members come from `source`.
    MonorepoRoot { source: &'a str },
    /// The root `vx.toml` of a single package: `members = []`, tasks at the root.
    SinglePackage,
}

/// The text of one `vx.toml`. `manifest` is the root-relative path of the `package.json` the
/// tasks come from.
pub fn render(head: Head<'_>, manifest: &str, mapping: &Mapping) -> String {
    let mut out = String::new();
    match head {
        Head::Project => {
            let _ = writeln!(
                out,
                "# Written by `vx init` from the scripts of {}.",
                one_line(manifest)
            );
        }
        Head::MonorepoRoot { source } => {
            let _ = writeln!(
                out,
                "# Written by `vx init`. The members are the packages {source} lists."
            );
            if !mapping.tasks.is_empty() {
                let _ = writeln!(
                    out,
                    "# The tasks below come from the scripts of {manifest}."
                );
            }
            out.push_str("\n[workspace]\n");
        }
        Head::SinglePackage => {
            let _ = writeln!(
                out,
                "# Written by `vx init` from the scripts of {manifest}: one package, whose tasks\n\
                 # are the workspace root's (`//`)."
            );
            out.push_str("\n[workspace]\nmembers = []\n");
        }
    }
    if let Some((hooks, why)) = &mapping.unfolded_hooks {
        let names: Vec<String> = hooks.iter().map(|h| format!("`{h}`")).collect();
        let _ = writeln!(
            out,
            "\n# Kept as tasks of their own, not folded into the scripts they precede or follow\n\
             # ({why}, so the package manager does not run them): {}.",
            one_line(&names.join(", "))
        );
    }

    for task in &mapping.tasks {
        let _ = writeln!(out, "\n[tasks.{}]", key(&task.name));
        if let Some(command) = &task.command {
            let _ = writeln!(out, "command = {}", string(command));
        }
        if !task.depends_on.is_empty() {
            let _ = writeln!(out, "depends-on = {}", array(&task.depends_on));
        }
        if !task.define.is_empty() {
            let entries: Vec<String> = task
                .define
                .iter()
                .map(|(name, value)| format!("{} = {}", key(name), string(value)))
                .collect();
            let _ = writeln!(out, "env = {{ define = {{ {} }} }}", entries.join(", "));
        }
        for note in &task.notes {
            let _ = writeln!(out, "# TODO: {note}");
        }
        if task.persistent {
            out.push_str("persistent = true  # TODO: add ready-when\n");
        }
        if !task.suggested_outputs.is_empty() {
            out.push_str("# TODO: check inputs and outputs, then uncomment to cache this task\n");
            let _ = writeln!(
                out,
                "# cache = {{ inputs = [\"src/**\"], outputs = {} }}",
                array(&task.suggested_outputs)
            );
        }
    }

    let orchestrating: Vec<_> = mapping
        .left_out
        .iter()
        .filter(|l| l.why == LeftOutWhy::Orchestrates)
        .collect();
    if !orchestrating.is_empty() {
        out.push_str(
            "\n# Not mapped: these scripts drive the whole workspace; `vx run <task> --all` does that.\n",
        );
        for left in orchestrating {
            let _ = writeln!(
                out,
                "#   {}: {}",
                one_line(&left.name),
                one_line(&left.text)
            );
        }
    }
    for left in &mapping.left_out {
        if let LeftOutWhy::Unmappable(problem) = &left.why {
            let _ = writeln!(
                out,
                "\n# TODO: script {:?} is not mapped: {}\n#   {}",
                left.name,
                one_line(problem),
                one_line(&left.text)
            );
        }
    }
    out
}

/// Text for a comment: TOML comments cannot hold control characters other than tab.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() && c != '\t' { ' ' } else { c })
        .collect()
}

/// A TOML key: bare when it can be, else a quoted string.
pub fn key(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if bare {
        name.to_string()
    } else {
        basic(name)
    }
}

/// A TOML string: `"…"` when nothing needs escaping, else `'…'` when that can hold it, else
/// an escaped `"…"`.
pub fn string(value: &str) -> String {
    let control = value.chars().any(|c| c.is_control() && c != '\t');
    if !control && !value.contains(['"', '\\']) {
        format!("\"{value}\"")
    } else if !control && !value.contains('\'') {
        format!("'{value}'")
    } else {
        basic(value)
    }
}

/// An escaped basic string.
fn basic(value: &str) -> String {
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn array(items: &[String]) -> String {
    let items: Vec<String> = items.iter().map(|i| string(i)).collect();
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_and_keys_are_quoted_only_when_needed() {
        assert_eq!(string("tsc -b"), "\"tsc -b\"");
        assert_eq!(string(r#"eslint "src/**""#), r#"'eslint "src/**"'"#);
        assert_eq!(string(r#"echo "it's""#), r#""echo \"it's\"""#);
        assert_eq!(string("a\nb"), "\"a\\nb\"");
        assert_eq!(key("build"), "build");
        assert_eq!(key("build:css"), "\"build:css\"");
    }
}
