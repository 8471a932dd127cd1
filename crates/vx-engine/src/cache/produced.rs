//! KEY-9's outputs record: what the entries of upstream tasks produced, kept in the remote
//! cache per branch and platform, so that a runner can take every key of a run before the
//! entries they fold have arrived (`keys/hints.rs`) and `--dry` can say what an entry only the
//! remote holds produced.
//!
//! How it works: the records of the branches a run reads (`green::branches`: the branch built,
//! the one a pull request targets, the defaults) are read in the background from the start of
//! the run, and waited for only when a download needs them. A run that writes to the remote
//! writes its branch's record at its end, while its uploads drain: the (entry key, produced)
//! facts of this run's upstream tasks first, then those the record held that this run did not
//! settle, up to [`MAX_FACTS`]. A fact is true of the entry whoever wrote it, so records of
//! other commits, branches or workspaces sharing the server only help or cost a download; two
//! runs writing at once lose one's new facts, which the next run writes again. A record that
//! cannot be read is never overwritten.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use vx_store::layer::{fetch_record, put_record, RecordLayer};

/// At most this many facts per record (64 bytes each: the record stays under its 1 MiB cap).
pub const MAX_FACTS: usize = 12_000;

/// How long a run waits for the records when a download needs them (the read started with
/// the run: this is the server's round trip at worst). Past it, keys wait for their upstreams.
const FETCH_WAIT: Duration = Duration::from_secs(3);

const HEADER: &[u8] = b"vx produced 1\n";

/// What was read: the facts of every branch's record, and the pairs of the first branch's
/// record (`None` when it could not be read: then it is not written either).
struct Fetched {
    facts: HashMap<String, String>,
    /// Every digest the facts name as produced.
    produced: HashSet<String>,
    /// How many of the records asked for exist.
    found: usize,
    own: Option<Vec<(String, String)>>,
}

enum State {
    /// Not started: the branches to read, when known.
    Idle,
    Reading(Receiver<Fetched>),
    Read(Fetched),
    /// Nothing to read (no remote that reads), or the read took too long.
    Off,
}

pub(super) struct OutputsRecord {
    branches: Vec<String>,
    state: State,
    /// The facts were handed to the keys already.
    given: bool,
}

impl OutputsRecord {
    pub(super) fn new() -> OutputsRecord {
        OutputsRecord {
            branches: Vec::new(),
            state: State::Idle,
            given: false,
        }
    }

    /// The branches whose records are read (the first is written).
    pub(super) fn set_branches(&mut self, branches: Vec<String>) {
        self.branches = branches;
    }

    /// Starts reading the records from `layer` in the background, once.
    pub(super) fn start(&mut self, layer: Option<RecordLayer>, tmp: PathBuf) {
        if !matches!(self.state, State::Idle) {
            return;
        }
        let Some(layer) = layer.filter(|l| l.read && !self.branches.is_empty()) else {
            self.state = State::Off;
            return;
        };
        // Three records at most: the branch built, its target and a default.
        let branches: Vec<String> = self.branches.iter().take(3).cloned().collect();
        let (tx, rx) = mpsc::channel();
        let started = std::thread::Builder::new()
            .name("vx-outputs-record".into())
            .spawn(move || {
                let _ = tx.send(read(&layer, &branches, &tmp));
            });
        self.state = match started {
            Ok(_) => State::Reading(rx),
            Err(_) => State::Off,
        };
    }

    /// The facts read, once: waiting up to [`FETCH_WAIT`] for them when `wait`, else only if
    /// they have arrived.
    pub(super) fn take_facts(&mut self, wait: bool) -> Option<HashMap<String, String>> {
        if self.given {
            return None;
        }
        self.settle(wait);
        let State::Read(fetched) = &mut self.state else {
            return None;
        };
        self.given = true;
        // A run takes them once; `--dry`, which reads them one by one, never does.
        Some(std::mem::take(&mut fetched.facts))
    }

    /// What the record says the entry of `key` produced (`--dry`; waits for the read).
    pub(super) fn produced(&mut self, key: &str) -> Option<String> {
        self.settle(true);
        match &self.state {
            State::Read(fetched) => fetched.facts.get(key).cloned(),
            _ => None,
        }
    }

    /// Whether the records read name an entry that produced `produced`; `None` when they
    /// have not been read (nothing is known).
    pub(super) fn names_produced(&mut self, produced: &str) -> Option<bool> {
        self.settle(false);
        match &self.state {
            State::Read(fetched) => Some(fetched.produced.contains(produced)),
            _ => None,
        }
    }

    /// Whether at least one record was read: only then does a digest they do not name say
    /// that no runner recorded it (a remote without records, or an older vx's, says nothing).
    pub(super) fn knows_runners(&self) -> bool {
        matches!(&self.state, State::Read(fetched) if fetched.found > 0)
    }

    fn settle(&mut self, wait: bool) {
        let State::Reading(rx) = &self.state else {
            return;
        };
        let got = if wait {
            rx.recv_timeout(FETCH_WAIT)
        } else {
            rx.try_recv().map_err(|e| match e {
                mpsc::TryRecvError::Empty => RecvTimeoutError::Timeout,
                mpsc::TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
            })
        };
        match got {
            Ok(fetched) => self.state = State::Read(fetched),
            Err(RecvTimeoutError::Timeout) if !wait => {}
            Err(_) => self.state = State::Off,
        }
    }

    /// At the end of a run that writes to `layer`: writes the first branch's record when
    /// `settled` (this run's facts) adds to it, on a thread the caller joins.
    pub(super) fn write(
        &mut self,
        layer: Option<RecordLayer>,
        settled: &[(String, String)],
        tmp: PathBuf,
    ) -> Option<JoinHandle<()>> {
        let layer = layer.filter(|l| l.write)?;
        let branch = self.branches.first()?.clone();
        if settled.is_empty() {
            return None;
        }
        self.settle(true);
        let State::Read(fetched) = &self.state else {
            return None;
        };
        let own = fetched.own.as_ref()?;
        let held: HashSet<(&str, &str)> =
            own.iter().map(|(k, p)| (k.as_str(), p.as_str())).collect();
        if settled
            .iter()
            .all(|(k, p)| held.contains(&(k.as_str(), p.as_str())))
        {
            return None;
        }
        let body = encode(settled, own);
        std::thread::Builder::new()
            .name("vx-outputs-record".into())
            .spawn(move || {
                let key = record_key(&branch);
                let put = put_record(layer.layer.as_ref(), &key, "vx#produced", &body, &tmp);
                if let Err(e) = put {
                    tracing::debug!(%branch, error = %e, "could not write the outputs record");
                }
            })
            .ok()
    }
}

/// The record of `branch` on this platform.
pub(super) fn record_key(branch: &str) -> String {
    let platform = format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH);
    vx_store::layer::record_key(&["vx produced 1", &platform, branch])
}

/// Reads the records of `branches` at once.
fn read(layer: &RecordLayer, branches: &[String], tmp: &std::path::Path) -> Fetched {
    let layer = layer.layer.as_ref();
    let bodies: Vec<_> = std::thread::scope(|s| {
        let jobs: Vec<_> = branches
            .iter()
            .map(|branch| s.spawn(move || fetch_record(layer, &record_key(branch), tmp)))
            .collect();
        jobs.into_iter()
            .map(|job| job.join().unwrap_or(Ok(None)))
            .collect()
    });
    let mut fetched = Fetched {
        facts: HashMap::new(),
        produced: HashSet::new(),
        found: 0,
        own: None,
    };
    for (at, body) in bodies.into_iter().enumerate() {
        let pairs = match body {
            Ok(Some(bytes)) => {
                fetched.found += 1;
                decode(&bytes)
            }
            Ok(None) => Some(Vec::new()),
            Err(e) => {
                tracing::debug!(error = %e, "could not read an outputs record");
                None
            }
        };
        if at == 0 {
            fetched.own.clone_from(&pairs);
        }
        for (key, produced) in pairs.into_iter().flatten() {
            fetched.produced.insert(produced.clone());
            fetched.facts.entry(key).or_insert(produced);
        }
    }
    fetched
}

/// `first`, then the pairs of `then` whose key `first` does not have, up to [`MAX_FACTS`].
fn encode(first: &[(String, String)], then: &[(String, String)]) -> Vec<u8> {
    let mut body = HEADER.to_vec();
    let mut seen = HashSet::new();
    for (key, produced) in first.iter().chain(then) {
        if seen.len() == MAX_FACTS {
            break;
        }
        let (Ok(k), Ok(p)) = (
            blake3::Hash::from_hex(key),
            blake3::Hash::from_hex(produced),
        ) else {
            continue;
        };
        if seen.insert(key.as_str()) {
            body.extend_from_slice(k.as_bytes());
            body.extend_from_slice(p.as_bytes());
        }
    }
    body
}

/// The pairs of a record; `None` when it is not one (an unknown header or a torn body).
fn decode(bytes: &[u8]) -> Option<Vec<(String, String)>> {
    let rest = bytes.strip_prefix(HEADER)?;
    if rest.len() % 64 != 0 {
        return None;
    }
    let hex = |b: &[u8]| {
        let bytes: [u8; 32] = b.try_into().expect("32 bytes");
        blake3::Hash::from_bytes(bytes).to_hex().to_string()
    };
    Some(
        rest.chunks_exact(64)
            .map(|pair| (hex(&pair[..32]), hex(&pair[32..])))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(k: char, p: char) -> (String, String) {
        (k.to_string().repeat(64), p.to_string().repeat(64))
    }

    #[test]
    fn a_record_holds_this_runs_facts_first_then_the_older_ones_it_did_not_replace() {
        let body = encode(
            &[pair('a', '1'), pair('b', '2')],
            &[pair('a', '9'), pair('c', '3')],
        );
        assert_eq!(
            decode(&body),
            Some(vec![pair('a', '1'), pair('b', '2'), pair('c', '3')])
        );
    }

    #[test]
    fn a_torn_or_foreign_record_is_not_read() {
        let body = encode(&[pair('a', '1')], &[]);
        assert_eq!(decode(&body[..body.len() - 1]), None);
        assert_eq!(decode(b"vx produced 2\n"), None);
        assert_eq!(decode(HEADER), Some(Vec::new()));
    }

    #[test]
    fn a_record_keeps_at_most_its_cap() {
        let many: Vec<(String, String)> = (0..MAX_FACTS + 5)
            .map(|i| (format!("{i:064x}"), "0".repeat(64)))
            .collect();
        let body = encode(&many, &[]);
        assert_eq!(decode(&body).map(|p| p.len()), Some(MAX_FACTS));
        assert!(body.len() < 1 << 20);
    }

    #[test]
    fn records_differ_by_branch() {
        assert_ne!(record_key("main"), record_key("feat/x"));
        assert_eq!(record_key("main").len(), 64);
    }
}
