//! Persistent tasks kept between the cycles of `vx watch`: a dev server keeps running while
//! nothing it depends on changes, and is restarted when something does.
//!
//! How this works: every task's events reach the loop through a [`Route`], which can be
//! pointed elsewhere while the task runs. At the end of a cycle the ready persistent tasks are
//! handed to [`Servers`], which outlives the cycle's `Run`: their routes now lead to its
//! channel, bounded like the loop's (a server that floods blocks on its pipe rather than
//! filling vx's memory) and read by a thread of its own, so no server ever waits for the watch
//! or a cycle (planning, the workspace lock, a debounce). Between cycles what they write is
//! printed at once, prefixed `<id> │ ` as after a `vx run` footer; during a cycle it is held
//! (bounded like a task's log) and printed after the cycle's footer. When a later cycle's
//! graph reaches such a task, the loop compares it with the one running: the same
//! configuration and command, no change in its project's files and no upstream that executed
//! or restored files — in this cycle, or in an earlier one that did not reach it — and it is
//! *kept* (ready at once, not started again); otherwise the old one is stopped (EXEC-6) and
//! waited for before the new one starts, so two never run at once. A kept task that ends by
//! itself is reported, and the next cycle that needs it starts it again.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use vx_core::TaskId;
use vx_exec::ExecEvent;
use vx_store::log::{LogBuf, LogStream};

use super::live::{Identity, Live};
use super::output::{shown, Store};
use super::{Kind, Msg, Run};
use crate::outcome::CacheKind;
use crate::outcome::Status;
use crate::report::Console;

/// A persistent task kept running between cycles.
struct Kept {
    id: TaskId,
    identity: Identity,
    /// Its time to ready, its duration in every cycle that keeps it (EXEC-13).
    ready_after: Duration,
    /// Why it must restart, found in a cycle that did not reach it (an upstream failed).
    dirty: Option<String>,
    live: Live,
}

/// How many messages of kept tasks may wait to be read.
const MESSAGES_IN_FLIGHT: usize = 256;

/// How often a wait for stopped tasks looks for a second signal.
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

/// The persistent tasks `vx watch` keeps between cycles, and the changes since the last
/// cycle that ran.
pub struct Servers {
    shared: Arc<Shared>,
    /// Where they print.
    console: Arc<dyn Console>,
    tx: Sender<Msg>,
    changed: Vec<PathBuf>,
}

struct Shared {
    state: Mutex<State>,
    /// Notified whenever a message was handled (a task in `stopping` may have ended).
    handled: Condvar,
}

/// What the reader thread and the loops share.
struct State {
    kept: BTreeMap<usize, Kept>,
    /// Being stopped (for a restart, because their task left the graph, or at the end):
    /// their last output comes until their end.
    stopping: BTreeMap<usize, Kept>,
    next: usize,
    /// A cycle runs: output and notices are held until its footer.
    holding: bool,
    held: LogBuf,
    console: Arc<dyn Console>,
}

impl Servers {
    /// Servers that print to `console`. The error is why the reader thread could not start.
    pub fn new(console: Arc<dyn Console>) -> std::io::Result<Servers> {
        let (tx, rx) = crossbeam_channel::bounded::<Msg>(MESSAGES_IN_FLIGHT);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                kept: BTreeMap::new(),
                stopping: BTreeMap::new(),
                next: 0,
                holding: false,
                held: LogBuf::new(),
                console: console.clone(),
            }),
            handled: Condvar::new(),
        });
        let reader = Arc::clone(&shared);
        // Ends when every sender is gone (the watch's and the kept tasks').
        std::thread::Builder::new()
            .name("vx-servers".into())
            .spawn(move || {
                for msg in rx {
                    // A bug in handling one message must not leave a waiter waiting forever.
                    let ended = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        reader.lock().handle(msg)
                    }));
                    if let Ok(Some(ended)) = ended {
                        reader.end(ended);
                    }
                    reader.handled.notify_all();
                }
            })?;
        Ok(Servers {
            shared,
            console,
            tx,
            changed: Vec::new(),
        })
    }

    /// Absolute paths that changed: they start the next cycle, and count for every cycle
    /// until one reaches its end (a cycle that cannot run forgets nothing).
    pub fn add_changed(&mut self, changed: Vec<PathBuf>) {
        self.changed.extend(changed);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.lock()
    }

    /// A cycle starts: output waits for its footer.
    pub(super) fn hold(&self) {
        self.lock().holding = true;
    }

    /// The cycle's footer is printed: what was held, and from now on everything at once.
    pub fn release(&self) {
        self.lock().release();
    }

    /// Stops the kept task of `id` and waits until none of its processes is left; its last
    /// output is printed with the others'.
    /// Stops the kept task `id` and waits until it is gone. False when a signal to vx came
    /// meanwhile: the wait ends at once (Ctrl-C is heard while a restart waits for the old
    /// server, which goes on being stopped with the rest).
    pub(super) fn stop_and_wait(&self, id: &TaskId) -> bool {
        let mut state = self.lock();
        let Some(slot) = state.slot_of(id) else {
            return true;
        };
        let kept = state.kept.remove(&slot).expect("found above");
        kept.live.handle.stop(nix::libc::SIGTERM);
        state.stopping.insert(slot, kept);
        while state.stopping.contains_key(&slot) {
            if crate::host::signals::pending().is_some() {
                return false;
            }
            state = self.shared.wait_handled(state);
        }
        true
    }

    /// Kept tasks whose task is no longer a persistent task of the graph stop.
    pub(super) fn retain(&self, persistent_in_graph: impl Fn(&TaskId) -> bool) {
        let gone: Vec<TaskId> = self
            .lock()
            .kept
            .values()
            .filter(|k| !persistent_in_graph(&k.id))
            .map(|k| k.id.clone())
            .collect();
        for id in gone {
            self.console.line(&format!(
                "vx watch: {id} is no longer a persistent task of the graph; stopping it"
            ));
            // A signal meanwhile ends the watch, which stops what is left.
            if !self.stop_and_wait(&id) {
                return;
            }
        }
    }

    /// A signal came during a cycle: every kept task is stopped (the watch waits for them).
    pub(super) fn stop_now(&self, signal: i32) {
        self.lock().stop_every(signal);
    }

    /// A second signal: every kept task is killed now.
    pub(super) fn kill_now(&self) {
        self.lock().kill_now();
    }

    /// Stops every kept task (EXEC-6) and waits until none is left, printing their last
    /// output; a signal on `signals` meanwhile kills them at once (a second Ctrl-C).
    pub fn stop_all(&self, signals: &Receiver<i32>) {
        let mut state = self.lock();
        state.release();
        state.stop_every(nix::libc::SIGTERM);
        while !state.stopping.is_empty() {
            if signals.try_recv().is_ok() {
                state.kill_now();
            }
            state = self.shared.wait_handled(state);
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until the reader thread handled a message, or [`SIGNAL_CHECK`] passed (to look
    /// for a signal).
    fn wait_handled<'a>(&self, state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.handled
            .wait_timeout(state, SIGNAL_CHECK)
            .unwrap_or_else(|e| e.into_inner())
            .0
    }

    /// A kept task's leader ended: what it left running in its session is stopped and waited
    /// for (EXEC-13) without the lock, so a second Ctrl-C can kill it meanwhile; then it is
    /// gone, and its sandbox's `TMPDIR` with it.
    fn end(&self, (slot, handle): Ended) {
        handle.stop(nix::libc::SIGTERM);
        handle.wait_stopped();
        if let Some(mut kept) = self.lock().stopping.remove(&slot) {
            if let Some(sandbox) = kept.live.sandbox.as_mut() {
                sandbox.ended();
            }
        }
    }
}

/// A kept task whose leader ended: its slot (in `stopping` until its leftovers are gone), and
/// its handle.
type Ended = (usize, Box<dyn vx_exec::RunningTask>);

impl Drop for Servers {
    fn drop(&mut self) {
        self.stop_all(&crossbeam_channel::never());
    }
}

impl State {
    fn slot_of(&self, id: &TaskId) -> Option<usize> {
        self.kept.iter().find(|(_, k)| &k.id == id).map(|(&s, _)| s)
    }

    fn get(&self, id: &TaskId) -> Option<&Kept> {
        self.kept.get(&self.slot_of(id)?)
    }

    /// Every kept task gets `signal` and is kept no more: its end is awaited in `stopping`.
    fn stop_every(&mut self, signal: i32) {
        let kept = std::mem::take(&mut self.kept);
        for k in kept.values() {
            k.live.handle.stop(signal);
        }
        self.stopping.extend(kept);
    }

    fn release(&mut self) {
        self.holding = false;
        let held = std::mem::take(&mut self.held);
        self.console.out(&shown(&held));
    }

    fn emit(&mut self, bytes: &[u8]) {
        if self.holding {
            self.held.push(LogStream::Stdout, bytes);
        } else {
            self.console.out(bytes);
        }
    }

    fn kill_now(&self) {
        for kept in self.kept.values().chain(self.stopping.values()) {
            kept.live.handle.kill();
        }
    }

    /// Keeps a ready persistent task: its events come to `tx` from now on.
    fn keep(&mut self, tx: &Sender<Msg>, kept: Kept) -> usize {
        let slot = self.next;
        self.next += 1;
        kept.live.route.point(tx.clone(), slot);
        self.kept.insert(slot, kept);
        slot
    }

    /// One message of a kept task: output is printed (or held) with its prefix, an access or
    /// a refused request that breaks its sandbox is a warning now (SBX-8), and an end vx did
    /// not cause is reported; an end is returned, for [`Shared::end`].
    fn handle(&mut self, msg: Msg) -> Option<Ended> {
        match msg {
            Msg::Exec(slot, ExecEvent::Output { stream, bytes }) => {
                let kept = self
                    .kept
                    .get_mut(&slot)
                    .or_else(|| self.stopping.get_mut(&slot))?;
                let output = &mut kept.live.output;
                let bytes = output.wrote(stream, &bytes, Store::No);
                let text = output.prefixed(&kept.id, &bytes);
                self.emit(&text);
            }
            Msg::Exec(slot, ExecEvent::Access(access)) => {
                if let Some(kept) = self.kept.get_mut(&slot) {
                    if let Some(sandbox) = kept.live.sandbox.as_mut() {
                        for notice in sandbox.warn_access(&kept.id, access) {
                            self.console.notice(notice);
                        }
                    }
                }
            }
            Msg::NetRefused(slot, target) => {
                if let Some(kept) = self.kept.get_mut(&slot) {
                    if let Some(sandbox) = kept.live.sandbox.as_mut() {
                        if let Some(notice) = sandbox.warn_refused(&kept.id, target) {
                            self.console.notice(notice);
                        }
                    }
                }
            }
            Msg::Exec(slot, ExecEvent::Completed(completion)) => {
                // Ended by itself: kept no more (the next cycle that needs it starts it).
                if let Some(kept) = self.kept.remove(&slot) {
                    if !completion.stopped {
                        self.console.line(&format!(
                            "vx watch: {} stopped by itself (exit {}); the next cycle that needs it starts it again",
                            kept.id, completion.exit_code
                        ));
                    }
                    self.stopping.insert(slot, kept);
                }
                let kept = self.stopping.get_mut(&slot)?;
                let rest = kept.live.output.finish(Store::No);
                let text = kept.live.output.prefixed(&kept.id, &rest);
                let handle = kept.live.handle.clone_box();
                self.emit(&text);
                return Some((slot, handle));
            }
            _ => {}
        }
        None
    }
}

impl Run<'_> {
    /// A persistent task the graph reached in a cycle of `vx watch`, `identity` what it would
    /// be started as. The one kept from an earlier cycle goes on when nothing it depends on
    /// changed: it is ready at once (true). Otherwise it is stopped, and waited for, before
    /// the new one starts (false). A signal to vx while it waits: the new one is not started
    /// (`not run`), and the loop hears the signal next (true).
    pub(super) fn keep_server(&mut self, i: usize, identity: &Identity) -> bool {
        let id = self.plan.graph.nodes[i].id.clone();
        let Some(servers) = self.watch.as_deref() else {
            return false;
        };
        let (why, report) = {
            let state = servers.lock();
            let Some(kept) = state.get(&id) else {
                return false;
            };
            let why = if &kept.identity != identity {
                Some("its configuration changed".to_string())
            } else if let Some(why) = &kept.dirty {
                Some(why.clone())
            } else {
                self.restart_reason(i)
            };
            let mut report = self.report_of(i, &kept.live, Status::Running);
            report.duration = kept.ready_after;
            (why, report)
        };
        if let Some(why) = why {
            servers
                .console
                .line(&format!("vx watch: restarting {id}: {why}"));
            if !servers.stop_and_wait(&id) {
                self.not_run(i);
                return true;
            }
            return false;
        }
        let report = crate::outcome::TaskReport {
            executed: false,
            kept: true,
            ..report
        };
        self.reporter.finished(i, &report, self.is_shown(i));
        self.reports.insert(
            i,
            crate::outcome::TaskReport {
                status: Status::Success,
                ..report
            },
        );
        let skipped = self.scheduler.finish(i, vx_core::schedule::Finish::Success);
        self.report_skipped(&skipped);
        true
    }

    /// Why the persistent task `i` must restart after this cycle, if it must: a file of its
    /// project changed, or an upstream ran again.
    fn restart_reason(&self, i: usize) -> Option<String> {
        self.changed_in_project(i)
            .map(|path| format!("{path} changed"))
            .or_else(|| self.upstream_changed(i))
    }

    /// The first path among the cycle's changes that belongs to task `i`'s project (and not to
    /// a project nested in it), relative to the root.
    fn changed_in_project(&self, i: usize) -> Option<String> {
        let ws = &self.plan.workspace;
        let mine = self.plan.graph.nodes[i].project;
        let changed = &self.watch.as_deref()?.changed;
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
            if self.rows[d].kind == Kind::Group {
                stack.extend(graph.nodes[d].deps.iter().copied());
                continue;
            }
            let id = &graph.nodes[d].id;
            match self.reports.get(&d) {
                Some(r) if r.executed => return Some(format!("its upstream {id} ran again")),
                Some(r)
                    if matches!(
                        r.cache,
                        Some(CacheKind::RestoredLocal | CacheKind::RestoredRemote)
                    ) =>
                {
                    return Some(format!("its upstream {id} was restored from the cache"))
                }
                _ => {}
            }
        }
        None
    }

    /// The end of a cycle of `vx watch`, after its footer: what kept tasks wrote during the
    /// cycle is printed; those the cycle did not reach remember why they must restart; the
    /// ready persistent tasks `kept` go to the watch with what they printed so far; kept tasks
    /// whose task is no longer a persistent task of the graph stop.
    pub(super) fn hand_over(&mut self, kept: &[usize]) {
        let plan = self.plan;
        let Some(servers) = self.watch.as_deref() else {
            return;
        };
        let mut state = servers.lock();
        state.release();
        let unreached: Vec<(usize, String)> = state
            .kept
            .iter()
            .filter(|(_, k)| k.dirty.is_none())
            .filter_map(|(&slot, k)| {
                let &i = plan.graph.index.get(&k.id)?;
                if self.reports.get(&i).is_some_and(|r| r.kept) {
                    return None;
                }
                Some((slot, self.restart_reason(i)?))
            })
            .collect();
        for (slot, why) in unreached {
            if let Some(k) = state.kept.get_mut(&slot) {
                k.dirty = Some(why);
            }
        }
        let mut slots = BTreeMap::new();
        let mut strays = Vec::new();
        for &i in kept {
            let Some(mut live) = self.live.remove(&i) else {
                continue;
            };
            let node = &plan.graph.nodes[i];
            let log = live.output.take_frame();
            servers.console.out(&live.output.prefixed(&node.id, &log));
            let Some(identity) = live.identity.clone() else {
                // Not a task of a watch cycle: nothing may outlive the run unguarded. Its
                // events go where they are read (and dropped) while it is stopped.
                live.route.point(servers.tx.clone(), usize::MAX);
                strays.push(live.handle);
                continue;
            };
            let ready_after = self.reports.get(&i).map_or(Duration::ZERO, |r| r.duration);
            let kept = Kept {
                id: node.id.clone(),
                identity,
                ready_after,
                dirty: None,
                live,
            };
            slots.insert(i, state.keep(&servers.tx, kept));
        }
        // What they sent to this cycle before their routes changed comes first: the reader
        // thread waits for the lock held here.
        let mut ended = Vec::new();
        while let Ok(msg) = self.rx.try_recv() {
            let msg = match msg {
                Msg::Exec(i, event) if slots.contains_key(&i) => Msg::Exec(slots[&i], event),
                Msg::NetRefused(i, target) if slots.contains_key(&i) => {
                    Msg::NetRefused(slots[&i], target)
                }
                _ => continue,
            };
            ended.extend(state.handle(msg));
        }
        drop(state);
        for handle in strays {
            handle.stop(nix::libc::SIGTERM);
            handle.wait_stopped();
        }
        for end in ended {
            servers.shared.end(end);
        }
        servers.shared.handled.notify_all();
        let rows = &self.rows;
        servers.retain(|id| {
            plan.graph
                .index
                .get(id)
                .is_some_and(|&i| rows[i].kind == Kind::Persistent)
        });
        if let Some(servers) = self.watch.as_deref_mut() {
            servers.changed.clear();
        }
    }
}
