//! Adaptive concurrency (SCHED-9): how many tasks may execute at once when neither
//! `--concurrency` nor `[workspace] concurrency` fixes it.
//!
//! How this works: the limit starts at the CPU count (SCHED-1's default) and moves with what
//! the machine has free, read every [`INTERVAL`] by the run loop. While tasks wait for a slot
//! and at least one CPU stood idle over the last interval (the executing tasks wait on I/O,
//! the network or a child's sleep), it grows by the idle CPUs, whole, up to [`ceiling`]; while
//! no CPU is free, it shrinks by one towards the CPU count, so CPU-bound tasks do not fight for
//! cores. It never grows while memory is short. A pure state machine: the run loop measures,
//! tests feed it readings.

use std::time::Duration;

/// How often the run loop reads the machine's free CPUs while tasks wait for a slot.
pub const INTERVAL: Duration = Duration::from_millis(200);

/// Free CPUs below this count as none: the limit shrinks.
const SATURATED: f64 = 0.5;

/// The most tasks adaptive concurrency runs at once on `cpus` CPUs: four per CPU, and at least
/// Turborepo's default of 10.
pub fn ceiling(cpus: u32) -> u32 {
    cpus.saturating_mul(4).max(10)
}

/// The limit and its bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adaptive {
    floor: u32,
    ceiling: u32,
    limit: u32,
    /// The highest the limit reached, for the run record.
    peak: u32,
}

/// One reading of the machine, between two intervals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// CPUs free over the interval.
    pub free_cpus: f64,
    /// Ready tasks wait only for a slot (every slot is taken).
    pub slot_bound: bool,
    /// Free memory is below what another task may take (SCHED-4's budget is the other guard).
    pub memory_short: bool,
}

impl Adaptive {
    pub fn new(cpus: u32) -> Adaptive {
        let floor = cpus.max(1);
        Adaptive {
            floor,
            ceiling: ceiling(floor),
            limit: floor,
            peak: floor,
        }
    }

    pub fn limit(&self) -> u32 {
        self.limit
    }

    pub fn peak(&self) -> u32 {
        self.peak
    }

    /// The new limit after `reading`.
    pub fn observe(&mut self, reading: Reading) -> u32 {
        if reading.free_cpus < SATURATED {
            self.limit = self.limit.saturating_sub(1).max(self.floor);
        } else if reading.slot_bound && !reading.memory_short && reading.free_cpus >= 1.0 {
            let grow = reading.free_cpus.floor() as u32;
            self.limit = self.limit.saturating_add(grow).min(self.ceiling);
        }
        self.peak = self.peak.max(self.limit);
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(free_cpus: f64, slot_bound: bool) -> Reading {
        Reading {
            free_cpus,
            slot_bound,
            memory_short: false,
        }
    }

    #[test]
    fn idle_cpus_with_tasks_waiting_grow_the_limit_to_the_ceiling() {
        let mut a = Adaptive::new(2);
        assert_eq!(a.limit(), 2);
        assert_eq!(
            a.observe(reading(1.9, true)),
            3,
            "one whole CPU free: one more"
        );
        assert_eq!(a.observe(reading(2.0, true)), 5);
        for _ in 0..10 {
            a.observe(reading(2.0, true));
        }
        assert_eq!(a.limit(), ceiling(2));
        assert_eq!(ceiling(2), 10);
        assert_eq!(ceiling(8), 32);
    }

    #[test]
    fn nothing_grows_without_tasks_waiting_or_with_memory_short() {
        let mut a = Adaptive::new(2);
        assert_eq!(a.observe(reading(2.0, false)), 2);
        let short = Reading {
            memory_short: true,
            ..reading(2.0, true)
        };
        assert_eq!(a.observe(short), 2);
        assert_eq!(
            a.observe(reading(0.9, true)),
            2,
            "under one CPU free: no growth"
        );
    }

    #[test]
    fn busy_cpus_shrink_the_limit_back_to_the_cpu_count_not_below() {
        let mut a = Adaptive::new(2);
        a.observe(reading(2.0, true));
        a.observe(reading(2.0, true));
        assert_eq!(a.limit(), 6);
        assert_eq!(a.observe(reading(0.1, true)), 5);
        assert_eq!(a.observe(reading(0.4, false)), 4);
        for _ in 0..10 {
            a.observe(reading(0.0, true));
        }
        assert_eq!(a.limit(), 2);
        assert_eq!(a.peak(), 6);
    }
}
