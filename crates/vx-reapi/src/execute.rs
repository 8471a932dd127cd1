//! Remote execution over REAPI (REM-12, REM-13): `Execute` with its operation stream followed
//! to the end, `WaitExecution` when the stream breaks, `CancelOperation` when the caller stops,
//! and the result's outputs written into a local directory.
//!
//! How this works: [`Client::execute`] sends `Execute` for an action whose blobs are already in
//! the CAS and reads the stream of `Operation`s; the server may send only the final one (casd)
//! or one per stage (BuildGrid). When the stream ends or breaks before an operation is done, the
//! client resumes with `WaitExecution` on the operation's name (up to five times in a row
//! without a new message). A cancellation flag is polled every 50 ms: once set, the client sends
//! `CancelOperation` and returns [`Error::Cancelled`]. There is no idle timeout on an execution
//! (an action may wait in a queue for a long time); the action's own `timeout` bounds it on the
//! worker. [`Client::write_outputs`] materialises an `ActionResult`: files with their
//! executable bit, symlinks with their target, and directories from their `Tree` messages.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use prost::Message;
use tonic::Code;

use crate::client::{Client, Error};
use crate::longrunning::operations_client::OperationsClient;
use crate::longrunning::{operation, CancelOperationRequest, Operation};
use crate::proto::execution_client::ExecutionClient;
use crate::proto::{
    ActionResult, Digest, Directory, ExecuteRequest, ExecuteResponse, Tree, WaitExecutionRequest,
};

/// How many times in a row a broken stream is resumed without a new message.
const RESUMES: u32 = 5;

/// The end of one execution.
#[derive(Debug, Clone)]
pub struct Execution {
    /// The operation's name on the server.
    pub operation: String,
    pub response: ExecuteResponse,
}

impl Execution {
    /// The action's result (empty when the server sent none).
    pub fn result(&self) -> ActionResult {
        self.response.result.clone().unwrap_or_default()
    }

    /// Whether the server answered from its action cache.
    pub fn cached(&self) -> bool {
        self.response.cached_result
    }

    /// A non-OK `ExecuteResponse.status`: the code and message.
    pub fn failure(&self) -> Option<(Code, String)> {
        self.response
            .status
            .as_ref()
            .filter(|s| s.code != 0)
            .map(|s| (Code::from_i32(s.code), s.message.clone()))
    }
}

impl Client {
    /// Executes `action` and follows it to the end. `cancelled` stops it (see the module
    /// documentation); `started` hears the operation's name once the server gives it.
    pub fn execute(
        &self,
        action: &Digest,
        skip_cache_lookup: bool,
        cancelled: &AtomicBool,
        mut started: impl FnMut(&str),
    ) -> Result<Execution, Error> {
        self.block_on(async {
            let mut client = ExecutionClient::new(self.channel())
                .max_decoding_message_size(crate::client::MAX_MESSAGE);
            let request = self.request(ExecuteRequest {
                instance_name: self.instance().to_string(),
                skip_cache_lookup,
                action_digest: Some(action.clone()),
                ..Default::default()
            });
            let mut stream = self.unary(client.execute(request)).await?;
            let mut name = String::new();
            let mut resumes = 0;
            loop {
                let next = tokio::select! {
                    next = stream.message() => next,
                    () = wait_for(cancelled) => {
                        if !name.is_empty() {
                            self.cancel(&name).await;
                        }
                        return Err(Error::Cancelled);
                    }
                };
                match next {
                    Ok(Some(operation)) => {
                        resumes = 0;
                        if name.is_empty() && !operation.name.is_empty() {
                            name = operation.name.clone();
                            started(&name);
                        }
                        if operation.done {
                            return finished(operation);
                        }
                        continue;
                    }
                    // The stream ended or broke before the operation was done: resume.
                    Ok(None) => {}
                    Err(status)
                        if matches!(
                            status.code(),
                            Code::Unavailable | Code::Unknown | Code::Internal | Code::Cancelled
                        ) && !name.is_empty() => {}
                    Err(status) => return Err(crate::client::from_status(status)),
                }
                if name.is_empty() || resumes >= RESUMES {
                    return Err(Error::Status {
                        code: Code::Unavailable,
                        message: "the execution's stream ended before it was done".into(),
                    });
                }
                resumes += 1;
                tokio::time::sleep(Duration::from_millis(100 * u64::from(resumes))).await;
                let request = self.request(WaitExecutionRequest { name: name.clone() });
                stream = match self.unary(client.wait_execution(request)).await {
                    Ok(stream) => stream,
                    Err(Error::Status {
                        code: Code::Unavailable,
                        ..
                    }) if resumes < RESUMES => continue,
                    Err(error) => return Err(error),
                };
            }
        })
    }

    /// `CancelOperation`, best effort: the caller is stopping anyway.
    async fn cancel(&self, name: &str) {
        let mut client = OperationsClient::new(self.channel());
        let request = self.request(CancelOperationRequest {
            name: name.to_string(),
        });
        let _ = self.unary(client.cancel_operation(request)).await;
    }

    /// Writes the outputs of `result` under `root` (root-relative paths), keeping those
    /// `wanted` accepts; returns the paths written. Files keep their executable bit, symlinks
    /// their target, directories their whole tree.
    pub fn write_outputs(
        &self,
        result: &ActionResult,
        root: &Path,
        max_batch: u64,
        wanted: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<String>, Error> {
        let mut written = Vec::new();
        for file in &result.output_files {
            let Some(digest) = &file.digest else { continue };
            if wanted(&file.path) {
                self.write_file(
                    digest,
                    &file.contents,
                    file.is_executable,
                    &root.join(&file.path),
                    max_batch,
                )?;
                written.push(file.path.clone());
            }
        }
        // Servers before REAPI 2.1 fill the older field.
        #[allow(deprecated)]
        let older = &result.output_file_symlinks;
        for link in result.output_symlinks.iter().chain(older) {
            if wanted(&link.path) {
                let at = root.join(&link.path);
                make_parent(&at)?;
                let _ = std::fs::remove_file(&at);
                std::os::unix::fs::symlink(&link.target, &at)?;
                written.push(link.path.clone());
            }
        }
        for directory in &result.output_directories {
            let Some(tree_digest) = &directory.tree_digest else {
                continue;
            };
            let bytes = self
                .read_bytes(tree_digest, max_batch)?
                .ok_or_else(|| Error::Status {
                    code: Code::NotFound,
                    message: format!("output tree {} not found", tree_digest.hash),
                })?;
            let tree = Tree::decode(bytes.as_slice()).map_err(|e| Error::Status {
                code: Code::DataLoss,
                message: format!("a Tree that does not decode: {e}"),
            })?;
            let children: HashMap<String, Directory> = tree
                .children
                .into_iter()
                .map(|d| (crate::digest_of(&d.encode_to_vec()).hash, d))
                .collect();
            let top = tree.root.unwrap_or_default();
            self.write_directory(
                &top,
                &children,
                &directory.path,
                root,
                max_batch,
                wanted,
                &mut written,
            )?;
        }
        Ok(written)
    }

    #[allow(clippy::too_many_arguments)]
    fn write_directory(
        &self,
        directory: &Directory,
        children: &HashMap<String, Directory>,
        at: &str,
        root: &Path,
        max_batch: u64,
        wanted: &dyn Fn(&str) -> bool,
        written: &mut Vec<String>,
    ) -> Result<(), Error> {
        std::fs::create_dir_all(root.join(at))?;
        for file in &directory.files {
            let path = format!("{at}/{}", file.name);
            let Some(digest) = &file.digest else { continue };
            if wanted(&path) {
                self.write_file(
                    digest,
                    &[],
                    file.is_executable,
                    &root.join(&path),
                    max_batch,
                )?;
                written.push(path);
            }
        }
        for link in &directory.symlinks {
            let path = format!("{at}/{}", link.name);
            if wanted(&path) {
                let _ = std::fs::remove_file(root.join(&path));
                std::os::unix::fs::symlink(&link.target, root.join(&path))?;
                written.push(path);
            }
        }
        for sub in &directory.directories {
            let Some(digest) = &sub.digest else { continue };
            let Some(child) = children.get(&digest.hash) else {
                return Err(Error::Status {
                    code: Code::DataLoss,
                    message: format!("the Tree lacks directory {}", digest.hash),
                });
            };
            self.write_directory(
                child,
                children,
                &format!("{at}/{}", sub.name),
                root,
                max_batch,
                wanted,
                written,
            )?;
        }
        Ok(())
    }

    fn write_file(
        &self,
        digest: &Digest,
        inlined: &[u8],
        executable: bool,
        at: &Path,
        max_batch: u64,
    ) -> Result<(), Error> {
        make_parent(at)?;
        let _ = std::fs::remove_file(at);
        if !inlined.is_empty() || digest.size_bytes == 0 {
            self.save_inlined(digest, inlined, at, u64::MAX)?;
        } else if !self.download(digest, at, max_batch, u64::MAX)? {
            return Err(Error::Status {
                code: Code::NotFound,
                message: format!(
                    "output blob {}/{} not found",
                    digest.hash, digest.size_bytes
                ),
            });
        }
        use std::os::unix::fs::PermissionsExt;
        let mode = if executable { 0o755 } else { 0o644 };
        std::fs::set_permissions(at, std::fs::Permissions::from_mode(mode))?;
        Ok(())
    }
}

fn make_parent(at: &Path) -> Result<(), Error> {
    if let Some(parent) = at.parent() {
        std::fs::create_dir_all(parent)?;
    }
    Ok(())
}

/// Resolves once `flag` is set (polled every 50 ms).
async fn wait_for(flag: &AtomicBool) {
    while !flag.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The `ExecuteResponse` of a done operation, or its error.
fn finished(operation: Operation) -> Result<Execution, Error> {
    match operation.result {
        Some(operation::Result::Response(any)) => {
            let response =
                ExecuteResponse::decode(any.value.as_slice()).map_err(|e| Error::Status {
                    code: Code::DataLoss,
                    message: format!("an ExecuteResponse that does not decode: {e}"),
                })?;
            Ok(Execution {
                operation: operation.name,
                response,
            })
        }
        Some(operation::Result::Error(status)) => Err(Error::Status {
            code: Code::from_i32(status.code),
            message: status.message,
        }),
        None => Err(Error::Status {
            code: Code::Internal,
            message: "a done operation without a result".into(),
        }),
    }
}
