//! Removes terminal escape sequences from task output when vx does not colour (UI-10), also
//! when a sequence is split across read chunks: the parser state persists between chunks.

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;

#[derive(Clone, Default)]
struct Collected(Rc<RefCell<Vec<u8>>>);

impl Write for Collected {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
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
        std::mem::take(&mut *self.collected.0.borrow_mut())
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
