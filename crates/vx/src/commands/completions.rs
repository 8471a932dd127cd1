//! `vx completions bash|zsh|fish` (INIT-6): a script that registers vx's completion with the
//! shell. The script does not list anything itself: on every Tab it asks vx (with
//! `VX_COMPLETE=<shell>` set, see [`serve`]) for the candidates, so it completes verbs and
//! flags of this very binary and, beyond other runners, the project names and task ids of the
//! workspace you are in.

use std::ffi::OsStr;
use std::path::PathBuf;

use clap::builder::StyledStr;
use clap_complete::engine::CompletionCandidate;
use clap_complete::env::{Bash, CompleteEnv, Fish, Shells, Zsh};
use vx_core::suggest::did_you_mean;
use vx_core::{Diagnostic, Workspace};

use crate::render::out;
use vx_engine::error::Failure;
use vx_engine::exit;

/// The variable that turns a run of vx into a completion request.
const VAR: &str = "VX_COMPLETE";

const SHELLS: Shells<'static> = Shells(&[&Bash, &Zsh, &Fish]);

/// Answers a completion request and exits, when `VX_COMPLETE` names a shell; otherwise
/// returns at once (one variable lookup).
pub fn serve() {
    // The arguments that take a task, a project or a verb name their candidate functions
    // below (`add = ArgValueCompleter::new(…)` in `cli.rs`).
    CompleteEnv::with_factory(crate::cli::command)
        .var(VAR)
        .shells(SHELLS)
        .complete();
}

/// `vx completions <shell>`.
pub fn completions(shell: Option<&str>) -> Result<i32, Failure> {
    let names: Vec<&str> = SHELLS.names().collect();
    let Some(shell) = shell else {
        return Err(Failure::usage(format!(
            "`vx completions` needs a shell: {}",
            names.join(", ")
        )));
    };
    let Some(completer) = SHELLS.completer(shell) else {
        return Err(Diagnostic::new(format!("unknown shell `{shell}`"))
            .suggest(did_you_mean(shell, names.iter().copied()))
            .into());
    };
    let mut script = Vec::new();
    completer
        .write_registration(VAR, "vx", "vx", "vx", &mut script)
        .map_err(|e| Failure::usage(format!("cannot write the script: {e}")))?;
    out(&script);
    Ok(exit::SUCCESS)
}

/// The workspace around the current directory, if it loads.
fn workspace() -> Option<Workspace> {
    let cwd: PathBuf = std::env::current_dir().ok()?;
    vx_engine::workspace::load(&cwd).ok()
}

/// Task names (each once), then `project#task` ids, with descriptions; those starting with
/// what is typed.
pub fn task_candidates(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(ws) = workspace() else {
        return Vec::new();
    };
    let mut names = std::collections::BTreeSet::new();
    let mut ids = Vec::new();
    for project in &ws.projects {
        for (name, task) in &project.config.tasks {
            names.insert(name.clone());
            ids.push((format!("{}#{name}", project.name), task.description.clone()));
        }
    }
    let mut candidates: Vec<CompletionCandidate> =
        names.into_iter().map(CompletionCandidate::new).collect();
    candidates.extend(ids.into_iter().map(|(id, description)| {
        CompletionCandidate::new(id).help(description.map(StyledStr::from))
    }));
    starting_with(candidates, current)
}

pub fn project_candidates(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(ws) = workspace() else {
        return Vec::new();
    };
    let candidates = ws
        .projects
        .iter()
        .map(|p| CompletionCandidate::new(&p.name).help(Some(StyledStr::from(p.dir.clone()))))
        .collect();
    starting_with(candidates, current)
}

/// `vx show` takes a project, a task id or a task name.
pub fn show_candidates(current: &OsStr) -> Vec<CompletionCandidate> {
    let mut candidates = project_candidates(current);
    candidates.extend(task_candidates(current));
    candidates
}

pub fn verb_candidates(current: &OsStr) -> Vec<CompletionCandidate> {
    let candidates = crate::cli::VERBS
        .iter()
        .map(|v| CompletionCandidate::new(*v))
        .collect();
    starting_with(candidates, current)
}

fn starting_with(
    candidates: Vec<CompletionCandidate>,
    current: &OsStr,
) -> Vec<CompletionCandidate> {
    let current = current.to_string_lossy();
    candidates
        .into_iter()
        .filter(|c| c.get_value().to_string_lossy().starts_with(&*current))
        .collect()
}
