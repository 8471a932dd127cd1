//! The exit codes of every vx command (EXIT-1), defined in one place.

/// Every task succeeded or hit.
pub const SUCCESS: i32 = 0;
/// The command worked but the answer is negative: a task failed or was skipped.
pub const FAILURE: i32 = 1;
/// vx could not start the requested work: usage, configuration, graph or selection error.
pub const USAGE: i32 = 2;
/// A bug in vx.
pub const INTERNAL: i32 = 3;

/// vx was stopped by signal `n`.
pub fn signal(n: i32) -> i32 {
    128 + n
}
