//! How much CPU the machine has free right now, for adaptive concurrency (SCHED-9): the idle
//! CPUs between two readings.
//!
//! How this works: without a cgroup CPU quota, the idle and iowait times of the CPUs vx may
//! run on (its affinity set), from `/proc/stat`; a CPU waiting for I/O is free for a task. With
//! a quota (a container given 2 CPUs of a 64-CPU host), the host's idle CPUs say nothing about
//! what vx may use: then the quota less what vx's cgroup used (cgroup v2 `cpu.stat`
//! `usage_usec`). Anything unreadable gives no reading, and concurrency stays where it is.

use std::path::PathBuf;
use std::time::Instant;

use crate::host::{available_cpus_and_source, own_cgroups, CpuSource};

/// Two readings apart, the CPUs that were free between them.
pub struct CpuMeter {
    source: Source,
    last: Option<(Instant, Counters)>,
}

enum Source {
    /// `/proc/stat` (or the file `VX_PROC_STAT` names), the `cpuN` lines of these CPUs (every
    /// one when empty).
    ProcStat(PathBuf, Vec<usize>),
    /// A quota of this many CPUs, and the `cpu.stat` of vx's cgroup (v2).
    Quota {
        cpus: u32,
        stat: PathBuf,
    },
    None,
}

/// Cumulative counters at one reading: free and total time, in the source's units.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Counters {
    free: f64,
    total: f64,
    /// The CPU lines summed.
    cpus: f64,
}

impl CpuMeter {
    /// The meter of this machine; `stat_file` (`VX_PROC_STAT`) is read instead of `/proc/stat`,
    /// every CPU line of it, whatever the quota: a load simulated for tests.
    pub fn new(stat_file: Option<PathBuf>) -> CpuMeter {
        let (cpus, source) = available_cpus_and_source();
        let source = match (stat_file, source) {
            (Some(file), _) => Source::ProcStat(file, Vec::new()),
            (None, CpuSource::CgroupQuota) => {
                quota_stat().map_or(Source::None, |stat| Source::Quota { cpus, stat })
            }
            (None, CpuSource::Cpus) => Source::ProcStat("/proc/stat".into(), affinity()),
        };
        CpuMeter { source, last: None }
    }

    /// The CPUs free since the last reading (`None` on the first, or when nothing could be
    /// read); in CPUs, between 0 and the machine's.
    pub fn free_cpus(&mut self) -> Option<f64> {
        let now = Instant::now();
        let counters = match &self.source {
            Source::ProcStat(file, cpus) => std::fs::read_to_string(file)
                .ok()
                .and_then(|text| proc_stat(&text, cpus)),
            Source::Quota { stat, .. } => std::fs::read_to_string(stat)
                .ok()
                .and_then(|text| usage_usec(&text))
                .map(|used| Counters {
                    free: 0.0,
                    total: used,
                    cpus: 0.0,
                }),
            Source::None => None,
        }?;
        let previous = self.last.replace((now, counters));
        let (then, before) = previous?;
        match &self.source {
            Source::ProcStat(..) => {
                let total = counters.total - before.total;
                (total > 0.0).then(|| (counters.free - before.free) / total * counters.cpus)
            }
            Source::Quota { cpus, .. } => {
                let wall_usec = now.duration_since(then).as_secs_f64() * 1e6;
                let used = (counters.total - before.total) / wall_usec.max(1.0);
                (wall_usec > 0.0).then(|| (f64::from(*cpus) - used).max(0.0))
            }
            Source::None => None,
        }
    }
}

/// The CPUs of vx's affinity set; empty (every `cpuN` line) when it cannot be read.
fn affinity() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    if let Ok(set) = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) {
        return (0..nix::sched::CpuSet::count())
            .filter(|&cpu| set.is_set(cpu).unwrap_or(false))
            .collect();
    }
    Vec::new()
}

/// vx's own cgroup v2 `cpu.stat`, when it can be read.
fn quota_stat() -> Option<PathBuf> {
    let own = own_cgroups().ok()?;
    let v2 = own.iter().find(|c| c.is_v2())?;
    let path = PathBuf::from("/sys/fs/cgroup")
        .join(v2.path.trim_start_matches('/'))
        .join("cpu.stat");
    path.is_file().then_some(path)
}

/// Idle plus iowait, and the sum of the first eight fields, over the `cpuN` lines of `cpus`
/// (every `cpuN` line when `cpus` is empty), in clock ticks.
fn proc_stat(text: &str, cpus: &[usize]) -> Option<Counters> {
    let mut found = None::<Counters>;
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("cpu") else {
            continue;
        };
        // `cpu0 …`, not the `cpu  …` total line.
        let Some((number, values)) = rest.split_once(' ') else {
            continue;
        };
        let Ok(cpu) = number.parse::<usize>() else {
            continue;
        };
        let fields = values.split_whitespace();
        if !cpus.is_empty() && !cpus.contains(&cpu) {
            continue;
        }
        let values: Vec<f64> = fields.take(8).filter_map(|v| v.parse().ok()).collect();
        if values.len() < 5 {
            return None;
        }
        let counters = found.get_or_insert(Counters {
            free: 0.0,
            total: 0.0,
            cpus: 0.0,
        });
        counters.free += values[3] + values[4];
        counters.total += values.iter().sum::<f64>();
        counters.cpus += 1.0;
    }
    found
}

/// `usage_usec` of a cgroup v2 `cpu.stat`.
fn usage_usec(text: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix("usage_usec "))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  30 0 10 60 0 0 0 0 0 0\n\
                        cpu0 10 0 5 80 5 0 0 0 0 0\n\
                        cpu1 20 0 5 20 5 0 0 0 0 0\n\
                        intr 1 2 3\n";

    #[test]
    fn proc_stat_counts_idle_and_iowait_of_the_cpus_asked_for() {
        assert_eq!(
            proc_stat(STAT, &[]),
            Some(Counters {
                free: 110.0,
                total: 150.0,
                cpus: 2.0
            })
        );
        assert_eq!(
            proc_stat(STAT, &[1]),
            Some(Counters {
                free: 25.0,
                total: 50.0,
                cpus: 1.0
            })
        );
        assert_eq!(proc_stat("intr 1\n", &[]), None);
    }

    #[test]
    fn cpu_stat_usage_is_read() {
        assert_eq!(
            usage_usec("usage_usec 1234\nuser_usec 1000\n"),
            Some(1234.0)
        );
        assert_eq!(usage_usec("user_usec 1000\n"), None);
    }

    /// A real reading: between 0 and the machine's CPUs, and none on the first call.
    #[test]
    fn a_reading_is_within_the_machine() {
        let mut meter = CpuMeter::new(None);
        assert_eq!(meter.free_cpus(), None);
        std::thread::sleep(std::time::Duration::from_millis(50));
        let free = meter.free_cpus().expect("a second reading");
        let cpus = f64::from(crate::host::available_cpus()).max(affinity().len() as f64);
        assert!((0.0..=cpus + 0.01).contains(&free), "{free} of {cpus}");
    }
}
