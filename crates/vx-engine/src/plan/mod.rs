//! The first half of the run pipeline (ARCH-3): discover the workspace, load configuration,
//! select projects, resolve the requested tasks and build the task graph. Nothing executes here
//! but git, for `--affected` and changed-since filters (`affected`).

pub(crate) mod affected;
pub(crate) mod ci;
pub mod graph;
pub(crate) mod green;
pub(crate) mod nodes;
pub mod placement;
pub mod preview;
pub mod shard;
pub mod split;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use vx_core::affected::{reach, seed, Reason};
use vx_core::graph::{ExcludeDependencies, TaskGraph, TaskTable};
use vx_core::request::{resolve_requests, Scope};
use vx_core::selection::{select, Includes, ProjectWalks, Selection};
use vx_core::suggest::did_you_mean;
use vx_core::{Diagnostic, TaskId, Workspace};

use crate::error::Failure;
use crate::options::{AffectedBase, RunOptions, ShardFlag};
use crate::outcome::Notice;
use crate::plan::affected::{nothing_affected, Changes, Git};
use crate::workspace::load;

pub struct Plan {
    pub workspace: Workspace,
    pub graph: TaskGraph,
    /// Every task of the workspace with its resolved edges: keys fold upstreams that the run
    /// does not schedule (CLI-13) through it.
    pub table: TaskTable,
    /// Nodes displayed as requested: the requested ones plus members surfaced from requested
    /// groups (GRAPH-7).
    pub shown_as_requested: BTreeSet<usize>,
    /// The selected (or scoped) projects; with the graph's projects, the footer's count.
    pub projects_in_run: usize,
    /// `--affected`: what changed and why each task is affected.
    pub affected: Option<Affected>,
    /// What selecting found to say (a filter that matched nothing, …), for the caller to show.
    pub notices: Vec<Notice>,
    /// SEL-10: what an `--affected=last-green` run covers (the scope its green run is recorded
    /// under) and its branch's record as read at the start.
    pub green: Option<green::GreenPlan>,
    /// `--shard K/N` (SCHED-8): this runner's part; the graph holds it and what it needs.
    pub shard: Option<shard::ShardPlan>,
}

/// What `--affected` found (SEL-5 to SEL-8).
pub struct Affected {
    pub changes: Changes,
    /// Every task whose `depends-on` closure contains a seeded task, with the changed path or
    /// the chain that reached it (SEL-7).
    pub reasons: BTreeMap<TaskId, Reason>,
    /// SEL-6: no requested task is affected; this notice (and its hint) goes to stderr and
    /// the run exits 0.
    pub nothing: Option<Diagnostic>,
}

/// The workspace around `cwd`, loaded: the first step of a plan, then [`build`].
/// The workspace a run plans over: loaded from its configuration, or under `--frozen` from
/// `vx.lock` (INIT-5).
pub fn discover(cwd: &Path, frozen: bool) -> Result<Workspace, Failure> {
    let workspace = if frozen {
        crate::workspace::load_frozen(cwd)?
    } else {
        load(cwd)?
    };
    refuse_nested_run(&workspace)?;
    Ok(workspace)
}

/// The plan over a discovered workspace: projects selected, requests resolved, the graph.
pub fn build(workspace: Workspace, cwd: &Path, options: &RunOptions) -> Result<Plan, Failure> {
    let table = TaskTable::resolve(&workspace)?;
    check_excluded_names(&workspace, &options.exclude)?;

    let mut affected = None;
    let mut notices: Vec<Notice> = workspace
        .warnings
        .iter()
        .map(|d| Notice::warning(d.to_string()))
        .collect();
    let mut green_known = None;
    let part = match options.shard {
        Some(ShardFlag::Part { k, n }) => Some((k, n)),
        Some(ShardFlag::Ci) => Some(shard::from_ci(&crate::host::env::host_env())?),
        _ => None,
    };
    // SCHED-8: what the parts agreed to split by (under last-green, with the base).
    let mut agreed = None;
    let scope = if options.has_selection() {
        let mut git = git(&workspace, cwd, options);
        let mut changed = BTreeMap::new();
        for filter in &options.filters {
            if let Some(reference) = filter.changed_since() {
                if !changed.contains_key(reference) {
                    let mut changes = git.filter(&filter.text, reference)?;
                    git.narrow_lockfiles(&workspace, &mut changes);
                    changed.insert(
                        reference.to_string(),
                        seed(&workspace, &changes.paths, options.frozen).projects,
                    );
                }
            }
        }
        let walks = ProjectWalks::new(&workspace, &table);
        let includes = Includes {
            all: options.all,
            filters: &options.filters,
            affected: options.affected.is_some(),
            changed: &changed,
        };
        let selection = select(&workspace, &walks, &includes)?;
        notices.extend(selection.warnings.iter().map(Notice::warning));
        match &options.affected {
            None => Scope::Selection(selection.projects),
            Some(base) => {
                let setting = workspace.settings.affected_base.as_deref();
                let mut changes = match base {
                    AffectedBase::LastGreen => {
                        let sharded = part.map(|(_, n)| (n, &table, &mut agreed));
                        let (changes, known) =
                            last_green(&workspace, cwd, options, &mut git, &mut notices, sharded)?;
                        green_known = known;
                        changes
                    }
                    _ => git.affected(base, setting)?,
                };
                if let Some(why) = &changes.why {
                    // SEL-8, SEL-10: which base a bare `--affected` took, and why.
                    notices.push(Notice::note(if changes.base == affected::GREEN_NONE {
                        format!("--affected=last-green: {why}")
                    } else {
                        let named = if changes.base.starts_with(&changes.commit) {
                            changes.short().to_string()
                        } else {
                            format!("{} ({})", changes.base, changes.short())
                        };
                        format!("--affected compares with {named}: {why}")
                    }));
                }
                git.narrow_lockfiles(&workspace, &mut changes);
                let (scope, found) =
                    affected_scope(&workspace, &table, selection, changes, options.frozen);
                affected = Some(found);
                scope
            }
        }
    } else {
        let project = cwd_project(&workspace, cwd);
        match root_names(&workspace, cwd, project, &options.tasks) {
            // At the root, a name the root project does not declare runs everywhere, as
            // `turbo run build` and `nx run-many -t build` do there.
            Some(names) => {
                let walks = ProjectWalks::new(&workspace, &table);
                let includes = Includes {
                    all: true,
                    filters: &[],
                    affected: false,
                    changed: &BTreeMap::new(),
                };
                let selection = select(&workspace, &walks, &includes)?;
                notices.push(Notice::note(format!(
                    "the workspace root declares no task {names}: running it in every project, as `--all` does"
                )));
                Scope::Selection(selection.projects)
            }
            None => match project {
                Some(p) => Scope::Project(p),
                None => Scope::Outside,
            },
        }
    };
    let requested = resolve_requests(
        &workspace,
        &options.tasks,
        &scope,
        !options.forwarded.is_empty(),
    )?;
    if let Some(found) = affected.as_mut() {
        if requested.is_empty() {
            let mut names: Vec<&str> = Vec::new();
            for word in options.tasks.iter().filter(|w| TaskId::parse(w).is_none()) {
                if !names.contains(&word.as_str()) {
                    names.push(word);
                }
            }
            let any_seeded = found
                .reasons
                .values()
                .any(|r| matches!(r, Reason::Changed(_)));
            found.nothing = Some(nothing_affected(&found.changes, any_seeded, &names));
        }
    }
    let graph = TaskGraph::build(&workspace, &table, &requested, &options.exclude)?;
    only_groups(&workspace, &graph)?;
    let (graph, shard) = match part {
        Some((k, n)) => {
            let slots = shard::slots(&workspace, options);
            let inputs = match agreed {
                Some(inputs) => inputs,
                None => {
                    let (inputs, said) = split::agree(
                        &split_place(&workspace, cwd, options, n, None),
                        &task_ids(&table),
                        None,
                    );
                    notices.extend(said);
                    inputs
                }
            };
            let (narrowed, part) = shard::narrow(
                &workspace,
                &table,
                graph,
                &options.exclude,
                (k, n),
                slots,
                inputs,
            )?;
            notices.push(Notice::note(part.line()));
            (narrowed, Some(part))
        }
        _ => (graph, None),
    };
    let shown_as_requested = surface(&workspace, &graph);
    let projects: BTreeSet<usize> = graph.nodes.iter().map(|n| n.project).collect();
    Ok(Plan {
        projects_in_run: projects.len(),
        workspace,
        graph,
        table,
        shown_as_requested,
        affected,
        notices,
        shard,
        green: green::scope(options, options.affected == Some(AffectedBase::LastGreen)).map(
            |scope| green::GreenPlan {
                scope,
                known: green_known,
            },
        ),
    })
}

/// Git for this run; the cache directory's files never count as changed.
fn git(workspace: &Workspace, cwd: &Path, options: &RunOptions) -> Git {
    let host_env = crate::host::env::host_env();
    let dir = run_cache_dir(workspace, cwd, options, &host_env);
    Git::new(&workspace.root, &host_env, &dir)
}

fn run_cache_dir(
    workspace: &Workspace,
    cwd: &Path,
    options: &RunOptions,
    host_env: &BTreeMap<String, String>,
) -> PathBuf {
    crate::cache_dir::cache_dir(
        &workspace.root,
        cwd,
        options.cache_dir.as_deref(),
        host_env,
        workspace.settings.cache_dir.as_deref(),
    )
}

/// The remote layer for green records outside a run's cache (`None` without one).
fn record_layer(
    workspace: &Workspace,
    options: &RunOptions,
    host_env: &BTreeMap<String, String>,
) -> Option<vx_store::layer::RecordLayer> {
    crate::cache::remote::layer(
        workspace.settings.remote_cache.as_ref(),
        host_env,
        &options.cache,
    )
    .ok()
    .flatten()
    .map(|r| vx_store::layer::RecordLayer {
        layer: r.layer,
        read: r.usage.read,
        write: r.usage.write,
    })
}

/// SEL-6 with SEL-10: an `--affected=last-green` run that found nothing affected is green at
/// HEAD too (its base was, and nothing it covers changed): remembered like a run that ran.
pub fn remember_unaffected(plan: &Plan, cwd: &Path, options: &RunOptions) -> Vec<Notice> {
    let Some(found) = plan.affected.as_ref() else {
        return Vec::new();
    };
    if options.affected != Some(AffectedBase::LastGreen)
        || options.plan.is_some()
        || found.changes.at_head
        || found.changes.base == affected::GREEN_NONE
    {
        return Vec::new();
    }
    let host_env = crate::host::env::host_env();
    let dir = run_cache_dir(&plan.workspace, cwd, options, &host_env);
    let head = vx_workspace::tree::head(&plan.workspace.root).unwrap_or_default();
    let remotes: Vec<_> = record_layer(&plan.workspace, options, &host_env)
        .into_iter()
        .collect();
    let run_id = crate::ids::run_id();
    let ended = green::Ended {
        green: true,
        run_id: &run_id,
        at_ms: crate::clock::epoch_ms(std::time::SystemTime::now()),
        git: Some(crate::record::GitFacts {
            commit: head.commit,
            branch: head.branch,
        }),
        own: Vec::new(),
        // Every part found nothing affected: each may record the whole run.
        shard: None,
        split: String::new(),
    };
    green::remember_run(
        options,
        plan.green.as_ref(),
        &host_env,
        &plan.workspace.root,
        &dir,
        ended,
        &remotes,
    )
}

/// SEL-10: the changes since the last green commit of the run's scope, from this machine's
/// green runs and the remote cache's records (a remote that cannot be read is one warning).
fn last_green(
    workspace: &Workspace,
    cwd: &Path,
    options: &RunOptions,
    git: &mut Git,
    notices: &mut Vec<Notice>,
    sharded: Option<(u32, &TaskTable, &mut Option<split::Inputs>)>,
) -> Result<(Changes, Option<green::Known>), Failure> {
    let host_env = crate::host::env::host_env();
    let remote = record_layer(workspace, options, &host_env);
    let scope = green::scope(options, true).ok_or_else(|| {
        Failure::from(Diagnostic::new(
            "--affected=last-green cannot be combined with a changed-since filter",
        ))
    })?;
    let dir = run_cache_dir(workspace, cwd, options, &host_env);
    let head = vx_workspace::tree::head(&workspace.root).unwrap_or_default();
    let branches = green::branches(&host_env, head.branch.as_deref());
    let found = green::candidates(&dir, &scope, &branches, remote.as_ref());
    notices.extend(found.notices);
    let current = green::current_branch(&host_env, head.branch.as_deref());
    let known = current.and_then(|b| found.records.get(&b).cloned().map(|runs| (b, runs)));
    let mut changes = git.last_green(
        &scope,
        &green::green_commits(&found.candidates, &scope),
        &branches,
    )?;
    // SCHED-8: every part compares with the base the parts agreed on.
    if let Some((n, table, agreed)) = sharded {
        let mine = split::AgreedBase {
            commit: changes.base.clone(),
            why: changes.why.clone().unwrap_or_default(),
        };
        let place = split_place(workspace, cwd, options, n, None);
        let (inputs, said) = split::agree(&place, &task_ids(table), Some(mine.clone()));
        notices.extend(said);
        let agreed_alike = matches!(
            inputs.agreement,
            split::Agreement::Adopted | split::Agreement::Written | split::Agreement::Failed
        );
        if !agreed_alike && options.plan.is_none() {
            // Each runner's own search may find another base (this machine's green runs).
            return Err(Diagnostic::new(
                "`--shard` with `--affected=last-green` needs a remote cache this run can read and write",
            )
            .hint("the parts agree on one base through it; without one, compare with a base every runner sees alike (`--affected=<commit>`, or bare `--affected` in CI)")
            .into());
        }
        if let Some(base) = inputs.base.as_ref().filter(|b| b.commit != mine.commit) {
            let candidates = if base.commit == affected::GREEN_NONE {
                Vec::new()
            } else {
                vec![affected::GreenCommit {
                    commit: base.commit.clone(),
                    why: format!("{} (agreed by the --shard parts)", base.why),
                }]
            };
            changes = git.last_green(&scope, &candidates, &branches)?;
        }
        *agreed = Some(inputs);
    }
    Ok((changes, known))
}

/// Every task id of the workspace, as text.
pub fn task_ids(table: &TaskTable) -> Vec<String> {
    table.edges.keys().map(TaskId::to_string).collect()
}

/// Where the parts of a sharded run agree on their split (SCHED-8), with the remote cache's
/// layer for records (`None`: the one the workspace configures).
pub fn split_place(
    workspace: &Workspace,
    cwd: &Path,
    options: &RunOptions,
    n: u32,
    remote: Option<Option<vx_store::layer::RecordLayer>>,
) -> split::Place {
    let host_env = crate::host::env::host_env();
    let head = vx_workspace::tree::head(&workspace.root).unwrap_or_default();
    let tasks = green::scope_words(options);
    let mut scope = tasks.clone();
    match &options.affected {
        None => {}
        Some(AffectedBase::Default) => scope.push_str(" --affected"),
        Some(AffectedBase::Ref(r)) => scope.push_str(&format!(" --affected={r}")),
        Some(AffectedBase::LastGreen) => scope.push_str(" --affected=last-green"),
    }
    split::Place {
        cache_dir: run_cache_dir(workspace, cwd, options, &host_env),
        scope,
        tasks,
        dry: options.plan.is_some(),
        commit: head.commit,
        n,
        branches: green::branches(&host_env, head.branch.as_deref()),
        remote: remote.unwrap_or_else(|| record_layer(workspace, options, &host_env)),
    }
}

/// SEL-5, CLI-8: bare names are judged against every project; a task found there runs when
/// another include selected its project whole, or its closure holds a seeded task and no
/// exclude removed its project.
fn affected_scope(
    workspace: &Workspace,
    table: &TaskTable,
    selection: Selection,
    changes: Changes,
    frozen: bool,
) -> (Scope, Affected) {
    let seeds = seed(workspace, &changes.paths, frozen);
    let reasons = reach(table, &seeds);
    let scope = Scope::Affected {
        projects: (0..workspace.projects.len()).collect(),
        whole: selection.projects,
        reached: reasons
            .keys()
            .filter(|id| !selection.excluded.contains(&workspace.by_name[&id.project]))
            .cloned()
            .collect(),
    };
    let found = Affected {
        changes,
        reasons,
        nothing: None,
    };
    (scope, found)
}

/// CLI-10: a `vx run` inside a task of the same workspace would recurse.
fn refuse_nested_run(workspace: &Workspace) -> Result<(), Failure> {
    let Some(outer) = std::env::var_os("VX_RUN_WORKSPACE") else {
        return Ok(());
    };
    let same = PathBuf::from(&outer)
        .canonicalize()
        .is_ok_and(|p| p == workspace.root);
    if !same {
        return Ok(());
    }
    let task = std::env::var("VX_RUN_TASK").unwrap_or_default();
    Err(Diagnostic::new(format!(
        "`vx run` inside task `{task}` of the same workspace would recurse; add the work as a dependency instead"
    ))
    .into())
}

fn check_excluded_names(
    workspace: &Workspace,
    exclude: &ExcludeDependencies,
) -> Result<(), Failure> {
    let ExcludeDependencies::Names(names) = exclude else {
        return Ok(());
    };
    let declared: BTreeSet<&str> = workspace
        .projects
        .iter()
        .flat_map(|p| p.config.tasks.keys().map(String::as_str))
        .collect();
    for name in names {
        if !declared.contains(name.as_str()) {
            return Err(Diagnostic::new(format!(
                "--exclude-dependencies names `{name}`, which no project declares"
            ))
            .suggest(did_you_mean(name, declared.iter().copied()))
            .into());
        }
    }
    Ok(())
}

/// CLI-6: the deepest project whose directory contains the current directory, by real path.
/// When the run is asked at the workspace root, by bare task names only, and the root has no
/// project declaring any of them: those names, quoted, to run in every project.
fn root_names(
    workspace: &Workspace,
    cwd: &Path,
    project: Option<usize>,
    words: &[String],
) -> Option<String> {
    let at_root = cwd.canonicalize().ok()? == workspace.root;
    let bare = words.iter().all(|w| TaskId::parse(w).is_none());
    if !at_root || !bare || words.is_empty() {
        return None;
    }
    let root_declares = |word: &String| {
        project.is_some_and(|p| {
            let project = &workspace.projects[p];
            project.dir.is_empty() && project.config.tasks.contains_key(word)
        })
    };
    if words.iter().any(root_declares) {
        return None;
    }
    let quoted: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
    Some(quoted.join(", "))
}

fn cwd_project(workspace: &Workspace, cwd: &Path) -> Option<usize> {
    let real = cwd.canonicalize().ok()?;
    let rel = real.strip_prefix(&workspace.root).ok()?;
    let rel = rel.to_string_lossy().replace('\\', "/");
    let project = workspace.project_containing(&rel)?;
    workspace.by_name.get(&project.name).copied()
}

/// GRAPH-7: members of requested groups in the same project, descending nested groups.
fn surface(workspace: &Workspace, graph: &TaskGraph) -> BTreeSet<usize> {
    let mut shown: BTreeSet<usize> = BTreeSet::new();
    let mut stack: Vec<usize> = Vec::new();
    for (i, node) in graph.nodes.iter().enumerate() {
        if node.requested {
            shown.insert(i);
            stack.push(i);
        }
    }
    while let Some(i) = stack.pop() {
        let node = &graph.nodes[i];
        if !is_group(workspace, &node.id) {
            continue;
        }
        for &d in &node.deps {
            if graph.nodes[d].project == node.project && shown.insert(d) {
                stack.push(d);
            }
        }
    }
    shown
}

/// A plan of groups alone would run nothing and exit 0: a green run that checked nothing
/// (a converted repository whose tasks Nx plugins inferred). It is refused.
fn only_groups(workspace: &Workspace, graph: &TaskGraph) -> Result<(), Failure> {
    let nothing = !graph.nodes.is_empty() && graph.nodes.iter().all(|n| is_group(workspace, &n.id));
    if !nothing {
        return Ok(());
    }
    let requested: Vec<String> = graph
        .nodes
        .iter()
        .filter(|n| n.requested)
        .map(|n| n.id.to_string())
        .collect();
    let shown = match requested.len() {
        0..=3 => requested.join(", "),
        n => format!("{} and {} more", requested[..3].join(", "), n - 3),
    };
    Err(Failure::from(
        Diagnostic::new(format!(
            "nothing to run: {shown} {} group{} whose depends-on reach{} no task with a command",
            if requested.len() == 1 { "is a" } else { "are" },
            if requested.len() == 1 { "" } else { "s" },
            if requested.len() == 1 { "es" } else { "" },
        ))
        .hint("give the tasks it groups a `command`, or name tasks that have one"),
    ))
}

pub fn is_group(workspace: &Workspace, id: &TaskId) -> bool {
    vx_core::graph::task_config(workspace, id).is_some_and(|t| t.is_group())
}

/// Each node's level (`--dry`'s blocks, `--graph=…html`'s columns): 0 for a node without dependencies, else one more than its deepest
/// dependency's, so dependencies stand left of what needs them.
pub fn levels(plan: &Plan) -> Vec<usize> {
    let nodes = &plan.graph.nodes;
    let mut level: Vec<Option<usize>> = vec![None; nodes.len()];
    // Depth-first with an explicit stack: a long chain must not exhaust the thread's stack.
    for start in 0..nodes.len() {
        let mut stack = vec![start];
        while let Some(&i) = stack.last() {
            if level[i].is_some() {
                stack.pop();
                continue;
            }
            let pending: Vec<usize> = nodes[i]
                .deps
                .iter()
                .copied()
                .filter(|&d| level[d].is_none())
                .collect();
            if pending.is_empty() {
                let deepest = nodes[i].deps.iter().filter_map(|&d| level[d]).max();
                level[i] = Some(deepest.map_or(0, |l| l + 1));
                stack.pop();
            } else {
                stack.extend(pending);
            }
        }
    }
    level.into_iter().map(Option::unwrap_or_default).collect()
}
