//! A task attempt as it would run anywhere: the script, the project directory relative to the
//! root, the environment (EXEC-4's layers, merged), the timeout, and the declared inputs and
//! outputs. [`Attempt::local_spec`] makes the local executor's `SpawnSpec` of it; remote
//! execution will make a REAPI `Action` of the same value (REM-12).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use vx_core::config::CacheConfig;
use vx_exec::{SandboxLaunch, SpawnSpec, StdinMode};

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// The `sh -c` script: the command with any forwarded arguments (EXEC-2, EXEC-3).
    pub script: String,
    /// The project directory relative to the root (empty for the root project).
    pub dir: String,
    /// The child's environment: EXEC-4's layers merged, a sandbox's changes applied.
    pub env: BTreeMap<String, String>,
    /// How long the attempt may run (EXEC-8); `None` when nothing bounds it here.
    pub timeout: Option<Duration>,
    /// The declared inputs: project-relative globs, then root-relative ones (KEY-10). The local
    /// executor does not need them (the task reads the workspace); a remote one builds its
    /// input root from them (REM-12).
    #[allow(dead_code)]
    pub inputs: Vec<String>,
    #[allow(dead_code)]
    pub workspace_inputs: Vec<String>,
    /// The declared outputs: project-relative globs, then root-relative ones (STORE-5); a
    /// remote executor asks for their fixed prefixes back (REM-12).
    #[allow(dead_code)]
    pub outputs: Vec<String>,
    #[allow(dead_code)]
    pub workspace_outputs: Vec<String>,
}

/// How the local executor runs an attempt, beside what the attempt says.
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

impl Attempt {
    /// An attempt of `script` in `dir`, declaring what `cache` declares (nothing without one).
    pub fn new(
        script: String,
        dir: &str,
        env: BTreeMap<String, String>,
        timeout: Option<Duration>,
        cache: Option<&CacheConfig>,
    ) -> Attempt {
        Attempt {
            script,
            dir: dir.to_string(),
            env,
            timeout,
            inputs: cache.and_then(|c| c.inputs.clone()).unwrap_or_default(),
            workspace_inputs: cache
                .map(|c| c.workspace_inputs.clone())
                .unwrap_or_default(),
            outputs: cache.and_then(|c| c.outputs.clone()).unwrap_or_default(),
            workspace_outputs: cache
                .map(|c| c.workspace_outputs.clone())
                .unwrap_or_default(),
        }
    }

    /// The local executor's spawn: `sh -c <script>` in the project directory under `root`.
    /// Under `vx init --learn` (`VX_LEARN_TRACE` in vx's environment), a task that is not
    /// sandboxed runs traced instead ([`learn_traced`]).
    pub fn local_spec(&self, root: &Path, local: Local) -> SpawnSpec {
        let mut spec = self.plain_spec(root, local);
        if let (Some(dir), None) = (std::env::var_os(vx_exec::learn::LEARN_TRACE), &spec.sandbox) {
            let id = self.env.get("VX_RUN_TASK").map_or("", String::as_str);
            learn_traced(
                &mut spec,
                &Path::new(&dir).join(vx_exec::learn::learn_file(id)),
            );
        }
        spec
    }

    fn plain_spec(&self, root: &Path, local: Local) -> SpawnSpec {
        SpawnSpec {
            program: local.sh.unwrap_or_else(|| PathBuf::from("/nonexistent/sh")),
            arg0: OsString::from("sh"),
            args: vec![OsString::from("-c"), OsString::from(&self.script)],
            cwd: root.join(&self.dir),
            env: self.env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
            stdin: local.stdin,
            timeout: self.timeout,
            kill_grace: local.kill_grace,
            drain: Duration::from_millis(250),
            stop_leftovers_on_exit: local.stop_leftovers_on_exit,
            sandbox: local.sandbox,
        }
    }
}

/// `spec` run under `vx __vx_learn <report> -- <program> <args>…` (issue 40's `--learn`):
/// the same directory and environment, the command traced.
fn learn_traced(spec: &mut SpawnSpec, report: &Path) {
    let Ok(vx) = std::env::current_exe() else {
        return;
    };
    spec.args = vx_exec::learn::learn_args(report, &spec.program, &spec.args);
    spec.program = vx;
    spec.arg0 = OsString::from("vx");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_spec_runs_the_script_with_sh_in_the_project_directory() {
        let mut env = BTreeMap::new();
        env.insert("PATH".to_string(), "/bin".to_string());
        let attempt = Attempt::new(
            "make 'a b'".into(),
            "packages/lib",
            env,
            Some(Duration::from_secs(5)),
            None,
        );
        let spec = attempt.local_spec(
            Path::new("/ws"),
            Local {
                sh: Some(PathBuf::from("/bin/sh")),
                stdin: StdinMode::Null,
                kill_grace: Duration::from_secs(2),
                stop_leftovers_on_exit: true,
                sandbox: None,
            },
        );
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
        assert!(attempt.outputs.is_empty() && attempt.inputs.is_empty());
    }

    #[test]
    fn an_attempt_declares_what_its_cache_table_declares() {
        let cache = CacheConfig {
            inputs: Some(vec!["src/**".into()]),
            workspace_inputs: vec!["tsconfig.base.json".into()],
            outputs: Some(vec!["dist/**".into()]),
            workspace_outputs: vec!["coverage/lib/**".into()],
            ..CacheConfig::default()
        };
        let attempt = Attempt::new("tsc".into(), "lib", BTreeMap::new(), None, Some(&cache));
        assert_eq!(attempt.inputs, ["src/**"]);
        assert_eq!(attempt.workspace_inputs, ["tsconfig.base.json"]);
        assert_eq!(attempt.outputs, ["dist/**"]);
        assert_eq!(attempt.workspace_outputs, ["coverage/lib/**"]);
    }

    #[test]
    fn without_sh_the_spawn_fails_instead_of_running_something_else() {
        let attempt = Attempt::new("true".into(), "", BTreeMap::new(), None, None);
        let spec = attempt.local_spec(
            Path::new("/ws"),
            Local {
                sh: None,
                stdin: StdinMode::Null,
                kill_grace: Duration::ZERO,
                stop_leftovers_on_exit: true,
                sandbox: None,
            },
        );
        assert_eq!(spec.program, PathBuf::from("/nonexistent/sh"));
        assert_eq!(spec.cwd, PathBuf::from("/ws"));
    }
}
