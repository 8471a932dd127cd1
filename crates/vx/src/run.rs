//! `vx run` wired: the engine's pipeline (`vx_engine`: plan, set up, key, execute, cache,
//! record) driven with the terminal's reporter (`render::reporter::Terminal`), its notices
//! printed through `render`, and the executor chosen (the local supervisor, behind REAPI's when
//! tasks are placed remotely).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use vx_core::units::parse_duration;

use vx_engine::error::Failure;
use vx_engine::execute::{self, Context, Msg, Parts, Run};
use vx_engine::host::env::{host_env, truthy};
use vx_engine::options::{Plan as PlanFlag, RunOptions};
use vx_engine::outcome::Notice;
use vx_engine::record::profile::Phase;
use vx_engine::report::{Flow, Reporter};
use vx_engine::{cache, host, plan, setup, snapshot};
use vx_exec::host::available_cpus;

use crate::render::reporter::Terminal;
use crate::render::style::{colour_enabled, Style};

/// How many messages (output chunks, events) may wait for the run loop.
const MESSAGES_IN_FLIGHT: usize = 64;

/// The default kill grace (EXEC-6).
const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);

/// When a persistent task that is still not ready gets its note (EXEC-13).
const DEFAULT_READY_NOTICE: Duration = Duration::from_secs(10);

/// How a run ends: with vx's exit (everything left to the exit), or as one cycle of `vx watch`
/// (everything dropped, so the next cycle starts clean; ready persistent tasks go on in
/// `Servers`).
pub enum Ending<'w> {
    Exit,
    Cycle(&'w mut execute::Servers),
}

pub fn run(cwd: &Path, options: RunOptions) -> Result<i32, Failure> {
    run_as(cwd, &options, Ending::Exit)
}

pub fn run_as(cwd: &Path, options: &RunOptions, ending: Ending<'_>) -> Result<i32, Failure> {
    let result = run_routed(cwd, options, ending);
    host::signals::route_to_run(None);
    result
}

fn run_routed(cwd: &Path, options: &RunOptions, ending: Ending<'_>) -> Result<i32, Failure> {
    let origin = Instant::now();
    let started = SystemTime::now();
    // Bounded: a task that writes faster than the loop can handle blocks on its pipe instead of
    // piling its output up in vx's memory (STORE-6); nothing on the loop's thread ever sends.
    let (tx, rx) = crossbeam_channel::bounded::<Msg>(MESSAGES_IN_FLIGHT);
    // Signals are taken over before any child exists, so Ctrl-C always reaches vx's handler.
    host::signals::install()?;
    host::signals::route_to_run(Some(std::sync::Arc::new(tx.clone())));
    let options = options.clone();
    let host_env = host_env();
    // A command whose last run found everything up to date, with nothing moved since, is
    // replayed from its snapshot without loading the workspace (`snapshot.rs`).
    let request = match &ending {
        Ending::Exit => vx_engine::workspace::root_only(cwd)
            .ok()
            .and_then(|(root, settings)| {
                let dir = vx_engine::cache_dir::cache_dir(
                    &root,
                    cwd,
                    options.cache_dir.as_deref(),
                    &host_env,
                    settings.cache_dir.as_deref(),
                );
                snapshot::Request::new(
                    &dir,
                    cwd,
                    &options,
                    &host_env,
                    started,
                    crate::render::terminals(),
                )
                .map(|request| (root, request))
            }),
        Ending::Cycle(_) => None,
    };
    if let Some((root, request)) = &request {
        let how = snapshot::Replay {
            root,
            host_env: &host_env,
            origin,
        };
        if let Some(code) =
            snapshot::replay(request, &how, || Box::new(terminal(&host_env, &options)))
        {
            return Ok(code);
        }
    }
    let mut phases = Vec::new();
    let (plan, opened, scanned) = if options.plan.is_none() {
        plan_and_open(cwd, &options, &host_env, origin, &mut phases)?
    } else {
        let workspace = plan::discover(cwd, options.frozen)?;
        (plan::build(workspace, cwd, &options)?, None, None)
    };
    for notice in &plan.notices {
        crate::render::say(notice.clone());
    }
    // SEL-6: nothing affected is a success with one line (and maybe a hint) on stderr.
    if let Some(notice) = plan.affected.as_ref().and_then(|a| a.nothing.as_ref()) {
        crate::render::notice(&notice.message);
        for hint in &notice.hints {
            crate::render::stderr(&format!("  hint: {hint}\n"));
        }
        if options.exit_code {
            crate::render::notice("--exit-code: nothing would run");
        }
        for notice in plan::remember_unaffected(&plan, cwd, &options) {
            crate::render::say(notice);
        }
        return Ok(vx_engine::exit::SUCCESS);
    }
    let planned = Instant::now();
    let sh = find_on_path("sh", host_env.get("PATH").map(String::as_str).unwrap_or(""));
    // SCHED-1, SCHED-9: a count given by the flag or the workspace is fixed; otherwise the
    // count starts at the CPUs and moves with what the machine has free.
    let fixed = match options.concurrency {
        Some(c) => Some(c.resolve(available_cpus())),
        None => plan.workspace.settings.concurrency,
    };
    let adaptive = match fixed {
        Some(_) => None,
        None => Some(vx_core::schedule::adaptive::Adaptive::new(available_cpus())),
    };
    let slots = fixed.unwrap_or_else(available_cpus).max(1);
    if options.shard == Some(vx_engine::options::ShardFlag::Auto) {
        crate::render::out_str(&shard_auto(&plan, cwd, &options));
        return Ok(vx_engine::exit::SUCCESS);
    }
    match &options.plan {
        Some(PlanFlag::DryText) => {
            let rows =
                setup::dry_rows(&plan, cwd, &options, &host_env, sh, &mut crate::render::say)?;
            crate::render::out_str(&plan::preview::dry_text(&plan, &rows, slots as usize));
            return Ok(dry_exit(&plan, &rows, options.exit_code));
        }
        Some(PlanFlag::DryJson) => {
            let rows =
                setup::dry_rows(&plan, cwd, &options, &host_env, sh, &mut crate::render::say)?;
            crate::render::out_str(&plan::preview::dry_json(&plan, &rows, slots as usize));
            return Ok(dry_exit(&plan, &rows, options.exit_code));
        }
        Some(PlanFlag::Graph(path)) => {
            let rows =
                setup::dry_rows(&plan, cwd, &options, &host_env, sh, &mut crate::render::say)?;
            match plan::graph::graph(&plan, &rows, path.as_deref(), &host_env)? {
                plan::graph::GraphOutput::Text(dot) => crate::render::out_str(&dot),
                plan::graph::GraphOutput::Written(notice) => crate::render::say(notice),
            }
            return Ok(vx_engine::exit::SUCCESS);
        }
        None => {}
    }
    let ci = host_env.get("CI").is_some_and(|v| truthy(v));
    if options.cache.remote_named
        && cache::remote::resolve(
            plan.workspace.settings.remote_cache.as_ref(),
            &host_env,
            &options.cache,
        )
        .is_none()
    {
        crate::render::notice("no remote cache is configured; --cache remote:… has no effect");
    }
    // Opened beside the plan when the cache existed; after it otherwise.
    let opened_beside = opened.is_some();
    let mut opened = match opened {
        Some(opened) => opened,
        None => {
            let dir = setup::resolve_cache_dir(&plan.workspace, cwd, &options, &host_env)?;
            setup::open_scanned(
                &plan.workspace.root,
                &dir,
                vx_store::Access::ReadWrite,
                Some(&mut crate::render::say),
                scanned,
            )?
        }
    };
    let cache_dir = opened.dir.clone();
    let mut opening_notices = std::mem::take(&mut opened.notices);
    let (memory_budget, said) = host::memory::Budget::from_env(&host_env);
    opening_notices.extend(said);
    phases.push(Phase::main("plan", origin, planned));
    phases.push(Phase {
        beside: opened_beside,
        ..Phase::main("open the cache", opened.span.0, opened.span.1)
    });
    let (cache, recorder, lock) =
        setup::run_cache(&plan, &options, &host_env, sh.clone(), opened, ci);
    let mut ctx = Context {
        cwd: cwd.to_path_buf(),
        cache_dir,
        origin,
        phases,
        kill_grace: env_duration(&host_env, "VX_KILL_GRACE").unwrap_or(DEFAULT_KILL_GRACE),
        env_timeout: env_duration(&host_env, "VX_TASK_TIMEOUT"),
        shard_wait: env_duration(&host_env, "VX_SHARD_WAIT"),
        ready_notice: env_duration(&host_env, "VX_READY_NOTICE").unwrap_or(DEFAULT_READY_NOTICE),
        sh,
        host_env: host_env.clone(),
        slots: slots.max(1),
        adaptive,
        memory_budget,
        lock,
        keeps_terminal: matches!(ending, Ending::Cycle(_)),
        snapshot: request.map(|(_, request)| request),
        remote: Vec::new(),
    };
    let mut reporter = terminal(&host_env, &options);
    for notice in opening_notices {
        reporter.notice(notice);
    }
    if host_env.get("GITHUB_ACTIONS").is_some_and(|v| truthy(v)) {
        reporter.use_github_groups(vx_engine::ids::random_hex(16));
    } else if let Some(ci) = crate::render::ci_log::CiLog::detect(&host_env) {
        reporter.use_ci_sections(ci);
    }
    let widest = plan
        .graph
        .nodes
        .iter()
        .filter(|n| !plan::is_group(&plan.workspace, &n.id))
        .map(|n| n.id.to_string().chars().count())
        .max()
        .unwrap_or(0);
    reporter.use_log_order(
        options.log_order,
        plan.graph.nodes.iter().map(|n| n.id.clone()).collect(),
        widest,
    );
    let (executor, remote) = executor(&plan, &options, &host_env, ctx.slots, &mut reporter);
    ctx.remote = remote;
    let reporter: Box<dyn Reporter> = match &options.events {
        Some(path) => {
            let ids = plan.graph.nodes.iter().map(|n| n.id.clone()).collect();
            let groups: Vec<bool> = plan
                .graph
                .nodes
                .iter()
                .map(|n| plan::is_group(&plan.workspace, &n.id))
                .collect();
            Box::new(crate::render::events::Events::new(
                reporter,
                &cwd.join(path),
                ids,
                &groups,
            ))
        }
        None => Box::new(reporter),
    };
    let parts = Parts {
        reporter,
        executor,
        cache,
        recorder,
        channel: (tx, rx),
    };
    let mut run = Run::new(&plan, &options, ctx, parts);
    let exit = matches!(ending, Ending::Exit);
    if let Ending::Cycle(servers) = ending {
        run = run.watching(servers);
    }
    let code = run.execute();
    if exit {
        run.end();
        // Like the run's tables, the plan is left to the exit that follows.
        std::mem::forget(plan);
    } else {
        run.close();
    }
    Ok(code)
}

/// The terminal's reporter for this command: coloured or not (UI-10), in its flow (UI-3).
fn terminal(host_env: &BTreeMap<String, String>, options: &RunOptions) -> Terminal {
    let lookup = |name: &str| host_env.get(name).cloned();
    let style = Style {
        colour: colour_enabled(&lookup),
    };
    let flow = Flow::of(host_env, options.has_selection());
    Terminal::new(style, flow, options.output_logs)
}

/// The run's executor (ARCH-2): the local supervisor, behind the remote executor when tasks
/// are placed remotely (REM-11); and the nodes placed there. What stays local is said once.
fn executor(
    plan: &plan::Plan,
    options: &RunOptions,
    host_env: &BTreeMap<String, String>,
    slots: u32,
    reporter: &mut dyn Reporter,
) -> (Box<dyn vx_exec::Executor>, Vec<usize>) {
    let local = Box::new(vx_exec::Supervisor::new());
    let placed = plan::placement::place(plan, options, host_env);
    for notice in placed.notices {
        reporter.notice(notice);
    }
    let config = plan.workspace.settings.remote_execution.as_ref();
    let Some(config) = config.filter(|_| !placed.remote.is_empty()) else {
        return (local, Vec::new());
    };
    match vx_reapi::RemoteExecutor::new(config, host_env, slots, local) {
        Ok(remote) => (Box::new(remote), placed.remote),
        Err(line) => {
            reporter.notice(Notice::warning(format!("{line}; running locally")));
            (Box::new(vx_exec::Supervisor::new()), Vec::new())
        }
    }
}

/// Plans the run (loading the workspace first) and, beside it on a helper thread, gets the
/// cache ready: opened, when its index already exists and the run lock is free at once
/// (`Some(Opened)`); otherwise the workspace's files listed, and the cache created only once
/// the plan holds (`None`, with the listing), so a run that fails planning creates nothing and
/// waits for nobody, and a planning error wins over an error opening the cache.
///
/// The helper starts before the workspace is loaded, from the root and cache directory that
/// `root_only` reads from the root's `vx.toml` alone. If the loaded workspace puts either
/// elsewhere, what the helper did is dropped and the cache is opened after the plan.
fn plan_and_open(
    cwd: &Path,
    options: &RunOptions,
    host_env: &BTreeMap<String, String>,
    origin: Instant,
    phases: &mut Vec<Phase>,
) -> Result<
    (
        plan::Plan,
        Option<setup::Opened>,
        Option<vx_workspace::tree::Tree>,
    ),
    Failure,
> {
    let guessed = vx_engine::workspace::root_only(cwd)
        .ok()
        .map(|(root, settings)| {
            let dir = vx_engine::cache_dir::cache_dir(
                &root,
                cwd,
                options.cache_dir.as_deref(),
                host_env,
                settings.cache_dir.as_deref(),
            );
            (root, dir)
        });
    let early_lock = guessed
        .as_ref()
        .filter(|(_, dir)| dir.join(vx_store::index::DB_FILE).is_file())
        .and_then(|(root, _)| vx_store::lock::try_acquire(root).ok()?);
    // `--profile`'s phases: loading and the graph on this thread, the helper's beside them.
    let load_and_build = |phases: &mut Vec<Phase>| -> Result<(plan::Plan, PathBuf), Failure> {
        let workspace = plan::discover(cwd, options.frozen)?;
        let loaded = Instant::now();
        phases.push(Phase::main("load the workspace", origin, loaded));
        let dir = setup::resolve_cache_dir(&workspace, cwd, options, host_env);
        let plan = plan::build(workspace, cwd, options)?;
        phases.push(Phase::main(
            "resolve the tasks, build the graph",
            loaded,
            Instant::now(),
        ));
        Ok((plan, dir?))
    };
    let beside = |name: &str, started: Instant| Phase {
        beside: true,
        ..Phase::main(name, started, Instant::now())
    };
    let Some((root, guessed_dir)) = guessed else {
        // `root_only` failed: loading fails the same way.
        return Ok((load_and_build(phases)?.0, None, None));
    };
    let same_place =
        |plan: &plan::Plan, dir: &Path| plan.workspace.root == root && dir == guessed_dir;
    let Some(lock) = early_lock else {
        // No cache yet (or its lock is taken): the workspace's files are listed beside the plan.
        // The phase starts when the helper is started (before the loading), however late a
        // loaded machine schedules its first instruction.
        let started = Instant::now();
        let (planned, scanned) = std::thread::scope(|scope| {
            let scanning = std::thread::Builder::new()
                .name("vx-scan".into())
                .spawn_scoped(scope, || {
                    let scanned = setup::scan(&root, &guessed_dir);
                    (scanned, beside("list the workspace's files", started))
                });
            let planned = load_and_build(phases);
            let scanned = scanning.ok().and_then(|handle| {
                let (scanned, phase) = handle.join().ok()?;
                phases.push(phase);
                scanned.ok()
            });
            (planned, scanned)
        });
        let (plan, dir) = planned?;
        let scanned = scanned.filter(|_| same_place(&plan, &dir));
        return Ok((plan, None, scanned));
    };
    let started = Instant::now();
    let (planned, opened) = std::thread::scope(|scope| {
        let opening = std::thread::Builder::new()
            .name("vx-open".into())
            .spawn_scoped(scope, || {
                setup::open_with(&root, &guessed_dir, vx_store::Access::ReadWrite, Some(lock))
            });
        let planned = load_and_build(phases);
        let opened = match opening {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(e) => Err(Failure::Internal(format!("cannot start a thread: {e}"))),
        };
        (planned, opened)
    });
    let (plan, dir) = planned?;
    if !same_place(&plan, &dir) {
        // Opened somewhere the workspace does not keep its cache: closed (with its lock), and
        // the right one opened after the plan.
        drop(opened);
        return Ok((plan, None, None));
    }
    let mut opened = opened?;
    opened.span.0 = started; // as above: from when the helper was started
    Ok((plan, Some(opened), None))
}

/// A duration variable; an invalid value draws one warning and the default applies (ENV-1).
fn env_duration(env: &BTreeMap<String, String>, name: &str) -> Option<Duration> {
    let value = env.get(name)?;
    let parsed = parse_duration(value);
    if parsed.is_none() {
        crate::render::warning(&format!(
            "ignoring {name}=`{value}`: not a duration (write e.g. `90s`)"
        ));
    }
    parsed
}

/// EXEC-1: `sh` is resolved once against vx's own PATH.
fn find_on_path(program: &str, path: &str) -> Option<PathBuf> {
    vx_exec::subprocess::find_on_path(program, path)
}

/// `--dry --shard auto` (SCHED-8): the expected wall of the plan on 1 to 16 runners, from the
/// durations this machine and the remote cache's records know.
fn shard_auto(plan: &plan::Plan, cwd: &Path, options: &RunOptions) -> String {
    let slots = plan::shard::slots(&plan.workspace, options);
    let place = plan::split_place(&plan.workspace, cwd, options, 0, None);
    let (inputs, said) = plan::split::estimate(&place, &plan::task_ids(&plan.table));
    for notice in said {
        crate::render::say(notice);
    }
    let rows = plan::shard::auto(&plan.workspace, &plan.graph, &inputs, slots);
    let units = plan::shard::known(&plan.workspace, &plan.graph, &inputs).0 == 0;
    let by = plan::shard::balanced_by(&plan.workspace, &plan.graph, &inputs);
    let mut text = format!(
        "runners  predicted wall  most tasks on one runner   ({slots} tasks at once on each; {by})\n"
    );
    let one = rows.first().map_or(1, |r| r.1.max(1));
    for (n, wall_ms, most) in rows {
        let wall = if units {
            format!("{:.1} tasks", wall_ms as f64 / 1000.0)
        } else {
            vx_core::units::format_duration(Duration::from_millis(wall_ms))
        };
        text.push_str(&format!(
            "{n:>7}  {wall:>14}  {most:>24}   {:.2}× one runner\n",
            one as f64 / wall_ms.max(1) as f64
        ));
    }
    text
}

/// SEL-9: `--dry`'s exit code. Without `--exit-code` 0; with it, 1 when the plan would execute
/// a task (one predicted to miss, or without a cache), said on one line with the first few, and
/// 0 when every planned task would be restored or is up to date.
fn dry_exit(plan: &plan::Plan, rows: &[plan::preview::DryRow], exit_code: bool) -> i32 {
    if !exit_code {
        return vx_engine::exit::SUCCESS;
    }
    use plan::preview::DryCache;
    let would: Vec<String> = rows
        .iter()
        .filter(|r| matches!(r.cache, DryCache::Miss | DryCache::NoCache))
        .map(|r| plan.graph.nodes[r.node].id.to_string())
        .collect();
    if would.is_empty() {
        crate::render::notice("--exit-code: nothing would run");
        return vx_engine::exit::SUCCESS;
    }
    const SHOWN: usize = 5;
    let mut named = would
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if would.len() > SHOWN {
        named.push_str(&format!(" and {} more", would.len() - SHOWN));
    }
    crate::render::notice(&format!(
        "--exit-code: {} would run: {named}",
        plan::preview::plural(would.len(), "task")
    ));
    vx_engine::exit::FAILURE
}
