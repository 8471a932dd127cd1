//! `vx prune` (PRUNE-1 …): a deployable subset of the workspace — the projects named, every
//! workspace project they depend on, the root files installing and building need, and the
//! lockfile pruned to them — checked with the package manager's frozen install before it is
//! called done.
//!
//! `plan` decides what is written (the closure, the files of `json/` and `full/`, the
//! lockfile pruned by `vx_workspace::lockfile::prune`) from the workspace read once, `output`
//! writes it into a staging directory inside the output directory and moves it up, `verify`
//! runs the package manager on a scratch copy of `json/`.

mod output;
mod plan;
mod verify;

use std::path::Path;

use vx_core::suggest::did_you_mean;
use vx_core::Diagnostic;

use crate::cli::PruneWorkspaceArgs;
use crate::render::{out_str, stderr};
use vx_engine::error::Failure;
use vx_engine::exit;
use vx_engine::workspace::load;

use plan::Plan;
use verify::Verdict;

pub fn prune(cwd: &Path, args: PruneWorkspaceArgs) -> Result<i32, Failure> {
    let workspace = load(cwd)?;
    let targets = targets(&workspace, cwd, &args.projects)?;
    let out = match &args.out {
        Some(out) => vx_engine::cache_dir::normalise(&cwd.join(out)),
        None => workspace.root.join("out"),
    };
    if out == workspace.root || workspace.root.starts_with(&out) {
        return Err(Failure::usage(format!(
            "--out {}: the output cannot hold the workspace",
            out.display()
        )));
    }
    output::check_out(&out)?;
    let facts = plan::Facts::read(&workspace, &out)?;
    let plan = plan::settle(&workspace, &facts, &targets, args.production)?;
    let staging = output::stage(&out)?;
    let marker = marker(&plan, args.docker);
    let mut files = if args.docker {
        let mut files = std::collections::BTreeMap::new();
        for (path, content) in &plan.json {
            files.insert(format!("json/{path}"), content.clone());
        }
        for (path, content) in &plan.full {
            files.insert(format!("full/{path}"), content.clone());
        }
        // Turbo's recipes copy the lockfile from the top of the output too.
        if let Some(lock) = &plan.lock {
            if let Some(content) = plan.json.get(&lock.file) {
                files.insert(lock.file.clone(), content.clone());
            }
        }
        files
    } else {
        plan.full.clone()
    };
    files.insert(
        output::MARKER.into(),
        plan::Content::Written(marker.into_bytes(), 0o644),
    );
    output::write_all(&staging.dir, &files)?;
    let verdict = match (&plan.lock, args.no_verify) {
        (Some(lock), false) => Some(verify::verify(lock.pm, &plan.json, &lock.file)),
        _ => None,
    };
    staging.finish()?;
    report(&plan, &out, args.docker, verdict, args.no_verify)
}

/// The projects named, or the one the current directory is in.
fn targets(
    workspace: &vx_core::Workspace,
    cwd: &Path,
    names: &[String],
) -> Result<Vec<usize>, Failure> {
    if names.is_empty() {
        let rel = cwd
            .canonicalize()
            .ok()
            .and_then(|c| c.strip_prefix(&workspace.root).ok().map(Path::to_path_buf))
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        return match workspace.project_containing(&rel) {
            Some(p) if !p.dir.is_empty() => Ok(vec![workspace.by_name[&p.name]]),
            _ => Err(
                Diagnostic::new("name the projects to keep: vx prune PROJECT…")
                    .hint("or run it in a project's directory, which is then the project kept")
                    .into(),
            ),
        };
    }
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for name in names {
        let found = workspace.by_name.get(name.as_str()).copied().or_else(|| {
            // A directory names its project too.
            let dir = name.trim_start_matches("./").trim_end_matches('/');
            workspace.projects.iter().position(|p| p.dir == dir)
        });
        match found {
            Some(i) if workspace.projects[i].dir.is_empty() => problems.push(Diagnostic::new(
                "the root is always kept; name the projects to deploy",
            )),
            Some(i) => out.push(i),
            None => problems.push(
                Diagnostic::new(format!("no project named `{name}`")).suggest(did_you_mean(
                    name,
                    workspace.projects.iter().map(|p| p.name.as_str()),
                )),
            ),
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems.into())
    }
}

/// The marker file's text: what the output holds, the same bytes for the same workspace.
fn marker(plan: &Plan, docker: bool) -> String {
    let mut text = String::from("# written by vx prune; vx prune replaces this directory\n");
    text.push_str(&format!(
        "layout = \"{}\"\n",
        if docker { "docker" } else { "full" }
    ));
    let names: Vec<String> = plan.kept.iter().map(|n| format!("\"{n}\"")).collect();
    text.push_str(&format!("projects = [{}]\n", names.join(", ")));
    text
}

fn report(
    plan: &Plan,
    out: &Path,
    docker: bool,
    verdict: Option<Verdict>,
    no_verify: bool,
) -> Result<i32, Failure> {
    let shown = out.display();
    let mut text = format!(
        "kept {} of {} projects: {}\n",
        plan.kept.len(),
        plan.projects,
        plan.kept.join(", ")
    );
    if let Some(lock) = &plan.lock {
        let p = &lock.pruned;
        text.push_str(&format!(
            "pruned {}: {} of {} members, {} of {} packages\n",
            lock.file, p.members.kept, p.members.total, p.packages.kept, p.packages.total
        ));
    }
    for note in &plan.notes {
        text.push_str(&format!("note: {note}\n"));
    }
    let layout = if docker { " (json/ and full/)" } else { "" };
    match verdict {
        Some(Verdict::Passed(line, took)) => {
            text.push_str(&format!(
                "verified: `{line}` accepts the pruned lockfile ({:.1} s)\n",
                took.as_secs_f64()
            ));
            text.push_str(&format!("wrote {shown}{layout}\n"));
            out_str(&text);
            Ok(exit::SUCCESS)
        }
        Some(Verdict::Failed(line, said)) => {
            let lock = plan.lock.as_ref().map_or("", |l| l.file.as_str());
            let hint = if said.iter().any(|l| l.contains("404")) {
                "the registry answered 404 for a package the lockfile names: when installing \
                 in the workspace itself fails the same way, the registry lost it; otherwise \
                 please report it with the lines above"
                    .to_string()
            } else {
                format!(
                    "when the workspace's own {lock} is out of date with its package.json \
                     files, install there first; otherwise please report it with the lines above"
                )
            };
            failed(
                &text,
                format!(
                    "the pruned {lock} does not install: `{line}` in a copy of what installing \
                     needs refused it:"
                ),
                &said,
                format!("{hint} ({shown} holds the output for a look)"),
            )
        }
        Some(Verdict::Unreachable(line, said)) => failed(
            &text,
            format!("cannot verify the pruned lockfile: `{line}` could not reach the network:"),
            &said,
            format!(
                "the lockfile was not judged (does installing in the workspace itself work?); \
                 run it where the registry is reachable, or pass --no-verify ({shown} holds the \
                 output)"
            ),
        ),
        Some(Verdict::Error(why)) => failed(
            &text,
            format!("cannot verify the pruned lockfile: {why}"),
            &[],
            format!("{shown} holds the output; --no-verify writes it without the check"),
        ),
        Some(Verdict::Missing(program)) => failed(
            &text,
            format!("cannot verify the pruned lockfile: `{program}` is not on PATH"),
            &[],
            format!(
                "install it, or pass --no-verify to write the output unchecked ({shown} holds it)"
            ),
        ),
        None => {
            if no_verify && plan.lock.is_some() {
                text.push_str("not verified (--no-verify)\n");
            }
            text.push_str(&format!("wrote {shown}{layout}\n"));
            out_str(&text);
            Ok(exit::SUCCESS)
        }
    }
}

/// What was written on stdout, then one `error:` line, the package manager's lines under it
/// and a hint on stderr: exit 1.
fn failed(done: &str, headline: String, said: &[String], hint: String) -> Result<i32, Failure> {
    out_str(done);
    let mut error = format!("error: {headline}\n");
    for line in said {
        error.push_str(&format!("  | {line}\n"));
    }
    error.push_str(&format!("  hint: {hint}\n"));
    stderr(&error);
    Ok(exit::FAILURE)
}
