//! Helpers for vx's tests only (a dev-dependency, never shipped).
//!
//! - [`fixture`]: temporary workspaces, running the real `vx` in them, output redaction.
//! - [`fakes`]: scripted fakes of the `Executor` and `SchedulerPolicy` seams (ARCH-2).
//! - [`process`]: locating the `vx-test-child` program (the helper that process-control tests
//!   spawn, TEST-2) and finding surviving processes by a unique marker in their argv.

pub mod fakes;
pub mod fixture;
pub mod process;
