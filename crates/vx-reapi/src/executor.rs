//! Remote execution behind the `Executor` seam (ARCH-2, REM-10 … REM-14).
//!
//! How this works: [`RemoteExecutor`] is the run's client of `[workspace.remote-execution]`, and
//! it wraps the local executor: an [`Attempt`] without a [`Remote`] part goes to the local one
//! unchanged. A remote attempt runs on a thread of its own: the input root is built from the
//! attempt's files (each hashed once per identity, for the whole run) and the outputs of the
//! upstreams this executor kept (by digest), only the blobs the server lacks are uploaded,
//! `Execute` is followed to the end, the streams and the outputs (filtered through the declared
//! globs) come back, and the outputs are written into the workspace when the attempt downloads
//! them; otherwise they are kept here, by task, until a dependant reads them by digest or a
//! local one needs them on disk ([`Executor::fetch_kept_outputs`]). The attempt ends as a local
//! one would: output events, then one `Completed`.
//!
//! A server that cannot be used — unreachable, without execution, failing an upload, a stream
//! or a download — never fails a task: the attempt is `Declined` and the run loop runs it
//! locally. A server that ran the action and answered with a non-OK status fails the task with
//! a `Note` saying why (REM-13).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use vx_core::config::RemoteExecutionConfig;
use vx_exec::{
    Attempt, Completion, ExecEvent, Executor, KeptOutputsError, Remote, RunningTask, Stream,
};

use crate::proto::ActionResult;
use crate::window::Window;
use crate::{Blob, Client, ClientConfig, Code, Error, FileDigests, Input, InputRoot, RemoteTask};

/// REM-10's defaults.
pub const DEFAULT_TOKEN_ENV: &str = "VX_REMOTE_EXEC_TOKEN";
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// See the module documentation.
pub struct RemoteExecutor {
    local: Box<dyn Executor>,
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    /// The URL as shown in messages.
    shown: String,
    platform: BTreeMap<String, String>,
    path_tail: String,
    /// How many actions may be in flight at once (REM-11): `max-in-flight`, lowered while the
    /// server says it is at its limit.
    window: Window,
    /// Every local file hashed once per identity, for the whole run (REM-12).
    digests: FileDigests,
    /// The server's batch limit, once its capabilities were asked, or why it cannot execute.
    ready: OnceLock<Result<u64, Unusable>>,
    /// Results whose outputs stayed on the server, by task (REM-14).
    kept: Mutex<BTreeMap<String, Arc<Kept>>>,
}

/// The declared outputs of a remote result: entries by digest, for a remote dependant's input
/// root, and the result to download them from when a local dependant needs them on disk.
struct Kept {
    entries: Vec<(String, Input)>,
    result: ActionResult,
    is_output: Arc<dyn Fn(&str) -> bool + Send + Sync>,
}

/// How a remote attempt ended.
enum End {
    /// The server ran the action, or answered from its action cache.
    Ran(Box<Ran>),
    /// The server answered with a non-OK status, or vx could not send the inputs: the task
    /// fails with this line (REM-13), with whatever output the server kept.
    Failed {
        line: String,
        streams: [Vec<u8>; 2],
        /// The result's exit code when it has one, else 1.
        exit_code: i32,
        timed_out: bool,
        duration: Duration,
    },
    /// The server could not be used: the attempt is declined.
    Unavailable(String),
    /// The run is stopping: the operation was cancelled on the server, this long after the
    /// attempt started.
    Cancelled(Duration),
}

/// A remote result.
struct Ran {
    exit_code: i32,
    /// Stdout, then stderr: their interleaving is not known remotely (REM-13).
    streams: [Vec<u8>; 2],
    /// Served from the server's action cache.
    cached: bool,
    /// What the run waited for the action, its outputs' download included.
    duration: Duration,
    /// Whether the outputs were written into the workspace.
    downloaded: bool,
    /// The server started the action again after losing its worker, this many times.
    requeued: u32,
    /// The in-flight window this attempt's refusals lowered it to, if they did.
    lowered: Option<u32>,
}

/// Why the executor's server cannot run actions, found when its capabilities are first asked.
#[derive(Debug, Clone, thiserror::Error)]
enum Unusable {
    /// The capabilities request failed (the client's error, as shown).
    #[error("{0}")]
    Capabilities(String),
    #[error("the server does not execute actions")]
    NoExecution,
    #[error("the server does not use SHA-256 digests")]
    NoSha256,
}

/// Why a remote executor could not be set up: its server's address or credentials.
#[derive(Debug, thiserror::Error)]
#[error("remote execution {server}: {source}")]
pub struct SetupError {
    /// The server as shown (its URL without credentials).
    pub server: String,
    pub source: crate::ClientError,
}

impl RemoteExecutor {
    /// The executor of `config` (REM-10) in front of `local`; `slots` is the run's concurrency,
    /// for the default `max-in-flight`. The token is read from the variable `token-env` names.
    pub fn new(
        config: &RemoteExecutionConfig,
        env: &BTreeMap<String, String>,
        slots: u32,
        local: Box<dyn Executor>,
    ) -> Result<RemoteExecutor, SetupError> {
        let url = config.url.clone().unwrap_or_default();
        let shown = vx_store::layer::http::shown_url(&url);
        let token_env = config.token_env.as_deref().unwrap_or(DEFAULT_TOKEN_ENV);
        let client = Client::new(&ClientConfig {
            url,
            instance_name: config.instance_name.clone().unwrap_or_default(),
            token: env.get(token_env).filter(|t| !t.is_empty()).cloned(),
            connect_timeout: CONNECT_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
            request_timeout: None,
        })
        .map_err(|source| SetupError {
            server: shown.clone(),
            source,
        })?;
        let inner = Inner {
            client,
            shown,
            platform: config.platform.clone(),
            path_tail: config
                .path
                .clone()
                .unwrap_or_else(|| DEFAULT_PATH.to_string()),
            window: Window::new(config.max_in_flight.unwrap_or(4 * slots).max(1)),
            digests: FileDigests::new(),
            ready: OnceLock::new(),
            kept: Mutex::new(BTreeMap::new()),
        };
        Ok(RemoteExecutor {
            local,
            inner: Arc::new(inner),
        })
    }
}

impl Executor for RemoteExecutor {
    fn spawn(
        &self,
        attempt: &Attempt,
        sink: Box<dyn FnMut(ExecEvent) + Send>,
    ) -> Box<dyn RunningTask> {
        if attempt.remote.is_none() {
            return self.local.spawn(attempt, sink);
        }
        let cancel = Arc::new(AtomicBool::new(false));
        let handle = Handle {
            cancel: cancel.clone(),
        };
        let inner = self.inner.clone();
        let attempt = attempt.clone();
        let name = format!("vx-remote {}", attempt.task);
        // The loop waits for this end: it is said on every way out, a thread that could not
        // start or a panic included (as the server being unusable: the task runs locally).
        let mut end = Once(Some(sink));
        let spawned = std::thread::Builder::new().name(name).spawn(move || {
            let ended = inner.attempt(&attempt, &cancel);
            end.say(ended);
        });
        if let Err(error) = spawned {
            tracing::warn!(%error, "could not start a remote attempt's thread");
        }
        Box::new(handle)
    }

    fn off_machine_limit(&self) -> Option<u32> {
        Some(self.inner.window.now())
    }

    fn fetch_kept_outputs(&self, task: &str, root: &Path) -> Result<(), KeptOutputsError> {
        let kept = self.inner.kept().remove(task);
        let Some(kept) = kept else {
            return Ok(());
        };
        let failed = |source: Box<dyn std::error::Error + Send + Sync>| KeptOutputsError {
            server: self.inner.shown.clone(),
            source,
        };
        let max_batch = self.inner.ready().map_err(|e| failed(Box::new(e)))?;
        self.inner
            .client
            .write_outputs(&kept.result, root, max_batch, &|path| {
                (kept.is_output)(path)
            })
            .map(|_| ())
            .map_err(|e| failed(Box::new(e)))
    }
}

/// The sink of a remote attempt, told its end exactly once: by the attempt, or, when the
/// thread could not start or panicked, when it is dropped.
struct Once(Option<Box<dyn FnMut(ExecEvent) + Send>>);

impl Once {
    fn say(&mut self, end: End) {
        let Some(mut sink) = self.0.take() else {
            return;
        };
        let output = |sink: &mut Box<dyn FnMut(ExecEvent) + Send>, streams: [Vec<u8>; 2]| {
            let [stdout, stderr] = streams;
            for (stream, bytes) in [(Stream::Stdout, stdout), (Stream::Stderr, stderr)] {
                if !bytes.is_empty() {
                    sink(ExecEvent::Output { stream, bytes });
                }
            }
        };
        match end {
            End::Ran(ran) => {
                if ran.requeued > 0 {
                    let times = match ran.requeued {
                        1 => "once".to_string(),
                        n => format!("{n} times"),
                    };
                    sink(ExecEvent::Aside(format!(
                        "vx: the remote executor lost a worker running this task and ran it again ({times})"
                    )));
                }
                if let Some(window) = ran.lowered {
                    sink(ExecEvent::Aside(format!(
                        "vx: the remote executor is at its limit (RESOURCE_EXHAUSTED); at most {window} action{} in flight from now on",
                        if window == 1 { "" } else { "s" }
                    )));
                }
                output(&mut sink, ran.streams);
                sink(ExecEvent::Completed(Completion {
                    from_action_cache: ran.cached,
                    outputs_kept: !ran.downloaded,
                    ..Completion::of_code(ran.exit_code, ran.duration)
                }));
            }
            End::Failed {
                line,
                streams,
                exit_code,
                timed_out,
                duration,
            } => {
                output(&mut sink, streams);
                sink(ExecEvent::Note(line));
                sink(ExecEvent::Completed(Completion {
                    timed_out,
                    ..Completion::of_code(exit_code, duration)
                }));
            }
            End::Cancelled(duration) => sink(ExecEvent::Completed(Completion {
                stopped: true,
                ..Completion::of_code(130, duration)
            })),
            End::Unavailable(line) => sink(ExecEvent::Declined(line)),
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
struct Handle {
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

impl Inner {
    fn kept(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<Kept>>> {
        // Every update is one insert or remove: a poisoned map is still consistent.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The server's batch limit, asked once per run; an error when it cannot execute.
    fn ready(&self) -> Result<u64, Unusable> {
        self.ready
            .get_or_init(|| {
                let capabilities = self
                    .client
                    .capabilities()
                    .map_err(|e| Unusable::Capabilities(e.to_string()))?;
                if !capabilities.exec_enabled {
                    return Err(Unusable::NoExecution);
                }
                if !capabilities.digest_functions.iter().any(|f| f == "SHA256") {
                    return Err(Unusable::NoSha256);
                }
                Ok(capabilities.max_batch)
            })
            .clone()
    }

    /// The action of an attempt (REM-12): the platform is the workspace's overridden by the
    /// task's.
    fn task(&self, attempt: &Attempt, remote: &Remote) -> RemoteTask {
        let mut platform = self.platform.clone();
        platform.extend(remote.platform.clone());
        RemoteTask {
            script: attempt.script.clone(),
            dir: attempt.dir.clone(),
            env: remote.env.clone(),
            path_tail: self.path_tail.clone(),
            outputs: remote.outputs.clone(),
            workspace_outputs: remote.workspace_outputs.clone(),
            platform,
            timeout: attempt.timeout,
        }
    }

    fn attempt(&self, attempt: &Attempt, cancel: &AtomicBool) -> End {
        let started = Instant::now();
        let remote = attempt
            .remote
            .as_ref()
            .expect("spawned as a remote attempt");
        let unavailable = |what: &str, error: &Error| {
            End::Unavailable(format!("remote execution {}: {what}: {error}", self.shown))
        };
        let failed = |line: String| End::Failed {
            line,
            streams: Default::default(),
            exit_code: 1,
            timed_out: false,
            duration: started.elapsed(),
        };
        let max_batch = match self.ready() {
            Ok(max_batch) => max_batch,
            Err(why) => return End::Unavailable(format!("remote execution {}: {why}", self.shown)),
        };
        let mut root = InputRoot::new();
        if !attempt.dir.is_empty() {
            let _ = root.add(&attempt.dir, Input::Directory);
        }
        for path in &remote.files {
            match root.add_from_disk(&attempt.root, path, &self.digests) {
                Ok(()) => {}
                // Listed, then deleted: the key saw it absent or the save guard will see it moved.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return failed(format!(
                        "vx: cannot send `{path}` to the remote executor: {e}"
                    ))
                }
            }
        }
        for upstream in &remote.kept_upstreams {
            let kept = self.kept().get(upstream).cloned();
            for (path, input) in kept.iter().flat_map(|k| &k.entries) {
                let _ = root.add(path, input.clone());
            }
        }
        let built = match root.build() {
            Ok(built) => built,
            Err(problem) => {
                return failed(format!("vx: cannot build the remote input root: {problem}"))
            }
        };
        let action = self.task(attempt, remote).build(&built.digest);
        let mut blobs = built.blobs;
        blobs.push(Blob::from_bytes(action.command));
        blobs.push(Blob::from_bytes(action.action));
        let mut lowered = None;
        let mut busy = || {
            if let Some(window) = self.window.refused() {
                lowered = Some(window);
            }
        };
        let uploaded = with_retries(cancel, &mut busy, || {
            self.client.upload_missing(&blobs, max_batch)
        });
        match uploaded {
            Ok(_) => {}
            Err(Error::Cancelled) => return End::Cancelled(started.elapsed()),
            Err(error) => return unavailable("uploading the inputs", &error),
        }
        let execution = with_retries(cancel, &mut busy, || {
            self.client
                .execute(&action.digest, remote.skip_cache_lookup, cancel, |_| {})
        });
        let execution = match execution {
            Ok(execution) => execution,
            Err(Error::Cancelled) => return End::Cancelled(started.elapsed()),
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
                    crate::code_name(code)
                ),
                streams,
                exit_code: if result.exit_code != 0 {
                    result.exit_code
                } else {
                    1
                },
                timed_out: code == Code::DeadlineExceeded,
                duration: started.elapsed(),
            };
        }
        let wanted = |path: &str| (remote.is_output)(path);
        let entries = match self.client.result_entries(&result, max_batch) {
            Ok(entries) => entries
                .into_iter()
                .filter(|(path, input)| matches!(input, Input::Directory) || wanted(path))
                .collect(),
            Err(error) => return unavailable("reading the outputs", &error),
        };
        if remote.download {
            if let Err(error) =
                self.client
                    .write_outputs(&result, &attempt.root, max_batch, &wanted)
            {
                return unavailable("downloading the outputs", &error);
            }
            self.kept().remove(&attempt.task);
        }
        let exit_code = result.exit_code;
        if !remote.download {
            let kept = Kept {
                entries,
                result,
                is_output: remote.is_output.clone(),
            };
            self.kept().insert(attempt.task.clone(), Arc::new(kept));
        }
        self.window.ended_well();
        End::Ran(Box::new(Ran {
            exit_code,
            streams,
            cached: execution.cached(),
            // What the user waited (queueing, a lost worker's time, the outputs' download),
            // not the worker's own span: that is what the task cost this run, and what a hit
            // of its entry saves the next.
            duration: started.elapsed(),
            downloaded: remote.download,
            requeued: execution.requeued,
            lowered,
        }))
    }
}

/// The values of the remote executor's token variable: masked in every task's output like
/// `env.secret` values (EXEC-5), and never sent with a remote action (REM-11).
pub fn token_values(
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

/// How many times a call the server refused for load is tried, and the longest wait between two.
const TRIES: u32 = 8;
const LONGEST_WAIT: Duration = Duration::from_secs(2);

/// Runs `call` again while the server answers `RESOURCE_EXHAUSTED` or `UNAVAILABLE` (an engine
/// over its RPC limit, a connection dropped), waiting 100 ms, then twice as long each time up
/// to 2 s, at most [`TRIES`] times in all (about 9 s); `cancel` ends the wait with
/// [`Error::Cancelled`]. Bazel retries the same codes.
/// `busy` is told of each `RESOURCE_EXHAUSTED`.
fn with_retries<T>(
    cancel: &AtomicBool,
    busy: &mut dyn FnMut(),
    call: impl FnMut() -> Result<T, Error>,
) -> Result<T, Error> {
    retrying(cancel, Duration::from_millis(100), busy, call)
}

fn retrying<T>(
    cancel: &AtomicBool,
    first_wait: Duration,
    busy: &mut dyn FnMut(),
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
                if error.code() == Some(Code::ResourceExhausted) {
                    busy();
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_and_dropped_connections_are_tried_again_other_errors_are_not() {
        let never = AtomicBool::new(false);
        let status = |code| Error::Status {
            code,
            message: String::new(),
        };
        let mut calls = 0;
        let done = retrying(&never, Duration::from_millis(1), &mut || {}, || {
            calls += 1;
            match calls {
                1 => Err(status(Code::ResourceExhausted)),
                2 => Err(status(Code::Unavailable)),
                _ => Ok(calls),
            }
        });
        assert_eq!(done.unwrap(), 3);
        let mut calls = 0;
        let refused = retrying(
            &never,
            Duration::from_millis(1),
            &mut || {},
            || -> Result<(), Error> {
                calls += 1;
                Err(status(Code::InvalidArgument))
            },
        );
        assert!(matches!(
            refused,
            Err(Error::Status {
                code: Code::InvalidArgument,
                ..
            })
        ));
        assert_eq!(calls, 1, "a refusal is final");
        let mut calls = 0;
        let busy = retrying(
            &never,
            Duration::from_millis(1),
            &mut || {},
            || -> Result<(), Error> {
                calls += 1;
                Err(status(Code::ResourceExhausted))
            },
        );
        assert!(busy.is_err());
        assert_eq!(calls, TRIES, "tried a bounded number of times");
        let cancelled = AtomicBool::new(true);
        let stopped = retrying(
            &cancelled,
            Duration::from_millis(1),
            &mut || {},
            || -> Result<(), Error> { panic!("not called once the run stops") },
        );
        assert!(matches!(stopped, Err(Error::Cancelled)));
    }

    #[test]
    fn the_token_is_masked_only_when_the_table_is_there_and_it_has_a_value() {
        let config = RemoteExecutionConfig {
            token_env: Some("MY_TOKEN".into()),
            ..RemoteExecutionConfig::default()
        };
        let env: BTreeMap<String, String> = [("MY_TOKEN", "s3cret"), (DEFAULT_TOKEN_ENV, "other")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(token_values(Some(&config), &env), ["s3cret"]);
        assert!(token_values(None, &env).is_empty());
        let default = RemoteExecutionConfig::default();
        assert_eq!(token_values(Some(&default), &env), ["other"]);
    }

    #[test]
    fn an_executor_that_cannot_be_set_up_says_which_server_and_why() {
        let config = RemoteExecutionConfig {
            url: Some("grpc://127.0.0.1:1".into()),
            ..RemoteExecutionConfig::default()
        };
        let env: BTreeMap<String, String> =
            [(DEFAULT_TOKEN_ENV.to_string(), "bad\ntoken".to_string())].into();
        let local = Box::new(vx_exec::Supervisor::new());
        let Err(error) = RemoteExecutor::new(&config, &env, 2, local) else {
            panic!("a token with a newline was accepted");
        };
        assert!(
            matches!(error.source, crate::ClientError::Token),
            "{error:?}"
        );
        assert_eq!(error.server, "grpc://127.0.0.1:1");
        assert_eq!(
            error.to_string(),
            "remote execution grpc://127.0.0.1:1: the token holds characters a gRPC header cannot carry"
        );
    }
}
