//! `package.json` as a tree that keeps the byte offset of every key and value, so errors about
//! a manifest can name `path:line:column` (ERR-2).
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

/// Parses strict JSON (no comments, no trailing commas: what npm accepts) with `jsonc-parser`,
/// which keeps the range of every node, and converts its tree into [`Json`].
pub(crate) fn parse(text: &str) -> Result<Json, JsonError> {
    parse_with(text, false)
}

/// Parses JSON with comments and trailing commas, as `turbo.json`, `nx.json` and
/// `project.json` allow.
pub(crate) fn parse_jsonc(text: &str) -> Result<Json, JsonError> {
    parse_with(text, true)
}

fn parse_with(text: &str, jsonc: bool) -> Result<Json, JsonError> {
    use jsonc_parser::{CollectOptions, ParseOptions};
    // npm tolerates a byte-order mark; so does vx. Offsets stay relative to `text`.
    let skip = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let options = ParseOptions {
        allow_comments: jsonc,
        allow_loose_object_property_names: false,
        allow_trailing_commas: jsonc,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_extended_string_escapes: false,
        allow_non_finite_numbers: false,
    };
    check_depth(text)?;
    let parsed = jsonc_parser::parse_to_ast(&text[skip..], &CollectOptions::default(), &options)
        .map_err(|e| JsonError {
            offset: skip + e.range().start,
            message: lowercase_first(&e.kind().to_string()),
        })?;
    match parsed.value {
        Some(value) => Ok(convert(value, skip)),
        None => Err(JsonError {
            offset: skip,
            message: "the file holds no JSON value".to_string(),
        }),
    }
}

/// Deep enough for any real manifest, shallow enough that a hostile file cannot overflow the
/// stack of the (recursive) parser: checked by one scan before parsing.
const MAX_DEPTH: usize = 256;

fn check_depth(text: &str) -> Result<(), JsonError> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (offset, byte) in text.bytes().enumerate() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(JsonError {
                        offset,
                        message: format!("nested too deeply (more than {MAX_DEPTH} levels)"),
                    });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Messages start lowercase (ERR-1).
fn lowercase_first(message: &str) -> String {
    let mut chars = message.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn convert(value: jsonc_parser::ast::Value<'_>, skip: usize) -> Json {
    use jsonc_parser::ast::{ObjectPropName, Value};
    let (offset, kind) = match value {
        Value::NullKeyword(v) => (v.range.start, JsonKind::Null),
        Value::BooleanLit(v) => (v.range.start, JsonKind::Bool(v.value)),
        Value::NumberLit(v) => (v.range.start, JsonKind::Number(v.value.to_string())),
        Value::StringLit(v) => (v.range.start, JsonKind::String(v.value.into_owned())),
        Value::Array(v) => (
            v.range.start,
            JsonKind::Array(v.elements.into_iter().map(|e| convert(e, skip)).collect()),
        ),
        Value::Object(v) => (
            v.range.start,
            JsonKind::Object(
                v.properties
                    .into_iter()
                    .map(|p| {
                        let (key, key_offset) = match p.name {
                            ObjectPropName::String(s) => (s.value.into_owned(), s.range.start),
                            ObjectPropName::Word(w) => (w.value.to_string(), w.range.start),
                        };
                        JsonEntry {
                            key,
                            key_offset: skip + key_offset,
                            value: convert(p.value, skip),
                        }
                    })
                    .collect(),
            ),
        ),
    };
    Json {
        offset: skip + offset,
        kind,
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
        for (text, offset) in [
            ("{\"a\": 1,}", 7),
            ("{\"a\" 1}", 5),
            ("[1 2]", 2),
            ("\"abc", 0),
            ("{} x", 3),
        ] {
            let error = parse(text).unwrap_err();
            assert_eq!(error.offset, offset, "{text}: {}", error.message);
            assert!(
                error.message.starts_with(char::is_lowercase),
                "{}",
                error.message
            );
        }
        assert_eq!(
            parse("{\"a\": 1,}").unwrap_err().message,
            "trailing commas are not allowed"
        );
        assert!(parse("").is_err());
        assert!(parse("01").is_err());
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
