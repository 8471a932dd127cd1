//! What the save guard remembers across tasks (KEY-16): the withheld results, whether the run
//! is under CI, and the tasks' same-bytes rewrite records.

use std::collections::HashSet;

use vx_core::TaskId;

/// What the save guard remembers across tasks (KEY-16).
pub struct Guard {
    /// Tasks whose results were not trustworthy (or folded one that was not): dependants that
    /// fold them are not saved either.
    pub(super) withheld: HashSet<TaskId>,
    /// Under CI, a rewrite during the run is judged by the key's moment only (see
    /// [`RunCache::moved_input`]).
    pub(super) ci: bool,
    /// The tasks' same-bytes rewrite records, read once, on the first save.
    pub(super) rewrites: Option<std::collections::HashMap<String, Vec<String>>>,
}

impl Guard {
    pub fn new(ci: bool) -> Guard {
        Guard {
            withheld: HashSet::new(),
            ci,
            rewrites: None,
        }
    }

    pub fn withhold(&mut self, id: &TaskId) {
        self.withheld.insert(id.clone());
    }
}
