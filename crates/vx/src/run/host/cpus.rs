//! The default concurrency (SCHED-1): the available CPUs, i.e. the smaller of the hardware
//! threads and the process's CPU affinity set, capped on Linux by the tightest cgroup CPU
//! quota on the path from vx's cgroup to the root, rounded up, at least 1.
//!
//! The standard library's `available_parallelism` rounds a fractional quota down (1.5 CPUs
//! gives 1); the spec rounds up, so the quota is read here.

use std::path::Path;

/// The available CPUs for this process.
pub fn available_cpus() -> u32 {
    available_cpus_and_source().0
}

/// What bounded [`available_cpus`] (`vx info`, HIST-6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuSource {
    /// The hardware threads or the affinity set.
    Cpus,
    /// A cgroup CPU quota below them.
    CgroupQuota,
}

impl CpuSource {
    pub fn word(self) -> &'static str {
        match self {
            CpuSource::Cpus => "cpus",
            CpuSource::CgroupQuota => "cgroup quota",
        }
    }
}

/// The available CPUs and what bounded them.
pub fn available_cpus_and_source() -> (u32, CpuSource) {
    let threads = affinity_cpus()
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32));
    let quota = cgroup_quota_cpus(Path::new("/proc/self/cgroup"), Path::new("/sys/fs/cgroup"));
    match quota {
        Some(q) if q < threads => (q.max(1), CpuSource::CgroupQuota),
        _ => (threads.max(1), CpuSource::Cpus),
    }
}

#[cfg(target_os = "linux")]
fn affinity_cpus() -> Option<u32> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok()?;
    let count = (0..nix::sched::CpuSet::count())
        .filter(|&cpu| set.is_set(cpu).unwrap_or(false))
        .count();
    (count > 0).then_some(count as u32)
}

#[cfg(not(target_os = "linux"))]
fn affinity_cpus() -> Option<u32> {
    None
}

/// The tightest quota, in whole CPUs rounded up, from vx's cgroup up to the root (v2
/// `cpu.max`, v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`). `None` when there is no quota.
fn cgroup_quota_cpus(proc_cgroup: &Path, root: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(proc_cgroup).ok()?;
    let mut tightest: Option<u32> = None;
    for line in text.lines() {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let v2 = controllers.is_empty();
        if !v2 && !controllers.split(',').any(|c| c == "cpu") {
            continue;
        }
        let base = if v2 {
            root.to_path_buf()
        } else {
            root.join(controllers)
        };
        let mut dir = base.join(path.trim_start_matches('/'));
        loop {
            let quota = if v2 {
                std::fs::read_to_string(dir.join("cpu.max"))
                    .ok()
                    .and_then(|t| parse_cpu_max(&t))
            } else {
                let quota = std::fs::read_to_string(dir.join("cpu.cfs_quota_us")).ok();
                let period = std::fs::read_to_string(dir.join("cpu.cfs_period_us")).ok();
                quota
                    .zip(period)
                    .and_then(|(q, p)| quota_cpus(q.trim(), p.trim()))
            };
            if let Some(q) = quota {
                tightest = Some(tightest.map_or(q, |t| t.min(q)));
            }
            if dir == base || !dir.pop() {
                break;
            }
        }
    }
    tightest
}

/// `cpu.max` is `<quota> <period>` or `max <period>`.
fn parse_cpu_max(text: &str) -> Option<u32> {
    let mut fields = text.split_whitespace();
    quota_cpus(fields.next()?, fields.next()?)
}

fn quota_cpus(quota: &str, period: &str) -> Option<u32> {
    let quota: i64 = quota.parse().ok()?;
    let period: i64 = period.parse().ok()?;
    if quota <= 0 || period <= 0 {
        return None;
    }
    Some(((quota + period - 1) / period).max(1) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotas_round_up() {
        assert_eq!(parse_cpu_max("150000 100000\n"), Some(2));
        assert_eq!(parse_cpu_max("100000 100000"), Some(1));
        assert_eq!(parse_cpu_max("50000 100000"), Some(1));
        assert_eq!(parse_cpu_max("max 100000"), None);
        assert_eq!(quota_cpus("-1", "100000"), None);
    }

    #[test]
    fn the_tightest_quota_on_the_path_wins() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("fs");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/cpu.max"), "150000 100000").unwrap();
        std::fs::write(root.join("a/b/cpu.max"), "max 100000").unwrap();
        std::fs::write(root.join("cpu.max"), "400000 100000").unwrap();
        let proc = dir.path().join("cgroup");
        std::fs::write(&proc, "0::/a/b\n").unwrap();
        assert_eq!(cgroup_quota_cpus(&proc, &root), Some(2));
        std::fs::write(&proc, "4:cpu,cpuacct:/x\n").unwrap();
        std::fs::create_dir_all(root.join("cpu,cpuacct/x")).unwrap();
        std::fs::write(root.join("cpu,cpuacct/x/cpu.cfs_quota_us"), "250000").unwrap();
        std::fs::write(root.join("cpu,cpuacct/x/cpu.cfs_period_us"), "100000").unwrap();
        assert_eq!(cgroup_quota_cpus(&proc, &root), Some(3));
    }
}
