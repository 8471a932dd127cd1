//! The state `--shard K/N` keeps about tasks of other parts (SCHED-8): a leaf, so that the run's
//! state can hold it; what is done with it is in `parts.rs`.

use std::time::Duration;

use crate::cache::CacheKind;

/// How a waiting task is launched if it has to run here after all.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pending {
    pub cache_kind: CacheKind,
    pub writes: bool,
    pub unsaved_reason: &'static str,
}

/// How a wait for another part's task ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartWait {
    /// Its entry is in the remote cache.
    Arrived,
    /// Its runner said it failed there, with this exit code.
    Failed(Option<i32>),
    /// Neither within the wait limit.
    TimedOut,
}

/// What a runner says about a task of its part that failed (SCHED-8), as a remote record.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct FailedThere {
    pub part: u32,
    pub exit_code: Option<i32>,
    /// When, milliseconds since the epoch: a record older than the run that reads it (a
    /// failure before a re-run) is not believed.
    pub at_ms: i64,
}

/// The remote key of the record that says the task with `key` failed on its runner.
pub fn failed_key(key: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"vx shard failure 1\0");
    hasher.update(key.as_bytes());
    hasher.finalize().to_hex().to_string()
}

/// Tasks of other parts: those waited for, and what became of them.
#[derive(Default)]
pub(crate) struct Parts {
    /// Each with how long it may wait.
    pub waiting: std::collections::BTreeMap<usize, (Pending, Duration)>,
    /// Restored after waiting for their runner's upload.
    pub arrived: usize,
    /// Run here: not uploaded within the wait limit, or not worth waiting for.
    pub ran_here: Vec<String>,
    /// Failed here because their runner said they failed there.
    pub failed_there: Vec<String>,
    /// Failures of this part's tasks being told to the other runners.
    pub telling: Vec<std::thread::JoinHandle<()>>,
    /// The split record could not be read again at the end: this part certifies no green run.
    pub unverified: bool,
}
