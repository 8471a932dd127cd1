//! `vx info` (HIST-6): a health report of the workspace, one fact per row, or the same facts
//! as typed JSON fields (`--format json`).
//!
//! [`info`] gathers every fact into one [`Info`] value, then renders it. Nothing here fails
//! on a broken workspace: configuration errors are listed and the command still exits 0;
//! only outside a workspace does it exit 2. The store is opened read-only and never changed
//! (the orphan count is a dry prune). Facts of later milestones say so (`not available in
//! this release`) rather than being left out.

mod host;

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use vx_core::units::format_size;
use vx_core::{Diagnostic, TaskId};
use vx_store::{Access, OpenError, PrunePolicy, Store};

use crate::cli::InfoArgs;
use crate::render::out_str;
use vx_engine::cache_dir::cache_dir;
use vx_engine::error::Failure;
use vx_engine::{exit, workspace};
use vx_exec::host::available_cpus_and_source;

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// Every fact of the report; serialised as the `--format json` output.
#[derive(Debug, Serialize)]
struct Info {
    vx_version: String,
    /// The git short sha vx was built from, when known.
    vx_commit: Option<String>,
    /// `None`: git was not found.
    git_version: Option<String>,
    /// Whether the workspace root is in a git work tree (`None`: git was not found). Outside
    /// one, vx walks the files (DISC-7) and `--affected` is refused.
    git_repository: Option<bool>,
    workspace_root: String,
    /// `None` when the configuration has errors.
    projects: Option<usize>,
    tasks: Option<usize>,
    configuration_errors: Vec<String>,
    concurrency: u32,
    /// `workspace`, `cgroup quota` or `cpus`.
    concurrency_source: &'static str,
    /// SCHED-9: the most adaptive concurrency goes to; `None` when the workspace fixes the
    /// count.
    concurrency_ceiling: Option<u32>,
    /// `None` when admission is off or memory could not be measured.
    memory_budget_bytes: Option<u64>,
    /// `VX_MEMORY_BUDGET`, `MemAvailable`, `cgroup limit`, or `not measured`.
    memory_budget_source: &'static str,
    cache: CacheInfo,
    history: HistoryInfo,
    sandbox: SandboxInfo,
    /// How a task's processes are found and stopped (EXEC-7): `cgroup v2 … at <mount>`, or
    /// `sessions and process groups (<why no cgroup>)`.
    containment: String,
    remote_cache: Option<RemoteCacheInfo>,
    remote_execution: Option<RemoteExecutionInfo>,
    lock: LockInfo,
}

#[derive(Debug, Serialize)]
struct CacheInfo {
    dir: String,
    /// Whether the directory exists.
    exists: bool,
    /// `None` when the index cannot be read (see `problem`).
    entries: Option<u64>,
    size_bytes: Option<u64>,
    /// The schema of the index on disk; `None` when there is no index yet.
    index_schema: Option<u32>,
    /// The schema this vx reads and writes.
    supported_schema: u32,
    key_format: &'static str,
    /// Stray files older than an hour: what `vx cache prune` would sweep.
    orphaned_files: Option<u64>,
    orphaned_bytes: Option<u64>,
    /// Why the index could not be read.
    problem: Option<String>,
}

#[derive(Debug, Serialize)]
struct HistoryInfo {
    runs_24h: Option<u64>,
    tasks_24h: Option<u64>,
    hits_24h: Option<u64>,
    /// Task ids flaky in a run of the last 30 days (EXEC-16: passed after a retry, or failed
    /// with a key that had passed before), sorted; empty when none or unknown.
    flaky_tasks_30d: Vec<String>,
}

#[derive(Debug, Serialize)]
struct SandboxInfo {
    /// SBX-1: a trial command ran through the real wrapper (bubblewrap, init, the tracer).
    available: bool,
    /// Why not, when not available.
    reason: Option<String>,
    sandboxed_tasks: usize,
}

#[derive(Debug, Serialize)]
struct RemoteCacheInfo {
    /// `http` or `reapi`.
    protocol: &'static str,
    /// Without credentials or query (after `VX_REMOTE_CACHE_URL`).
    url: String,
    /// The team as sent: `slug=<team>` or `teamId=<team-id>`; `None` when missing.
    team: Option<String>,
    /// The `write` setting.
    write: String,
    /// Whether a run here would read and upload (REM-1, with `CI` as it is now).
    reads: bool,
    writes: bool,
    /// The variable the token is read from, and whether it is set (never its value).
    token_env: String,
    token_set: bool,
    signing: bool,
    /// Whether the server answered an existence check (`None`: not asked, as for `grpc://`).
    answered: Option<bool>,
}

#[derive(Debug, Serialize)]
struct RemoteExecutionInfo {
    url: String,
}

#[derive(Debug, Serialize)]
struct LockInfo {
    present: bool,
    /// Whether `vx run --frozen` would take it (INIT-5); `None` when absent or when it or the
    /// configuration cannot be read.
    fresh: Option<bool>,
    /// Why not fresh: the first difference, or why it cannot be read.
    stale: Option<String>,
}

pub fn info(cwd: &Path, args: InfoArgs) -> Result<i32, Failure> {
    let json = super::json_format(args.format.as_deref())?;
    let env = vx_engine::host::env::host_env();
    let (root, mut settings) = match workspace::root_only(cwd) {
        Ok(found) => found,
        // Outside a workspace, say too when there is no repository either.
        Err(Failure::User(mut diagnostics)) => {
            if host::in_git_repository(cwd, &env) == Some(false) {
                if let Some(d) = diagnostics.first_mut() {
                    d.hints.push(format!(
                        "{} is not in a git repository either (`git init` makes one)",
                        cwd.display()
                    ));
                }
            }
            return Err(Failure::User(diagnostics));
        }
        Err(other) => return Err(other),
    };

    let mut configuration_errors = Vec::new();
    let (mut projects, mut tasks, mut sandboxed_tasks) = (None, None, 0);
    let mut lock = LockInfo {
        present: root.join(vx_core::config::LOCK_FILE).is_file(),
        fresh: None,
        stale: None,
    };
    match workspace::load(cwd) {
        Ok(ws) => {
            match vx_workspace::lock_state(&ws) {
                Ok(vx_workspace::LockState::Absent) => {}
                Ok(vx_workspace::LockState::Fresh) => lock.fresh = Some(true),
                Ok(vx_workspace::LockState::Stale(why)) => {
                    lock.fresh = Some(false);
                    lock.stale = Some(why);
                }
                Err(e) => {
                    lock.stale = Some(match workspace::load_error(e) {
                        Failure::User(d) => d
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join("; "),
                        other => format!("{other:?}"),
                    })
                }
            }
            projects = Some(ws.projects.len());
            let all = || ws.projects.iter().flat_map(|p| p.config.tasks.values());
            tasks = Some(all().count());
            sandboxed_tasks = all().filter(|t| t.sandbox.is_some()).count();
            settings = ws.settings;
        }
        Err(Failure::User(diagnostics)) => configuration_errors = diagnostics,
        Err(internal) => return Err(internal),
    }

    let (concurrency, concurrency_source, concurrency_ceiling) = match settings.concurrency {
        Some(n) => (n, "workspace", None),
        None => {
            let (n, source) = available_cpus_and_source();
            (
                n,
                source.word(),
                Some(vx_core::schedule::adaptive::ceiling(n)),
            )
        }
    };
    let (budget, said) = vx_engine::host::memory::Budget::from_env(&env);
    if let Some(notice) = said {
        crate::render::say(notice);
    }
    let (memory_budget_bytes, memory_budget_source) = budget.resolve();
    let dir = cache_dir(
        &root,
        cwd,
        args.cache_dir.as_deref(),
        &env,
        settings.cache_dir.as_deref(),
    );
    let (cache, history) = cache_facts(&dir);

    let info = Info {
        vx_version: env!("CARGO_PKG_VERSION").to_string(),
        vx_commit: option_env!("VX_GIT_SHA")
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        git_version: host::git_version(&root, &env),
        git_repository: host::in_git_repository(&root, &env),
        workspace_root: root.display().to_string(),
        projects,
        tasks,
        configuration_errors: configuration_errors
            .iter()
            .map(ToString::to_string)
            .collect(),
        concurrency,
        concurrency_source,
        concurrency_ceiling,
        memory_budget_bytes,
        memory_budget_source,
        cache,
        history,
        sandbox: {
            let probed = vx_engine::host::sandbox::Host::probe(env.get("PATH").map(String::as_str));
            SandboxInfo {
                available: probed.is_ok(),
                reason: probed.err().map(|reason| reason.to_string()),
                sandboxed_tasks,
            }
        },
        containment: vx_exec::cgroup::describe(),
        remote_cache: remote_cache_info(settings.remote_cache.as_ref(), &env),
        remote_execution: settings.remote_execution.as_ref().and_then(|r| {
            Some(RemoteExecutionInfo {
                url: without_credentials(r.url.as_deref()?),
            })
        }),
        lock,
    };
    if json {
        out_str(&format!(
            "{}\n",
            serde_json::to_string_pretty(&info).unwrap_or_default()
        ));
    } else {
        out_str(&pretty(&info, &configuration_errors));
    }
    Ok(exit::SUCCESS)
}

/// The store's facts and the history counts, read-only.
fn cache_facts(dir: &Path) -> (CacheInfo, HistoryInfo) {
    let mut cache = CacheInfo {
        dir: dir.display().to_string(),
        exists: dir.is_dir(),
        entries: None,
        size_bytes: None,
        index_schema: None,
        supported_schema: vx_store::SCHEMA_VERSION,
        key_format: vx_core::key::KEY_FORMAT,
        orphaned_files: None,
        orphaned_bytes: None,
        problem: None,
    };
    let mut history = HistoryInfo {
        runs_24h: None,
        tasks_24h: None,
        hits_24h: None,
        flaky_tasks_30d: Vec::new(),
    };
    let has_index = dir.join(vx_store::index::DB_FILE).is_file();
    let mut store = match Store::open(dir, Access::ReadOnly) {
        Ok(store) => store,
        Err(OpenError::Schema { found, expected }) => {
            cache.index_schema = Some(found);
            cache.problem = Some(format!(
                "the cache index has schema {found}, this vx reads {expected}"
            ));
            return (cache, history);
        }
        Err(other) => {
            cache.problem = Some(other.to_string());
            return (cache, history);
        }
    };
    if has_index {
        cache.index_schema = Some(vx_store::SCHEMA_VERSION);
    }
    let mut problems = Vec::new();
    match store.totals() {
        Ok((size, count)) => {
            cache.size_bytes = Some(size);
            cache.entries = Some(count);
        }
        Err(e) => problems.push(e.to_string()),
    }
    // A dry prune without bounds evicts nothing and counts the stray files.
    match store.prune(&PrunePolicy::default(), true) {
        Ok(report) => {
            cache.orphaned_files = Some(report.orphans);
            cache.orphaned_bytes = Some(report.orphan_bytes);
        }
        Err(e) => problems.push(e.to_string()),
    }
    match store.recent_counts(now_ms() - DAY_MS) {
        Ok(counts) => {
            history.runs_24h = Some(counts.runs);
            history.tasks_24h = Some(counts.tasks);
            history.hits_24h = Some(counts.hits);
        }
        Err(e) => problems.push(e.to_string()),
    }
    match store.flaky_tasks_since(now_ms() - 30 * DAY_MS) {
        Ok(tasks) => {
            history.flaky_tasks_30d = tasks
                .iter()
                .map(|(project, task)| TaskId::new(project, task).to_string())
                .collect();
        }
        Err(e) => problems.push(e.to_string()),
    }
    cache.problem = problems.into_iter().next();
    (cache, history)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A URL without a `user:password@` part.
fn without_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    format!("{scheme}://{host}{path}")
}

/// One fact per row: `label  value`, labels padded to one column.
fn pretty(info: &Info, errors: &[Diagnostic]) -> String {
    let count =
        |n: Option<usize>| n.map_or("unknown (configuration errors)".into(), |n| n.to_string());
    let unknown = |n: Option<u64>| n.map_or("unknown".to_string(), |n| n.to_string());
    let mut rows: Vec<(&str, String)> = Vec::new();
    let version = match &info.vx_commit {
        Some(sha) => format!("{} ({sha})", info.vx_version),
        None => info.vx_version.clone(),
    };
    rows.push(("vx", version));
    rows.push((
        "git",
        info.git_version
            .clone()
            .unwrap_or_else(|| "not found".into()),
    ));
    if info.git_repository == Some(false) {
        rows.push((
            "repository",
            "not a git repository: files are found by a walk honouring .gitignore; --affected \
             and the branch features need git"
                .into(),
        ));
    }
    rows.push(("workspace root", info.workspace_root.clone()));
    rows.push(("projects", count(info.projects)));
    rows.push((
        "tasks",
        match info.tasks {
            // Projects but no task: the package.json scripts are not tasks until `vx init`.
            Some(0) if info.projects.is_some_and(|n| n > 0) => {
                "0 (`vx init` writes tasks from the package.json scripts)".to_string()
            }
            _ => count(info.tasks),
        },
    ));
    rows.push((
        "configuration",
        match errors.len() {
            0 => "ok".to_string(),
            1 => "1 error".to_string(),
            n => format!("{n} errors"),
        },
    ));
    rows.push((
        "concurrency",
        match info.concurrency_ceiling {
            Some(ceiling) => format!(
                "{} ({}), up to {ceiling} while CPUs stand idle (adaptive)",
                info.concurrency, info.concurrency_source
            ),
            None => format!("{} ({})", info.concurrency, info.concurrency_source),
        },
    ));
    rows.push((
        "memory budget",
        match (info.memory_budget_bytes, info.memory_budget_source) {
            (Some(bytes), source) => format!("{} ({source})", format_size(bytes)),
            (None, "VX_MEMORY_BUDGET") => "off (VX_MEMORY_BUDGET)".to_string(),
            (None, _) => "not measured".to_string(),
        },
    ));
    let cache = &info.cache;
    let dir = if cache.exists {
        cache.dir.clone()
    } else {
        format!("{} (not created yet)", cache.dir)
    };
    rows.push(("cache directory", dir));
    rows.push(("cache entries", unknown(cache.entries)));
    rows.push((
        "cache size",
        cache.size_bytes.map_or("unknown".into(), format_size),
    ));
    rows.push((
        "index schema",
        match cache.index_schema {
            Some(found) if found == cache.supported_schema => found.to_string(),
            Some(found) => format!("{found} (this vx reads {})", cache.supported_schema),
            None if cache.problem.is_some() => "unknown".to_string(),
            None => format!("none yet (this vx writes {})", cache.supported_schema),
        },
    ));
    rows.push(("key format", cache.key_format.to_string()));
    rows.push((
        "orphaned files",
        match (cache.orphaned_files, cache.orphaned_bytes) {
            (Some(0), _) => "0".to_string(),
            (Some(n), Some(bytes)) => format!("{n} ({})", format_size(bytes)),
            _ => "unknown".to_string(),
        },
    ));
    if let Some(problem) = &cache.problem {
        rows.push(("cache problem", problem.clone()));
    }
    let history = &info.history;
    rows.push(("runs (last 24 h)", unknown(history.runs_24h)));
    rows.push((
        "hits (last 24 h)",
        match (history.hits_24h, history.tasks_24h) {
            (Some(hits), Some(tasks)) => format!("{hits} of {tasks} tasks"),
            _ => "unknown".to_string(),
        },
    ));
    rows.push((
        "flaky tasks (30 d)",
        if history.flaky_tasks_30d.is_empty() {
            "none recorded".to_string()
        } else {
            history.flaky_tasks_30d.join(", ")
        },
    ));
    rows.push((
        "sandbox",
        match &info.sandbox.reason {
            None => "available".to_string(),
            Some(reason) => format!("not available: {reason}"),
        },
    ));
    rows.push(("sandboxed tasks", info.sandbox.sandboxed_tasks.to_string()));
    rows.push(("containment", info.containment.clone()));
    rows.push((
        "remote cache",
        match &info.remote_cache {
            Some(r) => format!(
                "{} {}{} ({}; write: {}; token: ${} {}; signing: {}){}",
                r.protocol,
                r.url,
                r.team
                    .as_deref()
                    .map(|t| format!(" {t}"))
                    .unwrap_or_default(),
                match (r.reads, r.writes) {
                    (true, true) => "reads and uploads",
                    (true, false) => "reads",
                    (false, true) => "uploads",
                    (false, false) => "off",
                },
                r.write,
                r.token_env,
                if r.token_set { "set" } else { "unset" },
                if r.signing { "on" } else { "off" },
                match r.answered {
                    Some(true) => ", answered",
                    Some(false) => ", did not answer",
                    None => "",
                }
            ),
            None => "not configured".to_string(),
        },
    ));
    rows.push((
        "remote execution",
        info.remote_execution
            .as_ref()
            .map_or("not configured".into(), |r| r.url.clone()),
    ));
    rows.push((
        "vx.lock",
        match (&info.lock, info.lock.present) {
            (_, false) => "absent".to_string(),
            (
                LockInfo {
                    fresh: Some(true), ..
                },
                _,
            ) => "fresh".to_string(),
            (
                LockInfo {
                    fresh: Some(false),
                    stale: Some(why),
                    ..
                },
                _,
            ) => {
                format!("stale: {why}")
            }
            (
                LockInfo {
                    stale: Some(why), ..
                },
                _,
            ) => format!("cannot be read: {why}"),
            _ => "present (not checked: the configuration has errors)".to_string(),
        },
    ));

    let width = rows.iter().map(|(label, _)| label.len()).max().unwrap_or(0) + 2;
    let mut out = String::new();
    for (label, value) in &rows {
        out.push_str(&format!("{label:<width$}{value}\n"));
        if *label == "configuration" {
            for d in errors {
                out.push_str(&format!("{:width$}{d}\n", ""));
                for hint in &d.hints {
                    out.push_str(&format!("{:width$}  hint: {hint}\n", ""));
                }
            }
        }
    }
    out
}

/// The remote cache as a run here would use it (REM-1, REM-2), asking an HTTP server one
/// existence check to tell whether it answers.
fn remote_cache_info(
    config: Option<&vx_core::config::RemoteCacheConfig>,
    env: &std::collections::BTreeMap<String, String>,
) -> Option<RemoteCacheInfo> {
    use vx_engine::cache::remote;
    let policy = vx_engine::options::CachePolicy::default();
    let resolved = remote::resolve(config, env, &policy)?;
    let protocol = if resolved.url.starts_with("grpc") {
        "reapi"
    } else {
        "http"
    };
    let answered = match remote::layer(config, env, &policy) {
        // Any HTTP answer counts, a refusal included; only a connection that failed does not.
        Ok(Some(remote)) => Some(!matches!(
            remote.layer.contains(&"0".repeat(64)),
            Err(vx_store::LayerError {
                kind: vx_store::ErrorKind::Connection | vx_store::ErrorKind::Timeout,
                ..
            })
        )),
        _ => None,
    };
    Some(RemoteCacheInfo {
        protocol,
        url: without_credentials(&resolved.url),
        team: resolved.team.map(|team| match team {
            vx_store::layer::http::Team::Slug(t) => format!("slug={t}"),
            vx_store::layer::http::Team::Id(t) => format!("teamId={t}"),
        }),
        write: config
            .and_then(|c| c.write.clone())
            .unwrap_or_else(|| "ci".into()),
        reads: resolved.read,
        writes: resolved.write,
        token_env: resolved.token_env,
        token_set: resolved.has_token,
        signing: config.is_some_and(|c| c.signature_key_env.is_some()),
        answered,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_cut_from_urls() {
        assert_eq!(
            without_credentials("https://user:secret@cache.example.com/v8?x=1"),
            "https://cache.example.com/v8?x=1"
        );
        assert_eq!(
            without_credentials("grpc://127.0.0.1:8980"),
            "grpc://127.0.0.1:8980"
        );
        assert_eq!(without_credentials("not a url"), "not a url");
    }
}
