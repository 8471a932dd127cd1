//! INIT-2: turning one `package.json`'s `scripts` into vx tasks.
//!
//! [`map_scripts`] is pure: it takes the scripts and what the package manager would do with
//! them ([`Context`]) and returns the tasks, the scripts it left out, and the TODOs, which
//! `toml` then writes. In order:
//!
//! 1. lifecycle scripts (`install`, `prepare`, `version`, …) are dropped;
//! 2. `pre<x>`/`post<x>` fold into `x` as `<pre> && <x> && <post>`, unless the package
//!    manager would not run them (then they stay tasks of their own);
//! 3. in the workspace root of a monorepo, scripts that drive the whole workspace (`turbo`,
//!    `nx`, `lerna`, `pnpm -r`, `npm run --workspaces`, `yarn workspaces foreach`, or another
//!    root script that does) are left out: `vx run <task> --all` is their replacement;
//! 4. names that are not valid task names are left out with a TODO;
//! 5. each remaining script becomes a task: a group when it only runs other scripts *in
//!    parallel* (`run-p a b`, `npm-run-all --parallel a b`) and gets no edge of its own, else a
//!    command — a chain such as `pnpm gen && pnpm use` keeps its text, so its order, its
//!    stop at the first failure and what waits for upstreams survive (a group would run `gen`
//!    and `use` at once, and only the group would wait for `^build`) —, persistent when it is
//!    a server or a watcher, with `env.define` for the npm
//!    variables it reads and a commented cache suggestion when its output directory can be
//!    guessed; `build` depends on `^build`, `test` and `typecheck` on `build`.

use std::collections::{BTreeMap, BTreeSet};

use super::orchestration::orchestrating_scripts;
pub use super::orchestration::{excluded_directories, included_directories, root_references};
use super::shell::{self, Segment};

/// What the package manager does with this package's scripts.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// `package.json` `name` and `version`, for `$npm_package_name`/`$npm_package_version`.
    pub name: Option<String>,
    pub version: Option<String>,
    /// Why `pre`/`post` scripts are not folded (the package manager would not run them).
    pub hooks_off: Option<String>,
    /// The workspace root of a monorepo: scripts that drive the workspace are left out.
    pub monorepo_root: bool,
    /// Give `build` its `^build` and `test`/`typecheck` their `build` (off where another
    /// runner's configuration says what a script depends on: Nx runs a script with none).
    pub no_edges: bool,
}

/// Why a TODO comment was left; the report groups by this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TodoReason {
    Carried,
    ReadyWhen,
    CacheSuggestion,
    NpmVariable,
    Unmappable,
    /// A task the other tool caches over inputs vx cannot fold: written uncached.
    Uncached,
}

impl TodoReason {
    /// The heading of the group in the report.
    pub fn heading(self) -> &'static str {
        match self {
            TodoReason::Carried => "check what was carried over",
            TodoReason::ReadyWhen => "add ready-when to persistent tasks",
            TodoReason::CacheSuggestion => "check the suggested cache table, then uncomment it",
            TodoReason::NpmVariable => "set npm variables vx does not define",
            TodoReason::Unmappable => "scripts that cannot become tasks",
            TodoReason::Uncached => "tasks left uncached (each TODO says why)",
        }
    }
}

/// One TODO comment, about a task or a left-out script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Todo {
    pub reason: TodoReason,
    /// The task or script it is about.
    pub subject: String,
    /// The comment text after `# TODO: `.
    pub text: String,
}

/// A task as `vx init` writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Task {
    pub name: String,
    /// `None` for a group.
    pub command: Option<String>,
    pub depends_on: Vec<String>,
    pub persistent: bool,
    /// `env.define` entries.
    pub define: BTreeMap<String, String>,
    /// The output globs of the commented cache suggestion, when a directory was guessed.
    pub suggested_outputs: Vec<String>,
    /// Other TODO comments for this task (unset npm variables).
    pub notes: Vec<String>,
}

/// A script that is not a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    pub name: String,
    pub text: String,
    pub why: LeftOutWhy,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeftOutWhy {
    /// It drives the whole workspace (root of a monorepo).
    Orchestrates,
    /// It cannot be a task: CFG-9 refuses its name, or its text holds a NUL; the problem.
    Unmappable(String),
}

/// What one package's scripts map to.
#[derive(Debug, Clone, Default)]
pub struct Mapping {
    /// Sorted by name.
    pub tasks: Vec<Task>,
    pub left_out: Vec<LeftOut>,
    /// `pre`/`post` scripts kept as tasks because the package manager would not run them, and
    /// why.
    pub unfolded_hooks: Option<(Vec<String>, String)>,
}

/// npm's lifecycle scripts (INIT-2): run by the package manager around install, pack,
/// publish and version, never tasks.
pub(super) const LIFECYCLE: [&str; 13] = [
    "preinstall",
    "install",
    "postinstall",
    "prepare",
    "prepublish",
    "prepublishOnly",
    "prepack",
    "postpack",
    "publish",
    "postpublish",
    "preversion",
    "version",
    "postversion",
];

/// Script names that are servers or watchers by convention.
const PERSISTENT_NAMES: [&str; 5] = ["dev", "start", "serve", "watch", "preview"];

/// Maps `scripts` (INIT-2). See the module documentation for the order of the rules.
pub fn map_scripts(scripts: &BTreeMap<String, String>, context: &Context) -> Mapping {
    let mut mapping = Mapping::default();
    let fold = context.hooks_off.is_none();

    // Every script that could be a task, with its (folded) text.
    let mut candidates: BTreeMap<String, String> = BTreeMap::new();
    let mut unfolded = Vec::new();
    for name in scripts.keys() {
        if LIFECYCLE.contains(&name.as_str()) {
            continue;
        }
        if let Some(base) = hook_of(name, scripts) {
            if fold {
                continue;
            }
            if !LIFECYCLE.contains(&base) {
                unfolded.push(name.clone());
            }
        }
        let text = script_text(name, scripts, context);
        // An empty script runs nothing: there is nothing to map.
        if !text.is_empty() {
            candidates.insert(name.clone(), text);
        }
    }
    let orchestrating = if context.monorepo_root {
        orchestrating_scripts(&candidates)
    } else {
        BTreeSet::new()
    };

    // Scripts that become tasks.
    let mut texts: BTreeMap<String, String> = BTreeMap::new();
    for (name, text) in candidates {
        let problem = if orchestrating.contains(&name) {
            mapping.left_out.push(LeftOut {
                name,
                text,
                why: LeftOutWhy::Orchestrates,
            });
            continue;
        } else if text.contains('\0') {
            Some("its text contains a NUL character".to_string())
        } else {
            vx_workspace::task_name_problem(&name)
        };
        match problem {
            Some(problem) => mapping.left_out.push(LeftOut {
                name,
                text,
                why: LeftOutWhy::Unmappable(problem),
            }),
            None => {
                texts.insert(name, text);
            }
        }
    }
    if let Some(reason) = &context.hooks_off {
        if !unfolded.is_empty() {
            mapping.unfolded_hooks = Some((unfolded, reason.clone()));
        }
    }

    for (name, text) in &texts {
        let script = shell::parse(text);
        let mut task = Task {
            name: name.clone(),
            ..Task::default()
        };
        // A group's members would not wait for the edges `build`, `test` and `typecheck` get.
        let edged = matches!(name.as_str(), "build" | "test" | "typecheck");
        match group_members(&script, name, &texts).filter(|_| !edged) {
            Some(members) => task.depends_on = members,
            None => {
                task.persistent = PERSISTENT_NAMES.contains(&name.as_str())
                    || script.segments.iter().any(is_server_or_watcher);
                let (define, notes) = npm_variables(text, context);
                task.define = define;
                task.notes = notes;
                if !task.persistent && cacheable(name, &script) {
                    task.suggested_outputs = guess_outputs(&script);
                }
                task.command = Some(text.clone());
            }
        }
        let mut first = Vec::new();
        if name == "build" && !context.no_edges {
            first.push("^build".to_string());
        }
        let tests = matches!(name.as_str(), "test" | "typecheck");
        if tests && texts.contains_key("build") && !context.no_edges {
            first.push("build".to_string());
        }
        let mut depends_on = first;
        for dep in std::mem::take(&mut task.depends_on) {
            if !depends_on.contains(&dep) {
                depends_on.push(dep);
            }
        }
        task.depends_on = depends_on;
        mapping.tasks.push(task);
    }
    exclusive_suggestions(&mut mapping.tasks);
    mapping
}

/// Whether a cache table may be suggested for a script at all: never for one that cleans,
/// publishes, packs or deploys (a hit would restore what a clean deletes, or skip a publish),
/// and never for one that reads or writes outside its project (`cp -r ../lib/dist .`): the
/// default inputs, the project less its outputs, would miss what it reads.
fn cacheable(name: &str, script: &shell::Script) -> bool {
    let side_effect_name = name.split([':', '-', '_']).any(|part| {
        matches!(
            part,
            "clean" | "publish" | "release" | "deploy" | "pack" | "upload" | "serve"
        )
    });
    if side_effect_name || name.starts_with("clean") {
        return false;
    }
    script.segments.iter().all(|segment| {
        let words = segment.program();
        let program = segment.program_name().unwrap_or_default();
        let sub = segment.subcommand();
        let publishes = match program {
            "npm" | "pnpm" | "yarn" | "bun" => words
                .iter()
                .skip(1)
                .any(|w| matches!(w.as_str(), "publish" | "pack" | "deploy")),
            "changeset" | "lerna" => matches!(sub, Some("publish" | "version")),
            "semantic-release" | "np" | "release-it" => true,
            "vsce" | "ovsx" => matches!(sub, Some("publish" | "package")),
            "git" => true,
            _ => false,
        };
        let cleans_everything = words.iter().any(|w| w == "--clean");
        let outside = words.iter().skip(1).any(|w| {
            w.starts_with("../")
                || w.contains("=../")
                || (w.starts_with('/') && !w.starts_with("/dev/"))
        });
        !publishes && !cleans_everything && !outside
    })
}

/// Two suggestions in one package must not write the same directory (GRAPH-9 would refuse
/// them both uncommented): `build` keeps its directories, and any other task that would
/// write one of them, or that shares one with another task, gets no suggestion.
fn exclusive_suggestions(tasks: &mut [Task]) {
    let dirs = |task: &Task| -> BTreeSet<String> {
        task.suggested_outputs
            .iter()
            .filter(|g| !g.starts_with('!'))
            .map(|g| g.split('/').next().unwrap_or_default().to_string())
            .collect()
    };
    let mut owners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for task in tasks.iter() {
        for dir in dirs(task) {
            owners.entry(dir).or_default().push(task.name.clone());
        }
    }
    for task in tasks.iter_mut() {
        let shared = dirs(task).iter().any(|dir| {
            let names = &owners[dir];
            names.len() > 1 && (task.name != "build" || !names.iter().any(|n| n == "build"))
        });
        if shared {
            task.suggested_outputs.clear();
        }
    }
}

/// What running script `name` with the package manager runs: its text, with its `pre` and
/// `post` hooks folded in when the package manager would run them (INIT-2).
pub fn script_text(name: &str, scripts: &BTreeMap<String, String>, context: &Context) -> String {
    let text = scripts.get(name).map(String::as_str).unwrap_or_default();
    if context.hooks_off.is_some() {
        return text.trim().to_string();
    }
    // A lifecycle script is never folded into an ordinary one (`prepack` into `pack`).
    let hook = |prefix: &str| {
        let hook = format!("{prefix}{name}");
        let lifecycle = LIFECYCLE.contains(&hook.as_str());
        scripts
            .get(&hook)
            .filter(|_| !lifecycle)
            .map(String::as_str)
    };
    join_hooks(hook("pre"), text, hook("post"))
}

/// The script `name` is a `pre`/`post` hook of, if it is one: `pre<x>` or `post<x>` where `x`
/// is a script. Only one level folds: npm does not run `preprebuild` for `build`.
fn hook_of<'a>(name: &'a str, scripts: &BTreeMap<String, String>) -> Option<&'a str> {
    let base = name
        .strip_prefix("pre")
        .or_else(|| name.strip_prefix("post"))?;
    let base_is_hook = ["pre", "post"].iter().any(|p| {
        base.strip_prefix(p)
            .is_some_and(|inner| scripts.contains_key(inner))
    });
    (scripts.contains_key(base) && !base_is_hook).then_some(base)
}

/// `<pre> && <x> && <post>`. A part that holds a list (`;`, `||`, `&`, a newline) is put in
/// parentheses, so `&&` still joins the parts as the package manager runs them, one after
/// the other, stopping at the first failure.
fn join_hooks(pre: Option<&str>, text: &str, post: Option<&str>) -> String {
    let pre = pre.filter(|t| !t.trim().is_empty());
    let post = post.filter(|t| !t.trim().is_empty());
    if text.trim().is_empty() {
        // `npm run x` with an empty `x` still runs its hooks.
        let hooks: Vec<&str> = pre.into_iter().chain(post).collect();
        return match hooks.as_slice() {
            [] => String::new(),
            [one] => one.trim().to_string(),
            _ => join_hooks(Some(hooks[0]), hooks[1], None),
        };
    }
    if pre.is_none() && post.is_none() {
        return text.trim().to_string();
    }
    let part = |t: &str| -> String {
        let t = t.trim();
        let list = shell::parse(t)
            .ops
            .iter()
            .any(|op| matches!(*op, ";" | "||" | "&" | "\n"));
        if list {
            format!("({t})")
        } else {
            t.to_string()
        }
    };
    let mut parts = Vec::new();
    parts.extend(pre.map(part));
    parts.push(part(text));
    parts.extend(post.map(part));
    parts.join(" && ")
}

/// The scripts a script runs in parallel, when that is all it does (`run-p a b`,
/// `npm-run-all --parallel a b`): each must be another task of this package. A chain (`npm
/// run a && npm run b`, `run-s a b`, `npm-run-all a b`) runs in order and stops at the first
/// failure, which a group would not: it is no group.
fn group_members(
    script: &shell::Script,
    own: &str,
    texts: &BTreeMap<String, String>,
) -> Option<Vec<String>> {
    let [segment] = script.segments.as_slice() else {
        return None;
    };
    if !runs_in_parallel(segment) {
        return None;
    }
    let mut members = Vec::new();
    for name in script_references(segment)? {
        if name == own || !texts.contains_key(&name) {
            return None;
        }
        if !members.contains(&name) {
            members.push(name);
        }
    }
    (!members.is_empty()).then_some(members)
}

/// Whether one simple command runs scripts in parallel: `run-p …`, or `npm-run-all` with
/// `-p`/`--parallel`.
fn runs_in_parallel(segment: &Segment) -> bool {
    match segment.words.split_first() {
        Some((runner, _)) if runner == "run-p" => true,
        Some((runner, rest)) if runner == "npm-run-all" => rest
            .iter()
            .any(|w| matches!(w.as_str(), "-p" | "--parallel")),
        _ => false,
    }
}

/// The scripts one simple command runs, if running scripts is all it does.
fn script_references(segment: &Segment) -> Option<Vec<String>> {
    let words = &segment.words;
    let (runner, rest) = words.split_first()?;
    let quiet = |w: &&String| !matches!(w.as_str(), "-s" | "--silent");
    let rest: Vec<&String> = rest.iter().filter(quiet).collect();
    let single = |names: &[&String]| -> Option<Vec<String>> {
        match names {
            [name] if !name.starts_with('-') => Some(vec![(*name).clone()]),
            _ => None,
        }
    };
    match runner.as_str() {
        "npm" => match rest.split_first()? {
            (verb, names) if matches!(verb.as_str(), "run" | "run-script" | "rum" | "urn") => {
                single(names)
            }
            (verb, []) => match verb.as_str() {
                "test" | "t" | "tst" => Some(vec!["test".into()]),
                "start" | "stop" | "restart" => Some(vec![verb.to_string()]),
                _ => None,
            },
            _ => None,
        },
        "pnpm" | "yarn" | "bun" => match rest.split_first()? {
            (verb, names) if verb.as_str() == "run" => single(names),
            // `bun <name>` runs a file first; only `bun run` is read.
            _ if runner == "bun" => None,
            (_, []) => single(&rest),
            _ => None,
        },
        "run-s" | "run-p" | "npm-run-all" => {
            const FLAGS: [&str; 8] = [
                "-s",
                "-p",
                "--serial",
                "--sequential",
                "--parallel",
                "-l",
                "--print-label",
                "--print-name",
            ];
            let names: Vec<String> = rest
                .iter()
                .filter(|w| !FLAGS.contains(&w.as_str()))
                .map(|w| w.to_string())
                .collect();
            let plain = |n: &String| !n.starts_with('-') && !n.contains(['*', '{', '}']);
            (!names.is_empty() && names.iter().all(plain)).then_some(names)
        }
        _ => None,
    }
}

/// Whether a simple command starts a server or a watcher: it passes `--watch` (or
/// `--watchAll`, `tsc -w`), or runs a known dev server.
fn is_server_or_watcher(segment: &Segment) -> bool {
    let words = segment.program();
    let watch_flag = words.iter().skip(1).any(|w| {
        let (flag, value) = w.split_once('=').unwrap_or((w, ""));
        matches!(flag, "--watch" | "--watchAll") && value != "false"
    });
    if watch_flag {
        return true;
    }
    let Some(program) = segment.program_name() else {
        return false;
    };
    // `yarn vite`, `pnpm next dev`: the package manager running a binary.
    if matches!(program, "yarn" | "pnpm") && words.len() > 1 {
        let inner = Segment {
            words: words[1..].to_vec(),
        };
        return !matches!(words[1].as_str(), "run" | "exec" | "dlx")
            && is_server_or_watcher(&inner);
    }
    let sub = segment.subcommand();
    let tsc_watch = program == "tsc" && words.iter().any(|w| w == "-w");
    tsc_watch
        || match program {
            "vite" => !matches!(sub, Some("build" | "optimize")),
            "parcel" => sub != Some("build"),
            "next" => matches!(sub, Some("dev" | "start")),
            "nuxt" | "nuxi" => matches!(sub, Some("dev" | "preview" | "start")),
            "astro" => matches!(sub, Some("dev" | "preview")),
            "remix" | "svelte-kit" | "wrangler" | "storybook" => sub == Some("dev"),
            "ng" => matches!(sub, Some("serve" | "s")),
            "vue-cli-service" => sub == Some("serve"),
            "react-scripts" | "expo" => sub == Some("start"),
            "webpack" => sub == Some("serve"),
            "gatsby" => sub == Some("develop"),
            "docusaurus" => matches!(sub, Some("start" | "serve")),
            "tsx" => sub == Some("watch"),
            "webpack-dev-server" | "nodemon" | "ts-node-dev" | "http-server" | "live-server"
            | "browser-sync" | "serve" | "start-storybook" | "remix-serve" => true,
            _ => false,
        }
}

/// `$npm_package_name` / `$npm_package_version` become `env.define` entries; other `npm_`
/// variables, which vx does not set, get a TODO.
fn npm_variables(text: &str, context: &Context) -> (BTreeMap<String, String>, Vec<String>) {
    let mut define = BTreeMap::new();
    let mut unset = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("$") {
        rest = &rest[at + 1..];
        let braced = rest.strip_prefix('{');
        let body = braced.unwrap_or(rest);
        let len = body
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(body.len());
        let variable = &body[..len];
        if !variable.starts_with("npm_") {
            continue;
        }
        let value = match variable {
            "npm_package_name" => context.name.clone(),
            "npm_package_version" => context.version.clone(),
            _ => None,
        };
        match value {
            Some(value) => {
                define.insert(variable.to_string(), value);
            }
            None => {
                unset.insert(variable.to_string());
            }
        }
    }
    let notes = unset
        .into_iter()
        .map(|v| {
            let missing = match v.as_str() {
                "npm_package_name" => "; package.json has no `name`",
                "npm_package_version" => "; package.json has no `version`",
                _ => "",
            };
            format!("`${v}` is not set when vx runs this command{missing}: define it in `env`")
        })
        .collect();
    (define, notes)
}

/// The output directories a command writes, guessed (INIT-2): an `--outDir` value, the
/// default directory of a known build tool, and the well-known output directories the
/// command names (`rm -rf dist && tsc`, `cp x build/`; a script that only cleans writes
/// nothing). `.next` comes with `!.next/cache/**`.
fn guess_outputs(script: &shell::Script) -> Vec<String> {
    let mut all: BTreeSet<String> = BTreeSet::new();
    let mut cleaned: BTreeSet<String> = BTreeSet::new();
    let mut wrote_something = false;
    for segment in &script.segments {
        let mut dirs: BTreeSet<String> = BTreeSet::new();
        let words = segment.program();
        let program = segment.program_name().unwrap_or_default();
        let sub = segment.subcommand();
        // `--outDir dist`, `--outDir=dist` (and the `--out-dir`/`--outdir` spellings).
        for (i, word) in words.iter().enumerate() {
            let (flag, inline) = match word.split_once('=') {
                Some((flag, value)) => (flag, Some(value)),
                None => (word.as_str(), None),
            };
            if matches!(flag, "--outDir" | "--out-dir" | "--outdir") {
                let value = inline.or_else(|| words.get(i + 1).map(String::as_str));
                dirs.extend(value.and_then(relative_dir));
            }
        }
        let tool_dir = match (program, sub) {
            ("next", Some("build")) => Some(".next"),
            ("next", Some("export")) => Some("out"),
            ("vite" | "astro" | "vue-cli-service" | "ng" | "parcel", Some("build")) => Some("dist"),
            ("tsup" | "rollup" | "unbuild" | "microbundle", _) => Some("dist"),
            ("webpack", sub) if sub != Some("serve") => Some("dist"),
            ("react-scripts" | "docusaurus", Some("build")) => Some("build"),
            ("storybook", Some("build")) | ("build-storybook", _) => Some("storybook-static"),
            _ => None,
        };
        dirs.extend(tool_dir.map(str::to_string));
        // A tool's own `--outDir` replaces its default directory.
        if words
            .iter()
            .any(|w| w.starts_with("--outDir") || w.starts_with("--out-dir"))
        {
            if let Some(default) = tool_dir {
                let named = words.iter().any(|w| w.trim_start_matches("./") == default);
                if !named {
                    dirs.remove(default);
                }
            }
        }
        let cleaning = matches!(program, "rm" | "rimraf" | "del" | "del-cli" | "trash");
        let file_tool = cleaning || matches!(program, "mkdir" | "cp" | "mv" | "shx");
        for word in words.iter().skip(1) {
            let value = word.split_once('=').map_or(word.as_str(), |(_, v)| v);
            let path = value.trim_start_matches("./");
            let (head, below) = match path.split_once('/') {
                Some((head, _)) => (head, true),
                None => (path, value.starts_with("./")),
            };
            let known = match head {
                "dist" | ".next" | "storybook-static" => true,
                "build" | "out" => below || file_tool,
                _ => false,
            };
            if known {
                dirs.insert(head.to_string());
            }
        }
        // Cleaning a directory says the rest of the script writes it; a script that only
        // cleans writes nothing.
        if cleaning {
            cleaned.extend(dirs);
        } else {
            wrote_something = true;
            all.extend(dirs);
        }
    }
    if wrote_something {
        all.extend(cleaned);
    }
    let mut outputs = Vec::new();
    for dir in all {
        outputs.push(format!("{dir}/**"));
        if dir == ".next" {
            outputs.push("!.next/cache/**".to_string());
        }
    }
    outputs
}

/// A project-relative directory written in a flag (`./lib/`, `dist`), or `None` for
/// anything that is not a plain relative path.
fn relative_dir(value: &str) -> Option<String> {
    let trimmed = value.trim_start_matches("./").trim_end_matches('/');
    let plain = !trimmed.is_empty()
        && trimmed != "."
        && !trimmed.starts_with('/')
        && !trimmed.contains(['$', '*', '{', '\\', '`'])
        && !trimmed.split('/').any(|s| s == ".." || s.is_empty());
    plain.then(|| trimmed.to_string())
}

#[cfg(test)]
mod tests;
