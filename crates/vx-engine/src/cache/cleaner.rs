//! What cleaning needs beyond one task: the run's memo of uncommitted changes ([`Cleaner`]),
//! and [`remove`], which removes a task's outputs once the protections (`clean.rs`) allowed it.

use std::collections::HashSet;
use std::io;
use std::path::Path;

use vx_store::artifact::Unlinker;

use super::outputs::{is_missing, plain, Found, Outputs};
use crate::keys::is_under;

/// Which of these tracked paths have uncommitted changes (STORE-10).
pub type DirtyProbe<'p> = Box<dyn FnMut(&[String]) -> HashSet<String> + 'p>;

/// What cleaning learns once per run: which tracked paths have uncommitted changes.
pub struct Cleaner<'p> {
    /// Tracked paths with staged or unstaged changes, computed on first need.
    pub(super) dirty: Option<HashSet<String>>,
    pub(super) dirty_probe: DirtyProbe<'p>,
}

impl<'p> Cleaner<'p> {
    pub fn new(dirty_probe: DirtyProbe<'p>) -> Cleaner<'p> {
        Cleaner {
            dirty: None,
            dirty_probe,
        }
    }

    /// Whether `path` has uncommitted changes; `tracked` (the candidates that are tracked) is
    /// what the first question asks git about.
    pub(super) fn is_dirty(&mut self, path: &str, tracked: &[String]) -> bool {
        if self.dirty.is_none() && !tracked.is_empty() {
            self.dirty = Some((self.dirty_probe)(tracked));
        }
        self.dirty.as_ref().is_some_and(|d| d.contains(path))
    }
}

/// STORE-10 step 1, after the protections were checked: removes every match (links are
/// unlinked, never followed), then directories left empty below the kept prefixes (a matched
/// directory that still holds something unmatched stays).
pub fn remove(outputs: &Outputs, root: &Path, found: &[Found]) -> Result<(), CleanError> {
    let mut dirs: Vec<String> = Vec::new();
    // Through directory descriptors: a directory swapped for a symlink while vx cleans is
    // never removed through.
    let mut unlinker = Unlinker::new(root);
    for f in found {
        if f.meta.is_dir() {
            dirs.push(f.path.clone());
            continue;
        }
        if let Err(e) = unlinker.remove(Path::new(&f.path), false) {
            if !is_missing(&e) {
                return Err(CleanError::Remove {
                    path: f.path.clone(),
                    source: e,
                });
            }
        }
        let mut parent = f.path.as_str();
        while let Some((up, _)) = parent.rsplit_once('/') {
            dirs.push(up.to_string());
            parent = up;
        }
    }
    let keep = outputs.prefixes();
    dirs.sort();
    dirs.dedup();
    // Deepest first, so a parent is tried after its children. Only a directory below some
    // glob's literal prefix may go.
    for dir in dirs.iter().rev() {
        let kept = keep.iter().any(|k| is_under(k, dir));
        let covered = keep.iter().any(|p| is_under(dir, p) && dir != p);
        if kept || !covered {
            continue;
        }
        let _ = unlinker.remove(Path::new(dir), true);
    }
    Ok(())
}

#[derive(Debug, thiserror::Error)]
pub enum CleanError {
    #[error("cannot remove `{path}`: {}", plain(source))]
    Remove { path: String, source: io::Error },
}
