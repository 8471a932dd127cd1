//! The input root of a remote action (REM-12): a Merkle tree of `Directory` messages whose
//! leaves are file digests, built from root-relative paths.
//!
//! How this works: [`InputRoot`] collects entries (a local file with its digest and executable
//! bit, a file known only by digest, a symlink with its target, an empty directory) under
//! root-relative paths; [`InputRoot::build`] groups them by directory, writes each `Directory`
//! with its files, subdirectories and symlinks sorted by name (as REAPI requires, so the same
//! tree always has the same digest), bottom-up, and returns the root's digest with every blob a
//! server may need: the serialised directories and the files. [`FileDigests`] hashes a local file
//! once per identity (device, inode, size, modification and change times), so a file that did
//! not change is never hashed twice by one client.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use prost::Message;

use crate::digest::{digest_of, digest_of_file, Blob};
use crate::proto::{Digest, Directory, DirectoryNode, FileNode, SymlinkNode};

/// One entry of an input root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A file on this machine, uploaded if the server lacks it.
    Local {
        path: PathBuf,
        digest: Digest,
        executable: bool,
    },
    /// A file the server already holds (an output of a remote upstream not downloaded).
    Remote { digest: Digest, executable: bool },
    /// A symbolic link, sent as a link with this target.
    Symlink { target: String },
    /// A directory, present even when nothing lands in it.
    Directory,
}

/// The entries of an input root by root-relative path (`/`-separated, no `.` or `..`).
#[derive(Debug, Default, Clone)]
pub struct InputRoot {
    entries: BTreeMap<String, Input>,
}

/// A built input root: its digest and the blobs behind it.
#[derive(Debug, Clone)]
pub struct BuiltRoot {
    pub digest: Digest,
    /// Every `Directory` message and every local file, once each.
    pub blobs: Vec<Blob>,
}

/// Why an input root could not be laid out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("`{0}` is not a relative path inside the workspace")]
    NotRelative(String),
    #[error("`{0}` is both a file and a directory")]
    FileAndDirectory(String),
}

impl InputRoot {
    pub fn new() -> InputRoot {
        InputRoot::default()
    }

    /// Adds `input` at `path`. A path that is absolute, empty, or holds `.`/`..` is refused.
    pub fn add(&mut self, path: &str, input: Input) -> Result<(), InputError> {
        let clean = path.trim_end_matches('/');
        if clean.is_empty()
            || clean.starts_with('/')
            || clean
                .split('/')
                .any(|part| part.is_empty() || part == "." || part == "..")
        {
            return Err(InputError::NotRelative(path.to_string()));
        }
        self.entries.insert(clean.to_string(), input);
        Ok(())
    }

    /// Adds the workspace entry at root-relative `path` as it is on disk under `root`: a
    /// regular file with its digest (from `digests`) and executable bit, a symbolic link with
    /// its target as written, a directory as a directory (its contents are added one by one).
    pub fn add_from_disk(
        &mut self,
        root: &Path,
        path: &str,
        digests: &FileDigests,
    ) -> io::Result<()> {
        let local = root.join(path);
        let meta = std::fs::symlink_metadata(&local)?;
        let input = if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&local)?;
            Input::Symlink {
                target: target.to_string_lossy().into_owned(),
            }
        } else if meta.is_dir() {
            Input::Directory
        } else if meta.is_file() {
            let (digest, executable) = digests.digest(&local)?;
            Input::Local {
                path: local,
                digest,
                executable,
            }
        } else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{path}` is neither a file, a directory nor a symbolic link"),
            ));
        };
        self.add(path, input)
            .map_err(|problem| io::Error::new(io::ErrorKind::InvalidInput, problem))
    }

    /// The Merkle tree. A path that is both a file and a directory is an error.
    pub fn build(&self) -> Result<BuiltRoot, InputError> {
        // Every directory on the way to every entry, with its direct children.
        let mut dirs: BTreeMap<String, Children> = BTreeMap::new();
        dirs.insert(String::new(), Children::default());
        for (path, input) in &self.entries {
            let mut parent = String::new();
            for part in path
                .split('/')
                .collect::<Vec<_>>()
                .split_last()
                .map_or(&[][..], |(_, p)| p)
            {
                let child = join(&parent, part);
                dirs.entry(parent.clone())
                    .or_default()
                    .dirs
                    .insert(part.to_string());
                dirs.entry(child.clone()).or_default();
                parent = child;
            }
            let name = path.rsplit('/').next().unwrap_or(path).to_string();
            match input {
                Input::Directory => {
                    dirs.entry(parent).or_default().dirs.insert(name);
                    dirs.entry(path.clone()).or_default();
                }
                other => {
                    dirs.entry(parent)
                        .or_default()
                        .leaves
                        .insert(name, other.clone());
                }
            }
        }
        for (path, children) in &dirs {
            for name in children.leaves.keys() {
                if children.dirs.contains(name) {
                    return Err(InputError::FileAndDirectory(join(path, name)));
                }
            }
        }
        // Bottom-up: the longest paths first, so every child's digest is known.
        let mut order: Vec<&String> = dirs.keys().collect();
        order.sort_by_key(|p| {
            std::cmp::Reverse(if p.is_empty() {
                0
            } else {
                p.matches('/').count() + 1
            })
        });
        let mut digests: HashMap<String, Digest> = HashMap::new();
        let mut blobs: BTreeMap<String, Blob> = BTreeMap::new();
        for path in order {
            let children = &dirs[path];
            let mut directory = Directory::default();
            for (name, leaf) in &children.leaves {
                match leaf {
                    Input::Local {
                        path: local,
                        digest,
                        executable,
                    } => {
                        blobs
                            .entry(digest.hash.clone())
                            .or_insert_with(|| Blob::from_file(digest.clone(), local.clone()));
                        directory.files.push(FileNode {
                            name: name.clone(),
                            digest: Some(digest.clone()),
                            is_executable: *executable,
                            ..Default::default()
                        });
                    }
                    Input::Remote { digest, executable } => directory.files.push(FileNode {
                        name: name.clone(),
                        digest: Some(digest.clone()),
                        is_executable: *executable,
                        ..Default::default()
                    }),
                    Input::Symlink { target } => directory.symlinks.push(SymlinkNode {
                        name: name.clone(),
                        target: target.clone(),
                        ..Default::default()
                    }),
                    Input::Directory => {}
                }
            }
            for name in &children.dirs {
                directory.directories.push(DirectoryNode {
                    name: name.clone(),
                    digest: Some(digests[&join(path, name)].clone()),
                });
            }
            let bytes = directory.encode_to_vec();
            let digest = digest_of(&bytes);
            blobs
                .entry(digest.hash.clone())
                .or_insert_with(|| Blob::from_bytes(bytes));
            digests.insert(path.clone(), digest);
        }
        Ok(BuiltRoot {
            digest: digests[""].clone(),
            blobs: blobs.into_values().collect(),
        })
    }
}

/// A directory's direct children, sorted by name.
#[derive(Debug, Default)]
struct Children {
    dirs: std::collections::BTreeSet<String>,
    leaves: BTreeMap<String, Input>,
}

fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}/{name}")
    }
}

/// SHA-256 digests of local files, each computed once per file identity.
#[derive(Debug, Default)]
pub struct FileDigests {
    known: Mutex<HashMap<Identity, Digest>>,
}

/// What tells a changed file from an unchanged one without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl FileDigests {
    pub fn new() -> FileDigests {
        FileDigests::default()
    }

    /// The digest of the regular file at `path`, and whether its owner may execute it.
    pub fn digest(&self, path: &Path) -> io::Result<(Digest, bool)> {
        let meta = std::fs::metadata(path)?;
        let identity = Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
            ctime_ns: meta.ctime() as i128 * 1_000_000_000 + meta.ctime_nsec() as i128,
        };
        let executable = meta.mode() & 0o100 != 0;
        if let Some(digest) = self.lock().get(&identity) {
            return Ok((digest.clone(), executable));
        }
        let digest = digest_of_file(path)?;
        self.lock().insert(identity, digest.clone());
        Ok((digest, executable))
    }

    /// How many files were hashed (each identity once).
    pub fn hashed(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Identity, Digest>> {
        self.known.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::BlobBytes;

    fn directory(built: &BuiltRoot, digest: &Digest) -> Directory {
        let blob = built
            .blobs
            .iter()
            .find(|b| &b.digest == digest)
            .expect("the directory's blob");
        match &blob.bytes {
            BlobBytes::Memory(bytes) => Directory::decode(bytes.as_slice()).unwrap(),
            BlobBytes::File(_) => panic!("a directory is in memory"),
        }
    }

    #[test]
    fn the_tree_is_sorted_nested_and_the_same_whatever_the_order_of_adding() {
        let file = |hash: &str| Input::Remote {
            digest: Digest {
                hash: hash.repeat(64),
                size_bytes: 1,
            },
            executable: false,
        };
        let mut a = InputRoot::new();
        a.add("packages/web/src/main.ts", file("a")).unwrap();
        a.add("packages/web/package.json", file("b")).unwrap();
        a.add("packages/lib/dist", Input::Directory).unwrap();
        a.add(
            "packages/web/node_modules/lib",
            Input::Symlink {
                target: "../../lib".into(),
            },
        )
        .unwrap();
        let mut b = InputRoot::new();
        b.add(
            "packages/web/node_modules/lib",
            Input::Symlink {
                target: "../../lib".into(),
            },
        )
        .unwrap();
        b.add("packages/lib/dist/", Input::Directory).unwrap();
        b.add("packages/web/package.json", file("b")).unwrap();
        b.add("packages/web/src/main.ts", file("a")).unwrap();
        let (a, b) = (a.build().unwrap(), b.build().unwrap());
        assert_eq!(a.digest, b.digest);

        let root = directory(&a, &a.digest);
        assert_eq!(root.directories.len(), 1);
        assert_eq!(root.directories[0].name, "packages");
        let packages = directory(&a, root.directories[0].digest.as_ref().unwrap());
        let names: Vec<&str> = packages
            .directories
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(names, ["lib", "web"]);
        let lib = directory(&a, packages.directories[0].digest.as_ref().unwrap());
        assert_eq!(lib.directories[0].name, "dist");
        let dist = directory(&a, lib.directories[0].digest.as_ref().unwrap());
        assert_eq!(dist, Directory::default(), "an empty directory is kept");
        let web = directory(&a, packages.directories[1].digest.as_ref().unwrap());
        let files: Vec<&str> = web.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(files, ["package.json"]);
        let subdirs: Vec<&str> = web.directories.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(subdirs, ["node_modules", "src"]);
        let modules = directory(&a, web.directories[0].digest.as_ref().unwrap());
        assert_eq!(modules.symlinks[0].target, "../../lib");
    }

    #[test]
    fn entries_from_disk_keep_their_kind_bit_and_link_text() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("pkg/bin")).unwrap();
        std::fs::write(root.join("pkg/a.txt"), "a").unwrap();
        std::fs::write(root.join("pkg/bin/run"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            root.join("pkg/bin/run"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        std::os::unix::fs::symlink("../a.txt", root.join("pkg/bin/a")).unwrap();
        std::fs::create_dir(root.join("pkg/empty")).unwrap();
        let digests = FileDigests::new();
        let mut input = InputRoot::new();
        for path in ["pkg/a.txt", "pkg/bin/run", "pkg/bin/a", "pkg/empty"] {
            input.add_from_disk(root, path, &digests).unwrap();
        }
        assert!(input.add_from_disk(root, "pkg/missing", &digests).is_err());
        let built = input.build().unwrap();
        let top = directory(&built, &built.digest);
        let pkg = directory(&built, top.directories[0].digest.as_ref().unwrap());
        assert_eq!(pkg.files[0].name, "a.txt");
        assert_eq!(pkg.files[0].digest.as_ref().unwrap(), &digest_of(b"a"));
        assert!(!pkg.files[0].is_executable);
        let names: Vec<&str> = pkg.directories.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["bin", "empty"]);
        let bin = directory(&built, pkg.directories[0].digest.as_ref().unwrap());
        assert_eq!(
            (bin.files[0].name.as_str(), bin.files[0].is_executable),
            ("run", true)
        );
        assert_eq!(
            (
                bin.symlinks[0].name.as_str(),
                bin.symlinks[0].target.as_str()
            ),
            ("a", "../a.txt")
        );
    }

    #[test]
    fn local_files_are_blobs_remote_ones_are_not_and_bad_paths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let digests = FileDigests::new();
        let (digest, executable) = digests.digest(&script).unwrap();
        assert!(executable);
        assert_eq!(digests.digest(&script).unwrap().0, digest);
        assert_eq!(digests.hashed(), 1, "an unchanged file is hashed once");
        let mut root = InputRoot::new();
        root.add(
            "tools/run.sh",
            Input::Local {
                path: script.clone(),
                digest: digest.clone(),
                executable,
            },
        )
        .unwrap();
        let remote = Digest {
            hash: "c".repeat(64),
            size_bytes: 9,
        };
        root.add(
            "tools/upstream.txt",
            Input::Remote {
                digest: remote.clone(),
                executable: false,
            },
        )
        .unwrap();
        let built = root.build().unwrap();
        assert!(built.blobs.iter().any(|b| b.digest == digest));
        assert!(!built.blobs.iter().any(|b| b.digest == remote));
        let tools = directory(
            &built,
            directory(&built, &built.digest).directories[0]
                .digest
                .as_ref()
                .unwrap(),
        );
        assert!(tools.files[0].is_executable && !tools.files[1].is_executable);
        for bad in ["/etc/passwd", "a/../b", "./a", ""] {
            assert_eq!(
                root.add(bad, Input::Directory),
                Err(InputError::NotRelative(bad.to_string()))
            );
        }
        root.add("tools/run.sh/inner", Input::Directory).unwrap();
        let error = root.build().unwrap_err();
        assert_eq!(
            error,
            InputError::FileAndDirectory("tools/run.sh".to_string())
        );
        assert_eq!(
            error.to_string(),
            "`tools/run.sh` is both a file and a directory"
        );
    }
}
