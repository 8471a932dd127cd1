//! Key fuzzing (TEST-4; KEY-3, KEY-10, KEY-11, KEY-12, KEY-16): random edits to a generated
//! git workspace, and after each batch of edits vx's decision for every task compared with a
//! reference computed from scratch. No wrong hit, and no wrong miss, may ever show up.
//!
//! The workspace: five projects, `p1` and `p2` depending on `p0`, `p3` on both (a diamond),
//! `p4` alone. Each has a cached `build` (`src/**` → `out/**`, folding what the upstream builds
//! produced: KEY-9's early cutoff; it also writes a random `out/list.txt.map`, which its
//! `cache.dependants-read` leaves out of what it produced), an uncached `lint` (its key folds every file of the project,
//! KEY-12) and a cached `test` (`test/**`, folding `build`'s outputs and `lint`'s key). A build
//! writes the names under `src` (`ls -R`), so a content edit re-runs it to the same outputs and
//! its dependants must be cut off — and a rename must not be. `p0#build` also names the git-ignored `local.env`
//! as a literal input, and `p4#bundle` reads `shared/**`, outside every project, through
//! `workspace-inputs`.
//!
//! The reference shares nothing with vx's file handling: it lists files with `git ls-files -co
//! --exclude-standard`, keeps what exists in the work tree as git sees it (identity is of the
//! work tree, so staging or committing never moves a key), hashes each file's bytes (a
//! symlink's target) into a git blob id and takes the mode from `lstat`. Only the fixed parts —
//! the resolved configuration's JSON and the byte encoding of KEY-1 (`vx_core::key`) — are
//! vx's own, so the reference key must equal vx's key bit for bit. What an upstream build
//! produced is, for a key a real run saved, what that run left in its `out/` (a hit restores
//! exactly that); for a build that would run now, what its command's `ls -R src` prints now;
//! either way hashed with the fixed encoding of `vx_store::artifact::produced_digest`.
//!
//! A *decision check* follows every batch of 1–7 edits and covers every task of the workspace:
//! - `vx run … --dry=json` gives every task's key; each must equal the reference key. A vx key
//!   that differs and has a saved entry is a WRONG HIT (vx would serve the result of other
//!   inputs); any other difference is an unstable key, a wrong miss. A key `--dry` declares a
//!   prediction of early cutoff (`assumes_unchanged`: an upstream that would run is assumed to
//!   produce what it did the last time it executed) is compared with the reference making the
//!   same assumption; a key `--dry` cannot know (an upstream build that would run and never
//!   executed) must be `null`;
//! - each predicted status must be `hit-local` exactly when a real run saved the reference key
//!   before, `miss` otherwise, and `no-cache` for `lint`;
//! - about one check in four also runs `vx run` for real (`--output-logs hash-only`): its
//!   one-liners must say `up-to-date` or `local` (restored) for exactly the predicted hits and
//!   `miss` for the rest, with no message on stderr; every cached task then counts as saved
//!   under its key.
//!
//! Edits: content changes; same-size rewrites that restore the mtime, in place and through a
//! new inode; mtime-only touches and same-bytes rewrites (which must move nothing); mode
//! changes (owner `x` moves the key, group `x` does not); file ↔ symlink swaps (dangling ones
//! too); a directory swapped for a symlink to a directory (loops included) and back; renames;
//! untracked files; ignored files (which move no key but `p0#build`'s, through the literal
//! `local.env`); deletions; `.gitignore` and `info/exclude` rules, negations included; `git
//! add`, commits, `git rm --cached`, `update-index --chmod`, `--skip-worktree` and
//! `--assume-unchanged`; deleted outputs (restores); a root `.npmrc` (KEY-3). The batch after a
//! real run starts at once, so its edits are same-second edits of files vx has just stat'ed.
//!
//! One case is out of reach of any stat-based check, git's included: a rewrite that restores
//! the mtime within the kernel's timestamp tick of the file's previous change leaves every
//! `lstat` field as it was. Such rewrites wait until the file's ctime is 20 ms old.
//!
//! Reproduce or extend: `VX_FUZZ_SEED=<n> VX_FUZZ_EDITS=<n> cargo test -p vx-run --test cli fuzz`
//! (a failure prints its seed and the edit log, and keeps the workspace). These variables are
//! read by the test only.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use vx_core::graph::task_config;
use vx_core::key::{outputs_fold, task_config_json, InputFile, KeyInputs};
use vx_core::TaskId;
use vx_test_support::fixture::{Fixture, Output};
use vx_workspace::tree::{blob_id, ObjectFormat};

use crate::vx_bin;

/// Edits of the default run: "a few thousand edits" per CI run (~750 checks, ~190 real runs),
/// about a minute in a debug build on a 2-core machine.
const DEFAULT_EDITS: u64 = 3000;
const DEFAULT_SEED: u64 = 0x5eed_0001;

/// (project, the projects whose `build` its `build` folds).
const PROJECTS: [(&str, &[&str]); 5] = [
    ("p0", &[]),
    ("p1", &["p0"]),
    ("p2", &["p0"]),
    ("p3", &["p1", "p2"]),
    ("p4", &[]),
];

/// Names new files get, so that renames and additions collide with existing files.
const NAMES: [&str; 9] = [
    "a.txt", "b.txt", "c.txt", "d.sh", "e.md", "f.tmp", "g.txt", "h.log", "i",
];

/// Files of a project the fuzzer never edits: they would change the configuration.
const PROTECTED: [&str; 3] = ["vx.toml", "package.json", ".gitignore"];

/// KEY-3's workspace-fingerprint files, in the table's order. Copied from the spec on purpose
/// rather than imported from vx: the reference must not share vx's mistakes.
const KEY3: [&str; 10] = [
    "pnpm-lock.yaml",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "bun.lock",
    "bun.lockb",
    "pnpm-workspace.yaml",
    ".yarnrc.yml",
    ".npmrc",
    "bunfig.toml",
];

/// Every task of the workspace.
const RUN: [&str; 6] = ["run", "build", "lint", "test", "bundle", "--all"];

#[test]
fn fuzzed_edits_never_give_a_wrong_hit_or_a_wrong_miss() {
    let seed = env_number("VX_FUZZ_SEED").unwrap_or(DEFAULT_SEED);
    let edits = env_number("VX_FUZZ_EDITS").unwrap_or(DEFAULT_EDITS);
    let started = Instant::now();
    let mut fuzz = Fuzz::new(seed);
    fuzz.real_run();
    while fuzz.stats.edits < edits {
        for _ in 0..1 + fuzz.rng.below(7) {
            fuzz.edit();
        }
        fuzz.check();
        if fuzz.rng.below(4) == 0 {
            fuzz.real_run();
        }
    }
    let s = &fuzz.stats;
    println!(
        "fuzz seed {seed:#x}: {} edits, {} checks ({} task decisions: {} hits, {} misses; {} \
         of them predicted cutoffs), {} real runs ({} tasks cut off), {} git commands; \
         {:.1?} ({:.1?} in vx)",
        s.edits,
        s.checks,
        s.decisions,
        s.hits,
        s.misses,
        s.predicted,
        s.runs,
        s.cut_off,
        s.git,
        started.elapsed(),
        s.vx_time,
    );
    if edits >= DEFAULT_EDITS {
        assert!(s.cut_off > 0, "the edits never made a dependant cut off");
    }
}

/// A regression the fuzzer found: a tracked file deleted from the work tree folded as absent
/// until the deletion was staged, so `git add` or a commit moved the key of a work tree that
/// had not changed (and two checkouts of the same files had different keys). A literal input
/// still folds as absent.
#[test]
fn staging_a_deletion_does_not_move_the_key() {
    let f = crate::one_project(concat!(
        "[tasks.build]\ncommand = \"true\"\n",
        "cache = { inputs = [\"src/**\", \"gone.txt\"], outputs = [] }\n",
    ));
    f.write("packages/lib/src/a.txt", "a\n");
    f.write("packages/lib/src/b.txt", "b\n");
    f.write("packages/lib/gone.txt", "literal\n");
    f.commit();
    let before = dry_key(&f);
    std::fs::remove_file(f.path("packages/lib/src/b.txt")).unwrap();
    std::fs::remove_file(f.path("packages/lib/gone.txt")).unwrap();
    let deleted = dry_key(&f);
    assert_ne!(deleted, before, "a deletion moves the key");
    f.git(&["add", "-A"]);
    assert_eq!(dry_key(&f), deleted, "staging the deletion moved the key");
    f.git(&["commit", "-q", "-m", "delete"]);
    assert_eq!(
        dry_key(&f),
        deleted,
        "committing the deletion moved the key"
    );
}

/// A regression the fuzzer found: a tracked file replaced by a directory folds as absent, but
/// the save guard took the directory for a file that appeared while the task ran, so the task
/// was never cached.
#[test]
fn a_tracked_file_replaced_by_a_directory_does_not_stop_saving() {
    let f = crate::one_project(concat!(
        "[tasks.build]\ncommand = \"true\"\n",
        "cache = { inputs = [\"src/**\"], outputs = [] }\n",
    ));
    f.write("packages/lib/src/x", "x\n");
    f.commit();
    std::fs::remove_file(f.path("packages/lib/src/x")).unwrap();
    f.write("packages/lib/src/x/y", "y\n");
    let first = f.vx(&["run", "lib#build"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    assert!(first.stderr.is_empty(), "{}", first.stderr);
    let second = f.vx(&["run", "lib#build"]);
    crate::assert_contains(&second.stdout, "cache      1 up-to-date\n");
}

/// Git never looks through a symlinked directory: once `src/sub` is a symlink, the tracked
/// `src/sub/c.txt` is deleted from the work tree (`git status` says ` D`) whatever the link's
/// target holds, and staging that deletion must not move the key. (`lstat` follows symlinks in
/// the leading components, so `Tree::identity` and the save guard check the parents.)
#[test]
fn a_tracked_path_below_a_symlinked_directory_is_deleted() {
    let f = crate::one_project(concat!(
        "[tasks.build]\ncommand = \"true\"\n",
        "cache = { inputs = [\"src/**\"], outputs = [] }\n",
    ));
    f.write("packages/lib/src/sub/c.txt", "c\n");
    f.write("packages/lib/test/c.txt", "t\n");
    f.commit();
    std::fs::remove_dir_all(f.path("packages/lib/src/sub")).unwrap();
    symlink("../test", f.path("packages/lib/src/sub")).unwrap();
    let unstaged = dry_key(&f);
    f.git(&["add", "-A"]);
    assert_eq!(
        dry_key(&f),
        unstaged,
        "staging the work tree's state moved the key"
    );
}

/// The key of the workspace's only task, from `--dry=json`.
fn dry_key(f: &Fixture) -> String {
    let out = f.vx(&["run", "lib#build", "--dry=json"]);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    doc["tasks"][0]["key"].as_str().unwrap().to_string()
}

/// A test-only variable as a number (decimal or `0x` hex).
fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    let parsed = match text.trim().strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.trim().parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={text} is not a number")))
}

/// xorshift64*: small, seedable, and enough to pick edits.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng((seed ^ 0x9e37_79b9_7f4a_7c15).max(1))
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let len = self.below(max + 1);
        (0..len).map(|_| b"abcxyz\n01"[self.below(9)]).collect()
    }
}

struct TaskSpec {
    id: String,
    /// The project directory, for the manifest.
    dir: String,
    /// Root-relative prefix of the listed files the task reads.
    reads: String,
    cached: bool,
    /// A literal input (root-relative), hashed even when git ignores it.
    literal: Option<String>,
    /// Upstream task ids this key folds (what a build produced, an uncached task's key);
    /// listed before this task in `Fuzz::tasks`.
    upstream: Vec<String>,
    /// Canonical JSON of the resolved configuration (field 6).
    config: String,
}

#[derive(Default)]
struct Stats {
    edits: u64,
    checks: u64,
    decisions: u64,
    hits: u64,
    misses: u64,
    runs: u64,
    /// Dry rows whose key was a declared prediction of early cutoff, or unknown.
    predicted: u64,
    /// Hits of real runs that early cutoff saved (the footer's `cut off: N tasks`).
    cut_off: u64,
    git: u64,
    vx_time: Duration,
}

/// The reference's view of one task: its key and the inputs it folds.
struct Expected {
    /// `None` for `--dry`'s unknown key: a build that would run, without history, decides it.
    key: Option<String>,
    inputs: Vec<InputFile>,
}

/// What a build that would run is taken to produce: what it produces now (a real run), or what
/// it produced last (`--dry`'s prediction from history).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reference {
    Run,
    Dry,
}

struct Fuzz {
    f: Fixture,
    seed: u64,
    rng: Rng,
    tasks: Vec<TaskSpec>,
    /// Per task, the keys a real run saved an entry for.
    saved: HashMap<String, HashSet<String>>,
    /// Per (build, key) a real run saved: the digest of the `out/` tree it left.
    produced: HashMap<(String, String), String>,
    /// Per build: what it produced the last time it executed (the newest entry).
    latest: HashMap<String, String>,
    /// Every edit, check and run so far, for the failure message.
    log: Vec<String>,
    stats: Stats,
}

impl Fuzz {
    fn new(seed: u64) -> Fuzz {
        let f = Fixture::new(vx_bin());
        workspace::write(&f);

        let workspace = vx_workspace::discover(f.root()).expect("the fuzz workspace loads");
        let mut tasks = Vec::new();
        for (name, deps) in PROJECTS {
            let dir = format!("packages/{name}");
            let mut add = |task: &str, reads: String, cached, upstream: Vec<String>| {
                let config = task_config(&workspace, &TaskId::new(name, task)).expect("declared");
                tasks.push(TaskSpec {
                    id: format!("{name}#{task}"),
                    dir: dir.clone(),
                    reads,
                    cached,
                    literal: (name == "p0" && task == "build").then(|| format!("{dir}/local.env")),
                    upstream,
                    config: task_config_json(config),
                });
            };
            add("lint", format!("{dir}/"), false, Vec::new());
            let builds = deps.iter().map(|d| format!("{d}#build")).collect();
            add("build", format!("{dir}/src/"), true, builds);
            let own = vec![format!("{name}#build"), format!("{name}#lint")];
            add("test", format!("{dir}/test/"), true, own);
            if name == "p4" {
                add("bundle", "shared/".into(), true, Vec::new());
            }
        }
        Fuzz {
            f,
            seed,
            rng: Rng::new(seed),
            tasks,
            saved: HashMap::new(),
            produced: HashMap::new(),
            latest: HashMap::new(),
            log: Vec::new(),
            stats: Stats::default(),
        }
    }

    // ---------------------------------------------------------------------------------------
    // The reference

    /// Every task's key, computed from scratch.
    fn reference(&self, mode: Reference) -> BTreeMap<String, Expected> {
        let listing = self.listing();
        let platform = format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH);
        let workspace: Vec<(String, String)> = KEY3
            .iter()
            .filter_map(|name| Some((name.to_string(), self.identity(name)?.1)))
            .collect();
        let mut expected: BTreeMap<String, Expected> = BTreeMap::new();
        // What a dependant folds for each task: a build's produced outputs, else the key;
        // `None` when `--dry` cannot know it.
        let mut folded: HashMap<String, Option<String>> = HashMap::new();
        for task in &self.tasks {
            let mut inputs: Vec<InputFile> = listing
                .iter()
                .filter(|p| p.starts_with(&task.reads))
                .map(|p| self.input(p))
                .collect();
            if let Some(literal) = &task.literal {
                if !inputs.iter().any(|i| &i.path == literal) {
                    inputs.push(self.input(literal));
                }
            }
            let manifest = format!("{}/package.json", task.dir);
            let upstream: Option<Vec<(String, String)>> = task
                .upstream
                .iter()
                .map(|u| Some((u.clone(), folded[u].clone()?)))
                .collect();
            let Some(upstream) = upstream else {
                folded.insert(task.id.clone(), None);
                expected.insert(task.id.clone(), Expected { key: None, inputs });
                continue;
            };
            let mut fields = KeyInputs {
                task: task.id.clone(),
                platform: platform.clone(),
                workspace: workspace.clone(),
                manifest: self.identity(&manifest).map(|(_, blob)| blob),
                config: task.config.clone(),
                upstream,
                inputs,
                ..KeyInputs::default()
            };
            fields.normalise();
            let key = fields.derive().hex();
            let value = if task.id.ends_with("#build") {
                let produced = match self.produced.get(&(task.id.clone(), key.clone())) {
                    Some(produced) => Some(produced.clone()),
                    None if mode == Reference::Run => Some(self.produced_now(&task.dir)),
                    None => self.latest.get(&task.id).cloned(),
                };
                produced.map(|p| outputs_fold(&p, &fields.upstream))
            } else {
                Some(key.clone())
            };
            folded.insert(task.id.clone(), value);
            let inputs = fields.inputs;
            expected.insert(
                task.id.clone(),
                Expected {
                    key: Some(key),
                    inputs,
                },
            );
        }
        expected
    }

    /// The files git lists as tracked or untracked-not-ignored that exist in the work tree.
    fn listing(&self) -> Vec<String> {
        let out = git(
            self.f.root(),
            &["ls-files", "-z", "-co", "--exclude-standard"],
        );
        let mut paths: Vec<String> = out
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8(p.to_vec()).expect("UTF-8 names"))
            .filter(|p| self.identity(p).is_some())
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }

    /// (mode, blob id) of a root-relative path in the work tree as git sees it; `None` when no
    /// file or symlink is there, or when a directory on the way is a symlink (git never looks
    /// through one).
    fn identity(&self, rel: &str) -> Option<(&'static str, String)> {
        let mut dir = self.f.root().to_path_buf();
        let parents = rel.rsplit_once('/').map_or("", |(parents, _)| parents);
        for part in parents.split('/').filter(|p| !p.is_empty()) {
            dir.push(part);
            if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
                return None;
            }
        }
        let path = self.f.path(rel);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        let (mode, bytes) = if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).ok()?;
            ("120000", target.into_os_string().into_encoded_bytes())
        } else if meta.is_file() {
            let exec = meta.mode() & 0o100 != 0;
            let mode = if exec { "100755" } else { "100644" };
            (mode, std::fs::read(&path).ok()?)
        } else {
            return None;
        };
        Some((mode, blob_id(ObjectFormat::Sha1, &bytes)))
    }

    fn input(&self, rel: &str) -> InputFile {
        match self.identity(rel) {
            Some((mode, blob)) => InputFile {
                path: rel.to_string(),
                mode,
                blob,
            },
            None => InputFile::absent(rel.to_string()),
        }
    }

    // ---------------------------------------------------------------------------------------
    // Asking vx

    fn vx(&mut self, extra: &[&str]) -> Output {
        let mut args = RUN.to_vec();
        args.extend_from_slice(extra);
        let out = self.f.vx(&args);
        self.stats.vx_time += out.elapsed;
        if out.code != 0 {
            self.fail(&format!(
                "`vx {args:?}` exited {}:\n{}{}",
                out.code, out.stdout, out.stderr
            ));
        }
        out
    }

    fn is_saved(&self, id: &str, key: &str) -> bool {
        self.saved.get(id).is_some_and(|keys| keys.contains(key))
    }

    /// One decision check: every task's key and predicted status under `--dry=json`.
    fn check(&mut self) {
        self.stats.checks += 1;
        let expected = self.reference(Reference::Dry);
        let dry = self.vx(&["--dry=json"]);
        let doc: serde_json::Value = serde_json::from_str(&dry.stdout)
            .unwrap_or_else(|e| self.fail(&format!("not JSON ({e}):\n{}", dry.stdout)));
        let rows: HashMap<&str, (&str, &str, Option<bool>)> = doc["tasks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                let text = |field: &str| t[field].as_str().unwrap_or("null");
                // Early cutoff predicted from history: whether that key has an entry.
                let predicted = t
                    .get("assumes_unchanged")
                    .map(|_| t["hit_if_unchanged"] == true);
                (text("id"), (text("key"), text("cache"), predicted))
            })
            .collect();
        let mut problems = Vec::new();
        for task in &self.tasks {
            let want = &expected[&task.id];
            let (key, cache, predicted) = rows
                .get(task.id.as_str())
                .copied()
                .unwrap_or(("none", "", None));
            self.stats.predicted += u64::from(predicted.is_some());
            let Some(want_key) = &want.key else {
                // A build that would run without history decides this key: unknown.
                if key != "null" {
                    problems.push(format!(
                        "{}: --dry gives key {key}, which no history can predict",
                        task.id
                    ));
                }
                continue;
            };
            if key != want_key {
                let verdict = if self.is_saved(&task.id, key) {
                    "WRONG HIT: vx's key has an entry saved for other inputs"
                } else {
                    "unstable key: a wrong miss"
                };
                problems.push(format!(
                    "{}: {verdict}\n    vx key        {key}\n    reference key {}\n    \
                     reference inputs:\n{}",
                    task.id,
                    want_key,
                    describe(&want.inputs)
                ));
                continue;
            }
            let hit = self.is_saved(&task.id, key);
            if let Some(hit_if_unchanged) = predicted {
                // Counted as running; a hit only if the assumed upstreams reproduce.
                if cache != "miss" || hit_if_unchanged != hit {
                    problems.push(format!(
                        "{}: a prediction of early cutoff says `{cache}`, hit_if_unchanged \
                         {hit_if_unchanged}; the reference: an entry {hit} (key {key})",
                        task.id
                    ));
                }
                self.stats.decisions += 1;
                continue;
            }
            let predicted = match (task.cached, hit) {
                (false, _) => "no-cache",
                (true, true) => "hit-local",
                (true, false) => "miss",
            };
            self.stats.decisions += 1;
            self.stats.hits += u64::from(predicted == "hit-local");
            self.stats.misses += u64::from(predicted == "miss");
            if cache != predicted {
                let verdict = if cache == "hit-local" {
                    "WRONG HIT"
                } else {
                    "wrong status"
                };
                problems.push(format!(
                    "{}: {verdict}: --dry says `{cache}`, the reference `{predicted}` (key {key})",
                    task.id
                ));
            }
        }
        if !problems.is_empty() {
            self.fail(&problems.join("\n"));
        }
        self.log.push(format!("check {}: ok", self.stats.checks));
    }

    /// A real run: its one-liners must agree with the reference, and every cached task is
    /// saved under its key afterwards.
    fn real_run(&mut self) {
        self.stats.runs += 1;
        let expected = self.reference(Reference::Run);
        let run = self.vx(&["--output-logs", "hash-only"]);
        self.stats.cut_off += run
            .stdout
            .split_once(" · cut off: ")
            .and_then(|(_, rest)| rest.split(' ').next()?.parse::<u64>().ok())
            .unwrap_or(0);
        // `► 0ms success up-to-date p0#build  3f9c0a1b2c4d`, `⇢ 0ms success local p1#build
        // 91aa07e4b810`, `⏺ … miss …`: the outcome, and the short key that came with it.
        let outcomes: HashMap<&str, (String, &str)> = run
            .stdout
            .lines()
            .filter_map(
                |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                    [.., outcome, kind, id, key] if id.contains('#') => {
                        Some((id, (format!("{outcome} {kind}"), key)))
                    }
                    _ => None,
                },
            )
            .collect();
        let mut problems: Vec<String> = run
            .stderr
            .lines()
            .filter(|l| !l.contains("no file matches"))
            .map(|l| format!("unexpected message, as nothing changed during the run: {l}"))
            .collect();
        let mut executed = HashSet::new();
        for task in &self.tasks {
            let key = expected[&task.id]
                .key
                .as_ref()
                .expect("a real run's reference knows every key");
            let hit = self.is_saved(&task.id, key);
            let allowed: &[&str] = match (task.cached, hit) {
                (false, _) => &["success no-cache"],
                (true, true) => &["success up-to-date", "success local"],
                (true, false) => &["success miss"],
            };
            let (got, short) = outcomes
                .get(task.id.as_str())
                .map_or(("(no line)", ""), |(o, k)| (o.as_str(), *k));
            if got == "success miss" {
                executed.insert(task.id.clone());
            }
            if !allowed.contains(&got) {
                let verdict = if hit { "wrong outcome" } else { "WRONG HIT" };
                problems.push(format!(
                    "{}: {verdict}: the run says `{got}`, the reference expects {allowed:?} (key {key})",
                    task.id
                ));
            } else if !key.starts_with(short) || short.len() != 12 {
                problems.push(format!(
                    "{}: the run used key {short}, the reference's is {key}",
                    task.id
                ));
            }
        }
        if !problems.is_empty() {
            self.fail(&format!("{}\nstdout:\n{}", problems.join("\n"), run.stdout));
        }
        for task in self.tasks.iter().filter(|t| t.cached) {
            let key = expected[&task.id].key.clone().expect("known");
            if task.id.ends_with("#build") {
                let list = std::fs::read(self.f.path(&format!("{}/out/list.txt", task.dir)))
                    .unwrap_or_else(|e| self.fail(&format!("{}: no out/list.txt ({e})", task.id)));
                let digest = out_digest(&list);
                if executed.contains(&task.id) {
                    self.latest.insert(task.id.clone(), digest.clone());
                }
                self.produced.insert((task.id.clone(), key.clone()), digest);
            }
            self.saved.entry(task.id.clone()).or_default().insert(key);
        }
        self.log.push(format!("run {}: ok", self.stats.runs));
    }

    fn fail(&self, what: &str) -> ! {
        let kept = std::env::temp_dir().join(format!("vx-fuzz-{:x}", self.seed));
        let _ = std::fs::remove_dir_all(&kept);
        let copied = Command::new("cp")
            .arg("-a")
            .arg(self.f.root())
            .arg(&kept)
            .status()
            .is_ok_and(|s| s.success());
        let start = self.log.len().saturating_sub(80);
        panic!(
            "key fuzzing failed (seed {seed:#x}, after {edits} edits; reproduce with \
             VX_FUZZ_SEED={seed:#x} VX_FUZZ_EDITS={edits})\n{what}\n\nthe edit log's last \
             entries:\n{log}\n\nworkspace {kept}",
            seed = self.seed,
            edits = self.stats.edits,
            log = self.log[start..].join("\n"),
            kept = if copied {
                format!("kept at {}", kept.display())
            } else {
                "not kept".to_string()
            },
        )
    }
}

mod edits;
mod outputs;
mod workspace;

use outputs::out_digest;

/// The stdout of a git command that must succeed.
fn git(root: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new("git")
        .args(args)
        .current_dir(root)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stderr(Stdio::inherit())
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?} failed");
    out.stdout
}

/// The reference inputs, one per line, for a failure message.
fn describe(inputs: &[InputFile]) -> String {
    let lines: Vec<String> = inputs
        .iter()
        .map(|i| format!("      {} {:.12} {}", i.mode, i.blob, i.path))
        .collect();
    lines.join("\n")
}

fn set_mtime(path: &Path, mtime: SystemTime) -> io::Result<()> {
    std::fs::File::options()
        .write(true)
        .open(path)?
        .set_modified(mtime)
}

/// Sleeps until the file's last change is 20 ms old, so a rewrite gets a later ctime tick.
fn wait_past_ctime(meta: &std::fs::Metadata) {
    let ctime = std::time::UNIX_EPOCH
        + Duration::new(meta.ctime().max(0) as u64, meta.ctime_nsec().max(0) as u32);
    let ready = ctime + Duration::from_millis(20);
    if let Ok(wait) = ready.duration_since(SystemTime::now()) {
        std::thread::sleep(wait);
    }
}
