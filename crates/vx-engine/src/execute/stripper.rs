//! Removes terminal escape sequences from task output when vx does not colour (UI-10), also
//! when a sequence is split across read chunks: the parser state persists between chunks.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// Shared with the writer it is given to; a `Mutex` so a stripper can move between threads
/// (a kept server's output is stripped on the `vx watch` reader thread).
#[derive(Clone, Default)]
struct Collected(Arc<Mutex<Vec<u8>>>);

impl Collected {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Write for Collected {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub struct Stripper {
    writer: strip_ansi_escapes::Writer<Collected>,
    collected: Collected,
}

impl Stripper {
    pub fn new() -> Stripper {
        let collected = Collected::default();
        Stripper {
            writer: strip_ansi_escapes::Writer::new(collected.clone()),
            collected,
        }
    }

    /// Strips a chunk and returns the text that is complete so far.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        let _ = self.writer.write_all(chunk);
        let _ = self.writer.flush();
        self.collected.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_sequences_split_across_chunks() {
        let mut s = Stripper::new();
        let mut out = s.push(b"a\x1b[3");
        out.extend(s.push(b"1mred\x1b[0m b\n"));
        assert_eq!(String::from_utf8(out).unwrap(), "ared b\n");
    }
}
