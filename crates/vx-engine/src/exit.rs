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

/// The usual name of signal `n`, for the signals a task or a run commonly ends by.
pub fn signal_name(n: i32) -> Option<&'static str> {
    Some(match n {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return None,
    })
}
