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
//! [`ReapiLayer`] is a [`vx_store::CacheLayer`]: it stores each vx key as the result of a
//! synthetic action (REM-4) whose one output file is the artifact, so any REAPI server keeps vx
//! entries beside its own. Everything around it (read-through, prefetch, background uploads,
//! degradation) is the same code that serves the HTTP layer, in `vx_store::layer`.

mod client;
mod digest;
mod layer;

pub use client::{Capabilities, Client, ClientConfig, Error};
pub use digest::{digest_of, digest_of_file, Blob};
pub use layer::{entry_action, ReapiLayer, ENTRY_PATH};

/// The protobuf messages and gRPC stubs of REAPI v2 and ByteStream.
pub use bazel_remote_apis::build::bazel::remote::execution::v2 as proto;
pub use bazel_remote_apis::google::{bytestream, rpc};
pub use tonic::Code;
