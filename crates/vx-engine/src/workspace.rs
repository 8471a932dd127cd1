//! Loading the workspace for any verb, with vx-workspace's errors turned into vx's messages
//! (DISC-1, ERR-2, ERR-3).

use std::path::Path;

use vx_core::{Diagnostic, Workspace};
use vx_workspace::LoadError;

use crate::error::Failure;

pub fn load(cwd: &Path) -> Result<Workspace, Failure> {
    vx_workspace::discover(cwd).map_err(load_error)
}

/// The workspace from `vx.lock` (INIT-5): a missing or stale lock is a usage error (exit 2).
pub fn load_frozen(cwd: &Path) -> Result<Workspace, Failure> {
    vx_workspace::discover_frozen(cwd).map_err(load_error)
}

/// The root and its `[workspace]` table only, for verbs that must work while a project's
/// configuration is broken (HIST-3). A root `vx.toml` that does not parse gives defaults.
pub fn root_only(
    cwd: &Path,
) -> Result<(std::path::PathBuf, vx_core::config::WorkspaceConfig), Failure> {
    let root = vx_workspace::find_root(cwd).map_err(load_error)?;
    let settings = std::fs::read_to_string(root.join(vx_core::config::CONFIG_FILE))
        .ok()
        .and_then(|text| vx_workspace::parse_config(&text, "vx.toml", true).ok())
        .and_then(|config| config.workspace)
        .unwrap_or_default();
    Ok((root, settings))
}

/// The root, its `[workspace]` table and the cache directory (STORE-2) for a verb that reads
/// the store without loading the workspace (`vx why`, `vx cache prune`).
pub fn store_location(
    cwd: &Path,
    flag: Option<&str>,
) -> Result<(std::path::PathBuf, std::path::PathBuf), Failure> {
    let (root, settings) = root_only(cwd)?;
    let env = crate::host::env::host_env();
    let dir = crate::cache_dir::cache_dir(&root, cwd, flag, &env, settings.cache_dir.as_deref());
    Ok((root, dir))
}

pub fn load_error(e: LoadError) -> Failure {
    match e {
        LoadError::NotInWorkspace {
            cwd,
            package_json_above,
        } => {
            let d = Diagnostic::new(format!(
                "not inside a vx workspace (no vx.toml with [workspace] from {} upward)",
                cwd.display()
            ));
            Failure::from(if package_json_above {
                d.hint("run `vx init` at the repository root")
            } else {
                d.hint("create a `vx.toml` with a `[workspace]` table at the repository root")
            })
        }
        LoadError::Config(diagnostics) => Failure::User(diagnostics),
        LoadError::Io { path, op, source } => Failure::from(io_diagnostic(&path, op, &source)),
    }
}

/// ERR-3: file-system failures name the path and the operation.
pub fn io_diagnostic(path: &Path, op: &str, error: &std::io::Error) -> Diagnostic {
    let reason = match error.raw_os_error() {
        Some(libc_code)
            if libc_code == nix::libc::EACCES
                || libc_code == nix::libc::EPERM
                || libc_code == nix::libc::EROFS =>
        {
            "permission denied".to_string()
        }
        Some(code) if code == nix::libc::ENOSPC || code == nix::libc::EDQUOT => {
            "no space left on device".to_string()
        }
        _ => error.to_string(),
    };
    let d = Diagnostic::new(format!("cannot {op} {}: {reason}", path.display()));
    match error.raw_os_error() {
        Some(code) if code == nix::libc::EMFILE || code == nix::libc::ENFILE => {
            d.hint("raise the open-file limit (ulimit -n)")
        }
        _ => d,
    }
}
