//! Cleaning a task's declared outputs (STORE-10 step 1, STORE-11, EXEC-15).
//!
//! Before anything is removed, every match is checked against the protections: a tracked file
//! with uncommitted changes, or an untracked file another cached task of the run reads as an
//! input, is never removed — unless vx itself wrote it last (its `lstat` equals a stamp). Only
//! when every match passes is anything removed ([`remove`]): links are unlinked, never
//! followed, and directories left empty below the globs' literal prefixes go too.

use std::fs;
use std::path::Path;

use vx_core::graph::task_config;
use vx_core::TaskId;

use super::cleaner::remove;
use super::outputs::{plain, stamp, Found, Outputs};
use super::RunCache;
use crate::keys::{is_under, relative};
use crate::outcome::Notice;
use crate::plan::nodes::Row;
use vx_store::artifact::Unlinker;

impl RunCache<'_> {
    /// EXEC-15: outputs are cleaned before every attempt of a task that writes. What the failed
    /// attempt wrote is the task's own, so the protections of the first clean are not checked
    /// again.
    pub fn clean_for_retry(&mut self, task: Row<'_>) -> Result<(), String> {
        let id = task.id;
        let Some(outputs) = self.outputs(task) else {
            return Ok(());
        };
        let root = self.workspace.root.clone();
        let found = outputs
            .find(&root)
            .map_err(|e| format!("vx: {id}: cannot read the outputs: {}", plain(&e)))?;
        remove(&outputs, &root, &found).map_err(|e| format!("vx: {id}: {e}"))?;
        self.refresh_outputs(&outputs);
        Ok(())
    }

    /// STORE-11: clean the declared outputs before the task runs.
    pub(super) fn clean(&mut self, id: &TaskId, outputs: &Outputs) -> Result<(), String> {
        let root = self.workspace.root.clone();
        let found = outputs
            .find(&root)
            .map_err(|e| format!("vx: {id}: cannot read the outputs: {}", plain(&e)))?;
        self.check_clean(id, outputs, &found)?;
        remove(outputs, &root, &found).map_err(|e| format!("vx: {id}: {e}"))?;
        self.refresh_outputs(outputs);
        Ok(())
    }

    /// The protections of STORE-10 step 1, checked for every match before anything is removed.
    pub(super) fn check_clean(
        &mut self,
        id: &TaskId,
        outputs: &Outputs,
        found: &[Found],
    ) -> Result<(), String> {
        if found.is_empty() {
            return Ok(());
        }
        // Removing a directory loses nothing: only what is in it is protected. Nor does
        // removing what vx itself wrote last.
        let candidates: Vec<&Found> = found
            .iter()
            .filter(|f| !f.meta.is_dir())
            .filter(|f| !self.stamps.written_by_vx(&stamp(&f.path, &f.meta)))
            .collect();
        let tracked: Vec<String> = candidates
            .iter()
            .filter(|f| self.keys.is_tracked(&f.path))
            .map(|f| f.path.clone())
            .collect();
        for f in &candidates {
            let glob_list = if outputs.entry_name(&f.path).starts_with("outputs/") {
                "cache.outputs"
            } else {
                "cache.workspace-outputs"
            };
            if self.cleaner.is_dirty(&f.path, &tracked) {
                let globs = self.glob_text(outputs, &f.path);
                return Err(format!(
                    "vx: {id}: refusing to clean `{}`: it has uncommitted changes and matches {glob_list} ({globs})",
                    f.path
                ));
            }
            if !self.keys.is_tracked(&f.path) {
                if let Some(reader) = self.input_reader(&f.path) {
                    let globs = self.glob_text(outputs, &f.path);
                    return Err(format!(
                        "vx: {id}: refusing to clean `{}`: it is an input of `{reader}` and matches {glob_list} ({globs})",
                        f.path
                    ));
                }
            }
        }
        Ok(())
    }

    /// The output globs that match a path, for the refusal line.
    fn glob_text(&mut self, outputs: &Outputs, path: &str) -> String {
        let rel = relative(path, &outputs.dir);
        let mut globs: Vec<String> = Vec::new();
        for g in outputs.project.positives() {
            if self.globs.get(&[g]).is_match(rel) {
                globs.push(g.clone());
            }
        }
        for g in outputs.workspace.positives() {
            if self.globs.get(&[g]).is_match(path) {
                globs.push(g.clone());
            }
        }
        globs.join(", ")
    }

    /// A cached task of the run whose `cache.inputs` or `cache.workspace-inputs` select this
    /// untracked path (STORE-10).
    fn input_reader(&mut self, path: &str) -> Option<TaskId> {
        let workspace = self.workspace;
        let graph = self.keys.graph();
        for node in &graph.nodes {
            let Some(config) = task_config(workspace, &node.id) else {
                continue;
            };
            let Some(cache) = &config.cache else { continue };
            let dir = &workspace.projects[node.project].dir;
            // Cheap test first: only the project's own tasks and tasks with workspace inputs
            // can select the path.
            if !is_under(path, dir) && cache.workspace_inputs.is_empty() {
                continue;
            }
            let own = self.outputs_of(&node.id, config);
            if own.as_ref().is_some_and(|o| o.covers(path)) {
                continue;
            }
            let inputs = self.globs.get(cache.inputs.as_deref().unwrap_or_default());
            let in_project = is_under(path, dir)
                && !self
                    .keys
                    .nested(node.project)
                    .iter()
                    .any(|n| is_under(path, n));
            let workspace_inputs = self.globs.get(&cache.workspace_inputs);
            if (in_project && inputs.is_match(relative(path, dir)))
                || workspace_inputs.is_match(path)
            {
                return Some(node.id.clone());
            }
        }
        None
    }
}

impl RunCache<'_> {
    /// Before a task's command runs without its outputs cleaned (`--no-cache`,
    /// `--cache local:r`, a result that will not be saved), every symlink among its outputs
    /// that leads outside them — a restored one, or one an earlier run left — is removed, said
    /// once: the command's own `> dist/out.txt` would otherwise write through it (into
    /// `src/`, say). A link that stays within the outputs stays.
    pub(super) fn unlink_escaping_links(&mut self, id: &TaskId, outputs: &Outputs) {
        let root = self.workspace.root.clone();
        let Ok(found) = outputs.find(&root) else {
            return;
        };
        let real_root = root.canonicalize().unwrap_or_else(|_| root.clone());
        let mut unlinker = Unlinker::new(&root);
        for f in found.iter().filter(|f| f.meta.file_type().is_symlink()) {
            let Ok(text) = fs::read_link(root.join(&f.path)) else {
                continue;
            };
            let text = text.to_string_lossy().into_owned();
            let parent = f.path.rsplit_once('/').map_or("", |(dir, _)| dir);
            let inside = vx_store::artifact::link_target(&text, &real_root.join(parent))
                .and_then(|place| {
                    place
                        .strip_prefix(&real_root)
                        .ok()
                        .map(|rel| rel.to_string_lossy().into_owned())
                })
                .is_some_and(|rel| outputs.covers(&rel));
            if inside || unlinker.remove(Path::new(&f.path), false).is_err() {
                continue;
            }
            self.say(Notice::note(format!(
                "{id}: removed the symlink `{}` (to `{text}`) from its outputs before running: it leads outside them, and the command would write through it",
                f.path
            )));
        }
        self.refresh_outputs(outputs);
    }
}
