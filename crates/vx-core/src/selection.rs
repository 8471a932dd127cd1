//! Project selection: `--all`, the `--filter` language and how `--affected` joins them (SEL-1,
//! SEL-2, CLI-7).
//!
//! A filter is parsed into a [`Filter`] (exclusion flag, walk direction and a base matcher) and
//! evaluated against the workspace's projects. Walks follow project edges (DISC-5) and
//! cross-project `depends-on` edges. Includes are unioned, then excludes are subtracted.
//! A changed-since filter (`[<ref>]`, SEL-3) is evaluated against the projects changed since
//! its ref, which the caller asks git for beforehand ([`Filter::changed_since`]).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use globset::{GlobBuilder, GlobMatcher};

use crate::affected::{check_ref, RefSite};
use crate::diagnostic::Diagnostic;
use crate::graph::{wildcard_match, TaskTable};
use crate::id::ROOT_PROJECT;
use crate::project::Workspace;
use crate::suggest::did_you_mean;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Base {
    Name(String),
    Dir(String),
    Root,
    Tag(String),
    /// `[<ref>]`, `<p>[<ref>]`, `<p>...[<ref>]`: projects changed since `reference`, narrowed
    /// by `narrow`, with their dependants when `dependants` (SEL-1).
    Changed {
        reference: String,
        narrow: Option<Box<Filter>>,
        dependants: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Walk {
    dependencies: bool,
    dependants: bool,
    /// `^`: only the walked projects, without the match.
    exclude_match: bool,
    /// `...<p>...`: the dependants and all their dependencies.
    dependants_then_dependencies: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub text: String,
    pub exclude: bool,
    base: Base,
    walk: Walk,
}

/// Parses one `--filter` pattern.
pub fn parse_filter(text: &str) -> Result<Filter, Diagnostic> {
    let original = text;
    let (exclude, mut rest) = match text.strip_prefix('!') {
        Some(r) => (true, r),
        None => (false, text),
    };
    if let Some(base) = parse_changed(original, rest)? {
        return Ok(Filter {
            text: original.to_string(),
            exclude,
            base,
            walk: Walk::default(),
        });
    }
    let mut walk = Walk::default();
    if let Some(r) = rest.strip_prefix("...") {
        rest = r;
        walk.dependants = true;
        if let Some(r) = rest.strip_prefix('^') {
            rest = r;
            walk.exclude_match = true;
        }
    }
    if let Some(r) = rest.strip_suffix("^...") {
        if walk.dependants {
            return Err(Diagnostic::new(format!("invalid filter `{original}`")));
        }
        rest = r;
        walk.dependencies = true;
        walk.exclude_match = true;
    } else if let Some(r) = rest.strip_suffix("...") {
        rest = r;
        if walk.dependants {
            walk.dependants_then_dependencies = true;
        } else {
            walk.dependencies = true;
        }
    }
    if rest.is_empty() {
        return Err(Diagnostic::new(format!("invalid filter `{original}`"))
            .hint("write a project name, `./<dir>`, `tag:<name>` or `//`"));
    }
    let base = if rest == ROOT_PROJECT {
        Base::Root
    } else if let Some(tag) = rest.strip_prefix("tag:") {
        Base::Tag(tag.to_string())
    } else if let Some(dir) = rest.strip_prefix("./") {
        Base::Dir(normalize_dir(dir))
    } else if let Some(dir) = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
        Base::Dir(normalize_dir(dir.trim_start_matches("./")))
    } else {
        Base::Name(rest.to_string())
    };
    Ok(Filter {
        text: original.to_string(),
        exclude,
        base,
        walk,
    })
}

/// `[<ref>]`, `<p>[<ref>]` and `<p>...[<ref>]` (SEL-1); `None` for every other pattern.
fn parse_changed(original: &str, rest: &str) -> Result<Option<Base>, Diagnostic> {
    // `./app/[id]` is a directory whose name has brackets.
    if !rest.ends_with(']') || rest.starts_with("./") {
        return Ok(None);
    }
    let Some(open) = rest.rfind('[') else {
        return Ok(None);
    };
    let text = &rest[open + 1..rest.len() - 1];
    let reference = check_ref(text).map_err(|p| p.diagnostic(text, RefSite::Filter(original)))?;
    let mut before = &rest[..open];
    let dependants = match before.strip_suffix("...") {
        Some(b) => {
            before = b;
            true
        }
        None => false,
    };
    let narrow = if before.is_empty() {
        None
    } else {
        let inner = parse_filter(before)?;
        if inner.exclude || matches!(inner.base, Base::Changed { .. }) {
            return Err(Diagnostic::new(format!("invalid filter `{original}`"))
                .hint("write `[<ref>]`, `<p>[<ref>]` or `<p>...[<ref>]`"));
        }
        Some(Box::new(inner))
    };
    Ok(Some(Base::Changed {
        reference,
        narrow,
        dependants,
    }))
}

impl Filter {
    /// The ref of a changed-since filter (`[<ref>]`), as git should resolve it.
    pub fn changed_since(&self) -> Option<&str> {
        match &self.base {
            Base::Changed { reference, .. } => Some(reference),
            _ => None,
        }
    }
}

fn normalize_dir(dir: &str) -> String {
    dir.trim_end_matches('/').to_string()
}

/// Project adjacency used by walks: project edges plus cross-project `depends-on` edges.
pub struct ProjectWalks {
    dependencies: Vec<BTreeSet<usize>>,
    dependants: Vec<BTreeSet<usize>>,
}

impl ProjectWalks {
    pub fn new(workspace: &Workspace, table: &TaskTable) -> ProjectWalks {
        let n = workspace.projects.len();
        let mut dependencies = vec![BTreeSet::new(); n];
        let mut dependants = vec![BTreeSet::new(); n];
        let mut add = |a: usize, b: usize| {
            if a != b {
                dependencies[a].insert(b);
                dependants[b].insert(a);
            }
        };
        for (i, project) in workspace.projects.iter().enumerate() {
            for edge in &project.deps {
                if let Some(&j) = workspace.by_name.get(&edge.to) {
                    add(i, j);
                }
            }
        }
        for (id, edges) in &table.edges {
            let a = workspace.by_name[&id.project];
            for edge in edges {
                add(a, workspace.by_name[&edge.to.project]);
            }
        }
        ProjectWalks {
            dependencies,
            dependants,
        }
    }

    fn closure(&self, start: &BTreeSet<usize>, up: bool) -> BTreeSet<usize> {
        let adjacency = if up {
            &self.dependants
        } else {
            &self.dependencies
        };
        let mut seen = start.clone();
        let mut queue: VecDeque<usize> = start.iter().copied().collect();
        while let Some(p) = queue.pop_front() {
            for &q in &adjacency[p] {
                if seen.insert(q) {
                    queue.push_back(q);
                }
            }
        }
        seen
    }
}

/// Outcome of selection: project indices, plus warnings for filters that matched nothing
/// beside others that did (SEL-2).
#[derive(Debug, Default)]
pub struct Selection {
    /// What `--all` and the including filters selected, minus the excludes.
    pub projects: BTreeSet<usize>,
    /// What the excluding filters removed; under `--affected` the affected tasks of these
    /// projects are left out too.
    pub excluded: BTreeSet<usize>,
    pub warnings: Vec<String>,
}

/// The selection flags of a run (CLI-7).
#[derive(Debug, Clone, Copy)]
pub struct Includes<'a> {
    pub all: bool,
    pub filters: &'a [Filter],
    /// `--affected` is given: an include of its own (task-level, SEL-5), so excludes alone no
    /// longer mean "every project".
    pub affected: bool,
    /// The projects changed since each ref of a changed-since filter (SEL-3), by ref.
    pub changed: &'a BTreeMap<String, BTreeSet<usize>>,
}

/// Evaluates `--all` and the filters (CLI-7).
pub fn select(
    workspace: &Workspace,
    walks: &ProjectWalks,
    flags: &Includes<'_>,
) -> Result<Selection, Diagnostic> {
    let Includes {
        all,
        filters,
        affected,
        changed,
    } = *flags;
    let mut includes: BTreeSet<usize> = BTreeSet::new();
    let mut excludes: BTreeSet<usize> = BTreeSet::new();
    let mut empty: Vec<Diagnostic> = Vec::new();
    let mut matched_any = false;
    // `[workspace] exclude-from-all`: left out of "every project" unless a filter names them.
    let outside: BTreeSet<usize> = (0..workspace.projects.len())
        .filter(|&i| workspace.projects[i].outside_all)
        .collect();
    if all || (!affected && filters.iter().all(|f| f.exclude)) {
        includes.extend((0..workspace.projects.len()).filter(|i| !outside.contains(i)));
    }
    let mut named = BTreeSet::new();
    for filter in filters {
        match evaluate(workspace, walks, filter, changed) {
            Ok(set) => {
                matched_any = true;
                if filter.exclude {
                    excludes.extend(set);
                } else {
                    named.extend(set.iter().copied());
                    includes.extend(set);
                }
            }
            Err(d) => empty.push(d),
        }
    }
    if affected {
        excludes.extend(outside.difference(&named).copied());
    }
    if !matched_any && !empty.is_empty() {
        return Err(empty.swap_remove(0));
    }
    let mut selection = Selection {
        warnings: empty.into_iter().map(|d| d.message).collect(),
        ..Selection::default()
    };
    // `--affected` includes every project's affected tasks (SEL-5).
    let before = if affected {
        workspace.projects.len()
    } else {
        includes.len()
    };
    selection.projects = includes.difference(&excludes).copied().collect();
    let kept = if affected {
        workspace.projects.len() - excludes.len()
    } else {
        selection.projects.len()
    };
    selection.excluded = excludes;
    if kept == 0 && before > 0 {
        let names: Vec<String> = filters
            .iter()
            .filter(|f| f.exclude)
            .map(|f| format!("`{}`", f.text))
            .collect();
        return Err(Diagnostic::new(format!(
            "the excludes ({}) removed every project the includes selected",
            names.join(", ")
        )));
    }
    Ok(selection)
}

fn evaluate(
    workspace: &Workspace,
    walks: &ProjectWalks,
    filter: &Filter,
    changed: &BTreeMap<String, BTreeSet<usize>>,
) -> Result<BTreeSet<usize>, Diagnostic> {
    if let Base::Changed {
        reference,
        narrow,
        dependants,
    } = &filter.base
    {
        return evaluate_changed(
            workspace,
            walks,
            filter,
            changed,
            reference,
            narrow,
            *dependants,
        );
    }
    let matched = base_matches(workspace, filter)?;
    let walk = filter.walk;
    let mut result = BTreeSet::new();
    if walk.dependants_then_dependencies {
        let up = walks.closure(&matched, true);
        result = walks.closure(&up, false);
    } else {
        if walk.dependencies {
            result.extend(walks.closure(&matched, false));
        }
        if walk.dependants {
            result.extend(walks.closure(&matched, true));
        }
        if !walk.dependencies && !walk.dependants {
            result.extend(matched.iter().copied());
        }
        if walk.exclude_match {
            for m in &matched {
                result.remove(m);
            }
        }
    }
    if result.is_empty() {
        let names: Vec<&str> = matched
            .iter()
            .map(|&i| workspace.projects[i].name.as_str())
            .collect();
        let what = if walk.dependencies {
            "depends on nothing".to_string()
        } else {
            format!("no project depends on `{}`", names.join("`, `"))
        };
        let what = if walk.dependencies {
            format!("`{}` {what}", names.join("`, `"))
        } else {
            what
        };
        return Err(Diagnostic::new(format!(
            "`{}` selects nothing: {what}",
            filter.text
        )));
    }
    Ok(result)
}

/// SEL-1: the projects changed since `reference`, narrowed, then with their dependants.
fn evaluate_changed(
    workspace: &Workspace,
    walks: &ProjectWalks,
    filter: &Filter,
    changed: &BTreeMap<String, BTreeSet<usize>>,
    reference: &str,
    narrow: &Option<Box<Filter>>,
    dependants: bool,
) -> Result<BTreeSet<usize>, Diagnostic> {
    let since = changed.get(reference).cloned().unwrap_or_default();
    let mut result = match narrow {
        None => since.clone(),
        Some(inner) => {
            let within = evaluate(workspace, walks, inner, changed)?;
            since.intersection(&within).copied().collect()
        }
    };
    if dependants {
        result = walks.closure(&result, true);
    }
    if result.is_empty() {
        let d = Diagnostic::new(format!("no project matches filter `{}`", filter.text));
        let names: Vec<&str> = since
            .iter()
            .map(|&i| workspace.projects[i].name.as_str())
            .collect();
        return Err(if names.is_empty() {
            d.hint(format!("no project changed since `{reference}`"))
        } else if names.len() > 8 {
            d.hint(format!(
                "changed since `{reference}`: {}, and {} more",
                names[..8].join(", "),
                names.len() - 8
            ))
        } else {
            d.hint(format!("changed since `{reference}`: {}", names.join(", ")))
        });
    }
    Ok(result)
}

fn base_matches(workspace: &Workspace, filter: &Filter) -> Result<BTreeSet<usize>, Diagnostic> {
    let projects = &workspace.projects;
    let found: BTreeSet<usize> = match &filter.base {
        Base::Root => projects
            .iter()
            .position(|p| p.name == ROOT_PROJECT)
            .into_iter()
            .collect(),
        Base::Name(pattern) => {
            let exact: BTreeSet<usize> = (0..projects.len())
                .filter(|&i| wildcard_match(pattern, &projects[i].name))
                .collect();
            if exact.is_empty() && !pattern.contains('*') {
                let suffix = format!("/{pattern}");
                let scoped: Vec<usize> = (0..projects.len())
                    .filter(|&i| {
                        projects[i].name.starts_with('@') && projects[i].name.ends_with(&suffix)
                    })
                    .collect();
                if scoped.len() == 1 {
                    scoped.into_iter().collect()
                } else {
                    exact
                }
            } else {
                exact
            }
        }
        Base::Tag(pattern) => (0..projects.len())
            .filter(|&i| {
                projects[i]
                    .config
                    .tags
                    .iter()
                    .any(|t| wildcard_match(pattern, t))
            })
            .collect(),
        // Evaluated by `evaluate_changed`.
        Base::Changed { .. } => BTreeSet::new(),
        Base::Dir(dir) => {
            if dir.contains(['*', '?', '[', '{']) {
                let matcher = dir_glob(dir).map_err(|e| {
                    Diagnostic::new(format!("invalid filter `{}`: {e}", filter.text))
                })?;
                let prefix = dir.strip_suffix("/**");
                (0..projects.len())
                    .filter(|&i| {
                        let d = &projects[i].dir;
                        matcher.is_match(d) || prefix == Some(d.as_str())
                    })
                    .collect()
            } else if let Some(i) = projects.iter().position(|p| &p.dir == dir) {
                BTreeSet::from([i])
            } else {
                let under = format!("{dir}/");
                (0..projects.len())
                    .filter(|&i| dir.is_empty() || projects[i].dir.starts_with(&under))
                    .collect()
            }
        }
    };
    if found.is_empty() {
        return Err(no_match(workspace, filter));
    }
    Ok(found)
}

fn dir_glob(pattern: &str) -> Result<GlobMatcher, globset::Error> {
    Ok(GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()?
        .compile_matcher())
}

fn no_match(workspace: &Workspace, filter: &Filter) -> Diagnostic {
    let d = Diagnostic::new(format!("no project matches filter `{}`", filter.text));
    match &filter.base {
        Base::Tag(tag) => {
            let tags: BTreeMap<&str, ()> = workspace
                .projects
                .iter()
                .flat_map(|p| p.config.tags.iter().map(|t| (t.as_str(), ())))
                .collect();
            match did_you_mean(tag, tags.keys().copied()) {
                Some(s) => d.hint(format!("did you mean `tag:{s}`?")),
                None if tags.is_empty() => d.hint("no project has tags"),
                None => d.hint(format!(
                    "tags: {}",
                    tags.keys().copied().collect::<Vec<_>>().join(", ")
                )),
            }
        }
        Base::Name(name) => {
            let names = workspace.projects.iter().map(|p| p.name.as_str());
            // A typo of an unscoped name (`wbe` for `@acme/web`) is offered as the unscoped
            // name a filter accepts, when only one project has it.
            let unscoped = || {
                let short: Vec<&str> = workspace
                    .projects
                    .iter()
                    .filter(|p| p.name.starts_with('@'))
                    .filter_map(|p| Some(p.name.split_once('/')?.1))
                    .collect();
                did_you_mean(name, short.iter().copied())
                    .filter(|s| short.iter().filter(|t| *t == s).count() == 1)
            };
            match did_you_mean(name, names).or_else(unscoped) {
                Some(s) => d.hint(format!("did you mean `{s}`?")),
                None => d.hint(project_listing(workspace)),
            }
        }
        _ => d.hint(project_listing(workspace)),
    }
}

fn project_listing(workspace: &Workspace) -> String {
    let names: Vec<&str> = workspace
        .projects
        .iter()
        .take(8)
        .map(|p| p.name.as_str())
        .collect();
    let more = workspace.projects.len().saturating_sub(8);
    if more > 0 {
        format!("projects: {}, and {more} more", names.join(", "))
    } else {
        format!("projects: {}", names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{workspace, P};

    fn ws() -> Workspace {
        workspace(&[
            P {
                name: "@shop/cart",
                deps: &["lib"],
                tags: &["frontend"],
                tasks: &[],
            },
            P {
                name: "app",
                deps: &["lib"],
                tags: &["frontend", "web"],
                tasks: &[],
            },
            P {
                name: "docs",
                deps: &[],
                tags: &[],
                tasks: &[],
            },
            P {
                name: "lib",
                deps: &["core"],
                tags: &[],
                tasks: &[],
            },
            P {
                name: "core",
                deps: &[],
                tags: &[],
                tasks: &[],
            },
        ])
    }

    fn names(ws: &Workspace, filters: &[&str], all: bool) -> Result<Vec<String>, String> {
        let filters: Vec<Filter> = filters.iter().map(|f| parse_filter(f).unwrap()).collect();
        selected(ws, all, &filters, false, &BTreeMap::new())
    }

    /// The names of the projects a selection picks, or the error as `message / hints`.
    fn selected(
        ws: &Workspace,
        all: bool,
        filters: &[Filter],
        affected: bool,
        changed: &BTreeMap<String, BTreeSet<usize>>,
    ) -> Result<Vec<String>, String> {
        let table = TaskTable::default();
        let walks = ProjectWalks::new(ws, &table);
        let includes = Includes {
            all,
            filters,
            affected,
            changed,
        };
        select(ws, &walks, &includes)
            .map(|s| {
                s.projects
                    .iter()
                    .map(|&i| ws.projects[i].name.clone())
                    .collect()
            })
            .map_err(|d| format!("{} / {:?}", d.message, d.hints))
    }

    #[test]
    fn names_globs_and_scoped_suffixes() {
        let ws = ws();
        assert_eq!(names(&ws, &["app"], false).unwrap(), ["app"]);
        assert_eq!(names(&ws, &["c*"], false).unwrap(), ["core"]);
        assert_eq!(names(&ws, &["cart"], false).unwrap(), ["@shop/cart"]);
        assert_eq!(names(&ws, &["tag:web"], false).unwrap(), ["app"]);
        assert_eq!(names(&ws, &["./packages/app"], false).unwrap(), ["app"]);
        assert_eq!(names(&ws, &["{packages/d*}"], false).unwrap(), ["docs"]);
        assert_eq!(names(&ws, &["./packages"], false).unwrap().len(), 5);
    }

    #[test]
    fn walks_in_both_directions() {
        let ws = ws();
        assert_eq!(names(&ws, &["lib..."], false).unwrap(), ["core", "lib"]);
        assert_eq!(names(&ws, &["lib^..."], false).unwrap(), ["core"]);
        assert_eq!(
            names(&ws, &["...lib"], false).unwrap(),
            ["@shop/cart", "app", "lib"]
        );
        assert_eq!(
            names(&ws, &["...^lib"], false).unwrap(),
            ["@shop/cart", "app"]
        );
        assert_eq!(
            names(&ws, &["...app..."], false).unwrap(),
            ["app", "core", "lib"]
        );
    }

    #[test]
    fn excludes_subtract_after_includes() {
        let ws = ws();
        assert_eq!(names(&ws, &["!docs"], false).unwrap().len(), 4);
        assert_eq!(names(&ws, &["!docs", "app"], false).unwrap(), ["app"]);
        assert_eq!(names(&ws, &["!docs"], true).unwrap().len(), 4);
        let err = names(&ws, &["app", "!app"], false).unwrap_err();
        assert!(
            err.starts_with("the excludes (`!app`) removed every project"),
            "{err}"
        );
    }

    #[test]
    fn errors_suggest_or_list() {
        let ws = ws();
        assert_eq!(
            names(&ws, &["lbi"], false).unwrap_err(),
            "no project matches filter `lbi` / [\"did you mean `lib`?\"]"
        );
        // A typo of a scoped project's unscoped name suggests the unscoped name.
        assert_eq!(
            names(&ws, &["crat"], false).unwrap_err(),
            "no project matches filter `crat` / [\"did you mean `cart`?\"]"
        );
        let err = names(&ws, &["tag:fronted"], false).unwrap_err();
        assert!(err.contains("did you mean `tag:frontend`?"), "{err}");
        let err = names(&ws, &["...^docs"], false).unwrap_err();
        assert_eq!(
            err,
            "`...^docs` selects nothing: no project depends on `docs` / []"
        );
        // A filter that matches nothing beside one that matches is only a warning.
        let table = TaskTable::default();
        let walks = ProjectWalks::new(&ws, &table);
        let filters = [parse_filter("app").unwrap(), parse_filter("nope").unwrap()];
        let includes = Includes {
            all: false,
            filters: &filters,
            affected: false,
            changed: &BTreeMap::new(),
        };
        let selection = select(&ws, &walks, &includes).unwrap();
        assert_eq!(selection.warnings, ["no project matches filter `nope`"]);
    }

    /// Selection with `lib` (index 3) and `docs` (index 2) changed since `main`.
    fn changed_names(
        ws: &Workspace,
        filters: &[&str],
        affected: bool,
    ) -> Result<Vec<String>, String> {
        let filters: Vec<Filter> = filters
            .iter()
            .map(|f| parse_filter(f).map_err(|d| format!("{} / {:?}", d.message, d.hints)))
            .collect::<Result<_, _>>()?;
        let changed = BTreeMap::from([(
            "main".to_string(),
            BTreeSet::from([ws.by_name["lib"], ws.by_name["docs"]]),
        )]);
        selected(ws, false, &filters, affected, &changed)
    }

    #[test]
    fn changed_since_filters_narrow_and_walk_to_dependants() {
        let ws = ws();
        assert_eq!(
            parse_filter("[main]").unwrap().changed_since(),
            Some("main")
        );
        assert_eq!(
            parse_filter("...[main...HEAD]").unwrap().changed_since(),
            Some("main")
        );
        assert_eq!(
            changed_names(&ws, &["[main]"], false).unwrap(),
            ["docs", "lib"]
        );
        assert_eq!(changed_names(&ws, &["lib[main]"], false).unwrap(), ["lib"]);
        assert_eq!(
            changed_names(&ws, &["./packages/l*[main]"], false).unwrap_err(),
            "no project matches filter `./packages/l*[main]` / [\"projects: @shop/cart, app, core, docs, lib\"]"
        );
        assert_eq!(
            changed_names(&ws, &["{packages/l*}[main]"], false).unwrap(),
            ["lib"]
        );
        assert_eq!(
            changed_names(&ws, &["lib...[main]"], false).unwrap(),
            ["@shop/cart", "app", "lib"]
        );
        assert_eq!(
            changed_names(&ws, &["...[main]"], false).unwrap(),
            ["@shop/cart", "app", "docs", "lib"]
        );
        assert_eq!(
            changed_names(&ws, &["![main]"], false).unwrap(),
            ["@shop/cart", "app", "core"]
        );
        assert_eq!(
            changed_names(&ws, &["app[main]"], false).unwrap_err(),
            "no project matches filter `app[main]` / [\"changed since `main`: docs, lib\"]"
        );
        assert_eq!(
            changed_names(&ws, &["[main..next]"], false).unwrap_err(),
            "invalid filter `[main..next]`: the ref `main..next` is a range / [\"write `[main]` instead\"]"
        );
    }

    #[test]
    fn affected_is_an_include_of_its_own() {
        let ws = ws();
        // Excludes alone mean "every project" only without `--affected`.
        assert_eq!(
            changed_names(&ws, &["!docs"], true).unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(changed_names(&ws, &["!docs"], false).unwrap().len(), 4);
        assert_eq!(
            changed_names(&ws, &["app", "!docs"], true).unwrap(),
            ["app"]
        );
        let err = changed_names(&ws, &["!*"], true).unwrap_err();
        assert!(
            err.starts_with("the excludes (`!*`) removed every project"),
            "{err}"
        );
    }
}
