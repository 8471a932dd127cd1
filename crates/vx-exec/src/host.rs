//! What this machine offers a run: the available CPUs (SCHED-1) and the memory (SCHED-4),
//! each bounded by the cgroup limits on the path from vx's cgroup to the root; and vx's own
//! cgroups, `/proc/self/cgroup` read and parsed once per process for these probes and for
//! containment (`cgroup.rs`).
//!
//! The standard library's `available_parallelism` rounds a fractional CPU quota down (1.5 CPUs
//! gives 1); the spec rounds up, so the quota is read here.

use std::path::Path;
use std::sync::OnceLock;

/// One line of `/proc/self/cgroup`: `<id>:<controllers>:<path>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnCgroup {
    pub id: String,
    /// The v1 controllers, comma-separated as the hierarchy's folder is named; empty on v2.
    pub controllers: String,
    /// vx's cgroup in that hierarchy, from its root.
    pub path: String,
}

impl OwnCgroup {
    /// The cgroup v2 line (`0::/path`).
    pub fn is_v2(&self) -> bool {
        self.id == "0" && self.controllers.is_empty()
    }

    /// A v1 hierarchy with `controller`.
    pub fn has(&self, controller: &str) -> bool {
        self.controllers.split(',').any(|c| c == controller)
    }
}

/// The lines of a `/proc/<pid>/cgroup` text; malformed lines are left out.
pub fn parse_own(text: &str) -> Vec<OwnCgroup> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.splitn(3, ':');
            Some(OwnCgroup {
                id: fields.next()?.to_string(),
                controllers: fields.next()?.to_string(),
                path: fields.next()?.to_string(),
            })
        })
        .collect()
}

/// vx's own cgroups, read once per process; why not, when `/proc/self/cgroup` cannot be read.
pub fn own_cgroups() -> Result<&'static [OwnCgroup], &'static str> {
    static OWN: OnceLock<Result<Vec<OwnCgroup>, String>> = OnceLock::new();
    OWN.get_or_init(|| {
        std::fs::read_to_string("/proc/self/cgroup")
            .map(|text| parse_own(&text))
            .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))
    })
    .as_ref()
    .map(Vec::as_slice)
    .map_err(String::as_str)
}

/// Where cgroup hierarchies are mounted on a usual system, for the limit probes.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";

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
    let quota = own_cgroups()
        .ok()
        .and_then(|own| cgroup_quota_cpus(own, Path::new(CGROUP_ROOT)));
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
fn cgroup_quota_cpus(own: &[OwnCgroup], root: &Path) -> Option<u32> {
    tightest(own, "cpu", root, |v2, dir| {
        if v2 {
            std::fs::read_to_string(dir.join("cpu.max"))
                .ok()
                .and_then(|t| parse_cpu_max(&t))
        } else {
            let quota = std::fs::read_to_string(dir.join("cpu.cfs_quota_us")).ok();
            let period = std::fs::read_to_string(dir.join("cpu.cfs_period_us")).ok();
            quota
                .zip(period)
                .and_then(|(q, p)| quota_cpus(q.trim(), p.trim()))
        }
    })
}

/// The smallest `limit(v2, dir)` over the cgroup folders from vx's up to the root of every
/// hierarchy that can limit `controller` (v2, or a v1 hierarchy with it); `None` when no folder
/// has a limit.
fn tightest<T: Ord>(
    own: &[OwnCgroup],
    controller: &str,
    root: &Path,
    limit: impl Fn(bool, &Path) -> Option<T>,
) -> Option<T> {
    let mut tightest: Option<T> = None;
    for line in own
        .iter()
        .filter(|l| l.controllers.is_empty() || l.has(controller))
    {
        let v2 = line.controllers.is_empty();
        let base = if v2 {
            root.to_path_buf()
        } else {
            root.join(&line.controllers)
        };
        let mut dir = base.join(line.path.trim_start_matches('/'));
        loop {
            if let Some(found) = limit(v2, &dir) {
                tightest = Some(match tightest {
                    Some(t) => t.min(found),
                    None => found,
                });
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

/// Where the measured memory budget came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemorySource {
    MemAvailable,
    CgroupLimit,
}

impl MemorySource {
    pub fn word(self) -> &'static str {
        match self {
            MemorySource::MemAvailable => "MemAvailable",
            MemorySource::CgroupLimit => "cgroup limit",
        }
    }
}

/// SCHED-4's measured budget on Linux: the smaller of `MemAvailable` and, for the tightest
/// cgroup memory limit on vx's path, limit minus current usage. `None` where it cannot be
/// measured.
pub fn measured_memory() -> Option<(u64, MemorySource)> {
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| mem_available(&text));
    let cgroup = own_cgroups()
        .ok()
        .and_then(|own| cgroup_headroom(own, Path::new(CGROUP_ROOT)));
    match (available, cgroup) {
        (Some(a), Some(c)) if c < a => Some((c, MemorySource::CgroupLimit)),
        (Some(a), _) => Some((a, MemorySource::MemAvailable)),
        (None, Some(c)) => Some((c, MemorySource::CgroupLimit)),
        (None, None) => None,
    }
}

/// `MemAvailable:  123456 kB` in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The smallest `limit - usage` over the memory cgroups from vx's up to the root (v2
/// `memory.max`/`memory.current`, v1 `memory.limit_in_bytes`/`memory.usage_in_bytes`).
fn cgroup_headroom(own: &[OwnCgroup], root: &Path) -> Option<u64> {
    tightest(own, "memory", root, |v2, dir| {
        let (limit_file, usage_file) = if v2 {
            ("memory.max", "memory.current")
        } else {
            ("memory.limit_in_bytes", "memory.usage_in_bytes")
        };
        let read = |name: &str| -> Option<u64> {
            std::fs::read_to_string(dir.join(name))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        // v1 writes "no limit" as a huge number; anything above 2^62 is treated so.
        let limit = read(limit_file).filter(|l| *l < 1 << 62)?;
        Some(limit.saturating_sub(read(usage_file).unwrap_or(0)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own(text: &str) -> Vec<OwnCgroup> {
        parse_own(text)
    }

    #[test]
    fn proc_cgroup_lines_are_parsed_once_into_their_fields() {
        let lines = own("0::/user.slice/u\n4:cpu,cpuacct:/x\nbroken\n");
        assert_eq!(lines.len(), 2, "a malformed line is left out");
        assert!(lines[0].is_v2() && !lines[1].is_v2());
        assert!(lines[1].has("cpuacct") && !lines[1].has("cpuset"));
        assert_eq!(lines[1].path, "/x");
    }

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
        assert_eq!(cgroup_quota_cpus(&own("0::/a/b\n"), &root), Some(2));
        std::fs::create_dir_all(root.join("cpu,cpuacct/x")).unwrap();
        std::fs::write(root.join("cpu,cpuacct/x/cpu.cfs_quota_us"), "250000").unwrap();
        std::fs::write(root.join("cpu,cpuacct/x/cpu.cfs_period_us"), "100000").unwrap();
        assert_eq!(
            cgroup_quota_cpus(&own("4:cpu,cpuacct:/x\n"), &root),
            Some(3)
        );
    }

    #[test]
    fn mem_available_is_read_in_bytes() {
        let text = "MemTotal: 100 kB\nMemAvailable:    2048 kB\n";
        assert_eq!(mem_available(text), Some(2048 * 1024));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn the_tightest_cgroup_headroom_wins() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("fs");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/memory.max"), "1000\n").unwrap();
        std::fs::write(root.join("a/memory.current"), "400\n").unwrap();
        std::fs::write(root.join("a/b/memory.max"), "max\n").unwrap();
        std::fs::write(root.join("memory.max"), "5000\n").unwrap();
        assert_eq!(cgroup_headroom(&own("0::/a/b\n"), &root), Some(600));
        assert_eq!(cgroup_headroom(&own("0::/\n"), &root), Some(5000));
    }
}
