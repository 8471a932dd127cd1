//! Bazel's Remote Execution API (REAPI v2) for vx: a client for the services a cache needs
//! (Capabilities, CAS with ByteStream, ActionCache) and the REAPI cache layer (REM-4).
//!
//! # How this works
//!
//! [`Client`] talks gRPC to one server through one HTTP/2 channel, on a small tokio runtime that
//! this crate owns: every call is a blocking function, so the rest of vx keeps its threads
//! (ARCH-1). Calls are bounded by the idle timeout (no answer, or a transfer without progress,
//! for that long fails), and every failure is an [`Error`] that says what went wrong without
//! credentials.
//!
//! For remote execution (REM-12, REM-13): [`InputRoot`] builds an action's input tree (with
//! [`FileDigests`], which hashes each local file once per identity), [`RemoteTask`] its
//! `Command` and `Action`, and [`Client::execute`] runs it, following the operation to the end,
//! resuming a broken stream and cancelling on request; [`Client::write_outputs`] writes a
//! result's outputs.
//!
//! [`ReapiLayer`] is a [`vx_store::CacheLayer`]: it stores each vx key as the result of a
//! synthetic action (REM-4) whose one output file is the artifact, so any REAPI server keeps vx
//! entries beside its own. Everything around it (read-through, prefetch, background uploads,
//! degradation) is the same code that serves the HTTP layer, in `vx_store::layer`.

mod action;
mod client;
mod digest;
mod execute;
mod executor;
mod input;
mod layer;
mod window;

pub use action::{BuiltAction, RemoteTask};
pub use client::{code_name, Capabilities, Client, ClientConfig, ClientError, Error};
pub use digest::{digest_of, digest_of_file, Blob};
pub use execute::Execution;
pub use executor::{token_values, RemoteExecutor, SetupError, DEFAULT_TOKEN_ENV};
pub use input::{BuiltRoot, FileDigests, Input, InputError, InputRoot};
pub use layer::{entry_action, ReapiLayer, ENTRY_PATH};

/// The protobuf messages and gRPC stubs of REAPI v2 and ByteStream.
pub use bazel_remote_apis::build::bazel::remote::execution::v2 as proto;
pub use bazel_remote_apis::google::{bytestream, longrunning, protobuf, rpc};
pub use tonic::Code;

/// A `google.protobuf.Duration` of `duration`.
pub(crate) fn proto_duration(
    duration: std::time::Duration,
) -> bazel_remote_apis::google::protobuf::Duration {
    bazel_remote_apis::google::protobuf::Duration {
        seconds: duration.as_secs() as i64,
        nanos: duration.subsec_nanos() as i32,
    }
}
