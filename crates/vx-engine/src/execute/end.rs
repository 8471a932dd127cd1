//! The end of the graph (ARCH-3): stopping what is not kept, the held frames, the recap, the
//! footer, and the run's history rows.

use std::time::SystemTime;

use super::{Kind, Run};
use crate::exit;
use crate::outcome::{Status, TaskReport};
use crate::record::profile::TraceFile;
use crate::record::summary::{target_path, SummaryFile};
use crate::record::{RunRecord, TaskRecord, TelemetrySink};
use crate::report::Totals;

impl Run<'_> {
    /// Waits for messages until `done` holds, handling each as usual.
    pub(super) fn drain_until(&mut self, done: impl Fn(&Run<'_>) -> bool) {
        while !done(self) {
            match self.next_message() {
                Some(msg) => self.handle(msg),
                None => return,
            }
        }
    }

    /// End of graph (ARCH-3): stop persistent tasks that are not kept, print held frames, the
    /// recap and the footer, then keep requested servers alive (EXEC-13).
    pub(super) fn end_of_graph(&mut self) -> i32 {
        let signalled = self.stopping.is_some();
        for i in self.scheduler.unstarted() {
            if self.rows[i].kind == Kind::Group {
                continue;
            }
            let status = if signalled {
                Status::NotRun
            } else {
                Status::Skipped
            };
            let report = TaskReport::not_started(self.plan.graph.nodes[i].id.clone(), status, None);
            self.reporter.finished(i, &report, self.is_shown(i));
            self.reports.insert(i, report);
        }
        let keep_allowed = !signalled
            && (!self.any_failed()
                || self.options.continue_mode == vx_core::schedule::ContinueMode::Always);
        let kept: Vec<usize> = if self.watch.is_some() {
            // `vx watch` keeps every ready persistent task for the next cycle, whatever else
            // failed; only a signal stops them.
            self.live
                .iter()
                .filter(|(_, l)| !signalled && l.kind == Kind::Persistent && l.ready)
                .map(|(&i, _)| i)
                .collect()
        } else if keep_allowed {
            self.kept_persistent()
        } else {
            Vec::new()
        };
        let to_stop: Vec<usize> = self
            .live
            .keys()
            .copied()
            .filter(|i| !kept.contains(i))
            .collect();
        for i in &to_stop {
            self.live[i].handle.stop(nix::libc::SIGTERM);
        }
        self.drain_until(|run| to_stop.iter().all(|i| !run.live.contains_key(i)));
        if kept.is_empty() || self.watch.is_some() {
            self.stop_exited_servers();
        }

        let mut code = self.exit_code();
        if !signalled {
            code = self.end_parts(code);
        }
        let reporter = &mut self.reporter;
        self.cache
            .finish(signalled, &mut |notice| reporter.waiting(notice));
        self.relay_notices();
        self.finish_telling();
        if let Some(line) = self.parts_line() {
            self.reporter.notice(line);
        }
        self.record_run(code, signalled, true);
        // A task UI stays open while kept servers run (turbo's does): select one, read it,
        // type into it; the footer waits for it to close.
        if !kept.is_empty() && self.watch.is_none() && !signalled {
            self.ui_kept = self.reporter.keep_open();
        }
        self.finish_output();
        if kept.is_empty() && self.watch.is_none() && !signalled {
            self.write_snapshot(code);
        }
        // STORE-14: released before the foreground wait for kept persistent tasks.
        self.ctx.lock.take();
        if self.watch.is_some() {
            self.hand_over(&kept);
            return code;
        }
        if kept.is_empty() || self.stopping.is_some() {
            return code;
        }
        let code = self.keep_alive_loop(&kept);
        // The kept task's exit is the run's: history (HIST-1) and the summary (UI-14) say so.
        self.record_run(code, self.stopping.is_some(), false);
        if self.ui_kept {
            self.reporter.close();
        }
        code
    }

    /// Where `--summarize`/`--profile` write: the given path (from the current directory), or
    /// `<cache-dir>/runs/<run-id><suffix>` for the bare flag.
    fn file_path(&self, target: &crate::options::Target, suffix: &str) -> std::path::PathBuf {
        target_path(
            target,
            &self.ctx.cwd,
            &self.ctx.cache_dir,
            &self.run_id,
            suffix,
        )
    }

    /// The run ended with `code` (`first`: at the end of the graph, else when a kept task
    /// ended after the footer): one run record for every sink (ARCH-2). A signal-stopped run is
    /// recorded as well, without retention, which runs only the first time of a run that was
    /// not stopped; the summary is written both times, the trace the first time.
    fn record_run(&mut self, code: i32, signalled: bool, first: bool) {
        let now = crate::clock::epoch_ms(SystemTime::now());
        let summary_path = self
            .options
            .summarize
            .as_ref()
            .map(|target| self.file_path(target, ".json"));
        let trace_path = self
            .options
            .profile
            .as_ref()
            .map(|target| self.file_path(target, ".trace.json"));
        let summary_written = summary_path.clone();
        let trace_written = trace_path.clone();
        let (keys, layers) = self.cache.keys_and_layers();
        // Only an `--affected=last-green` run writes a record (SEL-10).
        let record_layers = if self.plan.green.is_some() {
            layers.record_layers()
        } else {
            Vec::new()
        };
        let head = vx_workspace::tree::head(&self.plan.workspace.root).unwrap_or_default();
        let rows = &self.rows;
        let mut durations = vec![0; self.plan.graph.nodes.len()];
        for (&i, report) in &self.reports {
            durations[i] = report.duration.as_millis() as u64;
        }
        let critical_path = crate::record::critical_chain(&self.plan.graph, &durations)
            .into_iter()
            .filter(|i| self.reports.contains_key(i))
            .map(|i| self.plan.graph.nodes[i].id.to_string())
            .collect();
        let record = RunRecord {
            critical_path,
            shard: self.plan.shard.as_ref().map(|s| (s.k, s.n)),
            run_id: &self.run_id,
            git: Some(crate::record::GitFacts {
                commit: head.commit,
                branch: head.branch,
            }),
            exit_code: code,
            started_at_ms: crate::clock::epoch_ms(self.started_wall),
            ended_at_ms: now,
            tasks: self
                .reports
                .iter()
                .map(|(&i, report)| {
                    let known = keys.known(&report.id);
                    let config = rows[i].config;
                    TaskRecord {
                        report,
                        key: known.map(|d| d.key.hex()),
                        detail: crate::record::TaskDetail {
                            command: report.command_line.as_deref().or(config.command.as_deref()),
                            inputs: known.map(|d| &d.inputs),
                            part: self.plan.shard.as_ref().map(|s| s.owner[i]),
                            config: Some(config),
                        },
                    }
                })
                .collect(),
            affected: self
                .plan
                .affected
                .as_ref()
                .map(|a| crate::record::AffectedFacts {
                    base: a.changes.base.clone(),
                    commit: a.changes.commit.clone(),
                    merge_base: a.changes.merge_base.clone(),
                    why: a.changes.why.clone(),
                }),
        };
        // Every sink of this record, the built-in ones included, told the same way (ARCH-2).
        // A run a signal stopped is recorded too, with its exit code (128 + n): `vx last` says
        // it was interrupted rather than showing the run before it.
        let facts = invocation_facts(self.options, &self.ctx, record.git.clone());
        let retention = first
            .then_some(self.plan.workspace.settings.cache_retention.as_ref())
            .flatten()
            .filter(|_| !signalled);
        let mut history = Some(self.recorder.history(layers.store_mut(), facts, retention));
        if first {
            if let Some(path) = summary_path {
                self.summary = Some(SummaryFile {
                    path,
                    cwd: self.ctx.cwd.clone(),
                    written: false,
                });
            }
        }
        // ARCH-4: once, when the graph ends (a kept server's later exit is not exported).
        let mut exporter = first
            .then(|| crate::record::otlp::OtlpExporter::from_env(&self.ctx.host_env))
            .flatten();
        let mut trace = match (first, trace_path, &self.phases) {
            (true, Some(path), Some(phases)) => Some(TraceFile {
                path,
                cwd: self.ctx.cwd.clone(),
                origin: self.ctx.origin,
                loop_started: self.started_at,
                phases: phases.clone(),
            }),
            _ => None,
        };
        // UI-17: the JUnit report and GitHub's job summary, once, when the graph ends.
        let mut junit = first
            .then_some(self.options.report_junit.as_ref())
            .flatten()
            .map(|path| crate::record::ci_report::JunitFile {
                path: self.ctx.cwd.join(path),
                cwd: self.ctx.cwd.clone(),
            });
        let mut job_summary = first
            .then_some(self.ctx.host_env.get("GITHUB_STEP_SUMMARY"))
            .flatten()
            .filter(|path| !path.is_empty())
            .map(|path| crate::record::ci_report::StepSummary {
                path: path.into(),
                title: std::iter::once("vx".to_string())
                    .chain(std::env::args().skip(1))
                    .collect::<Vec<_>>()
                    .join(" "),
            });
        let mut sinks: Vec<&mut dyn TelemetrySink> = Vec::new();
        if let Some(junit) = &mut junit {
            sinks.push(junit);
        }
        if let Some(job_summary) = &mut job_summary {
            sinks.push(job_summary);
        }
        if let Some(history) = &mut history {
            sinks.push(history);
        }
        if let Some(summary) = &mut self.summary {
            sinks.push(summary);
        }
        for sink in &mut self.sinks {
            sinks.push(sink.as_mut());
        }
        if let Some(exporter) = &mut exporter {
            sinks.push(exporter);
        }
        if let Some(trace) = &mut trace {
            sinks.push(trace);
        }
        let mut notices: Vec<_> = sinks
            .into_iter()
            .flat_map(|sink| sink.run_ended(&record))
            .collect();
        if first && !signalled {
            let own: Vec<std::path::PathBuf> = [
                self.options
                    .report_junit
                    .as_ref()
                    .map(|p| self.ctx.cwd.join(p)),
                summary_written,
                trace_written,
            ]
            .into_iter()
            .flatten()
            .collect();
            let mut ended = crate::plan::green::Ended::of(&record, own);
            match &self.plan.shard {
                // A part whose split could not be checked at its end certifies nothing.
                Some(_) if self.parts.unverified => ended.green = false,
                Some(shard) => ended.split = shard.inputs.digest.clone(),
                None => {}
            }
            notices.extend(crate::plan::green::remember_run(
                self.options,
                self.plan.green.as_ref(),
                &self.ctx.host_env,
                &self.plan.workspace.root,
                &self.ctx.cache_dir,
                ended,
                &record_layers,
            ));
        }
        drop(history);
        if first {
            crate::record::report_counters(keys.tree.counters().files_hashed, layers.store());
        }
        for notice in notices {
            self.reporter.notice(notice);
        }
    }

    /// A run that found every task up to date and printed only its footer writes its snapshot
    /// (`snapshot.rs`); why one is not written goes to `VX_LOG=debug`.
    fn write_snapshot(&mut self, code: i32) {
        let Some(request) = self.ctx.snapshot.clone() else {
            return;
        };
        let written = self.snapshot_facts(code).and_then(|(facts, paths)| {
            crate::snapshot::write(&request, &self.plan.workspace.root, &facts, paths)
                .map_err(|e| e.0)
        });
        if let Err(why) = written {
            tracing::trace!(target: "vx::snapshot", "no snapshot: {why}");
        }
    }

    /// What the snapshot of this run records, or why there is none.
    fn snapshot_facts(
        &mut self,
        code: i32,
    ) -> Result<(crate::snapshot::Facts, crate::snapshot::Paths), String> {
        use std::path::PathBuf;
        if code != exit::SUCCESS
            || self.tui
            || !self.sinks.is_empty()
            || self.executor.off_machine_limit().is_some()
        {
            return Err("not a plain successful run".into());
        }
        let plan = self.plan;
        let shown: Vec<(&TaskReport, bool)> = self
            .reports
            .iter()
            .map(|(&i, report)| (report, self.is_shown(i)))
            .collect();
        if shown.is_empty() || !self.reporter.output_replayable(&shown) {
            return Err("the run printed more than hits' logs and its footer".into());
        }
        let requested: Vec<bool> = shown.iter().map(|(_, requested)| *requested).collect();
        if shown
            .iter()
            .map(|(report, _)| report.log.len())
            .sum::<usize>()
            > crate::snapshot::LOGS_KEPT
        {
            return Err("the hits' logs are too long to keep".into());
        }
        let root = plan.workspace.root.clone();
        let mut tasks = Vec::new();
        // What the keys of served hits folded; dropped once a task executed or was restored (no
        // snapshot then): never written without it. Every task of a project folds the same
        // sources, so most paths come several times.
        let mut paths = self
            .cache
            .keys
            .folded
            .take()
            .ok_or("what the keys folded was not kept")?;
        let (keys, layers) = self.cache.keys_and_layers();
        if layers.has_remote() {
            return Err("a remote cache is configured".into());
        }
        let store = layers.store().ok_or("no cache")?;
        for ((&i, report), requested) in self.reports.iter().zip(requested) {
            let up_to_date = report.status == Status::Success
                && report.cache == Some(crate::outcome::CacheKind::UpToDate)
                && !report.kept
                && !report.remote;
            let derived = keys.known(&report.id);
            let (Some(derived), Some(short_key), true) =
                (derived, report.short_key.clone(), up_to_date)
            else {
                return Err(format!("{} was not up to date", report.id));
            };
            // A probe's output is no file: such a key is never proven unchanged by stat data.
            let probes = self.rows[i].config.cache.as_ref().is_some_and(|cache| {
                !cache.runtime.is_empty() || !cache.workspace_runtime.is_empty()
            });
            if probes {
                return Err(format!("{} has runtime probes", report.id));
            }
            // What the key folded, when it was not dropped yet (the rest is in `keys.folded`),
            // and the entry's artifact: a full run's lookup checks that it is there.
            for folded in derived.stats.iter().chain(derived.workspace_stats.iter()) {
                let (path, identity) = folded.kept();
                paths.folded(path, identity);
            }
            paths.insert(store.artifact_path(&derived.key.hex()));
            tasks.push((
                report.end_offset,
                crate::snapshot::Task {
                    id: report.id.clone(),
                    short_key,
                    stored_ms: report.stored.unwrap_or_default().as_millis() as u64,
                    requested,
                    log: report.log.clone(),
                },
            ));
        }
        // In the order they were printed: as they ended.
        tasks.sort_by_key(|(ended, _)| *ended);
        let tasks: Vec<crate::snapshot::Task> = tasks.into_iter().map(|(_, task)| task).collect();
        let tree = &keys.tree;
        let consulted = tree
            .consulted()
            .ok_or("the workspace holds nested repositories")?;
        paths.extend(consulted);
        for file in tree.files() {
            paths.listed(PathBuf::from(&file.path));
        }
        // The index as it is now, unchanged since it was opened: no entry was deleted or saved
        // again meanwhile (this run's retention, another checkout sharing the cache).
        let (salt, generation) = store
            .snapshot_state(&self.run_id)
            .ok()
            .flatten()
            .ok_or("the run is not in history")?;
        if store.generation_at_open() != Some(generation) {
            return Err("entries were deleted or saved again during the run".into());
        }
        let cache_dir = store.dir().to_path_buf();
        let mut all_outputs = Vec::with_capacity(self.reports.len());
        for (&i, report) in &self.reports {
            let outputs = self
                .cache
                .outputs(self.rows[i])
                .ok_or_else(|| format!("{} has no outputs", report.id))?;
            all_outputs.push(outputs);
        }
        // On several threads, as the up-to-date checks listed them.
        for listing in vx_workspace::par::map(&all_outputs, |outputs| outputs.list(&root)) {
            let listing = listing.map_err(|e| e.to_string())?;
            paths.extend(listing.visited.into_iter().map(PathBuf::from));
        }
        // Finding the members: every directory listed or matched, and the files that make a
        // matched directory a project (there or not).
        for dir in &plan.workspace.discovered_from {
            paths.insert(root.join(dir));
            for name in [vx_core::config::CONFIG_FILE, "package.json"] {
                paths.insert(root.join(dir).join(name));
            }
        }
        for project in &plan.workspace.projects {
            for name in [vx_core::config::CONFIG_FILE, "package.json"] {
                paths.insert(root.join(&project.dir).join(name));
            }
        }
        paths.extend(
            vx_core::key::WORKSPACE_FILES
                .iter()
                .map(|name| root.join(name)),
        );
        // A frozen run took its projects from the lock (a plain run never reads it).
        if self.options.frozen {
            paths.insert(root.join(vx_core::config::LOCK_FILE));
        }
        // Finding the root reads these from the working directory up, and stops at the first
        // `vx.toml` with `[workspace]`: the root's, unless the root came from a package
        // manager's files. The directories above the root are not recorded themselves (`/tmp`
        // or a home directory changes all the time).
        let by_vx_toml = std::fs::read_to_string(root.join(vx_core::config::CONFIG_FILE))
            .is_ok_and(|text| text.contains("[workspace]"));
        let up_to = if by_vx_toml {
            Some(root.as_path())
        } else {
            None
        };
        for dir in self.ctx.cwd.ancestors() {
            if up_to.is_some_and(|root| !dir.starts_with(root)) {
                break;
            }
            for name in [
                vx_core::config::CONFIG_FILE,
                "package.json",
                "pnpm-workspace.yaml",
                ".gitignore",
            ] {
                paths.insert(dir.join(name));
            }
        }
        // Finding the repository looks for `.git` from the root up to the work tree (or to `/`
        // outside git): one appearing there would change what is listed.
        let worktree = vx_workspace::tree::find_repository(&root)
            .ok()
            .flatten()
            .map(|dirs| dirs.worktree);
        for dir in root.ancestors() {
            if Some(dir) == worktree.as_deref() {
                break;
            }
            paths.insert(dir.join(".git"));
        }
        if let Ok(exe) = std::env::current_exe() {
            paths.insert(exe);
        }
        let facts = crate::snapshot::Facts {
            run_id: self.run_id.clone(),
            cache_dir,
            salt,
            generation,
            workers: self.ctx.slots,
            projects_in_run: plan.projects_in_run,
            projects_in_workspace: plan.workspace.projects.len(),
            tasks,
            notes: plan.notices.clone(),
        };
        Ok((facts, paths))
    }

    /// The run's exit code: a signal's, else 1 when a task failed or was skipped.
    fn exit_code(&self) -> i32 {
        if let Some(n) = self.stopping {
            return exit::signal(n);
        }
        if self.any_failed() {
            exit::FAILURE
        } else {
            exit::SUCCESS
        }
    }

    fn any_failed(&self) -> bool {
        self.reports
            .values()
            .any(|r| matches!(r.status, Status::Failed | Status::Skipped))
    }

    /// Held failure frames, the recap and the footer (the live region erased first, UI-6).
    pub(super) fn finish_output(&mut self) {
        let reports: Vec<&TaskReport> = self.reports.values().collect();
        let totals = Totals {
            reports: &reports,
            projects_in_run: self.plan.projects_in_run,
            projects_in_workspace: self.plan.workspace.projects.len(),
            workers: self.ctx.slots,
            remote_in_flight: reports
                .iter()
                .any(|r| r.remote)
                .then(|| self.executor.off_machine_limit().unwrap_or(0)),
            wall: self.started_at.elapsed(),
            interrupted: self.stopping,
            rerun: self.still_owed(),
        };
        self.reporter.finish(&totals);
    }

    /// The `re-run:` line's ids: the failed tasks, always, then the other tasks the command
    /// still owes (blocked by a failure, aborted or never started) that no owed task depends
    /// on: running those runs the rest as their dependencies, so the line names each owed task
    /// once, directly or through a dependant.
    fn still_owed(&self) -> Vec<String> {
        let status = |s: Status| {
            let rows = &self.rows;
            self.reports
                .iter()
                .filter(move |(&i, r)| r.status == s && rows[i].kind != Kind::Group)
                .map(|(&i, _)| i)
        };
        let failed: Vec<usize> = status(Status::Failed).collect();
        let mut rest: Vec<usize> = Vec::new();
        for s in [Status::Skipped, Status::Aborted, Status::NotRun] {
            rest.extend(status(s));
        }
        let nodes = &self.plan.graph.nodes;
        let mut reached = std::collections::HashSet::new();
        for &i in failed.iter().chain(&rest) {
            let mut stack: Vec<usize> = nodes[i].deps.clone();
            while let Some(d) = stack.pop() {
                if reached.insert(d) {
                    stack.extend(nodes[d].deps.iter().copied());
                }
            }
        }
        failed
            .into_iter()
            .chain(rest.into_iter().filter(|i| !reached.contains(i)))
            .map(|i| nodes[i].id.to_string())
            .collect()
    }
}

/// HIST-1: the invocation's facts other than its tasks (the history sink adds those).
fn invocation_facts(
    options: &crate::options::RunOptions,
    ctx: &super::Context,
    head: Option<crate::record::GitFacts>,
) -> vx_store::index::Invocation {
    let head = head.unwrap_or_default();
    vx_store::index::Invocation {
        commit: head.commit,
        branch: head.branch,
        ci_provider: crate::record::invocation::ci_provider(&ctx.host_env),
        argv: std::env::args().collect(),
        os: std::env::consts::OS.into(),
        arch: std::env::consts::ARCH.into(),
        vx_version: env!("CARGO_PKG_VERSION").into(),
        concurrency: ctx.slots,
        cache_policy: format!(
            "local:{}{}",
            if options.cache.local_read { "r" } else { "" },
            if options.cache.local_write { "w" } else { "" }
        ),
        ..Default::default()
    }
}
