//! `vx init --learn <tasks>` (issue 40, item 3): the named tasks run once, traced, and each
//! uncached one gets a `cache` table from what it actually read and wrote.
//!
//! Start at [`learn`]. Once the files are written, it runs `vx run <tasks> --all --force
//! --remote-exec=off --continue` (this binary, in a child process) with `VX_LEARN_TRACE` set:
//! every local task then runs under `vx __vx_learn` (`vx_exec::learn`), the sandbox's tracer
//! without bubblewrap, which writes the paths the task's processes opened, executed, created,
//! removed or renamed. [`propose`] turns one task's trace into `inputs` (what it read in its
//! project), `workspace-inputs` (what it read elsewhere in the workspace), `outputs` (what it
//! wrote in its project) and `env` (the variables its command text names), each at the
//! coarsest level that names nothing else: `src/**` for a read in `src/`, the file itself at the
//! project's top. It fails closed — the task stays uncached, with the reason in the report —
//! when the task failed, wrote outside its project, reached the network, or read a file git
//! ignores that no task wrote (a `.env`: no key can see it). [`apply`] writes the proposals
//! into the planned tables, which are then checked and written again like the rest.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use vx_exec::trace::AccessKind;

use super::toml::{Cache, Table};
use super::Plan;

/// What tracing one task proposed, or why it stays uncached.
pub(super) type Outcome = Result<Proposal, String>;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Proposal {
    pub inputs: Vec<String>,
    pub workspace_inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub env: Vec<String>,
}

/// One task to learn: its id, its project's directory, its command, and every project's
/// directory (a read in another project is globbed within that project).
pub(super) struct Subject {
    pub id: String,
    pub dir: String,
    pub command: String,
    pub projects: Vec<String>,
}

/// Directories whose files are never a task's inputs or outputs: the package manager's, git's
/// and the runners' own.
const NEVER: [&str; 6] = ["node_modules", ".git", ".vx", ".turbo", ".nx", ".yarn"];

/// Files vx folds into every key by other means (the lockfile's resolved dependencies).
const FOLDED: [&str; 5] = [
    "pnpm-lock.yaml",
    "package-lock.json",
    "yarn.lock",
    "bun.lock",
    "npm-shrinkwrap.json",
];

/// Runs `names` traced and proposes a cache for each of `subjects`; the run's own output goes
/// to stderr. `Err` when the run could not be started at all.
pub(super) fn learn(
    root: &Path,
    names: &[String],
    subjects: &[Subject],
) -> Result<BTreeMap<String, Outcome>, String> {
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
    let dir = std::env::temp_dir().join(format!(
        "vx-learn-{}-{}",
        std::process::id(),
        crate::ids::random_hex(8)
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("no temporary directory: {e}"))?;
    let summary = dir.join("summary.json");
    let exe = std::env::current_exe().map_err(|e| format!("vx cannot find itself: {e}"))?;
    let stdout = crate::render::stderr_for_child();
    let status = Command::new(exe)
        .arg("run")
        .args(names)
        .args(["--all", "--force", "--remote-exec=off", "--continue"])
        .arg(format!("--summarize={}", summary.display()))
        .current_dir(root)
        .env(vx_exec::learn::LEARN_TRACE, &dir)
        .stdout(stdout)
        .status();
    let result = status
        .map_err(|e| format!("vx could not run the tasks: {e}"))
        .and_then(|_| {
            let text = std::fs::read_to_string(&summary)
                .map_err(|e| format!("the run wrote no summary: {e}"))?;
            let json: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| format!("the run's summary does not read: {e}"))?;
            Ok(outcomes(root, &dir, &json, subjects))
        });
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Each subject's outcome, from the run's summary and the traces.
fn outcomes(
    root: &Path,
    traces: &Path,
    summary: &serde_json::Value,
    subjects: &[Subject],
) -> BTreeMap<String, Outcome> {
    let status: BTreeMap<&str, &str> = summary["tasks"]
        .as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter_map(|t| Some((t["id"].as_str()?, t["status"].as_str()?)))
        .collect();
    // Every file some traced task wrote: another task's output is none of a reader's inputs
    // (its key folds the writer's when the writer is upstream).
    let mut reports = BTreeMap::new();
    for entry in std::fs::read_dir(traces).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(accesses) = vx_exec::learn::read_report(&entry.path()) {
            reports.insert(name, accesses);
        }
    }
    let written: BTreeSet<String> = reports
        .values()
        .flatten()
        .filter(|(kind, _)| *kind == AccessKind::Write)
        .filter_map(|(_, path)| relative(root, path))
        .collect();
    let ignore = vx_workspace::tree::IgnoreRules::new(root);
    subjects
        .iter()
        .map(|subject| {
            let outcome = match status.get(subject.id.as_str()) {
                None => Err("it did not run".to_string()),
                Some(&"success") => match reports.get(&vx_exec::learn::learn_file(&subject.id)) {
                    None => Err("it left no trace (it did not run locally)".to_string()),
                    Some(accesses) => propose(root, subject, accesses, &written, &|p| {
                        ignore.is_ignored(p, false)
                    }),
                },
                Some(other) => Err(format!("it did not succeed ({other})")),
            };
            (subject.id.clone(), outcome)
        })
        .collect()
}

/// One task's proposal from its accesses (see the module documentation).
pub(super) fn propose(
    root: &Path,
    subject: &Subject,
    accesses: &[(AccessKind, PathBuf)],
    written_by_any: &BTreeSet<String>,
    ignored: &dyn Fn(&str) -> bool,
) -> Outcome {
    let own = |rel: &str| subject.dir.is_empty() || rel.starts_with(&format!("{}/", subject.dir));
    let in_project = |rel: &str| {
        if subject.dir.is_empty() {
            rel.to_string()
        } else {
            rel[subject.dir.len() + 1..].to_string()
        }
    };
    let mut wrote = BTreeSet::new();
    let mut read = BTreeSet::new();
    // Directories of its project it listed: a file added there is read next time (`tsc`
    // compiles what its `include` globs find), so the whole directory is an input.
    let mut listed = BTreeSet::new();
    let project_roots: Vec<PathBuf> = [Some(root.to_path_buf()), root.canonicalize().ok()]
        .into_iter()
        .flatten()
        .map(|r| lexical(&r.join(&subject.dir)))
        .collect();
    for (kind, path) in accesses {
        if *kind == AccessKind::Net {
            return Err(format!(
                "it connected to {}: what it fetched is no input vx can see",
                path.display()
            ));
        }
        let Some(rel) = relative(root, path) else {
            if *kind == AccessKind::Read && project_roots.contains(&lexical(path)) {
                listed.insert(String::new());
            }
            continue;
        };
        if *kind == AccessKind::Read && rel == subject.dir {
            listed.insert(String::new());
            continue;
        }
        if *kind == AccessKind::Read && own(&rel) && root.join(&rel).is_dir() {
            listed.insert(in_project(&rel));
            continue;
        }
        if !root.join(&rel).is_file() {
            continue; // a directory, a probe that found nothing, a file it removed
        }
        match kind {
            AccessKind::Write => {
                if !own(&rel) {
                    return Err(format!("it wrote {rel}, outside its project"));
                }
                wrote.insert(rel);
            }
            _ => {
                read.insert(rel);
            }
        }
    }
    let mut proposal = Proposal::default();
    let mut outputs = BTreeSet::new();
    for rel in &wrote {
        outputs.insert(coarse(&in_project(rel), &root.join(&subject.dir), None));
    }
    let output_dirs: BTreeSet<&str> = outputs
        .iter()
        .filter_map(|o| o.strip_suffix("/**"))
        .collect();
    let mut inputs = BTreeSet::new();
    let mut workspace_inputs = BTreeSet::new();
    for rel in read.difference(&wrote) {
        if written_by_any.contains(rel) || FOLDED.contains(&rel.as_str()) {
            continue;
        }
        if ignored(rel) {
            return Err(format!(
                "it read {rel}, which git ignores and no task wrote: no key can see it"
            ));
        }
        if own(rel) {
            inputs.insert(coarse(
                &in_project(rel),
                &root.join(&subject.dir),
                Some(&output_dirs),
            ));
        } else {
            workspace_inputs.insert(elsewhere(rel, root, &subject.projects));
        }
    }
    for dir in &listed {
        match dir.split('/').next().unwrap_or("") {
            // The project itself: every file in it but its outputs.
            "" => {
                inputs = ["**".to_string()].into();
                inputs.extend(outputs.iter().map(|o| format!("!{o}")));
                break;
            }
            top if !output_dirs.contains(top) => {
                inputs.insert(format!("{top}/**"));
            }
            _ => {}
        }
    }
    proposal.outputs = outputs.into_iter().collect();
    // What is taken, then what is taken back.
    let (back, take): (Vec<String>, Vec<String>) =
        inputs.into_iter().partition(|i| i.starts_with('!'));
    proposal.inputs = take.into_iter().chain(back).collect();
    proposal.workspace_inputs = workspace_inputs.into_iter().collect();
    proposal.env = variables(&subject.command);
    Ok(proposal)
}

/// The glob for a file at `rel` under `base`: its top directory whole (`src/**`), or the
/// file itself when it lies at the top, or in a directory that holds outputs.
fn coarse(rel: &str, base: &Path, outputs: Option<&BTreeSet<&str>>) -> String {
    match rel.split_once('/') {
        Some((top, _)) if base.join(top).is_dir() && !outputs.is_some_and(|o| o.contains(top)) => {
            format!("{top}/**")
        }
        _ => rel.to_string(),
    }
}

/// The glob for a file outside the task's project: within the project that holds it
/// (`packages/b/src/**`), or, outside every project, its top directory when that holds no
/// project (`scripts/**`), else the file itself.
fn elsewhere(rel: &str, root: &Path, projects: &[String]) -> String {
    let holder = projects
        .iter()
        .filter(|dir| !dir.is_empty() && rel.starts_with(&format!("{dir}/")))
        .max_by_key(|dir| dir.len());
    if let Some(dir) = holder {
        let inner = coarse(&rel[dir.len() + 1..], &root.join(dir), None);
        return format!("{dir}/{inner}");
    }
    let top = rel.split('/').next().unwrap_or(rel);
    let holds_project = projects
        .iter()
        .any(|dir| dir == top || dir.starts_with(&format!("{top}/")));
    if holds_project {
        rel.to_string()
    } else {
        coarse(rel, root, None)
    }
}

/// `path` without `.` and `..` (as named: links are not followed).
fn lexical(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal
}

/// `path` relative to the workspace root, `/`-separated, lexically normalized; `None` outside
/// it, for the root itself, or under a directory that is never an input or output.
fn relative(root: &Path, path: &Path) -> Option<String> {
    let normal = lexical(path);
    let canonical = root.canonicalize().ok();
    let rest = normal.strip_prefix(root).ok().or_else(|| {
        canonical
            .as_deref()
            .and_then(|c| normal.strip_prefix(c).ok())
    })?;
    let rel = rest.to_string_lossy().replace('\\', "/");
    if rel.is_empty() || rel.split('/').any(|part| NEVER.contains(&part)) {
        return None;
    }
    Some(rel)
}

/// The variables a command's text names (`$NODE_ENV`, `${API_URL}`), less the shell's own and
/// the ones vx always sets.
fn variables(command: &str) -> Vec<String> {
    const OWN: [&str; 6] = ["HOME", "PATH", "PWD", "SHELL", "USER", "VX_RUN_TASK"];
    let bytes = command.as_bytes();
    let mut found = BTreeSet::new();
    for (at, _) in command.match_indices('$') {
        let start = at + 1 + usize::from(bytes.get(at + 1) == Some(&b'{'));
        let name: String = command[start..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if valid && !OWN.contains(&name.as_str()) && !name.starts_with("npm_") {
            found.insert(name);
        }
    }
    found.into_iter().collect()
}

/// The tasks of `names` to learn, as the written files load: each that runs a command, is
/// neither persistent nor interactive, has no cache yet, and whose table `vx init` writes
/// (a kept `vx.toml` is yours: left alone), in a project `--all` runs.
pub(super) fn subjects(
    root: &Path,
    names: &[String],
    plan: &Plan,
    fates: &[super::write::Fate],
) -> Result<Vec<Subject>, crate::error::Failure> {
    let workspace = crate::run::plan::discover(root, false)?;
    let kept: BTreeSet<&str> = plan
        .files
        .iter()
        .zip(fates)
        .filter(|(_, fate)| matches!(fate, super::write::Fate::Kept))
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
pub(super) fn report(learned: Option<&Result<BTreeMap<String, Outcome>, String>>) -> String {
    let mut out = String::new();
    match learned {
        None => {}
        Some(Err(why)) => out.push_str(&format!("nothing learned: {why}\n")),
        Some(Ok(outcomes)) => {
            let cached = outcomes.values().filter(|o| o.is_ok()).count();
            out.push_str(&format!(
                "learned: {cached} task{} cached over what {} read and wrote in a traced run \
                 (each table says `Learned by vx init --learn`: check it)\n",
                if cached == 1 { "" } else { "s" },
                if cached == 1 { "it" } else { "they" },
            ));
            let failed: Vec<(&String, &String)> = outcomes
                .iter()
                .filter_map(|(id, o)| o.as_ref().err().map(|why| (id, why)))
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
pub(super) fn apply(plan: &mut Plan, learned: &BTreeMap<String, Outcome>) {
    for (id, outcome) in learned {
        let Ok(proposal) = outcome else { continue };
        let Some((project, task)) = id.rsplit_once('#') else {
            continue;
        };
        let Some((dir, _)) = plan.projects.get(project).cloned() else {
            continue;
        };
        let file = super::write::project_file(plan, &dir);
        let tables = &mut file.tasks;
        if !tables.iter().any(|t| t.name == task) {
            tables.push(Table {
                name: task.to_string(),
                ..Table::default()
            });
            tables.sort_by(|a, b| a.name.cmp(&b.name));
        }
        let table = tables
            .iter_mut()
            .find(|t| t.name == task)
            .expect("just added");
        table.suggestion = None;
        table.comments.push(
            "Learned by `vx init --learn` from what the task read and wrote: check it.".to_string(),
        );
        // vx gives a task only the variables it names (and a short allowlist): one its
        // command reads is passed and folded.
        for name in &proposal.env {
            if !table.pass_through.contains(name) {
                table.pass_through.push(name.clone());
            }
        }
        table.cache = Some(Cache {
            inputs: Some(proposal.inputs.clone()),
            workspace_inputs: proposal.workspace_inputs.clone(),
            outputs: proposal.outputs.clone(),
            env: proposal.env.clone(),
            ..Cache::default()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_named_in_a_command() {
        assert_eq!(
            variables("NODE_ENV=production vite build --base $BASE_URL ${API}/x $npm_package_name $HOME $1"),
            ["API", "BASE_URL"]
        );
    }

    #[test]
    fn reads_and_writes_become_globs_at_the_coarsest_level_that_names_nothing_else() {
        let root = std::env::temp_dir().join(format!("vx-learn-propose-{}", std::process::id()));
        for dir in [
            "packages/a/src/lib",
            "packages/a/dist",
            "packages/b/src",
            "scripts",
        ] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        for file in [
            "packages/a/src/lib/x.ts",
            "packages/a/tsconfig.json",
            "packages/a/dist/x.js",
            "packages/a/dist/x.d.ts",
            "packages/b/src/y.ts",
            "scripts/gen.js",
            "tsconfig.base.json",
            "pnpm-lock.yaml",
            "packages/a/.env",
        ] {
            std::fs::write(root.join(file), "x").unwrap();
        }
        let subject = Subject {
            id: "a#build".into(),
            dir: "packages/a".into(),
            command: "tsc && node ../../scripts/gen.js $TARGET".into(),
            projects: vec!["packages/a".into(), "packages/b".into()],
        };
        let read = |p: &str| (AccessKind::Read, root.join(p));
        let write = |p: &str| (AccessKind::Write, root.join(p));
        let accesses = vec![
            read("packages/a/src/lib/x.ts"),
            read("packages/a/tsconfig.json"),
            read("packages/a/../../tsconfig.base.json"),
            read("scripts/gen.js"),
            read("pnpm-lock.yaml"),
            read("node_modules/typescript/lib/tsc.js"),
            (AccessKind::Read, PathBuf::from("/usr/lib/libc.so.6")),
            read("packages/a/src/missing.ts"),
            read("packages/b/src/y.ts"),
            write("packages/a/dist/x.js"),
            write("packages/a/dist/x.d.ts"),
            read("packages/a/dist/x.js"),
        ];
        let none = |_: &str| false;
        let got = propose(&root, &subject, &accesses, &BTreeSet::new(), &none).unwrap();
        assert_eq!(
            got,
            Proposal {
                inputs: vec!["src/**".into(), "tsconfig.json".into()],
                workspace_inputs: vec![
                    "packages/b/src/**".into(),
                    "scripts/**".into(),
                    "tsconfig.base.json".into()
                ],
                outputs: vec!["dist/**".into()],
                env: vec!["TARGET".into()],
            }
        );
        // A listing of the project is every file in it but the outputs; of a directory, that
        // directory whole.
        let mut listing = accesses.clone();
        listing.push(read("packages/a"));
        let got = propose(&root, &subject, &listing, &BTreeSet::new(), &none).unwrap();
        assert_eq!(got.inputs, ["**", "!dist/**"]);
        let mut listing = vec![read("packages/a/src/lib")];
        listing.push(write("packages/a/dist/x.js"));
        let got = propose(&root, &subject, &listing, &BTreeSet::new(), &none).unwrap();
        assert_eq!(got.inputs, ["src/**"]);
        // Another task's output is not an input; an ignored file no task wrote fails closed.
        let written: BTreeSet<String> = ["packages/b/src/y.ts".to_string()].into();
        let got = propose(&root, &subject, &accesses, &written, &none).unwrap();
        assert!(!got
            .workspace_inputs
            .contains(&"packages/b/src/**".to_string()));
        let env = vec![read("packages/a/.env")];
        let ignored = |p: &str| p.ends_with(".env");
        assert_eq!(
            propose(&root, &subject, &env, &BTreeSet::new(), &ignored).unwrap_err(),
            "it read packages/a/.env, which git ignores and no task wrote: no key can see it"
        );
        let outside = vec![write("packages/b/src/y.ts")];
        assert_eq!(
            propose(&root, &subject, &outside, &BTreeSet::new(), &none).unwrap_err(),
            "it wrote packages/b/src/y.ts, outside its project"
        );
        let net = vec![(AccessKind::Net, PathBuf::from("93.184.216.34:443"))];
        assert!(propose(&root, &subject, &net, &BTreeSet::new(), &none)
            .unwrap_err()
            .starts_with("it connected to 93.184.216.34:443"));
        let _ = std::fs::remove_dir_all(&root);
    }
}
