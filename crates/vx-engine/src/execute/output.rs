//! What a live task printed, on its way to the screen and to the stored log: masked once,
//! stored as records (STORE-6), stripped of colour where the terminal takes none, kept bounded
//! for the frame, its latest line for the region (UI-6), and its prefix after the footer.

use vx_core::mask::Masker;
use vx_core::TaskId;
use vx_exec::Stream;
use vx_store::log::{LogBuf, LogStream};

use super::last_line::LastLine;
use super::stripper::Stripper;

/// One live task's output, from the bytes its process wrote to what is shown and stored.
pub(super) struct TaskOutput {
    /// Secrets masked per stream, a secret split across two reads included.
    maskers: [Masker; 2],
    /// Colour removed per stream when the terminal takes none.
    strippers: Option<[Stripper; 2]>,
    /// The log as stored in an artifact: both streams and notes as records (STORE-6).
    records: LogBuf,
    /// What the frame shows: both streams as printed, bounded like the stored log (STORE-6:
    /// the first and last 8 MiB, the cut named), while every byte still streams live.
    display: LogBuf,
    /// The last byte shown, so notes start on a line of their own.
    last_byte: Option<u8>,
    /// Its latest line, for its row in the live region (UI-6).
    last_line: LastLine,
    /// Output printed with an `<id> │ ` prefix after the footer (keep-alive) is at a line's
    /// start.
    prefix_at_line_start: bool,
}

/// Whether masked bytes also go to the stored log: a kept server's output after its run, and
/// a line about the machine that ran the task, are printed only.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Store {
    Yes,
    No,
}

impl TaskOutput {
    pub(super) fn new(masker: Masker, colour: bool) -> TaskOutput {
        TaskOutput {
            maskers: [masker.clone(), masker],
            strippers: (!colour).then(|| [Stripper::new(), Stripper::new()]),
            records: LogBuf::new(),
            display: LogBuf::new(),
            last_byte: None,
            last_line: LastLine::default(),
            prefix_at_line_start: true,
        }
    }

    /// Bytes the process wrote on `stream`: masked, stored when asked, and returned as they
    /// are to be shown.
    pub(super) fn wrote(&mut self, stream: Stream, bytes: &[u8], store: Store) -> Vec<u8> {
        let s = index(stream);
        let bytes = self.maskers[s].push(bytes);
        if store == Store::Yes {
            self.records.push(log_stream(stream), &bytes);
        }
        match &mut self.strippers {
            Some(strippers) => strippers[s].push(&bytes),
            None => bytes,
        }
    }

    /// The process ended: what the maskers held back (a possible secret's start), both
    /// streams, stored when asked, as it is to be shown.
    pub(super) fn finish(&mut self, store: Store) -> Vec<u8> {
        let mut rest = Vec::new();
        for stream in [Stream::Stdout, Stream::Stderr] {
            let s = index(stream);
            let mut bytes = self.maskers[s].finish();
            if store == Store::Yes {
                self.records.push(log_stream(stream), &bytes);
            }
            if let Some(strippers) = &mut self.strippers {
                bytes = strippers[s].push(&bytes);
            }
            rest.extend(bytes);
        }
        rest
    }

    /// Bytes shown: kept for the frame, and for the region's row when one is drawn.
    pub(super) fn shown(&mut self, bytes: &[u8], region: bool) {
        self.display.push(LogStream::Stdout, bytes);
        self.last_byte = bytes.last().copied();
        if region {
            self.last_line.push(bytes);
        }
    }

    /// A note record (UI-8): stored when asked, and returned as the line to show, on a line of
    /// its own.
    pub(super) fn note(&mut self, text: &str, store: Store) -> Vec<u8> {
        let mut line = Vec::new();
        if self.last_byte.is_some_and(|b| b != b'\n') {
            line.push(b'\n');
        }
        line.extend_from_slice(self.maskers[0].mask_str(text).as_bytes());
        line.push(b'\n');
        if store == Store::Yes {
            self.records.push(LogStream::Note, &line);
        }
        line
    }

    /// Output after the footer, each line prefixed `<id> │ `.
    pub(super) fn prefixed(&mut self, id: &TaskId, bytes: &[u8]) -> Vec<u8> {
        let prefix = format!("{id} │ ");
        let mut text = Vec::new();
        for &b in bytes {
            if self.prefix_at_line_start {
                text.extend_from_slice(prefix.as_bytes());
            }
            text.push(b);
            self.prefix_at_line_start = b == b'\n';
        }
        text
    }

    /// What the frame shows.
    pub(super) fn frame(&self) -> Vec<u8> {
        shown(&self.display)
    }

    /// What the frame would have shown, taken: a kept server's output so far is printed once.
    pub(super) fn take_frame(&mut self) -> Vec<u8> {
        shown(&std::mem::take(&mut self.display))
    }

    /// The stored log, encoded for the artifact.
    pub(super) fn stored(&self) -> Vec<u8> {
        self.records.encode()
    }

    /// Another attempt starts: only the successful attempt's log is stored (EXEC-15).
    pub(super) fn new_attempt(&mut self) {
        self.records = LogBuf::new();
    }

    /// Its latest line, for the region.
    pub(super) fn last_line(&self) -> String {
        self.last_line.shown()
    }
}

/// A bounded display log as the bytes a frame prints: the cut, if any, as a note on a line of
/// its own.
pub(super) fn shown(display: &LogBuf) -> Vec<u8> {
    let mut bytes = Vec::new();
    for record in display.records() {
        if record.stream == LogStream::Note {
            if bytes.last().is_some_and(|b| *b != b'\n') {
                bytes.push(b'\n');
            }
            bytes.extend_from_slice(&record.bytes);
            bytes.push(b'\n');
        } else {
            bytes.extend_from_slice(&record.bytes);
        }
    }
    bytes
}

fn log_stream(stream: Stream) -> LogStream {
    match stream {
        Stream::Stdout => LogStream::Stdout,
        Stream::Stderr => LogStream::Stderr,
    }
}

fn index(stream: Stream) -> usize {
    match stream {
        Stream::Stdout => 0,
        Stream::Stderr => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(secret: &str, colour: bool) -> TaskOutput {
        TaskOutput::new(Masker::new(&[secret.to_string()]), colour)
    }

    #[test]
    fn a_secret_split_across_two_writes_is_masked_shown_and_stored() {
        let mut out = output("hunter2", true);
        let mut shown = out.wrote(Stream::Stdout, b"pass=hun", Store::Yes);
        shown.extend(out.wrote(Stream::Stdout, b"ter2 ok\n", Store::Yes));
        shown.extend(out.finish(Store::Yes));
        let shown = String::from_utf8(shown).unwrap();
        assert!(
            !shown.contains("hunter2") && shown.contains("ok"),
            "{shown}"
        );
        let stored = String::from_utf8_lossy(&out.stored()).into_owned();
        assert!(
            !stored.contains("hunter2") && stored.contains("ok"),
            "{stored}"
        );
    }

    #[test]
    fn a_kept_servers_output_is_not_stored() {
        let mut out = output("unused-secret", true);
        out.wrote(Stream::Stderr, b"listening\n", Store::No);
        out.finish(Store::No);
        assert!(!String::from_utf8_lossy(&out.stored()).contains("listening"));
    }

    #[test]
    fn colour_is_stripped_only_where_the_terminal_takes_none() {
        let coloured = b"\x1b[31mred\x1b[0m\n";
        assert_eq!(
            output("s3cret", true).wrote(Stream::Stdout, coloured, Store::Yes),
            coloured
        );
        assert_eq!(
            output("s3cret", false).wrote(Stream::Stdout, coloured, Store::Yes),
            b"red\n"
        );
    }

    #[test]
    fn a_note_starts_on_a_line_of_its_own_and_is_stored_unless_it_is_an_aside() {
        let mut out = output("s3cret", true);
        out.shown(b"half a line", false);
        assert_eq!(out.note("vx: timed out", Store::Yes), b"\nvx: timed out\n");
        out.shown(b"whole\n", false);
        assert_eq!(
            out.note("vx: lost a worker", Store::No),
            b"vx: lost a worker\n"
        );
        let stored = String::from_utf8_lossy(&out.stored()).into_owned();
        assert!(stored.contains("vx: timed out"), "{stored}");
        assert!(!stored.contains("lost a worker"), "{stored}");
    }

    #[test]
    fn each_line_after_the_footer_is_prefixed_once() {
        let mut out = output("s3cret", true);
        let id = TaskId::new("web", "dev");
        let mut text = out.prefixed(&id, b"a\nb");
        text.extend(out.prefixed(&id, b"c\n"));
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "web#dev │ a\nweb#dev │ bc\n"
        );
    }
}
