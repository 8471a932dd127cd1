//! What a run records for later (HIST-1, HIST-2, STORE-16, PERF-3): the history rows `vx last`
//! and `vx why` read, each executed key's fingerprint, retention after the run, the counters of
//! the benchmarks, and what history says about each task (its recent executions for the
//! scheduler, and EXEC-16's failures after a pass).
//!
//! The [`Recorder`] is separate from the cache: the cache decides how a task gets its result,
//! the recorder writes down what happened. It borrows the local store when it writes.
//!
//! At the end of a run, one [`RunRecord`] (the run's facts and each task's report with its key)
//! is built once and handed to every [`TelemetrySink`] (ARCH-2): the history rows
//! ([`History`], made by the recorder), the `--summarize` JSON (`summary::SummaryFile`) and the
//! `--profile` trace (`profile::TraceFile`). When a kept persistent task ends after the footer,
//! the record is built again with the final exit code and handed to the sinks again.

pub(crate) mod ci_report;
pub(crate) mod invocation;
pub(crate) mod otlp;
pub mod profile;
pub(crate) mod summary;

use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap};

use crate::outcome::{NotReady, Notice, Status, TaskReport};
use vx_core::config::CacheRetention;
use vx_core::key::Component;
use vx_core::TaskId;
use vx_store::index::{Invocation, KeyComponent, Recent, RunRow};
use vx_store::Store;

/// How many executed tasks' key fingerprints wait in memory before they are written.
const FINGERPRINTS_IN_MEMORY: usize = 500;

/// What history keeps of a failed task's output (`runs.output_tail`): its last lines, at most
/// this many lines and bytes, escapes stripped.
const TAIL_LINES: usize = 30;
const TAIL_BYTES: usize = 8 << 10;

/// See the module documentation.
pub struct Recorder {
    /// Each task's recent executions, read when the store was opened (SCHED-2, SCHED-4).
    recent: HashMap<TaskId, Recent>,
    /// Per executed key, the components it folded (HIST-2), not written yet.
    fingerprints: Vec<(String, Vec<Component>)>,
    /// Per executed task: saved, or the `unsaved_reason` of HIST-1.
    saves: HashMap<TaskId, Result<(), &'static str>>,
    /// EXEC-16: `(project, task, key)` → failures after a pass, read from history on first need.
    key_failures: OnceCell<BTreeMap<(String, String, String), u64>>,
}

impl Recorder {
    pub fn new(recent: HashMap<TaskId, Recent>) -> Recorder {
        Recorder {
            recent,
            fingerprints: Vec::new(),
            saves: HashMap::new(),
            key_failures: OnceCell::new(),
        }
    }

    /// What history recorded of `id`'s last executions (SCHED-2, SCHED-4).
    pub fn recent(&self, id: &TaskId) -> Option<&Recent> {
        self.recent.get(id)
    }

    /// An executed key's fingerprint (`vx why` reads them): written every
    /// [`FINGERPRINTS_IN_MEMORY`] keys, so a large cold run does not hold them all (a few
    /// kilobytes per task), and at the end of the run.
    pub fn fingerprint(
        &mut self,
        fingerprint: Option<(String, Vec<Component>)>,
        store: Option<&mut Store>,
    ) {
        let Some(fingerprint) = fingerprint else {
            return;
        };
        self.fingerprints.push(fingerprint);
        if self.fingerprints.len() >= FINGERPRINTS_IN_MEMORY {
            self.flush_fingerprints(store);
        }
    }

    /// Whether an executed task's result was saved, or why not (HIST-1).
    pub fn saved(&mut self, id: &TaskId, result: Result<(), &'static str>) {
        self.saves.insert(id.clone(), result);
    }

    fn flush_fingerprints(&mut self, store: Option<&mut Store>) {
        let Some(store) = store else {
            return;
        };
        let keys: Vec<(String, Vec<KeyComponent>)> = std::mem::take(&mut self.fingerprints)
            .into_iter()
            .map(|(key, components)| {
                let components = components
                    .into_iter()
                    .map(|c| KeyComponent {
                        kind: c.kind,
                        name: c.name,
                        digest: c.digest,
                    })
                    .collect();
                (key, components)
            })
            .collect();
        let _ = store.record_keys_inputs(&keys);
    }

    /// EXEC-16's second flaky rule: how many times history saw the task's current key fail
    /// after it had passed with that key (this run's own result is not in history yet). 0 when
    /// the task has no key, there is no store, or history cannot be read: flaky marking never
    /// fails a run. History is read once, on the first call, in one statement (PERF-3).
    pub fn key_failures_after_pass(
        &self,
        store: Option<&Store>,
        id: &TaskId,
        key: Option<String>,
    ) -> u64 {
        let Some(key) = key else {
            return 0;
        };
        let failures = self.key_failures.get_or_init(|| {
            store
                .and_then(|store| store.keys_failed_after_pass().ok())
                .unwrap_or_default()
        });
        let at = (id.project.clone(), id.task.clone(), key);
        failures.get(&at).copied().unwrap_or(0)
    }

    /// The history sink of this run: `invocation` holds the facts that are not the tasks';
    /// `retention` is applied after the rows are written (STORE-16), `None` when the run is
    /// recorded again.
    pub fn history<'r>(
        &'r mut self,
        store: Option<&'r mut Store>,
        invocation: Invocation,
        retention: Option<&'r CacheRetention>,
    ) -> History<'r> {
        History {
            recorder: self,
            store,
            invocation,
            retention,
        }
    }
}

/// Everything a run did, built once at its end: what the sinks are made of.
pub struct RunRecord<'a> {
    pub run_id: &'a str,
    /// The checkout the run saw (HIST-1's facts), when git could tell.
    pub git: Option<GitFacts>,
    pub exit_code: i32,
    pub started_at_ms: i64,
    pub ended_at_ms: i64,
    /// Every task the run reported, in graph order, with its key when one was derived.
    pub tasks: Vec<TaskRecord<'a>>,
    /// The base an `--affected` run compared with (SEL-8).
    pub affected: Option<AffectedFacts>,
    /// The run's critical path: the chain of dependent tasks, first to last, whose durations
    /// in this run add up to the most (`critical_chain`).
    pub critical_path: Vec<String>,
    /// `--shard K/N` (SCHED-8): this runner's part and the number of parts.
    pub shard: Option<(u32, u32)>,
}

/// The chain of dependent nodes with the largest sum of `durations` (what this run spent on
/// each), first to last: the path no amount of parallelism shortens. Empty for an empty graph.
pub fn critical_chain(graph: &vx_core::graph::TaskGraph, durations: &[u64]) -> Vec<usize> {
    let remaining = vx_core::schedule::critical_path(graph, durations);
    let by_length = |i: &usize| (remaining[*i], std::cmp::Reverse(*i));
    let Some(mut at) = (0..graph.nodes.len())
        .filter(|&i| graph.nodes[i].deps.is_empty())
        .max_by_key(by_length)
    else {
        return Vec::new();
    };
    let mut chain = vec![at];
    while let Some(next) = graph.nodes[at]
        .dependants
        .iter()
        .copied()
        .max_by_key(by_length)
    {
        chain.push(next);
        at = next;
    }
    chain
}

/// What an `--affected` run compared with.
#[derive(Debug, Clone)]
pub struct AffectedFacts {
    /// The base as named (`origin/main`, a commit id).
    pub base: String,
    /// Its commit.
    pub commit: String,
    /// The merge base of it and HEAD, which the paths were compared with.
    pub merge_base: String,
    /// Why this base, for a bare `--affected` (the CI that named it, or the default found).
    pub why: Option<String>,
}

pub struct TaskRecord<'a> {
    pub report: &'a TaskReport,
    pub key: Option<String>,
    pub detail: TaskDetail<'a>,
}

/// What `--summarize` adds about a task: borrowed from the run, so building the record costs
/// nothing for sinks that do not look.
#[derive(Default)]
pub struct TaskDetail<'a> {
    /// The configured command (the report's `$` line, masked, when it executed).
    pub command: Option<&'a str>,
    /// What its key was derived from (its input files with their blob ids, the variables).
    pub inputs: Option<&'a vx_core::key::KeyInputs>,
    /// With `--shard`: the part (1-based) the task belongs to.
    pub part: Option<u32>,
    /// Its resolved configuration (the names of its variables).
    pub config: Option<&'a vx_core::config::TaskConfig>,
}

/// The commit and branch of the checkout (`None`: detached, or no commit yet).
#[derive(Debug, Clone, Default)]
pub struct GitFacts {
    pub commit: Option<String>,
    pub branch: Option<String>,
}

/// Where what a run did goes when it ends (ARCH-2). A sink never fails the run: a failure is
/// one line from the sink itself.
pub trait TelemetrySink {
    /// Returns what the sink has to say (where it wrote, what failed), for the reporter.
    fn run_ended(&mut self, run: &RunRecord<'_>) -> Vec<Notice>;
}

/// HIST-1's sink: the run and its task rows in the store, with each task's key and whether it
/// was saved, then retention. Recording the same run again replaces it.
pub struct History<'r> {
    recorder: &'r mut Recorder,
    store: Option<&'r mut Store>,
    invocation: Invocation,
    retention: Option<&'r CacheRetention>,
}

impl TelemetrySink for History<'_> {
    fn run_ended(&mut self, run: &RunRecord<'_>) -> Vec<Notice> {
        let mut notices = Vec::new();
        let Some(store) = self.store.as_deref_mut().filter(|s| s.disabled().is_none()) else {
            return notices;
        };
        self.recorder.flush_fingerprints(Some(&mut *store));
        let (mut invocation, rows) = history_rows(run, &self.invocation, &self.recorder.saves);
        invocation.argv = invocation::masked_argv(&invocation.argv, &store.salt());
        if let Err(error) = store.record_run(&invocation, &rows) {
            notices.push(Notice::warning(format!(
                "could not record this run in history: {error}"
            )));
        }
        // What a killed vx left in `tmp/` goes now, not an hour later (STORE-15).
        if let Err(error) = store.sweep_dead_temps() {
            notices.push(Notice::warning(format!(
                "could not remove a dead run's staging files: {error}"
            )));
        }
        let Some(retention) = self.retention.take() else {
            return notices;
        };
        let policy = vx_store::PrunePolicy {
            older_than: retention
                .older_than
                .as_deref()
                .and_then(vx_core::units::parse_duration),
            max_size: retention
                .max_size
                .as_deref()
                .and_then(vx_core::units::parse_size),
        };
        if let Err(error) = store.retention(&policy) {
            notices.push(Notice::warning(format!("cache retention failed: {error}")));
        }
        notices
    }
}

/// The rows `vx why` and `vx last` read (HIST-1): one per task with an outcome other than
/// aborted or not run, and the invocation with its counts (those two among them, so a run a
/// signal stopped says what it did not finish).
fn history_rows(
    run: &RunRecord<'_>,
    facts: &Invocation,
    saves: &HashMap<TaskId, Result<(), &'static str>>,
) -> (Invocation, Vec<RunRow>) {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut rows = Vec::new();
    for task in &run.tasks {
        let report = task.report;
        if matches!(report.status, Status::Aborted | Status::NotRun) {
            *counts
                .entry(report.status.word().replace(' ', "_"))
                .or_default() += 1;
            continue;
        }
        *counts
            .entry(report.status.word().replace(' ', "_"))
            .or_default() += 1;
        if let Some(cache) = report.cache {
            *counts.entry(cache.word().replace('-', "_")).or_default() += 1;
        }
        let (saved, unsaved_reason) = match saves.get(&report.id) {
            Some(Ok(())) => (true, None),
            Some(Err(reason)) => (false, Some((*reason).to_string())),
            None => (false, None),
        };
        rows.push(RunRow {
            run_id: run.run_id.to_string(),
            project: report.id.project.clone(),
            task: report.id.task.clone(),
            key: task.key.clone(),
            saved,
            unsaved_reason,
            status: report.status.word().to_string(),
            cache: report.cache.map_or("", |c| c.word()).to_string(),
            placement: Some(report.placement().into()),
            exit_code: report.exit_code,
            duration_ms: report.duration.as_millis() as u64,
            cpu_ms: report.cpu_ms,
            peak_rss_bytes: report.peak_rss_bytes,
            attempts: report.attempts,
            timed_out: report.timed_out,
            not_ready: match report.not_ready {
                None => 0,
                Some(NotReady::Exited) => 1,
                Some(NotReady::TimedOut(_)) => 2,
                Some(NotReady::Spawn) => 3,
                Some(NotReady::Unneeded) => 4,
            },
            blocked_by: report.blocked_by.as_ref().map(|b| b.to_string()),
            start_offset_ms: report.start_offset.as_millis() as u64,
            end_offset_ms: report.end_offset.as_millis() as u64,
            admission_held_ms: report.admission_held.as_millis() as u64,
            sandbox_violations: report.sandbox_violations,
            restore_reason: report.restore_reason.clone(),
            output_tail: (report.status == Status::Failed)
                .then(|| output_tail(&report.log))
                .flatten(),
            ..Default::default()
        });
    }
    let invocation = Invocation {
        run_id: run.run_id.to_string(),
        started_at: run.started_at_ms,
        ended_at: run.ended_at_ms,
        exit_code: run.exit_code,
        task_count: run.tasks.len() as u64,
        counts,
        ..facts.clone()
    };
    (invocation, rows)
}

/// PERF-3's counters, as a `vx::counters` diagnostic (`VX_LOG=vx::counters=info`): process
/// spawns, files hashed in-process and SQL statements of this run, and vx's own CPU time and
/// peak RSS (not its children's) for the benchmarks.
pub fn report_counters(files_hashed: u64, store: Option<&Store>) {
    let statements = store.map_or(0, Store::statements);
    let spawns = vx_exec::Supervisor::spawned_so_far();
    let (user_ms, sys_ms, rusage_rss_kib) =
        match nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF) {
            Ok(usage) => {
                let ms = |t: nix::sys::time::TimeVal| t.tv_sec() * 1000 + t.tv_usec() / 1000;
                (
                    ms(usage.user_time()),
                    ms(usage.system_time()),
                    usage.max_rss(),
                )
            }
            Err(_) => (0, 0, 0),
        };
    let rss_kib = own_peak_rss_kib().unwrap_or(rusage_rss_kib);
    tracing::info!(
        target: "vx::counters",
        "spawns={spawns} files_hashed={files_hashed} sql_statements={statements} \
         cpu_user_ms={user_ms} cpu_sys_ms={sys_ms} max_rss_kib={rss_kib}"
    );
}

/// vx's own peak resident set in KiB, from `VmHWM` in `/proc/self/status`. Linux's
/// `ru_maxrss` is no use here: exec keeps the larger of the new image's peak and the peak of
/// the process that exec'd (so a 400 MiB benchmark harness that spawned vx reads as vx's 400
/// MiB), while `VmHWM` belongs to this image's memory alone. `None` off Linux.
fn own_peak_rss_kib() -> Option<i64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    line.trim().trim_end_matches("kB").trim().parse().ok()
}

/// The last [`TAIL_LINES`] lines of a task's output (at most [`TAIL_BYTES`]), without escapes;
/// `None` when it printed nothing.
fn output_tail(log: &[u8]) -> Option<String> {
    let plain = strip_ansi_escapes::strip(log);
    let text = String::from_utf8_lossy(&plain);
    let trimmed = text.trim_end_matches('\n');
    if trimmed.trim().is_empty() {
        return None;
    }
    let lines: Vec<&str> = trimmed.split('\n').collect();
    let mut out = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
    if out.len() > TAIL_BYTES {
        let mut cut = out.len() - TAIL_BYTES;
        while !out.is_char_boundary(cut) {
            cut += 1;
        }
        out = out[cut..].to_string();
    }
    Some(out)
}

/// The fake sink (ARCH-2): keeps what each run record said, for tests. It lives here rather
/// than in vx-test-support because the record is the engine's own type.
#[cfg(test)]
#[derive(Clone, Default)]
pub struct CollectingSink {
    /// Per record handed over: the exit code and each task's id, status and key.
    pub runs: std::rc::Rc<std::cell::RefCell<Vec<CollectedRun>>>,
}

#[cfg(test)]
#[derive(Debug, Clone)]
pub struct CollectedRun {
    pub exit_code: i32,
    pub tasks: Vec<(String, Status, Option<String>)>,
}

#[cfg(test)]
impl TelemetrySink for CollectingSink {
    fn run_ended(&mut self, run: &RunRecord<'_>) -> Vec<Notice> {
        self.runs.borrow_mut().push(CollectedRun {
            exit_code: run.exit_code,
            tasks: run
                .tasks
                .iter()
                .map(|t| (t.report.id.to_string(), t.report.status, t.key.clone()))
                .collect(),
        });
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_tasks_tail_is_its_last_lines_without_escapes() {
        let log: String = (1..=40)
            .map(|i| format!("\x1b[31mline {i}\x1b[0m\n"))
            .collect();
        let tail = output_tail(log.as_bytes()).unwrap();
        assert!(
            tail.starts_with("line 11\n") && tail.ends_with("line 40"),
            "{tail}"
        );
        assert_eq!(output_tail(b"\n\n"), None);
        let long = "é".repeat(TAIL_BYTES);
        let cut = output_tail(long.as_bytes()).unwrap();
        assert!(cut.len() <= TAIL_BYTES && cut.chars().all(|c| c == 'é'));
    }

    /// A graph of `deps` (node → the nodes it waits for), with dependants filled in.
    fn graph(deps: &[&[usize]]) -> vx_core::graph::TaskGraph {
        let mut g = vx_core::graph::TaskGraph::default();
        for (i, d) in deps.iter().enumerate() {
            let id = TaskId::new(format!("p{i}"), "build");
            g.index.insert(id.clone(), i);
            g.nodes.push(vx_core::graph::Node {
                id,
                project: i,
                requested: true,
                deps: d.to_vec(),
                dependants: Vec::new(),
                folds_dropped: false,
            });
        }
        for (i, d) in deps.iter().enumerate() {
            for &d in *d {
                g.nodes[d].dependants.push(i);
            }
        }
        g
    }

    #[test]
    fn the_critical_chain_follows_the_longest_sum_of_durations() {
        // 0 → 1 → 3 and 0 → 2 → 3: the slow middle (2) is on the path.
        let g = graph(&[&[], &[0], &[0], &[1, 2]]);
        assert_eq!(critical_chain(&g, &[10, 1, 50, 1]), [0, 2, 3]);
        // A lone task longer than the whole chain is the path by itself.
        let g = graph(&[&[], &[0], &[0], &[1, 2], &[]]);
        assert_eq!(critical_chain(&g, &[10, 1, 50, 1, 100]), [4]);
        assert!(critical_chain(&graph(&[]), &[]).is_empty());
    }

    #[test]
    fn history_rows_come_from_the_run_record_with_keys_and_saves() {
        let mut built = TaskReport::not_started(TaskId::new("lib", "build"), Status::Success, None);
        built.cache = Some(crate::outcome::CacheKind::Miss);
        let mut failed = TaskReport::not_started(TaskId::new("app", "build"), Status::Failed, None);
        failed.exit_code = Some(2);
        let not_run = TaskReport::not_started(TaskId::new("docs", "build"), Status::NotRun, None);
        let run = RunRecord {
            affected: None,
            critical_path: Vec::new(),
            shard: None,
            run_id: "0190",
            git: None,
            exit_code: 1,
            started_at_ms: 10,
            ended_at_ms: 30,
            tasks: vec![
                TaskRecord {
                    report: &built,
                    key: Some("a".repeat(64)),
                    detail: TaskDetail::default(),
                },
                TaskRecord {
                    report: &failed,
                    key: Some("b".repeat(64)),
                    detail: TaskDetail::default(),
                },
                TaskRecord {
                    report: &not_run,
                    key: None,
                    detail: TaskDetail::default(),
                },
            ],
        };
        let mut saves = HashMap::new();
        saves.insert(built.id.clone(), Ok(()));
        saves.insert(failed.id.clone(), Err("failed"));
        let facts = Invocation {
            concurrency: 4,
            ..Invocation::default()
        };
        let (invocation, rows) = history_rows(&run, &facts, &saves);
        assert_eq!(rows.len(), 2, "a task that did not run has no row");
        assert_eq!(rows[0].key.as_deref(), Some("a".repeat(64).as_str()));
        assert!(rows[0].saved);
        assert_eq!(rows[1].unsaved_reason.as_deref(), Some("failed"));
        assert_eq!(rows[1].exit_code, Some(2));
        assert_eq!(
            (
                invocation.run_id.as_str(),
                invocation.exit_code,
                invocation.task_count
            ),
            ("0190", 1, 3),
            "the task that did not run counts in the total"
        );
        assert_eq!(invocation.counts.get("not_run"), Some(&1));
        assert_eq!((invocation.started_at, invocation.ended_at), (10, 30));
        assert_eq!(invocation.concurrency, 4, "the facts are kept");
        assert_eq!(invocation.counts.get("success"), Some(&1));
        assert_eq!(invocation.counts.get("failed"), Some(&1));
        assert_eq!(invocation.counts.get("miss"), Some(&1));
    }
}
