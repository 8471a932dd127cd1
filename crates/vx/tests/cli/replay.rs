//! Run snapshots (`vx-engine/src/snapshot.rs`, PERF-1): a command whose last run found everything up to
//! date is replayed while nothing it read has moved, and goes the whole way as soon as
//! anything did — each kind of file a run reads is edited here once.
//!
//! A snapshot is written only when everything it records is older than the racy margin at the
//! start of the run (100 ms where file times have fractions of a second, else 2 s), so these
//! tests wait 2 s before the run that writes it.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use vx_test_support::fixture::{Fixture, Output};

use crate::assert_contains;
use crate::cache::wc;

/// Longer than the racy margin on any file system: what was written before is old enough to be
/// recorded.
fn settle() {
    std::thread::sleep(Duration::from_millis(2_200));
}

/// The run id the last recorded run replays, if it was a replay.
fn replay_of(f: &Fixture) -> Option<String> {
    let last = f.vx(&["last", "--format", "json"]);
    assert_eq!(last.code, 0, "{}{}", last.stdout, last.stderr);
    let json: serde_json::Value = serde_json::from_str(&last.stdout).unwrap();
    json["invocation"]["replay_of"].as_str().map(str::to_string)
}

fn ok(run: &Output) {
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

/// Fixture W with caches, without its one uncached task (`docs#build`): a run that executes
/// anything is not replayed.
fn cached() -> Fixture {
    let f = wc();
    f.write("packages/docs/vx.toml", "");
    f.commit();
    f
}

/// `vx run build --all` on [`cached`], run until its snapshot holds: executed, settled, up to
/// date (the snapshot is written), replayed.
fn replaying() -> Fixture {
    replaying_from(cached())
}

/// [`replaying`] from a fixture of the caller's.
fn replaying_from(f: Fixture) -> Fixture {
    ok(&f.vx(&["run", "build", "--all"]));
    settle();
    let writes = f.vx(&["run", "build", "--all"]);
    ok(&writes);
    assert_contains(&writes.stdout, "cache      2 up-to-date\n");
    assert_eq!(
        replay_of(&f),
        None,
        "the run that writes the snapshot goes the whole way"
    );
    let replayed = f.vx(&["run", "build", "--all"]);
    ok(&replayed);
    assert!(replay_of(&f).is_some(), "replayed:\n{}", replayed.stdout);
    f
}

/// After a change: settled, the snapshot written again, and replayed.
fn replaying_again(f: &Fixture) {
    settle();
    ok(&f.vx(&["run", "build", "--all"]));
    ok(&f.vx(&["run", "build", "--all"]));
    assert!(replay_of(f).is_some());
}

/// Runs `vx run build --all` after a change: it must go the whole way (no replay) and, when
/// given, print this cache line.
fn whole_way(f: &Fixture, cache_line: Option<&str>) -> Output {
    let run = f.vx(&["run", "build", "--all"]);
    ok(&run);
    if let Some(line) = cache_line {
        assert_contains(&run.stdout, line);
    }
    assert_eq!(replay_of(f), None, "{}", run.stdout);
    run
}

/// The footer without its times.
fn timeless(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("time ") && !l.starts_with("result "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_run_with_nothing_changed_is_replayed_with_the_same_footer_and_history() {
    let f = cached();
    ok(&f.vx(&["run", "build", "--all"]));
    settle();
    let whole = f.vx(&["run", "build", "--all"]);
    ok(&whole);
    let repeated = f.vx(&["last", "--format", "json"]);
    let repeated: serde_json::Value = serde_json::from_str(&repeated.stdout).unwrap();
    let repeated_id = repeated["invocation"]["run_id"]
        .as_str()
        .unwrap()
        .to_string();

    let replayed = f.vx(&["run", "build", "--all"]);
    ok(&replayed);
    assert_eq!(timeless(&replayed.stdout), timeless(&whole.stdout));
    assert_eq!(replayed.stderr, whole.stderr);
    assert_contains(&replayed.stdout, "result     2 tasks · 2 cached (100%)");
    assert_eq!(replay_of(&f).as_deref(), Some(repeated_id.as_str()));
    // `vx last` says so and lists the repeated run's tasks.
    let last = f.vx(&["last"]);
    ok(&last);
    let short: String = repeated_id.replace('-', "").chars().take(12).collect();
    assert_contains(
        &last.stdout,
        &format!("replay     of run {short} · nothing it read had changed\n"),
    );
    assert_contains(&last.stdout, "app#build");
    assert_contains(&last.stdout, "lib#build");
    // Every replay is a run of its own in the list.
    let list = f.vx(&["last", "--list", "--format", "json"]);
    let list: serde_json::Value = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(list["runs"].as_array().unwrap().len(), 3);
    // The outputs were not touched.
    assert_eq!(f.read("packages/app/dist/app.txt"), "a\nb\n");

    // Another command, another working directory or another environment is another request.
    let other = f.vx(&["run", "build", "--all", "--concurrency", "1"]);
    ok(&other);
    assert_eq!(replay_of(&f), None, "other arguments");
    let elsewhere = f.vx_in("packages", &["run", "build", "--all"], &[]);
    ok(&elsewhere);
    assert_eq!(replay_of(&f), None, "another directory");
    let env = f.vx_in("", &["run", "build", "--all"], &[("SOMETHING", "else")]);
    ok(&env);
    assert_eq!(replay_of(&f), None, "another environment");
    // `VX_SNAPSHOT=0` never replays.
    for _ in 0..2 {
        ok(&f.vx_in("", &["run", "build", "--all"], &[("VX_SNAPSHOT", "0")]));
        assert_eq!(replay_of(&f), None, "VX_SNAPSHOT=0");
    }
}

#[test]
fn an_input_rewritten_with_its_size_and_mtime_kept_is_noticed() {
    let f = replaying();
    let src = f.path("packages/lib/src/a.txt");
    let before = std::fs::metadata(&src).unwrap();
    std::fs::write(&src, "A\n").unwrap();
    // Same size, and the mtime set back: only the ctime tells.
    let mtime = filetime(&before);
    set_mtime(&src, mtime);
    whole_way(&f, Some("cache      2 miss\n"));
    assert_eq!(f.read("packages/app/dist/app.txt"), "A\nb\n");
    assert_eq!(replay_of(&f), None);
}

#[test]
fn a_new_input_file_is_noticed() {
    let f = replaying();
    f.write("packages/lib/src/more.txt", "more\n");
    // `VX_LOG` is not part of the request, and its debug level names what moved.
    let run = f.vx_in(
        "",
        &["run", "build", "--all"],
        &[("VX_LOG", "vx::snapshot=debug")],
    );
    ok(&run);
    assert_contains(&run.stderr, "vx::snapshot: moved: ");
    assert_contains(&run.stderr, "packages/lib/src\n");
    assert_contains(&run.stdout, "cache      2 miss\n");
    assert_eq!(f.read("packages/lib/dist/out.txt"), "a\nmore\n");
}

#[test]
fn a_changed_configuration_file_is_noticed() {
    let f = replaying();
    crate::cache::lib_build(
        &f,
        "mkdir -p dist && cat src/*.txt > dist/out.txt && echo changed >> dist/out.txt",
    );
    whole_way(&f, Some("cache      2 miss\n"));
    assert_eq!(f.read("packages/lib/dist/out.txt"), "a\nchanged\n");
}

#[test]
fn a_deleted_rewritten_or_added_output_is_noticed() {
    let f = replaying();
    std::fs::remove_file(f.path("packages/app/dist/app.txt")).unwrap();
    whole_way(&f, Some("1 local"));
    assert_eq!(f.read("packages/app/dist/app.txt"), "a\nb\n");

    // The same bytes' length, the mtime set back.
    replaying_again(&f);
    let out = f.path("packages/lib/dist/out.txt");
    let before = std::fs::metadata(&out).unwrap();
    std::fs::write(&out, "X\n").unwrap();
    set_mtime(&out, filetime(&before));
    whole_way(&f, Some("1 local"));
    assert_eq!(f.read("packages/lib/dist/out.txt"), "a\n");

    // A stray file in an output directory: the entry is restored without it.
    replaying_again(&f);
    f.write("packages/lib/dist/stray.txt", "stray\n");
    whole_way(&f, Some("1 local"));
    assert!(!f.path("packages/lib/dist/stray.txt").exists());

    // A mode change alone.
    replaying_again(&f);
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o600)).unwrap();
    whole_way(&f, Some("1 local"));
}

#[test]
fn a_changed_gitignore_or_index_is_noticed() {
    let f = replaying();
    // A new `.gitignore` (it ignores nothing that matters: the run is still up to date, but it
    // is not a replay).
    f.write("packages/lib/.gitignore", "*.log\n");
    whole_way(&f, Some("cache      2 up-to-date\n"));

    // An edited one that un-ignores an output directory: its files are listed now.
    replaying_again(&f);
    f.write(".gitignore", ".vx/\n");
    whole_way(&f, None);

    // Only the index written (`git add` of a file removed again).
    f.write(".gitignore", "dist/\n.vx/\n");
    replaying_again(&f);
    f.write("packages/lib/notes.md", "notes\n");
    f.git(&["add", "packages/lib/notes.md"]);
    std::fs::remove_file(f.path("packages/lib/notes.md")).unwrap();
    whole_way(&f, None);
}

#[test]
fn a_pruned_or_deleted_cache_is_noticed() {
    let f = replaying();
    let prune = f.vx(&["cache", "prune", "--max-size", "1B"]);
    ok(&prune);
    whole_way(&f, Some("cache      2 miss\n"));

    replaying_again(&f);
    // The index deleted (the artifacts stay): a new index has a new salt.
    for file in ["cache.db", "cache.db-wal", "cache.db-shm"] {
        let _ = std::fs::remove_file(f.path(".vx").join(file));
    }
    whole_way(&f, Some("cache      2 local\n"));
}

#[test]
fn a_key_environment_variable_is_part_of_the_request() {
    let f = cached();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"mkdir -p dist && echo $MODE > dist/out.txt\"\ncache = { inputs = [\"src/**\"], outputs = [\"dist/**\"], env = [\"MODE\"] }\nenv = { pass-through = [\"MODE\"] }\n",
    );
    f.commit();
    let run = |mode: &str| f.vx_in("", &["run", "build", "--all"], &[("MODE", mode)]);
    ok(&run("a"));
    settle();
    ok(&run("a"));
    ok(&run("a"));
    assert!(replay_of(&f).is_some());
    let other = run("b");
    ok(&other);
    assert_contains(&other.stdout, "2 miss");
    assert_eq!(f.read("packages/lib/dist/out.txt"), "b\n");
}

/// The racy rule: while a recorded file keeps changing (a loop touching an input every 10 ms
/// as the runs go), every run finds everything up to date but writes no snapshot; once it
/// stops, a run a moment later writes one (on a file system that keeps fractions of a second
/// the margin is 100 ms, not 2 s) and the next is replayed.
#[test]
fn a_run_while_a_file_changes_writes_no_snapshot() {
    let f = cached();
    ok(&f.vx(&["run", "build", "--all"]));
    let source = f.path("packages/lib/src/a.txt");
    assert!(source.exists());
    let mut toucher = std::process::Command::new("sh")
        .arg("-c")
        .arg("while :; do touch \"$0\"; sleep 0.01; done")
        .arg(&source)
        .spawn()
        .unwrap();
    for _ in 0..3 {
        let run = f.vx(&["run", "build", "--all"]);
        ok(&run);
        assert_contains(&run.stdout, "cache      2 up-to-date\n");
        assert_eq!(replay_of(&f), None);
    }
    toucher.kill().unwrap();
    toucher.wait().unwrap();
    assert!(
        !f.path(".vx/snapshots").exists()
            || std::fs::read_dir(f.path(".vx/snapshots")).unwrap().count() == 0
    );
    std::thread::sleep(Duration::from_millis(300));
    ok(&f.vx(&["run", "build", "--all"]));
    assert_eq!(replay_of(&f), None, "the run that writes the snapshot");
    let replayed = f.vx(&["run", "build", "--all"]);
    ok(&replayed);
    assert!(replay_of(&f).is_some(), "{}", replayed.stdout);
}

/// The footer without its times, and each frame's closing line without the time serving the
/// hit took (`└─ lib#build  (0ms)  success`).
fn untimed(text: &str) -> String {
    timeless(text)
        .lines()
        .map(|l| match (l.starts_with("└─ "), l.find("  (")) {
            (true, Some(at)) => format!("{}  ({})", &l[..at], l.rsplit("  ").next().unwrap()),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The focused flow shows a requested hit's frame with its log. The snapshot keeps that log,
/// and the replay prints the same frames (before, a run that showed any output went the whole
/// way every time: `vx run build` in a project never replayed).
#[test]
fn a_focused_run_replays_its_hits_logs() {
    let f = cached();
    ok(&f.vx_in("packages/app", &["run", "build"], &[]));
    settle();
    let writes = f.vx_in("packages/app", &["run", "build"], &[]);
    ok(&writes);
    assert_contains(&writes.stdout, "┌─ app#build  up-to-date · ");
    assert_contains(&writes.stdout, "built app");
    assert_eq!(replay_of(&f), None);
    for _ in 0..2 {
        let replayed = f.vx_in("packages/app", &["run", "build"], &[]);
        ok(&replayed);
        assert!(replay_of(&f).is_some(), "replayed:\n{}", replayed.stdout);
        assert_eq!(untimed(&replayed.stdout), untimed(&writes.stdout));
        assert_eq!(replayed.stderr, writes.stderr);
    }
    // `--output-logs=hash-only` prints each hit's one-liner with its key: replayed too.
    let hashes = || {
        f.vx_in(
            "packages/app",
            &["run", "build", "--output-logs=hash-only"],
            &[],
        )
    };
    let writes = hashes();
    ok(&writes);
    assert_contains(&writes.stdout, "lib#build");
    let replayed = hashes();
    assert!(replay_of(&f).is_some(), "replayed:\n{}", replayed.stdout);
    assert_eq!(untimed(&replayed.stdout), untimed(&writes.stdout));
}

/// The CI flow prints a frame for every hit with a log: replayed the same. Under GitHub
/// Actions the frames are fenced with a token random per run, so that run is never replayed.
#[test]
fn the_ci_flows_hit_frames_are_replayed_but_not_github_actions_groups() {
    let f = cached();
    let ci = [("CI", "true")];
    ok(&f.vx_in("", &["run", "build", "--all"], &ci));
    settle();
    let writes = f.vx_in("", &["run", "build", "--all"], &ci);
    ok(&writes);
    assert_contains(&writes.stdout, "┌─ lib#build  up-to-date · ");
    assert_contains(&writes.stdout, "┌─ app#build  up-to-date · ");
    assert_eq!(replay_of(&f), None);
    let replayed = f.vx_in("", &["run", "build", "--all"], &ci);
    ok(&replayed);
    assert!(replay_of(&f).is_some(), "replayed:\n{}", replayed.stdout);
    assert_eq!(untimed(&replayed.stdout), untimed(&writes.stdout));

    let github = [("CI", "true"), ("GITHUB_ACTIONS", "true")];
    for _ in 0..3 {
        let run = f.vx_in("", &["run", "build", "--all"], &github);
        ok(&run);
        assert_contains(&run.stdout, "::group::");
        assert_eq!(replay_of(&f), None);
    }
}

/// A hit whose log is longer than a snapshot keeps (4 MiB) is printed by a run that goes the
/// whole way each time.
#[test]
fn a_hit_log_too_long_to_keep_is_never_replayed() {
    let f = cached();
    crate::cache::lib_build(
        &f,
        "mkdir -p dist; echo x > dist/out.txt; head -c 5000000 /dev/zero | tr '\\0' x; echo",
    );
    ok(&f.vx_in("packages/lib", &["run", "build"], &[]));
    settle();
    for _ in 0..2 {
        let run = f.vx_in("packages/lib", &["run", "build"], &[]);
        ok(&run);
        assert_contains(&run.stdout, "┌─ lib#build  up-to-date · ");
        assert!(run.stdout.len() > 5_000_000);
        assert_eq!(replay_of(&f), None);
    }
}

fn filetime(meta: &std::fs::Metadata) -> (i64, i64) {
    use std::os::unix::fs::MetadataExt;
    (meta.mtime(), meta.mtime_nsec())
}

/// Sets a file's mtime with `touch -d` (what a tool that preserves times does).
fn set_mtime(path: &std::path::Path, (secs, nanos): (i64, i64)) {
    let status = std::process::Command::new("touch")
        .arg("-m")
        .arg("-d")
        .arg(format!("@{secs}.{nanos:09}"))
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn an_ignored_file_a_key_folds_is_recorded() {
    // `.npmrc` is git-ignored (it may hold a token) and folded into every key.
    let f = cached();
    f.write(".gitignore", "dist/\n.vx/\n.npmrc\n");
    f.write(".npmrc", "registry=https://a.example\n");
    f.commit();
    let f = replaying_from(f);
    std::fs::write(f.path(".npmrc"), "registry=https://b.example\n").unwrap();
    whole_way(&f, Some("cache      2 miss\n"));
}

#[test]
fn a_deleted_artifact_is_noticed() {
    let f = replaying();
    for artifact in crate::cache::artifacts(&f) {
        std::fs::remove_file(artifact).unwrap();
    }
    whole_way(&f, Some("cache      2 miss\n"));
}

#[test]
fn an_ignore_file_read_through_a_link_is_followed() {
    // `.git/info/exclude` kept elsewhere (a dotfiles manager's link), edited in place there.
    let outside = tempfile::tempdir().unwrap();
    let rules = outside.path().join("exclude");
    std::fs::write(&rules, "*.tmp\n").unwrap();
    let f = cached();
    let exclude = f.path(".git/info/exclude");
    let _ = std::fs::remove_file(&exclude);
    std::fs::create_dir_all(exclude.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&rules, &exclude).unwrap();
    // Excluded through the link: not an input.
    f.write("packages/lib/src/x.tmp", "x\n");
    let f = replaying_from(f);
    // The rules change behind the link: `x.tmp` is an input now (lib#build runs again, to the
    // same outputs: app#build is cut off).
    std::fs::write(&rules, "*.log\n").unwrap();
    whole_way(
        &f,
        Some("cache      1 miss · 1 up-to-date · cut off: 1 task\n"),
    );
}

#[test]
fn a_new_project_in_an_ignored_directory_is_noticed() {
    let f = cached();
    f.write(".gitignore", "dist/\n.vx/\npackages/scratch/\n");
    f.write("packages/scratch/notes.txt", "scratch\n");
    f.commit();
    let f = replaying_from(f);
    f.write("packages/scratch/package.json", r#"{ "name": "scratch" }"#);
    whole_way(&f, Some("projects   2 in run · 4 in workspace\n"));
}

#[test]
fn tasks_with_runtime_probes_are_never_replayed() {
    let f = cached();
    f.write(
        "packages/lib/vx.toml",
        concat!(
            "[tasks.build]\n",
            "command = \"mkdir -p dist && cat src/*.txt > dist/out.txt\"\n",
            "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"], runtime = [\"echo v1\"] }\n",
        ),
    );
    f.commit();
    ok(&f.vx(&["run", "build", "--all"]));
    settle();
    for _ in 0..2 {
        let run = f.vx(&["run", "build", "--all"]);
        ok(&run);
        assert_contains(&run.stdout, "cache      2 up-to-date\n");
        assert_eq!(replay_of(&f), None);
    }
}

/// A run at the root of a workspace whose root declares no `build` prints a note (`running it
/// in every project`) above its footer. That note is part of the plan, and the plan's files are
/// recorded: the run is replayed all the same, and the replay says the note again. (Before,
/// any plan note turned the snapshot off, so `vx run build` at such a root never replayed.)
#[test]
fn a_plan_note_is_said_again_by_the_replay() {
    let f = cached();
    let note = "the workspace root declares no task `build`";
    ok(&f.vx(&["run", "build", "--output-logs=errors-only"]));
    settle();
    let writes = f.vx(&["run", "build", "--output-logs=errors-only"]);
    ok(&writes);
    assert_contains(&writes.stderr, note);
    assert_eq!(replay_of(&f), None);
    let replayed = f.vx(&["run", "build", "--output-logs=errors-only"]);
    ok(&replayed);
    assert!(
        replay_of(&f).is_some(),
        "replayed:\n{}{}",
        replayed.stdout,
        replayed.stderr
    );
    assert_contains(&replayed.stderr, note);
    assert_eq!(timeless(&replayed.stdout), timeless(&writes.stdout));
}

/// A run with `VX_LOG=vx::snapshot=debug`, to see what the snapshot's check found.
fn logged(f: &Fixture) -> Output {
    let run = f.vx_in(
        "",
        &["run", "build", "--all"],
        &[("VX_LOG", "vx::snapshot=debug")],
    );
    ok(&run);
    run
}

/// A source whose times moved but whose bytes did not (`touch`, a file written again in place
/// with the same bytes) is hashed again and the run is still replayed; the snapshot then takes
/// its new stat data, so the next run hashes nothing. The same bytes with another mode, a
/// configuration file or a manifest (which a key folds too) written again, or a source saved
/// by writing a new file over it (its directory moves), go the whole way.
#[test]
fn an_input_written_again_with_the_same_bytes_is_still_replayed() {
    let f = replaying();
    let src = f.path("packages/lib/src/a.txt");
    let bytes = std::fs::read(&src).unwrap();
    for _ in 0..2 {
        std::fs::write(&src, &bytes).unwrap();
        // Older than the racy margin (100 ms here) when the run starts: written down.
        std::thread::sleep(Duration::from_millis(300));
        let run = logged(&f);
        assert!(replay_of(&f).is_some(), "{}{}", run.stdout, run.stderr);
        assert_contains(&run.stderr, "vx::snapshot: times moved: ");
        assert_contains(&run.stderr, "packages/lib/src/a.txt\n");
        let again = logged(&f);
        assert!(replay_of(&f).is_some(), "{}{}", again.stdout, again.stderr);
        assert!(
            !again.stderr.contains("times moved"),
            "hashed again:\n{}",
            again.stderr
        );
    }
    // Written just before the run: replayed, but its stat data are too recent to write down,
    // so the next run hashes it again.
    std::fs::write(&src, &bytes).unwrap();
    let run = logged(&f);
    assert!(replay_of(&f).is_some(), "{}", run.stderr);
    assert_contains(&logged(&f).stderr, "vx::snapshot: times moved: ");
    assert!(replay_of(&f).is_some());
    assert_eq!(f.read("packages/app/dist/app.txt"), "a\nb\n");

    // The same bytes, executable: another key for lib#build (app#build cut off: lib's
    // outputs are the same).
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o755)).unwrap();
    whole_way(
        &f,
        Some("cache      1 miss · 1 up-to-date · cut off: 1 task\n"),
    );
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o644)).unwrap();
    whole_way(&f, None);
    replaying_again(&f);

    // A configuration file, or a manifest a key folds, is never judged by its bytes alone.
    for file in ["packages/lib/vx.toml", "packages/lib/package.json"] {
        let path = f.path(file);
        std::fs::write(&path, std::fs::read(&path).unwrap()).unwrap();
        let run = logged(&f);
        assert_eq!(replay_of(&f), None, "{}", run.stderr);
        assert_contains(&run.stderr, "vx::snapshot: moved: ");
        assert_contains(&run.stderr, &format!("{file}\n"));
        replaying_again(&f);
    }

    // Saved as editors that write a new file and rename it over the old one do.
    let temp = f.path("packages/lib/src/.a.txt.swp");
    std::fs::write(&temp, &bytes).unwrap();
    std::fs::rename(&temp, &src).unwrap();
    let run = logged(&f);
    assert_eq!(replay_of(&f), None, "{}", run.stderr);
    assert_contains(&run.stderr, "packages/lib/src\n");
}

/// Another process rewrites a source in a loop while runs go — with the same bytes, then
/// flipping between two contents — and stops; the run after it has the result of the bytes
/// the file holds then, every time, whether it was replayed or not.
#[test]
fn a_source_rewritten_in_a_loop_while_runs_go_never_leaves_a_stale_result() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let f = replaying();
    let src = f.path("packages/lib/src/a.txt");
    let mut replays = 0;
    for round in 0..6 {
        let flip = round % 2 == 1;
        let stop = Arc::new(AtomicBool::new(false));
        let racer = {
            let (stop, src) = (Arc::clone(&stop), src.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let text = if flip && n % 2 == 1 { "A\n" } else { "a\n" };
                    std::fs::write(&src, text).unwrap();
                    n += 1;
                    std::thread::sleep(Duration::from_millis(2));
                }
            })
        };
        for _ in 0..2 {
            ok(&f.vx(&["run", "build", "--all"]));
        }
        stop.store(true, Ordering::Relaxed);
        racer.join().unwrap();
        let last = if round % 3 == 2 { "A\n" } else { "a\n" };
        std::fs::write(&src, last).unwrap();
        std::thread::sleep(Duration::from_millis(150));
        for _ in 0..3 {
            ok(&f.vx(&["run", "build", "--all"]));
            replays += usize::from(replay_of(&f).is_some());
            assert_eq!(f.read("packages/lib/dist/out.txt"), last, "round {round}");
            assert_eq!(
                f.read("packages/app/dist/app.txt"),
                format!("{last}b\n"),
                "round {round}"
            );
        }
    }
    assert!(replays > 0, "never replayed");
}
