//! Other runners' words (CLI-17): the flags of Turborepo and Nx that vx refuses with
//! its own spelling, and Nx's verbs (`run-many`, `affected`, `graph`, `show project`) refused
//! with the whole vx command line that does the same, so a user's muscle memory gets an
//! answer to copy, never a silent difference. (The spellings vx accepts as they are —
//! `--dry-run`, `--parallel`, `--skip-nx-cache`, `project:task` — are handled where they are
//! parsed.)
//!
//! Start at [`refusal`]; it runs on the raw arguments, before clap.

use std::ffi::OsString;

use vx_core::script::quote_word;
use vx_core::Diagnostic;

/// Flags of other runners that vx refuses, with the vx spelling. (Those it accepts are clap
/// aliases: `--dry-run`, `--parallel`, `--skip-nx-cache`; and the value
/// `--continue=dependencies-successful`.)
const FOREIGN_FLAGS: &[(&str, &str)] = &[
    ("--scope", "use --filter <name>"),
    ("--since", "use --affected=<ref>"),
    (
        "--env-mode",
        "a task sees only the variables it declares (env.pass-through)",
    ),
    ("--color", "use FORCE_COLOR=1"),
    ("--no-color", "use NO_COLOR=1"),
    ("--token", "use [workspace.remote-cache] token-env"),
    ("--team", "use [workspace.remote-cache] url"),
    ("--api", "use [workspace.remote-cache] url"),
    ("--daemon", "vx has no daemon"),
    ("--no-daemon", "vx has no daemon"),
    ("--log-prefix", "use --log-order=stream"),
    ("--verbose", "use VX_LOG=debug"),
    // Nx.
    ("-p", "use --filter <project>, once per project"),
    ("--projects", "use --filter <project>, once per project"),
    ("-t", "name the tasks after `run`: vx run build test"),
    ("--target", "name the tasks after `run`: vx run build test"),
    ("--targets", "name the tasks after `run`: vx run build test"),
    ("--exclude", "use --filter '!<project>'"),
    (
        "--output-style",
        "use --log-order=stream or --log-order=grouped, or --ui=tui",
    ),
];

/// Nx's verbs, each answered with the vx command line that does the same.
const NX_VERBS: &[&str] = &["run-many", "affected", "graph", "show"];

/// The refusal of the first foreign word of `args` (before a bare `--`): an Nx verb, or a
/// flag of another runner.
pub fn refusal(args: &[OsString]) -> Option<Diagnostic> {
    let words: Vec<&str> = args.iter().skip(1).filter_map(|a| a.to_str()).collect();
    let verb_at = verb_position(&words);
    if let Some(at) = verb_at.filter(|&at| NX_VERBS.contains(&words[at])) {
        if let Some(refused) = nx_verb(&words[..at], words[at], &words[at + 1..]) {
            return Some(refused);
        }
    }
    for word in words.iter().take_while(|w| **w != "--") {
        let name = word.split('=').next().unwrap_or(word);
        if let Some((flag, pointer)) = FOREIGN_FLAGS.iter().find(|(f, _)| *f == name) {
            let refused = Diagnostic::new(format!("vx has no {flag}; {pointer}"));
            // `--verbose` is as often meant for the task (a test runner's) as for vx.
            let verb = verb_at.map(|at| words[at]);
            let for_tasks = verb.is_some_and(|v| matches!(v, "run" | "watch"));
            if !(for_tasks && *flag == "--verbose") {
                return Some(refused);
            }
            let mut line: Vec<String> = vec!["vx".into()];
            line.extend(words.iter().filter(|w| *w != word).map(|w| quote_word(w)));
            return Some(refused.hint(format!(
                "to give it to the tasks, put it after `--`: `{} -- {word}`",
                line.join(" ")
            )));
        }
    }
    None
}

/// Where the verb is: the first word after the global `-C DIR` / `--cwd DIR` flags.
fn verb_position(words: &[&str]) -> Option<usize> {
    let mut at = 0;
    while let Some(word) = words.get(at) {
        match *word {
            "-C" | "--cwd" => at += 2,
            w if w.starts_with("--cwd=") || (w.starts_with("-C") && w.len() > 2) => at += 1,
            _ => return Some(at),
        }
    }
    None
}

/// `nx run-many …`, `nx affected …`, `nx graph`, `nx show project X` as vx command lines.
fn nx_verb(globals: &[&str], verb: &str, rest: &[&str]) -> Option<Diagnostic> {
    let mut line: Vec<String> = vec!["vx".into()];
    line.extend(globals.iter().map(|w| quote_word(w)));
    let mut dropped = Vec::new();
    match verb {
        "show" => {
            let (what, name) = (rest.first()?, rest.get(1));
            match (*what, name) {
                ("project", Some(name)) => line.extend(["show".into(), quote_word(name)]),
                ("projects", _) => line.push("info".into()),
                _ => return None,
            }
        }
        "graph" => line.extend(["run", "<task>", "--all", "--graph=graph.html"].map(String::from)),
        _ => {
            let run = RunMany::read(rest);
            dropped = run.dropped;
            line.push("run".into());
            if run.targets.is_empty() {
                line.push("<task>".into());
            }
            line.extend(run.targets.iter().map(|t| quote_word(t)));
            if verb == "affected" {
                line.push(match run.base {
                    Some(base) => format!("--affected={}", quote_word(&base)),
                    None => "--affected".into(),
                });
            } else if run.projects.is_empty() {
                line.push("--all".into());
            }
            for project in &run.projects {
                line.extend(["--filter".into(), quote_word(project)]);
            }
            for project in &run.excluded {
                line.extend(["--filter".into(), quote_word(&format!("!{project}"))]);
            }
            line.extend(run.flags);
            if !run.forwarded.is_empty() {
                line.push("--".into());
                line.extend(run.forwarded.iter().map(|w| quote_word(w)));
            }
        }
    }
    let mut d = Diagnostic::new(format!(
        "vx has no `{verb}` (an Nx command); in vx: {}",
        line.join(" ")
    ));
    if !dropped.is_empty() {
        d = d.hint(format!(
            "not carried into that line: {} (docs/migrating.md)",
            dropped.join(" ")
        ));
    }
    Some(d)
}

/// The words of `nx run-many` / `nx affected`, sorted into what vx takes.
#[derive(Default)]
struct RunMany {
    targets: Vec<String>,
    projects: Vec<String>,
    excluded: Vec<String>,
    base: Option<String>,
    /// vx flags, spelled out.
    flags: Vec<String>,
    forwarded: Vec<String>,
    dropped: Vec<String>,
}

impl RunMany {
    fn read(words: &[&str]) -> RunMany {
        let mut run = RunMany::default();
        let mut i = 0;
        while i < words.len() {
            let word = words[i];
            i += 1;
            if word == "--" {
                run.forwarded = words[i..].iter().map(|w| w.to_string()).collect();
                break;
            }
            let (name, inline) = match word.split_once('=') {
                Some((n, v)) if n.starts_with('-') => (n, Some(v.to_string())),
                _ => (word, None),
            };
            // The values of a list flag: `=a,b`, or the words up to the next flag.
            let mut values = |inline: Option<String>| -> Vec<String> {
                let mut found: Vec<String> = inline.into_iter().collect();
                if found.is_empty() {
                    while i < words.len() && !words[i].starts_with('-') {
                        found.push(words[i].to_string());
                        i += 1;
                    }
                }
                found
                    .iter()
                    .flat_map(|v| v.split(','))
                    .filter(|v| !v.is_empty())
                    .map(String::from)
                    .collect()
            };
            match name {
                "-t" | "--target" | "--targets" => run.targets.extend(values(inline)),
                "-p" | "--projects" => run.projects.extend(values(inline)),
                "--exclude" => run.excluded.extend(values(inline)),
                "--base" => run.base = values(inline).into_iter().next(),
                "--parallel" => match values(inline).first() {
                    Some(n) if n.parse::<u32>().is_ok() => {
                        run.flags.push(format!("--concurrency={n}"));
                    }
                    _ => {}
                },
                "--skip-nx-cache" | "--skipNxCache" => run.flags.push("--force".into()),
                "--output-style" => match values(inline).first().map(String::as_str) {
                    Some("stream" | "stream-without-prefixes") => {
                        run.flags.push("--log-order=stream".into());
                    }
                    Some("static") => run.flags.push("--log-order=grouped".into()),
                    Some("tui") => run.flags.push("--ui=tui".into()),
                    _ => {}
                },
                "--graph" => run.flags.push(match inline {
                    Some(file) => format!("--graph={}", quote_word(&file)),
                    None => "--graph=graph.html".into(),
                }),
                "--dry-run" => run.flags.push("--dry".into()),
                "--head" | "--files" | "--uncommitted" | "--untracked" | "-c"
                | "--configuration" => {
                    let shown = values(inline);
                    run.dropped
                        .push(format!("{name} {}", shown.join(",")).trim().to_string());
                }
                other => run.dropped.push(other.to_string()),
            }
        }
        run
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(line: &str) -> String {
        let args: Vec<OsString> = line.split(' ').map(OsString::from).collect();
        let d = refusal(&args).expect("refused");
        let mut text = d.message;
        for hint in d.hints {
            text.push_str(&format!(" | hint: {hint}"));
        }
        text
    }

    #[test]
    fn nx_verbs_are_answered_with_the_vx_line() {
        assert_eq!(
            refused("vx run-many -t build test -p web,api --exclude docs --parallel=3"),
            "vx has no `run-many` (an Nx command); in vx: vx run build test --filter web --filter api --filter '!docs' --concurrency=3"
        );
        assert_eq!(
            refused("vx run-many --targets=lint --skip-nx-cache -- --fix"),
            "vx has no `run-many` (an Nx command); in vx: vx run lint --all --force -- --fix"
        );
        assert_eq!(
            refused("vx -C repo affected -t test --base=origin/main --head=HEAD"),
            "vx has no `affected` (an Nx command); in vx: vx -C repo run test --affected=origin/main | hint: not carried into that line: --head HEAD (docs/migrating.md)"
        );
        assert_eq!(
            refused("vx graph"),
            "vx has no `graph` (an Nx command); in vx: vx run <task> --all --graph=graph.html"
        );
        assert_eq!(
            refused("vx show project @acme/web"),
            "vx has no `show` (an Nx command); in vx: vx show @acme/web"
        );
        assert_eq!(
            refused("vx run-many -t build --output-style=static"),
            "vx has no `run-many` (an Nx command); in vx: vx run build --all --log-order=grouped"
        );
    }

    #[test]
    fn vx_words_are_left_alone_and_foreign_flags_get_their_spelling() {
        let args = |line: &str| -> Vec<OsString> { line.split(' ').map(OsString::from).collect() };
        assert!(refusal(&args("vx show web")).is_none());
        assert!(refusal(&args("vx run build --all -- -p")).is_none());
        assert_eq!(
            refusal(&args("vx run build -p web")).unwrap().message,
            "vx has no -p; use --filter <project>, once per project"
        );
        assert_eq!(
            refusal(&args("vx run build --exclude=docs"))
                .unwrap()
                .message,
            "vx has no --exclude; use --filter '!<project>'"
        );
    }
}
