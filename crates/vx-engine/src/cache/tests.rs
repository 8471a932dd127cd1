//! The probe and save decisions against a further cache layer: the run loop with a scripted
//! executor, a real local store in the fixture's `.vx`, and the in-memory [`MemoryLayer`] of
//! vx-test-support behind it (ARCH-2).

use std::sync::Arc;

use vx_store::layer::{ErrorKind, Layers, RemoteUse, Source};
use vx_store::{Access, Lookup, Store};
use vx_test_support::fakes::{MemoryLayer, ScriptedExecutor};
use vx_test_support::fixture::Fixture;

use crate::execute::tests::run_layered;
use crate::options::{Concurrency, RunOptions};
use crate::outcome::{CacheKind, Status, TaskReport};

/// `lib#build` writes `dist/out.txt` from `src/in.txt`; `app#build` depends on it.
fn workspace() -> Fixture {
    let f = Fixture::new("vx-not-used");
    f.write(".gitignore", "dist/\n.vx/\n");
    f.write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
    f.write("packages/lib/package.json", r#"{ "name": "lib" }"#);
    f.write("packages/lib/src/in.txt", "source\n");
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"make-lib\"\ncache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
    );
    f.write("packages/app/package.json", r#"{ "name": "app" }"#);
    f.write(
        "packages/app/vx.toml",
        "[tasks.build]\ncommand = \"make-app\"\ndepends-on = [\"lib#build\"]\ncache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
    );
    f.commit();
    f
}

fn executor() -> ScriptedExecutor {
    ScriptedExecutor::new()
        .on("make-lib", "lib built\n", 0)
        .writes("make-lib", "dist/out.txt", b"lib output\n")
        .on("make-app", "app built\n", 0)
        .writes("make-app", "dist/app.txt", b"app output\n")
}

fn args() -> RunOptions {
    RunOptions {
        tasks: vec!["build".into()],
        all: true,
        concurrency: Some(Concurrency::Count(1)),
        ..RunOptions::default()
    }
}

fn usage(read: bool, write: bool) -> RemoteUse {
    RemoteUse {
        read,
        write,
        token_env: "VX_REMOTE_CACHE_TOKEN".into(),
        max_download: vx_store::artifact::SIZE_CAP,
        downloads: 2,
    }
}

/// One run with `layer` behind the local store.
fn run(
    f: &Fixture,
    executor: &ScriptedExecutor,
    layer: &MemoryLayer,
    read: bool,
    write: bool,
) -> (i32, Vec<TaskReport>) {
    let remote: Arc<dyn vx_store::CacheLayer> = Arc::new(layer.clone());
    run_layered(
        f,
        executor.clone(),
        args(),
        |layers| layers.add_remote(remote, usage(read, write), 2),
        None,
    )
}

fn kind_of(reports: &[TaskReport], id: &str) -> Option<CacheKind> {
    reports
        .iter()
        .find(|r| r.id.to_string() == id)
        .and_then(|r| r.cache)
}

/// The keys `layer` was asked for since its `from`th fetch, the outputs records (of the
/// fixture's branch and the defaults) left out: the task results looked up.
fn results_asked(layer: &MemoryLayer, from: usize) -> Vec<String> {
    let records: Vec<String> = ["main", "master"]
        .iter()
        .map(|b| super::produced::record_key(b))
        .collect();
    layer.fetched_on()[from..]
        .iter()
        .map(|(key, _)| key.clone())
        .filter(|key| !records.contains(key))
        .collect()
}

/// `f` as another machine sees it: no local cache, no outputs.
fn another_machine(f: &Fixture) {
    std::fs::remove_dir_all(f.path(".vx")).unwrap();
    std::fs::remove_dir_all(f.path("packages/lib/dist")).unwrap();
    std::fs::remove_dir_all(f.path("packages/app/dist")).unwrap();
}

/// The layers of a run in `f`: its local store (`.vx`), then `layer`, read only.
fn layers_over(f: &Fixture, layer: &MemoryLayer) -> Layers {
    let store = Store::open(&f.path(".vx"), Access::ReadWrite).expect("open");
    let mut layers = Layers::local(Some(store));
    layers.add_remote(Arc::new(layer.clone()), usage(true, false), 1);
    layers
}

fn origin(f: &Fixture, key: &str) -> Option<String> {
    let store = Store::open(&f.path(".vx"), Access::ReadOnly).expect("open");
    store.entry(key).expect("read").map(|e| e.origin)
}

#[test]
fn a_hit_in_a_further_layer_is_restored_and_adopted() {
    let f = workspace();
    let layer = MemoryLayer::new();
    let (code, _) = run(&f, &executor(), &layer, true, true);
    assert_eq!(code, crate::exit::SUCCESS);
    assert_eq!(layer.results().len(), 2, "both results were uploaded");

    // Another machine: no local cache, no outputs.
    another_machine(&f);
    let second = executor();
    let (code, reports) = run(&f, &second, &layer, true, false);
    assert_eq!(code, crate::exit::SUCCESS);
    assert!(second.spawned().is_empty(), "{:?}", second.spawned());
    assert_eq!(
        kind_of(&reports, "lib#build"),
        Some(CacheKind::RestoredRemote)
    );
    assert_eq!(
        kind_of(&reports, "app#build"),
        Some(CacheKind::RestoredRemote)
    );
    assert_eq!(f.read("packages/lib/dist/out.txt"), "lib output\n");
    assert_eq!(f.read("packages/app/dist/app.txt"), "app output\n");
    for key in layer.results() {
        assert_eq!(origin(&f, &key).as_deref(), Some("remote"));
    }

    // A third run finds the adopted entries locally: up to date, the layer not asked.
    let fetches = layer.fetches();
    let (_, reports) = run(&f, &executor(), &layer, true, false);
    assert_eq!(kind_of(&reports, "lib#build"), Some(CacheKind::UpToDate));
    assert_eq!(layer.fetches(), fetches);
}

/// KEY-9: app#build's key folds what lib#build produced. A cold run asks for each key in the
/// background once it is known; a fresh runner takes both keys at once from the outputs record
/// the cold run wrote, and asks for app#build's entry while lib#build's is still on its way.
#[test]
fn a_fresh_runner_downloads_a_dependant_before_its_upstream_arrived() {
    let f = workspace();
    let layer = MemoryLayer::new();
    assert_eq!(
        run(&f, &executor(), &layer, true, true).0,
        crate::exit::SUCCESS
    );
    let results = layer.results();
    assert_eq!(results.len(), 2, "{:?}", layer.keys());
    assert_eq!(layer.keys().len(), 3, "the results and the outputs record");
    // The cold run asked for both, neither there: app#build once lib#build was saved.
    let asked = |from: usize| -> Vec<(String, String)> {
        layer.fetched_on()[from..]
            .iter()
            .filter(|(key, _)| results.contains(key))
            .cloned()
            .collect()
    };
    let cold = asked(0);
    assert_eq!(cold.len(), 2, "{cold:?}");
    assert!(
        cold.iter().all(|(_, thread)| thread == "vx-prefetch"),
        "{cold:?}"
    );
    another_machine(&f);
    // Both downloads wait until both were asked for: without the record, app#build's would
    // be asked for only after lib#build's arrived, and the release below times out.
    let before = layer.fetched_on().len();
    layer.hold(&results);
    let watcher = {
        let (layer, results) = (layer.clone(), results.clone());
        std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            let both = || {
                let asked: Vec<String> = layer.fetched_on()[before..]
                    .iter()
                    .map(|(k, _)| k.clone())
                    .collect();
                results.iter().all(|key| asked.contains(key))
            };
            while !both() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let asked_together = both();
            layer.hold(&[]);
            asked_together
        })
    };
    let second = executor();
    let (code, reports) = run(&f, &second, &layer, true, false);
    assert!(
        watcher.join().unwrap(),
        "app#build was not asked for while lib#build's download was held: {:?}",
        layer.fetched_on()
    );
    assert_eq!(code, crate::exit::SUCCESS);
    assert!(second.spawned().is_empty(), "{:?}", second.spawned());
    for id in ["lib#build", "app#build"] {
        assert_eq!(
            kind_of(&reports, id),
            Some(CacheKind::RestoredRemote),
            "{id}"
        );
    }
    assert_eq!(f.read("packages/app/dist/app.txt"), "app output\n");
    let fetched = asked(before);
    assert_eq!(fetched.len(), 2, "each entry asked for once: {fetched:?}");
    assert!(
        fetched.iter().all(|(_, thread)| thread == "vx-prefetch"),
        "{fetched:?}"
    );
}

/// KEY-9: a task that executed here and produced outputs no outputs record names makes its
/// dependants' keys new to every runner: they are not asked of the remote cache (a round trip
/// per level of a changed chain). Outputs a record names (an edit that changed nothing built)
/// are asked for, and hit.
#[test]
fn dependants_of_outputs_no_runner_recorded_are_not_asked_of_the_remote() {
    let f = workspace();
    let layer = MemoryLayer::new();
    assert_eq!(
        run(&f, &executor(), &layer, true, true).0,
        crate::exit::SUCCESS
    );
    // lib's source changes, its outputs do not: app's key is one the record knows of, and
    // a fresh runner restores it after running lib.
    f.write("packages/lib/src/in.txt", "source, reworded\n");
    f.commit();
    std::fs::remove_dir_all(f.path(".vx")).unwrap();
    let before = layer.fetched_on().len();
    let (code, reports) = run(&f, &executor(), &layer, true, true);
    assert_eq!(code, crate::exit::SUCCESS);
    assert_eq!(kind_of(&reports, "lib#build"), Some(CacheKind::Miss));
    assert_eq!(
        kind_of(&reports, "app#build"),
        Some(CacheKind::RestoredRemote)
    );
    assert_eq!(
        results_asked(&layer, before).len(),
        2,
        "lib's key, then app's"
    );
    // Now lib builds something new: app's key folds outputs nobody recorded.
    f.write("packages/lib/src/in.txt", "source, changed\n");
    f.commit();
    std::fs::remove_dir_all(f.path(".vx")).unwrap();
    let changed = ScriptedExecutor::new()
        .on("make-lib", "lib built\n", 0)
        .writes("make-lib", "dist/out.txt", b"new lib output\n")
        .on("make-app", "app built\n", 0)
        .writes("make-app", "dist/app.txt", b"app output\n");
    let before = layer.fetched_on().len();
    let (code, reports) = run(&f, &changed, &layer, true, true);
    assert_eq!(code, crate::exit::SUCCESS);
    assert_eq!(kind_of(&reports, "app#build"), Some(CacheKind::Miss));
    assert_eq!(
        results_asked(&layer, before).len(),
        1,
        "only lib's key was asked for: {:?}",
        layer.fetched_on()[before..].to_vec()
    );
}

/// The same through a task whose outputs did not move: `w` rebuilt to what it produced before,
/// but its value folds `x`'s new outputs (its own upstream field), so `d`'s key is new too.
#[test]
fn a_dependant_two_levels_above_new_outputs_is_not_asked_of_the_remote_either() {
    let f = Fixture::new("vx-not-used");
    f.write(".gitignore", "dist/\n.vx/\n");
    f.write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
    for (name, deps) in [
        ("x", ""),
        ("w", "depends-on = [\"x#build\"]\n"),
        ("d", "depends-on = [\"w#build\"]\n"),
    ] {
        f.write(
            &format!("packages/{name}/package.json"),
            &format!(r#"{{ "name": "{name}" }}"#),
        );
        f.write(&format!("packages/{name}/src/in.txt"), "source\n");
        f.write(
            &format!("packages/{name}/vx.toml"),
            &format!("[tasks.build]\ncommand = \"make-{name}\"\n{deps}cache = {{ inputs = [\"src/**\"], outputs = [\"dist/**\"] }}\n"),
        );
    }
    f.commit();
    let executor = |x_output: &'static [u8]| {
        ScriptedExecutor::new()
            .on("make-x", "", 0)
            .writes("make-x", "dist/out.txt", x_output)
            .on("make-w", "", 0)
            .writes("make-w", "dist/out.txt", b"w\n")
            .on("make-d", "", 0)
            .writes("make-d", "dist/out.txt", b"d\n")
    };
    let layer = MemoryLayer::new();
    assert_eq!(
        run(&f, &executor(b"x\n"), &layer, true, true).0,
        crate::exit::SUCCESS
    );
    let results = layer.results();
    f.write("packages/x/src/in.txt", "changed\n");
    f.commit();
    std::fs::remove_dir_all(f.path(".vx")).unwrap();
    let before = layer.fetched_on().len();
    let (code, reports) = run(&f, &executor(b"new x\n"), &layer, true, true);
    assert_eq!(code, crate::exit::SUCCESS);
    assert_eq!(kind_of(&reports, "d#build"), Some(CacheKind::Miss));
    let asked = results_asked(&layer, before);
    assert_eq!(
        asked.len(),
        1,
        "only x's key: {asked:?} (results before: {results:?})"
    );
}

#[test]
fn a_corrupt_body_is_a_miss_and_the_task_runs() {
    let f = workspace();
    let layer = MemoryLayer::new();
    run(&f, &executor(), &layer, true, true);
    layer.corrupt_all();
    std::fs::remove_dir_all(f.path(".vx")).unwrap();
    let second = executor();
    let (code, reports) = run(&f, &second, &layer, true, false);
    assert_eq!(code, crate::exit::SUCCESS);
    assert_eq!(second.spawned().len(), 2, "both tasks ran");
    assert_eq!(kind_of(&reports, "lib#build"), Some(CacheKind::Miss));
    for key in layer.results() {
        assert_eq!(
            origin(&f, &key).as_deref(),
            Some("local"),
            "the damaged body was not adopted; the executed result was saved"
        );
    }
}

#[test]
fn a_corrupt_body_is_warned_about_once_as_an_invalid_artifact() {
    let f = workspace();
    let layer = MemoryLayer::new();
    run(&f, &executor(), &layer, true, true);
    layer.corrupt_all();
    std::fs::remove_dir_all(f.path(".vx")).unwrap();
    let mut layers = layers_over(&f, &layer);
    let accept = |_: &str| true;
    for key in layer.results() {
        let (lookup, source) = layers.lookup(&key, &accept).expect("lookup");
        assert_eq!(lookup, Lookup::Miss);
        assert_eq!(source, Source::Local);
    }
    let warnings = layers.take_warnings();
    assert_eq!(warnings.len(), 1, "one warning per class: {warnings:?}");
    assert!(
        warnings[0]
            .line
            .starts_with("remote cache: download failed (invalid artifact: "),
        "{warnings:?}"
    );
    assert!(warnings[0]
        .line
        .ends_with("at memory://fake; treating as a miss"));
    assert_eq!(layers.repeated_failures(), 1);
    // Each key is asked at most once per run (REM-5).
    let fetches = layer.fetches();
    layers.lookup(&layer.results()[0], &accept).expect("lookup");
    assert_eq!(layer.fetches(), fetches);
}

#[test]
fn a_failed_upload_never_changes_the_exit_code() {
    let f = workspace();
    let layer = MemoryLayer::new();
    layer.fail_puts(Some(ErrorKind::Status));
    let (code, reports) = run(&f, &executor(), &layer, true, true);
    assert_eq!(code, crate::exit::SUCCESS);
    assert!(reports.iter().all(|r| r.status == Status::Success));
    assert_eq!(layer.result_puts().len(), 2, "both uploads were tried");
    assert!(layer.keys().is_empty());
}

#[test]
fn unreachable_layers_are_switched_off_after_three_connection_failures() {
    let f = workspace();
    let layer = MemoryLayer::new();
    layer.fail_fetches(Some(ErrorKind::Connection));
    let mut layers = layers_over(&f, &layer);
    let accept = |_: &str| true;
    let keys = ["a", "b", "c", "d"].map(|c| c.repeat(64));
    let before = layer.fetches();
    for key in &keys {
        layers.lookup(key, &accept).expect("lookup");
    }
    assert_eq!(
        layer.fetches() - before,
        3,
        "the fourth lookup does not ask"
    );
    let lines: Vec<String> = layers.take_warnings().into_iter().map(|w| w.line).collect();
    assert_eq!(
        lines,
        [
            "remote cache: download failed (injected) at memory://fake; treating as a miss",
            "remote cache unreachable; continuing with the local cache only",
        ]
    );
}

#[test]
fn an_unauthorised_layer_hints_at_the_token_variable() {
    let f = workspace();
    let layer = MemoryLayer::new();
    layer.fail_fetches(Some(ErrorKind::Unauthorized));
    let mut layers = layers_over(&f, &layer);
    layers.lookup(&"e".repeat(64), &|_| true).expect("lookup");
    let warnings = layers.take_warnings();
    assert_eq!(
        warnings[0].hint.as_deref(),
        Some("check the token in $VX_REMOTE_CACHE_TOKEN")
    );
}

#[test]
fn withheld_and_tainted_results_are_never_uploaded() {
    let f = workspace();
    let layer = MemoryLayer::new();
    // lib#build rewrites its own input while it runs: its result is kept but not saved
    // (KEY-16), and app#build, which folds it, is not saved either.
    let executor = ScriptedExecutor::new()
        .on("make-lib", "lib built\n", 0)
        .writes("make-lib", "dist/out.txt", b"lib output\n")
        .writes("make-lib", "src/in.txt", b"rewritten\n")
        .on("make-app", "app built\n", 0);
    let (code, reports) = run(&f, &executor, &layer, true, true);
    assert_eq!(code, crate::exit::SUCCESS);
    assert_eq!(kind_of(&reports, "lib#build"), Some(CacheKind::Miss));
    assert!(layer.puts().is_empty(), "{:?}", layer.puts());
}

/// Starts the prefetch of `keys` (all accepted) and waits until every download it started
/// has ended; returns the tags the prefetch took.
fn prefetch_all(
    layers: &mut Layers,
    keys: &[String],
    accept: vx_store::layer::Accept,
) -> Vec<usize> {
    let (tx, rx) = std::sync::mpsc::channel();
    let wanted = keys
        .iter()
        .enumerate()
        .map(|(tag, key)| vx_store::layer::Wanted {
            key: key.clone(),
            accept: Arc::clone(&accept),
            tag,
        })
        .collect();
    let tx = std::sync::Mutex::new(tx);
    let tags = layers.prefetch(
        wanted,
        Box::new(move |tag| {
            let _ = tx.lock().unwrap().send(tag);
        }),
    );
    let mut ended: Vec<usize> = (0..tags.len())
        .map(|_| {
            rx.recv_timeout(std::time::Duration::from_secs(30))
                .expect("ready")
        })
        .collect();
    ended.sort_unstable();
    assert_eq!(ended, tags, "each download taken ends with one ready call");
    tags
}

/// The workspace built once with an in-memory layer behind it, then its local cache removed:
/// every result is only in the layer. Returns the layers of a new run over it.
fn only_the_layer_holds_the_results() -> (Fixture, MemoryLayer, Layers) {
    let f = workspace();
    let layer = MemoryLayer::new();
    run(&f, &executor(), &layer, true, true);
    std::fs::remove_dir_all(f.path(".vx")).unwrap();
    let layers = layers_over(&f, &layer);
    (f, layer, layers)
}

/// A layer whose downloads panic.
struct PanickingLayer;

impl vx_store::CacheLayer for PanickingLayer {
    fn name(&self) -> &str {
        "panicking"
    }

    fn contains(&self, _: &str) -> Result<bool, vx_store::LayerError> {
        Ok(true)
    }

    fn fetch(&self, _: &str, _: &std::path::Path, _: u64) -> Result<bool, vx_store::LayerError> {
        panic!("a layer bug");
    }

    fn put(&self, _: &str, _: &std::path::Path, _: u64) -> Result<(), vx_store::LayerError> {
        Ok(())
    }
}

#[test]
fn a_download_thread_that_panics_still_ends_its_download() {
    // The run loop holds a task until its download ends; a bug in a layer must not hold it
    // forever, nor a lookup waiting for that key.
    let (f, layer, _) = only_the_layer_holds_the_results();
    let store = Store::open(&f.path(".vx"), Access::ReadWrite).expect("open");
    let mut layers = Layers::local(Some(store));
    layers.add_remote(Arc::new(PanickingLayer), usage(true, false), 1);
    let keys = layer.results();
    prefetch_all(&mut layers, &keys, Arc::new(|_: &str| true));
    for key in &keys {
        let (lookup, _) = layers.lookup(key, &|_| true).expect("lookup");
        assert_eq!(lookup, Lookup::Miss);
    }
    assert!(tmp_files(&f).is_empty(), "{:?}", tmp_files(&f));
}

/// The files in the store's `tmp/`.
fn tmp_files(f: &Fixture) -> Vec<std::ffi::OsString> {
    std::fs::read_dir(f.path(".vx/tmp"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default()
}

#[test]
fn prefetched_bodies_are_adopted_by_their_lookup_without_asking_again() {
    let (f, layer, mut layers) = only_the_layer_holds_the_results();
    let mut keys = layer.results();
    keys.push("0".repeat(64));
    let before = layer.fetches();
    let tags = prefetch_all(&mut layers, &keys, Arc::new(|_: &str| true));
    assert_eq!(tags, vec![0, 1, 2]);
    assert_eq!(layer.fetches() - before, 3, "every key asked once");
    for key in layer.results() {
        let (lookup, source) = layers.lookup(&key, &|_| true).expect("lookup");
        assert!(
            matches!(lookup, Lookup::Hit(_)),
            "{lookup:?} {:?}",
            layers.take_warnings()
        );
        assert_eq!(source, Source::Remote);
        // Adopted into the local store: the next lookup is a local hit.
        let (lookup, source) = layers.lookup(&key, &|_| true).expect("lookup");
        assert!(matches!(lookup, Lookup::Hit(_)), "{lookup:?}");
        assert_eq!(source, Source::Local);
    }
    let (lookup, _) = layers.lookup(&"0".repeat(64), &|_| true).expect("lookup");
    assert_eq!(lookup, Lookup::Miss);
    assert_eq!(layer.fetches() - before, 3, "no lookup asked again");
    // Their rows are written by the batch, at the latest with the run's last writes.
    layers
        .store_mut()
        .unwrap()
        .flush_touches()
        .expect("written");
    for key in layer.results() {
        assert_eq!(origin(&f, &key).as_deref(), Some("remote"));
    }
}

#[test]
fn a_prefetched_body_is_validated_with_its_tasks_outputs_before_adoption() {
    let (f, layer, mut layers) = only_the_layer_holds_the_results();
    let keys = layer.results();
    // The tasks' outputs no longer match what the bodies hold: a lying entry.
    prefetch_all(&mut layers, &keys, Arc::new(|_: &str| false));
    for key in &keys {
        let (lookup, _) = layers.lookup(key, &|_| true).expect("lookup");
        assert_eq!(lookup, Lookup::Miss, "not adopted");
        assert!(!layers.store().unwrap().has_entry(key));
    }
    let warnings = layers.take_warnings();
    assert_eq!(warnings.len(), 1, "one class, warned once: {warnings:?}");
    assert!(
        warnings[0].line.contains("invalid artifact"),
        "{warnings:?}"
    );
    let tmp = tmp_files(&f);
    assert!(tmp.is_empty(), "no body left behind: {tmp:?}");
}

#[test]
fn bodies_no_lookup_took_are_removed_with_the_run() {
    let (f, layer, mut layers) = only_the_layer_holds_the_results();
    prefetch_all(&mut layers, &layer.results(), Arc::new(|_: &str| true));
    layers.discard_prefetched();
    for key in layer.results() {
        assert!(!layers.store().unwrap().has_entry(&key));
    }
    let tmp = tmp_files(&f);
    assert!(tmp.is_empty(), "{tmp:?}");
}

#[test]
fn layers_off_miss_and_drop_every_write() {
    let mut layers = Layers::off();
    let (lookup, _) = layers.lookup(&"f".repeat(64), &|_| true).expect("lookup");
    assert_eq!(lookup, Lookup::Miss);
    assert!(layers.exists(&"f".repeat(64)).is_none());
    layers.upload(&"f".repeat(64), 1);
    assert_eq!(layers.uploads_pending(), 0);
    assert!(!layers.enabled());
}
