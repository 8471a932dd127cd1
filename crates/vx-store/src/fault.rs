//! Storage faults said for what they are (STORE-12, STORE-14): a full file system is named as
//! full — with the file system that holds the path — and a read-only one as read-only, never as
//! a damaged cache index. Only SQLite's own verdict that a file is not a database, or is
//! corrupt, makes an index "not valid".

use std::io;
use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

/// What kind of storage fault an error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// No space left (ENOSPC, EDQUOT, `SQLITE_FULL`).
    Full,
    /// Nothing may be written here (EROFS, EACCES, EPERM, `SQLITE_READONLY`).
    ReadOnly,
    /// The file is not a database, or is corrupt (`SQLITE_NOTADB`, `SQLITE_CORRUPT`).
    Damaged,
    Other,
}

/// The fault an I/O error stands for.
pub fn of_io(error: &io::Error) -> Fault {
    match error.raw_os_error() {
        Some(libc::ENOSPC | libc::EDQUOT) => Fault::Full,
        Some(libc::EROFS | libc::EACCES | libc::EPERM) => Fault::ReadOnly,
        _ => Fault::Other,
    }
}

/// The fault an SQLite error stands for; an I/O error SQLite met is read from `errno`'s code
/// where SQLite reports one (`SQLITE_IOERR` with the OS error in its extended code is not
/// exposed, so a plain I/O error stays [`Fault::Other`]).
pub fn of_sqlite(error: &rusqlite::Error) -> Fault {
    match error.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => Fault::Full,
        Some(ErrorCode::ReadOnly) => Fault::ReadOnly,
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => Fault::Damaged,
        _ => Fault::Other,
    }
}

/// Whether the file system holding `path` (or its nearest existing ancestor) has no space left
/// for vx: an I/O error SQLite reports vaguely (`disk I/O error` while it creates its shared
/// memory file) is then a full disk.
pub fn is_full(path: &Path) -> bool {
    path.ancestors()
        .find(|p| p.exists())
        .and_then(|p| nix::sys::statvfs::statvfs(p).ok())
        .is_some_and(|s| s.blocks_available() == 0)
}

/// An SQLite failure at `path`, with a vague I/O error on a full file system counted as full.
pub fn of_sqlite_at(error: &rusqlite::Error, path: &Path) -> Fault {
    match of_sqlite(error) {
        Fault::Other
            if error.sqlite_error_code() == Some(ErrorCode::SystemIoFailure) && is_full(path) =>
        {
            Fault::Full
        }
        fault => fault,
    }
}

/// An I/O error at `path` in words: a full file system named as such, else `` `<path>`: <error> ``.
pub fn io_text(path: &Path, error: &io::Error) -> String {
    match of_io(error) {
        Fault::Full => full_text(path.parent().unwrap_or(path)),
        _ => format!("`{}`: {error}", path.display()),
    }
}

/// The file system holding `path`: its mount point and type, from `/proc/self/mounts` (the
/// longest mount point that contains the path's real location).
pub fn file_system(path: &Path) -> Option<(PathBuf, String)> {
    let real = path
        .ancestors()
        .find_map(|p| std::fs::canonicalize(p).ok())?;
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let _device = fields.next()?;
            let point = PathBuf::from(unescape(fields.next()?));
            let kind = fields.next()?.to_string();
            real.starts_with(&point).then_some((point, kind))
        })
        .max_by_key(|(point, _)| point.components().count())
}

/// `/proc/self/mounts` escapes space, tab, newline and backslash as octal.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .and_then(|o| std::str::from_utf8(o).ok())
            .and_then(|o| u8::from_str_radix(o, 8).ok());
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `the file system holding `<path>` is full (tmpfs mounted at /mnt/small)`.
pub fn full_text(path: &Path) -> String {
    format!(
        "the file system holding `{}` is full{}",
        path.display(),
        mounted(path)
    )
}

/// `` `<path>` is on a read-only file system (ext4 mounted at /x) `` or `… is not writable`.
pub fn read_only_text(path: &Path, error: Option<&io::Error>) -> String {
    match error.and_then(io::Error::raw_os_error) {
        Some(libc::EROFS) => format!(
            "`{}` is on a read-only file system{}",
            path.display(),
            mounted(path)
        ),
        _ => format!("`{}` is not writable", path.display()),
    }
}

fn mounted(path: &Path) -> String {
    match file_system(path) {
        Some((point, kind)) => format!(" ({kind} mounted at {})", point.display()),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_are_classified_by_their_codes() {
        assert_eq!(
            of_io(&io::Error::from_raw_os_error(libc::ENOSPC)),
            Fault::Full
        );
        assert_eq!(
            of_io(&io::Error::from_raw_os_error(libc::EROFS)),
            Fault::ReadOnly
        );
        assert_eq!(
            of_io(&io::Error::from_raw_os_error(libc::EIO)),
            Fault::Other
        );
        let sqlite = |code| rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None);
        assert_eq!(of_sqlite(&sqlite(rusqlite::ffi::SQLITE_FULL)), Fault::Full);
        assert_eq!(
            of_sqlite(&sqlite(rusqlite::ffi::SQLITE_NOTADB)),
            Fault::Damaged
        );
        assert_eq!(
            of_sqlite(&sqlite(rusqlite::ffi::SQLITE_CANTOPEN)),
            Fault::Other
        );
    }

    #[test]
    fn the_file_system_of_a_path_is_its_longest_mount_point() {
        let (point, kind) = file_system(Path::new("/proc/self")).unwrap();
        assert_eq!(point, Path::new("/proc"));
        assert_eq!(kind, "proc");
        assert_eq!(unescape("/mnt/a\\040b"), "/mnt/a b");
    }
}
