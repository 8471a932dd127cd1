//! One module per verb. Each takes resolved arguments and returns an exit code or a
//! [`Failure`](vx_engine::error::Failure).

pub mod cache;
pub mod completions;
pub mod info;
pub mod init;
pub mod last;
pub mod lock;
pub mod man;
pub mod prune;
pub mod report;
pub mod show;
pub mod why;

use std::path::Path;

use vx_core::suggest::did_you_mean;
use vx_core::{Diagnostic, TaskId};

use crate::render::out_str;
use crate::verbs::{LATER_VERBS, VERBS};
use vx_engine::error::Failure;
use vx_engine::{exit, workspace};

/// This very vx, started in `dir` for `vx lsp`'s lenses and `vx mcp`'s tools: without colour
/// (its output is read, not shown on a terminal) and without stdin.
pub fn this_vx(dir: &Path) -> std::process::Command {
    let exe = std::env::current_exe().unwrap_or_else(|_| "vx".into());
    let mut command = std::process::Command::new(exe);
    command
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null());
    command
}

/// `--format pretty|json` of the reading verbs: whether JSON was asked for.
pub fn json_format(format: Option<&str>) -> Result<bool, Failure> {
    match format {
        None | Some("pretty") => Ok(false),
        Some("json") => Ok(true),
        Some(other) => Err(Diagnostic::new(format!(
            "invalid value `{other}` for --format (expected pretty or json)"
        ))
        .into()),
    }
}

/// `vx schema` (CFG-11).
pub fn schema() -> i32 {
    let schema = vx_core::config::json_schema();
    out_str(&format!(
        "{}\n",
        serde_json::to_string_pretty(&schema).unwrap_or_default()
    ));
    exit::SUCCESS
}

/// `vx version` / `vx --version` (CLI-4).
pub fn version() -> i32 {
    out_str(&format!("{}\n", version_line()));
    exit::SUCCESS
}

/// `vx 0.1.0 (3f9c2e1a7b, x86_64-unknown-linux-gnu)`: the commit is left out when the build
/// did not know it (`build.rs`).
pub fn version_line() -> String {
    let target = env!("VX_TARGET");
    match option_env!("VX_GIT_SHA") {
        Some(sha) if !sha.is_empty() => {
            format!("vx {} ({sha}, {target})", env!("CARGO_PKG_VERSION"))
        }
        _ => format!("vx {} ({target})", env!("CARGO_PKG_VERSION")),
    }
}

/// CLI-2: an unknown verb, with a hint that turns a task name into the command that runs it.
pub fn unknown_verb(cwd: &Path, word: &str) -> Failure {
    if LATER_VERBS.contains(&word) {
        return Failure::usage(format!("vx {word} is not available yet"));
    }
    let d = Diagnostic::new(format!("unknown command `{word}`"));
    if let Ok(ws) = workspace::load(cwd) {
        // `web#build` as `vx run` would resolve it (an unscoped name included).
        if let Some(id) = TaskId::parse(word) {
            if vx_core::request::project_named(&ws, &id.project)
                .is_ok_and(|i| ws.projects[i].config.tasks.contains_key(&id.task))
            {
                return d.hint(format!("use `vx run {word}`")).into();
            }
        }
        if ws
            .projects
            .iter()
            .any(|p| p.config.tasks.contains_key(word))
        {
            let rel = cwd.canonicalize().ok().and_then(|c| {
                c.strip_prefix(&ws.root)
                    .ok()
                    .map(|r| r.to_string_lossy().into_owned())
            });
            // `vx run build` alone runs the current project's task: only when it has one.
            let here = rel
                .as_deref()
                .and_then(|r| ws.project_containing(r))
                .is_some_and(|p| p.config.tasks.contains_key(word));
            let all = if here { "" } else { " --all" };
            return d
                .hint(format!("to run a task, use `vx run {word}{all}`"))
                .into();
        }
    }
    let mut candidates: Vec<&str> = VERBS.to_vec();
    candidates.extend(LATER_VERBS);
    d.suggest(did_you_mean(word, candidates)).into()
}
