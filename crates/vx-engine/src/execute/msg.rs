//! The run loop's messages ([`Msg`]: a task's events, signals, the lanes' results, the task
//! UI's input) and the [`Route`] by which a task's thread sends its events: a channel and the
//! number the receiving loop knows the task by (a kept server's route moves between cycles).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{SendTimeoutError, Sender};
use vx_exec::ExecEvent;

use crate::cache::{RestoreJob, SaveJob};
use crate::report::UiInput;

/// What the save lane's packing gave.
pub type PackResult = Result<vx_store::artifact::Packed, vx_store::artifact::PackError>;

pub enum Msg {
    Exec(usize, ExecEvent),
    Signal(i32),
    /// The save lane packed a task's artifact (STORE-7).
    Packed(usize, Box<SaveJob>, Box<PackResult>),
    /// The restore lane wrote an entry back, or could not (SCHED-3).
    Restored(usize, Box<RestoreJob>, Box<RestoreResult>),
    /// A sandboxed task's proxy refused a request to this `host:port` (SBX-6, SBX-7).
    NetRefused(usize, String),
    /// The background download of a task's remote entry ended, arrived or not (REM-6).
    Prefetched(usize),
    /// The wait for another part's upload of a task's entry ended (SCHED-8).
    PartWaited(usize, super::part_waits::PartWait),
    /// A key or a resize in the task UI (`--ui=tui`).
    Ui(UiInput),
    /// Adaptive concurrency's interval came due with tasks waiting for a slot (SCHED-9): the
    /// loop dispatches again. Made by the loop itself, never sent.
    Reassess,
}

/// Signals reach the run loop as messages (the signal thread knows nothing of [`Msg`]).
impl crate::host::signals::SignalSink for crossbeam_channel::Sender<Msg> {
    fn send(&self, signal: i32) {
        let _ = crossbeam_channel::Sender::send(self, Msg::Signal(signal));
    }

    fn try_send(&self, signal: i32) {
        let _ = crossbeam_channel::Sender::try_send(self, Msg::Signal(signal));
    }
}

/// What a restore on the restore lane gave.
pub type RestoreResult = Result<vx_store::artifact::Restored, vx_store::artifact::RestoreError>;

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
            // Let a waiting `point` have the route before trying again.
            drop(target);
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// From now on, events go to `tx` under `i`.
    pub(super) fn point(&self, tx: Sender<Msg>, i: usize) {
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
