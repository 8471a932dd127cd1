//! A real npm registry on loopback (Verdaccio, from the npm registry) holding only the packages a
//! test publishes into it, and the package managers that install from it: npm (the machine's),
//! pnpm, Yarn 1, Yarn Berry and bun, all from the npm registry.
//!
//! `scripts/test` installs them into `.test-tools/pm` (or where `VX_TEST_PM_TOOLS` points).
//! [`Registry::start`] runs Verdaccio on a free port with its storage in a temporary directory
//! and no uplink (an install that needs anything else fails: nothing is fetched from the
//! internet), registers a user, and publishes the given tarballs with `npm publish`; dropping it
//! kills the server. A missing installation skips the test with the install command, and fails
//! it under `CI` and `scripts/test`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::net::free_port;
use crate::tools::tools_required;

/// The versions `scripts/test` installs (`PM_VERSIONS`; a test checks the two agree).
pub const VERSIONS: &str =
    "pnpm@12.25.1 yarn@1.22.22 @yarnpkg/cli-dist@4.18.1 bun@1.4.5 verdaccio@6.8.0";

/// The folder the package managers and Verdaccio are installed into.
pub fn pm_tools_dir() -> PathBuf {
    match std::env::var_os("VX_TEST_PM_TOOLS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.test-tools/pm"),
    }
}

/// `rel` under [`pm_tools_dir`]'s `node_modules`, or `None` (after saying the test is skipped)
/// when it is missing outside CI.
pub fn pm_file(rel: &str) -> Option<PathBuf> {
    let path = pm_tools_dir().join("node_modules").join(rel);
    if path.exists() {
        return Some(path);
    }
    let install = format!(
        "npm install --prefix {} {VERSIONS} (or run scripts/test, which installs them)",
        pm_tools_dir().display()
    );
    assert!(!tools_required(), "{rel} is missing: {install}");
    eprintln!("skipped: {rel} is missing: {install}");
    None
}

/// A package manager the tests drive, from [`pm_tools_dir`] (npm is the machine's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pm {
    Npm,
    Pnpm,
    Yarn1,
    Berry,
    Bun,
}

impl Pm {
    /// The program and the arguments before the package manager's own, or `None` (after
    /// saying the test is skipped) when it is not installed outside CI.
    pub fn program(self) -> Option<(PathBuf, Vec<PathBuf>)> {
        Some(match self {
            Pm::Npm => ("npm".into(), vec![]),
            Pm::Pnpm => ("node".into(), vec![pm_file("pnpm/bin/pnpm.mjs")?]),
            Pm::Yarn1 => ("node".into(), vec![pm_file("yarn/bin/yarn.js")?]),
            Pm::Berry => (
                "node".into(),
                vec![pm_file("@yarnpkg/cli-dist/bin/yarn.js")?],
            ),
            Pm::Bun => (pm_file("bun/bin/bun.exe")?, vec![]),
        })
    }

    /// How a workspace package names another: pnpm, Berry and bun want the `workspace:`
    /// protocol, npm refuses it.
    pub fn workspace_range(self) -> &'static str {
        match self {
            Pm::Npm | Pm::Yarn1 => "*",
            Pm::Pnpm | Pm::Berry | Pm::Bun => "workspace:*",
        }
    }

    /// The command a user types for it.
    pub fn command(self) -> &'static str {
        match self {
            Pm::Npm => "npm",
            Pm::Pnpm => "pnpm",
            Pm::Yarn1 | Pm::Berry => "yarn",
            Pm::Bun => "bun",
        }
    }

    /// Writes into `dir` an executable named [`Pm::command`] that runs this installation, for
    /// a program that finds the package manager on `PATH`; `None` when it is not installed
    /// outside CI.
    pub fn shim(self, dir: &Path) -> Option<()> {
        use std::os::unix::fs::PermissionsExt;
        let (program, pre) = self.program()?;
        if self == Pm::Npm {
            // The machine's own, on PATH already (a shim named npm would run itself).
            return Some(());
        }
        let words: Vec<String> = std::iter::once(program)
            .chain(pre)
            .map(|p| format!("'{}'", p.display()))
            .collect();
        let path = dir.join(self.command());
        std::fs::write(
            &path,
            format!("#!/bin/sh\nexec {} \"$@\"\n", words.join(" ")),
        )
        .expect("write a shim");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("make the shim executable");
        Some(())
    }
}

/// A running registry; killed when dropped.
pub struct Registry {
    child: Child,
    pub port: u16,
    /// The `.npmrc` lines that point a client at the registry with the publishing user's token.
    pub npmrc: String,
    dir: tempfile::TempDir,
}

impl Registry {
    /// Starts Verdaccio and publishes `tarballs` into it, or `None` when it is not installed
    /// outside CI.
    pub fn start(tarballs: &[PathBuf]) -> Option<Registry> {
        let verdaccio = pm_file("verdaccio/bin/verdaccio")?;
        let dir = tempfile::Builder::new()
            .prefix("vx-registry-")
            .tempdir()
            .expect("a temp dir");
        let port = free_port();
        // Verdaccio takes at most 10 MB a request unless told: a debug build of vx, which
        // `cargo test` alone packages, is about 46 MB stripped.
        let config = format!(
            "storage: {storage}\n\
             auth:\n  htpasswd:\n    file: {htpasswd}\n\
             uplinks: {{}}\n\
             packages:\n  '**':\n    access: $all\n    publish: $authenticated\n\
             listen: 127.0.0.1:{port}\n\
             max_body_size: 200mb\n\
             log: {{ type: stdout, format: pretty, level: warn }}\n",
            storage = dir.path().join("storage").display(),
            htpasswd = dir.path().join("htpasswd").display(),
        );
        let config_path = dir.path().join("config.yaml");
        std::fs::write(&config_path, config).expect("write the registry config");
        let log = std::fs::File::create(dir.path().join("server.log")).expect("a log file");
        let child = Command::new("node")
            .arg(&verdaccio)
            .arg("--config")
            .arg(&config_path)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().expect("a log handle")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start node");
        let mut registry = Registry {
            child,
            port,
            npmrc: String::new(),
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while http(port, "GET", "/-/ping", "").is_none_or(|(status, _)| status != 200) {
            assert!(
                Instant::now() < deadline,
                "Verdaccio did not answer on port {port}: {}",
                registry.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let (status, body) = http(
            port,
            "PUT",
            "/-/user/org.couchdb.user:vx",
            r#"{"name":"vx","password":"vx-test-password"}"#,
        )
        .expect("Verdaccio answers");
        assert_eq!(status, 201, "adding a user: {body}");
        let token = body
            .split("\"token\"")
            .nth(1)
            .and_then(|rest| rest.split('"').nth(1))
            .expect("a token")
            .to_string();
        registry.npmrc = format!(
            "registry={url}/\n//127.0.0.1:{port}/:_authToken={token}\n",
            url = registry.url()
        );
        let userconfig = registry.dir.path().join("publish.npmrc");
        std::fs::write(&userconfig, &registry.npmrc).expect("write .npmrc");
        for tarball in tarballs {
            let out = Command::new("npm")
                .arg("publish")
                .arg(tarball)
                .arg("--userconfig")
                .arg(&userconfig)
                .args(["--access", "public", "--no-provenance"])
                .arg("--cache")
                .arg(registry.dir.path().join("npm-cache"))
                .current_dir(registry.dir.path())
                .output()
                .expect("run npm publish");
            assert!(
                out.status.success(),
                "npm publish {}: {}{}",
                tarball.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Some(registry)
    }

    /// Stops the server (a test of what a dead registry does); the port then refuses.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What the server logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// A scratch directory that lives as long as the registry (package-manager caches).
    pub fn scratch(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::create_dir_all(&path).expect("a scratch directory");
        path
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.0 request to the registry: the status and the body.
fn http(port: u16, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let request = format!(
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer.split(' ').nth(1)?.parse().ok()?;
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((status, body))
}

/// Whether `path` is an executable regular file.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
