//! Writing what `vx init` planned: checked first, as vx will load it, then written all
//! together or not at all.
//!
//! [`write`] plans the files, decides which are written (an existing file is kept unless
//! `--force`), and hands the planned texts to the loader in place of the files
//! (`vx_workspace::load_planned`) with every `depends-on` resolved, as before any run. A
//! problem in a table `vx init` wrote leaves that table out, with vx's own message in the
//! report and in a comment of the file, and the rest is checked again: what is written always
//! loads, and a user's repository never gets an internal error. A problem in the repository's
//! own files (a kept `vx.toml`, a `package.json`) is the user's to fix: nothing is written.
//! Files are written to temporary names first and renamed once all are written.

use std::collections::BTreeMap;
use std::path::Path;

use vx_core::Diagnostic;
use vx_workspace::LoadError;

use super::scripts::TodoReason;
use super::toml::File;
use super::turbo::NotCarried;
use crate::plan::{choose_root, load_failure, plan, project_file, Fate, From, Plan};
use vx_engine::error::Failure;
use vx_engine::exit;
use vx_engine::workspace::io_diagnostic;

/// What `vx init` and `vx migrate` were asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--dry`: print the files instead of writing them.
    pub dry: bool,
    /// `--force`: replace existing `vx.toml` files.
    pub force: bool,
    /// `--learn TASK…` (`vx init` only): run these tasks once, traced, and write their caches.
    pub learn: Vec<String>,
}

/// Where `vx init` says what it did: the caller's terminal.
pub trait Output {
    /// Text for stdout (the report, `--dry`'s files).
    fn out(&mut self, text: &str);
    /// Text for stderr (`--dry`'s report).
    fn err(&mut self, text: &str);
    /// What a child's stdout is given: the caller's stderr, so stdout keeps only the report
    /// (the `vx run` of `--learn`).
    fn stdout_for_child(&mut self) -> std::process::Stdio;
}

/// How many passes of mending `vx init` makes before it gives up (each mends every problem
/// it can; one left-out table can bring up another's problem, so a few are needed).
const MAX_LEFT_OUT: usize = 50;

pub(super) fn write(
    cwd: &Path,
    args: Options,
    from: From,
    output: &mut dyn Output,
) -> Result<i32, Failure> {
    let real = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let Some(nearest) = real
        .ancestors()
        .find(|dir| dir.join("package.json").is_file())
    else {
        return Err(Failure::usage(format!(
            "vx init needs a package.json (none found from {} upward)",
            cwd.display()
        )));
    };
    if args.dry && !args.learn.is_empty() {
        return Err(Failure::usage(
            "--learn runs the tasks it names and --dry writes nothing: give one of them",
        ));
    }
    let root = choose_root(&real, nearest)?;
    let mut plan = plan(&root, from)?;
    let mut fates = Vec::new();
    settle(&root, &mut plan, &mut fates, args.force)?;

    if args.dry {
        let mut printed = String::new();
        for (file, fate) in plan.files.iter().zip(&fates) {
            if matches!(fate, Fate::Written) {
                if !printed.is_empty() {
                    printed.push('\n');
                }
                printed.push_str(&format!("==> {} <==\n{}", file.rel, file.render()));
            }
        }
        output.out(&printed);
        let editor = super::editor::plan(&root);
        output.err(&with_editor(
            report_text(&plan, &fates, true),
            &super::editor::report(&editor, true),
        ));
    } else {
        write_all(&root, &written(&plan, &fates))?;
        // What lets a plain TOML extension check the files just written.
        let mut editor = super::editor::plan(&root);
        super::editor::write(&root, &mut editor);
        plan.editor = super::editor::report(&editor, false);
        if !args.learn.is_empty() {
            // The named tasks run, traced; what they read and wrote becomes their caches,
            // checked and written like the rest.
            let subjects = super::learn::subjects(&root, &args.learn, &plan, &fates)?;
            super::learn::pass_named(&mut plan, &subjects);
            settle(&root, &mut plan, &mut fates, args.force)?;
            write_all(&root, &written(&plan, &fates))?;
            let stdout = output.stdout_for_child();
            let mut learned = super::learn::learn(&root, &args.learn, &subjects, stdout);
            if let Ok(outcomes) = &mut learned {
                super::learn::apply(&mut plan, outcomes);
                settle(&root, &mut plan, &mut fates, args.force)?;
                write_all(&root, &written(&plan, &fates))?;
                super::learn::confirm(&plan, outcomes);
            }
            plan.learned = Some(learned);
        }
        // The old runner's plan beside the one just written, when it is installed.
        plan.comparison = plan
            .peer
            .as_ref()
            .and_then(|peer| super::compare::compare(&root, peer).transpose());
        output.out(&with_editor(
            report_text(&plan, &fates, false),
            &plan.editor,
        ));
    }
    Ok(exit::SUCCESS)
}

/// The report with the editor files' lines before its last line (`next: …`).
fn with_editor(report: String, editor: &str) -> String {
    match report.rfind("next: ") {
        Some(at) => format!("{}{editor}{}", &report[..at], &report[at..]),
        None => report + editor,
    }
}

/// The planned files that are written (not kept).
fn written<'a>(plan: &'a Plan, fates: &[Fate]) -> Vec<&'a File> {
    plan.files
        .iter()
        .zip(fates)
        .filter(|(_, fate)| matches!(fate, Fate::Written))
        .map(|(file, _)| file)
        .collect()
}

/// Checks the files to write as vx will load them (the kept ones as they are), leaving out
/// each table vx refuses until none is left; see the module documentation.
fn settle(root: &Path, plan: &mut Plan, fates: &mut Vec<Fate>, force: bool) -> Result<(), Failure> {
    for _ in 0..MAX_LEFT_OUT {
        // An existing file is kept unless `--force` (files planned on the way included).
        for file in &plan.files[fates.len()..] {
            let exists = std::fs::symlink_metadata(root.join(&file.rel)).is_ok();
            fates.push(if exists && !force {
                Fate::Kept
            } else {
                Fate::Written
            });
        }
        let planned: BTreeMap<String, String> = plan
            .files
            .iter()
            .zip(fates.iter())
            .filter(|(_, fate)| matches!(fate, Fate::Written))
            .map(|(file, _)| (file.rel.clone(), file.render()))
            .collect();
        let problems = match vx_workspace::load_planned(root, &planned) {
            Ok(workspace) => match vx_core::graph::TaskTable::resolve(&workspace) {
                Ok(_) => {
                    plan.cached_tasks = Some(cached_tasks(&workspace));
                    return Ok(());
                }
                Err(problems) => problems,
            },
            Err(LoadError::Config(problems)) => problems,
            Err(other) => return Err(load_failure(other)),
        };
        // Every problem vx init can mend is mended in one pass, then the result is loaded
        // again: two cached tasks whose outputs overlap (Turborepo and Nx allow it; vx lets
        // one cached task own a directory) leave one uncached; any other problem in a task
        // table vx init wrote leaves that table out.
        let mut mended = 0;
        for problem in &problems {
            if let Some(done) = uncache_overlap(plan, problem) {
                plan.not_carried.push(done);
                mended += 1;
                continue;
            }
            let Some((rel, header)) = table_at(problem, &planned) else {
                continue;
            };
            let template = header
                .strip_prefix("tasks.")
                .and_then(|name| root_template(plan, name.trim_matches('"')));
            let Some(file) = plan.files.iter_mut().find(|f| f.rel == rel) else {
                continue;
            };
            match uncache_unstable(file, &header, problem, template) {
                Some(Some(done)) => {
                    plan.not_carried.push(done);
                    mended += 1;
                    continue;
                }
                // Another mend of this pass uncached it: gone once loaded again.
                Some(None) => continue,
                None => {}
            }
            if leave_out(file, &header, problem) {
                plan.not_carried.push(NotCarried {
                    what: format!("{rel}: [{header}]"),
                    at: problem.at.clone().unwrap_or_default(),
                    why: format!("vx refuses the table vx init wrote: {}", problem.message),
                });
                mended += 1;
            }
        }
        if mended == 0 {
            // In the repository's own files: vx would refuse them with or without these.
            return Err(Failure::User(problems));
        }
    }
    Err(Failure::Internal(format!(
        "vx init mended what vx refuses {MAX_LEFT_OUT} times and stopped"
    )))
}

/// (cached, all) over the tasks that run a command and could be cached (neither persistent
/// nor interactive), as the written files load.
fn cached_tasks(workspace: &vx_core::Workspace) -> (usize, usize) {
    let tasks = workspace
        .projects
        .iter()
        .flat_map(|p| p.config.tasks.values());
    let cacheable = tasks.filter(|t| {
        !t.is_group()
            && t.interactive != Some(true)
            && matches!(
                t.persistent,
                None | Some(vx_core::config::Persistent::Plain(false))
            )
    });
    cacheable.fold((0, 0), |(cached, all), t| {
        (cached + usize::from(t.cache.is_some()), all + 1)
    })
}

/// For GRAPH-8's "`a#x` and `a#y` both declare outputs under `dist`" between two tasks of
/// one project: the task's table is written whole without a cache (`build` keeps its cache
/// over any other), with a TODO; what was done, for the report. `None` for other problems.
fn uncache_overlap(plan: &mut Plan, problem: &Diagnostic) -> Option<NotCarried> {
    let rest = problem.message.strip_prefix('`')?;
    let (first, rest) = rest.split_once("` and `")?;
    let (second, rest) = rest.split_once("` both declare outputs under `")?;
    let under = rest.strip_suffix('`')?;
    let (a, b) = (first.rsplit_once('#')?, second.rsplit_once('#')?);
    let ((keep_project, keep), (project, drop)) = if b.1 == "build" { (b, a) } else { (a, b) };
    let (dir, commands) = plan.projects.get(project)?.clone();
    let command = commands.get(drop).cloned().filter(|c| !c.is_empty());
    let rel = format!("{dir}/{}", vx_core::config::CONFIG_FILE);
    let root = plan
        .files
        .iter()
        .find(|f| f.rel == vx_core::config::CONFIG_FILE)?;
    let template = root.templates.iter().find(|t| t.name == drop).cloned();
    let file = project_file(plan, &dir);
    if !file.tasks.iter().any(|t| t.name == drop) {
        file.tasks.push(super::toml::Table {
            name: drop.to_string(),
            ..Default::default()
        });
        file.tasks.sort_by(|x, y| x.name.cmp(&y.name));
    }
    let table = file.tasks.iter().find(|t| t.name == drop)?;
    if table.cache.is_none()
        && table.no_template
        && table.todos.iter().any(|(r, _)| *r == TodoReason::Uncached)
    {
        // Already done: the problem is not this one's to solve.
        return None;
    }
    // Written again, the table is no longer left out.
    let left_out = format!("Left out: [tasks.{}],", super::toml::key(drop));
    file.trailer
        .retain(|block| !block.first().is_some_and(|l| l.starts_with(&left_out)));
    let table = file.tasks.iter_mut().find(|t| t.name == drop)?;
    table.cache = None;
    table.suggestion = None;
    stand_alone(table, template.as_ref());
    if table.command.is_none() {
        table.command = command;
    }
    table.todos.push((
        TodoReason::Uncached,
        format!(
            "left uncached: its outputs overlap those of `{keep_project}#{keep}` (under {under}), and \
             vx lets one cached task own a directory; give each its own output directory to cache both"
        ),
    ));
    Some(NotCarried {
        what: format!("{project}#{drop}: cache"),
        at: vx_core::Location::new(rel.as_str(), 1, 1),
        why: format!(
            "its outputs overlap those of `{keep_project}#{keep}` under `{under}`: left uncached"
        ),
    })
}

/// Where the template of `name` would give an uncached table its cache back: the table
/// stands alone (`extends = false`), the template's other keys restated.
fn stand_alone(table: &mut super::toml::Table, template: Option<&super::toml::Table>) {
    if let Some(template) = template.filter(|t| t.cache.is_some()) {
        table.no_template = true;
        table.depends_on = table.depends_on.take().or(template.depends_on.clone());
        if table.pass_through.is_empty() {
            table.pass_through = template.pass_through.clone();
        }
        table.description = table.description.take().or(template.description.clone());
        table.persistent = table.persistent.or(template.persistent);
    }
}

/// The root vx.toml's template of `name`, as planned.
fn root_template(plan: &Plan, name: &str) -> Option<super::toml::Table> {
    let root = plan
        .files
        .iter()
        .find(|f| f.rel == vx_core::config::CONFIG_FILE)?;
    root.templates.iter().find(|t| t.name == name).cloned()
}

/// For GRAPH-9's "input … can match outputs of `x#changelog`" (a file another task writes,
/// not upstream of this one: the key could be computed before the file is): the table is
/// written without a cache, with a TODO, instead of being left out (Turborepo and Nx run
/// such a task; vx runs it too, every time). `None` for other problems; `Some(None)` when
/// the table has no cache left to drop (another mend of the same pass dropped it).
fn uncache_unstable(
    file: &mut File,
    header: &str,
    problem: &Diagnostic,
    template: Option<super::toml::Table>,
) -> Option<Option<NotCarried>> {
    if !problem.message.contains("can match outputs of") {
        return None;
    }
    let (tables, name) = match header.strip_prefix("workspace.tasks.") {
        Some(name) => (&mut file.templates, name),
        None => (&mut file.tasks, header.strip_prefix("tasks.")?),
    };
    let name = name.trim_matches('"');
    let table = tables.iter_mut().find(|t| t.name == name)?;
    let inherited = template.as_ref().is_some_and(|t| t.cache.is_some()) && !table.no_template;
    if table.cache.is_none() && !inherited {
        return Some(None);
    }
    table.cache = None;
    table.suggestion = None;
    stand_alone(table, template.as_ref());
    let first = problem.message.lines().next().unwrap_or_default();
    table.todos.push((
        TodoReason::Uncached,
        format!(
            "left uncached: {first}; vx computes a key before the task runs, so a file \
             another task writes can be an input only when that task is upstream \
             (add it to depends-on, or drop the input, to cache this task)"
        ),
    ));
    Some(Some(NotCarried {
        what: format!("{}: [{header}] cache", file.rel),
        at: problem.at.clone().unwrap_or_default(),
        why: format!("left uncached: {first}"),
    }))
}

/// The planned file and the task table (`tasks.build`, `workspace.tasks.build`) a problem
/// points into, from the header above its line.
fn table_at(problem: &Diagnostic, planned: &BTreeMap<String, String>) -> Option<(String, String)> {
    let at = problem.at.as_ref()?;
    let text = planned.get(&*at.file)?;
    let lines: Vec<&str> = text.lines().take(at.line as usize).collect();
    let header = lines.iter().rev().find_map(|line| {
        let name = line.strip_prefix('[')?.strip_suffix(']')?;
        Some(name.to_string())
    })?;
    let is_task = header.starts_with("tasks.") || header.starts_with("workspace.tasks.");
    is_task.then(|| (at.file.to_string(), header))
}

/// Leaves the table `header` out of `file`, with a comment saying why; whether it was there.
fn leave_out(file: &mut File, header: &str, problem: &Diagnostic) -> bool {
    let (tables, name) = match header.strip_prefix("workspace.tasks.") {
        Some(name) => (&mut file.templates, name),
        None => (&mut file.tasks, header.trim_start_matches("tasks.")),
    };
    let name = name.trim_matches('"');
    let before = tables.len();
    tables.retain(|t| t.name != name);
    if tables.len() == before {
        return false;
    }
    file.trailer.push(vec![
        format!("Left out: [{header}], which vx refuses as vx init wrote it:"),
        format!("  {}", problem.message),
        format!(
            "  TODO: write [{header}] by hand ({})",
            TodoReason::Unmappable.heading()
        ),
    ]);
    true
}

/// Writes every file under a temporary name, then renames them all into place: a failure
/// leaves no file of the plan written.
fn write_all(root: &Path, files: &[&File]) -> Result<(), Failure> {
    let temporary = |rel: &str| root.join(format!("{rel}.vx-init-{}", std::process::id()));
    let mut staged = Vec::new();
    for file in files {
        let path = temporary(&file.rel);
        if let Err(e) = std::fs::write(&path, file.render()) {
            let _ = std::fs::remove_file(&path);
            for done in &staged {
                let _ = std::fs::remove_file(done);
            }
            return Err(Failure::from(io_diagnostic(
                Path::new(&file.rel),
                "write",
                &e,
            )));
        }
        staged.push(path);
    }
    for (i, (file, path)) in files.iter().zip(&staged).enumerate() {
        if let Err(e) = std::fs::rename(path, root.join(&file.rel)) {
            for left in &staged[i..] {
                let _ = std::fs::remove_file(left);
            }
            return Err(Failure::from(io_diagnostic(
                Path::new(&file.rel),
                "write",
                &e,
            )));
        }
    }
    Ok(())
}

/// The report: each file written or kept, manifests without scripts, root scripts left out,
/// the TODO comments by reason, and what to run next.
pub(super) fn report_text(plan: &Plan, fates: &[Fate], dry: bool) -> String {
    let mut out = String::new();
    let wrote = if dry { "would write" } else { "wrote" };
    for (file, fate) in plan.files.iter().zip(fates) {
        match fate {
            Fate::Written => out.push_str(&format!("{wrote} {}\n", file.rel)),
            Fate::Kept => out.push_str(&format!(
                "kept {} (it exists; `--force` replaces it)\n",
                file.rel
            )),
        }
    }
    for manifest in &plan.without_scripts {
        out.push_str(&format!("no scripts to map in {manifest}\n"));
    }
    if !plan.by_templates.is_empty() {
        out.push_str(&format!(
            "no file needed: the templates describe the scripts of {} package{}\n",
            plan.by_templates.len(),
            if plan.by_templates.len() == 1 {
                ""
            } else {
                "s"
            }
        ));
    }
    if !plan.orchestrating.is_empty() {
        let names: Vec<String> = plan
            .orchestrating
            .iter()
            .map(|n| format!("`{n}`"))
            .collect();
        out.push_str(&format!(
            "not mapped: root scripts that drive the whole workspace ({})\n",
            names.join(", ")
        ));
    }

    if plan.carried > 0 {
        out.push_str(&format!(
            "carried over from {}: {} task definition{}\n",
            plan.carried_from,
            plan.carried,
            if plan.carried == 1 { "" } else { "s" }
        ));
    }
    match &plan.nx_graph {
        Some(Ok((version, 0))) => out.push_str(&format!(
            "Nx {version} (the repository's own) found no target its plugins infer\n"
        )),
        Some(Ok((version, n))) => out.push_str(&format!(
            "Nx {version} (the repository's own): {n} target{} its plugins infer became tasks\n",
            if *n == 1 { "" } else { "s" }
        )),
        Some(Err((why, 0))) => out.push_str(&format!(
            "targets Nx plugins infer: not asked, {why}; install the repository's dependencies \
             and run `vx init --force` again to carry them over\n"
        )),
        Some(Err((why, n))) => out.push_str(&format!(
            "targets Nx plugins infer: not asked, {why}; {n} inferred from the plugins' \
             configuration files instead, each uncached with a TODO; install the repository's \
             dependencies and run `vx init --force` again to carry over what Nx resolves\n"
        )),
        None => {}
    }
    out.push_str(&super::learn::report(plan.learned.as_ref()));
    match &plan.comparison {
        Some(Ok(comparison)) => out.push_str(&comparison.render()),
        Some(Err(why)) => out.push_str(&format!("plans not compared: {why}\n")),
        None => {}
    }
    if !plan.not_carried.is_empty() {
        out.push_str(&format!("not carried over ({}):\n", plan.not_carried.len()));
        for left in &plan.not_carried {
            out.push_str(&format!("  {} ({}): {}\n", left.what, left.at, left.why));
        }
    }

    // Reason → file → subjects, for the files written.
    let mut by_reason: BTreeMap<TodoReason, BTreeMap<&str, Vec<String>>> = BTreeMap::new();
    let mut count = 0;
    for (file, fate) in plan.files.iter().zip(fates) {
        if matches!(fate, Fate::Kept) {
            continue;
        }
        for todo in &file.todos() {
            count += 1;
            by_reason
                .entry(todo.reason)
                .or_default()
                .entry(file.rel.as_str())
                .or_default()
                .push(todo.subject.clone());
        }
    }
    // Turborepo caches every task by default: how many vx will cache is said, never left to
    // be found out run by run.
    if let Some((cached, all)) = plan.cached_tasks.filter(|(c, a)| c < a) {
        let suggested = by_reason
            .get(&TodoReason::CacheSuggestion)
            .map_or(0, |files| files.values().map(Vec::len).sum::<usize>());
        out.push_str(&format!(
            "cache: {cached} of {all} tasks are cached; the others run every time{}\n",
            if suggested > 0 {
                let (tables, are) = if suggested == 1 {
                    ("table is", "it")
                } else {
                    ("tables are", "each")
                };
                format!(
                    " ({suggested} suggested cache {tables} commented out: check {are}, then uncomment it)"
                )
            } else {
                String::new()
            }
        ));
    }
    if count == 0 {
        out.push_str("TODO comments: none\n");
    } else {
        out.push_str(&format!("TODO comments, by reason ({count}):\n"));
        for (reason, files) in &by_reason {
            let n: usize = files.values().map(Vec::len).sum();
            out.push_str(&format!("  {} ({n})\n", reason.heading()));
            for (rel, subjects) in files {
                out.push_str(&format!("    {rel}: {}\n", subjects.join(", ")));
            }
        }
    }
    out.push_str("next: vx run build --all\n");
    out
}
