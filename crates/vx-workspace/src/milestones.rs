//! Which configuration keys this release refuses because their feature is not built yet
//! (CFG-12).
//!
//! The loader knows every key of every milestone and type-checks them all; a key whose
//! feature is not built yet is then refused at its location with `<label> is not available
//! yet`. A key is available when its milestone is [`DELIVERED`], or when its row says its
//! feature is `built` ahead of the rest of the milestone: a milestone lands key by key
//! (flip `built` on a row), and delivering all of it means changing [`DELIVERED`].

/// The release line's milestones, in delivery order (docs/requirements.md gives each requirement's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Milestone {
    M1,
    M2,
    M3,
    M4,
}

/// The newest milestone this build delivers whole.
pub(crate) const DELIVERED: Milestone = Milestone::M1;

/// A key (or a key with a particular value) of a milestone after M1.
pub(crate) struct LaterKey {
    /// The feature id the walker asks about. Task keys are written `task.<key>`; they apply to
    /// `[tasks.<name>]` and to `[workspace.tasks.<name>]`.
    pub(crate) feature: &'static str,
    pub(crate) milestone: Milestone,
    /// How the refusal names it.
    pub(crate) label: &'static str,
    /// Whether this build has the feature before [`DELIVERED`] reaches its milestone.
    pub(crate) built: bool,
}

const fn row(
    feature: &'static str,
    milestone: Milestone,
    label: &'static str,
    built: bool,
) -> LaterKey {
    LaterKey {
        feature,
        milestone,
        label,
        built,
    }
}

/// Every key of a milestone after M1.
pub(crate) const LATER_KEYS: &[LaterKey] = &[
    row("workspace.cache-dir", Milestone::M2, "cache-dir", true),
    row(
        "workspace.cache-retention",
        Milestone::M2,
        "cache-retention",
        true,
    ),
    row(
        "workspace.affected-base",
        Milestone::M2,
        "affected-base",
        true,
    ),
    row("workspace.tasks", Milestone::M2, "workspace.tasks", true),
    row("workspace.rules", Milestone::M2, "rules", true),
    row(
        "workspace.rules.exclusive-outputs=false",
        Milestone::M3,
        "exclusive-outputs = false",
        false,
    ),
    row(
        "workspace.remote-cache",
        Milestone::M4,
        "remote-cache",
        true,
    ),
    row(
        "workspace.remote-cache.grpc",
        Milestone::M4,
        "a `grpc://` remote cache",
        true,
    ),
    row(
        "workspace.remote-cache.signature-key-env",
        Milestone::M4,
        "signature-key-env",
        true,
    ),
    row(
        "workspace.remote-execution",
        Milestone::M4,
        "remote-execution",
        true,
    ),
    row("task.cache", Milestone::M2, "cache", true),
    row("task.extends", Milestone::M2, "extends", true),
    row("task.retries", Milestone::M3, "retries", true),
    row("task.interactive", Milestone::M3, "interactive", true),
    row("task.sandbox", Milestone::M3, "sandbox", true),
    row(
        "task.persistent.ready-when",
        Milestone::M3,
        "ready-when",
        true,
    ),
    row("task.remote", Milestone::M4, "remote", true),
];

/// The message label of `feature` when it is not available yet; `None` when it is available (or
/// is an M1 key, which is not listed).
pub(crate) fn unavailable(feature: &str) -> Option<&'static str> {
    let key = LATER_KEYS.iter().find(|key| key.feature == feature)?;
    #[cfg(test)]
    if test_gate::every_key_available() {
        return None;
    }
    (key.milestone > DELIVERED && !key.built).then_some(key.label)
}

/// Unit tests of features whose keys are still refused (a template's `cache`, say) load
/// configuration with every key available, on their own thread only.
#[cfg(test)]
pub(crate) mod test_gate {
    use std::cell::Cell;

    thread_local! {
        static EVERY_KEY_AVAILABLE: Cell<bool> = const { Cell::new(false) };
    }

    pub(crate) fn every_key_available() -> bool {
        EVERY_KEY_AVAILABLE.with(Cell::get)
    }

    /// Runs `f` with no key refused for being of a later milestone.
    pub(crate) fn with_every_key_available<T>(f: impl FnOnce() -> T) -> T {
        EVERY_KEY_AVAILABLE.with(|c| c.set(true));
        let result = f();
        EVERY_KEY_AVAILABLE.with(|c| c.set(false));
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_keys_are_refused_and_m1_keys_are_not() {
        assert_eq!(
            unavailable("workspace.rules.exclusive-outputs=false"),
            Some("exclusive-outputs = false")
        );
        assert_eq!(unavailable("workspace.remote-cache"), None);
        assert_eq!(unavailable("workspace.remote-cache.grpc"), None);
        assert_eq!(unavailable("task.command"), None);
    }

    #[test]
    fn built_m2_keys_are_available() {
        assert_eq!(unavailable("workspace.tasks"), None);
        assert_eq!(unavailable("task.extends"), None);
        assert_eq!(unavailable("workspace.rules"), None);
        assert_eq!(
            unavailable("workspace.rules.exclusive-outputs=false"),
            Some("exclusive-outputs = false")
        );
    }

    #[test]
    fn every_row_is_later_than_m1() {
        for key in LATER_KEYS {
            assert!(key.milestone > Milestone::M1, "{}", key.feature);
        }
    }

    /// Of the later milestones, only the keys of process control — `retries` (EXEC-15),
    /// `ready-when` (EXEC-13) and `interactive` (EXEC-14) — the sandbox (SBX) and the remote cache
    /// over HTTP (REM-3) and REAPI (REM-4), and remote execution (REM-10, REM-11) are built;
    /// everything else waits for its milestone.
    #[test]
    fn only_process_control_sandbox_and_remote_keys_are_built_ahead() {
        let ahead = [
            "task.retries",
            "task.persistent.ready-when",
            "task.interactive",
            "task.sandbox",
            "workspace.remote-cache",
            "workspace.remote-cache.grpc",
            "workspace.remote-cache.signature-key-env",
            "workspace.remote-execution",
            "task.remote",
        ];
        for key in LATER_KEYS.iter().filter(|k| k.milestone > Milestone::M2) {
            assert_eq!(key.built, ahead.contains(&key.feature), "{}", key.feature);
        }
        assert_eq!(unavailable("task.retries"), None);
        assert_eq!(unavailable("task.interactive"), None);
        assert_eq!(unavailable("task.persistent.ready-when"), None);
        assert_eq!(unavailable("task.sandbox"), None);
        assert_eq!(unavailable("task.remote"), None);
        assert_eq!(unavailable("workspace.remote-execution"), None);
    }
}
