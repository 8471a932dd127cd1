//! `--summarize[=PATH]` (UI-14): the run as JSON, one object per non-group task.
//!
//! How this works: [`SummaryFile`] is a telemetry sink: it builds a [`Summary`] from the run
//! record just before the footer and writes it (default `<cache-dir>/runs/<run-id>.json`); a
//! kept persistent task's later exit writes it again with that exit code. The types here are the format: `schemars` derives
//! the JSON Schema shipped as `docs/schemas/summary.schema.json` from them, and a test keeps
//! that file equal to what they derive.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Serialize;

use crate::options::Target;
use crate::outcome::CacheKind;
use crate::outcome::{NotReady, Notice, Status, TaskReport};
use crate::record::{RunRecord, TelemetrySink};

/// The run summary (UI-14).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(
    title = "vx run summary",
    description = "Written by `vx run --summarize`."
)]
pub struct Summary {
    /// The run's id (a UUIDv7), as in history.
    pub run_id: String,
    /// The version of vx that ran.
    pub vx_version: String,
    /// The checkout the run saw; absent outside git.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git: Option<SummaryGit>,
    /// Whether the run succeeded (`exit_code` is 0).
    pub ok: bool,
    /// vx's exit code.
    pub exit_code: i32,
    /// When the run started, RFC 3339 in UTC.
    pub started_at: String,
    /// When the run ended (before the footer), RFC 3339 in UTC.
    pub ended_at: String,
    /// The run's wall time in milliseconds.
    pub total_ms: u64,
    /// One per non-group task in the run, sorted by id.
    pub tasks: Vec<SummaryTask>,
    pub counts: Counts,
    /// The chain of dependent tasks that took longest in this run.
    pub critical_path: SummaryCriticalPath,
    /// What an `--affected` run compared with; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affected: Option<SummaryAffected>,
    /// With `--shard K/N`: this runner's part; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<SummaryShard>,
}

/// The part of a sharded run (SCHED-8) a summary is of.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SummaryShard {
    /// This runner's part, 1 to `parts`.
    pub part: u32,
    pub parts: u32,
}

/// The run's critical path: dependent tasks, first to last, whose durations in this run add up
/// to the most; no parallelism makes a run shorter than `duration_ms`.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct SummaryCriticalPath {
    /// Task ids, each a dependency of the next.
    pub tasks: Vec<String>,
    /// The sum of their `duration_ms`.
    pub duration_ms: u64,
}

/// The base of an `--affected` run (SEL-8).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SummaryAffected {
    /// The base as named: a ref (`origin/main`) or a commit id.
    pub base: String,
    /// The base's commit, full hex.
    pub commit: String,
    /// The merge base of the base and HEAD: the commit the changes were taken from.
    pub merge_base: String,
    /// Why this base, for a bare `--affected` without `affected-base`: the CI that named it
    /// (`GitHub Actions, the pull request's base (pull_request.base.sha of the event)`) or the
    /// default ref found. The same words as the line the run prints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// The checkout: its commit (absent before the first) and branch (absent when detached).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SummaryGit {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
}

/// An input file as the key folded it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SummaryInput {
    /// Root-relative path.
    pub path: String,
    /// Its git blob id (40 hex digits), or `absent` for a literal input that names nothing.
    pub hash: String,
}

/// The names of the variables a task is given or whose values its key folds. Never a value.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct SummaryEnv {
    /// `cache.env`: folded into the key.
    pub key: Vec<String>,
    /// `env.pass-through`: copied from vx's environment.
    pub pass_through: Vec<String>,
    /// `env.define`: set by the configuration.
    pub define: Vec<String>,
    /// `env.secret`: masked in all output.
    pub secret: Vec<String>,
}

/// One task of the run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SummaryTask {
    /// `project#task`.
    pub id: String,
    pub project: String,
    pub task: String,
    /// The command (with forwarded arguments, secret values masked, when it executed); absent
    /// for a group-like task without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The input files its key folded, sorted by path; empty for an uncached task.
    pub inputs: Vec<SummaryInput>,
    /// The names of its variables.
    pub env: SummaryEnv,
    pub status: TaskStatus,
    /// How the result was obtained; absent for skipped, aborted and not-run tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheWord>,
    /// Where it ran: `local`.
    pub placement: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Execution time (all attempts); for a hit, the time to serve it.
    pub duration_ms: u64,
    /// The task's cache key (64 hex digits), when one was derived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// CPU time (user + system) of the task's processes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_ms: Option<u64>,
    /// Peak RSS of the task's processes, when it can be told apart from vx's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_rss_bytes: Option<u64>,
    /// For a hit: how long the execution it replays took.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored_duration_ms: Option<u64>,
    /// Attempts made (0 for a task that did not execute).
    pub attempts: u32,
    pub timed_out: bool,
    /// A persistent task that never became ready: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_ready: Option<NotReadyWord>,
    /// A skipped task: the failed task that caused it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<String>,
    /// Undeclared reads and writes the sandbox saw (SBX-7); 0 for a task not sandboxed.
    pub sandbox_violations: u64,
    /// It passed after a retry, or its key failed after passing before (EXEC-16).
    pub flaky: bool,
    /// How long it waited only for memory (SCHED-4).
    pub admission_held_ms: u64,
    /// When it started, in milliseconds from the start of the run (0 if it never started).
    pub start_offset_ms: u64,
    /// When it ended, in milliseconds from the start of the run (0 if it never started).
    pub end_offset_ms: u64,
    /// With `--shard`: the part the task belongs to (another part's task is here because this
    /// part needs it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<u32>,
    /// A hit cut off (early cutoff): the upstreams that executed in this run and produced the
    /// same outputs as before, which under key folding would have made it run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cut_off: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TaskStatus {
    Success,
    Failed,
    Skipped,
    Aborted,
    NotRun,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CacheWord {
    Miss,
    UpToDate,
    RestoredLocal,
    /// From the remote cache (M4): part of the format before vx writes it.
    RestoredRemote,
    NoCache,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NotReadyWord {
    /// It exited before it was ready.
    Exited,
    /// No line matched `ready-when` in time.
    TimedOut,
    /// No shell ran.
    Spawn,
    /// Stopped while it waited, because no task would use it any more.
    Unneeded,
}

/// Tasks by status and by how their result was obtained; `total` is `tasks.length`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Counts {
    pub success: u64,
    pub failed: u64,
    pub skipped: u64,
    pub aborted: u64,
    pub not_run: u64,
    /// Executed with the cache on (`cache` is `miss`).
    pub executed: u64,
    pub up_to_date: u64,
    pub restored_local: u64,
    pub restored_remote: u64,
    pub no_cache: u64,
    /// Hits that early cutoff saved: an upstream executed and produced the same outputs.
    pub cut_off: u64,
    pub total: u64,
}

impl Summary {
    pub fn new(run: &RunRecord<'_>) -> Summary {
        let mut counts = Counts::default();
        let tasks: Vec<SummaryTask> = run
            .tasks
            .iter()
            .map(|t| {
                let mut task = task_of(t.report, t.key.clone());
                detail(&mut task, &t.detail);
                count(&mut counts, &task);
                task
            })
            .collect();
        let critical_path = SummaryCriticalPath {
            duration_ms: run
                .critical_path
                .iter()
                .filter_map(|id| tasks.iter().find(|t| &t.id == id))
                .map(|t| t.duration_ms)
                .sum(),
            tasks: run.critical_path.clone(),
        };
        Summary {
            critical_path,
            run_id: run.run_id.to_string(),
            vx_version: env!("CARGO_PKG_VERSION").to_string(),
            git: run.git.as_ref().map(|g| SummaryGit {
                commit: g.commit.clone(),
                branch: g.branch.clone(),
            }),
            ok: run.exit_code == 0,
            exit_code: run.exit_code,
            started_at: crate::clock::rfc3339(run.started_at_ms.div_euclid(1000)),
            ended_at: crate::clock::rfc3339(run.ended_at_ms.div_euclid(1000)),
            total_ms: (run.ended_at_ms - run.started_at_ms).max(0) as u64,
            tasks,
            counts,
            affected: run.affected.as_ref().map(|a| SummaryAffected {
                base: a.base.clone(),
                commit: a.commit.clone(),
                merge_base: a.merge_base.clone(),
                why: a.why.clone(),
            }),
            shard: run.shard.map(|(part, parts)| SummaryShard { part, parts }),
        }
    }
}

/// UI-14's sink: the summary written to `path` (shown relative to `cwd`). The first write says
/// where; a later one (a kept task's final exit) rewrites it quietly. A failure is one line.
pub struct SummaryFile {
    pub path: PathBuf,
    pub cwd: PathBuf,
    pub written: bool,
}

impl TelemetrySink for SummaryFile {
    fn run_ended(&mut self, run: &RunRecord<'_>) -> Vec<Notice> {
        let summary = Summary::new(run);
        if self.written {
            match write_json(&self.path, &summary) {
                Ok(()) => Vec::new(),
                Err(reason) => vec![Notice::note(format!(
                    "could not write {}: {reason}",
                    self.path.display()
                ))],
            }
        } else {
            self.written = true;
            vec![write_and_tell(&self.path, &summary, &self.cwd)]
        }
    }
}

fn task_of(r: &TaskReport, key: Option<String>) -> SummaryTask {
    let status = match r.status {
        Status::Success | Status::Running => TaskStatus::Success,
        Status::Failed => TaskStatus::Failed,
        Status::Skipped => TaskStatus::Skipped,
        Status::Aborted => TaskStatus::Aborted,
        Status::NotRun => TaskStatus::NotRun,
    };
    let started = matches!(status, TaskStatus::Success | TaskStatus::Failed);
    let cache = r.cache.filter(|_| started).map(|kind| match kind {
        CacheKind::Miss => CacheWord::Miss,
        CacheKind::UpToDate => CacheWord::UpToDate,
        CacheKind::RestoredLocal => CacheWord::RestoredLocal,
        CacheKind::RestoredRemote => CacheWord::RestoredRemote,
        CacheKind::NoCache => CacheWord::NoCache,
    });
    SummaryTask {
        id: r.id.to_string(),
        project: r.id.project.clone(),
        task: r.id.task.clone(),
        command: None,
        inputs: Vec::new(),
        env: SummaryEnv::default(),
        status,
        cache,
        placement: r.placement().into(),
        exit_code: r.exit_code,
        duration_ms: r.duration.as_millis() as u64,
        key,
        cpu_ms: r.cpu_ms,
        peak_rss_bytes: r.peak_rss_bytes,
        stored_duration_ms: r.stored.map(|d| d.as_millis() as u64),
        attempts: r.attempts,
        timed_out: r.timed_out,
        not_ready: r.not_ready.as_ref().map(|n| match n {
            NotReady::Exited => NotReadyWord::Exited,
            NotReady::TimedOut(_) => NotReadyWord::TimedOut,
            NotReady::Spawn => NotReadyWord::Spawn,
            NotReady::Unneeded => NotReadyWord::Unneeded,
        }),
        blocked_by: r.blocked_by.as_ref().map(|b| b.to_string()),
        sandbox_violations: r.sandbox_violations,
        flaky: r.flaky().is_some(),
        admission_held_ms: r.admission_held.as_millis() as u64,
        start_offset_ms: r.start_offset.as_millis() as u64,
        end_offset_ms: r.end_offset.as_millis() as u64,
        shard: None,
        cut_off: r.cut_off.iter().map(ToString::to_string).collect(),
    }
}

/// The command, inputs and variable names of `--summarize`.
fn detail(task: &mut SummaryTask, detail: &crate::record::TaskDetail<'_>) {
    task.command = detail.command.map(str::to_string);
    task.shard = detail.part;
    if let Some(inputs) = detail.inputs {
        task.inputs = inputs
            .inputs
            .iter()
            .map(|f| SummaryInput {
                path: f.path.clone(),
                hash: f.blob.clone(),
            })
            .collect();
        task.env.key = inputs.env.iter().map(|(name, _)| name.clone()).collect();
    }
    if let Some(env) = detail.config.and_then(|c| c.env.as_deref()) {
        task.env.pass_through = env.pass_through.clone();
        task.env.define = env.define.keys().cloned().collect();
        task.env.secret = env.secret.clone();
    }
}

fn count(counts: &mut Counts, task: &SummaryTask) {
    counts.total += 1;
    counts.cut_off += u64::from(!task.cut_off.is_empty());
    *match task.status {
        TaskStatus::Success => &mut counts.success,
        TaskStatus::Failed => &mut counts.failed,
        TaskStatus::Skipped => &mut counts.skipped,
        TaskStatus::Aborted => &mut counts.aborted,
        TaskStatus::NotRun => &mut counts.not_run,
    } += 1;
    if let Some(cache) = task.cache {
        *match cache {
            CacheWord::Miss => &mut counts.executed,
            CacheWord::UpToDate => &mut counts.up_to_date,
            CacheWord::RestoredLocal => &mut counts.restored_local,
            CacheWord::RestoredRemote => &mut counts.restored_remote,
            CacheWord::NoCache => &mut counts.no_cache,
        } += 1;
    }
}

/// Where a file flag writes: `<cache-dir>/runs/<run-id><suffix>` for the bare flag, else the
/// path relative to `cwd`.
pub fn target_path(
    target: &Target,
    cwd: &Path,
    cache_dir: &Path,
    run_id: &str,
    suffix: &str,
) -> PathBuf {
    match target {
        Target::Default => cache_dir.join("runs").join(format!("{run_id}{suffix}")),
        Target::Path(path) => cwd.join(path),
    }
}

/// Why a JSON file could not be written: the reason in UI-14's `could not write <path>: …`.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Encode(#[from] serde_json::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Writes `value` as pretty JSON to `path` (parent directories created) through a temporary
/// file beside it, so a reader never sees half a file.
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<(), WriteError> {
    let text = serde_json::to_string_pretty(value)? + "\n";
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&temporary, text)?;
    std::fs::rename(&temporary, path).map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        WriteError::Io(e)
    })
}

/// Writes `value` to `path` and says so on stderr (UI-8): `vx: wrote <path>` (relative to
/// `cwd` when inside it), or `vx: could not write <path>: <reason>`, which changes nothing else.
pub fn write_and_tell(path: &Path, value: &impl Serialize, cwd: &Path) -> Notice {
    match write_json(path, value) {
        Ok(()) => Notice::note(format!("wrote {}", shown(path, cwd))),
        Err(reason) => Notice::note(format!("could not write {}: {reason}", path.display())),
    }
}

/// The path as the `vx: wrote …` line shows it: relative to `cwd` when inside it.
fn shown(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use vx_core::TaskId;

    /// The JSON Schema of the summary, as shipped in `docs/schemas/summary.schema.json`.
    fn schema() -> String {
        let schema = schemars::schema_for!(Summary);
        serde_json::to_string_pretty(&schema).expect("a schema serializes") + "\n"
    }

    #[test]
    fn the_shipped_schema_is_the_one_the_types_derive() {
        let shipped = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/schemas/summary.schema.json"
        );
        let text = std::fs::read_to_string(shipped).unwrap_or_default();
        if std::env::var_os("VX_UPDATE_SCHEMAS").is_some() {
            std::fs::write(shipped, schema()).unwrap();
            return;
        }
        assert!(
            text == schema(),
            "docs/schemas/summary.schema.json is out of date: run `VX_UPDATE_SCHEMAS=1 cargo test -p vx-run --bin vx schema`"
        );
    }

    #[test]
    fn counts_follow_status_and_cache_and_total_is_the_task_count() {
        let mut executed =
            TaskReport::not_started(TaskId::new("a", "build"), Status::Success, None);
        executed.cache = Some(CacheKind::Miss);
        executed.duration = Duration::from_millis(1500);
        let mut hit = TaskReport::not_started(TaskId::new("b", "build"), Status::Success, None);
        hit.cache = Some(CacheKind::RestoredLocal);
        hit.stored = Some(Duration::from_millis(900));
        let skipped = TaskReport::not_started(
            TaskId::new("c", "build"),
            Status::Skipped,
            Some(TaskId::new("a", "build")),
        );
        let not_run = TaskReport::not_started(TaskId::new("d", "build"), Status::NotRun, None);
        let tasks = [&executed, &hit, &skipped, &not_run]
            .into_iter()
            .map(|report| crate::record::TaskRecord {
                report,
                key: (report.id.project == "a").then(|| "k".repeat(64)),
                detail: Default::default(),
            })
            .collect();
        let run = RunRecord {
            affected: None,
            critical_path: Vec::new(),
            shard: None,
            run_id: "r",
            git: None,
            exit_code: 1,
            started_at_ms: 1_000,
            ended_at_ms: 3_500,
            tasks,
        };
        let summary = Summary::new(&run);
        assert_eq!(
            summary.counts,
            Counts {
                success: 2,
                skipped: 1,
                not_run: 1,
                executed: 1,
                restored_local: 1,
                total: 4,
                ..Counts::default()
            }
        );
        assert_eq!(summary.tasks.len() as u64, summary.counts.total);
        assert_eq!((summary.ok, summary.total_ms), (false, 2500));
        let json = serde_json::to_value(&summary).unwrap();
        assert_eq!(json["tasks"][1]["cache"], "restored-local");
        assert_eq!(json["tasks"][1]["stored_duration_ms"], 900);
        assert_eq!(json["tasks"][2]["blocked_by"], "a#build");
        assert!(json["tasks"][2].get("cache").is_none());
        assert_eq!(json["tasks"][3]["status"], "not-run");
        assert_eq!(json["started_at"], "1970-01-01T00:00:01Z");
    }
}
