//! Writes `vx prune`'s output: into a staging directory beside it, then in its place. An
//! existing output directory is replaced only when `vx prune` wrote it (its marker file says
//! so); anything else there is refused, never removed.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use vx_engine::error::Failure;

use super::plan::Content;

/// The file that marks a directory as `vx prune`'s output.
pub const MARKER: &str = ".vx-prune";

/// A directory being written, removed when dropped unless [`Staging::finish`] moved it.
pub struct Staging {
    pub dir: PathBuf,
    done: bool,
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Whether `out` may be written: absent, empty, or `vx prune`'s.
pub fn check_out(out: &Path) -> Result<(), Failure> {
    match std::fs::read_dir(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Failure::usage(format!("--out {}: {e}", out.display()))),
        Ok(mut entries) => {
            if entries.next().is_none() || out.join(MARKER).is_file() {
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

/// A new staging directory beside `out`.
pub fn stage(out: &Path) -> Result<Staging, Failure> {
    let parent = out.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
    let name = out
        .file_name()
        .map_or("out".into(), |n| n.to_string_lossy().into_owned());
    let dir = parent.join(format!(".{name}.vx-prune-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).map_err(|e| io(&dir, e))?;
    Ok(Staging { dir, done: false })
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
    /// Puts the staging directory in `out`'s place (the old output removed first).
    pub fn finish(mut self, out: &Path) -> Result<(), Failure> {
        check_out(out)?;
        if out.exists() {
            std::fs::remove_dir_all(out).map_err(|e| io(out, e))?;
        }
        std::fs::rename(&self.dir, out).map_err(|e| io(out, e))?;
        self.done = true;
        Ok(())
    }
}

fn io(path: &Path, e: std::io::Error) -> Failure {
    Failure::usage(format!("{}: {e}", path.display()))
}
