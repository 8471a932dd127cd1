//! Everything vx prints goes through here; `vx` is the only crate that writes to stdout or
//! stderr, and this module is the only place in it that does.
//!
//! [`out`] and [`stderr`] never fail: a closed stdout (`vx run build | head -1`) turns further
//! stdout writes into no-ops (EXIT-2). [`style`] decides colour (UI-10) and draws glyphs and
//! ids; [`task`] formats frames and one-liners (UI-1, UI-2); [`footer`] the recap and footer
//! (UI-5, UI-7); [`live`] the status region on a terminal (UI-6), which both erase first.

// The one module allowed to print (`crates/vx/clippy.toml`, the lints in `main.rs`).
#![allow(clippy::disallowed_methods, clippy::print_stdout, clippy::print_stderr)]

pub mod ci_log;
pub mod events;
pub mod footer;
pub mod live;
pub mod reporter;
pub mod style;
pub mod task;
pub mod tui;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// What vx would have printed, in order: `true` for stdout, the bytes.
type Held = Vec<(bool, Vec<u8>)>;

/// While the task UI holds the terminal, what vx would print.
static CAPTURED: std::sync::Mutex<Option<Held>> = std::sync::Mutex::new(None);

/// Holds what is printed from now on (`on`), or prints what was held and stops holding.
fn capture(on: bool) {
    let held = {
        let mut captured = CAPTURED.lock().unwrap_or_else(|e| e.into_inner());
        if on {
            *captured = Some(Vec::new());
            return;
        }
        captured.take().unwrap_or_default()
    };
    for (to_stdout, bytes) in held {
        if to_stdout {
            out(&bytes);
        } else {
            stderr(&String::from_utf8_lossy(&bytes));
        }
    }
}

/// Holds `bytes` when the task UI is on; whether it did.
fn captured(to_stdout: bool, bytes: &[u8]) -> bool {
    let mut captured = CAPTURED.lock().unwrap_or_else(|e| e.into_inner());
    match captured.as_mut() {
        Some(held) => {
            held.push((to_stdout, bytes.to_vec()));
            true
        }
        None => false,
    }
}

/// Which of stdin, stdout and stderr are terminals (part of a run snapshot's request).
pub fn terminals() -> [bool; 3] {
    use std::io::IsTerminal;
    [
        std::io::stdin().is_terminal(),
        std::io::stdout().is_terminal(),
        std::io::stderr().is_terminal(),
    ]
}

/// Writes to stdout; after EPIPE (or any write error) further output is discarded.
pub fn out(bytes: &[u8]) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) || captured(true, bytes) {
        return;
    }
    live::around_output(bytes, true, |bytes| {
        let mut stdout = std::io::stdout().lock();
        if stdout
            .write_all(bytes)
            .and_then(|()| stdout.flush())
            .is_err()
        {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
        }
    });
}

pub fn out_str(text: &str) {
    out(text.as_bytes());
}

/// Writes to stderr; errors are ignored (there is nowhere left to report them).
pub fn stderr(text: &str) {
    if captured(false, text.as_bytes()) {
        return;
    }
    static ON_TERMINAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let on_terminal =
        *ON_TERMINAL.get_or_init(|| std::io::IsTerminal::is_terminal(&std::io::stderr()));
    live::around_output(text.as_bytes(), on_terminal, |bytes| {
        let mut stderr = std::io::stderr().lock();
        let _ = stderr.write_all(bytes);
        let _ = stderr.flush();
    });
}

/// vx's stderr, for a child process's stdout and stderr (`vx init --learn` runs tasks and
/// keeps its own stdout for the report); inherited when it cannot be duplicated.
pub fn stderr_for_child() -> std::process::Stdio {
    use std::os::fd::AsFd;
    std::io::stderr().as_fd().try_clone_to_owned().map_or_else(
        |_| std::process::Stdio::inherit(),
        std::process::Stdio::from,
    )
}

/// A `vx: …` status line on stderr (ERR-1).
pub fn notice(text: &str) {
    stderr(&format!("vx: {text}\n"));
}

/// A `warning: …` line on stderr.
pub fn warning(text: &str) {
    stderr(&format!("warning: {text}\n"));
}

/// A notice from the run: `vx: …`, or `warning: …` with its `hint:` line.
pub fn say(notice: vx_engine::outcome::Notice) {
    use vx_engine::outcome::Notice;
    match notice {
        Notice::Note(line) => self::notice(&line),
        Notice::Unmatched { task, what, glob } => {
            self::notice(&format!("{task}: no file matches {what} ({glob})"));
        }
        Notice::Warning { line, hint: None } => warning(&line),
        Notice::Warning {
            line,
            hint: Some(hint),
        } => warning(&format!("{line}\nhint: {hint}")),
    }
}

/// The terminal as the kept servers of `vx watch` print to it, from their own thread.
pub struct Console;

impl vx_engine::report::Console for Console {
    fn out(&self, bytes: &[u8]) {
        out(bytes);
    }

    fn line(&self, text: &str) {
        stderr(&format!("{text}\n"));
    }

    fn notice(&self, notice: vx_engine::outcome::Notice) {
        say(notice);
    }
}
