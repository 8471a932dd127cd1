//! The latest line a task printed, for its row in the live region (UI-6).

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
