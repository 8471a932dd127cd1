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
    /// Open documents by absolute path.
    pub(super) docs: BTreeMap<PathBuf, String>,
    /// The last workspace that loaded.
    pub(super) loaded: Option<Loaded>,
    /// What earlier analyses parsed, by file and text.
    pub(super) parsed: vx_workspace::Parsed,
    /// Files whose diagnostics were published non-empty.
    pub(super) published: BTreeSet<PathBuf>,
    pub(super) dirty: bool,
    pub(super) next_request: i32,
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

pub(crate) fn uri_of(path: &Path) -> Option<Uri> {
    url::Url::from_file_path(path).ok()?.as_str().parse().ok()
}

pub(crate) fn path_of(uri: &Uri) -> Option<PathBuf> {
    url::Url::parse(uri.as_str()).ok()?.to_file_path().ok()
}
