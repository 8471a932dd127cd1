//! A further cache layer in a run: the [`CacheLayer`] seam a remote protocol implements, its
//! failures (REM-7's kinds and classes), and its health — warned once per class, switched off
//! at once when it stalls or refuses the credentials, and after three other failures in a row.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// A cache that lives somewhere else (a Turborepo HTTP server, a REAPI server). Bodies are
/// artifacts in the local format; keys are vx keys (64 hex digits).
pub trait CacheLayer: Send + Sync {
    /// How messages name the layer: its URL without credentials or query.
    fn name(&self) -> &str;

    /// Whether the layer holds `key`, without reading the body (REM-9).
    fn contains(&self, key: &str) -> Result<bool, LayerError>;

    /// Writes the artifact of `key` into the new file `dest`, at most `cap` bytes (a longer
    /// body is [`ErrorKind::TooLarge`]). `Ok(false)` is a miss. On an error, `dest` may be left
    /// behind; the caller removes it.
    fn fetch(&self, key: &str, dest: &Path, cap: u64) -> Result<bool, LayerError>;

    /// Uploads the artifact file of `key`; `duration_ms` is how long the task ran.
    fn put(&self, key: &str, artifact: &Path, duration_ms: u64) -> Result<(), LayerError>;

    /// How the layer changed its own way of working during the run (fewer requests at once
    /// for a server at its limit), in words for a line at the end of the run; `None` when it
    /// did not.
    fn adapted(&self) -> Option<String> {
        None
    }
}

/// What a layer was asked to do, as the warnings name it (REM-7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Download,
    Exists,
    Upload,
}

impl Op {
    pub fn word(self) -> &'static str {
        match self {
            Op::Download => "download",
            Op::Exists => "existence check",
            Op::Upload => "upload",
        }
    }
}

/// REM-7's failure kinds. With the operation they make a failure class, reported once per run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Refused, reset, DNS or TLS: the server could not be talked to. Counts toward switching the
    /// layer off.
    Connection,
    /// No progress within a timeout. Counts toward switching the layer off.
    Timeout,
    /// 401/403, `UNAUTHENTICATED`, `PERMISSION_DENIED`: the warning adds a hint naming the token
    /// variable, and the layer stops doing what was refused (reads or writes) for the run.
    Unauthorized,
    /// A refusal of a request that carried no token (turborepo-remote-cache answers 400): the
    /// hint says to set the token variable. Treated as [`ErrorKind::Unauthorized`] otherwise.
    NoToken,
    /// Any other unexpected status.
    Status,
    /// A body that is not a valid artifact for its key (REM-5).
    InvalidArtifact,
    /// A body over the size cap.
    TooLarge,
    /// A body whose signature is missing or wrong (REM-16).
    BadSignature,
    /// A local file could not be read or written.
    Io,
    /// The server cannot hold vx entries at all (a REAPI server without SHA-256): the layer is
    /// switched off at once, with one warning.
    Unsupported,
}

impl ErrorKind {
    fn is_connection(self) -> bool {
        matches!(self, ErrorKind::Connection | ErrorKind::Timeout)
    }

    /// A failure that says something about the server rather than about one entry or this
    /// machine: three in a row switch the layer off.
    fn counts(self) -> bool {
        !matches!(
            self,
            ErrorKind::InvalidArtifact
                | ErrorKind::TooLarge
                | ErrorKind::Io
                | ErrorKind::Unsupported
        )
    }

    fn refused(self) -> bool {
        matches!(self, ErrorKind::Unauthorized | ErrorKind::NoToken)
    }
}

/// A failure of one layer operation. `detail` is shown in the warning; it never holds
/// credentials or a query string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct LayerError {
    pub kind: ErrorKind,
    pub detail: String,
}

impl LayerError {
    pub fn new(kind: ErrorKind, detail: impl Into<String>) -> LayerError {
        LayerError {
            kind,
            detail: detail.into(),
        }
    }
}

/// How a further layer is used in this run.
#[derive(Debug, Clone)]
pub struct RemoteUse {
    /// Lookups on a local miss (REM-5).
    pub read: bool,
    /// Uploads of saved results (REM-8).
    pub write: bool,
    /// The variable the token is read from, for the hint on an authorisation failure.
    pub token_env: String,
    /// The compressed size cap of one download.
    pub max_download: u64,
    /// Downloads in flight at once (the prefetch's width): network work, not CPU work.
    pub downloads: usize,
}

/// One warning for the renderer (REM-7), with its hint line when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub line: String,
    pub hint: Option<String>,
}

/// Consecutive failures after which a layer is switched off for the run.
const SWITCH_OFF_AFTER: u32 = 3;

/// A further layer's state in this run, shared with the upload threads.
#[derive(Default)]
pub(super) struct Health {
    pub(super) in_a_row: u32,
    /// Nothing more is asked of the layer in this run.
    pub(super) off: bool,
    /// Only downloads stopped, or only uploads (credentials may allow one and not the other).
    pub(super) reads_off: bool,
    pub(super) writes_off: bool,
    pub(super) warned: HashSet<(Op, ErrorKind)>,
    /// Failures whose class was already warned about, summarised at the end.
    pub(super) repeats: u64,
    pub(super) warnings: Vec<Warning>,
    /// Uploads made, failed, and not tried because the layer had been switched off.
    pub(super) uploads: UploadCounts,
}

/// What became of a run's uploads to one layer.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct UploadCounts {
    pub made: u64,
    pub failed: u64,
    pub skipped: u64,
    /// Still queued or in flight when the run stopped waiting for them.
    pub abandoned: u64,
}

#[derive(Clone)]
pub(super) struct Remote {
    pub(super) layer: Arc<dyn CacheLayer>,
    pub(super) usage: RemoteUse,
    pub(super) health: Arc<Mutex<Health>>,
}

impl Remote {
    pub(super) fn readable(&self) -> bool {
        let health = lock(&self.health);
        self.usage.read && !health.off && !health.reads_off
    }

    pub(super) fn writable(&self) -> bool {
        let health = lock(&self.health);
        self.usage.write && !health.off && !health.writes_off
    }

    pub(super) fn note(&self, op: Op, outcome: Result<(), &LayerError>) {
        note(
            &self.health,
            self.layer.name(),
            &self.usage.token_env,
            op,
            outcome,
        );
    }
}

pub(super) fn lock(health: &Mutex<Health>) -> std::sync::MutexGuard<'_, Health> {
    health
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Records the outcome of one operation on a layer: a success resets the failure count; a
/// failure is warned about once per class, and switches the layer off when it stalled (a timeout:
/// waiting for it again would cost the same), when it refused the credentials (for what was
/// refused), or when it is the third failure in a row.
pub(super) fn note(
    health: &Mutex<Health>,
    name: &str,
    token_env: &str,
    op: Op,
    outcome: Result<(), &LayerError>,
) {
    let mut health = lock(health);
    let error = match outcome {
        Ok(()) => {
            health.in_a_row = 0;
            return;
        }
        Err(error) => error,
    };
    if error.kind.counts() {
        health.in_a_row += 1;
    }
    if error.kind == ErrorKind::Unsupported {
        switch_off(
            &mut health,
            format!(
                "remote cache {name}: {}; continuing with the local cache only",
                error.detail
            ),
        );
        return;
    }
    if health.warned.insert((op, error.kind)) {
        let consequence = match op {
            Op::Upload => "not uploaded",
            Op::Download | Op::Exists => "treating as a miss",
        };
        let hint = match error.kind {
            ErrorKind::Unauthorized => Some(format!("check the token in ${token_env}")),
            ErrorKind::NoToken => Some(format!("no token was sent: set ${token_env}")),
            ErrorKind::BadSignature => Some(
                "the entry was signed with another key, or not signed: check that every machine uses the same signing key".to_string(),
            ),
            _ => None,
        };
        health.warnings.push(Warning {
            line: format!(
                "remote cache: {} failed ({}) at {name}; {consequence}",
                op.word(),
                error.detail
            ),
            hint,
        });
    } else {
        health.repeats += 1;
    }
    if health.off {
        return;
    }
    if error.kind == ErrorKind::Timeout {
        switch_off(
            &mut health,
            format!("remote cache {name} stalled; it is not asked again in this run, continuing with the local cache only"),
        );
    } else if error.kind.refused() {
        // What the credentials may not do is not tried again; the rest goes on.
        let (stopped, what) = match op {
            Op::Upload => (&mut health.writes_off, "uploads"),
            Op::Download | Op::Exists => (&mut health.reads_off, "downloads"),
        };
        if !*stopped {
            *stopped = true;
            health.warnings.push(Warning {
                line: format!(
                    "remote cache {name} refused the credentials; no further {what} are tried in this run"
                ),
                hint: None,
            });
        }
    } else if health.in_a_row >= SWITCH_OFF_AFTER {
        let line = if error.kind.is_connection() {
            "remote cache unreachable; continuing with the local cache only".to_string()
        } else {
            format!("remote cache {name} failed {SWITCH_OFF_AFTER} times in a row; it is not asked again in this run, continuing with the local cache only")
        };
        switch_off(&mut health, line);
    }
}

fn switch_off(health: &mut Health, line: String) {
    if !health.off {
        health.off = true;
        health.warnings.push(Warning { line, hint: None });
    }
}
