//! `vx watch TASK…` (WATCH-1 …): the first run exactly like `vx run`, then a run again after
//! every change to what the run reaches, until a signal.
//!
//! How this works: the scope (`scope.rs`) comes from the run's plan; every directory in it is
//! watched on its own (notify: inotify on Linux, polling as the fallback) from before the first
//! run, so an edit made while a cycle runs is never lost. Events are debounced (a cycle starts
//! 150 ms after the last event, at most 1 s after the first), then judged together: a path
//! counts only if its fingerprint (bytes, mode, symlink target) differs from the one vx last
//! saw and it may trigger (not under `node_modules`, `.git`, `.vx` or the cache directory, not
//! a declared output, not git-ignored). A cycle is `vx run` again with the same options
//! (`run::run_as`): the cache decides what executes; a failed cycle, or one whose configuration
//! does not load, keeps the watch going. Events that arrive during a cycle are judged after it,
//! so they cause at most one follow-up cycle. Signals reach the running graph as in `vx run`
//! and the watch too: Ctrl-C prints `vx watch: no longer watching` and exits 0 (WATCH-1);
//! SIGTERM and SIGHUP exit 128 + n. A path that starts three cycles in a row only through the
//! previous cycle's own writes is named once (WATCH-5). Persistent tasks outlive a cycle
//! (`vx_engine::execute::Servers`): a cycle keeps a dev server unless its configuration, its
//! project's files or an upstream changed, and every way out of the watch stops them first.

mod poll;
mod scope;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crossbeam_channel::{select, Receiver};
use notify::RecursiveMode;

use vx_engine::error::Failure;
use vx_engine::execute::Servers;
use vx_engine::host::env::{host_env, truthy};
use vx_engine::host::signals;
use vx_engine::options::RunOptions;
use vx_engine::{plan, setup};

use crate::cli::RunArgs;
use crate::options;
use crate::run::{self, Ending};
use scope::{Fingerprint, Scope, PROBE_FILE};

/// WATCH-4: a cycle starts this long after the last event…
const QUIET: Duration = Duration::from_millis(150);
/// …and at most this long after the first.
const AT_MOST: Duration = Duration::from_secs(1);
/// WATCH-6: how long the probe file's event may take before vx polls instead.
const PROBE_WAIT: Duration = Duration::from_secs(2);
const POLL_EVERY: Duration = Duration::from_millis(250);
/// WATCH-5: after this many cycles in a row started only by the previous cycle's writes to
/// the same path, vx names it.
const SELF_TRIGGERING: u32 = 3;

type Events = Receiver<notify::Result<notify::Event>>;

pub fn watch(cwd: &Path, args: RunArgs) -> Result<i32, Failure> {
    // WATCH-8: flags that make no sense for a watch are refused before anything runs.
    for (flag, given) in [
        ("--dry", args.dry.is_some()),
        ("--graph", args.graph.is_some()),
        ("--summarize", args.summarize.is_some()),
        ("--profile", args.profile.is_some()),
        ("--frozen", args.frozen),
        ("--report", args.report.is_some()),
        ("--events", args.events.is_some()),
        ("--exit-code", args.exit_code),
        ("--shard", args.shard.is_some()),
        (
            "--affected=last-green",
            args.affected.as_deref() == Some("last-green"),
        ),
    ] {
        if given {
            return Err(Failure::usage(format!(
                "{flag} cannot be used with `vx watch`"
            )));
        }
    }
    // `VX_SHARD` is for CI runners: a watch on a machine that has it set runs everything.
    let mut options = options::resolve_watch(args)?;
    signals::install()?;
    let (signal_tx, signal_rx) = crossbeam_channel::unbounded();
    signals::route_to_watch(Some(signal_tx));
    let host_env = host_env();

    // The scope, from a plan made now: an unknown task exits 2 before anything runs.
    let plan = plan::build(plan::discover(cwd, false)?, cwd, &options)?;
    for notice in &plan.notices {
        crate::render::say(notice.clone());
    }
    // WATCH-7: `--affected` is evaluated once, now: the watch goes on with the tasks it
    // found, named. With nothing affected there is nothing to watch (SEL-6's line, exit 0).
    if let Some(affected) = &plan.affected {
        if let Some(notice) = &affected.nothing {
            crate::render::notice(&notice.message);
            for hint in &notice.hints {
                crate::render::stderr(&format!("  hint: {hint}\n"));
            }
            return Ok(vx_engine::exit::SUCCESS);
        }
        options.tasks = plan
            .graph
            .nodes
            .iter()
            .filter(|n| n.requested)
            .map(|n| n.id.to_string())
            .collect();
        options.affected = None;
        options.all = false;
        options.filters = Vec::new();
    }
    let cache_dir = setup::resolve_cache_dir(&plan.workspace, cwd, &options, &host_env)?;
    let scope = Scope::from_plan(&plan, &cache_dir);
    drop(plan);

    let (event_tx, events) = crossbeam_channel::unbounded();
    let poll = host_env.get("VX_WATCH_POLL").is_some_and(|v| truthy(v));
    let mut watch = Watch::start(scope, event_tx.clone(), poll)?;
    watch.sender = Some(event_tx.clone());
    // Persistent tasks kept running between cycles; dropped (stopped) on every way out.
    let mut servers = Servers::new(std::sync::Arc::new(crate::render::Console))
        .map_err(|e| Failure::Internal(format!("cannot start a thread: {e}")))?;

    if let Some(code) = signalled(&signal_rx, &servers) {
        return Ok(code);
    }
    crate::render::stderr("vx watch: first run\n");
    cycle(cwd, &options, &mut servers);
    if let Some(code) = signalled(&signal_rx, &servers) {
        return Ok(code);
    }
    if !poll && !watch.probe(&events) {
        crate::render::stderr(
            "vx watch: file events are not delivered here; polling every 250ms instead\n",
        );
        watch.switch_to_polling(event_tx);
    }
    crate::render::stderr(&format!(
        "vx watch: watching {} directories\n",
        watch.watched.len()
    ));
    // WATCH-5: what the last cycle's own writes changed, and how many cycles in a row each
    // path has started that way.
    let mut written_by_cycle: Option<BTreeSet<PathBuf>> = None;
    let mut streaks: HashMap<PathBuf, u32> = HashMap::new();
    let mut named: BTreeSet<PathBuf> = BTreeSet::new();
    loop {
        let changed = if watch.early.is_empty() && !watch.rescan {
            select! {
                recv(signal_rx) -> signal => {
                    let signal = signal.unwrap_or(libc_sigint());
                    return Ok(farewell(signal, &servers, &signal_rx));
                }
                recv(events) -> first => match first {
                    Ok(first) => watch.settle(Some(first), &events),
                    Err(_) => return Err(Failure::Internal("the file watcher stopped".into())),
                },
            }
        } else {
            watch.settle(None, &events)
        };
        let by_cycle = written_by_cycle.take().is_some_and(|written| {
            !changed.is_empty() && changed.iter().all(|p| written.contains(p))
        });
        if by_cycle {
            streaks.retain(|path, _| changed.contains(path));
            for path in &changed {
                let streak = streaks.entry(path.clone()).or_default();
                *streak += 1;
                if *streak >= SELF_TRIGGERING && named.insert(path.clone()) {
                    let rel = path.strip_prefix(watch.scope.root()).unwrap_or(path);
                    crate::render::stderr(&format!(
                        "vx watch: `{}` changes on every cycle; declare it as an output or ignore it in git\n",
                        rel.display()
                    ));
                }
            }
        } else {
            streaks.clear();
        }
        if changed.is_empty() {
            continue;
        }
        let first = changed[0]
            .strip_prefix(watch.scope.root())
            .unwrap_or(&changed[0]);
        let more = match changed.len() {
            1 => String::new(),
            2 => " and 1 more file".to_string(),
            n => format!(" and {} more files", n - 1),
        };
        // A signal that came while the change was judged ends the watch before the cycle.
        if let Some(code) = signalled(&signal_rx, &servers) {
            return Ok(code);
        }
        crate::render::stderr(&format!(
            "vx watch: change in {}{more}; running again\n",
            first.display()
        ));
        servers.add_changed(changed);
        cycle(cwd, &options, &mut servers);
        if let Some(code) = signalled(&signal_rx, &servers) {
            return Ok(code);
        }
        // What arrived while the cycle ran: judged next, and remembered as the cycle's own.
        let mut written = BTreeSet::new();
        while let Ok(event) = events.try_recv() {
            match event {
                Ok(event) if !event.need_rescan() => {
                    written.extend(event.paths.iter().cloned());
                    watch.early.extend(event.paths);
                }
                // Lost events: everything is judged again next.
                _ => watch.rescan = true,
            }
        }
        written_by_cycle = Some(written);
        watch.refresh(cwd, &options, &host_env);
    }
}

/// One cycle: `vx run` again; its exit code does not end the watch. A configuration that
/// does not load is reported and the watch goes on (WATCH-7).
fn cycle(cwd: &Path, options: &RunOptions, servers: &mut Servers) {
    let ran = run::run_as(cwd, options, Ending::Cycle(servers));
    // Printed after the footer already, unless the cycle ended before it.
    servers.release();
    match ran {
        Ok(_) => {}
        Err(Failure::User(diagnostics)) => {
            let mut text = String::new();
            for d in &diagnostics {
                text.push_str(&format!("vx watch: this cycle could not run: {d}\n"));
                for hint in &d.hints {
                    text.push_str(&format!("  hint: {hint}\n"));
                }
            }
            crate::render::stderr(&text);
        }
        Err(Failure::Internal(error)) => {
            crate::render::stderr(&format!("vx watch: this cycle could not run: {error}\n"))
        }
        // The watch hears the signal too, and ends right after the cycle.
        Err(Failure::Signalled(_)) => {}
    }
}

/// After a cycle: the exit code if a signal came during it.
fn signalled(signals: &Receiver<i32>, servers: &Servers) -> Option<i32> {
    let signal = signals.try_recv().ok()?;
    Some(farewell(signal, servers, signals))
}

/// WATCH-1: Ctrl-C stops the persistent tasks and ends the watch with 0 and a line; SIGTERM
/// and SIGHUP with 128 + n.
fn farewell(signal: i32, servers: &Servers, signals: &Receiver<i32>) -> i32 {
    servers.stop_all(signals);
    if signal == libc_sigint() {
        crate::render::stderr("vx watch: no longer watching\n");
        vx_engine::exit::SUCCESS
    } else {
        vx_engine::exit::signal(signal)
    }
}

fn libc_sigint() -> i32 {
    nix::libc::SIGINT
}

/// The watcher, what it watches, and the fingerprints vx last saw.
struct Watch {
    scope: Scope,
    watcher: Backend,
    watched: BTreeSet<PathBuf>,
    seen: HashMap<PathBuf, Fingerprint>,
    /// Paths of events that arrived while the probe waited, judged with the next ones.
    early: BTreeSet<PathBuf>,
    /// Files found changed when a directory was watched after a cycle: changes already
    /// judged by fingerprint, counted with the next events.
    carried: Vec<PathBuf>,
    /// Where events go, for a poller that takes over.
    sender: Option<crossbeam_channel::Sender<notify::Result<notify::Event>>>,
    /// Events were lost (a queue overflow, a watcher error) while a cycle ran.
    rescan: bool,
}

/// Kernel events, or the poller.
enum Backend {
    Events(Box<dyn notify::Watcher + Send>),
    Poll(poll::Poller),
}

impl Backend {
    fn add(&mut self, dir: &Path) -> Result<(), String> {
        match self {
            Backend::Events(watcher) => watcher
                .watch(dir, RecursiveMode::NonRecursive)
                .map_err(|e| format!("{}: {e}", dir.display())),
            Backend::Poll(poller) => {
                poller.add(dir);
                Ok(())
            }
        }
    }

    fn remove(&mut self, dir: &Path) {
        match self {
            // The kernel has usually dropped the watch with the directory already.
            Backend::Events(watcher) => {
                let _ = watcher.unwatch(dir);
            }
            Backend::Poll(poller) => poller.remove(dir),
        }
    }
}

impl Watch {
    fn start(
        scope: Scope,
        events: crossbeam_channel::Sender<notify::Result<notify::Event>>,
        poll: bool,
    ) -> Result<Watch, Failure> {
        if poll {
            crate::render::stderr("vx watch: VX_WATCH_POLL is set; polling every 250ms\n");
            return Watch::polling(scope, events);
        }
        let sender = events.clone();
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            // Opening or reading a file changes nothing (and vx's own fingerprinting opens
            // every file it judges); closing one written to does.
            if let Ok(notify::Event {
                kind: notify::EventKind::Access(access),
                ..
            }) = &event
            {
                if *access != notify::event::AccessKind::Close(notify::event::AccessMode::Write) {
                    return;
                }
            }
            let _ = sender.send(event);
        });
        let failed = match watcher {
            Ok(watcher) => match Watch::with(scope, Backend::Events(Box::new(watcher))) {
                Ok(watch) => return Ok(watch),
                // ENOSPC or EMFILE: out of inotify watches or descriptors.
                Err(failed) => {
                    let (scope, error) = *failed;
                    (scope, format!("cannot watch every directory ({error})"))
                }
            },
            Err(error) => (scope, format!("no file events here ({error})")),
        };
        crate::render::stderr(&format!(
            "vx watch: {}; polling every 250ms instead\n",
            failed.1
        ));
        Watch::polling(failed.0, events)
    }

    /// WATCH-6: the fallback, comparing what the poller sees every 250 ms.
    fn polling(
        scope: Scope,
        events: crossbeam_channel::Sender<notify::Result<notify::Event>>,
    ) -> Result<Watch, Failure> {
        let poller = poll::Poller::start(POLL_EVERY, events);
        Watch::with(scope, Backend::Poll(poller))
            .map_err(|failed| Failure::Internal(format!("cannot poll the workspace: {}", failed.1)))
    }

    /// A directory that cannot be watched after the start: gone already (nothing to do), or
    /// the watcher is out of watches or descriptors (WATCH-6: poll from now on).
    fn cannot_watch(&mut self, dir: &Path, error: &str) {
        if !dir.is_dir() || matches!(self.watcher, Backend::Poll(_)) {
            return;
        }
        crate::render::stderr(&format!(
            "vx watch: cannot watch {error}; polling every 250ms instead\n"
        ));
        if let Some(events) = self.sender.clone() {
            self.switch_to_polling(events);
            // The directory that failed is polled too.
            if let Backend::Poll(poller) = &self.watcher {
                poller.add(dir);
            }
            self.watched.insert(dir.to_path_buf());
        }
    }

    /// WATCH-6 after the probe: the poller takes over the same directories; what vx has seen
    /// and what is pending are kept, so nothing changed meanwhile is lost.
    fn switch_to_polling(
        &mut self,
        events: crossbeam_channel::Sender<notify::Result<notify::Event>>,
    ) {
        let poller = poll::Poller::start(POLL_EVERY, events);
        for dir in &self.watched {
            poller.add(dir);
            // Files that changed while events were not delivered: judged with the next ones.
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                self.early.insert(entry.path());
            }
        }
        self.early.extend(self.seen.keys().cloned());
        self.watcher = Backend::Poll(poller);
    }

    /// Watches every directory of the scope and fingerprints the files in them; on failure
    /// the scope comes back with the reason.
    fn with(scope: Scope, watcher: Backend) -> Result<Watch, Box<(Scope, String)>> {
        let mut watch = Watch {
            scope,
            watcher,
            watched: BTreeSet::new(),
            seen: HashMap::new(),
            early: BTreeSet::new(),
            carried: Vec::new(),
            sender: None,
            rescan: false,
        };
        for dir in watch.scope.directories() {
            // A directory that went between the walk and now is no reason to poll.
            if let Err(error) = watch.add(&dir) {
                if dir.is_dir() {
                    return Err(Box::new((watch.scope, error)));
                }
            }
        }
        Ok(watch)
    }

    /// Watches `dir` (alone) and fingerprints the files directly in it; returns those whose
    /// fingerprint differs from what vx saw before (all of them in a new directory).
    fn add(&mut self, dir: &Path) -> Result<Vec<PathBuf>, String> {
        if self.watched.contains(dir) {
            return Ok(Vec::new());
        }
        self.watcher.add(dir)?;
        self.watched.insert(dir.to_path_buf());
        let mut changed = Vec::new();
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| !t.is_dir()) && self.scope.may_trigger(&path) {
                let now = Fingerprint::of(&path);
                if self.seen.insert(path.clone(), now.clone()) != Some(now) {
                    changed.push(path);
                }
            }
        }
        Ok(changed)
    }

    /// A directory that is gone: its watches (and those below) are dropped, and the files
    /// vx saw there are returned as changed (they are missing now).
    fn forget(&mut self, gone: &Path) -> Vec<PathBuf> {
        let dirs: Vec<PathBuf> = self
            .watched
            .iter()
            .filter(|d| d.starts_with(gone))
            .cloned()
            .collect();
        for dir in &dirs {
            self.watched.remove(dir);
            self.watcher.remove(dir);
        }
        let changed: Vec<PathBuf> = self
            .seen
            .keys()
            .filter(|path| path.starts_with(gone))
            .cloned()
            .collect();
        self.seen.retain(|path, _| !path.starts_with(gone));
        changed
    }

    /// WATCH-6: writes the probe file in the root and waits for its event.
    fn probe(&mut self, events: &Events) -> bool {
        let probe = self.scope.root().join(PROBE_FILE);
        if std::fs::write(&probe, b"vx").is_err() {
            return false;
        }
        let deadline = Instant::now() + PROBE_WAIT;
        let mut delivered = false;
        let mut kept = Vec::new();
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match events.recv_timeout(left) {
                Ok(Ok(event)) if event.paths.iter().any(|p| p.ends_with(PROBE_FILE)) => {
                    delivered = true;
                    break;
                }
                Ok(other) => kept.push(other),
                Err(_) => break,
            }
        }
        let _ = std::fs::remove_file(&probe);
        // What arrived meanwhile is judged with the next events.
        for event in kept.into_iter().flatten() {
            self.early.extend(event.paths);
        }
        delivered
    }

    /// Collects events until the debounce ends; returns the changed paths that may trigger,
    /// sorted.
    fn settle(
        &mut self,
        first: Option<notify::Result<notify::Event>>,
        events: &Events,
    ) -> Vec<PathBuf> {
        let started = Instant::now();
        let mut paths: BTreeSet<PathBuf> = std::mem::take(&mut self.early);
        let mut rescan = std::mem::take(&mut self.rescan);
        let mut take = |event: notify::Result<notify::Event>, paths: &mut BTreeSet<PathBuf>| {
            match event {
                // The kernel's queue overflowed (or the watcher erred): events were lost, so
                // every path vx knows is judged again.
                Ok(event) if event.need_rescan() => rescan = true,
                Ok(event) => paths.extend(event.paths),
                Err(error) => {
                    tracing::debug!(%error, "watch error");
                    rescan = true;
                }
            }
        };
        if let Some(event) = first {
            take(event, &mut paths);
        }
        loop {
            let until = (Instant::now() + QUIET).min(started + AT_MOST);
            let Some(left) = until.checked_duration_since(Instant::now()) else {
                break;
            };
            match events.recv_timeout(left) {
                Ok(event) => take(event, &mut paths),
                Err(_) => break,
            }
        }
        if rescan {
            paths.extend(self.seen.keys().cloned());
            for dir in &self.watched {
                for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                    paths.insert(entry.path());
                }
            }
        }
        self.judge(paths)
    }

    /// WATCH-3 and WATCH-4: which of `paths` changed and may trigger. New directories in the
    /// scope are watched, and the files in them count as changed.
    fn judge(&mut self, paths: BTreeSet<PathBuf>) -> Vec<PathBuf> {
        let mut changed = std::mem::take(&mut self.carried);
        for path in paths {
            // Not followed: a symbolic link to a directory is judged as a link.
            let is_dir = path.symlink_metadata().is_ok_and(|m| m.is_dir());
            if is_dir {
                // A new project appears under a member parent: a change in itself.
                let new_member = path
                    .parent()
                    .is_some_and(|parent| self.scope.is_member_parent(parent))
                    && !self.watched.contains(&path);
                if new_member {
                    changed.push(path.clone());
                }
                if new_member || self.scope.in_tree(&path) {
                    let walked = if new_member {
                        self.scope.walk_all(&path)
                    } else {
                        self.scope.walk(&path)
                    };
                    for dir in walked {
                        match self.add(&dir) {
                            Ok(files) => changed.extend(files),
                            Err(error) => self.cannot_watch(&dir, &error),
                        }
                    }
                }
                continue;
            }
            // A watched directory that went (deleted, renamed away): its watches go, and the
            // files vx saw in it are changes.
            if self.watched.iter().any(|dir| dir.starts_with(&path)) {
                changed.extend(self.forget(&path));
                continue;
            }
            if !self.scope.may_trigger(&path) {
                continue;
            }
            let now = Fingerprint::of(&path);
            // A path that is gone is forgotten (a temporary file leaves nothing behind); made
            // again, it is new, which is a change.
            let before = if now == Fingerprint::Missing {
                self.seen.remove(&path)
            } else {
                self.seen.insert(path.clone(), now.clone())
            };
            if before.unwrap_or(Fingerprint::Missing) != now {
                changed.push(path);
            }
        }
        let ignored = git_ignored(self.scope.root(), &changed);
        changed.retain(|p| !ignored.contains(p) || self.scope.counts_though_ignored(p));
        changed.sort();
        changed.dedup();
        changed
    }

    /// After a cycle: the configuration may have changed (new projects, new outputs), so the
    /// scope is planned again and new directories are watched.
    fn refresh(
        &mut self,
        cwd: &Path,
        options: &RunOptions,
        host_env: &std::collections::BTreeMap<String, String>,
    ) {
        let Ok(workspace) = plan::discover(cwd, false) else {
            return;
        };
        let Ok(plan) = plan::build(workspace, cwd, options) else {
            return;
        };
        for notice in &plan.notices {
            crate::render::say(notice.clone());
        }
        let Ok(cache_dir) = setup::resolve_cache_dir(&plan.workspace, cwd, options, host_env)
        else {
            return;
        };
        self.scope = Scope::from_plan(&plan, &cache_dir);
        let dirs = self.scope.directories();
        // Directories that left the scope (a project no longer reached) are watched no more.
        let left: Vec<PathBuf> = self
            .watched
            .iter()
            .filter(|d| dirs.binary_search(d).is_err())
            .cloned()
            .collect();
        for dir in left {
            self.watched.remove(&dir);
            self.watcher.remove(&dir);
            self.seen
                .retain(|path, _| path.parent() != Some(dir.as_path()));
        }
        // What changed in a directory watched only now (made during the cycle) counts with
        // the next events: its fingerprints are taken here, so no later event would show it.
        for dir in dirs {
            match self.add(&dir) {
                Ok(files) => {
                    if !files.is_empty() {
                        self.early.insert(dir.clone());
                    }
                    self.carried.extend(files);
                }
                Err(error) => self.cannot_watch(&dir, &error),
            }
        }
    }
}

/// A path as git prints it: as is, or in C quotes (`"a\"b\tc\303\251"`).
fn unquote(line: &[u8]) -> Vec<u8> {
    let Some(inner) = line
        .strip_prefix(b"\"")
        .and_then(|rest| rest.strip_suffix(b"\""))
    else {
        return line.to_vec();
    };
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        if inner[i] != b'\\' || i + 1 >= inner.len() {
            out.push(inner[i]);
            i += 1;
            continue;
        }
        let octal = inner
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        if let Some(digits) = octal {
            out.push(
                digits
                    .iter()
                    .fold(0u8, |n, d| n.wrapping_mul(8) + (d - b'0')),
            );
            i += 4;
            continue;
        }
        out.push(match inner[i + 1] {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'a' => 7,
            b'b' => 8,
            b'f' => 12,
            b'v' => 11,
            other => other,
        });
        i += 2;
    }
    out
}

/// Which of `paths` git ignores (`git check-ignore`); none when git cannot tell.
fn git_ignored(root: &Path, paths: &[PathBuf]) -> BTreeSet<PathBuf> {
    if paths.is_empty() {
        return BTreeSet::new();
    }
    let host_env = host_env();
    let Some(git) = host_env
        .get("PATH")
        .and_then(|path| vx_exec::subprocess::find_on_path("git", path))
    else {
        return BTreeSet::new();
    };
    let mut ignored = BTreeSet::new();
    // In batches, so a burst (a branch switch) stays under the argument-list limit; with
    // `core.quotePath` off only names with quotes or control characters come back quoted.
    for batch in paths.chunks(512) {
        let mut args: Vec<std::ffi::OsString> = vec![
            "-c".into(),
            "core.quotePath=false".into(),
            "check-ignore".into(),
            "--".into(),
        ];
        args.extend(batch.iter().map(|p| p.as_os_str().to_owned()));
        let output = vx_exec::subprocess::run(
            git.clone(),
            "git",
            args,
            root,
            vx_exec::subprocess::git_env(&host_env),
            Duration::from_secs(30),
        );
        for line in output
            .stdout
            .split(|&b| b == b'\n')
            .filter(|n| !n.is_empty())
        {
            use std::os::unix::ffi::OsStringExt;
            let path = PathBuf::from(std::ffi::OsString::from_vec(unquote(line)));
            ignored.insert(if path.is_absolute() {
                path
            } else {
                root.join(path)
            });
        }
    }
    ignored
}

#[cfg(test)]
mod tests {
    use super::unquote;

    #[test]
    fn git_quoted_paths_are_unquoted() {
        assert_eq!(unquote(b"/ws/plain name.log"), b"/ws/plain name.log");
        assert_eq!(
            unquote(br#""/ws/caf\303\251.log""#),
            "/ws/café.log".as_bytes()
        );
        assert_eq!(unquote(br#""/ws/a\"b\tc""#), b"/ws/a\"b\tc");
    }
}
