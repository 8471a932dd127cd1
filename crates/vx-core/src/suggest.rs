//! Did-you-mean suggestions (ERR-4): Damerau-Levenshtein distance at most 2 (at most 1 for
//! names of 3 characters or fewer); the single best candidate, ties broken alphabetically.

/// The best candidate for `typed`, if one is close enough.
pub fn did_you_mean<'a, I>(typed: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let limit = if typed.chars().count() <= 3 { 1 } else { 2 };
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        if candidate == typed {
            continue;
        }
        let distance = strsim::damerau_levenshtein(typed, candidate);
        if distance > limit {
            continue;
        }
        best = match best {
            Some((d, c)) if d < distance || (d == distance && c <= candidate) => Some((d, c)),
            _ => Some((distance, candidate)),
        };
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_the_closest_candidate() {
        assert_eq!(did_you_mean("biuld", ["build", "test"]), Some("build"));
        assert_eq!(
            did_you_mean("comand", ["command", "cache"]),
            Some("command")
        );
        assert_eq!(did_you_mean("rnu", ["run", "show"]), Some("run"));
    }

    #[test]
    fn short_names_allow_one_edit() {
        assert_eq!(did_you_mean("ab", ["xy"]), None);
        assert_eq!(did_you_mean("lbi", ["lib"]), Some("lib"));
        assert_eq!(did_you_mean("abc", ["axy"]), None);
    }

    #[test]
    fn ties_break_alphabetically() {
        assert_eq!(did_you_mean("bat", ["cat", "bar"]), Some("bar"));
    }

    #[test]
    fn nothing_close_gives_none() {
        assert_eq!(did_you_mean("zzzzzz", ["build"]), None);
    }
}
