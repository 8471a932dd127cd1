//! One task that has a process: everything the loop keeps while it runs (its handle and route,
//! the log as shown and as stored, maskers, the readiness wait, the attempt and its retries, the
//! sandbox), and what tells a kept server's process from one that would be started now.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use vx_core::TaskId;
use vx_exec::sandbox::{violations, RealFiles, View, Violation};
use vx_exec::trace::{Access, AccessKind};
use vx_exec::{Attempt, RunningTask};

use super::explain::Shell;
use super::msg::Route;
use super::output::TaskOutput;
use super::ready::Waiting;
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
    /// What it printed, masked, stored and shown.
    pub(super) output: TaskOutput,
    /// The command line shown and stored (masked, with its arguments).
    pub(super) command_line: String,
    /// What a failure is explained from.
    pub(super) shell: Shell,
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
    /// How a successful result is reported and whether it may be saved.
    pub(super) saving: Saving,
    /// Its attempts: the one running, what starts the next, and the earlier ones' time.
    pub(super) tries: Tries,
    /// A sandboxed task's view, `TMPDIR` and reported accesses (SBX-7).
    pub(super) sandbox: Option<LiveSandbox>,
}

/// How a live task's result is reported and whether it may be saved.
pub(super) struct Saving {
    /// What the cache decided before it ran (a miss, or a bypass).
    pub(super) kind: CacheKind,
    /// Whether its successful result is saved, and the recorded reason when it is not.
    pub(super) writes: bool,
    pub(super) unsaved_reason: &'static str,
    /// The remote result was served from the server's action cache (REM-13).
    pub(super) remote_cached: bool,
}

impl Saving {
    /// How the result is reported.
    pub(super) fn reported(&self) -> CacheKind {
        if self.remote_cached {
            CacheKind::RestoredRemote
        } else {
            self.kind
        }
    }

    /// REM-14: its outputs stayed on the server, so no local entry is written.
    pub(super) fn kept_remotely(&mut self) {
        self.writes = false;
        self.unsaved_reason = "not-downloaded";
    }
}

impl Live {
    /// The attempt runs on the remote executor (REM-11).
    pub(super) fn remote(&self) -> bool {
        self.tries.job.remote.is_some()
    }
}

/// A task's attempts (EXEC-15): a failed one-shot task may make another, started from the same
/// [`Attempt`]; its duration is the sum of theirs, and each is a span on the timeline (UI-15).
pub(super) struct Tries {
    /// What started the attempt, for the next one.
    pub(super) job: Attempt,
    /// This attempt's number (from 1) and how many the task may make.
    pub(super) made: u32,
    allowed: u32,
    /// When this attempt started (the wall clock for the stored entry).
    pub(super) started: Instant,
    pub(super) started_wall: SystemTime,
    /// The durations of earlier attempts, and their spans.
    earlier: Duration,
    spans: Vec<AttemptSpan>,
}

impl Tries {
    pub(super) fn new(job: Attempt, allowed: u32, started: Instant) -> Tries {
        Tries {
            job,
            made: 1,
            allowed,
            started,
            started_wall: SystemTime::now(),
            earlier: Duration::ZERO,
            spans: Vec::new(),
        }
    }

    /// Another attempt may follow this one.
    pub(super) fn another_allowed(&self) -> bool {
        self.made < self.allowed
    }

    /// `attempt 2 of 3`: the next one's line.
    pub(super) fn next_of(&self) -> String {
        format!("attempt {} of {}", self.made + 1, self.allowed)
    }

    /// This attempt ended after `duration` with `exit_code`; the next starts now.
    pub(super) fn next(&mut self, run_started: Instant, duration: Duration, exit_code: i32) {
        self.spans = self.spans_ending(run_started, exit_code);
        self.earlier += duration;
        self.made += 1;
        self.started = Instant::now();
        self.started_wall = SystemTime::now();
    }

    /// Every attempt's span, this one ending now with `exit_code`.
    pub(super) fn spans_ending(&self, run_started: Instant, exit_code: i32) -> Vec<AttemptSpan> {
        let mut spans = self.spans.clone();
        spans.push(AttemptSpan {
            start: self.started.saturating_duration_since(run_started),
            end: run_started.elapsed(),
            exit_code: Some(exit_code),
        });
        spans
    }

    /// The task's duration when this attempt took `last`.
    pub(super) fn duration(&self, last: Duration) -> Duration {
        self.earlier + last
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
