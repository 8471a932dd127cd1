//! The workspace run lock (STORE-14): an exclusive `flock` on `<root>/.vx/run.lock`.
//!
//! `vx run`, each `vx watch` cycle and a pruning `vx cache prune` hold it; reading verbs never
//! take it. The file holds the holder's pid as text so that a waiter can name it. The lock
//! belongs to the open file description, which is close-on-exec (std opens every file with
//! `O_CLOEXEC`), so children of vx never inherit it and a crashed vx releases it with its last
//! descriptor.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::index::create_vx_dir;

/// How long a waiter waits before it says who holds the lock.
const NOTICE_AFTER: Duration = Duration::from_secs(1);
/// How often a waiter tries again.
const POLL: Duration = Duration::from_millis(50);

/// The lock file inside `<root>/.vx`.
pub const LOCK_FILE: &str = "run.lock";

/// A held run lock; released on drop or by [`RunLock::release`].
#[derive(Debug)]
pub struct RunLock {
    path: PathBuf,
    _lock: Flock<File>,
}

/// Why the lock could not be taken. The caller warns once and continues unlocked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot lock `{}`: {source}", path.display())]
    Unavailable {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl RunLock {
    /// `<root>/.vx/run.lock`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Releases the lock (the same as dropping it).
    pub fn release(self) {}
}

/// Takes the run lock of the workspace at `root`, waiting as long as another process holds it.
/// `on_wait` is called once, after one second of waiting, with the holder's pid when the file
/// names one.
pub fn acquire(root: &Path, on_wait: &mut dyn FnMut(Option<u32>)) -> Result<RunLock, LockError> {
    take(root, Some(on_wait), &|| false).map(|lock| lock.expect("waits until taken"))
}

/// [`acquire`], giving up (`None`) as soon as `stop` says so while it waits (a signal).
pub fn acquire_unless(
    root: &Path,
    on_wait: &mut dyn FnMut(Option<u32>),
    stop: &dyn Fn() -> bool,
) -> Result<Option<RunLock>, LockError> {
    take(root, Some(on_wait), stop)
}

/// The lock if it is free now, without waiting: `None` when another process holds it.
pub fn try_acquire(root: &Path) -> Result<Option<RunLock>, LockError> {
    take(root, None, &|| false)
}

/// Takes the lock; without `on_wait`, gives up at once when it is held, and with it, when
/// `stop` says so between two tries.
fn take(
    root: &Path,
    mut on_wait: Option<&mut dyn FnMut(Option<u32>)>,
    stop: &dyn Fn() -> bool,
) -> Result<Option<RunLock>, LockError> {
    let dir = root.join(".vx");
    let path = dir.join(LOCK_FILE);
    let unavailable = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LockError::Unavailable { path, source }
    };
    create_vx_dir(&dir).map_err(unavailable(&dir))?;
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(unavailable(&path))?;
    let started = Instant::now();
    let mut noticed = false;
    let mut lock = loop {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => break lock,
            Err((back, Errno::EWOULDBLOCK | Errno::EINTR)) => file = back,
            Err((_, errno)) => return Err(unavailable(&path)(io::Error::from(errno))),
        }
        let Some(on_wait) = on_wait.as_mut() else {
            return Ok(None);
        };
        if stop() {
            return Ok(None);
        }
        if !noticed && started.elapsed() >= NOTICE_AFTER {
            noticed = true;
            on_wait(holder_pid(&path));
        }
        std::thread::sleep(POLL);
    };
    write_pid(&mut lock).map_err(unavailable(&path))?;
    Ok(Some(RunLock { path, _lock: lock }))
}

fn write_pid(file: &mut File) -> io::Result<()> {
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(std::process::id().to_string().as_bytes())?;
    file.flush()
}

/// The pid the current holder wrote, if it did yet.
fn holder_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn creates_the_directory_with_a_gitignore_and_writes_the_pid() {
        let root = tempfile::tempdir().unwrap();
        let lock = acquire(root.path(), &mut |_| panic!("nobody holds it")).unwrap();
        let dir = root.path().join(".vx");
        assert_eq!(
            std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
            "*\n"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(holder_pid(lock.path()), Some(std::process::id()));
        lock.release();
        // Released: it can be taken again at once.
        let again = acquire(root.path(), &mut |_| panic!("released")).unwrap();
        drop(again);
    }

    #[test]
    fn an_existing_directory_gets_no_gitignore() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".vx")).unwrap();
        let _lock = acquire(root.path(), &mut |_| {}).unwrap();
        assert!(!root.path().join(".vx/.gitignore").exists());
    }

    #[test]
    fn the_descriptor_is_close_on_exec() {
        let root = tempfile::tempdir().unwrap();
        let lock = acquire(root.path(), &mut |_| {}).unwrap();
        let flags = nix::fcntl::fcntl(&*lock._lock, nix::fcntl::FcntlArg::F_GETFD).unwrap();
        assert_ne!(flags & libc::FD_CLOEXEC, 0);
    }

    #[test]
    fn try_acquire_takes_a_free_lock_and_gives_up_on_a_held_one() {
        let root = tempfile::tempdir().unwrap();
        let held = try_acquire(root.path()).unwrap().expect("free");
        // flock locks belong to the open file description: a second open is refused.
        assert!(try_acquire(root.path()).unwrap().is_none());
        drop(held);
        assert!(try_acquire(root.path()).unwrap().is_some());
    }

    #[test]
    fn a_second_acquirer_waits_and_is_told_the_holder_pid_once() {
        let root = tempfile::tempdir().unwrap();
        let (held_tx, held_rx) = mpsc::channel();
        let holder_root = root.path().to_path_buf();
        let holder = std::thread::spawn(move || {
            let lock = acquire(&holder_root, &mut |_| {}).unwrap();
            held_tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(1500));
            drop(lock);
        });
        held_rx.recv().unwrap();
        let started = Instant::now();
        let mut notices = Vec::new();
        let lock = acquire(root.path(), &mut |pid| notices.push(pid)).unwrap();
        let waited = started.elapsed();
        holder.join().unwrap();
        // The holder is this process (another thread): the notice names our own pid.
        assert_eq!(notices, [Some(std::process::id())]);
        assert!(waited >= Duration::from_millis(1000), "waited {waited:?}");
        drop(lock);
    }

    #[test]
    fn a_wait_gives_up_when_told_to_stop() {
        let root = tempfile::tempdir().unwrap();
        let held = try_acquire(root.path()).unwrap().expect("free");
        let asked = std::cell::Cell::new(0);
        let stop = || {
            asked.set(asked.get() + 1);
            asked.get() >= 3
        };
        let given_up = acquire_unless(root.path(), &mut |_| {}, &stop).unwrap();
        assert!(given_up.is_none());
        assert_eq!(asked.get(), 3, "asked between tries until it said stop");
        drop(held);
        // Free: taken at once, without asking.
        assert!(acquire_unless(root.path(), &mut |_| {}, &|| true)
            .unwrap()
            .is_some());
    }

    #[test]
    fn a_read_only_root_is_unavailable() {
        let root = tempfile::tempdir().unwrap();
        // A file where the directory must go cannot be turned into `.vx/`.
        std::fs::write(root.path().join(".vx"), "").unwrap();
        let err = acquire(root.path(), &mut |_| {}).unwrap_err();
        let LockError::Unavailable { path, .. } = err;
        assert!(path.ends_with(".vx"));
    }
}
