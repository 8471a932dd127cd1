//! Task globs at run time (CFG-7): the compiled form of a `cache.inputs`, `cache.outputs`,
//! `workspace-inputs` or `workspace-outputs` list.
//!
//! The loader (`vx-workspace`) has already refused malformed entries and normalised the rest,
//! so compiling here cannot fail for loaded configuration; an entry that does not compile is
//! left out. Square brackets are literal characters; a literal entry (no wildcard) names a
//! file or, when it is a directory, its whole tree; negations subtract wherever they appear.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// A compiled glob list: paths matched by some positive entry and by no negation.
#[derive(Debug, Clone)]
pub struct TaskGlobs {
    include: GlobSet,
    exclude: GlobSet,
    /// The positive entries as written (normalised), in order.
    positives: Vec<String>,
    /// The negated entries without their `!`, in order.
    negatives: Vec<String>,
}

impl TaskGlobs {
    pub fn new<'a>(entries: impl IntoIterator<Item = &'a str>) -> TaskGlobs {
        let mut include = GlobSetBuilder::new();
        let mut exclude = GlobSetBuilder::new();
        let mut positives = Vec::new();
        let mut negatives = Vec::new();
        for entry in entries {
            let negated = entry.starts_with('!');
            let (set, list, body) = match entry.strip_prefix('!') {
                Some(body) => (&mut exclude, &mut negatives, body),
                None => (&mut include, &mut positives, entry),
            };
            list.push(body.to_string());
            if let Ok(glob) = parse(body) {
                set.add(glob);
            }
            if is_literal(body) {
                if let Ok(glob) = parse(&format!("{body}/**")) {
                    set.add(glob);
                }
            }
            // `!.next/cache/**` takes back the directory itself too (`**` matches zero
            // segments), so a restore does not bring it back empty.
            if let Some(dir) = body.strip_suffix("/**").filter(|_| negated) {
                if let Ok(glob) = parse(dir) {
                    set.add(glob);
                }
            }
        }
        TaskGlobs {
            include: include.build().unwrap_or_else(|_| GlobSet::empty()),
            exclude: exclude.build().unwrap_or_else(|_| GlobSet::empty()),
            positives,
            negatives,
        }
    }

    /// Whether a path relative to the list's base is selected.
    pub fn is_match(&self, path: &str) -> bool {
        self.include.is_match(path) && !self.exclude.is_match(path)
    }

    /// Whether a negation takes `path` back.
    pub fn is_excluded(&self, path: &str) -> bool {
        self.exclude.is_match(path)
    }

    /// The positive entries, normalised, in declared order.
    pub fn positives(&self) -> &[String] {
        &self.positives
    }

    /// The negated entries without their `!`.
    pub fn negatives(&self) -> &[String] {
        &self.negatives
    }

    pub fn is_empty(&self) -> bool {
        self.positives.is_empty()
    }
}

/// Compiled glob lists by their entries: a workspace of a thousand projects usually spells the
/// same few lists (`src/**`, `dist/**`) everywhere, and compiling a glob set costs far more
/// than looking one up.
#[derive(Debug, Default)]
pub struct GlobCache {
    compiled: std::collections::HashMap<Vec<String>, std::sync::Arc<TaskGlobs>>,
}

impl GlobCache {
    pub fn get<S: AsRef<str>>(&mut self, entries: &[S]) -> std::sync::Arc<TaskGlobs> {
        let key: Vec<String> = entries.iter().map(|e| e.as_ref().to_string()).collect();
        if let Some(found) = self.compiled.get(&key) {
            return found.clone();
        }
        let globs = std::sync::Arc::new(TaskGlobs::new(key.iter().map(String::as_str)));
        self.compiled.insert(key, globs.clone());
        globs
    }
}

/// Parses one normalised task glob (without `!`) with `[` and `]` taken literally (CFG-7).
/// Parsing finds every syntax error; compiling a matcher from the result costs far more.
pub fn parse(glob: &str) -> Result<globset::Glob, globset::Error> {
    let mut escaped = String::with_capacity(glob.len());
    for c in glob.chars() {
        match c {
            '[' => escaped.push_str("[[]"),
            ']' => escaped.push_str("[]]"),
            _ => escaped.push(c),
        }
    }
    GlobBuilder::new(&escaped)
        .literal_separator(true)
        .backslash_escape(false)
        .build()
}

/// Whether a glob has no wildcard, so it names a file or a whole directory (CFG-7).
pub fn is_literal(glob: &str) -> bool {
    !glob.contains(['*', '?', '{'])
}

/// The path of a glob up to its first segment containing a wildcard; the whole path for a
/// literal (GRAPH-8). `dist/**` → `dist`, `src/*.ts` → `src`, `**/*.d.ts` → ``.
pub fn literal_prefix(glob: &str) -> &str {
    let mut end = 0;
    for (i, segment) in glob.split('/').enumerate() {
        if !is_literal(segment) {
            break;
        }
        end = if i == 0 {
            segment.len()
        } else {
            end + 1 + segment.len()
        };
    }
    &glob[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_cover_their_tree_and_brackets_are_literal() {
        let globs = TaskGlobs::new(["app/[id]", "dist/**", "!dist/keep.txt", "src/*.ts"]);
        assert!(globs.is_match("app/[id]"));
        assert!(globs.is_match("app/[id]/page.tsx"));
        assert!(!globs.is_match("app/i/page.tsx"));
        assert!(globs.is_match("dist/a/b.js"));
        assert!(!globs.is_match("dist/keep.txt"));
        assert!(globs.is_match("src/a.ts"));
        assert!(
            !globs.is_match("src/a/b.ts"),
            "`*` stays within one segment"
        );
    }

    #[test]
    fn a_negated_directory_glob_takes_back_the_directory_itself() {
        let globs = TaskGlobs::new([".next/**", "!.next/cache/**"]);
        assert!(globs.is_match(".next/page.html"));
        assert!(!globs.is_match(".next/cache/x"));
        assert!(!globs.is_match(".next/cache"));
        assert!(globs.is_match(".next/cached"));
    }

    #[test]
    fn double_star_matches_zero_or_more_segments() {
        let globs = TaskGlobs::new(["**/*.d.ts", "{a,b}/x"]);
        assert!(globs.is_match("x.d.ts"));
        assert!(globs.is_match("p/q/x.d.ts"));
        assert!(globs.is_match("b/x"));
        assert!(!globs.is_match("c/x"));
    }

    #[test]
    fn literal_prefix_stops_at_the_first_wildcard_segment() {
        assert_eq!(literal_prefix("dist/**"), "dist");
        assert_eq!(literal_prefix("src/gen/*.ts"), "src/gen");
        assert_eq!(literal_prefix("**/*.d.ts"), "");
        assert_eq!(literal_prefix("dist/out.txt"), "dist/out.txt");
        assert_eq!(literal_prefix("{a,b}/x"), "");
    }
}
