//! The typed walk over a spanned TOML tree: one [`Walker`] per `vx.toml` collects every
//! problem with its location instead of stopping at the first (CFG-10).
//!
//! Each accessor checks one value's type and returns `None` after recording an error, so the
//! table walkers in `toml_config` and `task_config` read as a list of keys. Message forms:
//! type errors say `` `<key>` must be <kind> ``; problems with a value say
//! `<key>: <value> <problem>` (the FMT-1 form); `<key>` is the dotted path relative to the task,
//! or to `[workspace]`, or to the file's top level.

use std::time::Duration;

use toml_span::value::{Key, Table, ValueInner};
use toml_span::Value;
use vx_core::units::{parse_duration, parse_size};
use vx_core::{Diagnostic, Location, Spanned};

use crate::milestones;
use crate::source::SourceText;

pub(crate) struct Walker<'a> {
    pub(crate) source: SourceText<'a>,
    pub(crate) errors: Vec<Diagnostic>,
    /// Set while walking inside a key that is itself not available yet, so one refusal covers
    /// the whole table instead of one per key inside it (CFG-12).
    pub(crate) inside_unavailable: bool,
}

impl<'a> Walker<'a> {
    pub(crate) fn new(file: &'a str, text: &'a str) -> Walker<'a> {
        Walker {
            source: SourceText::new(file, text),
            errors: Vec::new(),
            inside_unavailable: false,
        }
    }

    pub(crate) fn key_at(&self, key: &Key) -> Location {
        self.source
            .location(self.source.quoted_start(key.span.start))
    }

    pub(crate) fn value_at(&self, value: &Value) -> Location {
        let start = match value.as_ref() {
            ValueInner::String(_) => self.source.quoted_start(value.span.start),
            _ => value.span.start,
        };
        self.source.location(start)
    }

    pub(crate) fn error(&mut self, at: Location, message: impl Into<String>) -> &mut Diagnostic {
        self.errors.push(Diagnostic::at(at, message));
        self.errors.last_mut().expect("just pushed")
    }

    /// Refuses `feature` at `at` when its milestone is not delivered yet (CFG-12); returns
    /// whether it was refused, so the caller can mark the table inside as covered.
    pub(crate) fn milestone(&mut self, feature: &str, at: Location) -> bool {
        match milestones::unavailable(feature) {
            Some(label) if !self.inside_unavailable => {
                self.error(at, format!("{label} is not available yet"));
                true
            }
            Some(_) => true,
            None => false,
        }
    }

    /// Runs `walk` over the value of a key that may not be available yet: the key is refused
    /// once, and nothing inside it is refused again.
    pub(crate) fn gated<T>(
        &mut self,
        feature: &str,
        at: Location,
        walk: impl FnOnce(&mut Self) -> T,
    ) -> T {
        let refused = self.milestone(feature, at);
        let outer = self.inside_unavailable;
        self.inside_unavailable |= refused;
        let result = walk(self);
        self.inside_unavailable = outer;
        result
    }

    /// Reports an unknown key with the allowed list, and either a pointer to the vx spelling of
    /// another tool's key or a did-you-mean (CFG-8).
    pub(crate) fn unknown_key(
        &mut self,
        key: &Key,
        table_path: &str,
        allowed: &[&str],
        pointer: Option<String>,
    ) {
        let at = self.key_at(key);
        let name = key.name.as_ref();
        let hint = pointer.or_else(|| {
            vx_core::suggest::did_you_mean(name, allowed.iter().copied())
                .map(|s| format!("did you mean `{s}`?"))
        });
        let diagnostic = self.error(
            at,
            format!(
                "unknown key `{name}` in `{table_path}` (allowed: {})",
                allowed.join(", ")
            ),
        );
        if let Some(hint) = hint {
            diagnostic.hints.push(hint);
        }
    }

    fn type_error(&mut self, value: &Value, name: &str, kind: &str) {
        let at = self.value_at(value);
        self.error(at, format!("`{name}` must be {kind}"));
    }

    pub(crate) fn table<'v, 'de>(
        &mut self,
        value: &'v Value<'de>,
        name: &str,
    ) -> Option<&'v Table<'de>> {
        let table = value.as_table();
        if table.is_none() {
            self.type_error(value, name, "a table");
        }
        table
    }

    pub(crate) fn string(&mut self, value: &Value, name: &str) -> Option<String> {
        let text = value.as_str().map(str::to_string);
        if text.is_none() {
            self.type_error(value, name, "a string");
        }
        text
    }

    /// A string that must not be empty, such as a git ref or a URL.
    pub(crate) fn non_empty_string(&mut self, value: &Value, name: &str) -> Option<String> {
        let text = self.string(value, name)?;
        if text.trim().is_empty() {
            let at = self.value_at(value);
            self.error(at, format!("`{name}` must not be empty"));
            return None;
        }
        Some(text)
    }

    pub(crate) fn spanned_string(&mut self, value: &Value, name: &str) -> Option<Spanned<String>> {
        let at = self.value_at(value);
        self.string(value, name).map(|s| Spanned::new(s, at))
    }

    pub(crate) fn bool(&mut self, value: &Value, name: &str) -> Option<bool> {
        let flag = value.as_bool();
        if flag.is_none() {
            self.type_error(value, name, "`true` or `false`");
        }
        flag
    }

    /// An array of strings, each with its location; non-string items are reported and left out.
    pub(crate) fn strings(&mut self, value: &Value, name: &str) -> Option<Vec<Spanned<String>>> {
        let Some(items) = value.as_array() else {
            self.type_error(value, name, "an array of strings");
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match item.as_str() {
                Some(text) => out.push(Spanned::new(text.to_string(), self.value_at(item))),
                None => self.type_error(item, name, "an array of strings"),
            }
        }
        Some(out)
    }

    /// A table whose values are all strings (`define`, `platform`).
    pub(crate) fn string_table(
        &mut self,
        value: &Value,
        name: &str,
    ) -> Option<Vec<(Location, String, Spanned<String>)>> {
        let table = self.table(value, name)?;
        let mut out = Vec::with_capacity(table.len());
        for (key, item) in table {
            match item.as_str() {
                Some(text) => out.push((
                    self.key_at(key),
                    key.name.to_string(),
                    Spanned::new(text.to_string(), self.value_at(item)),
                )),
                None => {
                    let at = self.value_at(item);
                    let hint = scalar_text(item)
                        .map(|text| format!("write `{} = \"{text}\"`", toml_key(&key.name)));
                    let d = self.error(at, format!("`{name}.{}` must be a string", key.name));
                    d.hints.extend(hint);
                }
            }
        }
        Some(out)
    }

    /// A positive integer that fits `u32` (`concurrency`, `upload-concurrency`).
    pub(crate) fn positive_integer(&mut self, value: &Value, name: &str) -> Option<u32> {
        match value.as_integer() {
            Some(n) if n >= 1 && n <= i64::from(u32::MAX) => Some(n as u32),
            Some(n) if n >= 1 => {
                let at = self.value_at(value);
                self.error(at, format!("`{name}` must be at most {}", u32::MAX));
                None
            }
            _ => {
                self.type_error(value, name, "a positive integer");
                None
            }
        }
    }

    /// An integer ≥ 0 that fits `u32` (`retries`).
    pub(crate) fn count(&mut self, value: &Value, name: &str) -> Option<u32> {
        match value.as_integer() {
            Some(n) if (0..=i64::from(u32::MAX)).contains(&n) => Some(n as u32),
            _ => {
                self.type_error(value, name, "an integer of 0 or more");
                None
            }
        }
    }

    /// A duration in the FMT-1 grammar, with a message that says how to fix the value.
    pub(crate) fn duration(&mut self, value: &Value, name: &str) -> Option<Duration> {
        let problem = match value.as_ref() {
            ValueInner::String(text) => match parse_duration(text) {
                Some(duration) => return Some(duration),
                None => format!("{name}: \"{text}\" {}", duration_problem(text)),
            },
            ValueInner::Integer(n) => format!("{name}: {n} is not a duration; write \"{n}s\""),
            _ => format!("`{name}` must be a duration such as \"90s\" or \"1h30m\""),
        };
        let at = self.value_at(value);
        self.error(at, problem);
        None
    }

    /// A duration kept as text in the model (retention, remote timeouts).
    pub(crate) fn duration_text(&mut self, value: &Value, name: &str) -> Option<String> {
        self.duration(value, name)?;
        value.as_str().map(str::to_string)
    }

    /// A size in the FMT-2 grammar; `bound` refuses zero.
    pub(crate) fn size_text(&mut self, value: &Value, name: &str, bound: bool) -> Option<String> {
        let problem = match value.as_ref() {
            ValueInner::String(text) => match parse_size(text) {
                Some(0) if bound => format!("{name}: \"{text}\" must be greater than zero"),
                Some(_) => return Some(text.to_string()),
                None if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => {
                    format!("{name}: \"{text}\" is not a size; add a unit, such as \"{text}M\"")
                }
                None => format!(
                    "{name}: \"{text}\" is not a size; write digits and a unit (K, M, G or T, \
                     optionally followed by B or iB), such as \"512M\", at most 2^53 bytes"
                ),
            },
            ValueInner::Integer(n) => {
                format!("{name}: {n} is not a size; add a unit, such as \"{n}M\"")
            }
            _ => format!("`{name}` must be a size such as \"512M\" or \"20G\""),
        };
        let at = self.value_at(value);
        self.error(at, problem);
        None
    }
}

/// Why `text` is not a FMT-1 duration, phrased to follow `"<text>"`.
pub(crate) fn duration_problem(text: &str) -> String {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return format!("is not a duration; write \"{text}s\"");
    }
    const UNITS: [(&str, u128); 5] = [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
        ("ms", 1),
    ];
    let general = "is not a duration; write digits with a unit (ms, s, m, h or d), \
                   such as \"90s\" or \"1h30m\""
        .to_string();
    let mut rest = text;
    let mut units = Vec::new();
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let letters = rest[digits..]
            .bytes()
            .take_while(u8::is_ascii_alphabetic)
            .count();
        let unit = UNITS
            .iter()
            .position(|(u, _)| *u == &rest[digits..digits + letters]);
        let (Some(unit), true) = (unit, digits > 0) else {
            return general;
        };
        let number: u128 = rest[..digits].parse().unwrap_or(u128::MAX / 2);
        total = total.saturating_add(number.saturating_mul(UNITS[unit].1));
        units.push(unit);
        rest = &rest[digits + letters..];
    }
    if units.windows(2).any(|w| w[0] >= w[1]) {
        "is not a duration; units go from largest to smallest, each at most once, \
         such as \"1h30m\""
            .to_string()
    } else if total == 0 {
        "must be greater than zero".to_string()
    } else if total > UNITS[0].1 * 30 {
        "is longer than the maximum of 30d".to_string()
    } else {
        general
    }
}

/// A number or boolean written where a string was expected, as the string it was meant to be.
fn scalar_text(value: &Value) -> Option<String> {
    match value.as_ref() {
        ValueInner::Integer(n) => Some(n.to_string()),
        ValueInner::Float(f) => Some(f.to_string()),
        ValueInner::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A key as it would be written in the file: bare when possible, else quoted.
pub(crate) fn toml_key(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if bare {
        name.to_string()
    } else {
        format!("{name:?}")
    }
}

/// `parent.key` with the key written as in the file (`tasks."build:css".cache`).
pub(crate) fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        toml_key(key)
    } else {
        format!("{parent}.{}", toml_key(key))
    }
}

/// Environment variable names (CFG-5): `[A-Za-z_][A-Za-z0-9_]*`.
pub(crate) fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Checks an environment entry: an exact name, or (when `wildcards`) a non-empty prefix
/// followed by `*` (CFG-5). Returns the problem, phrased to follow the quoted entry.
pub(crate) fn env_entry_problem(entry: &str, wildcards: bool) -> Option<String> {
    match entry.strip_suffix('*') {
        Some(prefix) if wildcards => {
            if prefix.is_empty() || prefix.contains('*') {
                Some("is not a valid pattern; `*` may only end a non-empty prefix".into())
            } else if !is_env_name(prefix) {
                Some("is not a valid pattern; the prefix must be a variable name".into())
            } else {
                None
            }
        }
        Some(_) => Some("is a pattern; only exact names are allowed here".into()),
        None if is_env_name(entry) => None,
        None => Some(
            "is not a variable name (letters, digits and `_`, not starting with a digit)".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_problems_say_how_to_fix_the_value() {
        assert_eq!(duration_problem("90"), "is not a duration; write \"90s\"");
        assert_eq!(duration_problem("0s"), "must be greater than zero");
        assert_eq!(duration_problem("31d"), "is longer than the maximum of 30d");
        assert!(duration_problem("30m1h").contains("largest to smallest"));
        assert!(duration_problem("1.5h").contains("such as \"90s\""));
        assert!(duration_problem("10 min").contains("such as \"90s\""));
    }

    #[test]
    fn env_entries_follow_cfg5() {
        assert_eq!(env_entry_problem("NODE_ENV", false), None);
        assert_eq!(env_entry_problem("NEXT_PUBLIC_*", true), None);
        assert!(env_entry_problem("NEXT_PUBLIC_*", false).is_some());
        assert!(env_entry_problem("*", true).is_some());
        assert!(env_entry_problem("A*B*", true).is_some());
        assert!(env_entry_problem("1ABC", false).is_some());
        assert!(env_entry_problem("FOO-BAR", false).is_some());
    }

    #[test]
    fn keys_are_quoted_only_when_toml_needs_it() {
        assert_eq!(join("tasks", "build:css"), "tasks.\"build:css\"");
        assert_eq!(join("", "tasks"), "tasks");
        assert_eq!(join("tasks.build", "cache"), "tasks.build.cache");
    }
}
