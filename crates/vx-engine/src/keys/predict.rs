//! What `--dry` can say of a key that folds what upstreams produce (KEY-9's early cutoff)
//! before anything runs: which upstreams that would run it assumes produce their last outputs
//! again (a prediction from history), or which one, without history, decides it (unknown).
//!
//! How it works: `--dry` settles its rows upstreams first ([`Keys::settle_predicted`] for a
//! task that would run); the facts of a task are those of everything its key folds, through
//! keys and through outputs alike — a key folding another task's key inherits that key's
//! assumptions — computed once per task, without recursion (GRAPH-6).

use std::collections::BTreeSet;

use vx_core::graph::task_config;
use vx_core::TaskId;

use super::Keys;

/// What `--dry` knows of one task's key before the run.
#[derive(Debug, Clone, Default)]
pub struct DryFacts {
    /// Upstreams that would run whose outputs the key assumes unchanged from their last run.
    pub assumes: BTreeSet<TaskId>,
    /// An upstream that would run and has no output history: what it produces decides the key.
    pub waits: Option<TaskId>,
}

impl Keys<'_> {
    /// The facts of `id`'s key; its upstreams must have been settled first.
    pub fn dry_facts(&mut self, id: &TaskId) -> DryFacts {
        let mut stack = vec![(id.clone(), false)];
        while let Some((current, expanded)) = stack.pop() {
            if self.facts.contains_key(&current) {
                continue;
            }
            let edges = self.folded_edges(&current);
            if !expanded {
                stack.push((current, true));
                stack.extend(
                    edges
                        .into_iter()
                        .filter(|(up, _)| !self.facts.contains_key(up))
                        .map(|(up, _)| (up, false)),
                );
                continue;
            }
            let mut facts = DryFacts::default();
            for (up, cut) in edges {
                let theirs = &self.facts[&up];
                facts.assumes.extend(theirs.assumes.iter().cloned());
                if facts.waits.is_none() {
                    facts.waits = theirs.waits.clone();
                }
                if cut && self.predicted.contains(&up) {
                    facts.assumes.insert(up.clone());
                }
                if cut && facts.waits.is_none() && self.has_outputs(&up) && !self.available(&up) {
                    facts.waits = Some(up);
                }
            }
            self.facts.insert(current, facts);
        }
        self.facts[id].clone()
    }

    /// What `id`'s key folds, each with whether by what it produced (`true`) or by its key: a
    /// task's upstreams through `cache.upstream` and `cache.upstream-keys`, a group's members.
    fn folded_edges(&self, id: &TaskId) -> Vec<(TaskId, bool)> {
        let Some(config) = task_config(self.workspace, id) else {
            return Vec::new();
        };
        if config.is_group() {
            return self.members(id).into_iter().map(|m| (m, true)).collect();
        }
        if config.is_persistent() {
            return Vec::new();
        }
        self.kept_upstreams(id, config)
            .into_iter()
            .map(|to| {
                let cut = !self.folds_key_of(config, id, &to);
                (to, cut)
            })
            .collect()
    }
}
