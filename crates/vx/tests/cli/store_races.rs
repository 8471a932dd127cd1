//! Reliability round 3 on the real binary: what a crash, a racing process or a
//! hostile entry can no longer do to the store and the outputs. Races loop the swap many times
//! and must never win.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::guard::spawn_vx;
use crate::one_project;

/// The staging files in `<root>/.vx/tmp`.
fn pack_temps(root: &Path) -> Vec<String> {
    std::fs::read_dir(root.join(".vx/tmp"))
        .map(|dir| {
            dir.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with("pack-"))
                .collect()
        })
        .unwrap_or_default()
}

/// A `kill -9` during a pack leaves `pack-<pid>-<n>.tmp`; `vx info` counts it
/// at once (not after an hour) and the next run removes it.
#[test]
fn a_pack_killed_mid_way_leaves_a_file_that_info_counts_and_the_next_run_removes() {
    let f = one_project(concat!(
        "[tasks.big]\n",
        "command = 'mkdir -p out && head -c 150000000 /dev/urandom > out/big'\n",
        "cache = { inputs = ['src/**'], outputs = ['out/**'] }\n\n",
        "[tasks.small]\ncommand = 'echo small'\n",
    ));
    f.write(".gitignore", ".vx/\nout/\n");
    f.write("packages/lib/src/a.txt", "a\n");
    f.commit();
    assert_eq!(f.vx(&["run", "lib#small"]).code, 0);
    let mut left = Vec::new();
    for _ in 0..5 {
        let vx = spawn_vx(&f, &["run", "lib#big"], false);
        let deadline = Instant::now() + Duration::from_secs(60);
        let packing = |root: &Path| {
            pack_temps(root).iter().any(|name| {
                std::fs::metadata(root.join(".vx/tmp").join(name)).is_ok_and(|m| m.len() > 0)
            })
        };
        while !packing(f.root()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        let mut child = vx.take();
        let _ = child.kill();
        let _ = child.wait();
        left = pack_temps(f.root());
        if !left.is_empty() {
            break;
        }
    }
    assert!(!left.is_empty(), "no pack was caught in flight in 5 tries");
    let info = f.vx(&["info", "--format", "json"]);
    assert_eq!(info.code, 0, "{}", info.stderr);
    let info: serde_json::Value = serde_json::from_str(&info.stdout).unwrap();
    assert_eq!(
        info["cache"]["orphaned_files"],
        left.len() as u64,
        "{left:?}: {info}"
    );
    assert!(
        info["cache"]["orphaned_bytes"].as_u64().unwrap() > 0,
        "{info}"
    );
    let out = f.vx(&["run", "lib#small"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(pack_temps(f.root()), Vec::<String>::new());
}

/// The one artifact in the fixture's local store.
fn only_artifact(root: &Path) -> std::path::PathBuf {
    let mut found: Vec<_> = std::fs::read_dir(root.join(".vx/artifacts"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".tar.zst"))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found.pop().unwrap()
}

/// Rewrites a well-formed artifact with `edit` applied to its `meta.json`, the digest made
/// anew: what any writer of an unsigned cache can do.
fn forge(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    forge_dropping(path, &[], edit);
}

/// [`forge`], leaving out the tar entries named in `drop` (a file made a symlink has none).
fn forge_dropping(path: &Path, drop: &[&str], edit: impl FnOnce(&mut serde_json::Value)) {
    let bytes = zstd::decode_all(std::fs::File::open(path).unwrap()).unwrap();
    let mut archive = tar::Archive::new(bytes.as_slice());
    let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mut body = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut body).unwrap();
        entries.push((name, body));
    }
    assert_eq!(entries.pop().unwrap().0, "digest");
    entries.retain(|(name, _)| !drop.contains(&name.as_str()));
    let meta = entries.iter_mut().find(|(n, _)| n == "meta.json").unwrap();
    let mut json: serde_json::Value = serde_json::from_slice(&meta.1).unwrap();
    edit(&mut json);
    meta.1 = serde_json::to_vec(&json).unwrap();
    let mut digest = blake3::Hasher::new();
    for (name, body) in &entries {
        digest.update(&(name.len() as u64).to_le_bytes());
        digest.update(name.as_bytes());
        digest.update(&(body.len() as u64).to_le_bytes());
        digest.update(body);
    }
    let hex = digest.finalize().to_hex().to_string();
    entries.push(("digest".into(), hex.into_bytes()));
    let mut tar = tar::Builder::new(Vec::new());
    for (name, body) in &entries {
        let mut header = tar::Header::new_ustar();
        header.set_path(name).unwrap();
        header.set_size(body.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        tar.append(&header, body.as_slice()).unwrap();
    }
    let archive = zstd::encode_all(tar.into_inner().unwrap().as_slice(), 3).unwrap();
    std::fs::write(path, archive).unwrap();
}

fn mode_of(path: &Path) -> u32 {
    std::os::unix::fs::MetadataExt::mode(&std::fs::symlink_metadata(path).unwrap())
}

/// A task that leaves a setuid/setgid file among its outputs has the bits
/// removed on disk before the save, said once; a forged entry asking for them restores
/// without them, said once.
#[test]
fn outputs_never_carry_setuid_or_setgid_bits_made_or_restored() {
    let f = one_project(concat!(
        "[tasks.build]\n",
        "command = 'mkdir -p out && cp /bin/sh out/sh && chmod 6755 out/sh && echo t > out/tool && chmod 755 out/tool'\n",
        "cache = { inputs = ['src/**'], outputs = ['out/**'] }\n",
    ));
    f.write(".gitignore", ".vx/\nout/\n");
    f.write("packages/lib/src/a.txt", "a\n");
    f.commit();
    let built = f.vx(&["run", "lib#build"]);
    assert_eq!(built.code, 0, "{}{}", built.stdout, built.stderr);
    let text = format!("{}{}", built.stdout, built.stderr);
    crate::assert_contains(
        &text,
        "lib#build: removed the setuid/setgid bits of `packages/lib/out/sh`: outputs never carry them",
    );
    assert_eq!(mode_of(&f.path("packages/lib/out/sh")) & 0o7777, 0o755);
    std::fs::remove_dir_all(f.path("packages/lib/out")).unwrap();
    let restored = f.vx(&["run", "lib#build"]);
    assert_eq!(restored.code, 0, "{}{}", restored.stdout, restored.stderr);
    assert_eq!(mode_of(&f.path("packages/lib/out/sh")) & 0o7777, 0o755);

    // A forged entry: `out/tool` stored as 0106755.
    forge(&only_artifact(f.root()), |meta| {
        meta["files"]["outputs/out/tool"]["mode"] = serde_json::json!(0o106755);
    });
    std::fs::remove_dir_all(f.path("packages/lib/out")).unwrap();
    let forged = f.vx(&["run", "lib#build"]);
    assert_eq!(forged.code, 0, "{}{}", forged.stdout, forged.stderr);
    let text = format!("{}{}", forged.stdout, forged.stderr);
    crate::assert_contains(&text, "restored without them");
    assert_eq!(mode_of(&f.path("packages/lib/out/tool")) & 0o7777, 0o755);
}

/// Whether any artifact in the fixture's store holds `needle` anywhere in its bytes.
fn any_artifact_holds(root: &Path, needle: &[u8]) -> bool {
    let Ok(dir) = std::fs::read_dir(root.join(".vx/artifacts")) else {
        return false;
    };
    dir.filter_map(Result::ok).any(|e| {
        let Ok(file) = std::fs::File::open(e.path()) else {
            return false;
        };
        let bytes = zstd::decode_all(file).unwrap_or_default();
        bytes.windows(needle.len()).any(|w| w == needle)
    })
}

/// Runs `racer` in a loop on another thread until the returned guard drops.
struct Racer {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Racer {
    fn start(mut racer: impl FnMut() + Send + 'static) -> Racer {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut rounds = 0;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                racer();
                rounds += 1;
            }
            rounds
        });
        Racer {
            stop,
            thread: Some(thread),
        }
    }

    fn stop(mut self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Racer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Another process flips a cached task's output between a regular file and a
/// symlink to a file outside the workspace while vx saves (2,000 other outputs keep the save
/// long), 40 times (more if none of them saved): no artifact ever holds that file's bytes. (The racer makes `out/a` itself:
/// the task's own `>` would write through the link.)
#[test]
fn an_output_flipped_to_a_symlink_during_the_save_never_packs_what_it_leads_to() {
    let secret_dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let secret = secret_dir.path().join("credential");
    std::fs::write(&secret, "THE-CREDENTIAL-BYTES\n").unwrap();
    let f = one_project(concat!(
        "[tasks.build]\n",
        "command = 'mkdir -p out/many && cd out/many && seq 1 2000 | xargs touch'\n",
        "cache = { inputs = ['src/**'], outputs = ['out/**'] }\n",
    ));
    f.write(".gitignore", ".vx/\nout/\n.link\n.file\n");
    f.write("packages/lib/src/a.txt", "a\n");
    f.commit();
    let out_dir = f.path("packages/lib/out");
    std::fs::create_dir_all(&out_dir).unwrap();
    // Staged beside `out`, not in it: a stray link among the outputs would refuse every save.
    let (link, file) = (f.path("packages/lib/.link"), f.path("packages/lib/.file"));
    let racer = {
        let (out_dir, secret) = (out_dir.clone(), secret.clone());
        Racer::start(move || {
            let target = out_dir.join("a");
            let _ = std::os::unix::fs::symlink(&secret, &link);
            let _ = std::fs::rename(&link, &target);
            // As long as the credential: the size check alone would otherwise refuse.
            let _ = std::fs::write(&file, "harmless-harmless-ok\n");
            let _ = std::fs::rename(&file, &target);
        })
    };
    let saved = || {
        std::fs::read_dir(f.root().join(".vx/artifacts"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    // 40 rounds, and on a loaded machine (the whole suite on 2 cores), where the racer can
    // spoil every save of them, more until one was saved: a race in which nothing was saved
    // proves nothing.
    for round in 0..160 {
        if round >= 40 && saved() > 0 {
            break;
        }
        f.write("packages/lib/src/a.txt", &format!("{round}\n"));
        let _ = f.vx(&["run", "lib#build"]);
    }
    let rounds = racer.stop();
    assert!(rounds > 100, "the racer ran {rounds} times");
    assert!(saved() > 0, "no round was saved: the race proved nothing");
    assert!(
        !any_artifact_holds(f.root(), b"THE-CREDENTIAL-BYTES"),
        "an artifact holds the bytes of a file outside the workspace"
    );
}

/// Another process renames each directory vx creates during a restore and
/// puts a symlink to a host directory in its place, over 40 restores: nothing is ever written
/// in that directory.
#[test]
fn a_directory_swapped_for_a_symlink_during_a_restore_is_never_written_through() {
    let host_dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = one_project(concat!(
        "[tasks.build]\n",
        "command = 'for d in a b c d; do mkdir -p out/$d; for i in $(seq 1 30); do echo $d$i > out/$d/f$i; done; done'\n",
        "cache = { inputs = ['src/**'], outputs = ['out/**'] }\n",
    ));
    f.write(".gitignore", ".vx/\nout/\n");
    f.write("packages/lib/src/a.txt", "a\n");
    f.commit();
    let first = f.vx(&["run", "lib#build"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let out_dir = f.path("packages/lib/out");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let racer = {
        let (out_dir, host) = (out_dir.clone(), host_dir.path().to_path_buf());
        let seen_by_racer = seen.clone();
        let mut n = 0u64;
        Racer::start(move || {
            for d in ["a", "b", "c", "d"] {
                let dir = out_dir.join(d);
                let real = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir());
                if real {
                    n += 1;
                    let moved = out_dir.join(format!(".moved-{n}"));
                    if std::fs::rename(&dir, &moved).is_ok() {
                        let _ = std::os::unix::fs::symlink(&host, &dir);
                    }
                }
            }
            // A write that a failed restore removed again counts too.
            if let Some(Ok(entry)) = std::fs::read_dir(&host).ok().and_then(|mut d| d.next()) {
                seen_by_racer
                    .lock()
                    .unwrap()
                    .get_or_insert(entry.file_name());
            }
        })
    };
    let mut restored = 0;
    let mut refused = String::new();
    for _ in 0..40 {
        let _ = std::fs::remove_dir_all(&out_dir);
        let out = f.vx(&["run", "lib#build"]);
        // A restore that went through, or one the swap made fail safely: either way vx
        // restored while the racer swapped.
        if out.stdout.contains("restored-local") || out.stdout.contains("refusing to write through")
        {
            restored += 1;
        } else if refused.is_empty() {
            refused = format!("{}{}", out.stdout, out.stderr);
        }
    }
    racer.stop();
    let written: Vec<_> = std::fs::read_dir(host_dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert!(
        written.is_empty(),
        "written outside the workspace: {written:?}"
    );
    let seen = seen.lock().unwrap().take();
    assert_eq!(seen, None, "written outside the workspace during a restore");
    assert!(restored > 0, "no run attempted a restore: {refused}");
}

/// A well-formed entry (any writer of an unsigned remote cache can make one)
/// restores `dist/out.txt -> ../src/a.txt`. A later run that executes without cleaning the
/// outputs (`--no-cache`, `--cache local:r`) removes that link first, said once: the command's
/// `> dist/out.txt` never truncates the source. A link within the outputs stays.
#[test]
fn a_restored_link_leading_outside_the_outputs_never_carries_a_later_write() {
    let f = one_project(concat!(
        "[tasks.build]\n",
        "command = 'mkdir -p dist && cat src/a.txt > dist/out.txt && ln -sfn out.txt dist/latest'\n",
        "cache = { inputs = ['src/**'], outputs = ['dist/**'] }\n",
    ));
    f.write(".gitignore", ".vx/\ndist/\n");
    f.write("packages/lib/src/a.txt", "the source\n");
    f.commit();
    let first = f.vx(&["run", "lib#build"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let artifact = only_artifact(f.root());
    forge_dropping(&artifact, &["outputs/dist/out.txt"], |meta| {
        let text = "../src/a.txt";
        let file = &mut meta["files"]["outputs/dist/out.txt"];
        file["mode"] = serde_json::json!(0o120777);
        file["size"] = serde_json::json!(text.len());
        meta["links"]["outputs/dist/out.txt"] = serde_json::json!(text);
    });
    for flags in [&["--no-cache"][..], &["--cache", "local:r"]] {
        std::fs::remove_dir_all(f.path("packages/lib/dist")).unwrap();
        let _ = std::fs::remove_file(f.path("packages/lib/src/b.txt"));
        let restored = f.vx(&["run", "lib#build"]);
        assert_eq!(restored.code, 0, "{}{}", restored.stdout, restored.stderr);
        crate::assert_contains(&restored.stdout, "restored-local");
        let link = f.path("packages/lib/dist/out.txt");
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            Path::new("../src/a.txt"),
            "the entry restores as it was made"
        );
        // A miss under `local:r`: another input changes.
        f.write("packages/lib/src/b.txt", &format!("{flags:?}"));
        let mut args = vec!["run", "lib#build"];
        args.extend_from_slice(flags);
        let again = f.vx(&args);
        assert_eq!(again.code, 0, "{flags:?}: {}{}", again.stdout, again.stderr);
        assert_eq!(
            f.read("packages/lib/src/a.txt"),
            "the source\n",
            "{flags:?}"
        );
        assert!(!link.is_symlink(), "{flags:?}");
        assert_eq!(f.read("packages/lib/dist/out.txt"), "the source\n");
        crate::assert_contains(
            &format!("{}{}", again.stdout, again.stderr),
            "lib#build: removed the symlink `packages/lib/dist/out.txt` (to `../src/a.txt`) from its outputs before running",
        );
        // The link within the outputs was the task's own and stays a link.
        assert!(f.path("packages/lib/dist/latest").is_symlink());
    }
}

/// Cleaning outputs before a run goes through directory descriptors too. Another
/// process flips an output directory with a symlink to a host directory holding files of the
/// same names, over 40 cleans: none of them is ever deleted.
#[test]
fn a_directory_swapped_for_a_symlink_during_a_clean_is_never_removed_through() {
    let host_dir = tempfile::tempdir_in("/var/tmp").unwrap();
    for i in 1..=30 {
        std::fs::write(host_dir.path().join(format!("f{i}")), "keep me\n").unwrap();
    }
    let f = one_project(concat!(
        "[tasks.build]\n",
        "command = 'for d in a b; do mkdir -p out/$d; for i in $(seq 1 30); do echo $d$i > out/$d/f$i; done; done'\n",
        "cache = { inputs = ['src/**'], outputs = ['out/**'] }\n",
    ));
    f.write(".gitignore", ".vx/\nout/\n");
    f.write("packages/lib/src/a.txt", "a\n");
    f.commit();
    let out_dir = f.path("packages/lib/out");
    // Flips `out/a` between the real directory and a symlink to the host directory, and back.
    let racer = {
        let (out_dir, host) = (out_dir.clone(), host_dir.path().to_path_buf());
        Racer::start(move || {
            let (dir, hold, link) = (
                out_dir.join("a"),
                out_dir.join(".hold"),
                out_dir.join(".lnk"),
            );
            let meta = std::fs::symlink_metadata(&dir);
            if meta.as_ref().is_ok_and(|m| m.is_dir()) {
                if std::fs::rename(&dir, &hold).is_ok() {
                    let _ = std::os::unix::fs::symlink(&host, &link);
                    let _ = std::fs::rename(&link, &dir);
                }
            } else if meta.is_ok_and(|m| m.file_type().is_symlink()) && hold.is_dir() {
                let _ = std::fs::remove_file(&dir);
                let _ = std::fs::rename(&hold, &dir);
            }
        })
    };
    for round in 0..40 {
        f.write("packages/lib/src/a.txt", &format!("{round}\n"));
        let _ = f.vx(&["run", "lib#build"]);
    }
    racer.stop();
    let kept = std::fs::read_dir(host_dir.path()).unwrap().count();
    assert_eq!(
        kept, 30,
        "files outside the workspace were removed by a clean"
    );
}

/// One path longer than `PATH_MAX` under a project fails only the tasks whose
/// inputs reach it (an uncached task reads the whole project), with one short, root-relative
/// line; a task whose inputs do not reach it runs.
#[test]
fn a_path_longer_than_the_system_limit_fails_only_the_tasks_that_reach_it() {
    let f = one_project(concat!(
        "[tasks.narrow]\ncommand = 'echo narrow ran'\n",
        "cache = { inputs = ['src/**'], outputs = [] }\n\n",
        "[tasks.wide]\ncommand = 'echo wide ran'\ncache = { inputs = ['**'], outputs = [] }\n\n",
        "[tasks.uncached]\ncommand = 'echo uncached ran'\n",
    ));
    f.write(".gitignore", ".vx/\n");
    f.write("packages/lib/src/a.txt", "a\n");
    f.commit();
    // 18 directories of 250 bytes: well past 4,096, made one relative step at a time.
    let made = std::process::Command::new("bash")
        .arg("-c")
        .arg("n=$(printf 'd%.0s' $(seq 1 250)); for i in $(seq 1 18); do mkdir $n && cd $n || exit 1; done; echo deep > f.txt")
        .current_dir(f.path("packages/lib"))
        .status()
        .unwrap();
    assert!(made.success());
    let out = f.vx(&["run", "lib#narrow", "lib#wide", "lib#uncached"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    crate::assert_contains(&out.stdout, "narrow ran");
    assert!(!out.stdout.contains("wide ran") && !out.stdout.contains("uncached ran"));
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("vx: lib#wide: input `packages/lib/dddd"))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(
        line.ends_with("` is longer than the system's path limit; vx cannot read it"),
        "{line}"
    );
    assert!(line.chars().count() < 200, "{line}");
    assert!(!out.stdout.contains(&f.root().display().to_string()));
    crate::assert_contains(&out.stdout, "vx: lib#uncached: input `packages/lib/dddd");
}

/// Waits (bounded) until `path` exists.
fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// An input edited A→B→A while the task runs (the task reads B) never leaves
/// an entry under A's key with B's output: 3 times, the run is not cached, and the next run
/// executes and writes A's output.
#[test]
fn an_edit_undone_while_the_task_runs_never_gives_a_stale_hit() {
    let f = one_project(concat!(
        "[tasks.build]\n",
        "command = 'touch ../../started; while [ ! -f ../../go ]; do sleep 0.01; done; ",
        "mkdir -p dist && cat src/a.txt > dist/out.txt; touch ../../read; ",
        "while [ ! -f ../../done ]; do sleep 0.01; done'\n",
        "cache = { inputs = ['src/**'], outputs = ['dist/**'] }\n",
    ));
    f.write(".gitignore", ".vx/\ndist/\nstarted\ngo\nread\ndone\n");
    f.write("packages/lib/src/a.txt", "A\n");
    f.commit();
    for round in 0..3 {
        for marker in ["started", "go", "read", "done"] {
            let _ = std::fs::remove_file(f.path(marker));
        }
        let _ = std::fs::remove_dir_all(f.path("packages/lib/dist"));
        // A of this round: a key no earlier round saved.
        let a = format!("A{round}\n");
        f.write("packages/lib/src/a.txt", &a);
        let vx = spawn_vx(&f, &["run", "lib#build"], true);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !f.path("started").exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        if !f.path("started").exists() {
            let mut child = vx.take();
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        f.write("packages/lib/src/a.txt", "B\n");
        f.write("go", "");
        wait_for_file(&f.path("read"));
        f.write("packages/lib/src/a.txt", &a);
        f.write("done", "");
        let out = vx.take().wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{text}");
        assert_eq!(f.read("packages/lib/dist/out.txt"), "B\n", "round {round}");
        // The next run must not take B's output for A's.
        f.write("go", "");
        f.write("done", "");
        let next = f.vx(&["run", "lib#build"]);
        assert_eq!(next.code, 0, "{}{}", next.stdout, next.stderr);
        assert!(
            !next.stdout.contains("up-to-date"),
            "round {round}: {}",
            next.stdout
        );
        assert_eq!(f.read("packages/lib/dist/out.txt"), a, "round {round}");
        crate::assert_contains(
            &text,
            "`packages/lib/src/a.txt` was rewritten while the task ran",
        );
    }
}
