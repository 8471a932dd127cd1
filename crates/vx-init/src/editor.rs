//! The files that let an editor check `vx.toml` with no vx-specific setup: `vx.schema.json`
//! (what `vx schema` prints) and a `.taplo.toml` rule that maps every `vx.toml` to it, read by
//! the Taplo CLI and by editors built on Taplo (Even Better TOML in VS Code, Zed's and Helix's
//! TOML support). `vx lsp` does more; these need nothing but a TOML extension.
//!
//! - `vx.schema.json` is written when missing, and written again when it is vx's own (its
//!   `title` is `vx.toml`) and differs (an older vx's); a file of that name that is not vx's is
//!   kept.
//! - `.taplo.toml` is written when missing; one whose rule already includes `vx.toml` (or
//!   names `vx.schema.json`) is kept; any other gets the rule appended at its end (an
//!   array-of-tables entry, valid after any table).

use std::path::Path;

use vx_engine::workspace::io_diagnostic;

pub const SCHEMA_FILE: &str = "vx.schema.json";
pub const TAPLO_FILE: &str = ".taplo.toml";

/// The rule `.taplo.toml` gets.
const RULE: &str = "[[rule]]
include = [\"**/vx.toml\"]

[rule.schema]
path = \"./vx.schema.json\"
";

/// What became of one of the two files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    Written,
    /// The rule was appended to an existing `.taplo.toml`.
    Appended,
    /// Already as it should be.
    Current,
    /// A file vx does not own: left alone (with why).
    Kept(&'static str),
    /// It could not be written (the `vx.toml` files are written all the same): vx's line for
    /// it (`cannot write PATH: REASON`).
    Failed(String),
}

/// Each file with its new text (`None`: left as it is) and its fate.
pub fn plan(root: &Path) -> Vec<(&'static str, Option<String>, Fate)> {
    let schema = format!(
        "{}\n",
        serde_json::to_string_pretty(&vx_core::config::json_schema()).unwrap_or_default()
    );
    let schema_plan = match std::fs::read_to_string(root.join(SCHEMA_FILE)) {
        Err(_) => (Some(schema), Fate::Written),
        Ok(old) if old == schema => (None, Fate::Current),
        Ok(old) if is_vx_schema(&old) => (Some(schema), Fate::Written),
        Ok(_) => (None, Fate::Kept("it is not vx's schema")),
    };
    let taplo_plan = match std::fs::read_to_string(root.join(TAPLO_FILE)) {
        Err(_) => (Some(RULE.to_string()), Fate::Written),
        Ok(old) if names_vx_toml(&old) => (None, Fate::Current),
        Ok(old) => {
            let sep = if old.is_empty() || old.ends_with("\n\n") {
                ""
            } else if old.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            };
            (Some(format!("{old}{sep}# vx.toml files, checked against `vx schema`'s schema (vx init).\n{RULE}")), Fate::Appended)
        }
    };
    vec![
        (SCHEMA_FILE, schema_plan.0, schema_plan.1),
        (TAPLO_FILE, taplo_plan.0, taplo_plan.1),
    ]
}

/// Whether a `.taplo.toml` already maps `vx.toml` files to a schema: a rule's `include` names
/// them, or it names vx's schema file (an `exclude` of them is not a mapping).
fn names_vx_toml(text: &str) -> bool {
    text.contains(SCHEMA_FILE)
        || text.lines().any(|line| {
            let line = line.trim_start();
            line.starts_with("include") && line.contains("vx.toml")
        })
}

fn is_vx_schema(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .is_ok_and(|v| v["title"] == "vx.toml" && v.get("$defs").is_some())
}

/// Writes the planned texts (each through a temporary file renamed over the old one). A file
/// that cannot be written is said in the report, never a failure of `vx init`: the `vx.toml`
/// files, written before, are what it is for.
pub fn write(root: &Path, planned: &mut [(&'static str, Option<String>, Fate)]) {
    for (rel, text, fate) in planned.iter_mut() {
        let Some(text) = text else {
            continue;
        };
        let temporary = root.join(format!("{rel}.vx-init-{}", std::process::id()));
        let written = std::fs::write(&temporary, text)
            .and_then(|()| std::fs::rename(&temporary, root.join(*rel)));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temporary);
            *fate = Fate::Failed(io_diagnostic(Path::new(rel), "write", &e).message);
        }
    }
}

/// The report's lines about the two files.
pub fn report(planned: &[(&'static str, Option<String>, Fate)], dry: bool) -> String {
    let wrote = if dry { "would write" } else { "wrote" };
    let mut out = String::new();
    for (rel, _, fate) in planned {
        let line = match fate {
            Fate::Written => format!("{wrote} {rel}"),
            Fate::Appended => format!(
                "{} a rule for vx.toml to {rel}",
                if dry { "would add" } else { "added" }
            ),
            Fate::Current => continue,
            Fate::Kept(why) => format!("kept {rel} ({why})"),
            Fate::Failed(why) => format!("{why} (the vx.toml files are written)"),
        };
        out.push_str(&line);
        out.push('\n');
    }
    // Said only when the association works: both files as they should be, one of them new.
    let works = planned
        .iter()
        .all(|(_, _, fate)| matches!(fate, Fate::Written | Fate::Appended | Fate::Current));
    if works && planned.iter().any(|(_, text, _)| text.is_some()) {
        out.push_str(
            "editors with Taplo (Even Better TOML) now check vx.toml against the schema; `vx lsp` does more (docs/editors.md)\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::names_vx_toml;

    #[test]
    fn a_taplo_file_maps_vx_toml_only_through_an_include_or_the_schema() {
        assert!(names_vx_toml("[[rule]]\ninclude = [\"**/vx.toml\"]\n"));
        assert!(names_vx_toml(
            "[rule.schema]\npath = \"./vx.schema.json\"\n"
        ));
        assert!(!names_vx_toml("exclude = [\"**/vx.toml\"]\n"));
        assert!(!names_vx_toml("[formatting]\nalign_entries = true\n"));
    }
}
