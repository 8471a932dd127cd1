//! `vx mcp`: a Model Context Protocol server over stdio, for coding agents. This crate is the
//! protocol only — the official Rust SDK (`rmcp`) on a Tokio runtime of its own, which no
//! other crate of the binary sees (ARCH-1: async stays in its crate). What each tool does is
//! the binary's [`Backend`]; every call runs on a blocking thread and answers JSON.
//!
//! Tools that read (annotated read-only): `show`, `plan`, `why`, `last`, `info`,
//! `config_errors`. Tools that run tasks, which a client must call explicitly and which
//! `read_only` leaves out: `run`, `run_status`, `run_output`, `run_stop`.
//!
//! A backend's `Err(text)` is a tool-level error: the client shows `text` to the agent (it is
//! vx's own message, as the command line would print it), and the session goes on.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, ErrorData, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// What the tools do; the binary implements it.
pub trait Backend: Send + Sync + 'static {
    /// `vx show --format json [TARGET]`.
    fn show(&self, target: Option<&str>) -> Result<Value, String>;
    /// `vx run ARGS --dry=json`: the plan, each task's predicted cache outcome and reason.
    fn plan(&self, args: &[String]) -> Result<Value, String>;
    /// `vx why TASK [--run RUN] --format json`.
    fn why(&self, task: &str, run: Option<&str>) -> Result<Value, String>;
    /// `vx last [RUN] [--failed] --format json`, failures with their output's last lines.
    fn last(&self, run: Option<&str>, failed: bool) -> Result<Value, String>;
    /// `vx info --format json`.
    fn info(&self) -> Result<Value, String>;
    /// Every configuration error `vx run` would print before starting, located.
    fn config_errors(&self) -> Result<Value, String>;
    /// Starts `vx run ARGS` in the background: the run's handle.
    fn run_start(&self, args: &[String]) -> Result<Value, String>;
    /// A started run's rows: each task's state so far, and the run's end once it ended.
    fn run_status(&self, run: &str) -> Result<Value, String>;
    /// A task's output in a started run, from byte `offset` on.
    fn run_output(&self, run: &str, task: &str, offset: usize) -> Result<Value, String>;
    /// Stops a started run as Ctrl-C would, and waits for its end.
    fn run_stop(&self, run: &str) -> Result<Value, String>;
    /// Stops every run still going (the client went away).
    fn stop_all(&self);
}

/// The tools that run tasks (left out with `read_only`).
pub const RUN_TOOLS: &[&str] = &["run", "run_status", "run_output", "run_stop"];

#[derive(Clone)]
pub struct Server {
    backend: Arc<dyn Backend>,
    tool_router: ToolRouter<Server>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ShowArgs {
    /// A project name, a `project#task` id or a task name; none lists every project.
    pub target: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunArgs {
    /// Task names (`build`), task ids (`web#build`) or root task ids (`//#lint`).
    pub tasks: Vec<String>,
    /// Further `vx run` flags, one word each: `--all`, `--filter`, `web...`, `--affected`,
    /// `--force`, `--continue`…
    #[serde(default)]
    pub flags: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WhyArgs {
    /// A task id (`web#build`) or, in a project's directory, a task name.
    pub task: String,
    /// A run id (or its first digits) to explain instead of the latest run.
    pub run: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct LastArgs {
    /// A run id (or its first digits); the latest run when absent.
    pub run: Option<String>,
    /// Only the failed tasks.
    #[serde(default)]
    pub failed: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunHandle {
    /// The handle `run` gave.
    pub run: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct OutputArgs {
    /// The handle `run` gave.
    pub run: String,
    /// The task id (`web#build`), as `run_status` lists it.
    pub task: String,
    /// The byte offset to read from: 0, then the `next_offset` of the previous answer.
    #[serde(default)]
    pub offset: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoArgs {}

#[tool_router]
impl Server {
    pub fn new(backend: Arc<dyn Backend>) -> Server {
        Server {
            backend,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "The workspace's projects, or one project's or task's resolved configuration with the file and line of each key (what `vx show --format json` prints).",
        annotations(read_only_hint = true)
    )]
    async fn show(&self, Parameters(a): Parameters<ShowArgs>) -> Result<CallToolResult, ErrorData> {
        self.call(move |b| b.show(a.target.as_deref())).await
    }

    #[tool(
        description = "What `vx run TASKS FLAGS` would do, without running anything: the tasks in order, each with its predicted cache outcome (hit, miss) and the reason (`vx run --dry=json`).",
        annotations(read_only_hint = true)
    )]
    async fn plan(&self, Parameters(a): Parameters<RunArgs>) -> Result<CallToolResult, ErrorData> {
        let args = [a.tasks, a.flags].concat();
        self.call(move |b| b.plan(&args)).await
    }

    #[tool(
        description = "Why a task executed or hit in its latest recorded run: the key components that changed since the run before (`vx why --format json`).",
        annotations(read_only_hint = true)
    )]
    async fn why(&self, Parameters(a): Parameters<WhyArgs>) -> Result<CallToolResult, ErrorData> {
        self.call(move |b| b.why(&a.task, a.run.as_deref())).await
    }

    #[tool(
        description = "A recorded run (the latest by default): each task's status, cache outcome and duration, failures first with the last lines of their output (`vx last --format json`).",
        annotations(read_only_hint = true)
    )]
    async fn last(&self, Parameters(a): Parameters<LastArgs>) -> Result<CallToolResult, ErrorData> {
        self.call(move |b| b.last(a.run.as_deref(), a.failed)).await
    }

    #[tool(
        description = "A health report of the workspace: vx and git versions, projects, cache, recent history, configuration errors (`vx info --format json`).",
        annotations(read_only_hint = true)
    )]
    async fn info(&self, Parameters(_): Parameters<NoArgs>) -> Result<CallToolResult, ErrorData> {
        self.call(|b| b.info()).await
    }

    #[tool(
        description = "Every configuration error `vx run` would print before starting anything (unknown keys, bad values, `depends-on` entries that name no task, cycles), each with its file, line, column, message and hints; an empty list when there is none.",
        annotations(read_only_hint = true)
    )]
    async fn config_errors(
        &self,
        Parameters(_): Parameters<NoArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(|b| b.config_errors()).await
    }

    #[tool(
        description = "Starts `vx run TASKS FLAGS` in the background and returns its handle at once; follow it with `run_status` and `run_output`, stop it with `run_stop`. Runs the tasks' commands: call it only when asked to build, test or run.",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn run(&self, Parameters(a): Parameters<RunArgs>) -> Result<CallToolResult, ErrorData> {
        let args = [a.tasks, a.flags].concat();
        self.call(move |b| b.run_start(&args)).await
    }

    #[tool(
        description = "A started run's live rows: every task of its plan with its state (pending, running, success, failed, skipped…), cache outcome, duration and how much output it has; once the run ended, its exit code and its footer.",
        annotations(read_only_hint = true)
    )]
    async fn run_status(
        &self,
        Parameters(a): Parameters<RunHandle>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(move |b| b.run_status(&a.run)).await
    }

    #[tool(
        description = "A task's output in a started run, as it is written, from a byte offset: the text, the offset to ask from next, and whether the task has finished.",
        annotations(read_only_hint = true)
    )]
    async fn run_output(
        &self,
        Parameters(a): Parameters<OutputArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(move |b| b.run_output(&a.run, &a.task, a.offset))
            .await
    }

    #[tool(
        description = "Stops a started run as Ctrl-C would (its tasks are stopped, none is left running) and returns its final rows.",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn run_stop(
        &self,
        Parameters(a): Parameters<RunHandle>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(move |b| b.run_stop(&a.run)).await
    }
}

impl Server {
    /// Runs `work` on a blocking thread: its value as JSON text, its error as a tool error.
    async fn call(
        &self,
        work: impl FnOnce(&dyn Backend) -> Result<Value, String> + Send + 'static,
    ) -> Result<CallToolResult, ErrorData> {
        let backend = self.backend.clone();
        let done = tokio::task::spawn_blocking(move || work(&*backend))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(match done {
            Ok(value) => CallToolResult::success(vec![ContentBlock::json(value)?]),
            Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        })
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "vx is this repository's monorepo task runner. Use `config_errors` after editing a vx.toml, `plan` to see what a build would do, `run` with `run_status` and `run_output` to build and read failures as they happen, `last` and `why` to explain the latest run.",
        )
    }
}

/// Serves one client on stdin and stdout until it goes away; `read_only` leaves out the tools
/// that run tasks.
pub fn serve(backend: Arc<dyn Backend>, read_only: bool) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("vx mcp: cannot start its runtime: {e}"))?;
    let mut server = Server::new(backend.clone());
    if read_only {
        for name in RUN_TOOLS {
            server.tool_router.remove_route(name);
        }
    }
    let served = runtime.block_on(async {
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| format!("vx mcp: the client did not initialize: {e}"))?;
        service
            .waiting()
            .await
            .map_err(|e| format!("vx mcp: {e}"))?;
        Ok::<(), String>(())
    });
    backend.stop_all();
    served
}
