//! How many actions the remote executor keeps in flight: `max-in-flight` until the server says
//! it is at its limit (`RESOURCE_EXHAUSTED`: BuildGrid's RPC thread pool full, an engine's queue
//! capped), then half as many, growing back by one each time as many actions as the window holds
//! have ended well — TCP's way of finding a link's capacity (additive increase, multiplicative
//! decrease). A burst of refusals answered together lowers the window once. The REAPI cache
//! layer keeps one too, for its calls ([`Gate`]).

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Refusals this close to the last lowering belong to the same burst (actions: an Execute is
/// refused as soon as it is sent, and a burst of them is answered within this).
const BURST: Duration = Duration::from_secs(1);

pub(crate) struct Window {
    max: u32,
    burst: Duration,
    state: Mutex<State>,
}

struct State {
    now: u32,
    /// Actions that ended well since the window last grew or shrank.
    ended: u32,
    lowered_at: Option<Instant>,
}

impl Window {
    pub(crate) fn new(max: u32) -> Window {
        Window::with_burst(max, BURST)
    }

    /// A window whose refusals `burst` apart lower it again.
    pub(crate) fn with_burst(max: u32, burst: Duration) -> Window {
        Window {
            max: max.max(1),
            burst,
            state: Mutex::new(State {
                now: max.max(1),
                ended: 0,
                lowered_at: None,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many actions may be in flight now.
    pub(crate) fn now(&self) -> u32 {
        self.state().now
    }

    /// The server refused an action for load: the window halves (not below 1), once per burst.
    /// Returns the new size when this call lowered it.
    pub(crate) fn refused(&self) -> Option<u32> {
        let mut state = self.state();
        if state.lowered_at.is_some_and(|at| at.elapsed() < self.burst) {
            return None;
        }
        let lowered = (state.now / 2).max(1);
        state.lowered_at = Some(Instant::now());
        state.ended = 0;
        (lowered < state.now).then(|| {
            state.now = lowered;
            lowered
        })
    }

    /// An action ended well: after a window's worth of them, the window grows by one, up to
    /// `max-in-flight`.
    pub(crate) fn ended_well(&self) {
        let mut state = self.state();
        if state.now >= self.max {
            return;
        }
        state.ended += 1;
        if state.ended >= state.now {
            state.now += 1;
            state.ended = 0;
        }
    }
}

/// Calls to a server that may be at its limit: at most the window's size at once; a call the
/// server refuses with `RESOURCE_EXHAUSTED` lowers the window and is tried again (after 20 ms,
/// 40 ms, … up to [`Gate::TRIES`] times), and is a failure only when the server still refuses it
/// then. BuildGrid answers so as soon as its RPC thread pool is full (10 threads on 2 cores by
/// default), which would otherwise switch a cache layer off in its first burst of requests.
pub(crate) struct Gate {
    window: Window,
    in_use: Mutex<u32>,
    freed: std::sync::Condvar,
    /// The narrowest the window was lowered to, if a refusal ever lowered it.
    narrowest: Mutex<Option<u32>>,
}

impl Gate {
    /// Tries of one call before its refusal stands.
    pub(crate) const TRIES: u32 = 8;

    pub(crate) fn new(max: u32) -> Gate {
        Gate {
            // Cache calls are short: refusals 100 ms apart are separate bursts.
            window: Window::with_burst(max, Duration::from_millis(100)),
            in_use: Mutex::new(0),
            freed: std::sync::Condvar::new(),
            narrowest: Mutex::new(None),
        }
    }

    /// The fewest calls the gate let through at once after a refusal, if the server ever
    /// refused one for load.
    pub(crate) fn narrowest(&self) -> Option<u32> {
        *self.narrowest.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many calls may be in flight now.
    #[cfg(test)]
    fn now(&self) -> u32 {
        self.window.now()
    }

    /// Runs `call` when the window has room; `refused` tells a refusal for load from any other
    /// outcome.
    pub(crate) fn run<T, E>(
        &self,
        refused: impl Fn(&E) -> bool,
        call: impl Fn() -> Result<T, E>,
    ) -> Result<T, E> {
        let mut tries = 0;
        loop {
            {
                let mut in_use = self.in_use.lock().unwrap_or_else(|p| p.into_inner());
                while *in_use >= self.window.now() {
                    in_use = self.freed.wait(in_use).unwrap_or_else(|p| p.into_inner());
                }
                *in_use += 1;
            }
            let result = call();
            *self.in_use.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
            self.freed.notify_all();
            tries += 1;
            match result {
                Err(error) if refused(&error) && tries < Gate::TRIES => {
                    if let Some(now) = self.window.refused() {
                        let mut narrowest =
                            self.narrowest.lock().unwrap_or_else(|p| p.into_inner());
                        *narrowest = Some(narrowest.map_or(now, |n| n.min(now)));
                    }
                    std::thread::sleep(Duration::from_millis(20 * u64::from(tries)));
                }
                Err(error) => return Err(error),
                Ok(value) => {
                    self.window.ended_well();
                    return Ok(value);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_halves_the_window_once_per_burst_and_successes_grow_it_back() {
        let window = Window::new(8);
        assert_eq!(window.now(), 8);
        assert_eq!(window.refused(), Some(4));
        assert_eq!(window.refused(), None, "the same burst");
        assert_eq!(window.now(), 4);
        for _ in 0..3 {
            window.ended_well();
        }
        assert_eq!(window.now(), 4, "not yet a window's worth");
        window.ended_well();
        assert_eq!(window.now(), 5);
        for _ in 0..100 {
            window.ended_well();
        }
        assert_eq!(window.now(), 8, "never above max-in-flight");
    }

    #[test]
    fn a_gate_retries_a_call_refused_for_load_and_narrows() {
        let gate = Gate::new(16);
        let calls = std::sync::atomic::AtomicU32::new(0);
        // Refused twice, then served: one answer, the window narrowed.
        let answer: Result<u32, &str> = gate.run(
            |e| *e == "exhausted",
            || match calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
                0 | 1 => Err("exhausted"),
                n => Ok(n),
            },
        );
        assert_eq!(answer, Ok(2));
        assert_eq!(
            gate.now(),
            8,
            "lowered once: the second refusal was the same burst"
        );
        // Any other failure is returned at once.
        calls.store(0, std::sync::atomic::Ordering::SeqCst);
        let other: Result<u32, &str> = gate.run(
            |e| *e == "exhausted",
            || {
                calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Err("broken")
            },
        );
        assert_eq!(other, Err("broken"));
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
        // A refusal that never ends stands after TRIES tries.
        calls.store(0, std::sync::atomic::Ordering::SeqCst);
        let stuck: Result<u32, &str> = gate.run(
            |e| *e == "exhausted",
            || {
                calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Err("exhausted")
            },
        );
        assert_eq!(stuck, Err("exhausted"));
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), Gate::TRIES);
    }

    #[test]
    fn a_gate_holds_calls_to_the_window() {
        let gate = std::sync::Arc::new(Gate::new(2));
        assert_eq!(gate.narrowest(), None);
        let now = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let most = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (gate, now, most) = (gate.clone(), now.clone(), most.clone());
                std::thread::spawn(move || {
                    let _: Result<(), ()> = gate.run(
                        |_| false,
                        || {
                            use std::sync::atomic::Ordering::SeqCst;
                            let n = now.fetch_add(1, SeqCst) + 1;
                            most.fetch_max(n, SeqCst);
                            std::thread::sleep(Duration::from_millis(20));
                            now.fetch_sub(1, SeqCst);
                            Ok(())
                        },
                    );
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(most.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[test]
    fn the_window_never_closes() {
        let window = Window::new(1);
        assert_eq!(window.refused(), None, "already 1");
        assert_eq!(window.now(), 1);
    }
}
