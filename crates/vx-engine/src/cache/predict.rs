//! KEY-9 ahead of time, the cache's side: the restore lane downloads the entries of tasks whose
//! keys wait for upstreams under the keys the outputs record predicts (`keys/hints.rs`), and a
//! run that writes to the remote cache writes its branch's record at its end
//! (`produced.rs`).

use std::sync::Arc;
use std::thread::JoinHandle;

use vx_store::layer::Wanted;

use vx_core::TaskId;

use super::RunCache;
use crate::plan::nodes::Row;

impl RunCache<'_> {
    /// Adds the download of `task`'s entry under its key (derived now) to `wanted`, tagged `at`.
    pub(super) fn want(&mut self, task: Row<'_>, at: usize, wanted: &mut Vec<Wanted>) {
        let Some(outputs) = self.outputs(task) else {
            return;
        };
        if self.unheard_of(task.id) {
            return;
        }
        if let Some(Ok(derived)) = self.keys.key(task.id) {
            let outputs = Arc::new(outputs);
            wanted.push(Wanted {
                key: derived.key.hex(),
                accept: Arc::new(move |name: &str| outputs.accepts(name)),
                tag: at,
            });
        }
    }

    /// The tasks at `waiting` (positions in `tasks`) wait for upstreams: those whose upstreams
    /// the outputs record names are keyed from it, upstreams first, for downloads. `reading`:
    /// this batch downloads from the remote cache, so the record is read (once per run) and
    /// waited for; otherwise it is used only if it has arrived.
    pub(super) fn want_predicted(
        &mut self,
        tasks: &[Row<'_>],
        mut waiting: Vec<usize>,
        reading: bool,
    ) -> Vec<Wanted> {
        let mut wanted = Vec::new();
        if waiting.is_empty() {
            return wanted;
        }
        if reading {
            self.start_outputs_records();
        }
        match self.record.take_facts(reading) {
            Some(facts) => self.keys.add_hints(facts),
            None if !self.keys.has_hints() => return wanted,
            None => {}
        }
        // Passes until none is keyed: a batch out of graph order keys its upstreams first.
        loop {
            let before = waiting.len();
            let mut left = Vec::new();
            for at in waiting {
                let task = tasks[at];
                if self.outputs(task).is_none() {
                    continue;
                }
                self.settle_unscheduled(task.id);
                if self.keys.predictable(task.id) {
                    self.want(task, at, &mut wanted);
                } else {
                    left.push(at);
                }
            }
            waiting = left;
            if waiting.is_empty() || waiting.len() == before {
                break;
            }
        }
        wanted
    }

    /// `id` executed in this run: when outputs records were found and name no entry that
    /// produced what it did (or it was not saved, or its own key folded such a task), the keys
    /// folding it are new to every runner.
    pub(super) fn executed(&mut self, id: &TaskId, produced: Option<&str>) {
        if !self.keys.has_outputs(id) {
            return;
        }
        // What dependants fold for it is new when what it produced is, and when its own key
        // folded something new (the value folds its upstreams' too).
        let heard = match produced {
            Some(_) if self.unheard_of(id) => Some(false),
            Some(produced) => self.record.names_produced(produced),
            None => Some(false),
        };
        if heard == Some(false) && self.record.knows_runners() {
            self.unheard.insert(id.clone());
        }
    }

    /// Whether `id`'s key folds what an upstream produced that no runner has recorded
    /// ([`RunCache::executed`]): the remote cache cannot hold its entry, and is not asked.
    pub(super) fn unheard_of(&self, id: &TaskId) -> bool {
        !self.unheard.is_empty()
            && self
                .keys
                .cut_sources(id)
                .iter()
                .any(|up| self.unheard.contains(up))
    }

    /// The end of a run that uploaded results: its branch's outputs record, when this run
    /// settled facts it does not hold, on a thread [`RunCache::finish`] joins.
    pub(super) fn write_outputs_record(&mut self) -> Option<JoinHandle<()>> {
        if !self.uploaded {
            return None;
        }
        // Merged with what the record holds: read first, when no download did.
        self.start_outputs_records();
        let tmp = self.tmp_dir()?;
        let layer = self.layers.record_layers().into_iter().find(|l| l.write);
        let settled = std::mem::take(&mut self.keys.settled);
        self.record.write(layer, &settled, tmp)
    }
}
