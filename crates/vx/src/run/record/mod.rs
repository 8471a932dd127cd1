//! What a run records for later (HIST-1, HIST-2, STORE-16, PERF-3): the history rows `vx last`
//! and `vx why` read, each executed key's fingerprint, retention after the run, the counters of
//! the benchmarks, and what history says about each task (its recent executions for the
//! scheduler, and EXEC-16's failures after a pass).
//!
//! The [`Recorder`] is separate from the cache: the cache decides how a task gets its result,
//! the recorder writes down what happened. It borrows the local store when it writes.

pub mod profile;
pub mod summary;

use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap};

use vx_core::config::CacheRetention;
use vx_core::key::Component;
use vx_core::TaskId;
use vx_store::index::{Invocation, KeyComponent, Recent, RunRow};
use vx_store::Store;

use crate::render;

/// How many executed tasks' key fingerprints wait in memory before they are written.
const FINGERPRINTS_IN_MEMORY: usize = 500;

/// See the module documentation.
pub struct Recorder {
    /// Each task's recent executions, read when the store was opened (SCHED-2, SCHED-4).
    recent: HashMap<TaskId, Recent>,
    /// Per executed key, the components it folded (HIST-2), not written yet.
    fingerprints: Vec<(String, Vec<Component>)>,
    /// Per executed task: saved, or the `unsaved_reason` of HIST-1.
    saves: HashMap<TaskId, Result<(), &'static str>>,
    /// EXEC-16: `(project, task, key)` → failures after a pass, read from history on first need.
    key_failures: OnceCell<BTreeMap<(String, String, String), u64>>,
}

impl Recorder {
    pub fn new(recent: HashMap<TaskId, Recent>) -> Recorder {
        Recorder {
            recent,
            fingerprints: Vec::new(),
            saves: HashMap::new(),
            key_failures: OnceCell::new(),
        }
    }

    /// What history recorded of `id`'s last executions (SCHED-2, SCHED-4).
    pub fn recent(&self, id: &TaskId) -> Option<&Recent> {
        self.recent.get(id)
    }

    /// An executed key's fingerprint (`vx why` reads them): written every
    /// [`FINGERPRINTS_IN_MEMORY`] keys, so a large cold run does not hold them all (a few
    /// kilobytes per task), and at the end of the run.
    pub fn fingerprint(
        &mut self,
        fingerprint: Option<(String, Vec<Component>)>,
        store: Option<&mut Store>,
    ) {
        let Some(fingerprint) = fingerprint else {
            return;
        };
        self.fingerprints.push(fingerprint);
        if self.fingerprints.len() >= FINGERPRINTS_IN_MEMORY {
            self.flush_fingerprints(store);
        }
    }

    /// Whether an executed task's result was saved, or why not (HIST-1).
    pub fn saved(&mut self, id: &TaskId, result: Result<(), &'static str>) {
        self.saves.insert(id.clone(), result);
    }

    fn flush_fingerprints(&mut self, store: Option<&mut Store>) {
        let Some(store) = store else {
            return;
        };
        let keys: Vec<(String, Vec<KeyComponent>)> = std::mem::take(&mut self.fingerprints)
            .into_iter()
            .map(|(key, components)| {
                let components = components
                    .into_iter()
                    .map(|c| KeyComponent {
                        kind: c.kind,
                        name: c.name,
                        digest: c.digest,
                    })
                    .collect();
                (key, components)
            })
            .collect();
        let _ = store.record_keys_inputs(&keys);
    }

    /// EXEC-16's second flaky rule: how many times history saw the task's current key fail
    /// after it had passed with that key (this run's own result is not in history yet). 0 when
    /// the task has no key, there is no store, or history cannot be read: flaky marking never
    /// fails a run. History is read once, on the first call, in one statement (PERF-3).
    pub fn key_failures_after_pass(
        &self,
        store: Option<&Store>,
        id: &TaskId,
        key: Option<String>,
    ) -> u64 {
        let Some(key) = key else {
            return 0;
        };
        let failures = self.key_failures.get_or_init(|| {
            store
                .and_then(|store| store.keys_failed_after_pass().ok())
                .unwrap_or_default()
        });
        let at = (id.project.clone(), id.task.clone(), key);
        failures.get(&at).copied().unwrap_or(0)
    }

    /// End of run: the last key fingerprints, the history rows (`history`: none for a run
    /// stopped by a signal) with each task's key (`key_of`) and whether it was saved, then
    /// retention (STORE-16), silently, never for a signal-stopped run.
    pub fn finish(
        &mut self,
        store: Option<&mut Store>,
        history: Option<(Invocation, Vec<RunRow>)>,
        key_of: &dyn Fn(&TaskId) -> Option<String>,
        retention: Option<&CacheRetention>,
    ) {
        let Some(store) = store.filter(|s| s.disabled().is_none()) else {
            return;
        };
        self.flush_fingerprints(Some(store));
        let Some(history) = history else {
            return;
        };
        self.record_history(store, history, key_of);
        if let Some(retention) = retention {
            let policy = vx_store::PrunePolicy {
                older_than: retention
                    .older_than
                    .as_deref()
                    .and_then(vx_core::units::parse_duration),
                max_size: retention
                    .max_size
                    .as_deref()
                    .and_then(vx_core::units::parse_size),
            };
            if let Err(error) = store.retention(&policy) {
                render::warning(&format!("cache retention failed: {error}"));
            }
        }
    }

    /// A kept persistent task ended after the footer: the run is recorded again with the final
    /// exit code and the task's final row.
    pub fn record_again(
        &mut self,
        store: Option<&mut Store>,
        history: (Invocation, Vec<RunRow>),
        key_of: &dyn Fn(&TaskId) -> Option<String>,
    ) {
        if let Some(store) = store.filter(|s| s.disabled().is_none()) {
            self.record_history(store, history, key_of);
        }
    }

    /// HIST-1: the run and its task rows, with each task's key and whether it was saved; a
    /// failure is one warning line. Recording the same run again replaces it.
    fn record_history(
        &mut self,
        store: &mut Store,
        (mut invocation, mut rows): (Invocation, Vec<RunRow>),
        key_of: &dyn Fn(&TaskId) -> Option<String>,
    ) {
        invocation.argv = crate::run::execute::masked_argv(&invocation.argv, &store.salt());
        for row in &mut rows {
            let id = TaskId::new(&row.project, &row.task);
            row.key = key_of(&id);
            match self.saves.get(&id) {
                Some(Ok(())) => row.saved = true,
                Some(Err(reason)) => row.unsaved_reason = Some((*reason).to_string()),
                None => {}
            }
        }
        if let Err(error) = store.record_run(&invocation, &rows) {
            render::warning(&format!("could not record this run in history: {error}"));
        }
    }
}

/// PERF-3's counters, as a `vx::counters` diagnostic (`VX_LOG=vx::counters=info`): process
/// spawns, files hashed in-process and SQL statements of this run, and vx's own CPU time and
/// peak RSS (not its children's) for the benchmarks.
pub fn report_counters(files_hashed: u64, store: Option<&Store>) {
    let statements = store.map_or(0, Store::statements);
    let spawns = vx_exec::Supervisor::new().spawned();
    let (user_ms, sys_ms, rss_kib) =
        match nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF) {
            Ok(usage) => {
                let ms = |t: nix::sys::time::TimeVal| t.tv_sec() * 1000 + t.tv_usec() / 1000;
                (
                    ms(usage.user_time()),
                    ms(usage.system_time()),
                    usage.max_rss(),
                )
            }
            Err(_) => (0, 0, 0),
        };
    tracing::info!(
        target: "vx::counters",
        "spawns={spawns} files_hashed={files_hashed} sql_statements={statements} \
         cpu_user_ms={user_ms} cpu_sys_ms={sys_ms} max_rss_kib={rss_kib}"
    );
}
