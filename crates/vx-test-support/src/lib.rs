//! Helpers for vx's tests only (a dev-dependency, never shipped).
//!
//! - [`fixture`]: temporary workspaces, running the real `vx` in them, output redaction.
//! - [`fakes`]: scripted fakes of the `Executor` and `CacheLayer` seams (ARCH-2; the `SchedulerPolicy` fakes are in vx-core).
//! - [`process`]: locating the `vx-test-child` program (the helper that process-control tests
//!   spawn, TEST-2) and finding surviving processes by a unique marker in their argv.
//! - [`tree`]: a directory tree as a comparable listing (entries, types, modes, bytes).
//! - [`http_cache`], [`reapi`]: the real remote-cache servers (`turborepo-remote-cache`,
//!   `buildbox-casd`) on loopback; [`http_fake`], [`reapi_fake`]: in-process fakes beside them
//!   for fault injection; [`latency`]: a proxy that puts a real server at a distance (a round
//!   trip per request, a byte at a time, or silent).
//! - [`tools`]: `turbo` and `nx` from the npm registry, installed by `scripts/test`.
//! - [`npm_registry`]: a real npm registry (Verdaccio) on loopback and the package managers
//!   (pnpm, Yarn 1, Yarn Berry, bun) that install vx's npm packages from it.

pub mod buildgrid;
pub mod editor;
pub mod fakes;
pub mod fixture;
pub mod http_cache;
pub mod http_fake;
pub mod latency;
pub mod net;
pub mod npm_registry;
pub mod otlp;
pub mod process;
pub mod reapi;
pub mod reapi_fake;
pub mod tmux;
pub mod tools;
pub mod tree;
