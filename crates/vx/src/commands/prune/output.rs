//! Writes `vx prune`'s output: into a staging directory inside it, then, once complete, in
//! place of what was there (the directory itself stays: it may be a mount point or a link). An
//! existing output directory is replaced only when `vx prune` wrote it (its marker file says
//! so); anything else there is refused, never removed.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use vx_engine::error::Failure;

use super::plan::Content;

/// The file that marks a directory as `vx prune`'s output.
pub const MARKER: &str = ".vx-prune";

/// The prefix of a staging directory's name.
const STAGING: &str = ".vx-prune-staging-";

/// A directory being written, removed when dropped unless [`Staging::finish`] moved it (with
/// the output directory, when this run made it and it is empty).
pub struct Staging {
    pub dir: PathBuf,
    out: PathBuf,
    made_out: bool,
    done: bool,
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_dir_all(&self.dir);
            if self.made_out {
                let _ = std::fs::remove_dir(&self.out);
            }
        }
    }
}

fn is_staging(name: &std::ffi::OsStr) -> bool {
    name.to_string_lossy().starts_with(STAGING)
}

/// Whether `out` may be written: absent, empty, `vx prune`'s (its marker), or holding only
/// what a killed run left (staging directories).
pub fn check_out(out: &Path) -> Result<(), Failure> {
    match std::fs::read_dir(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Failure::usage(format!("--out {}: {e}", out.display()))),
        Ok(entries) => {
            let mut names = entries.filter_map(|e| e.ok().map(|e| e.file_name()));
            if out.join(MARKER).is_file() || names.all(|n| is_staging(&n)) {
                Ok(())
            } else {
                Err(Failure::usage(format!(
                    "--out {}: the directory exists and vx prune did not write it \
                     (no {MARKER} in it); name another or remove it",
                    out.display()
                )))
            }
        }
    }
}

/// A new staging directory inside `out` (made if missing), after what killed runs left.
pub fn stage(out: &Path) -> Result<Staging, Failure> {
    let made_out = !out.exists();
    std::fs::create_dir_all(out).map_err(|e| io(out, e))?;
    for entry in std::fs::read_dir(out).map_err(|e| io(out, e))?.flatten() {
        if is_staging(&entry.file_name()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let dir = out.join(format!("{STAGING}{}", std::process::id()));
    std::fs::create_dir(&dir).map_err(|e| io(&dir, e))?;
    Ok(Staging {
        dir,
        out: out.to_path_buf(),
        made_out,
        done: false,
    })
}

/// Writes `files` under `dir`.
pub fn write_all(dir: &Path, files: &BTreeMap<String, Content>) -> Result<(), Failure> {
    for (rel, content) in files {
        let to = dir.join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
        }
        match content {
            Content::Written(bytes, mode) => {
                std::fs::write(&to, bytes).map_err(|e| io(&to, e))?;
                std::fs::set_permissions(&to, std::fs::Permissions::from_mode(*mode))
                    .map_err(|e| io(&to, e))?;
            }
            Content::Copy(from) => copy(from, &to)?,
        }
    }
    Ok(())
}

/// A file or symbolic link copied with its mode (a symbolic link as its text).
fn copy(from: &Path, to: &Path) -> Result<(), Failure> {
    let meta = from.symlink_metadata().map_err(|e| io(from, e))?;
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(from).map_err(|e| io(from, e))?;
        std::os::unix::fs::symlink(&target, to).map_err(|e| io(to, e))?;
    } else {
        std::fs::copy(from, to).map_err(|e| io(from, e))?;
        let mode = meta.permissions().mode() & 0o777;
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(mode))
            .map_err(|e| io(to, e))?;
    }
    Ok(())
}

impl Staging {
    /// Empties the output directory of everything but the staging directory, then moves the
    /// staged entries up into it.
    pub fn finish(mut self) -> Result<(), Failure> {
        check_out(&self.out)?;
        for entry in std::fs::read_dir(&self.out).map_err(|e| io(&self.out, e))? {
            let entry = entry.map_err(|e| io(&self.out, e))?;
            let path = entry.path();
            if path == self.dir {
                continue;
            }
            let removed = if entry.file_type().is_ok_and(|t| t.is_dir()) {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            removed.map_err(|e| io(&path, e))?;
        }
        for entry in std::fs::read_dir(&self.dir).map_err(|e| io(&self.dir, e))? {
            let entry = entry.map_err(|e| io(&self.dir, e))?;
            let to = self.out.join(entry.file_name());
            std::fs::rename(entry.path(), &to).map_err(|e| io(&to, e))?;
        }
        std::fs::remove_dir(&self.dir).map_err(|e| io(&self.dir, e))?;
        self.done = true;
        Ok(())
    }
}

fn io(path: &Path, e: std::io::Error) -> Failure {
    Failure::usage(format!("{}: {e}", path.display()))
}
