//! Packing (STORE-5, STORE-7 step 2): stat the outputs, check the cap, write the archive to a
//! staging file, and read it back with [`validate`].

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use std::os::fd::AsFd;

use tar::EntryType;

use super::beneath::{self, WalkError, Walker};
use super::{
    create_temp, hash_prefix, link_into_wall, link_target, safe_name, validate, ArtifactMeta,
    Damage, FileMeta, HashingReader, OutputFile, ReadError, BLOCK, FORMAT, KEPT_MODE_BITS,
    PACK_TEMP_PREFIX,
};

/// A packed artifact waiting in the staging directory.
#[derive(Debug)]
pub struct Packed {
    /// The temporary file in `tmp_dir` (mode 0600); the caller renames or removes it.
    pub path: PathBuf,
    /// Compressed size.
    pub size_bytes: u64,
    /// The metadata as stored, with `files` filled.
    pub meta: ArtifactMeta,
}

#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("the outputs would make a {size}-byte artifact, over the size cap")]
    TooLarge { size: u64 },
    #[error("output `{name}` is a symlink leaving the workspace")]
    SymlinkLeaves { name: String },
    #[error("output `{name}` is a symlink into a `.git` or `.vx` directory")]
    SymlinkIntoWall { name: String },
    /// A symlink whose text vx cannot check without following other links (`a/../b`), or
    /// that is not UTF-8.
    #[error("output `{name}` is a symlink whose target `{text}` vx cannot check")]
    SymlinkUnchecked { name: String, text: String },
    #[error("output `{name}` is not a regular file, directory or symlink")]
    NotRegular { name: String },
    /// An entry name that is unsafe (see [`safe_name`]) or given twice: a caller bug.
    #[error("`{name}` is not a valid output entry name")]
    BadName { name: String },
    /// The re-read of the packed file failed (STORE-7 step 2).
    #[error("the packed artifact does not read back ({0})")]
    Damaged(Damage),
    #[error("{}", crate::fault::io_text(path, source))]
    Io { path: PathBuf, source: io::Error },
}

/// Packs `files` (entry names already `outputs/...`/`workspace-outputs/...`, any order) into a
/// unique temp file in `tmp_dir`, then re-reads it with [`validate`] (STORE-7 step 2).
/// `meta.files`, `meta.links` and `meta.format` are filled here. A directory is stored as its
/// mode, a symlink as its text when it leads inside [`OutputFile::contain`] ([`link_target`]),
/// a regular file as its mode, mtime and bytes.
pub fn pack(
    tmp_dir: &Path,
    log: &[u8],
    mut meta: ArtifactMeta,
    files: &[OutputFile],
    cap: u64,
) -> Result<Packed, PackError> {
    let mut files: Vec<&OutputFile> = files.iter().collect();
    files.sort_by(|a, b| a.name.cmp(&b.name));
    let mut regular: Vec<&OutputFile> = Vec::with_capacity(files.len());
    let mut sources = Vec::with_capacity(files.len());
    meta.format = FORMAT;
    meta.files.clear();
    meta.links.clear();
    let mut contain = Contain::default();
    for file in &files {
        if !safe_name(&file.name) || meta.files.contains_key(&file.name) {
            return Err(PackError::BadName {
                name: file.name.clone(),
            });
        }
        let (file_meta, source) = inspect(file, &mut contain)?;
        meta.files.insert(file.name.clone(), file_meta);
        match source {
            Source::File(path) => {
                regular.push(file);
                sources.push(path);
            }
            Source::Link(text) => {
                meta.links.insert(file.name.clone(), text);
            }
            Source::Dir => {}
        }
    }
    let files = regular;
    // An unread name the walk did not find (a caller's glob named nothing) is not listed.
    let listed = &meta.files;
    meta.unread.retain(|name| listed.contains_key(name));
    let meta_json = serde_json::to_vec(&meta).expect("artifact metadata serializes");
    let mut entries = vec![
        ("log", log.len() as u64),
        ("meta.json", meta_json.len() as u64),
    ];
    entries.extend(
        files
            .iter()
            .map(|f| (f.name.as_str(), meta.files[&f.name].size)),
    );
    entries.push(("digest", 64));
    let size = entries.iter().map(|(n, s)| entry_size(n, *s)).sum::<u64>() + 2 * BLOCK;
    if size > cap {
        return Err(PackError::TooLarge { size });
    }

    let (temp, file) =
        create_temp(tmp_dir, PACK_TEMP_PREFIX, ".tmp", 0o600).map_err(|source| PackError::Io {
            path: tmp_dir.to_path_buf(),
            source,
        })?;
    let contents = Contents {
        log,
        meta_json: &meta_json,
        meta: &meta,
        files: &files,
        sources: &sources,
        size,
    };
    let written = write_archive(&temp, file, &contents);
    let checked = written.and_then(|()| {
        validate(&temp, &meta.key, &|_| true, cap).map_err(|err| match err {
            ReadError::Damaged(damage) => PackError::Damaged(damage),
            ReadError::Vanished => PackError::Io {
                path: temp.clone(),
                source: io::ErrorKind::NotFound.into(),
            },
            ReadError::Io { path, source } => PackError::Io { path, source },
        })
    });
    let size_bytes = checked.and_then(|valid| {
        meta.produced = valid.meta.produced;
        fs::metadata(&temp)
            .map(|m| m.len())
            .map_err(|source| PackError::Io {
                path: temp.clone(),
                source,
            })
    });
    match size_bytes {
        Ok(size_bytes) => Ok(Packed {
            path: temp,
            size_bytes,
            meta,
        }),
        Err(err) => {
            let _ = fs::remove_file(&temp);
            Err(err)
        }
    }
}

/// Where an entry's stored form comes from.
enum Source {
    /// A regular file's bytes.
    File(PathBuf),
    /// A symlink's text.
    Link(String),
    Dir,
}

/// The real paths of the directories symlinks must lead inside, each canonicalized once.
#[derive(Default)]
struct Contain(Vec<(PathBuf, PathBuf)>);

impl Contain {
    fn real(&mut self, dir: &Path) -> io::Result<PathBuf> {
        if let Some((_, real)) = self.0.iter().find(|(d, _)| d == dir) {
            return Ok(real.clone());
        }
        let real = fs::canonicalize(dir)?;
        self.0.push((dir.to_path_buf(), real.clone()));
        Ok(real)
    }
}

/// `lstat`s one output: a regular file, a directory, or a symlink leading inside
/// [`OutputFile::contain`] (never followed).
fn inspect(file: &OutputFile, contain: &mut Contain) -> Result<(FileMeta, Source), PackError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| PackError::Io { path, source }
    };
    let name = || file.name.clone();
    let lstat = fs::symlink_metadata(&file.path).map_err(io(&file.path))?;
    let kind = lstat.file_type();
    if kind.is_file() {
        return Ok((file_meta(&lstat), Source::File(file.path.clone())));
    }
    if kind.is_dir() {
        let meta = FileMeta {
            size: 0,
            ..file_meta(&lstat)
        };
        return Ok((meta, Source::Dir));
    }
    if !kind.is_symlink() {
        return Err(PackError::NotRegular { name: name() });
    }
    let text = fs::read_link(&file.path).map_err(io(&file.path))?;
    let Some(text) = text.to_str().map(str::to_string) else {
        return Err(PackError::SymlinkUnchecked {
            name: name(),
            text: text.to_string_lossy().into_owned(),
        });
    };
    let parent = file.path.parent().unwrap_or(Path::new("/"));
    let parent = contain.real(parent).map_err(io(parent))?;
    let inside = contain.real(&file.contain).map_err(io(&file.contain))?;
    match link_target(&text, &parent) {
        Some(place) if link_into_wall(&place, &inside) => {
            return Err(PackError::SymlinkIntoWall { name: name() })
        }
        Some(place) if place.starts_with(&inside) => {}
        Some(_) => return Err(PackError::SymlinkLeaves { name: name() }),
        None => return Err(PackError::SymlinkUnchecked { name: name(), text }),
    }
    let meta = FileMeta {
        size: text.len() as u64,
        ..file_meta(&lstat)
    };
    Ok((meta, Source::Link(text)))
}

fn file_meta(md: &fs::Metadata) -> FileMeta {
    FileMeta {
        // The type bits and the permissions, never setuid or setgid.
        mode: md.mode() & (libc::S_IFMT | KEPT_MODE_BITS),
        mtime_ns: md.mtime() * 1_000_000_000 + md.mtime_nsec(),
        size: md.len(),
    }
}

/// What goes into one archive, in order, and the exact size of the uncompressed tar.
struct Contents<'a> {
    log: &'a [u8],
    meta_json: &'a [u8],
    meta: &'a ArtifactMeta,
    files: &'a [&'a OutputFile],
    sources: &'a [PathBuf],
    /// Every entry's [`entry_size`] plus the two end blocks: what [`TarWriter`] writes, byte for
    /// byte (it pads a short body), so it is pledged to zstd.
    size: u64,
}

fn write_archive(temp: &Path, file: File, contents: &Contents<'_>) -> Result<(), PackError> {
    let Contents {
        log,
        meta_json,
        meta,
        files,
        sources,
        size,
    } = *contents;
    let at_temp = |source| PackError::Io {
        path: temp.to_path_buf(),
        source,
    };
    let mut encoder = zstd::Encoder::new(BufWriter::new(file), 3).map_err(at_temp)?;
    encoder.include_checksum(true).map_err(at_temp)?;
    // The frame then records its content size, and zstd sizes the window to it: a restore's
    // decoder allocates what the artifact needs instead of the level's 2 MiB window, and the
    // encoder's tables shrink the same way.
    encoder.set_pledged_src_size(Some(size)).map_err(at_temp)?;
    let mut tar = TarWriter::new(encoder);
    let mut digest = blake3::Hasher::new();
    let mut walkers: Vec<Walker> = Vec::new();
    for (name, body) in [("log", log), ("meta.json", meta_json)] {
        hash_prefix(&mut digest, name, body.len() as u64);
        digest.update(body);
        tar.entry(
            name.as_bytes(),
            EntryType::Regular,
            body.len() as u64,
            &mut &body[..],
        )
        .map_err(at_temp)?;
    }
    for (file, source) in files.iter().zip(sources) {
        let size = meta.files[&file.name].size;
        let at_source = |source_err| PackError::Io {
            path: source.clone(),
            source: source_err,
        };
        let opened = open_output(&mut walkers, file).map_err(at_source)?;
        let mut body = HashingReader {
            inner: (&opened).take(size),
            hasher: &mut digest,
            count: 0,
            failed: false,
        };
        hash_prefix(body.hasher, &file.name, size);
        let result = tar.entry(file.name.as_bytes(), EntryType::Regular, size, &mut body);
        match result {
            Err(e) if body.failed => return Err(at_source(e)),
            Err(e) => return Err(at_temp(e)),
            Ok(())
                if body.count != size || opened.metadata().map(|m| m.len()).ok() != Some(size) =>
            {
                let changed = io::Error::other("the file changed while it was packed");
                return Err(at_source(changed));
            }
            Ok(()) => {}
        }
    }
    let hex = digest.finalize().to_hex();
    tar.entry(b"digest", EntryType::Regular, 64, &mut hex.as_bytes())
        .map_err(at_temp)?;
    let encoder = tar.finish().map_err(at_temp)?;
    let buffered = encoder.finish().map_err(at_temp)?;
    buffered.into_inner().map_err(|e| at_temp(e.into_error()))?;
    Ok(())
}

/// Opens an output's bytes from its directory's descriptor, resolved from the project
/// directory (or the root, for a workspace output) without following any symlink:
/// a process that swaps the file or a directory on its way for a link while vx packs makes the
/// save fail, never reads what the link leads to.
fn open_output(walkers: &mut Vec<Walker>, file: &OutputFile) -> io::Result<File> {
    let rel = file
        .name
        .strip_prefix("outputs/")
        .or_else(|| file.name.strip_prefix("workspace-outputs/"))
        .map(Path::new)
        .filter(|rel| file.path.ends_with(rel))
        .ok_or_else(|| io::Error::other("the entry name does not match its path"))?;
    let base = file
        .path
        .ancestors()
        .nth(rel.components().count())
        .ok_or_else(|| io::Error::other("the entry name does not match its path"))?;
    let (parent, name) = beneath::split(rel).ok_or_else(|| io::Error::other("not a file name"))?;
    let walker = match walkers.iter().position(|w| w.base() == base) {
        Some(at) => &mut walkers[at],
        None => {
            walkers.push(Walker::new(base));
            walkers.last_mut().expect("pushed")
        }
    };
    let dir = walker.dir(parent, None).map_err(|e| match e {
        WalkError::Symlink(path) => io::Error::other(format!(
            "`{}` became a symlink while it was packed",
            path.display()
        )),
        WalkError::NotDir(path) => io::Error::other(format!(
            "`{}` stopped being a directory while it was packed",
            path.display()
        )),
        WalkError::Io(_, e) => e,
    })?;
    beneath::open_regular_at(dir.as_fd(), name)
}

/// A minimal ustar writer: exact control over every header byte, pax `path` records for long
/// names. (`tar::Builder` would emit GNU long-name entries instead.)
pub(crate) struct TarWriter<W: Write> {
    out: W,
}

impl<W: Write> TarWriter<W> {
    pub(crate) fn new(out: W) -> TarWriter<W> {
        TarWriter { out }
    }

    /// Writes one entry; `body` must yield `size` bytes (fewer are padded with zeros so the
    /// archive stays well formed; the caller detects the shortfall).
    pub(crate) fn entry(
        &mut self,
        name: &[u8],
        kind: EntryType,
        size: u64,
        body: &mut dyn Read,
    ) -> io::Result<()> {
        let mut header = tar::Header::new_ustar();
        if !place_name(&mut header, name) {
            let record = pax_path_record(name);
            let mut pax = tar::Header::new_ustar();
            pax.as_ustar_mut().expect("ustar").name[..13].copy_from_slice(b"././@PaxPath\0");
            finish_header(&mut pax, EntryType::XHeader, record.len() as u64);
            self.out.write_all(pax.as_bytes())?;
            self.out.write_all(&record)?;
            self.pad(record.len() as u64)?;
            let field = &mut header.as_ustar_mut().expect("ustar").name;
            field.copy_from_slice(&name[..100]);
        }
        finish_header(&mut header, kind, size);
        self.out.write_all(header.as_bytes())?;
        let written = io::copy(&mut body.take(size), &mut self.out)?;
        io::copy(&mut io::repeat(0).take(size - written), &mut self.out)?;
        self.pad(size)
    }

    fn pad(&mut self, len: u64) -> io::Result<()> {
        let rest = (BLOCK - len % BLOCK) % BLOCK;
        self.out.write_all(&[0; BLOCK as usize][..rest as usize])
    }

    /// Writes the two zero blocks that end the archive.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        self.out.write_all(&[0; 2 * BLOCK as usize])?;
        Ok(self.out)
    }
}

/// Puts `name` in the ustar name (and prefix) fields; false when it does not fit.
fn place_name(header: &mut tar::Header, name: &[u8]) -> bool {
    let ustar = header.as_ustar_mut().expect("ustar");
    if name.len() <= 100 {
        ustar.name[..name.len()].copy_from_slice(name);
        return true;
    }
    // Split at a `/` so that the prefix takes at most 155 bytes and the rest at most 100.
    let split = name
        .iter()
        .enumerate()
        .filter(|(i, b)| **b == b'/' && *i <= 155 && name.len() - i - 1 <= 100 && *i > 0)
        .map(|(i, _)| i)
        .next();
    match split {
        Some(i) if i + 1 < name.len() => {
            ustar.prefix[..i].copy_from_slice(&name[..i]);
            ustar.name[..name.len() - i - 1].copy_from_slice(&name[i + 1..]);
            true
        }
        _ => false,
    }
}

fn finish_header(header: &mut tar::Header, kind: EntryType, size: u64) {
    header.set_entry_type(kind);
    header.set_size(size);
    header.set_mode(0o644);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header.set_cksum();
}

/// `"<len> path=<name>\n"`, where `<len>` counts the whole record including itself.
fn pax_path_record(name: &[u8]) -> Vec<u8> {
    let rest = " path=\n".len() + name.len();
    let mut len = rest + 1;
    while len != rest + len.to_string().len() {
        len = rest + len.to_string().len();
    }
    let mut record = format!("{len} path=").into_bytes();
    record.extend_from_slice(name);
    record.push(b'\n');
    record
}

/// Bytes one entry takes in the uncompressed archive.
fn entry_size(name: &str, size: u64) -> u64 {
    let round = |n: u64| n.div_ceil(BLOCK) * BLOCK;
    let mut header = tar::Header::new_ustar();
    let pax = if place_name(&mut header, name.as_bytes()) {
        0
    } else {
        BLOCK + round(pax_path_record(name.as_bytes()).len() as u64)
    };
    pax + BLOCK + round(size)
}
