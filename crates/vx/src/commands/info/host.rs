//! Facts about the machine for `vx info` (HIST-6): the git version (through the supervisor,
//! like every process vx starts). The memory budget is `vx_engine::host::memory`'s.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use vx_exec::subprocess;

/// `git --version` as `2.43.0`; `None` when git is not on PATH or does not answer.
pub fn git_version(root: &Path, env: &BTreeMap<String, String>) -> Option<String> {
    let git = subprocess::find_on_path("git", env.get("PATH")?)?;
    // ENV-1: vx's own git commands never follow variables that point git elsewhere.
    let output = subprocess::run(
        git,
        "git",
        vec!["--version".into()],
        root,
        subprocess::git_env(env),
        Duration::from_secs(10),
    );
    if output.completion.exit_code != 0 {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().next()?.trim();
    let version = line.strip_prefix("git version ").unwrap_or(line);
    (!version.is_empty()).then(|| version.to_string())
}

/// Whether `dir` lies in a git work tree (`git rev-parse --is-inside-work-tree`); `None` when
/// git is not on PATH.
pub fn in_git_repository(dir: &Path, env: &BTreeMap<String, String>) -> Option<bool> {
    let git = subprocess::find_on_path("git", env.get("PATH")?)?;
    let output = subprocess::run(
        git,
        "git",
        vec!["rev-parse".into(), "--is-inside-work-tree".into()],
        dir,
        subprocess::git_env(env),
        Duration::from_secs(10),
    );
    Some(output.completion.exit_code == 0 && output.stdout.starts_with(b"true"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_is_found_on_path_or_reported_missing() {
        let dir = tempfile::tempdir().unwrap();
        let env: BTreeMap<String, String> =
            [("PATH".to_string(), dir.path().display().to_string())].into();
        assert_eq!(git_version(dir.path(), &env), None);
    }
}
