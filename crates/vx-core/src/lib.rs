//! vx's pure domain: the vocabulary every other crate speaks.
//!
//! Nothing here touches the file system, the clock, the environment or processes; callers pass
//! those in. Start with [`config`] (what a `vx.toml` means once loaded), then [`graph`] (how
//! tasks are connected), [`selection`] (which projects a run covers; [`affected`]: which tasks a
//! change seeds under `--affected`) and [`schedule`] (which ready task starts next). [`script`],
//! [`env`] and [`mask`] hold the pure halves of execution: the `sh -c` script, the child
//! environment, and secret masking.

pub mod affected;
pub mod config;
pub mod diagnostic;
pub mod env;
pub mod globs;
pub mod graph;
pub mod id;
pub mod key;
pub mod location;
pub mod mask;
pub mod outputs;
pub mod project;
pub mod request;
pub mod schedule;
pub mod script;
pub mod selection;
pub mod suggest;
pub mod units;

#[cfg(test)]
pub(crate) mod testing;

pub use diagnostic::{Diagnostic, Diagnostics};
pub use id::{TaskId, ROOT_PROJECT};
pub use location::{Location, Spanned};
pub use project::{EdgeKind, Project, ProjectEdge, Workspace};
