//! Adaptive concurrency in the run loop (SCHED-9): the machine's free CPUs read every
//! interval while tasks wait for a slot, and the slot count moved
//! (`vx_core::schedule::adaptive` decides by how much).

use std::path::PathBuf;
use std::time::Instant;

use vx_core::schedule::adaptive::{Reading, INTERVAL};
use vx_exec::load::CpuMeter;

use super::Run;

/// SCHED-9: below this much free memory (`MemAvailable`, or the cgroup's headroom) adaptive
/// concurrency does not grow.
const MEMORY_FOR_ONE_MORE: u64 = 1 << 30;

impl Run<'_> {
    /// SCHED-9: with adaptive concurrency, at most every [`INTERVAL`], the CPUs free since the
    /// last reading move the slot count (see `vx_core::schedule::adaptive`).
    pub(super) fn reassess_slots(&mut self) {
        let Some(adaptive) = self.ctx.adaptive.as_mut() else {
            return;
        };
        let now = Instant::now();
        let host_env = &self.ctx.host_env;
        let (meter, last) = self.meter.get_or_insert_with(|| {
            // Made once, at the first dispatch: nothing here allocates on later ones.
            let mut meter = CpuMeter::new(host_env.get("VX_PROC_STAT").map(PathBuf::from));
            meter.free_cpus(); // the first reading, that the next is taken against
            (meter, now)
        });
        if now.duration_since(*last) < INTERVAL {
            return;
        }
        *last = now;
        let Some(free_cpus) = meter.free_cpus() else {
            return;
        };
        let reading = Reading {
            free_cpus,
            slot_bound: self.running_slots >= self.ctx.slots && self.scheduler.has_ready(),
            memory_short: vx_exec::host::measured_memory()
                .is_some_and(|(free, _)| free < MEMORY_FOR_ONE_MORE),
        };
        self.ctx.slots = adaptive.observe(reading);
    }

    /// SCHED-9: when the loop wakes to read the machine again: the next interval, while every
    /// slot is taken and tasks are ready.
    pub(super) fn reassess_due(&self) -> Option<Instant> {
        self.ctx.adaptive.as_ref()?;
        let (_, last) = self.meter.as_ref()?;
        (self.running_slots >= self.ctx.slots && self.scheduler.has_ready())
            .then(|| *last + INTERVAL)
    }
}
