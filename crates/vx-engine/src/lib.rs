//! vx's run engine (ARCH-3): everything `vx run` does between a resolved command line and an
//! exit code. The modules follow the pipeline's order:
//!
//! 1. [`plan`]: discover the workspace, load configuration, build the task graph (asking git
//!    through `plan::affected` for `--affected` and changed-since filters), place each task
//!    (`plan::placement`); `plan::preview` lays out `--dry`, `plan::graph` draws `--graph`.
//! 2. [`setup`]: open the store, take the run lock, list the workspace's files once.
//! 3. [`keys`]: derive each ready task's key (`keys::lockfiles`: the lockfile per project).
//! 4. [`execute`]: the loop that schedules, spawns, supervises and reports every task through
//!    `vx_exec::Executor`, with its restore and save lanes (`execute::lane`) and readiness of
//!    persistent tasks (`execute::ready`).
//! 5. [`cache`]: per task, hit or execute before, save after, behind the cache layers.
//! 6. [`record`]: what the run writes down: history, fingerprints, retention, the summary
//!    (`record::summary`) and the Chrome trace (`record::profile`).
//!
//! [`snapshot`] replays a command whose last run found everything up to date. [`outcome`] is
//! the vocabulary of what happened; [`report`] is the only way the engine speaks to a person
//! (the binary's `render/` implements its `Reporter`). [`host`] is what vx asks of the machine:
//! its environment, memory budget, signals, and the sandbox with its network proxy. [`options`]
//! are the resolved run options, [`error`] and [`exit`] how a command ends, and [`workspace`]
//! loads a workspace for any verb.
//!
//! The engine prints nothing: `print!`, `std::io::stdout` and `std::io::stderr` are refused
//! here by the compiler's lints (`clippy.toml`).

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod cache;
pub mod cache_dir;
pub mod clock;
pub mod error;
pub mod execute;
pub mod exit;
pub mod host;
pub mod ids;
pub mod keys;
pub mod options;
pub mod outcome;
pub mod plan;
pub mod record;
pub mod report;
pub mod setup;
pub mod snapshot;
pub mod workspace;
