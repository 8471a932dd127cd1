//! `vx last [RUNID] [--list[=N]] [--failed]` (HIST-4): a recorded run read back from history.
//!
//! Read-only, like `vx why`: it opens the index read-only and reads only the `[workspace]`
//! table, so it works while a project's `vx.toml` is broken. The JSON forms are typed here and
//! their schemas ship as `docs/schemas/last.schema.json` and `docs/schemas/last-list.schema.json`.

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::Serialize;
use vx_core::units::{format_duration, format_size};
use vx_core::Diagnostic;
use vx_store::index::{Invocation, RunRow};
use vx_store::Store;

use super::why::open_read_only;
use crate::cli::{LastArgs, BARE};
use crate::render;
use crate::render::out_str;
use vx_engine::clock::rfc3339;
use vx_engine::error::Failure;
use vx_engine::{exit, workspace};

/// How many runs `--list` shows by default.
const LIST_DEFAULT: usize = 10;
/// How many cache hits a run shows (the slowest); the rest are folded into one line.
const HITS_SHOWN: usize = 16;

/// Lines of a failed task's kept output shown under its row.
const TAIL_SHOWN: usize = 10;

pub fn last(cwd: &Path, args: LastArgs) -> Result<i32, Failure> {
    let json = super::json_format(args.format.as_deref())?;
    let list = match args.list.as_deref() {
        None => None,
        Some(BARE) => Some(LIST_DEFAULT),
        Some(text) => Some(
            vx_core::units::parse_integer(text)
                .filter(|n| (1..=10_000).contains(n))
                .ok_or_else(|| {
                    Failure::usage(format!(
                        "invalid value `{text}` for --list (expected N, 1 to 10000)"
                    ))
                })? as usize,
        ),
    };
    if let Some(run) = &args.run {
        for (flag, given) in [("--list", list.is_some()), ("--failed", args.failed)] {
            if given {
                return Err(Failure::usage(format!(
                    "`{run}` cannot be combined with `{flag}`: give a run id or pick one with {flag}"
                )));
            }
        }
    }
    let (_, dir) = workspace::store_location(cwd, args.cache_dir.as_deref())?;
    let store = open_read_only(&dir)?;
    let failure = |e: vx_store::index::StoreError| Failure::usage(e.to_string());
    let all_ids = store.all_run_ids().map_err(failure)?;
    if let Some(limit) = list {
        let runs = store.invocations(limit, args.failed).map_err(failure)?;
        let prefixes = short_ids(&all_ids);
        let short = |id: &str| prefixes.get(id).cloned().unwrap_or_else(|| id.to_string());
        if json {
            let list = LastList {
                runs: runs.iter().map(|i| listed(i, short(&i.run_id))).collect(),
            };
            out_str(&to_json(&list));
        } else if runs.is_empty() {
            out_str(if args.failed {
                "history has no failed run\n"
            } else {
                "history is empty\n"
            });
        } else {
            out_str(&list_text(&runs, &short));
        }
        return Ok(exit::SUCCESS);
    }
    let invocation = match &args.run {
        Some(prefix) => match find(&store, &all_ids, prefix)? {
            Some(invocation) => invocation,
            None => {
                render::notice(&format!("history has no run `{prefix}`"));
                return Ok(exit::FAILURE);
            }
        },
        None => match store.invocations(1, args.failed).map_err(failure)?.pop() {
            Some(invocation) => invocation,
            None if args.failed => {
                render::notice("history has no failed run");
                return Ok(exit::FAILURE);
            }
            None => {
                render::notice("history is empty");
                return Ok(exit::FAILURE);
            }
        },
    };
    let rows = store.run_rows(&invocation.run_id).map_err(failure)?;
    if json {
        out_str(&to_json(&LastRun {
            invocation: recorded(&invocation),
            tasks: rows.iter().map(task).collect(),
        }));
    } else {
        out_str(&run_text(&invocation, &rows));
    }
    Ok(exit::SUCCESS)
}

/// The run a (dash-insensitive) prefix names; more than one is a usage error.
fn find(store: &Store, all: &[String], prefix: &str) -> Result<Option<Invocation>, Failure> {
    let want = prefix.replace('-', "");
    let matching: Vec<&String> = all
        .iter()
        .filter(|id| id.replace('-', "").starts_with(&want))
        .collect();
    match matching.as_slice() {
        [] => Ok(None),
        [one] => store
            .invocation(one)
            .map_err(|e| Failure::usage(e.to_string())),
        many => {
            let mut shown: Vec<String> = many.iter().map(|id| format!("`{}`", hex12(id))).collect();
            shown.sort();
            shown.truncate(5);
            Err(Diagnostic::new(format!(
                "`{prefix}` names {} runs: {}",
                many.len(),
                shown.join(", ")
            ))
            .hint("give more digits of the run id")
            .into())
        }
    }
}

/// Each run id's shortest unique prefix (dashes removed), at least 8 digits.
fn short_ids(all: &[String]) -> BTreeMap<String, String> {
    let mut plain: Vec<(String, &String)> =
        all.iter().map(|id| (id.replace('-', ""), id)).collect();
    plain.sort();
    let common = |a: &str, b: &str| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    (0..plain.len())
        .map(|i| {
            let before = i
                .checked_sub(1)
                .map_or(0, |j| common(&plain[i].0, &plain[j].0));
            let after = plain
                .get(i + 1)
                .map_or(0, |next| common(&plain[i].0, &next.0));
            let len = (before.max(after) + 1).max(8).min(plain[i].0.len());
            (plain[i].1.clone(), plain[i].0[..len].to_string())
        })
        .collect()
}

/// The first 12 digits of a run id, as `vx why` and the footer-side notes show it.
fn hex12(id: &str) -> String {
    id.replace('-', "").chars().take(12).collect()
}

fn when(ms: i64) -> String {
    let text = rfc3339(ms.div_euclid(1000));
    format!("{} {}", &text[..10], &text[11..16])
}

fn took(inv: &Invocation) -> String {
    format_duration(std::time::Duration::from_millis(
        (inv.ended_at - inv.started_at).max(0) as u64,
    ))
}

fn verdict(inv: &Invocation) -> String {
    match interrupted_by(inv.exit_code) {
        _ if inv.exit_code == 0 => "passed".to_string(),
        Some(signal) => format!("interrupted by {signal} (exit {})", inv.exit_code),
        None => format!("failed (exit {})", inv.exit_code),
    }
}

/// The signal that stopped a run, from its exit code (128 + n, EXEC-9).
fn interrupted_by(code: i32) -> Option<String> {
    let n = code.checked_sub(128).filter(|n| (1..=64).contains(n))?;
    Some(vx_engine::exit::signal_name(n).map_or_else(|| format!("signal {n}"), str::to_string))
}

/// The command line as recorded, after the program name.
fn command(inv: &Invocation) -> String {
    let mut words = inv
        .argv
        .iter()
        .skip(1)
        .map(String::as_str)
        .collect::<Vec<_>>();
    words.insert(0, "vx");
    words.join(" ")
}

fn counts_line(counts: &BTreeMap<String, u64>, keys: &[(&str, &str)]) -> Option<String> {
    let parts: Vec<String> = keys
        .iter()
        .filter_map(|(key, word)| {
            counts
                .get(*key)
                .filter(|&&n| n > 0)
                .map(|n| format!("{n} {word}"))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(" · "))
}

const STATUS_COUNTS: [(&str, &str); 5] = [
    ("failed", "failed"),
    ("success", "success"),
    ("skipped", "skipped"),
    ("aborted", "aborted"),
    ("not_run", "not run"),
];
const CACHE_COUNTS: [(&str, &str); 5] = [
    ("miss", "miss"),
    ("up_to_date", "up-to-date"),
    ("local", "local"),
    ("remote", "remote"),
    ("no_cache", "no-cache"),
];

fn run_text(inv: &Invocation, rows: &[RunRow]) -> String {
    let mut text = format!("run {} · {}\n", hex12(&inv.run_id), verdict(inv));
    text.push_str(&format!("command    {}\n", command(inv)));
    text.push_str(&format!(
        "when       {} · {}\n",
        when(inv.started_at),
        took(inv)
    ));
    if let Some(repeated) = &inv.replay_of {
        text.push_str(&format!(
            "replay     of run {} · nothing it read had changed\n",
            hex12(repeated)
        ));
    }
    if inv.branch.is_some() || inv.commit.is_some() {
        let branch = inv.branch.as_deref().unwrap_or("(detached)");
        let commit = inv
            .commit
            .as_deref()
            .map_or("(no commit)".to_string(), |c| c.chars().take(12).collect());
        let dirty = if inv.dirty == Some(true) {
            " (dirty)"
        } else {
            ""
        };
        text.push_str(&format!("git        {branch} @ {commit}{dirty}\n"));
    }
    if let Some(ci) = &inv.ci_provider {
        text.push_str(&format!("ci         {ci}\n"));
    }
    let mut tasks = counts_line(&inv.counts, &STATUS_COUNTS).unwrap_or_default();
    if !tasks.is_empty() {
        tasks.push_str(" · ");
    }
    let total = (rows.len() as u64).max(inv.task_count);
    text.push_str(&format!("tasks      {tasks}{total} total\n"));
    if let Some(cache) = counts_line(&inv.counts, &CACHE_COUNTS) {
        text.push_str(&format!("cache      {cache}\n"));
    }
    let is_hit = |r: &RunRow| {
        r.status == "success" && matches!(r.cache.as_str(), "up-to-date" | "local" | "remote")
    };
    let mut failed: Vec<&RunRow> = rows.iter().filter(|r| r.status == "failed").collect();
    let mut others: Vec<&RunRow> = rows
        .iter()
        .filter(|r| r.status != "failed" && !is_hit(r))
        .collect();
    let mut hits: Vec<&RunRow> = rows.iter().filter(|r| is_hit(r)).collect();
    let by_id = |a: &&RunRow, b: &&RunRow| (&a.project, &a.task).cmp(&(&b.project, &b.task));
    failed.sort_by(by_id);
    others.sort_by(by_id);
    hits.sort_by(|a, b| b.duration_ms.cmp(&a.duration_ms).then_with(|| by_id(a, b)));
    let folded = hits.len().saturating_sub(HITS_SHOWN);
    hits.truncate(HITS_SHOWN);
    let shown: Vec<&RunRow> = failed.iter().chain(&others).chain(&hits).copied().collect();
    if !shown.is_empty() {
        text.push('\n');
    }
    let width = shown
        .iter()
        .map(|r| r.project.len() + r.task.len() + 1)
        .max()
        .unwrap_or(0);
    for row in &shown {
        let id = format!("{}#{}", row.project, row.task);
        let started = row.status == "success" || row.status == "failed";
        let duration = if started {
            format_duration(std::time::Duration::from_millis(row.duration_ms))
        } else {
            String::new()
        };
        let key = row
            .key
            .as_deref()
            .map_or("—".to_string(), |k| k.chars().take(12).collect());
        let mut line = format!(
            "{:<16}{id:<width$}  {duration:>7}  {key:<12}",
            status_word(row)
        );
        let notes = notes(row);
        if !notes.is_empty() {
            line.push_str("  ");
            line.push_str(&notes.join(" · "));
        }
        text.push_str(line.trim_end());
        text.push('\n');
        // A failure's last lines, as history kept them (the run's recap showed them too).
        if let Some(tail) = &row.output_tail {
            let lines: Vec<&str> = tail.lines().collect();
            for line in &lines[lines.len().saturating_sub(TAIL_SHOWN)..] {
                text.push_str(format!("  │ {line}").trim_end());
                text.push('\n');
            }
        }
    }
    if folded > 0 {
        let hits = if folded == 1 { "hit" } else { "hits" };
        text.push_str(&format!("… and {folded} more cache {hits}\n"));
    }
    let rerun: Vec<String> = failed
        .iter()
        .map(|r| vx_core::script::quote_word(&format!("{}#{}", r.project, r.task)))
        .collect();
    if !rerun.is_empty() {
        text.push_str(&format!("\nre-run: vx run {}\n", rerun.join(" ")));
    }
    text
}

/// The row's outcome as the footer words it: the status, or how a hit was served.
fn status_word(row: &RunRow) -> &str {
    match (row.status.as_str(), row.cache.as_str()) {
        ("success", "up-to-date") => "up-to-date",
        ("success", "local") => "restored-local",
        ("success", "remote") => "restored-remote",
        (status, _) => status,
    }
}

/// What a row's line says after its key: memory and CPU of an executed task, and why a task
/// failed or was skipped.
fn notes(row: &RunRow) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(peak) = row.peak_rss_bytes {
        notes.push(format_size(peak));
    }
    if let Some(cpu) = row.cpu_ms.filter(|&c| c > 0 && row.duration_ms > 0) {
        notes.push(format!("{:.1}× cpu", cpu as f64 / row.duration_ms as f64));
    }
    if row.status == "failed" {
        notes.push(failure_reason(row));
    }
    if row.sandbox_violations > 0 {
        let s = if row.sandbox_violations == 1 { "" } else { "s" };
        notes.push(format!("{} sandbox violation{s}", row.sandbox_violations));
    }
    if let Some(cause) = &row.blocked_by {
        notes.push(format!("blocked by {cause}"));
    }
    if row.attempts > 1 {
        notes.push(format!("{} attempts", row.attempts));
    }
    notes
}

fn failure_reason(row: &RunRow) -> String {
    if let Some(reason) = not_ready_word(row.not_ready) {
        return format!("not ready: {reason}");
    }
    if row.timed_out {
        return "timed out".to_string();
    }
    match row.exit_code {
        Some(code) if code > 128 && code < 128 + 65 => {
            match vx_engine::exit::signal_name(code - 128) {
                Some(name) => format!("exit {code} ({name})"),
                None => format!("exit {code}"),
            }
        }
        Some(code) => format!("exit {code}"),
        None => "did not start".to_string(),
    }
}

fn not_ready_word(code: u8) -> Option<&'static str> {
    match code {
        1 => Some("exited"),
        2 => Some("timed-out"),
        3 => Some("spawn"),
        4 => Some("unneeded"),
        _ => None,
    }
}

fn list_text(runs: &[Invocation], short: &dyn Fn(&str) -> String) -> String {
    let ids: Vec<String> = runs.iter().map(|i| short(&i.run_id)).collect();
    let width = ids.iter().map(String::len).max().unwrap_or(8);
    let outcomes: Vec<String> = runs
        .iter()
        .map(|inv| match interrupted_by(inv.exit_code) {
            _ if inv.exit_code == 0 => "passed".to_string(),
            Some(signal) => format!("interrupted ({signal})"),
            None => format!("failed ({})", inv.exit_code),
        })
        .collect();
    let outcome_width = outcomes.iter().map(String::len).max().unwrap_or(6).max(11);
    let mut text = String::new();
    for ((inv, id), outcome) in runs.iter().zip(&ids).zip(&outcomes) {
        let cached: u64 = ["up_to_date", "local", "remote"]
            .iter()
            .filter_map(|k| inv.counts.get(*k))
            .sum();
        let tasks = if inv.task_count == 1 { "task" } else { "tasks" };
        text.push_str(&format!(
            "{id:<width$}  {}  {outcome:<outcome_width$}  {:>7}  {} {tasks} · {cached} cached  {}\n",
            when(inv.started_at),
            took(inv),
            inv.task_count,
            command(inv)
        ));
    }
    text
}

fn to_json(value: &impl Serialize) -> String {
    format!(
        "{}\n",
        serde_json::to_string_pretty(value).unwrap_or_default()
    )
}

/// `vx last --format json`.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "vx last", description = "Printed by `vx last --format json`.")]
pub struct LastRun {
    pub invocation: RecordedRun,
    /// One per non-group task that had an outcome, in the order they were recorded.
    pub tasks: Vec<RecordedTask>,
}

/// `vx last --list --format json`.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(
    title = "vx last --list",
    description = "Printed by `vx last --list --format json`."
)]
pub struct LastList {
    /// Newest first.
    pub runs: Vec<ListedRun>,
}

/// One recorded invocation of `vx run` (HIST-1).
#[derive(Debug, Serialize, JsonSchema)]
pub struct RecordedRun {
    pub run_id: String,
    /// The command line; arguments forwarded to tasks are digests.
    pub argv: Vec<String>,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// RFC 3339, UTC.
    pub ended_at: String,
    pub duration_ms: u64,
    pub exit_code: i32,
    pub task_count: u64,
    /// Tasks per status (`success`, `failed`, `skipped`) and per cache kind (`miss`,
    /// `up_to_date`, `local`, `no_cache`).
    pub counts: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dirty: Option<bool>,
    /// `github-actions`, `gitlab-ci`, `buildkite`, `circleci` or `ci`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci_provider: Option<String>,
    pub os: String,
    pub arch: String,
    pub vx_version: String,
    pub concurrency: u32,
    /// The cache policy, e.g. `local:rw`.
    pub cache_policy: String,
    /// A replayed run (nothing it read had changed since run `replay_of`, whose tasks it
    /// lists): the id of that run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<String>,
}

/// One task of a recorded run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RecordedTask {
    /// `project#task`.
    pub id: String,
    pub project: String,
    pub task: String,
    /// `success`, `failed` or `skipped`.
    pub status: String,
    /// `miss`, `up-to-date`, `restored-local`, `restored-remote` or `no-cache`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_rss_bytes: Option<u64>,
    pub start_offset_ms: u64,
    pub end_offset_ms: u64,
    pub attempts: u32,
    pub timed_out: bool,
    /// `exited`, `timed-out`, `spawn` or `unneeded`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_ready: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<String>,
    pub sandbox_violations: u64,
    pub admission_held_ms: u64,
    /// The result was saved to the cache.
    pub saved: bool,
    /// Why not: `failed`, `uncached` (no `cache` table), `writes-off`, `inputs-changed`,
    /// `tainted`, `excluded-dependency`, `save-failed`, `too-large`, `not-downloaded`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsaved_reason: Option<String>,
    /// A failed task: the last lines of its output (at most 30 lines and 8 KiB, escapes
    /// stripped), as history keeps them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tail: Option<String>,
}

/// One run of `vx last --list`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListedRun {
    pub run_id: String,
    /// The shortest unique prefix of the run id (dashes removed), at least 8 digits.
    pub short_id: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub duration_ms: u64,
    pub exit_code: i32,
    pub task_count: u64,
    pub counts: BTreeMap<String, u64>,
    pub argv: Vec<String>,
}

fn recorded(inv: &Invocation) -> RecordedRun {
    RecordedRun {
        run_id: inv.run_id.clone(),
        argv: inv.argv.clone(),
        started_at: rfc3339(inv.started_at.div_euclid(1000)),
        ended_at: rfc3339(inv.ended_at.div_euclid(1000)),
        duration_ms: (inv.ended_at - inv.started_at).max(0) as u64,
        exit_code: inv.exit_code,
        task_count: inv.task_count,
        counts: inv.counts.clone(),
        commit: inv.commit.clone(),
        branch: inv.branch.clone(),
        dirty: inv.dirty,
        ci_provider: inv.ci_provider.clone(),
        os: inv.os.clone(),
        arch: inv.arch.clone(),
        vx_version: inv.vx_version.clone(),
        concurrency: inv.concurrency,
        cache_policy: inv.cache_policy.clone(),
        replay_of: inv.replay_of.clone(),
    }
}

fn listed(inv: &Invocation, short_id: String) -> ListedRun {
    ListedRun {
        run_id: inv.run_id.clone(),
        short_id,
        started_at: rfc3339(inv.started_at.div_euclid(1000)),
        duration_ms: (inv.ended_at - inv.started_at).max(0) as u64,
        exit_code: inv.exit_code,
        task_count: inv.task_count,
        counts: inv.counts.clone(),
        argv: inv.argv.clone(),
    }
}

fn task(row: &RunRow) -> RecordedTask {
    let cache = match row.cache.as_str() {
        "" => None,
        "local" => Some("restored-local".to_string()),
        "remote" => Some("restored-remote".to_string()),
        other => Some(other.to_string()),
    };
    RecordedTask {
        id: format!("{}#{}", row.project, row.task),
        project: row.project.clone(),
        task: row.task.clone(),
        status: row.status.clone(),
        cache,
        key: row.key.clone(),
        exit_code: row.exit_code,
        duration_ms: row.duration_ms,
        cpu_ms: row.cpu_ms,
        peak_rss_bytes: row.peak_rss_bytes,
        start_offset_ms: row.start_offset_ms,
        end_offset_ms: row.end_offset_ms,
        attempts: row.attempts,
        timed_out: row.timed_out,
        not_ready: not_ready_word(row.not_ready).map(str::to_string),
        blocked_by: row.blocked_by.clone(),
        sandbox_violations: row.sandbox_violations,
        admission_held_ms: row.admission_held_ms,
        saved: row.saved,
        unsaved_reason: row.unsaved_reason.clone(),
        output_tail: row.output_tail.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_schema<T: JsonSchema>(file: &str) {
        let path = format!("{}/../../docs/schemas/{file}", env!("CARGO_MANIFEST_DIR"));
        let derived = serde_json::to_string_pretty(&schemars::schema_for!(T)).unwrap() + "\n";
        if std::env::var_os("VX_UPDATE_SCHEMAS").is_some() {
            std::fs::write(&path, derived).unwrap();
            return;
        }
        let shipped = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            shipped == derived,
            "docs/schemas/{file} is out of date: run `VX_UPDATE_SCHEMAS=1 cargo test -p vx-run --bin vx schema`"
        );
    }

    #[test]
    fn the_shipped_schemas_of_last_are_the_ones_the_types_derive() {
        check_schema::<LastRun>("last.schema.json");
        check_schema::<LastList>("last-list.schema.json");
    }

    #[test]
    fn short_ids_are_unique_prefixes_of_at_least_eight_digits() {
        let ids: Vec<String> = [
            "0193a1f4-c2e1-7000-8000-000000000001",
            "0193a1f4-c2e1-7000-8000-000000000002",
            "0193b000-0000-7000-8000-000000000000",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let short = short_ids(&ids);
        assert_eq!(short[&ids[0]], "0193a1f4c2e170008000000000000001");
        assert_eq!(short[&ids[2]], "0193b000");
        assert_eq!(short_ids(&ids[2..])[&ids[2]], "0193b000");
        let odd = ["a".to_string(), "ab".to_string()];
        assert_eq!(
            short_ids(&odd)["a"],
            "a",
            "ids shorter than 8 digits are shown whole"
        );
    }

    #[test]
    fn an_executed_row_notes_its_memory_and_cpu_parallelism() {
        let row = RunRow {
            status: "success".into(),
            duration_ms: 1000,
            cpu_ms: Some(1400),
            peak_rss_bytes: Some(312 << 20),
            attempts: 1,
            ..RunRow::default()
        };
        assert_eq!(notes(&row), ["312.0 MiB", "1.4× cpu"]);
        let idle = RunRow {
            cpu_ms: Some(0),
            peak_rss_bytes: None,
            ..row
        };
        assert!(notes(&idle).is_empty());
    }

    #[test]
    fn failure_reasons() {
        let row = |exit: Option<i32>, timed_out: bool, not_ready: u8| RunRow {
            status: "failed".into(),
            exit_code: exit,
            timed_out,
            not_ready,
            ..RunRow::default()
        };
        assert_eq!(failure_reason(&row(Some(2), false, 0)), "exit 2");
        assert_eq!(
            failure_reason(&row(Some(139), false, 0)),
            "exit 139 (SIGSEGV)"
        );
        assert_eq!(failure_reason(&row(Some(124), true, 0)), "timed out");
        assert_eq!(failure_reason(&row(Some(1), false, 1)), "not ready: exited");
    }
}
