//! The conservative attributes check of the index shortcut (KEY-11).
//!
//! The index records the blob of the *cleaned* bytes; when a `text`, `eol`, `filter`, `ident`,
//! `working-tree-encoding` (or the old `crlf`) attribute can apply, the worktree bytes may
//! differ from the blob, so the index cannot vouch for them. Rather than match attribute
//! patterns per path, vx turns the shortcut off for the whole run when any attributes file that
//! could apply sets one of those attributes (a `-text` or `!eol` only removes a conversion and
//! does not count). Macros are covered: a macro that sets one is caught at its definition.
//!
//! Not covered: an untracked `.gitattributes` inside an ignored directory that holds tracked
//! files (the walk does not enter ignored directories).

use std::collections::HashSet;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

const CONVERSIONS: [&[u8]; 6] = [
    b"text",
    b"eol",
    b"filter",
    b"ident",
    b"working-tree-encoding",
    b"crlf",
];

/// The tracked `.gitattributes` files under the root, and those of the root and its ancestors
/// up to the work tree.
pub(crate) fn tracked_and_ancestor_files(
    worktree: &Path,
    root: &Path,
    tracked: &HashSet<Vec<u8>>,
) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = tracked
        .iter()
        .filter(|p| p.as_slice() == b".gitattributes" || p.ends_with(b"/.gitattributes"))
        .map(|p| root.join(std::ffi::OsStr::from_bytes(p)))
        .collect();
    for dir in root.ancestors() {
        files.push(dir.join(".gitattributes"));
        if dir == worktree {
            break;
        }
    }
    files
}

/// Whether any of `files` sets a conversion attribute. A file that exists but cannot be read
/// counts as setting one.
pub(crate) fn any_conversion(files: &[PathBuf]) -> bool {
    files.iter().any(|file| match std::fs::read(file) {
        Ok(text) => sets_conversion(&text),
        Err(e) => !matches!(
            e.kind(),
            ErrorKind::NotFound | ErrorKind::NotADirectory | ErrorKind::IsADirectory
        ),
    })
}

/// Whether an attributes text sets a conversion attribute on any pattern or macro.
pub(crate) fn sets_conversion(text: &[u8]) -> bool {
    text.split(|b| *b == b'\n').any(|line| {
        let line = line.trim_ascii();
        if line.is_empty() || line.starts_with(b"#") {
            return false;
        }
        attribute_tokens(line).any(|token| {
            if token.starts_with(b"-") || token.starts_with(b"!") {
                return false;
            }
            let name = token.split(|b| *b == b'=').next().unwrap_or(token);
            CONVERSIONS.contains(&name)
        })
    })
}

/// The attribute tokens of one line: everything after the pattern (a quoted pattern may hold
/// blanks).
fn attribute_tokens(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    let rest = if line.starts_with(b"\"") {
        let mut escaped = false;
        let close = line[1..].iter().position(|b| {
            let end = *b == b'"' && !escaped;
            escaped = *b == b'\\' && !escaped;
            end
        });
        close.map_or(&line[line.len()..], |i| &line[i + 2..])
    } else {
        let end = line
            .iter()
            .position(u8::is_ascii_whitespace)
            .unwrap_or(line.len());
        &line[end..]
    };
    rest.split(u8::is_ascii_whitespace)
        .filter(|token| !token.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setting_a_conversion_counts() {
        assert!(sets_conversion(
            b"*.bin filter=lfs diff=lfs merge=lfs -text\n"
        ));
        assert!(sets_conversion(b"* text=auto\n"));
        assert!(sets_conversion(b"*.sh eol=lf\n"));
        assert!(sets_conversion(b"*.c ident\n"));
        assert!(sets_conversion(b"*.txt working-tree-encoding=UTF-16\n"));
        assert!(sets_conversion(b"[attr]lf text eol=lf\n"));
        assert!(sets_conversion(b"\"a b.txt\" text\n"));
        assert!(sets_conversion(b"*.x crlf\n"));
    }

    #[test]
    fn removing_a_conversion_or_other_attributes_do_not_count() {
        assert!(!sets_conversion(
            b"# * text\n*.png binary\n*.jpg -text\n*.md !eol\n"
        ));
        assert!(!sets_conversion(b"*.rs diff=rust linguist-generated\n"));
        assert!(!sets_conversion(b"text\n"));
        assert!(!sets_conversion(b"\"text eol\" -diff\n"));
        assert!(!sets_conversion(b""));
    }
}
