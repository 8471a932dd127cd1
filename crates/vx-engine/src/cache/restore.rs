//! Restores (STORE-10, STORE-12): a [`RestoreJob`] cleans a hit's outputs and writes the entry
//! back, on the restore lane's threads or inline; [`RunCache::finish_restore`] records the
//! stamps of what it wrote and serves the hit, or turns damage into a miss with one line.

use vx_core::TaskId;
use vx_store::artifact::{self};
use vx_store::log::{LogRecord, LogStream};
use vx_store::Source;

use super::decision::{Replay, Restore};
use super::jobs::RestoreJob;
use super::outputs::{plain, stamp};
use super::stamps::with_marker;
use super::{CacheKind, Decision, RunCache};
use crate::outcome::Notice;

/// One restore: cleaning the outputs and writing the entry back, off the run loop. Owns
/// everything it needs.
impl RunCache<'_> {
    /// STORE-10 step 4 and STORE-12, after a restore ran: record the stamps of what was written
    /// and serve the hit; a damaged or vanished entry is discarded with one line and the task
    /// runs; anything else (a blocked target, a permission error) fails the task.
    pub(super) fn finish_restore(
        &mut self,
        job: RestoreJob,
        result: Result<artifact::Restored, artifact::RestoreError>,
    ) -> Restore {
        // Outputs were written (a cached task may own a file other keys fold): nothing read
        // ahead is used after this.
        self.keys.files_may_have_changed();
        self.found_ahead.clear();
        let RestoreJob {
            id,
            key,
            short,
            stored,
            source,
            root,
            outputs,
            reason,
            downloaded_in,
            created,
            ..
        } = job;
        self.refresh_outputs(&outputs);
        match result {
            Ok(restored) => {
                let setid = restored
                    .files
                    .iter()
                    .filter(|f| artifact::is_setid(f.meta.mode))
                    .count();
                if setid > 0 {
                    self.say(Notice::note(format!(
                        "{id}: the cache entry gave {setid} output{} the setuid/setgid bits; restored without them: outputs never carry them",
                        if setid == 1 { "" } else { "s" }
                    )));
                }
                let mut rows = Vec::new();
                for file in &restored.files {
                    let rel = file
                        .path
                        .strip_prefix(&root)
                        .map(|p| p.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    if let Ok(meta) = std::fs::symlink_metadata(&file.path) {
                        rows.push(stamp(&rel, &meta));
                    }
                }
                let superseded = self.stamps.superseded(&id, &key);
                if let Some(store) = self.layers.store_mut() {
                    store.touch(&key);
                }
                self.stamp_later(&key, with_marker(&rows), superseded.clone());
                self.stamps.record(&id, &key, rows, &superseded);
                // A run that restored a task writes no snapshot: what keys folded is not kept.
                self.keys.folded = None;
                self.keys.keep_key_only(&id);
                let kind = match source {
                    Source::Local => CacheKind::RestoredLocal,
                    Source::Remote => CacheKind::RestoredRemote,
                };
                let restore_reason = match source {
                    Source::Local => reason,
                    Source::Remote => "the entry was not in the local store".to_string(),
                };
                Restore::Served(Decision::Hit(Replay {
                    kind,
                    records: decode_log(&restored.log),
                    short_key: short,
                    stored,
                    restore_reason: Some(restore_reason),
                    cost: downloaded_in + created.elapsed(),
                }))
            }
            Err(artifact::RestoreError::Damaged(damage)) => {
                let writes = self.policy.local_write;
                if writes {
                    if let Some(store) = self.layers.store_mut() {
                        let _ = store.discard(&key);
                    }
                }
                self.say(damaged(&id, &short, &damage.reason, writes));
                Restore::Miss
            }
            Err(artifact::RestoreError::Vanished) => {
                if let Some(store) = self.layers.store_mut() {
                    let _ = store.discard(&key);
                }
                self.say(Notice::note(format!(
                    "{id}: cache entry {short} was removed by another process; running the task"
                )));
                Restore::Miss
            }
            Err(artifact::RestoreError::LinkLeaves { path, text }) => {
                // Not damage: an absolute link made in another checkout sharing this cache
                // directory. The entry stays for that checkout.
                let shown = path.strip_prefix(&root).unwrap_or(&path);
                self.say(Notice::note(format!(
                    "{id}: cache entry {short} cannot be restored here: its symlink `{}` would lead outside the workspace (to `{text}`); running the task",
                    shown.display()
                )));
                Restore::Miss
            }
            Err(other) => Restore::Failed(format!("vx: {id}: {}", restore_reason(&other))),
        }
    }
}

/// STORE-12's line for a damaged entry: `discarded` when it was deleted, `ignoring` when
/// local writes are off and it was kept.
pub(super) fn damaged(id: &TaskId, short: &str, reason: &str, discarded: bool) -> Notice {
    let verb = if discarded { "discarded" } else { "ignoring" };
    Notice::note(format!(
        "{id}: {verb} damaged cache entry {short} ({reason}); running the task"
    ))
}

/// A restore failure in the words of STORE-10 (the paths root-relative where possible).
fn restore_reason(error: &artifact::RestoreError) -> String {
    match error {
        artifact::RestoreError::Blocked { path } => {
            format!("`{}` stands where an output must go", path.display())
        }
        artifact::RestoreError::Unsafe { path } => format!(
            "refusing to write through `{}`: it is a symlink, and a restore never follows one",
            path.display()
        ),
        artifact::RestoreError::Io { path, source }
            if vx_store::fault::of_io(source) == vx_store::fault::Fault::Full =>
        {
            vx_store::fault::io_text(path, source)
        }
        artifact::RestoreError::Io { path, source } => {
            format!("`{}`: {}", path.display(), plain(source))
        }
        other => other.to_string(),
    }
}

/// The stored log's records; an unreadable log is one note saying so.
pub(super) fn decode_log(bytes: &[u8]) -> Vec<LogRecord> {
    vx_store::log::decode(bytes).unwrap_or_else(|_| {
        vec![LogRecord {
            stream: LogStream::Note,
            bytes: b"vx: the stored log could not be read\n".to_vec(),
        }]
    })
}
