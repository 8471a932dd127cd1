//! One `runs` row of history (HIST-1): its type, the columns a query selects for it, and
//! reading it back.

use rusqlite::Row;

use super::sql::from_sql_u64;

/// One `runs` row (HIST-1). On write, `id` and `started_at` are ignored (the row id is
/// assigned, `started_at` is the invocation's); on read they are filled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunRow {
    pub id: i64,
    pub run_id: String,
    pub started_at: i64,
    pub project: String,
    pub task: String,
    pub key: Option<String>,
    pub status: String,
    pub cache: String,
    pub placement: Option<String>,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub cpu_ms: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
    pub start_offset_ms: u64,
    pub end_offset_ms: u64,
    pub attempts: u32,
    pub timed_out: bool,
    /// A persistent task that never became ready, and why: 0 ready (or not persistent),
    /// 1 it exited, 2 it timed out, 3 no shell ran, 4 vx stopped it as unneeded.
    pub not_ready: u8,
    pub blocked_by: Option<String>,
    pub sandbox_violations: u64,
    pub admission_held_ms: u64,
    pub saved: bool,
    pub unsaved_reason: Option<String>,
    /// A restored hit: why its outputs were not up to date (the one missing or changed).
    pub restore_reason: Option<String>,
    /// A failed task: the last lines of its output (schema 8).
    pub output_tail: Option<String>,
}

pub(super) const RUN_COLUMNS: &str =
    "r.id, r.run_id, i.started_at, r.project, r.task, r.key, r.status,
    r.cache, r.placement, r.exit_code, r.duration_ms, r.cpu_ms, r.peak_rss_bytes,
    r.start_offset_ms, r.end_offset_ms, r.attempts, r.timed_out, r.not_ready, r.blocked_by,
    r.sandbox_violations, r.admission_held_ms, r.saved, r.unsaved_reason, r.restore_reason,
    r.output_tail";

pub(super) fn run_row(row: &Row<'_>) -> rusqlite::Result<RunRow> {
    let u64_at = |i: usize| row.get::<_, i64>(i).map(from_sql_u64);
    let opt_u64_at = |i: usize| row.get::<_, Option<i64>>(i).map(|v| v.map(from_sql_u64));
    Ok(RunRow {
        id: row.get(0)?,
        run_id: row.get(1)?,
        started_at: row.get(2)?,
        project: row.get(3)?,
        task: row.get(4)?,
        key: row.get(5)?,
        status: row.get(6)?,
        cache: row.get(7)?,
        placement: row.get(8)?,
        exit_code: row.get(9)?,
        duration_ms: u64_at(10)?,
        cpu_ms: opt_u64_at(11)?,
        peak_rss_bytes: opt_u64_at(12)?,
        start_offset_ms: u64_at(13)?,
        end_offset_ms: u64_at(14)?,
        attempts: row.get(15)?,
        timed_out: row.get(16)?,
        not_ready: row.get(17)?,
        blocked_by: row.get(18)?,
        sandbox_violations: u64_at(19)?,
        admission_held_ms: u64_at(20)?,
        saved: row.get(21)?,
        unsaved_reason: row.get(22)?,
        restore_reason: row.get(23)?,
        output_tail: row.get(24)?,
    })
}
