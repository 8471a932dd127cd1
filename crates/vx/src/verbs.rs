//! The verbs of the command line, by name: for suggestions, completion and refusals.

/// Verbs of later milestones, refused as `not available yet` (none left).
pub const LATER_VERBS: &[&str] = &[];

/// The verbs a user can type today, for suggestions.
pub const VERBS: &[&str] = &[
    "run",
    "watch",
    "show",
    "why",
    "last",
    "cache",
    "init",
    "migrate",
    "lock",
    "prune",
    "info",
    "report",
    "schema",
    "lsp",
    "mcp",
    "completions",
    "help",
    "version",
];
