//! Tests of the artifact format: round trips through pack → validate → restore, and hand-built
//! hostile archives that must be rejected with nothing written.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use tar::EntryType;

use super::pack::TarWriter;
use super::*;
use crate::log::{LogBuf, LogStream};

const CAP: u64 = 64 << 20;

fn key() -> String {
    "ab".repeat(32)
}

fn meta() -> ArtifactMeta {
    ArtifactMeta {
        format: 0,
        key: key(),
        task: "web#build".into(),
        command: "tsc".into(),
        files: Default::default(),
        links: Default::default(),
        unread: Default::default(),
        exec: ExecMeta {
            duration_ms: 1200,
            cpu_ms: Some(900),
            peak_rss_bytes: None,
        },
        producer: Producer {
            vx_version: "0.1.0".into(),
            os: "linux".into(),
            arch: "x86_64".into(),
            created_at: "2025-01-01T00:00:00Z".into(),
            commit: None,
        },
        produced: None,
    }
}

fn log() -> Vec<u8> {
    let mut buf = LogBuf::new();
    buf.push(LogStream::Stdout, b"building\n");
    buf.push(LogStream::Stderr, b"warning: x\n");
    buf.encode()
}

fn all(_: &str) -> bool {
    true
}

/// A temp dir holding `project/` (outputs come from here), `dest/` (restores go here) and
/// `tmp/` (the staging directory).
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["project", "dest", "tmp"] {
            fs::create_dir(dir.path().join(sub)).unwrap();
        }
        Fixture { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn project(&self) -> PathBuf {
        self.path("project")
    }

    fn write(&self, rel: &str, bytes: &[u8], mode: u32) -> PathBuf {
        let path = self.project().join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, bytes).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    fn output(&self, rel: &str) -> OutputFile {
        OutputFile {
            name: format!("outputs/{rel}"),
            path: self.project().join(rel),
            contain: self.project(),
        }
    }

    fn pack(&self, files: &[OutputFile]) -> Result<Packed, PackError> {
        pack(&self.path("tmp"), &log(), meta(), files, CAP)
    }

    /// Restores into `dest/`: `outputs/x` → `dest/x`, `workspace-outputs/x` → `dest/ws/x`.
    fn restore(&self, artifact: &Path) -> Result<Restored, RestoreError> {
        let dest = self.path("dest");
        let target = move |name: &str| match name.strip_prefix("outputs/") {
            Some(rel) => Target {
                path: dest.join(rel),
                contain: dest.clone(),
                root: dest.clone(),
            },
            None => Target {
                path: dest
                    .join("ws")
                    .join(name.strip_prefix("workspace-outputs/").unwrap()),
                contain: dest.clone(),
                root: dest.clone(),
            },
        };
        restore(artifact, &key(), &all, CAP, &target)
    }

    /// Every path under the fixture, sorted (directories end in `/`).
    fn listing(&self) -> Vec<String> {
        fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
            for entry in fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                if path.is_dir() && !path.is_symlink() {
                    out.push(format!("{rel}/"));
                    walk(&path, root, out);
                } else {
                    out.push(rel);
                }
            }
        }
        let mut out = Vec::new();
        walk(self.dir.path(), self.dir.path(), &mut out);
        out.sort();
        out
    }
}

fn set_mtime(path: &Path, secs: u64, nanos: u32) {
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(UNIX_EPOCH + Duration::new(secs, nanos))
        .unwrap();
}

fn reason<T: std::fmt::Debug>(result: Result<T, ReadError>) -> String {
    match result {
        Err(ReadError::Damaged(damage)) => damage.reason,
        other => panic!("expected damage, got {other:?}"),
    }
}

/// A hand-built archive: `log`, a `meta.json` listing `outputs` (whatever their type), the
/// outputs in the given order, a correct digest unless told otherwise, then extras.
#[derive(Default)]
struct Hand<'a> {
    outputs: Vec<(&'a str, EntryType, &'a [u8])>,
    key: Option<&'a str>,
    no_digest: bool,
    bad_digest: bool,
    after_digest: Option<(&'a str, &'a [u8])>,
    junk_in_stream: &'a [u8],
    junk_after_stream: &'a [u8],
    /// Entries listed in `meta.json` without a tar entry: (name, mode, size).
    listed: Vec<(&'a str, u32, u64)>,
    links: Vec<(&'a str, &'a str)>,
}

impl Hand<'_> {
    fn write(&self, path: &Path) {
        self.write_with(path, meta());
    }

    /// As [`Hand::write`], from `meta` instead of the default listing.
    fn write_with(&self, path: &Path, mut meta: ArtifactMeta) {
        meta.format = FORMAT;
        meta.key = self.key.map_or_else(key, str::to_owned);
        for (name, _, body) in &self.outputs {
            let file = FileMeta {
                mode: 0o100644,
                mtime_ns: 0,
                size: body.len() as u64,
            };
            meta.files.insert(name.to_string(), file);
        }
        for (name, mode, size) in &self.listed {
            let file = FileMeta {
                mode: *mode,
                mtime_ns: 0,
                size: *size,
            };
            meta.files.insert(name.to_string(), file);
        }
        for (name, text) in &self.links {
            meta.links.insert(name.to_string(), text.to_string());
        }
        let meta = serde_json::to_vec(&meta).unwrap();
        let log = log();
        let mut entries = vec![
            ("log", EntryType::Regular, &log[..]),
            ("meta.json", EntryType::Regular, &meta[..]),
        ];
        entries.extend(self.outputs.iter().copied());
        let mut tar = TarWriter::new(Vec::new());
        let mut digest = blake3::Hasher::new();
        for (name, kind, body) in entries {
            hash_prefix(&mut digest, name, body.len() as u64);
            digest.update(body);
            tar.entry(name.as_bytes(), kind, body.len() as u64, &mut &body[..])
                .unwrap();
        }
        let mut hex = digest.finalize().to_hex().to_string();
        if self.bad_digest {
            hex = hex.replace(|c: char| c.is_ascii_digit(), "f");
        }
        if !self.no_digest {
            tar.entry(b"digest", EntryType::Regular, 64, &mut hex.as_bytes())
                .unwrap();
        }
        if let Some((name, body)) = self.after_digest {
            let size = body.len() as u64;
            tar.entry(name.as_bytes(), EntryType::Regular, size, &mut &body[..])
                .unwrap();
        }
        let mut raw = tar.finish().unwrap();
        raw.extend_from_slice(self.junk_in_stream);
        let mut compressed = zstd::encode_all(&raw[..], 3).unwrap();
        compressed.extend_from_slice(self.junk_after_stream);
        fs::write(path, compressed).unwrap();
    }
}

/// Restores a hostile archive that has a good output first: the attempt must end damaged with
/// the tree exactly as before.
fn assert_rejected_leaving_nothing(hand: Hand<'_>, expected: &str) {
    let fx = Fixture::new();
    fs::create_dir_all(fx.path("dest/kept")).unwrap();
    let artifact = fx.path("a.tar.zst");
    hand.write(&artifact);
    let before = fx.listing();
    match fx.restore(&artifact) {
        Err(RestoreError::Damaged(damage)) => assert_eq!(damage.reason, expected),
        other => panic!("expected damage {expected}, got {other:?}"),
    }
    assert_eq!(fx.listing(), before);
    assert!(!fx.dir.path().join("escape.txt").exists());
    assert!(!fx.dir.path().parent().unwrap().join("escape.txt").exists());
    assert_eq!(reason(validate(&artifact, &key(), &all, CAP)), expected);
}

#[test]
fn round_trip_preserves_bytes_mode_and_nanosecond_mtime() {
    let fx = Fixture::new();
    let tool = fx.write("bin/tool", b"#!/bin/sh\necho hi\n", 0o755);
    let readme = fx.write("readme.txt", b"read me", 0o644);
    set_mtime(&tool, 1_600_000_000, 123_456_789);
    set_mtime(&readme, 1_700_000_000, 1);
    let shared = fx.write("gen/shared.txt", b"shared", 0o600);
    let workspace = OutputFile {
        name: "workspace-outputs/gen/shared.txt".into(),
        path: shared,
        contain: fx.project(),
    };
    let files = [fx.output("readme.txt"), workspace, fx.output("bin/tool")];
    let packed = fx.pack(&files).unwrap();
    assert!(packed.path.starts_with(fx.path("tmp")));
    assert_eq!(fs::metadata(&packed.path).unwrap().mode() & 0o777, 0o600);
    assert_eq!(packed.size_bytes, fs::metadata(&packed.path).unwrap().len());
    assert_eq!(packed.meta.format, FORMAT);
    let tool_meta = packed.meta.files["outputs/bin/tool"];
    assert_eq!(tool_meta.mode, 0o100755);
    assert_eq!(tool_meta.mtime_ns, 1_600_000_000_123_456_789);

    let validated = validate(&packed.path, &key(), &all, CAP).unwrap();
    assert_eq!(validated.meta, packed.meta);
    assert_eq!(validated.log, log());

    let restored = fx.restore(&packed.path).unwrap();
    assert_eq!(restored.log, log());
    // All but the produced digest, which a restore leaves to the index.
    let produced = ArtifactMeta {
        produced: packed.meta.produced.clone(),
        ..restored.meta.clone()
    };
    assert_eq!(produced, packed.meta);
    let paths: Vec<_> = restored.files.iter().map(|f| f.path.clone()).collect();
    assert_eq!(
        paths,
        [
            fx.path("dest/bin/tool"),
            fx.path("dest/readme.txt"),
            fx.path("dest/ws/gen/shared.txt")
        ]
    );
    for (from, to) in [
        ("project/bin/tool", "dest/bin/tool"),
        ("project/readme.txt", "dest/readme.txt"),
        ("project/gen/shared.txt", "dest/ws/gen/shared.txt"),
    ] {
        let (a, b) = (
            fs::metadata(fx.path(from)).unwrap(),
            fs::metadata(fx.path(to)).unwrap(),
        );
        assert_eq!(
            fs::read(fx.path(from)).unwrap(),
            fs::read(fx.path(to)).unwrap()
        );
        assert_eq!(a.mode(), b.mode(), "{to}");
        assert_eq!(
            (a.mtime(), a.mtime_nsec()),
            (b.mtime(), b.mtime_nsec()),
            "{to}"
        );
    }
    // No temporaries are left next to the restored files.
    assert!(!fx.listing().iter().any(|p| p.contains(RESTORE_TEMP_PREFIX)));
}

#[test]
fn tar_headers_are_plain_ustar_with_pax_for_long_names() {
    let fx = Fixture::new();
    let long = format!("{}/{}.txt", "d".repeat(120), "f".repeat(120));
    let split = format!("{}/{}.txt", "p".repeat(90), "n".repeat(80));
    fx.write(&long, b"long", 0o644);
    fx.write(&split, b"split", 0o644);
    let packed = fx.pack(&[fx.output(&long), fx.output(&split)]).unwrap();

    let raw = zstd::decode_all(fs::File::open(&packed.path).unwrap()).unwrap();
    let mut archive = tar::Archive::new(&raw[..]);
    let mut names = Vec::new();
    for entry in archive.entries().unwrap().raw(true) {
        let entry = entry.unwrap();
        let header = entry.header();
        assert!(header.as_ustar().is_some());
        let kind = header.entry_type();
        assert!(
            matches!(kind, EntryType::Regular | EntryType::XHeader),
            "{kind:?}"
        );
        if kind == EntryType::Regular {
            assert_eq!(header.mode().unwrap(), 0o644);
            assert_eq!(header.mtime().unwrap(), 0);
            assert_eq!((header.uid().unwrap(), header.gid().unwrap()), (0, 0));
            assert_eq!(header.username_bytes(), Some(&b""[..]));
        }
        names.push(kind);
    }
    // One pax header, for the name no ustar split can hold.
    let pax = names.iter().filter(|k| **k == EntryType::XHeader).count();
    assert_eq!(pax, 1);
    // A standard reader sees the effective names.
    let mut archive = tar::Archive::new(&raw[..]);
    let paths: Vec<String> = archive
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect();
    let outputs = [format!("outputs/{long}"), format!("outputs/{split}")];
    assert_eq!(paths[2..4], outputs);
    assert_eq!(paths[4], "digest");

    let restored = fx.restore(&packed.path).unwrap();
    assert_eq!(restored.files.len(), 2);
    assert_eq!(fs::read(fx.path("dest").join(&long)).unwrap(), b"long");
}

/// The frame records the archive's size, so a restore's decoder sizes its window to the
/// artifact (a small artifact must not cost the compression level's 2 MiB window).
#[test]
fn the_frame_records_the_archive_size_for_long_names_too() {
    let fx = Fixture::new();
    let long = format!("{}/{}.txt", "d".repeat(120), "f".repeat(120));
    fx.write(&long, b"long", 0o644);
    fx.write("dist/a.txt", &[7u8; 3000], 0o644);
    let packed = fx
        .pack(&[fx.output(&long), fx.output("dist/a.txt")])
        .unwrap();
    let compressed = fs::read(&packed.path).unwrap();
    let raw = zstd::decode_all(&compressed[..]).unwrap();
    let recorded = zstd::zstd_safe::get_frame_content_size(&compressed)
        .ok()
        .flatten();
    assert_eq!(recorded, Some(raw.len() as u64));
}

/// `(kind, mode, link text or bytes)` of every entry under `dir`, by relative path.
fn tree(dir: &Path) -> Vec<(String, char, u32, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let md = fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            let (kind, body) = if md.file_type().is_symlink() {
                (
                    'l',
                    fs::read_link(&path)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                )
            } else if md.is_dir() {
                stack.push(path.clone());
                ('d', Vec::new())
            } else {
                ('f', fs::read(&path).unwrap())
            };
            out.push((rel, kind, md.mode() & 0o7777, body));
        }
    }
    out.sort();
    out
}

#[test]
fn files_directories_and_symlinks_restore_exactly_as_packed() {
    let fx = Fixture::new();
    fx.write("dist/a.txt", b"a", 0o644);
    fx.write("dist/bin/tool", b"#!/bin/sh\n", 0o755);
    fs::create_dir_all(fx.project().join("dist/empty")).unwrap();
    fs::set_permissions(
        fx.project().join("dist/empty"),
        fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    fx.write("private.txt", b"not an output", 0o644);
    symlink("../private.txt", fx.project().join("dist/rel")).unwrap();
    symlink("bin", fx.project().join("dist/to-dir")).unwrap();
    symlink("missing", fx.project().join("dist/dangling")).unwrap();
    // Absolute, inside the directory links must stay in (the destination, for the restore).
    let dest = fx.path("dest");
    symlink(dest.join("dist/a.txt"), fx.project().join("dist/abs")).unwrap();
    let names = [
        "dist",
        "dist/a.txt",
        "dist/bin",
        "dist/bin/tool",
        "dist/empty",
        "dist/rel",
        "dist/to-dir",
        "dist/dangling",
        "dist/abs",
    ];
    let files: Vec<OutputFile> = names
        .iter()
        .map(|n| OutputFile {
            contain: fx.dir.path().to_path_buf(),
            ..fx.output(n)
        })
        .collect();
    let packed = fx.pack(&files).unwrap();
    assert_eq!(packed.meta.links["outputs/dist/rel"], "../private.txt");
    let restored = fx.restore(&packed.path).unwrap();
    assert_eq!(restored.files.len(), names.len());
    let mut expected = tree(&fx.project().join("dist"));
    // The project's `private.txt` is no output; everything under `dist` is.
    expected.retain(|(rel, ..)| !rel.is_empty());
    assert_eq!(tree(&dest.join("dist")), expected);
    assert_eq!(
        fs::read(dest.join("dist/rel")).ok(),
        None,
        "the link is not followed"
    );
}

#[test]
fn symlinks_leaving_the_directory_or_unclear_refuse_the_save() {
    let fx = Fixture::new();
    fs::write(fx.path("outside.txt"), b"secret").unwrap();
    symlink(fx.path("outside.txt"), fx.project().join("leaves")).unwrap();
    symlink("../outside.txt", fx.project().join("climbs")).unwrap();
    fs::create_dir(fx.project().join("dir")).unwrap();
    symlink("dir/../x", fx.project().join("unclear")).unwrap();
    let name = |e| match e {
        PackError::SymlinkLeaves { name } => format!("leaves {name}"),
        PackError::SymlinkUnchecked { name, text } => format!("unchecked {name} {text}"),
        other => panic!("{other:?}"),
    };
    let err = fx.pack(&[fx.output("leaves")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "output `outputs/leaves` is a symlink leaving the workspace"
    );
    assert_eq!(name(err), "leaves outputs/leaves");
    let err = fx.pack(&[fx.output("climbs")]).unwrap_err();
    assert_eq!(name(err), "leaves outputs/climbs");
    let err = fx.pack(&[fx.output("unclear")]).unwrap_err();
    assert_eq!(name(err), "unchecked outputs/unclear dir/../x");
    // Inside, but into the repository's or vx's own directory: never saved.
    fs::create_dir_all(fx.project().join(".git/hooks")).unwrap();
    symlink(".git/hooks", fx.project().join("hooks")).unwrap();
    let err = fx.pack(&[fx.output("hooks")]).unwrap_err();
    assert!(matches!(err, PackError::SymlinkIntoWall { .. }), "{err:?}");
    assert_eq!(fs::read_dir(fx.path("tmp")).unwrap().count(), 0);
}

#[test]
fn link_targets_are_judged_without_following_links() {
    let parent = Path::new("/ws/p/dist");
    let cases = [
        ("a.txt", Some("/ws/p/dist/a.txt")),
        ("../src/x", Some("/ws/p/src/x")),
        ("../../../etc", Some("/etc")),
        ("/ws/q/x", Some("/ws/q/x")),
        ("./a", Some("/ws/p/dist/a")),
        ("a/../b", None),
        ("/ws/../etc", None),
        ("/ws/./x", None),
        ("", None),
    ];
    for (text, expected) in cases {
        assert_eq!(
            link_target(text, parent).as_deref(),
            expected.map(Path::new),
            "{text}"
        );
    }
}

/// An archive whose `meta.json` lists `listed` (and `links`) beside one regular file
/// `outputs/a`.
fn with_listing(fx: &Fixture, listed: &[(&str, u32, u64)], links: &[(&str, &str)]) -> PathBuf {
    let artifact = fx.path("forged.tar.zst");
    Hand {
        outputs: vec![("outputs/a", EntryType::Regular, b"a")],
        listed: listed.to_vec(),
        links: links.to_vec(),
        ..Hand::default()
    }
    .write(&artifact);
    artifact
}

#[test]
fn forged_listings_of_links_and_directories_are_damage() {
    type Listed<'a> = &'a [(&'a str, u32, u64)];
    type Links<'a> = &'a [(&'a str, &'a str)];
    let cases: [(Listed, Links, &str); 5] = [
        (&[("outputs/l", 0o120777, 1)], &[], "bad entry outputs/l"),
        (&[("outputs/l", 0o120777, 3)], &[("outputs/l", "abc")], ""),
        (
            &[("outputs/l", 0o120777, 1), ("outputs/l/x", 0o040755, 0)],
            &[("outputs/l", ".")],
            "entry below a file: outputs/l/x",
        ),
        (&[("outputs/d", 0o040755, 5)], &[], "bad entry outputs/d"),
        (&[("outputs/f", 0o010644, 0)], &[], "bad entry outputs/f"),
    ];
    for (extra, links, expected) in cases {
        let fx = Fixture::new();
        let artifact = with_listing(&fx, extra, links);
        let result = validate(&artifact, &key(), &all, CAP);
        if expected.is_empty() {
            result.unwrap();
        } else {
            assert_eq!(reason(result), expected);
        }
    }
}

#[test]
fn a_stored_link_into_git_is_damage_and_writes_nothing() {
    let fx = Fixture::new();
    let artifact = with_listing(
        &fx,
        &[("outputs/l", 0o120777, 10)],
        &[("outputs/l", ".git/hooks")],
    );
    let before = fx.listing();
    match fx.restore(&artifact) {
        Err(RestoreError::Damaged(d)) => {
            assert!(d.reason.starts_with("a symlink into .git"), "{d}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(fx.listing(), before);
}

#[test]
fn a_stored_link_leading_outside_the_workspace_is_not_restored() {
    let fx = Fixture::new();
    let artifact = with_listing(
        &fx,
        &[("outputs/l", 0o120777, 11)],
        &[("outputs/l", "/etc/passwd")],
    );
    let before = fx.listing();
    let result = fx.restore(&artifact);
    assert!(
        matches!(&result, Err(RestoreError::LinkLeaves { text, .. }) if text == "/etc/passwd"),
        "{result:?}"
    );
    assert_eq!(fx.listing(), before, "nothing written, nothing left behind");
}

#[test]
fn oversize_outputs_are_refused_before_packing() {
    let fx = Fixture::new();
    fx.write("big", &[7; 4096], 0o644);
    let files = [fx.output("big")];
    let err = pack(&fx.path("tmp"), &log(), meta(), &files, 4096).unwrap_err();
    let PackError::TooLarge { size } = err else {
        panic!("{err:?}")
    };
    assert!(size > 4096);
    assert_eq!(fs::read_dir(fx.path("tmp")).unwrap().count(), 0);
    // The cap counts exactly what validation counts: an artifact exactly at the cap packs.
    pack(&fx.path("tmp"), &log(), meta(), &files, size).unwrap();
    let err = pack(&fx.path("tmp"), &log(), meta(), &files, size - 1).unwrap_err();
    assert!(matches!(err, PackError::TooLarge { .. }));
}

mod damage;

#[test]
fn the_produced_digest_is_of_the_tree_not_of_times_or_umask() {
    let packed = |fx: &Fixture| {
        let files = [
            fx.output("dist"),
            fx.output("dist/a.txt"),
            fx.output("dist/run"),
        ];
        let packed = fx.pack(&files).unwrap();
        let produced = packed.meta.produced.clone().expect("pack gives the digest");
        // A validation computes the same; a restore leaves it to the index (one hash of each
        // body, the artifact's own digest, instead of two).
        let valid = validate(&packed.path, &key(), &all, CAP).unwrap();
        assert_eq!(valid.meta.produced.as_deref(), Some(produced.as_str()));
        let restored = fx.restore(&packed.path).unwrap();
        assert_eq!(restored.meta.produced, None);
        produced
    };
    let make = |a: &[u8], a_mode: u32, run_mode: u32, link: Option<&str>| {
        let fx = Fixture::new();
        fx.write("dist/a.txt", a, a_mode);
        match link {
            Some(text) => symlink(text, fx.project().join("dist/run")).unwrap(),
            None => {
                fx.write("dist/run", b"#!/bin/sh\n", run_mode);
            }
        }
        fx
    };
    let first = make(b"a", 0o644, 0o755, None);
    let base = packed(&first);
    // Another time and another umask: the same tree.
    let later = make(b"a", 0o664, 0o775, None);
    set_mtime(&later.project().join("dist/a.txt"), 1_000, 7);
    assert_eq!(packed(&later), base, "times and write bits do not count");
    // Bytes, the execute bit, a kind or a link's text do.
    assert_ne!(packed(&make(b"b", 0o644, 0o755, None)), base, "bytes");
    assert_ne!(packed(&make(b"a", 0o644, 0o644, None)), base, "execute bit");
    let link = packed(&make(b"a", 0o644, 0o755, Some("a.txt")));
    assert_ne!(link, base, "a symlink is not a file");
    assert_ne!(
        packed(&make(b"a", 0o644, 0o755, Some("b.txt"))),
        link,
        "link text"
    );
}

#[test]
fn entries_no_dependant_reads_are_left_out_of_the_produced_digest() {
    let packed = |map: &[u8], js: &[u8], unread: &[&str]| {
        let fx = Fixture::new();
        fx.write("dist/a.js", js, 0o644);
        fx.write("dist/a.js.map", map, 0o644);
        let files = [fx.output("dist/a.js"), fx.output("dist/a.js.map")];
        let mut meta = meta();
        meta.unread = unread.iter().map(|s| s.to_string()).collect();
        let packed = pack(&fx.path("tmp"), &log(), meta, &files, CAP).unwrap();
        // The names travel in meta.json: every reader computes the same digest.
        let valid = validate(&packed.path, &key(), &all, CAP).unwrap();
        assert_eq!(valid.meta.produced, packed.meta.produced);
        assert_eq!(valid.meta.unread, packed.meta.unread);
        packed.meta.produced.unwrap()
    };
    let unread = ["outputs/dist/a.js.map", "outputs/dist/gone.map"];
    let base = packed(b"map 1", b"js", &unread);
    assert_eq!(packed(b"map 2", b"js", &unread), base, "an unread entry");
    assert_ne!(packed(b"map 1", b"js 2", &unread), base, "a read entry");
    assert_ne!(packed(b"map 2", b"js", &[]), packed(b"map 1", b"js", &[]));
}

#[test]
fn an_unread_name_that_is_not_listed_is_damage() {
    let fx = Fixture::new();
    fx.write("dist/a.js", b"js", 0o644);
    let packed = fx.pack(&[fx.output("dist/a.js")]).unwrap();
    let mut meta = meta();
    meta.unread.insert("outputs/dist/a.js.map".into());
    let hand = Hand {
        outputs: vec![("outputs/dist/a.js", EntryType::Regular, b"js")],
        ..Hand::default()
    };
    let path = fx.path("hand.tar.zst");
    hand.write_with(&path, meta);
    let found = reason(validate(&path, &key(), &all, CAP));
    assert_eq!(found, "unlisted unread entry outputs/dist/a.js.map");
    assert!(validate(&packed.path, &key(), &all, CAP).is_ok());
}
