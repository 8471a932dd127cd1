//! Git's ignore rules as a chain of matchers, shared by the walk, [`Tree::refresh`] and
//! [`Tree::is_ignored`] so the three always agree.
//!
//! A directory's rules are its own `.gitignore` (if any), then its parent's, up to the
//! repository's work tree, then `.git/info/exclude`, then `core.excludesFile`: the first matcher
//! with an opinion (ignore or `!` re-include) decides, as in git. The chain is a linked list of
//! `Arc`s, so a directory without a `.gitignore` shares its parent's chain for free. A nested
//! repository starts a new chain: its outer repository's rules do not reach into it. Matching
//! uses `ignore::gitignore`, which implements gitignore's pattern syntax.
//!
//! [`Tree::refresh`]: super::Tree::refresh
//! [`Tree::is_ignored`]: super::Tree::is_ignored

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;

use super::names::is_at_or_under;

/// One directory's `.gitignore` on top of the chain of its parents.
pub(crate) struct Layer {
    matcher: Gitignore,
    parent: Chain,
}

/// The `.gitignore` rules that apply in one directory, innermost first.
pub(crate) type Chain = Option<Arc<Layer>>;

/// The rules of one repository that do not come from `.gitignore` files.
#[derive(Default)]
pub(crate) struct RepoExcludes {
    /// `info/exclude`, then `core.excludesFile`; empty outside git.
    pub(crate) files: Vec<Gitignore>,
    pub(crate) ignore_case: bool,
}

/// Builds a matcher for `file`, whose patterns are relative to `base`; `None` when the file
/// does not exist, cannot be read or holds no pattern. Invalid patterns are skipped, as git
/// skips them.
pub(crate) fn matcher(file: &Path, base: &Path, ignore_case: bool) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(base);
    // Infallible in practice: the setter only returns `Result` for historical reasons.
    builder.case_insensitive(ignore_case).ok()?;
    if let Some(ignore::Error::Io(_)) = builder.add(file) {
        return None;
    }
    let matcher = builder.build().ok()?;
    (!matcher.is_empty()).then_some(matcher)
}

/// `chain` extended with `dir/.gitignore`, which the caller saw is a regular file (git does not
/// follow a symlinked `.gitignore`).
pub(crate) fn push(chain: &Chain, dir: &Path, ignore_case: bool) -> Chain {
    match matcher(&dir.join(".gitignore"), dir, ignore_case) {
        Some(matcher) => Some(Arc::new(Layer {
            matcher,
            parent: chain.clone(),
        })),
        None => chain.clone(),
    }
}

/// [`push`] after checking that `dir/.gitignore` is a regular file.
pub(crate) fn push_if_present(chain: &Chain, dir: &Path, ignore_case: bool) -> Chain {
    match std::fs::symlink_metadata(dir.join(".gitignore")) {
        Ok(meta) if meta.is_file() => push(chain, dir, ignore_case),
        _ => chain.clone(),
    }
}

/// Whether git would ignore `abs` (a path under the chain's directories), given that none of
/// its parent directories is ignored.
pub(crate) fn is_ignored(chain: &Chain, repo: &RepoExcludes, abs: &Path, is_dir: bool) -> bool {
    let mut layer = chain.as_deref();
    while let Some(current) = layer {
        match current.matcher.matched(abs, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => layer = current.parent.as_deref(),
        }
    }
    for matcher in &repo.files {
        match matcher.matched(abs, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}

/// Paths never listed: `.git` and `.vx` at any level, and the excluded directories.
pub(crate) struct Exclusions {
    /// Root-relative excluded directories.
    dirs: Vec<Vec<u8>>,
}

impl Exclusions {
    /// `excluded` are absolute; those outside `root` cannot matter.
    pub(crate) fn new(root: &Path, excluded: &[PathBuf]) -> Exclusions {
        let dirs = excluded
            .iter()
            .filter_map(|dir| dir.strip_prefix(root).ok())
            .map(|rel| rel.as_os_str().as_bytes().to_vec())
            .filter(|rel| !rel.is_empty())
            .collect();
        Exclusions { dirs }
    }

    /// Whether the root-relative `path` is never listed.
    pub(crate) fn excludes(&self, path: &[u8]) -> bool {
        path.split(|b| *b == b'/')
            .any(|part| part == b".git" || part == b".vx")
            || self.dirs.iter().any(|dir| is_at_or_under(path, dir))
    }

    pub(crate) fn excludes_dir(&self, path: &[u8]) -> bool {
        self.dirs.iter().any(|dir| dir == path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inner_rules_win_and_repo_rules_come_last() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join(".gitignore"), "*.log\nbuild/\n").unwrap();
        std::fs::write(root.join("a/.gitignore"), "!keep.log\n").unwrap();
        std::fs::write(root.join("exclude"), "*.tmp\n!x.log\n").unwrap();
        let repo = RepoExcludes {
            files: vec![matcher(&root.join("exclude"), root, false).unwrap()],
            ignore_case: false,
        };
        let top = push(&None, root, false);
        let a = push(&top, &root.join("a"), false);
        let b = push(&a, &root.join("a/b"), false);
        assert!(is_ignored(&top, &repo, &root.join("x.log"), false));
        assert!(!is_ignored(&b, &repo, &root.join("a/b/keep.log"), false));
        assert!(is_ignored(&b, &repo, &root.join("a/b/other.log"), false));
        assert!(is_ignored(&b, &repo, &root.join("a/b/t.tmp"), false));
        assert!(is_ignored(&top, &repo, &root.join("build"), true));
        assert!(!is_ignored(&top, &repo, &root.join("build"), false));
        assert!(!is_ignored(&top, &repo, &root.join("main.rs"), false));
    }
}
