//! Root scripts that drive the whole workspace (`turbo run build`, `nx run-many`, `pnpm -r`),
//! which `vx run <task> --all` replaces, and the directories their filters leave out or name.

use std::collections::{BTreeMap, BTreeSet};

use super::shell::{self, Segment};

/// The root scripts that drive the whole workspace: those that do it themselves, and those
/// that run one of them (`"ci": "npm run lint && npm run build"` with `"build": "turbo build"`).
pub(super) fn orchestrating_scripts(texts: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut found: BTreeSet<String> = texts
        .iter()
        .filter(|(_, text)| orchestrates(text))
        .map(|(name, _)| name.clone())
        .collect();
    loop {
        let more: Vec<String> = texts
            .iter()
            .filter(|(name, _)| !found.contains(*name))
            .filter(|(_, text)| {
                shell::parse(text)
                    .segments
                    .iter()
                    .flat_map(loose_references)
                    .any(|name| found.contains(&name))
            })
            .map(|(name, _)| name.clone())
            .collect();
        if more.is_empty() {
            return found;
        }
        found.extend(more);
    }
}

/// The scripts a root script runs (`npm run build:all && size-limit` runs `build:all`).
pub fn root_references(text: &str) -> Vec<String> {
    shell::parse(text)
        .segments
        .iter()
        .flat_map(loose_references)
        .collect()
}

/// The scripts a simple command runs, arguments allowed (`npm run build -- --force`).
pub(super) fn loose_references(segment: &Segment) -> Vec<String> {
    let words: Vec<&String> = segment
        .words
        .iter()
        .filter(|w| !w.starts_with('-'))
        .collect();
    match words.as_slice() {
        [runner, verb, name, ..]
            if matches!(runner.as_str(), "npm" | "pnpm" | "yarn" | "bun")
                && matches!(verb.as_str(), "run" | "run-script") =>
        {
            vec![name.to_string()]
        }
        [runner, name, ..] if matches!(runner.as_str(), "pnpm" | "yarn") => vec![name.to_string()],
        [runner, names @ ..] if matches!(runner.as_str(), "run-s" | "run-p" | "npm-run-all") => {
            names.iter().map(|n| n.to_string()).collect()
        }
        _ => Vec::new(),
    }
}

/// Whether a root script drives the whole workspace: `turbo`, `nx`, `lerna`, `pnpm -r`
/// (or `--recursive`, `--filter`), `npm … --workspaces`, `yarn workspaces foreach`.
pub(super) fn orchestrates(text: &str) -> bool {
    shell::parse(text).segments.iter().any(|segment| {
        let words = segment.program();
        let Some(program) = segment.program_name() else {
            return false;
        };
        let has = |flags: &[&str]| words.iter().any(|w| flags.contains(&w.as_str()));
        let starts = |flags: &[&str]| {
            words
                .iter()
                .any(|w| flags.iter().any(|f| w.starts_with(&format!("{f}="))))
        };
        // `pnpm turbo run build`, `yarn nx …`: the package manager running the tool.
        let tool = |w: &str| matches!(w, "turbo" | "nx" | "lerna");
        match program {
            p if tool(p) => true,
            "pnpm" => {
                has(&["-r", "--recursive", "--filter", "-F"])
                    || starts(&["--filter"])
                    || words.get(1).is_some_and(|w| tool(w))
            }
            "npm" => has(&["--workspaces", "-ws", "--workspace", "-w"]) || starts(&["--workspace"]),
            "yarn" => words
                .get(1)
                .is_some_and(|w| w == "workspaces" || w == "workspace" || tool(w)),
            _ => false,
        }
    })
}

/// The member directories a root script that drives the workspace leaves out: Turborepo's
/// and pnpm's `--filter=!./examples/*` (`-F`), Nx's `--exclude=examples/**` and Lerna's
/// `--ignore` when they name directories (with a `/`, not a package scope). Root-relative,
/// as `exclude-from-all` takes them.
pub fn excluded_directories(text: &str) -> Vec<String> {
    filtered_directories(text).0
}

/// The member directories a root script names with positive filters
/// (`turbo --filter=./packages/* build`): everything else is left out.
pub fn included_directories(text: &str) -> Vec<String> {
    filtered_directories(text).1
}

/// (directories filtered out, directories filtered in).
pub(super) fn filtered_directories(text: &str) -> (Vec<String>, Vec<String>) {
    let mut out = Vec::new();
    let mut kept = Vec::new();
    for segment in shell::parse(text).segments {
        let words = segment.program();
        let mut i = 0;
        while i < words.len() {
            let word = words[i].as_str();
            let (flag, inline) = match word.split_once('=') {
                Some((flag, value)) => (flag, Some(value.to_string())),
                None => (word, None),
            };
            let negative_filter = matches!(flag, "--filter" | "-F");
            let exclude = matches!(flag, "--exclude" | "--ignore");
            if negative_filter || exclude {
                let value = inline.or_else(|| words.get(i + 1).cloned());
                if inline_missing(word) {
                    i += 1;
                }
                for part in value.iter().flat_map(|v| v.split(',')) {
                    let part = part.trim().trim_matches(['\'', '"']);
                    let (pattern, list) = if negative_filter {
                        match part.strip_prefix('!') {
                            Some(rest) => (rest, &mut out),
                            None => (part, &mut kept),
                        }
                    } else {
                        (part, &mut out)
                    };
                    let pattern = pattern.trim_start_matches('{').trim_end_matches('}');
                    let dir = pattern.trim_start_matches("./").trim_end_matches('/');
                    let directory =
                        pattern.starts_with("./") || (dir.contains('/') && !dir.starts_with('@'));
                    let plain = !dir.is_empty() && !dir.contains("..");
                    if directory && plain && !list.contains(&dir.to_string()) {
                        list.push(dir.to_string());
                    }
                }
            }
            i += 1;
        }
    }
    (out, kept)
}

fn inline_missing(word: &str) -> bool {
    !word.contains('=')
}
