//! Which configuration keys this release refuses because their feature is not built yet
//! (CFG-12, §0).
//!
//! The loader knows every key of every milestone and type-checks them all; a key whose
//! milestone is later than [`DELIVERED`] is then refused at its location with
//! `<label> is not available yet`. Delivering a milestone means changing [`DELIVERED`]; moving a
//! single key means editing its row in [`LATER_KEYS`].

/// The release line's milestones, in delivery order (§0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Milestone {
    M1,
    M2,
    M3,
    M4,
}

/// The newest milestone this build delivers.
pub(crate) const DELIVERED: Milestone = Milestone::M1;

/// Every key (or key with a particular value) that belongs to a milestone after M1: the
/// feature id the walker asks about, its milestone, and how the message names it. Task keys
/// are written `task.<key>`; they apply to `[tasks.<name>]` and to `[workspace.tasks.<name>]`.
pub(crate) const LATER_KEYS: &[(&str, Milestone, &str)] = &[
    ("workspace.cache-dir", Milestone::M2, "cache-dir"),
    (
        "workspace.cache-retention",
        Milestone::M2,
        "cache-retention",
    ),
    ("workspace.affected-base", Milestone::M2, "affected-base"),
    ("workspace.tasks", Milestone::M2, "workspace.tasks"),
    ("workspace.rules", Milestone::M2, "rules"),
    (
        "workspace.rules.exclusive-outputs=false",
        Milestone::M3,
        "exclusive-outputs = false",
    ),
    ("workspace.remote-cache", Milestone::M4, "remote-cache"),
    (
        "workspace.remote-execution",
        Milestone::M4,
        "remote-execution",
    ),
    ("task.cache", Milestone::M2, "cache"),
    ("task.extends", Milestone::M2, "extends"),
    ("task.retries", Milestone::M3, "retries"),
    ("task.interactive", Milestone::M3, "interactive"),
    ("task.sandbox", Milestone::M3, "sandbox"),
    ("task.persistent.ready-when", Milestone::M3, "ready-when"),
    ("task.remote", Milestone::M4, "remote"),
];

/// The message label of `feature` when its milestone is not delivered yet; `None` when it is
/// available (or is an M1 key, which is not listed).
pub(crate) fn unavailable(feature: &str) -> Option<&'static str> {
    let (_, milestone, label) = LATER_KEYS.iter().find(|(key, _, _)| *key == feature)?;
    (*milestone > DELIVERED).then_some(*label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_keys_are_refused_and_m1_keys_are_not() {
        assert_eq!(unavailable("task.sandbox"), Some("sandbox"));
        assert_eq!(unavailable("workspace.remote-cache"), Some("remote-cache"));
        assert_eq!(unavailable("task.command"), None);
    }

    #[test]
    fn every_row_is_later_than_m1() {
        for (key, milestone, _) in LATER_KEYS {
            assert!(*milestone > Milestone::M1, "{key}");
        }
    }
}
