//! `vx report --merge FILE…` (SCHED-8): one recap of a run split with `--shard K/N`, from the
//! `--summarize` file of each part: what each part ran, took from the others and how long it
//! took, the failures with the part that had them, the slowest part against an even split of
//! the work, and the parts whose summary is missing (a runner that died): their tasks are not
//! accounted for, and the exit code is 1.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;
use vx_core::Diagnostic;

use crate::cli::ReportArgs;
use crate::render::out_str;
use vx_engine::error::Failure;
use vx_engine::exit;

/// One part's summary, as read.
struct Part {
    file: PathBuf,
    doc: Value,
}

impl Part {
    fn tasks(&self) -> impl Iterator<Item = &Value> {
        self.doc["tasks"].as_array().into_iter().flatten()
    }
}

pub fn report(cwd: &Path, args: ReportArgs) -> Result<i32, Failure> {
    let mut parts: BTreeMap<u64, Part> = BTreeMap::new();
    let mut total: Option<u64> = None;
    for file in args.merge {
        let shown = file.display().to_string();
        let text = std::fs::read_to_string(cwd.join(&file))
            .map_err(|e| Failure::from(Diagnostic::new(format!("cannot read {shown}: {e}"))))?;
        let doc: Value = serde_json::from_str(&text).map_err(|e| {
            Failure::from(Diagnostic::new(format!(
                "{shown}:{}:{}: not a run summary: {e}",
                e.line(),
                e.column()
            )))
        })?;
        let (Some(part), Some(count)) = (
            doc["shard"]["part"].as_u64(),
            doc["shard"]["parts"].as_u64(),
        ) else {
            return Err(Diagnostic::new(format!(
                "{shown} is not the summary of a part of a `--shard` run (it has no `shard`)"
            ))
            .hint("write each runner's with `vx run … --shard=K/N --summarize=FILE`")
            .into());
        };
        let expected = *total.get_or_insert(count);
        if expected != count {
            return Err(Failure::usage(format!(
                "{shown} is part {part} of {count}, the files before it of {expected} parts"
            )));
        }
        if let Some(earlier) = parts.get(&part) {
            return Err(Failure::usage(format!(
                "{shown} and {} are both part {part}",
                earlier.file.display()
            )));
        }
        parts.insert(part, Part { file, doc });
    }
    let (text, ok) = recap(&parts, total.unwrap_or(0));
    out_str(&text);
    Ok(if ok { exit::SUCCESS } else { exit::FAILURE })
}

/// Seconds, as the recap shows them.
fn seconds(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

/// The recap, and whether the run succeeded as a whole (every part present and green).
fn recap(parts: &BTreeMap<u64, Part>, n: u64) -> (String, bool) {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "part   own tasks  executed  restored  failed  from others  run for others  wall"
    );
    let mut work = 0u64;
    let mut slowest = 0u64;
    let mut cut_off = 0usize;
    let mut failures: Vec<(String, u64, Option<i64>)> = Vec::new();
    for (&k, part) in parts {
        let mine = |t: &&Value| t["shard"].as_u64() == Some(k);
        let own: Vec<&Value> = part.tasks().filter(mine).collect();
        let others: Vec<&Value> = part.tasks().filter(|t| !mine(t)).collect();
        let ran = |t: &&&Value| t["attempts"].as_u64().unwrap_or(0) > 0;
        let executed = own.iter().filter(ran).count();
        let restored = own
            .iter()
            .filter(|t| {
                matches!(
                    t["cache"].as_str(),
                    Some("up-to-date" | "restored-local" | "restored-remote")
                )
            })
            .count();
        // KEY-9: hits whose upstreams executed to the same outputs.
        cut_off += own
            .iter()
            .filter(|t| t["cut_off"].as_array().is_some_and(|a| !a.is_empty()))
            .count();
        let failed: Vec<&&Value> = own.iter().filter(|t| t["status"] == "failed").collect();
        for t in &failed {
            failures.push((
                t["id"].as_str().unwrap_or("?").to_string(),
                k,
                t["exit_code"].as_i64(),
            ));
        }
        work += own
            .iter()
            .filter(ran)
            .map(|t| t["duration_ms"].as_u64().unwrap_or(0))
            .sum::<u64>();
        let wall = part.doc["total_ms"].as_u64().unwrap_or(0);
        slowest = slowest.max(wall);
        let from_others = others
            .iter()
            .filter(|t| t["cache"] == "restored-remote")
            .count();
        let run_for_others = others.iter().filter(ran).count();
        let _ = writeln!(
            out,
            "{:<5} {:>10}  {executed:>8}  {restored:>8}  {:>6}  {from_others:>11}  {run_for_others:>14}  {}",
            format!("{k}/{n}"),
            own.len(),
            failed.len(),
            seconds(wall)
        );
    }
    let missing: Vec<u64> = (1..=n).filter(|k| !parts.contains_key(k)).collect();
    for k in &missing {
        let _ = writeln!(
            out,
            "{:<5} no summary: the runner of this part did not finish; its tasks are not accounted for",
            format!("{k}/{n}")
        );
    }
    let even = work / n.max(1);
    let ratio = if even > 0 {
        format!(" ({:.2}× an even split)", slowest as f64 / even as f64)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "work executed: {} in all, {} per part split evenly; slowest part: {}{ratio}",
        seconds(work),
        seconds(even),
        seconds(slowest)
    );
    if cut_off > 0 {
        let tasks = if cut_off == 1 { "task" } else { "tasks" };
        let _ = writeln!(out, "cut off: {cut_off} {tasks}");
    }
    for (id, k, code) in &failures {
        let code = code.map_or(String::new(), |c| format!(" (exit {c})"));
        let _ = writeln!(out, "failed: {id} on part {k}{code}");
    }
    let ok = missing.is_empty() && failures.is_empty();
    let verdict = match (missing.len(), failures.len()) {
        (0, 0) => "every part succeeded".to_string(),
        (0, f) => format!("{f} failed"),
        (m, 0) => format!("{m} of {n} parts missing"),
        (m, f) => format!("{f} failed, {m} of {n} parts missing"),
    };
    let _ = writeln!(out, "{verdict}");
    (out, ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(tasks: Value) -> Part {
        Part {
            file: PathBuf::from("part.json"),
            doc: serde_json::json!({ "total_ms": 1000, "tasks": tasks }),
        }
    }

    #[test]
    fn the_recap_counts_the_hits_early_cutoff_saved_on_every_part() {
        let hit = |id: &str, shard: u64, cut: &[&str]| {
            serde_json::json!({ "id": id, "shard": shard, "status": "success",
                "cache": "up-to-date", "attempts": 0, "cut_off": cut })
        };
        let mut parts = BTreeMap::new();
        parts.insert(
            1,
            part(serde_json::json!([hit("a#build", 1, &["core#build"])])),
        );
        parts.insert(
            2,
            part(serde_json::json!([
                hit("b#build", 2, &["core#build"]),
                hit("c#build", 2, &[]),
                // Another part's task, restored here: counted on its own part only.
                hit("a#build", 1, &["core#build"]),
            ])),
        );
        let (text, ok) = recap(&parts, 2);
        assert!(ok, "{text}");
        assert!(text.contains("\ncut off: 2 tasks\n"), "{text}");
        let (text, _) = recap(&BTreeMap::from([(1, part(serde_json::json!([])))]), 1);
        assert!(!text.contains("cut off"), "{text}");
    }
}
