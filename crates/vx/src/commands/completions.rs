//! `vx completions bash|zsh|fish` (INIT-6): a script that registers vx's completion with the
//! shell. The script does not list anything itself: on every Tab it asks vx (with
//! `VX_COMPLETE=<shell>` set, see [`serve`]) for the candidates, so it completes verbs and
//! flags of this very binary and, beyond other runners, the project names and task ids of the
//! workspace you are in.

use clap_complete::env::{Bash, CompleteEnv, Fish, Shells, Zsh};
use vx_core::suggest::did_you_mean;
use vx_core::Diagnostic;

use crate::render::out;
use vx_engine::error::Failure;
use vx_engine::exit;

/// The variable that turns a run of vx into a completion request.
const VAR: &str = "VX_COMPLETE";

const SHELLS: Shells<'static> = Shells(&[&Bash, &Zsh, &Fish]);

/// Answers a completion request and exits, when `VX_COMPLETE` names a shell; otherwise
/// returns at once (one variable lookup).
pub fn serve() {
    // The arguments that take a task, a project or a verb name their candidate functions
    // below (`add = ArgValueCompleter::new(…)` in `cli.rs`).
    CompleteEnv::with_factory(crate::cli::command)
        .var(VAR)
        .shells(SHELLS)
        .complete();
}

/// `vx completions <shell>`.
pub fn completions(shell: Option<&str>) -> Result<i32, Failure> {
    let names: Vec<&str> = SHELLS.names().collect();
    let Some(shell) = shell else {
        return Err(Failure::usage(format!(
            "`vx completions` needs a shell: {}",
            names.join(", ")
        )));
    };
    let Some(completer) = SHELLS.completer(shell) else {
        return Err(Diagnostic::new(format!("unknown shell `{shell}`"))
            .suggest(did_you_mean(shell, names.iter().copied()))
            .into());
    };
    let mut script = Vec::new();
    completer
        .write_registration(VAR, "vx", "vx", "vx", &mut script)
        .map_err(|e| Failure::usage(format!("cannot write the script: {e}")))?;
    out(&script);
    Ok(exit::SUCCESS)
}
