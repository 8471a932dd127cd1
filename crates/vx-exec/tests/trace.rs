//! The tracer of SBX-7 on real processes: what a traced command and its children open,
//! execute, create, remove and rename. One test: the tracer waits for any child of this
//! process, so nothing else may run beside it.

use std::path::PathBuf;

use vx_exec::trace::{spawn_traced, AccessKind};

fn traced(script: &str, dir: &std::path::Path) -> Vec<(AccessKind, PathBuf)> {
    let tracer =
        spawn_traced(&"/bin/sh".into(), &["-c".into(), script.into()], false).expect("traced");
    let _ = dir;
    let (status, accesses) = tracer.wait();
    assert!(
        matches!(status, nix::sys::wait::WaitStatus::Exited(_, 0)),
        "{script}: {status:?}"
    );
    accesses.into_iter().map(|a| (a.kind, a.path)).collect()
}

#[test]
fn the_tracer_sees_every_path_the_tree_touches() {
    if !vx_exec::trace::supported() {
        eprintln!("skipped: the tracer supports Linux on x86-64 only");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("in.txt"), "x").unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    let script = format!(
        "cd {d} && cat in.txt > out.txt && (cd sub && cat ../in.txt >/dev/null) && \
         mkdir made && mv out.txt moved.txt && rm moved.txt",
        d = d.display()
    );
    let seen = traced(&script, d);
    let has = |kind: AccessKind, rel: &str| seen.contains(&(kind, d.join(rel)));
    assert!(has(AccessKind::Read, "in.txt"), "{seen:?}");
    assert!(has(AccessKind::Write, "out.txt"), "{seen:?}");
    // A relative path in a child process is resolved against that child's directory.
    assert!(
        seen.contains(&(AccessKind::Read, d.join("sub/../in.txt"))),
        "{seen:?}"
    );
    assert!(has(AccessKind::Write, "made"), "{seen:?}");
    assert!(has(AccessKind::Write, "moved.txt"), "{seen:?}");
    // Executing a program is a read of it.
    assert!(
        seen.iter()
            .any(|(k, p)| *k == AccessKind::Read && p.ends_with("cat")),
        "{seen:?}"
    );
    // A command that fails still reports; its status comes back.
    let tracer =
        spawn_traced(&"/bin/sh".into(), &["-c".into(), "exit 3".into()], false).expect("traced");
    let (status, _) = tracer.wait();
    assert!(
        matches!(status, nix::sys::wait::WaitStatus::Exited(_, 3)),
        "{status:?}"
    );
}
