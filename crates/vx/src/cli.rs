//! Raw command-line arguments (CLI-1 to CLI-4, CLI-11, CLI-18), parsed with clap, and the
//! translation of clap's errors into vx's one-line messages.
//!
//! Values are taken as strings here and checked in `options.rs`, so every invalid value gets
//! the exact message of CLI-3. Verbs of later milestones (`LATER_VERBS`, none today) are refused
//! as `not available yet` rather than as unknown (CFG-12).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, CommandFactory, Parser, Subcommand};
use clap_complete::engine::ArgValueCompleter;
use vx_core::suggest::did_you_mean;
use vx_core::Diagnostic;

use crate::candidates;
use crate::verbs::VERBS;

/// Marks a flag given without `=value`, so `--graph` and `--graph=` can be told apart.
pub const BARE: &str = "\u{0}bare";

#[derive(Debug, Parser)]
#[command(
    name = "vx",
    about = "vx runs the tasks of a monorepo in dependency order, in parallel, and explains what it did.",
    disable_version_flag = true,
    disable_help_subcommand = true,
    after_help = "Run `vx help <verb>` or `vx <verb> --help` for the flags of a verb.\nEnvironment: NO_COLOR, FORCE_COLOR, CI, VX_TASK_TIMEOUT, VX_KILL_GRACE, VX_LOG.\nDocs: docs/cli.md and docs/config.md in the vx repository."
)]
pub struct Cli {
    /// Behave as if vx had been started in DIR (before the verb).
    #[arg(short = 'C', long = "cwd", value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Print the version.
    #[arg(long = "version", short = 'V')]
    pub version: bool,
    #[command(subcommand)]
    pub verb: Option<Verb>,
}

#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Run tasks and their dependencies.
    Run(Box<RunArgs>),
    /// Run tasks, then run them again whenever a file they may read changes.
    Watch(Box<RunArgs>),
    /// Show projects and the resolved configuration of their tasks.
    Show(ShowArgs),
    /// Explain why a task executed or hit in its latest recorded run.
    Why(WhyArgs),
    /// Print a recorded run (the latest by default), or list recent runs.
    Last(LastArgs),
    /// Manage the local cache.
    #[command(subcommand)]
    Cache(CacheVerb),
    /// Write vx.toml files from package.json scripts, turbo.json and nx.json.
    Init(InitArgs),
    /// Write vx.toml files from a turbo.json or an nx.json (with the package.json scripts).
    Migrate(MigrateArgs),
    /// Write vx.lock: the resolved projects, edges and tasks, for `vx run --frozen`.
    Lock(LockArgs),
    /// Write a deployable subset of the workspace: projects, their dependencies, the pruned
    /// lockfile, checked with the package manager.
    Prune(PruneWorkspaceArgs),
    /// Print a health report of the workspace: vx, git, projects, cache, history.
    Info(InfoArgs),
    /// Merge the --summarize files of a sharded run's parts into one recap.
    Report(ReportArgs),
    /// Print the JSON Schema of vx.toml.
    Schema,
    /// Serve the Model Context Protocol on stdin and stdout, for coding agents.
    Mcp {
        /// Leave out the tools that run tasks (run, run_status, run_output, run_stop).
        #[arg(long)]
        read_only: bool,
    },
    /// Serve the Language Server Protocol on stdin and stdout, for vx.toml in an editor.
    Lsp {
        /// Talk over stdin and stdout (the only transport; accepted because clients pass it).
        #[arg(long)]
        stdio: bool,
    },
    /// Print a shell completion script: bash, zsh or fish.
    Completions {
        #[arg(value_name = "SHELL")]
        shell: Option<String>,
    },
    /// Print help for vx or for a verb.
    Help {
        #[arg(add = ArgValueCompleter::new(candidates::verb_candidates))]
        verb: Option<String>,
    },
    /// Print the version.
    Version {
        #[arg(hide = true, num_args = 0.., allow_hyphen_values = true)]
        extra: Vec<String>,
    },
    #[command(external_subcommand)]
    Other(Vec<OsString>),
}

#[derive(Debug, Args, Default)]
#[command(after_help = RUN_EXAMPLES)]
pub struct RunArgs {
    /// Task names (`build`), task ids (`web#build`) or root task ids (`//#lint`).
    #[arg(value_name = "TASK", add = ArgValueCompleter::new(candidates::task_candidates))]
    pub tasks: Vec<String>,
    /// Select every project.
    #[arg(long)]
    pub all: bool,
    /// Select projects: NAME, ./DIR, tag:T, //, with `...`/`^...` walks and `!` excludes.
    #[arg(long, short = 'F', value_name = "PATTERN", add = ArgValueCompleter::new(candidates::project_candidates))]
    pub filter: Vec<String>,
    /// Maximum executing tasks: N or N% of the available CPUs.
    #[arg(long, value_name = "N", alias = "parallel")]
    pub concurrency: Option<String>,
    /// After a failure: never, deps-ok (default), always (the bare flag).
    #[arg(long = "continue", value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = BARE, add = ArgValueCompleter::new(candidates::values(&["never", "deps-ok", "always"])))]
    pub continue_mode: Option<String>,
    /// Default timeout for tasks without `timeout`, e.g. 90s.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Drop `depends-on` edges from the schedule (bare: all; or a comma list of task names).
    #[arg(long = "exclude-dependencies", visible_alias = "only", value_name = "NAMES", num_args = 0..=1, require_equals = true, default_missing_value = BARE)]
    pub exclude_dependencies: Option<String>,
    /// Per-task output: full, errors-only, hash-only, none.
    #[arg(long = "output-logs", value_name = "MODE", add = ArgValueCompleter::new(candidates::values(&["full", "errors-only", "hash-only", "none"])))]
    pub output_logs: Option<String>,
    /// The interface: plain (lines; default) or tui (a full-screen task list and output; on a
    /// terminal only).
    #[arg(long, value_name = "UI", add = ArgValueCompleter::new(candidates::values(&["plain", "tui"])))]
    pub ui: Option<String>,
    /// Task output: grouped (each task's whole, when it ends; default) or stream (every line as
    /// it comes, prefixed with its task id).
    #[arg(long = "log-order", value_name = "ORDER", add = ArgValueCompleter::new(candidates::values(&["grouped", "stream"])))]
    pub log_order: Option<String>,
    /// Print the plan and run nothing (text or json).
    #[arg(long, value_name = "FORMAT", alias = "dry-run", num_args = 0..=1, require_equals = true, default_missing_value = BARE, add = ArgValueCompleter::new(candidates::values(&["text", "json"])))]
    pub dry: Option<String>,
    /// With --dry: exit 1 when the plan would execute a task, 0 when it would not.
    #[arg(long = "exit-code")]
    pub exit_code: bool,
    /// Also write a report of the run: junit=PATH (JUnit XML, one test case per task).
    #[arg(long, value_name = "FORMAT=PATH")]
    pub report: Option<String>,
    /// Write the run's events as it goes, one JSON object per line (tasks started, output,
    /// finished), to PATH.
    #[arg(long, value_name = "PATH")]
    pub events: Option<String>,
    /// Run the K-th of N parts of the plan (one CI runner of N); `auto` with --dry: the
    /// predicted wall for N = 1…16.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Write the plan instead of running it: Graphviz DOT to stdout, or PATH by its extension
    /// (.dot, .html, .svg, .png, .pdf, .mermaid, .json).
    #[arg(long, value_name = "PATH", num_args = 0..=1, require_equals = true, default_missing_value = BARE)]
    pub graph: Option<String>,
    /// Arguments after `--` go to the requested tasks.
    #[arg(last = true, value_name = "ARGS")]
    pub forwarded: Vec<String>,

    /// No cache reads, no writes, no output cleaning.
    #[arg(long = "no-cache")]
    pub no_cache: bool,
    /// No cache reads; results are still saved (outputs are cleaned first).
    #[arg(long, alias = "skip-nx-cache")]
    pub force: bool,
    /// Per-layer reads and writes, e.g. `local:r` or `local:rw,remote:r`.
    #[arg(long, value_name = "SPEC")]
    pub cache: Option<String>,
    /// Where the cache lives (default `.vx` at the root).
    #[arg(long = "cache-dir", value_name = "PATH")]
    pub cache_dir: Option<String>,
    /// Run only the tasks that changes since BASE reach (bare: the CI's base, affected-base, else
    /// origin/HEAD…; `last-green`: the last commit a green run of these tasks was recorded at).
    #[arg(long, value_name = "BASE", num_args = 0..=1, require_equals = true, default_missing_value = BARE)]
    pub affected: Option<String>,

    /// Extra attempts for failed tasks without `retries` (default 0).
    #[arg(long, value_name = "N")]
    pub retry: Option<String>,

    /// Write the run summary JSON (bare: <cache-dir>/runs/<run-id>.json).
    #[arg(long, value_name = "PATH", num_args = 0..=1, require_equals = true, default_missing_value = BARE)]
    pub summarize: Option<String>,
    /// Write a Chrome trace of the run (bare: <cache-dir>/runs/<run-id>.trace.json).
    #[arg(long, value_name = "PATH", num_args = 0..=1, require_equals = true, default_missing_value = BARE)]
    pub profile: Option<String>,

    /// Where remotely executed outputs land: all, toplevel or none (default all).
    #[arg(long, value_name = "MODE")]
    pub download: Option<String>,
    /// `off` runs every task locally; `auto` (default) runs `remote` tasks remotely.
    #[arg(long = "remote-exec", value_name = "MODE")]
    pub remote_exec: Option<String>,

    /// Take projects, edges and tasks from vx.lock instead of parsing configuration; a stale
    /// lock fails before anything runs.
    #[arg(long)]
    pub frozen: bool,
}

const RUN_EXAMPLES: &str = "Examples:
  vx run build                 build the project in the current directory and its dependencies
  vx run build --all           build every project
  vx run test -F ...web        test web and everything that depends on it
  vx run web#dev               start web's dev server (and what it depends on)
  vx run test -- --watch=false pass arguments to the requested tasks
  vx run build --all --dry     show the plan without running anything
  vx run test --affected=main  test what the changes since main reach";

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A project, a `project#task`, or a task name.
    #[arg(add = ArgValueCompleter::new(candidates::show_candidates))]
    pub target: Option<String>,
    /// Output format: pretty or json.
    #[arg(long, value_name = "FORMAT", add = ArgValueCompleter::new(candidates::values(&["pretty", "json"])))]
    pub format: Option<String>,
}

#[derive(Debug, Args)]
pub struct WhyArgs {
    /// A task id (`web#build`) or a task name.
    #[arg(value_name = "TASK", add = ArgValueCompleter::new(candidates::task_candidates))]
    pub task: String,
    /// Explain the run whose id starts with RUNID instead of the latest.
    #[arg(long, value_name = "RUNID")]
    pub run: Option<String>,
    /// Output format: pretty or json.
    #[arg(long, value_name = "FORMAT", add = ArgValueCompleter::new(candidates::values(&["pretty", "json"])))]
    pub format: Option<String>,
    /// The cache directory (default: VX_CACHE_DIR, [workspace] cache-dir, .vx at the root).
    #[arg(long = "cache-dir", value_name = "PATH")]
    pub cache_dir: Option<String>,
}

#[derive(Debug, Args)]
#[command(after_help = LAST_EXAMPLES)]
pub struct LastArgs {
    /// A run id, or a unique prefix of one (default: the latest run).
    #[arg(value_name = "RUNID")]
    pub run: Option<String>,
    /// List the latest N runs (default 10) instead.
    #[arg(long, value_name = "N", num_args = 0..=1, require_equals = true, default_missing_value = BARE)]
    pub list: Option<String>,
    /// The latest failed run (with --list: only failed runs).
    #[arg(long)]
    pub failed: bool,
    /// Output format: pretty or json.
    #[arg(long, value_name = "FORMAT", add = ArgValueCompleter::new(candidates::values(&["pretty", "json"])))]
    pub format: Option<String>,
    /// The cache directory (default: VX_CACHE_DIR, [workspace] cache-dir, .vx at the root).
    #[arg(long = "cache-dir", value_name = "PATH")]
    pub cache_dir: Option<String>,
}

const LAST_EXAMPLES: &str = "Examples:
  vx last                 the latest run: each task's outcome, and what to re-run
  vx last --failed        the latest run that failed
  vx last --list=20       the 20 latest runs
  vx last 0193a1f4 --format json";

#[derive(Debug, Args)]
#[command(after_help = INIT_EXAMPLES)]
pub struct InitArgs {
    /// Print the files that would be written and write nothing.
    #[arg(long)]
    pub dry: bool,
    /// Replace existing vx.toml files.
    #[arg(long)]
    pub force: bool,
    /// Run these tasks once, traced, and cache each uncached one over what it read and wrote
    /// (comma-separated: --learn build,test).
    #[arg(long, value_name = "TASKS", value_delimiter = ',', num_args = 1)]
    pub learn: Vec<String>,
}

#[derive(Debug, Args)]
#[command(after_help = MIGRATE_EXAMPLES)]
pub struct MigrateArgs {
    /// The tool whose configuration to carry over: turbo or nx.
    #[arg(value_name = "TOOL")]
    pub tool: String,
    /// Print the files that would be written and write nothing.
    #[arg(long)]
    pub dry: bool,
    /// Replace existing vx.toml files.
    #[arg(long)]
    pub force: bool,
}

const MIGRATE_EXAMPLES: &str = "Examples:
  vx migrate turbo --dry    print the vx.toml files turbo.json becomes
  vx migrate turbo          write them (existing vx.toml files are kept)
  vx migrate nx --force     carry nx.json over, replacing existing vx.toml files";

const INIT_EXAMPLES: &str = "Examples:
  vx init            write vx.toml files next to every package.json
  vx init --dry      print them instead
  vx init --force    replace the vx.toml files that exist";

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Output format: pretty or json.
    #[arg(long, value_name = "FORMAT", add = ArgValueCompleter::new(candidates::values(&["pretty", "json"])))]
    pub format: Option<String>,
    /// The cache directory (default: VX_CACHE_DIR, [workspace] cache-dir, .vx at the root).
    #[arg(long = "cache-dir", value_name = "PATH")]
    pub cache_dir: Option<String>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The `--summarize` files of the parts of one `--shard` run, one per runner.
    #[arg(long, value_name = "FILE", num_args = 1.., required = true)]
    pub merge: Vec<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum CacheVerb {
    /// Evict entries by age and total size, and remove stray files.
    Prune(PruneArgs),
    /// Remove every entry of the local cache (the run history stays).
    Clean(CleanArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  vx lock            write vx.lock at the workspace root
  vx lock --check    exit 1 and list each project that moved since vx.lock was written")]
pub struct LockArgs {
    /// Write nothing; list each project whose configuration moved since vx.lock was written
    /// (exit 1 when any did, or when there is no vx.lock).
    #[arg(long)]
    pub check: bool,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  vx prune web                 web and the workspace projects it depends on, in out/
  vx prune web --docker        out/json/ to install, out/full/ to build, for a Dockerfile
  vx prune web api --out dist  two projects and their dependencies, in dist/")]
pub struct PruneWorkspaceArgs {
    /// The projects to deploy (names or ./directories); without one, the project of the
    /// current directory.
    #[arg(value_name = "PROJECT", add = ArgValueCompleter::new(candidates::project_candidates))]
    pub projects: Vec<String>,
    /// Split the output: json/ with what installing needs (manifests, the pruned lockfile),
    /// full/ with everything, so a Docker image's install layer survives source edits.
    #[arg(long)]
    pub docker: bool,
    /// The output directory (default: out at the workspace root). Replaced when vx prune wrote
    /// it; refused when it holds anything else.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Leave out workspace projects reached only through devDependencies.
    #[arg(long)]
    pub production: bool,
    /// Do not run the package manager's frozen install on the pruned lockfile.
    #[arg(long)]
    pub no_verify: bool,
}

#[derive(Debug, Args)]
pub struct CleanArgs {
    #[command(flatten)]
    pub evict: EvictArgs,
}

/// What `vx cache prune` and `vx cache clean` share.
#[derive(Debug, Args)]
pub struct EvictArgs {
    /// Print what would be removed and change nothing.
    #[arg(long, visible_alias = "dry-run")]
    pub dry: bool,
    /// Output format: pretty or json.
    #[arg(long, value_name = "FORMAT", add = ArgValueCompleter::new(candidates::values(&["pretty", "json"])))]
    pub format: Option<String>,
    /// The cache directory (default: VX_CACHE_DIR, [workspace] cache-dir, .vx at the root).
    #[arg(long = "cache-dir", value_name = "PATH")]
    pub cache_dir: Option<String>,
}

#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Evict entries not used for this long (e.g. 30d).
    #[arg(long = "older-than", value_name = "DURATION")]
    pub older_than: Option<String>,
    /// Then evict least recently used entries until the cache is at most this big (e.g. 10G).
    #[arg(long = "max-size", value_name = "SIZE")]
    pub max_size: Option<String>,
    #[command(flatten)]
    pub evict: EvictArgs,
}

/// What parsing produced: the arguments, or something to print and an exit code.
pub enum Parsed {
    Cli(Box<Cli>),
    /// Help or version text for stdout.
    Print(String),
    Error(Vec<Diagnostic>),
}

pub fn parse(args: Vec<OsString>) -> Parsed {
    if let Some(refused) = crate::foreign::refusal(&args) {
        return Parsed::Error(vec![refused]);
    }
    if let Some(flag) = flag_missing_its_value(&args) {
        return Parsed::Error(vec![Diagnostic::new(format!("{flag} needs a value"))]);
    }
    let parsed = command()
        .try_get_matches_from(args)
        .and_then(|matches| <Cli as clap::FromArgMatches>::from_arg_matches(&matches));
    match parsed {
        Ok(cli) => Parsed::Cli(Box::new(cli)),
        Err(e) => translate(e),
    }
}

/// Flags `vx watch` shares with `vx run` but refuses (WATCH-8): still parsed, so the refusal
/// names them, but not in its help.
pub const NOT_FOR_WATCH: &[&str] = &[
    "dry",
    "graph",
    "summarize",
    "profile",
    "frozen",
    "report",
    "exit_code",
    "shard",
];

/// vx's command line as parsed, shown in help and completed.
pub fn command() -> clap::Command {
    Cli::command().mut_subcommand("watch", |mut watch| {
        for id in NOT_FOR_WATCH {
            watch = watch.mut_arg(*id, |a| a.hide(true));
        }
        watch.after_help(WATCH_EXAMPLES)
    })
}

const WATCH_EXAMPLES: &str = "Examples:
  vx watch test                test the project in the current directory on every change
  vx watch build --all         keep every project built
  vx watch web#dev             run web's dev server, rebuilding what it depends on
  vx watch test -F ...lib      test lib and everything that depends on it";

/// Flags that take a value in the space form (`--flag value`).
const VALUE_FLAGS: &[&str] = &[
    "-C",
    "--cwd",
    "--filter",
    "-F",
    "--concurrency",
    "--parallel",
    "--timeout",
    "--output-logs",
    "--log-order",
    "--ui",
    "--format",
    "--retry",
    "--cache",
    "--cache-dir",
    "--download",
    "--remote-exec",
    "--run",
    "--older-than",
    "--max-size",
    "--report",
];

/// CLI-3: in the space form a value starting with `-` is refused, so `--timeout -5s` does
/// not read as a flag `-5s` (before the first bare `--` only).
fn flag_missing_its_value(args: &[OsString]) -> Option<String> {
    let words: Vec<&str> = args.iter().skip(1).filter_map(|a| a.to_str()).collect();
    let end = words.iter().position(|w| *w == "--").unwrap_or(words.len());
    words[..end].windows(2).find_map(|pair| {
        let next_is_flag = pair[1].starts_with('-') && pair[1] != "-";
        (VALUE_FLAGS.contains(&pair[0]) && next_is_flag).then(|| pair[0].to_string())
    })
}

/// The help text of vx or of one verb.
pub fn help(verb: Option<&str>) -> Option<String> {
    let mut command = command();
    let mut command = match verb {
        None => command,
        Some(v) => command
            .find_subcommand_mut(v)?
            .clone()
            .bin_name(format!("vx {v}")),
    };
    Some(command.render_help().to_string())
}

fn translate(e: clap::Error) -> Parsed {
    let context = |kind: ContextKind| -> Option<String> {
        match e.get(kind)? {
            ContextValue::String(s) => Some(s.clone()),
            ContextValue::Strings(v) => v.first().cloned(),
            _ => None,
        }
    };
    let arg = context(ContextKind::InvalidArg).unwrap_or_default();
    // clap names an argument as in its usage (`--dry[=<FORMAT>]`, `--timeout <DURATION>`).
    let flag = arg
        .split([' ', '=', '[', '<'])
        .next()
        .unwrap_or_default()
        .to_string();
    let verb = verb_of(&e);
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            Parsed::Print(e.render().to_string())
        }
        ErrorKind::UnknownArgument => {
            let mut d = Diagnostic::new(format!("unknown flag `{flag}` for `vx {verb}`"));
            if flag == "--json" && matches!(verb.as_str(), "show" | "why" | "last" | "info") {
                d = d.hint("use `--format json`");
            } else if matches!(flag.as_str(), "-C" | "--cwd") {
                d = d.hint(format!(
                    "`{flag}` goes before the verb: `vx {flag} DIR {verb} …`"
                ));
            } else if let Some(s) = did_you_mean(&flag, flags_of(&verb).iter().map(String::as_str))
            {
                d = d.hint(format!("did you mean `{s}`?"));
            } else if matches!(verb.as_str(), "run" | "watch") {
                d = d.hint(format!(
                    "to give `{flag}` to the tasks, put it after `--`: `vx {verb} … -- {flag}`"
                ));
            }
            Parsed::Error(vec![d])
        }
        ErrorKind::InvalidSubcommand => {
            let word = context(ContextKind::InvalidSubcommand).unwrap_or_default();
            let mut d = Diagnostic::new(format!("unknown verb `{word}` for `vx {verb}`"));
            let nested: Vec<String> = command()
                .find_subcommand(&verb)
                .map(|c| {
                    c.get_subcommands()
                        .map(|s| s.get_name().to_string())
                        .collect()
                })
                .unwrap_or_default();
            if let Some(s) = did_you_mean(&word, nested.iter().map(String::as_str)) {
                d = d.hint(format!("did you mean `vx {verb} {s}`?"));
            } else if !nested.is_empty() {
                d = d.hint(format!("`vx {verb}` has: {}", nested.join(", ")));
            }
            Parsed::Error(vec![d])
        }
        ErrorKind::ArgumentConflict => {
            Parsed::Error(vec![Diagnostic::new(format!("{flag} given twice"))])
        }
        ErrorKind::InvalidValue | ErrorKind::NoEquals | ErrorKind::TooFewValues => {
            Parsed::Error(vec![Diagnostic::new(format!("{flag} needs a value"))])
        }
        _ => {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            let first = first.trim_start_matches("error: ").replace('\'', "`");
            Parsed::Error(vec![Diagnostic::new(first)])
        }
    }
}

/// Which verb clap was parsing when it failed (from the usage line it attaches).
fn verb_of(e: &clap::Error) -> String {
    let usage = match e.get(ContextKind::Usage) {
        Some(ContextValue::StyledStr(s)) => s.to_string(),
        _ => String::new(),
    };
    usage
        .split_whitespace()
        .skip_while(|w| *w != "vx")
        .nth(1)
        .filter(|w| VERBS.contains(w))
        .unwrap_or("run")
        .to_string()
}

/// Every visible long flag of a verb, for suggestions.
fn flags_of(verb: &str) -> Vec<String> {
    let command = command();
    let Some(sub) = command.find_subcommand(verb) else {
        return Vec::new();
    };
    sub.get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_consistent() {
        super::command().debug_assert();
    }

    /// cli.md's Synopsis names every verb `vx --help` lists (it once named 7 of 14).
    #[test]
    fn the_synopsis_in_cli_md_names_every_verb() {
        let doc = include_str!("../../../docs/cli.md");
        let start = doc.find("## Synopsis").expect("a Synopsis section");
        let synopsis = &doc[start..];
        let synopsis = &synopsis[..synopsis.find("\n## ").unwrap_or(synopsis.len())];
        for verb in super::command().get_subcommands().map(|c| c.get_name()) {
            let named = synopsis.lines().any(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                words.first() == Some(&"vx")
                    && (words.get(1) == Some(&verb)
                        || (words.get(1) == Some(&"[-C") && words.get(3) == Some(&verb)))
            });
            assert!(named, "cli.md's Synopsis does not name `vx {verb}`");
        }
    }
}
