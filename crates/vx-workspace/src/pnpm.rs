//! `pnpm-workspace.yaml`: its `packages` list of member globs (DISC-1, DISC-2).
//!
//! The YAML parser gives no positions for list items, so each glob is located by finding its
//! `- <glob>` line below `packages:`; a glob written in flow style (`packages: [a, b]`) is
//! located at its first occurrence in the file.

use serde::Deserialize;
use vx_core::{Diagnostic, Location, Spanned};

use crate::source::SourceText;

#[derive(Deserialize)]
struct PnpmWorkspace {
    #[serde(default)]
    packages: Option<Vec<String>>,
}

/// The `packages` globs of a `pnpm-workspace.yaml` (empty when the key is absent).
pub(crate) fn pnpm_packages(
    text: &str,
    rel_path: &str,
) -> Result<Vec<Spanned<String>>, Diagnostic> {
    let source = SourceText::new(rel_path, text);
    // An empty file (or one with only comments) is a workspace without members.
    let parsed: Option<PnpmWorkspace> = serde_yaml::from_str(text).map_err(|e| {
        let at = match e.location() {
            Some(l) => Location::new(rel_path, l.line() as u32, l.column() as u32),
            None => Location::new(rel_path, 1, 1),
        };
        let message = e.to_string();
        // serde_yaml appends " at line L column C", which the location already says.
        let message = message
            .split(" at line ")
            .next()
            .unwrap_or(&message)
            .to_string();
        Diagnostic::at(at, format!("invalid `pnpm-workspace.yaml`: {message}"))
    })?;
    let globs = parsed.and_then(|p| p.packages).unwrap_or_default();
    Ok(globs
        .into_iter()
        .map(|glob| {
            let at = source.location(locate(text, &glob));
            Spanned::new(glob, at)
        })
        .collect())
}

/// The byte offset where `glob` is written as an item of `packages`.
fn locate(text: &str, glob: &str) -> usize {
    let mut offset = 0;
    let mut in_packages = false;
    for line in text.split_inclusive('\n') {
        let content = line.trim_end();
        let indented = content.starts_with([' ', '\t', '-']);
        if !indented && !content.is_empty() && !content.starts_with('#') {
            in_packages = content.starts_with("packages:");
        } else if in_packages {
            if let Some(dash) = content.trim_start().strip_prefix('-') {
                let item = dash.trim_start();
                let value = item.split(" #").next().unwrap_or(item).trim_end();
                let unquoted = value
                    .strip_prefix('\'')
                    .and_then(|v| v.strip_suffix('\''))
                    .or_else(|| value.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
                    .unwrap_or(value);
                if unquoted == glob {
                    return offset + (content.len() - item.len());
                }
            }
        }
        offset += line.len();
    }
    text.find(glob).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_locates_packages() {
        let text = "# comment\npackages:\n  - 'apps/*'\n  - \"packages/**\" # all\n  - '!**/test/**'\nother: 1\n";
        let globs = pnpm_packages(text, "pnpm-workspace.yaml").unwrap();
        let shown: Vec<String> = globs
            .iter()
            .map(|g| format!("{} {}", g.at, g.value))
            .collect();
        assert_eq!(
            shown,
            [
                "pnpm-workspace.yaml:3:5 apps/*",
                "pnpm-workspace.yaml:4:5 packages/**",
                "pnpm-workspace.yaml:5:5 !**/test/**",
            ]
        );
    }

    #[test]
    fn empty_files_have_no_members_and_bad_yaml_is_located() {
        assert!(pnpm_packages("", "pnpm-workspace.yaml").unwrap().is_empty());
        let error = pnpm_packages("packages: [a\n", "pnpm-workspace.yaml").unwrap_err();
        assert!(
            error.to_string().starts_with("pnpm-workspace.yaml:"),
            "{error}"
        );
    }
}
