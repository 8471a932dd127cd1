//! Process-test helpers: where the `vx-test-child` binary is, unique argv markers, and
//! survivor checks (TEST-2).
//!
//! A process test gives every process it creates a marker that no other process on the
//! machine has (`vx-test-child --marker M …` passes it on to every copy of itself), then asks
//! [`wait_until_no_marker`] whether any process still carries it. That checks "nothing
//! survived" by pid, as an event wait with a deadline, never by sleeping and hoping.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The path of the built `vx-test-child` program, next to the running test executable
/// (`target/<profile>/deps/<test>` → `target/<profile>/vx-test-child`).
///
/// # Panics
/// When the program has not been built: Cargo builds a package's binaries only for that
/// package's own tests, so a test of another package needs
/// `cargo build -p vx-test-support --bin vx-test-child` first (or `cargo test --workspace`).
pub fn test_child_path() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let name = format!("vx-test-child{}", std::env::consts::EXE_SUFFIX);
    let candidates: Vec<PathBuf> = exe
        .ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join(&name))
        .collect();
    candidates
        .iter()
        .find(|path| path.is_file())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "`vx-test-child` is not built (looked for {candidates:?}); \
                 run `cargo build -p vx-test-support --bin vx-test-child` first"
            )
        })
}

/// A marker no other process has: the prefix, this test process's pid, a counter and the
/// clock, joined by `-`. Only letters, digits, `-` and `_` (from the prefix) appear, so it is
/// safe in argv and in `sh -c` scripts unquoted.
pub fn unique_marker(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos());
    format!(
        "{prefix}-{}-{}-{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The pids of live (non-zombie) processes whose argv contains `marker`, this process aside.
pub fn pids_with_marker(marker: &str) -> Vec<i32> {
    let own = std::process::id() as i32;
    let mut pids: Vec<i32> = processes()
        .into_iter()
        .filter(|(pid, zombie, cmdline)| {
            *pid != own && !zombie && contains(cmdline, marker.as_bytes())
        })
        .map(|(pid, _, _)| pid)
        .collect();
    pids.sort_unstable();
    pids
}

/// Waits until no live process carries `marker`, checking every 10 ms; returns the survivors
/// if some are still there after `within`.
pub fn wait_until_no_marker(marker: &str, within: Duration) -> Result<(), Vec<i32>> {
    let deadline = Instant::now() + within;
    loop {
        let survivors = pids_with_marker(marker);
        if survivors.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(survivors);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty()
        || haystack
            .windows(needle.len())
            .any(|window| window == needle)
}

/// (pid, is a zombie, argv joined by NUL) for every process.
#[cfg(target_os = "linux")]
fn processes() -> Vec<(i32, bool, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let stat = std::fs::read(entry.path().join("stat")).ok()?;
            // The state letter follows the last `)` (the command name may contain one).
            let after_name = stat.iter().rposition(|&b| b == b')')? + 2;
            let zombie = matches!(stat.get(after_name), Some(b'Z' | b'X'));
            Some((pid, zombie, cmdline))
        })
        .collect()
}

/// (pid, is a zombie, argv joined by spaces) for every process, from `ps`.
#[cfg(not(target_os = "linux"))]
fn processes() -> Vec<(i32, bool, Vec<u8>)> {
    let Ok(output) = std::process::Command::new("ps")
        .args(["-axo", "pid=,stat=,command="])
        .output()
    else {
        return Vec::new();
    };
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let pid = words.next()?.parse().ok()?;
            let zombie = words.next()?.starts_with('Z');
            let command = words.collect::<Vec<_>>().join(" ");
            Some((pid, zombie, command.into_bytes()))
        })
        .collect()
}

/// bubblewrap's absolute path when it can create the sandbox's namespaces here; otherwise
/// `None`, after printing why and how to install it, so the calling test can skip. Under `CI`
/// (where the test command installs bubblewrap) a missing or unusable one fails the test
/// instead (TEST-3).
pub fn bwrap_or_skip() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("bwrap"))
            .find(|candidate| candidate.is_file())
    });
    let usable = found.filter(|bwrap| {
        std::process::Command::new(bwrap)
            .args(["--ro-bind", "/", "/", "--unshare-all", "true"])
            .status()
            .is_ok_and(|s| s.success())
    });
    if usable.is_none() {
        let why = "bubblewrap is missing or cannot create namespaces here; install it with `apt-get install bubblewrap`";
        assert!(!crate::tools::tools_required(), "{why}");
        eprintln!("skipped: {why}");
    }
    usable
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_unique_and_shell_safe() {
        let a = unique_marker("vxt");
        let b = unique_marker("vxt");
        assert_ne!(a, b);
        assert!(a.starts_with("vxt-"));
        assert!(a.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    }

    #[test]
    fn no_process_carries_a_fresh_marker() {
        let marker = unique_marker("nobody");
        assert_eq!(pids_with_marker(&marker), Vec::<i32>::new());
        assert_eq!(wait_until_no_marker(&marker, Duration::ZERO), Ok(()));
    }
}
