//! `vx lsp`: a language server for `vx.toml` and the `package.json` fields vx reads, over
//! stdio (`lsp-server`, `lsp-types`). One thread answers in order: documents are kept as the
//! editor sends them (whole, `TextDocumentSyncKind::FULL`), and after each burst of changes
//! the workspace is analysed again with the open documents in place of their files
//! (`analysis`), so the diagnostics of every file are what `vx run` would print now.
//!
//! - `analysis`: the load and the checks, and the last workspace that loaded;
//! - `complete`: keys from the JSON Schema of `vx schema`, task ids in `depends-on`, project
//!   names in `deps`;
//! - `navigate`: hover (a task's resolved form as `vx show` prints it, and its last result) and
//!   go-to-definition from `depends-on` and `deps`;
//! - `lens`: "run · why · last" above each task, and the commands they execute;
//! - `context`: where the cursor is in a TOML text being typed; `text`: positions.

pub(crate) mod analysis;
mod complete;
mod context;
mod lens;
mod navigate;
mod state;
mod text;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument, DidOpenTextDocument,
    DidSaveTextDocument, Notification as _, PublishDiagnostics,
};
use lsp_types::request::{
    CodeLensRequest, Completion, ExecuteCommand, GotoDefinition, HoverRequest, RegisterCapability,
    Request as _,
};
use lsp_types::{
    CodeLensOptions, CompletionOptions, DiagnosticSeverity, ExecuteCommandOptions,
    InitializeParams, PublishDiagnosticsParams, Registration, RegistrationParams,
    ServerCapabilities, TextDocumentSyncCapability, TextDocumentSyncKind, Uri,
};
use serde_json::Value;

use vx_engine::error::Failure;
use vx_engine::exit;

use analysis::Analysis;
use state::path_of;
use state::Server;

/// Serves one editor on stdin and stdout until it says `exit`.
pub fn serve(cwd: &Path) -> Result<i32, Failure> {
    let (connection, io) = Connection::stdio();
    let capabilities = serde_json::to_value(capabilities()).unwrap_or_default();
    let params = connection
        .initialize(capabilities)
        .map_err(|e| Failure::usage(format!("vx lsp: the client did not initialize: {e}")))?;
    let params: InitializeParams = serde_json::from_value(params).unwrap_or_default();
    let start = start_dir(&params).unwrap_or_else(|| cwd.to_path_buf());
    let mut server = Server {
        conn: &connection,
        root: analysis::root_of(&start),
        docs: BTreeMap::new(),
        uris: BTreeMap::new(),
        loaded: None,
        parsed: vx_workspace::Parsed::default(),
        published: BTreeSet::new(),
        dirty: true,
        next_request: 0,
        running: Default::default(),
    };
    server.watch_files(&params);
    // The workspace as the disk holds it, before the editor's texts: diagnostics from the
    // start, and a workspace for completion even if the first texts sent do not load.
    server.refresh();
    let stopped = server.run();
    // A run a lens started does not outlive the editor's session.
    lens::stop_runs(&server.running);
    drop(connection);
    // The reader thread ends at stdin's end; the client may keep stdin open after `exit`.
    if stopped {
        let _ = io.join();
    }
    Ok(exit::SUCCESS)
}

fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(
                ["\"", "^", "#", ".", "["]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
            ),
            ..CompletionOptions::default()
        }),
        hover_provider: Some(lsp_types::HoverProviderCapability::Simple(true)),
        definition_provider: Some(lsp_types::OneOf::Left(true)),
        code_lens_provider: Some(CodeLensOptions {
            resolve_provider: Some(false),
        }),
        execute_command_provider: Some(ExecuteCommandOptions {
            commands: lens::COMMANDS.iter().map(|c| c.to_string()).collect(),
            ..ExecuteCommandOptions::default()
        }),
        ..ServerCapabilities::default()
    }
}

/// The folder the client opened: its first workspace folder, else its root.
fn start_dir(params: &InitializeParams) -> Option<PathBuf> {
    if let Some(folder) = params.workspace_folders.as_ref().and_then(|f| f.first()) {
        return path_of(&folder.uri);
    }
    #[allow(deprecated)]
    params.root_uri.as_ref().and_then(path_of)
}

impl Server<'_> {
    /// Answers until `exit`; true when the client asked for it (rather than closing stdin).
    fn run(&mut self) -> bool {
        while let Ok(first) = self.conn.receiver.recv() {
            let mut next = Some(first);
            // A burst of changes is analysed once, after its last message.
            while let Some(message) = next.take() {
                if self.handle(message) {
                    return true;
                }
                next = self.conn.receiver.try_recv().ok();
            }
            self.refresh();
        }
        false
    }

    /// Handles one message; true on `exit`.
    fn handle(&mut self, message: Message) -> bool {
        match message {
            Message::Request(request) => {
                if self.conn.handle_shutdown(&request).unwrap_or(true) {
                    return false;
                }
                self.refresh();
                self.answer(request);
            }
            Message::Notification(n) if n.method == "exit" => return true,
            Message::Notification(n) => self.notified(n),
            Message::Response(_) => {}
        }
        false
    }

    fn notified(&mut self, n: Notification) {
        match n.method.as_str() {
            DidOpenTextDocument::METHOD => {
                if let Ok(p) =
                    serde_json::from_value::<lsp_types::DidOpenTextDocumentParams>(n.params)
                {
                    self.opened(&p.text_document.uri, p.text_document.text);
                }
            }
            DidChangeTextDocument::METHOD => {
                if let Ok(p) =
                    serde_json::from_value::<lsp_types::DidChangeTextDocumentParams>(n.params)
                {
                    if let (Some(path), Some(change)) = (
                        path_of(&p.text_document.uri),
                        p.content_changes.into_iter().last(),
                    ) {
                        self.docs.insert(path, change.text);
                        self.dirty = true;
                    }
                }
            }
            DidCloseTextDocument::METHOD => {
                if let Ok(p) =
                    serde_json::from_value::<lsp_types::DidCloseTextDocumentParams>(n.params)
                {
                    if let Some(path) = path_of(&p.text_document.uri) {
                        self.docs.remove(&path);
                        self.uris.remove(&path);
                        self.dirty = true;
                    }
                }
            }
            DidSaveTextDocument::METHOD | DidChangeWatchedFiles::METHOD => self.dirty = true,
            _ => {}
        }
    }

    fn opened(&mut self, uri: &Uri, text: String) {
        let Some(path) = path_of(uri) else {
            return;
        };
        if self.root.is_none() {
            self.root = analysis::root_of(&path);
        }
        self.uris.insert(path.clone(), uri.clone());
        self.docs.insert(path, text);
        self.dirty = true;
    }

    fn answer(&mut self, request: Request) {
        let id = request.id.clone();
        let result: Result<Value, String> = match request.method.as_str() {
            Completion::METHOD => parse(request).map(|p| to_value(complete::complete(self, p))),
            HoverRequest::METHOD => parse(request).map(|p| to_value(navigate::hover(self, p))),
            GotoDefinition::METHOD => {
                parse(request).map(|p| to_value(navigate::definition(self, p)))
            }
            CodeLensRequest::METHOD => parse(request).map(|p| to_value(lens::lenses(self, p))),
            ExecuteCommand::METHOD => parse(request).and_then(|p| lens::execute(self, p)),
            other => {
                self.send(Message::Response(Response::new_err(
                    id,
                    ErrorCode::MethodNotFound as i32,
                    format!("vx lsp does not answer `{other}`"),
                )));
                return;
            }
        };
        let response = match result {
            Ok(value) => Response::new_ok(id, value),
            Err(e) => Response::new_err(id, ErrorCode::InvalidParams as i32, e),
        };
        self.send(Message::Response(response));
    }

    /// Asks the client to send `workspace/didChangeWatchedFiles` for the files vx reads, when
    /// it can be asked (files changed outside the editor, or by `git checkout`).
    fn watch_files(&mut self, params: &InitializeParams) {
        let dynamic = params
            .capabilities
            .workspace
            .as_ref()
            .and_then(|w| w.did_change_watched_files.as_ref())
            .and_then(|d| d.dynamic_registration)
            .unwrap_or(false);
        if !dynamic {
            return;
        }
        let watchers: Vec<Value> = ["**/vx.toml", "**/package.json", "**/pnpm-workspace.yaml"]
            .iter()
            .map(|g| serde_json::json!({ "globPattern": g }))
            .collect();
        let params = RegistrationParams {
            registrations: vec![Registration {
                id: "vx-files".to_string(),
                method: DidChangeWatchedFiles::METHOD.to_string(),
                register_options: Some(serde_json::json!({ "watchers": watchers })),
            }],
        };
        self.next_request += 1;
        self.send(Message::Request(Request::new(
            RequestId::from(self.next_request),
            RegisterCapability::METHOD.to_string(),
            params,
        )));
    }

    /// Analyses again if anything changed, and publishes every file's diagnostics.
    pub(super) fn refresh(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        let Some(root) = self.root.clone() else {
            return;
        };
        let Analysis { said, loaded } =
            analysis::analyse(&root, &self.overlay(&root), &self.parsed);
        if loaded.is_some() {
            self.loaded = loaded;
        } else if self.loaded.is_none() {
            // Nothing loaded yet (the first texts the editor sent do not load): what the disk
            // holds gives completion and hover something to work with meanwhile.
            self.loaded = analysis::analyse(&root, &BTreeMap::new(), &self.parsed).loaded;
        }
        let mut by_file: BTreeMap<PathBuf, Vec<lsp_types::Diagnostic>> = BTreeMap::new();
        for (d, error) in &said {
            let (rel, line, column) = match &d.at {
                Some(at) => (at.file.to_string(), at.line, at.column),
                None => ("vx.toml".to_string(), 0, 0),
            };
            let path = root.join(&rel);
            let range = self.with_text(&path, |lines| lines.token_range(line, column));
            let mut message = d.message.clone();
            for hint in &d.hints {
                message.push_str(&format!("\nhint: {hint}"));
            }
            by_file
                .entry(path)
                .or_default()
                .push(lsp_types::Diagnostic {
                    range,
                    severity: Some(if *error {
                        DiagnosticSeverity::ERROR
                    } else {
                        DiagnosticSeverity::WARNING
                    }),
                    source: Some("vx".to_string()),
                    message,
                    ..lsp_types::Diagnostic::default()
                });
        }
        let cleared: Vec<PathBuf> = self
            .published
            .iter()
            .filter(|p| !by_file.contains_key(*p))
            .cloned()
            .collect();
        for path in cleared {
            by_file.insert(path, Vec::new());
        }
        self.published = by_file
            .iter()
            .filter(|(_, d)| !d.is_empty())
            .map(|(p, _)| p.clone())
            .collect();
        for (path, diagnostics) in by_file {
            if let Some(uri) = self.uri_for(&path) {
                self.notify::<PublishDiagnostics>(PublishDiagnosticsParams {
                    uri,
                    diagnostics,
                    version: None,
                });
            }
        }
    }
}

fn parse<P: serde::de::DeserializeOwned>(request: Request) -> Result<P, String> {
    serde_json::from_value(request.params).map_err(|e| format!("invalid params: {e}"))
}

fn to_value<T: serde::Serialize>(value: T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
