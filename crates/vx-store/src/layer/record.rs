//! Small named records in a further layer (SEL-10): a body of a few kilobytes kept under a key
//! that is not a task's (the green runs of a branch). A record travels as an artifact with no
//! outputs and the body as its log (one note record), so it gets what every entry gets: the server's namespace
//! (team, instance name), the signature of REM-16, the size cap and the one validity check,
//! which also proves the body belongs to the key asked for. Writing the same key again replaces
//! the record on every server vx speaks to (a Turborepo PUT, a REAPI `UpdateActionResult`).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::remote::{CacheLayer, ErrorKind, LayerError};
use crate::artifact::{self, ArtifactMeta, ExecMeta, Producer};
use crate::log::{LogRecord, LogStream};

/// The cap on a record's artifact.
const RECORD_CAP: u64 = 1 << 20;

/// A further layer as records see it: what it may be asked in this run.
#[derive(Clone)]
pub struct RecordLayer {
    pub layer: Arc<dyn CacheLayer>,
    pub read: bool,
    pub write: bool,
}

/// The key of a record named by `parts` (a format tag first, then what it is about).
pub fn record_key(parts: &[&str]) -> String {
    let mut hasher = blake3::Hasher::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update(b"\0");
    }
    hasher.finalize().to_hex().to_string()
}

/// The record under `key` (64 hex digits), or `None` when the layer holds none. `tmp` is a
/// directory for the download, which is removed before this returns.
pub fn fetch_record(
    layer: &dyn CacheLayer,
    key: &str,
    tmp: &Path,
) -> Result<Option<Vec<u8>>, LayerError> {
    let io = |e: std::io::Error| LayerError::new(ErrorKind::Io, e.to_string());
    std::fs::create_dir_all(tmp).map_err(io)?;
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = format!(
        "{}record-{}-{n}.tmp",
        artifact::PACK_TEMP_PREFIX,
        std::process::id()
    );
    let path = tmp.join(name);
    let _ = std::fs::remove_file(&path);
    let found = layer.fetch(key, &path, RECORD_CAP);
    let read = match found {
        Ok(true) => artifact::validate(&path, key, &|_| false, RECORD_CAP)
            .map_err(|e| LayerError::new(ErrorKind::InvalidArtifact, e.to_string()))
            .and_then(|v| {
                crate::log::decode(&v.log)
                    .map_err(|e| LayerError::new(ErrorKind::InvalidArtifact, e.to_string()))
            })
            .map(|records| Some(records.into_iter().flat_map(|r| r.bytes).collect())),
        Ok(false) => Ok(None),
        Err(e) => Err(e),
    };
    let _ = std::fs::remove_file(&path);
    read
}

/// Writes `body` as the record under `key`, replacing what the layer held.
pub fn put_record(
    layer: &dyn CacheLayer,
    key: &str,
    task: &str,
    body: &[u8],
    tmp: &Path,
) -> Result<(), LayerError> {
    let io = |e: std::io::Error| LayerError::new(ErrorKind::Io, e.to_string());
    std::fs::create_dir_all(tmp).map_err(io)?;
    let meta = ArtifactMeta {
        format: artifact::FORMAT,
        key: key.to_string(),
        task: task.to_string(),
        command: String::new(),
        files: Default::default(),
        links: Default::default(),
        unread: Default::default(),
        exec: ExecMeta::default(),
        producer: Producer {
            vx_version: env!("CARGO_PKG_VERSION").to_string(),
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            ..Producer::default()
        },
        produced: None,
    };
    let log = crate::log::encode(&[LogRecord {
        stream: LogStream::Note,
        bytes: body.to_vec(),
    }]);
    let packed = artifact::pack(tmp, &log, meta, &[], RECORD_CAP)
        .map_err(|e| LayerError::new(ErrorKind::Io, e.to_string()))?;
    let put = layer.put(key, &packed.path, 0);
    let _ = std::fs::remove_file(&packed.path);
    put
}
