//! Cache layers (ARCH-2, REM-1 …): the local store first, then further layers read through, and
//! the background uploads to them.
//!
//! # How this works
//!
//! [`CacheLayer`] is the seam a remote protocol implements: existence ([`CacheLayer::contains`]),
//! a download into a file under a size cap ([`CacheLayer::fetch`]) and an upload from an artifact
//! file ([`CacheLayer::put`]). The body is always the local artifact format (STORE-5), so every
//! layer's entries are validated by the one check the local store uses.
//!
//! [`Layers`] is what a run holds instead of a bare [`Store`]. [`Layers::lookup`] asks the local
//! index first; on a miss it asks each further layer that reads, at most once per key and run
//! (REM-5): the body lands in `tmp/`, is validated and adopted into the local store with origin
//! `remote`, and is served from there like any local entry. A body that fails validation is a
//! miss with the failure class `invalid artifact`. [`Layers::upload`] queues a saved artifact
//! for every layer that writes; at most `upload_concurrency` uploads run at once, on threads that
//! start on demand, and [`Layers::drain`] waits for them at the end of the run (REM-8);
//! [`Layers::upload_counts`] says what became of them. [`Layers::prefetch`] downloads ahead on
//! the layer's own `downloads` threads: network work, not bound by the run's CPU slots.
//!
//! A further layer never fails a run (REM-7): every error is a miss for reads and a dropped
//! upload for writes, reported once per class (operation and kind) through
//! [`Layers::take_warnings`]. A layer that timed out is switched off for the rest of the run at
//! once, one that refused the credentials stops what was refused, and any other failure of the
//! server three times in a row switches it off (`remote.rs`). [`Layers::off`] is the run
//! without a cache: every lookup misses and every write is dropped.

pub mod http;
mod prefetch;
mod record;
mod remote;

pub use prefetch::{Accept, Wanted};
pub use record::{fetch_record, put_record, record_key, RecordLayer};
pub use remote::{CacheLayer, ErrorKind, LayerError, Op, RemoteUse, UploadCounts, Warning};

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::index::{Entry, Lookup, Store, StoreError};
use prefetch::Prefetch;
use remote::{lock, note, Health, Remote};

/// Where a hit came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The local store held it.
    Local,
    /// A further layer delivered it during this run (now adopted locally).
    Remote,
}

/// The cache of a run: the local store and the layers behind it. See the module documentation.
pub struct Layers {
    local: Option<Store>,
    remotes: Vec<Remote>,
    /// Keys already asked of the further layers in this run (REM-5: at most once).
    asked: HashSet<String>,
    /// The background downloads of [`Layers::prefetch`], when it started any.
    /// REM-6's background downloads: one batch per call of [`Layers::prefetch`] (the run asks
    /// again as upstreams arrive, KEY-9).
    prefetches: Vec<Arc<Prefetch>>,
    /// Entries adopted from a further layer in this run that no lookup has taken yet.
    adopted: HashMap<String, Entry>,
    /// How long each entry downloaded in this run took to arrive (its restore's cost).
    downloaded_in: HashMap<String, Duration>,
    uploads: Uploads,
}

impl Layers {
    /// No cache at all: lookups miss, writes are dropped.
    pub fn off() -> Layers {
        Layers::local(None)
    }

    /// The local store alone (`None`: no cache).
    pub fn local(store: Option<Store>) -> Layers {
        Layers {
            local: store,
            remotes: Vec::new(),
            asked: HashSet::new(),
            prefetches: Vec::new(),
            adopted: HashMap::new(),
            downloaded_in: HashMap::new(),
            uploads: Uploads::new(1),
        }
    }

    /// Adds a further layer behind the local store. Uploads to all layers share
    /// `upload_concurrency` threads (the largest asked for).
    pub fn add_remote(
        &mut self,
        layer: Arc<dyn CacheLayer>,
        usage: RemoteUse,
        upload_concurrency: usize,
    ) -> &mut Layers {
        self.uploads.concurrency = self.uploads.concurrency.max(upload_concurrency.max(1));
        self.remotes.push(Remote {
            layer,
            usage,
            health: Arc::new(Mutex::new(Health::default())),
        });
        self
    }

    /// The local store, when there is one.
    pub fn store(&self) -> Option<&Store> {
        self.local.as_ref()
    }

    pub fn store_mut(&mut self) -> Option<&mut Store> {
        self.local.as_mut()
    }

    /// Closes the local store (the end of a run). Queued uploads keep their files' paths.
    pub fn close(&mut self) {
        self.local = None;
    }

    /// Whether the local store is open and enabled.
    pub fn enabled(&self) -> bool {
        self.local.as_ref().is_some_and(|s| s.disabled().is_none())
    }

    /// The local store's salt (zeros without one).
    pub fn salt(&self) -> [u8; 32] {
        self.local.as_ref().map_or([0; 32], Store::salt)
    }

    /// The further layers still in use, for records (SEL-10): a layer switched off in this run,
    /// or whose reads or writes were refused, is not asked again.
    pub fn record_layers(&self) -> Vec<RecordLayer> {
        self.remotes
            .iter()
            .map(|r| RecordLayer {
                layer: r.layer.clone(),
                read: r.readable(),
                write: r.writable(),
            })
            .filter(|r| r.read || r.write)
            .collect()
    }

    /// Lets the next lookup of `key` ask the further layers again (REM-5 asks once per run):
    /// for an entry another runner was seen to upload since (SCHED-8).
    pub fn ask_again(&mut self, key: &str) {
        self.asked.remove(key);
    }

    /// The further layers are not asked for `key` in this run: its entry cannot be there (a
    /// key folding outputs no runner has recorded, KEY-9).
    pub fn skip_remote(&mut self, key: &str) {
        self.asked.insert(key.to_string());
    }

    /// Whether any further layer reads or writes.
    pub fn has_remote(&self) -> bool {
        !self.remotes.is_empty()
    }

    /// How long the download of `key` took in this run, if it was downloaded.
    pub fn downloaded_in(&self, key: &str) -> Option<Duration> {
        self.downloaded_in.get(key).copied()
    }

    /// The downloads under way in the background: (key, bytes so far, time since it started).
    pub fn downloading(&self) -> Vec<(String, u64, Duration)> {
        self.prefetches.iter().flat_map(|p| p.in_flight()).collect()
    }

    /// Probes `key`: the local store, then (on a local miss) each further layer that reads,
    /// adopting what it delivers. A key of the prefetch waits for its download instead of
    /// asking again (REM-5). Errors are the local store's; a further layer's failure is a miss
    /// and a warning.
    pub fn lookup(
        &mut self,
        key: &str,
        accept: &dyn Fn(&str) -> bool,
    ) -> Result<(Lookup, Source), StoreError> {
        if let Some(entry) = self.adopted.remove(key) {
            return Ok((Lookup::Hit(entry), Source::Remote));
        }
        let batch = self
            .prefetches
            .iter()
            .find_map(|p| p.position(key).map(|at| (Arc::clone(p), at)));
        if let Some((prefetch, at)) = batch {
            prefetch.wait(at);
            self.adopt_arrived(&prefetch)?;
            if let Some(entry) = self.adopted.remove(key) {
                return Ok((Lookup::Hit(entry), Source::Remote));
            }
        }
        let Some(store) = self.local.as_mut() else {
            return Ok((Lookup::Miss, Source::Local));
        };
        match store.lookup(key, accept)? {
            Lookup::Miss => {}
            other => return Ok((other, Source::Local)),
        }
        if !store.can_adopt() || self.remotes.is_empty() || !self.asked.insert(key.to_string()) {
            return Ok((Lookup::Miss, Source::Local));
        }
        for remote in &self.remotes {
            if !remote.readable() {
                continue;
            }
            let dest = store.tmp_path("download");
            let started = Instant::now();
            let fetched = remote.layer.fetch(key, &dest, remote.usage.max_download);
            self.downloaded_in
                .insert(key.to_string(), started.elapsed());
            remote.note(Op::Download, fetched.as_ref().map(|_| ()));
            if fetched != Ok(true) {
                let _ = std::fs::remove_file(&dest);
                continue;
            }
            match store.adopt_download(key, &dest, accept, "remote")? {
                Lookup::Hit(entry) => return Ok((Lookup::Hit(entry), Source::Remote)),
                Lookup::Damaged(damage) => {
                    let error = LayerError::new(
                        ErrorKind::InvalidArtifact,
                        format!("invalid artifact: {}", damage.reason),
                    );
                    remote.note(Op::Download, Err(&error));
                }
                Lookup::Miss => {}
            }
        }
        Ok((Lookup::Miss, Source::Local))
    }

    /// Indexes every prefetched body that has arrived, in one transaction.
    fn adopt_arrived(&mut self, prefetch: &Prefetch) -> Result<(), StoreError> {
        let arrived = prefetch.take_arrived();
        if arrived.is_empty() {
            return Ok(());
        }
        let arrived: Vec<crate::artifact::Arrived> = arrived
            .into_iter()
            .map(|(body, took)| {
                self.downloaded_in.insert(body.key.clone(), took);
                body
            })
            .collect();
        let Some(store) = self.local.as_mut() else {
            for body in arrived {
                let _ = std::fs::remove_file(body.path);
            }
            return Ok(());
        };
        for (key, entry) in store.adopt_validated(arrived, "remote")? {
            self.adopted.insert(key, entry);
        }
        Ok(())
    }

    /// REM-6: starts downloading, the layer's `downloads` at a time (network work: not bound by
    /// the run's CPU slots) and in the background, the bodies of
    /// every key in `wanted` that the local store does not hold, from the first layer that
    /// reads (each key still asked at most once per run). Each body is validated with its
    /// `accept` on the thread that downloaded it; `ready` is then called with its tag, whether
    /// it arrived or not, and the key's lookup adopts it (see [`Layers::lookup`]). Returns the
    /// tags of the keys being fetched: every one of them gets its `ready` call. Without a
    /// writable local store, or when no thread can be started, nothing is fetched ahead.
    pub fn prefetch(
        &mut self,
        wanted: Vec<Wanted>,
        ready: Box<dyn Fn(usize) + Send + Sync>,
    ) -> Vec<usize> {
        let Some(store) = self.local.as_mut() else {
            return Vec::new();
        };
        let Some(remote) = self.remotes.iter().find(|r| r.readable()) else {
            return Vec::new();
        };
        if !store.can_adopt() {
            return Vec::new();
        }
        let wanted: Vec<Wanted> = wanted
            .into_iter()
            .filter(|w| !store.has_entry(&w.key) && !self.asked.contains(&w.key))
            .collect();
        if wanted.is_empty() {
            return Vec::new();
        }
        let dests = wanted.iter().map(|_| store.tmp_path("prefetch")).collect();
        let tags: Vec<usize> = wanted.iter().map(|w| w.tag).collect();
        let keys: Vec<String> = wanted.iter().map(|w| w.key.clone()).collect();
        let width = remote.usage.downloads.max(1);
        match Prefetch::start(remote.clone(), wanted, dests, width, ready) {
            Some(prefetch) => {
                self.asked.extend(keys);
                self.prefetches.push(prefetch);
                tags
            }
            None => Vec::new(),
        }
    }

    /// Whether `key` exists, for `--dry` (REM-9): the local store, then existence checks on the
    /// further layers that read. Nothing is downloaded.
    pub fn exists(&self, key: &str) -> Option<Source> {
        let store = self.local.as_ref()?;
        if store.disabled().is_some() {
            return None;
        }
        if store.has_entry(key) {
            return Some(Source::Local);
        }
        for remote in &self.remotes {
            if !remote.readable() {
                continue;
            }
            let answer = remote.layer.contains(key);
            remote.note(Op::Exists, answer.as_ref().map(|_| ()));
            if answer == Ok(true) {
                return Some(Source::Remote);
            }
        }
        None
    }

    /// Queues the saved artifact of `key` for every further layer that writes (REM-8). The
    /// caller never queues a tainted, withheld or failed result.
    pub fn upload(&mut self, key: &str, duration_ms: u64) {
        let Some(store) = self.local.as_ref() else {
            return;
        };
        let path = store.artifact_path(key);
        self.queue_uploads(key, &path, duration_ms, None);
    }

    /// REM-8 with local writes off: queues the artifact packed at `path` (in `tmp/`, never
    /// indexed) for every further layer that writes; the file is removed once the last of
    /// those uploads is done, dropped or abandoned (at once when no layer writes).
    pub fn upload_packed(&mut self, key: &str, path: PathBuf, duration_ms: u64) {
        let scratch = Arc::new(Scratch(path.clone()));
        self.queue_uploads(key, &path, duration_ms, Some(&scratch));
    }

    fn queue_uploads(
        &mut self,
        key: &str,
        path: &Path,
        duration_ms: u64,
        scratch: Option<&Arc<Scratch>>,
    ) {
        for remote in &self.remotes {
            if !remote.writable() {
                if remote.usage.write {
                    // Switched off earlier in the run: counted, for the line that says why.
                    lock(&remote.health).uploads.skipped += 1;
                }
                continue;
            }
            self.uploads.push(Upload {
                layer: Arc::clone(&remote.layer),
                health: Arc::clone(&remote.health),
                token_env: remote.usage.token_env.clone(),
                key: key.to_string(),
                path: path.to_path_buf(),
                duration_ms,
                _scratch: scratch.cloned(),
            });
        }
    }

    /// Whether any further layer takes uploads in this run.
    pub fn writes_remotely(&self) -> bool {
        self.remotes.iter().any(Remote::writable)
    }

    /// Ends the prefetch with the run: nothing further is downloaded, and the bodies no
    /// lookup took are removed.
    pub fn discard_prefetched(&mut self) {
        for prefetch in self.prefetches.drain(..) {
            prefetch.cancel();
        }
    }

    /// Uploads still queued or in flight.
    pub fn uploads_pending(&self) -> usize {
        self.uploads.pending.load(Ordering::SeqCst)
    }

    /// Waits up to `wait` for the queued uploads, calling `slow` once with the number pending
    /// when they take longer than `slow_after`; what is left after `wait` is abandoned. Returns
    /// the number abandoned.
    pub fn drain(
        &mut self,
        wait: Duration,
        slow_after: Duration,
        slow: &mut dyn FnMut(usize),
    ) -> usize {
        self.uploads.drain(wait, slow_after, slow)
    }

    /// What became of this run's uploads, per layer that takes them: its name and the counts
    /// (`abandoned`: what the run stopped waiting for, which [`Layers::drain`] returned; the
    /// queue is shared, so it is given to every layer — a run has one further layer).
    pub fn upload_counts(&self, abandoned: usize) -> Vec<(String, UploadCounts)> {
        self.remotes
            .iter()
            .filter(|r| r.usage.write)
            .map(|r| {
                let mut counts = lock(&r.health).uploads;
                counts.abandoned = abandoned as u64;
                (r.layer.name().to_string(), counts)
            })
            .collect()
    }

    /// Each further layer that adapted itself during the run: its name and what it did
    /// ([`CacheLayer::adapted`]).
    pub fn adaptations(&self) -> Vec<(String, String)> {
        self.remotes
            .iter()
            .filter_map(|r| Some((r.layer.name().to_string(), r.layer.adapted()?)))
            .collect()
    }

    /// A signal stopped the run: queued uploads are dropped, those in flight are left to the
    /// process exit.
    pub fn abandon_uploads(&mut self) {
        self.uploads.abandon.store(true, Ordering::SeqCst);
    }

    /// The warnings not yet shown, each failure class once per run (REM-7).
    pub fn take_warnings(&mut self) -> Vec<Warning> {
        self.remotes
            .iter()
            .flat_map(|r| std::mem::take(&mut lock(&r.health).warnings))
            .collect()
    }

    /// Failures whose class had already been warned about (summarised above the footer).
    pub fn repeated_failures(&self) -> u64 {
        self.remotes.iter().map(|r| lock(&r.health).repeats).sum()
    }
}

/// One queued upload; owns what its thread needs.
struct Upload {
    layer: Arc<dyn CacheLayer>,
    health: Arc<Mutex<Health>>,
    token_env: String,
    key: String,
    path: PathBuf,
    duration_ms: u64,
    /// The packed file when only uploads hold it (local writes off).
    _scratch: Option<Arc<Scratch>>,
}

/// A packed artifact nothing but uploads need: removed when the last of them lets go.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The upload queue: a channel read by at most `concurrency` threads, started on demand.
struct Uploads {
    concurrency: usize,
    sender: Option<Sender<Upload>>,
    receiver: Arc<Mutex<Receiver<Upload>>>,
    threads: Vec<JoinHandle<()>>,
    pending: Arc<AtomicUsize>,
    abandon: Arc<AtomicBool>,
}

impl Uploads {
    fn new(concurrency: usize) -> Uploads {
        let (sender, receiver) = mpsc::channel();
        Uploads {
            concurrency,
            sender: Some(sender),
            receiver: Arc::new(Mutex::new(receiver)),
            threads: Vec::new(),
            pending: Arc::new(AtomicUsize::new(0)),
            abandon: Arc::new(AtomicBool::new(false)),
        }
    }

    fn push(&mut self, upload: Upload) {
        let Some(sender) = &self.sender else {
            return;
        };
        self.pending.fetch_add(1, Ordering::SeqCst);
        if sender.send(upload).is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        if self.threads.len() < self.concurrency {
            let receiver = Arc::clone(&self.receiver);
            let pending = Arc::clone(&self.pending);
            let abandon = Arc::clone(&self.abandon);
            let spawned = std::thread::Builder::new()
                .name("vx-upload".into())
                .spawn(move || upload_loop(&receiver, &pending, &abandon));
            if let Ok(handle) = spawned {
                self.threads.push(handle);
            }
        }
    }

    fn drain(
        &mut self,
        wait: Duration,
        slow_after: Duration,
        slow: &mut dyn FnMut(usize),
    ) -> usize {
        // Closing the channel ends each thread once the queue is empty.
        self.sender = None;
        let start = Instant::now();
        let mut said = false;
        loop {
            let pending = self.pending.load(Ordering::SeqCst);
            if pending == 0 {
                for thread in self.threads.drain(..) {
                    let _ = thread.join();
                }
                return 0;
            }
            let waited = start.elapsed();
            if waited >= wait {
                self.abandon.store(true, Ordering::SeqCst);
                return pending;
            }
            if !said && waited >= slow_after {
                said = true;
                slow(pending);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn upload_loop(receiver: &Mutex<Receiver<Upload>>, pending: &AtomicUsize, abandon: &AtomicBool) {
    loop {
        let next = {
            let receiver = receiver.lock().unwrap_or_else(|p| p.into_inner());
            receiver.recv()
        };
        let Ok(upload) = next else {
            return;
        };
        let abandoned = abandon.load(Ordering::SeqCst);
        let skip = {
            let mut health = lock(&upload.health);
            let skip = health.off || health.writes_off;
            if skip && !abandoned {
                health.uploads.skipped += 1;
            }
            skip
        };
        if !skip && !abandoned {
            let result = upload
                .layer
                .put(&upload.key, &upload.path, upload.duration_ms);
            note(
                &upload.health,
                upload.layer.name(),
                &upload.token_env,
                Op::Upload,
                result.as_ref().map(|_| ()),
            );
            let mut health = lock(&upload.health);
            match result {
                Ok(()) => health.uploads.made += 1,
                Err(_) => health.uploads.failed += 1,
            }
        }
        pending.fetch_sub(1, Ordering::SeqCst);
    }
}
