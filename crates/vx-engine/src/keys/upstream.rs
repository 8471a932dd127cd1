//! Field 10 of a key (KEY-9): the upstreams a task folds, through `cache.upstream` and
//! `cache.upstream-keys`, and the fingerprints of passed-through projects.

use vx_core::config::TaskConfig;
use vx_core::graph::task_config;
use vx_core::key::{folds_upstream, InputFile, Key, KeyInputs, DEFAULT_UPSTREAM};
use vx_core::TaskId;
use vx_workspace::tree::Identity;

use super::{is_persistent, join, KeyError, Keys};

impl Keys<'_> {
    /// The upstream ids whose keys `id`'s key folds (KEY-9), pass-through fingerprints aside.
    pub fn folded_upstreams(&self, id: &TaskId) -> Vec<TaskId> {
        task_config(self.workspace, id)
            .map(|config| self.kept_upstreams(id, config))
            .unwrap_or_default()
    }

    /// The direct upstreams of `id` field 10 folds: those `cache.upstream` keeps, persistent
    /// tasks aside.
    pub(super) fn kept_upstreams(&self, id: &TaskId, config: &TaskConfig) -> Vec<TaskId> {
        let filter = upstream_filter(config);
        self.table
            .edges
            .get(id)
            .into_iter()
            .flatten()
            .map(|edge| &edge.to)
            .filter(|to| {
                !is_persistent(self.workspace, to)
                    && folds_upstream(&filter, &id.project, &to.project, &to.task, false)
            })
            .cloned()
            .collect()
    }

    /// Field 10: direct upstreams and pass-through fingerprints, filtered by
    /// `cache.upstream` (KEY-9).
    pub(super) fn upstream(
        &mut self,
        id: &TaskId,
        config: &TaskConfig,
        fields: &mut KeyInputs,
    ) -> Result<(), KeyError> {
        let filter = upstream_filter(config);
        for edge in self.table.edges.get(id).into_iter().flatten() {
            let to = &edge.to;
            if is_persistent(self.workspace, to)
                || !folds_upstream(&filter, &id.project, &to.project, &to.task, false)
            {
                continue;
            }
            // KEY-9: what an upstream with outputs produced, unless `cache.upstream-keys`
            // names it; an upstream that has not settled (callers ask `ready` first) folds its
            // key, which can only miss.
            let by_key = self.folds_key_of(config, id, to);
            let value = match self.derived.get(to) {
                Some(Ok(upstream)) if by_key => upstream.key.hex(),
                Some(Ok(upstream)) => self.cut_value(to).unwrap_or_else(|| upstream.key.hex()),
                Some(Err(error)) => return Err(error.clone()),
                None => unreachable!("upstream keys are derived first"),
            };
            self.assume(id, to, by_key);
            fields.upstream.push((to.to_string(), value));
        }
        let passed = self.table.pass_through.get(id).cloned().unwrap_or_default();
        for (project, name) in passed {
            if !folds_upstream(&filter, &id.project, &project, &name, true) {
                continue;
            }
            let key = self.fingerprint(&project, &name)?;
            fields
                .upstream
                .push((format!("{project}#{name} (pass-through)"), key.hex()));
        }
        Ok(())
    }

    /// A pass-through fingerprint (KEY-9): the project's manifest and all its files.
    fn fingerprint(&mut self, project: &str, name: &str) -> Result<Key, KeyError> {
        let cache_key = (project.to_string(), name.to_string());
        if let Some(key) = self.fingerprints.get(&cache_key) {
            return Ok(*key);
        }
        let index = self.workspace.by_name[project];
        let dir = self.workspace.projects[index].dir.clone();
        let mut fields = KeyInputs {
            task: format!("{project}#{name} (pass-through)"),
            platform: "any".into(),
            config: "{}".into(),
            ..KeyInputs::default()
        };
        let manifest = self.identity(&join(&dir, "package.json"))?;
        if let Identity::Present { blob, .. } = manifest.identity {
            fields.manifest = Some(blob);
        }
        for path in self.project_files(index) {
            if let Identity::Present { mode, blob } = self.identity(&path)?.identity {
                fields.inputs.push(InputFile {
                    path,
                    mode: mode.as_str(),
                    blob,
                });
            }
        }
        fields.normalise();
        let key = fields.derive();
        self.fingerprints.insert(cache_key, key);
        Ok(key)
    }
}

/// `cache.upstream` of `config`, or the default filter.
pub(super) fn upstream_filter(config: &TaskConfig) -> Vec<String> {
    match config.cache.as_ref().and_then(|c| c.upstream.clone()) {
        Some(filter) => filter,
        None => DEFAULT_UPSTREAM.iter().map(|s| s.to_string()).collect(),
    }
}
