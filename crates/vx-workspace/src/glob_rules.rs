//! Task glob rules (CFG-7): which `cache` input and output globs vx accepts, and their
//! normal form.
//!
//! Task globs support `*`, `**`, `?` and brace sets; square brackets are literal characters
//! (`app/[id]/**` names a directory called `[id]`), so they are escaped before a glob is
//! compiled. Member globs follow the package-manager grammar instead (see `members`).

use globset::GlobMatcher;

/// What a glob list is relative to, which decides the pointer in some messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GlobBase {
    /// `inputs`, `outputs`: the project directory.
    Project,
    /// `workspace-inputs`, `workspace-outputs`, `remote.extra-inputs`: the root.
    Root,
}

/// Checks one entry; returns its normal form (negation kept) or the problem, phrased to
/// follow the quoted entry.
pub(crate) fn check_task_glob(entry: &str, base: GlobBase) -> Result<String, String> {
    // Checked on the whole entry: `!(a)` is an extglob, not the negation of `(a)`.
    if ["@(", "!(", "+("].iter().any(|form| entry.contains(form)) {
        return Err("is an extglob, which vx does not support; use a brace set `{a,b}`".into());
    }
    if entry.starts_with("!!") {
        return Err("is a double negation; write one `!`".into());
    }
    let (negated, body) = match entry.strip_prefix('!') {
        Some(body) => (true, body),
        None => (false, entry),
    };
    if body.is_empty() {
        return Err("is empty; write a glob".into());
    }
    for (placeholder, pointer) in PLACEHOLDERS {
        if body.contains(placeholder) {
            return Err(format!(
                "uses `{placeholder}`, which vx does not know; {pointer}"
            ));
        }
    }
    if body.contains('\\') {
        return Err("contains a backslash; write paths with `/`".into());
    }
    if body.starts_with('/') {
        return Err(match base {
            GlobBase::Project => "is absolute; globs here are project-relative \
                                  (`workspace-inputs` and `workspace-outputs` are root-relative)"
                .into(),
            GlobBase::Root => "is absolute; globs here are root-relative".into(),
        });
    }
    let normal = normalise(body);
    if normal.is_empty() {
        return Err("names the whole directory; write `**`".into());
    }
    if normal
        .split(['/', '{', '}', ','])
        .any(|piece| piece == "..")
    {
        return Err(match base {
            GlobBase::Project => "leaves the project (`..`); use `workspace-inputs` or \
                                  `workspace-outputs` for paths elsewhere in the workspace"
                .into(),
            GlobBase::Root => "leaves the workspace (`..`)".into(),
        });
    }
    if let Some(problem) = brace_problem(&normal) {
        return Err(problem);
    }
    if let Err(error) = parse(&normal) {
        return Err(format!("is not a valid glob: {}", error.kind()));
    }
    Ok(if negated {
        format!("!{normal}")
    } else {
        normal
    })
}

/// Placeholders of other tools, with the vx way to say the same thing.
const PLACEHOLDERS: [(&str, &str); 4] = [
    (
        "$TURBO_DEFAULT$",
        "list the inputs explicitly, such as `src/**`",
    ),
    (
        "$TURBO_ROOT$",
        "root-relative globs go in `workspace-inputs` or `workspace-outputs`",
    ),
    (
        "{projectRoot}",
        "globs here are already project-relative; drop the placeholder",
    ),
    (
        "{workspaceRoot}",
        "root-relative globs go in `workspace-inputs` or `workspace-outputs`",
    ),
];

/// Removes a leading `./`, inner `/./`, doubled `/` and a trailing `/` (CFG-7).
pub(crate) fn normalise(glob: &str) -> String {
    glob.split('/')
        .filter(|segment| !segment.is_empty() && *segment != ".")
        .collect::<Vec<_>>()
        .join("/")
}

/// Refuses single-alternative brace sets such as `{a}` (CFG-7); unbalanced braces are left to
/// the glob compiler, which explains them.
fn brace_problem(glob: &str) -> Option<String> {
    // One comma counter per open brace.
    let mut open: Vec<(usize, usize)> = Vec::new();
    for (i, c) in glob.char_indices() {
        match c {
            '{' => open.push((i, 0)),
            ',' => {
                if let Some(top) = open.last_mut() {
                    top.1 += 1;
                }
            }
            '}' => {
                if let Some((start, 0)) = open.pop() {
                    return Some(format!(
                        "has a brace set with one alternative (`{}`); write it without braces",
                        &glob[start..=i]
                    ));
                }
            }
            _ => {}
        }
    }
    None
}

/// Parses a normalised task glob (without its `!`), with `[` and `]` taken literally.
fn parse(glob: &str) -> Result<globset::Glob, globset::Error> {
    vx_core::globs::parse(glob)
}

/// Compiles a normalised task glob (without its `!`), with `[` and `]` taken literally.
/// Compiled matchers are kept for the rest of the process: a workspace of a thousand projects
/// spells the same few globs everywhere, and compiling one costs far more than a lookup.
pub(crate) fn compile(glob: &str) -> Result<GlobMatcher, globset::Error> {
    thread_local! {
        static COMPILED: std::cell::RefCell<std::collections::HashMap<String, GlobMatcher>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    if let Some(found) = COMPILED.with(|c| c.borrow().get(glob).cloned()) {
        return Ok(found);
    }
    let matcher = parse(glob)?.compile_matcher();
    COMPILED.with(|c| c.borrow_mut().insert(glob.to_string(), matcher.clone()));
    Ok(matcher)
}

/// Whether a task glob has no wildcard, so it names a file or a whole directory (CFG-7).
pub(crate) fn is_literal(glob: &str) -> bool {
    !glob.contains(['*', '?', '{'])
}

/// A compiled glob list: positives minus negations (negations subtract wherever they appear).
/// A literal entry also covers the tree below it.
pub(crate) struct GlobList {
    include: Vec<GlobMatcher>,
    exclude: Vec<GlobMatcher>,
}

impl GlobList {
    /// Compiles entries already accepted by [`check_task_glob`]; others are left out.
    pub(crate) fn new<'a>(entries: impl IntoIterator<Item = &'a str>) -> GlobList {
        let mut list = GlobList {
            include: Vec::new(),
            exclude: Vec::new(),
        };
        for entry in entries {
            let (target, body) = match entry.strip_prefix('!') {
                Some(body) => (&mut list.exclude, body),
                None => (&mut list.include, entry),
            };
            target.extend(compile(body).ok());
            if is_literal(body) {
                target.extend(compile(&format!("{body}/**")).ok());
            }
        }
        list
    }

    pub(crate) fn is_match(&self, path: &str) -> bool {
        self.include.iter().any(|g| g.is_match(path))
            && !self.exclude.iter().any(|g| g.is_match(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_dots_slashes_and_trailing_slashes() {
        assert_eq!(
            check_task_glob("./src//a/./b/", GlobBase::Project).unwrap(),
            "src/a/b"
        );
        assert_eq!(
            check_task_glob("!./dist/", GlobBase::Project).unwrap(),
            "!dist"
        );
        assert_eq!(
            check_task_glob("app/[id]/**", GlobBase::Project).unwrap(),
            "app/[id]/**"
        );
    }

    #[test]
    fn refuses_what_cfg7_refuses() {
        let refused = [
            ("/etc/x", "is absolute"),
            ("../x", "leaves the project"),
            ("src/{a,..}/x", "leaves the project"),
            ("src\\x", "backslash"),
            (".", "write `**`"),
            ("./", "write `**`"),
            ("!!x", "double negation"),
            ("@(a|b)", "extglob"),
            ("!(a)", "extglob"),
            ("+(a)", "extglob"),
            ("src/{a}", "one alternative (`{a}`)"),
            ("$TURBO_DEFAULT$", "`$TURBO_DEFAULT$`"),
            ("{projectRoot}/src", "`{projectRoot}`"),
            ("{workspaceRoot}/x", "`workspace-inputs`"),
            ("src/{a,b", "not a valid glob"),
            ("", "is empty"),
        ];
        for (glob, expected) in refused {
            let problem = check_task_glob(glob, GlobBase::Project).unwrap_err();
            assert!(problem.contains(expected), "{glob}: {problem}");
        }
    }

    #[test]
    fn brackets_are_literal_and_literals_cover_their_tree() {
        let list = GlobList::new(["app/[id]", "dist/**", "!dist/keep.txt"]);
        assert!(list.is_match("app/[id]/page.tsx"));
        assert!(!list.is_match("app/i/page.tsx"));
        assert!(list.is_match("dist/a.js"));
        assert!(!list.is_match("dist/keep.txt"));
    }
}
