//! One task that has a process: everything the loop keeps while it runs (its handle and route,
//! the log as shown and as stored, maskers, the readiness wait, the attempt and its retries, the
//! sandbox), and what tells a kept server's process from one that would be started now.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use vx_core::mask::Masker;
use vx_core::TaskId;
use vx_exec::sandbox::{violations, RealFiles, View, Violation};
use vx_exec::trace::{Access, AccessKind};
use vx_exec::{Attempt, RunningTask};
use vx_store::log::LogBuf;

use super::last_line::LastLine;
use super::msg::Route;
use super::ready::Waiting;
use super::stripper::Stripper;
use crate::host::proxy::TaskProxy;
use crate::host::sandbox::{Host, Linked, Unavailable};
use crate::outcome::{AttemptSpan, CacheKind, Notice};
use crate::plan::nodes::Kind;

/// A task that has a process.
pub(super) struct Live {
    pub(super) handle: Box<dyn RunningTask>,
    /// Where its events go (a persistent task's move to `vx watch` between cycles).
    pub(super) route: Route,
    /// For a persistent task in a cycle of `vx watch`: what its process was started as.
    pub(super) identity: Option<Identity>,
    pub(super) started: Instant,
    pub(super) kind: Kind,
    /// What the frame shows: both streams as printed, bounded like the stored log (STORE-6:
    /// the first and last 8 MiB, the cut named), while every byte still streams live.
    pub(super) display: LogBuf,
    /// The last byte shown, so notes start on a line of their own.
    pub(super) last_byte: Option<u8>,
    pub(super) maskers: [Masker; 2],
    pub(super) strippers: Option<[Stripper; 2]>,
    pub(super) command: String,
    pub(super) command_line: String,
    pub(super) dir: PathBuf,
    pub(super) path_var: String,
    /// Ready and not yet ended (persistent tasks only).
    pub(super) ready: bool,
    /// A persistent task waiting for its `ready-when` line: the matchers and the timers.
    pub(super) waiting: Option<Waiting>,
    /// The timeout expired (for a persistent task: the wait for readiness).
    pub(super) timed_out: bool,
    /// A server stopped before it was ready because no task needs it any more (EXEC-13).
    pub(super) unneeded: bool,
    /// The resolved timeout (EXEC-8 precedence), for the timeout note; for a persistent task
    /// it bounds the wait for readiness, which the loop times itself.
    pub(super) timeout: Option<Duration>,
    /// Output printed with an `<id> │ ` prefix after the footer (keep-alive).
    pub(super) prefix_at_line_start: bool,
    /// Its latest line, for its row in the live region (UI-6).
    pub(super) last_line: LastLine,
    /// The log as stored in an artifact: both streams and notes as records (STORE-6).
    pub(super) records: LogBuf,
    /// How a successful result is reported and whether it may be saved.
    pub(super) cache_kind: CacheKind,
    pub(super) writes: bool,
    pub(super) unsaved_reason: &'static str,
    pub(super) started_wall: SystemTime,
    /// What started the attempt, for the next one (EXEC-15).
    pub(super) job: Attempt,
    /// This attempt's number (from 1) and how many the task may make.
    pub(super) attempt: u32,
    pub(super) attempts: u32,
    /// The durations of earlier attempts: a task's duration is their sum.
    pub(super) earlier: Duration,
    /// When this attempt started, and the spans of the earlier ones (UI-15).
    pub(super) attempt_started: Instant,
    pub(super) spans: Vec<AttemptSpan>,
    /// A sandboxed task's view, `TMPDIR` and reported accesses (SBX-7).
    pub(super) sandbox: Option<LiveSandbox>,
    /// The remote result was served from the server's action cache (REM-13).
    pub(super) remote_cached: bool,
}

impl Live {
    /// The attempt runs on the remote executor (REM-11).
    pub(super) fn remote(&self) -> bool {
        self.job.remote.is_some()
    }
}

/// What tells a persistent task's process from one that would be started now: its task's
/// configuration, the script it runs and where.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Identity(blake3::Hash);

impl Identity {
    pub(super) fn of(config: &vx_core::config::TaskConfig, script: &str, dir: &str) -> Identity {
        let mut hasher = blake3::Hasher::new();
        let config = serde_json::to_string(config).unwrap_or_default();
        for part in [config.as_str(), script, dir] {
            hasher.update(&(part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        Identity(hasher.finalize())
    }
}

/// A live task's sandbox.
pub(super) struct LiveSandbox {
    pub(super) view: View,
    /// This attempt's `TMPDIR`, removed when the attempt ends and created again for the next.
    pub(super) tmpdir: PathBuf,
    /// What init reported, each once.
    pub(super) accesses: Vec<Access>,
    /// Violations already shown (persistent tasks warn as they happen, SBX-8).
    pub(super) warned: BTreeSet<Violation>,
    /// The task's way out (SBX-6), and the `host:port` it refused.
    pub(super) _proxy: TaskProxy,
    pub(super) refused: BTreeSet<String>,
    /// Workspace packages linked in `node_modules` that a cached task's key does not fold,
    /// so it may not read them (SBX-3).
    pub(super) unkeyed: Vec<Linked>,
    /// The scratch directory its `TMPDIR` and proxy socket are in, kept while it runs.
    pub(super) _scratch: std::sync::Arc<tempfile::TempDir>,
}

impl LiveSandbox {
    /// A persistent task's access that breaks its sandbox is a warning now, once (SBX-8).
    pub(super) fn warn_access(&mut self, id: &TaskId, access: Access) -> Vec<Notice> {
        let found = violations(&self.view, &[access], &RealFiles);
        let mut notices = Vec::new();
        for violation in found {
            if self.warned.insert(violation.clone()) {
                notices.push(Notice::warning(format!(
                    "{id}: sandbox violation: {} {}{} (a persistent task is not stopped for it)",
                    word(violation.kind),
                    violation.path,
                    violation
                        .via
                        .as_ref()
                        .map(|via| format!(" (via {via})"))
                        .unwrap_or_default()
                )));
            }
        }
        notices
    }

    /// A persistent task's refused request is a warning now, once per `host:port` (SBX-8).
    pub(super) fn warn_refused(&mut self, id: &TaskId, target: String) -> Option<Notice> {
        self.refused.insert(target.clone()).then(|| {
            Notice::warning(format!(
                "{id}: sandbox violation: net {target} (a persistent task is not stopped for it)"
            ))
        })
    }

    /// The attempt ended: its `TMPDIR` goes.
    pub(super) fn ended(&mut self) {
        let _ = std::fs::remove_dir_all(&self.tmpdir);
    }
}

/// The verdict on a sandboxed attempt.
pub(super) enum Verdict {
    /// Nothing to say: the task's own exit decides.
    Clean,
    /// The task broke its sandbox (SBX-7) this many times: it fails with at least exit 1.
    Violations(u64),
    /// bubblewrap ended without init's report: the task never ran as asked.
    NoReport,
}

/// Held by the run: the host, probed once (SBX-1).
pub(super) type SandboxHost = Option<Result<Host, Unavailable>>;

pub(super) fn word(kind: AccessKind) -> &'static str {
    match kind {
        AccessKind::Read => "read",
        AccessKind::Write => "write",
        AccessKind::Net => "net",
    }
}
