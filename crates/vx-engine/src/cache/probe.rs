//! The one lookup path (STORE-8, STORE-9, REM-5): a ready task's key, then what the cache holds
//! for it, then how a hit is served.
//!
//! [`RunCache::probe`] is shared by the run, the restore lane and `--dry`; they differ only in
//! what they [`Want`]: the key alone (a task the lane already missed), an existence check
//! (`--dry`, which reads no artifact), or the entry. [`RunCache::serve`] turns a hit into an
//! up-to-date decision (the outputs on disk are exactly what this checkout last wrote, so only
//! the log is read) or a [`RestoreJob`] once the cleaning protections allow it.

use std::time::Duration;

use vx_core::TaskId;
use vx_store::index::Lookup;
use vx_store::Source;

use super::decision::{Hit, Probe, Replay, Served, Want};
use super::jobs::RestoreJob;
use super::outputs::{stale_output, Found};
use super::restore::{damaged, decode_log};
use super::{CacheKind, Decision, RunCache};
use crate::plan::nodes::{Kind, Row};

impl RunCache<'_> {
    /// The task's key and what the cache holds for it. See the module documentation.
    pub(super) fn probe(&mut self, task: Row<'_>, want: Want) -> Probe {
        let (id, config) = (task.id, task.config);
        if task.kind == Kind::Persistent {
            return Probe::Persistent;
        }
        self.settle_unscheduled(id);
        let (key, short) = match self.keys.key(id) {
            None => return Probe::Persistent,
            Some(Err(error)) => return Probe::KeyFailed(error.0),
            Some(Ok(derived)) => (derived.key.hex(), derived.key.short()),
        };
        if want == Want::Existence {
            // `--dry` prints nothing but its table.
            self.keys.notices.clear();
        } else {
            self.flush_key_notices();
        }
        let Some(outputs) = self.outputs_of(id, config) else {
            return Probe::Uncached { key };
        };
        if want == Want::Key || !self.reads() {
            return Probe::Miss { key, outputs };
        }
        if want == Want::Existence {
            let exists = self.layers.exists(&key);
            self.show_layer_warnings();
            return match exists {
                Some(source) => Probe::Exists { key, source },
                None => Probe::Miss { key, outputs },
            };
        }
        if self.unheard_of(id) {
            self.layers.skip_remote(&key);
        }
        let accept = |name: &str| outputs.accepts(name);
        let looked = self.layers.lookup(&key, &accept);
        self.show_layer_warnings();
        match looked {
            Ok((Lookup::Hit(entry), source)) => Probe::Hit(Box::new(Hit {
                key,
                short,
                entry,
                source,
                outputs,
            })),
            Ok((Lookup::Damaged(damage), _)) => {
                self.say(damaged(id, &short, &damage.reason, true));
                Probe::Miss { key, outputs }
            }
            Ok((Lookup::Miss, _)) => Probe::Miss { key, outputs },
            Err(error) => {
                self.turn_off(&error.to_string());
                Probe::Miss { key, outputs }
            }
        }
    }

    /// KEY-9: the upstreams of `id` the run does not schedule whose outputs a key folds are
    /// settled from the local store: what their current key's entry produced, or their key
    /// when it holds none.
    pub(super) fn settle_unscheduled(&mut self, id: &TaskId) {
        while let Some((up, key)) = self.keys.unresolved(id) {
            let produced = self
                .layers
                .store()
                .and_then(|store| store.produced_of(&key.hex()).ok().flatten());
            self.keys.settle_produced(&up, produced.as_deref());
        }
    }

    /// A confirmed entry, with what its outputs' globs match on disk now: up-to-date, or a
    /// restore once the protections of STORE-10 allow cleaning.
    pub(super) fn serve(
        &mut self,
        id: &TaskId,
        hit: Box<Hit>,
        needs_log: bool,
        found: Vec<Found>,
    ) -> Served {
        let Hit {
            key,
            short,
            entry,
            source,
            outputs,
        } = *hit;
        let stored = Duration::from_millis(entry.duration_ms);
        let downloaded_in = match source {
            Source::Remote => self.layers.downloaded_in(&key).unwrap_or_default(),
            Source::Local => Duration::ZERO,
        };
        // KEY-9: dependants fold what this entry holds (the restore, if one follows, writes
        // exactly that).
        self.keys.settle_produced(id, entry.produced.as_deref());
        let mut reason = stale_output(&found, &entry.outputs, self.stamps.of(&key), &outputs);
        if reason.is_none() {
            let records = if needs_log {
                let Some(store) = self.layers.store() else {
                    return Served::Refused(format!("vx: {id}: the cache is off"));
                };
                // An unreadable log falls through to a full restore, which validates the whole
                // artifact.
                vx_store::artifact::read_log(&store.artifact_path(&key))
                    .ok()
                    .map(|log| decode_log(&log))
            } else {
                Some(Vec::new())
            };
            if let Some(records) = records {
                if let Some(store) = self.layers.store_mut() {
                    store.touch(&key);
                }
                self.keys.keep_key_only(id);
                // An entry the server just delivered is reported as the remote's, even when
                // there was nothing to write (a task without outputs).
                let (kind, restore_reason) = match source {
                    Source::Local => (CacheKind::UpToDate, None),
                    Source::Remote => (
                        CacheKind::RestoredRemote,
                        Some("the entry was not in the local store".to_string()),
                    ),
                };
                return Served::Decision(Decision::Hit(Replay {
                    kind,
                    records,
                    short_key: short,
                    stored,
                    restore_reason,
                    cost: downloaded_in,
                }));
            }
            reason = Some("its stored log could not be read".into());
        }
        if let Err(line) = self.check_clean(id, &outputs, &found) {
            return Served::Refused(line);
        }
        let Some(store) = self.layers.store() else {
            return Served::Refused(format!("vx: {id}: the cache is off"));
        };
        Served::Restore(Box::new(RestoreJob {
            id: id.clone(),
            path: store.artifact_path(&key),
            key,
            short,
            stored,
            source,
            root: self.workspace.root.clone(),
            outputs,
            found,
            reason: reason.unwrap_or_default(),
            downloaded_in,
            created: std::time::Instant::now(),
        }))
    }
}
