//! Readiness of persistent tasks with `ready-when` (EXEC-13): [`ReadyMatcher`] finds the first
//! output line that matches the pattern, and [`Waiting`] is what the run loop keeps for a task
//! until then — a matcher per stream and the two moments it wakes for (the not-ready note and
//! the readiness timeout).
//!
//! How matching works: a line ends at `\n` or `\r` (a progress line redrawn with `\r` counts);
//! terminal escape sequences are removed first, also when a sequence or a line is split across
//! read chunks; the unterminated part after the last line end is tested too, so a server that
//! prints `Listening on 8080` without a newline is still seen; and that part keeps only its last
//! 64 KiB, so a task that never ends a line cannot grow vx's memory. Matching sees the bytes as
//! the task wrote them (before secret masking, which changes only what is shown and stored).

use std::time::{Duration, Instant};

use regex::bytes::Regex;
use vx_exec::Stream;

use crate::execute::stripper::Stripper;

/// How much of an unterminated line is kept and tested.
const LINE_WINDOW: usize = 64 * 1024;

/// Tests one stream's lines, chunk by chunk, against a `ready-when` pattern.
pub struct ReadyMatcher {
    regex: Regex,
    stripper: Stripper,
    /// The current line so far, escapes removed: at most [`LINE_WINDOW`] bytes, its tail.
    line: Vec<u8>,
    matched: bool,
}

impl ReadyMatcher {
    pub fn new(regex: Regex) -> ReadyMatcher {
        ReadyMatcher {
            regex,
            stripper: Stripper::new(),
            line: Vec::new(),
            matched: false,
        }
    }

    /// Feeds a chunk of output; true once some line (or the unterminated rest) has matched.
    pub fn push(&mut self, chunk: &[u8]) -> bool {
        if self.matched {
            return true;
        }
        // The stripper keeps `\n` and drops the other C0 controls: turning `\r` into `\n` first
        // makes it a line end, and a tab into a space keeps `Listening\ton` two words for `\s`.
        let chunk: Vec<u8> = chunk
            .iter()
            .map(|&b| match b {
                b'\r' => b'\n',
                b'\t' => b' ',
                b => b,
            })
            .collect();
        let text = self.stripper.push(&chunk);
        for piece in text.split_inclusive(|&b| b == b'\n') {
            let (content, ended) = match piece.strip_suffix(b"\n") {
                Some(content) => (content, true),
                None => (piece, false),
            };
            self.line.extend_from_slice(content);
            if self.line.len() > LINE_WINDOW {
                self.line.drain(..self.line.len() - LINE_WINDOW);
            }
            if ended {
                self.matched = self.regex.is_match(&self.line);
                self.line.clear();
                if self.matched {
                    return true;
                }
            }
        }
        self.matched = !self.line.is_empty() && self.regex.is_match(&self.line);
        self.matched
    }
}

/// A persistent task waiting for its `ready-when` line.
pub struct Waiting {
    /// The pattern as configured, for the note.
    pub pattern: String,
    /// stdout, stderr: lines never mix across streams.
    matchers: [ReadyMatcher; 2],
    /// When to add the not-ready note (`VX_READY_NOTICE` after the spawn); `None` once added.
    pub notice_at: Option<Instant>,
    /// When the readiness timeout expires; `None` without a timeout.
    pub deadline: Option<Instant>,
}

impl Waiting {
    /// Starts waiting at `started`. The pattern was checked when the configuration was loaded;
    /// the error is for a pattern the byte-oriented engine still refuses.
    pub fn new(
        pattern: &str,
        started: Instant,
        notice: Duration,
        timeout: Option<Duration>,
    ) -> Result<Waiting, regex::Error> {
        let regex = Regex::new(pattern)?;
        Ok(Waiting {
            pattern: pattern.to_string(),
            matchers: [ReadyMatcher::new(regex.clone()), ReadyMatcher::new(regex)],
            notice_at: Some(started + notice),
            deadline: timeout.map(|t| started + t),
        })
    }

    /// Feeds output of one stream; true once the task is ready.
    pub fn push(&mut self, stream: Stream, chunk: &[u8]) -> bool {
        let matcher = match stream {
            Stream::Stdout => &mut self.matchers[0],
            Stream::Stderr => &mut self.matchers[1],
        };
        matcher.push(chunk)
    }

    /// The next moment the run loop must wake for this task.
    pub fn next_wake(&self) -> Option<Instant> {
        match (self.notice_at, self.deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(pattern: &str) -> ReadyMatcher {
        ReadyMatcher::new(Regex::new(pattern).unwrap())
    }

    #[test]
    fn a_line_ending_in_newline_matches() {
        let mut m = matcher(r"Listening on \d+");
        assert!(!m.push(b"starting\n"));
        assert!(m.push(b"Listening on 8080\n"));
        assert!(m.push(b"anything after"), "ready stays ready");
    }

    #[test]
    fn a_tab_counts_as_white_space() {
        let mut m = matcher(r"Listening\s+on \d+");
        assert!(m.push(b"Listening\ton 8080\n"));
    }

    #[test]
    fn a_carriage_return_ends_a_line() {
        let mut m = matcher(r"^ready$");
        assert!(!m.push(b"compiling 50%\rcompiling 99%\r"));
        assert!(m.push(b"ready\rmore"));
    }

    #[test]
    fn lines_split_across_chunks_are_joined() {
        let mut m = matcher(r"Listening on \d+");
        assert!(!m.push(b"Liste"));
        assert!(!m.push(b"ning o"));
        assert!(m.push(b"n 8080\n"));
    }

    #[test]
    fn a_pattern_never_spans_two_lines() {
        let mut m = matcher(r"Listening on \d+");
        assert!(!m.push(b"Listening on\n8080\n"));
        let mut m = matcher(r"a.b");
        assert!(!m.push(b"a\rb\n"));
    }

    #[test]
    fn escape_sequences_are_removed_before_matching() {
        let mut m = matcher(r"^Listening on \d+$");
        assert!(m.push(b"\x1b[32mListening\x1b[0m on \x1b[1m8080\x1b[0m\n"));
    }

    #[test]
    fn escape_sequences_split_across_chunks_are_removed() {
        let mut m = matcher(r"^ready on 80$");
        assert!(!m.push(b"\x1b[3"));
        assert!(!m.push(b"2mready on \x1b"));
        assert!(m.push(b"[0m80\n"));
    }

    #[test]
    fn the_unterminated_rest_is_tested() {
        let mut m = matcher(r"Listening on \d+");
        assert!(m.push(b"Listening on 8080"));
    }

    #[test]
    fn a_line_longer_than_the_window_matches_on_its_tail() {
        let mut m = matcher(r"Listening on \d+$");
        let long = vec![b'x'; 3 * LINE_WINDOW];
        assert!(!m.push(&long));
        assert!(m.line.len() <= LINE_WINDOW, "the window is bounded");
        assert!(m.push(b"Listening on 8080\n"));
    }

    #[test]
    fn only_the_last_64_kib_of_an_unterminated_line_are_kept() {
        // The head falls out of the window, so a pattern anchored on it no longer matches.
        let mut m = matcher(r"^HEAD");
        let mut line = b"HEAD".to_vec();
        line.extend(vec![b'x'; LINE_WINDOW]);
        assert!(!m.push(&line));
        assert!(!m.push(b"\n"));
    }

    #[test]
    fn streams_are_matched_apart() {
        let mut w = Waiting::new(r"^ready$", Instant::now(), Duration::from_secs(10), None)
            .expect("a valid pattern");
        assert!(!w.push(Stream::Stdout, b"rea"));
        assert!(
            !w.push(Stream::Stderr, b"dy\n"),
            "half a line on each stream is no line"
        );
        assert!(w.push(Stream::Stderr, b"ready\n"));
    }

    #[test]
    fn waiting_wakes_for_the_notice_and_the_deadline() {
        let t0 = Instant::now();
        let w = Waiting::new(
            "x",
            t0,
            Duration::from_secs(10),
            Some(Duration::from_secs(2)),
        )
        .expect("a valid pattern");
        assert_eq!(w.next_wake(), Some(t0 + Duration::from_secs(2)));
        let w = Waiting::new("x", t0, Duration::from_secs(10), None).expect("a valid pattern");
        assert_eq!(w.next_wake(), Some(t0 + Duration::from_secs(10)));
    }
}
