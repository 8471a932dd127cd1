//! How the index writes values SQLite has no type for, and the clock it stamps rows with.

use std::time::{SystemTime, UNIX_EPOCH};

/// `u64` values are stored as the same 64 bits in an SQLite integer (inodes and devices may use
/// the top bit; sizes and durations never do).
pub(crate) fn to_sql_u64(value: u64) -> i64 {
    value as i64
}

pub(crate) fn from_sql_u64(value: i64) -> u64 {
    value as u64
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
