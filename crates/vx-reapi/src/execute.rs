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
use vx_store::artifact::{OutputWriter, WriteError};

use crate::client::{Client, Error};
use crate::input::Input;
use crate::longrunning::operations_client::OperationsClient;
use crate::longrunning::{operation, CancelOperationRequest, Operation};
use crate::proto::execution_client::ExecutionClient;
use crate::proto::execution_stage::Value as Stage;
use crate::proto::{
    ActionResult, Digest, Directory, ExecuteOperationMetadata, ExecuteRequest, ExecuteResponse,
    Tree, WaitExecutionRequest,
};

/// How many times in a row a broken stream is resumed without a new message.
const RESUMES: u32 = 5;

/// The end of one execution.
#[derive(Debug, Clone)]
pub struct Execution {
    /// The operation's name on the server.
    pub operation: String,
    pub response: ExecuteResponse,
    /// How many times the operation went back to the queue after it had started executing:
    /// the server lost its worker and ran the action again.
    pub requeued: u32,
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
    /// documentation); `started` hears the operation's name once the server gives it (it runs
    /// on the client's runtime and must not call the client). A server that names the
    /// operation only in its last message cannot be sent `CancelOperation` before that: it sees
    /// the stream dropped instead. (casd names it in its first message, and stops the action.)
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
            let (mut executing, mut requeued) = (false, 0);
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
                        match stage(&operation) {
                            Some(Stage::Executing) => executing = true,
                            Some(Stage::Queued) if executing => {
                                executing = false;
                                requeued += 1;
                            }
                            _ => {}
                        }
                        if operation.done {
                            return finished(operation).map(|mut done| {
                                done.requeued = requeued;
                                done
                            });
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

    /// The bytes of a result's stdout and stderr: inlined, or read by digest (empty when the
    /// result names neither).
    pub fn streams(&self, result: &ActionResult, max_batch: u64) -> Result<[Vec<u8>; 2], Error> {
        let read = |raw: &[u8], digest: &Option<Digest>| -> Result<Vec<u8>, Error> {
            match digest {
                Some(d) if raw.is_empty() && d.size_bytes > 0 => {
                    self.read_bytes(d, max_batch)?.ok_or_else(|| Error::Status {
                        code: Code::NotFound,
                        message: format!("output stream {} not found", d.hash),
                    })
                }
                _ => Ok(raw.to_vec()),
            }
        };
        Ok([
            read(&result.stdout_raw, &result.stdout_digest)?,
            read(&result.stderr_raw, &result.stderr_digest)?,
        ])
    }

    /// Every output of `result` as input-root entries by root-relative path, without
    /// downloading a file: files by digest, symbolic links with their targets, directories
    /// (read from their `Tree`s). What a dependant's input root takes from an upstream whose
    /// outputs stayed on the server (REM-12). Paths are checked as [`Client::write_outputs`]
    /// checks them.
    pub fn result_entries(
        &self,
        result: &ActionResult,
        max_batch: u64,
    ) -> Result<Vec<(String, Input)>, Error> {
        let mut entries = Vec::new();
        for file in &result.output_files {
            let Some(digest) = &file.digest else { continue };
            check_path(&file.path)?;
            entries.push((
                file.path.clone(),
                Input::Remote {
                    digest: digest.clone(),
                    executable: file.is_executable,
                },
            ));
        }
        #[allow(deprecated)]
        let older = &result.output_file_symlinks;
        for link in result.output_symlinks.iter().chain(older) {
            check_path(&link.path)?;
            entries.push((
                link.path.clone(),
                Input::Symlink {
                    target: link.target.clone(),
                },
            ));
        }
        for directory in &result.output_directories {
            let Some(tree_digest) = &directory.tree_digest else {
                continue;
            };
            check_directory_path(&directory.path)?;
            let (top, children) = self.tree(tree_digest, max_batch)?;
            let mut stack = vec![(directory.path.clone(), top)];
            while let Some((at, dir)) = stack.pop() {
                if !at.is_empty() {
                    entries.push((at.clone(), Input::Directory));
                }
                for file in &dir.files {
                    let Some(digest) = &file.digest else { continue };
                    entries.push((
                        child_path(&at, &file.name)?,
                        Input::Remote {
                            digest: digest.clone(),
                            executable: file.is_executable,
                        },
                    ));
                }
                for link in &dir.symlinks {
                    entries.push((
                        child_path(&at, &link.name)?,
                        Input::Symlink {
                            target: link.target.clone(),
                        },
                    ));
                }
                for sub in &dir.directories {
                    let path = child_path(&at, &sub.name)?;
                    let Some(child) = sub.digest.as_ref().and_then(|d| children.get(&d.hash))
                    else {
                        return Err(Error::Status {
                            code: Code::DataLoss,
                            message: format!("the Tree lacks directory {path}"),
                        });
                    };
                    stack.push((path, child.clone()));
                }
            }
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(entries)
    }

    /// An output directory's `Tree`, read and decoded: its top directory, and every directory
    /// below by its digest.
    fn tree(
        &self,
        digest: &Digest,
        max_batch: u64,
    ) -> Result<(Directory, HashMap<String, Directory>), Error> {
        let bytes = self
            .read_bytes(digest, max_batch)?
            .ok_or_else(|| Error::Status {
                code: Code::NotFound,
                message: format!("output tree {} not found", digest.hash),
            })?;
        let tree = Tree::decode(bytes.as_slice()).map_err(|e| Error::Status {
            code: Code::DataLoss,
            message: format!("a Tree that does not decode: {e}"),
        })?;
        let children = tree
            .children
            .into_iter()
            .map(|d| (crate::digest_of(&d.encode_to_vec()).hash, d))
            .collect();
        Ok((tree.root.unwrap_or_default(), children))
    }

    /// Writes the outputs of `result` under `root` (root-relative paths), keeping those
    /// `wanted` accepts; returns the paths written. Files keep their executable bit, symlinks
    /// their target, directories their whole tree. Every path the server names is checked: one
    /// that is absolute or climbs out (`..`), or a directory on the way that is a symbolic link
    /// or a file, is [`Error::UnsafePath`] and nothing more is written; links are made last, so
    /// no write ever goes through a link the result itself made. Everything is written through
    /// directory descriptors ([`OutputWriter`]): a directory swapped for a link while
    /// this writes keeps receiving the files, and the link is never followed.
    pub fn write_outputs(
        &self,
        result: &ActionResult,
        root: &Path,
        max_batch: u64,
        wanted: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<String>, Error> {
        let mut written = Vec::new();
        let mut links: Vec<(String, String)> = Vec::new();
        let mut writer = OutputWriter::new(root);
        for file in &result.output_files {
            let Some(digest) = &file.digest else { continue };
            check_path(&file.path)?;
            if wanted(&file.path) {
                let out = create_file(&mut writer, &file.path)?;
                self.write_file(digest, &file.contents, file.is_executable, out, max_batch)?;
                written.push(file.path.clone());
            }
        }
        // Servers before REAPI 2.1 fill the older field.
        #[allow(deprecated)]
        let older = &result.output_file_symlinks;
        for link in result.output_symlinks.iter().chain(older) {
            check_path(&link.path)?;
            if wanted(&link.path) {
                links.push((link.path.clone(), link.target.clone()));
            }
        }
        for directory in &result.output_directories {
            let Some(tree_digest) = &directory.tree_digest else {
                continue;
            };
            check_directory_path(&directory.path)?;
            let (top, children) = self.tree(tree_digest, max_batch)?;
            let mut walk = Walk {
                children: &children,
                writer: &mut writer,
                max_batch,
                wanted,
                written: &mut written,
                links: &mut links,
            };
            self.write_directory(&top, &directory.path, &mut walk)?;
        }
        for (path, target) in links {
            check_path(&path)?;
            writer
                .symlink(&target, Path::new(&path))
                .map_err(|e| unsafe_or_io(e, &path))?;
            written.push(path);
        }
        Ok(written)
    }

    fn write_directory(
        &self,
        directory: &Directory,
        at: &str,
        walk: &mut Walk,
    ) -> Result<(), Error> {
        if !at.is_empty() {
            check_path(at)?;
            walk.writer
                .create_dir(Path::new(at))
                .map_err(|e| unsafe_or_io(e, at))?;
        }
        let name_of = |name: &str| child_path(at, name);
        for file in &directory.files {
            let path = name_of(&file.name)?;
            let Some(digest) = &file.digest else { continue };
            if (walk.wanted)(&path) {
                let out = create_file(walk.writer, &path)?;
                self.write_file(digest, &[], file.is_executable, out, walk.max_batch)?;
                walk.written.push(path);
            }
        }
        for link in &directory.symlinks {
            let path = name_of(&link.name)?;
            if (walk.wanted)(&path) {
                walk.links.push((path, link.target.clone()));
            }
        }
        for sub in &directory.directories {
            let path = name_of(&sub.name)?;
            let Some(digest) = &sub.digest else { continue };
            let Some(child) = walk.children.get(&digest.hash) else {
                return Err(Error::Status {
                    code: Code::DataLoss,
                    message: format!("the Tree lacks directory {}", digest.hash),
                });
            };
            self.write_directory(child, &path, walk)?;
        }
        Ok(())
    }

    fn write_file(
        &self,
        digest: &Digest,
        inlined: &[u8],
        executable: bool,
        mut out: std::fs::File,
        max_batch: u64,
    ) -> Result<(), Error> {
        if !inlined.is_empty() || digest.size_bytes == 0 {
            self.save_inlined_to(digest, inlined, &mut out, u64::MAX)?;
        } else if !self.download_to(digest, &mut out, max_batch, u64::MAX)? {
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
        // On the descriptor: a link put at the name since cannot redirect it.
        out.set_permissions(std::fs::Permissions::from_mode(mode))?;
        Ok(())
    }
}

/// A new file at the root-relative `path` through the writer's descriptors.
fn create_file(writer: &mut OutputWriter, path: &str) -> Result<std::fs::File, Error> {
    check_path(path)?;
    writer
        .create_file(Path::new(path))
        .map_err(|e| unsafe_or_io(e, path))
}

/// A refused directory on the way is [`Error::UnsafePath`] naming the server's path.
fn unsafe_or_io(error: WriteError, path: &str) -> Error {
    match error {
        WriteError::Unsafe { .. } => Error::UnsafePath(path.to_string()),
        WriteError::Io(e) => e.into(),
    }
}

/// What a walk of an output directory's `Tree` carries along.
struct Walk<'a> {
    children: &'a HashMap<String, Directory>,
    writer: &'a mut OutputWriter,
    max_batch: u64,
    wanted: &'a dyn Fn(&str) -> bool,
    written: &'a mut Vec<String>,
    links: &'a mut Vec<(String, String)>,
}

/// `at/name` for an entry name of a `Directory`, which must be one plain path component (`name`
/// alone under the root, the empty path).
fn child_path(at: &str, name: &str) -> Result<String, Error> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(Error::UnsafePath(format!("{at}/{name}")));
    }
    Ok(if at.is_empty() {
        name.to_string()
    } else {
        format!("{at}/{name}")
    })
}

/// An output directory's path: as [`check_path`], or empty for the whole root (REAPI allows it;
/// vx asks for it when a root task's output glob has no fixed part).
fn check_directory_path(path: &str) -> Result<(), Error> {
    if path.is_empty() {
        return Ok(());
    }
    check_path(path)
}

/// A server-named output path must be relative and stay inside the root.
fn check_path(path: &str) -> Result<(), Error> {
    let bad = path.is_empty()
        || path.starts_with('/')
        || path
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..");
    if bad {
        return Err(Error::UnsafePath(path.to_string()));
    }
    Ok(())
}

/// Resolves once `flag` is set (polled every 50 ms).
async fn wait_for(flag: &AtomicBool) {
    while !flag.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The execution stage an operation's metadata reports, if it says.
fn stage(operation: &Operation) -> Option<Stage> {
    let any = operation.metadata.as_ref()?;
    let metadata = ExecuteOperationMetadata::decode(any.value.as_slice()).ok()?;
    Stage::try_from(metadata.stage).ok()
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
                requeued: 0,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{OutputFile, OutputSymlink};
    use crate::ClientConfig;

    fn offline_client() -> Client {
        Client::new(&ClientConfig {
            url: "grpc://127.0.0.1:1".into(),
            instance_name: String::new(),
            token: None,
            connect_timeout: Duration::from_millis(100),
            idle_timeout: Duration::from_millis(100),
            request_timeout: None,
        })
        .unwrap()
    }

    fn inlined(path: &str, bytes: &[u8]) -> OutputFile {
        OutputFile {
            path: path.into(),
            digest: Some(crate::digest_of(bytes)),
            contents: bytes.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn outputs_named_outside_the_root_are_refused_before_anything_is_written() {
        let client = offline_client();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        for path in ["../escape", "/tmp/escape", "pkg/../../escape", "pkg//x", ""] {
            let result = ActionResult {
                output_files: vec![inlined(path, b"x")],
                ..Default::default()
            };
            let refused = client.write_outputs(&result, &root, 4 << 20, &|_| true);
            assert!(
                matches!(refused, Err(Error::UnsafePath(_))),
                "{path}: {refused:?}"
            );
        }
        assert!(!dir.path().join("escape").exists());
        let link = ActionResult {
            output_symlinks: vec![OutputSymlink {
                path: "../link".into(),
                target: "/etc".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(matches!(
            client.write_outputs(&link, &root, 4 << 20, &|_| true),
            Err(Error::UnsafePath(_))
        ));
    }

    #[test]
    fn a_write_never_goes_through_a_symbolic_link_on_the_way() {
        let client = offline_client();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(root.join("pkg")).unwrap();
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("pkg/out")).unwrap();
        let result = ActionResult {
            output_files: vec![inlined("pkg/out/x", b"x")],
            ..Default::default()
        };
        let refused = client.write_outputs(&result, &root, 4 << 20, &|_| true);
        assert!(matches!(refused, Err(Error::UnsafePath(_))), "{refused:?}");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        // A link the result makes is made last: a file "under" it in the same result is written
        // as a real directory first, and the link then fails on it rather than redirecting it.
        std::fs::remove_file(root.join("pkg/out")).unwrap();
        let result = ActionResult {
            output_files: vec![inlined("pkg/dir/x", b"x")],
            output_symlinks: vec![OutputSymlink {
                path: "pkg/link".into(),
                target: "dir/x".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let written = client
            .write_outputs(&result, &root, 4 << 20, &|_| true)
            .unwrap();
        assert_eq!(written, ["pkg/dir/x", "pkg/link"]);
        assert_eq!(std::fs::read(root.join("pkg/link")).unwrap(), b"x");
        assert!(std::fs::symlink_metadata(root.join("pkg/dir"))
            .unwrap()
            .is_dir());
    }
}
