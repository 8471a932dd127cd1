//! What the run loop keeps about the attempts it placed on the remote executor (REM-11,
//! REM-14): a leaf, so `remote.rs`'s `impl Run` and the loop both read it.

use std::collections::BTreeSet;

/// The run's remote side: what the loop keeps about attempts placed on the remote executor.
pub(super) struct Offloaded {
    /// Remote attempts in flight, bounded by `max-in-flight` (REM-11).
    pub(super) in_flight: u32,
    /// Tasks whose outputs the remote executor kept: dependants take them by digest, or fetch
    /// them first when they run locally (REM-14).
    pub(super) kept: BTreeSet<usize>,
    /// Remote tasks whose server could not be used, waiting for a local slot.
    pub(super) local_again: Vec<usize>,
    /// The remote executor's server can still be used for new attempts.
    pub(super) usable: bool,
}

impl Default for Offloaded {
    fn default() -> Offloaded {
        Offloaded {
            in_flight: 0,
            kept: BTreeSet::new(),
            local_again: Vec::new(),
            usable: true,
        }
    }
}
