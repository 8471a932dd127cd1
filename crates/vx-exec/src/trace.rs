//! Observing a sandboxed task's file-system calls (SBX-7): a seccomp filter that stops only
//! the calls that name a path to open, execute, create, remove or rename, and a ptrace tracer
//! that reads those paths. Linux on x86-64 only; elsewhere [`supported`] is false and the
//! sandbox is unavailable (SBX-1: vx fails closed).
//!
//! How this works: [`spawn_traced`] starts the command with `PTRACE_TRACEME` and the filter
//! installed in the child just before `exec` (no new privileges, so an unprivileged process
//! may install it). Every call the filter names stops the calling process with a seccomp
//! event; [`Tracer::wait`] reads the call's number and arguments, resolves the path (relative
//! to the process's working directory or the directory descriptor), records an [`Access`],
//! and lets the call go on. Forks, vforks and clones are traced too, so the whole tree is seen.
//! What the tracer could not decode is refused instead of let through: a call from another
//! ABI (i386, x32) fails with `EPERM`, and `io_uring_setup` with `ENOSYS` (programs fall back
//! to plain calls), so a path cannot be opened unseen. An `O_PATH` open reads nothing and is
//! not recorded. The tracer sees attempts, not outcomes: a read of a path the sandbox does not
//! have is seen all the same; only a `mkdir` of a path that already exists is left out (it
//! fails with EEXIST and writes nothing).
//! In a sandbox (`confine`), two more things are refused, since the mounts cannot hide them: a
//! Unix datagram socket (the filter: EACCES), and a `connect` to a Unix socket in a read-only
//! place of the task's view, where only a host process can have made it (the tracer skips the
//! call, which fails with EACCES, and reports `unix:<path>`). Otherwise the tracer only
//! observes: whether an access is a violation is decided outside, against the host's files and
//! the task's grants.

use std::ffi::OsString;
use std::path::PathBuf;

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
use nix::errno::Errno;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
use nix::sys::ptrace;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
use nix::sys::signal::Signal;
use nix::sys::wait::WaitStatus;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;

/// Whether this build can trace (the register layout below is x86-64's).
pub const fn supported() -> bool {
    cfg!(all(target_os = "linux", target_arch = "x86_64"))
}

/// What a traced process tried to do with a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Access {
    pub kind: AccessKind,
    /// Absolute, as the process named it (not canonicalized: inside the sandbox the path may
    /// not exist), except that a way through `/proc/<pid>/cwd`, `root` or `fd/<n>` is replaced
    /// by the path that link names.
    pub path: PathBuf,
    /// The path as the process named it, when it went through such a `/proc` link.
    pub asked: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AccessKind {
    /// Opened for reading, or executed.
    Read,
    /// Opened for writing, created, removed or renamed.
    Write,
    /// A connection to a non-loopback address (`path` is `address:port`): the sandbox has
    /// only loopback, so it failed, but it is a violation all the same (SBX-7).
    Net,
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod calls {
    // x86-64 system call numbers of the calls the filter stops.
    pub const OPEN: i64 = 2;
    pub const CREAT: i64 = 85;
    pub const OPENAT: i64 = 257;
    pub const OPENAT2: i64 = 437;
    pub const EXECVE: i64 = 59;
    pub const EXECVEAT: i64 = 322;
    pub const MKDIR: i64 = 83;
    pub const MKDIRAT: i64 = 258;
    pub const RMDIR: i64 = 84;
    pub const UNLINK: i64 = 87;
    pub const UNLINKAT: i64 = 263;
    pub const RENAME: i64 = 82;
    pub const RENAMEAT: i64 = 264;
    pub const RENAMEAT2: i64 = 316;
    pub const TRUNCATE: i64 = 76;
    pub const CONNECT: i64 = 42;
    pub const LINK: i64 = 86;
    pub const LINKAT: i64 = 265;
    pub const SYMLINK: i64 = 88;
    pub const SYMLINKAT: i64 = 266;
    pub const MKNOD: i64 = 133;
    pub const MKNODAT: i64 = 259;
    /// Refused with EPERM: with them a task could take over its init (the tracer) or read
    /// and write another process's memory or descriptors.
    pub const REFUSED: [i64; 4] = [
        101, // ptrace
        310, // process_vm_readv
        311, // process_vm_writev
        438, // pidfd_getfd
    ];
    /// Refused with ENOSYS: its submissions open files without a system call per file.
    pub const IO_URING_SETUP: i64 = 425;
    /// A Unix datagram socket is refused (EACCES): it could send to any socket path with
    /// `sendto`/`sendmsg`, which the tracer does not stop. Stream and seqpacket sockets reach a
    /// path only through `connect`, which it does.
    pub const SOCKET: i64 = 41;
    pub const SOCKETPAIR: i64 = 53;
    /// x32 calls carry this bit in their number.
    pub const X32_BIT: u32 = 0x4000_0000;

    pub const ALL: [i64; 22] = [
        OPEN, CREAT, OPENAT, OPENAT2, EXECVE, EXECVEAT, MKDIR, MKDIRAT, RMDIR, UNLINK, UNLINKAT,
        RENAME, RENAMEAT, RENAMEAT2, TRUNCATE, CONNECT, LINK, LINKAT, SYMLINK, SYMLINKAT, MKNOD,
        MKNODAT,
    ];
}

/// The BPF program: a call from another ABI fails with EPERM, `io_uring_setup` with ENOSYS,
/// the calls of `calls::REFUSED` with EPERM;
/// the calls in `calls::ALL` stop for the tracer (`SECCOMP_RET_TRACE`); the rest are allowed.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn filter(confine: bool) -> Vec<libc::sock_filter> {
    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    let stmt = |code: u16, k: u32| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    let load = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    let ret = (libc::BPF_RET | libc::BPF_K) as u16;
    let jump_set = |k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    let refuse = |errno: i32| stmt(ret, libc::SECCOMP_RET_ERRNO | errno as u32);
    let n = calls::ALL.len() as u8;
    let mut program = vec![
        // seccomp_data: nr at offset 0, arch at offset 4.
        stmt(load, 4),
        jump(AUDIT_ARCH_X86_64, 1, 0),
        refuse(libc::EPERM),
        stmt(load, 0),
        jump_set(calls::X32_BIT, 0, 1),
        refuse(libc::EPERM),
        jump(calls::IO_URING_SETUP as u32, 0, 1),
        refuse(libc::ENOSYS),
    ];
    // socket/socketpair(AF_UNIX, SOCK_DGRAM | flags, …): EACCES. seccomp_data's args[0] is at
    // offset 16, args[1] at 24 (their low words, on this little-endian machine).
    program.extend(
        confine
            .then_some([
                jump(calls::SOCKET as u32, 1, 0),
                jump(calls::SOCKETPAIR as u32, 0, 7),
                stmt(load, 16),
                jump(libc::AF_UNIX as u32, 0, 4),
                stmt(load, 24),
                stmt((libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16, 0xf),
                jump(libc::SOCK_DGRAM as u32, 0, 1),
                refuse(libc::EACCES),
                stmt(load, 0),
            ])
            .into_iter()
            .flatten(),
    );
    for call in calls::REFUSED {
        program.push(jump(call as u32, 0, 1));
        program.push(refuse(libc::EPERM));
    }
    for (i, call) in calls::ALL.iter().enumerate() {
        // On a match jump to the TRACE return after the list.
        program.push(jump(*call as u32, n - i as u8, 0));
    }
    program.push(stmt(ret, libc::SECCOMP_RET_ALLOW));
    program.push(stmt(ret, libc::SECCOMP_RET_TRACE));
    program
}

/// A traced command and everything it starts.
pub struct Tracer {
    leader: Pid,
    /// Whether the sandbox's refusals apply (a host process's Unix socket, a Unix datagram
    /// socket); off for a learning run, which only observes.
    confine: bool,
}

/// Starts `program` traced (see the module documentation); the caller then calls
/// [`Tracer::wait`]. The child stops itself before installing the filter, so that the tracer
/// has asked for seccomp events before the first traced call (without a tracer asking, such a
/// call fails with ENOSYS); that is also why this forks by hand instead of using
/// `std::process::Command`, whose `spawn` waits for the `exec` the stopped child has not made.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub fn spawn_traced(
    program: &OsString,
    args: &[OsString],
    confine: bool,
) -> std::io::Result<Tracer> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = |s: &OsString| {
        CString::new(s.as_bytes()).map_err(|_| std::io::Error::other("a NUL in an argument"))
    };
    let program_c = c(program)?;
    let mut argv = vec![program_c.clone()];
    for arg in args {
        argv.push(c(arg)?);
    }
    let mut pointers: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    pointers.push(std::ptr::null());
    let program_filter = filter(confine);
    let prog = libc::sock_fprog {
        len: program_filter.len() as u16,
        filter: program_filter.as_ptr().cast_mut(),
    };
    // SAFETY: the child makes only system calls (no allocation, no lock) until `exec`, with
    // everything it uses built before the fork; it `_exit`s if any of them fails.
    match unsafe { nix::unistd::fork() }.map_err(std::io::Error::from)? {
        // SAFETY: in the child, a copy of the parent's memory: `prog` and `argv` point into
        // buffers that stay valid until `exec` replaces the image or `_exit` ends it.
        nix::unistd::ForkResult::Child => unsafe {
            // The command starts with every signal at its default and none blocked, as an
            // unsandboxed task does (`child.rs`): init, a Rust program, ignores SIGPIPE, and
            // an ignored signal survives `exec`.
            for signal in 1..crate::child::SIGNAL_LIMIT {
                if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                    crate::child::reset_disposition(signal);
                }
            }
            let empty = crate::child::empty_sigset();
            libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            // The command leads a session of its own (its process group is what signals go to).
            let ok = libc::setsid() != -1
                && libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) == 0
                && libc::raise(libc::SIGSTOP) == 0
                && libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
                && libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const libc::sock_fprog,
                    0,
                    0,
                ) == 0;
            if ok {
                libc::execvp(program_c.as_ptr(), pointers.as_ptr());
            }
            libc::_exit(127);
        },
        nix::unistd::ForkResult::Parent { child } => {
            match waitpid(child, Some(WaitPidFlag::__WALL)) {
                Ok(WaitStatus::Stopped(_, Signal::SIGSTOP)) => {}
                other => {
                    return Err(std::io::Error::other(format!(
                        "the traced command did not stop before exec: {other:?}"
                    )))
                }
            }
            let options = ptrace::Options::PTRACE_O_TRACESECCOMP
                | ptrace::Options::PTRACE_O_TRACEFORK
                | ptrace::Options::PTRACE_O_TRACEVFORK
                | ptrace::Options::PTRACE_O_TRACECLONE
                | ptrace::Options::PTRACE_O_TRACEEXEC
                | ptrace::Options::PTRACE_O_EXITKILL;
            ptrace::setoptions(child, options).map_err(std::io::Error::from)?;
            ptrace::cont(child, None).map_err(std::io::Error::from)?;
            Ok(Tracer {
                leader: child,
                confine,
            })
        }
    }
}

/// Elsewhere tracing is refused before anything starts ([`supported`] is false, and the
/// sandbox and `--learn` check it first); this keeps the callers building for every target.
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
pub fn spawn_traced(
    _program: &OsString,
    _args: &[OsString],
    _confine: bool,
) -> std::io::Result<Tracer> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "tracing needs Linux on x86-64",
    ))
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
impl Tracer {
    pub fn leader(&self) -> Pid {
        self.leader
    }

    /// Never called: no `Tracer` is made on this target.
    pub fn wait_with(self, _seen: impl FnMut(Access)) -> WaitStatus {
        unreachable!("spawn_traced never succeeds on this target")
    }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
impl Tracer {
    pub fn leader(&self) -> Pid {
        self.leader
    }

    /// Runs until the leader exits; returns its wait status and every access seen. Processes
    /// it left behind are still traced by this process (they die with the sandbox's init).
    pub fn wait(self) -> (WaitStatus, Vec<Access>) {
        let mut accesses = Vec::new();
        let status = self.wait_with(|access| accesses.push(access));
        (status, accesses)
    }

    /// Like [`Tracer::wait`], but hands each access to `seen` as it happens (a persistent
    /// task's violations are reported live, SBX-8).
    pub fn wait_with(self, mut seen: impl FnMut(Access)) -> WaitStatus {
        // Processes whose first stop (the SIGSTOP a new tracee starts with) has been seen.
        let mut started: std::collections::HashSet<Pid> = [self.leader].into();
        loop {
            let status = match waitpid(None, Some(WaitPidFlag::__WALL)) {
                Ok(status) => status,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return WaitStatus::StillAlive,
            };
            match status {
                WaitStatus::Exited(pid, _) | WaitStatus::Signaled(pid, _, _)
                    if pid == self.leader =>
                {
                    return status;
                }
                WaitStatus::Exited(..) | WaitStatus::Signaled(..) => {}
                WaitStatus::PtraceEvent(pid, _, event) if event == libc::PTRACE_EVENT_SECCOMP => {
                    if let Some(errno) = observe(pid, self.confine, &mut seen) {
                        refuse_call(pid, errno);
                    }
                    let _ = ptrace::cont(pid, None);
                }
                WaitStatus::PtraceEvent(pid, _, _) => {
                    let _ = ptrace::cont(pid, None);
                }
                // A new tracee's first stop.
                WaitStatus::Stopped(pid, Signal::SIGSTOP) if started.insert(pid) => {
                    let _ = ptrace::cont(pid, None);
                }
                // A group-stop has no signal information: resume without a signal, or it would
                // be reported again for ever (job control inside a sandbox is not supported).
                WaitStatus::Stopped(pid, _) if ptrace::getsiginfo(pid).is_err() => {
                    let _ = ptrace::cont(pid, None);
                }
                // A signal for the process itself: deliver it.
                WaitStatus::Stopped(pid, signal) => {
                    let _ = ptrace::cont(pid, Some(signal));
                }
                _ => {}
            }
        }
    }
}

/// Makes the call `pid` is stopped in fail with `errno` without running it: at a seccomp
/// stop, system call number -1 skips the call and the return register is what it returns.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn refuse_call(pid: Pid, errno: Errno) {
    if let Ok(mut regs) = ptrace::getregs(pid) {
        regs.orig_rax = u64::MAX;
        regs.rax = (-(errno as i64)) as u64;
        let _ = ptrace::setregs(pid, regs);
    }
}

/// Hands `seen` the access of the call `pid` is stopped in; returns the error the call must
/// fail with instead of running, if any (a `connect` to a Unix socket the task did not make).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn observe(pid: Pid, confine: bool, seen: &mut impl FnMut(Access)) -> Option<Errno> {
    {
        let Ok(regs) = ptrace::getregs(pid) else {
            return None;
        };
        let args = [regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8];
        let at = |dirfd: u64, path: u64| (Some(dirfd as i32), path);
        let cwd = |path: u64| (None, path);
        use calls::*;
        let write_flags = (libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC) as u64;
        let o_path = libc::O_PATH as u64;
        // An O_PATH descriptor reads nothing (like `stat`): not an access.
        let path_only = match regs.orig_rax as i64 {
            calls::OPEN => args[1] & o_path != 0,
            calls::OPENAT => args[2] & o_path != 0,
            _ => false,
        };
        if path_only {
            return None;
        }
        if regs.orig_rax as i64 == CONNECT {
            let foreign = confine.then(|| foreign_unix_socket(pid, args[1], args[2]));
            if let Some(socket) = foreign.flatten() {
                if !QUIET_SOCKETS.iter().any(|dir| socket.starts_with(dir)) {
                    seen(Access {
                        kind: AccessKind::Net,
                        path: PathBuf::from(format!("unix:{}", socket.display())),
                        asked: None,
                    });
                }
                return Some(Errno::EACCES);
            }
            if let Some(target) = remote_address(pid, args[1], args[2]) {
                seen(Access {
                    kind: AccessKind::Net,
                    path: PathBuf::from(target),
                    asked: None,
                });
            }
            return None;
        }
        let (kind, named): (AccessKind, Vec<(Option<i32>, u64)>) = match regs.orig_rax as i64 {
            OPEN => (open_kind(args[1] & write_flags), vec![cwd(args[0])]),
            OPENAT => (open_kind(args[2] & write_flags), vec![at(args[0], args[1])]),
            OPENAT2 => {
                // struct open_how { u64 flags; … } at args[2].
                let flags = read_u64(pid, args[2]).unwrap_or(0);
                (open_kind(flags & write_flags), vec![at(args[0], args[1])])
            }
            EXECVE => (AccessKind::Read, vec![cwd(args[0])]),
            EXECVEAT => (AccessKind::Read, vec![at(args[0], args[1])]),
            CREAT | MKDIR | RMDIR | UNLINK | TRUNCATE | MKNOD => {
                (AccessKind::Write, vec![cwd(args[0])])
            }
            MKDIRAT | UNLINKAT | MKNODAT => (AccessKind::Write, vec![at(args[0], args[1])]),
            // The new name is the write; what a link points to is not touched.
            LINK | SYMLINK => (AccessKind::Write, vec![cwd(args[1])]),
            LINKAT => (AccessKind::Write, vec![at(args[2], args[3])]),
            SYMLINKAT => (AccessKind::Write, vec![at(args[1], args[2])]),
            RENAME => (AccessKind::Write, vec![cwd(args[0]), cwd(args[1])]),
            RENAMEAT | RENAMEAT2 => (
                AccessKind::Write,
                vec![at(args[0], args[1]), at(args[2], args[3])],
            ),
            _ => return None,
        };
        let is_mkdir = matches!(regs.orig_rax as i64, MKDIR | MKDIRAT);
        for (dirfd, address) in named {
            if let Some(path) = read_path(pid, dirfd, address) {
                // A `mkdir` of what exists fails with EEXIST and changes nothing (`mkdir -p`
                // tries every parent). Init shares the task's mount namespace, so it sees
                // what the call will see.
                if is_mkdir && path.symlink_metadata().is_ok() {
                    continue;
                }
                match through_proc(pid, &path) {
                    Some(real) => seen(Access {
                        kind,
                        path: real,
                        asked: Some(path),
                    }),
                    None => seen(Access {
                        kind,
                        path,
                        asked: None,
                    }),
                }
            }
        }
        None
    }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn open_kind(write_bits: u64) -> AccessKind {
    if write_bits == 0 {
        AccessKind::Read
    } else {
        AccessKind::Write
    }
}

/// The NUL-terminated path at `address` in `pid`'s memory, made absolute against `dirfd`'s
/// directory (`None` or `AT_FDCWD`: the working directory).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn read_path(pid: Pid, dirfd: Option<i32>, address: u64) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let mut bytes = Vec::new();
    let mut at = address;
    'read: loop {
        const CHUNK: usize = 256;
        let mut chunk = [0u8; CHUNK];
        let remote = [nix::sys::uio::RemoteIoVec {
            base: at as usize,
            len: CHUNK,
        }];
        let n = {
            let mut local = [std::io::IoSliceMut::new(&mut chunk)];
            nix::sys::uio::process_vm_readv(pid, &mut local, &remote).ok()?
        };
        if n == 0 {
            return None;
        }
        for &b in &chunk[..n] {
            if b == 0 {
                break 'read;
            }
            bytes.push(b);
        }
        if bytes.len() > 4096 {
            return None;
        }
        at += n as u64;
    }
    let path = PathBuf::from(OsString::from_vec(bytes));
    if path.is_absolute() {
        return Some(path);
    }
    let base = match dirfd {
        Some(fd) if fd != libc::AT_FDCWD => std::fs::read_link(format!("/proc/{pid}/fd/{fd}")),
        _ => std::fs::read_link(format!("/proc/{pid}/cwd")),
    }
    .ok()?;
    Some(base.join(path))
}

/// The path `path` names when it goes through one of `/proc`'s links to a process's working
/// directory, root or open file (`/proc/self/cwd/../q/x`, `/proc/<n>/fd/3/x`): the link's own
/// target joined with the rest, so that the read is judged where it lands. `None` for any
/// other path. Init shares the task's pid and mount namespaces, so it reads the links as the
/// task would.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn through_proc(pid: Pid, path: &std::path::Path) -> Option<PathBuf> {
    let mut parts = path.strip_prefix("/proc").ok()?.iter();
    let process = match parts.next()?.to_str()? {
        "self" | "thread-self" => pid.to_string(),
        n if n.bytes().all(|b| b.is_ascii_digit()) => n.to_string(),
        _ => return None,
    };
    let link = match parts.next()?.to_str()? {
        "cwd" => format!("/proc/{process}/cwd"),
        "root" => format!("/proc/{process}/root"),
        "fd" => format!("/proc/{process}/fd/{}", parts.next()?.to_str()?),
        _ => return None,
    };
    let target = std::fs::read_link(link).ok()?;
    target.is_absolute().then(|| target.join(parts.as_path()))
}

/// The `address:port` of a `connect` to a non-loopback IPv4 or IPv6 address; `None` for a
/// loopback one, another family (a Unix socket) or an unreadable address.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn remote_address(pid: Pid, address: u64, length: u64) -> Option<String> {
    let mut buffer = [0u8; 28];
    let n = read_address(pid, address, length, &mut buffer)?;
    let family = u16::from_ne_bytes([buffer[0], buffer[1]]);
    let port = u16::from_be_bytes([buffer[2], buffer[3]]);
    let ip: std::net::IpAddr = match i32::from(family) {
        libc::AF_INET if n >= 8 => {
            std::net::Ipv4Addr::new(buffer[4], buffer[5], buffer[6], buffer[7]).into()
        }
        libc::AF_INET6 if n >= 24 => {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&buffer[8..24]);
            let v6 = std::net::Ipv6Addr::from(octets);
            match v6.to_ipv4_mapped() {
                Some(v4) => v4.into(),
                None => v6.into(),
            }
        }
        _ => return None,
    };
    if ip.is_loopback() {
        return None;
    }
    Some(std::net::SocketAddr::new(ip, port).to_string())
}

/// Where the C library and its name services look for a daemon on their own (a user or host
/// lookup asks nscd or systemd's userdb first, logging tries the journal): such a `connect` is
/// refused like any other, and the library falls back to files, but it is not a violation.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
const QUIET_SOCKETS: [&str; 6] = [
    "/run/nscd/",
    "/var/run/nscd/",
    "/run/systemd/userdb/",
    "/var/run/systemd/userdb/",
    "/run/systemd/journal/",
    "/var/run/systemd/journal/",
];

/// The path of a `connect` to a Unix socket that lies in a read-only place of the sandbox's
/// view — the host file system or a read grant: a socket some host process listens on (a
/// Docker or ssh-agent socket, a daemon's), never one the task made (the task can make one only
/// where it may write). `None` for any other address, an abstract socket (the sandbox has its
/// own network namespace, so only its own are reachable) or one in a writable place. Init shares
/// the task's mount namespace, so it judges the path as the task's `connect` resolves it.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn foreign_unix_socket(pid: Pid, address: u64, length: u64) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut buffer = [0u8; std::mem::size_of::<libc::sockaddr_un>()];
    let n = read_address(pid, address, length, &mut buffer)?;
    if n < 3 || i32::from(u16::from_ne_bytes([buffer[0], buffer[1]])) != libc::AF_UNIX {
        return None;
    }
    let name = &buffer[2..n];
    if name[0] == 0 {
        return None;
    }
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let named = PathBuf::from(std::ffi::OsStr::from_bytes(&name[..end]));
    let path = if named.is_absolute() {
        named
    } else {
        std::fs::read_link(format!("/proc/{pid}/cwd"))
            .ok()?
            .join(named)
    };
    let read_only = nix::sys::statvfs::statvfs(&path)
        .map(|fs| fs.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY))
        // Not there: the connect fails anyway; judged where its directory is.
        .or_else(|_| {
            nix::sys::statvfs::statvfs(path.parent().unwrap_or(&path))
                .map(|fs| fs.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY))
        })
        .unwrap_or(true);
    read_only.then_some(path)
}

/// Reads a socket address of `length` bytes at `address` in `pid`'s memory into `buffer` (as
/// much as fits); the count read.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn read_address(pid: Pid, address: u64, length: u64, buffer: &mut [u8]) -> Option<usize> {
    let wanted = (length as usize).min(buffer.len());
    let mut local = [std::io::IoSliceMut::new(&mut buffer[..wanted])];
    let remote = [nix::sys::uio::RemoteIoVec {
        base: address as usize,
        len: wanted,
    }];
    nix::sys::uio::process_vm_readv(pid, &mut local, &remote).ok()
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn read_u64(pid: Pid, address: u64) -> Option<u64> {
    let mut buffer = [0u8; 8];
    let mut local = [std::io::IoSliceMut::new(&mut buffer)];
    let remote = [nix::sys::uio::RemoteIoVec {
        base: address as usize,
        len: 8,
    }];
    let n = nix::sys::uio::process_vm_readv(pid, &mut local, &remote).ok()?;
    (n == 8).then(|| u64::from_ne_bytes(buffer))
}
