//! The language server's state: the connection, the workspace root, the documents the editor
//! holds, and the last workspace that loaded; what every request handler reads.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use lsp_server::{Connection, Message, Notification};
use lsp_types::Uri;

use super::analysis::Loaded;
use super::text::Lines;

pub(crate) struct Server<'c> {
    pub(super) conn: &'c Connection,
    /// The workspace root, once known (from the client's folder or the first document).
    pub(super) root: Option<PathBuf>,
    /// Open documents by canonical path (the root is canonical, the client's paths may go
    /// through a symbolic link), with the URI the client named each by.
    pub(super) docs: BTreeMap<PathBuf, String>,
    pub(super) uris: BTreeMap<PathBuf, Uri>,
    /// The last workspace that loaded.
    pub(super) loaded: Option<Loaded>,
    /// What earlier analyses parsed, by file and text.
    pub(super) parsed: vx_workspace::Parsed,
    /// Files whose diagnostics were published non-empty.
    pub(super) published: BTreeSet<PathBuf>,
    pub(super) dirty: bool,
    pub(super) next_request: i32,
    /// The `vx run`s the lenses started and that have not ended (their pids).
    pub(super) running: std::sync::Arc<std::sync::Mutex<Vec<u32>>>,
}

impl Server<'_> {
    pub(super) fn send(&self, message: Message) {
        let _ = self.conn.sender.send(message);
    }

    pub(crate) fn notify<N: lsp_types::notification::Notification>(&self, params: N::Params) {
        self.send(Message::Notification(Notification::new(
            N::METHOD.to_string(),
            params,
        )));
    }

    /// The open documents that vx reads, by root-relative path.
    pub(super) fn overlay(&self, root: &Path) -> BTreeMap<String, String> {
        self.docs
            .iter()
            .filter_map(|(path, text)| {
                let rel = path.strip_prefix(root).ok()?.to_str()?;
                let name = path.file_name()?;
                (name == "vx.toml" || name == "package.json")
                    .then(|| (rel.to_string(), text.clone()))
            })
            .collect()
    }

    /// Runs `f` over a file's text as the editor holds it, else as the disk does.
    pub(crate) fn with_text<T>(&self, path: &Path, f: impl FnOnce(&Lines<'_>) -> T) -> T {
        match self.docs.get(path) {
            Some(text) => f(&Lines::new(text)),
            None => {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                f(&Lines::new(&text))
            }
        }
    }

    /// The root-relative path of an open document, with its text.
    pub(crate) fn document(&self, uri: &Uri) -> Option<(PathBuf, String, &String)> {
        let path = path_of(uri)?;
        let root = self.root.as_ref()?;
        let rel = path.strip_prefix(root).ok()?.to_str()?.to_string();
        let text = self.docs.get(&path)?;
        Some((path, rel, text))
    }
}

impl Server<'_> {
    /// The project of the last workspace that loaded whose directory holds the file `rel`
    /// (a `vx.toml` or a `package.json`, root-relative).
    pub(crate) fn project_of(&self, rel: &str) -> Option<&vx_core::Project> {
        let dir = rel
            .strip_suffix("vx.toml")
            .or_else(|| rel.strip_suffix("package.json"))
            .unwrap_or(rel)
            .trim_end_matches('/');
        let ws = &self.loaded.as_ref()?.workspace;
        ws.projects.iter().find(|p| p.dir == dir)
    }

    /// The URI to name a file by: the client's own for a document it opened, else the file's.
    pub(crate) fn uri_for(&self, path: &Path) -> Option<Uri> {
        self.uris.get(path).cloned().or_else(|| uri_of(path))
    }
}

/// Whether a root-relative path is a `vx.toml` (completion, hover and lenses serve only those).
pub(crate) fn is_config(rel: &str) -> bool {
    rel == "vx.toml" || rel.ends_with("/vx.toml")
}

pub(crate) fn uri_of(path: &Path) -> Option<Uri> {
    url::Url::from_file_path(path).ok()?.as_str().parse().ok()
}

/// The canonical path a URI names: symbolic links resolved, as the root's are (a file not on
/// disk yet, by its directory).
pub(crate) fn path_of(uri: &Uri) -> Option<PathBuf> {
    let path = url::Url::parse(uri.as_str()).ok()?.to_file_path().ok()?;
    if let Ok(canonical) = std::fs::canonicalize(&path) {
        return Some(canonical);
    }
    let dir = std::fs::canonicalize(path.parent()?).ok()?;
    Some(dir.join(path.file_name()?))
}
