//! The local cache store (STORE-1 …): the SQLite index, artifacts, stored logs, pruning and the
//! workspace run lock.
//!
//! Start with [`Store`] (in `index`): it opens a cache directory, looks entries up, saves and
//! restores them. [`artifact`] owns the `<key>.tar.zst` format (STORE-5): packing, the one
//! validity check, and staged restore. [`log`] owns the stored log format (STORE-6).
//! [`layer`] is the `CacheLayer` seam and [`Layers`], the local store with further layers
//! read through and uploaded to (REM-1 …). [`lock`] is the run lock (STORE-14); [`prune`] evicts entries (STORE-15, STORE-16).
//!
//! This crate knows nothing of processes, tasks' globs or git: callers pass predicates and
//! paths in.

pub mod artifact;
pub mod fault;
pub mod index;
pub mod layer;
pub mod lock;
pub mod log;
pub mod prune;
mod schema;

pub use index::{
    Access, Entry, FileStamp, Invocation, KeyComponent, Lookup, OpenError, OutputStamp,
    RecentCounts, RestoreFailure, RunRow, Store, StoreError,
};
pub use layer::{CacheLayer, ErrorKind, LayerError, Layers, RemoteUse, Source, UploadCounts};
pub use lock::{acquire as acquire_run_lock, LockError, RunLock};
pub use log::{LogBuf, LogRecord, LogStream};
pub use prune::{prune_dir, PruneError, PrunePolicy, PruneReport};

/// The index schema version this vx reads and writes (`PRAGMA user_version`, STORE-3).
pub const SCHEMA_VERSION: u32 = schema::VERSION;
