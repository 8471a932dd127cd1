//! The short commands vx runs for itself — git, runtime probes — as opposed to tasks. They go
//! through the same supervisor as tasks (nothing else in vx may wait for children), in their
//! own session, with a timeout, and with whatever they leave running stopped when they exit.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{Output, SpawnSpec, StdinMode, Supervisor};

/// Runs `program` (with `argv[0]` = `arg0`) in `cwd` with exactly `env`, to the end.
pub fn run(
    program: PathBuf,
    arg0: &str,
    args: Vec<OsString>,
    cwd: &Path,
    env: Vec<(OsString, OsString)>,
    timeout: Duration,
) -> Output {
    Supervisor::new().output(SpawnSpec {
        program,
        arg0: arg0.into(),
        args,
        cwd: cwd.to_path_buf(),
        env,
        stdin: StdinMode::Null,
        timeout: Some(timeout),
        kill_grace: Duration::from_secs(2),
        drain: Duration::from_millis(250),
        stop_leftovers_on_exit: true,
        sandbox: None,
    })
}

/// vx's environment for its own git commands, without the variables that would point git at
/// another repository or index (ENV-1).
pub fn git_env(host_env: &BTreeMap<String, String>) -> Vec<(OsString, OsString)> {
    host_env
        .iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "GIT_DIR" | "GIT_WORK_TREE" | "GIT_INDEX_FILE" | "GIT_OBJECT_DIRECTORY"
            )
        })
        .map(|(k, v)| (k.into(), v.into()))
        .collect()
}

/// The first executable file named `program` in the directories of `path`.
pub fn find_on_path(program: &str, path: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(program))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}
