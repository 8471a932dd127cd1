//! The end of the graph (ARCH-3): stopping what is not kept, the held frames, the recap, the
//! footer, and the run's history rows.

use std::collections::BTreeMap;
use std::time::SystemTime;

use super::{kind_of, task, Kind, Run};
use crate::exit;
use crate::render::footer::{footer, recap, Totals};
use crate::render::{notice, out_str};
use crate::run::outcome::{NotReady, Status, TaskReport};
use crate::run::record::profile::chrome_trace;
use crate::run::record::summary::{target_path, write_and_tell, write_json, RunFacts, Summary};

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
            if kind_of(task(self.plan, i)) == Kind::Group {
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

        let code = self.exit_code();
        let history = (!signalled).then(|| self.history(code));
        self.cache.finish(signalled);
        let retention = self.plan.workspace.settings.cache_retention.as_ref();
        let (store, keys) = self.cache.store_and_keys();
        let key_of = |id: &vx_core::TaskId| keys.known(id).map(|d| d.key.hex());
        self.recorder.finish(store, history, &key_of, retention);
        crate::run::record::report_counters(
            self.cache.keys.tree.counters().files_hashed,
            self.cache.layers().store(),
        );
        self.write_summary(code);
        self.write_profile();
        self.finish_output();
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
        if self.stopping.is_none() {
            let history = self.history(code);
            let (store, keys) = self.cache.store_and_keys();
            let key_of = |id: &vx_core::TaskId| keys.known(id).map(|d| d.key.hex());
            self.recorder.record_again(store, history, &key_of);
        }
        if let Some((path, summary)) = &mut self.summary {
            summary.set_exit_code(code);
            if let Err(reason) = write_json(path, summary) {
                notice(&format!("could not write {}: {reason}", path.display()));
            }
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

    /// UI-14: the summary, written before the footer; a failure is one line and changes
    /// nothing else.
    fn write_summary(&mut self, code: i32) {
        let Some(target) = &self.options.summarize else {
            return;
        };
        let path = self.file_path(target, ".json");
        let facts = RunFacts {
            run_id: self.run_id.clone(),
            exit_code: code,
            started_at_ms: crate::clock::epoch_ms(self.started_wall),
            ended_at_ms: crate::clock::epoch_ms(SystemTime::now()),
        };
        let reports: Vec<&TaskReport> = self.reports.values().collect();
        let summary = Summary::new(&facts, &reports, |r| self.cache.key_hex(&r.id));
        write_and_tell(&path, &summary, &self.ctx.cwd);
        self.summary = Some((path, summary));
    }

    /// UI-15: the Chrome trace, written before the footer; a failure is one line.
    fn write_profile(&mut self) {
        let (Some(target), Some(phases)) = (&self.options.profile, &self.phases) else {
            return;
        };
        let path = self.file_path(target, ".trace.json");
        let reports: Vec<&TaskReport> = self.reports.values().collect();
        let trace = chrome_trace(self.ctx.origin, self.started_at, phases, &reports, |r| {
            self.cache.key_hex(&r.id)
        });
        write_and_tell(&path, &trace, &self.ctx.cwd);
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

    /// The rows `vx why` reads (HIST-1's minimal M2 subset): one per non-group task with an
    /// outcome other than aborted or not run.
    pub(super) fn history(
        &self,
        exit_code: i32,
    ) -> (vx_store::index::Invocation, Vec<vx_store::index::RunRow>) {
        let run_id = self.run_id.clone();
        let started_at = crate::clock::epoch_ms(self.started_wall);
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        let mut rows = Vec::new();
        for report in self.reports.values() {
            if matches!(report.status, Status::Aborted | Status::NotRun) {
                continue;
            }
            *counts
                .entry(report.status.word().replace(' ', "_"))
                .or_default() += 1;
            if let Some(cache) = report.cache {
                *counts.entry(cache.word().replace('-', "_")).or_default() += 1;
            }
            rows.push(vx_store::index::RunRow {
                run_id: run_id.clone(),
                project: report.id.project.clone(),
                task: report.id.task.clone(),
                status: report.status.word().to_string(),
                cache: report.cache.map_or("", |c| c.word()).to_string(),
                placement: Some("local".into()),
                exit_code: report.exit_code,
                duration_ms: report.duration.as_millis() as u64,
                cpu_ms: report.cpu_ms,
                peak_rss_bytes: report.peak_rss_bytes,
                attempts: report.attempts,
                timed_out: report.timed_out,
                not_ready: match report.not_ready {
                    None => 0,
                    Some(NotReady::Exited) => 1,
                    Some(NotReady::TimedOut(_)) => 2,
                    Some(NotReady::Spawn) => 3,
                    Some(NotReady::Unneeded) => 4,
                },
                blocked_by: report.blocked_by.as_ref().map(|b| b.to_string()),
                start_offset_ms: report.start_offset.as_millis() as u64,
                end_offset_ms: report.end_offset.as_millis() as u64,
                admission_held_ms: report.admission_held.as_millis() as u64,
                sandbox_violations: report.sandbox_violations,
                ..Default::default()
            });
        }
        let head = vx_workspace::tree::head(&self.plan.workspace.root).unwrap_or_default();
        let invocation = vx_store::index::Invocation {
            commit: head.commit,
            branch: head.branch,
            ci_provider: ci_provider(&self.ctx.host_env),
            run_id,
            argv: std::env::args().collect(),
            started_at,
            ended_at: crate::clock::epoch_ms(SystemTime::now()),
            exit_code,
            task_count: rows.len() as u64,
            counts,
            os: std::env::consts::OS.into(),
            arch: std::env::consts::ARCH.into(),
            vx_version: env!("CARGO_PKG_VERSION").into(),
            concurrency: self.ctx.slots,
            cache_policy: format!(
                "local:{}{}",
                if self.options.cache.local_read {
                    "r"
                } else {
                    ""
                },
                if self.options.cache.local_write {
                    "w"
                } else {
                    ""
                }
            ),
            ..Default::default()
        };
        (invocation, rows)
    }

    /// Held failure frames, the recap and the footer (the live region erased first, UI-6).
    pub(super) fn finish_output(&mut self) {
        crate::render::live::stop();
        self.reporter.flush_held();
        let reports: Vec<TaskReport> = self.reports.values().cloned().collect();
        let style = self.reporter.style;
        out_str(&recap(&style, &reports, self.reporter.github_token()));
        let totals = Totals {
            reports: &reports,
            projects_in_run: self.plan.projects_in_run,
            projects_in_workspace: self.plan.workspace.projects.len(),
            workers: self.ctx.slots,
            wall: self.started_at.elapsed(),
        };
        out_str(&footer(&style, &totals));
    }
}

/// HIST-1: the CI provider, from the first truthy of its variables, then `CI`.
fn ci_provider(env: &BTreeMap<String, String>) -> Option<String> {
    let truthy = |name: &str| env.get(name).is_some_and(|v| crate::run::truthy(v));
    [
        ("GITHUB_ACTIONS", "github-actions"),
        ("GITLAB_CI", "gitlab-ci"),
        ("BUILDKITE", "buildkite"),
        ("CIRCLECI", "circleci"),
        ("CI", "ci"),
    ]
    .iter()
    .find(|(name, _)| truthy(name))
    .map(|(_, provider)| provider.to_string())
}

/// HIST-1: argv as recorded: what follows the first bare `--` (arguments forwarded to tasks,
/// which may hold anything) replaced by a digest keyed with the store's salt.
pub(crate) fn masked_argv(argv: &[String], salt: &[u8; 32]) -> Vec<String> {
    let mut forwarded = false;
    argv.iter()
        .map(|arg| {
            if forwarded {
                let digest = blake3::keyed_hash(salt, arg.as_bytes());
                format!("[forwarded {}]", &digest.to_hex()[..12])
            } else {
                forwarded = arg == "--";
                arg.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_arguments_are_recorded_as_digests() {
        let argv: Vec<String> = ["vx", "run", "deploy", "--", "--token", "s3cret", "--"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let masked = masked_argv(&argv, &[7; 32]);
        assert_eq!(&masked[..4], &argv[..4]);
        assert!(masked[4].starts_with("[forwarded ") && masked[5].starts_with("[forwarded "));
        assert!(!masked.iter().any(|a| a.contains("s3cret")));
        assert_ne!(
            masked[5],
            masked_argv(&argv, &[8; 32])[5],
            "keyed with the salt"
        );
    }

    #[test]
    fn the_ci_provider_is_the_first_truthy_variable() {
        let env = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(ci_provider(&env(&[])), None);
        assert_eq!(ci_provider(&env(&[("CI", "true")])).as_deref(), Some("ci"));
        assert_eq!(
            ci_provider(&env(&[
                ("CI", "1"),
                ("GITLAB_CI", "true"),
                ("GITHUB_ACTIONS", "false")
            ]))
            .as_deref(),
            Some("gitlab-ci")
        );
    }
}
