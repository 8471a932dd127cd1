//! SIGINT, SIGTERM and SIGHUP, taken over once per process and routed to whoever listens:
//! the running graph's loop, and `vx watch` around it.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crossbeam_channel::Sender;

use crate::error::Failure;

/// Whoever hears a signal while a graph runs (its loop's channel): two ways to hand it over.
pub trait SignalSink: Send + Sync {
    /// From the signal thread: may wait for room.
    fn send(&self, signal: i32);
    /// From the listener's own thread: must not wait.
    fn try_send(&self, signal: i32);
}

static RUN: Mutex<Option<Arc<dyn SignalSink>>> = Mutex::new(None);
/// The last signal vx received (0: none). Every signal ends vx (EXEC-9, WATCH-1), so it is
/// never cleared.
static PENDING: AtomicI32 = AtomicI32::new(0);
static WATCH: Mutex<Option<Sender<i32>>> = Mutex::new(None);
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// Installs the handlers and the thread that routes them, the first time.
pub fn install() -> Result<(), Failure> {
    INSTALLED
        .get_or_init(|| {
            use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
            let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
                .map_err(|e| format!("cannot install signal handlers: {e}"))?;
            std::thread::Builder::new()
                .name("vx-signals".into())
                .spawn(move || {
                    for signal in signals.forever() {
                        if let Some(watch) = lock(&WATCH).as_ref() {
                            let _ = watch.send(signal);
                        }
                        // Remembered and routed under one lock, so a graph that starts
                        // listening meanwhile gets it exactly once; cloned out of the
                        // lock, so a full channel does not block routing.
                        let run = {
                            let run = lock(&RUN);
                            PENDING.store(signal, Ordering::SeqCst);
                            run.clone()
                        };
                        if let Some(run) = run {
                            run.send(signal);
                        }
                    }
                })
                .map(|_| ())
                .map_err(|e| format!("cannot start the signal thread: {e}"))
        })
        .clone()
        .map_err(Failure::Internal)
}

/// The running graph's loop hears the signals from now on (`None`: no graph runs).
/// A signal that came before (between two cycles of `vx watch`) reaches it too.
pub fn route_to_run(tx: Option<Arc<dyn SignalSink>>) {
    let pending = {
        let mut run = lock(&RUN);
        *run = tx.clone();
        pending()
    };
    if let (Some(tx), Some(signal)) = (tx, pending) {
        tx.try_send(signal);
    }
}

/// The last signal vx received, for a wait outside the graph's loop (the workspace lock).
pub fn pending() -> Option<i32> {
    match PENDING.load(Ordering::SeqCst) {
        0 => None,
        n => Some(n),
    }
}

/// `vx watch` hears every signal too.
pub fn route_to_watch(tx: Option<Sender<i32>>) {
    *lock(&WATCH) = tx;
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
