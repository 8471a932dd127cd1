//! What the cache decides for a ready task ([`Decision`]), what the restore lane can do ahead
//! ([`Ahead`]), and what a probe found on the way there ([`Probe`], [`Served`], [`Restore`]).

use std::time::Duration;

use vx_store::index::Entry;
use vx_store::log::LogRecord;
use vx_store::Source;

use super::jobs::RestoreJob;
use super::outputs::Outputs;
use crate::outcome::CacheKind;

/// A hit as the loop reports it: its log replayed through the same path as live output.
pub struct Replay {
    pub kind: CacheKind,
    pub records: Vec<LogRecord>,
    pub short_key: String,
    /// How long the task took when it executed.
    pub stored: Duration,
    /// A restored hit: why its outputs were not up to date (`vx why`).
    pub restore_reason: Option<String>,
    /// What serving it cost: its download (from a further layer, in this run) and writing
    /// its outputs back; zero for outputs already in place.
    pub cost: Duration,
}

/// What to do with a task that is ready.
pub enum Decision {
    /// Served from the cache: replay this log.
    Hit(Replay),
    /// Run it; `writes` says whether a successful result may be saved.
    Execute { cached: bool, writes: bool },
    /// The key could not be derived, or the outputs could not be cleaned: the task fails
    /// with this line before running.
    Fail(String),
}

/// What the restore lane can do for a task (SCHED-3).
pub enum Ahead {
    /// Served at once (up-to-date).
    Served(Decision),
    /// Its outputs must be written back: a job for the lane's threads.
    Restore(Box<RestoreJob>),
    /// Left to the normal schedule.
    Not,
}

/// What a caller needs from the cache.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Want {
    /// The key and the outputs: the task is known to miss.
    Key,
    /// Whether an entry exists, without reading it (`--dry`, REM-9).
    Existence,
    /// The entry itself, looked up (and downloaded from a further layer on a local miss).
    Entry,
}

/// What the cache holds for a ready task.
pub(super) enum Probe {
    /// A persistent task: no key, never cached (KEY-9).
    Persistent,
    /// The key could not be derived: the task fails with this text.
    KeyFailed(String),
    /// Not a cached task (no `cache` table).
    Uncached { key: String },
    /// No usable entry (or lookups are off).
    Miss { key: String, outputs: Outputs },
    /// `--dry`: an entry exists, locally or in a further layer (REM-9).
    Exists { key: String, source: Source },
    /// A confirmed entry.
    Hit(Box<Hit>),
}

pub(super) struct Hit {
    pub key: String,
    pub short: String,
    pub entry: Entry,
    pub source: Source,
    pub outputs: Outputs,
}

/// How a hit is served.
pub(super) enum Served {
    /// Up to date: the decision is final.
    Decision(Decision),
    /// Its outputs must be written back (the protections allowed cleaning).
    Restore(Box<RestoreJob>),
    /// Cleaning is refused (STORE-10): the task fails with this line when it runs.
    Refused(String),
}

/// How a restore ended.
pub(super) enum Restore {
    Served(Decision),
    /// No usable entry after all: the task runs.
    Miss,
    /// The task fails with this line.
    Failed(String),
}
