//! JSON files of other tools (`turbo.json`, `nx.json`, `project.json`) as a tree whose every
//! key and value carries its `path:line:column`, for `vx init` to carry over and to report
//! what it leaves out where it was written (ERR-2).
//!
//! Comments and trailing commas are allowed, as those tools allow them.

use vx_core::{Diagnostic, Location, Spanned};

use crate::json::{self, Json, JsonKind};
use crate::source::SourceText;

/// A JSON value and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonValue {
    pub at: Location,
    pub kind: JsonValueKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum JsonValueKind {
    Null,
    Bool(bool),
    /// As written.
    Number(String),
    String(String),
    Array(Vec<JsonValue>),
    /// Entries in file order; the key's location is its opening quote.
    Object(Vec<(Spanned<String>, JsonValue)>),
}

impl JsonValue {
    /// The value of `key` (the last one when a key repeats, as `JSON.parse` does).
    pub fn get(&self, key: &str) -> Option<&JsonValue> {
        self.entries()
            .iter()
            .rev()
            .find(|(k, _)| k.value == key)
            .map(|(_, v)| v)
    }

    /// An object's entries; empty for anything else.
    pub fn entries(&self) -> &[(Spanned<String>, JsonValue)] {
        match &self.kind {
            JsonValueKind::Object(entries) => entries,
            _ => &[],
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            JsonValueKind::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.kind {
            JsonValueKind::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[JsonValue]> {
        match &self.kind {
            JsonValueKind::Array(items) => Some(items),
            _ => None,
        }
    }

    /// "a string", "an array", … for messages.
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            JsonValueKind::Null => "null",
            JsonValueKind::Bool(_) => "a boolean",
            JsonValueKind::Number(_) => "a number",
            JsonValueKind::String(_) => "a string",
            JsonValueKind::Array(_) => "an array",
            JsonValueKind::Object(_) => "an object",
        }
    }
}

/// Parses `text`, the file at root-relative `rel_path`; a syntax error is one diagnostic at
/// its location.
pub fn read_jsonc(text: &str, rel_path: &str) -> Result<JsonValue, Diagnostic> {
    let source = SourceText::new(rel_path, text);
    match json::parse_jsonc(text) {
        Ok(value) => Ok(located(&value, &source)),
        Err(error) => Err(Diagnostic::at(source.location(error.offset), error.message)),
    }
}

fn located(value: &Json, source: &SourceText<'_>) -> JsonValue {
    let kind = match &value.kind {
        JsonKind::Null => JsonValueKind::Null,
        JsonKind::Bool(b) => JsonValueKind::Bool(*b),
        JsonKind::Number(n) => JsonValueKind::Number(n.clone()),
        JsonKind::String(s) => JsonValueKind::String(s.clone()),
        JsonKind::Array(items) => {
            JsonValueKind::Array(items.iter().map(|i| located(i, source)).collect())
        }
        JsonKind::Object(entries) => JsonValueKind::Object(
            entries
                .iter()
                .map(|e| {
                    let key = Spanned::new(e.key.clone(), source.location(e.key_offset));
                    (key, located(&e.value, source))
                })
                .collect(),
        ),
    };
    JsonValue {
        at: source.location(value.offset),
        kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_are_allowed_and_every_node_is_located() {
        let text = "{\n  // tasks\n  \"tasks\": {\"build\": {\"outputs\": [\"dist/**\",]},},\n}";
        let json = read_jsonc(text, "turbo.json").unwrap();
        let build = json.get("tasks").unwrap().get("build").unwrap();
        assert_eq!(build.at.to_string(), "turbo.json:3:22");
        let outputs = build.get("outputs").unwrap().as_array().unwrap();
        assert_eq!(outputs[0].as_str(), Some("dist/**"));
        assert_eq!(json.entries()[0].0.at.to_string(), "turbo.json:3:3");
    }

    #[test]
    fn a_syntax_error_is_located() {
        let error = read_jsonc("{\n  \"tasks\": {\n    \"build\" {}\n}", "turbo.json").unwrap_err();
        assert!(
            error.to_string().starts_with("turbo.json:3:13: "),
            "{error}"
        );
    }
}
