//! `--affected` and `[<ref>]` filters, the git side (SEL-3, SEL-4, SEL-6, DISC-7): choosing
//! the base, asking git which paths changed since it, and the wording of what went wrong.
//! What the changed paths seed is pure and lives in `vx_core::affected`.
//!
//! # How this works
//!
//! Whether the workspace is in a git work tree is decided as the file tree decides it (the
//! nearest `.git` upward, `vx_workspace::tree::find_repository`), without a process. Every git
//! command then goes through the supervisor (`Supervisor::output`), in the workspace root,
//! with `GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE` and `GIT_OBJECT_DIRECTORY` removed
//! (ENV-1). For a base `B` a run starts at most:
//!
//! 1. `git rev-parse HEAD B^{commit} --`: checks that `B` names a commit and gives both
//!    commits. For bare `--affected` without `affected-base` (SEL-4) this is instead
//!    `git rev-list --first-parent --max-count=2 HEAD` (HEAD and `HEAD~1`) and one
//!    `git for-each-ref` over the candidate refs;
//! 2. `git merge-base HEAD B`, skipped when `B` is HEAD's commit;
//! 3. `git diff --raw -z --no-renames --relative <merge base>`: tracked paths that differ
//!    between the merge base and the work tree, relative to the root (a submodule is one path
//!    with mode 160000);
//! 4. `git ls-files --others --exclude-standard -z`: untracked files that are not ignored (a
//!    nested repository is one path ending in `/`); once per run, whatever the number of refs.
//!
//! Paths under `.git`, `.vx` and the cache directory, and untracked files under
//! `node_modules`, are left out as the file listing leaves them out (KEY-10).

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use vx_core::affected::{check_ref, ChangedPath, RefSite};
use vx_core::Diagnostic;
use vx_core::Workspace;
use vx_workspace::lockfile::{self, PER_PROJECT};
use vx_workspace::tree::{find_repository, GitDirs};

use crate::error::Failure;
use crate::options::AffectedBase;
use crate::plan::ci::{ci_base, CiBase};

/// HEAD's newest commits `--affected=last-green` walks to find the nearest green one.
const GREEN_WALK: usize = 10_000;

/// How `--affected=last-green` names its base when no green run is known.
pub const GREEN_NONE: &str = "nothing green yet";
/// How the line of `--affected=last-green` starts when it found a green commit.
pub const GREEN_WHY: &str = "the last green run of";

/// A commit `--affected=last-green` may take as its base (SEL-10), with the words that say why
/// when it is taken.
pub struct GreenCommit {
    pub commit: String,
    pub why: String,
}

/// A git command that takes longer than this is stopped and the run refused.
const GIT_TIMEOUT: Duration = Duration::from_secs(300);

/// SEL-4: the refs a bare `--affected` tries after `origin/HEAD`, in order.
const DEFAULT_BASES: [(&str, &str); 4] = [
    ("origin/main", "refs/remotes/origin/main"),
    ("origin/master", "refs/remotes/origin/master"),
    ("main", "refs/heads/main"),
    ("master", "refs/heads/master"),
];

/// What changed since one base.
#[derive(Debug, Clone)]
pub struct Changes {
    /// The base as named (`origin/main`, `HEAD~1`).
    pub base: String,
    /// The base's commit, full hex.
    pub commit: String,
    /// The commit the paths were compared with: the merge base of the base and `HEAD`.
    pub merge_base: String,
    /// The base is HEAD's commit (SEL-6's hint).
    pub at_head: bool,
    /// Changed paths, root-relative, sorted.
    pub paths: Vec<ChangedPath>,
    /// For a bare `--affected` with no `affected-base`: why this base (the CI that named it,
    /// or the default ref found), for the line the run prints and `--summarize` (SEL-8).
    pub why: Option<String>,
}

impl Changes {
    /// The first seven digits of the base's commit.
    pub fn short(&self) -> &str {
        &self.commit[..self.commit.len().min(7)]
    }
}

/// Who needs git, for the messages of DISC-7.
#[derive(Debug, Clone, Copy)]
pub enum Need<'a> {
    Affected,
    /// A changed-since filter, as written.
    Filter(&'a str),
}

impl Need<'_> {
    fn name(&self) -> String {
        match self {
            Need::Affected => "--affected".to_string(),
            Need::Filter(text) => format!("the filter `{text}`"),
        }
    }
}

/// The workspace's git repository, asked lazily; answers are kept for the run.
pub struct Git {
    root: PathBuf,
    env: Vec<(OsString, OsString)>,
    /// Root-relative directories whose files never count as changed (the cache directory).
    excluded: Vec<String>,
    located: Option<Option<GitDirs>>,
    /// vx's own environment: the CI's variables name the base of a bare `--affected` (SEL-8).
    host_env: BTreeMap<String, String>,
    head: Option<String>,
    untracked: Option<Vec<ChangedPath>>,
    since: HashMap<String, Changes>,
}

impl Git {
    /// `cache_dir` is the run's cache directory (STORE-2); its files never count as changed.
    pub fn new(root: &Path, host_env: &BTreeMap<String, String>, cache_dir: &Path) -> Git {
        let excluded = cache_dir
            .strip_prefix(root)
            .ok()
            .map(|rel| rel.to_string_lossy().into_owned())
            .filter(|rel| !rel.is_empty())
            .into_iter()
            .collect();
        Git {
            root: root.to_path_buf(),
            env: vx_exec::subprocess::git_env(host_env),
            host_env: host_env.clone(),
            excluded,
            located: None,
            head: None,
            untracked: None,
            since: HashMap::new(),
        }
    }

    /// The changes since the base of `--affected` (SEL-4 for the bare flag).
    pub fn affected(
        &mut self,
        base: &AffectedBase,
        setting: Option<&str>,
    ) -> Result<Changes, Failure> {
        let need = Need::Affected;
        let (reference, commit) = match (base, setting) {
            (AffectedBase::Ref(reference), _) => (reference.clone(), None),
            (AffectedBase::LastGreen, _) => {
                return Err(Failure::Internal(
                    "--affected=last-green is planned by `green`".into(),
                ))
            }
            (AffectedBase::Default, Some(setting)) => {
                let reference = check_ref(setting)
                    .map_err(|p| Failure::from(p.diagnostic(setting, RefSite::Config)))?;
                (reference, None)
            }
            (AffectedBase::Default, None) => {
                let read = |path: &Path| std::fs::read_to_string(path).ok();
                let why_ci = match ci_base(&self.host_env, read) {
                    CiBase::Base { reference, why } => return self.ci_changes(&reference, why),
                    CiBase::Nothing { why } => Some(why),
                    CiBase::NotCi => None,
                };
                let (reference, commit, why) = self.default_base()?;
                let mut changes = self.changes_since(need, &reference, Some(commit))?;
                changes.why = Some(match why_ci {
                    Some(ci) => format!("{ci}; {why}"),
                    None => why,
                });
                return Ok(changes);
            }
        };
        self.changes_since(need, &reference, commit)
    }

    /// SEL-8: the changes since the base the CI named. A base commit this clone lacks (a
    /// shallow checkout) is refused with the command that fetches it, never taken as
    /// "everything changed".
    fn ci_changes(&mut self, reference: &str, why: String) -> Result<Changes, Failure> {
        let need = Need::Affected;
        let dirs = self.repository(need)?;
        let target = format!("{reference}^{{commit}}");
        let present = self.git(need, &["cat-file", "-e", &target])?.ok;
        let shown = shown_base(reference);
        if !present {
            let d = Diagnostic::new(format!(
                "--affected: the base {why} is {shown}, which this clone does not have"
            ));
            return Err(unshallow_hint(d, &dirs).into());
        }
        let mut changes = match self.changes_since(need, reference, None) {
            Ok(changes) => changes,
            Err(_) if dirs.is_shallow() => {
                let d = Diagnostic::new(format!(
                    "--affected: the base {why} is {shown}, and this shallow clone does not reach back to where it and HEAD meet"
                ));
                return Err(unshallow_hint(d, &dirs).into());
            }
            Err(failure) => return Err(failure),
        };
        changes.why = Some(why);
        Ok(changes)
    }

    /// SEL-10: the changes since the nearest ancestor of HEAD among `candidates` (green runs,
    /// newest first), found in one walk of HEAD's newest [`GREEN_WALK`] commits and, past it,
    /// one `merge-base --is-ancestor` per candidate. With none, every path changed (the run
    /// compares with the empty tree); in a shallow clone that lacks them, refused with the fetch.
    pub fn last_green(
        &mut self,
        scope: &str,
        candidates: &[GreenCommit],
        branches: &[String],
    ) -> Result<Changes, Failure> {
        let need = Need::Affected;
        let dirs = self.repository(need)?;
        self.head(need, &dirs)?;
        let walk = format!("--max-count={GREEN_WALK}");
        let out = self.git(need, &["rev-list", &walk, "HEAD", "--"])?;
        let near: HashMap<&str, usize> = out
            .stdout
            .lines()
            .enumerate()
            .map(|(i, c)| (c, i))
            .collect();
        let mut best = candidates
            .iter()
            .filter_map(|c| near.get(c.commit.as_str()).map(|i| (*i, c)))
            .min_by_key(|(i, _)| *i)
            .map(|(_, c)| c);
        if best.is_none() && near.len() >= GREEN_WALK {
            for c in candidates {
                let args = ["merge-base", "--is-ancestor", c.commit.as_str(), "HEAD"];
                if self.git(need, &args)?.ok {
                    best = Some(c);
                    break;
                }
            }
        }
        let tasks = format!("`{scope}`");
        let Some(found) = best else {
            if !candidates.is_empty() && dirs.is_shallow() {
                let commits: Vec<&str> = candidates
                    .iter()
                    .take(3)
                    .map(|c| &c.commit[..c.commit.len().min(7)])
                    .collect();
                let d = Diagnostic::new(format!(
                    "--affected=last-green: none of the green commits of {tasks} ({}{}) is in this shallow clone's history",
                    commits.join(", "),
                    if candidates.len() > 3 { ", …" } else { "" }
                ));
                return Err(unshallow_hint(d, &dirs).into());
            }
            let out = self.git(need, &["hash-object", "-t", "tree", "/dev/null"])?;
            let empty = first_line(&out.stdout);
            let paths = self.paths_since(need, &empty)?;
            return Ok(Changes {
                base: GREEN_NONE.to_string(),
                commit: empty.clone(),
                merge_base: empty,
                at_head: false,
                paths,
                why: Some(format!(
                    "no green run of {tasks} is recorded for {}, so every task is affected",
                    branches.join(", ")
                )),
            });
        };
        let mut changes = self.changes_since(need, &found.commit, None)?;
        changes.why = Some(found.why.clone());
        Ok(changes)
    }

    /// SEL-10: the first path where the work tree differs from HEAD (tracked changes and
    /// untracked files that are not ignored, outside `.vx` and the cache directory), or `None`
    /// when it equals HEAD. A green run is recorded only for a clean tree.
    /// `own` are files vx itself wrote in this run (`--report`, `--summarize`, `--profile`),
    /// which are not the tasks' doing.
    pub fn first_dirty(&mut self, own: &[PathBuf]) -> Result<Option<String>, Failure> {
        let need = Need::Affected;
        self.repository(need)?;
        let out = self.git(
            need,
            &[
                "status",
                "--porcelain=v1",
                "-z",
                "--no-renames",
                "--untracked-files=all",
            ],
        )?;
        if !out.ok {
            return Err(git_failed("status", &out.stderr));
        }
        let own: Vec<PathBuf> = own.iter().filter_map(|p| p.canonicalize().ok()).collect();
        let is_own = |path: &str| {
            !own.is_empty()
                && self
                    .root
                    .join(path)
                    .canonicalize()
                    .is_ok_and(|p| own.contains(&p))
        };
        Ok(out
            .bytes
            .split(|b| *b == 0)
            .filter(|entry| entry.len() > 3)
            .map(|entry| String::from_utf8_lossy(&entry[3..]).into_owned())
            .find(|path| !self.is_excluded(path) && !is_own(path)))
    }

    /// The changes since `reference` for a changed-since filter (SEL-1).
    pub fn filter(&mut self, text: &str, reference: &str) -> Result<Changes, Failure> {
        self.changes_since(Need::Filter(text), reference, None)
    }

    /// DISC-7: the repository, or the message naming what needed it.
    fn repository(&mut self, need: Need<'_>) -> Result<GitDirs, Failure> {
        if self.located.is_none() {
            let found = find_repository(&self.root)
                .map_err(|e| Failure::from(Diagnostic::new(e.to_string())))?;
            self.located = Some(found);
        }
        match self.located.clone().flatten() {
            Some(dirs) => Ok(dirs),
            None => Err(Diagnostic::new(format!("{} needs a git repository", need.name())).into()),
        }
    }

    fn changes_since(
        &mut self,
        need: Need<'_>,
        reference: &str,
        known: Option<String>,
    ) -> Result<Changes, Failure> {
        if let Some(found) = self.since.get(reference) {
            return Ok(found.clone());
        }
        let dirs = self.repository(need)?;
        let (head, commit) = match known {
            Some(commit) => (self.head(need, &dirs)?, commit),
            None => self.resolve(need, &dirs, reference)?,
        };
        let merge_base = if commit == head {
            commit.clone()
        } else {
            let out = self.git(need, &["merge-base", "HEAD", &commit])?;
            if !out.ok {
                let d = Diagnostic::new(format!("`{reference}` and `HEAD` have no common history"));
                return Err(shallow_hint(d, &dirs, reference).into());
            }
            first_line(&out.stdout)
        };
        let paths = self.paths_since(need, &merge_base)?;
        let changes = Changes {
            base: reference.to_string(),
            at_head: commit == head,
            commit,
            merge_base,
            paths,
            why: None,
        };
        self.since.insert(reference.to_string(), changes.clone());
        Ok(changes)
    }

    /// The paths that differ between `commit` (or tree) and the work tree, untracked ones too.
    fn paths_since(&mut self, need: Need<'_>, commit: &str) -> Result<Vec<ChangedPath>, Failure> {
        let mut paths = self.diff(need, commit)?;
        paths.extend(self.untracked(need)?);
        paths.retain(|p| !self.is_excluded(&p.path));
        paths.sort();
        paths.dedup();
        Ok(paths)
    }

    /// `git rev-parse HEAD <ref>^{commit} --`: HEAD's commit and the ref's.
    fn resolve(
        &mut self,
        need: Need<'_>,
        dirs: &GitDirs,
        reference: &str,
    ) -> Result<(String, String), Failure> {
        let target = format!("{reference}^{{commit}}");
        let out = self.git(need, &["rev-parse", "HEAD", &target, "--"])?;
        let lines: Vec<&str> = out.stdout.lines().collect();
        if !out.ok || lines.len() < 2 {
            if out.stderr.contains("'HEAD'") {
                return Err(no_commit_yet().into());
            }
            let d = Diagnostic::new(format!("cannot resolve git ref `{reference}`"));
            return Err(shallow_hint(d, dirs, reference).into());
        }
        self.head = Some(lines[0].to_string());
        Ok((lines[0].to_string(), lines[1].to_string()))
    }

    fn head(&mut self, need: Need<'_>, dirs: &GitDirs) -> Result<String, Failure> {
        match &self.head {
            Some(head) => Ok(head.clone()),
            None => Ok(self.resolve(need, dirs, "HEAD")?.0),
        }
    }

    /// SEL-4: `origin/HEAD`, else the first of `origin/main`, `origin/master`, `main`,
    /// `master` that exists and is not HEAD's commit, else `HEAD~1`; with why, in words.
    fn default_base(&mut self) -> Result<(String, String, String), Failure> {
        let need = Need::Affected;
        self.repository(need)?;
        let none =
            || {
                Failure::from(Diagnostic::new("--affected found no base ref").hint(
                    "name one with `--affected=<ref>`, or set `affected-base` in [workspace]",
                ))
            };
        let out = self.git(
            need,
            &["rev-list", "--first-parent", "--max-count=2", "HEAD", "--"],
        )?;
        if !out.ok {
            return Err(none());
        }
        let history: Vec<String> = out.stdout.lines().map(str::to_string).collect();
        let Some(head) = history.first().cloned() else {
            return Err(none());
        };
        self.head = Some(head.clone());
        let mut args = vec![
            "for-each-ref",
            "--format=%(objectname) %(refname)",
            "refs/remotes/origin/HEAD",
        ];
        args.extend(DEFAULT_BASES.iter().map(|(_, full)| *full));
        let out = self.git(need, &args)?;
        let refs: HashMap<&str, &str> = out
            .stdout
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(commit, name)| (name, commit))
            .collect();
        if let Some(commit) = refs.get("refs/remotes/origin/HEAD") {
            let why = "the remote's default branch".to_string();
            return Ok(("origin/HEAD".to_string(), commit.to_string(), why));
        }
        for (short, full) in DEFAULT_BASES {
            if let Some(commit) = refs.get(full).filter(|c| **c != head) {
                let why = "the first of origin/main, origin/master, main and master that is not HEAD (no origin/HEAD)".to_string();
                return Ok((short.to_string(), commit.to_string(), why));
            }
        }
        match history.get(1) {
            Some(parent) => Ok((
                "HEAD~1".to_string(),
                parent.clone(),
                "no origin/HEAD, origin/main, origin/master, main or master other than HEAD"
                    .to_string(),
            )),
            None => Err(none()),
        }
    }

    /// Tracked paths that differ between `commit` and the work tree.
    fn diff(&mut self, need: Need<'_>, commit: &str) -> Result<Vec<ChangedPath>, Failure> {
        let out = self.git(
            need,
            &[
                "diff",
                "--raw",
                "-z",
                "--no-renames",
                "--no-abbrev",
                "--relative",
                "--no-color",
                "--no-ext-diff",
                "--ignore-submodules=none",
                commit,
                "--",
            ],
        )?;
        if !out.ok {
            return Err(git_failed("diff", &out.stderr));
        }
        Ok(parse_raw_diff(&out.bytes))
    }

    /// SEL-5 with KEY-3: a changed root lockfile that vx reads per project, at the merge
    /// base and now, names the projects whose dependency set moved; only their tasks are
    /// seeded. A lockfile that is new, deleted or unreadable on either side seeds every task.
    pub fn narrow_lockfiles(&mut self, workspace: &Workspace, changes: &mut Changes) {
        let mut members: Vec<&str> = workspace.projects.iter().map(|p| p.dir.as_str()).collect();
        members.push("");
        let root = &workspace.root;
        let manifest =
            |dir: &str| std::fs::read_to_string(root.join(dir).join("package.json")).ok();
        for change in &mut changes.paths {
            let file = change.path.as_str();
            if change.subtree || !PER_PROJECT.contains(&file) {
                continue;
            }
            // A deleted lockfile seeds every task; git is asked only for one still here.
            let Ok(now) = std::fs::read(root.join(file)) else {
                continue;
            };
            let show = format!("{}:./{file}", changes.merge_base);
            let Ok(out) = self.git(Need::Affected, &["show", &show]) else {
                continue;
            };
            if !out.ok {
                continue;
            }
            let read = |bytes: &[u8]| lockfile::read(file, bytes, &members, &manifest).ok();
            let (Some(before), Some(after)) = (read(&out.bytes), read(&now)) else {
                continue;
            };
            let moved = |dir: &str| before.project(dir).digest != after.project(dir).digest;
            change.only = Some(
                members
                    .iter()
                    .filter(|dir| moved(dir))
                    .map(|dir| dir.to_string())
                    .collect(),
            );
        }
    }

    /// Untracked files that are not ignored, once per run.
    fn untracked(&mut self, need: Need<'_>) -> Result<Vec<ChangedPath>, Failure> {
        if let Some(found) = &self.untracked {
            return Ok(found.clone());
        }
        let out = self.git(need, &["ls-files", "--others", "--exclude-standard", "-z"])?;
        if !out.ok {
            return Err(git_failed("ls-files", &out.stderr));
        }
        let found: Vec<ChangedPath> = out
            .bytes
            .split(|b| *b == 0)
            .filter(|entry| !entry.is_empty())
            .map(|entry| String::from_utf8_lossy(entry).into_owned())
            .filter(|path| !path.split('/').any(|part| part == "node_modules"))
            .map(|path| match path.strip_suffix('/') {
                Some(dir) => ChangedPath::subtree(dir),
                None => ChangedPath::file(path),
            })
            .collect();
        self.untracked = Some(found.clone());
        Ok(found)
    }

    fn is_excluded(&self, path: &str) -> bool {
        path.split('/').any(|part| part == ".git" || part == ".vx")
            || self
                .excluded
                .iter()
                .any(|dir| path == dir || path.starts_with(&format!("{dir}/")))
    }

    /// Runs `git args…` in the root through the supervisor.
    fn git(&self, need: Need<'_>, args: &[&str]) -> Result<GitOutput, Failure> {
        let program = self
            .env
            .iter()
            .find(|(k, _)| k == "PATH")
            .and_then(|(_, path)| vx_exec::subprocess::find_on_path("git", &path.to_string_lossy()))
            .ok_or_else(|| {
                Failure::from(Diagnostic::new(format!(
                    "{} needs `git`, which is not on PATH",
                    need.name()
                )))
            })?;
        tracing::debug!(?args, "git");
        let output = vx_exec::subprocess::run(
            program,
            "git",
            args.iter().map(OsString::from).collect(),
            &self.root,
            self.env.clone(),
            GIT_TIMEOUT,
        );
        if output.completion.timed_out {
            return Err(
                Diagnostic::new(format!("`git {}` did not finish within 5m00s", args[0])).into(),
            );
        }
        Ok(GitOutput {
            ok: output.completion.exit_code == 0,
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            bytes: output.stdout,
        })
    }
}

struct GitOutput {
    ok: bool,
    stdout: String,
    stderr: String,
    bytes: Vec<u8>,
}

/// `git diff --raw -z` records: `:<mode> <mode> <id> <id> <status>\0<path>\0`. Mode 160000 on
/// either side is a submodule: everything under it changed.
fn parse_raw_diff(bytes: &[u8]) -> Vec<ChangedPath> {
    let mut out = Vec::new();
    let mut fields = bytes.split(|b| *b == 0).filter(|f| !f.is_empty());
    while let Some(meta) = fields.next() {
        if !meta.starts_with(b":") {
            continue;
        }
        let Some(path) = fields.next() else {
            break;
        };
        let meta = String::from_utf8_lossy(meta);
        let submodule = meta
            .split(' ')
            .take(2)
            .any(|m| m.trim_start_matches(':') == "160000");
        let path = String::from_utf8_lossy(path).into_owned();
        out.push(if submodule {
            ChangedPath::subtree(path)
        } else {
            ChangedPath::file(path)
        });
    }
    out
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().trim().to_string()
}

fn no_commit_yet() -> Diagnostic {
    Diagnostic::new("cannot resolve git ref `HEAD`").hint("the repository has no commit yet")
}

fn git_failed(verb: &str, stderr: &str) -> Failure {
    let reason = stderr
        .lines()
        .next()
        .unwrap_or("no message")
        .trim_start_matches("fatal: ");
    Diagnostic::new(format!("`git {verb}` failed: {reason}")).into()
}

/// `origin/main`, or the first seven digits of a commit id.
fn shown_base(reference: &str) -> String {
    if reference.len() >= 40 && reference.bytes().all(|b| b.is_ascii_hexdigit()) {
        reference[..7].to_string()
    } else {
        reference.to_string()
    }
}

/// SEL-8: how to get the history a CI's base needs.
fn unshallow_hint(d: Diagnostic, dirs: &GitDirs) -> Diagnostic {
    let d = if dirs.is_shallow() {
        d.hint("this is a shallow clone: fetch its whole history with `git fetch --no-tags --unshallow origin`")
    } else {
        d.hint("fetch it with `git fetch --no-tags origin`")
    };
    d.hint("or check out with the whole history (GitHub Actions: `fetch-depth: 0`; GitLab CI: `GIT_DEPTH: 0`), or name a base with `--affected=<ref>`")
}

/// SEL-3: in a shallow clone, how to fetch the base.
fn shallow_hint(d: Diagnostic, dirs: &GitDirs, reference: &str) -> Diagnostic {
    if !dirs.is_shallow() {
        return d;
    }
    let (remote, branch) = reference
        .split_once('/')
        .filter(|(remote, _)| *remote == "origin")
        .unwrap_or(("origin", reference));
    d.hint(format!(
        "this is a shallow clone; fetch the base, e.g. `git fetch --deepen=200 {remote} {branch}`"
    ))
}

/// SEL-6: the notice printed when no requested task is affected, with its hint; `names` are
/// the bare task names given.
pub fn nothing_affected(changes: &Changes, any_seeded: bool, names: &[&str]) -> Diagnostic {
    let line = if any_seeded {
        let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        format!(
            "the changes since {} reach no {} task",
            shown_base(&changes.base),
            quoted.join(" or ")
        )
    } else if changes.base.starts_with(&changes.commit) {
        format!("no project changed since {}", changes.short())
    } else {
        format!(
            "no project changed since {} ({})",
            changes.base,
            changes.short()
        )
    };
    let notice = Diagnostic::new(line);
    if changes.at_head
        && changes
            .why
            .as_deref()
            .is_some_and(|w| w.starts_with(GREEN_WHY))
    {
        notice.hint("HEAD itself is the last green commit")
    } else if changes.at_head {
        notice.hint("the base is HEAD; pass --affected=origin/main or --affected=HEAD~1")
    } else {
        notice
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_diff_records_become_paths_and_submodules_subtrees() {
        let zero = "0".repeat(40);
        let text = format!(
            ":100644 100644 {zero} {zero} M\0packages/lib/src/a.txt\0\
             :000000 160000 {zero} {zero} A\0vendor/sub\0\
             :100644 000000 {zero} {zero} D\0gone.txt\0"
        );
        assert_eq!(
            parse_raw_diff(text.as_bytes()),
            [
                ChangedPath::file("packages/lib/src/a.txt"),
                ChangedPath::subtree("vendor/sub"),
                ChangedPath::file("gone.txt"),
            ]
        );
        assert!(parse_raw_diff(b"").is_empty());
    }

    #[test]
    fn nothing_affected_names_the_base_or_the_tasks() {
        let changes = Changes {
            base: "HEAD".into(),
            commit: "0123456789abcdef".into(),
            merge_base: "0123456789abcdef".into(),
            at_head: true,
            paths: Vec::new(),
            why: None,
        };
        let notice = nothing_affected(&changes, false, &["build"]);
        assert_eq!(notice.message, "no project changed since HEAD (0123456)");
        assert_eq!(
            notice.hints,
            ["the base is HEAD; pass --affected=origin/main or --affected=HEAD~1"]
        );
        let changes = Changes {
            base: "origin/main".into(),
            at_head: false,
            ..changes
        };
        let notice = nothing_affected(&changes, true, &["test", "lint"]);
        assert_eq!(
            notice.message,
            "the changes since origin/main reach no `test` or `lint` task"
        );
        assert!(notice.hints.is_empty());
    }
}
