//! Starting a task's leader: `fork`, then in the child `setsid`, standard streams, `chdir` and
//! `execve`.
//!
//! vx forks by hand instead of using `std::process::Command` because std waits for a child
//! whose `exec` failed, and that `waitpid` would race with the supervisor's reaper, which waits
//! for every child (`waitpid(-1)`). Here the child reports a failure as an errno on a
//! close-on-exec pipe and exits 127, and the reaper reaps it like any other child.
//!
//! How this works: [`Prepared::new`] builds every C string and pointer array the child needs
//! and opens the pipes, all in the parent, because between `fork` and `exec` in a threaded
//! process only async-signal-safe calls are allowed (no allocation, no locks).
//! [`Prepared::fork`] forks with every signal blocked, so no handler of vx runs in the child (on
//! Linux with `clone(CLONE_VM | CLONE_VFORK)`, which copies no memory: see its comment; a task
//! with a cgroup is started inside it the same way with `clone3` and `CLONE_INTO_CGROUP`);
//! the child resets every disposition to the default and unblocks everything before `exec`.
//! [`Prepared::exec_result`] then reads the error pipe: end-of-file means `exec` succeeded.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

use crate::event::{SpawnSpec, StdinMode};
use crate::guard::{self, Tag};

/// The parent's ends of a started child's pipes (the guard has no output pipes).
pub(crate) struct ParentEnds {
    pub stdout: Option<OwnedFd>,
    pub stderr: Option<OwnedFd>,
    /// The write end of a held stdin pipe.
    pub stdin_hold: Option<OwnedFd>,
    /// A sandboxed task's control pipe (write end) and report pipe (read end).
    pub control: Option<OwnedFd>,
    pub report: Option<OwnedFd>,
}

/// Where a sandboxed task's init finds its control and report pipes (SBX-9).
pub(crate) const CONTROL_FD: RawFd = 3;
pub(crate) const REPORT_FD: RawFd = 4;

/// `struct clone_args` of `clone3(2)`.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// `clone3` with `CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP`: like `libc::clone` in
/// `start_child`, the child runs `child(arg)` on `stack`, but it is born inside the cgroup whose
/// directory is `cgroup`. Returns the child's pid, or -1 with `errno` set. x86-64 only: the
/// child's side must switch stacks before any Rust code runs, so the call is written out here
/// (glibc exports no `clone3` wrapper).
///
/// # Safety
/// As for `libc::clone`: `child` must never return and only make async-signal-safe calls on
/// memory prepared before; `stack` must outlive the child's use of it (CLONE_VFORK suspends
/// the caller until the child executes or exits).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
unsafe fn clone3_into(
    cgroup: RawFd,
    stack: &mut [u8],
    child: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    arg: *mut libc::c_void,
) -> libc::pid_t {
    const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
    const SYS_CLONE3: i64 = 435;
    // The kernel starts the child with its stack pointer at `stack + stack_size`; keep it
    // 16-byte aligned so the `call` below leaves the ABI's alignment for `child`.
    let base = stack.as_mut_ptr() as u64;
    let shift = (16 - base % 16) % 16;
    let args = CloneArgs {
        flags: (libc::CLONE_VM | libc::CLONE_VFORK) as u64 | CLONE_INTO_CGROUP,
        exit_signal: libc::SIGCHLD as u64,
        stack: base + shift,
        stack_size: (stack.len() as u64 - shift) & !15,
        cgroup: cgroup as u64,
        ..CloneArgs::default()
    };
    let ret: i64;
    // SAFETY: the system call reads `args` (alive for the call); in the parent it returns the
    // pid or -errno in rax and clobbers rcx and r11 only. In the child (rax = 0) the stack is
    // the fresh one, and only `child(arg)` runs, which never returns (`ud2` otherwise).
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "mov rdi, r12",
            "call r13",
            "ud2",
            "2:",
            inlateout("rax") SYS_CLONE3 => ret,
            in("rdi") &args as *const CloneArgs,
            in("rsi") std::mem::size_of::<CloneArgs>(),
            in("r12") arg,
            in("r13") child,
            lateout("rcx") _,
            lateout("r11") _,
        );
    }
    if ret < 0 {
        // SAFETY: errno is this thread's; setting it reports the failure like libc would.
        unsafe { *libc::__errno_location() = (-ret) as i32 };
        return -1;
    }
    ret as libc::pid_t
}

/// Off x86-64 the child moves itself into its cgroup (`ENOSYS` leads there).
#[cfg(all(target_os = "linux", not(target_arch = "x86_64")))]
unsafe fn clone3_into(
    _cgroup: RawFd,
    _stack: &mut [u8],
    _child: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    _arg: *mut libc::c_void,
) -> libc::pid_t {
    // SAFETY: errno is this thread's.
    unsafe { *libc::__errno_location() = libc::ENOSYS };
    -1
}

/// The stack of a child between `clone` and `execve`.
#[cfg(target_os = "linux")]
const CHILD_STACK: usize = 64 * 1024;

/// Everything the child needs, built before `fork`.
pub(crate) struct Prepared {
    program: CString,
    cwd: CString,
    // The pointer arrays point into these; they must live as long as the arrays.
    _argv: Vec<CString>,
    _envp: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    envp_ptrs: Vec<*const libc::c_char>,
    child_stdin: OwnedFd,
    child_stdout: OwnedFd,
    child_stderr: OwnedFd,
    error_write: OwnedFd,
    error_read: OwnedFd,
    /// A sandboxed task's ends of the control pipe (read) and the report pipe (write), copied
    /// to [`CONTROL_FD`] and [`REPORT_FD`] in the child.
    sandbox_ends: Option<(OwnedFd, OwnedFd)>,
    parent: ParentEnds,
    /// Where the child registers its pid before `exec` (EXEC-7), and how; `None` for the
    /// guard itself and when no guard runs.
    register: Option<(RawFd, Tag)>,
    /// The task's cgroup (`cgroup.rs`): the child is started inside it, or joins it before
    /// `exec`.
    join: Option<crate::cgroup::Join>,
    /// `clone3` started the child inside its cgroup: it need not (and must not, for the cost)
    /// move itself there. Shared with the child, which runs in vx's memory until `exec`.
    born_inside: std::sync::atomic::AtomicBool,
    /// An interactive task (EXEC-1): a new process group in vx's session that takes the
    /// terminal's foreground, instead of a new session.
    terminal: bool,
}

// SAFETY: the raw pointers only point into the CStrings owned by the same value, which are
// never mutated; moving the value between threads moves the heap buffers' owners, not the
// buffers.
unsafe impl Send for Prepared {}

impl Prepared {
    pub(crate) fn new(spec: &SpawnSpec, join: Option<crate::cgroup::Join>) -> io::Result<Prepared> {
        let cwd = c_string(spec.cwd.as_os_str())?;
        let (program, argv) = match &spec.sandbox {
            None => {
                let mut argv = vec![c_string(&spec.arg0)?];
                for arg in &spec.args {
                    argv.push(c_string(arg)?);
                }
                (c_string(spec.program.as_os_str())?, argv)
            }
            Some(launch) => {
                let mut words: Vec<std::ffi::OsString> = vec!["bwrap".into()];
                words.extend(launch.options.iter().cloned());
                words.push("--".into());
                words.push(launch.init.clone().into_os_string());
                let mut command = vec![spec.program.clone().into_os_string()];
                command.extend(spec.args.iter().cloned());
                words.extend(crate::sandbox_init::init_args(
                    CONTROL_FD,
                    REPORT_FD,
                    launch.proxy.as_deref(),
                    &command,
                ));
                let argv = words
                    .iter()
                    .map(|word| c_string(word))
                    .collect::<io::Result<Vec<_>>>()?;
                (c_string(launch.bwrap.as_os_str())?, argv)
            }
        };
        let mut envp = Vec::with_capacity(spec.env.len());
        for (name, value) in &spec.env {
            if name.is_empty() || name.as_bytes().contains(&b'=') {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("invalid environment variable name {name:?}"),
                ));
            }
            let mut pair = name.as_bytes().to_vec();
            pair.push(b'=');
            pair.extend_from_slice(value.as_bytes());
            envp.push(c_string(OsStr::from_bytes(&pair))?);
        }
        let argv_ptrs = null_terminated(&argv);
        let envp_ptrs = null_terminated(&envp);

        let terminal = spec.stdin == StdinMode::Terminal;
        let (child_stdin, stdin_hold) = match spec.stdin {
            StdinMode::Null => (OwnedFd::from(File::open("/dev/null")?), None),
            StdinMode::HeldPipe => {
                let (read, write) = pipe()?;
                (read, Some(write))
            }
            StdinMode::Terminal => (duplicate(0)?, None),
        };
        let (stdout, child_stdout, stderr, child_stderr) = if terminal {
            (None, duplicate(1)?, None, duplicate(2)?)
        } else {
            let (stdout, child_stdout) = pipe()?;
            let (stderr, child_stderr) = pipe()?;
            (Some(stdout), child_stdout, Some(stderr), child_stderr)
        };
        let (error_read, error_write) = pipe()?;
        let (sandbox_ends, control, report) = if spec.sandbox.is_some() {
            let (control_read, control_write) = pipe()?;
            let (report_read, report_write) = pipe()?;
            (
                Some((
                    above(control_read, REPORT_FD + 1)?,
                    above(report_write, REPORT_FD + 1)?,
                )),
                Some(control_write),
                Some(report_read),
            )
        } else {
            (None, None, None)
        };
        let tag = if terminal { Tag::Group } else { Tag::Session };
        let register = guard::write_fd().map(|fd| (fd, tag));
        Ok(Prepared {
            program,
            cwd,
            _argv: argv,
            _envp: envp,
            argv_ptrs,
            envp_ptrs,
            child_stdin: above_stdio(child_stdin)?,
            child_stdout: above_stdio(child_stdout)?,
            child_stderr: above_stdio(child_stderr)?,
            // Above the sandbox's fixed descriptors too, which the child overwrites.
            error_write: above(error_write, REPORT_FD + 1)?,
            error_read,
            sandbox_ends,
            parent: ParentEnds {
                stdout,
                stderr,
                stdin_hold,
                control,
                report,
            },
            register,
            join,
            born_inside: std::sync::atomic::AtomicBool::new(false),
            terminal,
        })
    }

    /// The guard helper of EXEC-7: `program GUARD_ARG <vx's pid>` in a session of its own, stdin the read
    /// end of the guard pipe, stdout and stderr `/dev/null` (it must not hold vx's own output
    /// open after vx exits), an empty environment, and no registration.
    pub(crate) fn guard(program: &std::path::Path, pipe_read: OwnedFd) -> io::Result<Prepared> {
        let program = c_string(program.as_os_str())?;
        // vx's pid, for what the guard cleans up after it (its sandbox scratch directories):
        // once vx is gone the guard's parent is someone else.
        let argv = vec![
            c_string(OsStr::new("vx"))?,
            c_string(OsStr::new(guard::GUARD_ARG))?,
            c_string(OsStr::new(&std::process::id().to_string()))?,
        ];
        let argv_ptrs = null_terminated(&argv);
        let envp: Vec<CString> = Vec::new();
        let envp_ptrs = null_terminated(&envp);
        let null = |_| -> io::Result<OwnedFd> {
            Ok(OwnedFd::from(
                File::options().write(true).open("/dev/null")?,
            ))
        };
        let (error_read, error_write) = pipe()?;
        Ok(Prepared {
            program,
            cwd: c_string(OsStr::new("/"))?,
            _argv: argv,
            _envp: envp,
            argv_ptrs,
            envp_ptrs,
            child_stdin: above_stdio(pipe_read)?,
            child_stdout: above_stdio(null(())?)?,
            child_stderr: above_stdio(null(())?)?,
            error_write: above_stdio(error_write)?,
            error_read,
            sandbox_ends: None,
            parent: ParentEnds {
                stdout: None,
                stderr: None,
                stdin_hold: None,
                control: None,
                report: None,
            },
            register: None,
            join: None,
            born_inside: std::sync::atomic::AtomicBool::new(false),
            terminal: false,
        })
    }

    /// Forks; the child becomes the leader of a new session and executes the program. Returns
    /// the child's pid. The caller must hold the supervisor's registry lock so that the reaper
    /// cannot look up the pid before it is registered.
    ///
    /// On Linux the child shares vx's memory until it executes (`clone` with `CLONE_VM |
    /// CLONE_VFORK`, as `posix_spawn` does), on a stack of its own: a plain `fork` copies the
    /// page tables of all of vx's memory and makes every page copy-on-write, which with
    /// thousands of tasks and a large graph cost more than the tasks themselves. The calling
    /// thread waits until the child has executed or exited; the child only makes system calls
    /// on values built before (see `exec_child`), and gets its own copy of the file table,
    /// the working directory and the signal dispositions (no `CLONE_FILES`, `CLONE_FS` or
    /// `CLONE_SIGHAND`), so what it changes there is its own.
    pub(crate) fn fork(&self) -> io::Result<i32> {
        let mut all: libc::sigset_t = empty_sigset();
        let mut previous: libc::sigset_t = empty_sigset();
        // SAFETY: `all` and `previous` are valid sigset_t values owned by this frame;
        // sigfillset and pthread_sigmask only write through the pointers given.
        unsafe {
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut previous);
        }
        let pid = self.start_child();
        let fork_error = io::Error::last_os_error();
        // SAFETY: restores the mask saved above from a valid sigset_t.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
        }
        if pid < 0 {
            return Err(fork_error);
        }
        Ok(pid)
    }

    #[cfg(target_os = "linux")]
    fn start_child(&self) -> libc::pid_t {
        /// The child's entry on its own stack; `arg` is the `Prepared`.
        extern "C" fn child(arg: *mut libc::c_void) -> libc::c_int {
            // SAFETY: `arg` is the `&Prepared` passed to clone below, alive and unchanged
            // while the parent waits (CLONE_VFORK); we are the new child.
            unsafe { (*(arg as *const Prepared)).exec_child() }
        }
        // The child's stack: it makes a few system calls and `execve`. Its memory is vx's
        // until the exec, so it is freed when clone returns.
        let mut stack = vec![0u8; CHILD_STACK];
        // Stacks grow down on every Linux architecture vx builds for; keep 16-byte alignment.
        let top = (stack.as_mut_ptr() as usize + CHILD_STACK) & !15;
        let arg = self as *const Prepared as *mut libc::c_void;
        if let Some(dir) = self.join.and_then(|join| join.dir) {
            use std::sync::atomic::Ordering;
            self.born_inside.store(true, Ordering::SeqCst);
            // SAFETY: as for `clone` below; `clone3_into` switches to the stack itself.
            let pid = unsafe { clone3_into(dir, &mut stack, child, arg) };
            // ENOSYS, EINVAL, E2BIG: a kernel without `clone3` or `CLONE_INTO_CGROUP`; the
            // child then moves itself.
            if pid >= 0
                || !matches!(
                    io::Error::last_os_error().raw_os_error(),
                    Some(libc::ENOSYS | libc::EINVAL | libc::E2BIG)
                )
            {
                drop(stack);
                return pid;
            }
            self.born_inside.store(false, Ordering::SeqCst);
        }
        // SAFETY: `child` only calls async-signal-safe functions on values built before (see
        // `exec_child`); `top` is the aligned end of a live buffer no one else uses; with
        // CLONE_VFORK this thread is suspended until the child executes or exits, so `self`
        // and `stack` outlive the child's use of them. SIGCHLD makes it an ordinary child for
        // the reaper.
        let pid = unsafe {
            libc::clone(
                child,
                top as *mut libc::c_void,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                arg,
            )
        };
        drop(stack);
        pid
    }

    #[cfg(not(target_os = "linux"))]
    fn start_child(&self) -> libc::pid_t {
        // No cgroups off Linux: `join` is always `None` there.
        // SAFETY: fork has no memory-safety preconditions of its own; the child branch only
        // calls async-signal-safe functions on data prepared before the fork (see `exec_child`).
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: we are the child of a fork; `self` was fully built before the fork.
            unsafe { self.exec_child() }
        }
        pid
    }

    /// Closes the parent's copies of the child's ends, then waits until the child has executed
    /// the program (`Ok`) or reported why it could not.
    pub(crate) fn exec_result(self) -> (io::Result<()>, ParentEnds) {
        let Prepared {
            error_read,
            error_write,
            child_stdin,
            child_stdout,
            child_stderr,
            sandbox_ends,
            parent,
            ..
        } = self;
        // Until the parent's copy of the write end is closed the read below could not see
        // end-of-file; the pipe ends of the child must go too, or vx would never see EOF on
        // the task's output.
        // Likewise the child's ends of a sandbox's pipes: init's end of the report must be the
        // only writer, or its end-of-file would never come.
        drop((
            error_write,
            child_stdin,
            child_stdout,
            child_stderr,
            sandbox_ends,
        ));
        let mut report = [0u8; 4];
        let mut file = File::from(error_read);
        let mut filled = 0;
        let result = loop {
            match file.read(&mut report[filled..]) {
                Ok(0) if filled == 0 => break Ok(()),
                Ok(0) => break Err(io::Error::other("the child's error report was cut short")),
                Ok(n) => {
                    filled += n;
                    if filled == report.len() {
                        break Err(io::Error::from_raw_os_error(i32::from_ne_bytes(report)));
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => break Err(err),
            }
        };
        (result, parent)
    }

    /// The child's side of the fork. Never returns.
    ///
    /// # Safety
    /// Must only be called in the child right after `fork`. It calls only async-signal-safe
    /// functions and touches only memory prepared before the fork.
    unsafe fn exec_child(&self) -> ! {
        // SAFETY (whole block): only async-signal-safe calls (write, getpid, sigaction,
        // setsid, setpgid, tcsetpgrp, pthread_sigmask, dup2, chdir, execve) on values built
        // before the fork, which the parent's other threads never touch (on Linux the address
        // space is the parent's until exec: nothing here writes to memory but this stack and
        // errno).
        unsafe {
            // Into the task's cgroup first, so everything the command starts is born inside
            // (a failed write leaves the task contained by its session alone).
            let born_inside = self.born_inside.load(std::sync::atomic::Ordering::SeqCst);
            if let Some(join) = self.join.filter(|_| !born_inside) {
                libc::write(join.procs, b"0".as_ptr().cast(), 1);
            }
            // EXEC-7: register before exec, so the task is never unguarded. If the guard is
            // gone the write fails with EPIPE and the task runs unguarded; the SIGPIPE it
            // raises is pending (every signal is blocked here), and setting SIGPIPE to ignored
            // discards a pending one, so the reset below cannot let it kill the child.
            if let Some((fd, tag)) = self.register {
                let record = guard::record(tag, libc::getpid());
                if libc::write(fd, record.as_ptr().cast(), record.len()) < 0 {
                    let mut ignore: libc::sigaction = std::mem::zeroed();
                    ignore.sa_sigaction = libc::SIG_IGN;
                    libc::sigaction(libc::SIGPIPE, &ignore, std::ptr::null_mut());
                }
            }
            // Before the terminal is handed over: a failure after that would leave the
            // foreground with a group that is about to vanish.
            if libc::chdir(self.cwd.as_ptr()) < 0 {
                self.fail_in_child();
            }
            if self.terminal {
                // A group of its own in vx's session, made the terminal's foreground. This
                // must come before the mask is cleared: only with SIGTTOU blocked may a
                // background group take the foreground without being stopped.
                if libc::setpgid(0, 0) < 0 || libc::tcsetpgrp(0, libc::getpid()) < 0 {
                    self.fail_in_child();
                }
            } else if libc::setsid() < 0 {
                self.fail_in_child();
            }
            // Handlers of vx would otherwise run here if a signal arrived before exec; vx
            // also ignores SIGPIPE, and ignored dispositions survive exec, so reset them all.
            for signal in 1..SIGNAL_LIMIT {
                if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                    reset_disposition(signal);
                }
            }
            let empty = empty_sigset();
            libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());

            // Every source fd is above 2 (see `above_stdio`), so these never overwrite one
            // another, and the copies on 0, 1 and 2 are not close-on-exec.
            for (source, target) in [
                (self.child_stdin.as_raw_fd(), 0),
                (self.child_stdout.as_raw_fd(), 1),
                (self.child_stderr.as_raw_fd(), 2),
            ] {
                if libc::dup2(source, target) < 0 {
                    self.fail_in_child();
                }
            }
            // A sandbox's pipes, on the numbers init is told (SBX-9). Their sources and the
            // error pipe are above both numbers (see `new`); what they overwrite is one of
            // vx's own close-on-exec descriptors, in the child's copy of the table.
            if let Some((control, report)) = &self.sandbox_ends {
                for (source, target) in [
                    (control.as_raw_fd(), CONTROL_FD),
                    (report.as_raw_fd(), REPORT_FD),
                ] {
                    if libc::dup2(source, target) < 0 {
                        self.fail_in_child();
                    }
                }
            }
            libc::execve(
                self.program.as_ptr(),
                self.argv_ptrs.as_ptr(),
                self.envp_ptrs.as_ptr(),
            );
            self.fail_in_child()
        }
    }

    /// Reports errno on the error pipe and exits 127.
    ///
    /// # Safety
    /// Child side only, like `exec_child`.
    unsafe fn fail_in_child(&self) -> ! {
        // Reading errno does not allocate: the error holds the raw number.
        let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
        let bytes = errno.to_ne_bytes();
        // SAFETY: write and _exit are async-signal-safe; `bytes` lives on this stack frame.
        unsafe {
            libc::write(
                self.error_write.as_raw_fd(),
                bytes.as_ptr().cast(),
                bytes.len(),
            );
            libc::_exit(127)
        }
    }
}

/// Sets `signal` to its default disposition, async-signal-safely.
///
/// On Linux this is the raw system call: the C library refuses the signals it reserves for
/// itself (32 and 33 in glibc), yet an ignored one is inherited like any other (build tools
/// have been seen to pass SIG_IGN on 32 down). An all-zero kernel `sigaction` is SIG_DFL with
/// no flags and an empty mask whatever the architecture's field order.
///
/// # Safety
/// Child side only, like `Prepared::exec_child`.
#[cfg(target_os = "linux")]
pub(crate) unsafe fn reset_disposition(signal: libc::c_int) {
    let default = [0u64; 4];
    // The kernel's sigset_t is 64 bits on the architectures vx supports.
    const KERNEL_SIGSET_BYTES: libc::c_long = 8;
    // SAFETY: `default` is large enough for the kernel's struct sigaction and outlives the
    // call; the old-action pointer is null, so nothing is written.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigaction,
            libc::c_long::from(signal),
            default.as_ptr(),
            std::ptr::null_mut::<u64>(),
            KERNEL_SIGSET_BYTES,
        );
    }
}

/// Sets `signal` to its default disposition, async-signal-safely.
///
/// # Safety
/// Child side only, like `Prepared::exec_child`.
#[cfg(not(target_os = "linux"))]
pub(crate) unsafe fn reset_disposition(signal: libc::c_int) {
    // SAFETY: `default` is a valid, fully initialised sigaction on this stack frame.
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut default.sa_mask);
        libc::sigaction(signal, &default, std::ptr::null_mut());
    }
}

#[cfg(target_os = "linux")]
pub(crate) const SIGNAL_LIMIT: libc::c_int = 65;
#[cfg(not(target_os = "linux"))]
pub(crate) const SIGNAL_LIMIT: libc::c_int = 32;

pub(crate) fn empty_sigset() -> libc::sigset_t {
    let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises the whole set it is given.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        set.assume_init()
    }
}

fn c_string(value: &OsStr) -> io::Result<CString> {
    CString::new(value.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{value:?} contains a NUL byte"),
        )
    })
}

fn null_terminated(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// A close-on-exec pipe: (read end, write end).
#[cfg(target_os = "linux")]
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?)
}

/// A close-on-exec pipe: (read end, write end).
///
/// macOS has no `pipe2`: a fork on another thread between the two calls could leak the ends
/// into that child until it executes, as with std's own pipes there.
#[cfg(not(target_os = "linux"))]
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};
    let (read, write) = nix::unistd::pipe()?;
    for end in [&read, &write] {
        fcntl(end, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    }
    Ok((read, write))
}

/// A close-on-exec copy of one of vx's own standard streams, above 2 (an interactive task
/// inherits them, EXEC-14).
fn duplicate(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor that nothing else owns, wrapped at once.
    let copy: RawFd = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `copy` is a fresh descriptor owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(copy) })
}

/// Moves a descriptor to a number above 2 (close-on-exec), so that the child's `dup2` onto
/// 0, 1 and 2 can never clobber a source it has yet to copy. Only matters when vx itself was
/// started with a standard stream closed.
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    above(fd, 3)
}

/// Moves a descriptor to `lowest` or above (close-on-exec), unless it is there already.
fn above(fd: OwnedFd, lowest: RawFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() >= lowest {
        return Ok(fd);
    }
    // SAFETY: F_DUPFD_CLOEXEC on a descriptor we own returns a new descriptor that nothing
    // else owns, which we wrap at once.
    let moved: RawFd = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, lowest) };
    if moved < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `moved` is a fresh descriptor owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(moved) })
}
