//! The one explanatory note a failure frame gets (EXEC-12): a missing program, a file that is
//! not executable, CRLF line endings in a `#!` line, the signal that ended the task, or a shell
//! that could not start.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use vx_core::script::program_word;
use vx_exec::ExitReason;

/// What a local task's failure is explained from: the command as written, the directory it
/// ran in, and its `PATH`.
pub(super) struct Shell {
    pub(super) command: String,
    pub(super) dir: PathBuf,
    pub(super) path_var: String,
}

impl Shell {
    /// The note for a failure that ended with `exit` and exit code `code`, if any.
    pub(super) fn why(&self, exit: &ExitReason, code: i32) -> Option<String> {
        match exit {
            ExitReason::SpawnFailed(error) => Some(spawn_note(&self.dir, error)),
            exit => explain(&self.command, exit, code, &self.dir, &self.path_var),
        }
    }
}

/// No shell ran.
fn spawn_note(dir: &Path, error: &std::io::Error) -> String {
    let mut note = format!("vx: could not start `sh` in {}: {error}", dir.display());
    if matches!(error.raw_os_error(), Some(c) if c == nix::libc::EMFILE || c == nix::libc::ENFILE) {
        note.push_str("\n  hint: raise the open-file limit (ulimit -n)");
    }
    note
}

/// Why a task failed, when vx can tell; `None` when the exit code says enough.
pub fn explain(
    command: &str,
    exit: &ExitReason,
    code: i32,
    dir: &Path,
    path_var: &str,
) -> Option<String> {
    if let ExitReason::Signal(signal) = exit {
        return Some(signal_note(*signal, code, true));
    }
    let word = program_word(command).filter(|w| !w.is_empty())?;
    match code {
        126 | 127 if word.contains('/') => file_note(&dir.join(&word), &word, code),
        127 => (!on_path(&word, path_var, dir)).then(|| {
            format!(
                "vx: `{word}` was not found on this task's PATH (project and root node_modules/.bin are searched first; other projects' bins are not visible)"
            )
        }),
        126 => Some(format!(
            "vx: `{word}` is not executable or is a directory\n  hint: chmod +x it, or call it through its interpreter"
        )),
        c if c > 128 && c < 128 + 65 => Some(signal_note(c - 128, code, false)),
        _ => None,
    }
}

fn on_path(word: &str, path_var: &str, dir: &Path) -> bool {
    path_var.split(':').any(|d| {
        let base = if d.is_empty() {
            dir.to_path_buf()
        } else {
            PathBuf::from(d)
        };
        let candidate = if base.is_absolute() {
            base
        } else {
            dir.join(base)
        };
        candidate.join(word).is_file()
    })
}

/// Notes for a first word that is a path (127 or 126).
fn file_note(path: &Path, word: &str, code: i32) -> Option<String> {
    let shown = path.display();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(_) => return Some(format!("vx: `{word}` does not exist ({shown})")),
    };
    if meta.is_dir() {
        return Some(format!("vx: `{word}` is a directory ({shown})"));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Some(format!(
            "vx: `{word}` is not executable by this user ({shown})\n  hint: chmod +x {word}"
        ));
    }
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .ok()?;
    let head = &head[..n];
    if !head.starts_with(b"#!") {
        return (code == 126 || code == 127).then(|| {
            format!("vx: `{word}` has no `#!` line, so the system cannot tell how to run it")
        });
    }
    let line_end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    let line = &head[2..line_end];
    if line.ends_with(b"\r") {
        return Some(format!(
            "vx: the `#!` line of `{word}` ends in a carriage return (CRLF line endings); convert the file to LF"
        ));
    }
    let interpreter = String::from_utf8_lossy(line);
    let interpreter = interpreter
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string();
    if !interpreter.is_empty() && !Path::new(&interpreter).exists() {
        return Some(format!(
            "vx: the interpreter `{interpreter}` named by the `#!` line of `{word}` does not exist"
        ));
    }
    None
}

/// The signal's name and usual cause.
fn signal_note(signal: i32, code: i32, seen: bool) -> String {
    let (name, cause) = match signal {
        9 => ("SIGKILL", "killed by the OOM killer or explicitly"),
        11 => ("SIGSEGV", "a native crash"),
        7 => ("SIGBUS", "a native crash"),
        4 => ("SIGILL", "a native crash"),
        8 => ("SIGFPE", "a native crash"),
        6 => ("SIGABRT", "an abort or a failed assertion"),
        13 => ("SIGPIPE", "the reader of its output went away"),
        24 => ("SIGXCPU", "a resource limit"),
        25 => ("SIGXFSZ", "a resource limit"),
        31 => ("SIGSYS", "a blocked system call"),
        15 => ("SIGTERM", "asked to stop"),
        2 => ("SIGINT", "interrupted"),
        1 => ("SIGHUP", "its terminal went away"),
        3 => ("SIGQUIT", "asked to quit"),
        _ => ("a signal", "signal"),
    };
    if seen {
        format!("vx: ended by {name}: {cause}")
    } else {
        format!("vx: exit {code}, i.e. 128+{signal}: {name}, {cause}")
    }
}
