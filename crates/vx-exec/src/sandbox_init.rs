//! The sandbox's init (SBX-9): vx's own binary, run by bubblewrap as pid 1 of the sandbox's
//! pid namespace as `vx __vx_sandbox_init <control-fd> <report-fd> -- <program> <args>…`
//! (bubblewrap started with `--as-pid-1`: with its own reaper as pid 1 instead, the namespace
//! would outlive init and keep whatever the task left running).
//!
//! How this works: a signal sent to `bwrap` would not reach the task, so vx writes signal
//! names (`INT`, `TERM`, `KILL`), one per line, to the control pipe; init starts the command in
//! a session of its own and forwards each to the command's process group. Init reaps every
//! process (orphans in the namespace are re-parented to it). When the command's leader exits,
//! init writes one report line to the report pipe — `exit <code> <signal> <user µs> <system µs>
//! <max RSS KiB>` — and exits with the leader's code (128 + the signal's number for a signal),
//! and the kernel ends every process still in the namespace: nothing the task started can
//! survive it. If vx dies, the guard kills `bwrap` and init with it (EXEC-7).

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;

use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::Pid;

/// The hidden first argument that makes the vx binary run as the sandbox's init.
pub const INIT_ARG: &str = "__vx_sandbox_init";

/// What init reports about the command (the `exit …` line), parsed by [`parse_report`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitReport {
    pub exit_code: i32,
    /// The signal that ended the leader, or 0.
    pub signal: i32,
    pub user_us: u64,
    pub system_us: u64,
    pub max_rss_kib: u64,
}

/// The words of `INIT_ARG`'s command line after the binary: the two descriptors, `--`, and
/// the command.
pub fn init_args(control: RawFd, report: RawFd, command: &[OsString]) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        INIT_ARG.into(),
        control.to_string().into(),
        report.to_string().into(),
        "--".into(),
    ];
    args.extend(command.iter().cloned());
    args
}

/// Parses the report line init writes.
pub fn parse_report(line: &str) -> Option<InitReport> {
    let mut words = line.split_whitespace();
    if words.next()? != "exit" {
        return None;
    }
    let mut number = || words.next()?.parse::<i64>().ok();
    Some(InitReport {
        exit_code: i32::try_from(number()?).ok()?,
        signal: i32::try_from(number()?).ok()?,
        user_us: u64::try_from(number()?).ok()?,
        system_us: u64::try_from(number()?).ok()?,
        max_rss_kib: u64::try_from(number()?).ok()?,
    })
}

/// Runs as init; returns the exit code. `args` are the process's arguments after
/// [`INIT_ARG`].
pub fn serve(args: &[OsString]) -> i32 {
    let usage = 125;
    let (Some(control), Some(report), Some("--")) = (
        args.first().and_then(|a| a.to_str()?.parse::<RawFd>().ok()),
        args.get(1).and_then(|a| a.to_str()?.parse::<RawFd>().ok()),
        args.get(2).and_then(|a| a.to_str()),
    ) else {
        eprintln!("vx sandbox init: usage: {INIT_ARG} <control-fd> <report-fd> -- <command>…");
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
    let Some((program, rest)) = args[3..].split_first() else {
        eprintln!("vx sandbox init: no command");
        return usage;
    };
    // SAFETY: the two descriptors were created by vx for this process and inherited across
    // bwrap's exec; nothing else in this process owns them.
    let (control, report) =
        unsafe { (OwnedFd::from_raw_fd(control), OwnedFd::from_raw_fd(report)) };
    let mut command = std::process::Command::new(program);
    command.args(rest);
    // SAFETY: `setsid` is async-signal-safe and touches no memory of the parent; the child's
    // only job after it is `exec`.
    unsafe {
        command.pre_exec(|| {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            Ok(())
        });
    }
    let child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            eprintln!(
                "vx sandbox init: cannot start {}: {error}",
                program.to_string_lossy()
            );
            return 127;
        }
    };
    let leader = Pid::from_raw(child.id() as i32);
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
    });
    let (code, signal) = loop {
        match waitpid(None, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == leader => break (code, 0),
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == leader => {
                break (128 + signal as i32, signal as i32)
            }
            Ok(_) => continue,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break (125, 0),
        }
    };
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).ok();
    let micros = |t: nix::sys::time::TimeVal| (t.tv_sec() as u64) * 1_000_000 + t.tv_usec() as u64;
    let line = match usage {
        Some(u) => format!(
            "exit {code} {signal} {} {} {}\n",
            micros(u.user_time()),
            micros(u.system_time()),
            u.max_rss().max(0)
        ),
        None => format!("exit {code} {signal} 0 0 0\n"),
    };
    let _ = std::fs::File::from(report).write_all(line.as_bytes());
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_line_round_trips() {
        assert_eq!(
            parse_report("exit 143 15 1200 300 2048\n"),
            Some(InitReport {
                exit_code: 143,
                signal: 15,
                user_us: 1200,
                system_us: 300,
                max_rss_kib: 2048,
            })
        );
        assert_eq!(parse_report("exit 1 0 x 0 0"), None);
        assert_eq!(parse_report("hello"), None);
        let args = init_args(3, 4, &["sh".into(), "-c".into(), "true".into()]);
        assert_eq!(args[..4], [INIT_ARG, "3", "4", "--"].map(OsString::from));
    }
}
