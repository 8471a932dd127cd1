//! `--shard K/N` (SCHED-8): what every runner of one sharded run must share to compute the same
//! split — each task's expected duration and, under `--affected=last-green`, the base — and how
//! the runners agree on it through the remote cache.
//!
//! # How this works
//!
//! Each runner *proposes* inputs: a task's duration is the median of its recent executions on
//! this machine, else the one in the *durations record* of the branch built, the branch a pull
//! request targets or a default branch (`green::branches`), which every part of a sharded run
//! updates at its end with the tasks it owns (read, merged, written back: two parts ending
//! together may lose one part's update, which only leaves older figures). A task nobody
//! recorded counts as the median of the known ones; with none known, every task counts the
//! same and the split balances task counts.
//!
//! The runners then agree through the *split record* of (scope, HEAD, N): a runner that finds
//! one adopts it; one that finds none writes its proposal, waits [`SETTLE_MIN`] (or four times
//! the write's round trip), reads the record back and adopts what it holds, so runners that
//! start together adopt the last one written. A re-run of the job at the same commit adopts the
//! same record. At its end a runner reads the record again (`verify`): if a runner that started
//! at the same moment replaced it after the settle, the tasks this part owns under the record's
//! split but did not run may have run nowhere, and the run fails naming them rather than
//! report a green it cannot vouch for (running the job again adopts the record).
//!
//! A runner that cannot read the split record at its start, or whose proposal the remote cache
//! refuses, runs the whole plan ([`Agreement::Failed`]): slower, but no task is left to a split
//! the others may not share, and no remote failure fails the run. A remote cache that can be
//! read but not written (a fork's pull request) cannot hold a proposal: its runners adopt a split
//! record when there is one, else split by task counts (the durations records may change between
//! two runners' reads). Without a remote cache the runners cannot share anything, and the split
//! counts tasks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use vx_store::layer::{fetch_record, put_record, record_key, RecordLayer};
use vx_store::{Access, Store};

use crate::outcome::Notice;

/// The format of both records.
const FORMAT: u32 = 1;
/// The shortest and the longest wait between writing a proposal and reading the split record
/// back.
const SETTLE_MIN: Duration = Duration::from_millis(500);
const SETTLE_MAX: Duration = Duration::from_secs(10);

/// A last-green base the parts agreed on: the commit (or `affected::GREEN_NONE`) and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgreedBase {
    pub commit: String,
    pub why: String,
}

/// The split record: the inputs of one sharded run's split.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct SplitRecord {
    format: u32,
    scope: String,
    commit: String,
    n: u32,
    /// Expected milliseconds per task id (only tasks with a recorded duration).
    durations: BTreeMap<String, u64>,
    /// Where the durations came from, in words.
    source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    base: Option<AgreedBase>,
}

/// The durations record of a scope on a branch.
#[derive(Debug, Default, Serialize, Deserialize)]
struct DurationsRecord {
    format: u32,
    scope: String,
    branch: String,
    durations: BTreeMap<String, u64>,
}

/// How this runner came by its split's inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agreement {
    /// Read from the split record another runner (or an earlier attempt) wrote.
    Adopted,
    /// Proposed by this runner and read back.
    Written,
    /// Nothing agreed: task counts, which every runner computes alike (a remote cache this run
    /// cannot write, no commit), or `--dry`'s view of a proposal.
    Shared,
    /// No remote cache: task counts.
    Alone,
    /// The remote cache could not be read or written to agree: this runner runs the whole
    /// plan, so that no task is left to a split the others may not share.
    Failed,
}

/// The inputs this runner's split was computed from.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub durations: BTreeMap<String, u64>,
    /// Where the durations came from (`this machine's history and the remote cache's records
    /// of main`), or why there are none.
    pub source: String,
    pub base: Option<AgreedBase>,
    pub agreement: Agreement,
    /// The split record's digest (empty when there is none: nothing to check at the end).
    pub digest: String,
}

/// Where the records live and what they are about.
pub struct Place {
    pub cache_dir: PathBuf,
    /// `green::scope_words` and the `--affected` flag: what the split record is about.
    pub scope: String,
    /// `green::scope_words`: what the durations records are about.
    pub tasks: String,
    /// `--dry`: adopts a split record, never writes one.
    pub dry: bool,
    /// HEAD, when the workspace is a git repository with a commit.
    pub commit: Option<String>,
    pub n: u32,
    /// The branches whose durations records are read (the first is written).
    pub branches: Vec<String>,
    pub remote: Option<RecordLayer>,
}

impl Place {
    fn tmp(&self) -> PathBuf {
        self.cache_dir.join("tmp")
    }

    fn split_key(&self, commit: &str) -> String {
        record_key(&["vx shard split 1", &self.scope, commit, &self.n.to_string()])
    }
}

fn digest(record: &SplitRecord) -> String {
    let bytes = serde_json::to_vec(record).expect("a split record serializes");
    blake3::hash(&bytes).to_hex()[..16].to_string()
}

fn parse_split(bytes: &[u8], place: &Place, commit: &str) -> Option<SplitRecord> {
    serde_json::from_slice::<SplitRecord>(bytes)
        .ok()
        .filter(|r| {
            r.format == FORMAT && r.scope == place.scope && r.commit == commit && r.n == place.n
        })
}

fn parse_durations(bytes: &[u8], scope: &str, branch: &str) -> Option<DurationsRecord> {
    serde_json::from_slice::<DurationsRecord>(bytes)
        .ok()
        .filter(|r| r.format == FORMAT && r.scope == scope && r.branch == branch)
}

/// The median of each task's recent executions on this machine (`project#task` → ms).
pub fn local_durations(cache_dir: &Path) -> BTreeMap<String, u64> {
    let Ok(store) = Store::open(cache_dir, Access::ReadOnly) else {
        return BTreeMap::new();
    };
    store
        .recent_executions()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|((project, task), recent)| {
            let ms = vx_core::schedule::median(&recent.durations_ms)?;
            Some((format!("{project}#{task}"), ms))
        })
        .collect()
}

/// What the remote holds at the start: the split record (when HEAD is known) and each
/// branch's durations record, read at once.
struct Read {
    split: Option<SplitRecord>,
    /// Why the split record could not be read.
    split_failed: Option<String>,
    durations: Vec<(String, BTreeMap<String, u64>)>,
    failed: Option<String>,
}

fn read_remote(place: &Place) -> Read {
    let mut read = Read {
        split: None,
        split_failed: None,
        durations: Vec::new(),
        failed: None,
    };
    let Some(remote) = place.remote.as_ref().filter(|r| r.read) else {
        return read;
    };
    let layer = remote.layer.as_ref();
    let tmp = place.tmp();
    let tmp = &tmp;
    std::thread::scope(|s| {
        let split = place.commit.as_deref().map(|commit| {
            s.spawn(move || {
                fetch_torn_again(|| fetch_record(layer, &place.split_key(commit), tmp))
                    .map(|found| found.and_then(|bytes| parse_split(&bytes, place, commit)))
            })
        });
        let branches: Vec<_> = place
            .branches
            .iter()
            .map(|branch| {
                let scope = place.tasks.as_str();
                s.spawn(move || {
                    let found = fetch_record(layer, &durations_key(scope, branch), tmp)?;
                    Ok::<_, vx_store::layer::LayerError>(
                        found
                            .and_then(|bytes| parse_durations(&bytes, scope, branch))
                            .map(|r| (branch.clone(), r.durations)),
                    )
                })
            })
            .collect();
        if let Some(job) = split {
            match job.join() {
                Ok(Ok(found)) => read.split = found,
                Ok(Err(e)) => read.split_failed = Some(e.to_string()),
                Err(_) => read.split_failed = Some("the read panicked".into()),
            }
        }
        for job in branches {
            match job.join() {
                Ok(Ok(found)) => read.durations.extend(found),
                Ok(Err(e)) => read.failed = Some(e.to_string()),
                Err(_) => {}
            }
        }
    });
    read
}

/// `fetch`, asked again (twice, a moment apart) while what arrives is not a whole artifact: a
/// server that writes a record in place (turborepo-remote-cache's local storage) serves it torn
/// while another runner is writing it, which the runner writing the split does at once.
fn fetch_torn_again<T>(
    mut fetch: impl FnMut() -> Result<T, vx_store::layer::LayerError>,
) -> Result<T, vx_store::layer::LayerError> {
    let mut tries = 0;
    loop {
        match fetch() {
            Err(e) if e.kind == vx_store::layer::ErrorKind::InvalidArtifact && tries < 2 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(150));
            }
            other => return other,
        }
    }
}

fn durations_key(scope: &str, branch: &str) -> String {
    record_key(&["vx shard durations 1", scope, branch])
}

/// This runner's proposal: durations of `tasks` from `local` (when given), else the branches'
/// records in order, and the words that say where they came from.
fn propose(
    tasks: &[String],
    local: Option<&BTreeMap<String, u64>>,
    records: &[(String, BTreeMap<String, u64>)],
) -> (BTreeMap<String, u64>, String) {
    let mut durations = BTreeMap::new();
    let mut from_local = false;
    let mut from_branch = vec![false; records.len()];
    for task in tasks {
        if let Some(&ms) = local.and_then(|l| l.get(task)) {
            durations.insert(task.clone(), ms);
            from_local = true;
            continue;
        }
        for (i, (_, record)) in records.iter().enumerate() {
            if let Some(&ms) = record.get(task) {
                durations.insert(task.clone(), ms);
                from_branch[i] = true;
                break;
            }
        }
    }
    let mut whence = Vec::new();
    if from_local {
        whence.push("this machine's history".to_string());
    }
    let branches: Vec<&str> = records
        .iter()
        .zip(from_branch)
        .filter(|(_, used)| *used)
        .map(|((branch, _), _)| branch.as_str())
        .collect();
    if !branches.is_empty() {
        whence.push(format!(
            "the remote cache's records of {}",
            branches.join(", ")
        ));
    }
    let source = if durations.is_empty() {
        "no runner has recorded durations of these tasks yet".to_string()
    } else {
        whence.join(" and ")
    };
    (durations, source)
}

/// Agrees with the other runners on the split's inputs (see the module documentation).
/// `tasks` are the ids whose durations matter; `base` is this runner's own last-green base.
pub fn agree(place: &Place, tasks: &[String], base: Option<AgreedBase>) -> (Inputs, Vec<Notice>) {
    let mut notices = Vec::new();
    let remote = place.remote.as_ref().filter(|r| r.read);
    let Some(remote) = remote else {
        let inputs = Inputs {
            durations: BTreeMap::new(),
            source: "without a remote cache the runners cannot share durations".into(),
            base,
            agreement: Agreement::Alone,
            digest: String::new(),
        };
        return (inputs, notices);
    };
    let read = read_remote(place);
    if let Some(e) = &read.failed {
        notices.push(Notice::warning(format!(
            "--shard: the remote cache {} could not be read ({e}); earlier runs' durations are not used",
            remote.layer.name()
        )));
    }
    if let Some(record) = read.split {
        return (adopt(record, Agreement::Adopted), notices);
    }
    // Only a runner that can propose uses this machine's history, which the others lack.
    let proposes = remote.write && place.commit.is_some();
    let local = proposes.then(|| local_durations(&place.cache_dir));
    let (durations, source) = propose(tasks, local.as_ref(), &read.durations);
    let mut proposal = SplitRecord {
        format: FORMAT,
        scope: place.scope.clone(),
        commit: place.commit.clone().unwrap_or_default(),
        n: place.n,
        durations,
        source,
        base,
    };
    if place.dry {
        // What a run would propose, shown; nothing agreed.
        let mut inputs = adopt(proposal, Agreement::Shared);
        inputs.digest = String::new();
        return (inputs, notices);
    }
    let failed = |why: String, proposal: SplitRecord, mut notices: Vec<Notice>| {
        notices.push(Notice::warning(format!(
            "--shard: {why}; this runner runs the whole plan, so that no task is left to a split the other runners may not share"
        )));
        let mut inputs = adopt(proposal, Agreement::Failed);
        inputs.digest = String::new();
        (inputs, notices)
    };
    if let Some(e) = read.split_failed {
        let why = format!(
            "the remote cache {} could not be read for the runners' split ({e})",
            remote.layer.name()
        );
        return failed(why, proposal, notices);
    }
    let Some(commit) = place.commit.as_deref().filter(|_| proposes) else {
        // Nothing to agree through: only what cannot differ between runners, the task counts
        // (the durations records may change between two runners' reads).
        proposal.durations.clear();
        proposal.source = if place.commit.is_none() {
            "without a commit the runners cannot record a split".into()
        } else {
            "a remote cache this run cannot write cannot hold the runners' split".into()
        };
        let mut inputs = adopt(proposal, Agreement::Shared);
        inputs.digest = String::new();
        return (inputs, notices);
    };
    let body = serde_json::to_vec(&proposal).expect("a split record serializes");
    let key = place.split_key(commit);
    let tmp = place.tmp();
    let layer = remote.layer.as_ref();
    let started = Instant::now();
    if let Err(e) = put_record(layer, &key, "vx#shard-split", &body, &tmp) {
        let why = format!(
            "the remote cache {} did not take this runner's split ({e})",
            layer.name()
        );
        return failed(why, proposal, notices);
    }
    std::thread::sleep((started.elapsed() * 4).clamp(SETTLE_MIN, SETTLE_MAX));
    match fetch_record(layer, &key, &tmp) {
        Ok(back) => match back.and_then(|bytes| parse_split(&bytes, place, commit)) {
            Some(record) if record != proposal => (adopt(record, Agreement::Adopted), notices),
            _ => (adopt(proposal, Agreement::Written), notices),
        },
        Err(e) => {
            let why = format!(
                "the remote cache {} could not be read back for the runners' split ({e})",
                layer.name()
            );
            failed(why, proposal, notices)
        }
    }
}

/// `--dry --shard auto`: durations from this machine's history and the remote's durations
/// records, for a prediction (nothing is agreed or written).
pub fn estimate(place: &Place, tasks: &[String]) -> (Inputs, Vec<Notice>) {
    let mut notices = Vec::new();
    let read = read_remote(&Place {
        commit: None,
        cache_dir: place.cache_dir.clone(),
        scope: place.scope.clone(),
        tasks: place.tasks.clone(),
        dry: true,
        n: place.n,
        branches: place.branches.clone(),
        remote: place.remote.clone(),
    });
    if let (Some(e), Some(remote)) = (&read.failed, &place.remote) {
        notices.push(Notice::warning(format!(
            "--shard auto: the remote cache {} could not be read ({e}); using this machine's history only",
            remote.layer.name()
        )));
    }
    let local = local_durations(&place.cache_dir);
    let (durations, source) = propose(tasks, Some(&local), &read.durations);
    let inputs = Inputs {
        durations,
        source,
        base: None,
        agreement: Agreement::Shared,
        digest: String::new(),
    };
    (inputs, notices)
}

fn adopt(record: SplitRecord, agreement: Agreement) -> Inputs {
    Inputs {
        digest: digest(&record),
        durations: record.durations,
        source: record.source,
        base: record.base,
        agreement,
    }
}

/// At the end of a run: the split record as it is now, when it is not the one this runner
/// adopted (another runner replaced it after this one's settle); `Err` when it cannot be read.
pub fn verify(place: &Place, inputs: &Inputs) -> Result<Option<Inputs>, String> {
    if inputs.digest.is_empty() {
        return Ok(None);
    }
    let Some(remote) = place.remote.as_ref().filter(|r| r.read) else {
        return Err("the remote cache is not read any more".into());
    };
    let Some(commit) = place.commit.as_deref() else {
        return Ok(None);
    };
    let key = place.split_key(commit);
    let bytes = fetch_record(remote.layer.as_ref(), &key, &place.tmp())
        .map_err(|e| e.to_string())?
        .ok_or("the split record is gone")?;
    let record = parse_split(&bytes, place, commit).ok_or("the split record is not valid")?;
    let now = adopt(record, Agreement::Adopted);
    Ok((now.digest != inputs.digest).then_some(now))
}

/// At the end of a part's run: merges the durations of the tasks it owns into the durations
/// record of the branch built (`place.branches[0]`). Returns what went wrong, as a line.
pub fn publish(place: &Place, measured: &BTreeMap<String, u64>) -> Option<Notice> {
    let remote = place.remote.as_ref().filter(|r| r.write)?;
    let branch = place.branches.first()?;
    if measured.is_empty() {
        return None;
    }
    let layer = remote.layer.as_ref();
    let key = durations_key(&place.tasks, branch);
    let tmp = place.tmp();
    let mut record = if remote.read {
        fetch_record(layer, &key, &tmp)
            .ok()
            .flatten()
            .and_then(|bytes| parse_durations(&bytes, &place.tasks, branch))
            .unwrap_or_default()
    } else {
        DurationsRecord::default()
    };
    record.format = FORMAT;
    record.scope = place.tasks.clone();
    record.branch = branch.clone();
    record
        .durations
        .extend(measured.iter().map(|(k, v)| (k.clone(), *v)));
    let body = serde_json::to_vec(&record).expect("a durations record serializes");
    put_record(layer, &key, "vx#shard-durations", &body, &tmp)
        .err()
        .map(|e| {
            Notice::warning(format!(
                "remote cache {}: could not record this part's durations for later splits ({e})",
                layer.name()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    /// A record read torn while its writer writes it is read again; other failures are not.
    #[test]
    fn a_torn_split_record_is_read_again_and_other_failures_are_not() {
        use vx_store::layer::{ErrorKind, LayerError};
        let answers = |kinds: Vec<Option<ErrorKind>>| {
            let mut left = kinds.into_iter();
            let mut calls = 0;
            let got = fetch_torn_again(|| {
                calls += 1;
                match left.next().flatten() {
                    Some(kind) => Err(LayerError::new(kind, "x")),
                    None => Ok(calls),
                }
            });
            (got.map_err(|e| e.kind), calls)
        };
        let torn = Some(ErrorKind::InvalidArtifact);
        assert_eq!(answers(vec![torn, torn, None]), (Ok(3), 3));
        assert_eq!(
            answers(vec![torn, torn, torn]),
            (Err(ErrorKind::InvalidArtifact), 3)
        );
        let refused = Some(ErrorKind::Connection);
        assert_eq!(
            answers(vec![refused, None]),
            (Err(ErrorKind::Connection), 1)
        );
    }

    #[test]
    fn a_proposal_prefers_this_machine_then_the_branches_in_order() {
        let tasks: Vec<String> = ["a#build", "b#build", "c#build", "d#build"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let local = map(&[("a#build", 10)]);
        let records = vec![
            ("feat".to_string(), map(&[("a#build", 99), ("b#build", 20)])),
            ("main".to_string(), map(&[("b#build", 98), ("c#build", 30)])),
        ];
        let (durations, source) = propose(&tasks, Some(&local), &records);
        assert_eq!(
            durations,
            map(&[("a#build", 10), ("b#build", 20), ("c#build", 30)])
        );
        assert_eq!(
            source,
            "this machine's history and the remote cache's records of feat, main"
        );
        let (none, said) = propose(&tasks, None, &[]);
        assert!(none.is_empty());
        assert!(said.contains("no runner"), "{said}");
    }

    #[test]
    fn split_keys_differ_by_scope_commit_and_parts() {
        let place = |scope: &str, commit: &str, n: u32| {
            let p = Place {
                cache_dir: PathBuf::from("/tmp"),
                scope: scope.into(),
                tasks: scope.into(),
                dry: false,
                commit: Some(commit.into()),
                n,
                branches: Vec::new(),
                remote: None,
            };
            p.split_key(commit)
        };
        let one = place("vx run build", "abc", 4);
        assert_ne!(one, place("vx run test", "abc", 4));
        assert_ne!(one, place("vx run build", "abd", 4));
        assert_ne!(one, place("vx run build", "abc", 2));
        assert_ne!(one, durations_key("vx run build", "abc"));
    }
}
