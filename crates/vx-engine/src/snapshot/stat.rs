//! The stat side of run snapshots: what is recorded of a path (`Stat`), taking it for many
//! paths at once (`record`), checking them again (`moved`), and the racy rule (`Racy`): a
//! recorded time too close to the run's start proves nothing.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// How a recorded path whose stat data moved is judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// Any change means the run goes the whole way.
    Whole,
    /// A file the tree listed: [`Class::Whole`] unless a key folded it too.
    Listed,
    /// A file keys folded by content, and nothing else looked at but its bytes: when only its
    /// times moved (hashed again: the same mode and blob id), the replay holds.
    Content { mode: &'static str, blob: String },
}

impl Class {
    /// What one path is when two sources name it: the stricter, and two different identities
    /// (a file that changed during the run) are [`Class::Whole`].
    pub(super) fn and(self, other: Class) -> Class {
        match (self, other) {
            (Class::Whole, _) | (_, Class::Whole) => Class::Whole,
            (Class::Listed, other) | (other, Class::Listed) => other,
            (a, b) if a == b => a,
            _ => Class::Whole,
        }
    }

    /// The field of a path line: `-`, or `<mode>:<blob id>`.
    pub(super) fn word(&self) -> String {
        match self {
            Class::Content { mode, blob } => format!("{mode}:{blob}"),
            _ => "-".into(),
        }
    }

    pub(super) fn parse(word: &str) -> Option<Class> {
        if word == "-" {
            return Some(Class::Whole);
        }
        let (mode, blob) = word.split_once(':')?;
        let mode = ["100644", "100755", "120000"]
            .into_iter()
            .find(|m| *m == mode)?;
        let hex = blob
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        (hex && matches!(blob.len(), 40 | 64)).then(|| Class::Content {
            mode,
            blob: blob.to_string(),
        })
    }
}

/// A path whose mtime or ctime is this close to the run's start (or later) may have changed
/// while the run read it: no snapshot is written. On a filesystem that keeps whole seconds
/// (FAT keeps two).
pub(super) const RACY: Duration = Duration::from_secs(2);

/// [`RACY`] on a filesystem that keeps fractions of a second: the kernel stamps a file from a
/// coarse clock, at most a tick (1–10 ms) behind the clock the run's start was read from.
pub(super) const RACY_FINE: Duration = Duration::from_millis(100);

/// The racy rule for one snapshot: from when a recorded time is too recent, per device.
#[derive(Debug)]
pub(super) struct Racy {
    /// Devices on which some recorded time has a fraction of a second.
    fine: std::collections::HashSet<u64>,
    fine_from: i128,
    coarse_from: i128,
}

impl Racy {
    /// `stamped_here`: whether the file system of this path has its times set by this
    /// machine's kernel ([`stamped_here`]), asked once per device with fractions.
    pub(super) fn new<'a>(
        started: SystemTime,
        recorded: impl Iterator<Item = (&'a Path, &'a Stat)>,
        stamped_here: impl Fn(&Path) -> bool,
    ) -> Racy {
        let started = started
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        let whole = |ns: i128| ns % 1_000_000_000 == 0;
        let mut with_fractions: BTreeMap<u64, &Path> = BTreeMap::new();
        for (path, stat) in recorded {
            if !whole(stat.mtime_ns) || !whole(stat.ctime_ns) {
                with_fractions.entry(stat.dev).or_insert(path);
            }
        }
        Racy {
            fine: with_fractions
                .into_iter()
                .filter(|(_, path)| stamped_here(path))
                .map(|(dev, _)| dev)
                .collect(),
            fine_from: started.saturating_sub(RACY_FINE).as_nanos() as i128,
            coarse_from: started.saturating_sub(RACY).as_nanos() as i128,
        }
    }

    /// Whether this stat data is too recent to prove anything.
    pub(super) fn is_racy(&self, stat: &Stat) -> bool {
        let from = if self.fine.contains(&stat.dev) {
            self.fine_from
        } else {
            self.coarse_from
        };
        stat.mtime_ns >= from || stat.ctime_ns >= from
    }

    /// Why a snapshot is not written when `path` is racy.
    pub(super) fn error(&self, path: &Path) -> String {
        format!(
            "{} changed too shortly before the run started (within {} ms, or {} s where a file system keeps whole seconds)",
            path.display(),
            RACY_FINE.as_millis(),
            RACY.as_secs()
        )
    }
}

/// The stat data that must not have changed: `None` for a path that did not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stat {
    pub(super) dev: u64,
    pub(super) ino: u64,
    pub(super) mode: u32,
    pub(super) size: u64,
    pub(super) mtime_ns: i128,
    pub(super) ctime_ns: i128,
}

impl Stat {
    pub(super) fn of(meta: &fs::Metadata) -> Stat {
        Stat {
            dev: meta.dev(),
            ino: meta.ino(),
            mode: meta.mode(),
            size: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        }
    }
}

/// `lstat` of `path` (`stat` when `follow`): `Ok(None)` when it is not there.
pub(super) fn stat_of(path: &Path, follow: bool) -> io::Result<Option<Stat>> {
    let meta = if follow {
        fs::metadata(path)
    } else {
        fs::symlink_metadata(path)
    };
    match meta {
        Ok(meta) => Ok(Some(Stat::of(&meta))),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// What is recorded of one path: its `lstat`, or with `follow` what it leads to (a symbolic
/// link's target: vx reads configuration and ignore files through links), and how a change of
/// it is judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Recorded {
    pub(super) path: PathBuf,
    pub(super) follow: bool,
    pub(super) stat: Option<Stat>,
    pub(super) class: Class,
}

impl Recorded {
    pub(super) fn whole(path: PathBuf, follow: bool, stat: Option<Stat>) -> Recorded {
        Recorded {
            path,
            follow,
            stat,
            class: Class::Whole,
        }
    }
}

/// The recorded entries of these paths, in order, by index into `paths`: each path's `lstat`,
/// followed by its target's `stat` when it is a symbolic link. (Indices, not copies: at
/// thousands of projects the paths are tens of thousands.)
pub(super) fn record(paths: &[PathBuf]) -> io::Result<Vec<(usize, bool, Option<Stat>)>> {
    let len = chunk_len(paths.len());
    let chunks: Vec<(usize, &[PathBuf])> = paths
        .chunks(len)
        .enumerate()
        .map(|(n, chunk)| (n * len, chunk))
        .collect();
    let parts = vx_workspace::par::map(&chunks, |(first, chunk)| {
        let mut out = Vec::with_capacity(chunk.len());
        for (i, path) in chunk.iter().enumerate() {
            let own = stat_of(path, false)?;
            let link = own.is_some_and(|s| s.mode & 0o170000 == 0o120000);
            out.push((first + i, false, own));
            if link {
                out.push((first + i, true, stat_of(path, true)?));
            }
        }
        Ok::<_, io::Error>(out)
    });
    let mut all = Vec::with_capacity(paths.len());
    for part in parts {
        all.extend(part?);
    }
    Ok(all)
}

/// Whether the file system holding `path` has its file times set by this machine's kernel: the
/// local ones that keep fractions of a second. Not a network file system (NFS, SMB, FUSE mounts
/// such as sshfs, virtiofs), whose times come from another clock that may run behind.
pub(super) fn stamped_here(path: &Path) -> bool {
    use nix::sys::statfs::{self, FsType};
    /// ZFS, which `nix` names no constant for.
    const ZFS_SUPER_MAGIC: FsType = FsType(0x2fc1_2fc1);
    let Ok(fs) = statfs::statfs(path) else {
        return false;
    };
    [
        statfs::EXT4_SUPER_MAGIC,
        statfs::XFS_SUPER_MAGIC,
        statfs::BTRFS_SUPER_MAGIC,
        statfs::TMPFS_MAGIC,
        statfs::OVERLAYFS_SUPER_MAGIC,
        statfs::F2FS_SUPER_MAGIC,
        ZFS_SUPER_MAGIC,
    ]
    .contains(&fs.filesystem_type())
}

/// Paths per chunk for the parallel `lstat`s: enough chunks that `par::map` spreads them over
/// its threads (it keeps short lists on one).
pub(super) fn chunk_len(paths: usize) -> usize {
    paths.div_ceil(256).max(1)
}

/// Whether every recorded path has the stat data recorded; stops at the first difference.
#[cfg(test)]
pub(super) fn unchanged(paths: &[Recorded]) -> bool {
    moved(paths).is_some_and(|moved| moved.is_empty())
}

/// The recorded paths of class [`Class::Content`] whose stat data moved, by index, with their
/// stat data now; `None` as soon as any other path moved (or cannot be read).
pub(super) fn moved(paths: &[Recorded]) -> Option<Vec<(usize, Stat)>> {
    let whole = AtomicBool::new(false);
    let content: Mutex<Vec<(usize, Stat)>> = Mutex::new(Vec::new());
    // The file lists the most recently changed paths first, the likeliest to have changed
    // again: each thread takes every n-th entry, so each starts with those.
    let check = |first: usize, step: usize| {
        for (at, recorded) in paths.iter().enumerate().skip(first).step_by(step) {
            if whole.load(Ordering::Relaxed) {
                return;
            }
            let now = stat_of(&recorded.path, recorded.follow);
            match (now, &recorded.class) {
                (Ok(now), _) if now == recorded.stat => {}
                // Still a file of the same kind: its content is checked next.
                (Ok(Some(now)), Class::Content { .. })
                    if recorded
                        .stat
                        .is_some_and(|was| was.mode & 0o170000 == now.mode & 0o170000) =>
                {
                    tracing::debug!(target: "vx::snapshot", "times moved: {}", recorded.path.display());
                    content
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((at, now));
                }
                _ => {
                    tracing::debug!(target: "vx::snapshot", "moved: {}", recorded.path.display());
                    whole.store(true, Ordering::Relaxed);
                    return;
                }
            }
        }
    };
    let threads = vx_workspace::par::threads();
    if threads < 2 || paths.len() < 256 {
        check(0, 1);
    } else {
        std::thread::scope(|scope| {
            for first in 0..threads {
                let check = &check;
                scope.spawn(move || check(first, threads));
            }
        });
    }
    if whole.load(Ordering::Relaxed) {
        return None;
    }
    let mut content = content.into_inner().unwrap_or_else(|e| e.into_inner());
    content.sort_unstable_by_key(|(at, _)| *at);
    Some(content)
}
