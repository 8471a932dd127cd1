//! The root lockfiles as keys fold them (KEY-3): for each project, the digest of the
//! packages it installs (`vx_workspace::lockfile`) instead of the whole file.
//!
//! How this works: a key asks for (lockfile, blob id, project directory). The digests of
//! every project for one (lockfile, blob id) are read from a small memo file in the store
//! directory (`lockfiles/`), else the lockfile is parsed (a large `pnpm-lock.yaml` makes that
//! the slowest step of a warm run) and each project's digest computed when a key first asks
//! for it; the end of the run computes the rest and writes the memo. The
//! package lists themselves, which `vx why` shows, are parsed only when an executed task's
//! key is recorded, and then only that task's project's closure is walked (at 5,000 members,
//! walking every member's took 370 ms of the run loop for the first executed task). A
//! lockfile vx cannot read is folded whole, with one notice per run.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use vx_core::key::{hex, Component, DependencySet};
use vx_core::Workspace;
use vx_workspace::lockfile::{self, Lockfile};

/// Bumped when what a memo file holds, or how its digests are computed, changes.
const MEMO_FORMAT: &str = "vx-lockfile-memo-1";

/// Every project's digest for one lockfile at one blob id.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Digests {
    format: String,
    root: String,
    sets: BTreeMap<String, String>,
}

/// One lockfile's digests at one blob id: all of them from a memo, or computed a project at a
/// time from the parsed file (`lock`) as keys ask, the rest at the end of the run
/// ([`Lockfiles::write_memos`]). At 5,000 members, computing every project's set before the
/// first key took 150 ms of the time to the first task.
struct Known {
    digests: Digests,
    /// The parsed file and the projects it lists, when the digests are being computed.
    lock: Option<(Arc<Lockfile>, HashSet<String>)>,
    /// Where the memo goes once every set is computed.
    memo: Option<PathBuf>,
}

impl Known {
    fn digest(&mut self, dir: &str) -> &String {
        if let Some((lock, listed)) = &self.lock {
            if listed.contains(dir) && !self.digests.sets.contains_key(dir) {
                let digest = lock.project(dir).digest.clone();
                self.digests.sets.insert(dir.to_string(), digest);
            }
        }
        self.digests.sets.get(dir).unwrap_or(&self.digests.root)
    }
}

pub struct Lockfiles {
    root: PathBuf,
    /// Root-relative directories of the projects, the root's ("") among them.
    members: Vec<String>,
    /// Where memo files are kept; `None` keeps nothing between runs.
    memo_dir: Option<PathBuf>,
    /// By lockfile name: the blob id last asked for and its digests (`None`: not readable).
    /// Keyed by name so the per-key lookup allocates nothing.
    digests: HashMap<String, (String, Option<Known>)>,
    parsed: HashMap<(String, String), Result<Arc<Lockfile>, String>>,
    /// Lockfiles whose fallback was announced this run.
    told: HashSet<String>,
}

impl Lockfiles {
    pub fn new(workspace: &Workspace, memo_dir: Option<PathBuf>) -> Lockfiles {
        let mut members: Vec<String> = workspace.projects.iter().map(|p| p.dir.clone()).collect();
        members.push(String::new());
        members.sort();
        members.dedup();
        Lockfiles {
            root: workspace.root.clone(),
            members,
            memo_dir,
            digests: HashMap::new(),
            parsed: HashMap::new(),
            told: HashSet::new(),
        }
    }

    /// What field 4 folds for `file` at `blob` in a key of the project in `dir`: its
    /// dependency set's digest, or `None` to fold the blob id (the file is not read per
    /// project, or could not be read; then a line for `notices` says so once).
    pub fn digest(
        &mut self,
        file: &str,
        blob: &str,
        dir: &str,
        notices: &mut Vec<crate::outcome::Notice>,
    ) -> Option<String> {
        if !lockfile::is_lockfile(file) {
            return None;
        }
        if self.digests.get(file).is_none_or(|(b, _)| b != blob) {
            let found = self.load_digests(file, blob, notices);
            if let Some((_, Some(replaced))) = self
                .digests
                .insert(file.to_string(), (blob.to_string(), found))
            {
                write_memo_of(replaced);
            }
        }
        let known = self.digests.get_mut(file)?.1.as_mut()?;
        Some(known.digest(dir).clone())
    }

    /// Completes the digests computed this run (every project the lockfile lists) and writes
    /// their memos, for the next run to read instead of parsing; the end of a run.
    pub fn write_memos(&mut self) {
        for (_, (_, known)) in self.digests.drain() {
            if let Some(known) = known {
                write_memo_of(known);
            }
        }
    }

    /// `vx why`'s components of the dependency sets a key folds: one per package name, its
    /// versions as the digest. `workspace` is the key's field 4.
    pub fn components(&mut self, workspace: &[(String, String)], dir: &str) -> Vec<Component> {
        let mut versions: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (file, folded) in workspace {
            if !folded.starts_with("deps ") {
                continue;
            }
            // The blob whose digests gave this value: the lockfile as the key saw it.
            let Some(blob) = self
                .digests
                .get(file)
                .filter(|(_, d)| {
                    d.as_ref().is_some_and(|d| {
                        d.digests.sets.get(dir).unwrap_or(&d.digests.root) == folded
                    })
                })
                .map(|(b, _)| b.clone())
            else {
                continue;
            };
            let Ok(lock) = self.parsed(file, &blob) else {
                continue;
            };
            let set: Arc<DependencySet> = lock.project(dir);
            for (name, version) in &set.packages {
                versions
                    .entry(name.clone())
                    .or_default()
                    .push(version.clone());
            }
        }
        versions
            .into_iter()
            .map(|(name, versions)| Component {
                kind: "dependency".into(),
                name,
                digest: versions.join(" "),
            })
            .collect()
    }

    fn load_digests(
        &mut self,
        file: &str,
        blob: &str,
        notices: &mut Vec<crate::outcome::Notice>,
    ) -> Option<Known> {
        let memo = self.memo_path(file, blob);
        if let Some(found) = memo.as_deref().and_then(read_memo) {
            return Some(Known {
                digests: found,
                lock: None,
                memo: None,
            });
        }
        let lock = match self.parsed(file, blob) {
            Ok(lock) => lock,
            Err(reason) => {
                if self.told.insert(file.to_string()) {
                    notices.push(crate::outcome::Notice::Note(format!(
                        "{file}: {reason}; every task folds the whole file"
                    )));
                }
                return None;
            }
        };
        let digests = Digests {
            format: MEMO_FORMAT.into(),
            root: lock.unlisted().digest.clone(),
            sets: BTreeMap::new(),
        };
        let listed = lock.importers().into_iter().map(str::to_string).collect();
        Some(Known {
            digests,
            lock: Some((lock, listed)),
            memo,
        })
    }

    /// The lockfile parsed, once per run, or why it cannot be read.
    fn parsed(&mut self, file: &str, blob: &str) -> Result<Arc<Lockfile>, String> {
        let id = (file.to_string(), blob.to_string());
        if let Some(found) = self.parsed.get(&id) {
            return found.clone();
        }
        let found = self.parse(file).map(Arc::new);
        self.parsed.insert(id, found.clone());
        found
    }

    fn parse(&self, file: &str) -> Result<Lockfile, String> {
        let bytes = fs_err::read(self.root.join(file)).map_err(|e| e.to_string())?;
        let members: Vec<&str> = self.members.iter().map(String::as_str).collect();
        let root = &self.root;
        let manifest =
            |dir: &str| std::fs::read_to_string(root.join(dir).join("package.json")).ok();
        lockfile::read(file, &bytes, &members, &manifest).map_err(|e| e.to_string())
    }

    /// The memo file for `file` at `blob`. For `yarn.lock`, whose members' dependencies
    /// come from their manifests, the manifests' bytes are part of its name.
    fn memo_path(&self, file: &str, blob: &str) -> Option<PathBuf> {
        let dir = self.memo_dir.as_ref()?;
        let mut hasher = blake3::Hasher::new();
        for part in [MEMO_FORMAT, file, blob] {
            hasher.update(part.as_bytes());
            hasher.update(&[0]);
        }
        if file == "yarn.lock" {
            for member in &self.members {
                hasher.update(member.as_bytes());
                hasher.update(&[0]);
                let manifest = self.root.join(member).join("package.json");
                hasher.update(&std::fs::read(manifest).unwrap_or_default());
                hasher.update(&[0]);
            }
        }
        let name = format!("{file}-{}.json", &hex(hasher.finalize().as_bytes())[..32]);
        Some(dir.join(name))
    }
}

/// Every listed project's digest computed (`project` keeps each set: a cold run records its
/// executed tasks' package lists, `components`, from the same sets), then the memo written.
fn write_memo_of(mut known: Known) {
    let (Some(memo), Some((lock, listed))) = (known.memo.take(), known.lock.take()) else {
        return;
    };
    for dir in &listed {
        if !known.digests.sets.contains_key(dir) {
            let digest = lock.project(dir).digest.clone();
            known.digests.sets.insert(dir.clone(), digest);
        }
    }
    write_memo(&memo, &known.digests);
}

fn read_memo(path: &Path) -> Option<Digests> {
    let text = std::fs::read_to_string(path).ok()?;
    let digests: Digests = serde_json::from_str(&text).ok()?;
    (digests.format == MEMO_FORMAT).then_some(digests)
}

/// Writes the memo (temp file, then rename) and removes the older memos of the same
/// lockfile; a failure only costs the next run a parse.
fn write_memo(path: &Path, digests: &Digests) {
    let Some(dir) = path.parent() else {
        return;
    };
    let Ok(text) = serde_json::to_string(digests) else {
        return;
    };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let prefix = name.rsplit_once('-').map_or("", |(file, _)| file);
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let other = entry.file_name();
            let other = other.to_string_lossy();
            if other != name && other.rsplit_once('-').map(|(f, _)| f) == Some(prefix) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    let temp = dir.join(format!(".{name}.{}", std::process::id()));
    if std::fs::write(&temp, text).is_ok() && std::fs::rename(&temp, path).is_err() {
        let _ = std::fs::remove_file(&temp);
    }
}
