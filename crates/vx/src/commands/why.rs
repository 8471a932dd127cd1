//! `vx why TASK` (HIST-3): why a task executed, or was served from the cache, in its latest
//! recorded run — by comparing the key components recorded for this run's key and the
//! previous run's key (HIST-2).
//!
//! Read-only: it opens the index read-only, reads only the `[workspace]` table and history,
//! and never task configuration, so it works while a project's `vx.toml` is broken.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;
use vx_core::key::is_outputs_fold;
use vx_core::{Diagnostic, TaskId};
use vx_store::index::{KeyComponent, RunRow};
use vx_store::{Access, OpenError, Store};

use crate::cli::WhyArgs;
use crate::render;
use crate::render::out_str;
use vx_engine::clock::rfc3339;
use vx_engine::error::Failure;
use vx_engine::{exit, workspace};

pub fn why(cwd: &Path, args: WhyArgs) -> Result<i32, Failure> {
    let json = super::json_format(args.format.as_deref())?;
    let (root, dir) = workspace::store_location(cwd, args.cache_dir.as_deref())?;
    let store = open_read_only(&dir)?;
    let Some(id) = resolve(&store, cwd, &root, &args.task)? else {
        render::notice(&format!("history has no run of `{}`", args.task));
        return Ok(exit::FAILURE);
    };
    if let Some(prefix) = &args.run {
        let runs = store
            .run_ids_with_prefix(prefix)
            .map_err(|e| Failure::usage(e.to_string()))?;
        if runs.len() > 1 {
            let shown: Vec<String> = runs.iter().take(5).map(|r| format!("`{r}`")).collect();
            return Err(Diagnostic::new(format!(
                "--run `{prefix}` names {} runs: {}",
                runs.len(),
                shown.join(", ")
            ))
            .hint("give more digits of the run id")
            .into());
        }
    }
    let rows = match &args.run {
        Some(prefix) => store.task_runs_from(&id.project, &id.task, prefix, 2),
        None => store.task_runs(&id.project, &id.task, 2),
    }
    .map_err(|e| Failure::usage(e.to_string()))?;
    let Some(this) = rows.first() else {
        // A group is never recorded, and a task vx never caches needs no run to be explained.
        if let Some(verdict) = never_cached(cwd, &id, false) {
            out_str(&format!("{id}\nverdict    {verdict}\n"));
            return Ok(exit::SUCCESS);
        }
        render::notice(&format!("history has no run of `{id}`"));
        return Ok(exit::FAILURE);
    };
    let previous = rows.get(1);
    let mut explanation = explain(&store, this, previous);
    // Only a row without a key or a cache can be of a task vx never caches: the configuration
    // (a whole workspace load) is read only then.
    let uncached = this.cache == "no-cache";
    if this.key.is_none() || uncached {
        if let Some(verdict) = never_cached(cwd, &id, uncached) {
            explanation.verdict = verdict;
        }
    }
    if json {
        out_str(&format!(
            "{}\n",
            serde_json::to_string_pretty(&as_json(&id, this, previous, &explanation))
                .unwrap_or_default()
        ));
    } else {
        out_str(&pretty(&id, this, previous, &explanation));
    }
    Ok(exit::SUCCESS)
}

/// STORE-3: reading verbs never modify the index and refuse another schema version.
pub fn open_read_only(dir: &Path) -> Result<Store, Failure> {
    match Store::open(dir, Access::ReadOnly) {
        Ok(store) => Ok(store),
        Err(OpenError::Schema { found, expected }) => {
            let d = Diagnostic::new(format!(
                "the cache index has schema {found}, this vx reads {expected}"
            ));
            Err(if found < expected {
                d.hint("run `vx run` once to upgrade it")
            } else {
                d.hint("it was written by a newer vx")
            }
            .into())
        }
        Err(OpenError::Corrupt { path, reason }) => Err(Diagnostic::new(format!(
            "{} is not a valid cache index ({reason})",
            path.display()
        ))
        .hint("delete it together with cache.db-wal and cache.db-shm")
        .into()),
        Err(other) => Err(Diagnostic::new(other.to_string()).into()),
    }
}

/// A task id, or a bare name that resolves if exactly one project has runs of it, else the
/// cwd project's (HIST-3).
fn resolve(store: &Store, cwd: &Path, root: &Path, text: &str) -> Result<Option<TaskId>, Failure> {
    if let Some(id) = TaskId::parse(text).filter(|_| text.contains('#')) {
        // `web#build` names `@acme/web#build` when history has only that scope's `web`, as
        // `vx run` resolves it.
        let projects = store
            .tasks_with_runs(&id.task)
            .map_err(|e| Failure::usage(e.to_string()))?;
        if !projects.contains(&id.project) {
            let scoped: Vec<&String> = projects
                .iter()
                .filter(|p| {
                    p.split_once('/')
                        .is_some_and(|(scope, rest)| scope.starts_with('@') && rest == id.project)
                })
                .collect();
            if let [one] = scoped.as_slice() {
                return Ok(Some(TaskId::new(one.as_str(), &id.task)));
            }
        }
        return Ok(Some(id));
    }
    let projects = store
        .tasks_with_runs(text)
        .map_err(|e| Failure::usage(e.to_string()))?;
    if projects.len() == 1 {
        return Ok(Some(TaskId::new(&projects[0], text)));
    }
    if let Ok(ws) = workspace::load(cwd) {
        let real = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        if let Ok(rel) = real.strip_prefix(root) {
            let rel = rel.to_string_lossy().replace('\\', "/");
            if let Some(project) = ws.project_containing(&rel) {
                if projects.contains(&project.name) {
                    return Ok(Some(TaskId::new(&project.name, text)));
                }
            }
        }
    }
    if projects.is_empty() {
        return Ok(None);
    }
    let candidates: Vec<String> = projects.iter().map(|p| format!("`{p}#{text}`")).collect();
    Err(Diagnostic::new(format!(
        "`{text}` ran in several projects; name one: {}",
        candidates.join(", ")
    ))
    .into())
}

/// One component that differs between the two keys.
struct Change {
    change: &'static str,
    kind: String,
    name: String,
    before: Option<String>,
    after: Option<String>,
}

struct Explanation {
    verdict: String,
    /// Components of this run's key, and how many did not change.
    total: usize,
    unchanged: usize,
    changes: Vec<Change>,
    next: Vec<String>,
    /// A hit cut off at upstreams that re-ran (KEY-9), one line each.
    cut_off: Vec<String>,
}

/// The verdict for a task vx never caches, said as what it is: no `cache` table, persistent,
/// interactive, a group; or `None` for a task with a cache table. Where the configuration does
/// not declare the task (any more), `recorded_uncached` (history's word) decides.
fn never_cached(cwd: &Path, id: &TaskId, recorded_uncached: bool) -> Option<String> {
    let ws = workspace::load(cwd).ok();
    let config = ws
        .as_ref()
        .and_then(|ws| vx_core::graph::task_config(ws, id));
    let Some(config) = config else {
        return recorded_uncached
            .then(|| format!("`{id}` has no `cache` table: it runs every time"));
    };
    if config.is_group() {
        Some(format!(
            "`{id}` is a group: it runs nothing itself, so it has no key"
        ))
    } else if config.is_persistent() {
        Some(format!("`{id}` is persistent: never cached"))
    } else if config.interactive == Some(true) {
        Some(format!("`{id}` is interactive: never cached"))
    } else if config.cache.is_none() {
        Some(format!("`{id}` has no `cache` table: it runs every time"))
    } else {
        None
    }
}

fn explain(store: &Store, this: &RunRow, previous: Option<&RunRow>) -> Explanation {
    let mut out = Explanation {
        verdict: String::new(),
        total: 0,
        unchanged: 0,
        changes: Vec::new(),
        next: Vec::new(),
        cut_off: Vec::new(),
    };
    let Some(key) = &this.key else {
        out.verdict = match &this.blocked_by {
            Some(cause) => format!("skipped: blocked by {cause}, so it has no key"),
            None => "no key: the task did not get as far as its cache".into(),
        };
        return out;
    };
    let components = store.key_inputs(key).ok().flatten().unwrap_or_default();
    out.total = components.len();
    let Some(previous) = previous else {
        out.verdict = "no earlier run of this task is recorded here".into();
        return out;
    };
    let hit = matches!(this.cache.as_str(), "up-to-date" | "local" | "remote");
    if previous.key.as_deref() == Some(key) {
        out.unchanged = out.total;
        if hit {
            out.cut_off = cut_off(store, this, &components);
        }
        out.verdict = if this.cache == "up-to-date" {
            "same key, served from cache: up to date, its outputs were in place".into()
        } else if hit {
            "same key, served from cache: restored (why: below)".into()
        } else if previous.status == "failed" {
            "same key, executed anyway: the previous run failed — failures are never cached".into()
        } else if !previous.saved {
            format!(
                "same key, executed anyway: the previous result was not saved: {}",
                previous.unsaved_reason.as_deref().unwrap_or("unknown")
            )
        } else if this.cache == "miss" && store.entry(key).ok().flatten().is_some() {
            "same key, executed anyway: cache reads were off (--force)".into()
        } else {
            "same key, executed anyway: the entry was pruned or damaged".into()
        };
        return out;
    }
    let Some(before) = previous
        .key
        .as_ref()
        .and_then(|k| store.key_inputs(k).ok().flatten())
    else {
        out.verdict = "the key changed; components of the previous key were not recorded on this machine (it came from the remote cache)".into();
        return out;
    };
    let map = |list: &[KeyComponent]| -> BTreeMap<(String, String), String> {
        list.iter()
            .map(|c| ((c.kind.clone(), c.name.clone()), c.digest.clone()))
            .collect()
    };
    let (old, new) = (map(&before), map(&components));
    for ((kind, name), digest) in &new {
        match old.get(&(kind.clone(), name.clone())) {
            Some(was) if was == digest => out.unchanged += 1,
            Some(was) => out.changes.push(Change {
                change: "changed",
                kind: kind.clone(),
                name: name.clone(),
                before: Some(was.clone()),
                after: Some(digest.clone()),
            }),
            None => out.changes.push(Change {
                change: "added",
                kind: kind.clone(),
                name: name.clone(),
                before: None,
                after: Some(digest.clone()),
            }),
        }
    }
    for ((kind, name), digest) in &old {
        if !new.contains_key(&(kind.clone(), name.clone())) {
            out.changes.push(Change {
                change: "removed",
                kind: kind.clone(),
                name: name.clone(),
                before: Some(digest.clone()),
                after: None,
            });
        }
    }
    out.changes
        .sort_by(|a, b| (order(&a.kind), &a.name).cmp(&(order(&b.kind), &b.name)));
    out.verdict = format!(
        "the key changed ({} of {} components)",
        out.changes.len(),
        out.total
    );
    for change in &out.changes {
        if change.kind == "upstream" && change.change == "changed" && !change.name.ends_with(')') {
            let what = if change.after.as_deref().is_some_and(is_outputs_fold) {
                "outputs changed"
            } else {
                "key moved"
            };
            out.next.push(format!(
                "{}'s {what}: run `vx why {}`",
                change.name, change.name
            ));
        }
    }
    out
}

/// KEY-9: the lines of a hit whose key folds an upstream's outputs while that upstream
/// executed in the same run — it was cut off there (`upstream ui#build re-ran (src/a.ts
/// changed); its outputs are identical → this task is up to date`).
fn cut_off(store: &Store, this: &RunRow, components: &[KeyComponent]) -> Vec<String> {
    let result = if this.cache == "up-to-date" {
        "this task is up to date"
    } else {
        "this task was served from the cache"
    };
    let mut lines = Vec::new();
    for component in components {
        if component.kind != "upstream" || !is_outputs_fold(&component.digest) {
            continue;
        }
        let Some(id) = TaskId::parse(&component.name) else {
            continue;
        };
        let rows = store
            .task_runs_from(&id.project, &id.task, &this.run_id, 2)
            .unwrap_or_default();
        let Some(upstream) = rows.first().filter(|r| r.run_id == this.run_id) else {
            continue;
        };
        if upstream.status != "success" || !matches!(upstream.cache.as_str(), "miss") {
            continue;
        }
        let because = reran_because(store, upstream, rows.get(1));
        lines.push(format!(
            "upstream {id} re-ran ({because}); its outputs are identical → {result}"
        ));
    }
    lines
}

/// Why an upstream executed, in a few words: its first changed key component.
fn reran_because(store: &Store, row: &RunRow, previous: Option<&RunRow>) -> String {
    let explained = explain(store, row, previous);
    match explained.changes.first() {
        Some(c) if c.kind == "input" => format!("{} {}", c.name, c.change),
        Some(c) if c.name.is_empty() => format!("its {} {}", c.kind, c.change),
        Some(c) => format!("{} {} {}", c.kind, c.name, c.change),
        None => explained.verdict,
    }
}

/// The order components are listed in: as the key folds them (KEY-2).
fn order(kind: &str) -> usize {
    [
        "format",
        "platform",
        "workspace",
        "dependency",
        "manifest",
        "config",
        "args",
        "env",
        "runtime",
        "ws-runtime",
        "upstream",
        "input",
    ]
    .iter()
    .position(|k| *k == kind)
    .unwrap_or(usize::MAX)
}

/// A digest as shown: 8 hex digits of a blob or key (modes kept for inputs).
fn short(digest: &str) -> String {
    match digest.split_once(' ') {
        Some((mode, blob)) if mode != "100644" => format!("{mode} {}", &blob[..blob.len().min(8)]),
        Some((_, blob)) => blob[..blob.len().min(8)].to_string(),
        None => digest[..digest.len().min(8)].to_string(),
    }
}

fn when(ms: i64) -> String {
    let text = rfc3339(ms / 1000);
    format!("{} {}", &text[..10], &text[11..16])
}

fn cache_word(row: &RunRow) -> &str {
    if row.status != "success" {
        return &row.status;
    }
    match row.cache.as_str() {
        "up-to-date" => "up-to-date",
        "local" => "restored-local",
        "remote" => "restored-remote",
        _ => "executed",
    }
}

fn row_line(label: &str, row: &RunRow) -> String {
    let key = row
        .key
        .as_deref()
        .map_or("none".to_string(), |k| k[..12.min(k.len())].to_string());
    format!(
        "  {label:<10} {}  {:<16} key {key}\n",
        when(row.started_at),
        cache_word(row)
    )
}

fn pretty(id: &TaskId, this: &RunRow, previous: Option<&RunRow>, e: &Explanation) -> String {
    let short_run: String = this.run_id.chars().filter(|c| *c != '-').take(12).collect();
    let mut text = format!("{id} — run {short_run}\n");
    text.push_str(&row_line("this run", this));
    if let Some(previous) = previous {
        text.push_str(&row_line("previous", previous));
    }
    text.push_str(&format!("verdict    {}\n", e.verdict));
    for line in &e.cut_off {
        text.push_str(&format!("cut off    {line}\n"));
    }
    if let Some(reason) = &this.restore_reason {
        text.push_str(&format!("restored   {reason}\n"));
    }
    let width = e.changes.iter().map(|c| c.name.len()).max().unwrap_or(0);
    for c in &e.changes {
        // A dependency's digest is its versions, shown whole.
        let show = |d: &str| {
            if c.kind == "dependency" {
                d.to_string()
            } else {
                short(d)
            }
        };
        let digests = match (&c.before, &c.after) {
            (Some(b), Some(a)) => format!("{} → {}", show(b), show(a)),
            (None, Some(a)) => show(a),
            (Some(b), None) => show(b),
            (None, None) => String::new(),
        };
        text.push_str(&format!(
            "  {:<8} {:<9} {:<width$}   {digests}\n",
            c.change, c.kind, c.name
        ));
    }
    if !e.next.is_empty() {
        text.push_str("next\n");
        for line in &e.next {
            text.push_str(&format!("  {line}\n"));
        }
    }
    text
}

fn as_json(
    id: &TaskId,
    this: &RunRow,
    previous: Option<&RunRow>,
    e: &Explanation,
) -> serde_json::Value {
    let row = |r: &RunRow| {
        json!({
            "run_id": r.run_id,
            "started_at": rfc3339(r.started_at / 1000),
            "cache": cache_word(r),
            "key": r.key,
            "restored_because": r.restore_reason,
        })
    };
    json!({
        "task": id.to_string(),
        "run_id": this.run_id,
        "verdict": e.verdict,
        "this": row(this),
        "previous": previous.map(row),
        "components": e.changes.iter().map(|c| {
            let mut v = json!({"change": c.change, "kind": c.kind, "name": c.name});
            if let Some(b) = &c.before { v["before"] = json!(b); }
            if let Some(a) = &c.after { v["after"] = json!(a); }
            v
        }).collect::<Vec<_>>(),
        "unchanged": e.unchanged,
        "cut_off": e.cut_off,
    })
}
