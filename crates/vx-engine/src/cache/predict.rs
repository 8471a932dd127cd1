//! KEY-9 ahead of time, the cache's side: the restore lane downloads the entries of tasks whose
//! keys wait for upstreams under the keys the outputs record predicts (`keys/hints.rs`), and a
//! run that writes to the remote cache writes its branch's record at its end
//! (`produced.rs`).

use std::sync::Arc;
use std::thread::JoinHandle;

use vx_store::layer::Wanted;

use super::RunCache;
use crate::plan::nodes::Row;

impl RunCache<'_> {
    /// Adds the download of `task`'s entry under its key (derived now) to `wanted`, tagged `at`.
    pub(super) fn want(&mut self, task: Row<'_>, at: usize, wanted: &mut Vec<Wanted>) {
        let Some(outputs) = self.outputs(task) else {
            return;
        };
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
