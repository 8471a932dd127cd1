//! The `vx` binary: parse the command line (`cli`), resolve options (`options`), run a verb
//! (`commands`, `run`), and print through `render`, the only module that writes to the terminal.
//! Every path ends in one exit code from `exit`.

// Only `render` prints (it allows these; `crates/vx/clippy.toml` bans `io::stdout`/`io::stderr`).
#![warn(clippy::print_stdout, clippy::print_stderr)]

mod candidates;
mod cli;
mod commands;
mod error;
mod foreign;
mod lsp;
mod mcp;
mod options;
mod render;
mod run;
mod verbs;
mod watch;

use cli::{Parsed, Verb};
use error::report;
use vx_engine::error::Failure;
use vx_engine::exit;

/// mimalloc rather than the system allocator: a warm run allocates and frees a few hundred
/// thousand small strings (paths, ids, configuration), and glibc's malloc was a quarter of its
/// instructions. The `system-allocator` feature leaves it out, for heap profilers that see only
/// `malloc` (`valgrind --tool=massif`; docs/benchmarks.md, § What the profiles show).
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // Memory freed during a run goes back to the system within 5 ms, not a second: most runs
    // are shorter than mimalloc's default delay (`vx_exec::allocator`). Without mimalloc as
    // the allocator the option would set nothing that is used.
    #[cfg(not(feature = "system-allocator"))]
    vx_exec::allocator::return_freed_memory_promptly();
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(vx_exec::sandbox_init::INIT_ARG))
    {
        let args: Vec<std::ffi::OsString> = std::env::args_os().skip(2).collect();
        std::process::exit(vx_exec::sandbox_init::serve(&args));
    }
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(vx_exec::learn::LEARN_ARG))
    {
        let args: Vec<std::ffi::OsString> = std::env::args_os().skip(2).collect();
        std::process::exit(vx_exec::learn::serve(&args));
    }
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(vx_exec::guard::GUARD_ARG))
    {
        std::process::exit(vx_exec::guard::serve());
    }
    // A Tab in a shell that sourced `vx completions <shell>`: answer and exit.
    commands::completions::serve();
    vx_exec::guard::enable(guard_program());
    init_tracing();
    let code = match real_main() {
        Ok(code) => code,
        Err(failure) => {
            report(&failure);
            failure.exit_code()
        }
    };
    // Nothing survives vx: whatever is left in its task cgroups goes with their cgroups. Then
    // every task has been stopped or released, and the guard may exit without killing.
    vx_exec::cgroup::cleanup();
    vx_exec::guard::shutdown();
    vx_engine::host::sandbox::remove_scratch();
    std::process::exit(code);
}

/// What the guard of EXEC-7 executes: this very binary. `/proc/self/exe` still names it when
/// the file was replaced or deleted during the run (a rebuild); elsewhere, the path vx was
/// started from.
fn guard_program() -> std::path::PathBuf {
    let proc_exe = std::path::PathBuf::from("/proc/self/exe");
    if proc_exe.exists() {
        return proc_exe;
    }
    std::env::current_exe().unwrap_or_else(|_| std::path::PathBuf::from("vx"))
}

fn real_main() -> Result<i32, Failure> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).map(std::ffi::OsString::as_os_str) == Some(commands::man::ARG.as_ref()) {
        return commands::man::write(&args[2..]);
    }
    let cli = match cli::parse(args) {
        Parsed::Cli(cli) => cli,
        Parsed::Print(text) => {
            render::out_str(&text);
            return Ok(exit::SUCCESS);
        }
        Parsed::Error(diagnostics) => return Err(Failure::User(diagnostics)),
    };
    if let Some(dir) = &cli.cwd {
        if !dir.is_dir() {
            return Err(Failure::usage(format!(
                "-C `{}`: not a directory",
                dir.display()
            )));
        }
        std::env::set_current_dir(dir)
            .map_err(|e| Failure::usage(format!("-C `{}`: {e}", dir.display())))?;
    }
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::usage(format!("cannot read the current directory: {e}")))?;
    if cli.version {
        return Ok(commands::version());
    }
    match cli.verb {
        None => {
            render::out_str(&cli::help(None).unwrap_or_default());
            Ok(exit::SUCCESS)
        }
        Some(Verb::Run(args)) => {
            let options = options::resolve(*args)?;
            run::run(&cwd, options)
        }
        Some(Verb::Watch(args)) => watch::watch(&cwd, *args),
        Some(Verb::Show(args)) => commands::show::show(&cwd, args),
        Some(Verb::Why(args)) => commands::why::why(&cwd, args),
        Some(Verb::Last(args)) => commands::last::last(&cwd, args),
        Some(Verb::Cache(cli::CacheVerb::Prune(args))) => commands::cache::prune(&cwd, args),
        Some(Verb::Cache(cli::CacheVerb::Clean(args))) => commands::cache::clean(&cwd, args),
        Some(Verb::Init(args)) => commands::init::init(&cwd, args),
        Some(Verb::Migrate(args)) => commands::init::migrate(&cwd, args),
        Some(Verb::Lock(args)) => commands::lock::lock(&cwd, args),
        Some(Verb::Prune(args)) => commands::prune::prune(&cwd, args),
        Some(Verb::Info(args)) => commands::info::info(&cwd, args),
        Some(Verb::Report(args)) => commands::report::report(&cwd, args),
        Some(Verb::Schema) => Ok(commands::schema()),
        Some(Verb::Lsp { stdio: _ }) => lsp::serve(&cwd),
        Some(Verb::Mcp { read_only }) => mcp::serve(&cwd, read_only),
        Some(Verb::Completions { shell }) => commands::completions::completions(shell.as_deref()),
        Some(Verb::Version { extra }) => {
            if let Some(first) = extra.first() {
                return Err(Failure::usage(format!(
                    "`vx version` takes no arguments (got `{first}`)"
                )));
            }
            Ok(commands::version())
        }
        Some(Verb::Help { verb }) => match cli::help(verb.as_deref()) {
            Some(text) => {
                render::out_str(&text);
                Ok(exit::SUCCESS)
            }
            None => Err(commands::unknown_verb(
                &cwd,
                verb.as_deref().unwrap_or_default(),
            )),
        },
        Some(Verb::Other(words)) => {
            let word = words
                .first()
                .map(|w| w.to_string_lossy().into_owned())
                .unwrap_or_default();
            Err(commands::unknown_verb(&cwd, &word))
        }
    }
}

/// `VX_LOG` sets the filter of vx's own diagnostics on stderr (default `warn`); while the live
/// region is drawn they go to `<cache-dir>/logs/vx.log` instead (UI-6).
fn init_tracing() {
    let filter = match std::env::var("VX_LOG") {
        // notify warns when a deleted directory's watch is already gone: nothing to act on.
        Err(_) => tracing_subscriber::EnvFilter::new("warn,notify=error"),
        Ok(value) => tracing_subscriber::EnvFilter::try_new(&value).unwrap_or_else(|_| {
            render::warning(&format!(
                "ignoring VX_LOG=`{value}`: not a log filter (write e.g. `debug` or `vx=trace`)"
            ));
            tracing_subscriber::EnvFilter::new("warn")
        }),
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(render::live::diagnostics)
        .without_time()
        .with_ansi(false)
        .try_init();
}
