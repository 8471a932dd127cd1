//! The workspace tree against real git repositories built in temporary directories: listing
//! (KEY-10), identity and the index shortcut (KEY-11), refresh (KEY-15), outside git (DISC-7).
//! Only these tests run `git`; the tree itself never does.

use std::collections::HashMap;
use std::fs::{self, FileTimes};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use vx_workspace::tree::{
    blob_id, head, FileId, Head, Identity, Mode, NoMemo, ObjectFormat, StampMemo, Stat, Tree,
    TreeOptions,
};

fn git(dir: &Path, args: &[&str]) -> String {
    let mut command = Command::new("git");
    command
        .args(["-c", "user.name=vx", "-c", "user.email=vx@example.com"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(["-c", "core.autocrlf=false"])
        .args(args)
        .current_dir(dir);
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_CONFIG_PARAMETERS",
    ] {
        command.env_remove(var);
    }
    let out = command.output().expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A temporary directory and its canonical path.
fn temp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    (dir, path)
}

/// A fresh repository.
fn repo() -> (tempfile::TempDir, PathBuf) {
    let (dir, path) = temp();
    git(&path, &["init", "-q"]);
    (dir, path)
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

/// Sets a file's mtime `secs` seconds back, so the index entry git writes for it is not racy.
fn age(root: &Path, rel: &str, secs: u64) {
    set_mtime(
        &root.join(rel),
        SystemTime::now() - Duration::from_secs(secs),
    );
}

fn set_mtime(path: &Path, time: SystemTime) {
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_times(FileTimes::new().set_modified(time)).unwrap();
}

/// Writes, ages and commits files.
fn commit(root: &Path, files: &[(&str, &str)]) {
    for (rel, content) in files {
        write(root, rel, content);
        age(root, rel, 100);
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "c"]);
}

fn scan(root: &Path) -> Tree {
    scan_excluding(root, Vec::new())
}

fn scan_excluding(root: &Path, excluded: Vec<PathBuf>) -> Tree {
    Tree::scan(&TreeOptions {
        root: root.to_path_buf(),
        excluded,
    })
    .unwrap()
}

fn listed(tree: &Tree) -> Vec<(String, bool)> {
    tree.files()
        .iter()
        .map(|f| (f.path.clone(), f.tracked))
        .collect()
}

fn paths(tree: &Tree) -> Vec<String> {
    tree.files().iter().map(|f| f.path.clone()).collect()
}

fn id(tree: &mut Tree, path: &str) -> FileId {
    tree.identity(path, &mut NoMemo).unwrap()
}

fn blob(file: &FileId) -> (Mode, String) {
    match &file.identity {
        Identity::Present { mode, blob } => (*mode, blob.clone()),
        Identity::Absent => panic!("absent"),
    }
}

#[derive(Default)]
struct MapMemo(HashMap<String, (Stat, String)>);

impl StampMemo for MapMemo {
    fn recall(&self, path: &str) -> Option<(Stat, String)> {
        self.0.get(path).cloned()
    }

    fn remember(&mut self, path: &str, stat: Stat, blob: String) {
        self.0.insert(path.to_string(), (stat, blob));
    }
}

#[test]
fn clean_tracked_file_comes_from_the_index_without_reading_it() {
    let (_d, root) = repo();
    commit(
        &root,
        &[("a.txt", "hello\n"), ("src/b.rs", "fn main() {}\n")],
    );
    let mut tree = scan(&root);
    assert!(tree.in_git());
    assert_eq!(tree.object_format(), ObjectFormat::Sha1);
    assert_eq!(
        listed(&tree),
        vec![("a.txt".into(), true), ("src/b.rs".into(), true)]
    );
    let file = id(&mut tree, "src/b.rs");
    assert_eq!(
        blob(&file),
        (Mode::Regular, git(&root, &["hash-object", "src/b.rs"]))
    );
    assert!(file.stat.is_some());
    let counters = tree.counters();
    assert_eq!(counters.files_hashed, 0);
    assert_eq!(counters.index_reads, 1);
    assert_eq!(counters.walks, 1);
}

#[test]
fn same_size_rewrite_is_hashed() {
    let (_d, root) = repo();
    commit(&root, &[("a.txt", "aaaa\n")]);
    write(&root, "a.txt", "bbbb\n");
    let mut tree = scan(&root);
    let file = id(&mut tree, "a.txt");
    assert_eq!(blob(&file).1, blob_id(ObjectFormat::Sha1, b"bbbb\n"));
    assert_eq!(tree.counters().files_hashed, 1);
}

#[test]
fn rewrite_that_restores_the_mtime_is_caught_by_ctime() {
    let (_d, root) = repo();
    commit(&root, &[("a.txt", "aaaa\n")]);
    let mtime = fs::metadata(root.join("a.txt"))
        .unwrap()
        .modified()
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    write(&root, "a.txt", "bbbb\n");
    set_mtime(&root.join("a.txt"), mtime);
    let mut tree = scan(&root);
    let file = id(&mut tree, "a.txt");
    assert_eq!(blob(&file).1, git(&root, &["hash-object", "a.txt"]));
    assert_eq!(tree.counters().files_hashed, 1);
}

#[test]
fn racily_clean_entries_are_hashed() {
    let (_d, root) = repo();
    commit(&root, &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    // An index older than the entry: git could not have seen a write in the same tick.
    let index = root.join(".git/index");
    set_mtime(&index, SystemTime::now() - Duration::from_secs(1000));
    let mut tree = scan(&root);
    assert_eq!(
        blob(&id(&mut tree, "a.txt")).1,
        blob_id(ObjectFormat::Sha1, b"a\n")
    );
    assert_eq!(tree.counters().files_hashed, 1);

    // A file whose mtime is at or after the index's when git writes it.
    let (_d2, root2) = repo();
    write(&root2, "c.txt", "c\n");
    set_mtime(
        &root2.join("c.txt"),
        SystemTime::now() + Duration::from_secs(60),
    );
    git(&root2, &["add", "c.txt"]);
    let mut tree = scan(&root2);
    assert_eq!(
        blob(&id(&mut tree, "c.txt")).1,
        blob_id(ObjectFormat::Sha1, b"c\n")
    );
    assert_eq!(tree.counters().files_hashed, 1);
}

#[test]
fn executable_bit_and_symlinks_have_their_modes() {
    let (_d, root) = repo();
    commit(&root, &[("run.sh", "#!/bin/sh\n"), ("target.txt", "t\n")]);
    std::os::unix::fs::symlink("target.txt", root.join("link")).unwrap();
    git(&root, &["add", "link"]);
    git(&root, &["commit", "-q", "-m", "link"]);
    fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    let mut tree = scan(&root);
    let run = id(&mut tree, "run.sh");
    assert_eq!(
        blob(&run),
        (Mode::Executable, git(&root, &["hash-object", "run.sh"]))
    );
    assert_eq!(Mode::Executable.as_str(), "100755");
    let link = id(&mut tree, "link");
    assert_eq!(
        blob(&link),
        (Mode::Symlink, git(&root, &["rev-parse", ":link"]))
    );
    assert_eq!(blob(&link).1, blob_id(ObjectFormat::Sha1, b"target.txt"));
}

#[test]
fn committed_executable_comes_from_the_index() {
    let (_d, root) = repo();
    write(&root, "run.sh", "#!/bin/sh\n");
    fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    age(&root, "run.sh", 100);
    commit(&root, &[]);
    let mut tree = scan(&root);
    assert_eq!(blob(&id(&mut tree, "run.sh")).0, Mode::Executable);
    assert_eq!(tree.counters().files_hashed, 0);
}

#[test]
fn untracked_ignored_node_modules_and_excluded_paths() {
    let (_d, root) = repo();
    commit(
        &root,
        &[
            (".gitignore", "*.log\n/dist/\n"),
            ("pkg/.gitignore", "!keep.log\n"),
            ("node_modules/tracked.js", "t\n"),
        ],
    );
    write(&root, "new.txt", "n\n");
    write(&root, "debug.log", "d\n");
    write(&root, "pkg/keep.log", "k\n");
    write(&root, "pkg/other.log", "o\n");
    write(&root, "dist/out.js", "o\n");
    write(&root, "node_modules/dep/index.js", "x\n");
    write(&root, "pkg/node_modules/dep/index.js", "x\n");
    write(&root, ".vx/cache.db", "x\n");
    write(&root, "pkg/.vx/x", "x\n");
    write(&root, ".cache/vx/blob", "x\n");
    write(&root, "secret.tmp", "x\n");
    write(&root, "global.bak", "x\n");
    write(&root, ".git/info/exclude", "*.tmp\n");
    write(&root, ".git/my-excludes", "*.bak\n");
    git(&root, &["config", "core.excludesFile", ".git/my-excludes"]);
    let tree = scan_excluding(&root, vec![root.join(".cache/vx")]);
    assert_eq!(
        listed(&tree),
        vec![
            (".gitignore".into(), true),
            ("new.txt".into(), false),
            ("node_modules/tracked.js".into(), true),
            ("pkg/.gitignore".into(), true),
            ("pkg/keep.log".into(), false),
        ]
    );
    assert!(tree.is_ignored("debug.log"));
    assert!(tree.is_ignored("pkg/other.log"));
    assert!(tree.is_ignored("dist/out.js"));
    assert!(tree.is_ignored("secret.tmp"));
    assert!(tree.is_ignored("global.bak"));
    assert!(!tree.is_ignored("pkg/keep.log"));
    assert!(!tree.is_ignored("new.txt"));
    assert!(!tree.is_ignored(".gitignore"));
}

#[test]
fn flagged_entries_are_hashed() {
    let (_d, root) = repo();
    commit(
        &root,
        &[("a.txt", "a\n"), ("b.txt", "b\n"), ("c.txt", "c\n")],
    );
    git(&root, &["update-index", "--skip-worktree", "a.txt"]);
    git(&root, &["update-index", "--assume-unchanged", "b.txt"]);
    let mut tree = scan(&root);
    id(&mut tree, "a.txt");
    id(&mut tree, "b.txt");
    assert_eq!(tree.counters().files_hashed, 2);
    id(&mut tree, "c.txt");
    assert_eq!(tree.counters().files_hashed, 2);
}

#[test]
fn conversion_attributes_turn_the_shortcut_off() {
    let (_d, root) = repo();
    commit(
        &root,
        &[
            ("a.txt", "a\n"),
            (
                "assets/.gitattributes",
                "*.bin filter=lfs diff=lfs merge=lfs -text\n",
            ),
        ],
    );
    let mut tree = scan(&root);
    assert_eq!(
        blob(&id(&mut tree, "a.txt")).1,
        blob_id(ObjectFormat::Sha1, b"a\n")
    );
    assert_eq!(tree.counters().files_hashed, 1);

    // Attributes that only remove conversions keep it.
    let (_d2, root2) = repo();
    commit(
        &root2,
        &[("a.txt", "a\n"), (".gitattributes", "*.png binary\n")],
    );
    let mut tree = scan(&root2);
    id(&mut tree, "a.txt");
    assert_eq!(tree.counters().files_hashed, 0);
}

#[test]
fn autocrlf_turns_the_shortcut_off() {
    let (_d, root) = repo();
    commit(&root, &[("a.txt", "a\n")]);
    git(&root, &["config", "core.autocrlf", "input"]);
    let mut tree = scan(&root);
    id(&mut tree, "a.txt");
    assert_eq!(tree.counters().files_hashed, 1);
}

#[test]
fn file_mode_false_takes_the_mode_from_lstat() {
    let (_d, root) = repo();
    git(&root, &["config", "core.fileMode", "false"]);
    commit(&root, &[("run.sh", "x\n")]);
    fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    let mut tree = scan(&root);
    assert_eq!(
        blob(&id(&mut tree, "run.sh")),
        (Mode::Executable, blob_id(ObjectFormat::Sha1, b"x\n"))
    );
}

#[test]
fn submodules_and_nested_repositories_are_expanded_and_hashed() {
    let (_s, upstream) = repo();
    commit(&upstream, &[("lib.rs", "pub fn f() {}\n")]);
    let (_d, root) = repo();
    commit(&root, &[(".gitignore", "*.log\n"), ("a.txt", "a\n")]);
    git(
        &root,
        &[
            "submodule",
            "add",
            "-q",
            upstream.to_str().unwrap(),
            "libs/sub",
        ],
    );
    git(&root, &["commit", "-q", "-m", "sub"]);
    write(&root, "libs/sub/scratch.txt", "s\n");
    // A nested repository: the outer `*.log` does not reach into it.
    let nested = root.join("vendor/n");
    fs::create_dir_all(&nested).unwrap();
    git(&nested, &["init", "-q"]);
    commit(&nested, &[("n.txt", "n\n"), (".gitignore", "*.tmp\n")]);
    write(&nested, "trace.log", "l\n");
    write(&nested, "x.tmp", "t\n");
    let mut tree = scan(&root);
    assert_eq!(
        listed(&tree),
        vec![
            (".gitignore".into(), true),
            (".gitmodules".into(), true),
            ("a.txt".into(), true),
            ("libs/sub/lib.rs".into(), true),
            ("libs/sub/scratch.txt".into(), false),
            ("vendor/n/.gitignore".into(), true),
            ("vendor/n/n.txt".into(), true),
            ("vendor/n/trace.log".into(), false),
        ]
    );
    assert_eq!(tree.counters().index_reads, 3);
    let lib = id(&mut tree, "libs/sub/lib.rs");
    assert_eq!(
        blob(&lib).1,
        git(&root.join("libs/sub"), &["hash-object", "lib.rs"])
    );
    id(&mut tree, "vendor/n/n.txt");
    assert_eq!(tree.counters().files_hashed, 2);
    assert!(tree.is_ignored("vendor/n/x.tmp"));
    assert!(!tree.is_ignored("vendor/n/trace.log"));

    // Refreshing reuses the indexes already read and lists the same files.
    let before = listed(&tree);
    write(&root, "libs/sub/more.txt", "m\n");
    tree.refresh(&["".to_string()]).unwrap();
    let mut expected = before.clone();
    expected.insert(4, ("libs/sub/more.txt".into(), false));
    assert_eq!(listed(&tree), expected);
    tree.refresh(&["libs/sub".to_string(), "vendor/n".to_string()])
        .unwrap();
    assert_eq!(listed(&tree), expected);
    assert_eq!(tree.counters().index_reads, 3);
}

#[test]
fn linked_worktrees_use_their_own_index_and_the_common_config() {
    let (_d, main) = repo();
    commit(&main, &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let (_w, parent) = temp();
    let wt = parent.join("wt");
    git(&main, &["worktree", "add", "-q", wt.to_str().unwrap()]);
    age(&wt, "a.txt", 100);
    git(&wt, &["update-index", "--refresh", "-q"]);
    write(&main, ".git/info/exclude", "*.tmp\n");
    write(&wt, "x.tmp", "x\n");
    write(&wt, "new.txt", "n\n");
    let mut tree = scan(&wt);
    assert_eq!(
        listed(&tree),
        vec![
            ("a.txt".into(), true),
            ("b.txt".into(), true),
            ("new.txt".into(), false)
        ]
    );
    id(&mut tree, "a.txt");
    assert_eq!(tree.counters().files_hashed, 0);
}

#[test]
fn trees_can_be_shared_between_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Tree>();
}

#[test]
fn workspace_below_the_repository_root_has_root_relative_paths() {
    let (_d, repo_root) = repo();
    commit(
        &repo_root,
        &[
            (".gitignore", "*.log\n"),
            ("other/x.txt", "x\n"),
            ("packages/ws/a.txt", "a\n"),
            ("packages/ws/src/b.txt", "b\n"),
        ],
    );
    write(&repo_root, "packages/ws/new.txt", "n\n");
    write(&repo_root, "packages/ws/debug.log", "d\n");
    let root = repo_root.join("packages/ws");
    let mut tree = scan(&root);
    assert_eq!(
        listed(&tree),
        vec![
            ("a.txt".into(), true),
            ("new.txt".into(), false),
            ("src/b.txt".into(), true),
        ]
    );
    id(&mut tree, "src/b.txt");
    assert_eq!(tree.counters().files_hashed, 0);
    assert!(tree.is_ignored("debug.log"));
}

#[test]
fn non_utf8_names_are_set_apart() {
    let (_d, root) = repo();
    commit(&root, &[("a.txt", "a\n")]);
    let name = std::ffi::OsStr::from_bytes(b"bad\xff.txt");
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("src").join(name), "x").unwrap();
    let mut tree = scan(&root);
    assert_eq!(paths(&tree), vec!["a.txt"]);
    assert_eq!(tree.non_utf8(), ["src/bad\u{fffd}FF.txt"]);
    assert_eq!(
        vx_workspace::tree::unescape_name("src/bad\u{fffd}FF.txt").as_bytes(),
        b"src/bad\xff.txt"
    );
    assert_eq!(
        vx_workspace::tree::shown_name("src/bad\u{fffd}FF.txt"),
        "src/bad\\xFF.txt"
    );
    // The escaped name finds the file: its identity is its bytes.
    let id = tree
        .identity("src/bad\u{fffd}FF.txt", &mut vx_workspace::tree::NoMemo)
        .unwrap();
    assert!(
        matches!(id.identity, vx_workspace::tree::Identity::Present { .. }),
        "{:?}",
        id.identity
    );
}

#[test]
fn outside_git_the_walk_honours_gitignore_and_hashes() {
    let (_d, root) = temp();
    write(&root, ".gitignore", "*.log\nbuild/\n");
    write(&root, "a.txt", "a\n");
    write(&root, "x.log", "x\n");
    write(&root, "build/out", "o\n");
    write(&root, "sub/.gitignore", "!keep.log\n");
    write(&root, "sub/keep.log", "k\n");
    write(&root, "node_modules/dep.js", "d\n");
    let mut tree = scan(&root);
    assert!(!tree.in_git());
    assert_eq!(
        paths(&tree),
        vec![".gitignore", "a.txt", "sub/.gitignore", "sub/keep.log"]
    );
    assert!(tree.files().iter().all(|f| !f.tracked));
    assert!(tree.is_ignored("x.log"));
    assert_eq!(
        blob(&id(&mut tree, "a.txt")).1,
        blob_id(ObjectFormat::Sha1, b"a\n")
    );
    assert_eq!(tree.counters().files_hashed, 1);
    assert_eq!(tree.counters().index_reads, 0);
}

#[test]
fn memo_is_used_for_settled_files_only() {
    let (_d, root) = temp();
    write(&root, "old.txt", "o\n");
    write(&root, "new.txt", "n\n");
    age(&root, "old.txt", 100);
    std::thread::sleep(Duration::from_millis(120));
    let mut tree = scan(&root);
    let mut memo = MapMemo::default();
    let first = tree.identity("old.txt", &mut memo).unwrap();
    assert_eq!(tree.counters().files_hashed, 1);
    assert!(memo.0.contains_key("old.txt"));
    let second = tree.identity("old.txt", &mut memo).unwrap();
    assert_eq!(first, second);
    assert_eq!(tree.counters().files_hashed, 1);

    // Just written: hashed, not remembered.
    write(&root, "new.txt", "m\n");
    tree.identity("new.txt", &mut memo).unwrap();
    assert!(!memo.0.contains_key("new.txt"));
    assert_eq!(tree.counters().files_hashed, 2);
}

#[test]
fn deleted_files_are_absent() {
    let (_d, root) = repo();
    commit(&root, &[("a.txt", "a\n")]);
    fs::remove_file(root.join("a.txt")).unwrap();
    let mut tree = scan(&root);
    assert_eq!(listed(&tree), vec![("a.txt".into(), true)]);
    let file = id(&mut tree, "a.txt");
    assert_eq!(file.identity, Identity::Absent);
    assert_eq!(file.stat, None);
    assert_eq!(id(&mut tree, "never/there.txt").identity, Identity::Absent);
    assert_eq!(id(&mut tree, "a.txt/below").identity, Identity::Absent);
}

#[test]
fn refresh_relists_the_given_paths() {
    let (_d, root) = repo();
    commit(
        &root,
        &[
            (".gitignore", "*.log\n"),
            ("pkg/a.txt", "a\n"),
            ("pkgz.txt", "z\n"),
        ],
    );
    write(&root, "pkg/old.txt", "o\n");
    let mut tree = scan(&root);
    write(&root, "pkg/dist/new.txt", "n\n");
    write(&root, "pkg/x.log", "x\n");
    write(&root, "top.txt", "t\n");
    fs::remove_file(root.join("pkg/old.txt")).unwrap();
    fs::remove_file(root.join("pkg/a.txt")).unwrap();
    tree.refresh(&["pkg/".to_string()]).unwrap();
    assert_eq!(
        listed(&tree),
        vec![
            (".gitignore".into(), true),
            ("pkg/a.txt".into(), true),
            ("pkg/dist/new.txt".into(), false),
            ("pkgz.txt".into(), true),
        ]
    );
    assert_eq!(tree.files_under("pkg").len(), 2);
    assert_eq!(tree.files_under("pk").len(), 0);
    assert_eq!(tree.files_under("").len(), 4);
    tree.refresh(&["top.txt".to_string(), "gone.txt".to_string()])
        .unwrap();
    assert!(paths(&tree).contains(&"top.txt".to_string()));
    fs::remove_file(root.join("top.txt")).unwrap();
    tree.refresh(&["top.txt".to_string()]).unwrap();
    assert!(!paths(&tree).contains(&"top.txt".to_string()));
    assert_eq!(tree.counters().walks, 5);
    assert_eq!(tree.counters().index_reads, 1);
}

#[test]
fn sha256_repositories_use_sha256_blob_ids() {
    let (_d, root) = temp();
    let out = Command::new("git")
        .args(["init", "-q", "--object-format=sha256"])
        .current_dir(&root)
        .output()
        .unwrap();
    if !out.status.success() {
        eprintln!("git here cannot make SHA-256 repositories; skipped");
        return;
    }
    commit(&root, &[("a.txt", "a\n")]);
    write(&root, "b.txt", "b\n");
    let mut tree = scan(&root);
    assert_eq!(tree.object_format(), ObjectFormat::Sha256);
    let a = blob(&id(&mut tree, "a.txt")).1;
    assert_eq!(a.len(), 64);
    assert_eq!(a, git(&root, &["hash-object", "a.txt"]));
    assert_eq!(tree.counters().files_hashed, 0);
    let b = blob(&id(&mut tree, "b.txt")).1;
    assert_eq!(b, git(&root, &["hash-object", "b.txt"]));
    assert_eq!(b, blob_id(ObjectFormat::Sha256, b"b\n"));
}

#[test]
fn head_names_the_branch_and_its_commit_loose_packed_or_detached() {
    let (_dir, root) = repo();
    assert_eq!(
        head(&root),
        Some(Head {
            branch: Some("main".into()),
            commit: None
        }),
        "an unborn branch"
    );
    commit(&root, &[("a.txt", "a")]);
    let id = git(&root, &["rev-parse", "HEAD"]).trim().to_string();
    let expected = Head {
        branch: Some("main".into()),
        commit: Some(id.clone()),
    };
    assert_eq!(head(&root), Some(expected.clone()));
    git(&root, &["pack-refs", "--all"]);
    assert!(!root.join(".git/refs/heads/main").exists());
    assert_eq!(head(&root), Some(expected), "from packed-refs");
    git(&root, &["checkout", "-q", "--detach"]);
    assert_eq!(
        head(&root),
        Some(Head {
            branch: None,
            commit: Some(id)
        })
    );
    let (_outside, plain) = temp();
    assert_eq!(head(&plain), None);
}

/// A run snapshot records what the listing depends on: every directory listed (ignored ones
/// are not listed), the `.gitignore` files read, the index, the exclude and configuration
/// files; a refresh adds what it lists.
#[test]
fn consulted_names_the_directories_ignore_files_and_git_files_of_the_listing() {
    let (_d, root) = repo();
    commit(
        &root,
        &[
            (".gitignore", "out/\n"),
            ("a/b/c.txt", "c"),
            ("a/.gitignore", "*.log\n"),
            ("d/e.txt", "e"),
        ],
    );
    write(&root, "out/x/y.txt", "ignored");
    let mut tree = scan(&root);
    let consulted = tree.consulted().expect("no nested repositories");
    for path in [
        root.clone(),
        root.join("a"),
        root.join("a/b"),
        root.join("d"),
        root.join(".gitignore"),
        root.join("a/.gitignore"),
        root.join(".git/index"),
        root.join(".git/info/exclude"),
        root.join(".git/config"),
    ] {
        assert!(
            consulted.contains(&path),
            "{} in {consulted:?}",
            path.display()
        );
    }
    assert!(
        !consulted.contains(&root.join("out")),
        "ignored: not listed"
    );
    assert!(!consulted.contains(&root.join(".git")));
    let mut sorted = consulted.clone();
    sorted.sort();
    assert_eq!(consulted, sorted);
    // A directory created later and refreshed is consulted from then on.
    write(&root, "d/new/f.txt", "f");
    tree.refresh(&["d".to_string()]).unwrap();
    assert!(tree.consulted().unwrap().contains(&root.join("d/new")));

    // With a nested repository there is no full list.
    let nested = root.join("vendor/n");
    fs::create_dir_all(&nested).unwrap();
    git(&nested, &["init", "-q"]);
    assert_eq!(scan(&root).consulted(), None);
}

/// `vx.lock`'s blob ids (INIT-4, INIT-5): from the index when its entry vouches for the file,
/// else hashed, and always what `git hash-object` says.
#[test]
fn blob_ids_come_from_the_index_when_clean_and_are_hashed_otherwise() {
    let (_d, root) = repo();
    commit(
        &root,
        &[("vx.toml", "[workspace]\n"), ("a/package.json", "{}\n")],
    );
    write(&root, "b/vx.toml", "[tasks.t]\n");
    let paths: Vec<String> = ["vx.toml", "a/package.json", "b/vx.toml", "c/vx.toml"]
        .map(String::from)
        .to_vec();
    let found = vx_workspace::tree::blob_ids(&root, &paths).unwrap();
    let expected = |rel: &str| Some(git(&root, &["hash-object", rel]));
    assert_eq!(
        found.ids,
        vec![
            expected("vx.toml"),
            expected("a/package.json"),
            expected("b/vx.toml"),
            None
        ]
    );
    assert_eq!(found.hashed, 1, "only the untracked file is read");
    // A tracked file rewritten is hashed, and its new id given.
    write(&root, "vx.toml", "[workspace]\nmembers = []\n");
    let found = vx_workspace::tree::blob_ids(&root, &paths[..1]).unwrap();
    assert_eq!(found.ids, vec![expected("vx.toml")]);
    assert_eq!(found.hashed, 1);
    // An attributes file that could convert the bytes turns the shortcut off.
    git(&root, &["checkout", "--", "vx.toml"]);
    write(&root, "a/.gitattributes", "*.json text\n");
    let found = vx_workspace::tree::blob_ids(&root, &paths[..2]).unwrap();
    assert_eq!(
        found.ids,
        vec![expected("vx.toml"), expected("a/package.json")]
    );
    assert_eq!(found.hashed, 2);
}

#[test]
fn blob_ids_outside_git_are_hashed() {
    let (_d, root) = temp();
    write(&root, "vx.toml", "[workspace]\n");
    let found = vx_workspace::tree::blob_ids(&root, &["vx.toml".to_string()]).unwrap();
    assert_eq!(
        found.ids,
        vec![Some(blob_id(ObjectFormat::Sha1, b"[workspace]\n"))]
    );
    assert_eq!(found.hashed, 1);
}
