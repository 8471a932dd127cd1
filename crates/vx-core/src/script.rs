//! The `sh -c` script of a task (EXEC-2, EXEC-3): exec-wrapping of plain program invocations
//! and shell quoting of forwarded arguments.

const SHELL_WORDS: &[&str] = &[
    "exit", "true", "false", ":", "echo", "cd", "export", "set", "unset", "read", "test", "[",
    "printf", "pwd", "umask", "wait", "trap", "eval", "exec", "source", ".", "alias", "unalias",
    "type", "hash", "jobs", "kill", "shift", "return", "break", "continue", "local", "readonly",
    "times", "ulimit", "command", "builtin", "let", "declare", "typeset", "[[", "time", "if",
    "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "function",
];

const SPECIAL: &[char] = &[
    '&', '|', ';', '<', '>', '(', ')', '{', '}', '$', '\\', '!', '*', '?', '~', '`', '\n',
];

/// The first word of a command read with shell quoting, or `None` when a quote is unbalanced.
pub fn first_word(command: &str) -> Option<String> {
    let mut word = String::new();
    let mut chars = command.trim_start().chars();
    let mut quote: Option<char> = None;
    for c in chars.by_ref() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c.is_whitespace() => break,
            None => word.push(c),
        }
    }
    if quote.is_some() {
        return None;
    }
    // An unbalanced quote later in the command also disables wrapping.
    let mut quote: Option<char> = None;
    for c in chars {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None => {}
        }
    }
    quote.is_none().then_some(word)
}

/// The program a command runs: its first word after any `NAME=value` assignments
/// (`NX_DAEMON=false nx run …` runs `nx`), read with shell quoting; `None` when a quote is
/// unbalanced.
pub fn program_word(command: &str) -> Option<String> {
    let mut rest = command.trim_start();
    loop {
        let word = first_word(rest)?;
        let is_assignment = word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if !is_assignment {
            return Some(word);
        }
        // Past the assignment's raw text: up to the first blank outside quotes.
        let mut quote: Option<char> = None;
        let end = rest
            .char_indices()
            .find(|&(_, c)| match quote {
                Some(q) if c == q => {
                    quote = None;
                    false
                }
                Some(_) => false,
                None if c == '\'' || c == '"' => {
                    quote = Some(c);
                    false
                }
                None => c.is_whitespace(),
            })
            .map_or(rest.len(), |(i, _)| i);
        rest = rest[end..].trim_start();
    }
}

/// EXEC-2: is the command a single plain program invocation?
pub fn can_exec_wrap(command: &str) -> bool {
    if command.contains(SPECIAL) {
        return false;
    }
    match first_word(command) {
        Some(word) => {
            !word.is_empty() && !word.contains('=') && !SHELL_WORDS.contains(&word.as_str())
        }
        None => false,
    }
}

/// EXEC-3: one argument as the shell should see it.
pub fn quote_arg(arg: &str) -> String {
    if arg.is_empty() {
        return "''".to_string();
    }
    let plain = arg
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_./=:@%+,-".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// A word of a command line a user is meant to paste (a `re-run:` line, a refusal's vx
/// spelling), as a POSIX shell reads it back: as it is when every character is plain (`#` and
/// `^` included, but not a leading `#`, which starts a comment), else single-quoted. Task ids
/// stay readable (`web#build`); `a;touch X` cannot run `touch`.
pub fn quote_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./_-#^".contains(c);
    if !word.is_empty() && !word.starts_with('#') && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The command with forwarded arguments appended to its last non-blank line (before a trailing
/// unquoted `#` comment), as shown on the frame's `$` line.
pub fn with_args(command: &str, args: &[String]) -> String {
    if args.is_empty() {
        return command.to_string();
    }
    let quoted: Vec<String> = args.iter().map(|a| quote_arg(a)).collect();
    let quoted = quoted.join(" ");
    let mut lines: Vec<&str> = command.split('\n').collect();
    let Some(last) = lines.iter().rposition(|l| !l.trim().is_empty()) else {
        return format!("{command} {quoted}");
    };
    let line = lines[last];
    let new_line = match comment_start(line) {
        Some(i) => {
            let (code, comment) = line.split_at(i);
            format!("{} {quoted} {comment}", code.trim_end())
        }
        None => format!("{line} {quoted}"),
    };
    lines[last] = &new_line;
    lines.join("\n")
}

/// Byte index of an unquoted `#` that starts a comment (at line start or after whitespace).
fn comment_start(line: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
        } else if let Some(q) = quote {
            if c == q {
                quote = None;
            }
        } else if c == '\\' {
            escaped = true;
        } else if c == '\'' || c == '"' {
            quote = Some(c);
        } else if c == '#' && previous.is_whitespace() {
            return Some(i);
        }
        previous = c;
    }
    None
}

/// The full script given to `sh -c`: wrapping is decided on the command as written.
pub fn script(command: &str, args: &[String]) -> String {
    let body = with_args(command, args);
    if can_exec_wrap(command) {
        format!("exec {body}")
    } else {
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_comes_after_the_assignments() {
        assert_eq!(
            program_word("NX_DAEMON=false nx run a:b").as_deref(),
            Some("nx")
        );
        assert_eq!(
            program_word("A='x y' B=\"1\"  tsc -b").as_deref(),
            Some("tsc")
        );
        assert_eq!(program_word("vite build").as_deref(), Some("vite"));
        assert_eq!(program_word("a=b=c").as_deref(), Some(""));
        assert_eq!(program_word("'x"), None);
    }

    #[test]
    fn plain_invocations_are_exec_wrapped() {
        assert_eq!(
            script("vite build --mode production", &[]),
            "exec vite build --mode production"
        );
        assert_eq!(script("\"my tool\" x", &[]), "exec \"my tool\" x");
        for not in [
            "echo hi",
            "a && b",
            "cat x | y",
            "FOO=1 node x",
            "sleep 30 & echo started",
            "ls *.txt",
            "echo $HOME",
            "read line",
            "a\nb",
            "'unbalanced x",
            "",
        ] {
            assert!(!can_exec_wrap(not), "{not:?}");
        }
    }

    #[test]
    fn arguments_are_quoted() {
        assert_eq!(quote_arg("abc-1.2/x=y:z@%+,"), "abc-1.2/x=y:z@%+,");
        assert_eq!(quote_arg(""), "''");
        assert_eq!(quote_arg("a b"), "'a b'");
        assert_eq!(quote_arg("it's"), "'it'\\''s'");
    }

    #[test]
    fn arguments_go_on_the_last_line_before_a_comment() {
        let args = vec!["a b".to_string(), "c".to_string()];
        assert_eq!(with_args("printf '[%s]'", &args), "printf '[%s]' 'a b' c");
        assert_eq!(
            with_args("one\ntwo # note\n\n", &args),
            "one\ntwo 'a b' c # note\n\n"
        );
        assert_eq!(with_args("echo '#x'", &args), "echo '#x' 'a b' c");
        assert_eq!(script("jest", &args), "exec jest 'a b' c");
    }
}
