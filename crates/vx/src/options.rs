//! `vx run`'s command line resolved: every raw string of `cli.rs` checked and turned into the
//! engine's typed options (`vx_engine::options`), with the messages of CLI-3 and the exclusions
//! of CLI-12.

use std::collections::BTreeSet;

use vx_core::affected::{check_ref, RefSite};
use vx_core::graph::ExcludeDependencies;
use vx_core::schedule::ContinueMode;
use vx_core::selection::parse_filter;
use vx_core::units::{parse_duration, parse_integer};
use vx_core::Diagnostic;

use vx_engine::options::{
    AffectedBase, CachePolicy, Concurrency, Download, LogOrder, OutputLogs, Plan, RunOptions,
    ShardFlag, Target, Ui,
};

use crate::cli::{RunArgs, BARE};

/// `--affected=last-green` (SEL-10).
const LAST_GREEN: &str = "last-green";

/// The most runners `--shard K/N` splits a run across.
const MAX_SHARDS: u32 = 256;

fn target(value: Option<&str>) -> Option<Target> {
    match value? {
        BARE | "" => Some(Target::Default),
        path => Some(Target::Path(path.to_string())),
    }
}

/// CLI-14: start with local `rw`; apply each `--cache` segment; `--force` turns reads off;
/// `--no-cache` turns everything off.
fn cache_policy(
    spec: Option<&str>,
    force: bool,
    no_cache: bool,
) -> Result<CachePolicy, Diagnostic> {
    if no_cache {
        if spec.is_some() {
            return Err(Diagnostic::new(
                "`--no-cache` cannot be combined with `--cache`",
            ));
        }
        if force {
            return Err(Diagnostic::new(
                "`--no-cache` cannot be combined with `--force`",
            ));
        }
        return Ok(CachePolicy {
            local_read: false,
            local_write: false,
            remote_read: Some(false),
            remote_write: Some(false),
            remote_named: false,
        });
    }
    let mut policy = CachePolicy::default();
    if let Some(spec) = spec {
        if spec.is_empty() {
            return Err(invalid(
                spec,
                "--cache",
                "a list such as `local:rw,remote:r`",
            ));
        }
        let mut seen = BTreeSet::new();
        for segment in spec.split(',') {
            let (layer, flags) = segment.split_once(':').unwrap_or((segment, ""));
            if layer != "local" && layer != "remote" {
                return Err(Diagnostic::new(format!(
                    "invalid --cache layer `{layer}` (layers: local, remote)"
                )));
            }
            if !seen.insert(layer) {
                return Err(Diagnostic::new(format!(
                    "--cache names the layer `{layer}` twice"
                )));
            }
            let (mut read, mut write) = (false, false);
            for flag in flags.chars() {
                match flag {
                    'r' => read = true,
                    'w' => write = true,
                    other => {
                        return Err(Diagnostic::new(format!(
                            "invalid --cache flag `{other}` (flags: r, w)"
                        )))
                    }
                }
            }
            if layer == "local" {
                policy.local_read = read;
                policy.local_write = write;
            } else {
                policy.remote_named = true;
                policy.remote_read = Some(read);
                policy.remote_write = Some(write);
            }
        }
    }
    if force {
        policy.local_read = false;
        policy.remote_read = Some(false);
    }
    Ok(policy)
}

fn invalid(value: &str, flag: &str, expected: &str) -> Diagnostic {
    Diagnostic::new(format!(
        "invalid value `{value}` for {flag} (expected {expected})"
    ))
}

/// `--shard` (SCHED-8): `K/N`, `ci`, or `auto` with `--dry`; without the flag, `VX_SHARD`
/// (`K/N` or `ci`: the form a CI matrix sets once for every step).
fn shard_flag(args: &RunArgs, read_env: bool) -> Result<Option<ShardFlag>, Diagnostic> {
    let from_env = read_env
        .then(|| std::env::var("VX_SHARD").ok())
        .flatten()
        .filter(|v| !v.trim().is_empty());
    let (text, flag) = match (args.shard.as_deref(), from_env.as_deref()) {
        (Some(text), _) => (text, "--shard"),
        (None, Some(text)) => (text.trim(), "VX_SHARD"),
        (None, None) => return Ok(None),
    };
    if flag == "VX_SHARD" && text == "auto" {
        return Err(invalid(text, flag, "K/N with 1 ≤ K ≤ N ≤ 256, or `ci`"));
    }
    match text {
        "ci" => return Ok(Some(ShardFlag::Ci)),
        "auto" if args.dry.is_some() => return Ok(Some(ShardFlag::Auto)),
        "auto" => {
            return Err(Diagnostic::new("`--shard auto` needs `--dry`").hint(
                "`vx run TASKS --dry --shard auto` prints the predicted wall for 1 to 16 runners",
            ))
        }
        _ => {}
    }
    let part = text.split_once('/').and_then(|(k, n)| {
        let k: u32 = k.trim().parse().ok()?;
        let n: u32 = n.trim().parse().ok()?;
        ((1..=n).contains(&k) && n <= MAX_SHARDS).then_some((k, n))
    });
    match part {
        Some((k, n)) => Ok(Some(ShardFlag::Part { k, n })),
        None if flag == "VX_SHARD" => Err(invalid(text, flag, "K/N with 1 ≤ K ≤ N ≤ 256, or `ci`")),
        None => Err(invalid(
            text,
            flag,
            "K/N with 1 ≤ K ≤ N ≤ 256, `ci`, or `auto` with --dry",
        )),
    }
}

pub fn resolve(args: RunArgs) -> Result<RunOptions, Diagnostic> {
    resolve_with(args, true)
}

/// [`resolve`] for `vx watch`, which ignores `VX_SHARD` (a CI runner's variable).
pub fn resolve_watch(args: RunArgs) -> Result<RunOptions, Diagnostic> {
    resolve_with(args, false)
}

fn resolve_with(args: RunArgs, shard_env: bool) -> Result<RunOptions, Diagnostic> {
    if args.exit_code && args.dry.is_none() {
        return Err(Diagnostic::new("`--exit-code` needs `--dry`")
            .hint("`vx run TASKS --affected --dry --exit-code` exits 1 when something would run"));
    }
    if args.dry.is_some() && args.graph.is_some() {
        return Err(Diagnostic::new("`--dry` cannot be combined with `--graph`"));
    }
    // CLI-12: nothing runs under `--dry` or `--graph`, so there is no run to summarize.
    for (plan, given) in [
        ("--dry", args.dry.is_some()),
        ("--graph", args.graph.is_some()),
    ] {
        for (file, wanted) in [
            ("--summarize", args.summarize.is_some()),
            ("--profile", args.profile.is_some()),
            ("--report", args.report.is_some()),
            ("--events", args.events.is_some()),
        ] {
            if given && wanted {
                return Err(Diagnostic::new(format!(
                    "`{plan}` cannot be combined with `{file}`"
                )));
            }
        }
    }

    let remote_exec_off = match args.remote_exec.as_deref() {
        None | Some("auto") => false,
        Some("off") => true,
        Some(other) => return Err(invalid(other, "--remote-exec", "auto or off")),
    };
    let download = match args.download.as_deref() {
        None | Some("all") => Download::All,
        Some("toplevel") => Download::Toplevel,
        Some("none") => Download::None,
        Some(other) => return Err(invalid(other, "--download", "all, toplevel or none")),
    };
    let concurrency = match args.concurrency.as_deref() {
        None => None,
        Some(text) => {
            let expected = "N or N%, N ≥ 1";
            let parsed = match text.strip_suffix('%') {
                Some(p) => parse_integer(p).map(|n| Concurrency::Percent(n as u32)),
                None => parse_integer(text).map(|n| Concurrency::Count(n as u32)),
            };
            match parsed {
                Some(Concurrency::Count(n) | Concurrency::Percent(n))
                    if (1..=1 << 20).contains(&n) =>
                {
                    parsed
                }
                _ => return Err(invalid(text, "--concurrency", expected)),
            }
        }
    };
    let continue_mode = match args.continue_mode.as_deref() {
        None => ContinueMode::DepsOk,
        Some(BARE) | Some("always") => ContinueMode::Always,
        Some("never") => ContinueMode::Never,
        // Turborepo's spelling (CLI-17).
        Some("deps-ok" | "dependencies-successful") => ContinueMode::DepsOk,
        Some(other) => {
            return Err(invalid(other, "--continue", "never, deps-ok or always"));
        }
    };
    let timeout = match args.timeout.as_deref() {
        None => None,
        Some(text) => Some(
            parse_duration(text)
                .ok_or_else(|| invalid(text, "--timeout", "a duration such as 90s"))?,
        ),
    };
    let exclude = match args.exclude_dependencies.as_deref() {
        None => ExcludeDependencies::None,
        Some(BARE) => ExcludeDependencies::All,
        Some("") => {
            return Err(invalid(
                "",
                "--exclude-dependencies",
                "a comma list of task names",
            ));
        }
        Some(list) => {
            let names: BTreeSet<String> = list.split(',').map(str::to_string).collect();
            if names.iter().any(String::is_empty) {
                return Err(invalid(
                    list,
                    "--exclude-dependencies",
                    "a comma list of task names",
                ));
            }
            ExcludeDependencies::Names(names)
        }
    };
    let output_logs = match args.output_logs.as_deref() {
        None => None,
        Some("full") => Some(OutputLogs::Full),
        Some("errors-only") => Some(OutputLogs::ErrorsOnly),
        Some("hash-only") => Some(OutputLogs::HashOnly),
        Some("none") => Some(OutputLogs::None),
        Some(other) => {
            return Err(invalid(
                other,
                "--output-logs",
                "full, errors-only, hash-only or none",
            ));
        }
    };
    let log_order = match args.log_order.as_deref() {
        None | Some("grouped") => LogOrder::Grouped,
        Some("stream") => LogOrder::Stream,
        Some(other) => return Err(invalid(other, "--log-order", "stream or grouped")),
    };
    let ui = match args.ui.as_deref() {
        None => None,
        Some(text) => Some(Ui::parse(text).ok_or_else(|| invalid(text, "--ui", "plain or tui"))?),
    };
    let plan = match (args.dry.as_deref(), args.graph.as_deref()) {
        (Some(BARE) | Some("text"), _) => Some(Plan::DryText),
        (Some("json"), _) => Some(Plan::DryJson),
        (Some(other), _) => return Err(invalid(other, "--dry", "text or json")),
        (None, Some(BARE) | Some("")) => Some(Plan::Graph(None)),
        (None, Some(path)) => Some(Plan::Graph(Some(path.to_string()))),
        (None, None) => None,
    };
    let filters = args
        .filter
        .iter()
        .map(|f| parse_filter(f))
        .collect::<Result<Vec<_>, _>>()?;
    let retry = match args.retry.as_deref() {
        None => None,
        Some(text) => Some(
            parse_integer(text)
                .filter(|n| *n <= 100)
                .ok_or_else(|| invalid(text, "--retry", "a number of extra attempts, 0 to 100"))?
                as u32,
        ),
    };
    let cache = cache_policy(args.cache.as_deref(), args.force, args.no_cache)?;
    if args.cache_dir.as_deref() == Some("") {
        return Err(invalid("", "--cache-dir", "a directory"));
    }
    let affected = match args.affected.as_deref() {
        None => None,
        Some(BARE) => Some(AffectedBase::Default),
        Some(LAST_GREEN) => Some(AffectedBase::LastGreen),
        Some(text) => Some(AffectedBase::Ref(
            check_ref(text).map_err(|p| p.diagnostic(text, RefSite::Flag))?,
        )),
    };
    let shard = shard_flag(&args, shard_env)?;
    let report_junit = match args.report.as_deref() {
        None => None,
        Some(text) => match text.split_once('=') {
            Some(("junit", path)) if !path.is_empty() => Some(path.to_string()),
            _ => return Err(invalid(text, "--report", "junit=PATH")),
        },
    };
    Ok(RunOptions {
        exit_code: args.exit_code,
        report_junit,
        events: args
            .events
            .filter(|p| !p.is_empty())
            .map(std::path::PathBuf::from),
        shard,
        summarize: target(args.summarize.as_deref()),
        profile: target(args.profile.as_deref()),
        affected,
        retry,
        cache,
        cache_dir: args.cache_dir,
        tasks: args.tasks,
        all: args.all,
        filters,
        concurrency,
        continue_mode,
        timeout,
        exclude,
        output_logs,
        log_order,
        ui,
        plan,
        forwarded: args.forwarded,
        remote_exec_off,
        download,
        frozen: args.frozen,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> RunArgs {
        RunArgs {
            tasks: vec!["build".into()],
            ..RunArgs::default()
        }
    }

    /// The engine's tests build `RunOptions { .., ..RunOptions::default() }` for a bare `vx run`:
    /// that default is what an empty command line resolves to.
    #[test]
    fn an_empty_command_line_resolves_to_the_engines_default_options() {
        let resolved = resolve(RunArgs::default()).unwrap();
        assert_eq!(
            format!("{resolved:?}"),
            format!("{:?}", RunOptions::default())
        );
    }

    #[test]
    fn concurrency_takes_counts_and_percentages() {
        let mut a = args();
        a.concurrency = Some("50%".into());
        let o = resolve(a).unwrap();
        assert_eq!(o.concurrency.unwrap().resolve(3), 2);
        let mut a = args();
        a.concurrency = Some("0".into());
        assert_eq!(
            resolve(a).unwrap_err().message,
            "invalid value `0` for --concurrency (expected N or N%, N ≥ 1)"
        );
    }

    #[test]
    fn dry_and_graph_exclude_each_other() {
        let mut a = args();
        a.dry = Some(BARE.into());
        a.graph = Some(BARE.into());
        assert_eq!(
            resolve(a).unwrap_err().message,
            "`--dry` cannot be combined with `--graph`"
        );
    }

    #[test]
    fn cache_segments_set_only_the_layer_they_name() {
        let policy = |spec: Option<&str>, force: bool| cache_policy(spec, force, false);
        let p = policy(Some("local:r"), false).unwrap();
        assert!(p.local_read && !p.local_write);
        let p = policy(Some("local:,remote:rw"), false).unwrap();
        assert!(!p.local_read && !p.local_write && p.remote_named);
        assert_eq!((p.remote_read, p.remote_write), (Some(true), Some(true)));
        let p = policy(Some("remote:w"), true).unwrap();
        assert_eq!(
            (p.remote_read, p.remote_write),
            (Some(false), Some(true)),
            "--force turns both reads off"
        );
        assert_eq!(policy(None, false).unwrap().remote_read, None);
        let off = cache_policy(None, false, true).unwrap();
        assert_eq!(
            (off.remote_read, off.remote_write),
            (Some(false), Some(false))
        );
        let p = policy(None, true).unwrap();
        assert!(!p.local_read && p.local_write);
        assert!(policy(Some("remote:"), false).unwrap().local_read);
        let message = |spec| policy(Some(spec), false).unwrap_err().message;
        assert_eq!(
            message("disk:r"),
            "invalid --cache layer `disk` (layers: local, remote)"
        );
        assert_eq!(message("local:x"), "invalid --cache flag `x` (flags: r, w)");
        assert_eq!(
            message("local:r,local:w"),
            "--cache names the layer `local` twice"
        );
        assert!(cache_policy(Some("local:r"), false, true).is_err());
        assert!(cache_policy(None, true, true).is_err());
        let off = cache_policy(None, false, true).unwrap();
        assert!(!off.local_read && !off.local_write);
    }

    #[test]
    fn remote_exec_and_download_take_their_words() {
        let o = resolve(args()).unwrap();
        assert!(!o.remote_exec_off);
        assert_eq!(o.download, Download::All);
        let mut a = args();
        a.remote_exec = Some("off".into());
        a.download = Some("toplevel".into());
        let o = resolve(a).unwrap();
        assert!(o.remote_exec_off);
        assert_eq!(o.download, Download::Toplevel);
        let mut a = args();
        a.download = Some("none".into());
        assert_eq!(resolve(a).unwrap().download, Download::None);
        let mut a = args();
        a.download = Some("some".into());
        assert_eq!(
            resolve(a).unwrap_err().message,
            "invalid value `some` for --download (expected all, toplevel or none)"
        );
        let mut a = args();
        a.remote_exec = Some("on".into());
        assert_eq!(
            resolve(a).unwrap_err().message,
            "invalid value `on` for --remote-exec (expected auto or off)"
        );
    }

    #[test]
    fn summarize_and_profile_take_an_optional_path_and_exclude_plans() {
        let mut a = args();
        a.summarize = Some(BARE.into());
        a.profile = Some("out/trace.json".into());
        let o = resolve(a).unwrap();
        assert_eq!(o.summarize, Some(Target::Default));
        assert_eq!(o.profile, Some(Target::Path("out/trace.json".into())));
        let mut a = args();
        a.summarize = Some(String::new());
        assert_eq!(resolve(a).unwrap().summarize, Some(Target::Default));
        let mut a = args();
        a.graph = Some(BARE.into());
        a.profile = Some(BARE.into());
        assert_eq!(
            resolve(a).unwrap_err().message,
            "`--graph` cannot be combined with `--profile`"
        );
    }

    #[test]
    fn affected_takes_a_bare_flag_or_one_checked_ref() {
        let affected = |value: &str| {
            let mut a = args();
            a.affected = Some(value.into());
            resolve(a)
        };
        assert_eq!(
            affected(BARE).unwrap().affected,
            Some(AffectedBase::Default)
        );
        assert!(affected(BARE).unwrap().has_selection());
        assert_eq!(
            affected("main...HEAD").unwrap().affected,
            Some(AffectedBase::Ref("main".into()))
        );
        assert_eq!(
            affected("last-green").unwrap().affected,
            Some(AffectedBase::LastGreen)
        );
        let refused = affected("main..next").unwrap_err();
        assert_eq!(
            refused.message,
            "--affected takes one base ref; `main..next` is a range"
        );
        assert_eq!(refused.hints, ["pass `--affected=main` instead"]);
        assert_eq!(
            affected("").unwrap_err().message,
            "`--affected=` names no ref"
        );
    }
}
