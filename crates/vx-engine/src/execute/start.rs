//! Starting a task's attempt: a group finishes at once; a one-shot task's key is derived and
//! its cache probed first (a hit ends here); then its environment, masking, sandbox and
//! attempt are made and handed to the executor (EXEC-1 … EXEC-8); and a failed attempt is
//! started again while it has retries (EXEC-15).

use std::time::Instant;

use vx_core::config::Persistent;
use vx_core::env::secret_values;
use vx_core::mask::Masker;
use vx_core::schedule::{Finish, NodeState};
use vx_core::script::{script, with_args};
use vx_exec::{Attempt, Completion, Local, RunningTask, StdinMode};

use super::explain::Shell;
use super::live::Identity;
use super::live::{Live, Saving, Tries};
use super::msg::Route;
use super::output::TaskOutput;
use super::ready::Waiting;
use super::{environment, Kind, Msg, Run};
use crate::cache::{CacheKind, Decision};
use crate::outcome::{Notice, Status};
use crate::plan::placement::credential_values;

impl Run<'_> {
    pub(super) fn start(&mut self, i: usize) {
        self.held.started(i, Instant::now());
        let task = self.rows[i];
        let kind = task.kind;
        if kind == Kind::Group {
            let failed = self
                .scheduler
                .deps(i)
                .iter()
                .any(|&d| matches!(self.scheduler.state(d), NodeState::Failed));
            let finish = if failed {
                Finish::Failed
            } else {
                Finish::Success
            };
            let skipped = self.scheduler.finish(i, finish);
            self.report_skipped(&skipped);
            return;
        }
        self.region_requested_task_started(i);
        let node = &self.plan.graph.nodes[i];
        let id = node.id.clone();
        let upstream_bad = node.deps.iter().any(|&d| {
            self.tainted.contains(&d) || matches!(self.scheduler.state(d), NodeState::Failed)
        });
        if upstream_bad {
            self.tainted.insert(i);
        }
        let saveable = !node.folds_dropped && !upstream_bad;
        let unsaved_reason = if node.folds_dropped {
            "excluded-dependency"
        } else if upstream_bad {
            "tainted"
        } else {
            "writes-off"
        };
        let (cache_kind, writes) = if kind == Kind::OneShot {
            let needs_log = self.reporter.shows_hit_log(self.is_shown(i));
            let probing = Instant::now();
            let decision = self.cache.before(task, saveable, needs_log);
            self.relay_notices();
            if self.phases.is_some() {
                self.phase(&format!("key and cache probe: {id}"), probing);
            }
            match decision {
                Decision::Hit(replay) => {
                    self.hit(i, replay);
                    return;
                }
                Decision::Fail(line) => {
                    self.cache.withhold(&id);
                    self.fail_before_start(i, &line);
                    return;
                }
                Decision::Execute { cached, writes } => (
                    if cached && (writes || self.options.cache.local_read) {
                        CacheKind::Miss
                    } else {
                        CacheKind::NoCache
                    },
                    writes,
                ),
            }
        } else {
            (CacheKind::NoCache, false)
        };
        // SCHED-8: another part's task may yet arrive from its own runner.
        if cache_kind == CacheKind::Miss
            && self.wait_for_part(
                i,
                super::part_waits::Pending {
                    cache_kind,
                    writes,
                    unsaved_reason,
                },
            )
        {
            return;
        }
        self.launch(i, cache_kind, writes, unsaved_reason);
    }

    /// Starts node `i`'s attempt once its cache was probed: its environment, masking, sandbox
    /// and attempt, handed to the executor.
    pub(super) fn launch(
        &mut self,
        i: usize,
        cache_kind: CacheKind,
        writes: bool,
        unsaved_reason: &'static str,
    ) {
        let task = self.rows[i];
        let (config, kind) = (task.config, task.kind);
        let id = self.plan.graph.nodes[i].id.clone();
        let remote = self.scheduler.is_remote(i);
        if !remote {
            if let Err(line) = self.download_upstreams(i) {
                self.cache.withhold(&id);
                self.fail_before_start(i, &line);
                return;
            }
        }
        let node = &self.plan.graph.nodes[i];
        let project = &self.plan.workspace.projects[node.project];
        let dir = self.plan.workspace.root.join(&project.dir);
        let command = config.command.clone().unwrap_or_default();
        let args: &[String] = if node.requested {
            &self.options.forwarded
        } else {
            &[]
        };
        let mut env = environment(self.plan, &self.ctx.host_env, task);
        let (secrets, too_short) = secret_values(&self.ctx.host_env, config.env.as_deref());
        if !too_short.is_empty() && !self.warned_short_secrets {
            for name in &too_short {
                self.reporter.notice(Notice::warning(format!(
                    "`{name}` is listed in `env.secret` but its value is shorter than 6 characters; it is not masked"
                )));
            }
            self.warned_short_secrets = true;
        }
        let mut secrets = secrets;
        secrets.extend(credential_values(
            &self.plan.workspace.settings,
            &self.ctx.host_env,
        ));
        let masker = Masker::new(&secrets);
        let command_line = masker.mask_str(&with_args(&command, args));
        let route = Route::new(self.tx.clone(), i);
        // In a cycle of `vx watch`, the server started in an earlier cycle may be kept.
        let identity = (kind == Kind::Persistent && self.watch.is_some())
            .then(|| Identity::of(config, &script(&command, args), &dir.to_string_lossy()));
        if let Some(identity) = &identity {
            if self.keep_server(i, identity) {
                return;
            }
        }
        let ready_when = match &config.persistent {
            Some(Persistent::Ready(ready)) => Some(ready.ready_when.clone()),
            _ => None,
        };
        // EXEC-8: for a persistent task the timeout bounds only the wait for readiness, which
        // the loop times (not the supervisor); one ready at spawn has nothing to bound.
        let timeout = if kind == Kind::Persistent && ready_when.is_none() {
            None
        } else {
            config
                .timeout
                .or(self.options.timeout)
                .or(self.ctx.env_timeout)
                .or(self.plan.workspace.settings.timeout)
        };
        // A local `sandbox` table does not apply remotely (REM-11).
        let (launch, sandbox) = match config.sandbox.as_ref().filter(|_| !remote) {
            None => (None, None),
            Some(table) => match self.sandbox_task(i, table, &mut env, &route) {
                Ok((launch, sandbox)) => (Some(launch), Some(sandbox)),
                Err(line) => {
                    self.cache.withhold(&id);
                    self.fail_before_start(i, &line);
                    return;
                }
            },
        };
        let path_var = env.get("PATH").cloned().unwrap_or_default();
        let mut attempt = Attempt {
            task: id.to_string(),
            script: script(&command, args),
            root: self.plan.workspace.root.clone(),
            dir: project.dir.clone(),
            env,
            timeout: timeout.filter(|_| kind != Kind::Persistent),
            local: Local {
                sh: self.ctx.sh.clone(),
                stdin: if self.interactive.contains(&i) {
                    StdinMode::Terminal
                } else if kind == Kind::Persistent || self.typed_into.contains(&i) {
                    StdinMode::HeldPipe
                } else {
                    StdinMode::Null
                },
                kill_grace: self.ctx.kill_grace,
                stop_leftovers_on_exit: kind == Kind::OneShot,
                sandbox: launch,
            },
            remote: None,
        };
        let attempts = match kind {
            Kind::OneShot => 1 + config.retries.or(self.options.retry).unwrap_or(0),
            _ => 1,
        };
        let started = Instant::now();
        let waiting = match ready_when
            .as_deref()
            .map(|pattern| Waiting::new(pattern, started, self.ctx.ready_notice, timeout))
        {
            Some(Err(error)) => {
                let line =
                    format!("vx: persistent.ready-when is not a valid regular expression: {error}");
                self.fail_before_start(i, &line);
                return;
            }
            Some(Ok(waiting)) => Some(waiting),
            None => None,
        };
        if remote {
            match self.remote_part(i, &attempt.env) {
                Ok(part) => attempt.remote = Some(part),
                Err(line) => {
                    self.cache.withhold(&id);
                    self.fail_before_start(i, &line);
                    return;
                }
            }
        }
        let handle = self.spawn_attempt(i, &attempt, &route);
        tracing::debug!(task = %id, pid = ?handle.pid(), remote, "started");
        let colour = self.reporter.colour();
        let spawned = handle.pid().is_some();
        let live = Live {
            handle,
            route,
            identity,
            started,
            kind,
            output: TaskOutput::new(masker, colour),
            command_line,
            shell: Shell {
                command,
                dir,
                path_var,
            },
            ready: false,
            waiting: waiting.filter(|_| spawned),
            timed_out: false,
            unneeded: false,
            timeout,
            saving: Saving {
                kind: cache_kind,
                writes,
                unsaved_reason,
                remote_cached: false,
            },
            tries: Tries::new(attempt, attempts, started),
            sandbox,
        };
        let report = self.report_of(i, &live, Status::Running);
        let wait_for_line = live.waiting.is_some();
        self.live.insert(i, live);
        self.reporter.started(i, &report);
        if remote {
            self.remote.in_flight += 1;
        } else {
            self.running_slots += 1;
        }

        if kind == Kind::Persistent && spawned && !wait_for_line {
            self.ready(i);
        }
    }

    pub(super) fn spawn_attempt(
        &mut self,
        i: usize,
        attempt: &Attempt,
        route: &Route,
    ) -> Box<dyn RunningTask> {
        self.cache.keys.files_may_have_changed();
        let route = route.clone();
        self.executor.spawn(
            attempt,
            Box::new(move |event| route.deliver(Msg::Exec(i, event))),
        )
    }

    /// EXEC-15: another attempt of a failed task — the attempt line, outputs cleaned when the
    /// task writes, and only the successful attempt's log kept for the cache.
    pub(super) fn retry(&mut self, i: usize, completion: &Completion) {
        let id = self.plan.graph.nodes[i].id.clone();
        let live = self.live.get_mut(&i).expect("a live task");
        let why = if completion.timed_out {
            "timed out".to_string()
        } else {
            format!("exit {}", completion.exit_code)
        };
        let line = format!("vx: {id} failed ({why}); {}", live.tries.next_of());
        let writes = live.saving.writes;
        self.note(i, &line);
        if writes {
            let cleaned = self.cache.clean_for_retry(self.rows[i]);
            self.relay_notices();
            if let Err(line) = cleaned {
                self.note(i, &line);
            }
        }
        if let Err(error) = self.sandbox_again(i) {
            self.note(i, &format!("vx: {id}: cannot sandbox: {error}"));
        }
        let job = self.live[&i].tries.job.clone();
        let route = self.live[&i].route.clone();
        let remote = job.remote.is_some();
        let handle = self.spawn_attempt(i, &job, &route);
        let run_started = self.started_at;
        let live = self.live.get_mut(&i).expect("a live task");
        live.tries
            .next(run_started, completion.duration, completion.exit_code);
        live.handle = handle;
        live.timed_out = false;
        live.output.new_attempt();
        if remote {
            self.remote.in_flight += 1;
        } else {
            self.running_slots += 1;
        }
    }
}
