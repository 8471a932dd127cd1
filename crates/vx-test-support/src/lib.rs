//! Helpers for vx's tests only (a dev-dependency, never shipped).
//!
//! - [`fixture`]: temporary workspaces, running the real `vx` in them, output redaction.
//! - [`fakes`]: scripted fakes of the `Executor` and `SchedulerPolicy` seams (ARCH-2).
//! - [`process`]: locating the `vx-test-child` program (the helper that process-control tests
//!   spawn, TEST-2) and finding surviving processes by a unique marker in their argv.
//! - [`tree`]: a directory tree as a comparable listing (entries, types, modes, bytes).
//! - [`tools`]: `turbo` and `nx` from the npm registry, installed by `scripts/test`.

pub mod fakes;
pub mod fixture;
pub mod http_cache;
pub mod http_fake;
pub mod process;
pub mod tools;
pub mod tree;
