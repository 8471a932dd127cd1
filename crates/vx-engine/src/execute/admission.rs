//! Memory-aware admission in the run loop (SCHED-4): what history estimates for each task, and
//! how long each waited only for memory.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use vx_core::schedule::{median, Estimate, TaskKind};
use vx_store::index::Recent;

use crate::plan::nodes::Kind;

/// A task's estimate from its recent executions: the median duration of its successes and its
/// largest recorded peak.
pub(super) fn estimate(recent: Option<&Recent>, kind: Kind) -> Estimate {
    Estimate {
        duration_ms: recent.and_then(|r| median(&r.durations_ms)),
        peak_rss_bytes: recent.and_then(|r| r.peaks_bytes.iter().max().copied()),
        kind: match kind {
            Kind::OneShot => TaskKind::OneShot,
            Kind::Persistent => TaskKind::Persistent,
            Kind::Group => TaskKind::Group,
        },
    }
}

/// The time each task waited only for memory: from the dispatch that first held it with a slot
/// free to the first dispatch that did not (it started, or the slots filled up).
#[derive(Default)]
pub(super) struct HeldForMemory {
    since: BTreeMap<usize, Instant>,
    total: BTreeMap<usize, Duration>,
}

impl HeldForMemory {
    /// After a dispatch: `held` are the tasks waiting only for memory now.
    pub(super) fn update(&mut self, held: &[usize], now: Instant) {
        let total = &mut self.total;
        let held_now: HashSet<usize> = held.iter().copied().collect();
        self.since.retain(|i, since| {
            let still = held_now.contains(i);
            if !still {
                *total.entry(*i).or_default() += now.saturating_duration_since(*since);
            }
            still
        });
        for &i in held {
            self.since.entry(i).or_insert(now);
        }
    }

    /// Task `i` starts now: its wait, if any, ends here (before its report is made).
    pub(super) fn started(&mut self, i: usize, now: Instant) {
        if let Some(since) = self.since.remove(&i) {
            *self.total.entry(i).or_default() += now.saturating_duration_since(since);
        }
    }

    /// How long task `i` waited only for memory so far.
    pub(super) fn total(&self, i: usize) -> Duration {
        self.total.get(&i).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_time_counts_only_while_held() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut held = HeldForMemory::default();
        held.update(&[1, 2], at(0));
        held.update(&[1, 2], at(100));
        held.update(&[2], at(250));
        held.update(&[], at(300));
        held.update(&[2], at(1000));
        held.update(&[], at(1040));
        assert_eq!(held.total(1), Duration::from_millis(250));
        assert_eq!(held.total(2), Duration::from_millis(340));
        assert_eq!(held.total(3), Duration::ZERO);
        held.update(&[4], at(2000));
        held.started(4, at(2025));
        assert_eq!(
            held.total(4),
            Duration::from_millis(25),
            "closed when it starts"
        );
        held.update(&[], at(3000));
        assert_eq!(held.total(4), Duration::from_millis(25));
    }

    #[test]
    fn the_estimate_is_the_median_duration_and_the_largest_peak() {
        let recent = Recent {
            durations_ms: vec![30, 10, 20, 1000],
            peaks_bytes: vec![5, 9, 7],
        };
        let e = estimate(Some(&recent), Kind::OneShot);
        assert_eq!((e.duration_ms, e.peak_rss_bytes), (Some(25), Some(9)));
        assert_eq!(estimate(None, Kind::Group).kind, TaskKind::Group);
        assert_eq!(estimate(None, Kind::OneShot).duration_ms, None);
    }
}
