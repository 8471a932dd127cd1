//! An in-process REAPI cache server for fault injection beside the real `buildbox-casd`
//! (REM-15 allows one next to the real server, never instead of it): Capabilities, ActionCache,
//! CAS and ByteStream over memory, which a test can make refuse every call with a status,
//! demand a token, corrupt the blobs it serves, or offer other digest functions; it records
//! every call by method name.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio_stream::Stream;
use tonic::{Code, Request, Response, Status, Streaming};
use vx_reapi::bytestream::byte_stream_server::{ByteStream, ByteStreamServer};
use vx_reapi::bytestream::{
    QueryWriteStatusRequest, QueryWriteStatusResponse, ReadRequest, ReadResponse, WriteRequest,
    WriteResponse,
};
use vx_reapi::longrunning::{operation, Operation};
use vx_reapi::proto::action_cache_server::{ActionCache, ActionCacheServer};
use vx_reapi::proto::capabilities_server::{Capabilities, CapabilitiesServer};
use vx_reapi::proto::content_addressable_storage_server::{
    ContentAddressableStorage, ContentAddressableStorageServer,
};
use vx_reapi::proto::execution_server::{Execution, ExecutionServer};
use vx_reapi::proto::{self as re, digest_function};
use vx_reapi::protobuf::Any;

/// What the fake holds and how it misbehaves.
struct State {
    blobs: HashMap<String, Vec<u8>>,
    results: HashMap<String, re::ActionResult>,
    calls: Vec<String>,
    /// Every call fails with this status.
    fail: Option<(Code, String)>,
    /// Calls without `authorization: Bearer <token>` fail `UNAUTHENTICATED`.
    token: Option<String>,
    /// Blobs are served with one byte flipped.
    corrupt: bool,
    /// `GetActionResult` inlines the output files a client asks for.
    inline: bool,
    digest_functions: Vec<i32>,
    max_batch: i64,
    /// What `GetCapabilities` says of action-cache updates.
    update_enabled: bool,
    /// `Execute` is served, this many actions at once; more are refused `RESOURCE_EXHAUSTED`.
    execute_at_most: Option<usize>,
    executing: usize,
    most_executing: usize,
    refused_for_load: usize,
}

type Shared = Arc<Mutex<State>>;

/// A running fake; it stops when the test process ends.
pub struct FakeReapi {
    pub port: u16,
    state: Shared,
}

impl FakeReapi {
    /// A well-behaved fake: SHA-256, a batch limit of 4 MiB, no token.
    pub fn start() -> FakeReapi {
        let state = Arc::new(Mutex::new(State {
            blobs: HashMap::new(),
            results: HashMap::new(),
            calls: Vec::new(),
            fail: None,
            token: None,
            corrupt: false,
            inline: false,
            digest_functions: vec![digest_function::Value::Sha256 as i32],
            max_batch: 4 << 20,
            update_enabled: true,
            execute_at_most: None,
            executing: 0,
            most_executing: 0,
            refused_for_load: 0,
        }));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("an address").port();
        listener.set_nonblocking(true).expect("non-blocking");
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("a listener");
                let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
                let service = Service(shared);
                tonic::transport::Server::builder()
                    .add_service(CapabilitiesServer::new(service.clone()))
                    .add_service(ActionCacheServer::new(service.clone()))
                    .add_service(
                        ContentAddressableStorageServer::new(service.clone())
                            .max_decoding_message_size(64 << 20)
                            .max_encoding_message_size(64 << 20),
                    )
                    .add_service(ExecutionServer::new(service.clone()))
                    .add_service(ByteStreamServer::new(service))
                    .serve_with_incoming(incoming)
                    .await
                    .expect("the fake serves");
            });
        });
        FakeReapi { port, state }
    }

    /// `grpc://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("grpc://127.0.0.1:{}", self.port)
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().expect("not poisoned"))
    }

    /// Every call fails with `code` (and `message`).
    pub fn fail_all(&self, code: Code, message: &str) {
        self.with(|s| s.fail = Some((code, message.to_string())));
    }

    /// Calls must carry `authorization: Bearer <token>`, else `UNAUTHENTICATED`.
    pub fn require_token(&self, token: &str) {
        self.with(|s| s.token = Some(token.to_string()));
    }

    /// Blobs are served with one byte flipped (their digests then do not match).
    pub fn corrupt_reads(&self) {
        self.with(|s| s.corrupt = true);
    }

    /// `GetActionResult` inlines the contents of the output files a client names in
    /// `inline_output_files` (off by default: a server may always decline).
    pub fn inline_results(&self) {
        self.with(|s| s.inline = true);
    }

    /// The digest functions `GetCapabilities` offers.
    pub fn offer_digest_functions(&self, functions: &[digest_function::Value]) {
        self.with(|s| s.digest_functions = functions.iter().map(|f| *f as i32).collect());
    }

    /// `GetCapabilities` says clients may not write action results.
    pub fn refuse_updates(&self) {
        self.with(|s| s.update_enabled = false);
    }

    /// The batch limit `GetCapabilities` announces.
    pub fn set_max_batch(&self, bytes: i64) {
        self.with(|s| s.max_batch = bytes);
    }

    /// `Execute` is served, as an engine that runs at most `n` actions at once and refuses more
    /// with `RESOURCE_EXHAUSTED` (as BuildGrid does when its RPC threads are all taken): each
    /// action "runs" for 300 ms and succeeds with exit 0 and no outputs.
    pub fn execute_at_most(&self, n: usize) {
        self.with(|s| s.execute_at_most = Some(n));
    }

    /// The most actions it ran at once, and how many it refused for load.
    pub fn execution_load(&self) -> (usize, usize) {
        self.with(|s| (s.most_executing, s.refused_for_load))
    }

    /// The method name of every call so far, in order (`GetActionResult`, `ByteStream.Write`…).
    pub fn calls(&self) -> Vec<String> {
        self.with(|s| s.calls.clone())
    }

    /// How many action results it holds.
    pub fn results(&self) -> usize {
        self.with(|s| s.results.len())
    }
}

#[derive(Clone)]
struct Service(Shared);

impl Service {
    /// Records the call and applies the scripted refusal and the token check.
    fn enter<T>(&self, method: &str, request: &Request<T>) -> Result<(), Status> {
        let mut state = self.0.lock().expect("not poisoned");
        state.calls.push(method.to_string());
        if let Some((code, message)) = &state.fail {
            return Err(Status::new(*code, message.clone()));
        }
        if let Some(token) = &state.token {
            let sent = request
                .metadata()
                .get("authorization")
                .and_then(|v| v.to_str().ok());
            if sent != Some(format!("Bearer {token}").as_str()) {
                return Err(Status::unauthenticated("a valid bearer token is required"));
            }
        }
        Ok(())
    }

    fn blob(&self, hash: &str) -> Option<Vec<u8>> {
        let state = self.0.lock().expect("not poisoned");
        let mut bytes = state.blobs.get(hash)?.clone();
        if state.corrupt && !bytes.is_empty() {
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0xff;
        }
        Some(bytes)
    }

    fn store(&self, bytes: Vec<u8>) -> re::Digest {
        let digest = vx_reapi::digest_of(&bytes);
        self.0
            .lock()
            .expect("not poisoned")
            .blobs
            .insert(digest.hash.clone(), bytes);
        digest
    }
}

fn key(digest: Option<&re::Digest>) -> Result<String, Status> {
    digest
        .map(|d| d.hash.clone())
        .ok_or_else(|| Status::invalid_argument("no digest"))
}

type Streamed<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

#[tonic::async_trait]
impl Capabilities for Service {
    async fn get_capabilities(
        &self,
        request: Request<re::GetCapabilitiesRequest>,
    ) -> Result<Response<re::ServerCapabilities>, Status> {
        self.enter("GetCapabilities", &request)?;
        let state = self.0.lock().expect("not poisoned");
        Ok(Response::new(re::ServerCapabilities {
            execution_capabilities: state.execute_at_most.map(|_| re::ExecutionCapabilities {
                digest_function: digest_function::Value::Sha256 as i32,
                exec_enabled: true,
                ..Default::default()
            }),
            cache_capabilities: Some(re::CacheCapabilities {
                digest_functions: state.digest_functions.clone(),
                max_batch_total_size_bytes: state.max_batch,
                action_cache_update_capabilities: Some(re::ActionCacheUpdateCapabilities {
                    update_enabled: state.update_enabled,
                }),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }
}

#[tonic::async_trait]
impl ActionCache for Service {
    async fn get_action_result(
        &self,
        request: Request<re::GetActionResultRequest>,
    ) -> Result<Response<re::ActionResult>, Status> {
        self.enter("GetActionResult", &request)?;
        let request = request.into_inner();
        let action = key(request.action_digest.as_ref())?;
        let (result, inline) = {
            let state = self.0.lock().expect("not poisoned");
            let result = state.results.get(&action).cloned();
            (result, state.inline)
        };
        let mut result = result.ok_or_else(|| Status::not_found("no such action result"))?;
        if self.0.lock().expect("not poisoned").corrupt {
            // Inlined bytes are damaged like read ones.
            for file in &mut result.output_files {
                if !file.contents.is_empty() {
                    let middle = file.contents.len() / 2;
                    file.contents[middle] ^= 0xff;
                }
            }
        }
        if inline {
            for file in &mut result.output_files {
                if request.inline_output_files.contains(&file.path) {
                    file.contents = self.blob(&key(file.digest.as_ref())?).unwrap_or_default();
                }
            }
        }
        Ok(Response::new(result))
    }

    async fn update_action_result(
        &self,
        request: Request<re::UpdateActionResultRequest>,
    ) -> Result<Response<re::ActionResult>, Status> {
        self.enter("UpdateActionResult", &request)?;
        let request = request.into_inner();
        let action = key(request.action_digest.as_ref())?;
        let result = request.action_result.unwrap_or_default();
        self.0
            .lock()
            .expect("not poisoned")
            .results
            .insert(action, result.clone());
        Ok(Response::new(result))
    }
}

#[tonic::async_trait]
impl ContentAddressableStorage for Service {
    async fn find_missing_blobs(
        &self,
        request: Request<re::FindMissingBlobsRequest>,
    ) -> Result<Response<re::FindMissingBlobsResponse>, Status> {
        self.enter("FindMissingBlobs", &request)?;
        let state = self.0.lock().expect("not poisoned");
        let missing = request
            .into_inner()
            .blob_digests
            .into_iter()
            .filter(|d| !state.blobs.contains_key(&d.hash))
            .collect();
        Ok(Response::new(re::FindMissingBlobsResponse {
            missing_blob_digests: missing,
        }))
    }

    async fn batch_update_blobs(
        &self,
        request: Request<re::BatchUpdateBlobsRequest>,
    ) -> Result<Response<re::BatchUpdateBlobsResponse>, Status> {
        self.enter("BatchUpdateBlobs", &request)?;
        let mut responses = Vec::new();
        for blob in request.into_inner().requests {
            let stored = self.store(blob.data);
            let ok = blob.digest.as_ref() == Some(&stored);
            responses.push(re::batch_update_blobs_response::Response {
                digest: blob.digest,
                status: Some(rpc_status(if ok {
                    Code::Ok
                } else {
                    Code::InvalidArgument
                })),
            });
        }
        Ok(Response::new(re::BatchUpdateBlobsResponse { responses }))
    }

    async fn batch_read_blobs(
        &self,
        request: Request<re::BatchReadBlobsRequest>,
    ) -> Result<Response<re::BatchReadBlobsResponse>, Status> {
        self.enter("BatchReadBlobs", &request)?;
        let responses = request
            .into_inner()
            .digests
            .into_iter()
            .map(|digest| {
                let (data, code) = match self.blob(&digest.hash) {
                    Some(bytes) => (bytes, Code::Ok),
                    None => (Vec::new(), Code::NotFound),
                };
                re::batch_read_blobs_response::Response {
                    digest: Some(digest),
                    data,
                    status: Some(rpc_status(code)),
                    ..Default::default()
                }
            })
            .collect();
        Ok(Response::new(re::BatchReadBlobsResponse { responses }))
    }

    type GetTreeStream = Streamed<re::GetTreeResponse>;

    async fn get_tree(
        &self,
        _: Request<re::GetTreeRequest>,
    ) -> Result<Response<Self::GetTreeStream>, Status> {
        Err(Status::unimplemented("GetTree"))
    }

    async fn split_blob(
        &self,
        _: Request<re::SplitBlobRequest>,
    ) -> Result<Response<re::SplitBlobResponse>, Status> {
        Err(Status::unimplemented("SplitBlob"))
    }

    type GetChunkMappingStream = Streamed<re::GetChunkMappingResponse>;

    async fn get_chunk_mapping(
        &self,
        _: Request<re::GetChunkMappingRequest>,
    ) -> Result<Response<Self::GetChunkMappingStream>, Status> {
        Err(Status::unimplemented("GetChunkMapping"))
    }

    async fn splice_blob(
        &self,
        _: Request<re::SpliceBlobRequest>,
    ) -> Result<Response<re::SpliceBlobResponse>, Status> {
        Err(Status::unimplemented("SpliceBlob"))
    }

    async fn register_chunk_mapping(
        &self,
        _: Request<Streaming<re::RegisterChunkMappingRequest>>,
    ) -> Result<Response<re::RegisterChunkMappingResponse>, Status> {
        Err(Status::unimplemented("RegisterChunkMapping"))
    }
}

fn rpc_status(code: Code) -> vx_reapi::rpc::Status {
    vx_reapi::rpc::Status {
        code: code as i32,
        ..Default::default()
    }
}

/// The hash in a resource name `…blobs/<hash>/<size>`.
fn resource_hash(name: &str) -> Result<String, Status> {
    let parts: Vec<&str> = name.split('/').collect();
    parts
        .iter()
        .position(|p| *p == "blobs")
        .and_then(|i| parts.get(i + 1))
        .map(|h| h.to_string())
        .ok_or_else(|| Status::invalid_argument(format!("bad resource name {name}")))
}

#[tonic::async_trait]
impl ByteStream for Service {
    type ReadStream = Streamed<ReadResponse>;

    async fn read(
        &self,
        request: Request<ReadRequest>,
    ) -> Result<Response<Self::ReadStream>, Status> {
        self.enter("ByteStream.Read", &request)?;
        let hash = resource_hash(&request.get_ref().resource_name)?;
        let bytes = self
            .blob(&hash)
            .ok_or_else(|| Status::not_found("no such blob"))?;
        let chunks: Vec<Result<ReadResponse, Status>> = bytes
            .chunks(1 << 20)
            .map(|c| Ok(ReadResponse { data: c.to_vec() }))
            .collect();
        Ok(Response::new(Box::pin(tokio_stream::iter(chunks))))
    }

    async fn write(
        &self,
        request: Request<Streaming<WriteRequest>>,
    ) -> Result<Response<WriteResponse>, Status> {
        self.enter("ByteStream.Write", &request)?;
        let mut stream = request.into_inner();
        let mut name = String::new();
        let mut bytes = Vec::new();
        while let Some(chunk) = stream.message().await? {
            if name.is_empty() {
                name = chunk.resource_name.clone();
            }
            if chunk.write_offset != bytes.len() as i64 {
                return Err(Status::invalid_argument("a chunk at the wrong offset"));
            }
            bytes.extend_from_slice(&chunk.data);
            if chunk.finish_write {
                break;
            }
        }
        let hash = resource_hash(&name)?;
        let size = bytes.len() as i64;
        if self.store(bytes).hash != hash {
            return Err(Status::invalid_argument(
                "the bytes do not match the digest",
            ));
        }
        Ok(Response::new(WriteResponse {
            committed_size: size,
        }))
    }

    async fn query_write_status(
        &self,
        _: Request<QueryWriteStatusRequest>,
    ) -> Result<Response<QueryWriteStatusResponse>, Status> {
        Err(Status::unimplemented("QueryWriteStatus"))
    }
}

#[tonic::async_trait]
impl Execution for Service {
    type ExecuteStream = Streamed<Operation>;
    type WaitExecutionStream = Streamed<Operation>;

    async fn execute(
        &self,
        request: Request<re::ExecuteRequest>,
    ) -> Result<Response<Self::ExecuteStream>, Status> {
        self.enter("Execute", &request)?;
        {
            let mut state = self.0.lock().expect("not poisoned");
            let at_most = state
                .execute_at_most
                .ok_or_else(|| Status::unimplemented("no execution"))?;
            if state.executing >= at_most {
                state.refused_for_load += 1;
                return Err(Status::resource_exhausted("all workers are busy"));
            }
            state.executing += 1;
            state.most_executing = state.most_executing.max(state.executing);
        }
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        self.0.lock().expect("not poisoned").executing -= 1;
        let response = re::ExecuteResponse {
            result: Some(re::ActionResult::default()),
            ..Default::default()
        };
        let operation = Operation {
            name: format!(
                "operations/{}",
                request
                    .into_inner()
                    .action_digest
                    .map(|d| d.hash)
                    .unwrap_or_default()
            ),
            done: true,
            result: Some(operation::Result::Response(Any {
                type_url: "type.googleapis.com/build.bazel.remote.execution.v2.ExecuteResponse"
                    .to_string(),
                value: prost::Message::encode_to_vec(&response),
            })),
            ..Default::default()
        };
        let stream: Self::ExecuteStream = Box::pin(tokio_stream::iter([Ok(operation)]));
        Ok(Response::new(stream))
    }

    async fn wait_execution(
        &self,
        _request: Request<re::WaitExecutionRequest>,
    ) -> Result<Response<Self::WaitExecutionStream>, Status> {
        Err(Status::not_found(
            "operations end in their Execute stream here",
        ))
    }
}
