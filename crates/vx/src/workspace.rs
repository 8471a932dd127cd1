//! Loading the workspace for any verb, with vx-workspace's errors turned into vx's messages
//! (DISC-1, ERR-2, ERR-3).

use std::path::Path;

use vx_core::{Diagnostic, Workspace};
use vx_workspace::LoadError;

use crate::error::Failure;

pub fn load(cwd: &Path) -> Result<Workspace, Failure> {
    vx_workspace::discover(cwd).map_err(|e| match e {
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
    })
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
