//! `--dry` (UI-12): the plan, printed instead of run (`--graph` draws it: `graph.rs`). Keys are derived
//! and the local store is probed for existence only (read-only: nothing is written). Under
//! `--affected` each affected task also names what reached it (SEL-7).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::json;
use vx_core::affected::Reason;
use vx_core::units::format_duration;
use vx_core::TaskId;

use crate::plan::{is_group, Plan};

/// The non-group tasks a node stands for: itself, or a group's members, transitively.
fn real_deps(plan: &Plan, i: usize) -> BTreeSet<usize> {
    let mut found = BTreeSet::new();
    let mut stack: Vec<usize> = plan.graph.nodes[i].deps.clone();
    let mut seen = BTreeSet::new();
    while let Some(d) = stack.pop() {
        if !seen.insert(d) {
            continue;
        }
        if is_group(&plan.workspace, &plan.graph.nodes[d].id) {
            stack.extend(plan.graph.nodes[d].deps.iter().copied());
        } else {
            found.insert(d);
        }
    }
    found
}

fn description(plan: &Plan, i: usize) -> Option<String> {
    vx_core::graph::task_config(&plan.workspace, &plan.graph.nodes[i].id)?
        .description
        .clone()
}

/// SEL-7: under `--affected`, the changed path or the chain of tasks that reached node `i`.
fn affected_reason(plan: &Plan, i: usize) -> Option<&Reason> {
    plan.affected.as_ref()?.reasons.get(&plan.graph.nodes[i].id)
}

/// `packages/lib/src/a.txt`, or `via app#build → lib#build (packages/lib/src/a.txt)`.
fn reason_text(reason: &Reason) -> String {
    match reason {
        Reason::Changed(path) => path.clone(),
        Reason::Via { chain, path } => {
            let chain: Vec<String> = chain.iter().map(ToString::to_string).collect();
            format!("via {} ({path})", chain.join(" → "))
        }
    }
}

/// What `--dry` knows of one non-group task.
pub struct DryRow {
    pub node: usize,
    /// The key, or the probe failure that kept it unknown (KEY-8).
    pub key: Result<String, String>,
    /// The key is a prediction from the current tree (SCHED-6).
    pub prediction: bool,
    pub cache: DryCache,
    /// The median of the task's recent successful executions (SCHED-2), if history has any.
    pub median_ms: Option<u64>,
    /// It would execute remotely (REM-11).
    pub remote: bool,
    /// Upstreams that would run whose outputs the key assumes unchanged from their last run
    /// (KEY-9's early cutoff, predicted from history).
    pub assumes: Vec<TaskId>,
    /// The cache holds the key `assumes` gives: the task is counted as running, and is a hit
    /// if those upstreams produce the same outputs again.
    pub hit_if_unchanged: bool,
}

/// UI-12's prediction: the wall time and the total work of the tasks that would run, from
/// their medians; tasks without history count 0 and are counted apart.
pub struct Predicted {
    pub wall_ms: u64,
    pub work_ms: u64,
    pub unknown: usize,
}

/// What the run would take with `slots` tasks at once: hits, groups and tasks that would not
/// start take nothing.
pub fn predict(plan: &Plan, rows: &[DryRow], slots: usize) -> Predicted {
    let mut durations = vec![0u64; plan.graph.nodes.len()];
    let mut unknown = 0;
    for row in rows {
        if matches!(row.cache, DryCache::Miss | DryCache::NoCache) {
            match row.median_ms {
                Some(ms) => durations[row.node] = ms,
                None => unknown += 1,
            }
        }
    }
    Predicted {
        wall_ms: vx_core::schedule::predicted_wall(&plan.graph, &durations, slots),
        work_ms: durations.iter().sum(),
        unknown,
    }
}

fn approx(ms: u64) -> String {
    format!("~{}", format_duration(std::time::Duration::from_millis(ms)))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DryCache {
    HitLocal,
    /// The remote cache holds it (an existence check, REM-9).
    HitRemote,
    Miss,
    NoCache,
    /// An unrequested persistent task whose dependants all hit (EXEC-13).
    NotStarted,
}

impl DryCache {
    pub(super) fn json(self) -> &'static str {
        match self {
            DryCache::HitLocal => "hit-local",
            DryCache::HitRemote => "hit-remote",
            DryCache::Miss => "miss",
            DryCache::NoCache => "no-cache",
            DryCache::NotStarted => "not-started",
        }
    }

    /// The glyph and cache word a run's one-liner would show (UI-1), so a symbol means one
    /// thing everywhere vx prints it.
    fn symbol(self) -> (&'static str, &'static str) {
        match self {
            DryCache::HitLocal => ("⇢", "local"),
            DryCache::HitRemote => ("⇣", "remote"),
            DryCache::Miss => ("⏺", "miss"),
            DryCache::NoCache => ("⏺", "no-cache"),
            DryCache::NotStarted => ("−", "not started"),
        }
    }
}

/// What the symbols of `--dry` mean, on its first line.
const LEGEND: &str = "⏺ executes · ⇢ local hit · ⇣ remote hit · − does not start · ◇ group";

/// Direct dependencies named on a row at most; more are counted.
const NAMED_DEPS: usize = 3;

/// `--dry` as text (UI-12): the plan in dependency order, one block per level (level 1 needs
/// nothing; a task's level is one more than its deepest dependency's), each row with what it
/// waits for, groups included.
pub fn dry_text(plan: &Plan, rows: &[DryRow], slots: usize) -> String {
    let by_node: std::collections::HashMap<usize, &DryRow> =
        rows.iter().map(|r| (r.node, r)).collect();
    let level = super::levels(plan);
    let mut text = format!("would run, in dependency order ({LEGEND}):\n");
    let deepest = level.iter().copied().max().unwrap_or(0);
    for l in 0..=deepest {
        let nodes: Vec<usize> = (0..plan.graph.nodes.len())
            .filter(|&i| level[i] == l)
            .collect();
        if nodes.is_empty() {
            continue;
        }
        let _ = writeln!(text, "level {}", l + 1);
        for i in nodes {
            let deps = &plan.graph.nodes[i].deps;
            let mut waits = String::new();
            if !deps.is_empty() {
                let named: Vec<String> = deps
                    .iter()
                    .take(NAMED_DEPS)
                    .map(|&d| plan.graph.nodes[d].id.to_string())
                    .collect();
                waits = format!("  ← {}", named.join(", "));
                if deps.len() > NAMED_DEPS {
                    let _ = write!(waits, " +{} more", deps.len() - NAMED_DEPS);
                }
            }
            let Some(row) = by_node.get(&i) else {
                let _ = writeln!(
                    text,
                    "  ◇ {:<11} {}{waits}",
                    "group", plan.graph.nodes[i].id
                );
                continue;
            };
            let key = match &row.key {
                Ok(key) => format!("  {}{}", if row.prediction { "~" } else { "" }, &key[..12]),
                Err(why) => format!("  unknown ({why})"),
            };
            let median = row
                .median_ms
                .map_or(String::new(), |ms| format!("  {}", approx(ms)));
            let (symbol, word) = row.cache.symbol();
            let other = plan
                .shard
                .as_ref()
                .filter(|part| part.owner[i] != part.k)
                .map_or(String::new(), |part| format!(" (part {})", part.owner[i]));
            let _ = writeln!(
                text,
                "  {symbol} {word:<11} {}{}{other}{key}{median}{waits}",
                plan.graph.nodes[i].id,
                if row.remote { " @remote" } else { "" }
            );
            if let Some(d) = description(plan, i) {
                let _ = writeln!(text, "      {d}");
            }
            if let Some(reason) = affected_reason(plan, i) {
                let _ = writeln!(text, "      affected: {}", reason_text(reason));
            }
            if row.hit_if_unchanged {
                let named: Vec<String> = row.assumes.iter().map(ToString::to_string).collect();
                let verb = if named.len() == 1 {
                    "produces"
                } else {
                    "produce"
                };
                let _ = writeln!(
                    text,
                    "      a hit if {} {verb} the same outputs again (early cutoff)",
                    named.join(", ")
                );
            }
        }
    }
    let n = rows.len();
    let local_hits = rows
        .iter()
        .filter(|r| r.cache == DryCache::HitLocal)
        .count();
    let remote_hits = rows
        .iter()
        .filter(|r| r.cache == DryCache::HitRemote)
        .count();
    let hits = local_hits + remote_hits;
    let tasks = plural(n, "task");
    let hit_text = if hits == 1 {
        "1 cache hit".to_string()
    } else {
        format!("{hits} cache hits")
    };
    let local = match (local_hits, remote_hits) {
        (0, 0) => String::new(),
        (local, 0) => format!(" ({local} local)"),
        (0, remote) => format!(" ({remote} remote)"),
        (local, remote) => format!(" ({local} local, {remote} remote)"),
    };
    let _ = writeln!(
        text,
        "{tasks} planned: {hit_text}{local}, {} would run",
        n - hits
    );
    let predicted = predict(plan, rows, slots);
    // With no recorded duration for anything that would run, a `~0ms` wall would be a guess
    // dressed as a figure.
    if predicted.unknown > 0 && predicted.work_ms == 0 {
        let _ = writeln!(
            text,
            "predicted: no history yet ({} never recorded a duration here)",
            plural(predicted.unknown, "task")
        );
        return text;
    }
    let without = match predicted.unknown {
        0 => String::new(),
        n => format!(" ({} without history)", plural(n, "task")),
    };
    let _ = writeln!(
        text,
        "predicted: {} wall · {} total{without}",
        approx(predicted.wall_ms),
        approx(predicted.work_ms)
    );
    text
}

/// `--dry=json` (UI-12).
pub fn dry_json(plan: &Plan, rows: &[DryRow], slots: usize) -> String {
    let level = super::levels(plan);
    let tasks: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            let i = row.node;
            let node = &plan.graph.nodes[i];
            let deps: Vec<String> = real_deps(plan, i)
                .into_iter()
                .map(|d| plan.graph.nodes[d].id.to_string())
                .collect();
            let mut task = json!({
                "id": node.id.to_string(),
                "project": node.id.project,
                "task": node.id.task,
                "key": row.key.as_ref().ok(),
                "key_unknown": row.key.as_ref().err(),
                "key_is_prediction": row.prediction,
                "cache": row.cache.json(),
                "deps": deps,
                "level": level[i] + 1,
                "placement": if row.remote { "remote" } else { "local" },
            });
            if let Some(d) = description(plan, i) {
                task["description"] = json!(d);
            }
            if let Some(part) = &plan.shard {
                task["shard"] = json!(part.owner[i]);
            }
            if let Some(ms) = row.median_ms {
                task["median_ms"] = json!(ms);
            }
            if !row.assumes.is_empty() {
                let ids: Vec<String> = row.assumes.iter().map(ToString::to_string).collect();
                task["assumes_unchanged"] = json!(ids);
                task["hit_if_unchanged"] = json!(row.hit_if_unchanged);
            }
            if plan.affected.is_some() {
                task["affected"] = match affected_reason(plan, i) {
                    Some(Reason::Changed(path)) => json!({ "path": path, "via": [] }),
                    Some(Reason::Via { chain, path }) => {
                        let via: Vec<String> = chain.iter().map(ToString::to_string).collect();
                        json!({ "path": path, "via": via })
                    }
                    None => serde_json::Value::Null,
                };
            }
            task
        })
        .collect();
    let predicted = predict(plan, rows, slots);
    let doc = json!({
        "tasks": tasks,
        "predicted": {
            "wall_ms": predicted.wall_ms,
            "work_ms": predicted.work_ms,
            "unknown": predicted.unknown,
        },
    });
    format!(
        "{}\n",
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    )
}

/// `1 task`, `3 tasks`.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}
