//! `vx mcp`: the tools of vx's Model Context Protocol server (the protocol is `vx-mcp`'s).
//! The reading tools run this same `vx` as a command would (`show`, `run --dry=json`, `why`,
//! `last`, `info`, each with JSON out), so an agent gets exactly what the command line says;
//! `config_errors` is `vx lsp`'s analysis (the load and a run's checks, nothing started);
//! runs are `vx run --events` in the background (`runs.rs`).

mod runs;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use vx_engine::error::Failure;
use vx_engine::exit;

/// Serves one MCP client on stdin and stdout (`vx mcp`).
pub fn serve(cwd: &Path, read_only: bool) -> Result<i32, Failure> {
    let backend = Arc::new(Tools {
        cwd: cwd.to_path_buf(),
        runs: runs::Runs::new(cwd),
    });
    vx_mcp::serve(backend, read_only).map_err(Failure::usage)?;
    Ok(exit::SUCCESS)
}

struct Tools {
    /// Where the server was started: the tools work as commands typed there would.
    cwd: PathBuf,
    runs: runs::Runs,
}

impl Tools {
    /// `vx ARGS` in the server's directory: its JSON on stdout, or what it said on failure.
    fn vx_json(&self, args: &[&str]) -> Result<Value, String> {
        let out = crate::commands::this_vx(&self.cwd)
            .args(args)
            .output()
            .map_err(|e| format!("vx could not be started: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if out.status.success() {
            return serde_json::from_str(&stdout)
                .map_err(|e| format!("vx {} printed no JSON ({e}): {stdout}", args.join(" ")));
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        let said = if stderr.trim().is_empty() {
            stdout
        } else {
            stderr
        };
        Err(format!(
            "vx {} exited {}:\n{}",
            args.join(" "),
            out.status.code().unwrap_or(-1),
            said.trim_end()
        ))
    }
}

impl vx_mcp::Backend for Tools {
    fn show(&self, target: Option<&str>) -> Result<Value, String> {
        let mut args = vec!["show"];
        args.extend(target);
        args.extend(["--format", "json"]);
        self.vx_json(&args)
    }

    fn plan(&self, args: &[String]) -> Result<Value, String> {
        // vx's own flag first: after a `--` in the client's words, it would go to the tasks
        // (and the run would not be a plan).
        let mut all = vec!["run", "--dry=json"];
        all.extend(args.iter().map(String::as_str));
        self.vx_json(&all)
    }

    fn why(&self, task: &str, run: Option<&str>) -> Result<Value, String> {
        let mut args = vec!["why", task];
        if let Some(run) = run {
            args.extend(["--run", run]);
        }
        args.extend(["--format", "json"]);
        self.vx_json(&args)
    }

    fn last(&self, run: Option<&str>, failed: bool) -> Result<Value, String> {
        let mut args = vec!["last"];
        args.extend(run);
        if failed {
            args.push("--failed");
        }
        args.extend(["--format", "json"]);
        self.vx_json(&args)
    }

    fn info(&self) -> Result<Value, String> {
        self.vx_json(&["info", "--format", "json"])
    }

    fn config_errors(&self) -> Result<Value, String> {
        let root = vx_workspace::find_root(&self.cwd)
            .map_err(|e| crate::error::text(&vx_engine::workspace::load_error(e)))?;
        let analysis = crate::lsp::analysis::analyse(
            &root,
            &BTreeMap::new(),
            &vx_workspace::Parsed::default(),
        );
        let errors: Vec<Value> = analysis
            .said
            .iter()
            .map(|(d, error)| {
                json!({
                    "file": d.at.as_ref().map(|a| a.file.to_string()),
                    "line": d.at.as_ref().map(|a| a.line),
                    "column": d.at.as_ref().map(|a| a.column),
                    "severity": if *error { "error" } else { "warning" },
                    "message": d.message,
                    "hints": d.hints,
                })
            })
            .collect();
        Ok(json!({ "root": root, "errors": errors }))
    }

    fn run_start(&self, args: &[String]) -> Result<Value, String> {
        self.runs.start(args)
    }

    fn run_status(&self, run: &str) -> Result<Value, String> {
        self.runs.status(run)
    }

    fn run_output(&self, run: &str, task: &str, offset: usize) -> Result<Value, String> {
        self.runs.output(run, task, offset)
    }

    fn run_stop(&self, run: &str) -> Result<Value, String> {
        self.runs.stop(run)
    }

    fn stop_all(&self) {
        self.runs.stop_all();
    }
}
