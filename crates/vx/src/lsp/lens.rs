//! CodeLens "run · why · last" above each task of a project's `vx.toml`, and the commands they
//! execute (`workspace/executeCommand`), each in the workspace root:
//!
//! - `vx.run`: `vx run <id>` in the background; its end is said with `window/showMessage`
//!   (the exit code and the last lines) and its whole output with `window/logMessage`;
//! - `vx.why`: `vx why <id>`, its text returned and shown;
//! - `vx.last`: the task's last recorded result, returned and shown.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use lsp_types::notification::{LogMessage, ShowMessage};
use lsp_types::{
    CodeLens, CodeLensParams, ExecuteCommandParams, LogMessageParams, MessageType, Position, Range,
    ShowMessageParams,
};
use serde_json::{json, Value};

use vx_core::TaskId;

use crate::commands::this_vx;

use super::navigate;
use super::state::{is_config, Server};
use super::text::Lines;

pub const COMMANDS: &[&str] = &["vx.run", "vx.why", "vx.last"];

/// The lines of the end of a run's output that `window/showMessage` shows.
const SHOWN_LINES: usize = 8;

pub fn lenses(server: &Server<'_>, params: CodeLensParams) -> Option<Vec<CodeLens>> {
    let (_, rel, text) = server.document(&params.text_document.uri)?;
    if !is_config(&rel) {
        return None;
    }
    let project = server.project_of(&rel)?;
    let lines = Lines::new(text);
    let mut out = Vec::new();
    for (name, task) in &project.config.tasks {
        // A task declared in this file (not one a template or a script alone made).
        if *task.at.file != *rel || task.at.line == 0 {
            continue;
        }
        let line = task.at.line - 1;
        let width = lines.line(line as usize).encode_utf16().count() as u32;
        let range = Range::new(Position::new(line, 0), Position::new(line, width));
        let id = TaskId::new(&project.name, name).to_string();
        for (title, command) in [("run", "vx.run"), ("why", "vx.why"), ("last", "vx.last")] {
            out.push(CodeLens {
                range,
                command: Some(lsp_types::Command {
                    title: title.to_string(),
                    command: command.to_string(),
                    arguments: Some(vec![json!(id)]),
                }),
                data: None,
            });
        }
    }
    Some(out)
}

pub fn execute(server: &Server<'_>, params: ExecuteCommandParams) -> Result<Value, String> {
    let id = params
        .arguments
        .first()
        .and_then(Value::as_str)
        .ok_or_else(|| format!("`{}` takes a task id", params.command))?
        .to_string();
    let root = server
        .root
        .clone()
        .ok_or_else(|| "no vx workspace is open".to_string())?;
    let task = TaskId::parse(&id).ok_or_else(|| format!("`{id}` is not a task id"))?;
    match params.command.as_str() {
        "vx.run" => {
            let sender = server.conn.sender.clone();
            let started = json!({ "started": id });
            let child = this_vx(&root)
                .args(["run", &id])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("vx could not be started: {e}"))?;
            let running = server.running.clone();
            lock(&running).push(child.id());
            std::thread::spawn(move || {
                let pid = child.id();
                let (code, output) = ended(child.wait_with_output());
                lock(&running).retain(|&p| p != pid);
                let tail: Vec<&str> = output.lines().rev().take(SHOWN_LINES).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                let said = |method: &str, params: Value| {
                    let _ = sender.send(lsp_server::Message::Notification(
                        lsp_server::Notification::new(method.to_string(), params),
                    ));
                };
                said(
                    <LogMessage as lsp_types::notification::Notification>::METHOD,
                    json!(LogMessageParams {
                        typ: MessageType::LOG,
                        message: format!("$ vx run {id}\n{output}"),
                    }),
                );
                said(
                    <ShowMessage as lsp_types::notification::Notification>::METHOD,
                    json!(ShowMessageParams {
                        typ: if code == 0 {
                            MessageType::INFO
                        } else {
                            MessageType::ERROR
                        },
                        message: format!("vx run {id}: exit {code}\n{}", tail.join("\n")),
                    }),
                );
            });
            Ok(started)
        }
        "vx.why" => {
            let (_, output) = vx_at(&root, &["why", &id]);
            server.notify::<ShowMessage>(ShowMessageParams {
                typ: MessageType::INFO,
                message: output.clone(),
            });
            Ok(json!(output))
        }
        "vx.last" => {
            let text = match navigate::last_result(server, &task) {
                Some(last) => format!("{id} {last}"),
                None => format!("{id}: no run recorded"),
            };
            server.notify::<ShowMessage>(ShowMessageParams {
                typ: MessageType::INFO,
                message: text.clone(),
            });
            Ok(json!(text))
        }
        other => Err(format!("vx lsp has no command `{other}`")),
    }
}

/// Runs this vx with `args` in `root`: its exit code and its output (stdout, then stderr).
fn vx_at(root: &Path, args: &[&str]) -> (i32, String) {
    ended(this_vx(root).args(args).output())
}

fn ended(out: std::io::Result<std::process::Output>) -> (i32, String) {
    match out {
        Ok(out) => {
            let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            (out.status.code().unwrap_or(-1), text)
        }
        Err(e) => (-1, format!("vx could not be started: {e}")),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How long the end of a session waits for the runs it stops.
const STOP_WAIT: Duration = Duration::from_secs(30);

/// Stops the runs the lenses started that are still going, as Ctrl-C would (vx then stops
/// their tasks), and waits for them to end.
pub fn stop_runs(running: &Arc<Mutex<Vec<u32>>>) {
    for &pid in lock(running).iter() {
        if let Ok(pid) = i32::try_from(pid) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGINT,
            );
        }
    }
    let deadline = Instant::now() + STOP_WAIT;
    while !lock(running).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}
