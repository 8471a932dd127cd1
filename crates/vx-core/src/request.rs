//! From command-line words to requested task ids (CLI-5, CLI-6, CLI-8, CLI-9, CLI-16, SEL-5).

use std::collections::BTreeSet;

use crate::diagnostic::Diagnostic;
use crate::id::TaskId;
use crate::project::Workspace;
use crate::suggest::did_you_mean;

/// Which projects bare task names apply to.
#[derive(Debug, Clone)]
pub enum Scope {
    /// `--all` / `--filter`: the selected projects.
    Selection(BTreeSet<usize>),
    /// No selection flag: the project containing the current directory.
    Project(usize),
    /// No selection flag and the current directory is in no project.
    Outside,
    /// `--affected` (SEL-5, CLI-8): bare names are judged against `projects` (the whole
    /// workspace, so a typo is still caught); a task found there is requested when its project
    /// is in `whole` (selected by another include, CLI-7) or it is in `reached` (its
    /// `depends-on` closure contains a seeded task, and no exclude removed its project). A name
    /// no such task has is not an error: the caller reports that the changes reach it nowhere
    /// (SEL-6).
    Affected {
        projects: BTreeSet<usize>,
        whole: BTreeSet<usize>,
        reached: BTreeSet<TaskId>,
    },
}

impl Scope {
    fn projects(&self) -> BTreeSet<usize> {
        match self {
            Scope::Selection(s) => s.clone(),
            Scope::Project(p) => BTreeSet::from([*p]),
            Scope::Outside => BTreeSet::new(),
            Scope::Affected { projects, .. } => projects.clone(),
        }
    }

    /// Whether a task found in scope under a bare name is requested.
    fn keeps(&self, project: usize, id: &TaskId) -> bool {
        match self {
            Scope::Affected { whole, reached, .. } => {
                whole.contains(&project) || reached.contains(id)
            }
            _ => true,
        }
    }
}

/// Resolves positionals to task ids, sorted and deduplicated.
pub fn resolve_requests(
    workspace: &Workspace,
    positionals: &[String],
    scope: &Scope,
    forwarded_args: bool,
) -> Result<Vec<TaskId>, Diagnostic> {
    let in_scope = scope.projects();
    if positionals.is_empty() {
        let mut ids: Vec<String> = Vec::new();
        for &p in &in_scope {
            let project = &workspace.projects[p];
            ids.extend(
                project
                    .config
                    .tasks
                    .keys()
                    .map(|t| format!("{}#{t}", project.name)),
            );
        }
        let d = Diagnostic::new("name a task to run");
        return Err(if ids.is_empty() {
            d
        } else if ids.len() > 12 {
            d.hint(format!(
                "tasks here: {}, and {} more",
                ids[..12].join(", "),
                ids.len() - 12
            ))
        } else {
            d.hint(format!("tasks here: {}", ids.join(", ")))
        });
    }
    let mut out: BTreeSet<TaskId> = BTreeSet::new();
    for word in positionals {
        if let Some(id) = TaskId::parse(word) {
            let project = &workspace.projects[project_named(workspace, &id.project)?];
            let id = TaskId::new(&project.name, &id.task);
            if !project.config.tasks.contains_key(&id.task) {
                let names = project.config.tasks.keys().map(String::as_str);
                return Err(Diagnostic::new(format!(
                    "project `{}` has no task `{}`",
                    project.name, id.task
                ))
                .suggest(did_you_mean(&id.task, names)));
            }
            out.insert(id);
            continue;
        }
        // Nx's `project:task`, where no task has that name and the project has the task, is
        // the task id it means.
        if let Some(id) = colon_id(workspace, word) {
            out.insert(id);
            continue;
        }
        if matches!(scope, Scope::Outside) {
            // Another runner's `project:task` is pointed to the vx spelling wherever vx runs.
            if let Some(hinted) = colon_spelling(workspace, word) {
                return Err(hinted);
            }
            return Err(Diagnostic::new(format!(
                "`{word}` names a task, but the current directory is not inside a project"
            ))
            .hint(format!(
                "run `vx run {word} --all`, or name a project: `vx run <project>#{word}`"
            )));
        }
        let before = out.len();
        for &p in &in_scope {
            let project = &workspace.projects[p];
            if project.config.tasks.contains_key(word) {
                let id = TaskId::new(&project.name, word);
                if scope.keeps(p, &id) {
                    out.insert(id);
                }
            }
        }
        if out.len() == before
            && !in_scope
                .iter()
                .any(|&p| workspace.projects[p].config.tasks.contains_key(word))
        {
            return Err(unknown_name(workspace, &in_scope, word));
        }
    }
    let out: Vec<TaskId> = out.into_iter().collect();
    if forwarded_args {
        let is_group = |id: &TaskId| {
            workspace
                .project(&id.project)
                .and_then(|p| p.config.tasks.get(&id.task))
                .is_some_and(|t| t.is_group())
        };
        if !out.is_empty() && out.iter().all(is_group) {
            let groups: BTreeSet<&str> = out.iter().map(|id| id.task.as_str()).collect();
            let groups: Vec<String> = groups.iter().map(|g| format!("`{g}`")).collect();
            let verb = if groups.len() == 1 {
                "is a group"
            } else {
                "are groups"
            };
            return Err(Diagnostic::new(format!(
                "no task would receive the arguments after `--` ({} {verb})",
                groups.join(", ")
            )));
        }
    }
    Ok(out)
}

/// The project a command line names: its name (`@acme/web`), or, when exactly one project's
/// scoped name has it as its last part, the unscoped name (`web`, as Turborepo users type it).
/// Otherwise an error that lists the scoped candidates, or says the name is unknown with the
/// closest name.
pub fn project_named(workspace: &Workspace, name: &str) -> Result<usize, Diagnostic> {
    if let Some(&i) = workspace.by_name.get(name) {
        return Ok(i);
    }
    let unscoped_is = |project_name: &str, wanted: &str| {
        project_name
            .split_once('/')
            .is_some_and(|(scope, rest)| scope.starts_with('@') && rest == wanted)
    };
    let scoped: Vec<usize> = (0..workspace.projects.len())
        .filter(|&i| unscoped_is(&workspace.projects[i].name, name))
        .collect();
    match scoped.as_slice() {
        [one] => Ok(*one),
        [] => {
            let names = workspace.projects.iter().map(|p| p.name.as_str());
            let mut d = Diagnostic::new(format!("unknown project `{name}`"));
            if let Some(close) = did_you_mean(name, names) {
                d = d.hint(format!("did you mean `{close}`?"));
            } else {
                // A typo of an unscoped name points to the scoped project.
                let unscoped = workspace
                    .projects
                    .iter()
                    .filter_map(|p| Some((p.name.split_once('/')?.1, p.name.as_str())));
                let (short, full): (Vec<&str>, Vec<&str>) = unscoped.unzip();
                // `web` for a project named by its directory, `packages/web`.
                let same = short.iter().copied().find(|s| *s == name);
                if let Some(close) = same.or_else(|| did_you_mean(name, short.iter().copied())) {
                    let at = short.iter().position(|s| *s == close).unwrap_or(0);
                    d = d.hint(format!("did you mean `{}`?", full[at]));
                }
            }
            Err(d)
        }
        many => {
            let names: Vec<String> = many
                .iter()
                .map(|&i| format!("`{}`", workspace.projects[i].name))
                .collect();
            Err(Diagnostic::new(format!(
                "project `{name}` is ambiguous: {} have that name after their scope",
                names.join(", ")
            ))
            .hint("name the project with its scope"))
        }
    }
}

/// `web:build` as `web#build`: no project declares a task named `web:build`, and project
/// `web` declares `build`.
fn colon_id(workspace: &Workspace, word: &str) -> Option<TaskId> {
    let (project, task) = word.split_once(':')?;
    let declared_anywhere = workspace
        .projects
        .iter()
        .any(|p| p.config.tasks.contains_key(word));
    let project = workspace.project(project)?;
    (!declared_anywhere && project.config.tasks.contains_key(task))
        .then(|| TaskId::new(&project.name, task))
}

/// CLI-5: `web:nope` when no project declares a task of that name and `web` is a project.
fn colon_spelling(workspace: &Workspace, word: &str) -> Option<Diagnostic> {
    let declared_anywhere = workspace
        .projects
        .iter()
        .any(|p| p.config.tasks.contains_key(word));
    let (project, task) = word.split_once(':')?;
    if declared_anywhere || task.is_empty() || workspace.project(project).is_none() {
        return None;
    }
    Some(
        Diagnostic::new(format!("no selected project declares task `{word}`"))
            .hint(format!("use `{project}#{task}`")),
    )
}

/// CLI-8: the error for a bare name that no selected project declares, with the first hint
/// that applies.
fn unknown_name(workspace: &Workspace, in_scope: &BTreeSet<usize>, word: &str) -> Diagnostic {
    let d = Diagnostic::new(format!("no selected project declares task `{word}`"));
    if let Some(hinted) = colon_spelling(workspace, word) {
        return hinted;
    }
    let declared_anywhere = workspace
        .projects
        .iter()
        .any(|p| p.config.tasks.contains_key(word));
    let mut here: BTreeSet<&str> = BTreeSet::new();
    for &p in in_scope {
        here.extend(
            workspace.projects[p]
                .config
                .tasks
                .keys()
                .map(String::as_str),
        );
    }
    if let Some(s) = did_you_mean(word, here.iter().copied()) {
        return d.hint(format!("did you mean `{s}`?"));
    }
    if declared_anywhere {
        return d.hint(format!(
            "`{word}` exists only in projects outside the selection; add `--all` or a `--filter`"
        ));
    }
    let all: BTreeSet<&str> = workspace
        .projects
        .iter()
        .flat_map(|p| p.config.tasks.keys().map(String::as_str))
        .collect();
    if let Some(s) = did_you_mean(word, all.iter().copied()) {
        return d.hint(format!("did you mean `{s}`?"));
    }
    let no_tasks_anywhere = workspace.projects.iter().all(|p| p.config.tasks.is_empty());
    if no_tasks_anywhere && workspace.projects.iter().any(|p| p.has_package_json) {
        return d.hint(
            "no project declares any task yet; `vx init` writes them from the package.json scripts",
        );
    }
    if here.is_empty() {
        return d;
    }
    d.hint(format!(
        "tasks here: {}",
        here.into_iter().collect::<Vec<_>>().join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{workspace, P};

    #[test]
    fn affected_scope_keeps_reached_tasks_and_whole_projects_and_still_catches_typos() {
        let ws = workspace(&[
            P {
                name: "app",
                deps: &[],
                tags: &[],
                tasks: &[("build", Some("b"), &[]), ("test", Some("t"), &[])],
            },
            P {
                name: "docs",
                deps: &[],
                tags: &[],
                tasks: &[("build", Some("d"), &[])],
            },
        ]);
        let scope = |whole: &[usize], reached: &[&str]| Scope::Affected {
            projects: BTreeSet::from([0, 1]),
            whole: whole.iter().copied().collect(),
            reached: reached.iter().map(|r| TaskId::parse(r).unwrap()).collect(),
        };
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let ids = |found: Vec<TaskId>| found.iter().map(ToString::to_string).collect::<Vec<_>>();
        let found = resolve_requests(&ws, &words(&["build"]), &scope(&[], &["app#build"]), false);
        assert_eq!(ids(found.unwrap()), ["app#build"]);
        let found = resolve_requests(&ws, &words(&["build"]), &scope(&[1], &["app#build"]), false);
        assert_eq!(ids(found.unwrap()), ["app#build", "docs#build"]);
        // Nothing reached is no error here; the caller says so (SEL-6).
        let found = resolve_requests(&ws, &words(&["test"]), &scope(&[], &[]), true);
        assert_eq!(found.unwrap(), Vec::<TaskId>::new());
        let typo = resolve_requests(&ws, &words(&["tset"]), &scope(&[], &[]), false);
        assert_eq!(typo.unwrap_err().hints, ["did you mean `test`?"]);
        // A task id always runs.
        let found = resolve_requests(&ws, &words(&["docs#build"]), &scope(&[], &[]), false);
        assert_eq!(ids(found.unwrap()), ["docs#build"]);
    }
}
