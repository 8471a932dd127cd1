//! The memory budget of memory-aware admission (SCHED-4): measured once at run start, or
//! given by `VX_MEMORY_BUDGET` (a size, or `off`). `vx info` reports the same.

use std::collections::BTreeMap;

use vx_core::units::parse_size;

use crate::outcome::Notice;

/// What `VX_MEMORY_BUDGET` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    Off,
    Given(u64),
    /// Unset (or invalid, with a warning): measured when it is needed.
    Measure,
}

impl Budget {
    /// `VX_MEMORY_BUDGET`: a size, or `off`; an invalid value is measured instead, with one
    /// warning for the caller to show (ENV-1).
    pub fn from_env(env: &BTreeMap<String, String>) -> (Budget, Option<Notice>) {
        let Some(value) = env.get("VX_MEMORY_BUDGET") else {
            return (Budget::Measure, None);
        };
        if value == "off" {
            return (Budget::Off, None);
        }
        match parse_size(value).filter(|s| *s > 0) {
            Some(size) => (Budget::Given(size), None),
            None => (
                Budget::Measure,
                Some(Notice::warning(format!(
                    "ignoring VX_MEMORY_BUDGET=`{value}`: not a size (write e.g. `8G`, or `off`)"
                ))),
            ),
        }
    }

    /// The budget in bytes and where it came from; measuring reads `/proc/meminfo` and the
    /// cgroup files, so a run does it only when some task has a recorded peak.
    pub fn resolve(self) -> (Option<u64>, &'static str) {
        match self {
            Budget::Off => (None, "VX_MEMORY_BUDGET"),
            Budget::Given(size) => (Some(size), "VX_MEMORY_BUDGET"),
            Budget::Measure => match vx_exec::host::measured_memory() {
                Some((bytes, source)) => (Some(bytes), source.word()),
                None => (None, "not measured"),
            },
        }
    }
}
