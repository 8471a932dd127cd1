//! The sandbox's walls in every checkout shape, on the real binary with the real bubblewrap
//! (SBX-4, SBX-7): a cached output cannot carry an ungranted file past the sandbox, a
//! linked worktree's git directories are walled, a read through a symlink or `/proc/self/cwd`
//! is reported where it lands, and no scratch directory outlives vx. Each test asks
//! `sandbox_or_skip` first (skipped with the reason here, failing under `CI`).

use std::path::{Path, PathBuf};
use std::process::Command;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use vx_test_support::process::{test_child_path, unique_marker};

use crate::guard::{spawn_vx, wait_for_markers};
use crate::sandbox::sandbox_or_skip;
use crate::{assert_contains, assert_no_survivor, one_project, vx_bin};

/// The issue's reproduction: `plant` leaves a link to an ungranted project file among its
/// outputs, `reader` may read only those outputs.
const PLANT_AND_READER: &str = r#"
[tasks.plant]
command = "mkdir -p out && ln -sf ../private.txt out/leak"
cache = { inputs = ["src/**"], outputs = ["out/**"] }
sandbox = { read = ["src"], write = ["out"] }

[tasks.reader]
command = "cat out/leak"
depends-on = ["plant"]
sandbox = { read = ["out"] }
"#;

#[test]
fn a_cached_link_never_carries_an_ungranted_file_into_a_sandboxed_dependant() {
    if !sandbox_or_skip() {
        return;
    }
    let f = one_project(PLANT_AND_READER);
    f.write(".gitignore", ".vx/\nout/\n");
    f.write("packages/lib/src/a.txt", "a\n");
    f.write("packages/lib/private.txt", "the private text\n");
    f.commit();
    let first = f.vx(&["run", "lib#reader"]);
    assert_eq!(first.code, 1, "{}{}", first.stdout, first.stderr);
    assert_contains(
        &first.stdout,
        "│ read  packages/lib/private.txt (via packages/lib/out/leak)\n",
    );
    // Restored from the cache, the output is the same link, and the read is refused the same.
    std::fs::remove_dir_all(f.path("packages/lib/out")).unwrap();
    let again = f.vx(&["run", "lib#reader"]);
    assert_eq!(again.code, 1, "{}{}", again.stdout, again.stderr);
    let leak = f.path("packages/lib/out/leak");
    assert_eq!(
        std::fs::read_link(&leak).unwrap(),
        Path::new("../private.txt"),
        "plant's output was restored as the link it made"
    );
    assert!(
        !again.stdout.contains("the private text"),
        "{}",
        again.stdout
    );
    assert_contains(
        &again.stdout,
        "│ read  packages/lib/private.txt (via packages/lib/out/leak)\n",
    );
}

#[test]
fn reads_through_a_link_in_a_grant_or_through_proc_are_violations_naming_both_paths() {
    if !sandbox_or_skip() {
        return;
    }
    let f = one_project(concat!(
        "[tasks.link]\ncommand = 'cat src/link'\nsandbox = { read = ['src'] }\n\n",
        "[tasks.proc]\ncommand = 'cat /proc/self/cwd/../q/secret.txt'\nsandbox = {}\n",
    ));
    f.write("packages/q/secret.txt", "sibling secret\n");
    f.write("packages/lib/src/a.txt", "a\n");
    std::os::unix::fs::symlink("../../q/secret.txt", f.path("packages/lib/src/link")).unwrap();
    f.commit();
    let out = f.vx(&["run", "lib#link"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert_contains(
        &out.stdout,
        "│ read  packages/q/secret.txt (via packages/lib/src/link)\n",
    );
    let out = f.vx(&["run", "lib#proc"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert_contains(
        &out.stdout,
        "│ read  packages/q/secret.txt (via /proc/self/cwd/../q/secret.txt)\n",
    );
    assert!(!out.stdout.contains("sibling secret"), "{}", out.stdout);
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

#[test]
fn a_linked_worktree_cannot_read_the_repository_through_its_common_git_dir() {
    if !sandbox_or_skip() {
        return;
    }
    // The main checkout lives outside /tmp (the sandbox replaces /tmp), the worktree in /tmp.
    let main = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let main_dir = main.path().join("main");
    std::fs::create_dir(&main_dir).unwrap();
    git(&main_dir, &["init", "-q", "-b", "main"]);
    git(&main_dir, &["config", "user.email", "test@example.com"]);
    git(&main_dir, &["config", "user.name", "vx test"]);
    let write = |rel: &str, text: &str| {
        let path = main_dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
    write("packages/p/package.json", r#"{ "name": "p" }"#);
    write("packages/q/package.json", r#"{ "name": "q" }"#);
    write("packages/q/secret.txt", "sibling secret\n");
    let common = main_dir.join(".git").canonicalize().unwrap();
    write(
        "packages/p/vx.toml",
        &format!(
            "[tasks.peek]\ncommand = \"cat {0}/HEAD; git --git-dir={0} show HEAD:packages/q/secret.txt\"\nsandbox = {{}}\n",
            common.display()
        ),
    );
    write(".gitignore", ".vx/\n");
    git(&main_dir, &["add", "-A"]);
    git(&main_dir, &["commit", "-q", "-m", "init"]);
    let wt_parent = tempfile::tempdir().unwrap();
    let wt = wt_parent.path().join("wt");
    git(&main_dir, &["worktree", "add", "-q", wt.to_str().unwrap()]);
    let out = Command::new(vx_bin())
        .current_dir(&wt)
        .args(["run", "p#peek"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{out:?}");
    assert!(!stdout.contains("sibling secret"), "{stdout}");
    assert_contains(&stdout, &format!("│ read  {}/HEAD\n", common.display()));
}

/// The line a task writes to `path`, once it is whole (waiting for it, bounded).
fn line_of(path: &Path) -> String {
    let started = std::time::Instant::now();
    loop {
        match std::fs::read_to_string(path) {
            Ok(text) if text.ends_with('\n') => return text,
            _ => {}
        }
        assert!(
            started.elapsed().as_secs() < 30,
            "the task never wrote {}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The scratch directory a sandboxed task's `TMPDIR` lies in.
fn scratch_of(tmpdir: &str) -> PathBuf {
    let tmpdir = Path::new(tmpdir.trim());
    let scratch = tmpdir
        .parent()
        .unwrap_or_else(|| panic!("TMPDIR was {tmpdir:?}"))
        .to_path_buf();
    assert!(
        scratch
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("vx-sandbox-"),
        "{}",
        tmpdir.display()
    );
    scratch
}

#[test]
fn no_scratch_directory_outlives_a_run_its_end_or_its_signal() {
    if !sandbox_or_skip() {
        return;
    }
    let child = test_child_path().display().to_string();
    let marker = unique_marker("sbx-scratch");
    let f = one_project(&format!(
        concat!(
            "[tasks.once]\ncommand = 'mkdir -p out && echo $TMPDIR > out/tmpdir'\n",
            "sandbox = {{ write = ['out'] }}\n\n",
            "[tasks.long]\ncommand = 'mkdir -p out && echo $TMPDIR > out/long && {c} --marker {m} sleep 300'\n",
            "sandbox = {{ write = ['out'], read = ['{c}'] }}\n",
        ),
        c = child,
        m = marker,
    ));
    let out = f.vx(&["run", "lib#once"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let scratch = scratch_of(&f.read("packages/lib/out/tmpdir"));
    assert!(!scratch.exists(), "{} is left behind", scratch.display());

    let vx = spawn_vx(&f, &["run", "lib#long"], true);
    wait_for_markers(&marker, 1);
    // The shell's own argv carries the marker too: wait for the line it writes first.
    let long = f.path("packages/lib/out/long");
    let scratch = scratch_of(&line_of(&long));
    assert!(scratch.exists());
    let mut vx = vx.take();
    kill(Pid::from_raw(vx.id() as i32), Signal::SIGTERM).unwrap();
    assert_eq!(vx.wait().unwrap().code(), Some(143));
    assert_no_survivor(&marker);
    assert!(!scratch.exists(), "{} is left behind", scratch.display());

    // `kill -9` of vx: its guard removes the scratch directory with the tasks.
    std::fs::remove_file(f.path("packages/lib/out/long")).unwrap();
    let vx = spawn_vx(&f, &["run", "lib#long"], false);
    let long = f.path("packages/lib/out/long");
    let scratch = scratch_of(&line_of(&long));
    assert!(scratch.exists());
    crate::guard::kill_vx_and_expect_no_survivor(vx, &marker);
    let gone_by = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while scratch.exists() && std::time::Instant::now() < gone_by {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        !scratch.exists(),
        "{} outlived kill -9 of vx",
        scratch.display()
    );
}

/// `vx info` probes the sandbox with a trial command: its scratch directory goes with it.
#[test]
fn vx_info_leaves_no_scratch_directory() {
    if !sandbox_or_skip() {
        return;
    }
    let f = one_project("[tasks.build]\ncommand = 'true'\nsandbox = {}\n");
    let mut info = f.command("", &["info"]);
    info.stdout(std::process::Stdio::null());
    let mut child = info.spawn().unwrap();
    let pid = child.id() as i32;
    assert!(child.wait().unwrap().success());
    assert_eq!(
        vx_exec::sandbox::scratch_dirs_of(pid),
        Vec::<PathBuf>::new(),
        "vx info left its scratch directory"
    );
}

/// A cache directory outside the workspace holds every task's outputs and
/// logs; a sandboxed task sees it empty.
#[test]
fn a_cache_directory_outside_the_workspace_is_hidden_from_a_sandboxed_task() {
    if !sandbox_or_skip() {
        return;
    }
    // Not under `/tmp`, which the sandbox replaces anyway.
    let cache = tempfile::tempdir_in("/var/tmp").unwrap();
    let dir = cache.path().display().to_string();
    let f = one_project(&format!(
        concat!(
            "[tasks.build]\ncommand = 'mkdir -p out && echo the secret output > out/s.txt'\n",
            "cache = {{ inputs = ['src/**'], outputs = ['out/**'] }}\n\n",
            "[tasks.peek]\n",
            "command = 'echo \"listing=[$(ls -A {dir} 2>/dev/null | tr -d \"\\\\n\")]\"'\n",
            "sandbox = {{}}\n",
        ),
        dir = dir
    ));
    f.write(".gitignore", ".vx/\nout/\n");
    f.write("packages/lib/src/a.txt", "a\n");
    f.commit();
    let built = f.vx(&["run", "lib#build", "--cache-dir", &dir]);
    assert_eq!(built.code, 0, "{}{}", built.stdout, built.stderr);
    assert!(cache.path().join("artifacts").is_dir());
    let peek = f.vx(&["run", "lib#peek", "--cache-dir", &dir, "--output-logs=full"]);
    assert_contains(&peek.stdout, "listing=[]\n");
}

/// In a clone made with `git clone --shared`, the origin's object store holds
/// every file of every project; a sandboxed task cannot read it.
#[test]
fn the_object_store_a_shared_clone_borrows_from_is_walled() {
    if !sandbox_or_skip() {
        return;
    }
    // The origin outside `/tmp`, which the sandbox replaces anyway.
    let holder = tempfile::tempdir_in("/var/tmp").unwrap();
    let origin = holder.path().join("origin");
    let write = |rel: &str, text: &str| {
        let path = origin.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("vx.toml", "[workspace]\nmembers = [\"packages/*\"]\n");
    write("packages/lib/package.json", r#"{ "name": "lib" }"#);
    write(
        "packages/lib/vx.toml",
        &format!(
            "[tasks.peek]\ncommand = 'git --git-dir={}/.git show HEAD:packages/other/secret.txt'\nsandbox = {{}}\n",
            origin.display()
        ),
    );
    write("packages/other/package.json", r#"{ "name": "other" }"#);
    write("packages/other/secret.txt", "the other project's secret\n");
    let git = |dir: &Path, args: &[&str]| {
        let ok = Command::new("git")
            .current_dir(dir)
            .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(holder.path(), &["init", "-q", "-b", "main", "origin"]);
    git(&origin, &["add", "-A"]);
    git(&origin, &["commit", "-q", "-m", "origin"]);
    let clone = holder.path().join("clone");
    git(
        holder.path(),
        &["clone", "-q", "--shared", "origin", "clone"],
    );
    assert!(clone.join(".git/objects/info/alternates").is_file());
    let out = Command::new(crate::vx_bin())
        .args(["run", "lib#peek", "--output-logs=full"])
        .current_dir(&clone)
        .env_remove("CI")
        .env_remove("GIT_DIR")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("the other project's secret"), "{text}");
    assert_ne!(out.status.code(), Some(0), "{text}");
}

/// A host process's Unix socket (under `/var/tmp`, as a Docker or ssh-agent
/// socket would be elsewhere) is unreachable from a sandboxed task — a stream `connect` fails
/// and is a violation, a datagram socket cannot be made — while a socket the task makes itself
/// in its `TMPDIR` works.
#[test]
fn a_host_unix_socket_is_unreachable_from_a_sandboxed_task_and_its_own_works() {
    use std::io::{Read, Write};
    use std::os::unix::net::{UnixDatagram, UnixListener};
    if !sandbox_or_skip() {
        return;
    }
    let holder = tempfile::tempdir_in("/var/tmp").unwrap();
    let stream = holder.path().join("daemon.sock");
    let datagram = holder.path().join("log.sock");
    let listener = UnixListener::bind(&stream).unwrap();
    listener.set_nonblocking(true).unwrap();
    let receiver = UnixDatagram::bind(&datagram).unwrap();
    receiver.set_nonblocking(true).unwrap();
    let f = one_project(&format!(
        concat!(
            "[tasks.stream]\n",
            "command = '''python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{stream}'); s.sendall(b'hello'); print('answer', s.recv(16))\"'''\n",
            "sandbox = {{}}\n\n",
            "[tasks.datagram]\n",
            "command = '''python3 -c \"import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b'hello', '{datagram}'); print('sent')\"'''\n",
            "sandbox = {{}}\n\n",
            "[tasks.own]\n",
            "command = '''python3 -c \"import os, socket; p = os.environ['TMPDIR'] + '/own.sock'; l = socket.socket(socket.AF_UNIX); l.bind(p); l.listen(1); c = socket.socket(socket.AF_UNIX); c.connect(p); a, _ = l.accept(); c.sendall(b'ping'); print('own', a.recv(4))\"'''\n",
            "sandbox = {{}}\n",
        ),
        stream = stream.display(),
        datagram = datagram.display(),
    ));
    f.commit();
    // The host side answers whoever connects, until told to stop.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = done.clone();
    let answered = std::thread::spawn(move || {
        let mut accepted = 0;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            if let Ok((mut peer, _)) = listener.accept() {
                accepted += 1;
                let mut buf = [0u8; 5];
                let _ = peer.read(&mut buf);
                let _ = peer.write_all(b"from the host");
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        accepted
    });

    let out = f.vx(&["run", "lib#stream", "--output-logs=full"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains("from the host"), "{}", out.stdout);
    assert_contains(&out.stdout, &format!("│ net   unix:{}\n", stream.display()));
    assert_contains(&out.stdout, "reaches only the Unix sockets it makes itself");

    let out = f.vx(&["run", "lib#datagram", "--output-logs=full"]);
    assert_ne!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let mut buf = [0u8; 16];
    assert!(
        receiver.recv(&mut buf).is_err(),
        "a datagram reached the host"
    );

    let out = f.vx(&["run", "lib#own", "--output-logs=full"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stdout, "own b'ping'");

    done.store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        answered.join().unwrap(),
        0,
        "the host socket accepted a connection"
    );
}
