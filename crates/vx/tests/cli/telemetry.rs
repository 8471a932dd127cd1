//! ARCH-4: OpenTelemetry export over OTLP/HTTP with JSON. The receiver decodes every request
//! with the official protobuf definitions (`opentelemetry-proto`) and answers 400 to anything
//! they reject.

use std::collections::BTreeMap;

use serde_json::Value;
use vx_test_support::otlp::Receiver;

use crate::{assert_contains, one_project};

/// The attributes of a span, as `key → value` (the value's one field, as text).
fn attributes(span: &Value) -> BTreeMap<String, String> {
    span["attributes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            let value = a["value"].as_object().unwrap().values().next().unwrap();
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (a["key"].as_str().unwrap().to_string(), text)
        })
        .collect()
}

#[test]
fn a_run_is_one_trace_with_a_span_per_task_attempt() {
    let Some(receiver) = Receiver::start(false) else {
        return;
    };
    let f = one_project(
        "[tasks.build]\ncommand = \"echo built > out.txt\"\ncache = { inputs = [\"package.json\"], outputs = [\"out.txt\"] }\n\
         [tasks.flaky]\ncommand = \"test -f tried && exit 0; touch tried; exit 1\"\nretries = 1\n\
         [tasks.broken]\ncommand = \"exit 3\"\ndepends-on = [\"build\"]\n\
         [tasks.after]\ncommand = \"true\"\ndepends-on = [\"broken\"]\n\
         [tasks.all]\ndepends-on = [\"after\", \"flaky\"]\n",
    );
    let out = f.vx_in(
        "",
        &["run", "lib#all"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint()),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-vx-test=a%20b,x-other=c"),
        ],
    );
    assert_eq!(
        out.code, 1,
        "the failure's exit code, not the export's: {out:?}"
    );
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    let requests = receiver.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let request: Value = serde_json::from_str(&requests[0]).unwrap();
    assert_eq!(request["ok"], true, "rejected: {request}");
    assert_eq!(request["path"], "/v1/traces");
    assert_eq!(request["headers"]["x-vx-test"], "a b", "{request}");
    assert_eq!(request["headers"]["x-other"], "c", "{request}");
    let resource = &request["request"]["resourceSpans"][0];
    assert_eq!(
        attributes(&resource["resource"])["service.name"],
        "vx",
        "{resource}"
    );
    let spans = resource["scopeSpans"][0]["spans"].as_array().unwrap();
    let root = spans
        .iter()
        .find(|s| s["name"] == "vx run")
        .expect("a root span");
    assert!(root.get("parentSpanId").is_none(), "{root}");
    assert_eq!(attributes(root)["vx.exit_code"], "1");
    let trace = root["traceId"].as_str().unwrap();
    let children: Vec<&Value> = spans.iter().filter(|s| s["name"] != "vx run").collect();
    for span in &children {
        assert_eq!(span["traceId"], trace, "{span}");
        assert_eq!(span["parentSpanId"], root["spanId"], "{span}");
        let (start, end) = (
            span["startTimeUnixNano"]
                .as_str()
                .unwrap()
                .parse::<u128>()
                .unwrap(),
            span["endTimeUnixNano"]
                .as_str()
                .unwrap()
                .parse::<u128>()
                .unwrap(),
        );
        assert!(start <= end, "{span}");
    }
    let of = |id: &str| -> Vec<BTreeMap<String, String>> {
        children
            .iter()
            .filter(|s| s["name"] == id)
            .map(|s| attributes(s))
            .collect()
    };
    // Two attempts of the flaky task, each its own span.
    let flaky = of("lib#flaky");
    assert_eq!(flaky.len(), 2, "{children:?}");
    assert_eq!(flaky[0]["vx.attempt"], "1");
    assert_eq!(flaky[1]["vx.attempt"], "2");
    let build = &of("lib#build")[0];
    assert_eq!(build["vx.task.status"], "success");
    assert_eq!(build["vx.cache"], "miss");
    assert_eq!(build["vx.placement"], "local");
    assert_eq!(build["vx.key"].len(), 64, "{build:?}");
    assert_eq!(build["vx.exit_code"], "0");
    assert!(build.contains_key("vx.cpu_ms"), "{build:?}");
    let broken = &of("lib#broken")[0];
    assert_eq!(broken["vx.task.status"], "failed");
    assert_eq!(broken["vx.exit_code"], "3");
    let failed_span = children.iter().find(|s| s["name"] == "lib#broken").unwrap();
    assert_eq!(
        failed_span["status"]["code"], "STATUS_CODE_ERROR",
        "{failed_span}"
    );
    // A task that never ran has its outcome span, without an exit code.
    let after = &of("lib#after")[0];
    assert_eq!(after["vx.task.status"], "skipped");
    assert!(!after.contains_key("vx.exit_code"), "{after:?}");
    // Groups are not tasks: no span.
    assert!(of("lib#all").is_empty());
}

/// The traces-only variables: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is used as given (no
/// `/v1/traces` appended), and `OTEL_EXPORTER_OTLP_TRACES_HEADERS` adds headers and replaces
/// those of the general list with the same name.
#[test]
fn the_traces_endpoint_and_headers_take_precedence() {
    let Some(receiver) = Receiver::start(false) else {
        return;
    };
    let f = one_project("[tasks.build]\ncommand = \"true\"\n");
    let out = f.vx_in(
        "",
        &["run", "lib#build"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9/unused"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                &format!("{}/v1/traces", receiver.endpoint()),
            ),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-team=general,x-keep=1"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X-Team=traces,x-new=2"),
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    let requests = receiver.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let request: Value = serde_json::from_str(&requests[0]).unwrap();
    assert_eq!(request["ok"], true, "rejected: {request}");
    assert_eq!(request["headers"]["x-team"], "traces", "{request}");
    let names = request["header_names"].as_array().unwrap();
    assert_eq!(
        names.iter().filter(|n| *n == "x-team").count(),
        1,
        "sent once: {request}"
    );
    assert_eq!(request["headers"]["x-keep"], "1", "{request}");
    assert_eq!(request["headers"]["x-new"], "2", "{request}");
}

/// Telemetry is off unless configured: nothing is sent without the variable.
#[test]
fn nothing_is_sent_without_the_endpoint() {
    let Some(receiver) = Receiver::start(false) else {
        return;
    };
    let f = one_project("[tasks.build]\ncommand = \"true\"\n");
    let out = f.vx(&["run", "lib#build"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(receiver.requests().is_empty());
}

/// A dead endpoint, one that rejects, and one that never answers: one warning each, the run's
/// exit code kept, and the export bounded.
#[test]
fn a_failing_endpoint_is_one_warning_and_never_the_exit_code() {
    let f = one_project("[tasks.build]\ncommand = \"true\"\n");
    // Nothing listens on the port of a receiver that was stopped.
    let dead = match Receiver::start(false) {
        Some(receiver) => receiver.endpoint(),
        None => return,
    };
    let out = f.vx_in(
        "",
        &["run", "lib#build"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &dead)],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.stderr);
    assert_contains(
        warnings[0],
        &format!("warning: could not export the run's trace to {dead}/v1/traces: "),
    );
    // A path the receiver refuses: HTTP 400, named.
    let receiver = Receiver::start(false).unwrap();
    let out = f.vx_in(
        "",
        &["run", "lib#build"],
        &[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            &format!("{}/elsewhere", receiver.endpoint()),
        )],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stderr, "/elsewhere: HTTP 400");
    // A server that accepts and never answers: the export gives up after 5 s.
    let silent = Receiver::start(true).unwrap();
    let started = std::time::Instant::now();
    let out = f.vx_in(
        "",
        &["run", "lib#build"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &silent.endpoint())],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out.stderr, "no answer within 5s");
    // Not a timing target: a hang would block this test forever.
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}
