//! `vx init` and `vx migrate` (INIT-1): write `vx.toml` files from `package.json` scripts and
//! another runner's configuration. The crate prints nothing itself: what it has to say goes
//! to the [`Output`] the caller gives (clippy refuses `print!`, `io::stdout` and `io::stderr`).
//!
//! Start at [`init`]. It finds the repository's root (the package-manager workspace root, or
//! the nearest directory with a `package.json`), reads every `package.json` vx would load
//! (`vx_workspace::package_workspace` expands the member globs exactly as discovery does),
//! maps each one's scripts (`scripts`, INIT-2) and renders the files (`toml`). Every file is
//! parsed back with vx's own loader before anything is written, so a file `vx init` writes
//! always loads. Existing files are kept unless `--force`; `--dry` prints the files instead
//! of writing them. The report lists what was written or kept, the TODO comments grouped by
//! reason, and the next command to run.

#![deny(clippy::print_stdout, clippy::print_stderr)]

mod carried;
mod compare;
mod edges;
mod editor;
mod layout;
mod learn;
mod manifest;
mod nx;
mod orchestration;
mod plan;
mod scripts;
mod shell;
mod toml;
mod turbo;
mod write;

use std::path::Path;

use vx_core::Diagnostic;
use vx_engine::error::Failure;

use plan::From;
pub use write::{Options, Output};

/// `vx init`: the configuration from `package.json` scripts (and `turbo.json` or Nx's, when
/// there).
pub fn init(cwd: &Path, options: Options, output: &mut dyn Output) -> Result<i32, Failure> {
    write::write(cwd, options, From::Scripts, output)
}

/// `vx migrate turbo|nx`: `vx init` with that tool's configuration required.
pub fn migrate(
    cwd: &Path,
    tool: &str,
    options: Options,
    output: &mut dyn Output,
) -> Result<i32, Failure> {
    let from = match tool {
        "turbo" => From::Turbo,
        "nx" => From::Nx,
        other => {
            let mut problem = Diagnostic::new(format!(
                "unknown tool `{other}` for vx migrate; it takes `turbo` or `nx`"
            ));
            if let Some(best) = vx_core::suggest::did_you_mean(other, ["turbo", "nx"]) {
                problem = problem.hint(format!("did you mean `{best}`?"));
            }
            return Err(Failure::from(problem));
        }
    };
    let options = Options {
        learn: Vec::new(),
        ..options
    };
    write::write(cwd, options, from, output)
}
