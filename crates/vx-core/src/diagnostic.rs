//! User-facing problems found while loading configuration or building the graph: one message,
//! an optional location (ERR-2), and hints. The binary renders them (`error: <at>: <message>`
//! followed by `  hint: …` lines) and maps them to exit 2.

use std::fmt;

use crate::location::Location;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub at: Option<Location>,
    pub message: String,
    pub hints: Vec<String>,
}

impl Diagnostic {
    pub fn new(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            at: None,
            message: message.into(),
            hints: Vec::new(),
        }
    }

    pub fn at(at: Location, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            at: Some(at),
            message: message.into(),
            hints: Vec::new(),
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Diagnostic {
        self.hints.push(hint.into());
        self
    }

    /// Adds `did you mean `x`?` when a suggestion exists.
    pub fn suggest(self, suggestion: Option<&str>) -> Diagnostic {
        match suggestion {
            Some(s) => self.hint(format!("did you mean `{s}`?")),
            None => self,
        }
    }
}

/// The first line without the `error: ` prefix: `<at>: <message>` or `<message>`.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.at {
            Some(at) => write!(f, "{at}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Several diagnostics reported together (CFG-10), sorted by location.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sorted by file, line and column; unlocated ones last.
    pub fn into_sorted(mut self) -> Vec<Diagnostic> {
        self.0.sort_by(|a, b| match (&a.at, &b.at) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        });
        self.0
    }
}
