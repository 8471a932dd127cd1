//! KEY-9's early cutoff: what a dependant's field 10 folds for an upstream with declared
//! outputs — the digest of the outputs it produced (`vx_core::key::outputs_fold`), known once
//! the upstream has settled (served from the cache, or executed and saved) — and which keys
//! cannot be taken yet because such an upstream has not.
//!
//! How it works: the run tells [`Keys::settle_produced`] what each task with outputs produced
//! (the digest its artifact carries, or nothing when the result was not saved: its dependants
//! then fold its key, today's rule). A dependant's key is taken only once every upstream it
//! cuts off at has settled ([`Keys::ready`]); the restore lane and `--dry` ask first, the
//! schedule releases a task only after its upstreams anyway. An upstream the run does not
//! schedule (`--only`, `--exclude-dependencies`) is settled from the local store by the caller
//! ([`Keys::unresolved`]), so a key does not depend on what the run scheduled when the store
//! holds that upstream's entry.

use std::collections::HashSet;

use vx_core::config::TaskConfig;
use vx_core::graph::task_config;
use vx_core::key::{folds_upstream, group_key, outputs_fold, Key};
use vx_core::TaskId;

use super::{is_persistent, Keys};

impl Keys<'_> {
    /// Whether `id` declares outputs, so that its dependants fold what it produced instead of
    /// its key. A group, a persistent task and a task with `outputs = []` do not.
    pub fn has_outputs(&self, id: &TaskId) -> bool {
        task_config(self.workspace, id).is_some_and(|config| {
            !config.is_group()
                && !config.is_persistent()
                && config.cache.as_ref().is_some_and(|cache| {
                    cache.outputs.as_ref().is_some_and(|o| !o.is_empty())
                        || !cache.workspace_outputs.is_empty()
                })
        })
    }

    /// Whether some task of the workspace depends on `id`: only then can a dependant anywhere
    /// fold what it produced (and its record in the remote cache be of use).
    pub fn is_upstream(&self, id: &TaskId) -> bool {
        self.upstreams.contains(id) && self.has_outputs(id)
    }

    pub(super) fn in_run(&self, id: &TaskId) -> bool {
        self.graph.index.contains_key(id)
    }

    /// `id` settled with `produced`, the digest of the outputs it produced (from its entry or
    /// its save), or `None` when no entry holds them (not saved, withheld, writes off): its
    /// dependants then fold its key. Needs `id`'s key, and is a no-op for a task without
    /// outputs.
    pub fn settle_produced(&mut self, id: &TaskId, produced: Option<&str>) {
        if self.settle_value(id, produced) && self.is_upstream(id) {
            if let (Some(produced), Some(derived)) = (produced, self.known(id)) {
                let pair = (derived.key.hex(), produced.to_string());
                self.settled.push(pair);
            }
        }
    }

    /// `--dry`: `id` will execute, and history says it last produced `produced`. Its
    /// dependants' keys are predicted as if it produced the same again.
    pub fn settle_predicted(&mut self, id: &TaskId, produced: &str) {
        if self.settle_value(id, Some(produced)) {
            self.predicted.insert(id.clone());
        }
    }

    /// Sets what `id`'s dependants fold; false when it has no outputs or no key. A hinted
    /// value it replaces undoes the keys that folded it when the two differ (`hints.rs`).
    fn settle_value(&mut self, id: &TaskId, produced: Option<&str>) -> bool {
        if !self.has_outputs(id) {
            return false;
        }
        let Some(Ok(derived)) = self.derived.get(id) else {
            return false;
        };
        let value = match produced {
            Some(produced) => outputs_fold(produced, &derived.inputs.upstream),
            None => derived.key.hex(),
        };
        if let Some(hinted) = self.hinted.remove(id) {
            if hinted != value {
                self.undo(id);
            }
        }
        self.cut.insert(id.clone(), value);
        true
    }

    /// Whether `id`'s key can be taken now: every upstream whose outputs it folds has settled,
    /// and every upstream whose key it folds (`cache.upstream-keys`) is ready itself.
    pub fn ready(&self, id: &TaskId) -> bool {
        let Some(config) = task_config(self.workspace, id) else {
            return true;
        };
        self.kept_upstreams(id, config).iter().all(|to| {
            if self.folds_key_of(config, id, to) {
                !self.in_run(to) || self.ready(to)
            } else {
                self.available(to)
            }
        })
    }

    pub(super) fn available(&self, id: &TaskId) -> bool {
        match task_config(self.workspace, id) {
            Some(config) if config.is_group() => {
                self.members(id).iter().all(|member| self.available(member))
            }
            _ if self.has_outputs(id) => self.cut.contains_key(id) || !self.in_run(id),
            _ => true,
        }
    }

    /// A group's members, persistent ones aside (they have no key).
    pub(super) fn members(&self, id: &TaskId) -> Vec<TaskId> {
        self.table
            .edges
            .get(id)
            .into_iter()
            .flatten()
            .filter(|edge| !is_persistent(self.workspace, &edge.to))
            .map(|edge| edge.to.clone())
            .collect()
    }

    /// Whether `id`'s `cache.upstream-keys` names the upstream `to`: its key is folded, not
    /// what it produced.
    pub(super) fn folds_key_of(&self, config: &TaskConfig, id: &TaskId, to: &TaskId) -> bool {
        config.cache.as_ref().is_some_and(|cache| {
            folds_upstream(
                &cache.upstream_keys,
                &id.project,
                &to.project,
                &to.task,
                false,
            )
        })
    }

    /// The direct upstreams field 10 of `id` folds by what they produced (`cache.upstream`
    /// keeps them, `cache.upstream-keys` does not name them).
    fn cut_upstreams(&self, id: &TaskId) -> Vec<TaskId> {
        let Some(config) = task_config(self.workspace, id) else {
            return Vec::new();
        };
        self.kept_upstreams(id, config)
            .into_iter()
            .filter(|to| !self.folds_key_of(config, id, to))
            .collect()
    }

    /// What a dependant cutting off at `to` folds for it: what it produced when it has outputs
    /// and settled, a roll-up of its members' values for a group, else its key. `None` when
    /// `to` has no key yet.
    pub(super) fn cut_value(&self, to: &TaskId) -> Option<String> {
        if task_config(self.workspace, to).is_some_and(TaskConfig::is_group) {
            let mut members = Vec::new();
            for member in self.members(to) {
                members.push((member.to_string(), self.cut_value(&member)?));
            }
            return Some(group_key(&members).hex());
        }
        if let Some(value) = self.cut.get(to).or_else(|| self.hinted.get(to)) {
            return Some(value.clone());
        }
        let derived = self.derived.get(to)?.as_ref().ok()?;
        Some(derived.key.hex())
    }

    /// The upstreams of the run whose outputs `id`'s key folded (a group's members in its
    /// place), for counting a hit as cut off when one of them executed in this run.
    pub fn cut_sources(&self, id: &TaskId) -> Vec<TaskId> {
        let mut out = Vec::new();
        let mut stack = self.cut_upstreams(id);
        let mut seen = HashSet::new();
        while let Some(up) = stack.pop() {
            if !seen.insert(up.clone()) {
                continue;
            }
            if task_config(self.workspace, &up).is_some_and(TaskConfig::is_group) {
                stack.extend(self.members(&up));
            } else if self.has_outputs(&up) && self.in_run(&up) {
                out.push(up);
            }
        }
        out.sort();
        out
    }

    /// The deepest upstream of `id` outside the run whose outputs a key folds and whose
    /// digest is not known yet, with its key: the caller settles it from the store
    /// ([`Keys::settle_produced`]) and asks again until this is `None`.
    pub fn unresolved(&mut self, id: &TaskId) -> Option<(TaskId, Key)> {
        // Every task's lookup asks: nothing to walk when every upstream is in the run.
        let mut edges = self.table.edges.get(id).into_iter().flatten();
        if edges.all(|edge| self.in_run(&edge.to)) {
            return None;
        }
        // Post-order over the upstreams outside the run, without recursion (GRAPH-6).
        let mut order = Vec::new();
        let mut seen = HashSet::new();
        let mut stack: Vec<(TaskId, bool)> = self
            .upstream_edges(id)
            .into_iter()
            .map(|to| (to, false))
            .collect();
        while let Some((current, expanded)) = stack.pop() {
            if expanded {
                order.push(current);
                continue;
            }
            if self.in_run(&current)
                || is_persistent(self.workspace, &current)
                || !seen.insert(current.clone())
            {
                continue;
            }
            stack.push((current.clone(), true));
            for to in self.upstream_edges(&current) {
                stack.push((to, false));
            }
        }
        let first = order
            .into_iter()
            .find(|up| self.has_outputs(up) && !self.cut.contains_key(up))?;
        let key = match self.key(&first)? {
            Ok(derived) => derived.key,
            Err(_) => return None,
        };
        Some((first, key))
    }

    fn upstream_edges(&self, id: &TaskId) -> Vec<TaskId> {
        self.table
            .edges
            .get(id)
            .into_iter()
            .flatten()
            .map(|edge| edge.to.clone())
            .collect()
    }
}
