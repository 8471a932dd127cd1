//! A blocking REAPI v2 client over one gRPC channel: Capabilities, CAS (`FindMissingBlobs`,
//! `BatchReadBlobs`, `BatchUpdateBlobs`), ByteStream (`Read`, `Write`) and the ActionCache.
//!
//! How this works: the client owns a two-thread tokio runtime and a lazily connected tonic
//! channel. Each public function runs its future with `block_on` on the caller's thread, so
//! several vx threads may call at once and share the channel's HTTP/2 connection. Blobs go in a
//! batch call when they fit under the server's batch limit (its `max_batch_total_size_bytes`,
//! 0 meaning 4 MiB, less a margin for the request's own fields) and through ByteStream in
//! chunks of 1 MiB otherwise. Every call is bounded by the idle timeout: a unary call must
//! answer within it, a stream must move within it. A transport failure arrives from tonic as
//! `UNAVAILABLE`; the token travels as `authorization: Bearer …` metadata and never appears in
//! an error.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::future::Future;
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tonic::metadata::{Ascii, MetadataValue};
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Request, Status};

use crate::bytestream::byte_stream_client::ByteStreamClient;
use crate::bytestream::{ReadRequest, WriteRequest};
use crate::digest::{BlobBytes, Check};
use crate::proto::action_cache_client::ActionCacheClient;
use crate::proto::capabilities_client::CapabilitiesClient;
use crate::proto::content_addressable_storage_client::ContentAddressableStorageClient;
use crate::proto::{
    batch_update_blobs_request, digest_function, ActionResult, BatchReadBlobsRequest,
    BatchUpdateBlobsRequest, Digest, FindMissingBlobsRequest, GetActionResultRequest,
    GetCapabilitiesRequest, UpdateActionResultRequest,
};
use crate::Blob;

mod error;
pub(crate) use error::from_status;
pub use error::{code_name, Error};

/// ByteStream chunks are at most this long (REM-4).
const CHUNK: usize = 1 << 20;
/// The batch limit when the server sets none (REM-4).
const DEFAULT_BATCH_LIMIT: u64 = 4 << 20;
/// Room left in a batch for the request's own fields (instance name, framing).
const BATCH_MARGIN: u64 = 16 * 1024;
/// What each blob adds to a batch request beside its bytes (its digest and framing).
const PER_BLOB: u64 = 160;
/// The largest message the client decodes: above any batch a server may send.
pub(crate) const MAX_MESSAGE: usize = 64 << 20;

/// Where the server is and how to reach it. (No `Debug`: it holds the token.)
#[derive(Clone)]
pub struct ClientConfig {
    /// `grpc://host:port` (plaintext HTTP/2) or `grpcs://host:port` (TLS with the system roots).
    pub url: String,
    pub instance_name: String,
    /// The bearer token, read by the caller from the variable `token-env` names.
    pub token: Option<String>,
    pub connect_timeout: Duration,
    /// A call with no answer, or a transfer with no progress, for this long fails.
    pub idle_timeout: Duration,
    /// A cache call (a unary call, a whole blob's transfer) that lasts longer fails, however
    /// steadily bytes arrive; `None` for remote execution, whose calls last as long as actions.
    pub request_timeout: Option<Duration>,
}

/// What the server offers, from `GetCapabilities`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// Whether SHA-256 is among its digest functions (vx needs it).
    pub sha256: bool,
    /// The digest functions it names, for a message when SHA-256 is missing.
    pub digest_functions: Vec<String>,
    /// The batch limit in bytes (0 from the server is 4 MiB).
    pub max_batch: u64,
    /// Whether clients may write action results.
    pub update_enabled: bool,
    /// Whether it executes actions.
    pub exec_enabled: bool,
}

/// See the module documentation.
pub struct Client {
    runtime: tokio::runtime::Runtime,
    channel: Channel,
    instance: String,
    authorization: Option<MetadataValue<Ascii>>,
    /// Kept to scrub it from what a server says back.
    token: Option<String>,
    idle: Duration,
    total: Option<Duration>,
}

/// Why a client for a REAPI server could not be made; nothing was sent. Its text is the
/// reason a warning gives (the URL is named by the caller, without credentials).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("`{0}` is not a URL")]
    NotAUrl(String),
    #[error("the URL must start with `grpc://` or `grpcs://`")]
    Scheme,
    #[error("the URL names no host")]
    NoHost,
    #[error("`{0}` is not a host and port")]
    Authority(String),
    #[error("TLS: {0}")]
    Tls(#[source] tonic::transport::Error),
    #[error("cannot start the gRPC runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("the token holds characters a gRPC header cannot carry")]
    Token,
}

impl Client {
    /// A client for `config.url`; nothing is sent until the first call. An unusable URL is an
    /// error in words.
    pub fn new(config: &ClientConfig) -> Result<Client, ClientError> {
        let (scheme, rest) = config
            .url
            .split_once("://")
            .ok_or_else(|| ClientError::NotAUrl(config.url.clone()))?;
        let tls = match scheme {
            "grpc" => false,
            "grpcs" => true,
            _ => return Err(ClientError::Scheme),
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        // `user:password@` is never sent, nor shown.
        let authority = authority.rsplit('@').next().unwrap_or(authority);
        if authority.is_empty() {
            return Err(ClientError::NoHost);
        }
        let http = format!("{}://{authority}", if tls { "https" } else { "http" });
        let mut endpoint = Endpoint::from_shared(http)
            .map_err(|_| ClientError::Authority(authority.to_string()))?
            .connect_timeout(config.connect_timeout)
            .tcp_nodelay(true)
            // A connection that died silently ends a waiting stream (an execution's) as
            // UNAVAILABLE instead of leaving it waiting forever.
            .http2_keep_alive_interval(Duration::from_secs(30))
            .keep_alive_timeout(config.idle_timeout)
            .keep_alive_while_idle(true);
        if tls {
            endpoint = endpoint
                .tls_config(ClientTlsConfig::new().with_native_roots())
                .map_err(ClientError::Tls)?;
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("vx-reapi")
            .enable_all()
            .build()
            .map_err(ClientError::Runtime)?;
        let channel = {
            let _inside = runtime.enter();
            endpoint.connect_lazy()
        };
        let authorization = match &config.token {
            Some(token) => {
                let mut value = format!("Bearer {token}")
                    .parse::<MetadataValue<Ascii>>()
                    .map_err(|_| ClientError::Token)?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        Ok(Client {
            runtime,
            channel,
            instance: config.instance_name.clone(),
            authorization,
            token: config.token.clone().filter(|t| !t.is_empty()),
            idle: config.idle_timeout,
            total: config.request_timeout,
        })
    }

    /// Runs `future` on the client's runtime, blocking the calling thread.
    pub(crate) fn block_on<T>(&self, future: impl Future<Output = T>) -> T {
        self.runtime.block_on(future)
    }

    pub(crate) fn channel(&self) -> Channel {
        self.channel.clone()
    }

    pub(crate) fn instance(&self) -> &str {
        &self.instance
    }

    pub(crate) fn request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        if let Some(value) = &self.authorization {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        request
    }

    /// A unary call, bounded by the idle timeout and the request timeout.
    pub(crate) async fn unary<T>(
        &self,
        call: impl Future<Output = Result<tonic::Response<T>, Status>>,
    ) -> Result<T, Error> {
        let answer = self.bounded(async {
            match tokio::time::timeout(self.idle, call).await {
                Err(_) => Err(Error::Timeout),
                Ok(Err(status)) => Err(self.scrub(from_status(status))),
                Ok(Ok(response)) => Ok(response.into_inner()),
            }
        });
        answer.await
    }

    /// `call` bounded by the request timeout, when the client has one.
    async fn bounded<T>(&self, call: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
        match self.total {
            Some(total) => tokio::time::timeout(total, call)
                .await
                .unwrap_or(Err(Error::Deadline(total))),
            None => call.await,
        }
    }

    /// `error` without the token, should a server have echoed it.
    pub(crate) fn scrub(&self, error: Error) -> Error {
        match (error, &self.token) {
            (Error::Status { code, message }, Some(token)) => Error::Status {
                code,
                message: message.replace(token.as_str(), "***"),
            },
            (error, _) => error,
        }
    }

    fn cas(&self) -> ContentAddressableStorageClient<Channel> {
        ContentAddressableStorageClient::new(self.channel.clone())
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE)
    }

    fn bytestream(&self) -> ByteStreamClient<Channel> {
        ByteStreamClient::new(self.channel.clone()).max_decoding_message_size(MAX_MESSAGE)
    }

    fn action_cache(&self) -> ActionCacheClient<Channel> {
        ActionCacheClient::new(self.channel.clone()).max_decoding_message_size(MAX_MESSAGE)
    }

    /// `{instance}/` or nothing, the prefix of ByteStream resource names.
    fn resource_prefix(&self) -> String {
        if self.instance.is_empty() {
            String::new()
        } else {
            format!("{}/", self.instance)
        }
    }

    /// `GetCapabilities`.
    pub fn capabilities(&self) -> Result<Capabilities, Error> {
        self.runtime.block_on(async {
            let mut client = CapabilitiesClient::new(self.channel.clone());
            let request = self.request(GetCapabilitiesRequest {
                instance_name: self.instance.clone(),
            });
            let answer = self.unary(client.get_capabilities(request)).await?;
            let cache = answer.cache_capabilities.unwrap_or_default();
            let sha256 = digest_function::Value::Sha256 as i32;
            let functions = &cache.digest_functions;
            Ok(Capabilities {
                sha256: functions.contains(&sha256),
                digest_functions: functions
                    .iter()
                    .map(|f| {
                        digest_function::Value::try_from(*f)
                            .map_or_else(|_| f.to_string(), |v| v.as_str_name().to_string())
                    })
                    .collect(),
                max_batch: match cache.max_batch_total_size_bytes {
                    n if n <= 0 => DEFAULT_BATCH_LIMIT,
                    n => n as u64,
                },
                update_enabled: cache
                    .action_cache_update_capabilities
                    .is_some_and(|c| c.update_enabled),
                exec_enabled: answer
                    .execution_capabilities
                    .is_some_and(|e| e.exec_enabled),
            })
        })
    }

    /// The result the action cache holds for `action`, or `None` (`NOT_FOUND`). The server may
    /// inline the contents of the output files named in `inline` (it decides, by size).
    pub fn get_action_result(
        &self,
        action: &Digest,
        inline: &[&str],
    ) -> Result<Option<ActionResult>, Error> {
        self.runtime.block_on(async {
            let request = self.request(GetActionResultRequest {
                instance_name: self.instance.clone(),
                action_digest: Some(action.clone()),
                inline_output_files: inline.iter().map(|p| p.to_string()).collect(),
                ..Default::default()
            });
            match self
                .unary(self.action_cache().get_action_result(request))
                .await
            {
                Ok(result) => Ok(Some(result)),
                Err(Error::Status {
                    code: Code::NotFound,
                    ..
                }) => Ok(None),
                Err(error) => Err(error),
            }
        })
    }

    /// `UpdateActionResult`. The blobs it names must be in the CAS already.
    pub fn update_action_result(&self, action: &Digest, result: ActionResult) -> Result<(), Error> {
        self.runtime.block_on(async {
            let request = self.request(UpdateActionResultRequest {
                instance_name: self.instance.clone(),
                action_digest: Some(action.clone()),
                action_result: Some(result),
                ..Default::default()
            });
            self.unary(self.action_cache().update_action_result(request))
                .await
                .map(|_| ())
        })
    }

    /// The digests among `digests` that the CAS does not hold.
    pub fn find_missing(&self, digests: &[Digest]) -> Result<Vec<Digest>, Error> {
        self.runtime.block_on(async {
            let request = self.request(FindMissingBlobsRequest {
                instance_name: self.instance.clone(),
                blob_digests: digests.to_vec(),
                ..Default::default()
            });
            self.unary(self.cas().find_missing_blobs(request))
                .await
                .map(|answer| answer.missing_blob_digests)
        })
    }

    /// Uploads those of `blobs` that the CAS lacks (asked in `FindMissingBlobs` calls of at
    /// most 4,096 digests); returns how many were sent.
    pub fn upload_missing(&self, blobs: &[Blob], max_batch: u64) -> Result<usize, Error> {
        let mut unique: HashMap<&str, &Blob> = HashMap::new();
        for blob in blobs {
            unique.entry(blob.digest.hash.as_str()).or_insert(blob);
        }
        let unique: Vec<&Blob> = unique.into_values().collect();
        let mut missing: HashSet<String> = HashSet::new();
        for chunk in unique.chunks(4096) {
            let digests: Vec<Digest> = chunk.iter().map(|b| b.digest.clone()).collect();
            missing.extend(self.find_missing(&digests)?.into_iter().map(|d| d.hash));
        }
        let to_send: Vec<Blob> = unique
            .into_iter()
            .filter(|b| missing.contains(&b.digest.hash))
            .cloned()
            .collect();
        self.upload(&to_send, max_batch)?;
        Ok(to_send.len())
    }

    /// Uploads `blobs`: those that fit go together in `BatchUpdateBlobs` calls under
    /// `max_batch`, the others through ByteStream `Write`.
    pub fn upload(&self, blobs: &[Blob], max_batch: u64) -> Result<(), Error> {
        let room = max_batch
            .min(MAX_MESSAGE as u64)
            .saturating_sub(BATCH_MARGIN);
        let mut batch: Vec<batch_update_blobs_request::Request> = Vec::new();
        let mut batch_size = 0u64;
        for blob in blobs {
            if blob.size() > room {
                self.runtime.block_on(self.bounded(self.write(blob)))?;
                continue;
            }
            if batch_size + blob.size() > room {
                self.runtime
                    .block_on(self.batch_update(std::mem::take(&mut batch)))?;
                batch_size = 0;
            }
            let data = match &blob.bytes {
                BlobBytes::Memory(bytes) => bytes.clone(),
                BlobBytes::File(path) => fs_err::read(path)?,
            };
            batch_size += blob.size() + PER_BLOB;
            batch.push(batch_update_blobs_request::Request {
                digest: Some(blob.digest.clone()),
                data,
                ..Default::default()
            });
        }
        if !batch.is_empty() {
            self.runtime.block_on(self.batch_update(batch))?;
        }
        Ok(())
    }

    async fn batch_update(
        &self,
        requests: Vec<batch_update_blobs_request::Request>,
    ) -> Result<(), Error> {
        let request = self.request(BatchUpdateBlobsRequest {
            instance_name: self.instance.clone(),
            requests,
            ..Default::default()
        });
        let answer = self.unary(self.cas().batch_update_blobs(request)).await?;
        match answer
            .responses
            .into_iter()
            .filter_map(|r| r.status)
            .find(|s| s.code != 0)
        {
            Some(status) => Err(Error::Status {
                code: Code::from_i32(status.code),
                message: status.message,
            }),
            None => Ok(()),
        }
    }

    /// ByteStream `Write` of one blob in chunks of at most 1 MiB. The call fails when the server
    /// takes no chunk (or, after the last, gives no answer) within the idle timeout.
    async fn write(&self, blob: &Blob) -> Result<(), Error> {
        let resource = format!(
            "{}uploads/{}/blobs/{}/{}",
            self.resource_prefix(),
            uuid::Uuid::new_v4(),
            blob.digest.hash,
            blob.digest.size_bytes
        );
        let source: Box<dyn Read + Send> = match &blob.bytes {
            BlobBytes::Memory(bytes) => Box::new(io::Cursor::new(bytes.clone())),
            BlobBytes::File(path) => Box::new(fs_err::File::open(path)?),
        };
        let chunks = Chunks {
            source,
            resource: Some(resource),
            offset: 0,
            size: blob.size(),
            done: false,
            progress: Arc::new(Mutex::new((Instant::now(), None))),
        };
        let progress = chunks.progress.clone();
        let mut client = self.bytestream();
        let request = self.request(tokio_stream::iter(chunks));
        let call = client.write(request);
        tokio::pin!(call);
        let answer = loop {
            tokio::select! {
                answer = &mut call => break answer,
                () = tokio::time::sleep(self.idle) => {
                    let last = progress.lock().unwrap_or_else(|p| p.into_inner()).0;
                    if last.elapsed() >= self.idle {
                        return Err(Error::Timeout);
                    }
                }
            }
        };
        if let Some(error) = progress.lock().unwrap_or_else(|p| p.into_inner()).1.take() {
            return Err(Error::Io(error));
        }
        let committed = answer.map_err(from_status)?.into_inner().committed_size;
        if committed != blob.digest.size_bytes {
            return Err(Error::Status {
                code: Code::DataLoss,
                message: format!(
                    "the server committed {committed} of {} bytes",
                    blob.digest.size_bytes
                ),
            });
        }
        Ok(())
    }

    /// Downloads the blob `digest` into the new file `dest`, checking its SHA-256 and size as
    /// it arrives: `BatchReadBlobs` under `max_batch`, ByteStream `Read` above. `Ok(false)`: the
    /// CAS does not hold it. A blob over `cap` is [`Error::TooLarge`] before anything is read.
    pub fn download(
        &self,
        digest: &Digest,
        dest: &Path,
        max_batch: u64,
        cap: u64,
    ) -> Result<bool, Error> {
        match self.small_or_stream(digest, max_batch, cap)? {
            Fetch::Missing => Ok(false),
            Fetch::Small(bytes) => self.save_inlined(digest, &bytes, dest, cap).map(|()| true),
            Fetch::Stream => {
                let mut file = fs_err::File::create(dest)?.into_parts().0;
                self.stream_into(digest, &mut file)
            }
        }
    }

    /// [`Client::download`] into an open file (written from its start).
    pub fn download_to(
        &self,
        digest: &Digest,
        file: &mut File,
        max_batch: u64,
        cap: u64,
    ) -> Result<bool, Error> {
        match self.small_or_stream(digest, max_batch, cap)? {
            Fetch::Missing => Ok(false),
            Fetch::Small(bytes) => self
                .save_inlined_to(digest, &bytes, file, cap)
                .map(|()| true),
            Fetch::Stream => self.stream_into(digest, file),
        }
    }

    /// A blob under `max_batch` read whole with `BatchReadBlobs`, or the word to stream it; a
    /// blob over `cap` is [`Error::TooLarge`] before anything is read.
    fn small_or_stream(&self, digest: &Digest, max_batch: u64, cap: u64) -> Result<Fetch, Error> {
        let size = digest.size_bytes.max(0) as u64;
        if size > cap {
            return Err(Error::TooLarge { size, cap });
        }
        let small = size
            <= max_batch
                .min(MAX_MESSAGE as u64)
                .saturating_sub(BATCH_MARGIN);
        if !small {
            return Ok(Fetch::Stream);
        }
        Ok(match self.read_small(digest)? {
            Some(bytes) => Fetch::Small(bytes),
            None => Fetch::Missing,
        })
    }

    /// Streams the blob into `file` with ByteStream `Read`, checked as it arrives.
    fn stream_into(&self, digest: &Digest, file: &mut File) -> Result<bool, Error> {
        let found = self
            .runtime
            .block_on(self.bounded(self.read_stream(digest, file)))?;
        file.flush()?;
        Ok(found)
    }

    /// The bytes of a blob, read whole and checked (stdout, stderr, a `Tree`); `None`: missing.
    pub fn read_bytes(&self, digest: &Digest, max_batch: u64) -> Result<Option<Vec<u8>>, Error> {
        let size = digest.size_bytes.max(0) as u64;
        let bytes = if size
            <= max_batch
                .min(MAX_MESSAGE as u64)
                .saturating_sub(BATCH_MARGIN)
        {
            self.read_small(digest)?
        } else {
            let mut bytes = Vec::new();
            self.runtime
                .block_on(self.bounded(self.read_stream(digest, &mut bytes)))?
                .then_some(bytes)
        };
        let Some(bytes) = bytes else {
            return Ok(None);
        };
        let mut check = Check::new();
        check.update(&bytes);
        if !check.matches(digest) {
            return Err(Error::DigestMismatch);
        }
        Ok(Some(bytes))
    }

    /// Writes bytes the server inlined for `digest` into the new file `dest`, after checking
    /// them against the digest and `cap`.
    pub fn save_inlined(
        &self,
        digest: &Digest,
        bytes: &[u8],
        dest: &Path,
        cap: u64,
    ) -> Result<(), Error> {
        check_inlined(digest, bytes, cap)?;
        fs_err::write(dest, bytes)?;
        Ok(())
    }

    /// [`Client::save_inlined`] into an open file.
    pub fn save_inlined_to(
        &self,
        digest: &Digest,
        bytes: &[u8],
        file: &mut File,
        cap: u64,
    ) -> Result<(), Error> {
        check_inlined(digest, bytes, cap)?;
        file.write_all(bytes)?;
        Ok(())
    }

    /// The bytes of a blob small enough for one `BatchReadBlobs`, unchecked; `None`: missing.
    fn read_small(&self, digest: &Digest) -> Result<Option<Vec<u8>>, Error> {
        self.runtime.block_on(async {
            let request = self.request(BatchReadBlobsRequest {
                instance_name: self.instance.clone(),
                digests: vec![digest.clone()],
                ..Default::default()
            });
            let answer = self.unary(self.cas().batch_read_blobs(request)).await?;
            let Some(response) = answer.responses.into_iter().next() else {
                return Err(Error::Status {
                    code: Code::Internal,
                    message: "BatchReadBlobs answered for no blob".into(),
                });
            };
            match response.status.map_or(0, |s| s.code) {
                0 => Ok(Some(response.data)),
                5 => Ok(None),
                code => Err(Error::Status {
                    code: Code::from_i32(code),
                    message: String::new(),
                }),
            }
        })
    }

    async fn read_stream(&self, digest: &Digest, dest: &mut dyn Write) -> Result<bool, Error> {
        let resource = format!(
            "{}blobs/{}/{}",
            self.resource_prefix(),
            digest.hash,
            digest.size_bytes
        );
        let request = self.request(ReadRequest {
            resource_name: resource,
            read_offset: 0,
            read_limit: 0,
        });
        let mut client = self.bytestream();
        let mut stream = match self.unary(client.read(request)).await {
            Ok(stream) => stream,
            Err(Error::Status {
                code: Code::NotFound,
                ..
            }) => return Ok(false),
            Err(error) => return Err(error),
        };
        let size = digest.size_bytes.max(0) as u64;
        let mut check = Check::new();
        let mut received = 0u64;
        loop {
            let message = match tokio::time::timeout(self.idle, stream.message()).await {
                Err(_) => return Err(Error::Timeout),
                Ok(Err(status)) if status.code() == Code::NotFound && received == 0 => {
                    return Ok(false)
                }
                Ok(Err(status)) => return Err(from_status(status)),
                Ok(Ok(None)) => break,
                Ok(Ok(Some(message))) => message,
            };
            received += message.data.len() as u64;
            if received > size {
                return Err(Error::DigestMismatch);
            }
            check.update(&message.data);
            dest.write_all(&message.data)?;
        }
        if !check.matches(digest) {
            return Err(Error::DigestMismatch);
        }
        Ok(true)
    }
}

/// The request stream of a ByteStream `Write`: 1 MiB chunks read from the source as the
/// transport asks for them, each with its offset, the resource name in the first only and
/// `finish_write` on the last. Each chunk taken is progress; a read error ends the stream
/// early (the server then sees an unfinished write) and is kept for the caller.
struct Chunks {
    source: Box<dyn Read + Send>,
    resource: Option<String>,
    offset: u64,
    size: u64,
    done: bool,
    progress: Arc<Mutex<(Instant, Option<io::Error>)>>,
}

impl Iterator for Chunks {
    type Item = WriteRequest;

    fn next(&mut self) -> Option<WriteRequest> {
        if self.done {
            return None;
        }
        let want = (self.size - self.offset).min(CHUNK as u64) as usize;
        let mut data = vec![0u8; want];
        let read = self.source.read_exact(&mut data);
        let mut progress = self.progress.lock().unwrap_or_else(|p| p.into_inner());
        progress.0 = Instant::now();
        if let Err(error) = read {
            progress.1 = Some(error);
            self.done = true;
            return None;
        }
        let request = WriteRequest {
            resource_name: self.resource.take().unwrap_or_default(),
            write_offset: self.offset as i64,
            finish_write: self.offset + want as u64 >= self.size,
            data,
        };
        self.offset += want as u64;
        self.done = request.finish_write;
        Some(request)
    }
}

/// How [`Client::download`] gets a blob.
enum Fetch {
    Missing,
    Small(Vec<u8>),
    Stream,
}

/// Inlined bytes are checked against their digest (and the size cap) before anything is written.
fn check_inlined(digest: &Digest, bytes: &[u8], cap: u64) -> Result<(), Error> {
    let size = digest.size_bytes.max(0) as u64;
    if size > cap {
        return Err(Error::TooLarge { size, cap });
    }
    let mut check = Check::new();
    check.update(bytes);
    if !check.matches(digest) {
        return Err(Error::DigestMismatch);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
