//! The real `turborepo-remote-cache` server (npm), started on a free loopback port with its
//! own storage directory, for the HTTP remote-cache tests (REM-15).
//!
//! `scripts/test` installs it into `.test-tools/npm`. [`HttpCacheServer::start`] runs
//! `node …/turborepo-remote-cache/dist/cli.js` with local storage in a temporary directory and
//! static tokens, and waits for `GET /v8/artifacts/status` to answer; dropping the server kills
//! it. A missing installation skips the test with the install command, and fails it under `CI`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::net::free_port;
use crate::tools::npm_tools_dir;

/// The token the server accepts.
pub const TOKEN: &str = "vx-test-token";

/// A running server; killed when dropped.
pub struct HttpCacheServer {
    child: Child,
    pub port: u16,
    /// Where it stores artifacts: `<storage>/<team>/<key>`.
    pub storage: tempfile::TempDir,
}

impl HttpCacheServer {
    /// Starts a server, or `None` (after saying the test is skipped) when it is not installed
    /// outside CI.
    pub fn start() -> Option<HttpCacheServer> {
        HttpCacheServer::start_with(None)
    }

    /// [`HttpCacheServer::start`], signing artifacts with `signature_key` when given (the server
    /// then keeps each upload's `x-artifact-tag` and answers 404 for an artifact without one).
    pub fn start_with(signature_key: Option<&str>) -> Option<HttpCacheServer> {
        let cli = npm_tools_dir().join("node_modules/turborepo-remote-cache/dist/cli.js");
        if !cli.exists() {
            let install = format!(
                "npm install --prefix {} turborepo-remote-cache@2.12.0 (or run scripts/test, which installs it)",
                npm_tools_dir().display()
            );
            assert!(
                !crate::tools::tools_required(),
                "turborepo-remote-cache is missing: {install}"
            );
            eprintln!("skipped: turborepo-remote-cache is missing: {install}");
            return None;
        }
        let storage = tempfile::Builder::new()
            .prefix("vx-http-cache-")
            .tempdir()
            .expect("a temp dir");
        let port = free_port();
        let log = std::fs::File::create(storage.path().join("server.log")).expect("a log file");
        let mut command = Command::new("node");
        if let Some(key) = signature_key {
            command.env("TURBO_REMOTE_CACHE_SIGNATURE_KEY", key);
        }
        let child = command
            .arg(&cli)
            .env("HOST", "127.0.0.1")
            .env("PORT", port.to_string())
            .env("TURBO_TOKEN", TOKEN)
            .env("STORAGE_PROVIDER", "local")
            .env("STORAGE_PATH", storage.path().join("store"))
            .env("STORAGE_PATH_USE_TMP_FOLDER", "false")
            .env("LOG_LEVEL", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().expect("a log handle")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start node");
        let server = HttpCacheServer {
            child,
            port,
            storage,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !server.answers() {
            assert!(
                Instant::now() < deadline,
                "turborepo-remote-cache did not answer on port {port}: {}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(server)
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The task results it holds for `team`, by key: its artifacts less vx's records
    /// (`fakes::is_record`).
    pub fn results(&self, team: &str) -> Vec<String> {
        let dir: PathBuf = self.artifact_dir(team);
        crate::fakes::results_in(&dir, self.artifacts(team))
    }

    /// The directory holding `team`'s artifacts, each a file named by its key.
    pub fn artifact_dir(&self, team: &str) -> PathBuf {
        self.storage.path().join("store").join(team)
    }

    /// The artifacts it holds for `team`, by key.
    pub fn artifacts(&self, team: &str) -> Vec<String> {
        let dir: PathBuf = self.artifact_dir(team);
        let mut keys: Vec<String> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        keys.sort();
        keys
    }

    /// What the server logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.storage.path().join("server.log")).unwrap_or_default()
    }

    /// Whether `GET /v8/artifacts/status` answers 200.
    fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let request = "GET /v8/artifacts/status HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
        if stream.write_all(request.as_bytes()).is_err() {
            return false;
        }
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200")
    }

    /// Freezes the server (SIGSTOP) as a hung one is: the kernel still accepts connections,
    /// and nothing answers them.
    pub fn freeze(&self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).expect("SIGSTOP");
    }

    /// Stops the server now (a test of a server that goes away).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for HttpCacheServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A TLS front for a server (`https://`), for the tests of what vx trusts: a Node proxy on its
/// own port that ends TLS with a certificate for 127.0.0.1 signed by a throwaway authority
/// ([`crate::net::make_certificates`]) and passes the bytes on; killed when dropped.
pub struct TlsFront {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

/// The proxy: `node -e PROXY <cert> <key> <listen port> <target port>`.
const PROXY: &str = "const [cert, key, listen, target] = process.argv.slice(1);
const fs = require('fs'), net = require('net'), tls = require('tls');
tls.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (s) => {
  const u = net.connect(+target, '127.0.0.1');
  s.pipe(u).pipe(s);
  s.on('error', () => u.destroy());
  u.on('error', () => s.destroy());
}).on('tlsClientError', () => {}).listen(+listen, '127.0.0.1');";

impl TlsFront {
    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The authority that signed the front's certificate (`ca.pem`), for `SSL_CERT_FILE`.
    pub fn authority(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl HttpCacheServer {
    /// A TLS front for this server, or `None` (after saying the test is skipped) when `openssl`
    /// is missing outside CI.
    pub fn tls_front(&self) -> Option<TlsFront> {
        if Command::new("openssl").arg("version").output().is_err() {
            let why = "openssl is missing: apt-get install openssl (scripts/test does)";
            assert!(!crate::tools::tools_required(), "{why}");
            eprintln!("skipped: {why}");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("vx-tls-front-")
            .tempdir()
            .expect("a temp dir");
        crate::net::make_certificates(dir.path());
        let port = free_port();
        let child = Command::new("node")
            .arg("-e")
            .arg(PROXY)
            .arg(dir.path().join("server.pem"))
            .arg(dir.path().join("server.key"))
            .arg(port.to_string())
            .arg(self.port.to_string())
            .stdin(Stdio::null())
            .spawn()
            .expect("start node");
        let front = TlsFront { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the TLS front did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(front)
    }
}
