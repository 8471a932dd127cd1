//! The checks over declared outputs that run once the workspace is loaded, before any run:
//! no two cached tasks may claim the same files (GRAPH-8), and no input glob may reach the
//! outputs of another task, so that every key can be derived before anything runs (GRAPH-9).
//!
//! Start at [`check_outputs`]. Both checks cover every cached task of the workspace, not only
//! a run's, and compare globs root-relative (a project's `outputs` and `inputs` are joined to
//! its directory; `workspace-outputs` and `workspace-inputs` already are). They are
//! deliberately syntactic, working on the *literal prefix* of each glob (`globs::literal_prefix`):
//! globs that merely might meet (`dist/*.js` and `dist/*.css`) are allowed, and only globs
//! whose prefixes nest are compared.

use std::collections::BTreeMap;

use crate::diagnostic::Diagnostic;
use crate::globs::literal_prefix;
use crate::id::TaskId;
use crate::location::Location;
use crate::project::Workspace;

/// Every GRAPH-8 and GRAPH-9 problem of the workspace, sorted by task id. Glob entries are
/// expected in their normal form (CFG-7), as the loader stores them.
/// `is_ignored` says whether git ignores a root-relative directory: an input glob never
/// selects ignored files, so it cannot reach outputs there.
pub fn check_outputs(workspace: &Workspace, is_ignored: &dyn Fn(&str) -> bool) -> Vec<Diagnostic> {
    let tasks = cached_tasks(workspace);
    let mut problems = overlapping_outputs(&tasks);
    let upfront_keys = workspace
        .settings
        .rules
        .as_ref()
        .and_then(|r| r.upfront_keys)
        != Some(false);
    if upfront_keys {
        problems.extend(inputs_reaching_outputs(&tasks, is_ignored));
    }
    problems
}

/// Whether `glob` matches every path below its literal prefix: a literal (a file, or a
/// directory and its whole tree, CFG-7), or a prefix followed by `**` or `**/*`.
pub fn covers_its_prefix(glob: &str) -> bool {
    let prefix = literal_prefix(glob);
    let rest = glob[prefix.len()..].trim_start_matches('/');
    rest.is_empty() || rest == "**" || rest == "**/*"
}

/// Whether `path` is `prefix` or lies below it (`""` is the root, above everything).
fn at_or_below(path: &str, prefix: &str) -> bool {
    prefix.is_empty()
        || path == prefix
        || (path.starts_with(prefix) && path.as_bytes().get(prefix.len()) == Some(&b'/'))
}

/// Whether `glob` matches only entries directly in its literal prefix (`*.d.ts`,
/// `dist/*.js`: no `/` and no `**` after the prefix) while `path` lies strictly below that
/// prefix, so nothing `glob` matches can be at or below `path`.
fn shallow_above(glob: &str, path: &str) -> bool {
    let prefix = literal_prefix(glob);
    let rest = glob[prefix.len()..].trim_start_matches('/');
    let shallow = !rest.is_empty() && !rest.contains('/') && !rest.contains("**");
    if !shallow || path == prefix || !at_or_below(path, prefix) {
        return false;
    }
    let below = relative_to(path, prefix).unwrap_or(path);
    match below.split_once('/') {
        // Two levels or more below: the glob matches nothing there.
        Some(_) => true,
        // One level below: only that entry itself could match.
        None => crate::globs::parse(rest)
            .map(|g| !g.compile_matcher().is_match(below))
            .unwrap_or(false),
    }
}

/// Whether the negation body `negation` takes `glob` back whole: it is the same glob, or it
/// covers the glob's whole literal prefix (`!src/__generated__/**` takes back
/// `src/__generated__/*.ts`).
fn takes_back(negation: &str, glob: &str) -> bool {
    negation == glob
        || (covers_its_prefix(negation)
            && at_or_below(literal_prefix(glob), literal_prefix(negation)))
}

fn root_relative(dir: &str, glob: &str) -> String {
    if dir.is_empty() {
        glob.to_string()
    } else {
        format!("{dir}/{glob}")
    }
}

/// `path` relative to `dir` when it lies in it.
fn relative_to<'a>(path: &'a str, dir: &str) -> Option<&'a str> {
    if dir.is_empty() {
        Some(path)
    } else if path == dir {
        Some("")
    } else {
        path.strip_prefix(dir)?.strip_prefix('/')
    }
}

/// One glob list of a task, root-relative, split into positive entries and negations.
#[derive(Debug, Default)]
struct Globs {
    /// (root-relative, as written).
    positive: Vec<(String, String)>,
    /// Root-relative negation bodies.
    negations: Vec<String>,
}

impl Globs {
    fn add(&mut self, dir: &str, entries: &[String]) {
        for entry in entries {
            match entry.strip_prefix('!') {
                Some(body) => self.negations.push(root_relative(dir, body)),
                None => self
                    .positive
                    .push((root_relative(dir, entry), entry.clone())),
            }
        }
    }

    fn take_back(&self, glob: &str) -> bool {
        self.negations.iter().any(|n| takes_back(n, glob))
    }
}

/// A task with a `cache` table, its globs made root-relative.
struct Cached<'w> {
    id: TaskId,
    dir: &'w str,
    outputs: Globs,
    inputs: Globs,
    workspace_inputs: Globs,
    /// Where each glob was written.
    locations: &'w crate::config::Locations<(String, String)>,
}

/// Every cached task, sorted by task id.
fn cached_tasks(workspace: &Workspace) -> Vec<Cached<'_>> {
    let mut tasks = Vec::new();
    for project in &workspace.projects {
        for (name, task) in &project.config.tasks {
            let Some(cache) = &task.cache else { continue };
            let mut cached = Cached {
                id: TaskId::new(&project.name, name),
                dir: &project.dir,
                outputs: Globs::default(),
                inputs: Globs::default(),
                workspace_inputs: Globs::default(),
                locations: &cache.locations,
            };
            cached
                .outputs
                .add(&project.dir, cache.outputs.as_deref().unwrap_or_default());
            cached.outputs.add("", &cache.workspace_outputs);
            cached
                .inputs
                .add(&project.dir, cache.inputs.as_deref().unwrap_or_default());
            cached.workspace_inputs.add("", &cache.workspace_inputs);
            tasks.push(cached);
        }
    }
    tasks.sort_by(|a, b| a.id.cmp(&b.id));
    tasks
}

/// GRAPH-8: two tasks whose outputs name the same path, or where one covers the whole tree
/// at or above the other's literal prefix (unless a negation takes the lower glob back).
fn overlapping_outputs(tasks: &[Cached<'_>]) -> Vec<Diagnostic> {
    // Positive output globs by literal prefix: (task, glob index).
    let mut by_prefix: BTreeMap<&str, Vec<(usize, usize)>> = BTreeMap::new();
    for (t, task) in tasks.iter().enumerate() {
        for (g, (glob, _)) in task.outputs.positive.iter().enumerate() {
            by_prefix
                .entry(literal_prefix(glob))
                .or_default()
                .push((t, g));
        }
    }
    // (lower task, higher task) → the path they both write under, as shown.
    let mut pairs: BTreeMap<(usize, usize), String> = BTreeMap::new();
    for (t, task) in tasks.iter().enumerate() {
        for (upper, _) in &task.outputs.positive {
            let prefix = literal_prefix(upper);
            let candidates: Vec<(usize, usize)> = if covers_its_prefix(upper) {
                below(&by_prefix, prefix)
            } else {
                by_prefix.get(prefix).cloned().unwrap_or_default()
            };
            for (u, h) in candidates {
                let other = &tasks[u];
                let lower = &other.outputs.positive[h].0;
                if u == t || !(lower == upper || covers_its_prefix(upper)) {
                    continue;
                }
                if task.outputs.take_back(lower) || other.outputs.take_back(lower) {
                    continue;
                }
                let key = (t.min(u), t.max(u));
                pairs
                    .entry(key)
                    .or_insert_with(|| shown_under(task, other, upper, lower));
            }
        }
    }
    pairs
        .into_iter()
        .map(|((a, b), under)| {
            Diagnostic::new(format!(
                "`{}` and `{}` both declare outputs under `{under}`",
                tasks[a].id, tasks[b].id
            ))
            .hint("give each its own directory, or let one task write both")
        })
        .collect()
}

/// The entries whose literal prefix is `prefix` or lies below it.
fn below(by_prefix: &BTreeMap<&str, Vec<(usize, usize)>>, prefix: &str) -> Vec<(usize, usize)> {
    if prefix.is_empty() {
        return by_prefix.values().flatten().copied().collect();
    }
    let mut found: Vec<(usize, usize)> = by_prefix.get(prefix).cloned().unwrap_or_default();
    // Every path that starts with `prefix/` sorts between `prefix/` and `prefix0` ('0' follows
    // '/').
    let start = format!("{prefix}/");
    let end = format!("{prefix}0");
    for (_, entries) in by_prefix.range(start.as_str()..end.as_str()) {
        found.extend(entries.iter().copied());
    }
    found
}

/// The path both tasks write under: the upper glob's literal prefix, project-relative when
/// both tasks belong to the project that holds it, else root-relative.
fn shown_under(
    upper_task: &Cached<'_>,
    lower_task: &Cached<'_>,
    upper: &str,
    lower: &str,
) -> String {
    let prefix = literal_prefix(upper);
    let same_project = upper_task.id.project == lower_task.id.project;
    let path = match relative_to(prefix, upper_task.dir) {
        Some(rel) if same_project && !rel.is_empty() => rel,
        _ => prefix,
    };
    if path.is_empty() {
        "./".to_string()
    } else if upper == lower && prefix == upper {
        path.to_string()
    } else {
        format!("{path}/")
    }
}

/// GRAPH-9: an input glob whose literal prefix nests with the literal prefix of another
/// task's output glob could match those outputs, unless a negation of the same list takes the
/// output glob back, or git ignores the outputs' directory (a glob never selects an ignored
/// file; a literal input naming one does). `inputs` are compared with the tasks of the same
/// project, `workspace-inputs` with every task. One problem per input glob where it was
/// written: a template's glob applied to many projects is one problem, naming what it meets.
fn inputs_reaching_outputs(
    tasks: &[Cached<'_>],
    is_ignored: &dyn Fn(&str) -> bool,
) -> Vec<Diagnostic> {
    // `inputs` only meet the outputs of their own project's tasks, so only those are compared:
    // the check stays linear in the number of projects (PERF-1), not quadratic in tasks.
    let mut by_project: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (t, task) in tasks.iter().enumerate() {
        by_project
            .entry(task.id.project.as_str())
            .or_default()
            .push(t);
    }
    let mut ignored: BTreeMap<String, bool> = BTreeMap::new();
    let mut meetings = Vec::new();
    for (t, task) in tasks.iter().enumerate() {
        let wide = !task.workspace_inputs.positive.is_empty();
        let others: Vec<usize> = if wide {
            (0..tasks.len()).collect()
        } else {
            by_project[task.id.project.as_str()].clone()
        };
        for o in others.into_iter().filter(|&o| o != t) {
            let other = &tasks[o];
            let mut ignored_prefix = |prefix: &str| {
                *ignored
                    .entry(prefix.to_string())
                    .or_insert_with(|| !prefix.is_empty() && is_ignored(prefix))
            };
            if other.id.project == task.id.project {
                meetings.extend(reaching(task, other, List::Inputs, &mut ignored_prefix));
            }
            if wide {
                meetings.extend(reaching(
                    task,
                    other,
                    List::WorkspaceInputs,
                    &mut ignored_prefix,
                ));
            }
        }
    }
    group(meetings)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum List {
    Inputs,
    WorkspaceInputs,
}

impl List {
    fn key(self) -> &'static str {
        match self {
            List::Inputs => "inputs",
            List::WorkspaceInputs => "workspace-inputs",
        }
    }

    fn what(self) -> &'static str {
        match self {
            List::Inputs => "input",
            List::WorkspaceInputs => "workspace input",
        }
    }
}

/// One input glob of a task that can match one output glob of another task.
struct Meeting {
    at: Option<Location>,
    task: TaskId,
    list: List,
    /// The input glob as written.
    input: String,
    other: TaskId,
    /// The output glob, relative to the input list's base when it lies there.
    shown: String,
    hint: String,
}

fn reaching(
    task: &Cached<'_>,
    other: &Cached<'_>,
    list: List,
    ignored: &mut dyn FnMut(&str) -> bool,
) -> Vec<Meeting> {
    let (inputs, base) = match list {
        List::Inputs => (&task.inputs, task.dir),
        List::WorkspaceInputs => (&task.workspace_inputs, ""),
    };
    let mut found = Vec::new();
    for (output, _) in &other.outputs.positive {
        if inputs.take_back(output) {
            continue;
        }
        let output_prefix = literal_prefix(output);
        let reached = inputs.positive.iter().find(|(input, _)| {
            let input_prefix = literal_prefix(input);
            let nests = (at_or_below(input_prefix, output_prefix)
                && !shallow_above(output, input_prefix))
                || (at_or_below(output_prefix, input_prefix)
                    && !shallow_above(input, output_prefix));
            // A literal input selects an ignored file it names; a wildcard never does.
            let literal = input_prefix == input.as_str();
            nests && (literal || !ignored(output_prefix))
        });
        let Some((_, input)) = reached else { continue };
        let shown = relative_to(output, base).unwrap_or(output).to_string();
        let hint = match relative_to(output_prefix, base) {
            Some(_) if covers_its_prefix(output) => Some(format!("!{shown}")),
            Some("") => Some("!**".to_string()),
            Some(prefix) => Some(format!("!{prefix}/**")),
            None => None,
        };
        let hint = match hint {
            Some(negation) => format!(
                "add \"{negation}\" to its {}, or set [workspace.rules] upfront-keys = false",
                list.key()
            ),
            None => "narrow its inputs, or set [workspace.rules] upfront-keys = false".to_string(),
        };
        found.push(Meeting {
            at: task
                .locations
                .get(&(list.key().to_string(), input.clone()))
                .cloned(),
            task: task.id.clone(),
            list,
            input: input.clone(),
            other: other.id.clone(),
            shown,
            hint,
        });
    }
    found
}

/// One problem per input glob where it was written (or per task and glob when vx does not
/// know where), naming the outputs it meets: the first three, and how many more.
fn group(meetings: Vec<Meeting>) -> Vec<Diagnostic> {
    type Key = (Option<Location>, Option<(TaskId, List)>, String);
    let mut groups: BTreeMap<Key, Vec<Meeting>> = BTreeMap::new();
    for m in meetings {
        let owner = m.at.is_none().then(|| (m.task.clone(), m.list));
        groups
            .entry((m.at.clone(), owner, m.input.clone()))
            .or_default()
            .push(m);
    }
    let mut problems = Vec::new();
    for ((at, _, input), meetings) in groups {
        let first = &meetings[0];
        let mut tasks: Vec<&TaskId> = meetings.iter().map(|m| &m.task).collect();
        tasks.dedup();
        let met: Vec<String> = meetings
            .iter()
            .map(|m| format!("`{}` ({})", m.other, m.shown))
            .collect();
        let shown_met = if met.len() > 3 {
            format!("{} and {} more", met[..3].join(", "), met.len() - 3)
        } else {
            met.join(", ")
        };
        let message = if tasks.len() == 1 {
            format!(
                "`{}` {} `{input}` can match outputs of {shown_met}",
                tasks[0],
                first.list.what()
            )
        } else {
            format!(
                "{} `{input}` of {} tasks can match outputs of {shown_met}",
                first.list.what(),
                tasks.len()
            )
        };
        let mut d = match at {
            Some(at) => Diagnostic::at(at, message),
            None => Diagnostic::new(message),
        };
        d = d.hint(first.hint.clone());
        problems.push(d);
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CacheConfig, RulesConfig};
    use crate::testing::{workspace, P};

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// Gives `project#task` a cache table with these globs.
    fn cache(ws: &mut Workspace, id: &str, inputs: &[&str], outputs: &[&str]) {
        let id = TaskId::parse(id).unwrap();
        let index = ws.by_name[&id.project];
        let task = ws.projects[index].config.tasks.get_mut(&id.task).unwrap();
        task.cache = Some(Box::new(CacheConfig {
            inputs: Some(strings(inputs)),
            outputs: Some(strings(outputs)),
            ..CacheConfig::default()
        }));
    }

    fn two_projects() -> Workspace {
        workspace(&[
            P {
                name: "a",
                deps: &[],
                tags: &[],
                tasks: &[
                    ("build", Some("x"), &[]),
                    ("bundle", Some("x"), &[]),
                    ("test", Some("x"), &[]),
                ],
            },
            P {
                name: "b",
                deps: &[],
                tags: &[],
                tasks: &[("build", Some("x"), &[])],
            },
        ])
    }

    fn shown(problems: &[Diagnostic]) -> Vec<String> {
        problems
            .iter()
            .map(|d| format!("{d} | {}", d.hints.join(" | ")))
            .collect()
    }

    #[test]
    fn literal_prefixes_stop_at_the_first_wildcard_segment() {
        assert_eq!(literal_prefix("src/**"), "src");
        assert_eq!(literal_prefix("dist/a.js"), "dist/a.js");
        assert_eq!(literal_prefix("**"), "");
        assert_eq!(literal_prefix("*.js"), "");
        assert_eq!(literal_prefix("app/[id]/{a,b}/x"), "app/[id]");
        assert_eq!(literal_prefix("src/a?.ts"), "src");
        assert!(covers_its_prefix("dist"));
        assert!(covers_its_prefix("dist/**/*"));
        assert!(!covers_its_prefix("dist/*.js"));
    }

    #[test]
    fn a_tree_overlaps_a_glob_below_it() {
        let mut ws = two_projects();
        cache(&mut ws, "a#build", &["src/**"], &["dist/**"]);
        cache(&mut ws, "a#bundle", &["src/**"], &["dist/types/**"]);
        assert_eq!(
            shown(&overlapping_outputs(&cached_tasks(&ws))),
            [
                "`a#build` and `a#bundle` both declare outputs under `dist/` | give each its own \
              directory, or let one task write both"
            ]
        );
    }

    #[test]
    fn globs_that_merely_might_overlap_are_allowed() {
        let mut ws = two_projects();
        cache(&mut ws, "a#build", &["src/**"], &["dist/*.js"]);
        cache(&mut ws, "a#bundle", &["src/**"], &["dist/*.css"]);
        cache(&mut ws, "b#build", &["src/**"], &["dist/**"]);
        assert!(
            check_outputs(&ws, &|_| false).is_empty(),
            "{:?}",
            check_outputs(&ws, &|_| false)
        );
    }

    #[test]
    fn the_same_glob_and_a_literal_directory_overlap() {
        let mut ws = two_projects();
        cache(&mut ws, "a#build", &["src/**"], &["out/*.js"]);
        cache(&mut ws, "a#bundle", &["src/**"], &["out/*.js"]);
        cache(&mut ws, "a#test", &["src/**"], &["out"]);
        assert_eq!(
            check_outputs(&ws, &|_| false)
                .iter()
                .map(|d| d.message.as_str())
                .collect::<Vec<_>>(),
            [
                "`a#build` and `a#bundle` both declare outputs under `out/`",
                "`a#build` and `a#test` both declare outputs under `out/`",
                "`a#bundle` and `a#test` both declare outputs under `out/`",
            ]
        );
    }

    #[test]
    fn a_negation_that_takes_back_the_lower_prefix_removes_the_overlap() {
        let mut ws = two_projects();
        cache(
            &mut ws,
            "a#build",
            &["src/**"],
            &["dist/**", "!dist/types/**"],
        );
        cache(&mut ws, "a#bundle", &["src/**"], &["dist/types/**"]);
        assert!(check_outputs(&ws, &|_| false).is_empty());
        cache(
            &mut ws,
            "a#build",
            &["src/**"],
            &["dist/**", "!dist/types/*.d.ts"],
        );
        assert_eq!(check_outputs(&ws, &|_| false).len(), 1);
    }

    #[test]
    fn workspace_outputs_are_compared_root_relative() {
        let mut ws = two_projects();
        cache(&mut ws, "b#build", &["src/**"], &["dist/**"]);
        cache(&mut ws, "a#build", &["src/**"], &[]);
        let index = ws.by_name["a"];
        let task = ws.projects[index].config.tasks.get_mut("build").unwrap();
        task.cache.as_mut().unwrap().workspace_outputs = strings(&["packages/b/**"]);
        assert_eq!(
            check_outputs(&ws, &|_| false)[0].message,
            "`a#build` and `b#build` both declare outputs under `packages/b/`"
        );
    }

    #[test]
    fn uncached_tasks_are_not_checked() {
        let mut ws = two_projects();
        cache(&mut ws, "a#build", &["**"], &["dist/**"]);
        assert!(check_outputs(&ws, &|_| false).is_empty());
    }

    #[test]
    fn a_glob_of_one_directory_level_does_not_reach_deeper_globs() {
        let mut ws = two_projects();
        cache(&mut ws, "a#build", &["src/**/*.ts"], &["*.d.ts", "dist/**"]);
        cache(&mut ws, "a#test", &["src/**/*.ts", "test/unit/**"], &[]);
        assert!(
            check_outputs(&ws, &|_| false).is_empty(),
            "{:?}",
            check_outputs(&ws, &|_| false)
        );
        // `src/*.ts` matches `src/gen.ts`; `*.d.ts` could be a file named `types.d.ts`.
        cache(&mut ws, "a#test", &["**/*.ts", "types.d.ts/**"], &[]);
        assert_eq!(check_outputs(&ws, &|_| false).len(), 1);
    }

    #[test]
    fn an_input_reaching_another_tasks_outputs_is_refused() {
        let mut ws = two_projects();
        cache(
            &mut ws,
            "a#build",
            &["schema.graphql"],
            &["src/__generated__/**"],
        );
        cache(&mut ws, "a#test", &["src/**"], &[]);
        assert_eq!(
            shown(&check_outputs(&ws, &|_| false)),
            [
                "`a#test` input `src/**` can match outputs of `a#build` (src/__generated__/**) | \
              add \"!src/__generated__/**\" to its inputs, or set [workspace.rules] \
              upfront-keys = false"
            ]
        );
        cache(&mut ws, "a#test", &["src/**", "!src/__generated__/**"], &[]);
        assert!(check_outputs(&ws, &|_| false).is_empty());
    }

    #[test]
    fn inputs_reach_only_their_own_project_and_workspace_inputs_reach_all() {
        let mut ws = two_projects();
        cache(&mut ws, "b#build", &["src/**"], &["dist/**"]);
        cache(&mut ws, "a#build", &["**"], &["out/**"]);
        assert!(check_outputs(&ws, &|_| false).is_empty());
        let index = ws.by_name["a"];
        let task = ws.projects[index].config.tasks.get_mut("build").unwrap();
        task.cache.as_mut().unwrap().workspace_inputs = strings(&["packages/**"]);
        assert_eq!(
            shown(&check_outputs(&ws, &|_| false)),
            [
                "`a#build` workspace input `packages/**` can match outputs of `b#build` \
              (packages/b/dist/**) | add \"!packages/b/dist/**\" to its workspace-inputs, or \
              set [workspace.rules] upfront-keys = false"
            ]
        );
    }

    #[test]
    fn default_inputs_pass_by_construction_and_the_rule_can_be_turned_off() {
        let mut ws = two_projects();
        cache(
            &mut ws,
            "a#build",
            &["**", "!dist/*.js", "!gen/**"],
            &["dist/*.js"],
        );
        cache(
            &mut ws,
            "a#bundle",
            &["**", "!dist/*.js", "!gen/**"],
            &["gen/**"],
        );
        assert!(
            check_outputs(&ws, &|_| false).is_empty(),
            "{:?}",
            check_outputs(&ws, &|_| false)
        );
        cache(&mut ws, "a#test", &["src/*.ts"], &[]);
        cache(&mut ws, "a#bundle", &["**"], &["src/gen.ts"]);
        assert_eq!(
            check_outputs(&ws, &|_| false).len(),
            3,
            "{:?}",
            check_outputs(&ws, &|_| false)
        );
        ws.settings.rules = Some(RulesConfig {
            upfront_keys: Some(false),
            ..RulesConfig::default()
        });
        assert!(check_outputs(&ws, &|_| false).is_empty());
    }
}
