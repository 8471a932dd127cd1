//! Source locations (`path:line:column`) carried by configuration values, so every error about
//! configuration can point at the offending key or value (ERR-2).

use std::fmt;
use std::sync::Arc;

/// A position in a configuration file. `file` is relative to the workspace root; `line` and
/// `column` count from 1, columns in characters; line 0 names the file alone. The path is
/// shared by every location of one file (a workspace model holds a dozen per task).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Location {
    pub file: Arc<str>,
    pub line: u32,
    pub column: u32,
}

impl Location {
    pub fn new(file: impl Into<Arc<str>>, line: u32, column: u32) -> Location {
        Location {
            file: file.into(),
            line,
            column,
        }
    }
}

/// `file:line:column`; a location with no line (line 0, the file alone: configuration a frozen
/// run took from `vx.lock`, which keeps no lines) is the file alone.
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            return f.write_str(&self.file);
        }
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// A value together with where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spanned<T> {
    pub value: T,
    pub at: Location,
}

impl<T> Spanned<T> {
    pub fn new(value: T, at: Location) -> Spanned<T> {
        Spanned { value, at }
    }
}

impl<T: schemars::JsonSchema> schemars::JsonSchema for Spanned<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
    fn inline_schema() -> bool {
        T::inline_schema()
    }
}
