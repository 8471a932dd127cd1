//! Member globs (DISC-2): the package-manager grammar (`*`, `**`, `?`, `[…]` classes, brace
//! sets, `!` excludes) and their expansion into member directories.
//!
//! How this works: a glob is split into path segments. The walk starts at the glob's literal
//! prefix and goes only as deep as its segments need: a literal segment is one `stat`, a
//! pattern segment one directory listing, and only `**` descends further. Directories named
//! `node_modules`, `.git` and `.vx` are never entered, so a workspace of thousands of projects
//! costs a few thousand system calls, not a walk over every source file. Listings are shared
//! between globs, and symlinked directories are followed only where a segment names them,
//! never by `**`, so a link cycle cannot trap the walk.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use globset::{GlobBuilder, GlobMatcher};
use vx_core::{Diagnostic, Spanned};

use crate::disk;
use crate::glob_rules::normalise;
use crate::LoadError;

/// Names that are never members and are never walked into (DISC-2).
pub(crate) const NEVER_MEMBERS: [&str; 3] = ["node_modules", ".git", ".vx"];

enum Segment {
    Literal(String),
    Pattern(GlobMatcher),
    AnyDepth,
}

struct Include {
    source: Spanned<String>,
    segments: Vec<Segment>,
    whole: GlobMatcher,
}

/// A workspace's compiled member globs.
pub(crate) struct MemberGlobs {
    includes: Vec<Include>,
    excludes: Vec<GlobMatcher>,
}

/// Checks one member glob; the problem is phrased to follow the quoted entry.
pub(crate) fn check_member_glob(entry: &str) -> Result<(), String> {
    parse(entry).map(|_| ())
}

/// A member glob split into its parts: negated or not, its normal form, and its segments.
fn parse(entry: &str) -> Result<(bool, String, Vec<Segment>), String> {
    // Checked on the whole entry: `!(a)` is an extglob, not the negation of `(a)`.
    if ["@(", "!(", "+(", "?(", "*("]
        .iter()
        .any(|f| entry.contains(f))
    {
        return Err("is an extglob, which member globs do not support".into());
    }
    let (negated, body) = match entry.strip_prefix('!') {
        Some(body) => (true, body),
        None => (false, entry),
    };
    if body.starts_with('!') {
        return Err("is a double negation; write one `!`".into());
    }
    if body.contains('\\') {
        return Err("contains a backslash; write paths with `/`".into());
    }
    if body.starts_with('/') || body.starts_with("~/") {
        return Err("is outside the workspace root; member globs are root-relative".into());
    }
    let normal = normalise(body);
    if normal
        .split(['/', '{', '}', ','])
        .any(|piece| piece == "..")
    {
        return Err("is outside the workspace root (`..`)".into());
    }
    if normal.is_empty() {
        return Err("names the workspace root, which is never a member".into());
    }
    let mut segments = Vec::new();
    for part in normal.split('/') {
        segments.push(if part == "**" {
            Segment::AnyDepth
        } else if part.contains(['*', '?', '[', '{']) {
            Segment::Pattern(matcher(part)?)
        } else {
            Segment::Literal(part.to_string())
        });
    }
    matcher(&normal)?;
    Ok((negated, normal, segments))
}

fn matcher(glob: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("is not a valid glob: {}", e.kind()))
}

impl MemberGlobs {
    /// Compiles the globs, reporting refused entries at their location.
    pub(crate) fn new(globs: &[Spanned<String>], errors: &mut Vec<Diagnostic>) -> MemberGlobs {
        let mut compiled = MemberGlobs {
            includes: Vec::new(),
            excludes: Vec::new(),
        };
        for glob in globs {
            match parse(&glob.value) {
                Ok((true, normal, _)) => {
                    // `!legacy/*` also excludes what lies below each excluded directory.
                    compiled.excludes.extend(matcher(&normal).ok());
                    compiled
                        .excludes
                        .extend(matcher(&format!("{normal}/**")).ok());
                }
                Ok((false, normal, segments)) => compiled.includes.push(Include {
                    source: glob.clone(),
                    segments,
                    whole: matcher(&normal).expect("checked by parse"),
                }),
                Err(problem) => errors.push(Diagnostic::at(
                    glob.at.clone(),
                    format!("members: `{}` {problem}", glob.value),
                )),
            }
        }
        compiled
    }

    fn excluded(&self, rel: &str) -> bool {
        self.excludes.iter().any(|g| g.is_match(rel))
    }

    /// Whether `rel` (root-relative, "" for the root) is the root or lies in a member
    /// directory: used to choose between package-manager roots (DISC-1) without a walk.
    pub(crate) fn claims(&self, rel: &str) -> bool {
        if rel.is_empty() {
            return true;
        }
        let mut prefix = rel;
        loop {
            let member = !prefix.split('/').any(|s| NEVER_MEMBERS.contains(&s))
                && self.includes.iter().any(|i| i.whole.is_match(prefix))
                && !self.excluded(prefix);
            if member {
                return true;
            }
            match prefix.rfind('/') {
                Some(i) => prefix = &prefix[..i],
                None => return false,
            }
        }
    }

    /// The member directories, root-relative: in glob order, sorted within each glob, without
    /// duplicates, excludes or the root. A match that resolves outside the root is reported.
    pub(crate) fn expand(
        &self,
        root: &Path,
        errors: &mut Vec<Diagnostic>,
    ) -> Result<Vec<String>, LoadError> {
        self.expand_seeing(root, errors, &mut Vec::new())
            .map(|(members, _)| members)
    }

    /// [`MemberGlobs::expand`], and every root-relative path the expansion looked at: each
    /// directory it listed or probed, and each directory a glob matched (excluded ones too).
    /// A glob that matches no directory is a warning: a run goes on without it, and says so.
    pub(crate) fn expand_seeing(
        &self,
        root: &Path,
        errors: &mut Vec<Diagnostic>,
        warnings: &mut Vec<Diagnostic>,
    ) -> Result<(Vec<String>, Vec<String>), LoadError> {
        let mut walk = Walk {
            root,
            listings: HashMap::new(),
            probed: Vec::new(),
        };
        let mut members = Vec::new();
        let mut seen = HashSet::new();
        let mut seen_paths = Vec::new();
        for include in &self.includes {
            let mut found = walk.matches(&include.segments)?;
            if found.is_empty() {
                warnings.push(Diagnostic::at(
                    include.source.at.clone(),
                    format!("members: `{}` matches no directory", include.source.value),
                ));
            }
            found.sort();
            seen_paths.extend(found.iter().map(|(rel, _)| rel.clone()));
            for (rel, via_link) in found {
                if rel.is_empty() || self.excluded(&rel) || !seen.insert(rel.clone()) {
                    continue;
                }
                if via_link && !disk::canonical(&walk.abs(&rel))?.starts_with(root) {
                    errors.push(Diagnostic::at(
                        include.source.at.clone(),
                        format!(
                            "members: `{}` matches `{rel}`, which resolves outside the workspace root",
                            include.source.value
                        ),
                    ));
                    continue;
                }
                members.push(rel);
            }
        }
        seen_paths.extend(walk.listings.into_keys());
        seen_paths.extend(walk.probed);
        seen_paths.sort_unstable();
        seen_paths.dedup();
        Ok((members, seen_paths))
    }
}

/// One subdirectory in a listing.
struct Child {
    name: String,
    symlink: bool,
}

struct Walk<'a> {
    root: &'a Path,
    /// Directory listings by root-relative path, shared by every glob.
    listings: HashMap<String, Rc<[Child]>>,
    /// Paths a literal segment asked about (there or not).
    probed: Vec<String>,
}

fn child_rel(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

impl Walk<'_> {
    fn abs(&self, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.root.to_path_buf()
        } else {
            self.root.join(rel)
        }
    }

    /// The subdirectories of `rel`, less the never-members; empty when it is not a directory.
    fn listing(&mut self, rel: &str) -> Result<Rc<[Child]>, LoadError> {
        if let Some(listing) = self.listings.get(rel) {
            return Ok(listing.clone());
        }
        let mut children = Vec::new();
        for entry in disk::list_dir(&self.abs(rel))? {
            let Ok(name) = entry.name.into_string() else {
                continue; // A name that is not UTF-8 cannot be written in a glob or a message.
            };
            if NEVER_MEMBERS.contains(&name.as_str()) {
                continue;
            }
            let is_dir = entry.is_dir
                || (entry.is_symlink
                    && disk::dir_kind(&self.abs(&child_rel(rel, &name))).is_some());
            if is_dir {
                children.push(Child {
                    name,
                    symlink: entry.is_symlink,
                });
            }
        }
        let listing: Rc<[Child]> = children.into();
        self.listings.insert(rel.to_string(), listing.clone());
        Ok(listing)
    }

    /// The root-relative directories the segments match, each with whether the way to it
    /// went through a symbolic link.
    fn matches(&mut self, segments: &[Segment]) -> Result<Vec<(String, bool)>, LoadError> {
        let mut found = Vec::new();
        let mut visited = HashSet::new();
        let mut stack = vec![(String::new(), 0usize, false)];
        while let Some((dir, index, via_link)) = stack.pop() {
            if !visited.insert((dir.clone(), index)) {
                continue;
            }
            let Some(segment) = segments.get(index) else {
                found.push((dir, via_link));
                continue;
            };
            match segment {
                Segment::Literal(name) => {
                    let rel = child_rel(&dir, name);
                    if NEVER_MEMBERS.contains(&name.as_str()) {
                        continue;
                    }
                    self.probed.push(rel.clone());
                    if let Some(link) = disk::dir_kind(&self.abs(&rel)) {
                        stack.push((rel, index + 1, via_link || link));
                    }
                }
                Segment::Pattern(pattern) => {
                    // Like package managers, a wildcard does not match a hidden directory
                    // unless the segment itself starts with a dot.
                    let dotted = pattern.glob().glob().starts_with('.');
                    for child in self.listing(&dir)?.iter() {
                        if pattern.is_match(&child.name) && (dotted || !child.name.starts_with('.'))
                        {
                            let link = via_link || child.symlink;
                            stack.push((child_rel(&dir, &child.name), index + 1, link));
                        }
                    }
                }
                Segment::AnyDepth => {
                    // Inside a glob `**` matches zero or more segments; at its end, one or
                    // more (`packages/**` is what lies below `packages`, as for globset).
                    let last = index + 1 == segments.len();
                    if !last {
                        stack.push((dir.clone(), index + 1, via_link));
                    }
                    for child in self.listing(&dir)?.iter() {
                        if !child.symlink && !child.name.starts_with('.') {
                            let rel = child_rel(&dir, &child.name);
                            if last {
                                stack.push((rel.clone(), index + 1, via_link));
                            }
                            stack.push((rel, index, via_link));
                        }
                    }
                }
            }
        }
        Ok(found)
    }
}
