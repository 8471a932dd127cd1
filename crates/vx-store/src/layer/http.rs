//! The HTTP cache layer (REM-3): a server speaking the Turborepo `/v8/artifacts` API, such as
//! `turborepo-remote-cache`.
//!
//! How this works: every request goes to `<url>/v8/artifacts/<key>?slug=<team>` (or
//! `teamId=<team>`) with `Authorization: Bearer <token>` when a token is set. `GET` downloads
//! (200: the body, streamed into the caller's file under the size cap; 404: a miss), `HEAD`
//! checks existence, `PUT` uploads the artifact file streamed from disk with
//! `Content-Type: application/octet-stream` and `x-artifact-duration`. The body is the local
//! artifact format, so the caller validates it like any other.
//!
//! With a signing key (REM-16) an upload carries `x-artifact-tag`: the base64 of HMAC-SHA256,
//! keyed with the signing key, over the key's 64 hex digits, the team value as sent and the
//! artifact bytes (the scheme of Turborepo before 2.11, whose tags no longer verify under it); a
//! download is accepted only when its tag verifies,
//! compared in constant time, else it is a miss of the class `bad signature`. The file is read
//! twice (tag, then body), never held whole in memory.
//!
//! The client is `ureq` 2: blocking (vx's layers run on threads, not an async runtime) and with
//! a per-read socket timeout, which is exactly REM-2's `idle-timeout` (a transfer with no progress
//! for that long fails). Each request runs on a thread of its own that the caller waits for until
//! `request-timeout` (`HttpLayer::within`), so one answered a byte at a time still ends.
//! Errors are sorted into REM-7's kinds; their text never holds the token or the query string.

use std::error::Error as _;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::{CacheLayer, ErrorKind, LayerError};

/// How the team is sent (REM-2): `slug=<team>` or `teamId=<team-id>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Team {
    Slug(String),
    Id(String),
}

/// What an [`HttpLayer`] needs.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// `http://…` or `https://…`, a path prefix kept.
    pub url: String,
    pub team: Team,
    /// The bearer token, read from `token-env` by the caller; `None`: no credentials.
    pub token: Option<String>,
    pub connect_timeout: Duration,
    pub idle_timeout: Duration,
    /// The whole request, its body included, ends within this (a server that answers a byte
    /// at a time never trips the idle timeout).
    pub request_timeout: Duration,
    /// Connections kept open for reuse: as many as requests may be in flight.
    pub connections: usize,
    /// The signing key's bytes (REM-16), when signing is on.
    pub signing_key: Option<Vec<u8>>,
}

/// See the module documentation.
pub struct HttpLayer {
    /// The URL as messages show it: without credentials or query.
    name: String,
    /// The URL without a trailing `/`.
    base: String,
    /// `slug=<team>` or `teamId=<team-id>`, percent-encoded.
    team_query: String,
    token: Option<String>,
    agent: ureq::Agent,
    request_timeout: Duration,
    /// The team value as sent, which the signature covers.
    team: String,
    signing_key: Option<Vec<u8>>,
}

impl HttpLayer {
    pub fn new(config: HttpConfig) -> HttpLayer {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(config.connect_timeout)
            .timeout_read(config.idle_timeout)
            .timeout_write(config.idle_timeout)
            .max_idle_connections(config.connections.max(1))
            .max_idle_connections_per_host(config.connections.max(1))
            .build();
        let base = config.url.trim_end_matches('/').to_string();
        let (team_query, team) = match &config.team {
            Team::Slug(team) => (format!("slug={}", encode(team)), team.clone()),
            Team::Id(team) => (format!("teamId={}", encode(team)), team.clone()),
        };
        HttpLayer {
            name: shown_url(&base),
            base,
            team_query,
            token: config.token,
            agent,
            request_timeout: config.request_timeout,
            team,
            signing_key: config.signing_key,
        }
    }

    /// Runs one request on a thread of its own and waits for it until the request timeout:
    /// ureq's idle timeouts start again with every byte, so a server that answers a byte at a
    /// time would otherwise hold the caller for ever. A request still going at the deadline is
    /// left to its thread, which its idle timeout ends; the thread owns all it touches (the
    /// request, an open file), so nothing is left behind at a path.
    fn within<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> Result<T, LayerError> + Send + 'static,
    ) -> Result<T, LayerError> {
        let (tx, rx) = mpsc::sync_channel(1);
        let spawned = thread::Builder::new()
            .name("vx-http".into())
            .spawn(move || {
                let _ = tx.send(work());
            });
        if let Err(error) = spawned {
            return Err(LayerError::new(
                ErrorKind::Io,
                format!("cannot start a thread: {error}"),
            ));
        }
        match rx.recv_timeout(self.request_timeout) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(LayerError::new(
                ErrorKind::Timeout,
                format!(
                    "no answer within the request timeout ({} s)",
                    self.request_timeout.as_secs_f64()
                ),
            )),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                Err(LayerError::new(ErrorKind::Connection, "the request failed"))
            }
        }
    }

    fn request(&self, method: &str, key: &str) -> ureq::Request {
        let url = format!("{}/v8/artifacts/{key}?{}", self.base, self.team_query);
        let request = self.agent.request(method, &url);
        match &self.token {
            Some(token) => request.set("Authorization", &format!("Bearer {token}")),
            None => request,
        }
    }
}

impl CacheLayer for HttpLayer {
    fn name(&self) -> &str {
        &self.name
    }

    fn contains(&self, key: &str) -> Result<bool, LayerError> {
        let request = self.request("HEAD", key);
        let has_token = self.token.is_some();
        self.within(move || match request.call() {
            Ok(_) => Ok(true),
            Err(ureq::Error::Status(404, _)) => Ok(false),
            Err(error) => Err(failure(error, has_token)),
        })
    }

    fn fetch(&self, key: &str, dest: &Path, cap: u64) -> Result<bool, LayerError> {
        let request = self.request("GET", key);
        let has_token = self.token.is_some();
        let signed = self.signing_key.is_some();
        let file = File::create(dest).map_err(local_io(dest))?;
        let shown = dest.to_path_buf();
        let tag = self.within(move || {
            let response = match request.call() {
                Ok(response) => response,
                Err(ureq::Error::Status(404, _)) => return Ok(None),
                Err(error) => return Err(failure(error, has_token)),
            };
            receive(response, file, &shown, cap, signed).map(Some)
        })?;
        let Some(tag) = tag else {
            return Ok(false);
        };
        if let (Some(signing_key), Some(tag)) = (&self.signing_key, tag) {
            let mac = self
                .mac_of(signing_key, key, dest)
                .map_err(local_io(dest))?;
            let tag = base64::engine::general_purpose::STANDARD
                .decode(tag.trim())
                .map_err(|_| bad_signature())?;
            mac.verify_slice(&tag).map_err(|_| bad_signature())?;
        }
        Ok(true)
    }

    fn put(&self, key: &str, artifact: &Path, duration_ms: u64) -> Result<(), LayerError> {
        let file = File::open(artifact).map_err(local_io(artifact))?;
        let size = file.metadata().map_err(local_io(artifact))?.len();
        let mut request = self
            .request("PUT", key)
            .set("Content-Type", "application/octet-stream")
            .set("Content-Length", &size.to_string())
            .set("x-artifact-duration", &duration_ms.to_string());
        if let Some(signing_key) = &self.signing_key {
            let mac = self
                .mac_of(signing_key, key, artifact)
                .map_err(local_io(artifact))?;
            let tag = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
            request = request.set("x-artifact-tag", &tag);
        }
        let has_token = self.token.is_some();
        self.within(move || match request.send(file) {
            Ok(response) if (200..300).contains(&response.status()) => {
                // Read to its end, the connection goes back to the pool for the next upload
                // (a new one costs a round trip more).
                let _ = io::copy(&mut response.into_reader(), &mut io::sink());
                Ok(())
            }
            Ok(response) => Err(LayerError::new(
                ErrorKind::Status,
                format!("HTTP {}", response.status()),
            )),
            Err(error) => Err(failure(error, has_token)),
        })
    }
}

impl HttpLayer {
    /// REM-16's HMAC over the key's hex digits, the team as sent and the file's bytes.
    fn mac_of(&self, signing_key: &[u8], key: &str, file: &Path) -> io::Result<Hmac<Sha256>> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(signing_key)
            .map_err(|_| io::Error::other("an unusable signing key"))?;
        mac.update(key.as_bytes());
        mac.update(self.team.as_bytes());
        let mut file = File::open(file)?;
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let n = file.read(&mut buffer)?;
            if n == 0 {
                return Ok(mac);
            }
            mac.update(&buffer[..n]);
        }
    }
}

/// An answer's body into `file`: at most `cap` bytes, all the bytes it declared, and the
/// signature tag it came with (required when `signed`).
fn receive(
    response: ureq::Response,
    mut file: File,
    dest: &Path,
    cap: u64,
    signed: bool,
) -> Result<Option<String>, LayerError> {
    if response.status() != 200 {
        return Err(LayerError::new(
            ErrorKind::Status,
            format!("HTTP {}", response.status()),
        ));
    }
    let declared = response
        .header("Content-Length")
        .and_then(|n| n.parse::<u64>().ok());
    let tag = response.header("x-artifact-tag").map(str::to_string);
    if signed && tag.is_none() {
        return Err(bad_signature());
    }
    if declared.is_some_and(|n| n > cap) {
        return Err(too_large(cap));
    }
    // One byte over the cap proves the body too large without reading the rest.
    let mut body = response.into_reader().take(cap + 1);
    let copied = io::copy(&mut body, &mut file).map_err(transfer_io)?;
    if copied > cap {
        return Err(too_large(cap));
    }
    if declared.is_some_and(|n| n != copied) {
        return Err(LayerError::new(
            ErrorKind::InvalidArtifact,
            format!(
                "the body ended after {copied} of {} bytes",
                declared.unwrap_or(0)
            ),
        ));
    }
    file.flush().map_err(local_io(dest))?;
    Ok(tag)
}

/// REM-7's kind of a failed request: a refusal of a request that carried no token says so
/// (ureq's errors say nothing of the token).
fn failure(error: ureq::Error, has_token: bool) -> LayerError {
    let refused = matches!(error, ureq::Error::Status(400 | 401 | 403, _));
    let mut failure = classify(error);
    if refused && !has_token {
        failure.kind = ErrorKind::NoToken;
    }
    failure
}

fn bad_signature() -> LayerError {
    LayerError::new(ErrorKind::BadSignature, "bad signature")
}

/// REM-7's kind of a request failure, in words without the URL (the warning names the layer).
fn classify(error: ureq::Error) -> LayerError {
    match error {
        ureq::Error::Status(code @ (401 | 403), _) => {
            LayerError::new(ErrorKind::Unauthorized, format!("HTTP {code}"))
        }
        ureq::Error::Status(code, _) => LayerError::new(ErrorKind::Status, format!("HTTP {code}")),
        ureq::Error::Transport(transport) => {
            let timed_out = transport
                .source()
                .and_then(|s| s.downcast_ref::<io::Error>())
                .is_some_and(|e| {
                    matches!(
                        e.kind(),
                        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
                    )
                });
            let kind = if timed_out {
                ErrorKind::Timeout
            } else {
                ErrorKind::Connection
            };
            // A certificate the trust store refuses fails the connection; say so in rustls's
            // words, as the REAPI layer does, rather than "connection refused".
            let text = transport.to_string();
            let certificate = text
                .find("invalid peer certificate")
                .map(|at| text[at..].to_string());
            let detail = match transport.kind() {
                _ if certificate.is_some() => certificate.unwrap_or_default(),
                ureq::ErrorKind::Dns => "the host name does not resolve".to_string(),
                ureq::ErrorKind::ConnectionFailed if timed_out => "connection timed out".into(),
                ureq::ErrorKind::ConnectionFailed => "connection refused".to_string(),
                ureq::ErrorKind::Io if timed_out => "no progress within the idle timeout".into(),
                ureq::ErrorKind::Io => "the connection broke".to_string(),
                ureq::ErrorKind::TooManyRedirects => "too many redirects".to_string(),
                ureq::ErrorKind::BadStatus | ureq::ErrorKind::BadHeader => {
                    "the server's answer is not HTTP".to_string()
                }
                _ => "the request failed".to_string(),
            };
            LayerError::new(kind, detail)
        }
    }
}

/// A failure while the body was moving: a timeout, or a broken connection.
fn transfer_io(error: io::Error) -> LayerError {
    match error.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
            LayerError::new(ErrorKind::Timeout, "no progress within the idle timeout")
        }
        _ => LayerError::new(ErrorKind::Connection, "the connection broke"),
    }
}

/// A local file could not be read or written.
/// A local file the layer could not read or write, named (the server is not at fault).
fn local_io(path: &Path) -> impl Fn(io::Error) -> LayerError + '_ {
    move |error| LayerError::new(ErrorKind::Io, format!("{}: {error}", path.display()))
}

fn too_large(cap: u64) -> LayerError {
    LayerError::new(
        ErrorKind::TooLarge,
        format!("the artifact is over max-download-size ({cap} bytes)"),
    )
}

/// The URL as messages show it: `user:password@` and any query or fragment removed.
pub fn shown_url(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = match rest.find('/') {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_string(),
    }
}

/// Percent-encodes a query value (RFC 3986 unreserved characters pass).
fn encode(value: &str) -> String {
    let mut out = String::new();
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A layer of team `team_vx` at a port nothing listens on.
    fn layer(signing_key: Option<&[u8]>) -> HttpLayer {
        HttpLayer::new(HttpConfig {
            url: "http://127.0.0.1:1".into(),
            team: Team::Slug("team_vx".into()),
            token: None,
            connect_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(1),
            request_timeout: Duration::from_secs(2),
            connections: 1,
            signing_key: signing_key.map(<[u8]>::to_vec),
        })
    }

    #[test]
    fn messages_show_the_url_without_credentials_or_query() {
        assert_eq!(
            shown_url("https://user:secret@cache.example.com/base?token=x#f"),
            "https://cache.example.com/base"
        );
        assert_eq!(shown_url("http://127.0.0.1:3033"), "http://127.0.0.1:3033");
    }

    #[test]
    fn the_tag_is_turborepos_hmac_over_key_team_and_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("artifact");
        std::fs::write(&file, b"artifact bytes").unwrap();
        let layer = layer(Some(b"signing-key"));
        let mac = layer
            .mac_of(b"signing-key", &"a".repeat(64), &file)
            .unwrap();
        let tag = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
        // python3: base64.b64encode(hmac.new(b'signing-key', b'a'*64 + b'team_vx' +
        //          b'artifact bytes', hashlib.sha256).digest())
        assert_eq!(tag, "8m3m2c94Rzkx7xrvWuDrSKaUooY2mbtOlHDr5jdiM2U=");
    }

    #[test]
    fn a_local_file_it_cannot_read_is_named_and_not_blamed_on_the_server() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("gone.tar.zst");
        let layer = layer(None);
        let error = layer.put(&"a".repeat(64), &missing, 5).unwrap_err();
        assert_eq!(error.kind, ErrorKind::Io);
        assert!(
            error
                .detail
                .starts_with(&format!("{}: ", missing.display())),
            "{}",
            error.detail
        );
    }

    #[test]
    fn team_values_are_percent_encoded() {
        assert_eq!(encode("team vx/1"), "team%20vx%2F1");
        assert_eq!(encode("team_vx-1.~"), "team_vx-1.~");
    }
}
