//! The live status region (UI-6): a few lines kept below the scrolling output on a terminal,
//! redrawn in place with cursor movement only (no alternate screen).
//!
//! How this works: the region is the last thing on the screen, and the cursor rests at the
//! start of the line below it. Everything vx writes goes through [`super::out`] and
//! [`super::stderr`], which first erase the region (cursor up over it, clear to the end of the
//! screen), so output scrolls as if the region were not there; the run loop draws it again at
//! its next tick. It is drawn only when the last byte written ended a line (a task's partial
//! line stays where it is), at most once per [`MIN_INTERVAL`], and [`stop`] erases it for good
//! before the footer. While it is active vx's own diagnostics (`VX_LOG`) go to a file instead
//! of stderr ([`diagnostics`]), so they never land in the middle of it.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Redraws are coalesced to at most one per this interval.
pub const MIN_INTERVAL: Duration = Duration::from_millis(30);
/// How often the run loop redraws it while nothing else happens (the elapsed times tick).
pub const TICK: Duration = Duration::from_millis(100);

struct Region {
    active: bool,
    /// Lines of the region on the screen now.
    drawn: usize,
    /// The last byte written to the terminal ended a line (or nothing was written yet).
    at_line_start: bool,
    last_draw: Option<Instant>,
    /// Where diagnostics go while the region is active.
    log_file: Option<PathBuf>,
}

static REGION: Mutex<Region> = Mutex::new(Region {
    active: false,
    drawn: 0,
    at_line_start: true,
    last_draw: None,
    log_file: None,
});

fn region() -> std::sync::MutexGuard<'static, Region> {
    REGION
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Turns the region on; diagnostics go to `log_file` until [`stop`].
pub fn start(log_file: PathBuf) {
    let mut r = region();
    r.active = true;
    r.log_file = Some(log_file);
}

/// Diagnostics go to `log_file` until [`stop`], without a region (the task UI holds the
/// terminal).
pub fn log_to(log_file: PathBuf) {
    region().log_file = Some(log_file);
}

pub fn is_active() -> bool {
    region().active
}

/// Whether [`draw`] would draw now: the region is on, the cursor is at the start of a line,
/// and the last drawing is at least [`MIN_INTERVAL`] old. The run loop asks before building
/// the lines, so a burst of messages costs nothing.
pub fn due() -> bool {
    let r = region();
    r.active && r.at_line_start && r.last_draw.is_none_or(|at| at.elapsed() >= MIN_INTERVAL)
}

/// Erases the region for good (before the footer, or when the focused flow's requested task
/// starts); diagnostics go back to stderr.
pub fn stop() {
    let mut r = region();
    erase(&mut r);
    r.active = false;
    r.log_file = None;
}

/// Draws `lines` in place of the region, unless one was drawn less than [`MIN_INTERVAL`] ago or
/// the terminal's cursor is in the middle of a line. `(width, height)` is the terminal's size:
/// lines are cut to one column less, so none wraps, and at most half its height are drawn, so
/// none scrolls away; either would break the cursor arithmetic.
pub fn draw(lines: &[String], (width, height): (usize, usize)) {
    let mut r = region();
    if !r.active || !r.at_line_start {
        return;
    }
    if r.last_draw.is_some_and(|at| at.elapsed() < MIN_INTERVAL) {
        return;
    }
    let lines = &lines[..lines.len().min((height / 2).max(1))];
    let mut bytes = erase_sequence(r.drawn);
    for line in lines {
        bytes.extend_from_slice(cut(line, width.saturating_sub(1).max(1)).as_bytes());
        bytes.extend_from_slice(b"\x1b[K\n");
    }
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(&bytes)
        .and_then(|()| stdout.flush())
        .is_ok()
    {
        r.drawn = lines.len();
        r.last_draw = Some(Instant::now());
    }
}

/// Writes `bytes` with `write` (to stdout or stderr), erasing the region first. The region's
/// lock is held throughout and taken before stdout's, as [`draw`] takes them, so two threads
/// writing can never wait for each other. `on_terminal`: the bytes go to the region's
/// terminal, so whether they ended a line matters for the next drawing.
pub(super) fn around_output(bytes: &[u8], on_terminal: bool, write: impl FnOnce(&[u8])) {
    let mut r = region();
    erase(&mut r);
    write(bytes);
    if let Some(&last) = bytes.last().filter(|_| on_terminal) {
        r.at_line_start = last == b'\n';
    }
}

fn erase(r: &mut Region) {
    if r.drawn > 0 {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(&erase_sequence(r.drawn));
        let _ = stdout.flush();
        r.drawn = 0;
    }
}

/// From the line below a region of `lines` lines: to the start of its first line, and clear
/// everything from there down.
fn erase_sequence(lines: usize) -> Vec<u8> {
    if lines == 0 {
        return Vec::new();
    }
    format!("\r\x1b[{lines}A\x1b[J").into_bytes()
}

/// `line` cut to `width` terminal columns as `unicode-width` measures them; escape sequences
/// (colour) do not count and are kept whole, and a reset is added after a cut.
fn cut(line: &str, width: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    let mut out = String::new();
    let mut visible = 0;
    let mut chars = line.chars().peekable();
    let mut cut = false;
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            out.push(c);
            for next in chars.by_ref() {
                out.push(next);
                if next.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        let columns = c.width().unwrap_or(0);
        if visible + columns > width {
            cut = true;
            break;
        }
        out.push(c);
        visible += columns;
    }
    if cut && out.contains('\x1b') {
        out.push_str("\x1b[0m");
    }
    out
}

/// The latest line a task printed, for its row in the region: escape sequences and control
/// characters removed; a line ended by a carriage return (a progress bar) counts as a line.
#[derive(Debug, Default)]
pub struct LastLine {
    /// The latest whole line that was not blank.
    whole: String,
    /// The start of the line being printed (its first [`LastLine::KEEP`] bytes).
    partial: Vec<u8>,
}

impl LastLine {
    /// Bytes kept of a line: more never fits in a row.
    const KEEP: usize = 1024;

    pub fn push(&mut self, bytes: &[u8]) {
        let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n' || *b == b'\r').collect();
        let unfinished = lines.pop().unwrap_or_default();
        if let Some((&first, rest)) = lines.split_first() {
            // The latest line with text that this chunk finishes, if any; the first one
            // continues what was being printed.
            let latest = rest
                .iter()
                .rev()
                .map(|line| clean(&line[..line.len().min(Self::KEEP)]))
                .find(|line| !line.is_empty());
            let latest = latest.or_else(|| {
                self.keep(first);
                Some(clean(&self.partial)).filter(|line| !line.is_empty())
            });
            if let Some(line) = latest {
                self.whole = line;
            }
            self.partial.clear();
        }
        self.keep(unfinished);
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = Self::KEEP.saturating_sub(self.partial.len());
        self.partial
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// What the row shows: the line being printed if it has text yet, else the latest whole.
    pub fn shown(&self) -> String {
        let partial = clean(&self.partial);
        if partial.is_empty() {
            self.whole.clone()
        } else {
            partial
        }
    }
}

/// A line as a row shows it: no escape sequences, tabs as spaces, no other control characters,
/// trimmed.
fn clean(bytes: &[u8]) -> String {
    let plain = strip_ansi_escapes::strip(bytes);
    String::from_utf8_lossy(&plain)
        .chars()
        .filter_map(|c| match c {
            '\t' => Some(' '),
            c if c.is_control() => None,
            c => Some(c),
        })
        .collect::<String>()
        .trim()
        .to_string()
}

/// Where a diagnostic line goes: the log file while the region is active, else stderr.
pub fn diagnostics() -> Box<dyn Write> {
    let path = region().log_file.clone();
    if let Some(path) = path {
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        if let Ok(file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
        {
            return Box::new(file);
        }
    }
    Box::new(std::io::stderr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cut_by_visible_width_keeping_escapes() {
        assert_eq!(cut("abcdef", 4), "abcd");
        assert_eq!(cut("ab", 4), "ab");
        assert_eq!(cut("\x1b[2mabcdef\x1b[0m", 3), "\x1b[2mabc\x1b[0m");
        assert_eq!(cut("▸ é", 3), "▸ é", "one column each, by unicode-width");
        assert_eq!(
            cut("日本語のid", 5),
            "日本",
            "wide characters take two columns"
        );
        assert_eq!(
            cut("e\u{301}x", 2),
            "e\u{301}x",
            "a combining mark takes none"
        );
    }

    #[test]
    fn the_last_line_is_the_latest_one_with_text() {
        let mut last = LastLine::default();
        assert_eq!(last.shown(), "");
        last.push(b"compiling a\ncompil");
        assert_eq!(last.shown(), "compil", "the line being printed");
        last.push(b"ing b\n\n");
        assert_eq!(last.shown(), "compiling b", "a blank line keeps the latest");
        last.push(b"\x1b[32m 50%\x1b[0m\r\t60%\r");
        assert_eq!(
            last.shown(),
            "60%",
            "progress redrawn with a carriage return"
        );
        last.push(b"done\x07\n");
        assert_eq!(last.shown(), "done", "no control characters");
        let long = vec![b'x'; 5000];
        last.push(&long);
        assert_eq!(last.shown().len(), LastLine::KEEP, "bounded");
    }

    #[test]
    fn erasing_moves_up_over_the_region_and_clears_down() {
        assert_eq!(erase_sequence(0), b"");
        assert_eq!(erase_sequence(3), b"\r\x1b[3A\x1b[J");
    }
}
