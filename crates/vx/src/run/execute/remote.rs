//! Remote execution (REM-10 … REM-14): tasks that opt in with `remote` run on a REAPI server
//! instead of a local process, beside the local slots.
//!
//! How this works: [`RemoteExec`] is the run's client of `[workspace.remote-execution]`. When a
//! remote task misses the cache, the loop (`Run::start_remote`) gathers on its own thread what
//! only it knows — the task's input paths, the upstream outputs on disk or by digest, the
//! `extra-inputs` — into a [`Job`], and [`RemoteExec::start`] runs the job on a thread of its
//! own: the input root is hashed (each file once per identity, for the whole run), only the
//! blobs the server lacks are uploaded, `Execute` is followed to the end, the streams and the
//! outputs (filtered through the declared globs) come back, and the outputs are written into the
//! workspace when the task's are downloaded (REM-14). The thread ends with one
//! [`Msg::Remote`](super::Msg::Remote) whose [`End`] the loop turns into a completion like a
//! local one: failure propagation, retries, the save guard and saving are shared.
//!
//! A server that cannot be used — unreachable, without execution, failing an upload, a stream or
//! a download — never fails a task: the task runs locally, and the rest of the run's remote
//! tasks with it (one warning). A server that ran the action and answered with a non-OK status
//! fails the task (REM-13).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use vx_core::config::{RemoteExecutionConfig, TaskConfig};
use vx_core::env::is_secret_name;
use vx_core::schedule::Scheduler;
use vx_core::TaskId;
use vx_exec::{Completion, ExecEvent, ExitReason, RunningTask, Stream};
use vx_reapi::proto::ActionResult;
use vx_reapi::{
    Blob, Client, ClientConfig, Code, Error, FileDigests, Input, InputRoot, RemoteTask,
};

use super::attempt::Attempt;
use super::{environment, kind_of, task, Context, Kind, Msg, Run};
use crate::options::{Download, RunOptions};
use crate::render::reporter::Reporter;
use crate::run::cache::outputs::Outputs;
use crate::run::outcome::{CacheKind, Notice};
use crate::run::plan::Plan;
use vx_core::globs::literal_prefix;

/// REM-10's defaults.
pub const DEFAULT_TOKEN_ENV: &str = "VX_REMOTE_EXEC_TOKEN";
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// The run's remote executor.
pub struct RemoteExec {
    client: Client,
    /// The URL as shown in messages.
    pub shown: String,
    platform: BTreeMap<String, String>,
    path_tail: String,
    /// How many actions may be in flight at once (REM-11).
    pub max_in_flight: u32,
    /// Every local file hashed once per identity, for the whole run (REM-12).
    digests: FileDigests,
    /// The server's batch limit, once its capabilities were asked, or why it cannot execute.
    ready: OnceLock<Result<u64, String>>,
}

/// What a remote attempt needs that only the run loop knows.
#[derive(Clone)]
pub struct Job {
    pub id: TaskId,
    pub task: RemoteTask,
    pub root: PathBuf,
    /// Root-relative paths read from disk into the input root: the task's inputs, its folded
    /// upstreams' outputs on disk and the `extra-inputs` matches.
    pub local: Vec<String>,
    /// Entries known only by digest: outputs of remote upstreams not downloaded.
    pub remote: Vec<(String, Input)>,
    /// The task's declared outputs: what comes back is filtered through them (REM-13).
    pub outputs: Outputs,
    /// Write the outputs into the workspace (REM-14).
    pub download: bool,
    /// Cache reads are off (`--force`, `--no-cache`): the server's action cache is not asked.
    pub skip_cache_lookup: bool,
}

/// How a remote attempt ended.
pub enum End {
    /// The server ran the action, or answered from its action cache.
    Ran(Box<Ran>),
    /// The server answered with a non-OK status: the task fails with this line (REM-13), with
    /// whatever output the server kept.
    Failed {
        line: String,
        streams: [Vec<u8>; 2],
        /// The result's exit code when it has one, else 1.
        exit_code: i32,
        timed_out: bool,
    },
    /// The server could not be used: the task runs locally, and so do later remote tasks.
    Unavailable(String),
    /// The run is stopping: the operation was cancelled on the server.
    Cancelled,
}

/// A remote result.
pub struct Ran {
    pub exit_code: i32,
    /// Stdout, then stderr: their interleaving is not known remotely (REM-13).
    pub streams: [Vec<u8>; 2],
    /// Served from the server's action cache.
    pub cached: bool,
    /// The worker's time, or the wall time of the call when the server does not say.
    pub duration: Duration,
    /// The declared outputs, by digest, for dependants.
    pub produced: Arc<Produced>,
    /// Whether they were written into the workspace.
    pub downloaded: bool,
    /// The server started the action again after losing its worker, this many times.
    pub requeued: u32,
}

/// The declared outputs of a remote result: entries by digest, for a remote dependant's input
/// root, and the result to download them from when a local dependant needs them on disk
/// (REM-14).
pub struct Produced {
    pub entries: Vec<(String, Input)>,
    pub result: ActionResult,
    pub outputs: Outputs,
}

/// The end of a remote attempt, said exactly once: by the attempt, or, when the thread could
/// not start or panicked, when it is dropped.
struct Once(Option<Box<dyn FnOnce(End) + Send>>);

impl Once {
    fn say(&mut self, end: End) {
        if let Some(say) = self.0.take() {
            say(end);
        }
    }
}

impl Drop for Once {
    fn drop(&mut self) {
        self.say(End::Unavailable(
            "remote execution: the attempt's thread ended without an answer".to_string(),
        ));
    }
}

/// The loop's handle on a remote attempt: stopping it cancels the operation.
#[derive(Clone)]
pub struct Handle {
    cancel: Arc<AtomicBool>,
}

impl RunningTask for Handle {
    fn pid(&self) -> Option<i32> {
        None
    }

    fn stop(&self, _signal: i32) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    fn kill(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// The attempt's thread sends its end after the cancellation; the loop waits for that.
    fn wait_stopped(&self) {}

    fn clone_box(&self) -> Box<dyn RunningTask> {
        Box::new(self.clone())
    }
}

impl RemoteExec {
    /// The executor of `config` (REM-10); `slots` is the run's concurrency, for the default
    /// `max-in-flight`. The token is read from the variable `token-env` names.
    pub fn new(
        config: &RemoteExecutionConfig,
        env: &BTreeMap<String, String>,
        slots: u32,
    ) -> Result<RemoteExec, String> {
        let url = config.url.clone().unwrap_or_default();
        let shown = vx_store::layer::http::shown_url(&url);
        let token_env = config.token_env.as_deref().unwrap_or(DEFAULT_TOKEN_ENV);
        let client = Client::new(&ClientConfig {
            url,
            instance_name: config.instance_name.clone().unwrap_or_default(),
            token: env.get(token_env).filter(|t| !t.is_empty()).cloned(),
            connect_timeout: CONNECT_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
        })
        .map_err(|problem| format!("remote execution {shown}: {problem}"))?;
        Ok(RemoteExec {
            client,
            shown,
            platform: config.platform.clone(),
            path_tail: config
                .path
                .clone()
                .unwrap_or_else(|| DEFAULT_PATH.to_string()),
            max_in_flight: config.max_in_flight.unwrap_or(4 * slots).max(1),
            digests: FileDigests::new(),
            ready: OnceLock::new(),
        })
    }

    /// The action of an attempt (REM-12): the platform is the workspace's overridden by the
    /// task's.
    pub fn task(
        &self,
        config: &TaskConfig,
        script: String,
        dir: &str,
        env: BTreeMap<String, String>,
        timeout: Option<Duration>,
    ) -> RemoteTask {
        let mut platform = self.platform.clone();
        if let Some(vx_core::config::RemoteTask::Detailed(remote)) = config.remote.as_deref() {
            platform.extend(remote.platform.clone());
        }
        let cache = config.cache.as_deref();
        RemoteTask {
            script,
            dir: dir.to_string(),
            env: sent_environment(config, env),
            path_tail: self.path_tail.clone(),
            outputs: cache.and_then(|c| c.outputs.clone()).unwrap_or_default(),
            workspace_outputs: cache
                .map(|c| c.workspace_outputs.clone())
                .unwrap_or_default(),
            platform,
            timeout,
        }
    }

    /// Starts `job` on a thread of its own; `end` hears how it ended, once.
    pub fn start(
        self: &Arc<Self>,
        job: Job,
        end: impl FnOnce(End) + Send + 'static,
    ) -> Box<dyn RunningTask> {
        let cancel = Arc::new(AtomicBool::new(false));
        let handle = Handle {
            cancel: cancel.clone(),
        };
        let exec = self.clone();
        let name = format!("vx-remote {}", job.id);
        // The loop waits for this end: it is said on every way out, a thread that could not
        // start or a panic included (as the server being unusable: the task runs locally).
        let mut end = Once(Some(Box::new(end)));
        let spawned = std::thread::Builder::new().name(name).spawn(move || {
            let ended = exec.attempt(&job, &cancel);
            end.say(ended);
        });
        if let Err(error) = spawned {
            tracing::warn!(%error, "could not start a remote attempt's thread");
        }
        Box::new(handle)
    }

    /// The server's batch limit, asked once per run; an error when it cannot execute.
    fn ready(&self) -> Result<u64, String> {
        self.ready
            .get_or_init(|| {
                let capabilities = self
                    .client
                    .capabilities()
                    .map_err(|e| format!("remote execution {}: {}", self.shown, e))?;
                if !capabilities.exec_enabled {
                    return Err(format!(
                        "remote execution {}: the server does not execute actions",
                        self.shown
                    ));
                }
                if !capabilities.digest_functions.iter().any(|f| f == "SHA256") {
                    return Err(format!(
                        "remote execution {}: the server does not use SHA-256 digests",
                        self.shown
                    ));
                }
                Ok(capabilities.max_batch)
            })
            .clone()
    }

    fn attempt(&self, job: &Job, cancel: &AtomicBool) -> End {
        let started = Instant::now();
        let unavailable = |what: &str, error: &Error| {
            End::Unavailable(format!("remote execution {}: {what}: {error}", self.shown))
        };
        let max_batch = match self.ready() {
            Ok(max_batch) => max_batch,
            Err(line) => return End::Unavailable(line),
        };
        let mut root = InputRoot::new();
        if !job.task.dir.is_empty() {
            let _ = root.add(&job.task.dir, Input::Directory);
        }
        for path in &job.local {
            match root.add_from_disk(&job.root, path, &self.digests) {
                Ok(()) => {}
                // Listed, then deleted: the key saw it absent or the save guard will see it moved.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return End::Failed {
                        line: format!("vx: cannot send `{path}` to the remote executor: {e}"),
                        streams: Default::default(),
                        exit_code: 1,
                        timed_out: false,
                    }
                }
            }
        }
        for (path, input) in &job.remote {
            let _ = root.add(path, input.clone());
        }
        let built = match root.build() {
            Ok(built) => built,
            Err(problem) => {
                return End::Failed {
                    line: format!("vx: cannot build the remote input root: {problem}"),
                    streams: Default::default(),
                    exit_code: 1,
                    timed_out: false,
                }
            }
        };
        let action = job.task.build(&built.digest);
        let mut blobs = built.blobs;
        blobs.push(Blob::from_bytes(action.command));
        blobs.push(Blob::from_bytes(action.action));
        let uploaded = with_retries(cancel, || self.client.upload_missing(&blobs, max_batch));
        match uploaded {
            Ok(_) => {}
            Err(Error::Cancelled) => return End::Cancelled,
            Err(error) => return unavailable("uploading the inputs", &error),
        }
        let execution = with_retries(cancel, || {
            self.client
                .execute(&action.digest, job.skip_cache_lookup, cancel, |_| {})
        });
        let execution = match execution {
            Ok(execution) => execution,
            Err(Error::Cancelled) => return End::Cancelled,
            Err(error) => return unavailable("executing", &error),
        };
        let result = execution.result();
        let streams = match self.client.streams(&result, max_batch) {
            Ok(streams) => streams,
            Err(error) => return unavailable("reading the output streams", &error),
        };
        if let Some((code, message)) = execution.failure() {
            return End::Failed {
                line: format!(
                    "vx: remote execution failed: {}: {message}",
                    vx_reapi::code_name(code)
                ),
                streams,
                exit_code: if result.exit_code != 0 {
                    result.exit_code
                } else {
                    1
                },
                timed_out: code == Code::DeadlineExceeded,
            };
        }
        let wanted = |path: &str| job.outputs.covers(path);
        let entries = match self.client.result_entries(&result, max_batch) {
            Ok(entries) => entries
                .into_iter()
                .filter(|(path, input)| matches!(input, Input::Directory) || wanted(path))
                .collect(),
            Err(error) => return unavailable("reading the outputs", &error),
        };
        if job.download {
            if let Err(error) = self
                .client
                .write_outputs(&result, &job.root, max_batch, &wanted)
            {
                return unavailable("downloading the outputs", &error);
            }
        }
        End::Ran(Box::new(Ran {
            exit_code: result.exit_code,
            streams,
            cached: execution.cached(),
            duration: execution
                .worker_duration()
                .unwrap_or_else(|| started.elapsed()),
            produced: Arc::new(Produced {
                entries,
                result,
                outputs: job.outputs.clone(),
            }),
            downloaded: job.download,
            requeued: execution.requeued,
        }))
    }

    /// Writes a kept result's declared outputs into the workspace: a local task needs them
    /// (REM-14).
    pub fn download(&self, produced: &Produced, root: &std::path::Path) -> Result<(), String> {
        let max_batch = self.ready()?;
        self.client
            .write_outputs(&produced.result, root, max_batch, &|path| {
                produced.outputs.covers(path)
            })
            .map(|_| ())
            .map_err(|error| format!("remote execution {}: {error}", self.shown))
    }
}

/// What of a task's environment goes to a remote worker (REM-12): layers 2–5 of EXEC-4, so
/// the allowlist's values of this machine (`HOME`, `TERM`, `LANG`, …) stay here unless the
/// task passes them through or defines them. `PATH` is the action's own.
pub fn sent_environment(
    config: &TaskConfig,
    env: BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let declared = |name: &str| {
        config.env.as_ref().is_some_and(|e| {
            e.define.contains_key(name)
                || e.pass_through
                    .iter()
                    .any(|entry| match entry.strip_suffix('*') {
                        Some(prefix) => name.starts_with(prefix),
                        None => entry == name,
                    })
        })
    };
    env.into_iter()
        .filter(|(name, _)| {
            name == "FORCE_COLOR"
                || !vx_core::env::ALLOWLIST.contains(&name.as_str())
                || declared(name)
        })
        .collect()
}

/// The names of a task's environment (EXEC-4 layers 2–5) that hold secrets (EXEC-5): named
/// like one or listed in `env.secret`, with a value, or holding one of the `known` secret
/// values (the remote credentials, whatever the variable passing them is called). Such a task
/// never runs remotely (REM-11).
pub fn secret_names(
    config: &TaskConfig,
    env: &BTreeMap<String, String>,
    known: &[String],
) -> Vec<String> {
    let listed: &[String] = config.env.as_ref().map_or(&[], |e| &e.secret);
    let mut names: Vec<String> = env
        .iter()
        .filter(|(name, value)| {
            !value.is_empty()
                && (is_secret_name(name) || listed.contains(name) || known.contains(value))
        })
        .map(|(name, _)| name.clone())
        .collect();
    names.sort();
    names
}

/// A remote attempt's end as a process's would be: `exit_code` after `duration`, no resource
/// usage (not known remotely).
fn completion(exit_code: i32, duration: Duration) -> Completion {
    Completion {
        exit: ExitReason::Code(exit_code),
        exit_code,
        timed_out: false,
        stopped: false,
        killed: false,
        duration,
        usage: None,
        sandbox: None,
    }
}

/// How many times a call the server refused for load is tried, and the longest wait between two.
const TRIES: u32 = 8;
const LONGEST_WAIT: Duration = Duration::from_secs(2);

/// Runs `call` again while the server answers `RESOURCE_EXHAUSTED` or `UNAVAILABLE` (an engine
/// over its RPC limit, a connection dropped), waiting 100 ms, then twice as long each time up
/// to 2 s, at most [`TRIES`] times in all (about 9 s); `cancel` ends the wait with
/// [`Error::Cancelled`]. Bazel retries the same codes.
fn with_retries<T>(
    cancel: &AtomicBool,
    call: impl FnMut() -> Result<T, Error>,
) -> Result<T, Error> {
    retrying(cancel, Duration::from_millis(100), call)
}

fn retrying<T>(
    cancel: &AtomicBool,
    first_wait: Duration,
    mut call: impl FnMut() -> Result<T, Error>,
) -> Result<T, Error> {
    let mut wait = first_wait;
    let mut tries = 1;
    loop {
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        match call() {
            Err(error)
                if tries < TRIES
                    && matches!(
                        error.code(),
                        Some(Code::ResourceExhausted | Code::Unavailable)
                    ) =>
            {
                tracing::debug!(%error, tries, "remote execution: trying again");
                let until = Instant::now() + wait;
                while Instant::now() < until {
                    if cancel.load(Ordering::Relaxed) {
                        return Err(Error::Cancelled);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                wait = (wait * 2).min(LONGEST_WAIT);
                tries += 1;
            }
            other => return other,
        }
    }
}

/// The values of the remote executor's token variable: masked in every task's output like
/// `env.secret` values (EXEC-5).
pub fn secret_values(
    config: Option<&RemoteExecutionConfig>,
    env: &BTreeMap<String, String>,
) -> Vec<String> {
    let Some(config) = config else {
        return Vec::new();
    };
    let name = config.token_env.as_deref().unwrap_or(DEFAULT_TOKEN_ENV);
    env.get(name)
        .filter(|value| !value.is_empty())
        .cloned()
        .into_iter()
        .collect()
}

/// Where a task runs (REM-11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    Remote,
    Local,
    /// It asks for remote execution but its environment holds these secrets.
    LocalForSecrets(Vec<String>),
    /// It asks for remote execution but this output glob has no fixed directory below the
    /// workspace root: the action would have to send the whole root back, which runners do not
    /// capture.
    LocalForOutputs(String),
}

/// Where node `i` runs, as far as the configuration and the flags say: a cached one-shot task
/// with `remote`, with `[workspace.remote-execution]` configured, `--remote-exec` not `off`,
/// and no secret in its environment, runs remotely.
pub fn placement(
    plan: &Plan,
    options: &RunOptions,
    host: &BTreeMap<String, String>,
    i: usize,
) -> Placement {
    let config = task(plan, i);
    let asks = config.remote.is_some()
        && config.cache.is_some()
        && kind_of(config) == Kind::OneShot
        && config.interactive != Some(true);
    if !asks || options.remote_exec_off || plan.workspace.settings.remote_execution.is_none() {
        return Placement::Local;
    }
    let settings = &plan.workspace.settings;
    let mut known = secret_values(settings.remote_execution.as_ref(), host);
    known.extend(crate::run::cache::remote::secret_values(
        settings.remote_cache.as_ref(),
        host,
    ));
    let sent = sent_environment(config, environment(plan, host, i));
    let secrets = secret_names(config, &sent, &known);
    if !secrets.is_empty() {
        return Placement::LocalForSecrets(secrets);
    }
    let in_root = plan.workspace.projects[plan.graph.nodes[i].project]
        .dir
        .is_empty();
    let cache = config.cache.as_deref().expect("checked above");
    let project = cache.outputs.iter().flatten().filter(|_| in_root);
    let unbounded = project
        .chain(&cache.workspace_outputs)
        .find(|glob| !glob.starts_with('!') && literal_prefix(glob).is_empty());
    match unbounded {
        Some(glob) => Placement::LocalForOutputs(glob.clone()),
        None => Placement::Remote,
    }
}

/// The run's remote executor, with every remote node marked in the scheduler; what stays
/// local and why is said once (REM-11). `None` when no task runs remotely.
pub(super) fn place(
    plan: &Plan,
    options: &RunOptions,
    ctx: &Context,
    scheduler: &mut Scheduler,
    reporter: &mut Reporter,
) -> Option<Arc<RemoteExec>> {
    let asking: Vec<usize> = (0..plan.graph.nodes.len())
        .filter(|&i| task(plan, i).remote.is_some())
        .collect();
    if asking.is_empty() || options.remote_exec_off {
        return None;
    }
    let Some(config) = plan.workspace.settings.remote_execution.as_ref() else {
        let what = match asking.len() {
            1 => format!("{} asks", plan.graph.nodes[asking[0]].id),
            n => format!("{n} tasks ask"),
        };
        reporter.notice(Notice::note(format!(
            "{what} for remote execution, but [workspace.remote-execution] is not configured; running locally"
        )));
        return None;
    };
    let mut remote = Vec::new();
    for i in asking {
        match placement(plan, options, &ctx.host_env, i) {
            Placement::Remote => remote.push(i),
            Placement::Local => {}
            Placement::LocalForSecrets(names) => {
                let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                reporter.notice(Notice::note(format!(
                    "{}: runs locally because its environment holds a secret ({})",
                    plan.graph.nodes[i].id,
                    names.join(", ")
                )));
            }
            Placement::LocalForOutputs(glob) => {
                reporter.notice(Notice::note(format!(
                    "{}: runs locally because its output glob `{glob}` names no directory below the workspace root",
                    plan.graph.nodes[i].id
                )));
            }
        }
    }
    if remote.is_empty() {
        return None;
    }
    let exec = match RemoteExec::new(config, &ctx.host_env, ctx.slots) {
        Ok(exec) => Arc::new(exec),
        Err(line) => {
            reporter.notice(Notice::warning(format!("{line}; running locally")));
            return None;
        }
    };
    for i in remote {
        scheduler.set_remote(i, true);
    }
    Some(exec)
}

impl Run<'_> {
    /// What a remote attempt of node `i` sends (REM-12): its input files, the outputs of the
    /// upstreams its key folds (from disk, or by digest when they stayed on the server), and its
    /// `extra-inputs`.
    pub(super) fn remote_job(&mut self, i: usize, attempt: &Attempt) -> Result<Job, String> {
        let exec = self.remote.clone().expect("a remote node has an executor");
        let node = &self.plan.graph.nodes[i];
        let id = node.id.clone();
        let config = task(self.plan, i);
        let mut local = self
            .cache
            .keys
            .input_listing(&id)
            .map_err(|e| format!("vx: {}", e.0))?;
        let folded = self.cache.keys.folded_upstreams(&id);
        let mut remote = Vec::new();
        for &d in &node.deps {
            let upstream = &self.plan.graph.nodes[d].id;
            if !folded.contains(upstream) {
                continue;
            }
            match self.produced.get(&d) {
                Some(produced) => remote.extend(produced.entries.iter().cloned()),
                None => local.extend(self.cache.outputs_on_disk(upstream).map_err(|e| {
                    format!(
                        "vx: {id}: cannot read the outputs of {upstream}: {}",
                        crate::run::cache::outputs::plain(&e)
                    )
                })?),
            }
        }
        if let Some(vx_core::config::RemoteTask::Detailed(r)) = config.remote.as_deref() {
            if !r.extra_inputs.is_empty() {
                local.extend(self.cache.matching(&r.extra_inputs).map_err(|e| {
                    format!(
                        "vx: {id}: cannot read remote.extra-inputs: {}",
                        crate::run::cache::outputs::plain(&e)
                    )
                })?);
            }
        }
        local.sort();
        local.dedup();
        let outputs = self
            .cache
            .outputs(&id)
            .expect("a remote task is cached (CFG-9)");
        let download = match self.options.download {
            Download::All => true,
            Download::Toplevel => self.is_shown(i),
            Download::None => false,
        };
        Ok(Job {
            id,
            task: exec.task(
                config,
                attempt.script.clone(),
                &attempt.dir,
                attempt.env.clone(),
                attempt.timeout,
            ),
            root: self.plan.workspace.root.clone(),
            local,
            remote,
            outputs,
            download,
            skip_cache_lookup: !self.options.cache.local_read,
        })
    }

    pub(super) fn start_remote_attempt(&mut self, i: usize, job: Job) -> Box<dyn RunningTask> {
        self.cache.keys.files_may_have_changed();
        let exec = self.remote.clone().expect("a remote node has an executor");
        let tx = self.tx.clone();
        exec.start(job, move |end| {
            let _ = tx.send(Msg::Remote(i, Box::new(end)));
        })
    }

    /// A remote attempt ended: its output goes where a process's would, and it completes like
    /// one (REM-13); a server that could not be used sends the task to a local slot.
    pub(super) fn remote_ended(&mut self, i: usize, end: End) {
        if !self.live.contains_key(&i) {
            return;
        }
        let started = self.live[&i].attempt_started;
        match end {
            End::Ran(ran) => {
                let ran = *ran;
                if ran.requeued > 0 {
                    let times = match ran.requeued {
                        1 => "once".to_string(),
                        n => format!("{n} times"),
                    };
                    self.note(
                        i,
                        &format!("vx: the remote executor lost a worker running this task and ran it again ({times})"),
                    );
                }
                self.remote_output(i, ran.streams);
                let live = self.live.get_mut(&i).expect("checked above");
                live.remote_cached = ran.cached && live.cache_kind == CacheKind::Miss;
                if ran.downloaded {
                    self.produced.remove(&i);
                } else {
                    // REM-14: no local entry without the outputs on disk.
                    live.writes = false;
                    live.unsaved_reason = "not-downloaded";
                    self.produced.insert(i, ran.produced);
                }
                self.completed(i, completion(ran.exit_code, ran.duration));
            }
            End::Failed {
                line,
                streams,
                exit_code,
                timed_out,
            } => {
                self.remote_output(i, streams);
                self.note(i, &line);
                let mut failed = completion(exit_code, started.elapsed());
                failed.timed_out = timed_out;
                self.completed(i, failed);
            }
            End::Cancelled => {
                let mut stopped = completion(130, started.elapsed());
                stopped.stopped = true;
                self.completed(i, stopped);
            }
            End::Unavailable(line) => {
                self.remote_in_flight -= 1;
                self.remote_unusable(line);
                if self.stopping.is_some() {
                    let stopped = Completion {
                        stopped: true,
                        ..completion(130, started.elapsed())
                    };
                    self.remote_in_flight += 1;
                    self.completed(i, stopped);
                } else {
                    self.local_again.push(i);
                }
            }
        }
    }

    fn remote_output(&mut self, i: usize, streams: [Vec<u8>; 2]) {
        let [stdout, stderr] = streams;
        for (stream, bytes) in [(Stream::Stdout, stdout), (Stream::Stderr, stderr)] {
            if !bytes.is_empty() {
                self.exec_event(i, ExecEvent::Output { stream, bytes });
            }
        }
    }

    /// The server cannot be used: one warning, and every remote task not started yet runs
    /// locally.
    fn remote_unusable(&mut self, line: String) {
        if !self.remote_usable {
            return;
        }
        self.remote_usable = false;
        self.reporter.notice(Notice::warning(format!(
            "{line}; remote tasks run locally for the rest of this run"
        )));
        self.scheduler.disable_remote();
    }

    /// The run is stopping: tasks waiting for a local slot after their server failed never
    /// start; they end aborted like the other tasks the signal stopped.
    pub(super) fn abandon_local_again(&mut self) {
        for i in std::mem::take(&mut self.local_again) {
            let Some(live) = self.live.get_mut(&i) else {
                continue;
            };
            live.remote = None;
            // `completed` gives the slot back; this task never took one.
            self.running_slots += 1;
            let started = live.attempt_started;
            self.completed(
                i,
                Completion {
                    stopped: true,
                    ..completion(130, started.elapsed())
                },
            );
        }
    }

    /// A remote task whose server could not be used runs in a local slot, as it would have
    /// without `remote`: its outputs cleaned again, its sandbox (if any) applied.
    pub(super) fn run_locally_instead(&mut self, i: usize) {
        let id = self.plan.graph.nodes[i].id.clone();
        let Some(live) = self.live.get_mut(&i) else {
            return;
        };
        live.remote = None;
        let writes = live.writes;
        let route = live.route.clone();
        let mut spec = live.spec.clone();
        let started = live.attempt_started;
        self.running_slots += 1;
        self.scheduler.executing_locally(i);
        // REM-14: what its remote upstreams kept on the server is needed here now.
        if let Err(line) = self.download_upstreams(i) {
            self.note(i, &line);
            self.completed(i, completion(1, started.elapsed()));
            return;
        }
        if writes {
            let cleaned = self.cache.clean_for_retry(&id);
            self.relay_notices();
            if let Err(line) = cleaned {
                self.note(i, &line);
            }
        }
        if let Some(table) = &task(self.plan, i).sandbox {
            let mut env: BTreeMap<String, String> = spec
                .env
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string_lossy().into_owned(),
                        v.to_string_lossy().into_owned(),
                    )
                })
                .collect();
            match self.sandbox_task(i, table, &mut env, &route) {
                Ok((launch, sandbox)) => {
                    spec.env = env.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
                    spec.sandbox = Some(launch);
                    if let Some(live) = self.live.get_mut(&i) {
                        live.sandbox = Some(sandbox);
                    }
                }
                Err(line) => {
                    self.note(i, &line);
                    self.completed(i, completion(1, started.elapsed()));
                    return;
                }
            }
        }
        let handle = self.spawn_attempt(i, spec.clone(), &route);
        if let Some(live) = self.live.get_mut(&i) {
            live.spec = spec;
            live.handle = handle;
        }
    }

    /// REM-14: a task about to run locally needs on disk the outputs of its remote upstreams
    /// that stayed on the server; they are downloaded first, with a line saying so.
    pub(super) fn download_upstreams(&mut self, i: usize) -> Result<(), String> {
        let pending: Vec<usize> = self.plan.graph.nodes[i]
            .deps
            .iter()
            .copied()
            .filter(|d| self.produced.contains_key(d))
            .collect();
        let id = self.plan.graph.nodes[i].id.clone();
        for d in pending {
            let upstream = self.plan.graph.nodes[d].id.clone();
            self.reporter.notice(Notice::note(format!(
                "downloading outputs of {upstream} for {id}, which runs locally"
            )));
            let produced = self.produced.remove(&d).expect("filtered above");
            let exec = self
                .remote
                .clone()
                .expect("a remote result has an executor");
            let written = exec.download(&produced, &self.plan.workspace.root);
            self.cache.outputs_written(&produced.outputs);
            written.map_err(|problem| {
                format!("vx: {id}: cannot download the outputs of {upstream}: {problem}")
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vx_core::config::EnvConfig;

    fn config(env: Option<EnvConfig>) -> TaskConfig {
        TaskConfig {
            env: env.map(Box::new),
            ..TaskConfig::default()
        }
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn only_layers_2_to_5_leave_the_machine() {
        let env = map(&[
            ("HOME", "/home/me"),
            ("TERM", "xterm"),
            ("LANG", "C.UTF-8"),
            ("TZ", "UTC"),
            ("PATH", "/x/node_modules/.bin:/usr/bin"),
            ("FORCE_COLOR", "1"),
            ("VX_RUN_TASK", "lib#build"),
            ("MODE", "prod"),
            ("NODE_ENV", "production"),
        ]);
        let declared = config(Some(EnvConfig {
            pass_through: vec!["LANG".into(), "NODE_*".into()],
            define: map(&[("MODE", "prod"), ("TZ", "UTC")]),
            secret: Vec::new(),
        }));
        let sent = sent_environment(&declared, env.clone());
        assert_eq!(
            sent.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "FORCE_COLOR",
                "LANG",
                "MODE",
                "NODE_ENV",
                "TZ",
                "VX_RUN_TASK"
            ]
        );
        let plain = sent_environment(&config(None), env);
        assert_eq!(
            plain.keys().map(String::as_str).collect::<Vec<_>>(),
            ["FORCE_COLOR", "MODE", "NODE_ENV", "VX_RUN_TASK"],
            "what no layer 2–5 declared is vx's own or not from the allowlist"
        );
    }

    #[test]
    fn load_and_dropped_connections_are_tried_again_other_errors_are_not() {
        let never = AtomicBool::new(false);
        let status = |code| Error::Status {
            code,
            message: String::new(),
        };
        let mut calls = 0;
        let done = retrying(&never, Duration::from_millis(1), || {
            calls += 1;
            match calls {
                1 => Err(status(Code::ResourceExhausted)),
                2 => Err(status(Code::Unavailable)),
                _ => Ok(calls),
            }
        });
        assert_eq!(done.unwrap(), 3);
        let mut calls = 0;
        let refused = retrying(&never, Duration::from_millis(1), || -> Result<(), Error> {
            calls += 1;
            Err(status(Code::InvalidArgument))
        });
        assert!(matches!(
            refused,
            Err(Error::Status {
                code: Code::InvalidArgument,
                ..
            })
        ));
        assert_eq!(calls, 1, "a refusal is final");
        let mut calls = 0;
        let busy = retrying(&never, Duration::from_millis(1), || -> Result<(), Error> {
            calls += 1;
            Err(status(Code::ResourceExhausted))
        });
        assert!(busy.is_err());
        assert_eq!(calls, TRIES, "tried a bounded number of times");
        let cancelled = AtomicBool::new(true);
        let stopped = retrying(
            &cancelled,
            Duration::from_millis(1),
            || -> Result<(), Error> { panic!("not called once the run stops") },
        );
        assert!(matches!(stopped, Err(Error::Cancelled)));
    }

    #[test]
    fn secrets_are_named_or_listed_with_a_value() {
        let listed = config(Some(EnvConfig {
            secret: vec!["DEPLOY_HOOK".into()],
            ..EnvConfig::default()
        }));
        let env = map(&[
            ("NPM_TOKEN", "abcdef123456"),
            ("DEPLOY_HOOK", "https://x"),
            ("EMPTY_TOKEN", ""),
            ("CERT_FILE", "/etc/cert"),
            ("MODE", "prod"),
        ]);
        assert_eq!(
            secret_names(&listed, &env, &[]),
            ["DEPLOY_HOOK", "NPM_TOKEN"]
        );
        assert_eq!(secret_names(&config(None), &env, &[]), ["NPM_TOKEN"]);
        // A credential vx knows, under a name that does not look like one.
        let known = ["prod".to_string()];
        assert_eq!(
            secret_names(&config(None), &env, &known),
            ["MODE", "NPM_TOKEN"]
        );
    }
}
