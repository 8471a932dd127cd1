//! How many actions the remote executor keeps in flight: `max-in-flight` until the server says
//! it is at its limit (`RESOURCE_EXHAUSTED`: BuildGrid's RPC thread pool full, an engine's queue
//! capped), then half as many, growing back by one each time as many actions as the window holds
//! have ended well — TCP's way of finding a link's capacity (additive increase, multiplicative
//! decrease). A burst of refusals answered together lowers the window once.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Refusals this close to the last lowering belong to the same burst.
const BURST: Duration = Duration::from_secs(1);

pub(crate) struct Window {
    max: u32,
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
        Window {
            max: max.max(1),
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
        if state.lowered_at.is_some_and(|at| at.elapsed() < BURST) {
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
    fn the_window_never_closes() {
        let window = Window::new(1);
        assert_eq!(window.refused(), None, "already 1");
        assert_eq!(window.now(), 1);
    }
}
