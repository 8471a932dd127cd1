//! The guard of EXEC-7: a helper process that kills every task's processes if vx dies, by any
//! means, SIGKILL and the OOM killer included.
//!
//! How this works: the first spawn of a process that enabled the guard ([`enable`]) starts one
//! helper — vx itself re-executed with the hidden argument [`GUARD_ARG`], in a session of its
//! own, stdin the read end of a pipe whose write end only vx holds (close-on-exec, so no task
//! inherits it). Every child vx forks writes a *register* record with its own pid on that pipe
//! in the pre-exec hook, before `exec` (`child.rs`), so there is no moment when a task runs
//! unregistered. vx writes a *done* record as soon as no process of the task is left (the
//! leader exited and what it left was stopped; `task.rs`, `release_guard`) — from then on the
//! pid may be reused, and the guard must not kill a stranger — or, at the latest, when the
//! task's shared state is dropped; and a *clean* record just before it exits normally
//! ([`shutdown`]).
//!
//! The helper ([`serve`]) only reads. When the pipe reaches end-of-file without a clean record
//! — vx died, and the kernel closed its descriptors — it kills everything in vx's task cgroups
//! (`cgroup.rs`; vx's pid comes on the guard's command line), SIGKILLs every registered process
//! group and, where `/proc` is usable, every process in the registered sessions (for an
//! interactive task, only its group), repeats until none is left or a second has passed,
//! removes vx's sandbox scratch directories, and exits.
//!
//! Records are 8 bytes (a tag and a pid), written with one `write(2)` each: pipe writes of at
//! most `PIPE_BUF` bytes are atomic, so the records of concurrent writers never interleave.
//! Registrations are counted per pid, so a done record for a pid that a later task already
//! reuses cannot unregister the later task.
//!
//! Residual limits (documented in docs/running.md): a process that calls `setsid` itself leaves
//! the task's session and is not found; if the helper itself is killed, vx goes on unguarded
//! (children whose registration write fails still run).

use std::collections::HashMap;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use crate::child::{pipe, Prepared};
use crate::process_tree;

/// The hidden first argument that makes the vx binary run [`serve`] instead of the CLI.
pub const GUARD_ARG: &str = "__vx_guard";

/// How long the guard keeps killing after vx died: EXEC-7 promises one second.
const KILL_FOR: Duration = Duration::from_millis(900);
const RECHECK: Duration = Duration::from_millis(10);

const RECORD: usize = 8;

/// What a record says about its pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Tag {
    /// A child leading its own session (every task, probe and git command).
    Session = b'S',
    /// A child leading only a process group in vx's session (an interactive task, EXEC-1).
    Group = b'G',
    /// vx is finished with this pid.
    Done = b'D',
    /// vx is exiting normally; kill nothing.
    Clean = b'C',
}

impl Tag {
    fn from_byte(byte: u8) -> Option<Tag> {
        [Tag::Session, Tag::Group, Tag::Done, Tag::Clean]
            .into_iter()
            .find(|tag| *tag as u8 == byte)
    }
}

/// Encodes a record without allocating: the child side calls this between `fork` and `exec`.
pub(crate) fn record(tag: Tag, pid: i32) -> [u8; RECORD] {
    let mut bytes = [0u8; RECORD];
    bytes[0] = tag as u8;
    bytes[4..].copy_from_slice(&pid.to_le_bytes());
    bytes
}

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
static GUARD: OnceLock<Option<OwnedFd>> = OnceLock::new();

/// Turns the guard on for this process: `program` is the vx binary, which must call [`serve`]
/// when its first argument is [`GUARD_ARG`]. Without this call (library tests) no guard runs.
pub fn enable(program: PathBuf) {
    let _ = PROGRAM.set(program);
}

/// The write end of the guard pipe, starting the guard on first use; `None` when the guard is
/// not enabled or could not be started (vx then warns once and runs unguarded).
pub(crate) fn write_fd() -> Option<RawFd> {
    GUARD
        .get_or_init(|| {
            let program = PROGRAM.get()?;
            match start(program) {
                Ok(write) => Some(write),
                Err(err) => {
                    tracing::warn!(
                        %err,
                        "could not start vx's process guard; if vx is killed, the processes it started may outlive it"
                    );
                    None
                }
            }
        })
        .as_ref()
        .map(AsRawFd::as_raw_fd)
}

/// Forks the guard. Once forked it holds the pipe's read end, so from then on vx's death is
/// seen even if it happens before the guard has executed. Waiting for the `exec` itself would
/// only delay the first spawn, so a thread of its own waits and warns if it failed (then
/// registrations fail with EPIPE and the tasks run unguarded).
fn start(program: &std::path::Path) -> io::Result<OwnedFd> {
    let (read, write) = pipe()?;
    let prepared = Prepared::guard(program, read)?;
    // The reaper reaps the guard like an adopted orphan when it exits: its pid is no task's.
    prepared.fork()?;
    let waited = std::thread::Builder::new()
        .name("vx-guard-start".into())
        .spawn(move || {
            if let (Err(err), _) = prepared.exec_result() {
                tracing::warn!(
                    %err,
                    "could not start vx's process guard; if vx is killed, the processes it started may outlive it"
                );
            }
        });
    if let Err(err) = waited {
        tracing::debug!(%err, "no thread to wait for the guard's exec");
    }
    Ok(write)
}

/// Tells the guard vx is finished with `pid` (its task's processes are gone or released).
pub(crate) fn done(pid: i32) {
    send(record(Tag::Done, pid));
}

/// Tells the guard that vx is exiting normally, so end-of-file on its pipe kills nothing. Call
/// it last, once every task has been stopped or released.
pub fn shutdown() {
    send(record(Tag::Clean, 0));
}

fn send(bytes: [u8; RECORD]) {
    let Some(Some(fd)) = GUARD.get() else { return };
    // SAFETY: writes 8 bytes from a local array to a descriptor this process owns for its
    // whole life (the static is never dropped).
    let written = unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
    if written != RECORD as isize {
        tracing::debug!(err = %io::Error::last_os_error(), "the process guard is gone");
    }
}

/// What the guard knows: registered pids and how many registrations each has.
#[derive(Default, Debug)]
pub(crate) struct Registry {
    entries: HashMap<i32, (Tag, u32)>,
    clean: bool,
}

impl Registry {
    /// Applies one record.
    pub(crate) fn apply(&mut self, bytes: &[u8; RECORD]) {
        let pid = i32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        match Tag::from_byte(bytes[0]) {
            Some(tag @ (Tag::Session | Tag::Group)) => {
                let entry = self.entries.entry(pid).or_insert((tag, 0));
                entry.0 = tag;
                entry.1 += 1;
            }
            Some(Tag::Done) => {
                if let Some(entry) = self.entries.get_mut(&pid) {
                    entry.1 -= 1;
                    if entry.1 == 0 {
                        self.entries.remove(&pid);
                    }
                }
            }
            Some(Tag::Clean) => self.clean = true,
            None => tracing::debug!(tag = bytes[0], "unknown guard record"),
        }
    }

    /// The process groups to SIGKILL, given the live process table: every registered group,
    /// plus every group with a live member in a registered session.
    pub(crate) fn targets(&self, table: &[process_tree::ProcStat]) -> Vec<i32> {
        let mut groups: Vec<i32> = self.entries.keys().copied().collect();
        for process in table.iter().filter(|p| !p.is_zombie()) {
            let in_session = matches!(self.entries.get(&process.session), Some((Tag::Session, _)));
            if in_session && !groups.contains(&process.pgrp) {
                groups.push(process.pgrp);
            }
        }
        groups.retain(|&group| group > 1);
        groups.sort_unstable();
        groups
    }

    /// Whether any live process belongs to a registered group or session.
    fn any_alive(&self, table: &[process_tree::ProcStat]) -> bool {
        table.iter().filter(|p| !p.is_zombie()).any(|p| {
            self.entries.contains_key(&p.pgrp)
                || matches!(self.entries.get(&p.session), Some((Tag::Session, _)))
        })
    }
}

/// The guard's main: reads records from stdin until end-of-file, then, unless vx said it exits
/// cleanly, kills everything registered. Returns the guard's exit code.
pub fn serve() -> i32 {
    // `ps` and `top` show `vx-guard` rather than `exe` (the guard runs `/proc/self/exe`).
    let _ = nix::sys::prctl::set_name(c"vx-guard");
    // A Ctrl-C or hang-up meant for vx must not end the guard (it has its own session, so the
    // terminal's do not reach it anyway; a `kill -INT` of vx's group would not either).
    for signal in [Signal::SIGINT, Signal::SIGHUP, Signal::SIGPIPE] {
        // SAFETY: installing SIG_IGN runs no code of ours in a handler.
        unsafe {
            let _ = nix::sys::signal::signal(signal, nix::sys::signal::SigHandler::SigIgn);
        }
    }
    // vx passes its own pid (`child.rs`); the guard's parent may be someone else already.
    let vx: Option<i32> = std::env::args().nth(2).and_then(|pid| pid.parse().ok());
    watch(io::stdin().lock(), vx);
    0
}

/// Reads records until a clean record (returns at once, killing nothing) or end-of-file: then
/// kills everything registered and, when vx's pid `vx` is known, everything in its task
/// cgroups, and removes its sandbox scratch directories. Returns what was registered at the
/// end.
fn watch(mut input: impl Read, vx: Option<i32>) -> Registry {
    let mut registry = Registry::default();
    let mut pending = Vec::with_capacity(RECORD * 64);
    let mut buffer = [0u8; RECORD * 512];
    loop {
        match input.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                pending.extend_from_slice(&buffer[..n]);
                let whole = pending.len() / RECORD * RECORD;
                for chunk in pending[..whole].chunks_exact(RECORD) {
                    registry.apply(chunk.try_into().expect("chunks of RECORD bytes"));
                }
                pending.drain(..whole);
                if registry.clean {
                    return registry;
                }
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if let Some(vx) = vx {
        // Everything in vx's task cgroups first, setsid daemons included (`cgroup.rs`).
        crate::cgroup::kill_orphaned(vx, KILL_FOR / 2);
    }
    kill_all(&registry);
    if let Some(vx) = vx {
        // A dead vx's sandbox scratch directories (its tasks' TMPDIRs) go too.
        for dir in crate::sandbox::scratch_dirs_of(vx) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    registry
}

/// SIGKILLs whatever is registered until nothing is left or [`KILL_FOR`] has passed.
fn kill_all(registry: &Registry) {
    if registry.entries.is_empty() {
        return;
    }
    let use_proc = process_tree::proc_is_usable();
    let until = Instant::now() + KILL_FOR;
    loop {
        let table = if use_proc {
            process_tree::scan_proc()
        } else {
            Vec::new()
        };
        if use_proc && !registry.any_alive(&table) {
            return;
        }
        for group in registry.targets(&table) {
            let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
        }
        if !use_proc || Instant::now() >= until {
            return;
        }
        std::thread::sleep(RECHECK);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process_tree::stat;

    #[test]
    fn a_done_record_unregisters_only_one_registration() {
        let mut registry = Registry::default();
        registry.apply(&record(Tag::Session, 40));
        registry.apply(&record(Tag::Session, 40));
        registry.apply(&record(Tag::Done, 40));
        assert_eq!(registry.targets(&[]), vec![40]);
        registry.apply(&record(Tag::Done, 40));
        assert_eq!(registry.targets(&[]), Vec::<i32>::new());
        // A stray done record changes nothing.
        registry.apply(&record(Tag::Done, 41));
        assert!(!registry.clean);
        registry.apply(&record(Tag::Clean, 0));
        assert!(registry.clean);
    }

    #[test]
    fn sessions_bring_their_other_groups_and_groups_only_themselves() {
        let mut registry = Registry::default();
        registry.apply(&record(Tag::Session, 100));
        registry.apply(&record(Tag::Group, 200));
        let table = [
            stat(100, b'S', 100, 100),
            stat(101, b'S', 105, 100), // moved to its own group in the task's session
            stat(102, b'Z', 107, 100), // a zombie's group is not chased
            stat(200, b'S', 200, 9),   // the interactive task, in vx's session 9
            stat(201, b'S', 203, 9),   // another group of vx's session: not the task's
            stat(300, b'S', 300, 300), // someone else
        ];
        assert_eq!(registry.targets(&table), vec![100, 105, 200]);
        assert!(registry.any_alive(&table));
        assert!(!registry.any_alive(&table[4..]));
    }

    #[test]
    fn init_and_below_are_never_targets() {
        let mut registry = Registry::default();
        registry.apply(&record(Tag::Session, 1));
        registry.apply(&record(Tag::Session, 0));
        assert_eq!(registry.targets(&[stat(5, b'S', 1, 1)]), Vec::<i32>::new());
    }

    #[test]
    fn unknown_tags_are_ignored() {
        let mut registry = Registry::default();
        registry.apply(&[b'?', 0, 0, 0, 7, 0, 0, 0]);
        assert_eq!(registry.targets(&[]), Vec::<i32>::new());
    }

    /// A process leading a group of its own (not a session: the test process may not be a
    /// session leader's child in every environment, and a group is what the guard kills).
    fn sleeper() -> std::process::Child {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .expect("sleep starts")
    }

    fn alive(pid: i32) -> bool {
        std::fs::read(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| process_tree::parse_stat(&stat))
            .is_some_and(|stat| !stat.is_zombie())
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn end_of_file_kills_what_is_registered_and_a_clean_record_kills_nothing() {
        let clean = sleeper();
        let pid = clean.id() as i32;
        let mut input = record(Tag::Group, pid).to_vec();
        input.extend_from_slice(&record(Tag::Clean, 0));
        watch(input.as_slice(), None);
        assert!(alive(pid), "a clean exit kills nothing");
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);

        let died = sleeper();
        let pid = died.id() as i32;
        watch(record(Tag::Group, pid).as_slice(), None);
        // `kill_all` returns once nothing registered is alive (a zombie is not).
        assert!(
            !alive(pid),
            "end of file without a clean record kills the group"
        );
        drop((clean, died));
    }
}
