//! The memory budget of memory-aware admission (SCHED-4): measured once at run start, or
//! given by `VX_MEMORY_BUDGET` (a size, or `off`). `vx info` reports the same.

use std::collections::BTreeMap;
use std::path::Path;

use vx_core::units::parse_size;

use crate::run::outcome::Notice;

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
            Budget::Measure => match measured_memory() {
                Some((bytes, source)) => (Some(bytes), source.word()),
                None => (None, "not measured"),
            },
        }
    }
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
    let cgroup = cgroup_headroom(Path::new("/proc/self/cgroup"), Path::new("/sys/fs/cgroup"));
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
fn cgroup_headroom(proc_cgroup: &Path, root: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(proc_cgroup).ok()?;
    let mut tightest: Option<u64> = None;
    for line in text.lines() {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let v2 = controllers.is_empty();
        if !v2 && !controllers.split(',').any(|c| c == "memory") {
            continue;
        }
        let base = if v2 {
            root.to_path_buf()
        } else {
            root.join(controllers)
        };
        let (limit_file, usage_file) = if v2 {
            ("memory.max", "memory.current")
        } else {
            ("memory.limit_in_bytes", "memory.usage_in_bytes")
        };
        let mut dir = base.join(path.trim_start_matches('/'));
        loop {
            let read = |name: &str| -> Option<u64> {
                std::fs::read_to_string(dir.join(name))
                    .ok()?
                    .trim()
                    .parse()
                    .ok()
            };
            // v1 writes "no limit" as a huge number; anything above 2^62 is treated so.
            if let Some(limit) = read(limit_file).filter(|l| *l < 1 << 62) {
                let headroom = limit.saturating_sub(read(usage_file).unwrap_or(0));
                tightest = Some(tightest.map_or(headroom, |t| t.min(headroom)));
            }
            if dir == base || !dir.pop() {
                break;
            }
        }
    }
    tightest
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let proc = dir.path().join("cgroup");
        std::fs::write(&proc, "0::/a/b\n").unwrap();
        assert_eq!(cgroup_headroom(&proc, &root), Some(600));
        std::fs::write(&proc, "0::/\n").unwrap();
        assert_eq!(cgroup_headroom(&proc, &root), Some(5000));
    }
}
