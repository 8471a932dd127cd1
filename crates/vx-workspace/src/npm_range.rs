//! npm version ranges (`^1.2`, `>=1 <2`, `1.2.3 - 2`, `1.x || 2`), checked against a workspace
//! package's `version` to decide whether a package manager would link it (DISC-5).
//!
//! `nodejs-semver` implements npm's own dialect (a bare version is an exact match, spaces
//! separate comparators, `||` alternatives, `x` wildcards, hyphen ranges), which Cargo's
//! `semver` does not.

use nodejs_semver::{Range, Version};

/// Whether `range` accepts `version`; `None` when `range` is not a version range at all (a
/// tag such as `latest`, a URL, a git or `npm:` specifier).
pub(crate) fn range_accepts(range: &str, version: &Version) -> Option<bool> {
    let range = range.trim();
    // npm reads an empty range as `*`; so does vx.
    if range.is_empty() {
        return Some(true);
    }
    let range = Range::parse(range).ok()?;
    Some(version.satisfies(&range))
}

/// A package's `version`, as npm reads it (a leading `v` or `=` is allowed).
pub(crate) fn parse_version(text: &str) -> Option<Version> {
    let text = text.trim();
    let text = text.strip_prefix('=').unwrap_or(text);
    Version::parse(text.strip_prefix('v').unwrap_or(text)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepts(range: &str, version: &str) -> Option<bool> {
        range_accepts(range, &parse_version(version).unwrap())
    }

    #[test]
    fn npm_ranges_match_like_npm() {
        let cases = [
            ("^1.2.0", "1.4.0", true),
            ("^2", "1.4.0", false),
            ("~1.4", "1.4.9", true),
            ("~1.4", "1.5.0", false),
            ("1.4.0", "1.4.0", true),
            ("1.4.0", "1.4.1", false),
            ("1.x", "1.9.0", true),
            ("1.4.x", "1.4.2", true),
            ("^1.x", "1.9.0", true),
            (">=1.0.0 <2.0.0", "1.4.0", true),
            (">= 1.0.0 < 1.2", "1.4.0", false),
            ("1.0.0 - 1.4", "1.4.7", true),
            ("1.0.0 - 1.3", "1.4.0", false),
            ("^0.1 || ^1", "1.4.0", true),
            ("*", "1.4.0", true),
            ("x", "1.4.0", true),
            ("", "1.4.0", true),
            ("v1.4.0", "1.4.0", true),
            ("=1.4.0", "1.4.0", true),
        ];
        for (range, version, expected) in cases {
            assert_eq!(
                accepts(range, version),
                Some(expected),
                "{range} vs {version}"
            );
        }
    }

    #[test]
    fn tags_urls_and_aliases_are_not_ranges() {
        for spec in [
            "latest",
            "next",
            "https://example.com/x.tgz",
            "github:acme/ui",
            "git+ssh://git@github.com/acme/ui.git",
            "npm:@acme/ui@^1",
            "acme/ui",
            ">=",
        ] {
            assert_eq!(accepts(spec, "1.4.0"), None, "{spec}");
        }
    }
}
