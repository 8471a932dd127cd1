//! Storage faults said for what they are (STORE-12, STORE-14), with real mounts: a
//! read-only cache directory or checkout is read (hits served, nothing saved, one warning), and
//! a full file system reads as full, naming it — never as an invalid index with a delete hint.
//! Mounting needs root: elsewhere each test reports itself skipped with the reason, and under
//! `CI` (which runs as root) it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use vx_test_support::fixture::Fixture;

use crate::cache::{wc, MISS};
use crate::{assert_contains, empty};

/// A mount made for a test, undone when dropped (lazily, so a busy mount cannot leak).
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn mount(args: &[&str]) -> Result<(), String> {
    let out = Command::new("mount")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run mount: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "mount {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Whether this process may mount; otherwise the reason is printed (and under `CI` the test
/// fails: CI runs the suite as root).
fn can_mount() -> bool {
    // `/proc/self` belongs to the process's effective user.
    let euid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap());
    let why = if euid != 0 {
        Some("mounting a read-only or full file system needs root".to_string())
    } else {
        let probe = tempfile::tempdir().unwrap();
        let dir = probe.path().display().to_string();
        mount(&["-t", "tmpfs", "-o", "size=64k", "tmpfs", &dir])
            .map(|()| drop(Mounted(probe.path().to_path_buf())))
            .err()
    };
    match why {
        None => true,
        Some(why) => {
            assert!(!vx_test_support::tools::tools_required(), "{why}");
            eprintln!("skipped: {why} (run the suite as root, as CI does)");
            false
        }
    }
}

/// `dir` bound onto itself, read-only.
fn read_only(dir: &Path) -> Mounted {
    let shown = dir.display().to_string();
    mount(&["--bind", &shown, &shown]).unwrap();
    let mounted = Mounted(dir.to_path_buf());
    mount(&["-o", "remount,bind,ro", &shown]).unwrap();
    mounted
}

fn assert_no_invalid_index(text: &str) {
    assert!(
        !text.contains("not a valid cache index") && !text.contains("hint: delete"),
        "{text}"
    );
}

#[test]
fn a_read_only_cache_directory_serves_hits_saves_nothing_and_reading_verbs_work() {
    if !can_mount() {
        return;
    }
    let f = wc();
    let first = f.vx(&["run", "lib#build"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let _ro = read_only(&f.path(".vx"));

    let hit = f.vx(&["run", "lib#build"]);
    assert_eq!(hit.code, 0, "{}{}", hit.stdout, hit.stderr);
    assert_contains(&hit.stdout, "cache      1 up-to-date\n");
    assert_no_invalid_index(&hit.stderr);
    let warnings = hit
        .stderr
        .matches("warning: the cache cannot be written: `")
        .count();
    assert_eq!(warnings, 1, "{}", hit.stderr);
    assert_contains(&hit.stderr, "is on a read-only file system");
    assert_contains(&hit.stderr, "hits are served, nothing is saved");

    // A restore is served too; a miss runs and is not saved.
    std::fs::remove_dir_all(f.path("packages/lib/dist")).unwrap();
    let restored = f.vx(&["run", "lib#build"]);
    assert_eq!(restored.code, 0, "{}{}", restored.stdout, restored.stderr);
    assert_contains(&restored.stdout, "cache      1 local\n");
    f.write("packages/lib/src/a.txt", "changed\n");
    let miss = f.vx(&["run", "lib#build"]);
    assert_eq!(miss.code, 0, "{}{}", miss.stdout, miss.stderr);
    assert_contains(&miss.stdout, MISS);
    assert!(!miss.stderr.contains("could not save"), "{}", miss.stderr);

    assert_each_works(
        &f,
        &[
            &["run", "lib#build", "--no-cache"],
            &["run", "lib#build", "--dry"],
            &["why", "lib#build"],
            &["last"],
        ],
    );
}

/// Each command exits 0 and never calls the index invalid.
fn assert_each_works(f: &Fixture, commands: &[&[&str]]) {
    for args in commands {
        let out = f.vx(args);
        assert_eq!(out.code, 0, "{args:?}: {}{}", out.stdout, out.stderr);
        assert_no_invalid_index(&out.stderr);
    }
}

#[test]
fn a_read_only_checkout_runs_and_reads() {
    if !can_mount() {
        return;
    }
    let f = wc();
    f.vx(&["run", "lib#build"]);
    let _ro = read_only(f.root());
    // Outputs up to date: nothing needs writing, so the run succeeds on a read-only tree.
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stdout, "cache      1 up-to-date\n");
    assert_no_invalid_index(&out.stderr);
    assert_each_works(
        &f,
        &[
            &["run", "docs#build", "--no-cache"],
            &["why", "lib#build"],
            &["last"],
        ],
    );
}

#[test]
fn a_never_created_cache_on_a_read_only_checkout_is_an_empty_one() {
    if !can_mount() {
        return;
    }
    let f: Fixture = empty();
    f.write("vx.toml", "[workspace]\nmembers = []\n\n[tasks.hello]\ncommand = \"echo hello\"\ncache = { inputs = [], outputs = [] }\n");
    f.commit();
    let _ro = read_only(f.root());
    let out = f.vx(&["run", "//#hello"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stdout, "hello");
    assert_no_invalid_index(&out.stderr);
}

#[test]
fn a_full_file_system_reads_as_full_naming_it() {
    if !can_mount() {
        return;
    }
    let holder = tempfile::tempdir().unwrap();
    let dir = holder.path().display().to_string();
    mount(&["-t", "tmpfs", "-o", "size=4m", "tmpfs", &dir]).unwrap();
    let _tmpfs = Mounted(holder.path().to_path_buf());
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .current_dir(holder.path())
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    let write = |rel: &str, text: &str| {
        let path = holder.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
    write(".gitignore", ".vx/\nout/\nfill\n");
    write("packages/p/package.json", r#"{ "name": "p" }"#);
    write("packages/p/src/a.txt", "a\n");
    write(
        "packages/p/vx.toml",
        "[tasks.build]\ncommand = \"mkdir -p out && cp src/a.txt out/\"\ncache = { inputs = [\"src/**\"], outputs = [\"out/**\"] }\n",
    );
    git(&["add", "-A"]);
    git(&[
        "-c",
        "user.email=t@example.com",
        "-c",
        "user.name=t",
        "commit",
        "-q",
        "-m",
        "init",
    ]);
    let vx = |args: &[&str]| {
        let out = Command::new(crate::vx_bin())
            .current_dir(holder.path())
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _, stderr) = vx(&["run", "p#build"]);
    assert_eq!(code, 0, "{stderr}");
    // Fill the file system, then change the input so the task must save.
    write("packages/p/src/a.txt", "b\n");
    let mut fill = std::fs::File::create(holder.path().join("fill")).unwrap();
    let block = vec![0u8; 64 << 10];
    while std::io::Write::write_all(&mut fill, &block).is_ok() {}
    drop(fill);
    let (code, stdout, stderr) = vx(&["run", "p#build"]);
    let text = format!("{stdout}{stderr}");
    assert_no_invalid_index(&text);
    assert_contains(&text, &format!("the file system holding `{dir}/.vx"));
    assert_contains(&text, &format!("is full (tmpfs mounted at {dir})"));
    assert!(code == 0 || code == 1, "{text}");
}

/// Writes `rel` under `root`, making its directories.
fn write_at(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `git args…` in `root`, with a committer identity; it must succeed.
fn git_at(root: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .current_dir(root)
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

/// Fills the file system holding `root` through the file `root/fill`.
fn fill_at(root: &Path) {
    let mut fill = std::fs::File::create(root.join("fill")).unwrap();
    let block = vec![0u8; 4096];
    while std::io::Write::write_all(&mut fill, &block).is_ok() {}
}

/// A fresh checkout (no `.vx` yet) on a full file system names the full file
/// system, never an index of schema 0, and runs the tasks without the cache; `vx last` does not
/// send the user to run vx once more.
#[test]
fn a_fresh_checkout_on_a_full_file_system_names_it_and_runs_without_the_cache() {
    if !can_mount() {
        return;
    }
    let holder = tempfile::tempdir().unwrap();
    let root = holder.path();
    let dir = root.display().to_string();
    mount(&["-t", "tmpfs", "-o", "size=2m", "tmpfs", &dir]).unwrap();
    let _tmpfs = Mounted(root.to_path_buf());
    write_at(root, "vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
    write_at(root, ".gitignore", ".vx/\nfill\n");
    write_at(root, "packages/p/package.json", r#"{ "name": "p" }"#);
    write_at(
        root,
        "packages/p/vx.toml",
        "[tasks.build]\ncommand = \"echo built\"\ncache = { inputs = [\"*.json\"], outputs = [] }\n",
    );
    git_at(root, &["init", "-q", "-b", "main"]);
    git_at(root, &["add", "-A"]);
    git_at(root, &["commit", "-q", "-m", "init"]);
    fill_at(root);
    assert!(!root.join(".vx/cache.db").exists());
    let vx = |args: &[&str]| {
        let out = Command::new(crate::vx_bin())
            .current_dir(root)
            .args(args)
            .env_remove("CI")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    };
    let (code, text) = vx(&["run", "p#build"]);
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("schema 0"), "{text}");
    assert_no_invalid_index(&text);
    assert_contains(&text, "built");
    assert_contains(&text, &format!("is full (tmpfs mounted at {dir})"));
    let (_, last) = vx(&["last"]);
    assert!(!last.contains("schema 0"), "{last}");
    assert!(!last.contains("run once"), "{last}");
}
