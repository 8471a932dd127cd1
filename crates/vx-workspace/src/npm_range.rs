//! npm version ranges (`^1.2`, `>=1 <2`, `1.2.3 - 2`, `1.x || 2`), checked against a workspace
//! package's `version` to decide whether a package manager would link it (DISC-5).
//!
//! The `semver` crate speaks Cargo's dialect, which differs from npm's in two ways that
//! matter here: a bare version means `^` to Cargo but `=` to npm, and npm separates
//! comparators with spaces and alternatives with `||`. Each npm alternative is rewritten into
//! a Cargo requirement; partial versions mean the same in both (`<=2.3` is `<2.4.0`).

use semver::{Version, VersionReq};

/// Whether `range` accepts `version`; `None` when `range` is not a version range at all (a
/// tag such as `latest`, a URL, a git or `npm:` specifier).
pub(crate) fn range_accepts(range: &str, version: &Version) -> Option<bool> {
    let mut accepts = false;
    for alternative in range.split("||") {
        let requirement = VersionReq::parse(&cargo_requirement(alternative)?).ok()?;
        accepts |= requirement.matches(version);
    }
    Some(accepts)
}

/// A package's `version`, as npm reads it (a leading `v` or `=` is allowed).
pub(crate) fn parse_version(text: &str) -> Option<Version> {
    let text = text.trim();
    let text = text.strip_prefix('=').unwrap_or(text);
    Version::parse(text.strip_prefix('v').unwrap_or(text)).ok()
}

/// One npm alternative as a comma-separated Cargo requirement.
fn cargo_requirement(alternative: &str) -> Option<String> {
    let alternative = alternative.trim();
    if alternative.is_empty() {
        return Some("*".into());
    }
    if let Some((low, high)) = alternative.split_once(" - ") {
        return Some(format!(">={}, <={}", bare(low.trim())?, bare(high.trim())?));
    }
    // Operators may be separated from their version by spaces (`>= 1.2`).
    let mut comparators = Vec::new();
    let mut pending_operator = String::new();
    for token in alternative.split_whitespace() {
        if token
            .chars()
            .all(|c| matches!(c, '<' | '>' | '=' | '^' | '~'))
        {
            pending_operator.push_str(token);
            continue;
        }
        let token = format!("{}{token}", std::mem::take(&mut pending_operator));
        comparators.push(comparator(&token)?);
    }
    if !pending_operator.is_empty() {
        return None;
    }
    Some(comparators.join(", "))
}

fn comparator(token: &str) -> Option<String> {
    let operator_len = token
        .find(|c: char| !matches!(c, '<' | '>' | '=' | '^' | '~'))
        .unwrap_or(token.len());
    let (operator, version) = token.split_at(operator_len);
    let version = bare(version)?;
    if version == "*" {
        return Some("*".into());
    }
    let operator = match operator {
        // npm's bare version is an exact match, Cargo's is a caret.
        "" | "=" => "=",
        "~>" => "~",
        ">" | ">=" | "<" | "<=" | "^" | "~" => operator,
        _ => return None,
    };
    // Cargo refuses wildcards after `^` and `~`, where npm reads `^1.x` as `^1`.
    let version = match operator {
        "^" | "~" | "=" => version.trim_end_matches(".*").to_string(),
        _ => version,
    };
    if version == "*" || version.is_empty() {
        return Some("*".into());
    }
    Some(format!("{operator}{version}"))
}

/// A version or partial version with npm's `v` prefix and `x`/`X` wildcards normalised; `None`
/// when it is not one.
fn bare(version: &str) -> Option<String> {
    let version = version.strip_prefix('v').unwrap_or(version);
    if version.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    for (i, part) in version.splitn(3, '.').enumerate() {
        let wildcard = matches!(part, "x" | "X" | "*");
        // The last part may carry a pre-release or build suffix (`3-beta.1`).
        let core = if i == 2 {
            part.split(['-', '+']).next()?
        } else {
            part
        };
        if !wildcard && (core.is_empty() || !core.bytes().all(|b| b.is_ascii_digit())) {
            return None;
        }
        parts.push(if wildcard { "*" } else { part });
    }
    // `1.*.*` is `1.*`; Cargo refuses a wildcard followed by anything.
    while parts.len() > 1 && parts.last() == Some(&"*") && parts[parts.len() - 2] == "*" {
        parts.pop();
    }
    Some(parts.join("."))
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
