//! Git's ignore rules at a workspace root, read on demand for a few paths: the configuration
//! checks (GRAPH-9) ask whether an output directory is ignored before any walk, since an
//! ignored path is never an input of a glob. The walk's own rules (`excludes`) decide the
//! same way: `.gitignore` files from the work tree down, then `info/exclude`, then
//! `core.excludesFile`.

use std::path::{Path, PathBuf};

use super::config;
use super::excludes::{self, Chain, RepoExcludes};

/// The ignore rules of the repository holding a workspace root.
pub struct IgnoreRules {
    /// The work tree (outside git, the root), and the root relative to it.
    repo: (PathBuf, PathBuf, RepoExcludes),
}

impl IgnoreRules {
    pub fn new(root: &Path) -> IgnoreRules {
        let Ok(Some(dirs)) = super::repo::find_outer(root) else {
            // Outside git the walk honours the `.gitignore` files from the root down (a
            // pruned output copied into a Docker image has no `.git`): so do these checks.
            let excludes = RepoExcludes {
                files: Vec::new(),
                ignore_case: false,
            };
            return IgnoreRules {
                repo: (root.to_path_buf(), PathBuf::new(), excludes),
            };
        };
        let settings =
            config::repo_config(&config::global_config(), &dirs.common_dir, &dirs.git_dir)
                .settings(&dirs.worktree);
        let mut files = Vec::new();
        files.extend(excludes::matcher(
            &dirs.common_dir.join("info/exclude"),
            &dirs.worktree,
            settings.ignore_case,
        ));
        if let Some(global) = &settings.excludes_file {
            files.extend(excludes::matcher(
                global,
                &dirs.worktree,
                settings.ignore_case,
            ));
        }
        let rel = root
            .strip_prefix(&dirs.worktree)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let excludes = RepoExcludes {
            files,
            ignore_case: settings.ignore_case,
        };
        IgnoreRules {
            repo: (dirs.worktree, rel, excludes),
        }
    }

    /// Whether git ignores the root-relative `path` or one of the directories above it.
    /// `is_dir` says how to read a path that does not exist (`dist/` rules match directories
    /// only).
    pub fn is_ignored(&self, path: &str, is_dir: bool) -> bool {
        let (worktree, rel, repo) = &self.repo;
        let full = rel.join(path);
        let mut chain: Chain = excludes::push_if_present(&None, worktree, repo.ignore_case);
        let mut dir = worktree.clone();
        let parts: Vec<_> = full.components().collect();
        for (i, part) in parts.iter().enumerate() {
            let abs = dir.join(part);
            let last = i + 1 == parts.len();
            let as_dir = if last {
                std::fs::metadata(&abs)
                    .map(|m| m.is_dir())
                    .unwrap_or(is_dir)
            } else {
                true
            };
            if excludes::is_ignored(&chain, repo, &abs, as_dir) {
                return true;
            }
            if !last {
                chain = excludes::push_if_present(&chain, &abs, repo.ignore_case);
            }
            dir = abs;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_below_an_ignored_directory_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let git = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(root)
            .status()
            .unwrap();
        assert!(git.success());
        std::fs::create_dir_all(root.join("packages/web/src")).unwrap();
        std::fs::write(root.join(".gitignore"), "dist/\n").unwrap();
        std::fs::write(root.join("packages/web/.gitignore"), ".next\n").unwrap();
        let rules = IgnoreRules::new(root);
        assert!(rules.is_ignored("packages/web/dist", true));
        assert!(rules.is_ignored("packages/web/dist/types", true));
        assert!(rules.is_ignored("packages/web/.next", true));
        assert!(!rules.is_ignored("packages/web/src", true));
        assert!(
            !rules.is_ignored("packages/web/dist", false),
            "`dist/` matches directories"
        );
        let outside = tempfile::tempdir().unwrap();
        assert!(!IgnoreRules::new(outside.path()).is_ignored("dist", true));
    }
}
