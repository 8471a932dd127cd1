//! The run loop driven through the `Executor` seam with a scripted fake: no processes.

use vx_core::TaskId;
use vx_test_support::fakes::ScriptedExecutor;
use vx_test_support::fixture::Fixture;

use super::*;
use crate::options::{Concurrency, RunOptions};
use crate::outcome::{Notice, Status};
use crate::report::{Flow, Region, Totals};

fn run_with(f: &Fixture, executor: ScriptedExecutor, tasks: &[&str]) -> i32 {
    let options = RunOptions {
        tasks: tasks.iter().map(|t| t.to_string()).collect(),
        all: true,
        concurrency: Some(Concurrency::Count(1)),
        ..RunOptions::default()
    };
    run_layered(f, executor, options, |layers| layers, None).0
}

/// Runs `args` in fixture `f` through the fake executor, with the cache layers `layers` makes
/// of the local store (`.vx` in the fixture); returns the exit code and each task's report.
pub(crate) fn run_layered(
    f: &Fixture,
    executor: ScriptedExecutor,
    options: RunOptions,
    layers: impl FnOnce(&mut vx_store::Layers) -> &mut vx_store::Layers,
    sink: Option<Box<dyn crate::record::TelemetrySink>>,
) -> (i32, Vec<TaskReport>) {
    let reporter = Box::new(Recording::default());
    run_reported(f, executor, options, layers, sink, reporter)
}

/// [`run_layered`] with the run's reporter given.
fn run_reported(
    f: &Fixture,
    executor: ScriptedExecutor,
    options: RunOptions,
    layers: impl FnOnce(&mut vx_store::Layers) -> &mut vx_store::Layers,
    sink: Option<Box<dyn crate::record::TelemetrySink>>,
    reporter: Box<dyn Reporter>,
) -> (i32, Vec<TaskReport>) {
    let plan = super::super::plan::discover(f.root(), false)
        .and_then(|workspace| super::super::plan::build(workspace, f.root(), &options))
        .unwrap_or_else(|_| panic!("plan"));
    let ctx = Context {
        host_env: BTreeMap::new(),
        sh: Some(PathBuf::from("/bin/sh")),
        kill_grace: Duration::from_millis(100),
        env_timeout: None,
        shard_wait: None,
        ready_notice: Duration::from_secs(10),
        cwd: std::env::temp_dir(),
        origin: std::time::Instant::now(),
        phases: Vec::new(),
        cache_dir: std::env::temp_dir().join("vx-run-loop-tests"),
        slots: 1,
        adaptive: None,
        memory_budget: crate::host::memory::Budget::Off,
        lock: None,
        keeps_terminal: false,
        snapshot: None,
        remote: Vec::new(),
    };
    let host_env = BTreeMap::new();
    let dir = f.path(".vx");
    let opened = super::super::setup::open(
        &plan.workspace.root,
        &dir,
        vx_store::Access::ReadWrite,
        None,
    )
    .unwrap_or_else(|_| panic!("open the cache"));
    let (mut cache, recorder, _) =
        super::super::setup::run_cache(&plan, &options, &host_env, None, opened, false);
    layers(cache.layers_mut());
    let (tx, rx) = crossbeam_channel::unbounded();
    let parts = Parts {
        reporter,
        executor: Box::new(executor),
        cache,
        recorder,
        channel: (tx, rx),
    };
    let mut run = Run::new(&plan, &options, ctx, parts);
    if let Some(sink) = sink {
        run = run.with_sink(sink);
    }
    let code = run.execute();
    (code, run.reports.values().cloned().collect())
}

#[test]
fn a_failure_skips_dependants_without_spawning_them() {
    let f = Fixture::w("vx-not-used");
    let executor = ScriptedExecutor::new().on("built lib", "boom\n", 3);
    let code = run_with(&f, executor.clone(), &["build"]);
    assert_eq!(code, crate::exit::FAILURE);
    let spawned = executor.spawned();
    assert_eq!(
        spawned.len(),
        2,
        "app#build is skipped, never spawned: {spawned:?}"
    );
    assert!(
        spawned[0].contains("built lib"),
        "lib#build starts first: {spawned:?}"
    );
    assert!(spawned[1].contains("echo docs"), "{spawned:?}");
}

/// A workspace with `lib#server` (persistent, ready on `Listening on <port>`) and
/// `lib#e2e` depending on it.
fn server_and_e2e() -> Fixture {
    let f = Fixture::new("vx-not-used");
    f.write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
    f.write("packages/lib/package.json", r#"{ "name": "lib" }"#);
    f.write(
        "packages/lib/vx.toml",
        concat!(
            "[tasks.server]\ncommand = \"serve\"\n",
            "persistent = { ready-when = 'Listening on \\d+' }\n\n",
            "[tasks.e2e]\ncommand = \"run-e2e\"\ndepends-on = [\"server\"]\n",
        ),
    );
    f.commit();
    f
}

#[test]
fn a_ready_line_releases_the_dependants_of_a_persistent_task() {
    let f = server_and_e2e();
    let executor = ScriptedExecutor::new().on("serve", "booting\nListening on 8080\n", 0);
    let code = run_with(&f, executor.clone(), &["e2e"]);
    assert_eq!(code, crate::exit::SUCCESS);
    let spawned = executor.spawned();
    assert!(spawned[0].contains("serve"), "{spawned:?}");
    assert!(spawned.iter().any(|s| s.contains("run-e2e")), "{spawned:?}");
}

#[test]
fn a_persistent_task_that_exits_before_its_line_fails_and_skips_dependants() {
    let f = server_and_e2e();
    let executor = ScriptedExecutor::new().on("serve", "booting\n", 0);
    let code = run_with(&f, executor.clone(), &["e2e"]);
    assert_eq!(code, crate::exit::FAILURE);
    let spawned = executor.spawned();
    assert_eq!(spawned.len(), 1, "e2e is skipped: {spawned:?}");
}

#[test]
fn dependencies_are_spawned_before_dependants() {
    let f = Fixture::w("vx-not-used");
    let executor = ScriptedExecutor::new();
    assert_eq!(
        run_with(&f, executor.clone(), &["check"]),
        crate::exit::SUCCESS
    );
    let spawned = executor.spawned();
    let position = |needle: &str| spawned.iter().position(|s| s.contains(needle)).unwrap();
    assert!(position("built lib") < position("built app"));
    assert!(position("built app") < position("test -s"));
}

#[test]
fn every_sink_gets_one_record_of_the_run_with_its_keys() {
    let f = Fixture::w("vx-not-used");
    let sink = crate::record::CollectingSink::default();
    let executor = ScriptedExecutor::new().on("built lib", "boom\n", 3);
    let args = RunOptions {
        tasks: vec!["build".into()],
        all: true,
        concurrency: Some(Concurrency::Count(1)),
        ..RunOptions::default()
    };
    let (code, reports) = run_layered(&f, executor, args, |l| l, Some(Box::new(sink.clone())));
    let runs = sink.runs.borrow();
    assert_eq!(runs.len(), 1, "one record per run end");
    assert_eq!(runs[0].exit_code, code);
    let ids: Vec<&str> = runs[0].tasks.iter().map(|t| t.0.as_str()).collect();
    let reported: Vec<String> = reports.iter().map(|r| r.id.to_string()).collect();
    assert_eq!(ids, reported, "every reported task, in the same order");
    let lib = runs[0].tasks.iter().find(|t| t.0 == "lib#build").unwrap();
    assert_eq!(lib.1, Status::Failed);
    assert_eq!(lib.2.as_ref().map(String::len), Some(64), "with its key");
    let app = runs[0].tasks.iter().find(|t| t.0 == "app#build").unwrap();
    assert_eq!(app.1, Status::Skipped);
}

/// A reporter that writes down what the loop tells it, one line per call (ARCH-2's fake of the
/// `Reporter` seam).
#[derive(Clone, Default)]
struct Recording(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl Recording {
    fn said(&self, line: String) {
        self.0.lock().unwrap().push(line);
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl Reporter for Recording {
    fn flow(&self) -> Flow {
        Flow::Broad
    }
    fn colour(&self) -> bool {
        false
    }
    fn notice(&mut self, notice: Notice) {
        self.said(format!("notice {notice:?}"));
    }
    fn waiting(&mut self, notice: Notice) {
        self.said(format!("waiting {notice:?}"));
    }
    fn choose_streaming(&mut self, _requested_commands: &[usize]) {}
    fn is_streaming(&self, _node: usize) -> bool {
        false
    }
    fn shows_hit_log(&self, _requested: bool) -> bool {
        false
    }
    fn started(&mut self, _node: usize, report: &TaskReport) {
        self.said(format!("started {}", report.id));
    }
    fn stream(&mut self, _node: usize, bytes: &[u8]) {
        self.said(format!(
            "output {}",
            String::from_utf8_lossy(bytes).trim_end()
        ));
    }
    fn finished(&mut self, _node: usize, report: &TaskReport, _requested: bool) {
        self.said(format!("finished {} {:?}", report.id, report.status));
    }
    fn after_footer(&mut self, _bytes: &[u8]) {}
    fn finish(&mut self, totals: &Totals<'_>) {
        self.said(format!(
            "footer {} tasks, re-run {:?}",
            totals.reports.len(),
            totals.rerun
        ));
    }
    fn output_replayable(&self, _reports: &[(&TaskReport, bool)]) -> bool {
        false
    }
    fn start_tui(
        &mut self,
        _tasks: Vec<(usize, TaskId, bool)>,
        _send: Box<dyn Fn(UiInput) -> bool + Send>,
        _log_file: PathBuf,
    ) -> bool {
        false
    }
    fn has_tui(&self) -> bool {
        false
    }
    fn tick(&mut self) {}
    fn key(&mut self, _input: UiInput) -> UiAction {
        UiAction::None
    }
    fn region_start(&mut self, _log_file: PathBuf) {}
    fn region_active(&self) -> bool {
        false
    }
    fn region_stop(&mut self) {}
    fn region_due(&self) -> bool {
        false
    }
    fn draw_region(&mut self, _region: &Region) {}
    fn abandon(&mut self, _line: &str) {}
}

#[test]
fn the_loop_tells_its_reporter_each_task_in_order_and_the_footer_last() {
    let f = Fixture::w("vx-not-used");
    let executor = ScriptedExecutor::new().on("built lib", "boom\n", 3);
    let recording = Recording::default();
    let args = RunOptions {
        tasks: vec!["build".into()],
        all: true,
        concurrency: Some(Concurrency::Count(1)),
        ..RunOptions::default()
    };
    let (code, _) = run_reported(
        &f,
        executor,
        args,
        |layers| layers,
        None,
        Box::new(recording.clone()),
    );
    assert_eq!(code, crate::exit::FAILURE);
    let lines = recording.lines();
    let at = |line: &str| {
        lines
            .iter()
            .position(|l| l == line)
            .unwrap_or_else(|| panic!("`{line}` not said: {lines:#?}"))
    };
    assert!(at("started lib#build") < at("output boom"), "{lines:#?}");
    assert!(
        at("output boom") < at("finished lib#build Failed"),
        "{lines:#?}"
    );
    assert!(
        at("finished lib#build Failed") < at("finished app#build Skipped"),
        "the dependant is reported skipped after its dependency failed: {lines:#?}"
    );
    assert!(
        !lines.contains(&"started app#build".to_string()),
        "a skipped task never starts: {lines:#?}"
    );
    assert!(
        lines.last().is_some_and(|l| l.starts_with("footer ")),
        "the footer comes last: {lines:#?}"
    );
}
