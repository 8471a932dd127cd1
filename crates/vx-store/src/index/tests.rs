//! Tests of the store core: opening, probing, saving, restoring, touches. Helpers here are
//! shared with the prune tests.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::*;
use crate::artifact::{ArtifactMeta, ExecMeta, OutputFile, Producer};

pub(crate) fn key(n: u8) -> String {
    format!("{n:064x}")
}

fn accept_all(_: &str) -> bool {
    true
}

/// Packs a real artifact for `key` with one project output `dist/out.txt` containing `body`.
pub(crate) fn pack(store: &Store, key: &str, body: &str) -> Packed {
    let src = tempfile::tempdir().unwrap();
    let file = src.path().join("dist/out.txt");
    std::fs::create_dir(src.path().join("dist")).unwrap();
    std::fs::write(&file, body).unwrap();
    let meta = ArtifactMeta {
        format: artifact::FORMAT,
        key: key.to_owned(),
        task: "web#build".to_owned(),
        command: "make".to_owned(),
        files: BTreeMap::new(),
        links: BTreeMap::new(),
        unread: Default::default(),
        exec: ExecMeta {
            duration_ms: 120,
            cpu_ms: Some(80),
            peak_rss_bytes: None,
        },
        producer: Producer::default(),
        produced: None,
    };
    let outputs = [OutputFile {
        name: "outputs/dist/out.txt".to_owned(),
        path: file,
        contain: src.path().to_path_buf(),
    }];
    let log = crate::log::encode(&[]);
    artifact::pack(
        &store.dir.join(TMP_DIR),
        &log,
        meta,
        &outputs,
        artifact::SIZE_CAP,
    )
    .unwrap()
}

/// Saves a real artifact and returns its entry.
pub(crate) fn save(store: &mut Store, key: &str, body: &str) -> Entry {
    let packed = pack(store, key, body);
    store.save(packed, "web", "build").unwrap();
    store.entry(key).unwrap().expect("saved")
}

/// Sets `accessed_at` of `key` directly.
pub(crate) fn set_accessed(store: &Store, key: &str, at: i64) {
    store
        .conn
        .as_ref()
        .unwrap()
        .execute(
            "UPDATE entries SET accessed_at = ?2 WHERE key = ?1",
            params![key, at],
        )
        .unwrap();
}

fn tables(conn: &Connection) -> Vec<String> {
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

fn raw_db(dir: &Path) -> Connection {
    std::fs::create_dir_all(dir).unwrap();
    Connection::open(dir.join(DB_FILE)).unwrap()
}

#[test]
fn opening_creates_the_layout_and_schema() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("cache");
    let store = Store::open(&dir, Access::ReadWrite).unwrap();
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    assert_eq!(
        std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
        "*\n"
    );
    assert!(dir.join(ARTIFACTS_DIR).is_dir());
    assert!(dir.join(TMP_DIR).is_dir());
    assert_eq!(store.disabled(), None);
    let conn = store.conn.as_ref().unwrap();
    let version: u32 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, crate::schema::VERSION);
    let journal: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(journal, "wal");
    let fk: i64 = conn
        .pragma_query_value(None, "foreign_keys", |r| r.get(0))
        .unwrap();
    assert_eq!(fk, 1);
    assert_eq!(tables(conn).len(), 11);
    let format: String = conn
        .query_row(
            "SELECT value FROM meta WHERE name = 'key_format'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(format, "vx-key-4");
    assert_ne!(store.salt(), [0; 32]);
}

#[test]
fn an_existing_directory_gets_no_gitignore_and_reopening_keeps_the_salt() {
    let dir = tempfile::tempdir().unwrap();
    let salt = Store::open(dir.path(), Access::ReadWrite).unwrap().salt();
    assert!(!dir.path().join(".gitignore").exists());
    let again = Store::open(dir.path(), Access::ReadWrite).unwrap();
    assert_eq!(again.salt(), salt);
    let read_only = Store::open(dir.path(), Access::ReadOnly).unwrap();
    assert_eq!(read_only.salt(), salt);
}

#[test]
fn an_older_schema_is_rebuilt_and_its_rows_dropped() {
    let dir = tempfile::tempdir().unwrap();
    {
        let conn = raw_db(dir.path());
        conn.execute_batch(
            "CREATE TABLE entries (key TEXT PRIMARY KEY, stale INTEGER);
             INSERT INTO entries VALUES ('x', 1);",
        )
        .unwrap();
    }
    // A reading verb refuses it and changes nothing.
    let err = Store::open(dir.path(), Access::ReadOnly).unwrap_err();
    assert!(
        matches!(
            err,
            OpenError::Schema {
                found: 0,
                expected: crate::schema::VERSION
            }
        ),
        "{err}"
    );
    let store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    assert_eq!(store.disabled(), None);
    assert_eq!(store.totals().unwrap(), (0, 0));
    assert_eq!(tables(store.conn.as_ref().unwrap()).len(), 11);
}

#[test]
fn a_newer_schema_disables_the_store_and_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    raw_db(dir.path())
        .execute_batch("CREATE TABLE future (x); PRAGMA user_version = 9;")
        .unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    assert_eq!(store.disabled(), Some(9));
    assert_eq!(store.lookup(&key(1), &accept_all).unwrap(), Lookup::Miss);
    assert_eq!(store.task_runs("web", "build", 5).unwrap(), []);
    let packed = pack(&store, &key(1), "x");
    let temp = packed.path.clone();
    store.save(packed, "web", "build").unwrap();
    assert!(!temp.exists(), "a disabled save removes the temp file");
    assert!(!store.artifact_path(&key(1)).exists());
    drop(store);
    assert_eq!(tables(&raw_db(dir.path())), ["future"]);
    let err = Store::open(dir.path(), Access::ReadOnly).unwrap_err();
    assert!(
        matches!(
            err,
            OpenError::Schema {
                found: 9,
                expected: crate::schema::VERSION
            }
        ),
        "{err}"
    );
}

#[test]
fn a_corrupt_index_is_reported_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(DB_FILE), vec![0x5a; 8192]).unwrap();
    for access in [Access::ReadWrite, Access::ReadOnly] {
        match Store::open(dir.path(), access).unwrap_err() {
            OpenError::Corrupt { path, reason } => {
                assert_eq!(path, dir.path().join(DB_FILE));
                assert!(!reason.is_empty());
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_read_only_open_of_a_missing_cache_creates_nothing() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("never");
    let mut store = Store::open(&dir, Access::ReadOnly).unwrap();
    assert_eq!(store.lookup(&key(1), &accept_all).unwrap(), Lookup::Miss);
    assert_eq!(store.key_inputs(&key(1)).unwrap(), None);
    assert_eq!(store.totals().unwrap(), (0, 0));
    store.touch(&key(1));
    store.flush_touches().unwrap();
    assert!(!dir.exists());

    // An existing directory without an index stays without one.
    std::fs::create_dir(&dir).unwrap();
    Store::open(&dir, Access::ReadOnly).unwrap();
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}

#[test]
fn a_saved_entry_is_a_hit_and_an_unknown_key_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let saved = save(&mut store, &key(1), "hello");
    let Lookup::Hit(entry) = store.lookup(&key(1), &accept_all).unwrap() else {
        panic!("expected a hit");
    };
    assert_eq!(entry, saved);
    assert_eq!(
        (entry.project.as_str(), entry.task.as_str()),
        ("web", "build")
    );
    assert_eq!(entry.origin, "local");
    assert_eq!((entry.duration_ms, entry.cpu_ms), (120, Some(80)));
    assert_eq!(entry.outputs.len(), 1);
    assert_eq!(entry.outputs[0].0, "dist/out.txt");
    assert_eq!(entry.outputs[0].1.size, 5);
    let path = store.artifact_path(&key(1));
    assert_eq!(std::fs::metadata(&path).unwrap().len(), entry.size_bytes);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(store.lookup(&key(2), &accept_all).unwrap(), Lookup::Miss);
    assert_eq!(store.lookup("../etc", &accept_all).unwrap(), Lookup::Miss);
    assert_eq!(store.totals().unwrap(), (entry.size_bytes, 1));
    assert_eq!(
        std::fs::read_dir(dir.path().join(TMP_DIR)).unwrap().count(),
        0
    );
}

#[test]
fn a_save_with_stamps_records_the_entry_and_its_stamps_together() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let stamp = |path: &str, size| OutputStamp {
        path: path.into(),
        size,
        mode: 0o100644,
        mtime_ns: 1,
        inode: 2,
        ctime_ns: 3,
    };
    // Earlier stamps of the same entry in this workspace are replaced, another's are kept.
    store
        .set_output_stamps("ws", &key(1), &[stamp("old.txt", 1)], &[])
        .unwrap();
    store
        .set_output_stamps("other", &key(1), &[stamp("kept.txt", 1)], &[])
        .unwrap();
    let packed = pack(&store, &key(1), "hello");
    let rows = [stamp("dist/a.txt", 5), stamp("dist/b.txt", 6)];
    store
        .save_with_stamps(
            packed,
            "web",
            "build",
            Some(Stamping {
                workspace: "ws",
                rows: &rows,
                superseded: &[],
            }),
            "remote-exec",
        )
        .unwrap();
    let entry = store.entry(&key(1)).unwrap().expect("saved");
    assert_eq!(entry.origin, "remote-exec", "the origin given is kept");
    assert_eq!(
        store.workspace_output_stamps("ws").unwrap()[&key(1)],
        rows.to_vec()
    );
    assert_eq!(
        store.workspace_output_stamps("other").unwrap()[&key(1)],
        vec![stamp("kept.txt", 1)]
    );
}

#[test]
fn stamps_of_superseded_keys_are_deleted_in_this_workspace_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let row = |path: &str| OutputStamp {
        path: path.into(),
        size: 1,
        mode: 0o100644,
        mtime_ns: 1,
        inode: 1,
        ctime_ns: 1,
    };
    for (workspace, k) in [("ws", 1), ("ws", 2), ("other", 1)] {
        store
            .set_output_stamps(workspace, &key(k), &[row("dist/a.txt")], &[])
            .unwrap();
    }
    store
        .set_output_stamps(
            "ws",
            &key(3),
            &[row("dist/a.txt")],
            &[key(1), key(2), key(3)],
        )
        .unwrap();
    let ws = store.workspace_output_stamps("ws").unwrap();
    assert_eq!(ws.keys().collect::<Vec<_>>(), [&key(3)]);
    let other = store.workspace_output_stamps("other").unwrap();
    assert_eq!(other.keys().collect::<Vec<_>>(), [&key(1)]);
}

#[test]
fn a_row_without_its_file_is_a_miss_and_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    save(&mut store, &key(1), "hello");
    store.set_output_stamps("ws", &key(1), &[], &[]).unwrap();
    std::fs::remove_file(store.artifact_path(&key(1))).unwrap();
    assert_eq!(store.lookup(&key(1), &accept_all).unwrap(), Lookup::Miss);
    assert_eq!(store.entry(&key(1)).unwrap(), None);
    assert_eq!(store.totals().unwrap(), (0, 0));
}

#[test]
fn read_only_keeps_a_row_without_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    save(&mut store, &key(1), "hello");
    std::fs::remove_file(store.artifact_path(&key(1))).unwrap();
    drop(store);
    let mut read_only = Store::open(dir.path(), Access::ReadOnly).unwrap();
    assert_eq!(
        read_only.lookup(&key(1), &accept_all).unwrap(),
        Lookup::Miss
    );
    assert!(read_only.entry(&key(1)).unwrap().is_some());
}

#[test]
fn a_file_without_a_row_is_adopted() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let saved = save(&mut store, &key(1), "hello");
    drop(store);
    // The index is deleted; the artifact stays.
    for name in [DB_FILE, "cache.db-wal", "cache.db-shm"] {
        let _ = std::fs::remove_file(dir.path().join(name));
    }
    let mut read_only = Store::open(dir.path(), Access::ReadOnly).unwrap();
    assert_eq!(
        read_only.lookup(&key(1), &accept_all).unwrap(),
        Lookup::Miss
    );

    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let Lookup::Hit(entry) = store.lookup(&key(1), &accept_all).unwrap() else {
        panic!("expected adoption");
    };
    assert_eq!(entry.outputs, saved.outputs);
    assert_eq!(entry.size_bytes, saved.size_bytes);
    assert_eq!(entry.project, "web");
    assert_eq!(
        store.entry(&key(1)).unwrap().unwrap().outputs,
        saved.outputs
    );
}

#[test]
fn a_damaged_file_without_a_row_is_deleted_or_kept_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let path = store.artifact_path(&key(1));
    std::fs::write(&path, b"not zstd at all").unwrap();

    let mut read_only = Store::open(dir.path(), Access::ReadOnly).unwrap();
    let Lookup::Damaged(_) = read_only.lookup(&key(1), &accept_all).unwrap() else {
        panic!("expected damage");
    };
    assert!(path.exists());

    let Lookup::Damaged(damage) = store.lookup(&key(1), &accept_all).unwrap() else {
        panic!("expected damage");
    };
    assert!(!damage.reason.is_empty());
    assert!(!path.exists());
}

#[test]
fn saving_again_replaces_the_entry_and_leaves_nothing_aside() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    save(&mut store, &key(1), "first");
    let second = save(&mut store, &key(1), "second version");
    assert_eq!(second.outputs[0].1.size, 14);
    assert_eq!(store.totals().unwrap(), (second.size_bytes, 1));
    let names: Vec<_> = std::fs::read_dir(dir.path().join(ARTIFACTS_DIR))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, [format!("{}.tar.zst", key(1))]);
    let restored_dir = tempfile::tempdir().unwrap();
    let root = restored_dir.path().to_path_buf();
    let restored = store
        .restore(&key(1), &accept_all, &|name| target(&root, name))
        .unwrap();
    assert_eq!(restored.files.len(), 1);
    assert_eq!(
        std::fs::read_to_string(root.join("dist/out.txt")).unwrap(),
        "second version"
    );
}

fn target(root: &Path, name: &str) -> Target {
    let rel = name.strip_prefix("outputs/").unwrap_or(name);
    Target {
        path: root.join(rel),
        contain: PathBuf::from(root),
        root: PathBuf::from(root),
    }
}

#[test]
fn a_failed_save_keeps_the_old_entry() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let first = save(&mut store, &key(1), "first");
    let mut packed = pack(&store, &key(1), "second");
    std::fs::remove_file(&packed.path).unwrap();
    packed.path = dir.path().join(TMP_DIR).join("gone");
    assert!(matches!(
        store.save(packed, "web", "build"),
        Err(StoreError::Io { .. })
    ));
    assert_eq!(store.entry(&key(1)).unwrap().unwrap(), first);
    assert!(store.artifact_path(&key(1)).exists());
}

#[test]
fn restoring_a_damaged_artifact_discards_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let entry = save(&mut store, &key(1), "hello");
    let path = store.artifact_path(&key(1));
    // Same size, different bytes: the probe still hits, the restore finds the damage.
    std::fs::write(&path, vec![0u8; entry.size_bytes as usize]).unwrap();
    assert!(matches!(
        store.lookup(&key(1), &accept_all).unwrap(),
        Lookup::Hit(_)
    ));
    let out = tempfile::tempdir().unwrap();
    let root = out.path().to_path_buf();
    let failure = store
        .restore(&key(1), &accept_all, &|name| target(&root, name))
        .unwrap_err();
    assert!(matches!(failure, RestoreFailure::Damaged(_)), "{failure}");
    assert!(!path.exists());
    assert_eq!(store.entry(&key(1)).unwrap(), None);

    save(&mut store, &key(2), "x");
    std::fs::remove_file(store.artifact_path(&key(2))).unwrap();
    let failure = store
        .restore(&key(2), &accept_all, &|name| target(&root, name))
        .unwrap_err();
    assert!(matches!(failure, RestoreFailure::Vanished), "{failure}");
    assert_eq!(store.entry(&key(2)).unwrap(), None);
}

#[test]
fn discard_removes_row_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    save(&mut store, &key(1), "hello");
    store.discard(&key(1)).unwrap();
    assert_eq!(store.entry(&key(1)).unwrap(), None);
    assert!(!store.artifact_path(&key(1)).exists());
    store.discard(&key(1)).unwrap();
}

#[test]
fn a_read_only_store_refuses_to_save() {
    let dir = tempfile::tempdir().unwrap();
    let rw = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let packed = pack(&rw, &key(1), "x");
    let mut read_only = Store::open(dir.path(), Access::ReadOnly).unwrap();
    assert!(matches!(
        read_only.save(packed, "web", "build"),
        Err(StoreError::ReadOnly { .. })
    ));
    assert_eq!(read_only.totals().unwrap(), (0, 0));
}

/// A hit on an entry marked used less than an hour ago marks nothing (a warm run of thousands
/// of hits writes no row); one marked used longer ago is marked now, once.
#[test]
fn a_hit_marks_its_entry_used_at_most_once_an_hour() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let now = now_ms();
    save(&mut store, &key(1), "x");
    save(&mut store, &key(2), "x");
    let recent = now - MARKED_USED_EVERY_MS + 60_000;
    set_accessed(&store, &key(1), recent);
    set_accessed(&store, &key(2), now - MARKED_USED_EVERY_MS - 60_000);
    for n in 1..=2 {
        assert!(matches!(
            store.lookup(&key(n), &accept_all).unwrap(),
            Lookup::Hit(_)
        ));
        // What the engine does after serving the hit.
        store.touch(&key(n));
    }
    let before = store.statements();
    store.flush_touches().unwrap();
    // BEGIN, one update, COMMIT.
    assert_eq!(store.statements() - before, 3);
    assert_eq!(store.entry(&key(1)).unwrap().unwrap().accessed_at, recent);
    assert!(store.entry(&key(2)).unwrap().unwrap().accessed_at >= now);
    // Hits on entries marked within the hour alone: no statement at all (no write lock).
    for n in 1..=2 {
        store.lookup(&key(n), &accept_all).unwrap();
        store.touch(&key(n));
    }
    let before = store.statements();
    store.flush_touches().unwrap();
    assert_eq!(store.statements(), before);
}

#[test]
fn touches_are_written_in_one_batch() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    for n in 1..=3 {
        save(&mut store, &key(n), "x");
        set_accessed(&store, &key(n), 5);
    }
    store.touch(&key(1));
    store.touch(&key(3));
    store.touch(&key(9));
    assert_eq!(store.entry(&key(1)).unwrap().unwrap().accessed_at, 5);
    let before = store.statements();
    store.flush_touches().unwrap();
    // BEGIN, three updates, COMMIT.
    assert_eq!(store.statements() - before, 5);
    let now = now_ms();
    assert!(store.entry(&key(1)).unwrap().unwrap().accessed_at > now - 60_000);
    assert_eq!(store.entry(&key(2)).unwrap().unwrap().accessed_at, 5);
    assert!(store.entry(&key(3)).unwrap().unwrap().accessed_at > now - 60_000);
    let before = store.statements();
    store.flush_touches().unwrap();
    assert_eq!(
        store.statements(),
        before,
        "nothing pending, nothing written"
    );
}

#[test]
fn statements_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let opened = store.statements();
    assert!(opened > 0);
    store.lookup(&key(1), &accept_all).unwrap();
    assert_eq!(store.statements(), opened + 1, "a miss is one statement");
    save(&mut store, &key(1), "x");
    let before = store.statements();
    assert!(matches!(
        store.lookup(&key(1), &accept_all).unwrap(),
        Lookup::Hit(_)
    ));
    assert_eq!(store.statements(), before + 1, "a hit is one statement");
}

#[test]
fn concurrent_first_opens_create_the_schema_once() {
    let dir = tempfile::tempdir().unwrap();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let dir = dir.path().to_path_buf();
            std::thread::spawn(move || Store::open(&dir, Access::ReadWrite).map(|s| s.salt()))
        })
        .collect();
    let salts: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .collect();
    assert!(
        salts.windows(2).all(|w| w[0] == w[1]),
        "one schema, one salt"
    );
}

#[test]
fn only_an_empty_artifacts_directory_holds_no_entries() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    assert!(!store.may_hold_entries(), "a new cache");
    save(&mut store, &key(1), "hello");
    assert!(store.may_hold_entries(), "a saved entry");
    // An artifact file alone (a lookup would adopt it) counts too.
    let other = tempfile::tempdir().unwrap();
    let fresh = Store::open(other.path(), Access::ReadWrite).unwrap();
    assert!(!fresh.may_hold_entries());
    std::fs::copy(store.artifact_path(&key(1)), fresh.artifact_path(&key(1))).unwrap();
    assert!(fresh.may_hold_entries(), "an artifact without its row");
}
