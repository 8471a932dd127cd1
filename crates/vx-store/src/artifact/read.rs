//! The one validity check of STORE-5, shared by [`validate`] and [`super::restore`].
//!
//! How it works: one streaming walk (`read_archive`) over file → zstd → a counting reader that
//! enforces the size cap → a raw tar reader. The walk applies pax records itself, checks each
//! entry's type, name, position and declared size before its body is read, hashes bodies as they
//! stream by, and keeps only `log` and `meta.json` in memory. Output bodies go to a callback:
//! [`validate`] discards them, restore stages them. Every failure below the tar reader (I/O,
//! zstd, the cap) is recorded in shared [`Faults`], so an error that surfaces through the tar
//! reader is still reported by its cause.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use tar::EntryType;

use super::{
    hash_prefix, produced_digest, safe_name, ArtifactMeta, Damage, EntryKind, FileMeta,
    HashingReader, FORMAT,
};

/// Bounds on the entries that are held in memory while reading. A real log is at most 16 MiB of
/// output plus record headers; the bounds only stop a hostile archive from exhausting memory.
const LOG_LIMIT: u64 = 256 << 20;
const META_LIMIT: u64 = 256 << 20;
const PAX_LIMIT: u64 = 64 << 10;

/// A body another layer delivered, validated, waiting for adoption into the local store
/// (`Store::adopt_validated`).
pub struct Arrived {
    pub key: String,
    pub path: PathBuf,
    pub valid: Validated,
}

/// What [`validate`] proved: the metadata and the stored log (encoded, see [`crate::log`]).
#[derive(Debug)]
pub struct Validated {
    pub meta: ArtifactMeta,
    pub log: Vec<u8>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Damaged(Damage),
    /// The artifact did not exist when it was opened.
    #[error("the artifact was removed by another process")]
    Vanished,
    #[error("`{}`: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// Whether reading an archive computes the digest of its output tree (`ArtifactMeta::produced`),
/// a second hash of every body: a validation does (a packed or downloaded entry's digest goes to
/// the index); a restore does not (the index has it since the entry was saved, and the
/// artifact's own digest still proves every byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Produced {
    Computed,
    Skipped,
}

/// The one validity check of STORE-5, streaming: output bodies are hashed, never kept.
/// `accept` says whether the task's declared outputs match an entry name.
pub fn validate(
    path: &Path,
    key: &str,
    accept: &dyn Fn(&str) -> bool,
    cap: u64,
) -> Result<Validated, ReadError> {
    let mut discard = |_: &str, _: &FileMeta, body: &mut dyn Read| {
        io::copy(body, &mut io::sink())
            .map(drop)
            .map_err(Fail::Source)
    };
    match read_archive(path, key, accept, cap, Produced::Computed, &mut discard) {
        Ok((meta, log)) => Ok(Validated { meta, log }),
        Err(Fail::Damaged(damage)) => Err(ReadError::Damaged(damage)),
        Err(Fail::Vanished) => Err(ReadError::Vanished),
        Err(Fail::Io { path, source }) => Err(ReadError::Io { path, source }),
        Err(other) => unreachable!("validation writes nothing: {other:?}"),
    }
}

/// How reading an archive can fail, inside this module.
#[derive(Debug)]
pub(super) enum Fail {
    Damaged(Damage),
    Vanished,
    Io {
        path: PathBuf,
        source: io::Error,
    },
    Blocked {
        path: PathBuf,
    },
    Unsafe {
        path: PathBuf,
    },
    LinkLeaves {
        path: PathBuf,
        text: String,
    },
    /// Reading the archive failed; [`Faults`] knows why.
    Source(io::Error),
}

fn damaged(reason: impl Into<String>) -> Fail {
    Fail::Damaged(Damage::new(reason))
}

/// A name as it may appear in a reason: control characters escaped.
fn shown(name: &str) -> String {
    name.escape_debug().to_string()
}

/// What went wrong below the tar reader, recorded where it happened.
#[derive(Default)]
struct Faults {
    io: RefCell<Option<io::Error>>,
    compression: Cell<bool>,
    over_cap: Cell<bool>,
}

impl Faults {
    /// The cause of `_err`, which surfaced from reading the archive.
    fn classify(&self, path: &Path, _err: io::Error) -> Fail {
        if let Some(source) = self.io.borrow_mut().take() {
            Fail::Io {
                path: path.to_path_buf(),
                source,
            }
        } else if self.over_cap.get() {
            damaged("too large")
        } else if self.compression.get() {
            damaged("bad compression")
        } else {
            damaged("bad tar")
        }
    }
}

/// The artifact file, recording read errors as I/O faults.
struct FileSource {
    file: File,
    faults: Rc<Faults>,
}

impl Read for FileSource {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read(buf).map_err(|e| {
            let kind = e.kind();
            *self.faults.io.borrow_mut() = Some(e);
            io::Error::new(kind, "reading the artifact failed")
        })
    }
}

/// The decompressed stream, counted against the cap.
struct Capped<R> {
    inner: R,
    count: u64,
    cap: u64,
    faults: Rc<Faults>,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf).inspect_err(|_| {
            if self.faults.io.borrow().is_none() {
                self.faults.compression.set(true);
            }
        })?;
        self.count += n as u64;
        if self.count > self.cap {
            self.faults.over_cap.set(true);
            return Err(io::Error::other("over the size cap"));
        }
        Ok(n)
    }
}

/// What an entry is, once its name and position were checked.
enum Kind {
    Log,
    Meta,
    Output(FileMeta),
    Digest,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Log,
    Meta,
    Outputs,
    WorkspaceOutputs,
    Done,
}

/// The order, name and listing checks of STORE-5, entry by entry.
struct Walk<'a> {
    accept: &'a dyn Fn(&str) -> bool,
    stage: Stage,
    previous: String,
    seen: HashSet<String>,
    meta: Option<ArtifactMeta>,
}

impl Walk<'_> {
    fn enter(&mut self, name: &str, size: u64) -> Result<Kind, Fail> {
        let fixed = matches!(name, "log" | "meta.json" | "digest");
        if !fixed && !safe_name(name) {
            return Err(damaged(format!("unsafe path {}", shown(name))));
        }
        if self.stage == Stage::Done {
            return Err(damaged("entry after digest"));
        }
        if !self.seen.insert(name.to_owned()) {
            return Err(damaged(format!("repeated entry {}", shown(name))));
        }
        let order = || damaged("unexpected entry order");
        let (expected, next, kind) = match name {
            "log" => (self.stage == Stage::Log, Stage::Meta, Kind::Log),
            "meta.json" => (self.stage == Stage::Meta, Stage::Outputs, Kind::Meta),
            "digest" => (self.stage >= Stage::Outputs, Stage::Done, Kind::Digest),
            _ => {
                let section = if name.starts_with("outputs/") {
                    Stage::Outputs
                } else {
                    Stage::WorkspaceOutputs
                };
                let sorted = self.stage < section || self.previous.as_str() < name;
                if self.stage < Stage::Outputs || self.stage > section || !sorted {
                    return Err(order());
                }
                if !(self.accept)(name) {
                    return Err(damaged(format!("undeclared output {}", shown(name))));
                }
                let meta = self.meta.as_ref().expect("meta.json came first");
                let Some(file) = meta.files.get(name) else {
                    return Err(damaged(format!("unlisted output {}", shown(name))));
                };
                if file.kind() != EntryKind::File {
                    return Err(damaged(format!("not a regular file: {}", shown(name))));
                }
                if file.size != size {
                    return Err(damaged(format!("size mismatch {}", shown(name))));
                }
                name.clone_into(&mut self.previous);
                (true, section, Kind::Output(*file))
            }
        };
        if !expected {
            return Err(order());
        }
        self.stage = next;
        Ok(kind)
    }

    fn finish(self) -> Result<ArtifactMeta, Fail> {
        if self.stage != Stage::Done {
            return Err(damaged("missing digest"));
        }
        let meta = self.meta.expect("meta.json came before the digest");
        let missing = meta
            .files
            .iter()
            .find(|(name, file)| file.kind() == EntryKind::File && !self.seen.contains(*name));
        if let Some((missing, _)) = missing {
            return Err(damaged(format!("missing output {}", shown(missing))));
        }
        Ok(meta)
    }
}

pub(super) type OnOutput<'a> = dyn FnMut(&str, &FileMeta, &mut dyn Read) -> Result<(), Fail> + 'a;

/// Streams the archive at `path` through every check of STORE-5, handing each output body to
/// `on_output` (which must map read errors to [`Fail::Source`]). Returns the metadata and the
/// encoded log once the archive ended cleanly.
pub(super) fn read_archive(
    path: &Path,
    key: &str,
    accept: &dyn Fn(&str) -> bool,
    cap: u64,
    produced: Produced,
    on_output: &mut OnOutput<'_>,
) -> Result<(ArtifactMeta, Vec<u8>), Fail> {
    let io_at = |source| Fail::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Fail::Vanished),
        Err(e) => return Err(io_at(e)),
    };
    let faults = Rc::new(Faults::default());
    let source = FileSource {
        file,
        faults: faults.clone(),
    };
    let decoder = zstd::Decoder::new(source).map_err(io_at)?;
    let mut archive = tar::Archive::new(Capped {
        inner: decoder,
        count: 0,
        cap,
        faults: faults.clone(),
    });
    let classify = |e: io::Error| faults.classify(path, e);
    let lift = |fail: Fail| match fail {
        Fail::Source(e) => classify(e),
        other => other,
    };
    let mut walk = Walk {
        accept,
        stage: Stage::Log,
        previous: String::new(),
        seen: HashSet::new(),
        meta: None,
    };
    let mut digest = blake3::Hasher::new();
    let mut blobs: BTreeMap<String, [u8; 32]> = BTreeMap::new();
    let mut log = Vec::new();
    let mut pax_path: Option<Option<Vec<u8>>> = None;
    for entry in archive.entries().map_err(classify)?.raw(true) {
        let mut entry = entry.map_err(classify)?;
        if entry.header().as_ustar().is_none() {
            return Err(damaged("bad tar"));
        }
        let kind = entry.header().entry_type();
        let size = entry.size();
        if kind == EntryType::XHeader && pax_path.is_none() {
            let records = read_small(&mut entry, size, PAX_LIMIT).map_err(lift)?;
            pax_path = Some(pax_path_of(&records)?);
            continue;
        }
        let name = pax_path
            .take()
            .flatten()
            .unwrap_or_else(|| entry.path_bytes().into_owned());
        let name = String::from_utf8(name).map_err(|e| {
            damaged(format!(
                "unsafe path {}",
                String::from_utf8_lossy(e.as_bytes())
            ))
        })?;
        if kind != EntryType::Regular {
            return Err(damaged(format!("not a regular file: {}", shown(&name))));
        }
        let kind = walk.enter(&name, size)?;
        if !matches!(kind, Kind::Digest) {
            hash_prefix(&mut digest, &name, size);
        }
        match kind {
            Kind::Log => {
                log = read_small(&mut entry, size, LOG_LIMIT).map_err(lift)?;
                digest.update(&log);
                crate::log::decode(&log).map_err(Fail::Damaged)?;
            }
            Kind::Meta => {
                let body = read_small(&mut entry, size, META_LIMIT).map_err(lift)?;
                digest.update(&body);
                let meta: ArtifactMeta =
                    serde_json::from_slice(&body).map_err(|_| damaged("bad meta.json"))?;
                if meta.format != FORMAT {
                    return Err(damaged(format!("unknown format {}", meta.format)));
                }
                if meta.key != key {
                    return Err(damaged("key mismatch"));
                }
                check_listing(&meta, accept)?;
                walk.meta = Some(meta);
            }
            Kind::Output(file) => {
                // Each body feeds the artifact's digest, and its own for the produced digest.
                let mut whole = HashingReader {
                    inner: &mut entry,
                    hasher: &mut digest,
                    count: 0,
                    failed: false,
                };
                let count = match produced {
                    Produced::Computed => {
                        let mut own = blake3::Hasher::new();
                        let mut body = HashingReader {
                            inner: &mut whole,
                            hasher: &mut own,
                            count: 0,
                            failed: false,
                        };
                        on_output(&name, &file, &mut body).map_err(lift)?;
                        io::copy(&mut body, &mut io::sink()).map_err(classify)?;
                        let count = body.count;
                        blobs.insert(name, *own.finalize().as_bytes());
                        count
                    }
                    Produced::Skipped => {
                        on_output(&name, &file, &mut whole).map_err(lift)?;
                        io::copy(&mut whole, &mut io::sink()).map_err(classify)?;
                        whole.count
                    }
                };
                if count != size {
                    return Err(damaged("bad tar"));
                }
            }
            Kind::Digest => {
                if size != 64 {
                    return Err(damaged("bad digest"));
                }
                let body = read_small(&mut entry, size, 64).map_err(lift)?;
                if body != digest.finalize().to_hex().as_bytes() {
                    return Err(damaged("bad digest"));
                }
            }
        }
    }
    if pax_path.is_some() {
        return Err(damaged("bad tar"));
    }
    let mut meta = walk.finish()?;
    if produced == Produced::Computed {
        meta.produced = Some(produced_digest(&meta, &blobs));
    }
    // After the first zero block: only zeros may follow, and the zstd stream must end cleanly.
    let mut rest = archive.into_inner();
    let mut buf = vec![0; 64 << 10];
    loop {
        match rest.read(&mut buf) {
            Ok(0) => break,
            Ok(n) if buf[..n].iter().all(|b| *b == 0) => {}
            Ok(_) => return Err(damaged("junk after archive end")),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(classify(e)),
        }
    }
    Ok((meta, log))
}

/// The checks of `meta.json`'s listing that no tar entry reaches: every name is safe and
/// declared; every entry is a regular file, a directory (size 0) or a symlink whose text is in
/// `links` (size: its length); `links` names only symlinks; and nothing lies below a listed
/// file or symlink (a restore would write through it).
fn check_listing(meta: &ArtifactMeta, accept: &dyn Fn(&str) -> bool) -> Result<(), Fail> {
    for (name, file) in &meta.files {
        if !safe_name(name) {
            return Err(damaged(format!("unsafe path {}", shown(name))));
        }
        if !accept(name) {
            return Err(damaged(format!("undeclared output {}", shown(name))));
        }
        let well_formed = match file.kind() {
            EntryKind::File => !meta.links.contains_key(name),
            EntryKind::Dir => file.size == 0 && !meta.links.contains_key(name),
            EntryKind::Symlink => meta.links.get(name).is_some_and(|text| {
                !text.is_empty() && !text.contains('\0') && text.len() as u64 == file.size
            }),
            EntryKind::Other => false,
        };
        if !well_formed {
            return Err(damaged(format!("bad entry {}", shown(name))));
        }
        let mut parent = name.as_str();
        while let Some((up, _)) = parent.rsplit_once('/') {
            if meta
                .files
                .get(up)
                .is_some_and(|above| above.kind() != EntryKind::Dir)
            {
                return Err(damaged(format!("entry below a file: {}", shown(name))));
            }
            parent = up;
        }
    }
    if let Some(name) = meta.links.keys().find(|n| !meta.files.contains_key(*n)) {
        return Err(damaged(format!("unlisted link {}", shown(name))));
    }
    if let Some(name) = meta.unread.iter().find(|n| !meta.files.contains_key(*n)) {
        return Err(damaged(format!("unlisted unread entry {}", shown(name))));
    }
    Ok(())
}

/// Reads a whole entry body of `size` bytes, refusing more than `limit`.
fn read_small(body: &mut dyn Read, size: u64, limit: u64) -> Result<Vec<u8>, Fail> {
    if size > limit {
        return Err(damaged("too large"));
    }
    let mut out = Vec::with_capacity(size.min(1 << 20) as usize);
    body.take(size)
        .read_to_end(&mut out)
        .map_err(Fail::Source)?;
    if out.len() as u64 != size {
        return Err(damaged("bad tar"));
    }
    Ok(out)
}

/// The `path` of a pax extended header; other records that change how an entry is read
/// (`size`, `linkpath`, sparse maps) make the archive invalid.
fn pax_path_of(records: &[u8]) -> Result<Option<Vec<u8>>, Fail> {
    let mut path = None;
    for record in tar::PaxExtensions::new(records) {
        let record = record.map_err(|_| damaged("bad tar"))?;
        match record.key_bytes() {
            b"path" => path = Some(record.value_bytes().to_vec()),
            b"mtime" | b"atime" | b"ctime" | b"uid" | b"gid" | b"uname" | b"gname" | b"comment" => {
            }
            _ => return Err(damaged("bad tar")),
        }
    }
    Ok(path)
}

/// The stored log of an artifact, read from its first entry without validating the rest: the
/// up-to-date path (STORE-9) replays the log of an entry whose outputs are already on disk, so
/// it must not decompress them. A log that does not decode is damage.
pub fn read_log(path: &Path) -> Result<Vec<u8>, ReadError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(ReadError::Vanished),
        Err(source) => {
            return Err(ReadError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let decoder = zstd::stream::read::Decoder::new(file)
        .map_err(|_| ReadError::Damaged(Damage::new("bad compression")))?;
    let mut archive = tar::Archive::new(decoder.take(LOG_LIMIT + (1 << 20)));
    let mut entries = archive
        .entries()
        .map_err(|_| ReadError::Damaged(Damage::new("bad tar")))?;
    let mut first = match entries.next() {
        Some(Ok(entry)) => entry,
        _ => return Err(ReadError::Damaged(Damage::new("bad tar"))),
    };
    let is_log = first.path_bytes().as_ref() == b"log"
        && first.header().entry_type() == EntryType::Regular
        && first.header().size().is_ok_and(|s| s <= LOG_LIMIT);
    if !is_log {
        return Err(ReadError::Damaged(Damage::new("unexpected entry order")));
    }
    let mut log = Vec::new();
    first
        .read_to_end(&mut log)
        .map_err(|_| ReadError::Damaged(Damage::new("bad compression")))?;
    crate::log::decode(&log).map_err(ReadError::Damaged)?;
    Ok(log)
}
