//! Saving a result (STORE-7) behind the save guard (KEY-16), and queueing its uploads (REM-8).
//!
//! [`RunCache::after`] lists again what an executed task could have written (KEY-15), then
//! decides: a failed, tainted, withheld or non-writing result is not saved; one whose folded
//! inputs moved while it ran is kept but not saved, and withheld (so nothing folding it is
//! saved either); otherwise a [`SaveJob`] is prepared for the save lane, which packs it off the
//! run loop. [`RunCache::complete_save`] publishes the packed artifact with its output stamps in
//! one transaction and queues it for the further layers that write. [`Guard`] owns what the
//! guard remembers across tasks.

use std::collections::{BTreeMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use vx_core::key::Component;
use vx_core::TaskId;
use vx_store::artifact::{self, ArtifactMeta, ExecMeta, OutputFile, Producer};
use vx_store::index::Stamping;

use super::jobs::{After, Done, SaveJob};
use super::outputs::{plain, stamp, Outputs};
use super::stamps::with_marker;
use super::RunCache;
use crate::keys::Derived;
use crate::outcome::Notice;
use crate::plan::nodes::Row;

/// A folded path that moved while a task ran (KEY-16).
struct Moved {
    path: String,
    fingerprint: bool,
    /// Touched, with the bytes the key folded: undone, or rewritten by the task itself.
    same_bytes: bool,
}

enum SaveError {
    TooLarge(String),
    Refused(String),
    Failed(String),
}

impl RunCache<'_> {
    /// After a task that executed: refresh the listing for what it could have written
    /// (KEY-15), then, for a successful cached task that writes, apply the save guard and
    /// prepare the save (STORE-7).
    pub fn after(&mut self, done: Done<'_>) -> After {
        let id = done.task.id;
        // A run that executed a task writes no snapshot: what keys folded is no longer kept.
        self.keys.folded = None;
        let mut fingerprint = None;
        let save = self.after_inner(&done, &mut fingerprint);
        // KEY-9: a success nothing will save is folded by its key.
        if done.success && save.is_err() {
            self.keys.settle_produced(id, None);
            self.executed(id, None);
        }
        // A success is final (only failures are retried): what its key was derived from has
        // served the save guard and the fingerprints.
        if done.success {
            self.keys.keep_key_only(id);
        }
        // Withheld (KEY-16): a result that is not trustworthy, so nothing folding its key may be
        // saved either. A task that merely does not write (uncached, read-only policy, a failed
        // save) is not withheld: its outputs are what its key says.
        if matches!(
            save,
            Err("inputs-changed" | "tainted" | "excluded-dependency")
        ) {
            self.guard.withhold(id);
        }
        After {
            save: save.map(Box::new),
            fingerprint,
        }
    }

    /// The end of a save whose packing ran on the save lane: publish the artifact in the index,
    /// record the output stamps (STORE-7 steps 3 and 4) and queue the uploads (REM-8). Returns
    /// whether it was saved, or the HIST-1 reason it was not.
    pub fn complete_save(
        &mut self,
        job: Box<SaveJob>,
        packed: Result<artifact::Packed, artifact::PackError>,
    ) -> Result<(), &'static str> {
        let id = job.id.clone();
        let key = job.key.clone();
        let duration_ms = job.meta.exec.duration_ms;
        let produced = packed.as_ref().ok().and_then(|p| p.meta.produced.clone());
        // REM-8: with local writes off the artifact only goes to the further layers, from
        // `tmp/`, and is deleted after its uploads.
        let published = if self.policy.local_write {
            self.publish(*job, packed)
                .map(|()| self.layers.upload(&key, duration_ms))
        } else {
            self.checked(&job, packed)
                .map(|packed| self.layers.upload_packed(&key, packed.path, duration_ms))
        };
        // KEY-9: dependants fold what was saved; without an entry, the key.
        let saved = published.is_ok();
        self.uploaded |= saved && self.layers.writes_remotely();
        let produced = produced.filter(|_| saved);
        self.keys.settle_produced(&id, produced.as_deref());
        self.executed(&id, produced.as_deref());
        match published {
            Ok(()) => Ok(()),
            Err(SaveError::TooLarge(reason)) => {
                self.say(Notice::warning(format!("{id}: not cached: {reason}")));
                Err("too-large")
            }
            Err(SaveError::Refused(reason)) => {
                self.say(Notice::note(format!("{id}: not cached: {reason}")));
                Err("save-failed")
            }
            Err(SaveError::Failed(reason)) => {
                self.say(Notice::note(format!(
                    "{id}: could not save to the cache: {reason}"
                )));
                Err("save-failed")
            }
        }
    }

    /// `fingerprint` is set to the key's components when the task has a key.
    fn after_inner(
        &mut self,
        done: &Done<'_>,
        fingerprint: &mut Option<(String, Vec<Component>)>,
    ) -> Result<SaveJob, &'static str> {
        let id = done.task.id;
        let outputs = self.outputs(done.task);
        // KEY-15: an uncached task could have written anything in its project; a cached one
        // its declared outputs. The save guard (KEY-16) also needs the project listed again,
        // to see an input file that appeared while a cached task ran.
        let dir = self.workspace.project(&id.project).map(|p| p.dir.clone());
        if let Some(outputs) = &outputs {
            self.refresh_outputs(outputs);
        }
        self.keys.changed(&[dir.unwrap_or_default()]);
        self.keys.settle();
        let Some(derived) = self.keys.known(id).cloned() else {
            return Err("failed");
        };
        let mut components = derived.inputs.components(&self.layers.salt());
        let project_dir = self.workspace.project(&id.project).map(|p| p.dir.as_str());
        components.extend(
            self.keys
                .lockfiles
                .components(&derived.inputs.workspace, project_dir.unwrap_or("")),
        );
        *fingerprint = Some((derived.key.hex(), components));
        let Some(outputs) = outputs else {
            return Err("uncached");
        };
        let folds_withheld = self
            .keys
            .folded_upstreams(id)
            .iter()
            .any(|u| self.guard.withheld.contains(u));
        if !done.success {
            return Err("failed");
        }
        if !done.writes {
            return Err(done.unsaved_reason);
        }
        if folds_withheld {
            return Err("tainted");
        }
        if self.off {
            return Err("writes-off");
        }
        if let Some(moved) = self.moved_input(done.task, &derived, done.started) {
            if moved.fingerprint {
                self.say(Notice::note(format!(
                    "{} changed during the run; caching is off for the rest of this run",
                    moved.path
                )));
                self.off = true;
            } else if moved.same_bytes {
                self.say(Notice::note(format!(
                    "{id}: `{}` was rewritten while the task ran (it holds its old bytes again); result kept but not cached — a task that rewrites it itself is cached from its next run",
                    moved.path
                )));
            } else {
                self.say(Notice::note(format!(
                    "{id}: `{}` changed while the task ran; result kept but not cached",
                    moved.path
                )));
            }
            return Err("inputs-changed");
        }
        self.prepare_save(id, &outputs, &derived, done)
            .map_err(|error| {
                if let SaveError::Failed(reason) = error {
                    self.say(Notice::note(format!(
                        "{id}: could not save to the cache: {reason}"
                    )));
                }
                "save-failed"
            })
    }

    /// KEY-16: the first folded path that moved while the task ran, if any.
    fn moved_input(
        &mut self,
        task: Row<'_>,
        derived: &Derived,
        started: SystemTime,
    ) -> Option<Moved> {
        let granularity = Duration::from_secs(2);
        let taken = derived
            .taken_at
            .checked_sub(granularity)
            .unwrap_or(UNIX_EPOCH);
        let taken_ns = ns(taken);
        let started_ns = ns(started);
        let mut seen = std::collections::HashMap::new();
        // Inputs touched while the command ran that hold the bytes the key folded.
        let mut rewritten: Vec<String> = Vec::new();
        for folded in derived.workspace_stats.iter().chain(&derived.stats) {
            let moved = || Moved {
                path: folded.path.clone(),
                fingerprint: folded.fingerprint,
                same_bytes: false,
            };
            // Only a file or a symlink is present (KEY-11): a directory where a tracked file was
            // is as absent now as when the key was taken.
            let now = std::fs::symlink_metadata(self.workspace.root.join(&folded.path))
                .ok()
                .filter(|meta| meta.is_file() || meta.file_type().is_symlink())
                .filter(|_| !self.keys.tree.below_symlink_seen(&folded.path, &mut seen));
            match (&folded.stat, &now) {
                (None, None) => continue,
                (Some(_), None) | (None, Some(_)) => return Some(moved()),
                (Some(_), Some(meta)) => {
                    let ctime = meta.ctime() * 1_000_000_000 + meta.ctime_nsec();
                    // Touched while the command ran: moved when its bytes differ from those
                    // the key folded; with the same bytes, judged below (an edit undone, or
                    // the task regenerating its own input).
                    if !self.guard.ci && ctime >= started_ns {
                        if self.keys.fresh_identity(&folded.path).as_ref() != Some(&folded.identity)
                        {
                            return Some(moved());
                        }
                        rewritten.push(folded.path.clone());
                        continue;
                    }
                    if ctime >= taken_ns
                        && self.keys.fresh_identity(&folded.path).as_ref() != Some(&folded.identity)
                    {
                        return Some(moved());
                    }
                }
            }
        }
        if let Some(path) = self.rewritten_unexpectedly(task.id, rewritten) {
            return Some(Moved {
                path,
                fingerprint: false,
                same_bytes: true,
            });
        }
        // A new file matching the input globs (the listing was refreshed for the project).
        let paths: HashSet<&str> = derived
            .workspace_stats
            .iter()
            .chain(&derived.stats)
            .map(|f| f.path.as_str())
            .collect();
        let listed = self.keys.input_listing(task).ok()?;
        listed
            .into_iter()
            .find(|p| !paths.contains(p.as_str()))
            .map(|path| Moved {
                path,
                fingerprint: false,
                same_bytes: false,
            })
    }

    /// KEY-16: inputs the command's run touched that hold the bytes the key folded
    /// are either an edit undone while it ran (A→B→A: the command may have read B) or the task
    /// regenerating its own input (tsdown's `package.json` `exports`, every run). They are told
    /// apart by the task's previous checked execution: a rewrite it made too is the task's own;
    /// any other makes the result unsaved (the first such path is returned). What this run saw
    /// is recorded for the next (a run that rewrote nothing clears it).
    fn rewritten_unexpectedly(&mut self, id: &TaskId, rewritten: Vec<String>) -> Option<String> {
        let workspace = self.workspace.root.display().to_string();
        let task = id.to_string();
        let store = self.layers.store_mut()?;
        let records = self
            .guard
            .rewrites
            .get_or_insert_with(|| store.all_rewrites(&workspace).unwrap_or_default());
        let known = records.get(&task).cloned().unwrap_or_default();
        // Written only when it changes (most tasks never have a record).
        if known != rewritten {
            let _ = store.set_rewrites(&workspace, &task, &rewritten);
            records.insert(task, rewritten.clone());
        }
        rewritten.into_iter().find(|path| !known.contains(path))
    }

    /// STORE-7 step 1: what to pack. Packing itself runs on the save lane ([`SaveJob::pack`]).
    fn prepare_save(
        &mut self,
        id: &TaskId,
        outputs: &Outputs,
        derived: &Derived,
        done: &Done<'_>,
    ) -> Result<SaveJob, SaveError> {
        let root = self.workspace.root.clone();
        let mut listing = outputs
            .list(&root)
            .map_err(|e| SaveError::Failed(plain(&e)))?;
        if self.drop_setid_bits(id, &root, &listing.found) {
            listing = outputs
                .list(&root)
                .map_err(|e| SaveError::Failed(plain(&e)))?;
        }
        for path in &listing.skipped {
            self.say(Notice::note(format!(
                "{id}: `{path}` is not saved with the outputs: vx never saves or restores `.git`, `.vx`, the cache directory or a nested project"
            )));
        }
        let found = listing.found;
        if found.is_empty() {
            for glob in outputs.project.positives() {
                self.say(Notice::Unmatched {
                    task: id.clone(),
                    what: "cache.outputs",
                    glob: glob.clone(),
                });
            }
        }
        let files: Vec<OutputFile> = found
            .iter()
            .map(|f| OutputFile {
                name: outputs.entry_name(&f.path),
                path: root.join(&f.path),
                contain: root.clone(),
            })
            .collect();
        let key = derived.key.hex();
        let unread = files
            .iter()
            .filter(|file| outputs.unread(&file.name))
            .map(|file| file.name.clone())
            .collect();
        let meta = ArtifactMeta {
            format: artifact::FORMAT,
            key: key.clone(),
            task: id.to_string(),
            command: done.command_line.to_string(),
            files: BTreeMap::new(),
            links: BTreeMap::new(),
            unread,
            exec: ExecMeta {
                duration_ms: done.duration.as_millis() as u64,
                cpu_ms: done.cpu_ms,
                peak_rss_bytes: done.peak_rss_bytes,
            },
            producer: Producer {
                vx_version: env!("CARGO_PKG_VERSION").into(),
                os: std::env::consts::OS.into(),
                arch: std::env::consts::ARCH.into(),
                created_at: crate::clock::rfc3339_now(),
                commit: None,
            },
            produced: None,
        };
        let store = self
            .layers
            .store()
            .ok_or_else(|| SaveError::Failed("the cache is off".into()))?;
        Ok(SaveJob {
            id: id.clone(),
            key,
            tmp: store.dir().join("tmp"),
            log: done.log.to_vec(),
            meta,
            files,
            found: found.into_iter().map(|f| f.path).collect(),
            outputs_dir: outputs.dir.clone(),
            origin: done.origin,
        })
    }

    /// Outputs never carry the setuid or setgid bit: a task (run by root, say) that
    /// left one has it removed on disk before the save, and vx says so once. Returns whether
    /// anything changed.
    fn drop_setid_bits(
        &mut self,
        id: &TaskId,
        root: &std::path::Path,
        found: &[super::outputs::Found],
    ) -> bool {
        use std::os::unix::fs::PermissionsExt;
        let setid: Vec<&super::outputs::Found> = found
            .iter()
            .filter(|f| !f.meta.file_type().is_symlink() && artifact::is_setid(f.meta.mode()))
            .collect();
        let Some(first) = setid.first() else {
            return false;
        };
        for f in &setid {
            let mode = std::fs::Permissions::from_mode(f.meta.mode() & artifact::KEPT_MODE_BITS);
            // Never through a link: only the entry itself, which `list` saw not to be one.
            let _ = std::fs::set_permissions(root.join(&f.path), mode);
        }
        let others = match setid.len() {
            1 => String::new(),
            2 => " and 1 other".to_string(),
            n => format!(" and {} others", n - 1),
        };
        self.say(Notice::note(format!(
            "{id}: removed the setuid/setgid bits of `{}`{others}: outputs never carry them",
            first.path
        )));
        true
    }

    /// STORE-7 steps 3 and 4, once the save lane packed the artifact.
    fn publish(
        &mut self,
        job: SaveJob,
        packed: Result<artifact::Packed, artifact::PackError>,
    ) -> Result<(), SaveError> {
        let packed = self.checked(&job, packed)?;
        // The outputs as packed (the task has ended; nothing writes them now), recorded with
        // the entry in one transaction.
        let root = &self.workspace.root;
        let mut rows = Vec::new();
        for path in &job.found {
            if let Ok(meta) = std::fs::symlink_metadata(root.join(path)) {
                rows.push(stamp(path, &meta));
            }
        }
        let marked = with_marker(&rows);
        // Restores' stamps first: the rows below are newer than any of theirs.
        self.flush_stamps();
        let superseded = self.stamps.superseded(&job.id, &job.key);
        let stamping = Stamping {
            workspace: self.stamps.workspace_id(),
            rows: &marked,
            superseded: &superseded,
        };
        let Some(store) = self.layers.store_mut() else {
            let _ = std::fs::remove_file(&packed.path);
            return Err(SaveError::Failed("the cache is off".into()));
        };
        store
            .save_with_stamps(
                packed,
                &job.id.project,
                &job.id.task,
                Some(stamping),
                job.origin,
            )
            .map_err(|e| SaveError::Failed(e.to_string()))?;
        self.stamps.record(&job.id, &job.key, rows, &superseded);
        Ok(())
    }

    /// What the save lane packed, or why it is not saved; the packed file is removed when the
    /// cache was turned off meanwhile.
    fn checked(
        &self,
        job: &SaveJob,
        packed: Result<artifact::Packed, artifact::PackError>,
    ) -> Result<artifact::Packed, SaveError> {
        let shown = |name: &str| match name.strip_prefix("outputs/") {
            Some(rel) => crate::keys::join(&job.outputs_dir, rel),
            None => name
                .strip_prefix("workspace-outputs/")
                .unwrap_or(name)
                .to_string(),
        };
        let packed = packed.map_err(|e| match e {
            artifact::PackError::SymlinkLeaves { name } => SaveError::Refused(format!(
                "output `{}` is a symlink leaving the workspace",
                shown(&name)
            )),
            artifact::PackError::SymlinkIntoWall { name } => SaveError::Refused(format!(
                "output `{}` is a symlink into a `.git` or `.vx` directory",
                shown(&name)
            )),
            artifact::PackError::SymlinkUnchecked { name, text } => SaveError::Refused(format!(
                "output `{}` is a symlink whose target `{text}` vx cannot check (it climbs with `..` after descending, or is not UTF-8)",
                shown(&name)
            )),
            artifact::PackError::NotRegular { name } => SaveError::Refused(format!(
                "output `{}` is not a regular file, directory or symlink",
                shown(&name)
            )),
            artifact::PackError::TooLarge { size } => SaveError::TooLarge(format!(
                "its outputs are {} (the cap is 2.0 GiB)",
                vx_core::units::format_size(size)
            )),
            other => SaveError::Failed(other.to_string()),
        })?;
        if self.off {
            let _ = std::fs::remove_file(&packed.path);
            return Err(SaveError::Failed(
                "caching was turned off during the run".into(),
            ));
        }
        Ok(packed)
    }
}

fn ns(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}
