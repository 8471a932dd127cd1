//! A directory tree as a comparable listing: every entry's path, type, permission bits and
//! link text or bytes. "Restored = executed" is checked by comparing two of these.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// One entry of a tree: its path, type (`f`, `d`, `l`), permission bits and link text or
/// bytes.
pub type Entry = (String, char, u32, Vec<u8>);

/// Every entry under `dir`, sorted, links never followed; empty when `dir` does not exist.
pub fn tree(dir: &Path) -> Vec<Entry> {
    let mut out = Vec::new();
    if !dir.exists() {
        return out;
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let md = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            let (kind, body) = if md.file_type().is_symlink() {
                let text = std::fs::read_link(&path).unwrap();
                ('l', text.into_os_string().into_encoded_bytes())
            } else if md.is_dir() {
                stack.push(path.clone());
                ('d', Vec::new())
            } else {
                ('f', std::fs::read(&path).unwrap())
            };
            out.push((rel, kind, md.mode() & 0o7777, body));
        }
    }
    out.sort();
    out
}

/// Every file under `dir` (not directories), sorted; nothing when `dir` does not exist.
pub fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}
