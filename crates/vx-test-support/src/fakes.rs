//! Fake implementations of vx's seams (ARCH-2), so the run loop and the cache can be tested
//! without processes or servers: a scripted [`Executor`] and an in-memory [`CacheLayer`] with
//! fault injection. (The scheduler's policy fakes live in vx-core's own tests: a fake here would
//! be of another build of vx-core.)

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use vx_exec::{Attempt, Completion, ExecEvent, Executor, RunningTask, Stream};
use vx_store::layer::{CacheLayer, ErrorKind, LayerError};

/// What a scripted attempt prints and how it ends.
#[derive(Debug, Clone, Default)]
pub struct Script {
    pub output: Vec<(Stream, Vec<u8>)>,
    pub exit_code: i32,
    /// Files written (relative to the attempt's working directory) before it ends.
    pub writes: Vec<(String, Vec<u8>)>,
}

/// An executor that runs nothing: the attempt whose `sh -c` script contains a key plays that
/// key's [`Script`] (the first matching key wins; no match prints nothing and exits 0). Every
/// spawned script is recorded, in spawn order.
#[derive(Clone, Default)]
pub struct ScriptedExecutor {
    scripts: Vec<(String, Script)>,
    spawned: Arc<Mutex<Vec<String>>>,
}

impl ScriptedExecutor {
    pub fn new() -> ScriptedExecutor {
        ScriptedExecutor::default()
    }

    /// Attempts whose script contains `needle` print `stdout` and exit with `exit_code`.
    pub fn on(mut self, needle: &str, stdout: &str, exit_code: i32) -> ScriptedExecutor {
        let script = Script {
            output: vec![(Stream::Stdout, stdout.as_bytes().to_vec())],
            exit_code,
            writes: Vec::new(),
        };
        self.scripts.push((needle.to_string(), script));
        self
    }

    /// Attempts whose script contains `needle` also write `bytes` to `path` (relative to their
    /// working directory), as a build writes its outputs. Needs an earlier [`ScriptedExecutor::on`]
    /// for the same needle.
    pub fn writes(mut self, needle: &str, path: &str, bytes: &[u8]) -> ScriptedExecutor {
        if let Some((_, script)) = self.scripts.iter_mut().find(|(n, _)| n == needle) {
            script.writes.push((path.to_string(), bytes.to_vec()));
        }
        self
    }

    /// The scripts spawned so far, in order.
    pub fn spawned(&self) -> Vec<String> {
        self.spawned.lock().expect("not poisoned").clone()
    }
}

impl Executor for ScriptedExecutor {
    fn spawn(
        &self,
        attempt: &Attempt,
        mut sink: Box<dyn FnMut(ExecEvent) + Send>,
    ) -> Box<dyn RunningTask> {
        let script_text = attempt.script.clone();
        self.spawned
            .lock()
            .expect("not poisoned")
            .push(script_text.clone());
        let script = self
            .scripts
            .iter()
            .find(|(needle, _)| script_text.contains(needle.as_str()))
            .map(|(_, s)| s.clone())
            .unwrap_or_default();
        let cwd = attempt.root.join(&attempt.dir);
        std::thread::spawn(move || {
            for (path, bytes) in &script.writes {
                let path = cwd.join(path);
                if let Some(parent) = path.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                let _ = std::fs::write(&path, bytes);
            }
            for (stream, bytes) in script.output {
                sink(ExecEvent::Output { stream, bytes });
            }
            sink(ExecEvent::Completed(Completion::of_code(
                script.exit_code,
                Duration::from_millis(1),
            )));
        });
        Box::new(FakeTask)
    }
}

/// A scripted attempt: there is no process to signal.
#[derive(Clone, Copy)]
pub struct FakeTask;

impl RunningTask for FakeTask {
    fn pid(&self) -> Option<i32> {
        Some(i32::MAX)
    }
    fn stop(&self, _signal: i32) {}
    fn kill(&self) {}
    fn wait_stopped(&self) {}
    fn clone_box(&self) -> Box<dyn RunningTask> {
        Box::new(*self)
    }
}

/// A remote cache layer held in memory, shared between clones (one "server" for several runs),
/// with faults to inject: a failure kind for every fetch, existence check or upload, and bodies
/// corrupted after they were stored. Every call is counted.
#[derive(Clone, Default)]
pub struct MemoryLayer {
    state: Arc<Mutex<MemoryState>>,
}

#[derive(Default)]
struct MemoryState {
    bodies: HashMap<String, Vec<u8>>,
    fail_fetch: Option<ErrorKind>,
    fail_contains: Option<ErrorKind>,
    fail_put: Option<ErrorKind>,
    fetches: usize,
    /// (key, name of the thread that fetched it), in order.
    fetched_on: Vec<(String, String)>,
    puts: Vec<String>,
    /// The keys put with one of vx's records (`is_record`), told apart when they arrived.
    records: std::collections::HashSet<String>,
    /// Fetches of these keys wait until they are released (`hold`).
    held: std::collections::HashSet<String>,
}

impl MemoryLayer {
    pub fn new() -> MemoryLayer {
        MemoryLayer::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, MemoryState> {
        self.state.lock().expect("not poisoned")
    }

    /// Every fetch fails with `kind` (`None`: fetches work again).
    pub fn fail_fetches(&self, kind: Option<ErrorKind>) {
        self.state().fail_fetch = kind;
    }

    /// Every existence check fails with `kind`.
    pub fn fail_contains(&self, kind: Option<ErrorKind>) {
        self.state().fail_contains = kind;
    }

    /// Every upload fails with `kind`.
    pub fn fail_puts(&self, kind: Option<ErrorKind>) {
        self.state().fail_put = kind;
    }

    /// Flips a byte in the middle of every stored body, as a lying server would serve it.
    pub fn corrupt_all(&self) {
        for body in self.state().bodies.values_mut() {
            let middle = body.len() / 2;
            if let Some(byte) = body.get_mut(middle) {
                *byte ^= 0xff;
            }
        }
    }

    /// The keys stored so far, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.state().bodies.keys().cloned().collect();
        keys.sort();
        keys
    }

    /// The task results it holds: its keys less vx's records (`is_record`).
    pub fn results(&self) -> Vec<String> {
        let state = self.state();
        let mut keys: Vec<String> = state
            .bodies
            .keys()
            .filter(|key| !state.records.contains(*key))
            .cloned()
            .collect();
        keys.sort();
        keys
    }

    /// The keys of the task results uploaded (successfully or not), in order: vx's records
    /// left out.
    pub fn result_puts(&self) -> Vec<String> {
        let state = self.state();
        state
            .puts
            .iter()
            .filter(|key| !state.records.contains(*key))
            .cloned()
            .collect()
    }
    /// The keys uploaded (successfully or not), in order.
    pub fn puts(&self) -> Vec<String> {
        self.state().puts.clone()
    }

    /// Each key fetched with the name of the thread that fetched it, in order.
    pub fn fetched_on(&self) -> Vec<(String, String)> {
        self.state().fetched_on.clone()
    }

    /// Fetches of `keys` wait (each counted when it starts) until `hold` is called again
    /// without them.
    pub fn hold(&self, keys: &[String]) {
        self.state().held = keys.iter().cloned().collect();
    }

    /// How many fetches were asked for.
    pub fn fetches(&self) -> usize {
        self.state().fetches
    }
}

impl CacheLayer for MemoryLayer {
    fn name(&self) -> &str {
        "memory://fake"
    }

    fn contains(&self, key: &str) -> Result<bool, LayerError> {
        let state = self.state();
        if let Some(kind) = state.fail_contains {
            return Err(LayerError::new(kind, "injected"));
        }
        Ok(state.bodies.contains_key(key))
    }

    fn fetch(&self, key: &str, dest: &Path, cap: u64) -> Result<bool, LayerError> {
        let mut state = self.state();
        state.fetches += 1;
        let thread = std::thread::current().name().unwrap_or("").to_string();
        state.fetched_on.push((key.to_string(), thread));
        while state.held.contains(key) {
            drop(state);
            std::thread::sleep(Duration::from_millis(5));
            state = self.state();
        }
        if let Some(kind) = state.fail_fetch {
            return Err(LayerError::new(kind, "injected"));
        }
        let Some(body) = state.bodies.get(key) else {
            return Ok(false);
        };
        if body.len() as u64 > cap {
            return Err(LayerError::new(ErrorKind::TooLarge, "over the cap"));
        }
        std::fs::write(dest, body).map_err(|e| LayerError::new(ErrorKind::Io, e.to_string()))?;
        Ok(true)
    }

    fn put(&self, key: &str, artifact: &Path, _duration_ms: u64) -> Result<(), LayerError> {
        let record = is_record(artifact, key);
        let mut state = self.state();
        state.puts.push(key.to_string());
        if record {
            state.records.insert(key.to_string());
        }
        if let Some(kind) = state.fail_put {
            return Err(LayerError::new(kind, "injected"));
        }
        let body =
            std::fs::read(artifact).map_err(|e| LayerError::new(ErrorKind::Io, e.to_string()))?;
        state.bodies.insert(key.to_string(), body);
        Ok(())
    }
}

/// Whether the artifact at `path`, stored under `key`, is one of vx's records (SEL-10, the
/// outputs record of KEY-9) rather than a task's result: its task is `vx#…`.
pub fn is_record(path: &Path, key: &str) -> bool {
    vx_store::artifact::validate(path, key, &|_| true, vx_store::artifact::SIZE_CAP)
        .is_ok_and(|valid| valid.meta.task.starts_with("vx#"))
}

/// The keys in `dir` (files named by key) that are task results: vx's records left out, and a
/// file beside an entry (`<key>.tag`, a signature) with it.
pub fn results_in(dir: &Path, keys: Vec<String>) -> Vec<String> {
    let stem = |k: &str| k.split('.').next().unwrap_or(k).to_string();
    let records: std::collections::HashSet<String> = keys
        .iter()
        .filter(|k| !k.contains('.') && is_record(&dir.join(k), k))
        .cloned()
        .collect();
    keys.into_iter()
        .filter(|k| !records.contains(&stem(k)))
        .collect()
}
