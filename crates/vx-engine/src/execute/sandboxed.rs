//! Sandboxed tasks in the loop (SBX-1 to SBX-8): the host probed at the first sandboxed
//! execution, each attempt's view, launch and `TMPDIR`, the accesses init reports, and the
//! verdict — violations fail a one-shot task and are warnings for a persistent one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use vx_core::config::SandboxConfig;
use vx_exec::sandbox::{violations, RealFiles, Violation};
use vx_exec::trace::{Access, AccessKind};
use vx_exec::{Completion, SandboxEnd, SandboxLaunch};

use super::live::{LiveSandbox, Verdict};
use super::msg::Route;
use super::{Kind, Msg, Run};
use crate::host::proxy::{environment as proxy_environment, HostPattern, TaskProxy};
use crate::host::sandbox::{linked_packages, view, violations_section, Host, Linked, ViewInputs};
use crate::plan::Plan;

impl Run<'_> {
    /// The sandbox of task `i` with `table`: the launch to put in its spawn spec, and what the
    /// loop keeps; `env` gains `TMPDIR`. The error is the line the task fails with.
    pub(super) fn sandbox_task(
        &mut self,
        i: usize,
        table: &SandboxConfig,
        env: &mut BTreeMap<String, String>,
        route: &Route,
    ) -> Result<(SandboxLaunch, LiveSandbox), String> {
        let id = self.plan.graph.nodes[i].id.clone();
        if self.sandbox_host.is_none() {
            let probed = Host::probe(self.ctx.host_env.get("PATH").map(String::as_str));
            if let Err(reason) = &probed {
                tracing::debug!(%reason, "the sandbox is not available");
            }
            self.sandbox_host = Some(probed);
        }
        let host = match self.sandbox_host.as_mut().expect("probed above") {
            Ok(host) => host,
            Err(reason) => {
                return Err(format!(
                    "vx: {id}: cannot sandbox: sandbox not available: {reason}"
                ))
            }
        };
        let cannot = |reason: String| format!("vx: {id}: cannot sandbox: {reason}");
        let tmpdir = host
            .attempt_dir()
            .map_err(|e| cannot(format!("cannot create its TMPDIR: {e}")))?;
        let home = self.ctx.host_env.get("HOME").map(PathBuf::from);
        // SBX-3: a cached task reads only the linked packages its key folds.
        let node = &self.plan.graph.nodes[i];
        let folded = self.rows[i]
            .config
            .cache
            .is_some()
            .then(|| folded_projects(self.plan, i));
        let (linked, unkeyed): (Vec<Linked>, Vec<Linked>) =
            linked_packages(&self.plan.workspace, node.project)
                .into_iter()
                .partition(|l| folded.as_ref().is_none_or(|f| f.contains(&l.project)));
        let linked: Vec<PathBuf> = linked
            .iter()
            .map(|l| {
                self.plan
                    .workspace
                    .root
                    .join(&self.plan.workspace.projects[l.project].dir)
            })
            .collect();
        let inputs = ViewInputs {
            workspace: &self.plan.workspace,
            project: self.plan.graph.nodes[i].project,
            config: table,
            cache_dir: &self.ctx.cache_dir,
            home: home.as_deref(),
            tmpdir: tmpdir.clone(),
            empty_file: host.empty_file().to_path_buf(),
            init: host.init().to_path_buf(),
            linked,
        };
        let patterns: Vec<HostPattern> = table
            .network
            .iter()
            .filter_map(|text| HostPattern::parse(text))
            .collect();
        let route = route.clone();
        let socket = host.proxy_socket();
        let proxy = TaskProxy::start(&socket, patterns.clone(), move |target| {
            route.deliver(Msg::NetRefused(i, target));
        })
        .map_err(|e| {
            let _ = std::fs::remove_dir_all(&tmpdir);
            cannot(format!("cannot start its network proxy: {e}"))
        })?;
        let made = view(&inputs).and_then(|mut view| {
            view.proxy = Some(proxy.socket().to_path_buf());
            Ok((host.launch(&view)?, view))
        });
        let (launch, view) = match made {
            Ok(made) => made,
            Err(reason) => {
                let _ = std::fs::remove_dir_all(&tmpdir);
                return Err(cannot(reason.to_string()));
            }
        };
        env.insert("TMPDIR".into(), tmpdir.to_string_lossy().into_owned());
        env.extend(proxy_environment(&patterns));
        Ok((
            launch,
            LiveSandbox {
                view,
                tmpdir,
                accesses: Vec::new(),
                warned: BTreeSet::new(),
                _proxy: proxy,
                refused: BTreeSet::new(),
                unkeyed,
                _scratch: host.scratch(),
            },
        ))
    }

    /// Init saw an access; a persistent task's violation is a warning on stderr now (SBX-8).
    pub(super) fn sandbox_access(&mut self, i: usize, access: Access) {
        let Some(live) = self.live.get_mut(&i) else {
            return;
        };
        let persistent = live.kind == Kind::Persistent;
        let Some(sandbox) = live.sandbox.as_mut() else {
            return;
        };
        if !persistent {
            sandbox.accesses.push(access);
            return;
        }
        for notice in sandbox.warn_access(&self.plan.graph.nodes[i].id, access) {
            self.reporter.notice(notice);
        }
    }

    /// The task's proxy refused a request: a violation (SBX-7), a warning now for a
    /// persistent task (SBX-8).
    pub(super) fn sandbox_refused(&mut self, i: usize, target: String) {
        let Some(live) = self.live.get_mut(&i) else {
            return;
        };
        let persistent = live.kind == Kind::Persistent;
        let Some(sandbox) = live.sandbox.as_mut() else {
            return;
        };
        if persistent {
            if let Some(notice) = sandbox.warn_refused(&self.plan.graph.nodes[i].id, target) {
                self.reporter.notice(notice);
            }
        } else {
            sandbox.refused.insert(target);
        }
    }

    /// A sandboxed attempt ended: its `TMPDIR` goes, and for a one-shot task the accesses are
    /// judged; violations are listed in the frame.
    pub(super) fn sandbox_verdict(&mut self, i: usize, completion: &Completion) -> Verdict {
        let Some(live) = self.live.get_mut(&i) else {
            return Verdict::Clean;
        };
        let kind = live.kind;
        let Some(sandbox) = live.sandbox.as_mut() else {
            return Verdict::Clean;
        };
        sandbox.ended();
        let accesses = std::mem::take(&mut sandbox.accesses);
        if completion.sandbox == Some(SandboxEnd::Unreadable) {
            let id = &self.plan.graph.nodes[i].id;
            let line = format!(
                "vx: {id}: cannot sandbox: the sandbox's report was unreadable (did a process of the task write to it?)"
            );
            self.note(i, &line);
            return Verdict::NoReport;
        }
        let ended_by_vx = completion.stopped || completion.timed_out || self.stopping.is_some();
        if completion.sandbox == Some(SandboxEnd::Unreported) && !ended_by_vx {
            let id = &self.plan.graph.nodes[i].id;
            let line = format!(
                "vx: {id}: cannot sandbox: bubblewrap ended (exit {}) before the task's report",
                completion.exit_code
            );
            self.note(i, &line);
            return Verdict::NoReport;
        }
        if kind != Kind::OneShot {
            return Verdict::Clean;
        }
        let mut found = violations(&sandbox.view, &accesses, &RealFiles);
        // Reads through the link of a package the key does not fold: covered lexically by
        // `node_modules`, but the package itself is not there.
        let root = &self.plan.workspace.root;
        for access in &accesses {
            let path = vx_exec::sandbox::lexical(&access.path);
            let through = sandbox.unkeyed.iter().any(|l| path.starts_with(&l.link));
            if through && access.kind == AccessKind::Read {
                if let Ok(rel) = path.strip_prefix(root) {
                    found.push(Violation {
                        kind: AccessKind::Read,
                        path: rel.to_string_lossy().into_owned(),
                        via: None,
                    });
                }
            }
        }
        found.sort();
        found.dedup();
        let refused: Vec<String> = std::mem::take(&mut sandbox.refused).into_iter().collect();
        if found.is_empty() && refused.is_empty() {
            return Verdict::Clean;
        }
        let project = &self.plan.workspace.projects[self.plan.graph.nodes[i].project].dir;
        let mut section = violations_section(&found, &refused, Path::new(project));
        section.push_str(&self.unkeyed_hints(i, &found));
        self.note(i, section.trim_end());
        Verdict::Violations((found.len() + refused.len()) as u64)
    }

    /// SBX-3: for each linked package the violations touch (through its link or at its real
    /// place), the dependency that would key it and so let the task read it.
    fn unkeyed_hints(&self, i: usize, found: &[Violation]) -> String {
        let Some(sandbox) = self.live.get(&i).and_then(|l| l.sandbox.as_ref()) else {
            return String::new();
        };
        let ws = &self.plan.workspace;
        let task_name = &self.plan.graph.nodes[i].id.task;
        let mut hints = BTreeSet::new();
        for linked in &sandbox.unkeyed {
            let project = &ws.projects[linked.project];
            let link = linked.link.strip_prefix(&ws.root).unwrap_or(&linked.link);
            let touched = found.iter().any(|v| {
                let path = Path::new(&v.path);
                path.starts_with(&project.dir) || path.starts_with(link)
            });
            if !touched {
                continue;
            }
            let edge = if project.config.tasks.contains_key(task_name.as_str()) {
                format!("depends-on = [\"{}#{task_name}\"]", project.name)
            } else if let Some(name) = project.config.tasks.keys().next() {
                format!("depends-on = [\"{}#{name}\"]", project.name)
            } else {
                format!("a dependency on a task of {}", project.name)
            };
            hints.insert(format!(
                "│ hint: {} is a workspace package linked in node_modules that this task's key does not fold; add {edge}\n",
                project.name
            ));
        }
        hints.into_iter().collect()
    }

    /// Before another attempt (EXEC-15): its `TMPDIR` again, empty, and its write grants
    /// (cleaning the outputs for the retry may have removed one). The error is the reason in
    /// `cannot sandbox: …`.
    pub(super) fn sandbox_again(&mut self, i: usize) -> Result<(), String> {
        let Some(sandbox) = self.live.get_mut(&i).and_then(|l| l.sandbox.as_mut()) else {
            return Ok(());
        };
        sandbox.accesses.clear();
        sandbox.refused.clear();
        make_again(&sandbox.view.writes, &sandbox.tmpdir)
    }
}

/// The write grants that are gone, and the attempt's `TMPDIR`, made again; the error names
/// the directory that could not be made.
fn make_again(writes: &[PathBuf], tmpdir: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    for grant in writes {
        if grant.symlink_metadata().is_err() {
            std::fs::create_dir_all(grant)
                .map_err(|e| format!("cannot create the write grant {}: {e}", grant.display()))?;
        }
    }
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(tmpdir)
        .map_err(|e| format!("cannot create its TMPDIR {}: {e}", tmpdir.display()))
}

/// The projects of every task task `i` depends on, transitively: those its key folds.
fn folded_projects(plan: &Plan, i: usize) -> BTreeSet<usize> {
    let mut projects = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut stack = plan.graph.nodes[i].deps.clone();
    while let Some(d) = stack.pop() {
        if seen.insert(d) {
            projects.insert(plan.graph.nodes[d].project);
            stack.extend(plan.graph.nodes[d].deps.iter().copied());
        }
    }
    projects
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_that_cannot_be_made_again_is_named() {
        let dir = tempfile::tempdir().unwrap();
        // The failed attempt left a file where the grant's parent was.
        std::fs::write(dir.path().join("out"), "x").unwrap();
        let grant = dir.path().join("out/sub");
        let tmpdir = dir.path().join("tmp");
        let error = make_again(std::slice::from_ref(&grant), &tmpdir).unwrap_err();
        assert!(
            error.starts_with(&format!(
                "cannot create the write grant {}: ",
                grant.display()
            )),
            "{error}"
        );
        assert!(!tmpdir.exists());
        // Made again when it can be: the grant, then an empty TMPDIR.
        std::fs::remove_file(dir.path().join("out")).unwrap();
        make_again(std::slice::from_ref(&grant), &tmpdir).unwrap();
        assert!(grant.is_dir() && tmpdir.is_dir());
        let error = make_again(&[], &tmpdir).unwrap_err();
        assert!(
            error.starts_with(&format!("cannot create its TMPDIR {}: ", tmpdir.display())),
            "{error}"
        );
    }
}
