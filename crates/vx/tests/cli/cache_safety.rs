//! Regression tests for the failure classes of TEST-4 that concern keys and restores, and
//! ACC-13 (unsafe archive) and ACC-28 (overlapping outputs), on the real binary and real git.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use vx_test_support::fixture::Fixture;

use super::cache::{artifacts, lib_build, wc, MISS};
use crate::assert_contains;

const UP_TO_DATE: &str = "cache      1 up-to-date\n";

fn run_lib(f: &Fixture) -> vx_test_support::fixture::Output {
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    out
}

/// The current key of a task, from `--dry=json`.
fn key_of(f: &Fixture, id: &str) -> String {
    let doc = crate::dry_json(f, &["run", id]);
    crate::dry_task(&doc, id)["key"]
        .as_str()
        .expect("a key")
        .to_string()
}

/// Warms lib#build (the second run is up-to-date), applies `edit`, and asserts the next run
/// executes: the edit moved the key.
fn edit_moves_the_key(f: &Fixture, edit: impl FnOnce(&Fixture)) {
    run_lib(f);
    assert_contains(&run_lib(f).stdout, UP_TO_DATE);
    edit(f);
    assert_contains(&run_lib(f).stdout, MISS);
}

#[test]
fn mode_change_moves_the_key() {
    let f = wc();
    edit_moves_the_key(&f, |f| {
        let path = f.path("packages/lib/src/a.txt");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    });
}

#[test]
fn symlink_swap_moves_the_key() {
    let f = wc();
    f.write("packages/lib/src/b.txt", "a\n");
    f.commit();
    edit_moves_the_key(&f, |f| {
        let path = f.path("packages/lib/src/a.txt");
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("b.txt", &path).unwrap();
    });
}

#[test]
fn mtime_preserving_rewrite_of_the_same_size_moves_the_key() {
    let f = wc();
    edit_moves_the_key(&f, |f| {
        let path = f.path("packages/lib/src/a.txt");
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::write(&path, "b\n").unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(modified).unwrap();
    });
}

#[test]
fn same_second_edit_right_after_a_run_moves_the_key() {
    let f = wc();
    assert_contains(&run_lib(&f).stdout, MISS);
    // Racily clean: written within the same timestamp tick as the identity was memoised.
    f.write("packages/lib/src/a.txt", "z\n");
    assert_contains(&run_lib(&f).stdout, MISS);
    f.write("packages/lib/src/a.txt", "y\n");
    assert_contains(&run_lib(&f).stdout, MISS);
}

#[test]
fn skip_worktree_files_are_hashed_from_the_work_tree() {
    let f = wc();
    f.git(&["update-index", "--skip-worktree", "packages/lib/src/a.txt"]);
    edit_moves_the_key(&f, |f| {
        f.write("packages/lib/src/a.txt", "hidden edit\n");
    });
}

#[test]
fn clean_smudge_filters_do_not_hide_an_edit() {
    let f = wc();
    f.write(".gitattributes", "*.txt filter=upper\n");
    f.git(&["config", "filter.upper.clean", "tr a-z A-Z"]);
    f.git(&["config", "filter.upper.smudge", "cat"]);
    f.commit();
    // The index holds the cleaned blob; identity must describe the work tree bytes.
    edit_moves_the_key(&f, |f| {
        f.write("packages/lib/src/a.txt", "A\n");
    });
}

#[test]
fn added_and_deleted_inputs_move_the_key() {
    let f = wc();
    edit_moves_the_key(&f, |f| {
        f.write("packages/lib/src/new.txt", "untracked\n");
    });
    edit_moves_the_key(&f, |f| {
        std::fs::remove_file(f.path("packages/lib/src/a.txt")).unwrap()
    });
    // Back to the first set of files: the first key again, served from the cache.
    f.write("packages/lib/src/a.txt", "a\n");
    std::fs::remove_file(f.path("packages/lib/src/new.txt")).unwrap();
    assert_contains(&run_lib(&f).stdout, "cache      1 local\n");
}

#[test]
fn an_ignored_file_is_not_an_input() {
    let f = wc();
    f.write(".gitignore", "dist/\n.vx/\n*.log\n");
    f.commit();
    assert_contains(&run_lib(&f).stdout, MISS);
    f.write("packages/lib/src/debug.log", "noise\n");
    assert_contains(&run_lib(&f).stdout, UP_TO_DATE);
}

#[test]
fn globs_spelled_with_dot_slash_double_slash_and_trailing_slash_mean_the_same() {
    let f = wc();
    let key = key_of(&f, "lib#build");
    for inputs in ["./src/**", "src//**", "src/", "./src"] {
        f.write("packages/lib/src/a.txt", "a\n");
        f.write(
            "packages/lib/vx.toml",
            &format!(
                "[tasks.build]\ncommand = \"mkdir -p dist && cat src/*.txt > dist/out.txt && echo built lib\"\ncache = {{ inputs = [\"{inputs}\"], outputs = [\"dist/**\"] }}\n"
            ),
        );
        let spelled = key_of(&f, "lib#build");
        if inputs.ends_with("**") {
            assert_eq!(spelled, key, "`{inputs}` normalises to `src/**`");
        }
        f.write("packages/lib/src/a.txt", &format!("edit for {inputs}\n"));
        assert_ne!(
            key_of(&f, "lib#build"),
            spelled,
            "`{inputs}` selects src/a.txt"
        );
    }
}

#[test]
fn brackets_in_globs_are_literal_directory_names() {
    let f = wc();
    f.write("packages/lib/src/[id]/page.txt", "p\n");
    f.write("packages/lib/src/i/page.txt", "q\n");
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"mkdir -p dist && cp src/[[]id]/page.txt dist/\"\ncache = { inputs = [\"src/[id]/**\"], outputs = [\"dist/**\"] }\n",
    );
    f.commit();
    assert_contains(&run_lib(&f).stdout, MISS);
    f.write("packages/lib/src/i/page.txt", "not an input\n");
    assert_contains(&run_lib(&f).stdout, UP_TO_DATE);
    f.write("packages/lib/src/[id]/page.txt", "an input\n");
    assert_contains(&run_lib(&f).stdout, MISS);
}

#[test]
fn non_utf8_input_names_fail_the_task_with_its_path() {
    use std::os::unix::ffi::OsStrExt;
    let f = wc();
    let name = std::ffi::OsStr::from_bytes(b"packages/lib/src/\xff.txt");
    std::fs::write(f.root().join(name), "x").unwrap();
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert_contains(
        &out.stdout,
        "vx: lib#build: input `packages/lib/src/\\xFF.txt` has a name that is not UTF-8",
    );
    assert!(!f.path("packages/lib/dist").exists(), "the task never ran");
}

#[test]
fn a_non_utf8_name_no_glob_matches_changes_nothing_for_cached_tasks() {
    use std::os::unix::ffi::OsStrExt;
    let f = wc();
    run_lib(&f);
    let name = std::ffi::OsStr::from_bytes(b"packages/lib/\xfe.other");
    std::fs::write(f.root().join(name), "x").unwrap();
    assert_contains(&run_lib(&f).stdout, UP_TO_DATE);
}

#[test]
fn an_uncached_task_folds_a_non_utf8_name_by_its_bytes() {
    use std::os::unix::ffi::OsStrExt;
    let f = wc();
    let name = f
        .root()
        .join(std::ffi::OsStr::from_bytes(b"packages/docs/\xfe.other"));
    std::fs::write(&name, "one").unwrap();
    let out = f.vx(&["run", "docs#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let before = key_of(&f, "docs#build");
    assert_eq!(key_of(&f, "docs#build"), before, "the key is stable");
    std::fs::write(&name, "two").unwrap();
    assert_ne!(
        key_of(&f, "docs#build"),
        before,
        "an edit of the file moves the key"
    );
}

#[test]
fn nested_repositories_are_hashed_by_content() {
    let f = wc();
    let nested = f.path("packages/lib/src/vendor");
    std::fs::create_dir_all(&nested).unwrap();
    f.write("packages/lib/src/vendor/v.txt", "v1\n");
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(&nested)
            .env_remove("GIT_DIR")
            .env_remove("GIT_INDEX_FILE")
            .output()
            .unwrap();
        assert!(status.status.success(), "{status:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "v",
    ]);
    edit_moves_the_key(&f, |f| {
        f.write("packages/lib/src/vendor/v.txt", "v2\n");
    });
}

#[test]
fn an_input_written_by_the_task_itself_is_not_cached() {
    let f = wc();
    lib_build(
        &f,
        "mkdir -p dist && date +%N > src/stamp.txt && cp src/a.txt dist/",
    );
    let out = run_lib(&f);
    assert_contains(
        &out.stderr,
        "vx: lib#build: `packages/lib/src/stamp.txt` changed while the task ran; result kept but not cached",
    );
    assert!(artifacts(&f).is_empty());
}

/// Seen on trpc/trpc (tsdown's `exports`), and KEY-16: a build that rewrites an input
/// with the bytes it already held is told from an edit undone while it ran by the task's
/// previous run. The first such run is not cached (it could have been A→B→A), said once; the
/// next, which rewrites the same input again, is cached; the one after is up to date.
#[test]
fn an_input_the_task_rewrites_with_the_same_bytes_is_cached_from_its_second_run() {
    let f = wc();
    lib_build(
        &f,
        "mkdir -p dist && cp src/a.txt dist/ && cat package.json > p.tmp && mv p.tmp package.json",
    );
    let out = run_lib(&f);
    assert_contains(
        &out.stderr,
        "lib#build: `packages/lib/package.json` was rewritten while the task ran (it holds its old bytes again); result kept but not cached",
    );
    assert_eq!(artifacts(&f).len(), 0);
    let second = run_lib(&f);
    assert!(
        !second.stderr.contains("while the task ran"),
        "{}",
        second.stderr
    );
    assert_eq!(artifacts(&f).len(), 1);
    let third = run_lib(&f);
    assert_contains(&third.stdout, "1 up-to-date");
}

#[test]
fn an_uncached_upstream_that_writes_an_input_is_keyed_after_it_ran() {
    let f = wc();
    let counter = f.path("counter");
    f.write(
        "packages/lib/vx.toml",
        &format!(
            "[tasks.gen]\ncommand = \"echo $(( $(cat {0} 2>/dev/null || echo 0) + 1 )) > {0}; cp {0} src/gen.txt\"\n\n[tasks.build]\ncommand = \"mkdir -p dist && cat src/*.txt > dist/out.txt\"\ndepends-on = [\"gen\"]\ncache = {{ inputs = [\"src/**\"], outputs = [\"dist/**\"] }}\n",
            counter.display()
        ),
    );
    f.write(".gitignore", "dist/\n.vx/\ncounter\n");
    f.commit();
    for round in 1..=3 {
        let out = f.vx(&["run", "lib#build"]);
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        assert_contains(&out.stdout, "1 miss");
        assert_eq!(
            f.read("packages/lib/dist/out.txt"),
            format!("a\n{round}\n"),
            "round {round}: the output reflects what gen wrote before build's key was taken"
        );
    }
}

#[test]
fn acc13_an_unsafe_archive_is_damage_and_nothing_escapes() {
    let f = wc();
    let key = key_of(&f, "lib#build");
    let name = "outputs/../../escape.txt";
    let log = b"VXLOG\x01".to_vec();
    let meta = serde_json::json!({
        "format": 2, "key": key, "task": "lib#build", "command": "x",
        "files": { name: { "mode": 0o100644, "mtime_ns": 0, "size": 7 } },
        "exec": { "duration_ms": 1 },
        "producer": { "vx_version": "0", "os": "linux", "arch": "x", "created_at": "2026-01-01T00:00:00Z" }
    })
    .to_string()
    .into_bytes();
    let body = b"escape\n".to_vec();
    let entries: Vec<(&str, Vec<u8>)> = vec![("log", log), ("meta.json", meta), (name, body)];
    let mut hasher = blake3::Hasher::new();
    for (entry, bytes) in &entries {
        hasher.update(&(entry.len() as u64).to_le_bytes());
        hasher.update(entry.as_bytes());
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    let digest = hasher.finalize().to_hex().to_string().into_bytes();
    let mut tar = tar::Builder::new(Vec::new());
    for (entry, bytes) in entries.iter().chain([&("digest", digest)]) {
        let mut header = tar::Header::new_ustar();
        header.as_mut_bytes()[..entry.len()].copy_from_slice(entry.as_bytes());
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        tar.append(&header, bytes.as_slice()).unwrap();
    }
    let archive = zstd::encode_all(tar.into_inner().unwrap().as_slice(), 3).unwrap();
    std::fs::create_dir_all(f.path(".vx/artifacts")).unwrap();
    std::fs::write(f.path(&format!(".vx/artifacts/{key}.tar.zst")), archive).unwrap();

    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stderr, "discarded damaged cache entry");
    assert_contains(&out.stderr, "unsafe path");
    assert_contains(&out.stdout, MISS);
    for place in [
        "escape.txt",
        "packages/escape.txt",
        "packages/lib/escape.txt",
        "../escape.txt",
    ] {
        assert!(!f.path(place).exists(), "{place} was written");
    }
}

#[test]
fn an_artifact_under_another_keys_row_is_damage_not_a_hit() {
    let f = wc();
    assert_contains(&run_lib(&f).stdout, MISS);
    let old = artifacts(&f).pop().unwrap();
    f.write("packages/lib/src/a.txt", "second\n");
    assert_contains(&run_lib(&f).stdout, MISS);
    let list = artifacts(&f);
    let new = list.iter().find(|p| **p != old).unwrap().clone();
    // The new key's file now holds the old result: a key mismatch.
    std::fs::copy(&old, &new).unwrap();
    std::fs::remove_dir_all(f.path("packages/lib/dist")).unwrap();
    let out = run_lib(&f);
    assert_contains(&out.stderr, "discarded damaged cache entry");
    assert_contains(&out.stdout, MISS);
    assert_eq!(f.read("packages/lib/dist/out.txt"), "second\n");
}

#[test]
fn a_directory_where_an_output_must_go_fails_the_restore_naming_it() {
    let f = wc();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"mkdir -p dist && cat src/*.txt > dist/out.txt\"\ncache = { inputs = [\"src/**\"], outputs = [\"dist/*.txt\"] }\n",
    );
    f.commit();
    assert_contains(&run_lib(&f).stdout, MISS);
    std::fs::remove_file(f.path("packages/lib/dist/out.txt")).unwrap();
    f.write("packages/lib/dist/out.txt/keep.md", "mine\n");
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stdout, "packages/lib/dist/out.txt");
    assert_eq!(f.read("packages/lib/dist/out.txt/keep.md"), "mine\n");
}

#[test]
fn cleaning_refuses_a_tracked_output_with_uncommitted_changes() {
    let f = wc();
    f.write(
        "packages/lib/vx.toml",
        "[tasks.build]\ncommand = \"cat src/a.txt > gen/out.d.ts\"\ncache = { inputs = [\"src/**\"], outputs = [\"gen/**\"] }\n",
    );
    f.write("packages/lib/gen/out.d.ts", "committed\n");
    f.commit();
    f.write("packages/lib/gen/out.d.ts", "hand edit\n");
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert_contains(
        &out.stdout,
        "vx: lib#build: refusing to clean `packages/lib/gen/out.d.ts`: it has uncommitted changes and matches cache.outputs (gen/**)",
    );
    assert_eq!(f.read("packages/lib/gen/out.d.ts"), "hand edit\n");
    // Committed and unchanged, the same file is cleaned and rewritten like any output.
    f.commit();
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(f.read("packages/lib/gen/out.d.ts"), "a\n");
}

#[test]
fn cleaning_refuses_another_tasks_untracked_input() {
    let f = wc();
    f.write(
        "packages/lib/vx.toml",
        concat!(
            "[tasks.build]\ncommand = \"mkdir -p out && echo b > out/b.txt\"\n",
            "cache = { inputs = [\"src/**\"], outputs = [\"out/**\"] }\n\n",
            "[tasks.check]\ncommand = \"cat out/notes.md\"\n",
            "cache = { inputs = [\"out/notes.md\"], outputs = [] }\n",
        ),
    );
    f.write(".gitignore", "dist/\n.vx/\nout/b.txt\n");
    // GRAPH-9 refuses this layout unless up-front keys are off; the clean must still protect.
    f.write(
        "vx.toml",
        "[workspace]\nmembers = [\"packages/*\"]\nrules = { upfront-keys = false }\n",
    );
    f.commit();
    f.write("packages/lib/out/notes.md", "my notes\n");
    let out = f.vx(&["run", "lib#build", "lib#check"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert_contains(
        &out.stdout,
        "refusing to clean `packages/lib/out/notes.md`: it is an input of `lib#check` and matches cache.outputs (out/**)",
    );
    assert_eq!(f.read("packages/lib/out/notes.md"), "my notes\n");
}

#[test]
fn a_lockfile_rewritten_during_the_run_turns_caching_off() {
    let f = wc();
    f.write("pnpm-lock.yaml", "lockfileVersion: 9\n");
    f.commit();
    lib_build(
        &f,
        "mkdir -p dist && cp src/a.txt dist/ && echo 'lockfileVersion: 10' > ../../pnpm-lock.yaml",
    );
    let out = run_lib(&f);
    assert_contains(
        &out.stderr,
        "vx: pnpm-lock.yaml changed during the run; caching is off for the rest of this run",
    );
    assert!(artifacts(&f).is_empty());
}

#[test]
fn continue_always_taints_dependants_of_a_failure() {
    let f = wc();
    f.write(
        "packages/app/vx.toml",
        concat!(
            "[tasks.build]\ncommand = \"mkdir -p dist && echo app > dist/app.txt\"\n",
            "depends-on = [\"^build\"]\n",
            "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
        ),
    );
    f.commit();
    lib_build(&f, "exit 3");
    let out = f.vx(&["run", "app#build", "--continue"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        f.path("packages/app/dist/app.txt").exists(),
        "app#build ran anyway"
    );
    assert!(artifacts(&f).is_empty(), "a tainted result is never saved");
}

#[test]
fn exclude_dependencies_results_are_not_saved() {
    let f = wc();
    let out = f.vx(&["run", "app#build", "--only"]);
    assert_eq!(
        out.code, 1,
        "app#build reads lib's output, which --only did not build"
    );
    assert_eq!(f.vx(&["run", "lib#build"]).code, 0);
    let before = artifacts(&f).len();
    let out = f.vx(&["run", "app#build", "--only"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        artifacts(&f).len(),
        before,
        "a result folding a dropped dependency is not saved"
    );
}

#[test]
fn acc28_overlapping_outputs_are_refused_before_any_run() {
    let f = wc();
    f.write(
        "packages/lib/vx.toml",
        &format!(
            "{}\n[tasks.types]\ncommand = \"true\"\ncache = {{ inputs = [\"src/**\"], outputs = [\"dist/types/**\"] }}\n",
            f.read("packages/lib/vx.toml")
        ),
    );
    f.commit();
    let out = f.vx(&["run", "build", "--all"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_contains(
        &out.stderr,
        "error: `lib#build` and `lib#types` both declare outputs under `dist/`",
    );
    // The hint leads somewhere: not to `exclusive-outputs = false`, which is refused.
    assert_contains(
        &out.stderr,
        "hint: give each its own directory, or let one task write both",
    );
    assert!(!out.stderr.contains("exclusive-outputs"), "{}", out.stderr);
}

#[test]
fn up_to_date_detects_an_output_rewritten_with_a_forged_mtime() {
    let f = wc();
    assert_contains(&run_lib(&f).stdout, MISS);
    let path = f.path("packages/lib/dist/out.txt");
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(&path, "b\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    let out = run_lib(&f);
    assert_contains(&out.stdout, "1 local");
    assert_eq!(f.read("packages/lib/dist/out.txt"), "a\n");
}

#[test]
fn a_file_written_outside_declared_outputs_never_gives_a_wrong_hit() {
    let f = wc();
    // lib#gen declares gen/** but also writes src/extra.txt, which lib#build reads.
    f.write(
        "packages/lib/vx.toml",
        concat!(
            "[tasks.gen]\ncommand = \"mkdir -p gen && echo g > gen/g.txt && echo extra > src/extra.txt\"\n",
            "cache = { inputs = [], outputs = [\"gen/**\"] }\n\n",
            "[tasks.build]\ncommand = \"mkdir -p dist && cat src/*.txt > dist/out.txt\"\n",
            "depends-on = [\"gen\"]\n",
            "cache = { inputs = [\"src/**\"], outputs = [\"dist/**\"] }\n",
        ),
    );
    f.write(".gitignore", "dist/\n.vx/\ngen/\n");
    f.commit();
    let first = f.vx(&["run", "lib#build"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    assert_eq!(f.read("packages/lib/dist/out.txt"), "a\nextra\n");
    // Without the stray file, gen is a hit that does not bring it back: build must not be
    // served the output that included it.
    std::fs::remove_file(f.path("packages/lib/src/extra.txt")).unwrap();
    std::fs::remove_dir_all(f.path("packages/lib/gen")).unwrap();
    let second = f.vx(&["run", "lib#build"]);
    assert_eq!(second.code, 0, "{}{}", second.stdout, second.stderr);
    assert!(
        !f.path("packages/lib/src/extra.txt").exists(),
        "gen was a hit"
    );
    assert_contains(&second.stdout, "cache      1 miss · 1 local\n");
    assert_eq!(
        f.read("packages/lib/dist/out.txt"),
        "a\n",
        "build's output matches what a fresh run gives"
    );
}

#[test]
fn with_local_writes_off_a_damaged_entry_is_ignored_and_kept() {
    let f = wc();
    assert_contains(&run_lib(&f).stdout, MISS);
    let artifact = artifacts(&f).pop().unwrap();
    let mut bytes = std::fs::read(&artifact).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&artifact, &bytes).unwrap();
    std::fs::remove_dir_all(f.path("packages/lib/dist")).unwrap();
    let out = f.vx(&["run", "lib#build", "--cache", "local:r"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stderr, "vx: lib#build: ignoring damaged cache entry ");
    assert_eq!(
        std::fs::read(&artifact).unwrap(),
        bytes,
        "the entry is kept as it was"
    );
    assert_eq!(f.read("packages/lib/dist/out.txt"), "a\n", "the task ran");
}

#[test]
fn an_output_symlink_leaving_the_workspace_is_not_cached_and_the_task_stays_green() {
    let f = wc();
    for link in ["../../../../outside.txt", "/etc/hostname"] {
        lib_build(&f, &format!("mkdir -p dist && ln -sf {link} dist/link.txt"));
        let out = run_lib(&f);
        assert_contains(
            &out.stderr,
            "vx: lib#build: not cached: output `packages/lib/dist/link.txt` is a symlink leaving the workspace",
        );
        assert!(artifacts(&f).is_empty(), "{link}");
    }
    // A link that climbs after descending could lead anywhere through another link.
    lib_build(
        &f,
        "mkdir -p dist/d && ln -sf d/../../src/a.txt dist/link.txt",
    );
    let out = run_lib(&f);
    assert_contains(
        &out.stderr,
        "vx: lib#build: not cached: output `packages/lib/dist/link.txt` is a symlink whose target `d/../../src/a.txt` vx cannot check",
    );
    assert!(artifacts(&f).is_empty());
}

#[test]
fn outputs_that_match_nothing_are_named_and_the_empty_result_saved() {
    let f = wc();
    lib_build(&f, "echo nothing written");
    let out = run_lib(&f);
    assert_contains(
        &out.stderr,
        "vx: lib#build: no file matches cache.outputs (dist/**)",
    );
    assert_eq!(artifacts(&f).len(), 1, "the empty result is saved");
    assert_contains(&run_lib(&f).stdout, UP_TO_DATE);
}

/// Keys taken up front look at each project's `package.json` once; once a task has executed,
/// a key derived later looks again. Here lib#build rewrites app's manifest: app#build, keyed
/// after it, must fold the manifest as it is then, so the next run finds app#build up to date
/// (a key from the stale look would neither match nor be saved).
#[test]
fn a_manifest_rewritten_by_an_upstream_task_is_folded_as_it_is_after_it() {
    let f = wc();
    lib_build(
        &f,
        "mkdir -p dist && cat src/*.txt > dist/out.txt && sed -i s/1.0.0/2.0.0/ ../app/package.json",
    );
    let first = f.vx(&["run", "app#build"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    assert_contains(&first.stdout, "cache      2 miss\n");
    assert!(f.read("packages/app/package.json").contains("2.0.0"));
    let second = f.vx(&["run", "app#build"]);
    assert_eq!(second.code, 0, "{}{}", second.stdout, second.stderr);
    assert_contains(&second.stdout, "cache      2 up-to-date\n");
}
