//! REM-6: the background prefetch of a run's cached tasks from the first layer that reads.
//!
//! # How this works
//!
//! [`Prefetch::start`] takes the keys the local store lacks, in the order the run would like them,
//! and starts `concurrency` threads. Each thread claims the next queued key, downloads its body
//! into `tmp/`, validates it (STORE-5, with the task's own output globs) and marks it arrived, or
//! missed (not there, an error, a body that fails validation: each noted on the layer's health
//! like any download). Either way it then calls `ready` with the key's tag, so the run loop can
//! serve or schedule that task. Nothing here touches the index: the lookup that needs a key
//! waits for it ([`Prefetch::wait`]; a key no thread has started is fetched by the caller) and
//! then adopts every body arrived so far in one transaction ([`Prefetch::take_arrived`]).
//!
//! A body is validated on the thread that downloaded it, before adoption, so the run loop only
//! renames files and writes index rows. [`Prefetch::cancel`] ends the prefetch with the run:
//! threads take no further key and every body not adopted is removed.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::remote::{ErrorKind, LayerError, Op, Remote};
use crate::artifact::{self, Arrived, ReadError, Validated};

/// Which entry names a task's artifact may hold (its declared outputs), for validation.
pub type Accept = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// One key to prefetch: its `accept` and the tag `ready` is called with.
pub struct Wanted {
    pub key: String,
    pub accept: Accept,
    pub tag: usize,
}

enum State {
    Queued,
    /// Since when.
    Fetching(Instant),
    /// How long its download and validation took.
    Arrived(Box<Validated>, Duration),
    /// Not delivered, or adopted already: either way not the prefetch's any more.
    Done,
}

/// Ends a claimed download on every way out of its thread, a panic included.
struct Ended<'p> {
    prefetch: &'p Prefetch,
    i: usize,
}

impl Drop for Ended<'_> {
    fn drop(&mut self) {
        self.prefetch.end(self.i);
    }
}

pub(super) struct Prefetch {
    remote: Remote,
    wanted: Vec<Wanted>,
    dests: Vec<PathBuf>,
    by_key: HashMap<String, usize>,
    states: Mutex<Vec<State>>,
    changed: Condvar,
    next: AtomicUsize,
    cancelled: AtomicBool,
    ready: Box<dyn Fn(usize) + Send + Sync>,
}

impl Prefetch {
    /// Starts the threads; `None` (nothing in the background) when none could be started.
    pub(super) fn start(
        remote: Remote,
        wanted: Vec<Wanted>,
        dests: Vec<PathBuf>,
        concurrency: usize,
        ready: Box<dyn Fn(usize) + Send + Sync>,
    ) -> Option<Arc<Prefetch>> {
        let by_key = wanted
            .iter()
            .enumerate()
            .map(|(i, w)| (w.key.clone(), i))
            .collect();
        let states = Mutex::new(wanted.iter().map(|_| State::Queued).collect());
        let threads = concurrency.clamp(1, wanted.len().max(1));
        let prefetch = Arc::new(Prefetch {
            remote,
            wanted,
            dests,
            by_key,
            states,
            changed: Condvar::new(),
            next: AtomicUsize::new(0),
            cancelled: AtomicBool::new(false),
            ready,
        });
        let mut started = 0;
        for _ in 0..threads {
            let shared = Arc::clone(&prefetch);
            let spawned = std::thread::Builder::new()
                .name("vx-prefetch".into())
                .spawn(move || shared.work());
            started += usize::from(spawned.is_ok());
        }
        (started > 0).then_some(prefetch)
    }

    /// Whether `key` is one of the prefetch's, and its place.
    pub(super) fn position(&self, key: &str) -> Option<usize> {
        self.by_key.get(key).copied()
    }

    fn states(&self) -> MutexGuard<'_, Vec<State>> {
        self.states.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn work(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::SeqCst);
            if i >= self.wanted.len() || self.cancelled.load(Ordering::SeqCst) {
                return;
            }
            if self.claim(i) {
                let _ended = Ended { prefetch: self, i };
                self.fetch(i);
            }
        }
    }

    /// Body `i` is no longer downloading: a body still marked so (its thread is unwinding) is
    /// a miss; a waiting lookup is woken, and `ready` is called, so the run never waits on it.
    fn end(&self, i: usize) {
        {
            let mut states = self.states();
            if matches!(states[i], State::Fetching(_)) {
                let _ = std::fs::remove_file(&self.dests[i]);
                states[i] = State::Done;
                self.changed.notify_all();
            }
        }
        (self.ready)(self.wanted[i].tag);
    }

    fn claim(&self, i: usize) -> bool {
        let mut states = self.states();
        if matches!(states[i], State::Queued) {
            states[i] = State::Fetching(Instant::now());
            true
        } else {
            false
        }
    }

    /// Downloads and validates body `i`, then records what came of it.
    fn fetch(&self, i: usize) {
        let wanted = &self.wanted[i];
        let dest = &self.dests[i];
        let skip = self.cancelled.load(Ordering::SeqCst) || !self.remote.readable();
        let valid = if skip {
            None
        } else {
            let fetched =
                self.remote
                    .layer
                    .fetch(&wanted.key, dest, self.remote.usage.max_download);
            self.remote.note(Op::Download, fetched.as_ref().map(|_| ()));
            match fetched {
                Ok(true) => {
                    match artifact::validate(dest, &wanted.key, &*wanted.accept, artifact::SIZE_CAP)
                    {
                        Ok(valid) => Some(valid),
                        Err(ReadError::Damaged(damage)) => {
                            let error = LayerError::new(
                                ErrorKind::InvalidArtifact,
                                format!("invalid artifact: {}", damage.reason),
                            );
                            self.remote.note(Op::Download, Err(&error));
                            None
                        }
                        Err(ReadError::Vanished | ReadError::Io { .. }) => None,
                    }
                }
                Ok(false) | Err(_) => None,
            }
        };
        let mut states = self.states();
        let took = match states[i] {
            State::Fetching(since) => since.elapsed(),
            _ => Duration::ZERO,
        };
        states[i] = match valid {
            Some(valid) if !self.cancelled.load(Ordering::SeqCst) => {
                State::Arrived(Box::new(valid), took)
            }
            _ => {
                let _ = std::fs::remove_file(dest);
                State::Done
            }
        };
        self.changed.notify_all();
    }

    /// Until body `i` is no longer downloading; a body no thread has started is fetched here.
    pub(super) fn wait(&self, i: usize) {
        if self.claim(i) {
            self.fetch(i);
            return;
        }
        let mut states = self.states();
        while matches!(states[i], State::Fetching(_)) {
            states = self.changed.wait(states).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Every body arrived and not yet taken, for adoption, with how long each took.
    pub(super) fn take_arrived(&self) -> Vec<(Arrived, Duration)> {
        let mut states = self.states();
        let mut arrived = Vec::new();
        for (i, state) in states.iter_mut().enumerate() {
            if matches!(state, State::Arrived(..)) {
                if let State::Arrived(valid, took) = std::mem::replace(state, State::Done) {
                    let body = Arrived {
                        key: self.wanted[i].key.clone(),
                        path: self.dests[i].clone(),
                        valid: *valid,
                    };
                    arrived.push((body, took));
                }
            }
        }
        arrived
    }

    /// The downloads under way: (key, bytes received so far, time since it started).
    pub(super) fn in_flight(&self) -> Vec<(String, u64, Duration)> {
        let states = self.states();
        states
            .iter()
            .enumerate()
            .filter_map(|(i, state)| match state {
                State::Fetching(since) => {
                    let bytes = std::fs::metadata(&self.dests[i]).map_or(0, |m| m.len());
                    Some((self.wanted[i].key.clone(), bytes, since.elapsed()))
                }
                _ => None,
            })
            .collect()
    }

    /// The run is over: no further download starts, and bodies nobody adopted are removed
    /// (one being downloaded now is removed by its thread).
    pub(super) fn cancel(&self) {
        let mut states = self.states();
        self.cancelled.store(true, Ordering::SeqCst);
        for (i, state) in states.iter_mut().enumerate() {
            if matches!(state, State::Arrived(..)) {
                *state = State::Done;
                let _ = std::fs::remove_file(&self.dests[i]);
            }
        }
    }
}
