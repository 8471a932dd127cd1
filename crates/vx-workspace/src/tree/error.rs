//! Why the workspace's files could not be listed.

use std::path::PathBuf;

/// Why the tree could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An unreadable or corrupt index, a `.git` file that names no repository.
    #[error("cannot use the git repository at {}: {reason}", path.display())]
    Git { path: PathBuf, reason: String },
}
