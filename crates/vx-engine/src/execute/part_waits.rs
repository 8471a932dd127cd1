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

/// Tasks of other parts: those waited for, and what became of them.
#[derive(Default)]
pub(crate) struct Parts {
    /// Each with how long it may wait.
    pub waiting: std::collections::BTreeMap<usize, (Pending, Duration)>,
    /// Restored after waiting for their runner's upload.
    pub arrived: usize,
    /// Run here: not uploaded within the wait limit, or not worth waiting for.
    pub ran_here: Vec<String>,
}
