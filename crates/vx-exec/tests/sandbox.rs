//! The sandbox's view of the file system with the real bubblewrap (SBX-2 to SBX-5, TEST-3):
//! what a planned view lets a shell read and write. Without bubblewrap these tests say so and
//! pass, unless `CI` is set, where they fail (the test command installs it).

use std::path::{Path, PathBuf};
use std::process::Command;

use vx_exec::sandbox::{bwrap_args, plan, View};

fn bwrap() -> Option<PathBuf> {
    vx_test_support::process::bwrap_or_skip()
}

struct Sandbox {
    _dir: tempfile::TempDir,
    root: PathBuf,
    view: View,
}

/// A workspace: `a.txt` at the root, project `packages/app` with `src/x.txt`, `secret.txt`
/// and a nested project `packages/app/nested`, project `packages/lib`, and `.git/HEAD`.
fn workspace() -> Sandbox {
    // Outside /tmp: the sandbox has a private /tmp, which would hide a workspace there whatever
    // the plan did.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = dir.path().join("ws");
    for (rel, text) in [
        ("a.txt", "root file"),
        (".git/HEAD", "ref: refs/heads/main"),
        ("packages/app/src/x.txt", "granted source"),
        ("packages/app/secret.txt", "not granted"),
        ("packages/app/nested/inner.txt", "a nested project"),
        ("packages/lib/index.txt", "another project"),
    ] {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let tmpdir = dir.path().join("task-tmp");
    std::fs::create_dir(&tmpdir).unwrap();
    let empty_file = dir.path().join("empty");
    std::fs::write(&empty_file, "").unwrap();
    let view = View {
        root: root.clone(),
        project: root.join("packages/app"),
        walls: vec![root.join(".git"), root.join("packages/app/nested")],
        tmpdir,
        empty_file,
        ..View::default()
    };
    Sandbox {
        _dir: dir,
        root,
        view,
    }
}

/// Runs `script` with `sh -c` in the sandbox: exit code and output.
fn run(bwrap: &Path, view: &View, script: &str) -> (i32, String) {
    let mounts = plan(view).expect("a plan");
    let out = Command::new(bwrap)
        .args(bwrap_args(&mounts, view))
        .args(["sh", "-c", script])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn only_granted_paths_of_the_workspace_are_readable() {
    let Some(bwrap) = bwrap() else { return };
    let mut s = workspace();
    s.view.reads = vec![s.root.join("packages/app/src")];
    assert_eq!(
        run(&bwrap, &s.view, "cat src/x.txt"),
        (0, "granted source".into())
    );
    let (code, _) = run(&bwrap, &s.view, "cat secret.txt");
    assert_ne!(code, 0, "an ungranted file of the project");
    let (code, _) = run(&bwrap, &s.view, "cat ../lib/index.txt");
    assert_ne!(code, 0, "another project");
    let (code, out) = run(&bwrap, &s.view, "ls -A ../..");
    assert_eq!(
        (code, out.as_str()),
        (0, "packages\n"),
        "the root holds only the way to the grant"
    );
    // Outside the workspace the host is readable.
    assert_eq!(
        run(&bwrap, &s.view, "test -r /etc/passwd && echo ok"),
        (0, "ok\n".into())
    );
}

#[test]
fn a_root_grant_never_shows_the_walls() {
    let Some(bwrap) = bwrap() else { return };
    let mut s = workspace();
    s.view.reads = vec![s.root.clone()];
    assert_eq!(
        run(&bwrap, &s.view, "cat ../../a.txt"),
        (0, "root file".into())
    );
    assert_eq!(
        run(&bwrap, &s.view, "cat ../lib/index.txt"),
        (0, "another project".into())
    );
    let (code, _) = run(&bwrap, &s.view, "cat ../../.git/HEAD");
    assert_ne!(code, 0, ".git is a wall");
    assert_eq!(
        run(&bwrap, &s.view, "ls -A nested"),
        (0, String::new()),
        "a nested project is empty"
    );
    // Naming a path inside a wall shows that path, and only it.
    s.view.reads.push(s.root.join(".git/HEAD"));
    assert_eq!(
        run(&bwrap, &s.view, "cat ../../.git/HEAD"),
        (0, "ref: refs/heads/main".into())
    );
}

#[test]
fn writes_land_only_in_write_grants_and_the_task_temporary_directory() {
    let Some(bwrap) = bwrap() else { return };
    let mut s = workspace();
    let dist = s.root.join("packages/app/dist");
    std::fs::create_dir(&dist).unwrap();
    s.view.writes = vec![dist.clone()];
    s.view.reads = vec![s.root.join("packages/app")];
    assert_eq!(run(&bwrap, &s.view, "echo built > dist/out.txt").0, 0);
    assert_eq!(
        std::fs::read_to_string(dist.join("out.txt")).unwrap(),
        "built\n"
    );
    let (code, _) = run(&bwrap, &s.view, "echo no > other.txt");
    assert_ne!(code, 0, "the project is read-only");
    assert!(!s.root.join("packages/app/other.txt").exists());
    let tmp = s.view.tmpdir.display().to_string();
    assert_eq!(
        run(
            &bwrap,
            &s.view,
            &format!("echo t > {tmp}/t && echo x > /tmp/private")
        )
        .0,
        0
    );
    assert!(s.view.tmpdir.join("t").exists());
    assert!(
        !Path::new("/tmp/private").exists()
            || std::fs::read_to_string("/tmp/private").unwrap() != "x\n"
    );
}

#[test]
fn hidden_credentials_read_as_empty() {
    let Some(bwrap) = bwrap() else { return };
    let s = workspace();
    let home = s.root.parent().unwrap().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
    std::fs::write(home.join(".npmrc"), "//registry/:_authToken=secret").unwrap();
    let mut view = s.view.clone();
    view.hidden = vec![(home.join(".ssh"), true), (home.join(".npmrc"), false)];
    let home = home.display();
    let (code, out) = run(
        &bwrap,
        &view,
        &format!("cat {home}/.npmrc; ls -A {home}/.ssh; echo end"),
    );
    assert_eq!((code, out.as_str()), (0, "end\n"));
}
