//! The run snapshot: a command whose last run found every task up to date, and of whose
//! inputs nothing has moved since, is *replayed* — its footer printed again and one history
//! row recorded — without loading configuration, listing files, deriving a key or looking up
//! an entry (PERF-1: nothing changed costs about what `git status` costs).
//!
//! # How this works
//!
//! A run that ends with every task up to date, having printed nothing but its footer, the
//! plan's notes and the frames or one-liners of its hits (a focused run shows a requested
//! hit's log; the notes and the logs are kept in the snapshot and printed again), writes
//! `<cache-dir>/snapshots/<request>`: `request` is a digest of vx's version and path, the working
//! directory, the arguments, the whole environment but `VX_LOG`, which of stdin, stdout and
//! stderr are terminals, and the CPUs available (so any difference there is another request). The file holds what the footer and
//! the history row need (the tasks, their short keys, saved times, whether each was requested
//! and the log its hit printed, the counts of projects
//! and workers, the run it repeats, the cache directory with its salt and entries'
//! generation) and the `lstat` data (device, inode, mode, size, mtime, ctime; or "absent") of
//! every path the run's result depended on:
//!
//! - every file the tree listed and every directory it listed, the `.gitignore`, attributes
//!   and git configuration files it read or looked for, the index (`Tree::consulted`);
//! - every path each task's output walk looked at (`Listing::visited`): a new, removed or
//!   rewritten output shows in a file's or a directory's stat data;
//! - each path a task's key folded (inputs, manifest, the root's lock and package manager
//!   files; kept by `Keys::folded` when a hit's inputs are dropped) and each entry's artifact;
//! - what finding the members looked at (`Workspace::discovered_from`) with the `vx.toml` and
//!   `package.json` of each such directory, each project's two files, the files that finding
//!   the root reads from the working directory up, `.git` from the root up to the work tree,
//!   and the vx binary itself.
//!
//! A symbolic link is recorded twice: its `lstat`, and the `stat` of what it leads to. A path
//! inside the root is recorded as absent only when its directory did not change during the run
//! either (it may have been removed while the run read it). And nothing is written when the index's
//! generation moved while the run went on (its own retention, another checkout's prune).
//!
//! Each path has a [`Class`]: any change of its stat data means the whole way, or — for an input
//! file a key folded, which nothing else reads but by its bytes — it is judged by content.
//!
//! The next run with the same request takes the workspace lock without waiting, `lstat`s
//! every recorded path (on the machine's threads, the most recently changed first, so that a
//! run after an edit gives up early) and compares (`stat::moved`). An input judged by content
//! whose stat data moved, still a file of the same kind, is hashed again (`same_content`): the
//! mode and blob id the key folded hold it, and the snapshot is written again with its new stat
//! data (`refresh`, under the racy rule below against this run's start) so that the next run
//! does not hash it. Then the run opens the index and
//! checks its salt (a rebuilt index has a new one), its generation (raised by a trigger when
//! any entry is deleted or saved again, `vx-store` schema 6) and that the repeated run is
//! still in history. Any other difference, an unreadable snapshot or a busy lock: the run goes
//! the whole way, as if there were no snapshot, and may write a new one.
//!
//! # Why a replay is the same run
//!
//! A snapshot is written only when no recorded path changed after the run started: each
//! path's mtime and ctime are older than the run's start by more than a margin (git's
//! racy-file rule): [`stat::RACY_FINE`] on a device where some recorded time has a fraction of a
//! second and whose file system this kernel stamps (ext4, XFS, Btrfs, tmpfs, overlayfs, F2FS,
//! ZFS: from a clock that may lag the run's by a tick), else [`stat::RACY`] (whole seconds, or a
//! network file system stamped by another machine's clock). So what the run read is what
//! the stat data describe. A later change of content changes the ctime (which no program can
//! set back), an added or removed file changes its directory's, and anything vx reads that is
//! not a file — the environment, the arguments, the cache's entries — is in the request or
//! checked against the index. Not replayed at all: `--dry`, `--graph`, `--affected` and
//! changed-since filters (git history is not a file vx stats), `--summarize`, `--profile`,
//! `--events`,
//! OpenTelemetry export, `vx watch`, a remote cache or remote execution, tasks with runtime
//! probes, nested repositories and submodules, and `VX_SNAPSHOT=0`.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use vx_core::TaskId;

use crate::options::RunOptions;
use crate::outcome::{CacheKind, Notice, Status, TaskReport};
use crate::report::Reporter;
pub use paths::Paths;
pub use stat::Class;
use stat::{moved, record, stamped_here, stat_of, Racy, Recorded, Stat};

/// The first line of a snapshot file.
const FORMAT: &str = "vx-snapshot 3";

/// The hits' logs a snapshot keeps at most, in all (a run that printed more goes the whole
/// way next time: the snapshot would cost more to read than the entries).
pub const LOGS_KEPT: usize = 4 << 20;

/// Snapshot files kept per workspace; the oldest go first.
const KEPT: usize = 32;

/// Where a snapshot of this command lives, and when the run started.
#[derive(Debug, Clone)]
pub struct Request {
    pub digest: String,
    pub path: PathBuf,
    /// The wall clock when the run started, before anything was read.
    pub started: SystemTime,
}

impl Request {
    /// The request of this process's command, or `None` when it is never replayed.
    /// `cache_dir`: the cache directory as the options, the environment and the root's
    /// `[workspace]` table name it (snapshots live in its `snapshots` folder); `terminals`: which
    /// of stdin, stdout and stderr are terminals.
    pub fn new(
        cache_dir: &Path,
        cwd: &Path,
        options: &RunOptions,
        env: &BTreeMap<String, String>,
        started: SystemTime,
        terminals: [bool; 3],
    ) -> Option<Request> {
        if !replayable(options, env) {
            return None;
        }
        let mut hasher = blake3::Hasher::new();
        let mut field = |bytes: &[u8]| {
            hasher.update(&(bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        };
        field(FORMAT.as_bytes());
        field(env!("CARGO_PKG_VERSION").as_bytes());
        // Another build of the same version elsewhere is another vx (this one's file is recorded).
        let exe = std::env::current_exe().unwrap_or_default();
        field(exe.as_os_str().as_bytes());
        field(cwd.as_os_str().as_bytes());
        let args: Vec<OsString> = std::env::args_os().skip(1).collect();
        field(&(args.len() as u64).to_le_bytes());
        for arg in &args {
            field(arg.as_bytes());
        }
        // `VX_LOG` only says more on stderr: with it, a user can see why a run was not replayed.
        let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(name, _)| name != "VX_LOG")
            .collect();
        vars.sort();
        field(&(vars.len() as u64).to_le_bytes());
        for (name, value) in &vars {
            field(name.as_bytes());
            field(value.as_bytes());
        }
        field(&terminals.map(u8::from));
        // The footer's worker count when neither `--concurrency` nor the root sets it.
        field(&vx_exec::host::available_cpus().to_le_bytes());
        let digest = hasher.finalize().to_hex()[..32].to_string();
        Some(Request {
            path: cache_dir.join("snapshots").join(&digest),
            digest,
            started,
        })
    }
}

/// Whether these options and this environment allow a replay at all.
fn replayable(options: &RunOptions, env: &BTreeMap<String, String>) -> bool {
    let off = env
        .get("VX_SNAPSHOT")
        .is_some_and(|v| !crate::host::env::truthy(v));
    let exporting = [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ]
    .iter()
    .any(|name| env.get(*name).is_some_and(|v| !v.is_empty()));
    // A job summary is written by the run (UI-17), which a replay does not make.
    let job_summary = env
        .get("GITHUB_STEP_SUMMARY")
        .is_some_and(|v| !v.is_empty());
    !off && !exporting
        && !job_summary
        && options.report_junit.is_none()
        && options.events.is_none()
        && options.plan.is_none()
        && options.affected.is_none()
        && options.filters.iter().all(|f| f.changed_since().is_none())
        && options.summarize.is_none()
        && options.profile.is_none()
        && options.cache.local_read
        && options.cache.local_write
        && options.cache.remote_read != Some(true)
        && options.cache.remote_write != Some(true)
}

/// One task of the repeated run, as its frame or one-liner and the footer show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub id: TaskId,
    pub short_key: String,
    pub stored_ms: u64,
    /// It is shown as requested (the reporter decides from this whether it prints the hit).
    pub requested: bool,
    /// The log its hit printed (stored, with escapes stripped when output is not coloured);
    /// empty when it printed none.
    pub log: Vec<u8>,
}

/// What a snapshot records besides the stat data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// The run it repeats.
    pub run_id: String,
    pub cache_dir: PathBuf,
    /// The index's salt (hex) and the entries' generation when the run ended.
    pub salt: String,
    pub generation: i64,
    pub workers: u32,
    pub projects_in_run: usize,
    pub projects_in_workspace: usize,
    pub tasks: Vec<Task>,
    /// What the plan said above the run (`the workspace root declares no task build: running
    /// it in every project`, a member glob that matches nothing): said again by a replay.
    pub notes: Vec<Notice>,
}

/// Why no snapshot was written, for `VX_LOG=debug`.
#[derive(Debug)]
pub struct NotWritten(pub String);

/// Writes the snapshot of a run that found everything up to date: `paths` are absolute or
/// root-relative. Nothing is written when a path changed after the run started (or cannot be
/// read, or cannot be written down).
pub fn write(
    request: &Request,
    root: &Path,
    facts: &Facts,
    paths: Paths,
) -> Result<(), NotWritten> {
    let (paths, classes) = paths.into_sorted();
    let recorded = record(&paths).map_err(|e| NotWritten(e.to_string()))?;
    write_recorded(request, root, facts, &paths, &classes, recorded)
}

/// [`write`] from stat data already taken: `recorded` by index into `paths` and `classes`.
fn write_recorded(
    request: &Request,
    root: &Path,
    facts: &Facts,
    paths: &[PathBuf],
    classes: &[Class],
    mut recorded: Vec<(usize, bool, Option<Stat>)>,
) -> Result<(), NotWritten> {
    // Most recently changed first (see `stat::moved`); absent paths last.
    recorded.sort_by_key(|(_, _, stat)| {
        std::cmp::Reverse(stat.map_or(i128::MIN, |s| s.mtime_ns.max(s.ctime_ns)))
    });
    let racy = Racy::new(
        request.started,
        recorded
            .iter()
            .filter_map(|(index, _, stat)| Some((paths[*index].as_path(), stat.as_ref()?))),
        stamped_here,
    );
    // The racy rule, before any file is made: the paths are sorted most recently changed
    // first, so a path that changed during the run is the first one.
    if let Some((index, _, _)) = recorded
        .iter()
        .take(1)
        .find(|(_, _, stat)| stat.as_ref().is_some_and(|s| racy.is_racy(s)))
    {
        return Err(NotWritten(racy.error(&paths[*index])));
    }
    let dir = request
        .path
        .parent()
        .ok_or_else(|| NotWritten("no snapshot directory".into()))?;
    let failed = |e: io::Error| NotWritten(format!("{}: {e}", dir.display()));
    fs::create_dir_all(dir).map_err(failed)?;
    let temp = dir.join(format!(".{}.{}", request.digest, std::process::id()));
    // Written as it is made (the text of tens of thousands of paths is never held whole), to a
    // temporary file renamed over the snapshot once complete.
    let written = fs::File::create(&temp).map_err(failed).and_then(|file| {
        let mut out = io::BufWriter::with_capacity(1 << 16, file);
        let lines = Lines {
            out: &mut out,
            request,
            root,
            facts,
            paths,
            classes,
            recorded: &recorded,
            racy: &racy,
        };
        lines.write()?;
        // No `fsync`: a file cut short by a crash lacks its `end` line and is never read.
        out.into_inner().map_err(|e| failed(e.into_error()))?;
        fs::rename(&temp, &request.path).map_err(failed)
    });
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(e);
    }
    forget_oldest(dir);
    Ok(())
}

/// The lines of one snapshot, written as they are made.
struct Lines<'a, W: Write> {
    out: &'a mut W,
    request: &'a Request,
    root: &'a Path,
    facts: &'a Facts,
    paths: &'a [PathBuf],
    classes: &'a [Class],
    recorded: &'a [(usize, bool, Option<Stat>)],
    /// Which recorded times are too recent to prove anything.
    racy: &'a Racy,
}

impl<W: Write> Lines<'_, W> {
    fn line(&mut self, words: &[&str]) -> Result<(), NotWritten> {
        let written = self
            .out
            .write_all(words.join("\t").as_bytes())
            .and_then(|()| self.out.write_all(b"\n"));
        written.map_err(|e| NotWritten(format!("cannot write the snapshot: {e}")))
    }

    fn write(mut self) -> Result<(), NotWritten> {
        let facts = self.facts;
        self.line(&[FORMAT])?;
        self.line(&["vx", env!("CARGO_PKG_VERSION")])?;
        self.line(&["request", &self.request.digest])?;
        self.line(&["run", &facts.run_id])?;
        self.line(&["cache", &shown(&facts.cache_dir)?])?;
        self.line(&["store", &facts.salt, &facts.generation.to_string()])?;
        self.line(&["workers", &facts.workers.to_string()])?;
        self.line(&[
            "projects",
            &facts.projects_in_run.to_string(),
            &facts.projects_in_workspace.to_string(),
        ])?;
        for task in &facts.tasks {
            let words = [&task.id.project, &task.id.task, &task.short_key];
            if words
                .iter()
                .any(|w| w.contains(['\t', '\n', '\r']) || w.is_empty())
            {
                return Err(NotWritten(format!("task {} has an odd name", task.id)));
            }
            self.line(&[
                "task",
                &task.stored_ms.to_string(),
                &task.short_key,
                if task.requested { "requested" } else { "-" },
                &task.id.project,
                &task.id.task,
            ])?;
            if !task.log.is_empty() {
                use base64::Engine as _;
                let log = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&task.log);
                self.line(&["log", &log])?;
            }
        }
        for note in &facts.notes {
            let words: Vec<&str> = match note {
                Notice::Note(line) => vec!["note", line],
                Notice::Warning { line, hint } => {
                    vec!["warning", line, hint.as_deref().unwrap_or("")]
                }
                Notice::Unmatched { .. } => {
                    return Err(NotWritten("the plan noted an unmatched glob".into()))
                }
            };
            if words[1..].iter().any(|w| w.contains(['\t', '\n', '\r'])) {
                return Err(NotWritten("a plan note spans lines".into()));
            }
            self.line(&words)?;
        }
        let root = self.root;
        let root_prefix = root.as_os_str().as_bytes();
        let racy = self.racy;
        for &(index, follow, stat) in self.recorded {
            let path = &self.paths[index];
            // Root-relative when inside the root: the file is about a fifth smaller.
            let bytes = path.as_os_str().as_bytes();
            let name = match bytes.strip_prefix(root_prefix) {
                Some(rest) if rest.starts_with(b"/") => {
                    shown(Path::new(OsStr::from_bytes(&rest[1..])))?
                }
                _ => shown(path)?,
            };
            let (present, absent) = if follow {
                ("target", "gone")
            } else {
                ("stat", "absent")
            };
            match stat {
                None => {
                    // Removed during the run? Inside the root its directory would say so.
                    // (Above the root, `/tmp` or a home directory changes all the time: a file
                    // there removed while this very run read it is not caught.)
                    let parent = path.parent().unwrap_or(Path::new("/"));
                    if parent.starts_with(root) {
                        let dir = stat_of(parent, true).map_err(|e| NotWritten(e.to_string()))?;
                        if dir.is_some_and(|d| racy.is_racy(&d)) {
                            return Err(NotWritten(racy.error(path)));
                        }
                    }
                    self.line(&[absent, &name])?;
                }
                Some(s) => {
                    if racy.is_racy(&s) {
                        return Err(NotWritten(racy.error(path)));
                    }
                    // What a symbolic link leads to is never judged by content.
                    let class = if follow {
                        "-".to_string()
                    } else {
                        self.classes[index].word()
                    };
                    self.line(&[
                        present,
                        &s.dev.to_string(),
                        &s.ino.to_string(),
                        &s.mode.to_string(),
                        &s.size.to_string(),
                        &s.mtime_ns.to_string(),
                        &s.ctime_ns.to_string(),
                        &class,
                        &name,
                    ])?;
                }
            }
        }
        self.line(&["end"])
    }
}

/// A path as one field of a line: UTF-8 without tabs or newlines, else not written down.
fn shown(path: &Path) -> Result<String, NotWritten> {
    match path.to_str() {
        Some(text) if !text.contains(['\t', '\n', '\r']) => Ok(text.to_string()),
        _ => Err(NotWritten(format!(
            "{} cannot be written down",
            path.display()
        ))),
    }
}

/// Keeps the [`KEPT`] newest snapshots in the cache directory.
fn forget_oldest(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if files.len() <= KEPT {
        return;
    }
    files.sort();
    for (_, path) in &files[..files.len() - KEPT] {
        let _ = fs::remove_file(path);
    }
}

/// Removes the snapshot of this request (it no longer holds).
pub fn forget(request: &Request) {
    let _ = fs::remove_file(&request.path);
}

/// A snapshot read back.
struct Snapshot {
    facts: Facts,
    paths: Vec<Recorded>,
}

fn parse(text: &str, root: &Path, request: &Request) -> Option<Snapshot> {
    let mut lines = text.lines();
    if lines.next()? != FORMAT {
        return None;
    }
    let mut facts = Facts {
        run_id: String::new(),
        cache_dir: PathBuf::new(),
        salt: String::new(),
        generation: 0,
        workers: 0,
        projects_in_run: 0,
        projects_in_workspace: 0,
        tasks: Vec::new(),
        notes: Vec::new(),
    };
    let mut paths = Vec::new();
    let mut ended = false;
    let path_of = |name: &str| {
        if name.starts_with('/') {
            PathBuf::from(name)
        } else {
            root.join(name)
        }
    };
    for line in lines {
        let words: Vec<&str> = line.split('\t').collect();
        match words.as_slice() {
            ["vx", version] if *version == env!("CARGO_PKG_VERSION") => {}
            ["vx", _] => return None,
            ["request", digest] if *digest == request.digest => {}
            ["request", _] => return None,
            ["run", id] => facts.run_id = id.to_string(),
            ["cache", dir] => facts.cache_dir = PathBuf::from(dir),
            ["store", salt, generation] => {
                facts.salt = salt.to_string();
                facts.generation = generation.parse().ok()?;
            }
            ["workers", n] => facts.workers = n.parse().ok()?,
            ["projects", run, all] => {
                facts.projects_in_run = run.parse().ok()?;
                facts.projects_in_workspace = all.parse().ok()?;
            }
            ["task", stored, key, requested @ ("requested" | "-"), project, task] => {
                facts.tasks.push(Task {
                    id: TaskId::new(*project, *task),
                    short_key: key.to_string(),
                    stored_ms: stored.parse().ok()?,
                    requested: *requested == "requested",
                    log: Vec::new(),
                });
            }
            ["log", log] => {
                use base64::Engine as _;
                let task = facts.tasks.last_mut()?;
                task.log = base64::engine::general_purpose::STANDARD_NO_PAD
                    .decode(log)
                    .ok()?;
            }
            ["note", line] => facts.notes.push(Notice::Note(line.to_string())),
            ["warning", line, hint] => facts.notes.push(Notice::Warning {
                line: line.to_string(),
                hint: (!hint.is_empty()).then(|| hint.to_string()),
            }),
            ["absent", name] => paths.push(Recorded::whole(path_of(name), false, None)),
            ["gone", name] => paths.push(Recorded::whole(path_of(name), true, None)),
            [kind @ ("stat" | "target"), dev, ino, mode, size, mtime, ctime, class, name] => {
                let follow = *kind == "target";
                let class = Class::parse(class)?;
                if follow && class != Class::Whole {
                    return None;
                }
                paths.push(Recorded {
                    path: path_of(name),
                    follow,
                    stat: Some(Stat {
                        dev: dev.parse().ok()?,
                        ino: ino.parse().ok()?,
                        mode: mode.parse().ok()?,
                        size: size.parse().ok()?,
                        mtime_ns: mtime.parse().ok()?,
                        ctime_ns: ctime.parse().ok()?,
                    }),
                    class,
                });
            }
            ["end"] => ended = true,
            _ => return None,
        }
    }
    // A file cut short (a full disk, a crash mid-write of an older vx) is no snapshot, nor
    // one without every fact.
    let whole = ended
        && !facts.run_id.is_empty()
        && facts.cache_dir.is_absolute()
        && !facts.salt.is_empty()
        && facts.workers > 0
        && !facts.tasks.is_empty()
        && !paths.is_empty();
    whole.then_some(Snapshot { facts, paths })
}

/// What a replayed run needs from its caller.
pub struct Replay<'a> {
    pub root: &'a Path,
    pub host_env: &'a BTreeMap<String, String>,
    pub origin: Instant,
}

/// Replays the command when its snapshot still holds: prints the plan's notes, the hits' frames
/// or one-liners as the run printed them, and the footer, records the run,
/// and returns the exit code; `None` when the run must go the whole way. The reporter is made
/// only when the snapshot holds (it asks whether stdout is a terminal).
pub fn replay(
    request: &Request,
    how: &Replay<'_>,
    reporter: impl FnOnce() -> Box<dyn Reporter>,
) -> Option<i32> {
    let text = fs::read_to_string(&request.path).ok()?;
    let Some(snapshot) = parse(&text, how.root, request) else {
        forget(request);
        return None;
    };
    // Another run holds the workspace: the whole way waits for it.
    let lock = vx_store::lock::try_acquire(how.root).ok()??;
    // Inputs whose times moved but whose bytes did not (`touch`, a file written again in place
    // with the same bytes) are hashed again; any other change goes the whole way.
    let Some(same) =
        moved(&snapshot.paths).and_then(|moved| same_content(how.root, &snapshot.paths, &moved))
    else {
        forget(request);
        return None;
    };
    let facts = &snapshot.facts;
    let mut store = vx_store::Store::open(&facts.cache_dir, vx_store::Access::ReadWrite).ok()?;
    if store.disabled().is_some() || store.read_only_reason().is_some() {
        return None;
    }
    match store.snapshot_state(&facts.run_id) {
        Ok(Some((salt, generation))) if salt == facts.salt && generation == facts.generation => {}
        _ => {
            forget(request);
            return None;
        }
    }
    let repeated = store.invocation(&facts.run_id).ok()??;
    let reports: Vec<TaskReport> = facts
        .tasks
        .iter()
        .map(|task| {
            let mut report = TaskReport::not_started(task.id.clone(), Status::Success, None);
            report.cache = Some(CacheKind::UpToDate);
            report.short_key = Some(task.short_key.clone());
            report.stored = Some(Duration::from_millis(task.stored_ms));
            report.log = task.log.clone();
            report
        })
        .collect();
    let ended = SystemTime::now();
    let head = vx_workspace::tree::head(how.root).unwrap_or_default();
    let invocation = vx_store::index::Invocation {
        run_id: crate::ids::run_id(),
        argv: crate::record::invocation::masked_argv(
            &std::env::args().collect::<Vec<_>>(),
            &store.salt(),
        ),
        started_at: crate::clock::epoch_ms(request.started),
        ended_at: crate::clock::epoch_ms(ended),
        exit_code: crate::exit::SUCCESS,
        commit: head.commit,
        branch: head.branch,
        ci_provider: crate::record::invocation::ci_provider(how.host_env),
        replay_of: Some(facts.run_id.clone()),
        ..repeated
    };
    if let Err(error) = store.record_replay(&invocation) {
        tracing::debug!(target: "vx::snapshot", "not recorded: {error}");
        return None;
    }
    if !same.is_empty() {
        // The next run takes their new stat data as proof, without hashing them again.
        if let Err(NotWritten(why)) = refresh(request, how.root, &snapshot, &same) {
            tracing::debug!(target: "vx::snapshot", "not refreshed: {why}");
        }
    }
    let facts = snapshot.facts;
    let mut reporter = reporter();
    for note in facts.notes {
        reporter.notice(note);
    }
    for (node, (task, report)) in facts.tasks.iter().zip(&reports).enumerate() {
        reporter.finished(node, report, task.requested);
    }
    let reports: Vec<&TaskReport> = reports.iter().collect();
    reporter.finish(&crate::report::Totals {
        reports: &reports,
        projects_in_run: facts.projects_in_run,
        projects_in_workspace: facts.projects_in_workspace,
        workers: facts.workers,
        remote_in_flight: None,
        wall: how.origin.elapsed(),
        interrupted: None,
        rerun: Vec::new(),
    });
    crate::record::report_counters(0, Some(&store));
    drop(lock);
    Some(crate::exit::SUCCESS)
}

/// The files of [`Class::Content`] whose stat data moved (`moved`), hashed again: each with its
/// stat data now when it still has the mode and blob id recorded; `None` as soon as one
/// differs or cannot be read.
fn same_content(
    root: &Path,
    paths: &[Recorded],
    moved: &[(usize, Stat)],
) -> Option<Vec<(usize, Stat)>> {
    use vx_workspace::tree::{identity_now, ObjectFormat};
    let checked = vx_workspace::par::map(moved, |&(at, _)| {
        let recorded = &paths[at];
        let Class::Content { mode, blob } = &recorded.class else {
            return None;
        };
        let format = if blob.len() == 64 {
            ObjectFormat::Sha256
        } else {
            ObjectFormat::Sha1
        };
        let moved = || {
            tracing::debug!(target: "vx::snapshot", "content moved: {}", recorded.path.display());
            None
        };
        // A directory on the way replaced by a link: a full run takes the path as absent (git
        // does not follow links in the middle of a path), where hashing it would follow.
        if !directories_on_the_way(root, &recorded.path) {
            return moved();
        }
        let Ok(Some((now_mode, now_blob, meta))) = identity_now(&recorded.path, format) else {
            return moved();
        };
        if now_mode.as_str() != *mode || now_blob != *blob {
            return moved();
        }
        Some((at, Stat::of(&meta)))
    });
    checked.into_iter().collect()
}

/// Whether every directory between `root` and `path` (below the root) is one, by `lstat`.
fn directories_on_the_way(root: &Path, path: &Path) -> bool {
    let Ok(rest) = path.strip_prefix(root) else {
        return false;
    };
    let mut dir = root.to_path_buf();
    let mut parts: Vec<&std::ffi::OsStr> = rest.iter().collect();
    parts.pop();
    parts.into_iter().all(|part| {
        dir.push(part);
        fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir())
    })
}

/// Writes `snapshot` again with the stat data of the files hashed again (`same`), but those
/// too recent to prove anything (the racy rule against this run's start), which keep theirs
/// and are hashed again next time.
fn refresh(
    request: &Request,
    root: &Path,
    snapshot: &Snapshot,
    same: &[(usize, Stat)],
) -> Result<(), NotWritten> {
    let mut now: HashMap<usize, Stat> = same.iter().copied().collect();
    let racy = Racy::new(
        request.started,
        same.iter()
            .map(|(at, stat)| (snapshot.paths[*at].path.as_path(), stat)),
        stamped_here,
    );
    now.retain(|_, stat| !racy.is_racy(stat));
    if now.is_empty() {
        return Err(NotWritten(
            "every file hashed again changed too recently".into(),
        ));
    }
    let mut paths = Vec::new();
    let mut classes = Vec::new();
    let mut index: HashMap<&Path, usize> = HashMap::new();
    for recorded in snapshot.paths.iter().filter(|r| !r.follow) {
        index.insert(&recorded.path, paths.len());
        paths.push(recorded.path.clone());
        classes.push(recorded.class.clone());
    }
    let mut entries = Vec::with_capacity(snapshot.paths.len());
    for (at, recorded) in snapshot.paths.iter().enumerate() {
        let Some(&i) = index.get(recorded.path.as_path()) else {
            return Err(NotWritten(format!(
                "{} is recorded only as a link's target",
                recorded.path.display()
            )));
        };
        let stat = now.get(&at).copied().or(recorded.stat);
        entries.push((i, recorded.follow, stat));
    }
    write_recorded(request, root, &snapshot.facts, &paths, &classes, entries)
}

mod paths;
mod stat;
#[cfg(test)]
mod tests;
