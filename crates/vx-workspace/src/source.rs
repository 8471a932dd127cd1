//! Byte offsets to `path:line:column` (ERR-2) for the files vx reads: `vx.toml`,
//! `package.json` and `pnpm-workspace.yaml`.
//!
//! Parsers report byte offsets; users read lines and columns, and columns count characters so
//! that a name with non-ASCII letters still points at the right place.

use vx_core::Location;

/// One configuration file's text with a line index.
pub(crate) struct SourceText<'a> {
    pub(crate) text: &'a str,
    line_starts: Vec<usize>,
    /// Root-relative path with `/` separators, as shown in messages: shared by every location
    /// made here.
    file: std::sync::Arc<str>,
}

impl<'a> SourceText<'a> {
    pub(crate) fn new(file: &'a str, text: &'a str) -> SourceText<'a> {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        SourceText {
            text,
            line_starts,
            file: file.into(),
        }
    }

    /// The location of byte `offset` (clamped to the text).
    pub(crate) fn location(&self, offset: usize) -> Location {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&start| start <= offset) - 1;
        let start = self.line_starts[line];
        // An offset inside a multi-byte character counts as that character.
        let column = self.text[start..]
            .char_indices()
            .take_while(|(i, _)| start + i < offset)
            .count();
        Location::new(self.file.clone(), line as u32 + 1, column as u32 + 1)
    }

    /// Where a string token starts: toml-span's spans of quoted keys and string values leave
    /// the quotes out, but a message should point at the opening quote, as an editor does.
    pub(crate) fn quoted_start(&self, offset: usize) -> usize {
        let before = &self.text.as_bytes()[..offset.min(self.text.len())];
        if before.ends_with(b"\"\"\"") || before.ends_with(b"'''") {
            offset - 3
        } else if before.ends_with(b"\"") || before.ends_with(b"'") {
            offset - 1
        } else {
            offset
        }
    }
}

/// The location of the first byte that is not UTF-8, for a file that must be UTF-8 (CFG-1).
pub(crate) fn invalid_utf8(file: &str, bytes: &[u8], error: &std::str::Utf8Error) -> Location {
    let valid = std::str::from_utf8(&bytes[..error.valid_up_to()]).unwrap_or_default();
    SourceText::new(file, valid).location(valid.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_count_from_one_in_characters() {
        let text = "ab\nçé = 1\n";
        let source = SourceText::new("vx.toml", text);
        assert_eq!(source.location(0).to_string(), "vx.toml:1:1");
        assert_eq!(source.location(3).to_string(), "vx.toml:2:1");
        // `=` follows two two-byte characters and a space.
        assert_eq!(source.location(8).to_string(), "vx.toml:2:4");
        assert_eq!(source.location(text.len()).to_string(), "vx.toml:3:1");
    }

    #[test]
    fn quoted_tokens_start_at_the_quote() {
        let source = SourceText::new("vx.toml", "name = \"web\"\nx = '''y'''");
        assert_eq!(source.quoted_start(8), 7);
        assert_eq!(source.quoted_start(24), 21);
        assert_eq!(source.quoted_start(0), 0);
    }
}
