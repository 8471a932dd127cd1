//! Tests of eviction and the stray-file sweep.

use std::fs::File;
use std::time::{Duration, SystemTime};

use super::*;
use crate::index::tests::{key, save, set_accessed};
use crate::index::{now_ms, Access, Store, ARTIFACTS_DIR, TMP_DIR};

const HOUR_MS: i64 = 60 * 60 * 1000;

fn make_old(path: &Path) {
    let file = File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(2 * 60 * 60))
        .unwrap();
}

#[test]
fn entries_not_accessed_within_the_bound_are_evicted() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let now = now_ms();
    let old = save(&mut store, &key(1), "old");
    save(&mut store, &key(2), "new");
    set_accessed(&store, &key(1), now - 48 * HOUR_MS);
    let policy = PrunePolicy {
        older_than: Some(Duration::from_secs(24 * 60 * 60)),
        max_size: None,
    };

    let dry = store.prune(&policy, true).unwrap();
    assert_eq!((dry.evicted, dry.bytes_freed), (1, old.size_bytes));
    assert!(store.artifact_path(&key(1)).exists());
    assert!(store.entry(&key(1)).unwrap().is_some());

    let report = store.prune(&policy, false).unwrap();
    assert_eq!(report, dry);
    assert!(!store.artifact_path(&key(1)).exists());
    assert_eq!(store.entry(&key(1)).unwrap(), None);
    assert!(store.entry(&key(2)).unwrap().is_some());
}

#[test]
fn the_least_recently_accessed_go_until_the_size_fits() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let mut sizes = Vec::new();
    for n in 1..=4u8 {
        sizes.push(save(&mut store, &key(n), &"x".repeat(usize::from(n))).size_bytes);
        set_accessed(&store, &key(n), 1000 * i64::from(n));
    }
    // Room for the two most recently accessed only.
    let policy = PrunePolicy {
        older_than: None,
        max_size: Some(sizes[2] + sizes[3]),
    };
    let report = store.prune(&policy, false).unwrap();
    assert_eq!(report.evicted, 2);
    assert_eq!(report.bytes_freed, sizes[0] + sizes[1]);
    assert_eq!(store.entry(&key(1)).unwrap(), None);
    assert_eq!(store.entry(&key(2)).unwrap(), None);
    assert!(store.entry(&key(3)).unwrap().is_some());
    assert!(store.entry(&key(4)).unwrap().is_some());
    assert_eq!(store.totals().unwrap(), (sizes[2] + sizes[3], 2));
}

#[test]
fn a_pending_touch_counts_as_access() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let a = save(&mut store, &key(1), "a");
    let b = save(&mut store, &key(2), "b");
    set_accessed(&store, &key(1), 1);
    set_accessed(&store, &key(2), 2);
    // Used in this run: now the most recently accessed.
    store.touch(&key(1));
    let policy = PrunePolicy {
        older_than: None,
        max_size: Some(a.size_bytes.max(b.size_bytes)),
    };
    let report = store.prune(&policy, false).unwrap();
    assert_eq!(report.evicted, 1);
    assert!(store.entry(&key(1)).unwrap().is_some());
    assert_eq!(store.entry(&key(2)).unwrap(), None);
    let policy = PrunePolicy::default();
    assert_eq!(store.prune(&policy, false).unwrap(), PruneReport::default());
}

#[test]
fn rows_without_files_and_old_stray_files_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    save(&mut store, &key(1), "kept");
    save(&mut store, &key(2), "missing");
    std::fs::remove_file(store.artifact_path(&key(2))).unwrap();
    let artifacts = dir.path().join(ARTIFACTS_DIR);
    let tmp = dir.path().join(TMP_DIR);
    let orphan = artifacts.join(format!("{}.tar.zst", key(3)));
    let young_orphan = artifacts.join(format!("{}.tar.zst", key(4)));
    let aside = artifacts.join(format!(".aside-{}-1-1", key(5)));
    let foreign = artifacts.join("notes.txt");
    let stale_temp = tmp.join("pack-1-1.tmp");
    let fresh_temp = tmp.join("pack-1-2.tmp");
    for (path, len) in [
        (&orphan, 100),
        (&young_orphan, 10),
        (&aside, 20),
        (&foreign, 5),
        (&stale_temp, 7),
        (&fresh_temp, 3),
    ] {
        std::fs::write(path, vec![0u8; len]).unwrap();
    }
    for path in [&orphan, &aside, &foreign, &stale_temp] {
        make_old(path);
    }
    make_old(&store.artifact_path(&key(1)));

    let policy = PrunePolicy::default();
    let dry = store.prune(&policy, true).unwrap();
    assert_eq!(
        dry,
        PruneReport {
            evicted: 0,
            bytes_freed: 0,
            orphans: 3,
            orphan_bytes: 127,
            missing: 1,
        }
    );
    assert!(orphan.exists() && stale_temp.exists());
    assert!(store.entry(&key(2)).unwrap().is_some());

    assert_eq!(store.prune(&policy, false).unwrap(), dry);
    assert!(!orphan.exists() && !aside.exists() && !stale_temp.exists());
    assert!(young_orphan.exists() && fresh_temp.exists() && foreign.exists());
    assert!(store.artifact_path(&key(1)).exists());
    assert_eq!(store.entry(&key(2)).unwrap(), None);
    assert!(store.meta.orphans_swept_at.is_some());
}

/// A pid that named a process a moment ago and names none now.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn a_dead_writers_staging_file_is_stray_at_any_age() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let tmp = dir.path().join(TMP_DIR);
    let dead = tmp.join(format!("pack-{}-0.tmp", dead_pid()));
    let alive = tmp.join("pack-1-0.tmp");
    let own = tmp.join(format!("pack-{}-0.tmp", std::process::id()));
    let odd = tmp.join("pack-x-0.tmp");
    for path in [&dead, &alive, &own, &odd] {
        std::fs::write(path, b"12345").unwrap();
    }
    let dry = store.prune(&PrunePolicy::default(), true).unwrap();
    assert_eq!((dry.orphans, dry.orphan_bytes), (1, 5));
    assert!(dead.exists());
    assert_eq!(store.sweep_dead_temps().unwrap(), (1, 5));
    assert!(!dead.exists());
    assert!(alive.exists() && own.exists() && odd.exists());
}

#[test]
fn retention_sweeps_at_most_once_an_hour() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let stray = dir.path().join(TMP_DIR).join("pack-9-9.tmp");
    let policy = PrunePolicy::default();

    std::fs::write(&stray, "x").unwrap();
    make_old(&stray);
    assert_eq!(store.retention(&policy).unwrap().orphans, 1);

    std::fs::write(&stray, "x").unwrap();
    make_old(&stray);
    assert_eq!(
        store.retention(&policy).unwrap().orphans,
        0,
        "swept recently"
    );
    assert!(stray.exists());

    // A fresh store reads the sweep time back from `meta`.
    let mut reopened = Store::open(dir.path(), Access::ReadWrite).unwrap();
    assert_eq!(reopened.retention(&policy).unwrap().orphans, 0);
    reopened.meta.orphans_swept_at = Some(now_ms() - 2 * HOUR_MS);
    assert_eq!(reopened.retention(&policy).unwrap().orphans, 1);
    assert!(!stray.exists());
}

#[test]
fn a_cache_that_does_not_exist_reports_zeros_and_stays_absent() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("never");
    let policy = PrunePolicy {
        older_than: Some(Duration::from_secs(1)),
        max_size: Some(0),
    };
    for dry in [true, false] {
        assert_eq!(
            prune_dir(&dir, &policy, dry).unwrap(),
            PruneReport::default()
        );
        assert!(!dir.exists());
    }
}

#[test]
fn prune_dir_dry_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), Access::ReadWrite).unwrap();
    let entry = save(&mut store, &key(1), "x");
    drop(store);
    let policy = PrunePolicy {
        older_than: None,
        max_size: Some(0),
    };
    let dry = prune_dir(dir.path(), &policy, true).unwrap();
    assert_eq!((dry.evicted, dry.bytes_freed), (1, entry.size_bytes));
    let store = Store::open(dir.path(), Access::ReadOnly).unwrap();
    assert!(store.entry(&key(1)).unwrap().is_some());
    let real = prune_dir(dir.path(), &policy, false).unwrap();
    assert_eq!(real, dry);
    assert_eq!(store.entry(&key(1)).unwrap(), None);
}
