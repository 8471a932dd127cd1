//! Opening the cache for a run (ARCH-3: "open the store and take the run lock → list files"):
//! the cache directory (STORE-2), the run lock (STORE-14), the index (STORE-3), the one file
//! enumeration (KEY-10) with the identity memo, and the helper processes keys need (runtime
//! probes, KEY-8; the uncommitted-changes check of STORE-10), all run through the supervisor.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use vx_core::{Diagnostic, TaskId, Workspace};
use vx_store::{Access, OpenError, RunLock, Store};
use vx_workspace::tree::{Tree, TreeOptions};

use super::cache::{memo_row, RunCache, WorkspaceStamps};
use super::keys::{topological, unstable_nodes, Keys, Prober, StampCache};
use super::plan::nodes::Kind;
use super::plan::Plan;
use super::record::Recorder;
use crate::cache_dir::{cache_dir, refuses_cache_dir, workspace_identity};
use crate::error::Failure;
use crate::options::RunOptions;
use crate::outcome::Notice;
use crate::plan::preview::{DryCache, DryRow};
use vx_exec::subprocess;

/// KEY-8: probes time out after a minute.
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// What a run reads from the index when it opens the store.
#[derive(Default)]
pub struct ReadWithIndex {
    /// The workspace's `output_stamps` (STORE-9).
    pub stamps: WorkspaceStamps,
    /// Each task's recent executions, for the scheduler's estimates (SCHED-2, SCHED-4).
    pub recent: HashMap<TaskId, vx_store::index::Recent>,
}

/// What opening the cache produced.
pub struct Opened {
    /// The cache directory.
    pub dir: PathBuf,
    /// When opening started and ended (UI-15).
    pub span: (Instant, Instant),
    pub store: Option<Store>,
    pub lock: Option<RunLock>,
    pub tree: Tree,
    pub memo: StampCache,
    /// What was read from the index with it.
    pub read: ReadWithIndex,
    /// What opening found to say (a newer or unwritable index, no lock), for the reporter.
    pub notices: Vec<Notice>,
}

/// Resolves and checks the cache directory (STORE-2).
pub fn resolve_cache_dir(
    workspace: &Workspace,
    cwd: &Path,
    options: &RunOptions,
    host_env: &BTreeMap<String, String>,
) -> Result<PathBuf, Failure> {
    let dir = cache_dir(
        &workspace.root,
        cwd,
        options.cache_dir.as_deref(),
        host_env,
        workspace.settings.cache_dir.as_deref(),
    );
    if refuses_cache_dir(&dir, workspace) {
        let shown = options
            .cache_dir
            .clone()
            .unwrap_or_else(|| dir.display().to_string());
        return Err(Diagnostic::new(format!(
            "cache directory `{shown}` would contain workspace sources"
        ))
        .into());
    }
    Ok(dir)
}

/// Takes the lock (for a run), opens the index, reads ahead what a run looks up in it (the
/// workspace's entries and output stamps, `Store::preload`) and lists the workspace's files.
/// It needs only the root and the cache directory, so a run does it while the task graph is
/// built (see `run`). `lock`: take the run lock, and say this while another run holds it.
pub fn open(
    root: &Path,
    dir: &Path,
    access: Access,
    lock: Option<&mut dyn FnMut(Notice)>,
) -> Result<Opened, Failure> {
    open_scanned(root, dir, access, lock, None)
}

/// [`open`] with the workspace's files already listed ([`scan`]), when `tree` is given.
pub fn open_scanned(
    root: &Path,
    dir: &Path,
    access: Access,
    lock: Option<&mut dyn FnMut(Notice)>,
    tree: Option<Tree>,
) -> Result<Opened, Failure> {
    let mut notices = Vec::new();
    let (lock, tree) = match lock {
        None => (None, tree),
        // A listing taken before the lock holds only if nobody held it meanwhile; after a
        // wait for another run, the files are listed again.
        Some(say) => match vx_store::lock::try_acquire(root) {
            Ok(Some(lock)) => (Some(lock), tree),
            _ => (take_lock(root, &mut notices, say)?, None),
        },
    };
    let mut opened = open_listed(root, dir, access, lock, tree)?;
    notices.append(&mut opened.notices);
    opened.notices = notices;
    Ok(opened)
}

/// The run lock, waiting for another run with one notice; `None` (with a warning) when the
/// lock file cannot be created (STORE-14).
fn take_lock(
    root: &Path,
    notices: &mut Vec<Notice>,
    say: &mut dyn FnMut(Notice),
) -> Result<Option<RunLock>, Failure> {
    let mut waited = false;
    let mut on_wait = |pid: Option<u32>| {
        if !waited {
            waited = true;
            let pid = pid.map_or("?".to_string(), |p| p.to_string());
            // Said while waiting, not after: the wait is what it explains.
            say(Notice::note(format!(
                "another vx run (pid {pid}) holds this workspace; waiting…"
            )));
        }
    };
    // A signal while waiting ends the run before any task starts (EXIT-1: 128 + n).
    let stop = || crate::host::signals::pending().is_some();
    match vx_store::lock::acquire_unless(root, &mut on_wait, &stop) {
        Ok(Some(lock)) => Ok(Some(lock)),
        Ok(None) => Err(Failure::Signalled(
            crate::host::signals::pending().unwrap_or(nix::libc::SIGINT),
        )),
        Err(error) => {
            notices.push(Notice::warning(format!(
                "{error}; running without the workspace lock"
            )));
            Ok(None)
        }
    }
}

/// The workspace's files, as a run lists them (the cache directory left out). Reads only: a
/// run does it while the task graph is built even when the cache does not exist yet.
pub fn scan(root: &Path, dir: &Path) -> Result<Tree, Failure> {
    Tree::scan(&TreeOptions {
        root: root.to_path_buf(),
        excluded: vec![dir.to_path_buf()],
    })
    .map_err(|e| Failure::User(vec![Diagnostic::new(e.to_string())]))
}

/// [`open`] with the lock already taken (or none).
pub fn open_with(
    root: &Path,
    dir: &Path,
    access: Access,
    lock: Option<RunLock>,
) -> Result<Opened, Failure> {
    open_listed(root, dir, access, lock, None)
}

fn open_listed(
    root: &Path,
    dir: &Path,
    access: Access,
    lock: Option<RunLock>,
    tree: Option<Tree>,
) -> Result<Opened, Failure> {
    let started = Instant::now();
    let mut notices = Vec::new();
    let mut store = match Store::open(dir, access) {
        Ok(store) => {
            if let Some(version) = store.disabled() {
                notices.push(Notice::warning(format!(
                    "the cache index was written by a newer vx (schema {version}); the local cache and history are off for this run"
                )));
            }
            if let Some(reason) = store.read_only_reason() {
                notices.push(Notice::warning(format!(
                    "the cache cannot be written: {reason}; hits are served, nothing is saved or recorded this run"
                )));
            }
            Some(store)
        }
        Err(OpenError::Corrupt { path, reason }) => {
            return Err(Diagnostic::new(format!(
                "{} is not a valid cache index ({reason})",
                path.display()
            ))
            .hint("delete it together with cache.db-wal and cache.db-shm")
            .into())
        }
        Err(error) => return Err(Diagnostic::new(error.to_string()).into()),
    };
    let tree = match tree {
        Some(tree) => tree,
        None => scan(root, dir)?,
    };
    let mut memo = StampCache::default();
    let mut read = ReadWithIndex::default();
    let workspace_id = workspace_identity(root);
    if let Some(store) = &mut store {
        if store.disabled().is_none() {
            if let Ok(rows) = store.file_stamps(&workspace_id) {
                memo.rows = rows.iter().map(|(k, v)| (k.clone(), memo_row(v))).collect();
            }
            read.stamps.by_key = store
                .workspace_output_stamps(&workspace_id)
                .unwrap_or_default();
            for rows in read.stamps.by_key.values_mut() {
                rows.retain(|r| !r.path.is_empty());
            }
            read.stamps.keys_by_task = store.preload(&workspace_id).unwrap_or_default();
            read.recent = store
                .recent_executions()
                .unwrap_or_default()
                .into_iter()
                .map(|((project, task), r)| (TaskId::new(&project, &task), r))
                .collect();
        }
    }
    Ok(Opened {
        span: (started, Instant::now()),
        dir: dir.to_path_buf(),
        store,
        lock,
        tree,
        memo,
        read,
        notices,
    })
}

/// The run's cache state over an opened store and tree.
pub fn run_cache<'p>(
    plan: &'p Plan,
    options: &'p RunOptions,
    host_env: &'p BTreeMap<String, String>,
    sh: Option<PathBuf>,
    opened: Opened,
    ci: bool,
) -> (RunCache<'p>, Recorder, Option<RunLock>) {
    let prober = prober(host_env, sh.clone());
    // Memos of the lockfiles' per-project digests live beside the index, when it is written.
    let memo_dir = opened
        .store
        .as_ref()
        .filter(|s| s.access() == Access::ReadWrite && s.read_only_reason().is_none())
        .map(|_| opened.dir.join("lockfiles"));
    let lockfiles = crate::keys::lockfiles::Lockfiles::new(&plan.workspace, memo_dir);
    let keys = Keys::new(
        plan,
        host_env,
        &options.forwarded,
        opened.tree,
        opened.memo,
        prober,
        lockfiles,
    );
    let root = plan.workspace.root.clone();
    let env = subprocess::git_env(host_env);
    let dirty_probe = Box::new(move |paths: &[String]| dirty_paths(&root, &env, paths));
    let ReadWithIndex { stamps, recent } = opened.read;
    let mut layers = vx_store::Layers::local(opened.store);
    let remote = super::cache::remote::layer(
        plan.workspace.settings.remote_cache.as_ref(),
        host_env,
        &options.cache,
    );
    let remote_notice = match remote {
        Ok(Some(remote)) => {
            layers.add_remote(remote.layer, remote.usage, remote.upload_concurrency);
            remote.notice
        }
        Ok(None) => None,
        Err(notice) => Some(notice),
    };
    let mut cache = RunCache::new(
        keys,
        &plan.workspace,
        layers,
        stamps,
        options.cache,
        ci,
        dirty_probe,
    );
    cache.tell(remote_notice);
    let head = vx_workspace::tree::head(&plan.workspace.root).unwrap_or_default();
    cache.outputs_record_branches(super::plan::green::branches(
        host_env,
        head.branch.as_deref(),
    ));
    (cache, Recorder::new(recent), opened.lock)
}

/// `--dry` (UI-12): every non-group task's key and predicted cache status, from a
/// read-only store. Keys of unstable tasks (SCHED-6) are predictions from the current tree.
pub fn dry_rows(
    plan: &Plan,
    cwd: &Path,
    options: &RunOptions,
    host_env: &BTreeMap<String, String>,
    sh: Option<PathBuf>,
    say: &mut dyn FnMut(Notice),
) -> Result<Vec<DryRow>, Failure> {
    let dir = resolve_cache_dir(&plan.workspace, cwd, options, host_env)?;
    let mut opened = open(&plan.workspace.root, &dir, Access::ReadOnly, None)?;
    for notice in std::mem::take(&mut opened.notices) {
        say(notice);
    }
    let (mut cache, recorder, _) = run_cache(plan, options, host_env, sh, opened, false);
    let unstable = unstable_nodes(plan);
    let planned = super::plan::nodes::rows(plan);
    // Upstreams first, so each row's key folds what its upstreams settled (KEY-9); listed in
    // the plan's order after.
    let mut rows = Vec::new();
    for i in topological(&plan.graph) {
        let row = planned[i];
        if row.kind == Kind::Group {
            continue;
        }
        let (key, mut status) = cache.plan_row(row);
        let assumes = cache.assumed(row.id);
        // KEY-9: a key that assumes upstreams which would run produce their last outputs again
        // is a hit only if they do: it counts as running, and says when it would not.
        let hit_if_unchanged =
            !assumes.is_empty() && matches!(status, DryCache::HitLocal | DryCache::HitRemote);
        if hit_if_unchanged {
            status = DryCache::Miss;
        }
        for notice in cache.take_notices() {
            say(notice);
        }
        rows.push(DryRow {
            node: row.node,
            key: if row.kind == Kind::Persistent {
                Err("persistent".into())
            } else {
                key
            },
            prediction: unstable[row.node] || !assumes.is_empty(),
            cache: status,
            median_ms: recorder
                .recent(row.id)
                .and_then(|r| vx_core::schedule::median(&r.durations_ms)),
            remote: super::plan::placement::placement(plan, options, host_env, row)
                == super::plan::placement::Placement::Remote,
            assumes,
            hit_if_unchanged,
        });
    }
    rows.sort_by_key(|row| row.node);
    // EXEC-13: an unrequested persistent task whose dependants all hit would not start.
    // Only a confirmed hit counts: an entry exists and the key is stable (SCHED-3).
    let hit = |i: usize| {
        rows.iter().any(|r| {
            r.node == i
                && matches!(r.cache, DryCache::HitLocal | DryCache::HitRemote)
                && !r.prediction
        })
    };
    let not_started: Vec<usize> = rows
        .iter()
        .filter(|r| {
            let node = &plan.graph.nodes[r.node];
            planned[r.node].kind == Kind::Persistent
                && !plan.shown_as_requested.contains(&r.node)
                && !node.dependants.is_empty()
                && node.dependants.iter().all(|&d| hit(d))
        })
        .map(|r| r.node)
        .collect();
    for row in &mut rows {
        if not_started.contains(&row.node) {
            row.cache = DryCache::NotStarted;
        }
    }
    super::record::report_counters(
        cache.keys.tree.counters().files_hashed,
        cache.layers().store(),
    );
    Ok(rows)
}

/// KEY-8: `sh -c <command>` with vx's full environment and the given PATH; the folded output
/// is stdout trimmed, then a NUL and stderr when stderr is not empty.
fn prober<'p>(host_env: &'p BTreeMap<String, String>, sh: Option<PathBuf>) -> Prober<'p> {
    Box::new(move |dir: &Path, command: &str, path: &str| {
        let mut env: Vec<(OsString, OsString)> = host_env
            .iter()
            .filter(|(k, _)| k.as_str() != "PATH")
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        env.push(("PATH".into(), path.into()));
        let output = subprocess::run(
            sh.clone()
                .unwrap_or_else(|| PathBuf::from("/nonexistent/sh")),
            "sh",
            vec!["-c".into(), command.into()],
            dir,
            env,
            PROBE_TIMEOUT,
        );
        if output.completion.timed_out {
            return Err("timed out after 1m00s".into());
        }
        if output.completion.exit_code != 0 {
            return Err(format!("exited {}", output.completion.exit_code));
        }
        let stdout =
            String::from_utf8(output.stdout).map_err(|_| "printed invalid UTF-8".to_string())?;
        let mut folded = stdout.trim().to_string();
        if !output.stderr.is_empty() {
            let stderr = String::from_utf8(output.stderr)
                .map_err(|_| "printed invalid UTF-8".to_string())?;
            folded.push('\0');
            folded.push_str(&stderr);
        }
        Ok(folded)
    })
}

/// STORE-10: which of these tracked paths have staged or unstaged changes (or are missing
/// from `HEAD`). One `git status` for the run, only when a clean would touch tracked files.
/// When git cannot answer, every path counts as changed: vx then refuses rather than deletes.
fn dirty_paths(root: &Path, env: &[(OsString, OsString)], paths: &[String]) -> HashSet<String> {
    let git = env.iter().find(|(k, _)| k == "PATH").and_then(|(_, path)| {
        std::env::split_paths(path)
            .map(|d| d.join("git"))
            .find(|p| p.is_file())
    });
    let Some(git) = git else {
        return paths.iter().cloned().collect();
    };
    let mut args: Vec<OsString> = [
        "-c",
        "core.quotepath=off",
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=no",
        "--no-renames",
        "--",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    args.extend(paths.iter().map(OsString::from));
    let output = subprocess::run(git, "git", args, root, env.to_vec(), PROBE_TIMEOUT);
    if output.completion.exit_code != 0 {
        return paths.iter().cloned().collect();
    }
    let listed: Vec<String> = output
        .stdout
        .split(|&b| b == 0)
        .filter(|entry| entry.len() > 3)
        .map(|entry| String::from_utf8_lossy(&entry[3..]).into_owned())
        .collect();
    paths
        .iter()
        .filter(|p| {
            listed
                .iter()
                .any(|l| l == *p || l.ends_with(&format!("/{p}")))
        })
        .cloned()
        .collect()
}
