//! Containment by cgroup (EXEC-7, beyond sessions): where vx can create cgroups, each task runs
//! in a cgroup of its own, so every process it starts is found — a daemon that called `setsid`
//! and left the task's session included — and can be stopped through it.
//!
//! How this works: the first task of a vx process asks for the [`Hierarchy`]. Detection reads
//! `/proc/self/cgroup` and `/proc/self/mountinfo` and takes the first that works of: the cgroup
//! v2 hierarchy (pure, or the `unified` mount of a hybrid system), then the v1 `pids` and
//! `freezer` hierarchies. It works when vx may create a directory under its own cgroup and move
//! processes there (root in a container, a delegated systemd scope): vx creates
//! `<own cgroup>/vx-<pid>`, and under it one `t<n>` per task ([`TaskCgroup`]). The task's child
//! is started inside with `clone3(CLONE_INTO_CGROUP)` on v2 (moving a process waits for a grace
//! period of RCU, about 10 ms when moves are sparse), or writes `0` to the cgroup's
//! `cgroup.procs` just before `exec` (`child.rs`), so everything the command starts is born
//! inside. Sandboxed tasks get none: their pid namespace holds them (SBX-9). A task's
//! processes are then its session and process group, as
//! without cgroups, *plus* the cgroup's members; signals go to the process groups of those
//! members, and the final kill is `cgroup.kill` where the kernel has it (else the members'
//! groups are killed, with the cgroup frozen or its forks forbidden first). The guard kills the
//! whole `vx-<pid>` cgroup when vx dies (`guard.rs`); a finished task's empty cgroup is kept
//! for the next spawn (creating and removing one per task costs more than reusing it), and
//! [`cleanup`] stops what is left and removes the cgroups when vx exits. Where nothing works, sessions and process groups alone
//! are used, and [`describe`] says why (`vx info`).

use std::fs;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// Which cgroup hierarchy vx uses, and what it offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// cgroup v2; `kill_file`: the kernel has `cgroup.kill` (Linux 5.14).
    V2 { kill_file: bool },
    /// cgroup v1's `pids` controller: `pids.max = 0` forbids forks while the members go.
    V1Pids,
    /// cgroup v1's `freezer` controller: the members are frozen while they go.
    V1Freezer,
}

/// The hierarchy vx's tasks are contained in.
#[derive(Debug)]
pub struct Hierarchy {
    pub kind: Kind,
    /// Where the hierarchy is mounted.
    pub mount: PathBuf,
    /// `<own cgroup>/vx-<pid>`: the parent of this vx process's task cgroups.
    pub parent: PathBuf,
}

static HIERARCHY: OnceLock<Result<Hierarchy, String>> = OnceLock::new();

/// The hierarchy this vx process contains its tasks in, found (and its `vx-<pid>` cgroup
/// created) on first use; the error says why there is none.
pub fn hierarchy() -> Result<&'static Hierarchy, &'static str> {
    HIERARCHY
        .get_or_init(|| detect(std::process::id()))
        .as_ref()
        .map_err(String::as_str)
}

/// One line for `vx info`: which containment is in use.
pub fn describe() -> String {
    match hierarchy() {
        Ok(h) => {
            let kind = match h.kind {
                Kind::V2 { kill_file: true } => "cgroup v2 with cgroup.kill",
                Kind::V2 { kill_file: false } => "cgroup v2",
                Kind::V1Pids => "cgroup v1 (pids)",
                Kind::V1Freezer => "cgroup v1 (freezer)",
            };
            format!("{kind} at {}", h.mount.display())
        }
        Err(why) => format!("sessions and process groups ({why})"),
    }
}

/// A hierarchy vx could use: where it is mounted, vx's own cgroup in it, and, for v1, which.
struct Candidate {
    mount: PathBuf,
    own: PathBuf,
    v1: Option<Kind>,
}

impl Candidate {
    /// The kind of the hierarchy, seen from a cgroup `dir` below vx's own (the root cgroup has
    /// no `cgroup.kill`; one below it has, on a kernel that knows it).
    fn kind_at(&self, dir: &Path) -> Kind {
        self.v1.unwrap_or(Kind::V2 {
            kill_file: dir.join("cgroup.kill").exists(),
        })
    }
}

/// The hierarchies this process is in, in order of preference: cgroup v2, then v1 `pids`,
/// then v1 `freezer`.
#[cfg(target_os = "linux")]
fn candidates() -> Result<Vec<Candidate>, String> {
    let own = crate::host::own_cgroups().map_err(str::to_string)?;
    let mounts = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let wanted = [
        ("", None),
        ("pids", Some(Kind::V1Pids)),
        ("freezer", Some(Kind::V1Freezer)),
    ];
    Ok(wanted
        .into_iter()
        .filter_map(|(controller, v1)| {
            let path = own_path(own, controller)?;
            let mount = mount_point(&mounts, v1.is_none(), controller)?;
            let own = mount.join(path.trim_start_matches('/'));
            Some(Candidate { mount, own, v1 })
        })
        .collect())
}

#[cfg(not(target_os = "linux"))]
fn candidates() -> Result<Vec<Candidate>, String> {
    Err("cgroups exist only on Linux".to_string())
}

/// Finds a hierarchy where vx may create `vx-<pid>` under its own cgroup.
fn detect(pid: u32) -> Result<Hierarchy, String> {
    let mut reasons = Vec::new();
    for candidate in candidates()? {
        match create_parent(&candidate.own, pid) {
            Ok(parent) => {
                return Ok(Hierarchy {
                    kind: candidate.kind_at(&parent),
                    mount: candidate.mount,
                    parent,
                })
            }
            Err(e) => reasons.push(format!("{}: {e}", candidate.own.display())),
        }
    }
    if reasons.is_empty() {
        Err("no cgroup hierarchy is mounted".to_string())
    } else {
        Err(format!("no writable cgroup: {}", reasons.join("; ")))
    }
}

/// vx's cgroup in the hierarchy of `controller` (`""`: the v2 one).
fn own_path<'a>(own: &'a [crate::host::OwnCgroup], controller: &str) -> Option<&'a str> {
    own.iter()
        .find(|line| {
            if controller.is_empty() {
                line.is_v2()
            } else {
                line.has(controller)
            }
        })
        .map(|line| line.path.as_str())
}

/// Where the hierarchy is mounted with its root at the cgroup root (a mount of a sub-tree, as in
/// some containers, cannot be joined with the path `/proc/self/cgroup` gives).
fn mount_point(mountinfo: &str, v2: bool, controller: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let fields: Vec<&str> = before.split(' ').collect();
        let (root, point) = (fields.get(3)?, fields.get(4)?);
        let mut rest = after.split(' ');
        let fstype = rest.next()?;
        let _source = rest.next()?;
        let options = rest.next().unwrap_or("");
        let wanted = if v2 {
            fstype == "cgroup2"
        } else {
            fstype == "cgroup" && options.split(',').any(|o| o == controller)
        };
        (wanted && *root == "/").then(|| PathBuf::from(point.replace("\\040", " ")))
    })
}

/// Creates `<own>/vx-<pid>` and checks that processes may be moved into it.
fn create_parent(own: &Path, pid: u32) -> io::Result<PathBuf> {
    writable(&own.join("cgroup.procs"))?;
    let parent = own.join(format!("vx-{pid}"));
    match fs::create_dir(&parent) {
        Ok(()) => {}
        // Left by an earlier process with the same pid that was killed with its guard.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    if let Err(e) = writable(&parent.join("cgroup.procs")) {
        let _ = fs::remove_dir(&parent);
        return Err(e);
    }
    Ok(parent)
}

fn writable(path: &Path) -> io::Result<()> {
    nix::unistd::access(path, nix::unistd::AccessFlags::W_OK).map_err(io::Error::from)
}

/// The cgroup of one task.
#[derive(Debug)]
pub(crate) struct TaskCgroup {
    dir: PathBuf,
    kind: Kind,
    /// `cgroup.procs`, open for writing: the child writes `0` to it before `exec` where it was
    /// not born inside.
    procs: OwnedFd,
    /// The cgroup's directory (v2): `clone3` with `CLONE_INTO_CGROUP` starts the child inside,
    /// which moving it costs a grace period of RCU each time (about 10 ms here).
    dir_fd: Option<OwnedFd>,
    /// Held across every look at the cgroup and its release, so a look never acts on a
    /// cgroup already given to a later task.
    use_state: Mutex<Use>,
}

/// Where a task is with its cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    Open,
    /// Something was killed in it (v1 `pids.max` may be 0 now): never given to another task.
    Killed,
    /// Given back to [`FREE`] (empty) for a later task: this task no longer looks at it.
    Released,
}

/// How a child joins its task's cgroup (`child.rs`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Join {
    /// The cgroup's directory, for `clone3`'s `CLONE_INTO_CGROUP` (cgroup v2 only).
    pub dir: Option<RawFd>,
    /// `cgroup.procs`, to write `0` to where `clone3` cannot place the child.
    pub procs: RawFd,
}

/// The directory of a v2 cgroup, open for `CLONE_INTO_CGROUP`.
fn open_dir(dir: &Path, kind: Kind) -> Option<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt;
    if !matches!(kind, Kind::V2 { .. }) {
        return None;
    }
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(dir)
        .ok()
        .map(OwnedFd::from)
}

/// Empty task cgroups of finished tasks, each with its `cgroup.procs` open, taken again by the
/// next spawns: creating and removing a cgroup per task costs more than reusing one.
static FREE: Mutex<Vec<(PathBuf, OwnedFd)>> = Mutex::new(Vec::new());

impl TaskCgroup {
    /// A cgroup for a task, when vx contains tasks in cgroups: an empty one a finished task
    /// gave back, or a new `t<id>`. `None` otherwise (and when creating it fails: the task is
    /// then contained by its session alone).
    pub(crate) fn create(id: u64) -> Option<TaskCgroup> {
        let hierarchy = hierarchy().ok()?;
        let reused = FREE.lock().ok().and_then(|mut free| free.pop());
        if let Some((dir, procs)) = reused {
            return Some(TaskCgroup {
                dir_fd: open_dir(&dir, hierarchy.kind),
                dir,
                kind: hierarchy.kind,
                procs,
                use_state: Mutex::new(Use::Open),
            });
        }
        let dir = hierarchy.parent.join(format!("t{id}"));
        if let Err(e) = fs::create_dir(&dir) {
            if e.kind() != io::ErrorKind::AlreadyExists {
                tracing::debug!(%e, dir = %dir.display(), "no cgroup for the task");
                return None;
            }
        }
        let procs = fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
            .map(OwnedFd::from);
        match procs {
            Ok(procs) => Some(TaskCgroup {
                dir_fd: open_dir(&dir, hierarchy.kind),
                dir,
                kind: hierarchy.kind,
                procs,
                use_state: Mutex::new(Use::Open),
            }),
            Err(e) => {
                tracing::debug!(%e, dir = %dir.display(), "no cgroup for the task");
                let _ = fs::remove_dir(&dir);
                None
            }
        }
    }

    /// How a child joins the cgroup: born inside (v2's directory), or by writing `0` to
    /// `cgroup.procs`.
    pub(crate) fn join(&self) -> Join {
        Join {
            dir: self.dir_fd.as_ref().map(AsRawFd::as_raw_fd),
            procs: self.procs.as_raw_fd(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Use> {
        self.use_state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The pids in the cgroup now (a process that exited is no member, zombie or not); none
    /// once the cgroup was given back.
    pub(crate) fn members(&self) -> Vec<i32> {
        let state = self.lock();
        if *state == Use::Released {
            return Vec::new();
        }
        members(&self.dir)
    }

    /// Sends `signal` to the process group of every member but the groups in `sent` (the
    /// task's own group and session, signalled already: a process must get one signal, not
    /// two), or, for SIGKILL, kills them all ([`TaskCgroup::kill`]).
    pub(crate) fn signal(&self, signal: i32, sent: &[i32]) {
        if signal == libc::SIGKILL {
            self.kill();
            return;
        }
        let state = self.lock();
        if *state == Use::Released {
            return;
        }
        if let Ok(signal) = Signal::try_from(signal) {
            signal_groups(&members(&self.dir), signal, sent);
        }
    }

    /// Kills every member at once: `cgroup.kill`, or the members' groups with forks stopped.
    pub(crate) fn kill(&self) {
        let mut state = self.lock();
        if *state != Use::Released {
            *state = Use::Killed;
            kill_dir(&self.dir, self.kind);
        }
    }

    /// The task is finished with its cgroup: an empty one that was never killed in is given
    /// back for a later task, an empty killed one is removed, and one with a member left (a
    /// task whose handles were all dropped) stays for [`cleanup`].
    pub(crate) fn release(&self) {
        let mut state = self.lock();
        if *state == Use::Released || !members(&self.dir).is_empty() {
            return;
        }
        if *state == Use::Killed {
            *state = Use::Released;
            let _ = fs::remove_dir(&self.dir);
            return;
        }
        let Ok(procs) = self.procs.try_clone() else {
            return;
        };
        *state = Use::Released;
        if let Ok(mut free) = FREE.lock() {
            free.push((self.dir.clone(), procs));
        }
    }
}

fn members(dir: &Path) -> Vec<i32> {
    crate::process_tree::read_small(&dir.join("cgroup.procs"))
        .map(|text| {
            String::from_utf8_lossy(&text)
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Signals the process groups of `pids` but those in `sent`, never a group at or below 1 or
/// vx's own.
fn signal_groups(pids: &[i32], signal: Signal, sent: &[i32]) {
    let group_of = |pid: i32| {
        nix::unistd::getpgid(Some(Pid::from_raw(pid)))
            .ok()
            .map(Pid::as_raw)
    };
    let own = nix::unistd::getpgrp().as_raw();
    for group in groups_to_signal(pids, group_of, own, sent) {
        let _ = killpg(Pid::from_raw(group), signal);
    }
}

/// The process groups of `pids` (`group_of` each), once each, without groups at or below 1,
/// vx's own group `own`, and the groups in `sent`.
fn groups_to_signal(
    pids: &[i32],
    group_of: impl Fn(i32) -> Option<i32>,
    own: i32,
    sent: &[i32],
) -> Vec<i32> {
    let mut groups: Vec<i32> = pids
        .iter()
        .filter_map(|&pid| group_of(pid))
        .filter(|&group| group > 1 && group != own && !sent.contains(&group))
        .collect();
    groups.sort_unstable();
    groups.dedup();
    groups
}

/// Kills everything in the cgroup `dir` (and the cgroups below it, for v2's `cgroup.kill`).
fn kill_dir(dir: &Path, kind: Kind) {
    match kind {
        Kind::V2 { kill_file: true } => {
            let _ = fs::write(dir.join("cgroup.kill"), "1");
        }
        Kind::V2 { kill_file: false } => {
            let _ = fs::write(dir.join("cgroup.freeze"), "1");
            signal_groups(&members(dir), Signal::SIGKILL, &[]);
            let _ = fs::write(dir.join("cgroup.freeze"), "0");
        }
        Kind::V1Pids => {
            let _ = fs::write(dir.join("pids.max"), "0");
            signal_groups(&members(dir), Signal::SIGKILL, &[]);
        }
        Kind::V1Freezer => {
            let _ = fs::write(dir.join("freezer.state"), "FROZEN");
            signal_groups(&members(dir), Signal::SIGKILL, &[]);
            let _ = fs::write(dir.join("freezer.state"), "THAWED");
        }
    }
}

/// The task cgroups under `parent`.
fn children(parent: &Path) -> Vec<PathBuf> {
    fs::read_dir(parent)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// Kills everything left in `parent`'s task cgroups, waiting up to `within` for them to
/// empty, then removes them and `parent`.
fn kill_and_remove(parent: &Path, kind: Kind, within: Duration) {
    let until = Instant::now() + within;
    loop {
        let tasks = children(parent);
        let alive: Vec<&PathBuf> = tasks.iter().filter(|t| !members(t).is_empty()).collect();
        if alive.is_empty() || Instant::now() >= until {
            break;
        }
        match kind {
            Kind::V2 { kill_file: true } => kill_dir(parent, kind),
            _ => alive.iter().for_each(|t| kill_dir(t, kind)),
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for task in children(parent) {
        let _ = fs::remove_dir(task);
    }
    let _ = fs::remove_dir(parent);
}

/// At vx's exit: stops whatever is left in this process's task cgroups (nothing survives vx:
/// a daemon a persistent task left, say) and removes them. Does nothing without cgroups.
pub fn cleanup() {
    if let Ok(mut free) = FREE.lock() {
        free.clear();
    }
    if let Some(Ok(hierarchy)) = HIERARCHY.get() {
        kill_and_remove(
            &hierarchy.parent,
            hierarchy.kind,
            Duration::from_millis(900),
        );
    }
}

/// The guard's part (EXEC-7): vx with pid `vx_pid` died; kill everything in its cgroups and
/// remove them. The guard was started by vx outside any task cgroup, so its own cgroup is
/// vx's, and the same candidates find vx's `vx-<pid>` (none: vx used no cgroup).
pub(crate) fn kill_orphaned(vx_pid: i32, within: Duration) {
    for candidate in candidates().unwrap_or_default() {
        let parent = candidate.own.join(format!("vx-{vx_pid}"));
        if parent.is_dir() {
            kill_and_remove(&parent, candidate.kind_at(&parent), within);
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cgroups_are_read_per_hierarchy() {
        let text = crate::host::parse_own(
            "12:pids:/user.slice/a\n4:memory:/m\n1:name=systemd:/s\n0::/user.slice/u\n",
        );
        assert_eq!(own_path(&text, ""), Some("/user.slice/u"));
        assert_eq!(own_path(&text, "pids"), Some("/user.slice/a"));
        assert_eq!(own_path(&text, "freezer"), None);
        let v1_only = crate::host::parse_own("5:freezer,devices:/f\n");
        assert_eq!(own_path(&v1_only, ""), None);
        assert_eq!(own_path(&v1_only, "freezer"), Some("/f"));
    }

    #[test]
    fn each_group_is_signalled_once_and_never_vx_or_init() {
        // Members 10, 11 (group 10, the task's, signalled already with its session), 20 and
        // 21 (a daemon's group 20), 30 (in vx's group 7), 40 (in group 1), 50 (gone).
        let group_of = |pid: i32| match pid {
            10 | 11 => Some(10),
            20 | 21 => Some(20),
            30 => Some(7),
            40 => Some(1),
            _ => None,
        };
        let pids = [10, 11, 20, 21, 30, 40, 50];
        assert_eq!(groups_to_signal(&pids, group_of, 7, &[10]), vec![20]);
        assert_eq!(groups_to_signal(&pids, group_of, 7, &[]), vec![10, 20]);
    }

    #[test]
    fn mount_points_are_taken_only_at_the_cgroup_root() {
        let info = concat!(
            "30 25 0:26 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw\n",
            "31 25 0:27 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n",
            "32 25 0:28 /docker/x /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer\n",
        );
        assert_eq!(
            mount_point(info, true, ""),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(
            mount_point(info, false, "pids"),
            Some(PathBuf::from("/sys/fs/cgroup/pids"))
        );
        assert_eq!(
            mount_point(info, false, "freezer"),
            None,
            "a sub-tree mount"
        );
    }
}
