//! Behaviour of `vx-workspace` through its public API: discovery on temporary workspaces
//! (DISC-1 to DISC-5) and the validation of `vx.toml` texts (CFG-1 to CFG-12).
//!
//! One test binary, split by concern; `fixture` builds the workspaces.

mod config_errors;
mod config_model;
mod discovery;
mod edges;
mod fixture;
mod names;
