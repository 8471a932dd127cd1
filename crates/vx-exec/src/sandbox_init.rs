//! The sandbox's init (SBX-9): vx's own binary, run by bubblewrap as pid 1 of the sandbox's
//! pid namespace as `vx __vx_sandbox_init <control-fd> <report-fd> -- <program> <args>…`
//! (bubblewrap started with `--as-pid-1`: with its own reaper as pid 1 instead, the namespace
//! would outlive init and keep whatever the task left running).
//!
//! How this works: a signal sent to `bwrap` would not reach the task, so vx writes signal
//! names (`INT`, `TERM`, `KILL`), one per line, to the control pipe; init starts the command in
//! a session of its own, traced (`trace.rs`, SBX-7), and forwards each to the command's
//! process group; end-of-file on the control pipe means vx is gone, and init kills the
//! command's group. Until the leader exits, init reaps every process (orphans in the namespace
//! are re-parented to it). The command cannot reach the pipes: they are close-on-exec in init,
//! init makes itself non-dumpable (so `/proc/1/fd` and `/proc/1/mem` are closed to the task,
//! which has no capabilities), and the tracer's filter refuses `ptrace`, `process_vm_*` and
//! `pidfd_getfd`. vx treats a report it cannot parse as no report at all.
//! Each access is reported as it happens — a `read <path>`, `write <path>` or `net
//! <address:port>` line, once per access (`%`, newlines and bytes above ASCII as `%XX`) — and
//! when the command's leader exits, init writes `exit <code> <signal>
//! <user µs> <system µs> <max RSS KiB>` — and exits with the leader's code (128 + the signal's
//! number for a signal), and the kernel ends every process still in the namespace: nothing the
//! task started can survive it. If vx dies, the guard kills `bwrap` and init with it (EXEC-7).

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::WaitStatus;

use std::time::Duration;

use crate::event::ResourceUsage;
use crate::trace::{Access, AccessKind};

/// The hidden first argument that makes the vx binary run as the sandbox's init.
pub const INIT_ARG: &str = "__vx_sandbox_init";

/// What init reports about the command, parsed by [`parse_report`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitReport {
    pub exit_code: i32,
    /// The signal that ended the leader, or 0.
    pub signal: i32,
    pub user_us: u64,
    pub system_us: u64,
    pub max_rss_kib: u64,
    /// The paths the command's processes opened, executed, created, removed or renamed.
    pub accesses: Vec<Access>,
}

/// The loopback port inside the sandbox where init listens for the task's proxied requests
/// and passes each connection on to the proxy's socket (SBX-6).
pub const PROXY_PORT: u16 = 39128;

/// The words of `INIT_ARG`'s command line after the binary: the two descriptors, the proxy's
/// socket (`--proxy PATH`) if any, `--`, and the command.
pub fn init_args(
    control: RawFd,
    report: RawFd,
    proxy: Option<&Path>,
    command: &[OsString],
) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        INIT_ARG.into(),
        control.to_string().into(),
        report.to_string().into(),
    ];
    if let Some(socket) = proxy {
        args.push("--proxy".into());
        args.push(socket.as_os_str().to_owned());
    }
    args.push("--".into());
    args.extend(command.iter().cloned());
    args
}

/// Parses what init wrote to the report pipe: `read <path>` and `write <path>` lines, then the
/// `exit` line; `None` without an `exit` line (init did not finish).
pub fn parse_report(text: &str) -> Option<InitReport> {
    let mut accesses = Vec::new();
    for line in text.lines() {
        match parse_line(line)? {
            ReportLine::Access(access) => accesses.push(access),
            ReportLine::Exit(exit) => {
                let micros = |d: std::time::Duration| d.as_micros() as u64;
                return Some(InitReport {
                    exit_code: exit.exit_code,
                    signal: exit.signal,
                    user_us: micros(exit.usage.user_cpu),
                    system_us: micros(exit.usage.system_cpu),
                    max_rss_kib: exit.usage.max_rss_bytes / 1024,
                    accesses,
                });
            }
        }
    }
    None
}

/// One line of init's report.
pub(crate) enum ReportLine {
    Access(Access),
    Exit(InitExit),
}

/// The command's end as init reported it.
pub(crate) struct InitExit {
    pub exit_code: i32,
    /// The signal that ended the leader, or 0.
    pub signal: i32,
    pub usage: ResourceUsage,
}

/// Parses one line of the report (without its newline); `None` if it is not one.
pub(crate) fn parse_line(line: &str) -> Option<ReportLine> {
    let kinds = [
        ("read ", AccessKind::Read),
        ("write ", AccessKind::Write),
        ("net ", AccessKind::Net),
    ];
    for (word, kind) in kinds {
        if let Some(rest) = line.strip_prefix(word) {
            // `<path>` or `<path>\t<as asked>` (a tab inside a path is encoded).
            let (path, asked) = match rest.split_once('\t') {
                Some((path, asked)) => (path, Some(decode(asked))),
                None => (rest, None),
            };
            return Some(ReportLine::Access(Access {
                kind,
                path: decode(path),
                asked,
            }));
        }
    }
    let mut words = line.split_whitespace();
    if words.next()? != "exit" {
        return None;
    }
    let mut number = || words.next()?.parse::<i64>().ok();
    let exit_code = i32::try_from(number()?).ok()?;
    let signal = i32::try_from(number()?).ok()?;
    let user = u64::try_from(number()?).ok()?;
    let system = u64::try_from(number()?).ok()?;
    let max_rss_kib = u64::try_from(number()?).ok()?;
    Some(ReportLine::Exit(InitExit {
        exit_code,
        signal,
        usage: ResourceUsage {
            user_cpu: Duration::from_micros(user),
            system_cpu: Duration::from_micros(system),
            max_rss_bytes: max_rss_kib * 1024,
        },
    }))
}

/// Runs as init; returns the exit code. `args` are the process's arguments after
/// [`INIT_ARG`].
pub fn serve(args: &[OsString]) -> i32 {
    let usage = 125;
    let (proxy, rest) = match args.get(2).and_then(|a| a.to_str()) {
        Some("--proxy") if args.len() > 3 => (Some(PathBuf::from(&args[3])), 4),
        _ => (None, 2),
    };
    let (Some(control), Some(report), Some("--")) = (
        args.first().and_then(|a| a.to_str()?.parse::<RawFd>().ok()),
        args.get(1).and_then(|a| a.to_str()?.parse::<RawFd>().ok()),
        args.get(rest).and_then(|a| a.to_str()),
    ) else {
        eprintln!("vx sandbox init: usage: {INIT_ARG} <control-fd> <report-fd> [--proxy <socket>] -- <command>…");
        return usage;
    };
    // Two distinct descriptors above the standard streams, or the ownership below would close
    // one twice (or close a standard stream).
    if control == report || control < 3 || report < 3 {
        eprintln!(
            "vx sandbox init: the control and report descriptors must be two distinct ones above 2"
        );
        return usage;
    }
    let Some((program, rest)) = args[rest + 1..].split_first() else {
        eprintln!("vx sandbox init: no command");
        return usage;
    };
    // Both must be open; neither may reach the command (it could forge the report).
    for fd in [control, report] {
        // SAFETY: F_SETFD on a number only sets its flag; on a closed one it fails with EBADF.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
            eprintln!("vx sandbox init: descriptor {fd} is not open");
            return usage;
        }
    }
    // No process of the task may open init's descriptors through /proc or touch its memory:
    // a non-dumpable process is closed to anyone without CAP_SYS_PTRACE.
    if nix::sys::prctl::set_dumpable(false).is_err() {
        eprintln!("vx sandbox init: cannot make itself non-dumpable");
        return usage;
    }
    // SAFETY: the two descriptors, open (checked above), were created by vx for this process
    // and inherited across bwrap's exec; nothing else in this process owns them.
    let (control, report) =
        unsafe { (OwnedFd::from_raw_fd(control), OwnedFd::from_raw_fd(report)) };
    // Listening before the command starts, so its proxy variables work from the first call.
    if let Some(socket) = proxy {
        if let Err(error) = bridge_proxy(socket) {
            eprintln!("vx sandbox init: cannot listen on 127.0.0.1:{PROXY_PORT}: {error}");
            return usage;
        }
    }
    let tracer = match crate::trace::spawn_traced(program, rest, true) {
        Ok(tracer) => tracer,
        Err(error) => {
            eprintln!(
                "vx sandbox init: cannot start {}: {error}",
                program.to_string_lossy()
            );
            return 127;
        }
    };
    let leader = tracer.leader();
    // The command leads its own session and process group: signals go to the group.
    std::thread::spawn(move || {
        for line in BufReader::new(std::fs::File::from(control)).lines() {
            let Ok(line) = line else { break };
            let signal = match line.trim() {
                "INT" => Signal::SIGINT,
                "TERM" => Signal::SIGTERM,
                "KILL" => Signal::SIGKILL,
                _ => continue,
            };
            let _ = killpg(leader, signal);
        }
        // End-of-file: vx is gone (or dropped the task); nothing may outlive its supervision.
        let _ = killpg(leader, Signal::SIGKILL);
    });
    // Each access is reported once, as it happens (a persistent task's violations are shown
    // live, SBX-8); a write blocks while vx has not read the pipe.
    let mut report = std::fs::File::from(report);
    let mut reported: HashSet<Access> = HashSet::new();
    let status = tracer.wait_with(|access| {
        if reported.contains(&access) {
            return;
        }
        let word = match access.kind {
            AccessKind::Read => "read",
            AccessKind::Write => "write",
            AccessKind::Net => "net",
        };
        let line = match &access.asked {
            Some(asked) => format!("{word} {}\t{}\n", encode(&access.path), encode(asked)),
            None => format!("{word} {}\n", encode(&access.path)),
        };
        let _ = report.write_all(line.as_bytes());
        reported.insert(access);
    });
    let (code, signal) = match status {
        WaitStatus::Exited(_, code) => (code, 0),
        WaitStatus::Signaled(_, signal, _) => (128 + signal as i32, signal as i32),
        _ => (125, 0),
    };
    let mut text = String::new();
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).ok();
    let micros = |t: nix::sys::time::TimeVal| (t.tv_sec() as u64) * 1_000_000 + t.tv_usec() as u64;
    text.push_str(&match usage {
        Some(u) => format!(
            "exit {code} {signal} {} {} {}\n",
            micros(u.user_time()),
            micros(u.system_time()),
            u.max_rss().max(0)
        ),
        None => format!("exit {code} {signal} 0 0 0\n"),
    });
    let _ = report.write_all(text.as_bytes());
    code
}

/// SBX-6: accepts connections on the sandbox's loopback and passes each, both ways, to the
/// proxy's Unix socket, on threads of their own (they end with the sandbox).
fn bridge_proxy(socket: PathBuf) -> std::io::Result<()> {
    let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, PROXY_PORT))?;
    std::thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(tcp) = tcp else { continue };
            let socket = socket.clone();
            std::thread::spawn(move || {
                let Ok(unix) = std::os::unix::net::UnixStream::connect(&socket) else {
                    return;
                };
                let (Ok(mut tcp_in), Ok(mut unix_out)) = (tcp.try_clone(), unix.try_clone()) else {
                    return;
                };
                let upstream = std::thread::spawn(move || {
                    let _ = std::io::copy(&mut tcp_in, &mut unix_out);
                    let _ = unix_out.shutdown(std::net::Shutdown::Write);
                });
                let (mut unix_in, mut tcp_out) = (unix, tcp);
                let _ = std::io::copy(&mut unix_in, &mut tcp_out);
                let _ = tcp_out.shutdown(std::net::Shutdown::Write);
                let _ = upstream.join();
            });
        }
    });
    Ok(())
}

/// A path on one report line: `%` and newlines escaped.
pub(crate) fn encode(path: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut text = String::new();
    for &byte in path.as_os_str().as_bytes() {
        if byte == b'%' || byte == b'\n' || byte == b'\r' || byte == b'\t' || !byte.is_ascii() {
            text.push_str(&format!("%{byte:02X}"));
        } else {
            text.push(byte as char);
        }
    }
    text
}

/// The inverse of [`encode`]; a `%` not followed by two hex digits stands for itself.
pub(crate) fn decode(text: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    PathBuf::from(OsString::from_vec(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_round_trips() {
        use std::os::unix::ffi::OsStrExt;
        let raw = std::ffi::OsStr::from_bytes(b"/ws/caf\xc3\xa9/\xff");
        assert_eq!(encode(std::path::Path::new(raw)), "/ws/caf%C3%A9/%FF");
        assert_eq!(decode("/ws/caf%C3%A9/%FF").as_os_str(), raw);
        let odd = std::path::Path::new("/ws/a%b\nc\td");
        let text = format!(
            "read /ws/x\nwrite {}\nread /ws/q\t/proc/self/cwd/../q\nexit 143 15 1200 300 2048\n",
            encode(odd)
        );
        assert_eq!(
            parse_report(&text),
            Some(InitReport {
                exit_code: 143,
                signal: 15,
                user_us: 1200,
                system_us: 300,
                max_rss_kib: 2048,
                accesses: vec![
                    Access {
                        kind: AccessKind::Read,
                        path: PathBuf::from("/ws/x"),
                        asked: None,
                    },
                    Access {
                        kind: AccessKind::Write,
                        path: odd.to_path_buf(),
                        asked: None,
                    },
                    Access {
                        kind: AccessKind::Read,
                        path: PathBuf::from("/ws/q"),
                        asked: Some(PathBuf::from("/proc/self/cwd/../q")),
                    },
                ],
            })
        );
        assert_eq!(parse_report("read /x\n"), None, "no exit line");
        assert_eq!(parse_report("exit 1 0 x 0 0"), None);
        assert_eq!(parse_report("hello"), None);
        let args = init_args(3, 4, None, &["sh".into(), "-c".into(), "true".into()]);
        assert_eq!(args[..4], [INIT_ARG, "3", "4", "--"].map(OsString::from));
        let args = init_args(3, 4, Some(Path::new("/s")), &["true".into()]);
        assert_eq!(
            args,
            [INIT_ARG, "3", "4", "--proxy", "/s", "--", "true"].map(OsString::from)
        );
    }
}
