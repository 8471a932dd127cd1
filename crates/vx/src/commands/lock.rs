//! `vx lock` (INIT-4): writes `vx.lock`, the resolved projects, edges and tasks that
//! `vx run --frozen` takes instead of parsing configuration; `--check` compares it with the
//! configuration resolved again.

use std::io::Write;
use std::path::Path;

use vx_core::graph::TaskTable;
use vx_workspace::LOCK_FILE;

use crate::cli::LockArgs;
use crate::render::{out_str, stderr};
use vx_engine::error::Failure;
use vx_engine::exit;
use vx_engine::workspace::{io_diagnostic, load, load_error};

/// How often the configuration is resolved again when it keeps changing under `vx lock`.
const ATTEMPTS: usize = 3;

pub fn lock(cwd: &Path, args: LockArgs) -> Result<i32, Failure> {
    let (workspace, lock) = steady_lock(cwd)?;
    let root = &workspace.root;
    if args.check {
        return check(root, &lock);
    }
    let path = root.join(LOCK_FILE);
    let text = lock.text();
    let counts = format!("{} projects, {} tasks", lock.projects(), lock.tasks());
    if std::fs::read_to_string(&path).is_ok_and(|old| old == text) {
        out_str(&format!("{LOCK_FILE} is up to date: {counts}\n"));
        return Ok(exit::SUCCESS);
    }
    write_atomically(&path, &text)?;
    out_str(&format!("wrote {LOCK_FILE}: {counts}\n"));
    Ok(exit::SUCCESS)
}

/// The configuration resolved and its lock, twice over with the same result: the blob ids are
/// taken after the files were read, so a file changed in between would pair a new id with what
/// the old bytes said; a second resolution that agrees proves no such change.
fn steady_lock(cwd: &Path) -> Result<(vx_core::Workspace, vx_workspace::Lock), Failure> {
    let resolve = || -> Result<(vx_core::Workspace, vx_workspace::Lock), Failure> {
        let workspace = load(cwd)?;
        // A lock is only written for a configuration a run would accept: every `depends-on`
        // entry resolves.
        TaskTable::resolve(&workspace)?;
        let lock = vx_workspace::lock(&workspace).map_err(load_error)?;
        Ok((workspace, lock))
    };
    let mut last = resolve()?;
    for _ in 1..ATTEMPTS {
        let next = resolve()?;
        if next.1 == last.1 {
            return Ok(next);
        }
        last = next;
    }
    Err(Failure::usage(
        "the configuration kept changing while vx lock read it; run it again when it is still",
    ))
}

/// `--check`: each project that drifted, exit 1; no lock, exit 1.
fn check(root: &Path, lock: &vx_workspace::Lock) -> Result<i32, Failure> {
    let Some(drift) = vx_workspace::drift(root, lock).map_err(load_error)? else {
        stderr(&format!(
            "error: there is no {LOCK_FILE} at the workspace root\n  hint: run `vx lock`\n"
        ));
        return Ok(exit::FAILURE);
    };
    if drift.is_empty() {
        out_str(&format!("{LOCK_FILE} is up to date\n"));
        return Ok(exit::SUCCESS);
    }
    let mut text = String::new();
    for d in &drift {
        let shown = if d.dir.is_empty() {
            "the workspace root"
        } else {
            &d.dir
        };
        text.push_str(&format!("drift: {shown} ({})\n", d.what));
    }
    out_str(&text);
    stderr("  hint: run `vx lock` to write it again\n");
    Ok(exit::FAILURE)
}

/// Writes the whole file or nothing: a temporary file beside it, renamed over it.
fn write_atomically(path: &Path, text: &str) -> Result<(), Failure> {
    let temp = path.with_file_name(format!(".{LOCK_FILE}.{}.tmp", std::process::id()));
    let written = std::fs::File::create(&temp)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            file.sync_all()
        })
        .and_then(|()| std::fs::rename(&temp, path));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        Failure::from(io_diagnostic(path, "write", &e))
    })
}
