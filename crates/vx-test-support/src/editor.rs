//! Real clients for `vx lsp` and `vx mcp`: `lsp_client.py` (pygls's LanguageClient) and
//! `mcp_client.py` (the official MCP Python SDK's client), run with the Python of the
//! virtualenv `scripts/test` installs into `.test-tools/clientvenv` (or where
//! `VX_TEST_CLIENT_VENV` points), with the packages pinned.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// The pinned client packages, as scripts/test installs them.
pub const CLIENT_PACKAGES: &str = "pygls==2.1.1 lsprotocol==2025.0.0 mcp==2.3.0";

pub fn client_venv_dir() -> PathBuf {
    match std::env::var_os("VX_TEST_CLIENT_VENV") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.test-tools/clientvenv"),
    }
}

/// The virtualenv's Python when `module` imports there; else `None` after saying the test is
/// skipped (outside CI and scripts/test, which fail instead).
pub fn client_python(module: &str) -> Option<PathBuf> {
    let python = client_venv_dir().join("bin/python3");
    let usable = Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if usable {
        return Some(python);
    }
    let why = format!(
        "the Python package `{module}` is missing: `python3 -m venv {0} && {0}/bin/pip install {CLIENT_PACKAGES}` (scripts/test does)",
        client_venv_dir().display()
    );
    assert!(!crate::tools::tools_required(), "{why}");
    eprintln!("skipped: {why}");
    None
}

/// Runs `steps` (see `lsp_client.py`) against `vx lsp` started in `root` by pygls's client:
/// `{"results": [...], "messages": [...]}`, or `None` when the client is not installed.
pub fn lsp_session(vx: &Path, root: &Path, steps: &Value) -> Option<Value> {
    lsp_session_with(vx, root, &[], steps)
}

/// [`lsp_session`] with the server started as `vx ARGS` (default `lsp --stdio`).
pub fn lsp_session_with(vx: &Path, root: &Path, args: &[&str], steps: &Value) -> Option<Value> {
    let python = client_python("pygls")?;
    session(python, "src/lsp_client.py", vx, root, args, &[], steps)
}

/// [`lsp_session`] by a client that names no folder (as when a single file is opened): the
/// server finds the workspace from the first document.
pub fn lsp_session_without_root(vx: &Path, root: &Path, steps: &Value) -> Option<Value> {
    let python = client_python("pygls")?;
    let env = [("LSP_CLIENT_NO_ROOT", "1")];
    session(python, "src/lsp_client.py", vx, root, &[], &env, steps)
}

/// Runs `steps` (see `mcp_client.py`) against `vx mcp ARGS` started in `dir` by the official
/// MCP client: `{"results": [...]}`, or `None` when the client is not installed.
pub fn mcp_session(vx: &Path, dir: &Path, args: &[&str], steps: &Value) -> Option<Value> {
    let python = client_python("mcp.client.client")?;
    session(python, "src/mcp_client.py", vx, dir, args, &[], steps)
}

fn session(
    python: PathBuf,
    script: &str,
    vx: &Path,
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    steps: &Value,
) -> Option<Value> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(script);
    let mut child = Command::new(python)
        .envs(env.iter().copied())
        .arg(script)
        .arg(vx)
        .arg(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the client starts");
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(steps.to_string().as_bytes())
        .expect("the steps are written");
    let out = child.wait_with_output().expect("the client ends");
    assert!(
        out.status.success(),
        "the client failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("the client prints JSON"))
}
