//! `vx run --events=PATH`: the run as it happens, one JSON object per line (NDJSON), for a
//! program rather than a person (`vx mcp` reads it; so can a CI step or an editor). Each
//! object is written and flushed as it happens, so a reader tailing the file sees the run
//! live; the terminal's own output is unchanged.
//!
//! ```text
//! {"event":"plan","tasks":["lib#build","app#build"]}
//! {"event":"started","task":"lib#build","ms":3}
//! {"event":"output","task":"lib#build","text":"built lib\n"}
//! {"event":"finished","task":"lib#build","status":"success","cache":"miss","exit_code":0,"duration_ms":12,"ms":15}
//! {"event":"end","ms":40,"counts":{"success":2}}
//! ```
//!
//! `plan` lists the tasks the run holds, groups left out, in the graph's order; `output` is
//! the task's output as the terminal gets it (masked, and without escapes when vx does not
//! colour), in the order received (a character split between two reads is sent whole, with
//! the later one), and for a hit the log it stored (`"stored":true`);
//! `finished` says `cache` for a task that executed or hit, `exit_code` when a process ended;
//! `ms` counts from the start of the run. Text that is not UTF-8 is replaced
//! (U+FFFD). A file that cannot be written is said once, and the run goes on.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Value};

use vx_core::TaskId;
use vx_engine::outcome::{Notice, TaskReport};
use vx_engine::report::{Flow, Region, Reporter, Totals, UiAction, UiInput};

/// A reporter that writes the events and hands everything on to the terminal's.
pub struct Events<R: Reporter> {
    inner: R,
    out: Option<BufWriter<File>>,
    path: PathBuf,
    ids: Vec<TaskId>,
    started: Instant,
    /// Per node, the start of a UTF-8 sequence its last chunk ended in the middle of: sent
    /// with the next chunk, so a character split between two reads is not replaced.
    pending: HashMap<usize, Vec<u8>>,
}

impl<R: Reporter> Events<R> {
    /// Creates (or truncates) `path` and writes the `plan` event: `ids` are the graph's nodes
    /// in order, `groups` says which hold no command.
    pub fn new(inner: R, path: &Path, ids: Vec<TaskId>, groups: &[bool]) -> Events<R> {
        let mut events = Events {
            inner,
            out: None,
            path: path.to_path_buf(),
            ids,
            started: Instant::now(),
            pending: HashMap::new(),
        };
        match File::create(path) {
            Ok(file) => events.out = Some(BufWriter::new(file)),
            Err(e) => events.failed(&e),
        }
        let tasks: Vec<String> = events
            .ids
            .iter()
            .zip(groups)
            .filter(|(_, group)| !**group)
            .map(|(id, _)| id.to_string())
            .collect();
        events.write(json!({ "event": "plan", "tasks": tasks }));
        events
    }

    fn ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn write(&mut self, event: Value) {
        let Some(out) = self.out.as_mut() else {
            return;
        };
        let written = serde_json::to_writer(&mut *out, &event)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if let Err(e) = written {
            self.failed(&e);
        }
    }

    fn failed(&mut self, e: &std::io::Error) {
        self.out = None;
        self.inner.notice(Notice::warning(format!(
            "--events: cannot write {}: {e}; the run goes on without it",
            self.path.display()
        )));
    }

    fn id(&self, node: usize) -> String {
        self.ids
            .get(node)
            .map(ToString::to_string)
            .unwrap_or_default()
    }

    /// The node's output so far as text: what was held back from its last chunk, then this
    /// chunk, less an incomplete UTF-8 sequence at its end (held for the next).
    fn text_of(&mut self, node: usize, bytes: &[u8]) -> String {
        let mut all = self.pending.remove(&node).unwrap_or_default();
        all.extend_from_slice(bytes);
        let held = all.split_off(all.len() - incomplete_tail(&all));
        if !held.is_empty() {
            self.pending.insert(node, held);
        }
        String::from_utf8_lossy(&all).into_owned()
    }

    fn output(&mut self, node: usize, text: String) {
        if !text.is_empty() {
            let event = json!({ "event": "output", "task": self.id(node), "text": text });
            self.write(event);
        }
    }
}

/// How many bytes at the end of `bytes` begin a UTF-8 sequence that is not complete yet.
fn incomplete_tail(bytes: &[u8]) -> usize {
    for k in 1..=bytes.len().min(3) {
        let b = bytes[bytes.len() - k];
        if b & 0xC0 == 0x80 {
            continue;
        }
        let needed = match b {
            0xF8.. => return 0,
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => return 0,
        };
        return if k < needed { k } else { 0 };
    }
    0
}

impl<R: Reporter> Reporter for Events<R> {
    fn flow(&self) -> Flow {
        self.inner.flow()
    }
    fn colour(&self) -> bool {
        self.inner.colour()
    }
    fn notice(&mut self, notice: Notice) {
        self.inner.notice(notice)
    }
    fn waiting(&mut self, notice: Notice) {
        self.inner.waiting(notice)
    }
    fn choose_streaming(&mut self, requested_commands: &[usize]) {
        self.inner.choose_streaming(requested_commands)
    }
    fn is_streaming(&self, node: usize) -> bool {
        self.inner.is_streaming(node)
    }
    fn shows_hit_log(&self, requested: bool) -> bool {
        self.inner.shows_hit_log(requested)
    }
    fn started(&mut self, node: usize, report: &TaskReport) {
        let event = json!({ "event": "started", "task": self.id(node), "ms": self.ms() });
        self.write(event);
        self.inner.started(node, report)
    }
    fn stream(&mut self, node: usize, bytes: &[u8]) {
        let text = self.text_of(node, bytes);
        self.output(node, text);
        self.inner.stream(node, bytes)
    }
    fn finished(&mut self, node: usize, report: &TaskReport, requested: bool) {
        // What a task's last chunk held back is all there will be: said as it is.
        if let Some(held) = self.pending.remove(&node) {
            self.output(node, String::from_utf8_lossy(&held).into_owned());
        }
        if !report.executed && !report.log.is_empty() {
            let event = json!({
                "event": "output",
                "task": self.id(node),
                "text": String::from_utf8_lossy(&report.log),
                "stored": true,
            });
            self.write(event);
        }
        let mut event = json!({
            "event": "finished",
            "task": self.id(node),
            "status": report.status.word(),
            "duration_ms": report.duration.as_millis() as u64,
            "ms": self.ms(),
        });
        if let Some(cache) = report.cache {
            event["cache"] = json!(cache.word());
        }
        if let Some(code) = report.exit_code {
            event["exit_code"] = json!(code);
        }
        if let Some(blocked) = &report.blocked_by {
            event["blocked_by"] = json!(blocked.to_string());
        }
        self.write(event);
        self.inner.finished(node, report, requested)
    }
    fn after_footer(&mut self, bytes: &[u8]) {
        self.inner.after_footer(bytes)
    }
    fn finish(&mut self, totals: &Totals<'_>) {
        let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
        for report in totals.reports {
            *counts.entry(report.status.word()).or_default() += 1;
        }
        let event = json!({ "event": "end", "ms": self.ms(), "counts": counts });
        self.write(event);
        self.inner.finish(totals)
    }
    fn output_replayable(&self, reports: &[(&TaskReport, bool)]) -> bool {
        self.inner.output_replayable(reports)
    }
    fn start_tui(
        &mut self,
        tasks: Vec<(usize, TaskId, bool)>,
        send: Box<dyn Fn(UiInput) -> bool + Send>,
        log_file: PathBuf,
    ) -> bool {
        self.inner.start_tui(tasks, send, log_file)
    }
    fn has_tui(&self) -> bool {
        self.inner.has_tui()
    }
    fn tick(&mut self) {
        self.inner.tick()
    }
    fn key(&mut self, input: UiInput) -> UiAction {
        self.inner.key(input)
    }
    fn region_start(&mut self, log_file: PathBuf) {
        self.inner.region_start(log_file)
    }
    fn region_active(&self) -> bool {
        self.inner.region_active()
    }
    fn region_stop(&mut self) {
        self.inner.region_stop()
    }
    fn region_due(&self) -> bool {
        self.inner.region_due()
    }
    fn draw_region(&mut self, region: &Region) {
        self.inner.draw_region(region)
    }
    fn abandon(&mut self, line: &str) {
        self.inner.abandon(line)
    }
    fn keep_open(&mut self) -> bool {
        self.inner.keep_open()
    }
    fn close(&mut self) {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::incomplete_tail;

    #[test]
    fn a_character_cut_at_the_end_of_a_chunk_is_held_back_whole() {
        let check = "✓".as_bytes(); // E2 9C 93
        assert_eq!(incomplete_tail(b"ok\n"), 0);
        assert_eq!(incomplete_tail(&check[..1]), 1);
        assert_eq!(incomplete_tail(&[b'a', check[0], check[1]]), 2);
        assert_eq!(incomplete_tail(check), 0);
        assert_eq!(incomplete_tail("é😀".as_bytes()), 0);
        assert_eq!(incomplete_tail(&"😀".as_bytes()[..3]), 3);
        // Not UTF-8 at all: nothing is held, the bytes are replaced as they come.
        assert_eq!(incomplete_tail(&[0xFF]), 0);
    }
}
