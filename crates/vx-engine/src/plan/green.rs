//! `--affected=last-green` (SEL-10): the green runs vx remembers, and the base they give.
//!
//! # How this works
//!
//! A run *certifies* its commit when it is itself an `--affected=last-green` run (which covers
//! the whole workspace: what it leaves out was green at its base), every task succeeded, HEAD
//! is a commit and the work tree equals it (`git status` shows nothing outside the cache
//! directory and the files vx wrote for the run). An `--affected` run against any other base
//! certifies nothing: the tasks it left out were never shown green. Its *scope* is what it ran,
//! canonical: `vx run build test --filter=…  -- args` with the task names sorted. Only
//! `--affected=last-green` runs record, so a run that does not use it pays nothing and writes
//! nothing to a team's remote cache.
//!
//! It is remembered twice: in `<cache-dir>/green.json` (the newest 200 of every scope and
//! branch) and, when the remote cache writes, as a record of its scope and branch in the remote
//! cache (the newest 20 commits; `vx_store::layer::fetch_record`). A record's key is the BLAKE3
//! of its scope and branch, so it lives in the remote's namespace (team, instance) like any
//! entry. A run writes its branch's record back as read at its start plus its own commit (one
//! round trip fewer than reading it again), so two overlapping runs of a branch may lose one
//! commit, which only makes a later base older, never wrong.
//!
//! An `--affected=last-green` run reads the local file and the records of the branch built, the
//! branch a pull request targets and the default branches (`ci::ci_branches`, else git's
//! branch and `main`/`master`), and takes as its base the recorded commit of its scope that is
//! an ancestor of HEAD and nearest to it (`Git::last_green`). A commit that is not an ancestor
//! (another branch's, a rewritten one) is never taken. With none, every task is affected (the
//! run compares with the empty tree) and the line says why.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use vx_core::graph::ExcludeDependencies;
use vx_store::layer::{fetch_record, put_record, RecordLayer};

use crate::options::{AffectedBase, RunOptions};
use crate::outcome::{Notice, Status};
use crate::plan::affected::{Git, GreenCommit, GREEN_WHY};
use crate::plan::ci::{ci_branches, CiBranches};
use crate::record::{GitFacts, RunRecord};

/// The format of the local file and of a remote record.
const FORMAT: u32 = 1;
/// Green runs the local file keeps (all scopes and branches).
const KEPT_LOCAL: usize = 200;
/// Green commits a remote record keeps (one scope and branch).
const KEPT_REMOTE: usize = 20;
/// The local file, in the cache directory.
const LOCAL_FILE: &str = "green.json";

/// One remembered green run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GreenRun {
    pub commit: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// When it ended, milliseconds since the epoch.
    pub at_ms: i64,
    pub run_id: String,
}

/// Where a candidate base was remembered, for the line the run prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Local,
    Remote,
}

/// A green commit an `--affected=last-green` run may take as its base.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub run: GreenRun,
    pub from: Origin,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct LocalFile {
    format: u32,
    runs: Vec<LocalRun>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct LocalRun {
    scope: String,
    #[serde(flatten)]
    run: GreenRun,
}

#[derive(Debug, Serialize, Deserialize)]
struct RemoteRecord {
    format: u32,
    scope: String,
    branch: String,
    runs: Vec<GreenRun>,
}

/// The scope of an `--affected=last-green` run (`whole`), or `None` for any other run or when
/// its selection can change meaning between commits (a changed-since filter).
pub fn scope(options: &RunOptions, whole: bool) -> Option<String> {
    if !whole || options.filters.iter().any(|f| f.changed_since().is_some()) {
        return None;
    }
    Some(scope_words(options))
}

/// What a run covers, canonical: `vx run build test --filter=… -- args` with the task names
/// sorted (the flags that do not change what runs left out).
pub fn scope_words(options: &RunOptions) -> String {
    let mut tasks: Vec<&str> = options.tasks.iter().map(String::as_str).collect();
    tasks.sort_unstable();
    tasks.dedup();
    let mut words = vec!["vx run".to_string(), tasks.join(" ")];
    let mut filters: Vec<String> = options
        .filters
        .iter()
        .map(|f| format!("--filter={}", f.text))
        .collect();
    filters.sort();
    words.extend(filters);
    match &options.exclude {
        ExcludeDependencies::None => {}
        ExcludeDependencies::All => words.push("--exclude-dependencies".into()),
        ExcludeDependencies::Names(names) => words.push(format!(
            "--exclude-dependencies={}",
            names.iter().cloned().collect::<Vec<_>>().join(",")
        )),
    }
    if !options.forwarded.is_empty() {
        words.push("--".into());
        words.extend(options.forwarded.iter().cloned());
    }
    words.join(" ")
}

/// The branches whose records an `--affected=last-green` run reads, and the one a green run is
/// recorded under (the first).
pub fn branches(env: &BTreeMap<String, String>, git_branch: Option<&str>) -> Vec<String> {
    let CiBranches {
        current,
        target,
        default,
    } = ci_branches(env);
    let mut names: Vec<String> = Vec::new();
    let all = [current.or(git_branch.map(str::to_string)), target, default]
        .into_iter()
        .flatten()
        .chain(["main".to_string(), "master".to_string()]);
    for name in all {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The branch a green run is recorded under: the one the CI builds, else git's.
pub fn current_branch(env: &BTreeMap<String, String>, git_branch: Option<&str>) -> Option<String> {
    ci_branches(env).current.or(git_branch.map(str::to_string))
}

/// How a run ended, for [`remember_run`].
pub struct Ended<'a> {
    /// Exit 0 with every task successful.
    pub green: bool,
    pub run_id: &'a str,
    pub at_ms: i64,
    pub git: Option<GitFacts>,
    /// The files vx wrote for the run (`--report`, `--summarize`, `--profile`): not changes to
    /// the work tree.
    pub own: Vec<PathBuf>,
    /// `--shard K/N`: this run is part K of N, and certifies only with every other part that
    /// ran the same split (its record's digest, `split`).
    pub shard: Option<(u32, u32)>,
    pub split: String,
}

impl<'a> Ended<'a> {
    pub fn of(run: &'a RunRecord<'_>, own: Vec<PathBuf>) -> Ended<'a> {
        Ended {
            green: run.exit_code == 0
                && run
                    .tasks
                    .iter()
                    .all(|t| matches!(t.report.status, Status::Success | Status::Running)),
            run_id: run.run_id,
            at_ms: run.ended_at_ms,
            git: run.git.clone(),
            own,
            shard: run.shard,
            split: String::new(),
        }
    }
}

/// At the end of an `--affected=last-green` run: remembers it when it certifies its commit (see
/// the module documentation), and says so, or why not.
pub fn remember_run(
    options: &RunOptions,
    green: Option<&GreenPlan>,
    env: &BTreeMap<String, String>,
    root: &Path,
    cache_dir: &Path,
    run: Ended<'_>,
    remotes: &[RecordLayer],
) -> Vec<Notice> {
    let asked = options.affected == Some(AffectedBase::LastGreen);
    let Some(green) = green else {
        return Vec::new();
    };
    let scope = green.scope.as_str();
    if !run.green || !asked {
        return Vec::new();
    }
    let git = run.git.clone().unwrap_or_default();
    let Some(commit) = git.commit else {
        return Vec::new();
    };
    let not = |why: String| {
        vec![Notice::note(format!(
            "this green run is not recorded for --affected=last-green: {why}"
        ))]
    };
    match Git::new(root, env, cache_dir).first_dirty(&run.own) {
        Ok(None) => {}
        Ok(Some(path)) => {
            return not(format!(
                "the work tree differs from HEAD ({path}; see `git status`)"
            ))
        }
        Err(failure) => {
            let said = match failure {
                crate::error::Failure::User(d) => d.first().map(|d| d.message.clone()),
                crate::error::Failure::Internal(text) => Some(text),
                crate::error::Failure::Signalled(_) => None,
            };
            return not(said.unwrap_or_else(|| "git could not tell".into()));
        }
    }
    if let Some((k, n)) = run.shard.filter(|&(_, n)| n > 1) {
        let short = &commit[..commit.len().min(7)];
        match parts_green(cache_dir, (scope, &run.split), &commit, (k, n), remotes) {
            Some(green) if green == n => {}
            Some(green) => {
                return not(format!(
                    "it is part {k} of {n}, and {green} of the {n} parts are green at {short} so far (the last part to end green records the run)"
                ))
            }
            None => {
                return not(format!(
                    "it is part {k} of {n}, and without a remote cache that reads and writes the parts cannot tell each other they are green"
                ))
            }
        }
    }
    let green_run = GreenRun {
        commit: commit.clone(),
        branch: current_branch(env, git.branch.as_deref()),
        at_ms: run.at_ms,
        run_id: run.run_id.to_string(),
    };
    let mut notices = remember(cache_dir, green, &green_run, remotes);
    if notices.is_empty() {
        let remote = if green_run.branch.is_some() && remotes.iter().any(|r| r.write) {
            " and in the remote cache"
        } else {
            ""
        };
        let on = green_run
            .branch
            .as_deref()
            .map(|b| format!(" on {b}"))
            .unwrap_or_default();
        notices.push(Notice::note(format!(
            "recorded {} as green for `{scope}`{on}, on this machine{remote}",
            &commit[..commit.len().min(7)]
        )));
    }
    notices
}

/// SCHED-8 with SEL-10: one part of a sharded run is green at `commit`. Records that in the
/// remote cache under the split it ran (parts of different splits never count together) and
/// counts the parts of that split green there, this one included (`None` without a remote
/// that reads and writes). Two parts that end at the same moment may each miss the other's
/// record, and the run is then not recorded: a later base, never a wrong one.
fn parts_green(
    cache_dir: &Path,
    (scope, split): (&str, &str),
    commit: &str,
    (k, n): (u32, u32),
    remotes: &[RecordLayer],
) -> Option<u32> {
    let remote = remotes.iter().find(|r| r.read && r.write)?;
    let layer = remote.layer.as_ref();
    let tmp = cache_dir.join("tmp");
    let key = |part: u32| {
        let mut hasher = blake3::Hasher::new();
        hasher.update(b"vx green part 1\0");
        for word in [scope, split, commit, &n.to_string(), &part.to_string()] {
            hasher.update(word.as_bytes());
            hasher.update(b"\0");
        }
        hasher.finalize().to_hex().to_string()
    };
    let body = format!("{{\"format\":{FORMAT},\"part\":{k},\"parts\":{n}}}");
    put_record(layer, &key(k), "vx#green-part", body.as_bytes(), &tmp).ok()?;
    let others = std::thread::scope(|s| {
        let jobs: Vec<_> = (1..=n)
            .filter(|&part| part != k)
            .map(|part| {
                let (tmp, key) = (&tmp, key(part));
                s.spawn(move || matches!(fetch_record(layer, &key, tmp), Ok(Some(_))))
            })
            .collect();
        jobs.into_iter()
            .filter_map(|j| j.join().ok())
            .filter(|&green| green)
            .count() as u32
    });
    Some(others + 1)
}

/// What `Git::last_green` weighs: each candidate's commit, and the words that say why it is the
/// base should it be taken.
pub fn green_commits(candidates: &[Candidate], scope: &str) -> Vec<GreenCommit> {
    candidates
        .iter()
        .map(|c| {
            let whence = match c.from {
                Origin::Local => "remembered by this machine",
                Origin::Remote => "recorded in the remote cache",
            };
            let on = c
                .run
                .branch
                .as_deref()
                .map(|b| format!(" on {b}"))
                .unwrap_or_default();
            GreenCommit {
                commit: c.run.commit.clone(),
                why: format!("{GREEN_WHY} `{scope}`{on} that HEAD descends from ({whence})"),
            }
        })
        .collect()
}

/// The key of the remote record of `scope` on `branch`.
fn record_key(scope: &str, branch: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"vx green record 1\0");
    hasher.update(scope.as_bytes());
    hasher.update(b"\0");
    hasher.update(branch.as_bytes());
    hasher.finalize().to_hex().to_string()
}

fn local_path(cache_dir: &Path) -> PathBuf {
    cache_dir.join(LOCAL_FILE)
}

fn read_local(cache_dir: &Path) -> LocalFile {
    std::fs::read(local_path(cache_dir))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<LocalFile>(&bytes).ok())
        .filter(|f| f.format == FORMAT)
        .unwrap_or_default()
}

fn parse_record(bytes: &[u8], scope: &str, branch: &str) -> Vec<GreenRun> {
    serde_json::from_slice::<RemoteRecord>(bytes)
        .ok()
        .filter(|r| r.format == FORMAT && r.scope == scope && r.branch == branch)
        .map(|r| r.runs)
        .unwrap_or_default()
}

/// What an `--affected=last-green` run found at its start.
pub struct Found {
    /// The green commits of the scope remembered here and in the remote's records, newest
    /// first, each commit once.
    pub candidates: Vec<Candidate>,
    /// What went wrong reading them (never fatal).
    pub notices: Vec<Notice>,
    /// Each branch's record as read from the remote (empty: it had none); a branch whose read
    /// failed is absent.
    pub records: BTreeMap<String, Vec<GreenRun>>,
}

/// The scope of an `--affected=last-green` run, and the record of the branch it builds as
/// read at its start, which its green run is added to at the end without reading it again.
#[derive(Debug, Clone)]
pub struct GreenPlan {
    pub scope: String,
    pub known: Option<Known>,
}

/// A branch and its record's green runs, as read.
pub type Known = (String, Vec<GreenRun>);

/// Reads this machine's green runs of `scope` and the remote's records of `branches` (at once,
/// one request per branch).
pub fn candidates(
    cache_dir: &Path,
    scope: &str,
    branches: &[String],
    remote: Option<&RecordLayer>,
) -> Found {
    let mut records = BTreeMap::new();
    let mut found: Vec<Candidate> = read_local(cache_dir)
        .runs
        .into_iter()
        .filter(|r| r.scope == scope)
        .map(|r| Candidate {
            run: r.run,
            from: Origin::Local,
        })
        .collect();
    let mut notices = Vec::new();
    if let Some(remote) = remote.filter(|r| r.read) {
        let tmp = cache_dir.join("tmp");
        let layer = remote.layer.as_ref();
        let read: Vec<_> = std::thread::scope(|s| {
            let jobs: Vec<_> = branches
                .iter()
                .map(|branch| {
                    let tmp = &tmp;
                    s.spawn(move || {
                        let key = record_key(scope, branch);
                        (branch, fetch_record(layer, &key, tmp))
                    })
                })
                .collect();
            jobs.into_iter().filter_map(|j| j.join().ok()).collect()
        });
        let mut failed = None;
        for (branch, result) in read {
            match result {
                Ok(Some(bytes)) => {
                    let runs = parse_record(&bytes, scope, branch);
                    found.extend(runs.iter().cloned().map(|run| Candidate {
                        run,
                        from: Origin::Remote,
                    }));
                    records.insert(branch.clone(), runs);
                }
                Ok(None) => {
                    records.insert(branch.clone(), Vec::new());
                }
                Err(e) => failed = Some(e),
            }
        }
        if let Some(e) = failed {
            notices.push(Notice::warning(format!(
                "--affected=last-green: the remote cache {} could not be read ({e}); using this machine's green runs only",
                remote.layer.name()
            )));
        }
    }
    found.sort_by_key(|c| std::cmp::Reverse(c.run.at_ms));
    let mut seen = std::collections::HashSet::new();
    found.retain(|c| seen.insert(c.run.commit.clone()));
    Found {
        candidates: found,
        notices,
        records,
    }
}

/// Remembers a green run of `scope` at `run.commit`: in the local file, and in the record of
/// its branch in every remote layer that writes (merged with the record as `known` from the
/// run's start, else read again, and written back). Returns what went
/// wrong, as lines; nothing here fails the run.
pub fn remember(
    cache_dir: &Path,
    green: &GreenPlan,
    run: &GreenRun,
    remotes: &[RecordLayer],
) -> Vec<Notice> {
    let scope = green.scope.as_str();
    let mut notices = Vec::new();
    let mut file = read_local(cache_dir);
    file.format = FORMAT;
    file.runs
        .retain(|r| !(r.scope == scope && r.run.commit == run.commit));
    file.runs.insert(
        0,
        LocalRun {
            scope: scope.to_string(),
            run: run.clone(),
        },
    );
    file.runs.truncate(KEPT_LOCAL);
    let path = local_path(cache_dir);
    if let Err(e) = crate::record::summary::write_json(&path, &file) {
        notices.push(Notice::note(format!(
            "could not remember this green run in {}: {e}",
            path.display()
        )));
    }
    let Some(branch) = run.branch.as_deref() else {
        return notices;
    };
    let key = record_key(scope, branch);
    let tmp = cache_dir.join("tmp");
    for remote in remotes.iter().filter(|r| r.write) {
        let layer = remote.layer.as_ref();
        let mut runs = match &green.known {
            Some((known, runs)) if known == branch => runs.clone(),
            _ if remote.read => fetch_record(layer, &key, &tmp)
                .unwrap_or_default()
                .map(|bytes| parse_record(&bytes, scope, branch))
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        runs.retain(|r| r.commit != run.commit);
        runs.insert(0, run.clone());
        runs.truncate(KEPT_REMOTE);
        let record = RemoteRecord {
            format: FORMAT,
            scope: scope.to_string(),
            branch: branch.to_string(),
            runs,
        };
        let body = serde_json::to_vec(&record).expect("a green record serializes");
        if let Err(e) = put_record(layer, &key, "vx#green", &body, &tmp) {
            notices.push(Notice::warning(format!(
                "remote cache {}: could not record this green run for --affected=last-green ({e})",
                layer.name()
            )));
        }
    }
    notices
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_scope_is_canonical_and_a_changed_since_filter_has_none() {
        let mut options = RunOptions {
            tasks: vec!["test".into(), "build".into(), "test".into()],
            ..RunOptions::default()
        };
        assert_eq!(scope(&options, true).as_deref(), Some("vx run build test"));
        assert_eq!(scope(&options, false), None);
        options.forwarded = vec!["--ci".into()];
        assert_eq!(
            scope(&options, true).as_deref(),
            Some("vx run build test -- --ci")
        );
    }

    #[test]
    fn a_pull_request_reads_its_branch_then_its_target_then_the_defaults() {
        let pr = env(&[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_HEAD_REF", "feat/x"),
            ("GITHUB_BASE_REF", "develop"),
            ("GITHUB_REF", "refs/pull/7/merge"),
        ]);
        assert_eq!(branches(&pr, None), ["feat/x", "develop", "main", "master"]);
        let push = env(&[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_REF", "refs/heads/main"),
        ]);
        assert_eq!(branches(&push, Some("ignored")), ["main", "master"]);
        assert_eq!(
            branches(&env(&[]), Some("topic")),
            ["topic", "main", "master"]
        );
    }

    #[test]
    fn record_keys_differ_by_scope_and_branch() {
        let a = record_key("vx run build", "main");
        assert_eq!(a.len(), 64);
        assert_ne!(a, record_key("vx run build", "master"));
        assert_ne!(a, record_key("vx run test", "main"));
    }
}
