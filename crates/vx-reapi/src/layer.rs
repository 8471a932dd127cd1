//! The REAPI cache layer (REM-4): vx entries kept in any REAPI server's action cache and CAS.
//!
//! How this works: each vx key K is the result of a synthetic action, never executed: a
//! `Command` `["vx-cache-entry", K]` with the one output path `vx-artifact.tar.zst` (in
//! `output_paths` and the older `output_files`) and an `Action` with that command, the empty
//! input root and caching allowed. Its digest is the SHA-256 of the serialised `Action`, so
//! every vx client finds the same entry. A lookup is `GetActionResult` (`NOT_FOUND` is a miss);
//! a download fetches the result's output file, checking its SHA-256 and size; an upload puts the
//! artifact, command and action blobs (all of them when they come to 256 KiB or less, in one
//! batch call; above that, those `FindMissingBlobs` says the CAS lacks), then
//! `UpdateActionResult` (blobs first: servers answer `NOT_FOUND` for a result whose blobs are
//! missing, which is a miss), with an artifact of 64 KiB or less inlined in the result too.
//! `GetCapabilities` is asked once per run, before the first operation: a server without SHA-256
//! switches the layer off with one warning, and its batch limit decides between batch calls and
//! ByteStream. A server at its limit (`RESOURCE_EXHAUSTED`) gets fewer operations at once, and the
//! refused one again ([`Gate`]).

use std::path::Path;
use std::sync::Mutex;

use prost::Message;
use tonic::Code;
use vx_store::{CacheLayer, ErrorKind, LayerError};

use crate::client::{code_name, Capabilities, Client, ClientConfig, ClientError, Error};
use crate::digest::{digest_of, digest_of_file, Blob};
use crate::proto::{Action, ActionResult, Command, Digest, Directory, OutputFile};
use crate::window::Gate;

/// The output path of the synthetic action: the artifact (STORE-5's format).
pub const ENTRY_PATH: &str = "vx-artifact.tar.zst";

/// Operations in flight at most: more than the run's downloads and uploads at once ever ask.
const GATE_MAX: u32 = 1024;

/// An artifact of at most this many bytes is also inlined in its action result.
const INLINE_AT_MOST: u64 = 64 * 1024;

/// An upload of at most this many bytes is sent without a `FindMissingBlobs` first.
const ASK_FIRST_ABOVE: u64 = 256 * 1024;

/// The synthetic action of key `key`: the serialised `Command` and `Action`, and the action's
/// digest, which the action cache is keyed by.
pub fn entry_action(key: &str) -> (Vec<u8>, Vec<u8>, Digest) {
    let command = Command {
        arguments: vec!["vx-cache-entry".to_string(), key.to_string()],
        output_paths: vec![ENTRY_PATH.to_string()],
        #[allow(deprecated)]
        output_files: vec![ENTRY_PATH.to_string()],
        ..Default::default()
    }
    .encode_to_vec();
    let action = Action {
        command_digest: Some(digest_of(&command)),
        input_root_digest: Some(digest_of(&Directory::default().encode_to_vec())),
        do_not_cache: false,
        ..Default::default()
    }
    .encode_to_vec();
    let digest = digest_of(&action);
    (command, action, digest)
}

/// See the module documentation.
pub struct ReapiLayer {
    client: Client,
    name: String,
    /// The answer to this run's one `GetCapabilities`.
    capabilities: Mutex<Option<Result<Capabilities, LayerError>>>,
    /// Operations in flight at once: as many as the run asks for, fewer once the server says it
    /// is at its limit.
    gate: Gate,
}

impl ReapiLayer {
    /// A layer for the server `config.url`; nothing is sent until the first operation.
    pub fn new(config: &ClientConfig) -> Result<ReapiLayer, ClientError> {
        let client = Client::new(config)?;
        let authority = config
            .url
            .split_once("://")
            .map(|(scheme, rest)| {
                let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
                let host = host.rsplit('@').next().unwrap_or(host);
                format!("{scheme}://{host}")
            })
            .unwrap_or_else(|| config.url.clone());
        let name = if config.instance_name.is_empty() {
            authority
        } else {
            format!("{authority} (instance `{}`)", config.instance_name)
        };
        Ok(ReapiLayer {
            client,
            name,
            capabilities: Mutex::new(None),
            gate: Gate::new(GATE_MAX),
        })
    }

    /// The server's capabilities, asking `GetCapabilities` on the first call of the run (REM-4)
    /// and giving every later caller the same answer, a failure included: a server that could
    /// not answer once costs one timeout, not one per waiting thread. A server without SHA-256
    /// is [`ErrorKind::Unsupported`], which switches the layer off.
    fn capabilities(&self) -> Result<Capabilities, LayerError> {
        let mut known = self
            .capabilities
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let answer = known.get_or_insert_with(|| self.gated(|| self.client.capabilities()));
        let capabilities = answer.as_ref().map_err(Clone::clone)?;
        if !capabilities.sha256 {
            let offered = if capabilities.digest_functions.is_empty() {
                "none".to_string()
            } else {
                capabilities.digest_functions.join(", ")
            };
            return Err(LayerError::new(
                ErrorKind::Unsupported,
                format!("the server does not offer SHA-256 digests (it offers {offered})"),
            ));
        }
        Ok(capabilities.clone())
    }

    /// The server's batch limit (see [`ReapiLayer::capabilities`]).
    fn batch_limit(&self) -> Result<u64, LayerError> {
        self.capabilities().map(|c| c.max_batch)
    }

    /// The action result of `key`, or `None` on a miss; with `inline`, asking the server to
    /// inline the artifact when it is small enough (saving the read that would follow).
    fn result_of(&self, key: &str, inline: bool) -> Result<Option<ActionResult>, LayerError> {
        let (_, _, action) = entry_action(key);
        let paths: &[&str] = if inline { &[ENTRY_PATH] } else { &[] };
        self.gated(|| self.client.get_action_result(&action, paths))
    }

    /// `call` through the gate: held while the server is at its limit, tried again when it
    /// refuses for load.
    fn gated<T>(&self, call: impl Fn() -> Result<T, Error>) -> Result<T, LayerError> {
        self.gate
            .run(|e: &Error| e.code() == Some(Code::ResourceExhausted), call)
            .map_err(layer_error)
    }
}

impl CacheLayer for ReapiLayer {
    fn name(&self) -> &str {
        &self.name
    }

    fn adapted(&self) -> Option<String> {
        self.gate.narrowest().map(|n| {
            format!(
                "the server refused calls for load (RESOURCE_EXHAUSTED); vx sent as few as {n} at once"
            )
        })
    }

    fn contains(&self, key: &str) -> Result<bool, LayerError> {
        self.batch_limit()?;
        Ok(self.result_of(key, false)?.is_some())
    }

    fn fetch(&self, key: &str, dest: &Path, cap: u64) -> Result<bool, LayerError> {
        let batch = self.batch_limit()?;
        let Some(result) = self.result_of(key, true)? else {
            return Ok(false);
        };
        let Some((digest, contents)) = result
            .output_files
            .into_iter()
            .find(|f| f.path == ENTRY_PATH)
            .and_then(|f| Some((f.digest?, f.contents)))
        else {
            return Err(LayerError::new(
                ErrorKind::InvalidArtifact,
                format!("invalid artifact: the action result holds no `{ENTRY_PATH}`"),
            ));
        };
        if !contents.is_empty() || digest.size_bytes == 0 {
            return self
                .client
                .save_inlined(&digest, &contents, dest, cap)
                .map(|()| true)
                .map_err(layer_error);
        }
        self.gated(|| self.client.download(&digest, dest, batch, cap))
    }

    fn put(&self, key: &str, artifact: &Path, _duration_ms: u64) -> Result<(), LayerError> {
        let capabilities = self.capabilities()?;
        if !capabilities.update_enabled {
            return Err(LayerError::new(
                ErrorKind::Status,
                "the server does not accept action results from clients",
            ));
        }
        let batch = capabilities.max_batch;
        let (command, action, action_digest) = entry_action(key);
        // A small artifact also rides in the result itself: servers keep a result as it was
        // sent (casd and BuildGrid do, and neither inlines from the CAS when asked), so a
        // restore is then one call, not two. The blob goes to the CAS all the same. It is read
        // once: the bytes sent, hashed and inlined are the same bytes.
        let io = |e: std::io::Error| layer_error(e.into());
        let size = fs_err::metadata(artifact).map_err(io)?.len();
        let (artifact_blob, contents) = if size <= INLINE_AT_MOST.min(batch / 2) {
            let bytes = fs_err::read(artifact).map_err(io)?;
            (Blob::from_bytes(bytes.clone()), bytes)
        } else {
            let digest = digest_of_file(artifact).map_err(|e| layer_error(e.into()))?;
            (Blob::from_file(digest, artifact.to_path_buf()), Vec::new())
        };
        let artifact_digest = artifact_blob.digest.clone();
        let blobs = [
            artifact_blob,
            Blob::from_bytes(command),
            Blob::from_bytes(action),
        ];
        // A small entry goes up in one `BatchUpdateBlobs` with its command and action, without
        // asking first which the CAS lacks: that question costs a round trip as long as the
        // upload itself. A larger one is asked about first (it may be there already).
        let total: u64 = blobs.iter().map(Blob::size).sum();
        let to_send: Vec<Blob> = if total <= ASK_FIRST_ABOVE {
            blobs.into()
        } else {
            let digests: Vec<Digest> = blobs.iter().map(|b| b.digest.clone()).collect();
            let missing = self.gated(|| self.client.find_missing(&digests))?;
            blobs
                .into_iter()
                .filter(|b| missing.contains(&b.digest))
                .collect()
        };
        self.gated(|| self.client.upload(&to_send, batch))?;
        let result = ActionResult {
            output_files: vec![OutputFile {
                path: ENTRY_PATH.to_string(),
                digest: Some(artifact_digest),
                is_executable: false,
                contents,
                ..Default::default()
            }],
            exit_code: 0,
            ..Default::default()
        };
        self.gated(|| {
            self.client
                .update_action_result(&action_digest, result.clone())
        })
    }
}

/// REM-7's kind of a client error, with words for the warning.
fn layer_error(error: Error) -> LayerError {
    let kind = match &error {
        Error::Timeout | Error::Deadline(_) => ErrorKind::Timeout,
        Error::Io(_) => ErrorKind::Io,
        Error::DigestMismatch => ErrorKind::InvalidArtifact,
        Error::TooLarge { .. } => ErrorKind::TooLarge,
        Error::Cancelled | Error::UnsafePath(_) => ErrorKind::Status,
        Error::Status { code, .. } => match code {
            Code::Unavailable => ErrorKind::Connection,
            Code::DeadlineExceeded => ErrorKind::Timeout,
            Code::Unauthenticated | Code::PermissionDenied => ErrorKind::Unauthorized,
            _ => ErrorKind::Status,
        },
    };
    let detail = match &error {
        Error::Status {
            code: Code::Unavailable,
            message,
        } if !message.is_empty() => message.clone(),
        Error::Status { code, .. } if kind == ErrorKind::Unauthorized => {
            code_name(*code).to_string()
        }
        Error::Status { .. } => format!("gRPC {error}"),
        Error::DigestMismatch => format!("invalid artifact: {error}"),
        Error::TooLarge { cap, .. } => {
            format!("the artifact is over max-download-size ({cap} bytes)")
        }
        _ => error.to_string(),
    };
    LayerError::new(kind, detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_synthetic_action_is_the_same_for_every_client_and_differs_per_key() {
        let key = "a".repeat(64);
        let (command, action, digest) = entry_action(&key);
        let decoded = Command::decode(command.as_slice()).unwrap();
        assert_eq!(decoded.arguments, ["vx-cache-entry", key.as_str()]);
        assert_eq!(decoded.output_paths, [ENTRY_PATH]);
        #[allow(deprecated)]
        let files = decoded.output_files;
        assert_eq!(files, [ENTRY_PATH]);
        assert!(decoded.environment_variables.is_empty());
        let decoded = Action::decode(action.as_slice()).unwrap();
        assert_eq!(decoded.command_digest, Some(digest_of(&command)));
        // The empty directory: the SHA-256 of no bytes.
        let root = decoded.input_root_digest.unwrap();
        assert_eq!(root.size_bytes, 0);
        assert_eq!(
            root.hash,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(!decoded.do_not_cache);
        assert_eq!(digest, digest_of(&action));
        assert_eq!(entry_action(&key).2, digest);
        assert_ne!(entry_action(&"b".repeat(64)).2, digest);
    }

    #[test]
    fn statuses_become_rem_7_kinds_and_name_the_token_problem_by_its_code() {
        let status = |code, message: &str| Error::Status {
            code,
            message: message.into(),
        };
        let refused = layer_error(status(Code::Unavailable, "connection refused"));
        assert_eq!(
            (refused.kind, refused.detail.as_str()),
            (ErrorKind::Connection, "connection refused")
        );
        let denied = layer_error(status(Code::Unauthenticated, "no token: Bearer x"));
        assert_eq!(
            (denied.kind, denied.detail.as_str()),
            (ErrorKind::Unauthorized, "UNAUTHENTICATED")
        );
        let internal = layer_error(status(Code::Internal, "disk full"));
        assert_eq!(
            (internal.kind, internal.detail.as_str()),
            (ErrorKind::Status, "gRPC INTERNAL: disk full")
        );
        assert_eq!(layer_error(Error::Timeout).kind, ErrorKind::Timeout);
        assert_eq!(
            layer_error(Error::DigestMismatch).kind,
            ErrorKind::InvalidArtifact
        );
    }
}
