//! Field 11's paths (KEY-10, KEY-12): a task's input files — its project's files its globs
//! match, the workspace's files its workspace globs match, the files of the projects it
//! depends on that its `^name` input sets match — never its own outputs.

use std::sync::Arc;

use vx_core::config::TaskConfig;
use vx_core::globs::{is_literal, GlobCache, TaskGlobs};
use vx_core::TaskId;

use super::{is_under, literal_inputs, relative, KeyError, Keys};

impl Keys<'_> {
    /// Every listed file of a project, nested projects left out (KEY-12).
    pub(super) fn project_files(&self, project: usize) -> Vec<String> {
        let dir = &self.workspace.projects[project].dir;
        let nested = &self.nested[project];
        self.tree
            .files_under(dir)
            .iter()
            .filter(|f| !nested.iter().any(|n| is_under(&f.path, n)))
            .map(|f| f.path.clone())
            .collect()
    }

    /// Field 11's paths (KEY-10): for a cached task, the project's files matched by
    /// `cache.inputs` plus the workspace's files matched by `cache.workspace-inputs`, never its
    /// own outputs; for an uncached task, every file of the project (KEY-12); never the root's
    /// `vx.lock` (KEY-13).
    pub(super) fn input_paths(
        &mut self,
        id: &TaskId,
        project: usize,
        config: &TaskConfig,
    ) -> Result<Vec<String>, KeyError> {
        let dir = self.workspace.projects[project].dir.clone();
        // Names that are not UTF-8 (escaped, see `vx_workspace::tree::escape_name`) of the
        // project, nested projects left out.
        let odd: Vec<String> = self
            .tree
            .non_utf8()
            .iter()
            .filter(|p| is_under(p, &dir) && !self.nested[project].iter().any(|n| is_under(p, n)))
            .cloned()
            .collect();
        // Paths too long to open: the task fails, naming the first it reaches.
        let long: Vec<&String> = self
            .tree
            .too_long()
            .iter()
            .filter(|p| is_under(p, &dir) && !self.nested[project].iter().any(|n| is_under(p, n)))
            .collect();
        let Some(cache) = &config.cache else {
            if let Some(path) = long.first() {
                return Err(too_long(id, path));
            }
            // KEY-12: every file of the project, these included (found by their bytes).
            let mut paths = self.project_files(project);
            paths.extend(odd);
            paths.retain(|p| p != vx_workspace::LOCK_FILE);
            paths.sort();
            return Ok(paths);
        };
        // A cached task folds only what its globs match: a name that is not UTF-8 matters
        // only when a glob would match it, and then the task fails, naming it.
        let inputs = self.globs.get(cache.inputs.as_deref().unwrap_or_default());
        let workspace_inputs = self.globs.get(&cache.workspace_inputs);
        let matched = odd
            .iter()
            .find(|p| inputs.is_match(relative(p, &dir)))
            .or_else(|| {
                self.tree
                    .non_utf8()
                    .iter()
                    .find(|p| workspace_inputs.is_match(p))
            });
        if let Some(path) = matched {
            return Err(KeyError(format!(
                "{id}: input `{}` has a name that is not UTF-8",
                vx_workspace::tree::shown_name(path)
            )));
        }
        let reached = long
            .iter()
            .find(|p| may_reach(&inputs, relative(p, &dir)))
            .copied()
            .or_else(|| {
                self.tree
                    .too_long()
                    .iter()
                    .find(|p| may_reach(&workspace_inputs, p))
            });
        if let Some(path) = reached {
            return Err(too_long(id, path));
        }
        let outputs = OwnOutputs::new(&dir, cache, &mut self.globs);
        let mut paths: Vec<String> = self
            .project_files(project)
            .into_iter()
            .filter(|path| inputs.is_match(relative(path, &dir)) && !outputs.covers(path))
            .collect();
        if !workspace_inputs.is_empty() {
            paths.extend(
                self.tree
                    .files()
                    .iter()
                    .filter(|f| workspace_inputs.is_match(&f.path) && !outputs.covers(&f.path))
                    .map(|f| f.path.clone()),
            );
        }
        if !cache.dependency_inputs.is_empty() {
            for dependency in self.workspace.dependency_closure(project) {
                let files = self.dependency_files(dependency, &cache.dependency_inputs);
                paths.extend(files);
            }
        }
        // Literal entries name a file even when git ignores it, and fold as absent when
        // nothing is there (KEY-10).
        for literal in literal_inputs(&dir, &inputs, &workspace_inputs) {
            let listed = paths.iter().any(|p| is_under(p, &literal));
            let on_disk = self.workspace.root.join(&literal);
            if !listed && !on_disk.is_dir() {
                paths.push(literal);
            }
        }
        // KEY-13: `vx.lock` is in no key (writing it moves nothing).
        paths.retain(|p| p != vx_workspace::LOCK_FILE);
        paths.sort();
        paths.dedup();
        // A task's globs often cover kinds a project may not have (`*.ts` and `*.tsx`): only
        // when none of them matches anything is it said, with all of them.
        let mut unmatched: Vec<(&'static str, Vec<String>)> = Vec::new();
        let mut any_matched = false;
        for (list, base, label) in [
            (&inputs, dir.as_str(), "cache.inputs"),
            (&workspace_inputs, "", "cache.workspace-inputs"),
        ] {
            let mut missed = Vec::new();
            for glob in list.positives().iter().filter(|g| !is_literal(g)) {
                let single = self.globs.get(std::slice::from_ref(glob));
                let matched = paths
                    .iter()
                    .any(|p| is_under(p, base) && single.is_match(relative(p, base)));
                if matched {
                    any_matched = true;
                } else {
                    missed.push(glob.clone());
                }
            }
            if !missed.is_empty() {
                unmatched.push((label, missed));
            }
        }
        if !any_matched {
            for (label, missed) in unmatched {
                let glob = missed.join(", ");
                if self.warned.insert((id.clone(), glob.clone())) {
                    self.notices.push(crate::outcome::Notice::Unmatched {
                        task: id.clone(),
                        what: label,
                        glob,
                    });
                }
            }
        }
        Ok(paths)
    }

    /// The files of project `dependency` that `dependency-inputs` globs match (a `^name`
    /// input set), less the outputs of that project's cached tasks, which its own tasks
    /// produce while the dependant's key is being taken.
    pub(super) fn dependency_files(&mut self, dependency: usize, globs: &[String]) -> Vec<String> {
        let project = &self.workspace.projects[dependency];
        let matcher = self.globs.get(globs);
        let outputs: Vec<OwnOutputs> = project
            .config
            .tasks
            .values()
            .filter_map(|task| task.cache.as_deref())
            .map(|cache| OwnOutputs::new(&project.dir, cache, &mut self.globs))
            .collect();
        self.project_files(dependency)
            .into_iter()
            .filter(|path| {
                matcher.is_match(relative(path, &project.dir))
                    && !outputs.iter().any(|o| o.covers(path))
            })
            .collect()
    }
}

/// The declared outputs of one task, root-relative, for leaving them out of its inputs.
pub(super) struct OwnOutputs {
    dir: String,
    project: Arc<TaskGlobs>,
    workspace: Arc<TaskGlobs>,
}

impl OwnOutputs {
    pub(super) fn new(
        dir: &str,
        cache: &vx_core::config::CacheConfig,
        globs: &mut GlobCache,
    ) -> OwnOutputs {
        OwnOutputs {
            dir: dir.to_string(),
            project: globs.get(cache.outputs.as_deref().unwrap_or_default()),
            workspace: globs.get(&cache.workspace_outputs),
        }
    }

    pub(super) fn covers(&self, path: &str) -> bool {
        (is_under(path, &self.dir) && self.project.is_match(relative(path, &self.dir)))
            || self.workspace.is_match(path)
    }
}

/// Whether one of `globs`' positive patterns could match `path` or a path below it (its
/// literal directories lead there or below it, and it has `**` or components enough).
fn may_reach(globs: &TaskGlobs, path: &str) -> bool {
    let depth = path.split('/').count();
    globs.positives().iter().any(|glob| {
        let prefix = vx_core::globs::literal_prefix(glob);
        (is_under(path, prefix) || is_under(prefix, path))
            && (glob.contains("**") || glob.split('/').count() >= depth)
    })
}

/// The short, root-relative line for an input too long to open.
fn too_long(id: &TaskId, path: &str) -> KeyError {
    let shown: String = if path.chars().count() > 72 {
        let head: String = path.chars().take(40).collect();
        let tail: String = {
            let mut tail: Vec<char> = path.chars().rev().take(24).collect();
            tail.reverse();
            tail.into_iter().collect()
        };
        format!("{head}…{tail}")
    } else {
        path.to_string()
    };
    KeyError(format!(
        "{id}: input `{shown}` is longer than the system's path limit; vx cannot read it"
    ))
}
