//! Where the cursor is in a `vx.toml` that may not parse (it is being typed): the table, the
//! key whose value holds the cursor, and the word typed so far. A forward scan of the text up
//! to the cursor that knows TOML's headers, strings, comments, arrays and inline tables; it
//! never fails, whatever the text.

/// What the cursor is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spot {
    /// A table header (`[tasks.bu`), with the path typed so far.
    Header,
    /// Where a key goes, in the table `path`.
    Key,
    /// In the value of the key `path` (in an array of it, if it is one); `quoted`: inside a
    /// string.
    Value { quoted: bool },
    /// In a comment.
    Comment,
}

/// The cursor's context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    pub spot: Spot,
    /// For a key: the table it goes into; for a value: the key's full path; for a header: the
    /// segments typed before the last dot.
    pub path: Vec<String>,
    /// The byte offset where the word being typed starts (after an opening quote).
    pub word_start: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    Array,
    Inline,
}

/// Scans `text[..cursor]`; the word never starts after the cursor.
pub fn at(text: &str, cursor: usize) -> Context {
    let cursor = floor_boundary(text, cursor.min(text.len()));
    let mut context = scan(text, cursor);
    context.word_start = context.word_start.min(cursor);
    context
}

fn scan(text: &str, cursor: usize) -> Context {
    let bytes = text.as_bytes();
    let mut header: Vec<String> = Vec::new();
    // Open arrays and inline tables, each with the path of the key that opened it.
    let mut frames: Vec<(Frame, Vec<String>)> = Vec::new();
    // The key being read (in key position) or whose value is being read.
    let mut key_start: Option<usize> = None;
    let mut value_key: Option<Vec<String>> = None;
    let mut i = 0;
    let base = |header: &[String], frames: &[(Frame, Vec<String>)]| -> Vec<String> {
        match frames.last() {
            Some((_, path)) => path.clone(),
            None => header.to_vec(),
        }
    };
    while i < cursor {
        let c = bytes[i];
        let in_value = value_key.is_some() || frames.last().is_some_and(|f| f.0 == Frame::Array);
        match c {
            b'#' => match memchr(b'\n', &bytes[i..cursor]) {
                Some(n) => {
                    // The line break itself ends the key's value.
                    i += n;
                    continue;
                }
                None => {
                    return Context {
                        spot: Spot::Comment,
                        path: Vec::new(),
                        word_start: cursor,
                    }
                }
            },
            b'"' | b'\'' => {
                // Only quotes before the cursor count: `""|"` is an empty string and one more.
                let multi =
                    bytes[i..cursor].starts_with(if c == b'"' { b"\"\"\"" } else { b"'''" });
                let open = if multi { 3 } else { 1 };
                match string_end(bytes, i + open, c, multi, cursor) {
                    Some(end) => {
                        if !in_value && key_start.is_none() {
                            key_start = Some(i);
                        }
                        i = end;
                        continue;
                    }
                    None if in_value => {
                        return Context {
                            spot: Spot::Value { quoted: true },
                            path: value_path(&value_key, &frames),
                            word_start: i + open,
                        }
                    }
                    None => {
                        return Context {
                            spot: Spot::Key,
                            path: base(&header, &frames),
                            word_start: i + open,
                        }
                    }
                }
            }
            b'\n' if frames.is_empty() => {
                value_key = None;
                key_start = None;
            }
            b'[' if frames.is_empty() && value_key.is_none() && line_start(bytes, i) => {
                let end = memchr(b']', &bytes[i..cursor]).map(|n| i + n);
                let inner_start = if bytes[..cursor].get(i + 1) == Some(&b'[') {
                    i + 2
                } else {
                    i + 1
                };
                match end {
                    Some(end) => {
                        header = split_key(&text[inner_start.min(end)..end]);
                        i = end + 1;
                        continue;
                    }
                    None => {
                        let typed = &text[inner_start.min(cursor)..cursor];
                        let dot = typed.rfind('.').map_or(0, |d| d + 1);
                        return Context {
                            spot: Spot::Header,
                            path: split_key(&typed[..dot.saturating_sub(1)]),
                            word_start: inner_start + dot,
                        };
                    }
                }
            }
            b'=' if !in_value => {
                let start = key_start.take().unwrap_or(i);
                let mut path = base(&header, &frames);
                path.extend(split_key(&text[start..i]));
                value_key = Some(path);
            }
            b'[' if in_value => {
                frames.push((Frame::Array, value_path(&value_key, &frames)));
                value_key = None;
            }
            b'{' if in_value => {
                frames.push((Frame::Inline, value_path(&value_key, &frames)));
                value_key = None;
                key_start = None;
            }
            b']' | b'}' => {
                if let Some((_, path)) = frames.pop() {
                    // The value of the key that opened it goes on until a comma or a line end.
                    value_key = Some(path);
                }
            }
            b',' if frames.last().is_some_and(|f| f.0 == Frame::Inline) => {
                value_key = None;
                key_start = None;
            }
            c if !c.is_ascii_whitespace() && !in_value && key_start.is_none() => {
                key_start = Some(i);
            }
            _ => {}
        }
        i += 1;
    }
    let word_start = word_start(text, cursor);
    let in_value = value_key.is_some() || frames.last().is_some_and(|f| f.0 == Frame::Array);
    if in_value {
        Context {
            spot: Spot::Value { quoted: false },
            path: value_path(&value_key, &frames),
            word_start,
        }
    } else {
        // A dotted key typed so far (`cache.`): its segments before the last dot are tables.
        let start = key_start.unwrap_or(cursor).min(word_start);
        let mut path = base(&header, &frames);
        match text[start..cursor].rfind('.') {
            Some(dot) => {
                path.extend(split_key(&text[start..start + dot]));
                Context {
                    spot: Spot::Key,
                    path,
                    word_start: start + dot + 1,
                }
            }
            None => Context {
                spot: Spot::Key,
                path,
                word_start: start,
            },
        }
    }
}

fn value_path(value_key: &Option<Vec<String>>, frames: &[(Frame, Vec<String>)]) -> Vec<String> {
    match value_key {
        Some(path) => path.clone(),
        None => frames.last().map(|f| f.1.clone()).unwrap_or_default(),
    }
}

/// Where the word ending at `cursor` starts.
fn word_start(text: &str, cursor: usize) -> usize {
    text[..cursor]
        .char_indices()
        .rev()
        .take_while(|&(_, c)| super::text::is_word(c))
        .last()
        .map_or(cursor, |(i, _)| i)
}

/// The offset just past a string's closing quote, or `None` when it is still open at `limit`.
fn string_end(bytes: &[u8], mut i: usize, quote: u8, multi: bool, limit: usize) -> Option<usize> {
    while i < limit {
        match bytes[i] {
            b'\\' if quote == b'"' => i += 2,
            b'\n' if !multi => return Some(i),
            b if b == quote => {
                if !multi {
                    return Some(i + 1);
                }
                if bytes[i..].starts_with(&[quote; 3]) && i + 3 <= limit {
                    return Some(i + 3);
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

/// Whether only whitespace comes before `i` on its line.
fn line_start(bytes: &[u8], i: usize) -> bool {
    bytes[..i]
        .iter()
        .rev()
        .take_while(|&&b| b != b'\n')
        .all(|b| b.is_ascii_whitespace())
}

/// A dotted key's segments, quotes taken off.
pub fn split_key(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '.') => out.push(std::mem::take(&mut current)),
            (None, c) if c.is_whitespace() => {}
            (_, c) => current.push(c),
        }
    }
    if !current.is_empty() || !out.is_empty() {
        out.push(current);
    }
    out.retain(|s| !s.is_empty());
    out
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

fn floor_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(text_with_cursor: &str) -> Context {
        let cursor = text_with_cursor.find('|').unwrap();
        let text = text_with_cursor.replacen('|', "", 1);
        at(&text, cursor)
    }

    fn path(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_key_in_a_task_table() {
        let c = ctx("[workspace]\nmembers = [\"a\"]\n\n[tasks.build]\ncomm|");
        assert_eq!(c.spot, Spot::Key);
        assert_eq!(c.path, path(&["tasks", "build"]));
        assert_eq!(
            c.word_start,
            "[workspace]\nmembers = [\"a\"]\n\n[tasks.build]\n".len()
        );
    }

    #[test]
    fn a_value_in_a_multi_line_array_of_depends_on() {
        let c =
            ctx("[tasks.build]\ncommand = \"x # y\" # z\ndepends-on = [\n  \"^build\",\n  \"pk|");
        assert_eq!(c.spot, Spot::Value { quoted: true });
        assert_eq!(c.path, path(&["tasks", "build", "depends-on"]));
    }

    #[test]
    fn inline_tables_and_dotted_keys_nest() {
        let c = ctx("[tasks.build]\ncache = { inputs = [\"src/**\"], out|");
        assert_eq!(c.spot, Spot::Key);
        assert_eq!(c.path, path(&["tasks", "build", "cache"]));
        let c = ctx("tasks.build.depends-on = [\"^|");
        assert_eq!(c.spot, Spot::Value { quoted: true });
        assert_eq!(c.path, path(&["tasks", "build", "depends-on"]));
        let c = ctx("[workspace]\nui = |");
        assert_eq!(c.spot, Spot::Value { quoted: false });
        assert_eq!(c.path, path(&["workspace", "ui"]));
    }

    #[test]
    fn a_header_and_a_comment() {
        let c = ctx("deps = []\n[tasks.b|");
        assert_eq!(c.spot, Spot::Header);
        assert_eq!(c.path, path(&["tasks"]));
        let c = ctx("[tasks.build] # a [comment|");
        assert_eq!(c.spot, Spot::Comment);
        let c = ctx("[tasks.build]\ncommand = '''\nmulti [x] = 1\n''' \nde|");
        assert_eq!(c.spot, Spot::Key);
        assert_eq!(c.path, path(&["tasks", "build"]));
    }

    #[test]
    fn quotes_after_the_cursor_and_a_header_being_opened_never_put_the_word_past_it() {
        let c = ctx("depends-on = [\"\"|\"]");
        assert_eq!(c.word_start, "depends-on = [\"\"".len());
        let c = ctx("[|[");
        assert_eq!(c.spot, Spot::Header);
        assert_eq!(c.word_start, 1);
        let c = ctx("x = \"\"|\"\"");
        assert!(c.word_start <= "x = \"\"".len());
    }

    #[test]
    fn a_dotted_key_being_typed_names_its_table() {
        let c = ctx("[tasks.build]\ncache.|");
        assert_eq!(c.spot, Spot::Key);
        assert_eq!(c.path, path(&["tasks", "build", "cache"]));
        assert_eq!(c.word_start, "[tasks.build]\ncache.".len());
        let c = ctx("[tasks.build]\ncache.out|");
        assert_eq!(c.path, path(&["tasks", "build", "cache"]));
        assert_eq!(c.word_start, "[tasks.build]\ncache.".len());
    }

    #[test]
    fn quoted_keys_lose_their_quotes() {
        assert_eq!(split_key("tasks.\"a.b\" . c"), path(&["tasks", "a.b", "c"]));
    }
}
