//! What a Tab completes in an argument's value (INIT-6): verbs, and the project names and task
//! ids of the workspace around the current directory. `cli.rs` attaches these to its arguments;
//! `commands/completions.rs` answers the shell.

use std::ffi::OsStr;
use std::path::PathBuf;

use clap::builder::StyledStr;
use clap_complete::engine::CompletionCandidate;
use vx_core::Workspace;

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
    // `web#build` names `@acme/web#build` when only one scope has a `web` (as `vx run` reads
    // it): offered too, so a scoped workspace completes without typing the scope.
    let mut unscoped: std::collections::BTreeMap<&str, usize> = Default::default();
    for project in &ws.projects {
        if let Some(bare) = unscoped_name(&project.name) {
            *unscoped.entry(bare).or_default() += 1;
        }
    }
    for project in &ws.projects {
        let Some(bare) = unscoped_name(&project.name).filter(|b| unscoped[b] == 1) else {
            continue;
        };
        for (name, task) in &project.config.tasks {
            ids.push((format!("{bare}#{name}"), task.description.clone()));
        }
    }
    let mut candidates: Vec<CompletionCandidate> =
        names.into_iter().map(CompletionCandidate::new).collect();
    candidates.extend(ids.into_iter().map(|(id, description)| {
        CompletionCandidate::new(id).help(description.map(StyledStr::from))
    }));
    starting_with(candidates, current)
}

/// `web` of `@acme/web`; `None` for a name without a scope.
fn unscoped_name(name: &str) -> Option<&str> {
    name.strip_prefix('@')?
        .split_once('/')
        .map(|(_, bare)| bare)
}

/// The words a flag takes (`--output-logs`, `--ui`, …), for its value's Tab.
pub fn values(words: &'static [&'static str]) -> impl Fn(&OsStr) -> Vec<CompletionCandidate> {
    move |current| {
        let candidates = words.iter().map(|w| CompletionCandidate::new(*w)).collect();
        starting_with(candidates, current)
    }
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
    let candidates = crate::verbs::VERBS
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
