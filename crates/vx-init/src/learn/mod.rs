//! `vx init --learn <tasks>`: the named tasks run once, traced, and each
//! uncached one gets a `cache` table from what it actually read and wrote.
//!
//! Start at [`learn`]. Once the files are written (with `env.pass-through` for the variables
//! each command names, [`pass_named`]), it plans the tasks (`vx run … --dry=json`, for what is
//! upstream of what) and runs `vx run <tasks> --all --force --remote-exec=off --continue`
//! (this binary, in a child process) with `VX_LEARN_TRACE` set: every local task then runs
//! under `vx __vx_learn` (`vx_exec::learn`), the sandbox's tracer without bubblewrap, which
//! writes the paths the task's processes opened, executed, created, removed or renamed.
//! `propose.rs` turns one task's trace into its `cache` table, or the reason it stays
//! uncached. [`apply`] writes the proposals into the planned tables, which are then checked
//! and written again like the rest, and [`confirm`] drops from the count any vx refused.

pub(crate) mod propose;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use vx_exec::trace::AccessKind;

use super::toml::{Cache, Table};
use crate::plan::Plan;
use propose::{Learned, Subject};

/// Runs `names` traced and proposes a cache for each of `subjects`; the run's own output goes
/// to stderr. `Err` when nothing could be learned at all.
pub(super) fn learn(
    root: &Path,
    names: &[String],
    subjects: &[Subject],
    stdout: std::process::Stdio,
) -> Result<Learned, String> {
    if !vx_exec::trace::supported() {
        return Err("tracing a task needs Linux on x86-64".to_string());
    }
    // Only the names some task to learn has (`vx run` refuses a name nothing declares).
    let names: Vec<&String> = names
        .iter()
        .filter(|n| {
            subjects
                .iter()
                .any(|s| s.id.rsplit_once('#').is_some_and(|(_, t)| t == n.as_str()))
        })
        .collect();
    if names.is_empty() {
        return Err(
            "no task of those names runs a command uncached in a project `--all` runs".to_string(),
        );
    }
    let exe = std::env::current_exe().map_err(|e| format!("vx cannot find itself: {e}"))?;
    let upstream = upstream(&exe, root, &names)?;
    let dir = std::env::temp_dir().join(format!(
        "vx-learn-{}-{}",
        std::process::id(),
        vx_engine::ids::random_hex(8)
    ));
    fs_err::create_dir_all(&dir).map_err(|e| format!("no temporary directory: {e}"))?;
    let summary = dir.join("summary.json");
    let status = Command::new(&exe)
        .arg("run")
        .args(&names)
        .args(["--all", "--force", "--remote-exec=off", "--continue"])
        .arg(format!("--summarize={}", summary.display()))
        .current_dir(root)
        .env(vx_exec::learn::LEARN_TRACE, &dir)
        .stdout(stdout)
        .status();
    let result = status
        .map_err(|e| format!("vx could not run the tasks: {e}"))
        .and_then(|_| {
            let text = fs_err::read_to_string(&summary)
                .map_err(|e| format!("the run wrote no summary: {e}"))?;
            let json: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| format!("the run's summary does not read: {e}"))?;
            Ok(outcomes(root, &dir, &json, subjects, &upstream))
        });
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Each task of the run's plan → every task upstream of it, from `vx run --dry=json`.
fn upstream(
    exe: &Path,
    root: &Path,
    names: &[&String],
) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
    let out = super::nx::graph::output_within(
        Command::new(exe)
            .arg("run")
            .args(names)
            .args(["--all", "--dry=json", "--remote-exec=off"])
            .current_dir(root),
    )
    .map_err(|e| format!("vx could not plan the tasks: {e}"))?;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|_| {
        let text = String::from_utf8_lossy(&out.stderr);
        format!(
            "vx could not plan the tasks: {}",
            text.lines().next().unwrap_or("")
        )
    })?;
    let direct: BTreeMap<String, Vec<String>> = json["tasks"]
        .as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter_map(|t| {
            let deps = t["deps"]
                .as_array()?
                .iter()
                .filter_map(|d| d.as_str().map(String::from));
            Some((t["id"].as_str()?.to_string(), deps.collect()))
        })
        .collect();
    let mut all = BTreeMap::new();
    for id in direct.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = direct[id].iter().collect();
        while let Some(next) = stack.pop() {
            if seen.insert(next.clone()) {
                stack.extend(direct.get(next).into_iter().flatten());
            }
        }
        all.insert(id.clone(), seen);
    }
    Ok(all)
}

/// The files git tracks in the workspace (`git ls-files`); empty outside git.
fn tracked(root: &Path) -> BTreeSet<String> {
    Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split('\0')
                .filter(|p| !p.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// A trace's task id, from its file name ([`vx_exec::learn::learn_file`] reversed).
fn id_of_trace(name: &str) -> Option<String> {
    let id = name.strip_suffix(".trace")?;
    Some(id.replace("%2F", "/").replace("%25", "%"))
}

/// Each subject's outcome (with its project's directory), from the run's summary and the
/// traces.
fn outcomes(
    root: &Path,
    traces: &Path,
    summary: &serde_json::Value,
    subjects: &[Subject],
    upstream: &BTreeMap<String, BTreeSet<String>>,
) -> Learned {
    let status: BTreeMap<&str, &str> = summary["tasks"]
        .as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter_map(|t| Some((t["id"].as_str()?, t["status"].as_str()?)))
        .collect();
    let mut reports: BTreeMap<String, Vec<(AccessKind, std::path::PathBuf)>> = BTreeMap::new();
    for entry in std::fs::read_dir(traces).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let (Some(id), Some(accesses)) = (
            id_of_trace(&name),
            vx_exec::learn::read_report(&entry.path()),
        ) else {
            continue;
        };
        reports.insert(id, accesses);
    }
    // Every file a traced task wrote, by the task that wrote it.
    let mut writers: BTreeMap<String, String> = BTreeMap::new();
    for (id, accesses) in &reports {
        for (kind, path) in accesses {
            if let (AccessKind::Write, propose::Place::Inside(rel)) =
                (kind, propose::place(root, path))
            {
                writers.insert(rel, id.clone());
            }
        }
    }
    let ignore = vx_workspace::tree::IgnoreRules::new(root);
    let ignored = |p: &str| ignore.is_ignored(p, false);
    let tracked = tracked(root);
    let is_tracked = |p: &str| tracked.contains(p);
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let none = BTreeSet::new();
    subjects
        .iter()
        .map(|subject| {
            let outcome = match status.get(subject.id.as_str()) {
                None => Err("it did not run".to_string()),
                Some(&"success") => match reports.get(&subject.id) {
                    None => Err("it left no trace (it ran in a sandbox or remotely)".to_string()),
                    Some(accesses) => {
                        let others: BTreeMap<String, String> = writers
                            .iter()
                            .filter(|(_, w)| **w != subject.id)
                            .map(|(p, w)| (p.clone(), w.clone()))
                            .collect();
                        let cx = propose::Context {
                            root,
                            writers: &others,
                            upstream: upstream.get(&subject.id).unwrap_or(&none),
                            ignored: &ignored,
                            tracked: &is_tracked,
                            home: home.as_deref(),
                        };
                        propose::propose(&cx, subject, accesses)
                    }
                },
                Some(other) => Err(format!("it did not succeed ({other})")),
            };
            (subject.id.clone(), (subject.dir.clone(), outcome))
        })
        .collect()
}

/// The tasks of `names` to learn, as the written files load: each that runs a command, is
/// neither persistent nor interactive, has no cache yet, and whose table `vx init` writes
/// (a kept `vx.toml` is yours: left alone), in a project `--all` runs.
pub(super) fn subjects(
    root: &Path,
    names: &[String],
    plan: &Plan,
    fates: &[crate::plan::Fate],
) -> Result<Vec<Subject>, vx_engine::error::Failure> {
    let workspace = vx_engine::plan::discover(root, false)?;
    let kept: BTreeSet<&str> = plan
        .files
        .iter()
        .zip(fates)
        .filter(|(_, fate)| matches!(fate, crate::plan::Fate::Kept))
        .map(|(file, _)| file.rel.as_str())
        .collect();
    let projects: Vec<String> = workspace.projects.iter().map(|p| p.dir.clone()).collect();
    let mut subjects = Vec::new();
    for project in &workspace.projects {
        let file = if project.dir.is_empty() {
            vx_core::config::CONFIG_FILE.to_string()
        } else {
            format!("{}/{}", project.dir, vx_core::config::CONFIG_FILE)
        };
        // A kept file is yours; a project `--all` leaves out does not run.
        if kept.contains(file.as_str()) || project.outside_all {
            continue;
        }
        for name in names {
            let Some(task) = project.config.tasks.get(name) else {
                continue;
            };
            let plain = matches!(
                task.persistent,
                None | Some(vx_core::config::Persistent::Plain(false))
            );
            let Some(command) = task.command.as_ref() else {
                continue;
            };
            if task.cache.is_some() || !plain || task.interactive == Some(true) {
                continue;
            }
            subjects.push(Subject {
                id: format!("{}#{name}", project.name),
                dir: project.dir.clone(),
                command: command.clone(),
                projects: projects.clone(),
            });
        }
    }
    Ok(subjects)
}

/// The report's lines about `--learn`.
pub(super) fn report(learned: Option<&Result<Learned, String>>) -> String {
    let mut out = String::new();
    match learned {
        None => {}
        Some(Err(why)) => out.push_str(&format!("nothing learned: {why}\n")),
        Some(Ok(outcomes)) => {
            let cached = outcomes.values().filter(|(_, o)| o.is_ok()).count();
            out.push_str(&format!(
                "learned: {cached} task{} cached over what {} read and wrote in a traced run \
                 (each table says `Learned by vx init --learn`: check it)\n",
                if cached == 1 { "" } else { "s" },
                if cached == 1 { "it" } else { "they" },
            ));
            let failed: Vec<(&String, &String)> = outcomes
                .iter()
                .filter_map(|(id, (_, o))| o.as_ref().err().map(|why| (id, why)))
                .collect();
            if !failed.is_empty() {
                out.push_str(&format!("not learned, left uncached ({}):\n", failed.len()));
                for (id, why) in failed {
                    out.push_str(&format!("  {id}: {why}\n"));
                }
            }
        }
    }
    out
}

/// The planned tables the proposals go into: each learned task's own table in its project's
/// file (added when missing) gets the `cache`, with a comment saying where it came from.
pub(super) fn apply(plan: &mut Plan, learned: &Learned) {
    for (id, (dir, outcome)) in learned {
        let Ok(proposal) = outcome else { continue };
        let Some((_, task)) = id.rsplit_once('#') else {
            continue;
        };
        let table = own_table(plan, dir, task);
        table.suggestion = None;
        table.comments.push(LEARNED.to_string());
        table.cache = Some(Cache {
            inputs: Some(proposal.inputs.clone()),
            workspace_inputs: proposal.workspace_inputs.clone(),
            outputs: proposal.outputs.clone(),
            env: proposal.env.clone(),
            ..Cache::default()
        });
    }
}

/// The comment above a learned table.
const LEARNED: &str = "Learned by `vx init --learn` from what the task read and wrote: check it.";

/// The task's own table in the planned `vx.toml` of the project at `dir`, added when missing.
fn own_table<'a>(plan: &'a mut Plan, dir: &str, task: &str) -> &'a mut Table {
    let tables = &mut crate::plan::project_file(plan, dir).tasks;
    if !tables.iter().any(|t| t.name == task) {
        tables.push(Table {
            name: task.to_string(),
            ..Table::default()
        });
        tables.sort_by(|a, b| a.name.cmp(&b.name));
    }
    tables
        .iter_mut()
        .find(|t| t.name == task)
        .expect("just added")
}

/// Before the traced run: each variable a subject's command names is passed to it (vx gives a
/// task only what it names, so the run sees what a later run will), and, once learned, folded.
pub(super) fn pass_named(plan: &mut Plan, subjects: &[Subject]) {
    for subject in subjects {
        let names = propose::variables(&subject.command);
        if names.is_empty() {
            continue;
        }
        let task = subject.id.rsplit_once('#').map_or("", |(_, t)| t);
        let table = own_table(plan, &subject.dir, task);
        for name in names {
            if !table.pass_through.contains(&name) {
                table.pass_through.push(name);
            }
        }
    }
}

/// After the learned tables are checked: one vx had to uncache or leave out (outputs another
/// task owns, say) is no longer counted as learned; the report's `not carried over` says why.
pub(super) fn confirm(plan: &Plan, learned: &mut Learned) {
    for (id, (dir, outcome)) in learned.iter_mut() {
        if outcome.is_err() {
            continue;
        }
        let task = id.rsplit_once('#').map_or("", |(_, t)| t);
        let rel = if dir.is_empty() {
            vx_core::config::CONFIG_FILE.to_string()
        } else {
            format!("{dir}/{}", vx_core::config::CONFIG_FILE)
        };
        let kept = plan
            .files
            .iter()
            .find(|f| f.rel == rel)
            .and_then(|f| f.tasks.iter().find(|t| t.name == task))
            .is_some_and(|t| t.cache.is_some());
        if !kept {
            *outcome =
                Err("vx refused the cache learned for it (see `not carried over`)".to_string());
        }
    }
}
