//! A small JSON parser that keeps the byte offset of every key and value, so errors about a
//! `package.json` can name `path:line:column` (ERR-2).
//!
//! serde_json only reports positions for syntax errors; vx also needs the position of a
//! dependency entry it refuses (DISC-5), so the manifest is parsed into this spanned tree.
//! Objects keep their entries in file order; lookups take the last duplicate, as `JSON.parse`
//! does.

/// A JSON value and the offset of its first byte.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Json {
    pub(crate) offset: usize,
    pub(crate) kind: JsonKind,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum JsonKind {
    Null,
    Bool(bool),
    /// Kept as written; vx never computes with numbers from a manifest.
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<JsonEntry>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JsonEntry {
    pub(crate) key: String,
    /// Offset of the key's opening quote.
    pub(crate) key_offset: usize,
    pub(crate) value: Json,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonError {
    pub(crate) offset: usize,
    pub(crate) message: String,
}

impl Json {
    pub(crate) fn entry(&self, key: &str) -> Option<&JsonEntry> {
        match &self.kind {
            JsonKind::Object(entries) => entries.iter().rev().find(|e| e.key == key),
            _ => None,
        }
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match &self.kind {
            JsonKind::String(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn type_name(&self) -> &'static str {
        match self.kind {
            JsonKind::Null => "null",
            JsonKind::Bool(_) => "a boolean",
            JsonKind::Number(_) => "a number",
            JsonKind::String(_) => "a string",
            JsonKind::Array(_) => "an array",
            JsonKind::Object(_) => "an object",
        }
    }
}

/// Deep enough for any real manifest, shallow enough that a hostile file cannot overflow the
/// stack of the recursive descent.
const MAX_DEPTH: usize = 256;

pub(crate) fn parse(text: &str) -> Result<Json, JsonError> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    // npm tolerates a byte-order mark; so does vx.
    if text.starts_with('\u{feff}') {
        parser.pos = 3;
    }
    parser.skip_space();
    let value = parser.value(0)?;
    parser.skip_space();
    if parser.pos < parser.bytes.len() {
        return Err(parser.error("unexpected text after the JSON value"));
    }
    Ok(value)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, message: impl Into<String>) -> JsonError {
        JsonError {
            offset: self.pos,
            message: message.into(),
        }
    }

    fn unexpected(&self, expected: &str) -> JsonError {
        match self.text[self.pos..].chars().next() {
            Some(c) => self.error(format!("expected {expected}, found `{c}`")),
            None => self.error(format!("expected {expected}, found the end of the file")),
        }
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, JsonError> {
        if depth > MAX_DEPTH {
            return Err(self.error("the JSON is nested too deeply"));
        }
        let offset = self.pos;
        let kind = match self.bytes.get(self.pos) {
            Some(b'{') => self.object(depth)?,
            Some(b'[') => self.array(depth)?,
            Some(b'"') => JsonKind::String(self.string()?),
            Some(b'-' | b'0'..=b'9') => self.number()?,
            Some(b't') => self.word("true", JsonKind::Bool(true))?,
            Some(b'f') => self.word("false", JsonKind::Bool(false))?,
            Some(b'n') => self.word("null", JsonKind::Null)?,
            _ => return Err(self.unexpected("a value")),
        };
        Ok(Json { offset, kind })
    }

    fn word(&mut self, word: &str, kind: JsonKind) -> Result<JsonKind, JsonError> {
        if self.text[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(kind)
        } else {
            Err(self.unexpected("a value"))
        }
    }

    fn object(&mut self, depth: usize) -> Result<JsonKind, JsonError> {
        self.pos += 1;
        let mut entries = Vec::new();
        self.skip_space();
        if self.bytes.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Ok(JsonKind::Object(entries));
        }
        loop {
            self.skip_space();
            if self.bytes.get(self.pos) != Some(&b'"') {
                return Err(self.unexpected("a quoted key"));
            }
            let key_offset = self.pos;
            let key = self.string()?;
            self.skip_space();
            if self.bytes.get(self.pos) != Some(&b':') {
                return Err(self.unexpected("`:`"));
            }
            self.pos += 1;
            self.skip_space();
            let value = self.value(depth + 1)?;
            entries.push(JsonEntry {
                key,
                key_offset,
                value,
            });
            self.skip_space();
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(JsonKind::Object(entries));
                }
                _ => return Err(self.unexpected("`,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<JsonKind, JsonError> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_space();
        if self.bytes.get(self.pos) == Some(&b']') {
            self.pos += 1;
            return Ok(JsonKind::Array(items));
        }
        loop {
            self.skip_space();
            items.push(self.value(depth + 1)?);
            self.skip_space();
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(JsonKind::Array(items));
                }
                _ => return Err(self.unexpected("`,` or `]`")),
            }
        }
    }

    fn number(&mut self) -> Result<JsonKind, JsonError> {
        let start = self.pos;
        let digits = |p: &mut Parser| {
            let from = p.pos;
            while p.bytes.get(p.pos).is_some_and(u8::is_ascii_digit) {
                p.pos += 1;
            }
            p.pos > from
        };
        if self.bytes.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        if self.bytes.get(self.pos) == Some(&b'0') {
            self.pos += 1;
        } else if !digits(self) {
            return Err(self.unexpected("a digit"));
        }
        if self.bytes.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if !digits(self) {
                return Err(self.unexpected("a digit"));
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
            if !digits(self) {
                return Err(self.unexpected("a digit"));
            }
        }
        Ok(JsonKind::Number(self.text[start..self.pos].to_string()))
    }

    fn string(&mut self) -> Result<String, JsonError> {
        let open = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let rest = &self.text[self.pos..];
            // Copy the run of ordinary characters in one step.
            let run = rest
                .find(|c: char| c == '"' || c == '\\' || c < ' ')
                .unwrap_or(rest.len());
            out.push_str(&rest[..run]);
            self.pos += run;
            match self.bytes.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    out.push(self.escape()?);
                }
                Some(_) => return Err(self.error("control character in a string")),
                None => {
                    self.pos = open;
                    return Err(self.error("unterminated string"));
                }
            }
        }
    }

    fn escape(&mut self) -> Result<char, JsonError> {
        let c = match self.bytes.get(self.pos) {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                self.pos += 1;
                let high = self.hex4()?;
                if !(0xD800..0xDC00).contains(&high) {
                    return char::from_u32(high).ok_or_else(|| self.error("invalid `\\u` escape"));
                }
                // A high surrogate must be followed by `\u` and a low surrogate.
                if !self.text[self.pos..].starts_with("\\u") {
                    return Err(self.error("unpaired surrogate in `\\u` escape"));
                }
                self.pos += 2;
                let low = self.hex4()?;
                if !(0xDC00..0xE000).contains(&low) {
                    return Err(self.error("unpaired surrogate in `\\u` escape"));
                }
                let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                return char::from_u32(code).ok_or_else(|| self.error("invalid `\\u` escape"));
            }
            _ => return Err(self.error("invalid escape in a string")),
        };
        self.pos += 1;
        Ok(c)
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let digits = self
            .text
            .get(self.pos..self.pos + 4)
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.error("expected four hex digits after `\\u`"))?;
        self.pos += 4;
        Ok(u32::from_str_radix(digits, 16).expect("checked hex digits"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_offsets_of_keys_and_values() {
        let text = "{\n  \"name\": \"@acme/web\",\n  \"deps\": {\"a\": \"^1\"}\n}";
        let json = parse(text).unwrap();
        let name = json.entry("name").unwrap();
        assert_eq!(name.key_offset, 4);
        assert_eq!(name.value.as_str(), Some("@acme/web"));
        assert_eq!(&text[name.value.offset..name.value.offset + 3], "\"@a");
        let dep = json.entry("deps").unwrap().value.entry("a").unwrap();
        assert_eq!(&text[dep.key_offset..dep.key_offset + 3], "\"a\"");
    }

    #[test]
    fn decodes_escapes_and_all_value_kinds() {
        let json =
            parse(r#"[1, -2.5e3, true, false, null, "a\"\u00e9\ud83d\ude00\n", {}]"#).unwrap();
        let JsonKind::Array(items) = json.kind else {
            panic!()
        };
        assert_eq!(items[1].kind, JsonKind::Number("-2.5e3".into()));
        assert_eq!(items[4].kind, JsonKind::Null);
        assert_eq!(items[5].as_str(), Some("a\"é😀\n"));
    }

    #[test]
    fn duplicate_keys_resolve_to_the_last() {
        let json = parse(r#"{"a": 1, "a": "x"}"#).unwrap();
        assert_eq!(json.entry("a").unwrap().value.as_str(), Some("x"));
    }

    #[test]
    fn reports_the_offset_of_syntax_errors() {
        let cases = [
            ("{\"a\": 1,}", 8, "expected a quoted key, found `}`"),
            ("{\"a\" 1}", 5, "expected `:`, found `1`"),
            ("[1 2]", 3, "expected `,` or `]`, found `2`"),
            ("\"abc", 0, "unterminated string"),
            ("{} x", 3, "unexpected text after the JSON value"),
            ("", 0, "expected a value, found the end of the file"),
            ("01", 1, "unexpected text after the JSON value"),
        ];
        for (text, offset, message) in cases {
            let error = parse(text).unwrap_err();
            assert_eq!(
                (error.offset, error.message.as_str()),
                (offset, message),
                "{text}"
            );
        }
    }

    #[test]
    fn refuses_hostile_nesting_without_overflowing() {
        let text = "[".repeat(100_000);
        assert!(parse(&text)
            .unwrap_err()
            .message
            .contains("nested too deeply"));
    }
}
