//! WATCH-6's fallback: every 250 ms, list each watched directory and `lstat` its entries;
//! an entry whose size, inode or larger of mtime and ctime (to the nanosecond) moved, or that
//! appeared or went, is an event. (notify's own poller compares whole seconds of mtime, which
//! misses a second edit within the same second.)

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::Sender;

/// What an entry looked like at the last look.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    inode: u64,
    changed_ns: i128,
}

type Listing = HashMap<PathBuf, Stamp>;

pub struct Poller {
    dirs: Arc<Mutex<BTreeMap<PathBuf, Listing>>>,
    stop: Arc<AtomicBool>,
}

impl Poller {
    pub fn start(every: Duration, events: Sender<notify::Result<notify::Event>>) -> Poller {
        let dirs: Arc<Mutex<BTreeMap<PathBuf, Listing>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (watched, stopped) = (Arc::clone(&dirs), Arc::clone(&stop));
        let _ = std::thread::Builder::new()
            .name("vx-watch-poll".into())
            .spawn(move || {
                while !stopped.load(Ordering::Acquire) {
                    std::thread::sleep(every);
                    let mut dirs = watched.lock().unwrap_or_else(|e| e.into_inner());
                    for (dir, before) in dirs.iter_mut() {
                        let now = list(dir);
                        let mut changed: Vec<PathBuf> = now
                            .iter()
                            .filter(|(path, stamp)| before.get(*path) != Some(stamp))
                            .map(|(path, _)| path.clone())
                            .collect();
                        changed.extend(before.keys().filter(|p| !now.contains_key(*p)).cloned());
                        *before = now;
                        if changed.is_empty() {
                            continue;
                        }
                        let mut event = notify::Event::new(notify::EventKind::Any);
                        event.paths = changed;
                        if events.send(Ok(event)).is_err() {
                            return;
                        }
                    }
                }
            });
        Poller { dirs, stop }
    }

    pub fn remove(&self, dir: &Path) {
        self.dirs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(dir);
    }

    /// Watches `dir` (its entries, not below).
    pub fn add(&self, dir: &Path) {
        let listing = list(dir);
        self.dirs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(dir.to_path_buf(), listing);
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

fn list(dir: &Path) -> Listing {
    use std::os::unix::fs::MetadataExt;
    let mut listing = HashMap::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        let ns = |secs: i64, nanos: i64| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
        let changed_ns =
            ns(meta.mtime(), meta.mtime_nsec()).max(ns(meta.ctime(), meta.ctime_nsec()));
        listing.insert(
            entry.path(),
            Stamp {
                len: meta.len(),
                inode: meta.ino(),
                changed_ns,
            },
        );
    }
    listing
}
