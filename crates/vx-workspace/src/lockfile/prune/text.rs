//! Line surgery the pruners share: a lockfile's text as lines (each with its own line ending,
//! so what is kept is kept byte for byte), entries found by indentation, and removal.

/// The lines of `text`, each with its line ending.
pub(super) fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// The line without its line ending.
pub(super) fn body(line: &str) -> &str {
    line.trim_end_matches(['\n', '\r'])
}

pub(super) fn is_blank(line: &str) -> bool {
    body(line).trim().is_empty()
}

/// Leading spaces.
pub(super) fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// The key of a YAML mapping entry's first line (`'@a/b@1.0.0':`, `"a@npm:^1, a@npm:^2":`,
/// `packages/app:`, `a@1.0.0: {}`), unquoted as YAML reads it.
pub(super) fn yaml_key(line: &str) -> Option<String> {
    let trimmed = body(line).trim();
    let mapping: serde_yaml::Mapping = serde_yaml::from_str(trimmed).ok()?;
    let (key, _) = mapping.into_iter().next()?;
    match key {
        serde_yaml::Value::String(s) => Some(s),
        serde_yaml::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// One entry of an indented block: its first line, the line after its last, and its key.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) key: String,
}

/// The entries at `indent` spaces in `lines[from..to]`: each runs from its key line to the
/// last non-blank line before the next line indented `indent` or less.
pub(super) fn entries(lines: &[&str], from: usize, to: usize, at: usize) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    for (i, line) in lines.iter().enumerate().take(to).skip(from) {
        if is_blank(line) || indent(line) > at {
            if !is_blank(line) {
                if let Some(last) = out.last_mut() {
                    last.end = i + 1;
                }
            }
            continue;
        }
        if indent(line) == at {
            if let Some(key) = yaml_key(line) {
                out.push(Entry {
                    start: i,
                    end: i + 1,
                    key,
                });
            }
        }
    }
    out
}

/// Where a top-level section (`name:` at column 0) starts and ends: the line after its header
/// and the next line at column 0 (or the end).
pub(super) fn section(lines: &[&str], name: &str) -> Option<(usize, usize, usize)> {
    let header = lines.iter().position(|l| {
        let b = body(l);
        indent(l) == 0 && (b == format!("{name}:") || b.starts_with(&format!("{name}: ")))
    })?;
    let end = (header + 1..lines.len())
        .find(|&i| !is_blank(lines[i]) && indent(lines[i]) == 0)
        .unwrap_or(lines.len());
    Some((header, header + 1, end))
}

/// Marks the lines of `entry` removed, with the one blank line just before it: the separator
/// the writer put there (what precedes the first entry then precedes the next).
pub(super) fn remove(removed: &mut [bool], lines: &[&str], entry: &Entry) {
    mark(removed, entry.start, entry.end);
    let i = entry.start;
    if i > 0 && is_blank(lines[i - 1]) {
        removed[i - 1] = true;
    }
}

/// The lines not removed, joined.
pub(super) fn join(lines: &[&str], removed: &[bool]) -> String {
    lines
        .iter()
        .zip(removed)
        .filter(|(_, r)| !**r)
        .map(|(l, _)| *l)
        .collect()
}

/// The package names of a path or pattern of them joined by `/` (`@a/b/c` is `@a/b`, `c`;
/// `**` counts as a name).
pub(super) fn package_names(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        let cut = if rest.starts_with('@') {
            rest.find('/')
                .and_then(|s| rest[s + 1..].find('/').map(|t| s + 1 + t))
        } else {
            rest.find('/')
        };
        match cut {
            Some(at) => {
                out.push(&rest[..at]);
                rest = &rest[at + 1..];
            }
            None => {
                out.push(rest);
                rest = "";
            }
        }
    }
    out
}

/// The package name of `name` or `name@range` (a scope's `@` is part of the name).
pub(super) fn name_of(ident: &str) -> &str {
    let from = usize::from(ident.starts_with('@'));
    match ident[from..].find('@') {
        Some(at) => &ident[..from + at],
        None => ident,
    }
}

/// An entry kept by a yarn pruner: its lines, the header that replaces its first line when
/// descriptors were dropped, and its key as yarn sorts it (the descriptors, unquoted).
pub(super) struct Kept {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) header: Option<String>,
    pub(super) key: String,
}

/// The text of a yarn lockfile whose entries run from line `first` to `last_end`, with only
/// `kept` of them, in yarn's order (by key, code unit by code unit: a header that lost its
/// first descriptor can move), one blank line between two; lines marked `removed` inside an
/// entry are skipped, and what precedes the first entry and follows the last stays as it is.
pub(super) fn write_entries(
    lines: &[&str],
    removed: &[bool],
    first: usize,
    last_end: usize,
    mut kept: Vec<Kept>,
) -> String {
    kept.sort_by(|a, b| a.key.cmp(&b.key));
    let blank = if lines.first().is_some_and(|l| l.ends_with("\r\n")) {
        "\r\n"
    } else {
        "\n"
    };
    let mut out: String = lines[..first].concat();
    for (n, entry) in kept.iter().enumerate() {
        if n > 0 {
            // The file's last entry may lack a final line ending; it may not stay last.
            if !out.ends_with('\n') {
                out.push_str(blank);
            }
            out.push_str(blank);
        }
        match &entry.header {
            Some(header) => out.push_str(header),
            None => out.push_str(lines[entry.start]),
        }
        for i in entry.start + 1..entry.end {
            if !removed[i] {
                out.push_str(lines[i]);
            }
        }
    }
    out.push_str(&lines[last_end..].concat());
    out
}

/// Marks `removed[from..to]`.
pub(super) fn mark(removed: &mut [bool], from: usize, to: usize) {
    removed[from..to].iter_mut().for_each(|r| *r = true);
}

/// In `lines[from..to]`, the mapping `list:` at `at` spaces: marks removed its entries (at
/// `at + 2`) that `drop` names, and the mapping's header too when none is left.
pub(super) fn drop_from_list(
    removed: &mut [bool],
    lines: &[&str],
    (from, to): (usize, usize),
    at: usize,
    list: &str,
    drop: &dyn Fn(&str) -> bool,
) {
    let Some(header) = entries(lines, from, to, at)
        .into_iter()
        .find(|e| e.key == list)
    else {
        return;
    };
    let items = entries(lines, header.start + 1, header.end, at + 2);
    let mut left = items.len();
    for item in items.iter().filter(|item| drop(&item.key)) {
        mark(removed, item.start, item.end);
        left -= 1;
    }
    if left == 0 {
        mark(removed, header.start, header.end);
    }
}
