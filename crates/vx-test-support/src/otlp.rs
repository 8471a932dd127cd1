//! An OpenTelemetry collector stand-in for the telemetry tests (ARCH-4): `otlp_receiver.py`,
//! which decodes every request with the official protobuf definitions (PyPI
//! `opentelemetry-proto`), run on loopback with the Python of the virtualenv `scripts/test`
//! installs into `.test-tools/otelvenv` (or where `VX_TEST_OTEL_VENV` points).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub fn otel_venv_dir() -> PathBuf {
    match std::env::var_os("VX_TEST_OTEL_VENV") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.test-tools/otelvenv"),
    }
}

/// A running receiver; dropping it stops it.
pub struct Receiver {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl Receiver {
    /// Starts the receiver (`silent`: one that accepts and never answers), or `None` (after
    /// saying the test is skipped) when the virtualenv is missing outside CI and scripts/test.
    pub fn start(silent: bool) -> Option<Receiver> {
        let python = otel_venv_dir().join("bin/python3");
        let usable = Command::new(&python)
            .args(["-c", "import opentelemetry.proto"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !usable {
            let why = format!(
                "opentelemetry-proto is missing: `python3 -m venv {0} && {0}/bin/pip install opentelemetry-proto` (scripts/test does)",
                otel_venv_dir().display()
            );
            assert!(!crate::tools::tools_required(), "{why}");
            eprintln!("skipped: {why}");
            return None;
        }
        let dir = tempfile::tempdir().expect("a temporary directory");
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/otlp_receiver.py");
        let mut command = Command::new(&python);
        command.arg(script).arg(dir.path());
        if silent {
            command.arg("--silent");
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the receiver starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped"))
            .read_line(&mut line)
            .expect("the receiver says its port");
        let port = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line from the receiver: {line:?}"));
        Some(Receiver { child, port, dir })
    }

    /// The base URL for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request received so far, in order: `{"path", "headers", "ok", "error"?,
    /// "request"?}` (see `otlp_receiver.py`).
    pub fn requests(&self) -> Vec<String> {
        let mut found: Vec<(u64, String)> = std::fs::read_dir(self.dir.path())
            .expect("the receiver's directory")
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let n = name.strip_suffix(".json")?.parse().ok()?;
                Some((n, std::fs::read_to_string(e.path()).ok()?))
            })
            .collect();
        found.sort();
        found.into_iter().map(|(_, text)| text).collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
