//! Why a workspace could not be loaded (DISC-1, ERR-2, ERR-3).

use std::path::PathBuf;

use vx_core::Diagnostic;

/// Why a workspace could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// DISC-1: nothing found. `package_json_above` says whether a `package.json` exists from
    /// cwd upward, which selects the hint.
    #[error("not inside a vx workspace (no vx.toml with [workspace] from {} upward)", cwd.display())]
    NotInWorkspace {
        cwd: PathBuf,
        package_json_above: bool,
    },
    /// Every configuration problem found, collected across all files (CFG-10), sorted by
    /// location. Exit 2.
    #[error("{} configuration error(s)", .0.len())]
    Config(Vec<Diagnostic>),
    /// An IO failure that is not a configuration error; names the path and the operation.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl LoadError {
    /// The DISC-1 hint for [`LoadError::NotInWorkspace`].
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            LoadError::NotInWorkspace {
                package_json_above: true,
                ..
            } => Some("run `vx init` at the repository root"),
            LoadError::NotInWorkspace { .. } => {
                Some("create a `vx.toml` with a `[workspace]` table at the repository root")
            }
            _ => None,
        }
    }
}
