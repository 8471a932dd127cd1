//! Positions in a document: vx's locations (line and column from 1, columns in characters) and
//! the protocol's (line and character from 0, characters in UTF-16 code units, LSP's default
//! and the one encoding every client speaks).

use lsp_types::{Position, Range};

/// A document's text with the byte offset of each line's start.
pub struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Lines<'a> {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { text, starts }
    }

    /// Line `n` (from 0) without its line break; empty past the end.
    pub fn line(&self, n: usize) -> &'a str {
        let Some(&start) = self.starts.get(n) else {
            return "";
        };
        let end = self.starts.get(n + 1).map_or(self.text.len(), |e| e - 1);
        self.text[start..end].trim_end_matches('\r')
    }

    /// The byte offset of a protocol position, clamped to its line.
    pub fn offset(&self, pos: Position) -> usize {
        let Some(&start) = self.starts.get(pos.line as usize) else {
            return self.text.len();
        };
        let line = self.line(pos.line as usize);
        let mut units = 0u32;
        for (i, c) in line.char_indices() {
            if units >= pos.character {
                return start + i;
            }
            units += c.len_utf16() as u32;
        }
        start + line.len()
    }

    /// The protocol position of a byte offset.
    pub fn position(&self, offset: usize) -> Position {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let character = self.text[start..offset]
            .chars()
            .map(|c| c.len_utf16() as u32)
            .sum();
        Position::new(line as u32, character)
    }

    /// The byte offset of a vx location (line and column from 1, columns in characters).
    pub fn location_offset(&self, line: u32, column: u32) -> usize {
        let n = line.saturating_sub(1) as usize;
        let Some(&start) = self.starts.get(n) else {
            return self.text.len();
        };
        let text = self.line(n);
        let skip = column.saturating_sub(1) as usize;
        start + text.char_indices().nth(skip).map_or(text.len(), |(i, _)| i)
    }

    /// The range of the token a vx location points at: a quoted string whole, else the run of
    /// key characters; at least one character when the line has one there.
    pub fn token_range(&self, line: u32, column: u32) -> Range {
        if line == 0 {
            return Range::new(Position::new(0, 0), Position::new(0, 0));
        }
        let start = self.location_offset(line, column);
        let end = start + token_len(&self.text[start..]);
        Range::new(self.position(start), self.position(end))
    }
}

/// The length in bytes of the TOML or JSON token at the start of `rest` (within its line).
fn token_len(rest: &str) -> usize {
    let line = rest.split('\n').next().unwrap_or("");
    let mut chars = line.char_indices();
    match chars.next() {
        None => 0,
        Some((_, q @ ('"' | '\''))) => {
            let mut escaped = false;
            for (i, c) in chars {
                if c == q && !escaped {
                    return i + 1;
                }
                escaped = q == '"' && c == '\\' && !escaped;
            }
            line.len()
        }
        Some((_, c)) if is_word(c) => line
            .char_indices()
            .find(|&(_, c)| !is_word(c))
            .map_or(line.len(), |(i, _)| i),
        Some((_, c)) => c.len_utf8(),
    }
}

/// A character of a bare key, a number, a task id or a name.
pub fn is_word(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '#' | '^' | '@' | '/' | ':' | '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units_and_locations_characters() {
        let text = "a = \"é😀x\"\nb = 1\n";
        let lines = Lines::new(text);
        // The `x`: character 3 of the string's content, 1 + 2 UTF-16 units after its start.
        let x = text.find('x').unwrap();
        assert_eq!(lines.position(x), Position::new(0, 8));
        assert_eq!(lines.offset(Position::new(0, 8)), x);
        assert_eq!(lines.location_offset(1, 8), x);
        assert_eq!(lines.offset(Position::new(1, 99)), text.len() - 1);
        assert_eq!(lines.line(1), "b = 1");
        assert_eq!(lines.line(5), "");
    }

    #[test]
    fn a_token_is_a_quoted_string_or_a_word() {
        let lines = Lines::new("depends-on = [\"^bu\\\"ild\", pkg#x]\n");
        assert_eq!(
            lines.token_range(1, 15),
            Range::new(Position::new(0, 14), Position::new(0, 24))
        );
        assert_eq!(
            lines.token_range(1, 1),
            Range::new(Position::new(0, 0), Position::new(0, 10))
        );
        assert_eq!(
            lines.token_range(1, 27),
            Range::new(Position::new(0, 26), Position::new(0, 31))
        );
    }
}
