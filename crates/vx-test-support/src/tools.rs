//! External programs the tests run beside vx that come from the npm registry (`turbo`, `nx`).
//!
//! `scripts/test` installs them into `.test-tools/npm` at the repository root (or where
//! `VX_TEST_NPM_TOOLS` points). A test that needs one and finds it missing reports itself
//! skipped with the install command, and fails under `CI`: the README's test command
//! installs everything.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether a missing external tool fails a test rather than skipping it: under `CI`, and under
/// `scripts/test` (the README's test command, which installs every tool first and sets
/// `VX_TEST_REQUIRE_TOOLS`).
pub fn tools_required() -> bool {
    std::env::var_os("CI").is_some() || std::env::var_os("VX_TEST_REQUIRE_TOOLS").is_some()
}

/// The folder the npm tools are installed into.
pub fn npm_tools_dir() -> PathBuf {
    match std::env::var_os("VX_TEST_NPM_TOOLS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.test-tools/npm"),
    }
}

/// The installed binary `bin` of npm package `package`, or `None` (after saying the test is
/// skipped) when it is missing outside CI. Under `CI` a missing tool fails the test.
pub fn npm_tool(package: &str, bin: &str) -> Option<PathBuf> {
    let dir = npm_tools_dir();
    let path = dir.join("node_modules/.bin").join(bin);
    if path.exists() {
        return Some(path);
    }
    let install = format!(
        "npm install --prefix {} {package} (or run scripts/test, which installs it)",
        dir.display()
    );
    assert!(!tools_required(), "{bin} is missing: {install}");
    eprintln!("skipped: {bin} is missing: {install}");
    None
}

/// `turbo` (the binary [`npm_tool`] found) in `dir`, quiet and the same on every machine: no
/// telemetry, no update check, and `CI` unset so its output does not change with the runner.
pub fn turbo_command(turbo: &Path, dir: &Path) -> Command {
    let mut command = Command::new(turbo);
    command
        .current_dir(dir)
        .env("TURBO_TELEMETRY_DISABLED", "1")
        .env("DO_NOT_TRACK", "1")
        .env("TURBO_NO_UPDATE_NOTIFIER", "1")
        .env_remove("CI");
    command
}
