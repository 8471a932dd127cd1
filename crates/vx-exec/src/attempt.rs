//! A task attempt as any executor takes it (ARCH-2): the script, the project directory below the
//! root, the environment (EXEC-4's layers, merged), the timeout; how the local executor would run
//! it ([`Local`]); and, when the attempt is placed on a remote executor, what it reads and what
//! comes back ([`Remote`], REM-12). [`Attempt::local_spec`] makes the supervisor's
//! [`SpawnSpec`] of it; a REAPI executor makes an `Action` of the same value.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::event::{SandboxLaunch, SpawnSpec, StdinMode};

/// See the module documentation.
#[derive(Clone)]
pub struct Attempt {
    /// The task's id (`app#build`): thread names and messages.
    pub task: String,
    /// The `sh -c` script: the command with any forwarded arguments (EXEC-2, EXEC-3).
    pub script: String,
    /// The workspace root.
    pub root: PathBuf,
    /// The project directory relative to the root (empty for the root project).
    pub dir: String,
    /// The child's environment: EXEC-4's layers merged, a sandbox's changes applied.
    pub env: BTreeMap<String, String>,
    /// How long the attempt may run (EXEC-8); `None` when nothing bounds it here.
    pub timeout: Option<Duration>,
    /// How a local process runs it: also what a remote attempt falls back to.
    pub local: Local,
    /// Set when the attempt is placed on a remote executor (REM-11).
    pub remote: Option<Remote>,
}

/// How the local executor runs an attempt, beside what the attempt says.
#[derive(Debug, Clone)]
pub struct Local {
    /// The `sh` to run the script with (`None`: none was found; the spawn fails and says so).
    pub sh: Option<PathBuf>,
    pub stdin: StdinMode,
    pub kill_grace: Duration,
    /// One-shot tasks: what the leader leaves behind is stopped when it exits (EXEC-11).
    pub stop_leftovers_on_exit: bool,
    /// SBX-2: the bubblewrap launch when the task is sandboxed.
    pub sandbox: Option<SandboxLaunch>,
}

/// What a remote attempt sends and takes back (REM-12 … REM-14).
#[derive(Clone)]
pub struct Remote {
    /// Root-relative paths read from disk into the input root: the task's inputs, the outputs
    /// on disk of the upstreams its key folds, the `extra-inputs` matches.
    pub files: Vec<String>,
    /// Upstreams whose outputs the executor kept (a `Completion` with `outputs_kept`) and this
    /// attempt reads: they go into the input root by digest.
    pub kept_upstreams: Vec<String>,
    /// The environment the worker gets: EXEC-4's layers 2–5, not this machine's allowlist.
    pub env: BTreeMap<String, String>,
    /// The task's own platform properties, over the executor's.
    pub platform: BTreeMap<String, String>,
    /// The declared outputs: project-relative globs, then root-relative ones (STORE-5); the
    /// action asks for their fixed prefixes back.
    pub outputs: Vec<String>,
    pub workspace_outputs: Vec<String>,
    /// Whether a root-relative path the server sends back is a declared output.
    pub is_output: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    /// Write the outputs into the workspace (REM-14); otherwise the executor keeps them.
    pub download: bool,
    /// Cache reads are off (`--force`, `--no-cache`): the server's action cache is not asked.
    pub skip_cache_lookup: bool,
}

impl Attempt {
    /// The local executor's spawn: `sh -c <script>` in the project directory. Under
    /// `vx init --learn` (`VX_LEARN_TRACE` in vx's environment), a task that is not sandboxed
    /// runs traced instead ([`learn_traced`]).
    pub fn local_spec(&self) -> SpawnSpec {
        let mut spec = self.plain_spec();
        if let (Some(dir), None) = (std::env::var_os(crate::learn::LEARN_TRACE), &spec.sandbox) {
            let id = self.env.get("VX_RUN_TASK").map_or("", String::as_str);
            learn_traced(
                &mut spec,
                &Path::new(&dir).join(crate::learn::learn_file(id)),
            );
        }
        spec
    }

    fn plain_spec(&self) -> SpawnSpec {
        let local = &self.local;
        SpawnSpec {
            program: local
                .sh
                .clone()
                .unwrap_or_else(|| PathBuf::from("/nonexistent/sh")),
            arg0: OsString::from("sh"),
            args: vec![OsString::from("-c"), OsString::from(&self.script)],
            cwd: self.root.join(&self.dir),
            env: self.env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
            stdin: local.stdin,
            timeout: self.timeout,
            kill_grace: local.kill_grace,
            drain: Duration::from_millis(250),
            stop_leftovers_on_exit: local.stop_leftovers_on_exit,
            sandbox: local.sandbox.clone(),
        }
    }
}

/// `spec` run under `vx __vx_learn <report> -- <program> <args>…` (`vx init --learn`): the
/// same directory and environment, the command traced.
fn learn_traced(spec: &mut SpawnSpec, report: &Path) {
    let Ok(vx) = std::env::current_exe() else {
        return;
    };
    spec.args = crate::learn::learn_args(report, &spec.program, &spec.args);
    spec.program = vx;
    spec.arg0 = OsString::from("vx");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(script: &str, dir: &str, sh: Option<&str>) -> Attempt {
        let mut env = BTreeMap::new();
        env.insert("PATH".to_string(), "/bin".to_string());
        Attempt {
            task: "lib#build".into(),
            script: script.into(),
            root: PathBuf::from("/ws"),
            dir: dir.into(),
            env,
            timeout: Some(Duration::from_secs(5)),
            local: Local {
                sh: sh.map(PathBuf::from),
                stdin: StdinMode::Null,
                kill_grace: Duration::from_secs(2),
                stop_leftovers_on_exit: true,
                sandbox: None,
            },
            remote: None,
        }
    }

    #[test]
    fn the_local_spec_runs_the_script_with_sh_in_the_project_directory() {
        let spec = attempt("make 'a b'", "packages/lib", Some("/bin/sh")).local_spec();
        assert_eq!(spec.program, PathBuf::from("/bin/sh"));
        assert_eq!(spec.arg0, OsString::from("sh"));
        assert_eq!(
            spec.args,
            vec![OsString::from("-c"), OsString::from("make 'a b'")]
        );
        assert_eq!(spec.cwd, PathBuf::from("/ws/packages/lib"));
        assert_eq!(
            spec.env,
            vec![(OsString::from("PATH"), OsString::from("/bin"))]
        );
        assert_eq!(spec.timeout, Some(Duration::from_secs(5)));
        assert_eq!(spec.kill_grace, Duration::from_secs(2));
    }

    #[test]
    fn without_sh_the_spawn_fails_instead_of_running_something_else() {
        let spec = attempt("true", "", None).local_spec();
        assert_eq!(spec.program, PathBuf::from("/nonexistent/sh"));
        assert_eq!(spec.cwd, PathBuf::from("/ws"));
    }
}
