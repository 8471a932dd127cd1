//! File names that are not UTF-8, carried as strings: escaped with `U+FFFD` and two hex digits
//! ([`escape_name`]), given back as bytes ([`unescape_name`]), shown as `\xNN` ([`shown_name`]).

pub(super) const REPLACEMENT: char = '\u{FFFD}';

/// A file name that is not UTF-8, as a string: each byte of it that is not UTF-8 becomes
/// `U+FFFD` followed by the byte in two uppercase hex digits (`\xfe.other` → `�FE.other`).
/// [`unescape_name`] gives the bytes back.
pub fn escape_name(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for byte in chunk.invalid() {
            out.push(REPLACEMENT);
            out.push_str(&format!("{byte:02X}"));
        }
    }
    out
}

/// The name [`escape_name`] wrote, as the file system has it.
pub fn unescape_name(name: &str) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStringExt;
    let mut out = Vec::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find(REPLACEMENT) {
        out.extend_from_slice(&rest.as_bytes()[..at]);
        let after = &rest[at + REPLACEMENT.len_utf8()..];
        match after.get(..2).and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(byte) => {
                out.push(byte);
                rest = &after[2..];
            }
            None => {
                out.extend_from_slice(REPLACEMENT.to_string().as_bytes());
                rest = after;
            }
        }
    }
    out.extend_from_slice(rest.as_bytes());
    std::ffi::OsString::from_vec(out)
}

/// How a name [`escape_name`] wrote is shown to a user: each byte that is not UTF-8 as
/// `\xNN` (`packages/p/\xFE.other`).
pub fn shown_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find(REPLACEMENT) {
        out.push_str(&rest[..at]);
        let after = &rest[at + REPLACEMENT.len_utf8()..];
        match after.get(..2).filter(|h| u8::from_str_radix(h, 16).is_ok()) {
            Some(hex) => {
                out.push_str("\\x");
                out.push_str(hex);
                rest = &after[2..];
            }
            None => {
                out.push(REPLACEMENT);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether `path` is `dir` or lies under it (both root-relative, `dir` non-empty).
pub(crate) fn is_at_or_under(path: &[u8], dir: &[u8]) -> bool {
    path.strip_prefix(dir)
        .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
}
