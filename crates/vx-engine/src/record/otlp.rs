//! ARCH-4's sink: the run as an OpenTelemetry trace, exported over OTLP/HTTP with JSON when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set.
//!
//! One root span for the run and one child span per task attempt (a task that did not execute —
//! a hit, a skip — gets one span for its outcome), built from the same [`RunRecord`] and the same
//! [`Summary`] words as `--summarize`. The spans carry ids, words and numbers only (no command
//! line, no output, no variable value), so nothing a task was given in secret can reach the
//! collector. One POST at the end of the run, bounded to [`BOUND`]; any failure is one warning
//! and never changes the exit code.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use super::summary::Summary;
use super::{RunRecord, TelemetrySink};
use crate::outcome::{Notice, Status};

/// The whole export, connection included, takes at most this long.
const BOUND: Duration = Duration::from_secs(5);

pub struct OtlpExporter {
    /// Where the spans go: `<endpoint>/v1/traces`.
    pub url: String,
    pub headers: Vec<(String, String)>,
}

impl OtlpExporter {
    /// The exporter the environment asks for, or none: the signal's own endpoint is used as
    /// given, the general one gets `/v1/traces` appended (as every OpenTelemetry SDK does).
    pub fn from_env(env: &BTreeMap<String, String>) -> Option<OtlpExporter> {
        let set = |name: &str| env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        let url = match set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(url) => url.to_string(),
            None => format!(
                "{}/v1/traces",
                set("OTEL_EXPORTER_OTLP_ENDPOINT")?.trim_end_matches('/')
            ),
        };
        // The traces list wins over the general one for a header both name (as the SDKs do).
        let mut headers: Vec<(String, String)> = Vec::new();
        for list in [
            set("OTEL_EXPORTER_OTLP_HEADERS"),
            set("OTEL_EXPORTER_OTLP_TRACES_HEADERS"),
        ]
        .into_iter()
        .flatten()
        {
            for pair in list.split(',') {
                if let Some((name, value)) = pair.split_once('=') {
                    let name = name.trim().to_string();
                    headers.retain(|(known, _)| !known.eq_ignore_ascii_case(&name));
                    headers.push((name, percent_decode(value.trim())));
                }
            }
        }
        Some(OtlpExporter { url, headers })
    }
}

impl TelemetrySink for OtlpExporter {
    fn run_ended(&mut self, run: &RunRecord<'_>) -> Vec<Notice> {
        let body = trace(run).to_string();
        let agent = ureq::AgentBuilder::new().timeout(BOUND).build();
        let mut request = agent
            .post(&self.url)
            .set("Content-Type", "application/json");
        for (name, value) in &self.headers {
            request = request.set(name, value);
        }
        let failure = match request.send_string(&body) {
            Ok(_) => return Vec::new(),
            Err(ureq::Error::Status(code, response)) => {
                let text = response.into_string().unwrap_or_default();
                let text: String = text.chars().take(200).collect();
                format!("HTTP {code} {}", text.trim())
            }
            Err(ureq::Error::Transport(transport)) => {
                let cause = std::error::Error::source(&transport)
                    .map(ToString::to_string)
                    .or_else(|| transport.message().map(str::to_string))
                    .unwrap_or_default();
                if transport.to_string().contains("timed out") {
                    format!("no answer within {}s", BOUND.as_secs())
                } else {
                    format!("{}: {cause}", transport.kind())
                }
            }
        };
        vec![Notice::warning(format!(
            "could not export the run's trace to {}: {failure}",
            shown_url(&self.url)
        ))]
    }
}

/// The endpoint as a warning may print it: without a `user:password@` or a query, which may
/// carry credentials.
fn shown_url(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_string(),
    }
}

/// The OTLP `ExportTraceServiceRequest` of a run, in OTLP's JSON encoding (ids as hex).
pub fn trace(run: &RunRecord<'_>) -> Value {
    let summary = Summary::new(run);
    let trace_id = crate::ids::random_hex(16);
    let root_id = crate::ids::random_hex(8);
    let nanos = |ms: i64| (i128::from(ms) * 1_000_000).to_string();
    let at = |offset: Duration| {
        (i128::from(run.started_at_ms) * 1_000_000 + offset.as_nanos() as i128).to_string()
    };
    let mut spans = vec![json!({
        "traceId": trace_id,
        "spanId": root_id,
        "name": "vx run",
        "kind": 1,
        "startTimeUnixNano": nanos(run.started_at_ms),
        "endTimeUnixNano": nanos(run.ended_at_ms.max(run.started_at_ms)),
        "attributes": [
            string("vx.run_id", run.run_id),
            int("vx.exit_code", i64::from(run.exit_code)),
            int("vx.tasks", summary.tasks.len() as i64),
            int("vx.failed", summary.counts.failed as i64),
        ],
        "status": status(run.exit_code != 0),
    })];
    for (task, summarized) in run.tasks.iter().zip(&summary.tasks) {
        let report = task.report;
        let mut attributes = vec![
            string("vx.task.id", &summarized.id),
            string("vx.task.status", &word(&summarized.status)),
            string("vx.placement", &summarized.placement),
        ];
        if let Some(cache) = &summarized.cache {
            attributes.push(string("vx.cache", &word(cache)));
        }
        if let Some(key) = &summarized.key {
            attributes.push(string("vx.key", key));
        }
        if let Some(code) = summarized.exit_code {
            attributes.push(int("vx.exit_code", i64::from(code)));
        }
        if let Some(cpu) = summarized.cpu_ms {
            attributes.push(int("vx.cpu_ms", cpu as i64));
        }
        if let Some(rss) = summarized.peak_rss_bytes {
            attributes.push(int("vx.peak_rss_bytes", rss as i64));
        }
        let failed = matches!(report.status, Status::Failed | Status::Aborted);
        // One span per attempt; a task that did not execute, one for its outcome.
        let attempts: Vec<(Duration, Duration)> = if report.attempt_spans.is_empty() {
            vec![(
                report.start_offset,
                report.end_offset.max(report.start_offset),
            )]
        } else {
            report
                .attempt_spans
                .iter()
                .map(|a| (a.start, a.end.max(a.start)))
                .collect()
        };
        let last = attempts.len();
        for (n, (start, end)) in attempts.into_iter().enumerate() {
            let mut attributes = attributes.clone();
            attributes.push(int("vx.attempt", n as i64 + 1));
            spans.push(json!({
                "traceId": trace_id,
                "spanId": crate::ids::random_hex(8),
                "parentSpanId": root_id,
                "name": summarized.id,
                "kind": 1,
                "startTimeUnixNano": at(start),
                "endTimeUnixNano": at(end),
                "attributes": attributes,
                // Only the last attempt carries the task's outcome.
                "status": status(failed || n + 1 < last),
            }));
        }
    }
    json!({
        "resourceSpans": [{
            "resource": {
                "attributes": [
                    string("service.name", "vx"),
                    string("service.version", env!("CARGO_PKG_VERSION")),
                ]
            },
            "scopeSpans": [{
                "scope": { "name": "vx", "version": env!("CARGO_PKG_VERSION") },
                "spans": spans,
            }],
        }]
    })
}

/// A summary word (`success`, `restored-local`, …) as `--summarize` writes it.
fn word(value: &impl serde::Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(word)) => word,
        _ => String::new(),
    }
}

fn string(key: &str, value: &str) -> Value {
    json!({ "key": key, "value": { "stringValue": value } })
}

/// OTLP JSON writes 64-bit integers as strings.
fn int(key: &str, value: i64) -> Value {
    json!({ "key": key, "value": { "intValue": value.to_string() } })
}

/// `STATUS_CODE_ERROR` for a failure, else unset (OpenTelemetry's convention for success).
fn status(error: bool) -> Value {
    if error {
        json!({ "code": 2 })
    } else {
        json!({})
    }
}

/// `%XX` escapes of a header value (the W3C baggage format the variable uses).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_percent_decoded_and_the_path_appended() {
        let env: BTreeMap<String, String> = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "x-token=a%20b%2Cc, x-team = vx",
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let exporter = OtlpExporter::from_env(&env).unwrap();
        assert_eq!(exporter.url, "http://collector:4318/v1/traces");
        assert_eq!(
            exporter.headers,
            [
                ("x-token".to_string(), "a b,c".to_string()),
                ("x-team".to_string(), "vx".to_string())
            ]
        );
        assert!(OtlpExporter::from_env(&BTreeMap::new()).is_none());
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(
            shown_url("https://user:s3cret@collector:4318/v1/traces?api_key=k"),
            "https://collector:4318/v1/traces"
        );
        assert_eq!(percent_decode("%4"), "%4");
    }
}
