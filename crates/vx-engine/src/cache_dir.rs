//! Where the cache directory is (STORE-2) and which directories it may not be, and the
//! checkout's identity the store records stamps under.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use vx_core::Workspace;

/// STORE-2: the BLAKE3 of the root's canonical absolute path.
pub fn workspace_identity(root: &Path) -> String {
    vx_core::key::hex(blake3::hash(root.to_string_lossy().as_bytes()).as_bytes())
}

/// Where the store lives (STORE-2): `--cache-dir` (relative to cwd) > `VX_CACHE_DIR`
/// (relative to the root) > `[workspace] cache-dir` (root-relative, `~/` expanded) > `.vx`.
pub fn cache_dir(
    root: &Path,
    cwd: &Path,
    flag: Option<&str>,
    env: &BTreeMap<String, String>,
    setting: Option<&str>,
) -> PathBuf {
    let home = env.get("HOME").map(PathBuf::from);
    let expand = |text: &str, base: &Path| -> PathBuf {
        match (text.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => base.join(text),
        }
    };
    let chosen = if let Some(flag) = flag {
        expand(flag, cwd)
    } else if let Some(value) = env.get("VX_CACHE_DIR").filter(|v| !v.is_empty()) {
        expand(value, root)
    } else if let Some(setting) = setting {
        expand(setting, root)
    } else {
        root.join(".vx")
    };
    normalise(&chosen)
}

/// Lexical normalisation: `.` and `..` segments resolved without touching the disk (the
/// directory may not exist yet).
pub fn normalise(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// STORE-2: a cache directory that is the root, contains it, contains a project, or is `/`
/// would hold (and prune) workspace sources.
pub fn refuses_cache_dir(dir: &Path, workspace: &Workspace) -> bool {
    let root = &workspace.root;
    dir == Path::new("/")
        || root.starts_with(dir)
        || workspace
            .projects
            .iter()
            .any(|p| root.join(&p.dir).starts_with(dir))
}
