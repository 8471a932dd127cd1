//! `vx __vx_man DIR` (hidden, for packagers): writes the man pages, `vx.1` and one page per verb
//! (`vx-run.1`, `vx-init.1`, …), from the same clap command that parses the arguments, so a page
//! never disagrees with `--help`. `scripts/package` puts them in the tarball under
//! `share/man/man1` (docs/install.md).

use std::ffi::OsString;
use std::path::PathBuf;

use vx_engine::error::Failure;
use vx_engine::exit;

/// The first argument that asks for the pages.
pub const ARG: &str = "__vx_man";

/// `args`: what follows [`ARG`], the directory to write into (created if missing).
pub fn write(args: &[OsString]) -> Result<i32, Failure> {
    let [dir] = args else {
        return Err(Failure::usage(format!(
            "`vx {ARG}` needs one argument: the directory to write the man pages into"
        )));
    };
    let dir = PathBuf::from(dir);
    fs_err::create_dir_all(&dir).map_err(|e| Failure::usage(e.to_string()))?;
    clap_mangen::generate_to(crate::cli::command(), &dir).map_err(|e| {
        Failure::usage(format!(
            "cannot write the man pages into `{}`: {e}",
            dir.display()
        ))
    })?;
    Ok(exit::SUCCESS)
}
