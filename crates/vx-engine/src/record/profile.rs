//! `--profile[=PATH]` (UI-15): the run as a Chrome trace, for `chrome://tracing` or Perfetto.
//!
//! How this works: the run loop keeps what a trace needs anyway (each task's attempt spans, its
//! start and end, in its report) and, only when profiling, the spans of vx's own phases (planning,
//! opening the cache, reading ahead, deriving keys and probing the cache for a task). At the end
//! the [`TraceFile`] sink turns the run record and the phases into one complete event (`ph: "X"`) per task attempt on one
//! thread per project, category = outcome, plus vx's phases on a thread named `vx`. Times are
//! microseconds from the start of the run.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::outcome::{Notice, Status, TaskReport};
use crate::record::summary::write_and_tell;
use crate::record::{RunRecord, TelemetrySink};

/// One of vx's own phases, or a task's key derivation and cache probe.
#[derive(Debug, Clone)]
pub struct Phase {
    pub name: String,
    pub start: Instant,
    pub end: Instant,
    /// Done on a helper thread beside the main one (listing the workspace's files while the
    /// graph is built): drawn on its own row, `vx (beside)`, as it overlaps the main phases.
    pub beside: bool,
}

impl Phase {
    /// A phase of the main thread.
    pub fn main(name: &str, start: Instant, end: Instant) -> Phase {
        Phase {
            name: name.to_string(),
            start,
            end,
            beside: false,
        }
    }
}

/// UI-15's sink: the trace written to `path` (shown relative to `cwd`) once, when the run first
/// ends. `origin` is the start of the run; `loop_started` when the run loop (the origin of the
/// reports' offsets) started; `phases` are vx's own.
pub struct TraceFile {
    pub path: PathBuf,
    pub cwd: PathBuf,
    pub origin: Instant,
    pub loop_started: Instant,
    pub phases: Vec<Phase>,
}

impl TelemetrySink for TraceFile {
    fn run_ended(&mut self, run: &RunRecord<'_>) -> Vec<Notice> {
        let trace = chrome_trace(self.origin, self.loop_started, &self.phases, run);
        vec![write_and_tell(&self.path, &trace, &self.cwd)]
    }
}

/// The trace of a run (see [`TraceFile`]).
pub fn chrome_trace(
    origin: Instant,
    loop_started: Instant,
    phases: &[Phase],
    run: &RunRecord<'_>,
) -> Value {
    let micros = |d: Duration| d.as_micros() as u64;
    let since = |at: Instant| at.saturating_duration_since(origin);
    let shift = since(loop_started);
    let mut threads: BTreeMap<&str, u64> = BTreeMap::new();
    for r in run.tasks.iter().map(|t| t.report) {
        let next = threads.len() as u64 + 1;
        threads.entry(r.id.project.as_str()).or_insert(next);
    }
    let mut events: Vec<Value> = vec![json!({
        "name": "thread_name", "ph": "M", "pid": 1, "tid": 0, "args": { "name": "vx" }
    })];
    // The helper threads' row takes the id after the projects'.
    let beside = threads.len() as u64 + 1;
    if phases.iter().any(|p| p.beside) {
        events.push(json!({
            "name": "thread_name", "ph": "M", "pid": 1, "tid": beside,
            "args": { "name": "vx (beside)" }
        }));
    }
    for (project, tid) in &threads {
        events.push(json!({
            "name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": { "name": project }
        }));
    }
    for phase in phases {
        events.push(json!({
            "name": phase.name,
            "cat": "vx",
            "ph": "X",
            "ts": micros(since(phase.start)),
            "dur": micros(phase.end.saturating_duration_since(phase.start)),
            "pid": 1,
            "tid": if phase.beside { beside } else { 0 },
        }));
    }
    for task in &run.tasks {
        let r = task.report;
        let tid = threads[r.id.project.as_str()];
        let key = &task.key;
        let outcome = outcome(r);
        if r.attempt_spans.is_empty() {
            // A hit, or a persistent task (from its start to ready, or to its end).
            if r.end_offset.is_zero() {
                continue;
            }
            events.push(json!({
                "name": r.id.to_string(),
                "cat": outcome,
                "ph": "X",
                "ts": micros(shift + r.start_offset),
                "dur": micros(r.end_offset.saturating_sub(r.start_offset)),
                "pid": 1,
                "tid": tid,
                "args": { "exit_code": r.exit_code, "key": key },
            }));
            continue;
        }
        let last = r.attempt_spans.len() - 1;
        for (n, span) in r.attempt_spans.iter().enumerate() {
            let final_attempt = n == last;
            events.push(json!({
                "name": r.id.to_string(),
                "cat": if final_attempt { outcome } else { "failed" },
                "ph": "X",
                "ts": micros(shift + span.start),
                "dur": micros(span.end.saturating_sub(span.start)),
                "pid": 1,
                "tid": tid,
                "args": {
                    "attempt": n + 1,
                    "exit_code": span.exit_code,
                    "key": key,
                    "cpu_ms": if final_attempt { r.cpu_ms } else { None },
                    "peak_rss_bytes": if final_attempt { r.peak_rss_bytes } else { None },
                },
            }));
        }
    }
    json!({ "traceEvents": events, "displayTimeUnit": "ms" })
}

/// The category of a task's event: its status, or how a hit was served.
fn outcome(r: &TaskReport) -> &'static str {
    match (r.status, r.cache) {
        (Status::Success, Some(kind)) if kind.is_hit() => match kind {
            crate::outcome::CacheKind::UpToDate => "up-to-date",
            crate::outcome::CacheKind::RestoredRemote => "restored-remote",
            _ => "restored-local",
        },
        (status, _) => status.word(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::AttemptSpan;
    use crate::outcome::CacheKind;
    use vx_core::TaskId;

    #[test]
    fn one_event_per_attempt_on_a_thread_per_project() {
        let origin = Instant::now();
        let ms = Duration::from_millis;
        let mut flaky = TaskReport::not_started(TaskId::new("lib", "test"), Status::Success, None);
        flaky.attempt_spans = vec![
            AttemptSpan {
                start: ms(0),
                end: ms(10),
                exit_code: Some(1),
            },
            AttemptSpan {
                start: ms(10),
                end: ms(30),
                exit_code: Some(0),
            },
        ];
        flaky.cpu_ms = Some(7);
        let mut hit = TaskReport::not_started(TaskId::new("app", "build"), Status::Success, None);
        hit.cache = Some(CacheKind::UpToDate);
        hit.start_offset = ms(1);
        hit.end_offset = ms(2);
        let skipped = TaskReport::not_started(TaskId::new("app", "test"), Status::Skipped, None);
        let phases = [
            Phase::main("plan", origin, origin + ms(5)),
            Phase {
                beside: true,
                ..Phase::main("list the workspace's files", origin + ms(1), origin + ms(6))
            },
        ];
        let tasks = [&flaky, &hit, &skipped]
            .into_iter()
            .map(|report| crate::record::TaskRecord {
                report,
                key: None,
                detail: Default::default(),
            })
            .collect();
        let run = RunRecord {
            affected: None,
            critical_path: Vec::new(),
            shard: None,
            run_id: "r",
            git: None,
            exit_code: 0,
            started_at_ms: 0,
            ended_at_ms: 0,
            tasks,
        };
        let trace = chrome_trace(origin, origin + ms(5), &phases, &run);
        let events = trace["traceEvents"].as_array().unwrap();
        let complete: Vec<&Value> = events
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] != "vx")
            .collect();
        assert_eq!(
            complete.len(),
            3,
            "two attempts and a hit; nothing for a skip"
        );
        assert_eq!(complete[0]["cat"], "failed");
        assert_eq!(complete[0]["args"]["attempt"], 1);
        assert_eq!(complete[1]["cat"], "success");
        assert_eq!(
            (complete[1]["ts"].as_u64(), complete[1]["dur"].as_u64()),
            (Some(15_000), Some(20_000))
        );
        assert_eq!(complete[1]["args"]["cpu_ms"], 7);
        assert_eq!(complete[2]["cat"], "up-to-date");
        assert_ne!(
            complete[0]["tid"], complete[2]["tid"],
            "one thread per project"
        );
        let names: Vec<&Value> = events
            .iter()
            .filter(|e| e["ph"] == "M")
            .map(|e| &e["args"]["name"])
            .collect();
        assert_eq!(names, ["vx", "vx (beside)", "app", "lib"]);
        let phase_rows: Vec<(&Value, &Value)> = events
            .iter()
            .filter(|e| e["cat"] == "vx")
            .map(|e| (&e["name"], &e["tid"]))
            .collect();
        assert_eq!(
            phase_rows,
            [
                (&json!("plan"), &json!(0)),
                (&json!("list the workspace's files"), &json!(3))
            ],
            "a phase of a helper thread is drawn on the row after the projects'"
        );
    }
}
