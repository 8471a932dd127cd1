//! Tracing a task to learn what it reads and writes (`vx init --learn`): vx's own
//! binary run as `vx __vx_learn <report> -- <program> <args>…` in place of the task's
//! `sh -c`, in the task's directory and with the task's environment. It starts the command
//! under the tracer of the sandbox (`trace.rs`, without bubblewrap: the command sees the real
//! tree), writes each distinct access to `<report>` as it ends — `read <path>`, `write
//! <path>`, `net <address:port>`, paths escaped as the sandbox's init escapes them — and exits
//! with the command's code (128 + the signal's number for a signal). If the wrapper is
//! killed, the tracer's `PTRACE_O_EXITKILL` takes every traced process with it.
//! A report that cannot be written is an exit of 125 with one line on stderr: the caller
//! fails closed (the task is not learned).

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use nix::sys::wait::WaitStatus;

use crate::sandbox_init::{decode, encode};
use crate::trace::{Access, AccessKind};

/// The hidden first argument that makes the vx binary trace a task for `--learn`.
pub const LEARN_ARG: &str = "__vx_learn";

/// The variable `vx init --learn` sets for the `vx run` it starts: the directory where each
/// task's trace goes (read by the `vx` binary's local executor).
pub const LEARN_TRACE: &str = "VX_LEARN_TRACE";

/// The name of a task's trace under [`LEARN_TRACE`]: its id with `%` and `/` escaped, so
/// every id is one file name.
pub fn learn_file(id: &str) -> String {
    format!("{}.trace", id.replace('%', "%25").replace('/', "%2F"))
}

/// The wrapper's command line after the binary, for a report at `report`.
pub fn learn_args(report: &Path, program: &Path, args: &[OsString]) -> Vec<OsString> {
    let mut out = vec![
        OsString::from(LEARN_ARG),
        report.as_os_str().to_os_string(),
        OsString::from("--"),
        program.as_os_str().to_os_string(),
    ];
    out.extend(args.iter().cloned());
    out
}

/// Runs the wrapper (the words after [`LEARN_ARG`]); its exit code.
pub fn serve(args: &[OsString]) -> i32 {
    let (Some(report), Some(dashes), Some(program)) = (args.first(), args.get(1), args.get(2))
    else {
        eprintln!("vx learn: usage: {LEARN_ARG} <report> -- <program> [args]");
        return 125;
    };
    if dashes != "--" {
        eprintln!("vx learn: usage: {LEARN_ARG} <report> -- <program> [args]");
        return 125;
    }
    if !crate::trace::supported() {
        eprintln!("vx learn: tracing needs Linux on x86-64");
        return 125;
    }
    let mut file = match std::fs::File::create(report) {
        Ok(file) => file,
        Err(error) => {
            eprintln!(
                "vx learn: cannot write {}: {error}",
                Path::new(report).display()
            );
            return 125;
        }
    };
    let tracer = match crate::trace::spawn_traced(program, &args[3..], false) {
        Ok(tracer) => tracer,
        Err(error) => {
            eprintln!(
                "vx learn: cannot start {}: {error}",
                program.to_string_lossy()
            );
            return 127;
        }
    };
    let mut seen: HashSet<Access> = HashSet::new();
    let mut failed = false;
    let status = tracer.wait_with(|access| {
        if failed || seen.contains(&access) {
            return;
        }
        failed = file.write_all(line(&access).as_bytes()).is_err();
        seen.insert(access);
    });
    if failed || file.flush().is_err() {
        eprintln!("vx learn: cannot write {}", Path::new(report).display());
        return 125;
    }
    match status {
        WaitStatus::Exited(_, code) => code,
        WaitStatus::Signaled(_, signal, _) => 128 + signal as i32,
        _ => 125,
    }
}

fn line(access: &Access) -> String {
    let word = match access.kind {
        AccessKind::Read => "read",
        AccessKind::Write => "write",
        AccessKind::Net => "net",
    };
    format!("{word} {}\n", encode(&access.path))
}

/// The accesses of a report the wrapper wrote; `None` when it cannot be read or holds a
/// line the wrapper does not write.
pub fn read_report(path: &Path) -> Option<Vec<(AccessKind, PathBuf)>> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .map(|l| {
            let (word, rest) = l.split_once(' ')?;
            let kind = match word {
                "read" => AccessKind::Read,
                "write" => AccessKind::Write,
                "net" => AccessKind::Net,
                _ => return None,
            };
            Some((kind, decode(rest)))
        })
        .collect()
}

#[cfg(all(test, target_os = "linux", target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn a_report_reads_back_what_was_written() {
        let dir = std::env::temp_dir().join(format!("vx-learn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let report = dir.join("r");
        let accesses = [
            Access {
                kind: AccessKind::Read,
                path: PathBuf::from("/ws/src/a b%.ts"),
                asked: None,
            },
            Access {
                kind: AccessKind::Write,
                path: PathBuf::from("/ws/dist/a\n.js"),
                asked: None,
            },
        ];
        let text: String = accesses.iter().map(line).collect();
        std::fs::write(&report, text).unwrap();
        assert_eq!(
            read_report(&report).unwrap(),
            [
                (AccessKind::Read, PathBuf::from("/ws/src/a b%.ts")),
                (AccessKind::Write, PathBuf::from("/ws/dist/a\n.js")),
            ]
        );
        std::fs::write(&report, "stat /x\n").unwrap();
        assert!(read_report(&report).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
