//! `vx init` and `vx migrate`, which live in the `vx-init` crate: their arguments handed over,
//! and what they say printed on the terminal.

use std::path::Path;

use vx_engine::error::Failure;

use crate::cli::{InitArgs, MigrateArgs};
use crate::render;

/// The terminal `vx init` speaks to.
struct Terminal;

impl vx_init::Output for Terminal {
    fn out(&mut self, text: &str) {
        render::out_str(text);
    }

    fn err(&mut self, text: &str) {
        render::stderr(text);
    }

    fn stdout_for_child(&mut self) -> std::process::Stdio {
        render::stderr_for_child()
    }
}

pub fn init(cwd: &Path, args: InitArgs) -> Result<i32, Failure> {
    let options = vx_init::Options {
        dry: args.dry,
        force: args.force,
        learn: args.learn,
    };
    vx_init::init(cwd, options, &mut Terminal)
}

pub fn migrate(cwd: &Path, args: MigrateArgs) -> Result<i32, Failure> {
    let options = vx_init::Options {
        dry: args.dry,
        force: args.force,
        learn: Vec::new(),
    };
    vx_init::migrate(cwd, &args.tool, options, &mut Terminal)
}
