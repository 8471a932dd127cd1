//! What the lanes carry off the run loop: a [`RestoreJob`] (its outputs cleaned and the entry
//! written back), a [`SaveJob`] (packed and read back), and what a finished attempt tells the
//! cache ([`Done`]) and is told ([`After`]).

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use vx_core::key::Component;
use vx_core::TaskId;
use vx_store::artifact::{self, ArtifactMeta, OutputFile, Target};
use vx_store::Source;

use super::cleaner::{remove, CleanError};
use super::outputs::{Found, Outputs};
use crate::keys::is_under;
use crate::plan::nodes::Row;

pub struct RestoreJob {
    pub(super) id: TaskId,
    pub(super) key: String,
    pub(super) short: String,
    pub(super) stored: Duration,
    /// Where the entry came from: the local store, or a further layer during this run.
    pub(super) source: Source,
    pub(super) path: PathBuf,
    pub(super) root: PathBuf,
    pub(super) outputs: Outputs,
    pub(super) found: Vec<Found>,
    /// Why the outputs on disk were not the entry's (a remote entry: not in the local store).
    pub(super) reason: String,
    /// Its download's time in this run (zero for a local entry), and when the job was made:
    /// together, what the restore cost.
    pub(super) downloaded_in: Duration,
    pub(super) created: std::time::Instant,
}

impl RestoreJob {
    /// STORE-10: clean (the protections were checked on the loop), then validate and stage
    /// the archive, then commit.
    pub fn run(&self) -> Result<artifact::Restored, artifact::RestoreError> {
        remove(&self.outputs, &self.root, &self.found).map_err(|error| match error {
            CleanError::Remove { path, source } => artifact::RestoreError::Io {
                path: self.root.join(path),
                source,
            },
        })?;
        let outputs = &self.outputs;
        let root = &self.root;
        let accept = |name: &str| outputs.accepts(name);
        let target = |name: &str| {
            let rel = outputs.path_of(name).unwrap_or_default();
            Target {
                path: root.join(&rel),
                contain: if is_under(&rel, &outputs.dir) {
                    root.join(&outputs.dir)
                } else {
                    root.clone()
                },
                root: root.clone(),
            }
        };
        artifact::restore(&self.path, &self.key, &accept, artifact::SIZE_CAP, &target)
    }
}

/// What `after` needs to know about a finished attempt.
pub struct Done<'a> {
    pub task: Row<'a>,
    pub success: bool,
    pub writes: bool,
    /// Why `writes` is false (HIST-1 `unsaved_reason`).
    pub unsaved_reason: &'static str,
    pub started: SystemTime,
    pub duration: Duration,
    pub command_line: &'a str,
    /// The encoded log (STORE-6).
    pub log: &'a [u8],
    pub cpu_ms: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
    /// The saved entry's origin: `local`, or `remote-exec` (REM-14).
    pub origin: &'static str,
}

/// What `after` decided for a finished task.
pub struct After {
    /// Pack this on the save lane, then [`RunCache::complete_save`]; or why nothing is saved
    /// (HIST-1 `unsaved_reason`).
    pub save: Result<Box<SaveJob>, &'static str>,
    /// The key and what it folds, for `vx why` (HIST-2); `None` without a key.
    pub fingerprint: Option<(String, Vec<Component>)>,
}

/// One save, packed off the run loop (STORE-7: the save lane). Owns everything packing needs.
pub struct SaveJob {
    pub(super) id: TaskId,
    pub(super) key: String,
    pub(super) tmp: PathBuf,
    pub(super) log: Vec<u8>,
    pub(super) meta: ArtifactMeta,
    pub(super) files: Vec<OutputFile>,
    /// The root-relative output paths packed, for the stamps recorded after.
    pub(super) found: Vec<String>,
    pub(super) outputs_dir: String,
    pub(super) origin: &'static str,
}

impl SaveJob {
    /// STORE-7 step 2: pack into `tmp/` and read the result back as a restore would.
    pub fn pack(&self) -> Result<artifact::Packed, artifact::PackError> {
        artifact::pack(
            &self.tmp,
            &self.log,
            self.meta.clone(),
            &self.files,
            artifact::SIZE_CAP,
        )
    }
}
