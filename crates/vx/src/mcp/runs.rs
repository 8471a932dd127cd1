//! Runs an MCP client started: each is `vx run ARGS --events=FILE` in the background, its
//! terminal output in a file beside the events. Status and output are read from the events
//! file as it grows (`render/events.rs` flushes each event), so a client sees each task's
//! output as it is written; stopping is the SIGINT a Ctrl-C sends, after which vx stops the
//! tasks and leaves none running (EXEC-7).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Output handed back in one `run_output` answer at most; the client asks again from
/// `next_offset`.
const OUTPUT_PAGE: usize = 64 << 10;

/// Lines of the run's terminal output (the failures' recap and the footer) in a status once
/// it ended.
const TAIL_LINES: usize = 30;

/// How long a stop waits for vx to end the run after SIGINT before it sends SIGKILL to it.
const STOP_WAIT: Duration = Duration::from_secs(60);

pub struct Runs {
    cwd: PathBuf,
    runs: Mutex<BTreeMap<u32, Run>>,
}

struct Run {
    child: Child,
    /// Holds the events and the terminal output; removed with the server.
    _dir: tempfile::TempDir,
    events: PathBuf,
    terminal: PathBuf,
    command: String,
    exit: Option<i32>,
}

impl Run {
    /// The exit code once the process ended (reaped here).
    fn poll(&mut self) -> Option<i32> {
        if self.exit.is_none() {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.exit = Some(exit_code(status));
            }
        }
        self.exit
    }
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(-1)
}

impl Runs {
    pub fn new(cwd: &Path) -> Runs {
        Runs {
            cwd: cwd.to_path_buf(),
            runs: Mutex::new(BTreeMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<u32, Run>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn start(&self, args: &[String]) -> Result<Value, String> {
        let dir = tempfile::Builder::new()
            .prefix("vx-mcp-run-")
            .tempdir()
            .map_err(|e| format!("cannot make a folder for the run's events: {e}"))?;
        let events = dir.path().join("events.ndjson");
        let terminal = dir.path().join("terminal.txt");
        let out = File::create(&terminal).map_err(|e| e.to_string())?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        // `--events` before the client's words: after a `--` among them it would be the tasks'.
        let child = crate::commands::this_vx(&self.cwd)
            .arg("run")
            .arg(format!("--events={}", events.display()))
            .args(args)
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("vx could not be started: {e}"))?;
        let command = format!("vx run {}", args.join(" "));
        let mut runs = self.lock();
        let id = runs.keys().next_back().map_or(1, |n| n + 1);
        runs.insert(
            id,
            Run {
                child,
                _dir: dir,
                events,
                terminal,
                command: command.trim_end().to_string(),
                exit: None,
            },
        );
        Ok(json!({ "run": id.to_string(), "command": command.trim_end() }))
    }

    fn with_run<T>(&self, run: &str, f: impl FnOnce(&mut Run) -> T) -> Result<T, String> {
        let mut runs = self.lock();
        let known: Vec<String> = runs.keys().map(ToString::to_string).collect();
        let found = run
            .parse::<u32>()
            .ok()
            .and_then(|n| runs.get_mut(&n))
            .ok_or_else(|| match known.as_slice() {
                [] => format!("no run `{run}`: no run was started in this session"),
                _ => format!("no run `{run}` (this session's runs: {})", known.join(", ")),
            })?;
        Ok(f(found))
    }

    pub fn status(&self, run: &str) -> Result<Value, String> {
        self.with_run(run, |r| status_of(run, r))
    }

    pub fn output(&self, run: &str, task: &str, offset: usize) -> Result<Value, String> {
        let (events, exit) = self.with_run(run, |r| (r.events.clone(), r.poll()))?;
        let folded = fold(&read_events(&events));
        let Some(row) = folded.rows.get(task) else {
            let tasks: Vec<&String> = folded.order.iter().collect();
            return Err(format!(
                "run {run} holds no task `{task}` (its tasks: {})",
                tasks
                    .iter()
                    .map(|t| t.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        let text = &row.output;
        let mut from = offset.min(text.len());
        while !text.is_char_boundary(from) {
            from -= 1;
        }
        let mut to = (from + OUTPUT_PAGE).min(text.len());
        while !text.is_char_boundary(to) {
            to -= 1;
        }
        Ok(json!({
            "task": task,
            "text": &text[from..to],
            "next_offset": to,
            "finished": row.finished || exit.is_some(),
        }))
    }

    pub fn stop(&self, run: &str) -> Result<Value, String> {
        let pid = self.with_run(run, |r| r.poll().is_none().then(|| r.child.id()))?;
        if let Some(pid) = pid {
            interrupt(pid);
            let deadline = Instant::now() + STOP_WAIT;
            while self.with_run(run, |r| r.poll().is_none())? {
                if Instant::now() > deadline {
                    self.with_run(run, |r| r.child.kill())?.ok();
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        self.status(run)
    }

    pub fn stop_all(&self) {
        let going: Vec<String> = self
            .lock()
            .iter_mut()
            .filter_map(|(id, r)| r.poll().is_none().then(|| id.to_string()))
            .collect();
        for run in going {
            let _ = self.stop(&run);
        }
    }
}

/// SIGINT, as Ctrl-C sends it to vx.
fn interrupt(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGINT,
        );
    }
}

fn status_of(run: &str, r: &mut Run) -> Value {
    let exit = r.poll();
    let folded = fold(&read_events(&r.events));
    let rows: Vec<Value> = folded
        .order
        .iter()
        .map(|task| {
            let row = &folded.rows[task];
            let mut value = json!({
                "task": task,
                "state": row.state,
                "output_bytes": row.output.len(),
            });
            for (key, field) in [
                ("cache", &row.cache),
                ("duration_ms", &row.duration_ms),
                ("exit_code", &row.exit_code),
                ("blocked_by", &row.blocked_by),
            ] {
                if !field.is_null() {
                    value[key] = field.clone();
                }
            }
            value
        })
        .collect();
    let mut out = json!({
        "run": run,
        "command": r.command,
        "state": if exit.is_some() { "ended" } else { "running" },
        "tasks": rows,
    });
    if let Some(code) = exit {
        out["exit_code"] = json!(code);
        let terminal = std::fs::read_to_string(&r.terminal).unwrap_or_default();
        let lines: Vec<&str> = terminal.lines().collect();
        let tail = &lines[lines.len().saturating_sub(TAIL_LINES)..];
        out["terminal_tail"] = json!(tail.join("\n"));
    }
    out
}

/// The events written so far; a line still being written is left for the next read.
fn read_events(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).unwrap_or_default();
    let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |n| n + 1);
    String::from_utf8_lossy(&bytes[..whole])
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

#[derive(Default)]
struct Row {
    state: String,
    output: String,
    finished: bool,
    cache: Value,
    duration_ms: Value,
    exit_code: Value,
    blocked_by: Value,
}

#[derive(Default)]
struct Folded {
    order: Vec<String>,
    rows: BTreeMap<String, Row>,
}

impl Folded {
    fn row(&mut self, task: &str) -> &mut Row {
        if !self.rows.contains_key(task) {
            self.order.push(task.to_string());
            self.rows.insert(
                task.to_string(),
                Row {
                    state: "pending".to_string(),
                    ..Row::default()
                },
            );
        }
        self.rows.get_mut(task).expect("inserted")
    }
}

/// Each task's state from the events, in the plan's order.
fn fold(events: &[Value]) -> Folded {
    let mut folded = Folded::default();
    for event in events {
        let task = event["task"].as_str().unwrap_or_default();
        match event["event"].as_str() {
            Some("plan") => {
                for task in event["tasks"].as_array().into_iter().flatten() {
                    folded.row(task.as_str().unwrap_or_default());
                }
            }
            Some("started") => folded.row(task).state = "running".to_string(),
            Some("output") => folded
                .row(task)
                .output
                .push_str(event["text"].as_str().unwrap_or_default()),
            Some("finished") => {
                let row = folded.row(task);
                row.finished = true;
                row.state = event["status"].as_str().unwrap_or("finished").to_string();
                row.cache = event["cache"].clone();
                row.duration_ms = event["duration_ms"].clone();
                row.exit_code = event["exit_code"].clone();
                row.blocked_by = event["blocked_by"].clone();
            }
            _ => {}
        }
    }
    folded
}
