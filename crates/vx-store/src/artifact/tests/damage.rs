//! Archives that must be refused (damage, hostile names and entries, bombs) and restores into a
//! tree that fights back (a directory or a symlink where a file must go): each ends with nothing
//! written.

use super::*;

#[test]
fn a_flipped_byte_is_damage() {
    let fx = Fixture::new();
    fx.write("a.txt", &b"some output ".repeat(500), 0o644);
    let packed = fx.pack(&[fx.output("a.txt")]).unwrap();
    let mut bytes = fs::read(&packed.path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    fs::write(&packed.path, bytes).unwrap();
    // Where the flip lands decides which check notices first (zstd's own checksum is only
    // checked at the end of the frame).
    let reason = reason(validate(&packed.path, &key(), &all, CAP));
    let expected = [
        "bad digest",
        "bad compression",
        "bad tar",
        "bad meta.json",
        "bad log",
    ];
    assert!(expected.contains(&reason.as_str()), "{reason}");
    let before = fx.listing();
    assert!(matches!(
        fx.restore(&packed.path),
        Err(RestoreError::Damaged(_))
    ));
    assert_eq!(fx.listing(), before);
}

#[test]
fn key_mismatch_undeclared_outputs_and_vanished_files() {
    let fx = Fixture::new();
    fx.write("a.txt", b"a", 0o644);
    let packed = fx.pack(&[fx.output("a.txt")]).unwrap();
    let other = "cd".repeat(32);
    assert_eq!(
        reason(validate(&packed.path, &other, &all, CAP)),
        "key mismatch"
    );
    let only_dist = |name: &str| name.starts_with("outputs/dist/");
    assert_eq!(
        reason(validate(&packed.path, &key(), &only_dist, CAP)),
        "undeclared output outputs/a.txt"
    );
    let missing = fx.path("nope.tar.zst");
    assert!(matches!(
        validate(&missing, &key(), &all, CAP),
        Err(ReadError::Vanished)
    ));
    assert!(matches!(fx.restore(&missing), Err(RestoreError::Vanished)));
}

#[test]
fn safe_name_rules() {
    for good in [
        "outputs/a",
        "outputs/a/b.txt",
        "workspace-outputs/x/.hidden",
        "outputs/a..b",
    ] {
        assert!(safe_name(good), "{good}");
    }
    for bad in [
        "outputs/../x",
        "outputs/a/./b",
        "outputs//a",
        "outputs/",
        "outputs/a/",
        "/outputs/a",
        "log",
        "other/a",
        "outputs/a\\b",
        "outputs/a\0b",
        "outputs/..",
    ] {
        assert!(!safe_name(bad), "{bad:?}");
    }
}

#[test]
fn escaping_names_are_rejected_before_anything_is_written() {
    let hand = Hand {
        outputs: vec![
            ("outputs/good/one.txt", EntryType::Regular, b"1"),
            ("outputs/../../escape.txt", EntryType::Regular, b"x"),
        ],
        ..Hand::default()
    };
    assert_rejected_leaving_nothing(hand, "unsafe path outputs/../../escape.txt");
}

#[test]
fn absolute_names_are_rejected() {
    let hand = Hand {
        outputs: vec![
            ("outputs/good/one.txt", EntryType::Regular, b"1"),
            ("/tmp/escape.txt", EntryType::Regular, b"x"),
        ],
        ..Hand::default()
    };
    assert_rejected_leaving_nothing(hand, "unsafe path /tmp/escape.txt");
}

#[test]
fn checks_use_the_name_after_pax_records() {
    let name = format!("outputs/{}../../escape.txt", "x/".repeat(70));
    let hand = Hand {
        outputs: vec![
            ("outputs/good/one.txt", EntryType::Regular, b"1"),
            (&name, EntryType::Regular, b"x"),
        ],
        ..Hand::default()
    };
    assert_rejected_leaving_nothing(hand, &format!("unsafe path {name}"));
}

#[test]
fn symlink_entries_are_rejected() {
    let hand = Hand {
        outputs: vec![
            ("outputs/good/one.txt", EntryType::Regular, b"1"),
            ("outputs/link", EntryType::Symlink, b""),
        ],
        ..Hand::default()
    };
    assert_rejected_leaving_nothing(hand, "not a regular file: outputs/link");
}

#[test]
fn repeated_names_are_rejected() {
    let hand = Hand {
        outputs: vec![
            ("outputs/good/one.txt", EntryType::Regular, b"1"),
            ("outputs/good/one.txt", EntryType::Regular, b"1"),
        ],
        ..Hand::default()
    };
    assert_rejected_leaving_nothing(hand, "repeated entry outputs/good/one.txt");
}

#[test]
fn misordered_entries_are_rejected() {
    let hand = Hand {
        outputs: vec![
            ("outputs/good/one.txt", EntryType::Regular, b"1"),
            ("workspace-outputs/b", EntryType::Regular, b"2"),
            ("outputs/z", EntryType::Regular, b"3"),
        ],
        ..Hand::default()
    };
    assert_rejected_leaving_nothing(hand, "unexpected entry order");
}

#[test]
fn a_poisoned_end_is_damage() {
    let good: &[u8] = b"1";
    let outputs = || vec![("outputs/good/one.txt", EntryType::Regular, good)];
    let cases: Vec<(Hand<'_>, &str)> = vec![
        (
            Hand {
                outputs: outputs(),
                bad_digest: true,
                ..Hand::default()
            },
            "bad digest",
        ),
        (
            Hand {
                outputs: outputs(),
                no_digest: true,
                ..Hand::default()
            },
            "missing digest",
        ),
        (
            Hand {
                outputs: outputs(),
                after_digest: Some(("outputs/zz", b"late")),
                ..Hand::default()
            },
            "entry after digest",
        ),
        (
            Hand {
                outputs: outputs(),
                junk_in_stream: b"junk after the end of the archive",
                ..Hand::default()
            },
            "junk after archive end",
        ),
        (
            Hand {
                outputs: outputs(),
                junk_after_stream: b"not zstd at all",
                ..Hand::default()
            },
            "bad compression",
        ),
        (
            Hand {
                outputs: vec![
                    ("outputs/good/one.txt", EntryType::Regular, good),
                    ("outputs/zz", EntryType::Fifo, b""),
                ],
                ..Hand::default()
            },
            "not a regular file: outputs/zz",
        ),
        (
            Hand {
                outputs: outputs(),
                key: Some("00"),
                ..Hand::default()
            },
            "key mismatch",
        ),
    ];
    for (hand, expected) in cases {
        assert_rejected_leaving_nothing(hand, expected);
    }
}

#[test]
fn a_truncated_artifact_is_damage() {
    let fx = Fixture::new();
    fx.write("a.txt", &b"abc".repeat(10_000), 0o644);
    let packed = fx.pack(&[fx.output("a.txt")]).unwrap();
    let bytes = fs::read(&packed.path).unwrap();
    fs::write(&packed.path, &bytes[..bytes.len() - 10]).unwrap();
    assert_eq!(
        reason(validate(&packed.path, &key(), &all, CAP)),
        "bad compression"
    );
    fs::write(&packed.path, b"").unwrap();
    assert_eq!(
        reason(validate(&packed.path, &key(), &all, CAP)),
        "bad compression"
    );
    // A well-formed archive cut after a whole entry lacks its digest.
    let hand = Hand {
        no_digest: true,
        ..Hand::default()
    };
    hand.write(&packed.path);
    assert_eq!(
        reason(validate(&packed.path, &key(), &all, CAP)),
        "missing digest"
    );
}

#[test]
fn a_compression_bomb_stops_at_the_cap() {
    let fx = Fixture::new();
    let size: u64 = 32 << 20;
    let mut meta = meta();
    meta.format = FORMAT;
    meta.files.insert(
        "outputs/big".into(),
        FileMeta {
            mode: 0o100644,
            mtime_ns: 0,
            size,
        },
    );
    let meta = serde_json::to_vec(&meta).unwrap();
    let artifact = fx.path("bomb.tar.zst");
    let out = zstd::Encoder::new(fs::File::create(&artifact).unwrap(), 19).unwrap();
    let mut tar = TarWriter::new(out);
    let log = log();
    tar.entry(b"log", EntryType::Regular, log.len() as u64, &mut &log[..])
        .unwrap();
    tar.entry(
        b"meta.json",
        EntryType::Regular,
        meta.len() as u64,
        &mut &meta[..],
    )
    .unwrap();
    let mut zeros = io::repeat(0).take(size);
    tar.entry(b"outputs/big", EntryType::Regular, size, &mut zeros)
        .unwrap();
    tar.finish().unwrap().finish().unwrap().flush().unwrap();
    assert!(fs::metadata(&artifact).unwrap().len() < 64 << 10);

    assert_eq!(
        reason(validate(&artifact, &key(), &all, 1 << 20)),
        "too large"
    );
    let before = fx.listing();
    let dest = fx.path("dest");
    let target = |name: &str| Target {
        path: dest.join(name.strip_prefix("outputs/").unwrap()),
        contain: dest.clone(),
        root: dest.clone(),
    };
    let result = restore(&artifact, &key(), &all, 1 << 20, &target);
    assert!(matches!(result, Err(RestoreError::Damaged(d)) if d.reason == "too large"));
    assert_eq!(fx.listing(), before);
}

#[test]
fn a_directory_at_a_target_blocks_and_leaves_nothing_behind() {
    let fx = Fixture::new();
    fx.write("bin/tool", b"tool", 0o755);
    fx.write("readme.txt", b"read me", 0o644);
    let packed = fx
        .pack(&[fx.output("bin/tool"), fx.output("readme.txt")])
        .unwrap();
    fs::create_dir(fx.path("dest/readme.txt")).unwrap();
    let before = fx.listing();
    match fx.restore(&packed.path) {
        Err(RestoreError::Blocked { path }) => assert_eq!(path, fx.path("dest/readme.txt")),
        other => panic!("{other:?}"),
    }
    // `dest/bin` was created for the first file and removed again with its temporary.
    assert_eq!(fx.listing(), before);
}

#[test]
fn a_file_where_a_directory_is_needed_blocks() {
    let fx = Fixture::new();
    fx.write("bin/tool", b"tool", 0o755);
    let packed = fx.pack(&[fx.output("bin/tool")]).unwrap();
    fs::write(fx.path("dest/bin"), b"not a dir").unwrap();
    let before = fx.listing();
    match fx.restore(&packed.path) {
        Err(RestoreError::Blocked { path }) => assert_eq!(path, fx.path("dest/bin")),
        other => panic!("{other:?}"),
    }
    assert_eq!(fx.listing(), before);
}

/// A symlink standing where a directory on the way must be is never written
/// through, whether it leads outside the project or inside it (into `src/`, say).
#[test]
fn a_symlinked_parent_is_never_written_through_outside_or_inside_the_project() {
    let fx = Fixture::new();
    fx.write("bin/tool", b"tool", 0o755);
    let packed = fx.pack(&[fx.output("bin/tool")]).unwrap();
    fs::create_dir(fx.path("elsewhere")).unwrap();
    symlink(fx.path("elsewhere"), fx.path("dest/bin")).unwrap();
    let before = fx.listing();
    match fx.restore(&packed.path) {
        Err(RestoreError::Unsafe { path }) => assert_eq!(path, fx.path("dest/bin")),
        other => panic!("{other:?}"),
    }
    assert_eq!(fx.listing(), before);

    fs::remove_file(fx.path("dest/bin")).unwrap();
    fs::create_dir(fx.path("dest/src")).unwrap();
    symlink("src", fx.path("dest/bin")).unwrap();
    let before = fx.listing();
    match fx.restore(&packed.path) {
        Err(RestoreError::Unsafe { path }) => assert_eq!(path, fx.path("dest/bin")),
        other => panic!("{other:?}"),
    }
    assert_eq!(fx.listing(), before);
    assert!(!fx.path("dest/src/tool").exists());
}

#[test]
fn an_existing_output_file_is_replaced() {
    let fx = Fixture::new();
    fx.write("a.txt", b"new", 0o644);
    let packed = fx.pack(&[fx.output("a.txt")]).unwrap();
    fs::write(fx.path("dest/a.txt"), b"old").unwrap();
    fx.restore(&packed.path).unwrap();
    assert_eq!(fs::read(fx.path("dest/a.txt")).unwrap(), b"new");
}

#[test]
fn a_failed_restore_removes_temporaries_and_created_directories() {
    // A valid-looking first output is staged (with its new directories) before the bad digest
    // at the end is found.
    let hand = Hand {
        outputs: vec![("outputs/deep/er/one.txt", EntryType::Regular, b"1")],
        bad_digest: true,
        ..Hand::default()
    };
    assert_rejected_leaving_nothing(hand, "bad digest");
}

#[test]
fn files_written_in_place_in_new_directories_are_exact_and_removed_on_damage() {
    // Directories the restore creates take their files under their own names at once; a
    // damaged archive still leaves nothing behind.
    let fx = Fixture::new();
    // Incompressible, so that the archive spans several zstd blocks and the damage near its
    // end comes after the first files were written.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let noise: Vec<u8> = (0..300_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    fx.write("gen/deep/run.sh", b"#!/bin/sh\n", 0o755);
    fx.write("gen/deep/secret", b"kept private\n", 0o600);
    fx.write("gen/z.txt", &noise, 0o644);
    let files = [
        fx.output("gen/deep/run.sh"),
        fx.output("gen/deep/secret"),
        fx.output("gen/z.txt"),
    ];
    let packed = fx.pack(&files).unwrap();
    let restored = fx.restore(&packed.path).expect("restored");
    assert_eq!(restored.files.len(), 3);
    for (rel, mode, bytes) in [
        ("gen/deep/run.sh", 0o755, b"#!/bin/sh\n".to_vec()),
        ("gen/deep/secret", 0o600, b"kept private\n".to_vec()),
        ("gen/z.txt", 0o644, noise.clone()),
    ] {
        let path = fx.path("dest").join(rel);
        assert_eq!(fs::read(&path).unwrap(), bytes, "{rel}");
        let meta = fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, mode, "{rel}");
        assert_eq!(
            meta.modified().unwrap(),
            fs::metadata(fx.project().join(rel))
                .unwrap()
                .modified()
                .unwrap(),
            "{rel}"
        );
    }
    let leftovers: Vec<String> = fx
        .listing()
        .into_iter()
        .filter(|p| p.contains(RESTORE_TEMP_PREFIX))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // The same archive with its last entry damaged: the files already written in place go
    // with the directories that were made for them.
    fs::remove_dir_all(fx.path("dest")).unwrap();
    fs::create_dir(fx.path("dest")).unwrap();
    let mut bytes = fs::read(&packed.path).unwrap();
    let near_end = bytes.len() - bytes.len() / 5;
    bytes[near_end] ^= 0x40;
    fs::write(&packed.path, bytes).unwrap();
    let before = fx.listing();
    assert!(matches!(
        fx.restore(&packed.path),
        Err(RestoreError::Damaged(_))
    ));
    assert_eq!(fx.listing(), before);
}
