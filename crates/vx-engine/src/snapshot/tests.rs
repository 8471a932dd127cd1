//! Run snapshots' tests: reading one back, what it notices, and when none is written or used.

use super::stat::unchanged;
use super::*;

fn request(dir: &Path) -> Request {
    Request {
        digest: "d".repeat(32),
        path: dir.join(".vx/snapshots").join("d".repeat(32)),
        started: SystemTime::now() + Duration::from_secs(10),
    }
}

/// These paths, each of class [`Class::Whole`].
fn whole(root: &Path, paths: Vec<PathBuf>) -> Paths {
    let mut all = Paths::new(root);
    all.extend(paths);
    all
}

fn facts(dir: &Path) -> Facts {
    Facts {
        run_id: "0193-run".into(),
        cache_dir: dir.join(".vx/cache"),
        salt: "ab".repeat(32),
        generation: 3,
        workers: 4,
        projects_in_run: 2,
        projects_in_workspace: 3,
        tasks: vec![
            Task {
                id: TaskId::new("@demo/web", "build"),
                short_key: "8c14b8aa7015".into(),
                stored_ms: 47,
                requested: true,
                log: b"built\n\tin 3 steps \x1b[32mok\x1b[0m\n".to_vec(),
            },
            Task {
                id: TaskId::new("@demo/lib", "build"),
                short_key: "03a9c2f1d4e5".into(),
                stored_ms: 0,
                requested: false,
                log: Vec::new(),
            },
        ],
        notes: vec![
            Notice::note("a plan note"),
            Notice::warning("a warning"),
            Notice::Warning {
                line: "a warning".into(),
                hint: Some("with a hint".into()),
            },
        ],
    }
}

#[test]
fn a_snapshot_reads_back_and_notices_each_kind_of_change() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs::write(root.join("a.txt"), "a").unwrap();
    fs::create_dir(root.join("src")).unwrap();
    fs::write(root.join("src/b.txt"), "b").unwrap();
    // Old enough not to be racy: the run "started" ten seconds from now.
    let request = request(&root);
    let paths = vec![
        PathBuf::from("a.txt"),
        PathBuf::from("src"),
        PathBuf::from("src/b.txt"),
        PathBuf::from("gone.txt"),
    ];
    write(&request, &root, &facts(&root), whole(&root, paths)).unwrap();
    let text = fs::read_to_string(&request.path).unwrap();
    let snapshot = parse(&text, &root, &request).unwrap();
    assert_eq!(snapshot.facts, facts(&root));
    assert_eq!(snapshot.paths.len(), 4);
    assert!(snapshot
        .paths
        .contains(&Recorded::whole(root.join("gone.txt"), false, None)));
    assert!(unchanged(&snapshot.paths));
    // Content rewritten with the same size: the ctime moves.
    std::thread::sleep(Duration::from_millis(20));
    fs::write(root.join("a.txt"), "A").unwrap();
    assert!(!unchanged(&snapshot.paths));
    fs::write(root.join("a.txt"), "a").unwrap();
    write(
        &request,
        &root,
        &facts(&root),
        whole(&root, snapshot_paths(&snapshot)),
    )
    .unwrap();
    let again = parse(&fs::read_to_string(&request.path).unwrap(), &root, &request).unwrap();
    assert!(unchanged(&again.paths));
    // A file added to a listed directory.
    fs::write(root.join("src/c.txt"), "c").unwrap();
    assert!(!unchanged(&again.paths));
    fs::remove_file(root.join("src/c.txt")).unwrap();
    let again = fresh(&request, &root, &again);
    // An absent path that appears.
    fs::write(root.join("gone.txt"), "").unwrap();
    assert!(!unchanged(&again.paths));
    fs::remove_file(root.join("gone.txt")).unwrap();
    let again = fresh(&request, &root, &again);
    // A mode change alone.
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(root.join("src/b.txt"), fs::Permissions::from_mode(0o755)).unwrap();
    assert!(!unchanged(&again.paths));
}

fn snapshot_paths(snapshot: &Snapshot) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = snapshot.paths.iter().map(|r| r.path.clone()).collect();
    paths.dedup();
    paths
}

fn fresh(request: &Request, root: &Path, old: &Snapshot) -> Snapshot {
    write(
        request,
        root,
        &facts(root),
        whole(root, snapshot_paths(old)),
    )
    .unwrap();
    parse(&fs::read_to_string(&request.path).unwrap(), root, request).unwrap()
}

#[test]
fn the_most_recently_changed_paths_come_first() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for (name, age) in [("old.txt", 300), ("new.txt", 30), ("mid.txt", 100)] {
        let path = root.join(name);
        fs::write(&path, name).unwrap();
        let file = fs::File::options().write(true).open(&path).unwrap();
        let times = fs::FileTimes::new().set_modified(SystemTime::now() - Duration::from_secs(age));
        file.set_times(times).unwrap();
    }
    // Setting the mtime moved each ctime to now, one after the other: the order is by the
    // later of the two (the run "started" ten seconds from now, so none is racy).
    let request = request(&root);
    let names = ["a-absent.txt", "old.txt", "new.txt", "mid.txt"];
    write(
        &request,
        &root,
        &facts(&root),
        whole(&root, names.iter().map(PathBuf::from).collect()),
    )
    .unwrap();
    let text = fs::read_to_string(&request.path).unwrap();
    let snapshot = parse(&text, &root, &request).unwrap();
    let order: Vec<&std::ffi::OsStr> = snapshot
        .paths
        .iter()
        .map(|r| r.path.file_name().unwrap())
        .collect();
    assert_eq!(
        order.last().unwrap().to_str(),
        Some("a-absent.txt"),
        "absent last"
    );
    let stats: Vec<i128> = snapshot
        .paths
        .iter()
        .filter_map(|r| r.stat.map(|s| s.mtime_ns.max(s.ctime_ns)))
        .collect();
    assert!(stats.windows(2).all(|w| w[0] >= w[1]), "{stats:?}");
}

#[test]
fn a_path_changed_near_the_start_of_the_run_writes_no_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs::write(root.join("a.txt"), "a").unwrap();
    let request = Request {
        started: SystemTime::now(),
        ..request(&root)
    };
    let error = write(
        &request,
        &root,
        &facts(&root),
        whole(&root, vec![PathBuf::from("a.txt")]),
    )
    .unwrap_err();
    assert!(
        error
            .0
            .contains("a.txt changed too shortly before the run started"),
        "{}",
        error.0
    );
    assert!(!request.path.exists());
}

/// Half a second is old enough on a device whose recorded times have fractions of a second,
/// and too recent on one that keeps whole seconds.
#[test]
fn the_racy_margin_is_a_tenth_of_a_second_where_times_have_fractions() {
    const S: i128 = 1_000_000_000;
    let started = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let stat = |dev, ns: i128| Stat {
        dev,
        ino: 1,
        mode: 0o100644,
        size: 1,
        mtime_ns: ns,
        ctime_ns: ns,
    };
    let fine_half = stat(1, 999 * S + S / 2);
    let fine_recent = stat(1, 1_000 * S - S / 20);
    let fine_after = stat(1, 1_000 * S + 1);
    let coarse_one = stat(2, 999 * S);
    let coarse_three = stat(2, 997 * S);
    let all = [fine_half, fine_recent, fine_after, coarse_one, coarse_three];
    let at = |stats: &[Stat]| -> Vec<(PathBuf, Stat)> {
        stats.iter().map(|s| (PathBuf::from("/w/f"), *s)).collect()
    };
    let recorded = at(&all);
    let local = |_: &Path| true;
    let racy = Racy::new(
        started,
        recorded.iter().map(|(p, s)| (p.as_path(), s)),
        local,
    );
    assert!(!racy.is_racy(&fine_half));
    assert!(racy.is_racy(&fine_recent), "within 100 ms");
    assert!(racy.is_racy(&fine_after), "after the start");
    assert!(racy.is_racy(&coarse_one), "whole seconds: within 2 s");
    assert!(!racy.is_racy(&coarse_three));
    // The same whole-second time on the fine device is old enough.
    assert!(!racy.is_racy(&stat(1, 999 * S)));
    // A device with no fraction anywhere is coarse, even for a time half a second old.
    let recorded = at(&[coarse_one]);
    let racy = Racy::new(
        started,
        recorded.iter().map(|(p, s)| (p.as_path(), s)),
        local,
    );
    assert!(racy.is_racy(&stat(2, 999 * S + S / 2)));
    // Times with fractions on a file system another machine stamps (NFS, SMB): 2 s.
    let recorded = at(&all);
    let racy = Racy::new(
        started,
        recorded.iter().map(|(p, s)| (p.as_path(), s)),
        |_: &Path| false,
    );
    assert!(racy.is_racy(&fine_half));
}

/// The file systems tests run on here stamp their own times.
#[test]
fn a_local_file_system_is_stamped_here() {
    let dir = tempfile::tempdir().unwrap();
    assert!(stamped_here(dir.path()), "{}", dir.path().display());
    assert!(!stamped_here(Path::new("/proc/self")));
}

#[test]
fn a_damaged_or_foreign_snapshot_is_no_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs::write(root.join("a.txt"), "a").unwrap();
    let request = request(&root);
    write(
        &request,
        &root,
        &facts(&root),
        whole(&root, vec![PathBuf::from("a.txt")]),
    )
    .unwrap();
    let text = fs::read_to_string(&request.path).unwrap();
    assert!(parse(&text, &root, &request).is_some());
    let cut = &text[..text.len() - "end\n".len()];
    assert!(parse(cut, &root, &request).is_none(), "cut short");
    let other = Request {
        digest: "e".repeat(32),
        ..request.clone()
    };
    assert!(parse(&text, &root, &other).is_none(), "another request");
    let older = text.replace(env!("CARGO_PKG_VERSION"), "0.0.0-old");
    assert!(parse(&older, &root, &request).is_none(), "another vx");
    let junk = text.replace("\nstat\t", "\nstat\tx");
    assert!(
        parse(&junk, &root, &request).is_none(),
        "a field that is no number"
    );
}

/// Two sources of one path: the stricter class wins, and a listed file a key folded is judged
/// by content.
#[test]
fn a_path_named_twice_takes_the_stricter_class() {
    let content = |blob: &str| Class::Content {
        mode: "100644",
        blob: blob.repeat(40),
    };
    assert_eq!(Class::Listed.and(content("a")), content("a"));
    assert_eq!(content("a").and(Class::Listed), content("a"));
    assert_eq!(content("a").and(content("a")), content("a"));
    assert_eq!(
        content("a").and(content("b")),
        Class::Whole,
        "changed during the run"
    );
    assert_eq!(Class::Whole.and(content("a")), Class::Whole);
    assert_eq!(content("a").and(Class::Whole), Class::Whole);
    assert_eq!(Class::Listed.and(Class::Listed), Class::Listed);
    // Written down, a listed file alone is judged whole; a relative and an absolute spelling
    // are one path.
    let root = Path::new("/w");
    let mut paths = Paths::new(root);
    paths.listed(PathBuf::from("README.md"));
    paths.listed(PathBuf::from("src/a.ts"));
    paths.folded("src/a.ts".into(), Some(("100644", "a".repeat(40))));
    paths.insert(PathBuf::from("/w/package.json"));
    paths.folded("package.json".into(), Some(("100644", "b".repeat(40))));
    paths.insert(PathBuf::from("/usr/bin/vx"));
    let (names, classes) = paths.into_sorted();
    assert_eq!(
        names,
        [
            "/usr/bin/vx",
            "/w/README.md",
            "/w/package.json",
            "/w/src/a.ts"
        ]
        .map(PathBuf::from)
    );
    assert_eq!(
        classes,
        [Class::Whole, Class::Whole, Class::Whole, content("a")]
    );
    for class in [content("a"), Class::Whole] {
        assert_eq!(Class::parse(&class.word()), Some(class));
    }
    assert_eq!(Class::parse("100644:xyz"), None);
    assert_eq!(Class::parse("100600:".to_string().as_str()), None);
}

/// The blob id a key folds for these bytes (SHA-1 repositories).
fn blob(bytes: &str) -> String {
    vx_workspace::tree::blob_id(vx_workspace::tree::ObjectFormat::Sha1, bytes.as_bytes())
}

/// Writes each `(path, bytes)` under `root`, then a snapshot recording them as a key folded
/// them (judged by content) and `whole` as any other path, and reads it back.
fn content_snapshot(root: &Path, files: &[(&str, &str)], whole: &[&str]) -> (Request, Snapshot) {
    let request = request(root);
    let mut paths = Paths::new(root);
    for (path, bytes) in files {
        let file = root.join(path);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(&file, bytes).unwrap();
        paths.folded(path.to_string(), Some(("100644", blob(bytes))));
    }
    paths.extend(whole.iter().map(PathBuf::from));
    write(&request, root, &facts(root), paths).unwrap();
    let snapshot = parse(&fs::read_to_string(&request.path).unwrap(), root, &request).unwrap();
    (request, snapshot)
}

/// A file judged by content whose times moved: the same bytes and mode hold (and are given
/// with their new stat data), other bytes, another mode or another kind of file do not; any
/// other path that moved stops the check.
#[test]
fn a_file_whose_times_moved_is_judged_by_its_content() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs::write(root.join("b.txt"), "b\n").unwrap();
    let (_, snapshot) = content_snapshot(&root, &[("a.txt", "a\n")], &["b.txt"]);
    let at = snapshot
        .paths
        .iter()
        .position(|r| r.path.ends_with("a.txt"))
        .unwrap();
    assert_eq!(moved(&snapshot.paths), Some(Vec::new()));

    // Written again with the same bytes: its times moved, its content did not.
    std::thread::sleep(Duration::from_millis(20));
    fs::write(root.join("a.txt"), "a\n").unwrap();
    let found = moved(&snapshot.paths).unwrap();
    assert_eq!(found.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [at]);
    let same = same_content(&root, &snapshot.paths, &found).expect("the same bytes");
    let now = stat_of(&root.join("a.txt"), false).unwrap().unwrap();
    assert_eq!(same, [(at, now)]);

    // Other bytes of the same size.
    fs::write(root.join("a.txt"), "A\n").unwrap();
    let found = moved(&snapshot.paths).unwrap();
    assert_eq!(same_content(&root, &snapshot.paths, &found), None);

    // The same bytes, executable.
    fs::write(root.join("a.txt"), "a\n").unwrap();
    fs::set_permissions(root.join("a.txt"), fs::Permissions::from_mode(0o755)).unwrap();
    let found = moved(&snapshot.paths).unwrap();
    assert_eq!(same_content(&root, &snapshot.paths, &found), None);
    fs::set_permissions(root.join("a.txt"), fs::Permissions::from_mode(0o644)).unwrap();

    // A symbolic link to a file with the same bytes is another kind of file.
    fs::remove_file(root.join("a.txt")).unwrap();
    fs::write(root.join("elsewhere.txt"), "a\n").unwrap();
    std::os::unix::fs::symlink("elsewhere.txt", root.join("a.txt")).unwrap();
    assert_eq!(moved(&snapshot.paths), None);
    fs::remove_file(root.join("a.txt")).unwrap();
    assert_eq!(moved(&snapshot.paths), None, "gone");
    fs::write(root.join("a.txt"), "a\n").unwrap();
    assert!(moved(&snapshot.paths).is_some());

    // A file of class whole whose times moved, with the same bytes.
    fs::write(root.join("b.txt"), "b\n").unwrap();
    assert_eq!(moved(&snapshot.paths), None);
}

/// A directory on the way to an input replaced by a link to a copy with the same bytes: a full
/// run takes the input as absent (git never follows a link in the middle of a path), so the
/// replay does not hold. (The walk does not record directories it skips, such as ignored
/// ones holding force-added files.)
#[test]
fn an_input_below_a_directory_that_became_a_link_is_not_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (_, snapshot) = content_snapshot(&root, &[("vendor/sub/x.txt", "x\n")], &[]);
    fs::create_dir_all(root.join("elsewhere/sub")).unwrap();
    fs::write(root.join("elsewhere/sub/x.txt"), "x\n").unwrap();
    fs::rename(root.join("vendor/sub"), root.join("old-sub")).unwrap();
    std::os::unix::fs::symlink(root.join("elsewhere/sub"), root.join("vendor/sub")).unwrap();
    let found = moved(&snapshot.paths).expect("judged by content");
    assert_eq!(found.len(), 1);
    assert_eq!(same_content(&root, &snapshot.paths, &found), None);
    // Put back as a directory with the same bytes (another inode): the same.
    fs::remove_file(root.join("vendor/sub")).unwrap();
    fs::rename(root.join("elsewhere/sub"), root.join("vendor/sub")).unwrap();
    let found = moved(&snapshot.paths).expect("judged by content");
    assert!(same_content(&root, &snapshot.paths, &found).is_some());
}

/// A replay that hashed a file again writes its new stat data down, so the next run does not
/// hash it; one too recent to prove anything keeps the old and is hashed again next time.
#[test]
fn a_refreshed_snapshot_takes_the_new_stat_data_of_files_old_enough() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (request, snapshot) = content_snapshot(&root, &[("src/a.txt", "a\n")], &["src"]);
    std::thread::sleep(Duration::from_millis(20));
    fs::write(root.join("src/a.txt"), "a\n").unwrap();
    let same = same_content(&root, &snapshot.paths, &moved(&snapshot.paths).unwrap()).unwrap();

    // This run started just now: the file changed too recently, nothing is written.
    let now = Request {
        started: SystemTime::now(),
        ..request.clone()
    };
    let before = fs::read_to_string(&request.path).unwrap();
    assert!(refresh(&now, &root, &snapshot, &same).is_err());
    assert_eq!(fs::read_to_string(&request.path).unwrap(), before);

    // Started long after: the new stat data are written, with the class kept.
    refresh(&request, &root, &snapshot, &same).unwrap();
    let again = parse(&fs::read_to_string(&request.path).unwrap(), &root, &request).unwrap();
    assert_eq!(moved(&again.paths), Some(Vec::new()));
    let a = again
        .paths
        .iter()
        .find(|r| r.path.ends_with("a.txt"))
        .unwrap();
    assert_eq!(
        a.class,
        Class::Content {
            mode: "100644",
            blob: blob("a\n")
        }
    );
    assert_eq!(again.facts, snapshot.facts);
}
