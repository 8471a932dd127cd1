//! KEY-9 ahead of time: keys taken before the upstreams they fold are here, from the outputs
//! record's facts, for downloads only.
//!
//! A key that folds what an upstream produced is known once that upstream has settled, so a
//! fresh runner restoring from a remote cache would learn its keys one level of the graph at a
//! time, a round trip and a download per level. The outputs record (`cache/produced.rs`) says
//! what the remote entries of upstream tasks produced, by entry key: with it, every key of the
//! run can be taken at once and every download started together.
//!
//! How it works: [`Keys::predictable`] takes a *hint* for each unsettled upstream whose key is
//! known and named by the record (the value its dependants would fold), and a key derived
//! while a hint or a key derived from one was folded is *provisional*: each upstream it
//! folded that way lists it (`assumers`). Hints only start downloads. A task is served only
//! once [`Keys::ready`] holds, which ignores hints: every upstream has settled for real by
//! then. An upstream that settles with a value other than its hint undoes every key derived
//! from that hint, transitively, so that each is taken again from what did arrive, and the
//! body downloaded for the old key goes unused. A wrong record costs downloads, never a hit.

use std::collections::HashMap;

use vx_core::config::TaskConfig;
use vx_core::graph::task_config;
use vx_core::key::outputs_fold;
use vx_core::TaskId;

use super::Keys;

impl Keys<'_> {
    /// Adds the outputs record's facts: entry key → what that entry produced.
    pub fn add_hints(&mut self, facts: HashMap<String, String>) {
        self.hints.extend(facts);
    }

    /// Whether the outputs record gave any fact.
    pub fn has_hints(&self) -> bool {
        !self.hints.is_empty()
    }

    /// Whether `id`'s key can be taken now for a download: every upstream whose outputs it
    /// folds has settled or has a hint, and every upstream whose key it folds has a key.
    /// Takes the hints it needs.
    pub fn predictable(&mut self, id: &TaskId) -> bool {
        let Some(config) = task_config(self.workspace, id) else {
            return true;
        };
        for to in self.kept_upstreams(id, config) {
            let fine = if self.folds_key_of(config, id, &to) {
                !self.in_run(&to) || self.derived.contains_key(&to)
            } else {
                self.hintable(&to)
            };
            if !fine {
                return false;
            }
        }
        true
    }

    /// Whether what dependants fold for `id` is known or hinted (a group: for each member).
    fn hintable(&mut self, id: &TaskId) -> bool {
        if task_config(self.workspace, id).is_some_and(TaskConfig::is_group) {
            return self.members(id).iter().all(|member| self.hintable(member));
        }
        if !self.has_outputs(id) || self.available(id) || self.hinted.contains_key(id) {
            return true;
        }
        self.hint(id)
    }

    /// Takes `id`'s hint when its key is derived and the record names that key: until `id`
    /// settles, its dependants fold the value the hint gives. Whether `id` has one.
    pub fn hint(&mut self, id: &TaskId) -> bool {
        if self.hinted.contains_key(id) {
            return true;
        }
        if !self.has_outputs(id) || self.cut.contains_key(id) {
            return false;
        }
        let Some(Ok(derived)) = self.derived.get(id) else {
            return false;
        };
        let Some(produced) = self.hints.get(&derived.key.hex()) else {
            return false;
        };
        let value = outputs_fold(produced, &derived.inputs.upstream);
        self.hinted.insert(id.clone(), value);
        true
    }

    /// The key of `id` being derived folds `to` (by its key when `by_key`): when what it folds
    /// is a hint or a provisional key, `id`'s key is provisional and `to` lists it.
    pub(super) fn assume(&mut self, id: &TaskId, to: &TaskId, by_key: bool) {
        let mut sources = Vec::new();
        self.provisional_sources(to, by_key, &mut sources);
        if sources.is_empty() {
            return;
        }
        self.provisional.insert(id.clone());
        for source in sources {
            self.assumers
                .entry(source)
                .or_default()
                .push((id.clone(), by_key));
        }
    }

    /// The tasks whose hint or provisional key folding `to` would fold.
    fn provisional_sources(&self, to: &TaskId, by_key: bool, out: &mut Vec<TaskId>) {
        if by_key {
            if self.provisional.contains(to) {
                out.push(to.clone());
            }
            return;
        }
        if task_config(self.workspace, to).is_some_and(TaskConfig::is_group) {
            for member in self.members(to) {
                self.provisional_sources(&member, false, out);
            }
            return;
        }
        if self.cut.contains_key(to) {
            return;
        }
        if self.hinted.contains_key(to) || self.provisional.contains(to) {
            out.push(to.clone());
        }
    }

    /// `id` settled other than its hint: every key derived from the hint is forgotten, and
    /// every key derived from those, so each is taken again when asked.
    pub(super) fn undo(&mut self, id: &TaskId) {
        let list = self.assumers.remove(id).unwrap_or_default();
        self.forget_derived(list.into_iter().map(|(d, _)| d).collect());
    }

    /// `id`'s key is forgotten (to be taken again): the keys that folded it by key go too.
    /// Those that folded its hint stay; its settling confirms or undoes them.
    pub(super) fn undo_key_folds(&mut self, id: &TaskId) {
        let Some(list) = self.assumers.get_mut(id) else {
            return;
        };
        let (by_key, by_value): (Vec<_>, Vec<_>) = list.drain(..).partition(|(_, k)| *k);
        *list = by_value;
        self.forget_derived(by_key.into_iter().map(|(d, _)| d).collect());
    }

    /// Forgets the keys of `stack` and, transitively, of every key derived from them.
    fn forget_derived(&mut self, mut stack: Vec<TaskId>) {
        while let Some(dependant) = stack.pop() {
            self.derived.remove(&dependant);
            self.hinted.remove(&dependant);
            self.provisional.remove(&dependant);
            if let Some(more) = self.assumers.remove(&dependant) {
                stack.extend(more.into_iter().map(|(d, _)| d));
            }
        }
    }
}
