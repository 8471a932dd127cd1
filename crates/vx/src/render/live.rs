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

use vx_core::units::{format_duration, format_size};

use super::style::Style;
use vx_engine::report::Region as RegionView;

/// Redraws are coalesced to at most one per this interval.
pub const MIN_INTERVAL: Duration = Duration::from_millis(30);

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

/// Ready persistent tasks pinned at most.
const PINNED_ROWS: usize = 5;

/// The region's lines: ready persistent tasks pinned on top, a row per busy slot with its
/// elapsed time and the task's latest output line, one row for the idle slots and what waits,
/// and the footer's counters.
pub fn lines(style: &Style, region: &RegionView) -> Vec<String> {
    let mut lines = Vec::new();
    for id in region.servers.iter().take(PINNED_ROWS) {
        lines.push(format!("▸ {id} running"));
    }
    if region.servers.len() > PINNED_ROWS {
        lines.push(format!(
            "▸ +{} more running",
            region.servers.len() - PINNED_ROWS
        ));
    }
    for busy in &region.busy {
        let mut row = format!("  {:>7}  {}", format_duration(busy.elapsed), busy.id);
        if busy.remote {
            row.push_str(" @remote");
        }
        if !busy.last_line.is_empty() {
            row.push_str("  ");
            row.push_str(&style.dim(&busy.last_line));
        }
        lines.push(row);
    }
    if region.busy_more > 0 {
        lines.push(format!("  +{} more", region.busy_more));
    }
    // REM-6's downloads, which take no slot: what came so far and how fast.
    for download in &region.downloads {
        let secs = download.elapsed.as_secs_f64();
        let rate = if secs >= 0.1 {
            format!(
                " · {}/s",
                format_size((download.bytes as f64 / secs) as u64)
            )
        } else {
            String::new()
        };
        lines.push(format!(
            "⇣ {:>7}  {}  {}",
            format_duration(download.elapsed),
            download.id,
            style.dim(&format!(
                "downloading {}{rate}",
                format_size(download.bytes)
            ))
        ));
    }
    let mut rest = Vec::new();
    if region.idle > 0 {
        rest.push(format!("{} idle", region.idle));
    }
    if region.ready > 0 {
        rest.push(if region.held > 0 {
            format!("{} ready ({} held for memory)", region.ready, region.held)
        } else {
            format!("{} ready", region.ready)
        });
    }
    if region.on_deps > 0 {
        rest.push(format!("{} waiting for dependencies", region.on_deps));
    }
    if !rest.is_empty() {
        lines.push(style.dim(&format!("        ·  {}", rest.join(" · "))));
    }
    let mut counters = format!("{}/{} tasks", region.done, region.total);
    if region.failed > 0 {
        counters.push_str(&format!(
            " · {}",
            style.red(&format!("{} failed", region.failed))
        ));
    }
    counters.push_str(&format!(
        " · {} cached · {}",
        region.cached,
        format_duration(region.elapsed)
    ));
    lines.push(counters);
    lines
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
    fn the_region_pins_servers_counts_what_it_leaves_out_and_ends_with_the_counters() {
        use std::time::Duration;
        use vx_core::TaskId;
        use vx_engine::report::Busy;
        let id = |t: &str| TaskId::new("p", t);
        let region = RegionView {
            servers: (0..7).map(|n| id(&format!("s{n}"))).collect(),
            busy: vec![
                Busy {
                    elapsed: Duration::from_secs(3),
                    id: id("build"),
                    remote: true,
                    last_line: "compiling".into(),
                },
                Busy {
                    elapsed: Duration::from_secs(1),
                    id: id("lint"),
                    remote: false,
                    last_line: String::new(),
                },
            ],
            busy_more: 4,
            downloads: vec![vx_engine::report::Download {
                id: id("web"),
                bytes: 3 << 20,
                elapsed: Duration::from_secs(2),
            }],
            idle: 1,
            ready: 3,
            held: 2,
            on_deps: 5,
            done: 6,
            total: 20,
            failed: 1,
            cached: 2,
            elapsed: Duration::from_secs(12),
        };
        let lines = lines(&Style { colour: false }, &region);
        assert_eq!(lines.len(), 5 + 1 + 2 + 1 + 1 + 1 + 1, "{lines:#?}");
        assert_eq!(lines[0], "▸ p#s0 running");
        assert_eq!(lines[5], "▸ +2 more running");
        assert!(
            lines[6].ends_with("p#build @remote  compiling"),
            "{}",
            lines[6]
        );
        assert!(lines[7].ends_with("p#lint"), "{}", lines[7]);
        assert_eq!(lines[8], "  +4 more");
        assert_eq!(
            lines[9],
            "⇣   2.00s  p#web  downloading 3.0 MiB · 1.5 MiB/s"
        );
        assert_eq!(
            lines[10],
            "        ·  1 idle · 3 ready (2 held for memory) · 5 waiting for dependencies"
        );
        assert!(
            lines[11].starts_with("6/20 tasks · 1 failed · 2 cached · "),
            "{}",
            lines[11]
        );
    }

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
    fn erasing_moves_up_over_the_region_and_clears_down() {
        assert_eq!(erase_sequence(0), b"");
        assert_eq!(erase_sequence(3), b"\r\x1b[3A\x1b[J");
    }
}
