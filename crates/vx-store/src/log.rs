//! The stored log of a task (STORE-6): bounded capture while the task runs, and the `log` entry
//! format of an artifact.
//!
//! [`LogBuf`] receives chunks in the order vx read them from the task's pipes and keeps them as
//! records (consecutive chunks of one stream are merged). Capture is bounded: the first `head`
//! bytes are kept in a plain buffer, the last bytes in a ring that is trimmed from the front as
//! more arrives, so memory stays O(head + tail) however much the task prints. When anything was
//! dropped, [`LogBuf::records`] puts one note record `vx: <n.n> MiB of output not kept` where the
//! middle was. Cuts never split a UTF-8 sequence: the head gives back a partial sequence at its
//! end, and the tail skips continuation bytes at its front.
//!
//! [`LogBuf::encode`] writes the stored form: the magic `VXLOG\x01`, then per record
//! `stream (1 byte) ‖ u32le(length) ‖ bytes`; [`decode`] reads it back.

use std::collections::VecDeque;

use crate::artifact::Damage;

/// The magic that starts every stored log.
pub const MAGIC: &[u8; 6] = b"VXLOG\x01";

/// Bytes kept from the start and from the end of a task's output (8 MiB each).
pub const DEFAULT_LIMIT: usize = 8 << 20;

/// Where a record's bytes came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum LogStream {
    Stdout = 1,
    Stderr = 2,
    /// A line vx itself adds: cut lines, timeout lines, verdicts.
    Note = 3,
}

impl LogStream {
    fn from_byte(byte: u8) -> Option<LogStream> {
        match byte {
            1 => Some(LogStream::Stdout),
            2 => Some(LogStream::Stderr),
            3 => Some(LogStream::Note),
            _ => None,
        }
    }
}

/// One record of a log: bytes from one stream, in arrival order relative to the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    pub stream: LogStream,
    pub bytes: Vec<u8>,
}

/// A run of `len` bytes of one stream inside a buffer.
#[derive(Debug, Clone, Copy)]
struct Segment {
    stream: LogStream,
    len: usize,
}

/// Bounded capture of a task's ordered output.
#[derive(Debug, Clone)]
pub struct LogBuf {
    head_limit: usize,
    tail_limit: usize,
    head: Vec<u8>,
    head_segments: Vec<Segment>,
    /// Set once a byte did not fit in the head; from then on everything goes to the tail.
    head_sealed: bool,
    tail: VecDeque<u8>,
    tail_segments: VecDeque<Segment>,
    /// Bytes dropped between head and tail.
    dropped: u64,
    /// The last (at most three) dropped bytes.
    dropped_end: Vec<u8>,
    /// Every byte ever pushed.
    received: u64,
}

impl Default for LogBuf {
    fn default() -> Self {
        LogBuf::new()
    }
}

impl LogBuf {
    /// A buffer keeping the first and the last 8 MiB.
    pub fn new() -> LogBuf {
        LogBuf::with_limits(DEFAULT_LIMIT, DEFAULT_LIMIT)
    }

    /// A buffer keeping the first `head` and the last `tail` bytes.
    pub fn with_limits(head: usize, tail: usize) -> LogBuf {
        LogBuf {
            head_limit: head,
            tail_limit: tail,
            head: Vec::new(),
            head_segments: Vec::new(),
            head_sealed: false,
            tail: VecDeque::new(),
            tail_segments: VecDeque::new(),
            dropped: 0,
            dropped_end: Vec::new(),
            received: 0,
        }
    }

    /// Appends a chunk read from `stream`.
    pub fn push(&mut self, stream: LogStream, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.received += bytes.len() as u64;
        let mut rest = bytes;
        if !self.head_sealed {
            let room = self.head_limit - self.head.len();
            let take = room.min(rest.len());
            if take > 0 {
                self.head.extend_from_slice(&rest[..take]);
                add_segment(&mut self.head_segments, stream, take);
            }
            rest = &rest[take..];
            if rest.is_empty() {
                return;
            }
            self.seal_head(stream, rest[0]);
        }
        self.push_tail(stream, rest);
    }

    /// The head is full and `next` did not fit: give back a UTF-8 sequence that `next` would
    /// continue, so the head ends on a character boundary. The given-back bytes start the tail.
    fn seal_head(&mut self, stream: LogStream, next: u8) {
        self.head_sealed = true;
        let Some(last) = self.head_segments.last().copied() else {
            return;
        };
        if last.stream != stream || !is_continuation(next) {
            return;
        }
        let end = self.head.len();
        let give_back = partial_sequence_len(&self.head[end - last.len..]);
        if give_back == 0 {
            return;
        }
        let returned: Vec<u8> = self.head.drain(end - give_back..).collect();
        shrink_last(&mut self.head_segments, give_back);
        self.push_tail(stream, &returned);
    }

    fn push_tail(&mut self, stream: LogStream, bytes: &[u8]) {
        // The tail may use whatever the head left unused, so that nothing is dropped until
        // more than head + tail bytes arrived.
        let capacity = self.head_limit + self.tail_limit - self.head.len();
        let bytes = if bytes.len() > capacity {
            // Only the end of a large chunk can survive: drop everything before it at once.
            self.drop_front(self.tail.len());
            let (gone, kept) = bytes.split_at(bytes.len() - capacity);
            self.dropped += gone.len() as u64;
            self.remember_dropped(gone.iter().copied());
            kept
        } else {
            bytes
        };
        self.tail.extend(bytes);
        match self.tail_segments.back_mut() {
            Some(last) if last.stream == stream => last.len += bytes.len(),
            _ => self.tail_segments.push_back(Segment {
                stream,
                len: bytes.len(),
            }),
        }
        self.drop_front(self.tail.len().saturating_sub(capacity));
        if self.dropped > 0 {
            // Never start the kept tail inside a UTF-8 sequence whose lead byte was dropped.
            let split = partial_sequence_len(&self.dropped_end);
            if split > 0 {
                let lead = self.dropped_end[self.dropped_end.len() - split];
                let missing = sequence_len(lead) - split;
                let skip = self
                    .tail
                    .iter()
                    .take(missing)
                    .take_while(|b| is_continuation(**b))
                    .count();
                self.drop_front(skip);
            }
        }
    }

    /// Drops `n` bytes from the front of the tail.
    fn drop_front(&mut self, mut n: usize) {
        if n == 0 {
            return;
        }
        self.dropped += n as u64;
        let gone: Vec<u8> = self.tail.range(n.saturating_sub(3)..n).copied().collect();
        self.remember_dropped(gone.into_iter());
        self.tail.drain(..n);
        while n > 0 {
            let Some(front) = self.tail_segments.front_mut() else {
                break;
            };
            if front.len <= n {
                n -= front.len;
                self.tail_segments.pop_front();
            } else {
                front.len -= n;
                n = 0;
            }
        }
    }

    /// Keeps the last three dropped bytes, to tell whether the tail starts inside a sequence.
    fn remember_dropped(&mut self, bytes: impl DoubleEndedIterator<Item = u8>) {
        let last: Vec<u8> = bytes.rev().take(3).collect();
        self.dropped_end.extend(last.into_iter().rev());
        let excess = self.dropped_end.len().saturating_sub(3);
        self.dropped_end.drain(..excess);
    }

    /// True when nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.received == 0
    }

    /// Every byte pushed, kept or not.
    pub fn len_bytes(&self) -> u64 {
        self.received
    }

    /// Bytes dropped from the middle.
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped
    }

    /// The kept records in order, with the cut note where the middle was dropped.
    pub fn records(&self) -> Vec<LogRecord> {
        let mut out = Vec::new();
        let mut at = 0;
        for segment in &self.head_segments {
            out.push(LogRecord {
                stream: segment.stream,
                bytes: self.head[at..at + segment.len].to_vec(),
            });
            at += segment.len;
        }
        if self.dropped > 0 {
            out.push(LogRecord {
                stream: LogStream::Note,
                bytes: cut_note(self.dropped).into_bytes(),
            });
        }
        let mut bytes = self.tail.iter().copied();
        for segment in &self.tail_segments {
            let record: Vec<u8> = bytes.by_ref().take(segment.len).collect();
            // A record of the same stream as the last head record continues it when nothing
            // was dropped in between.
            match out.last_mut() {
                Some(last) if last.stream == segment.stream => last.bytes.extend(record),
                _ => out.push(LogRecord {
                    stream: segment.stream,
                    bytes: record,
                }),
            }
        }
        out
    }

    /// The stored form of [`LogBuf::records`].
    pub fn encode(&self) -> Vec<u8> {
        encode(&self.records())
    }
}

/// The note that replaces a dropped middle.
pub fn cut_note(dropped: u64) -> String {
    format!(
        "vx: {:.1} MiB of output not kept",
        dropped as f64 / f64::from(1u32 << 20)
    )
}

/// Writes records in the stored form (magic, then `stream ‖ u32le(len) ‖ bytes` each).
pub fn encode(records: &[LogRecord]) -> Vec<u8> {
    let total: usize = records.iter().map(|r| 5 + r.bytes.len()).sum();
    let mut out = Vec::with_capacity(MAGIC.len() + total);
    out.extend_from_slice(MAGIC);
    for record in records {
        // A record longer than u32 cannot come from a LogBuf (its limits are far smaller);
        // split it anyway so encoding never fails.
        for part in record
            .bytes
            .chunks(u32::MAX as usize)
            .filter(|p| !p.is_empty())
        {
            out.push(record.stream as u8);
            out.extend_from_slice(&(part.len() as u32).to_le_bytes());
            out.extend_from_slice(part);
        }
    }
    out
}

/// Reads a stored log back.
pub fn decode(bytes: &[u8]) -> Result<Vec<LogRecord>, Damage> {
    let bad = || Damage::new("bad log");
    let mut rest = bytes.strip_prefix(MAGIC.as_slice()).ok_or_else(bad)?;
    let mut records = Vec::new();
    while let Some((&stream, after)) = rest.split_first() {
        let stream = LogStream::from_byte(stream).ok_or_else(bad)?;
        let (len, after) = after.split_first_chunk::<4>().ok_or_else(bad)?;
        let len = u32::from_le_bytes(*len) as usize;
        if after.len() < len {
            return Err(bad());
        }
        let (body, after) = after.split_at(len);
        records.push(LogRecord {
            stream,
            bytes: body.to_vec(),
        });
        rest = after;
    }
    Ok(records)
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// How many bytes at the end of `bytes` form the start of a UTF-8 sequence that needs more
/// bytes than are there (0 when `bytes` ends on a character boundary).
fn partial_sequence_len(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let byte = bytes[bytes.len() - back];
        if is_continuation(byte) {
            continue;
        }
        let needed = sequence_len(byte);
        return if needed > back { back } else { 0 };
    }
    0
}

/// The length of the UTF-8 sequence `lead` starts (1 for ASCII and invalid bytes).
fn sequence_len(lead: u8) -> usize {
    match lead {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => 1,
    }
}

fn add_segment(segments: &mut Vec<Segment>, stream: LogStream, len: usize) {
    match segments.last_mut() {
        Some(last) if last.stream == stream => last.len += len,
        _ => segments.push(Segment { stream, len }),
    }
}

fn shrink_last(segments: &mut Vec<Segment>, by: usize) {
    if let Some(last) = segments.last_mut() {
        last.len -= by;
        if last.len == 0 {
            segments.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(stream: LogStream, bytes: &[u8]) -> LogRecord {
        LogRecord {
            stream,
            bytes: bytes.to_vec(),
        }
    }

    fn kept(buf: &LogBuf) -> Vec<u8> {
        buf.records()
            .into_iter()
            .filter(|r| r.stream != LogStream::Note)
            .flat_map(|r| r.bytes)
            .collect()
    }

    #[test]
    fn order_is_preserved_across_streams_and_same_stream_chunks_merge() {
        let mut buf = LogBuf::new();
        buf.push(LogStream::Stdout, b"a");
        buf.push(LogStream::Stdout, b"b");
        buf.push(LogStream::Stderr, b"c");
        buf.push(LogStream::Note, b"n");
        buf.push(LogStream::Stdout, b"\r\0d");
        assert_eq!(
            buf.records(),
            vec![
                rec(LogStream::Stdout, b"ab"),
                rec(LogStream::Stderr, b"c"),
                rec(LogStream::Note, b"n"),
                rec(LogStream::Stdout, b"\r\0d"),
            ]
        );
        assert_eq!(buf.len_bytes(), 7);
        assert!(!buf.is_empty());
        assert!(LogBuf::new().is_empty());
    }

    #[test]
    fn encode_decode_round_trip() {
        let mut buf = LogBuf::with_limits(4, 4);
        buf.push(LogStream::Stdout, b"hello ");
        buf.push(LogStream::Stderr, b"oops\n");
        buf.push(LogStream::Stdout, b"world\n");
        let encoded = buf.encode();
        assert!(encoded.starts_with(b"VXLOG\x01"));
        assert_eq!(decode(&encoded).unwrap(), buf.records());
        assert_eq!(decode(b"VXLOG\x01").unwrap(), vec![]);
        assert_eq!(
            &encode(&[rec(LogStream::Stderr, b"xy")])[6..],
            b"\x02\x02\x00\x00\x00xy"
        );
    }

    #[test]
    fn decode_rejects_damaged_logs() {
        for bad in [
            &b"VXLOG\x02"[..],
            b"",
            b"VXLOG\x01\x04\x00\x00\x00\x00",
            b"VXLOG\x01\x01\x05\x00\x00\x00abc",
            b"VXLOG\x01\x01\x05\x00",
        ] {
            assert_eq!(decode(bad).unwrap_err().reason, "bad log", "{bad:?}");
        }
    }

    #[test]
    fn nothing_is_dropped_up_to_head_plus_tail() {
        let mut buf = LogBuf::with_limits(4, 4);
        buf.push(LogStream::Stdout, b"abc");
        buf.push(LogStream::Stderr, b"defgh");
        assert_eq!(
            buf.records(),
            vec![
                rec(LogStream::Stdout, b"abc"),
                rec(LogStream::Stderr, b"defgh")
            ]
        );
        assert_eq!(buf.dropped_bytes(), 0);
    }

    #[test]
    fn bound_holds_and_the_middle_becomes_one_note() {
        let mut buf = LogBuf::with_limits(4, 4);
        for i in 0..1000u32 {
            let stream = if i % 3 == 0 {
                LogStream::Stderr
            } else {
                LogStream::Stdout
            };
            buf.push(stream, format!("{:03}|", i % 1000).as_bytes());
        }
        let records = buf.records();
        let notes: Vec<_> = records
            .iter()
            .filter(|r| r.stream == LogStream::Note)
            .collect();
        assert_eq!(notes.len(), 1);
        assert_eq!(kept(&buf), b"000|999|");
        assert_eq!(records[0], rec(LogStream::Stderr, b"000|"));
        assert_eq!(records[1].stream, LogStream::Note);
        assert_eq!(buf.dropped_bytes(), 4000 - 8);
        assert_eq!(buf.len_bytes(), 4000);
    }

    #[test]
    fn memory_stays_bounded_for_huge_output() {
        let mut buf = LogBuf::with_limits(1024, 1024);
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..64 {
            buf.push(LogStream::Stdout, &chunk);
            buf.push(LogStream::Stderr, b"e");
        }
        assert!(buf.head.capacity() <= 2048);
        assert!(buf.tail.len() <= 1024);
        assert!(buf.tail_segments.len() <= 1024);
        assert_eq!(buf.dropped_bytes(), 64 * ((1 << 20) + 1) - 2048);
    }

    #[test]
    fn cut_note_text() {
        assert_eq!(cut_note(3 << 20), "vx: 3.0 MiB of output not kept");
        assert_eq!(cut_note(1_572_864), "vx: 1.5 MiB of output not kept");
        let mut buf = LogBuf::with_limits(2, 2);
        buf.push(LogStream::Stdout, b"ab");
        buf.push(LogStream::Stdout, &vec![b'-'; 5 << 20]);
        buf.push(LogStream::Stdout, b"yz");
        assert_eq!(
            buf.records(),
            vec![
                rec(LogStream::Stdout, b"ab"),
                rec(LogStream::Note, b"vx: 5.0 MiB of output not kept"),
                rec(LogStream::Stdout, b"yz"),
            ]
        );
    }

    #[test]
    fn cuts_never_split_a_utf8_sequence() {
        // "é" is 2 bytes, "€" 3, "😀" 4; whatever the limits, kept text stays valid UTF-8.
        let text = "aé€😀b".repeat(50);
        for head in 0..12 {
            for tail in 0..12 {
                let mut buf = LogBuf::with_limits(head, tail);
                for chunk in text.as_bytes().chunks(5) {
                    buf.push(LogStream::Stdout, chunk);
                }
                for record in buf.records() {
                    let s = std::str::from_utf8(&record.bytes)
                        .unwrap_or_else(|_| panic!("split at head {head} tail {tail}"));
                    assert!(text.starts_with(s) || text.ends_with(s) || s.starts_with("vx: "));
                }
                let kept = kept(&buf).len() as u64;
                assert_eq!(kept + buf.dropped_bytes(), text.len() as u64);
                assert!(kept <= (head + tail) as u64);
            }
        }
    }

    #[test]
    fn invalid_utf8_counts_as_single_bytes() {
        let mut buf = LogBuf::with_limits(2, 2);
        buf.push(LogStream::Stdout, &[0x80; 10]);
        let records = buf.records();
        assert_eq!(records[0], rec(LogStream::Stdout, &[0x80, 0x80]));
        assert_eq!(records[1].stream, LogStream::Note);
        assert_eq!(kept(&buf), [0x80; 4]);
        assert_eq!(buf.dropped_bytes(), 6);
    }
}
