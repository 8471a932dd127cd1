//! Reading a `package.json` script the way `vx init` needs to (INIT-2): split into simple
//! commands at `&&`, `||`, `;`, `|`, `&` and newlines (outside quotes), each a list of words
//! with quotes removed, and the program each one really runs once runner prefixes
//! (`VAR=x`, `cross-env`, `npx`, `pnpm exec`, …) are set aside.
//!
//! This is a reading for heuristics, not a shell: expansions, subshells and redirections are
//! kept as plain words. Anything it cannot read with confidence makes the callers fall back
//! to keeping the script text as the command.

/// One simple command of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// The words, quotes removed.
    pub words: Vec<String>,
}

/// A script split into simple commands and the operators between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    pub segments: Vec<Segment>,
    /// `ops[i]` stands between `segments[i]` and `segments[i + 1]`.
    pub ops: Vec<&'static str>,
}

/// Splits `text` into simple commands.
pub fn parse(text: &str) -> Script {
    let mut segments = Vec::new();
    let mut ops = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars().peekable();
    let end_word = |word: &mut String, in_word: &mut bool, words: &mut Vec<String>| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(next) = chars.next() {
                                if !matches!(next, '"' | '\\' | '$' | '`') {
                                    word.push('\\');
                                }
                                word.push(next);
                            }
                        }
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            ' ' | '\t' => end_word(&mut word, &mut in_word, &mut words),
            '&' | '|' | ';' | '\n' => {
                end_word(&mut word, &mut in_word, &mut words);
                let op = match (c, chars.peek()) {
                    ('&', Some('&')) => {
                        chars.next();
                        "&&"
                    }
                    ('|', Some('|')) => {
                        chars.next();
                        "||"
                    }
                    ('&', _) => "&",
                    ('|', _) => "|",
                    (';', _) => ";",
                    _ => "\n",
                };
                segments.push(Segment {
                    words: std::mem::take(&mut words),
                });
                ops.push(op);
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut word, &mut in_word, &mut words);
    segments.push(Segment { words });
    // A trailing operator (`a &`) or a blank line leaves an empty segment: drop it and its
    // operator so callers only see commands.
    let mut i = 0;
    while i < segments.len() {
        if segments[i].words.is_empty() && segments.len() > 1 {
            segments.remove(i);
            ops.remove(i.min(ops.len() - 1));
        } else {
            i += 1;
        }
    }
    Script { segments, ops }
}

/// Whether a word is a variable assignment (`NODE_ENV=production`).
fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

impl Segment {
    /// The words from the program that really runs: leading assignments, `env`,
    /// `cross-env`, `npx`/`pnpx`/`bunx` and `pnpm exec`/`pnpm dlx`/`npm exec`/`yarn dlx`/
    /// `yarn exec` (with their flags) are set aside.
    pub fn program(&self) -> &[String] {
        let mut words = self.words.as_slice();
        loop {
            match words {
                [first, rest @ ..] if is_assignment(first) => words = rest,
                [first, rest @ ..] if first == "env" || first == "cross-env" => words = rest,
                [first, rest @ ..] if matches!(first.as_str(), "npx" | "pnpx" | "bunx") => {
                    words = skip_flags(rest);
                }
                [first, second, rest @ ..]
                    if matches!(
                        (first.as_str(), second.as_str()),
                        ("pnpm", "exec" | "dlx") | ("npm", "exec") | ("yarn", "dlx" | "exec")
                    ) =>
                {
                    words = skip_flags(rest);
                    if words.first().is_some_and(|w| w == "--") {
                        words = &words[1..];
                    }
                }
                _ => return words,
            }
        }
    }

    /// The program's name (the last path segment of its first word), if any.
    pub fn program_name(&self) -> Option<&str> {
        self.program()
            .first()
            .map(|w| w.rsplit('/').next().unwrap_or(w))
    }

    /// The first word after the program that is not a flag (a subcommand such as `build`).
    pub fn subcommand(&self) -> Option<&str> {
        self.program()
            .iter()
            .skip(1)
            .find(|w| !w.starts_with('-'))
            .map(String::as_str)
    }
}

fn skip_flags(words: &[String]) -> &[String] {
    let flags = words
        .iter()
        .take_while(|w| w.starts_with('-') && *w != "--");
    &words[flags.count()..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(script: &Script) -> Vec<Vec<&str>> {
        script
            .segments
            .iter()
            .map(|s| s.words.iter().map(String::as_str).collect())
            .collect()
    }

    #[test]
    fn splits_at_operators_outside_quotes() {
        let script = parse("npm run a && echo 'x && y' || b; c | d & e\nf");
        assert_eq!(
            words(&script),
            [
                vec!["npm", "run", "a"],
                vec!["echo", "x && y"],
                vec!["b"],
                vec!["c"],
                vec!["d"],
                vec!["e"],
                vec!["f"]
            ]
        );
        assert_eq!(script.ops, ["&&", "||", ";", "|", "&", "\n"]);
        let script = parse(r#"eslint "src/**" --ext .ts\ ,x &"#);
        assert_eq!(
            words(&script),
            [vec!["eslint", "src/**", "--ext", ".ts ,x"]]
        );
        assert!(script.ops.is_empty());
    }

    #[test]
    fn runner_prefixes_are_set_aside() {
        let program = |text: &str| parse(text).segments[0].program().join(" ");
        assert_eq!(program("NODE_ENV=production vite build"), "vite build");
        assert_eq!(program("cross-env A=1 B=2 npx --yes next dev"), "next dev");
        assert_eq!(program("pnpm exec tsc -w"), "tsc -w");
        let segment = &parse("npx ./node_modules/.bin/tsup src").segments[0];
        assert_eq!(segment.program_name(), Some("tsup"));
        assert_eq!(
            parse("vite --port 3 preview").segments[0].subcommand(),
            Some("3")
        );
    }
}
