//! A task's process tree: which processes belong to a task, whether any of them is alive, and
//! how to signal all of them.
//!
//! A task is the leader of its own session and process group, so its pid is also its process
//! group id and its session id. Its processes are that group plus, on Linux, every process whose
//! session id is the task's session: a descendant that moved to another process group (a shell
//! with job control, `setpgid`) is still found. Membership is read from `/proc/<pid>/stat` when
//! `/proc` belongs to vx's pid namespace; elsewhere (macOS, a foreign `/proc`) `kill(-pgid, 0)`
//! is the only probe and the session is not searched. Zombies never count as alive: vx reaps its
//! own children and adopted orphans, but a zombie whose parent is still alive stays in the table
//! until that parent waits for it, and it can no longer run anything.
//!
//! Start at [`parse_stat`] and [`live_members`], the pure helpers; `signal_tree` and
//! `count_or_proof` are what the supervisor calls.

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// The fields of `/proc/<pid>/stat` that process supervision needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    /// The executable name as the kernel reports it, at most 15 bytes, any bytes (spaces and
    /// `)` included).
    pub comm: Vec<u8>,
    /// The state letter: `R`, `S`, `D`, `Z` (zombie), `T`, `X`, …
    pub state: u8,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
}

impl ProcStat {
    /// A zombie has exited and only waits to be reaped; it cannot run or hold anything open.
    pub fn is_zombie(&self) -> bool {
        matches!(self.state, b'Z' | b'X')
    }
}

/// Parses the contents of `/proc/<pid>/stat`.
///
/// The command name sits between the first `(` and the *last* `)`, because it may itself
/// contain spaces and parentheses (`sleep) 1 (`), so splitting on whitespace is wrong. Returns
/// `None` for anything that does not have the expected shape.
pub fn parse_stat(contents: &[u8]) -> Option<ProcStat> {
    let open = contents.iter().position(|&b| b == b'(')?;
    let close = contents.iter().rposition(|&b| b == b')')?;
    if close < open {
        return None;
    }
    let pid = ascii_int(contents[..open].trim_ascii())?;
    let comm = contents[open + 1..close].to_vec();
    let mut fields = contents[close + 1..]
        .split(|b| b.is_ascii_whitespace())
        .filter(|field| !field.is_empty());
    let state = match fields.next()? {
        [letter] => *letter,
        _ => return None,
    };
    let ppid = ascii_int(fields.next()?)?;
    let pgrp = ascii_int(fields.next()?)?;
    let session = ascii_int(fields.next()?)?;
    Some(ProcStat {
        pid,
        comm,
        state,
        ppid,
        pgrp,
        session,
    })
}

fn ascii_int(bytes: &[u8]) -> Option<i32> {
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// The pids of the processes in `table` that belong to the task whose process group is `pgid`
/// and whose session is `sid`, leaving out zombies, pid 1 and below, and vx itself.
pub fn live_members<'a>(
    table: impl IntoIterator<Item = &'a ProcStat>,
    pgid: i32,
    sid: i32,
) -> Vec<&'a ProcStat> {
    let own = std::process::id() as i32;
    table
        .into_iter()
        .filter(|p| (p.pgrp == pgid || p.session == sid) && !p.is_zombie())
        .filter(|p| p.pid > 1 && p.pid != own)
        .collect()
}

/// The whole of a small kernel file (`/proc/<pid>/stat`, a `children` list, `cgroup.procs`):
/// open, read to the end, close. `std::fs::read` would first `fstat` the file to size its
/// buffer, which for these files says 0 and costs a system call; the supervisor reads a few of
/// them for every task.
pub(crate) fn read_small(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut contents = Vec::with_capacity(512);
    let mut buf = [0u8; 4096];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return Ok(contents),
            Ok(n) => contents.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reads every process's stat line. Processes that exit during the scan are skipped.
pub fn scan_proc() -> Vec<ProcStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().as_encoded_bytes()[0].is_ascii_digit())
        .filter_map(|entry| read_small(&entry.path().join("stat")).ok())
        .filter_map(|contents| parse_stat(&contents))
        .collect()
}

/// Whether `/proc` describes vx's own pid namespace, so that its pids, groups and sessions are
/// the ones vx signals. Inside a container with the host's `/proc` mounted, they are not.
pub(crate) fn proc_is_usable() -> bool {
    static USABLE: OnceLock<bool> = OnceLock::new();
    *USABLE.get_or_init(|| {
        cfg!(target_os = "linux")
            && std::fs::read_link("/proc/self")
                .ok()
                .and_then(|target| target.to_str()?.parse::<u32>().ok())
                == Some(std::process::id())
    })
}

/// Set once vx is a child subreaper, which the fast emptiness check relies on.
pub(crate) static IS_SUBREAPER: AtomicBool = AtomicBool::new(false);

/// What [`count_or_proof`] found: a proof that the task's group and session are empty, or a count
/// (which may be 0) taken from a scan of `/proc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Liveness {
    /// The group is empty and no child of vx is in the session: nothing of the task is alive,
    /// and nothing can join it again (a group or session gains members only through a live
    /// member), so the answer holds from now on.
    ProvenEmpty,
    /// Counted by a scan, which is not atomic: a member that forks and exits during it can be
    /// missed, so a 0 here is worth asking again later.
    Counted(usize),
}

/// How many processes of the task (group `leader`, session `leader`) are alive, or the proof
/// that none is.
///
/// Without a usable `/proc` the count is 1 when the process group still has a member and 0
/// otherwise: `kill(-pgid, 0)` tells only whether the group is empty.
/// `spawner` is the vx thread that forked the leader, when known.
pub(crate) fn count_or_proof(leader: i32, spawner: Option<i32>) -> Liveness {
    if !proc_is_usable() {
        return Liveness::Counted(usize::from(!group_is_empty(leader)));
    }
    // Scanning all of /proc costs a few microseconds per process on the machine; most tasks
    // leave nothing, and proving that is much cheaper.
    if group_is_empty(leader) && no_session_member_among_children(leader, spawner) {
        return Liveness::ProvenEmpty;
    }
    Liveness::Counted(live_members(&scan_proc(), leader, leader).len())
}

fn group_is_empty(pgid: i32) -> bool {
    // EPERM means a member exists that vx may not signal (it changed its credentials).
    matches!(killpg(Pid::from_raw(pgid), None), Err(Errno::ESRCH))
}

/// Whether, the task's process group being empty, its session is empty too, judged from vx's
/// direct children alone. `false` means "not proven": the caller scans `/proc`.
///
/// Why this suffices: a process of the session descends from the task's leader through
/// processes of the session (a fork keeps the session). Walking up from a live member, the
/// first ancestor that is not alive-and-in-the-session is either gone, so the member's branch
/// was orphaned and, vx being a subreaper, reparented to vx, whose main thread adopts it, or the
/// thread that forked the leader, for a child the leader made with `CLONE_PARENT` (see
/// [`own_children`]). So with the group empty, some live member is a child of the spawner or
/// of vx's main thread. (A member whose parent is alive but left the session with `setsid` is
/// not found this way; the task's cgroup still holds it.) See [`proven_by_children`] for how
/// the children are read.
fn no_session_member_among_children(sid: i32, spawner: Option<i32>) -> bool {
    if !IS_SUBREAPER.load(Ordering::Relaxed) {
        return false;
    }
    let Some(spawner) = spawner else {
        return false;
    };
    proven_by_children(
        sid,
        || own_children(spawner),
        |child| {
            let stat = read_small(std::path::Path::new(&format!("/proc/{child}/stat")));
            stat.ok()
                .and_then(|contents| parse_stat(&contents))
                .map(|stat| stat.session)
        },
    )
}

/// How many times the children are listed before the proof gives up (other tasks keep starting
/// children meanwhile; each listing that shows new ones costs one more).
const CHILD_LISTINGS: usize = 4;

/// The proof of [`no_session_member_among_children`] over `list` (vx's children, `None` when
/// unknown) and `session_of` (a child's session, `None` once it is gone): every child listed is
/// read, and the children are listed again until a listing holds none that was not read — so
/// a member whose parent exits meanwhile, reparented to vx, is read too. A child of another
/// session (another task's leader, started meanwhile) only costs another listing; one of the
/// session (a zombie included: its children may be on their way to vx) defeats the proof, as
/// does a listing that keeps changing.
fn proven_by_children(
    sid: i32,
    mut list: impl FnMut() -> Option<Vec<i32>>,
    mut session_of: impl FnMut(i32) -> Option<i32>,
) -> bool {
    let mut read: std::collections::HashSet<i32> = std::collections::HashSet::new();
    for listing in 0..CHILD_LISTINGS {
        let Some(children) = list() else {
            return false;
        };
        let new: Vec<i32> = children.into_iter().filter(|c| !read.contains(c)).collect();
        if new.is_empty() && listing > 0 {
            return true;
        }
        for child in new {
            if session_of(child) == Some(sid) {
                return false;
            }
            read.insert(child);
        }
    }
    false
}

/// The children of vx that can belong to a task's session: those of the thread that forked its
/// leader (`spawner`) and those of vx's main thread. A process is on the `children` list of
/// the thread that forked it; one the leader forked with `CLONE_PARENT` is the spawner's child;
/// an orphan is adopted by a subreaper's first thread that is not exiting, the main thread
/// (`find_new_reaper` and `find_alive_thread` in the kernel's `exit.c`), and so are the children
/// of a vx thread that exits. The spawner's list is read first: a child that moves meanwhile
/// moves to the main thread, read second. The other threads' lists hold only other tasks'
/// leaders and vx's own helpers, each in a session of its own: listing every thread cost a
/// `/proc` read per thread of vx for every task. `None` when the kernel does not provide the
/// lists.
fn own_children(spawner: i32) -> Option<Vec<i32>> {
    let main = std::process::id() as i32;
    let threads: &[i32] = if spawner == main {
        &[main]
    } else {
        &[spawner, main]
    };
    let mut children = Vec::new();
    for &thread in threads {
        let list = read_small(std::path::Path::new(&format!(
            "/proc/self/task/{thread}/children"
        )));
        match list {
            Ok(list) => children.extend(
                String::from_utf8_lossy(&list)
                    .split_whitespace()
                    .filter_map(|pid| pid.parse::<i32>().ok()),
            ),
            // A thread that exited has no children left: they moved to the main thread.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && thread != main => {}
            Err(_) => return None,
        }
    }
    Some(children)
}

/// Sends `signal` (a raw signal number) to the task's process group and, with a usable `/proc`,
/// to every other process group that has a member in the task's session.
///
/// Signals always go to whole groups: a process that a member forks between the scan and the
/// signal joins its parent's group and is signalled too. Groups at or below pid 1, and vx's own
/// group, are never signalled. Returns the groups signalled.
pub(crate) fn signal_tree(leader: i32, signal: i32) -> Vec<i32> {
    let Ok(signal) = Signal::try_from(signal) else {
        tracing::warn!(signal, "not a signal number; nothing sent");
        return Vec::new();
    };
    let mut groups = vec![leader];
    if proc_is_usable() {
        for member in live_members(&scan_proc(), leader, leader) {
            if !groups.contains(&member.pgrp) {
                groups.push(member.pgrp);
            }
        }
    }
    let own_group = nix::unistd::getpgrp().as_raw();
    groups.retain(|&group| group > 1 && group != own_group);
    for &group in &groups {
        match killpg(Pid::from_raw(group), signal) {
            Ok(()) | Err(Errno::ESRCH) => {}
            Err(err) => tracing::debug!(group, ?signal, %err, "could not signal process group"),
        }
    }
    groups
}

/// Sets SIGTTOU to ignored for the rest of vx's life: while an interactive task holds the
/// terminal's foreground, vx is a background group, and with `stty tostop` its own writes would
/// otherwise stop it. Children get default dispositions back before `exec` (EXEC-1).
pub fn ignore_sigttou() {
    // SAFETY: SIG_IGN runs no code of ours in a signal handler.
    let result =
        unsafe { nix::sys::signal::signal(Signal::SIGTTOU, nix::sys::signal::SigHandler::SigIgn) };
    if let Err(err) = result {
        tracing::debug!(%err, "could not ignore SIGTTOU");
    }
}

/// Whether vx owns a terminal an interactive task may borrow (EXEC-14): stdin and stdout are
/// terminals and vx's process group is stdin's foreground group. A vx started in the background
/// (`vx run login &`) does not own it, and handing the terminal over from there would take it
/// from the shell.
pub fn owns_terminal() -> bool {
    use std::io::IsTerminal;
    let stdin = std::io::stdin();
    stdin.is_terminal()
        && std::io::stdout().is_terminal()
        && nix::unistd::tcgetpgrp(&stdin).is_ok_and(|group| group == nix::unistd::getpgrp())
}

/// Whether vx may draw on its stdout terminal (UI-6's live region): stdout is a terminal and
/// vx's process group is its foreground group (a background `vx run … &` must not move the
/// cursor of the shell's terminal).
pub fn stdout_is_foreground_terminal() -> bool {
    use std::io::IsTerminal;
    let stdout = std::io::stdout();
    stdout.is_terminal()
        && nix::unistd::tcgetpgrp(&stdout).is_ok_and(|group| group == nix::unistd::getpgrp())
}

nix::ioctl_read_bad!(window_size, nix::libc::TIOCGWINSZ, nix::libc::winsize);

/// The columns and rows of the terminal on stdout; `None` when stdout is not a terminal or the
/// terminal does not say (a size of 0).
pub fn terminal_size() -> Option<(u16, u16)> {
    let mut size = nix::libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` into the struct we pass, which lives across the
    // call; on a descriptor that is not a terminal it fails with ENOTTY and writes nothing.
    let result = unsafe { window_size(std::io::stdout().as_raw_fd(), &mut size) };
    match result {
        Ok(_) if size.ws_col > 0 && size.ws_row > 0 => Some((size.ws_col, size.ws_row)),
        _ => None,
    }
}

/// Makes vx's own process group the terminal's foreground again once an interactive task's
/// leader has exited (EXEC-1). vx is a background group at that moment, so SIGTTOU is ignored
/// around the call; nothing happens when stdin is not a terminal.
pub(crate) fn take_foreground() {
    give_foreground(nix::unistd::getpgrp().as_raw());
}

/// EXEC-14: the interactive task whose process group is `task` was stopped in the terminal's
/// foreground (Ctrl-Z). vx takes the terminal back and stops itself with SIGTSTP, as the task
/// was stopped, so the shell that started vx sees a stopped job and shows its prompt.
/// When the shell continues vx (`fg`), this returns: the terminal goes back to the task, and
/// the task is continued. In a job nobody can continue (an orphaned process group) the kernel
/// discards the SIGTSTP, and the task is continued at once.
pub(crate) fn pass_on_stop(task: i32) {
    take_foreground();
    // Directed at this thread, the stop takes effect before `raise` returns, and the process
    // stays stopped until it is continued: a stop sent to the whole process group could be
    // taken by another thread while this one went on to continue the task. (An interactive
    // task needs vx's stdin and stdout on the terminal, so vx is its job's only process.)
    if let Err(err) = nix::sys::signal::raise(Signal::SIGTSTP) {
        tracing::debug!(%err, "could not stop vx's own job");
    }
    // Continued: the task gets the terminal back, then its SIGCONT.
    give_foreground(task);
    if task > 1 {
        let _ = killpg(Pid::from_raw(task), Signal::SIGCONT);
    }
}

/// Makes the process group `group` the terminal's foreground (vx is a background group at that
/// moment, so SIGTTOU is ignored around the call).
fn give_foreground(group: i32) {
    // SAFETY: installing SIG_IGN and then restoring the previous disposition runs no code of
    // ours in a signal handler.
    let previous =
        unsafe { nix::sys::signal::signal(Signal::SIGTTOU, nix::sys::signal::SigHandler::SigIgn) };
    let stdin = std::io::stdin();
    if let Err(err) = nix::unistd::tcsetpgrp(&stdin, Pid::from_raw(group)) {
        tracing::debug!(%err, "could not give the terminal's foreground back to the task");
    }
    if let Ok(previous) = previous {
        // SAFETY: as above; `previous` is the disposition this call replaced.
        unsafe {
            let _ = nix::sys::signal::signal(Signal::SIGTTOU, previous);
        }
    }
}

/// A stat line's fields for tests: a process `sh` whose parent is init.
#[cfg(test)]
pub(crate) fn stat(pid: i32, state: u8, pgrp: i32, session: i32) -> ProcStat {
    ProcStat {
        pid,
        comm: b"sh".to_vec(),
        state,
        ppid: 1,
        pgrp,
        session,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `proven_by_children` over scripted listings: each call of `list` takes the next one.
    fn proof(sid: i32, listings: &[&[i32]], sessions: &[(i32, i32)]) -> (bool, usize) {
        let mut calls = 0;
        let proven = proven_by_children(
            sid,
            || {
                calls += 1;
                listings.get(calls - 1).map(|l| l.to_vec())
            },
            |child| sessions.iter().find(|(c, _)| *c == child).map(|(_, s)| *s),
        );
        (proven, calls)
    }

    #[test]
    fn children_of_other_sessions_prove_the_session_empty_after_a_steady_listing() {
        // Two listings that agree: proven.
        assert_eq!(
            proof(7, &[&[10, 11], &[11, 10]], &[(10, 10), (11, 11)]),
            (true, 2)
        );
        // No children at all, twice.
        assert_eq!(proof(7, &[&[], &[]], &[]), (true, 2));
        // Another task's leader started meanwhile: read, listed once more, proven.
        assert_eq!(
            proof(7, &[&[10], &[10, 12], &[10, 12]], &[(10, 10), (12, 12)]),
            (true, 3)
        );
        // A child that is gone by the time it is read counts as nothing.
        assert_eq!(proof(7, &[&[13], &[13]], &[]), (true, 2));
    }

    #[test]
    fn a_member_of_the_session_among_the_children_defeats_the_proof() {
        // Already there.
        assert!(!proof(7, &[&[10, 20]], &[(10, 10), (20, 7)]).0);
        // Reparented to vx between two listings (its parent exited meanwhile).
        assert!(!proof(7, &[&[10], &[10, 20]], &[(10, 10), (20, 7)]).0);
        // Children unknown.
        assert!(!proof(7, &[], &[]).0);
        // A listing that never settles gives up.
        let busy: [&[i32]; 5] = [&[1], &[1, 2], &[1, 2, 3], &[1, 2, 3, 4], &[1, 2, 3, 4, 5]];
        let sessions = [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5)];
        assert_eq!(proof(7, &busy, &sessions), (false, CHILD_LISTINGS));
    }

    #[test]
    fn parses_a_plain_stat_line() {
        let line = b"4242 (sleep) S 4241 4240 4239 0 -1 4194304 95 0 0 0 0 0 0 0 20 0 1 0\n";
        assert_eq!(
            parse_stat(line),
            Some(ProcStat {
                pid: 4242,
                comm: b"sleep".to_vec(),
                state: b'S',
                ppid: 4241,
                pgrp: 4240,
                session: 4239,
            })
        );
    }

    #[test]
    fn parses_a_command_name_with_spaces_and_parentheses() {
        let parsed = parse_stat(b"17 (a) b (c)) Z 1 17 17 0 -1").unwrap();
        assert_eq!(parsed.comm, b"a) b (c)".to_vec());
        assert_eq!((parsed.state, parsed.ppid, parsed.pgrp), (b'Z', 1, 17));
        assert!(parsed.is_zombie());
    }

    #[test]
    fn parses_a_command_name_that_is_not_utf8() {
        let parsed = parse_stat(b"9 (\xff\xfe) R 2 3 4").unwrap();
        assert_eq!(parsed.comm, vec![0xff, 0xfe]);
        assert_eq!(parsed.session, 4);
    }

    #[test]
    fn rejects_malformed_stat_lines() {
        for line in [
            &b""[..],
            b"12 sleep S 1 2 3",
            b"12 (sleep S 1 2 3",
            b"x (sleep) S 1 2 3",
            b"12 (sleep) S 1 2",
            b"12 (sleep) SS 1 2 3",
            b"12 )sleep( S 1 2 3",
        ] {
            assert_eq!(parse_stat(line), None, "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn members_are_the_group_and_the_session_without_zombies_or_init() {
        let table = [
            stat(100, b'S', 100, 100), // the leader
            stat(101, b'R', 100, 100), // a child in the group
            stat(102, b'S', 102, 100), // moved to its own group, same session
            stat(103, b'Z', 100, 100), // a zombie
            stat(104, b'S', 104, 104), // someone else
            stat(1, b'S', 100, 100),   // init is never a member
        ];
        let pids: Vec<i32> = live_members(&table, 100, 100)
            .iter()
            .map(|p| p.pid)
            .collect();
        assert_eq!(pids, vec![100, 101, 102]);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn scanning_proc_finds_this_process() {
        let own = std::process::id() as i32;
        let table = scan_proc();
        let me = table.iter().find(|p| p.pid == own).expect("own stat line");
        assert_eq!(me.pgrp, nix::unistd::getpgrp().as_raw());
        assert!(proc_is_usable());
    }

    #[test]
    fn small_files_are_read_whole() {
        // Longer than one read's buffer, and a kernel file whose size `stat` gives as 0.
        let dir = tempfile::tempdir().unwrap();
        let long = dir.path().join("long");
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&long, &bytes).unwrap();
        assert_eq!(read_small(&long).unwrap(), bytes);
        #[cfg(target_os = "linux")]
        {
            let stat = read_small(std::path::Path::new("/proc/self/stat")).unwrap();
            assert_eq!(
                parse_stat(&stat).map(|s| s.pid),
                Some(std::process::id() as i32)
            );
        }
        assert!(read_small(&dir.path().join("missing")).is_err());
    }

    /// Kills and reaps a leftover of a test, also when an assertion failed first.
    #[cfg(target_os = "linux")]
    struct Leftover(i32);

    #[cfg(target_os = "linux")]
    impl Drop for Leftover {
        fn drop(&mut self) {
            let _ = nix::sys::signal::kill(Pid::from_raw(self.0), Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(Pid::from_raw(self.0), None);
        }
    }

    /// The pids on one thread's `children` list.
    #[cfg(target_os = "linux")]
    fn children_of_thread(tid: i32) -> Vec<i32> {
        let list = read_small(std::path::Path::new(&format!(
            "/proc/self/task/{tid}/children"
        )))
        .expect("the kernel lists children (CONFIG_PROC_CHILDREN)");
        String::from_utf8_lossy(&list)
            .split_whitespace()
            .map(|pid| pid.parse().unwrap())
            .collect()
    }

    /// This test thread as a task's spawner, in a subreaper: tests run on threads other than the
    /// main one, as a task may be spawned from any thread of vx.
    #[cfg(target_os = "linux")]
    fn become_spawner() -> i32 {
        nix::sys::prctl::set_child_subreaper(true).expect("become a subreaper");
        IS_SUBREAPER.store(true, Ordering::Relaxed);
        let tid = nix::unistd::gettid().as_raw();
        assert_ne!(
            tid as u32,
            std::process::id(),
            "the test must run on a thread other than the main one"
        );
        tid
    }

    /// A task's orphan goes to vx's main thread even when its leader was forked by another
    /// thread: an orphan of the session in a process group of its own, the leader reaped, is
    /// counted, not proven gone.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_orphan_of_the_session_is_adopted_by_the_main_thread_and_defeats_the_proof() {
        use std::io::Read;
        let spawner = become_spawner();
        // `setsid` in a process that leads no group calls setsid(2) and execs: the pid stays.
        // bash's job control (`set -m`, no terminal needed) gives `sleep` a group of its own.
        let mut leader = std::process::Command::new("setsid")
            .args([
                "bash",
                "-c",
                "set -m; sleep 30 </dev/null >/dev/null 2>&1 & echo $!",
            ])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("setsid and bash are installed");
        let mut said = String::new();
        leader
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut said)
            .unwrap();
        let orphan: i32 = said.trim().parse().expect("bash printed the pid of sleep");
        let _cleanup = Leftover(orphan);
        assert!(leader.wait().unwrap().success());
        let sid = leader.id() as i32;
        let stat = read_small(std::path::Path::new(&format!("/proc/{orphan}/stat")));
        let stat = parse_stat(&stat.unwrap()).unwrap();
        assert_eq!(stat.session, sid);
        assert_ne!(stat.pgrp, sid);
        assert!(children_of_thread(std::process::id() as i32).contains(&orphan));
        assert!(!children_of_thread(spawner).contains(&orphan));
        assert!(group_is_empty(sid));
        assert!(matches!(
            count_or_proof(sid, Some(spawner)),
            Liveness::Counted(1)
        ));
    }

    /// A child the leader makes with `CLONE_PARENT` is the spawner's child, not the main
    /// thread's: the proof reads the spawner's list too, and counts it.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_clone_parent_child_of_the_leader_is_the_spawners_and_defeats_the_proof() {
        use std::os::unix::process::CommandExt;
        let spawner = become_spawner();
        let sleep = std::ffi::CString::new("/bin/sleep").unwrap();
        let arg = std::ffi::CString::new("30").unwrap();
        let mut command = std::process::Command::new("true");
        // SAFETY: between fork and exec the closure calls only async-signal-safe functions
        // (setsid, clone without CLONE_VM, setpgid, execv, _exit) on values prepared before.
        unsafe {
            command.pre_exec(move || {
                libc::setsid();
                let flags = (libc::CLONE_PARENT | libc::SIGCHLD) as libc::c_ulong;
                let child = libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize);
                if child == 0 {
                    libc::setpgid(0, 0);
                    let argv = [sleep.as_ptr(), arg.as_ptr(), std::ptr::null()];
                    libc::execv(sleep.as_ptr(), argv.as_ptr());
                    libc::_exit(127);
                }
                Ok(())
            });
        }
        let mut leader = command.spawn().expect("`true` and `sleep` are installed");
        let sid = leader.id() as i32;
        assert!(leader.wait().unwrap().success());
        // The clone moves to a group of its own right after it is made; wait until it has.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let members = loop {
            let members: Vec<ProcStat> = scan_proc()
                .into_iter()
                .filter(|p| p.session == sid)
                .collect();
            if members.iter().all(|m| m.pgrp != sid) || std::time::Instant::now() > deadline {
                break members;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert_eq!(members.len(), 1, "the clone is the session's one member");
        let _cleanup = Leftover(members[0].pid);
        assert_ne!(members[0].pgrp, sid);
        assert!(children_of_thread(spawner).contains(&members[0].pid));
        assert!(group_is_empty(sid));
        assert!(matches!(
            count_or_proof(sid, Some(spawner)),
            Liveness::Counted(1)
        ));
    }
}
