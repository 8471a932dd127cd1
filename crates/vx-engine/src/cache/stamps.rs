//! Output stamps (STORE-9): what this checkout last wrote for each key, as `lstat` saw it.
//!
//! [`Stamps`] is loaded once when the store opens and kept up to date as the run saves and
//! restores: the up-to-date check compares a task's outputs on disk with its key's stamps, and
//! cleaning exempts files whose `lstat` equals a stamp (vx wrote them; STORE-10). A checkout
//! holds one key's stamps per task: recording a task's new stamps drops its other keys'.

use std::collections::HashMap;

use vx_core::TaskId;
use vx_store::index::{KeysByTask, OutputStamp};

/// A workspace's `output_stamps` as a run reads them when it opens the store.
#[derive(Default)]
pub struct WorkspaceStamps {
    /// The rows by key, the completion marker left out.
    pub by_key: HashMap<String, Vec<OutputStamp>>,
    /// The keys by (project, task); more than one for a task are stamps its later outputs
    /// replaced (deleted when the task's stamps are next recorded).
    pub keys_by_task: KeysByTask,
}

/// The run's copy of the workspace's stamps. See the module documentation.
pub struct Stamps {
    /// STORE-2: this checkout's identity, which the stamps rows are recorded under.
    workspace_id: String,
    by_key: HashMap<String, Vec<OutputStamp>>,
    /// The keys of `by_key` by (project, task).
    keys_by_task: KeysByTask,
    /// `by_key` indexed by path, for the cleaning exemption; built on first need and kept up
    /// to date as stamps are recorded.
    by_path: Option<HashMap<String, Vec<OutputStamp>>>,
}

impl Stamps {
    pub fn new(read: WorkspaceStamps, workspace_id: String) -> Stamps {
        Stamps {
            workspace_id,
            by_key: read.by_key,
            keys_by_task: read.keys_by_task,
            by_path: None,
        }
    }

    pub fn workspace_id(&self) -> &str {
        &self.workspace_id
    }

    /// The stamps recorded for an entry (none when it has no row).
    pub fn of(&self, key: &str) -> &[OutputStamp] {
        self.by_key.get(key).map_or(&[], Vec::as_slice)
    }

    /// Whether `now` (a file's stamp as `lstat` sees it) is one vx recorded in this workspace.
    pub fn written_by_vx(&mut self, now: &OutputStamp) -> bool {
        let by_key = &self.by_key;
        let by_path = self.by_path.get_or_insert_with(|| {
            let mut by_path: HashMap<String, Vec<OutputStamp>> = HashMap::new();
            for stamp in by_key.values().flatten() {
                by_path
                    .entry(stamp.path.clone())
                    .or_default()
                    .push(stamp.clone());
            }
            by_path
        });
        by_path
            .get(&now.path)
            .is_some_and(|rows| rows.contains(now))
    }

    /// The other keys of task `id` whose stamps this workspace holds: recording `key`'s
    /// replaces them.
    pub fn superseded(&self, id: &TaskId, key: &str) -> Vec<String> {
        let task = (id.project.clone(), id.task.clone());
        self.keys_by_task
            .get(&task)
            .map(|keys| keys.iter().filter(|k| *k != key).cloned().collect())
            .unwrap_or_default()
    }

    /// The stamps just written for `key` of task `id`, in place of the superseded keys'.
    pub fn record(
        &mut self,
        id: &TaskId,
        key: &str,
        rows: Vec<OutputStamp>,
        superseded: &[String],
    ) {
        for old in superseded {
            let Some(gone) = self.by_key.remove(old) else {
                continue;
            };
            if let Some(by_path) = &mut self.by_path {
                for row in &gone {
                    if let Some(list) = by_path.get_mut(&row.path) {
                        list.retain(|r| r != row);
                    }
                }
            }
        }
        if let Some(by_path) = &mut self.by_path {
            for row in &rows {
                by_path
                    .entry(row.path.clone())
                    .or_default()
                    .push(row.clone());
            }
        }
        self.by_key.insert(key.to_string(), rows);
        self.keys_by_task
            .insert((id.project.clone(), id.task.clone()), vec![key.to_string()]);
    }
}

/// The stamps to record for an entry: its files' stamps, or, for an entry without files, one
/// row with an empty path, so that every entry this checkout saved or restored has a row and
/// `Store::preload` reads it ahead. The marker is dropped again when stamps are loaded.
pub fn with_marker(rows: &[OutputStamp]) -> Vec<OutputStamp> {
    if rows.is_empty() {
        vec![OutputStamp {
            path: String::new(),
            size: 0,
            mode: 0,
            mtime_ns: 0,
            inode: 0,
            ctime_ns: 0,
        }]
    } else {
        rows.to_vec()
    }
}
