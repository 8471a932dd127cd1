//! The directory walk that finds untracked, not ignored files (KEY-10), in parallel.
//!
//! A [`Job`] is one directory together with the repository it belongs to and the ignore
//! [`Chain`] in force there. Visiting it lists the directory once (the file type comes with the
//! listing, so no `stat` per entry), loads its `.gitignore`, emits its untracked files that are
//! not ignored and queues its subdirectories. A directory holding a `.git` is a nested
//! repository: its index is read and the walk continues inside it under its own rules.
//! Submodules are not entered from their parent directory but from jobs of their own (see
//! [`Repo::gitlinks`]), so a submodule is expanded even where its parent would not walk.
//!
//! Never entered: `.git`, `.vx`, the excluded directories, `node_modules` (its tracked files
//! come from the index), ignored directories. Tracked files are not emitted here: they come
//! from the index of their repository.
//!
//! The walk starts on the calling thread and hands the queue to a few worker threads once it
//! holds enough directories to share; small refreshes therefore never start a thread.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::FileType;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use super::config::ConfigSet;
use super::error::TreeError;
use super::excludes::{self, Chain, Exclusions};
use super::names::is_at_or_under;
use super::repo::Repo;

/// `parent/name` as root-relative bytes.
pub(crate) fn join(parent: &[u8], name: &[u8]) -> Vec<u8> {
    if parent.is_empty() {
        return name.to_vec();
    }
    let mut out = Vec::with_capacity(parent.len() + 1 + name.len());
    out.extend_from_slice(parent);
    out.push(b'/');
    out.extend_from_slice(name);
    out
}

/// One directory to list.
pub(crate) struct Job {
    pub(crate) abs: PathBuf,
    /// Root-relative.
    pub(crate) rel: Vec<u8>,
    /// The repository the directory belongs to (its parent's, for a nested repository's root).
    pub(crate) repo: Arc<Repo>,
    /// The rules in force in the directory, its own `.gitignore` not yet included.
    pub(crate) chain: Chain,
    /// A submodule's directory: list it only if it is a repository (an uninitialised submodule
    /// lists nothing).
    pub(crate) submodule: bool,
}

/// What a walk found.
#[derive(Default)]
pub(crate) struct Found {
    /// Root-relative paths of untracked, not ignored files.
    pub(crate) untracked: Vec<Vec<u8>>,
    /// Nested repositories opened by this walk.
    pub(crate) repos: Vec<Arc<Repo>>,
    /// `.gitattributes` files of the outer repository (ignored ones included: git reads them).
    pub(crate) attributes: Vec<PathBuf>,
    /// Every directory listed, and every `.gitignore` file read: what the listing depends on
    /// besides the indexes and the configuration (for a run snapshot).
    pub(crate) consulted: Vec<PathBuf>,
    /// Root-relative paths (files, or directories not entered) whose absolute path is too long
    /// for the system to open ([`too_long`]).
    pub(crate) too_long: Vec<Vec<u8>>,
}

impl Found {
    pub(crate) fn merge(&mut self, other: Found) {
        self.untracked.extend(other.untracked);
        self.repos.extend(other.repos);
        self.attributes.extend(other.attributes);
        self.consulted.extend(other.consulted);
        self.too_long.extend(other.too_long);
    }
}

/// The longest path the system opens, its NUL included (`PATH_MAX`).
#[cfg(target_os = "linux")]
const PATH_MAX: usize = 4096;
#[cfg(not(target_os = "linux"))]
const PATH_MAX: usize = 1024;

/// Whether the system cannot open `abs` by its path: `PATH_MAX` bytes or more, its NUL
/// included.
pub(crate) fn too_long(abs: &Path) -> bool {
    abs.as_os_str().len() + 1 > PATH_MAX
}

/// The fixed inputs of a walk.
pub(crate) struct Walker<'a> {
    pub(crate) root: &'a Path,
    pub(crate) exclusions: &'a Exclusions,
    pub(crate) global: &'a ConfigSet,
    /// Nested repositories opened earlier, by root-relative path: a refresh reuses their index.
    pub(crate) known: &'a HashMap<Vec<u8>, Arc<Repo>>,
    /// The outer repository, whose `.gitattributes` files are collected (`None` outside git).
    pub(crate) outer: Option<&'a Arc<Repo>>,
}

/// Jobs waiting in the queue before the walk is worth sharing with other threads.
const PARALLEL_THRESHOLD: usize = 4;

/// At most this many threads walk.
const MAX_THREADS: usize = 8;

struct Queue {
    jobs: Vec<Job>,
    busy: usize,
    error: Option<TreeError>,
}

impl Walker<'_> {
    /// Walks every job and everything below it.
    pub(crate) fn run(&self, mut jobs: Vec<Job>) -> Result<Found, TreeError> {
        let threads = crate::par::cpus().min(MAX_THREADS);
        let mut found = Found::default();
        let mut next = Vec::new();
        while let Some(job) = jobs.pop() {
            if threads > 1 && jobs.len() >= PARALLEL_THRESHOLD {
                jobs.push(job);
                break;
            }
            self.visit(job, &mut found, &mut next)?;
            jobs.append(&mut next);
        }
        if !jobs.is_empty() {
            found.merge(self.run_parallel(jobs, threads)?);
        }
        Ok(found)
    }

    fn run_parallel(&self, jobs: Vec<Job>, threads: usize) -> Result<Found, TreeError> {
        let queue = Mutex::new(Queue {
            jobs,
            busy: 0,
            error: None,
        });
        let wake = Condvar::new();
        let mut found = Found::default();
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| scope.spawn(|| self.work(&queue, &wake)))
                .collect();
            for worker in workers {
                // A worker that panicked re-raises its panic here.
                match worker.join() {
                    Ok(part) => found.merge(part),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
        });
        let queue = queue.into_inner().unwrap_or_else(PoisonError::into_inner);
        match queue.error {
            Some(error) => Err(error),
            None => Ok(found),
        }
    }

    /// One worker: takes jobs until the queue is empty and nobody can add to it.
    fn work(&self, queue: &Mutex<Queue>, wake: &Condvar) -> Found {
        let mut found = Found::default();
        let mut next = Vec::new();
        loop {
            let job = {
                let mut q = queue.lock().unwrap_or_else(PoisonError::into_inner);
                loop {
                    if q.error.is_some() {
                        return found;
                    }
                    if let Some(job) = q.jobs.pop() {
                        q.busy += 1;
                        break job;
                    }
                    if q.busy == 0 {
                        wake.notify_all();
                        return found;
                    }
                    q = wake.wait(q).unwrap_or_else(PoisonError::into_inner);
                }
            };
            let result = self.visit(job, &mut found, &mut next);
            let mut q = queue.lock().unwrap_or_else(PoisonError::into_inner);
            q.busy -= 1;
            match result {
                Ok(()) => q.jobs.append(&mut next),
                Err(error) => {
                    q.error.get_or_insert(error);
                }
            }
            wake.notify_all();
        }
    }

    /// Lists one directory.
    fn visit(&self, job: Job, found: &mut Found, next: &mut Vec<Job>) -> Result<(), TreeError> {
        found.consulted.push(job.abs.clone());
        let Some(entries) = list(&job.abs)? else {
            return Ok(());
        };
        let has_git = entries.iter().any(|(name, _)| name.as_bytes() == b".git");
        let (repo, chain) = if has_git && job.abs != job.repo.worktree {
            match self.enter_repo(&job, found, next)? {
                Some(repo) => (repo, None),
                None if job.submodule => return Ok(()),
                None => (job.repo, job.chain),
            }
        } else if job.submodule {
            return Ok(());
        } else {
            (job.repo, job.chain)
        };
        let ignore_case = repo.excludes.ignore_case;
        let has_gitignore = entries
            .iter()
            .any(|(name, kind)| name.as_bytes() == b".gitignore" && kind.is_file());
        let chain = if has_gitignore {
            found.consulted.push(job.abs.join(".gitignore"));
            excludes::push(&chain, &job.abs, ignore_case)
        } else {
            chain
        };
        let collect_attributes = self.outer.is_some_and(|outer| Arc::ptr_eq(outer, &repo));
        for (name, kind) in entries {
            let name_bytes = name.as_bytes();
            if name_bytes == b".git" || name_bytes == b".vx" {
                continue;
            }
            let rel = join(&job.rel, name_bytes);
            let abs = job.abs.join(&name);
            if kind.is_dir() {
                let skip = name_bytes == b"node_modules"
                    || self.exclusions.excludes_dir(&rel)
                    || repo.gitlinks.contains(&rel)
                    || excludes::is_ignored(&chain, &repo.excludes, &abs, true);
                if !skip && too_long(&abs) {
                    found.too_long.push(rel);
                } else if !skip {
                    next.push(Job {
                        abs,
                        rel,
                        repo: repo.clone(),
                        chain: chain.clone(),
                        submodule: false,
                    });
                }
            } else if kind.is_file() || kind.is_symlink() {
                if collect_attributes && name_bytes == b".gitattributes" && kind.is_file() {
                    found.attributes.push(abs.clone());
                }
                let listed = !repo.tracked.contains(&rel)
                    && !excludes::is_ignored(&chain, &repo.excludes, &abs, false);
                if listed && too_long(&abs) {
                    found.too_long.push(rel);
                } else if listed {
                    found.untracked.push(rel);
                }
            }
            // Sockets, fifos and devices are not files git can track.
        }
        Ok(())
    }

    /// `job` is a directory with a `.git` inside another repository: its repository, opened
    /// (or reused) with jobs queued for its own submodules; `None` if it is not a repository.
    fn enter_repo(
        &self,
        job: &Job,
        found: &mut Found,
        next: &mut Vec<Job>,
    ) -> Result<Option<Arc<Repo>>, TreeError> {
        let repo = match self.known.get(&job.rel) {
            Some(repo) => repo.clone(),
            None => {
                let opened = Repo::open_nested(&job.abs, &job.rel, self.global, self.exclusions)?;
                let Some(repo) = opened else {
                    return Ok(None);
                };
                let repo = Arc::new(repo);
                found.repos.push(repo.clone());
                repo
            }
        };
        next.extend(submodule_jobs(self.root, &repo, None));
        Ok(Some(repo))
    }
}

/// Jobs for the submodules of `repo`, or only those under the root-relative `scope`.
pub(crate) fn submodule_jobs(root: &Path, repo: &Arc<Repo>, scope: Option<&[u8]>) -> Vec<Job> {
    let mut paths: Vec<&Vec<u8>> = repo
        .gitlinks
        .iter()
        .filter(|p| scope.is_none_or(|s| s.is_empty() || is_at_or_under(p, s)))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|rel| Job {
            abs: root.join(std::ffi::OsStr::from_bytes(rel)),
            rel: rel.clone(),
            repo: repo.clone(),
            chain: None,
            submodule: true,
        })
        .collect()
}

/// The entries of a directory with their types; `None` when it is gone or not a directory.
fn list(dir: &Path) -> Result<Option<Vec<(OsString, FileType)>>, TreeError> {
    let io = |source| TreeError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let reader = match std::fs::read_dir(dir) {
        Ok(reader) => reader,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(None)
        }
        Err(e) => return Err(io(e)),
    };
    let mut entries = Vec::new();
    for entry in reader {
        let entry = entry.map_err(io)?;
        // On most file systems the type comes with the listing, without a `stat`.
        match entry.file_type() {
            Ok(kind) => entries.push((entry.file_name(), kind)),
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(io(e)),
        }
    }
    Ok(Some(entries))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusions_cover_dot_dirs_and_excluded_subtrees() {
        let ex = Exclusions::new(
            Path::new("/ws"),
            &[PathBuf::from("/ws/.cache/vx"), PathBuf::from("/elsewhere")],
        );
        assert!(ex.excludes(b".git/config"));
        assert!(ex.excludes(b"a/.vx/x"));
        assert!(ex.excludes(b".cache/vx"));
        assert!(ex.excludes(b".cache/vx/a"));
        assert!(!ex.excludes(b".cache/vxy"));
        assert!(!ex.excludes(b"a/.gitignore"));
        assert!(!ex.excludes(b"elsewhere/x"));
    }
}
