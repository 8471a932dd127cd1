//! Persistent tasks kept between the cycles of `vx watch`: a dev server keeps running while
//! nothing it depends on changes, and is restarted when something does.
//!
//! How this works: every task's events reach the loop through a [`Route`], which can be
//! pointed elsewhere while the task runs. At the end of a cycle the ready persistent tasks are
//! handed to [`Servers`], which outlives the cycle's `Run`: their routes now lead to its own
//! channel (unbounded, so a server never blocks on its output while a cycle runs), and the
//! watch prints what they write, prefixed `<id> │ ` as after a `vx run` footer. When a later
//! cycle's graph reaches such a task, the loop compares it with the one running: the same
//! configuration and command, no change in its project's files among the ones that started
//! the cycle, and no upstream that executed or restored files in this cycle — it is *kept*
//! (ready at once, not started again); otherwise the old one is stopped (EXEC-6) and waited
//! for before the new one starts, so two never run at once. A kept task that ends by itself is
//! reported and starts again on the next change.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, SendTimeoutError, Sender};
use vx_core::TaskId;
use vx_exec::ExecEvent;

use super::{kind_of, prefixed, shown, stream_index, task, Kind, Live, Msg, Run};
use crate::render::{out, stderr};
use crate::run::cache::CacheKind;
use crate::run::outcome::Status;

/// How long a task's thread holds its route while the loop's channel is full, before it lets
/// the route be changed and tries again.
const HOLD: Duration = Duration::from_millis(50);

/// Where a task's events go: a loop's channel, and the number that loop knows the task by.
#[derive(Clone)]
pub(crate) struct Route(Arc<Mutex<(Sender<Msg>, usize)>>);

impl Route {
    pub(super) fn new(tx: Sender<Msg>, i: usize) -> Route {
        Route(Arc::new(Mutex::new((tx, i))))
    }

    /// Sends `msg`, numbered for its current loop. The route is held while sending, so once
    /// [`Route::point`] returns nothing more reaches the old loop; a full channel lets go of
    /// it every [`HOLD`], so the route can change meanwhile.
    pub(super) fn deliver(&self, mut msg: Msg) {
        loop {
            let target = self.0.lock().unwrap_or_else(|e| e.into_inner());
            let (tx, i) = &*target;
            match tx.send_timeout(msg.numbered(*i), HOLD) {
                Ok(()) | Err(SendTimeoutError::Disconnected(_)) => return,
                Err(SendTimeoutError::Timeout(back)) => msg = back,
            }
        }
    }

    /// From now on, events go to `tx` under `i`.
    fn point(&self, tx: Sender<Msg>, i: usize) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = (tx, i);
    }
}

impl Msg {
    fn numbered(self, i: usize) -> Msg {
        match self {
            Msg::Exec(_, event) => Msg::Exec(i, event),
            Msg::NetRefused(_, target) => Msg::NetRefused(i, target),
            other => other,
        }
    }
}

/// What tells a persistent task's process from one that would be started now: its task's
/// configuration, the script it runs and where.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Identity(blake3::Hash);

impl Identity {
    pub(super) fn of(config: &vx_core::config::TaskConfig, script: &str, dir: &str) -> Identity {
        let mut hasher = blake3::Hasher::new();
        let config = serde_json::to_string(config).unwrap_or_default();
        for part in [config.as_str(), script, dir] {
            hasher.update(&(part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        Identity(hasher.finalize())
    }
}

/// A persistent task kept running between cycles.
pub(super) struct Kept {
    pub(super) id: TaskId,
    pub(super) identity: Identity,
    /// Its time to ready, its duration in every cycle that keeps it (EXEC-13).
    ready_after: Duration,
    pub(super) live: Live,
    route: Route,
}

/// The persistent tasks `vx watch` keeps between cycles, and the changes that started the
/// cycle about to run.
pub struct Servers {
    kept: BTreeMap<usize, Kept>,
    /// Stopped for a restart (or because their task left the graph): their last output.
    stopping: BTreeMap<usize, Kept>,
    next: usize,
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
    changed: Vec<PathBuf>,
}

impl Default for Servers {
    fn default() -> Self {
        Servers::new()
    }
}

impl Servers {
    pub fn new() -> Servers {
        let (tx, rx) = crossbeam_channel::unbounded();
        Servers {
            kept: BTreeMap::new(),
            stopping: BTreeMap::new(),
            next: 0,
            tx,
            rx,
            changed: Vec::new(),
        }
    }

    /// The absolute paths whose change starts the next cycle.
    pub fn set_changed(&mut self, changed: Vec<PathBuf>) {
        self.changed = changed;
    }

    pub(super) fn changed(&self) -> &[PathBuf] {
        &self.changed
    }

    /// What the kept tasks send: for the watch to wait on.
    pub fn receiver(&self) -> &Receiver<Msg> {
        &self.rx
    }

    fn get(&self, id: &TaskId) -> Option<&Kept> {
        self.kept.values().find(|k| &k.id == id)
    }

    /// Takes the running task of `id` out, if one is kept.
    pub(super) fn take(&mut self, id: &TaskId) -> Option<Kept> {
        let slot = self
            .kept
            .iter()
            .find(|(_, k)| &k.id == id)
            .map(|(&s, _)| s)?;
        self.kept.remove(&slot)
    }

    /// Keeps a ready persistent task: its events come here from now on.
    pub(super) fn keep(
        &mut self,
        id: TaskId,
        identity: Identity,
        ready_after: Duration,
        live: Live,
    ) -> usize {
        let slot = self.next;
        self.next += 1;
        let route = live.route.clone();
        route.point(self.tx.clone(), slot);
        self.kept.insert(
            slot,
            Kept {
                id,
                identity,
                ready_after,
                live,
                route,
            },
        );
        slot
    }

    /// Stops a task that is kept no more and waits until none of its processes is left; what
    /// it writes meanwhile is printed with the kept tasks' output, after the cycle.
    pub(super) fn stop_and_wait(&mut self, kept: Kept) {
        let slot = self.next;
        self.next += 1;
        // Its last words arrive here, where nothing holds them up.
        kept.route.point(self.tx.clone(), slot);
        kept.live.handle.stop(nix::libc::SIGTERM);
        kept.live.handle.wait_stopped();
        self.stopping.insert(slot, kept);
    }

    /// Kept tasks whose task is no longer in the graph (its configuration changed) stop.
    pub(super) fn retain(&mut self, in_graph: impl Fn(&TaskId) -> bool) {
        let gone: Vec<usize> = self
            .kept
            .iter()
            .filter(|(_, k)| !in_graph(&k.id))
            .map(|(&s, _)| s)
            .collect();
        for slot in gone {
            if let Some(kept) = self.kept.remove(&slot) {
                stderr(&format!(
                    "vx watch: {} is no longer in the graph; stopping it\n",
                    kept.id
                ));
                self.stop_and_wait(kept);
            }
        }
    }

    /// A signal came: every kept task is stopped (without waiting).
    pub(super) fn stop_now(&self, signal: i32) {
        for kept in self.kept.values() {
            kept.live.handle.stop(signal);
        }
    }

    /// A second signal: every kept task is killed now.
    pub(super) fn kill_now(&self) {
        for kept in self.kept.values() {
            kept.live.handle.kill();
        }
    }

    /// Handles everything the kept tasks sent so far.
    pub fn pump(&mut self) {
        while let Ok(msg) = self.rx.try_recv() {
            self.handle(msg);
        }
    }

    /// One message of a kept task: output is printed with its prefix, an access or refused
    /// request that breaks its sandbox is a warning (SBX-8), and its end is reported.
    pub fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Exec(slot, ExecEvent::Output { stream, bytes }) => {
                let kept = match self.kept.get_mut(&slot) {
                    Some(kept) => kept,
                    None => match self.stopping.get_mut(&slot) {
                        Some(kept) => kept,
                        None => return,
                    },
                };
                let s = stream_index(stream);
                let bytes = kept.live.maskers[s].push(&bytes);
                let bytes = match &mut kept.live.strippers {
                    Some(strippers) => strippers[s].push(&bytes),
                    None => bytes,
                };
                out(&prefixed(&kept.id, &mut kept.live, &bytes));
            }
            Msg::Exec(slot, ExecEvent::Access(access)) => {
                if let Some(kept) = self.kept.get_mut(&slot) {
                    if let Some(sandbox) = kept.live.sandbox.as_mut() {
                        sandbox.warn_access(&kept.id, access);
                    }
                }
            }
            Msg::NetRefused(slot, target) => {
                if let Some(kept) = self.kept.get_mut(&slot) {
                    if let Some(sandbox) = kept.live.sandbox.as_mut() {
                        sandbox.warn_refused(&kept.id, target);
                    }
                }
            }
            Msg::Exec(slot, ExecEvent::Completed(completion)) => {
                if let Some(kept) = self.stopping.remove(&slot) {
                    finish(kept);
                    return;
                }
                let Some(kept) = self.kept.remove(&slot) else {
                    return;
                };
                let handle = kept.live.handle.clone_box();
                let id = kept.id.clone();
                finish(kept);
                stderr(&format!(
                    "vx watch: {id} stopped by itself (exit {}); it starts again on the next change\n",
                    completion.exit_code
                ));
                // What it left running in its session goes with it (EXEC-13).
                handle.stop(nix::libc::SIGTERM);
                handle.wait_stopped();
            }
            _ => {}
        }
    }

    /// Stops every kept task (EXEC-6), waits until none is left, and prints their last output.
    pub fn stop_all(&mut self) {
        for kept in self.kept.values() {
            kept.live.handle.stop(nix::libc::SIGTERM);
        }
        for kept in self.kept.values() {
            kept.live.handle.wait_stopped();
        }
        // Stopped, not ended by themselves: their last output is printed as they finish.
        let stopped = std::mem::take(&mut self.kept);
        self.stopping.extend(stopped);
        self.pump();
        // Those whose end came before their last output was read.
        for (_, kept) in std::mem::take(&mut self.stopping) {
            finish(kept);
        }
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// A kept task ended: the rest of its output, and its sandbox's `TMPDIR` goes.
fn finish(mut kept: Kept) {
    let mut rest = Vec::new();
    for s in 0..2 {
        let mut bytes = kept.live.maskers[s].finish();
        if let Some(strippers) = &mut kept.live.strippers {
            bytes = strippers[s].push(&bytes);
        }
        rest.extend(bytes);
    }
    out(&prefixed(&kept.id, &mut kept.live, &rest));
    if let Some(sandbox) = kept.live.sandbox.as_mut() {
        sandbox.ended();
    }
}

impl Run<'_> {
    /// A persistent task the graph reached in a cycle of `vx watch`, `identity` what it would
    /// be started as. The one kept from an earlier cycle goes on when nothing it depends on
    /// changed: it is ready at once (true). Otherwise it is stopped, and waited for, before
    /// the new one starts (false).
    pub(super) fn keep_server(&mut self, i: usize, identity: &Identity) -> bool {
        let id = self.plan.graph.nodes[i].id.clone();
        let Some(servers) = self.watch.as_deref() else {
            return false;
        };
        let Some(kept) = servers.get(&id) else {
            return false;
        };
        let why = if &kept.identity != identity {
            Some("its configuration changed".to_string())
        } else if let Some(path) = self.changed_in_project(i) {
            Some(format!("{path} changed"))
        } else {
            self.upstream_changed(i)
        };
        if let Some(why) = why {
            stderr(&format!("vx watch: restarting {id}: {why}\n"));
            let servers = self.watch.as_deref_mut().expect("watching");
            let kept = servers.take(&id).expect("kept");
            servers.stop_and_wait(kept);
            return false;
        }
        let mut report = self.report_of(i, &kept.live, Status::Running);
        report.executed = false;
        report.kept = true;
        report.duration = kept.ready_after;
        self.reporter.finished(i, &report, self.is_shown(i));
        self.reports.insert(
            i,
            crate::run::outcome::TaskReport {
                status: Status::Success,
                ..report
            },
        );
        let skipped = self.scheduler.finish(i, vx_core::schedule::Finish::Success);
        self.report_skipped(&skipped);
        true
    }

    /// The first path among the cycle's changes that belongs to task `i`'s project (and not to
    /// a project nested in it), relative to the root.
    fn changed_in_project(&self, i: usize) -> Option<String> {
        let ws = &self.plan.workspace;
        let mine = self.plan.graph.nodes[i].project;
        let changed = self.watch.as_deref()?.changed();
        changed
            .iter()
            .find(|path| {
                let owner = ws
                    .projects
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| path.starts_with(ws.root.join(&p.dir)))
                    .max_by_key(|(_, p)| p.dir.len())
                    .map(|(n, _)| n);
                owner == Some(mine)
            })
            .map(|path| {
                path.strip_prefix(&ws.root)
                    .unwrap_or(path)
                    .to_string_lossy()
                    .into_owned()
            })
    }

    /// The first upstream of task `i` (through groups) that executed in this cycle or
    /// restored files from the cache, in words: what the task runs on may be new.
    fn upstream_changed(&self, i: usize) -> Option<String> {
        let graph = &self.plan.graph;
        let mut stack = graph.nodes[i].deps.clone();
        let mut seen = std::collections::BTreeSet::new();
        while let Some(d) = stack.pop() {
            if !seen.insert(d) {
                continue;
            }
            if kind_of(task(self.plan, d)) == Kind::Group {
                stack.extend(graph.nodes[d].deps.iter().copied());
                continue;
            }
            let id = &graph.nodes[d].id;
            match self.reports.get(&d) {
                Some(r) if r.executed => return Some(format!("its upstream {id} ran again")),
                Some(r) if r.cache == Some(CacheKind::RestoredLocal) => {
                    return Some(format!("its upstream {id} was restored from the cache"))
                }
                _ => {}
            }
        }
        None
    }

    /// The end of a cycle of `vx watch`: the ready persistent tasks `kept` go to the watch,
    /// with what they printed so far; kept tasks whose task left the graph stop.
    pub(super) fn hand_over(&mut self, kept: &[usize]) {
        let Some(servers) = self.watch.as_deref_mut() else {
            return;
        };
        let mut slots = BTreeMap::new();
        for &i in kept {
            let Some(mut live) = self.live.remove(&i) else {
                continue;
            };
            let node = &self.plan.graph.nodes[i];
            let log = shown(&std::mem::take(&mut live.display));
            out(&prefixed(&node.id, &mut live, &log));
            let Some(identity) = live.identity.clone() else {
                continue;
            };
            let ready_after = self.reports.get(&i).map_or(Duration::ZERO, |r| r.duration);
            let slot = servers.keep(node.id.clone(), identity, ready_after, live);
            slots.insert(i, slot);
        }
        // What they sent to this cycle before their routes changed comes first.
        while let Ok(msg) = self.rx.try_recv() {
            match msg {
                Msg::Exec(i, event) if slots.contains_key(&i) => {
                    servers.handle(Msg::Exec(slots[&i], event))
                }
                Msg::NetRefused(i, target) if slots.contains_key(&i) => {
                    servers.handle(Msg::NetRefused(slots[&i], target))
                }
                _ => {}
            }
        }
        let nodes = &self.plan.graph.nodes;
        servers.retain(|id| nodes.iter().any(|n| &n.id == id));
    }
}
