//! The run loop's side of remote execution (REM-10 … REM-14): what a remote attempt reads,
//! and what happens when the remote executor declines one.
//!
//! How this works: `plan::placement` decides which nodes run remotely, and the run's executor
//! (`vx_reapi::RemoteExecutor`, in front of the local supervisor) runs the attempts that carry a
//! [`Remote`] part. Here the loop fills that part from what only it knows — the task's input
//! paths, its folded upstreams' outputs on disk or kept by the executor, the `extra-inputs` —
//! and handles the two ways a remote attempt differs from a local one: a declined attempt (the
//! server cannot be used) runs in a local slot, as do the run's later remote tasks (one
//! warning); and a local task whose upstreams' outputs the executor kept fetches them first.

use std::collections::BTreeMap;
use std::sync::Arc;

use vx_exec::{Completion, Remote};

use super::Run;
use crate::options::Download;
use crate::outcome::Notice;
use crate::plan::placement::sent_environment;

impl Run<'_> {
    /// What a remote attempt of node `i` reads and sends (REM-12): its input files, the outputs
    /// of the upstreams its key folds (from disk, or by digest when the executor kept them),
    /// its `extra-inputs`, and its environment's layers 2–5.
    pub(super) fn remote_part(
        &mut self,
        i: usize,
        env: &BTreeMap<String, String>,
    ) -> Result<Remote, String> {
        let node = &self.plan.graph.nodes[i];
        let id = node.id.clone();
        let config = self.rows[i].config;
        let mut files = self
            .cache
            .keys
            .input_listing(self.rows[i])
            .map_err(|e| format!("vx: {}", e.0))?;
        let folded = self.cache.keys.folded_upstreams(&id);
        let mut kept_upstreams = Vec::new();
        for &d in &node.deps {
            let upstream = &self.plan.graph.nodes[d].id;
            if !folded.contains(upstream) {
                continue;
            }
            if self.remote.kept.contains(&d) {
                kept_upstreams.push(upstream.to_string());
                continue;
            }
            files.extend(self.cache.outputs_on_disk(self.rows[d]).map_err(|e| {
                format!(
                    "vx: {id}: cannot read the outputs of {upstream}: {}",
                    crate::cache::outputs::plain(&e)
                )
            })?);
        }
        let mut platform = BTreeMap::new();
        if let Some(vx_core::config::RemoteTask::Detailed(r)) = config.remote.as_deref() {
            platform = r.platform.clone();
            if !r.extra_inputs.is_empty() {
                files.extend(self.cache.matching(&r.extra_inputs).map_err(|e| {
                    format!(
                        "vx: {id}: cannot read remote.extra-inputs: {}",
                        crate::cache::outputs::plain(&e)
                    )
                })?);
            }
        }
        files.sort();
        files.dedup();
        let outputs = self
            .cache
            .outputs(self.rows[i])
            .expect("a remote task is cached: the configuration refuses `remote` without `cache`");
        let cache = config.cache.as_deref();
        Ok(Remote {
            files,
            kept_upstreams,
            env: sent_environment(config, env.clone()),
            platform,
            outputs: cache.and_then(|c| c.outputs.clone()).unwrap_or_default(),
            workspace_outputs: cache
                .map(|c| c.workspace_outputs.clone())
                .unwrap_or_default(),
            is_output: Arc::new(move |path: &str| outputs.covers(path)),
            download: match self.options.download {
                Download::All => true,
                Download::Toplevel => self.is_shown(i),
                Download::None => false,
            },
            skip_cache_lookup: !self.options.cache.local_read,
        })
    }

    /// The remote executor declined an attempt (its server cannot be used): the task goes to a
    /// local slot, unless the run is stopping.
    pub(super) fn declined(&mut self, i: usize, line: String) {
        let Some(live) = self.live.get(&i) else {
            return;
        };
        let started = live.tries.started;
        self.remote.in_flight -= 1;
        self.remote_unusable(line);
        if self.stopping.is_some() {
            let stopped = Completion {
                stopped: true,
                ..Completion::of_code(130, started.elapsed())
            };
            self.remote.in_flight += 1;
            self.completed(i, stopped);
        } else {
            self.remote.local_again.push(i);
        }
    }

    /// The server cannot be used: one warning, and every remote task not started yet runs
    /// locally.
    fn remote_unusable(&mut self, line: String) {
        if !self.remote.usable {
            return;
        }
        self.remote.usable = false;
        self.reporter.notice(Notice::warning(format!(
            "{line}; remote tasks run locally for the rest of this run"
        )));
        self.scheduler.disable_remote();
    }

    /// The run is stopping: tasks waiting for a local slot after their server failed never
    /// start; they end aborted like the other tasks the signal stopped.
    pub(super) fn abandon_local_again(&mut self) {
        for i in std::mem::take(&mut self.remote.local_again) {
            let Some(live) = self.live.get_mut(&i) else {
                continue;
            };
            live.tries.job.remote = None;
            // `completed` gives the slot back; this task never took one.
            self.running_slots += 1;
            let started = live.tries.started;
            self.completed(
                i,
                Completion {
                    stopped: true,
                    ..Completion::of_code(130, started.elapsed())
                },
            );
        }
    }

    /// A remote task whose server could not be used runs in a local slot, as it would have
    /// without `remote`: its outputs cleaned again, its sandbox (if any) applied.
    pub(super) fn run_locally_instead(&mut self, i: usize) {
        let Some(live) = self.live.get_mut(&i) else {
            return;
        };
        live.tries.job.remote = None;
        let writes = live.saving.writes;
        let route = live.route.clone();
        let mut job = live.tries.job.clone();
        let started = live.tries.started;
        self.running_slots += 1;
        self.scheduler.executing_locally(i);
        // REM-14: what its remote upstreams kept on the server is needed here now.
        if let Err(line) = self.download_upstreams(i) {
            self.note(i, &line);
            self.completed(i, Completion::of_code(1, started.elapsed()));
            return;
        }
        if writes {
            let cleaned = self.cache.clean_for_retry(self.rows[i]);
            self.relay_notices();
            if let Err(line) = cleaned {
                self.note(i, &line);
            }
        }
        if let Some(table) = &self.rows[i].config.sandbox {
            match self.sandbox_task(i, table, &mut job.env, &route) {
                Ok((launch, sandbox)) => {
                    job.local.sandbox = Some(launch);
                    if let Some(live) = self.live.get_mut(&i) {
                        live.sandbox = Some(sandbox);
                    }
                }
                Err(line) => {
                    self.note(i, &line);
                    self.completed(i, Completion::of_code(1, started.elapsed()));
                    return;
                }
            }
        }
        let handle = self.spawn_attempt(i, &job, &route);
        if let Some(live) = self.live.get_mut(&i) {
            live.tries.job = job;
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
            .filter(|d| self.remote.kept.contains(d))
            .collect();
        let id = self.plan.graph.nodes[i].id.clone();
        for d in pending {
            let upstream = self.plan.graph.nodes[d].id.clone();
            self.reporter.notice(Notice::note(format!(
                "downloading outputs of {upstream} for {id}, which runs locally"
            )));
            self.remote.kept.remove(&d);
            let written = self
                .executor
                .fetch_kept_outputs(&upstream.to_string(), &self.plan.workspace.root);
            if let Some(outputs) = self.cache.outputs(self.rows[d]) {
                self.cache.outputs_written(&outputs);
            }
            written.map_err(|problem| {
                format!("vx: {id}: cannot download the outputs of {upstream}: {problem}")
            })?;
        }
        Ok(())
    }
}
