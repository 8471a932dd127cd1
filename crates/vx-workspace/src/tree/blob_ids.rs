//! The blob ids of a few named files (KEY-11) without listing the tree: what `vx.lock` names
//! its configuration by (INIT-4, INIT-5).

use std::collections::HashMap;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::identity::{self, Hashed, IndexStat, ShortcutRules};
use super::{attributes, config, repo, walk, Mode, ObjectFormat, Stat, TreeError};

/// The blob ids of root-relative files as a run takes them (KEY-11) — from the outer index
/// when its entry vouches for the file, else hashed — without listing the tree; `None` for a
/// path with no file there. A symlink is followed: the id is of the file it leads to (the
/// bytes a reader of the path gets), never of the link's text. `vx.lock` names the configuration it was resolved from by these
/// (INIT-4, INIT-5). The shortcut is off when an attributes file that could apply to one of the
/// paths (its directories' `.gitattributes` up to the work tree, `info/attributes`, the
/// configured ones) sets a conversion, as for the whole tree in [`Tree::scan`](super::Tree::scan).
pub fn blob_ids(root: &Path, paths: &[String]) -> Result<BlobIds, TreeError> {
    let mut index_map: HashMap<&str, IndexStat> = HashMap::new();
    let mut rules = ShortcutRules {
        allowed: false,
        file_mode: true,
        index_time: (0, 0),
    };
    let mut format = ObjectFormat::Sha1;
    if let Some(layout) = repo::find_outer(root)? {
        let global = config::global_config();
        let repo_config = config::repo_config(&global, &layout.common_dir, &layout.git_dir);
        let settings = repo_config.settings(&layout.worktree);
        format = settings.object_format;
        let index = repo::read_index(&layout, format)?;
        let prefix = root
            .strip_prefix(&layout.worktree)
            .map(|p| p.as_os_str().as_bytes().to_vec())
            .unwrap_or_default();
        let wanted: HashMap<Vec<u8>, &str> = paths
            .iter()
            .map(|p| (walk::join(&prefix, p.as_bytes()), p.as_str()))
            .collect();
        for file in index.files {
            if let Some(path) = wanted.get(&file.path).filter(|_| file.vouches) {
                let entry = IndexStat {
                    stat: file.stat,
                    id: file.id,
                    mode: file.mode,
                };
                index_map.insert(path, entry);
            }
        }
        let mut attribute_files: std::collections::BTreeSet<PathBuf> =
            settings.attribute_files.iter().cloned().collect();
        attribute_files.insert(layout.common_dir.join("info/attributes"));
        for path in paths {
            let abs = root.join(path);
            for dir in abs.ancestors().skip(1) {
                if !attribute_files.insert(dir.join(".gitattributes")) || dir == layout.worktree {
                    break;
                }
            }
        }
        let attribute_files: Vec<PathBuf> = attribute_files.into_iter().collect();
        rules = ShortcutRules {
            allowed: settings.shortcut_allowed && !attributes::any_conversion(&attribute_files),
            file_mode: settings.file_mode,
            index_time: index.timestamp,
        };
    }
    let hashed = std::sync::atomic::AtomicU64::new(0);
    let ids = crate::par::map(paths, |path| {
        let abs = root.join(path);
        // Through a symlink: what the configuration loader reads is the file it leads to.
        let meta = match std::fs::symlink_metadata(&abs).and_then(|meta| {
            if meta.is_symlink() {
                std::fs::metadata(&abs)
            } else {
                Ok(meta)
            }
        }) {
            Ok(meta) => meta,
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                return Ok(None)
            }
            Err(source) => return Err(TreeError::Io { path: abs, source }),
        };
        let Some(mode) = Mode::from_metadata(&meta) else {
            return Ok(None);
        };
        if let Some(entry) = index_map.get(path.as_str()) {
            if entry.vouches_for(&meta, mode, rules) {
                return Ok(Some(entry.id.to_string()));
            }
        }
        hashed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        match identity::hash_path(&abs, mode, &Stat::from_metadata(&meta), format)? {
            Hashed::Gone => Ok(None),
            Hashed::Blob { blob, .. } => Ok(Some(blob)),
        }
    });
    Ok(BlobIds {
        ids: ids.into_iter().collect::<Result<_, _>>()?,
        hashed: hashed.into_inner(),
    })
}

/// What [`blob_ids`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobIds {
    /// One per path asked for, in order; `None` where there is no file.
    pub ids: Vec<Option<String>>,
    /// How many files were hashed (the others came from the index).
    pub hashed: u64,
}
