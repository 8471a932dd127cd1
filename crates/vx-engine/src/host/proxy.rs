//! The sandbox's network proxy (SBX-6): the only way out of a sandboxed task's network
//! namespace, and only to the hosts its `sandbox.network` lists.
//!
//! How this works: every sandboxed task gets a [`TaskProxy`], a Unix socket in the run's
//! scratch directory that is mounted into the sandbox, where the sandbox's init bridges it to
//! `127.0.0.1:39128` on the sandbox's own loopback; the task's `HTTP_PROXY` and friends point
//! there. The socket a connection arrives on is the task it comes from, so each request is
//! checked against that task's own list. A request is either `CONNECT host:port` (a tunnel,
//! for HTTPS or anything else) or a plain-HTTP request with an absolute URL, which is passed on
//! with an origin-form request line and a `Host` header naming the host that was checked, one
//! request per connection (`Connection: close`; only the request's own body follows it). Names are resolved here, on the host. A refused request
//! gets `403 Forbidden` and is reported to the loop as a violation (`net host:port`).
//! Each connection has a thread of its own (two while tunnelling), as does each socket's
//! accept loop, which ends when the proxy is dropped.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long connecting to an allowed host may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// The longest request head read (request line and headers).
const MAX_HEAD: usize = 64 * 1024;

/// One entry of `sandbox.network`, as checked at load (`task_tables::host_pattern_problem`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    /// Lower case, without the `*.` of a subdomain pattern.
    name: String,
    /// `*.example.com`: any name below `example.com`, not `example.com` itself.
    subdomains: bool,
    /// `None`: 80 and 443.
    port: Option<u16>,
}

impl HostPattern {
    /// `None` for text the loader would have refused.
    pub fn parse(text: &str) -> Option<HostPattern> {
        let (host, port) = match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port.parse::<u16>().ok()?)),
            None => (text, None),
        };
        let (name, subdomains) = match host.strip_prefix("*.") {
            Some(name) => (name, true),
            None => (host, false),
        };
        (!name.is_empty()).then(|| HostPattern {
            name: name.to_ascii_lowercase(),
            subdomains,
            port,
        })
    }

    /// `localhost`: requests to the host's loopback interface.
    fn is_localhost(&self) -> bool {
        self.name == "localhost" && !self.subdomains
    }

    fn allows(&self, host: &str, port: u16) -> bool {
        let port_ok = match self.port {
            Some(p) => p == port,
            None => port == 80 || port == 443,
        };
        let host = host.to_ascii_lowercase();
        let name_ok = if self.is_localhost() {
            matches!(host.as_str(), "localhost" | "127.0.0.1" | "::1")
        } else if self.subdomains {
            host.strip_suffix(&self.name)
                .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
        } else {
            host == self.name
        };
        port_ok && name_ok
    }
}

/// A task's end of the proxy: its socket and its accept loop, stopped when dropped.
pub struct TaskProxy {
    socket: PathBuf,
    stop: Arc<AtomicBool>,
    /// The connections being served, shut down when the proxy goes.
    open: Arc<Mutex<HashMap<u64, UnixStream>>>,
}

impl TaskProxy {
    /// Listens on `socket` for a task allowed `patterns`; `refused` hears each refused
    /// `host:port`, from the connection's thread.
    pub fn start(
        socket: &Path,
        patterns: Vec<HostPattern>,
        refused: impl Fn(String) + Send + Sync + 'static,
    ) -> io::Result<TaskProxy> {
        let listener = UnixListener::bind(socket)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let patterns = Arc::new(patterns);
        let refused: Arc<dyn Fn(String) + Send + Sync> = Arc::new(refused);
        let open: Arc<Mutex<HashMap<u64, UnixStream>>> = Arc::default();
        let registry = Arc::clone(&open);
        std::thread::Builder::new()
            .name("vx-proxy".into())
            .spawn(move || {
                for client in listener.incoming() {
                    if stopped.load(Ordering::Acquire) {
                        return;
                    }
                    let Ok(client) = client else {
                        // Out of descriptors, say: do not spin.
                        std::thread::sleep(Duration::from_millis(50));
                        continue;
                    };
                    let patterns = Arc::clone(&patterns);
                    let refused = Arc::clone(&refused);
                    let registry = Arc::clone(&registry);
                    let id = NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed);
                    if let Ok(copy) = client.try_clone() {
                        lock(&registry).insert(id, copy);
                    }
                    let _ = std::thread::Builder::new()
                        .name("vx-proxy-conn".into())
                        .spawn(move || {
                            if let Err(error) = serve(client, &patterns, &*refused) {
                                tracing::debug!(%error, "proxied connection ended");
                            }
                            lock(&registry).remove(&id);
                        });
                }
            })?;
        Ok(TaskProxy {
            socket: socket.to_path_buf(),
            stop,
            open,
        })
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

impl Drop for TaskProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wakes the accept loop, which sees the flag and ends.
        let _ = UnixStream::connect(&self.socket);
        let _ = std::fs::remove_file(&self.socket);
        // Ends the connections still being served: their copies see the end and finish.
        for connection in lock(&self.open).values() {
            let _ = connection.shutdown(Shutdown::Both);
        }
    }
}

static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(0);

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The environment of a task behind `proxy` (SBX-6). The sandbox's own loopback is reached
/// directly, unless the task may reach the host's (`localhost`), which then goes through the
/// proxy.
pub fn environment(patterns: &[HostPattern]) -> Vec<(String, String)> {
    let url = format!("http://127.0.0.1:{}", vx_exec::sandbox_init::PROXY_PORT);
    let no_proxy = if patterns.iter().any(HostPattern::is_localhost) {
        String::new()
    } else {
        "localhost,127.0.0.1,::1".to_string()
    };
    let mut env = Vec::new();
    for name in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "http_proxy",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        env.push((name.to_string(), url.clone()));
    }
    env.push(("NO_PROXY".to_string(), no_proxy.clone()));
    env.push(("no_proxy".to_string(), no_proxy));
    env
}

/// One client connection: its request, checked, then passed on both ways.
fn serve(client: UnixStream, patterns: &[HostPattern], refused: &dyn Fn(String)) -> io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let n = reader
            .by_ref()
            .take(MAX_HEAD as u64)
            .read_until(b'\n', &mut head)?;
        if n == 0 || head.len() >= MAX_HEAD {
            return answer(
                &client,
                "400 Bad Request",
                "vx proxy: an incomplete request\n",
            );
        }
        if head[before..] == *b"\r\n" || head[before..] == *b"\n" {
            break;
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut lines = text.split("\r\n").flat_map(|l| l.split('\n'));
    let request_line = lines.next().unwrap_or_default();
    let mut words = request_line.split(' ');
    let (method, target, version) = (
        words.next().unwrap_or_default(),
        words.next().unwrap_or_default(),
        words.next().unwrap_or("HTTP/1.1"),
    );
    let tunnel = method.eq_ignore_ascii_case("CONNECT");
    let parsed = if tunnel {
        split_host_port(target, None)
    } else {
        absolute_url(target)
    };
    let Some((host, port, path)) = parsed else {
        return answer(
            &client,
            "400 Bad Request",
            "vx proxy: send an absolute http:// URL or CONNECT host:port\n",
        );
    };
    let shown = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let Some(pattern) = patterns.iter().find(|p| p.allows(&host, port)) else {
        refused(shown.clone());
        return answer(
            &client,
            "403 Forbidden",
            &format!("vx: {shown} is not in this task's sandbox.network\n"),
        );
    };
    let upstream = match connect(&host, port, pattern.is_localhost()) {
        Ok(stream) => stream,
        Err(Refusal::Loopback) => {
            refused(shown.clone());
            return answer(
                &client,
                "403 Forbidden",
                &format!(
                    "vx: {shown} resolves to the host's loopback, which only `localhost` grants\n"
                ),
            );
        }
        Err(Refusal::Failed(error)) => {
            return answer(
                &client,
                "502 Bad Gateway",
                &format!("vx proxy: cannot connect to {shown}: {error}\n"),
            );
        }
    };
    let mut upstream_write = upstream.try_clone()?;
    // How much of what the client sends after the head goes upstream: all of it for a
    // tunnel; for a plain request only its body, so a second request on the connection
    // cannot reach a host nobody checked.
    let body = if tunnel {
        (&client).write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
        Body::All
    } else {
        // The request again, in origin form, for the host that was checked, without the
        // proxy's own headers, closed after one response.
        let authority = match (host.contains(':'), port) {
            (true, 80) => format!("[{host}]"),
            (true, _) => format!("[{host}]:{port}"),
            (false, 80) => host.clone(),
            (false, _) => format!("{host}:{port}"),
        };
        let mut again = format!("{method} {path} {version}\r\nHost: {authority}\r\n");
        let mut body = Body::Bytes(0);
        for line in lines.filter(|l| !l.is_empty()) {
            let (name, value) = line.split_once(':').unwrap_or((line, ""));
            let name = name.trim();
            if name.eq_ignore_ascii_case("content-length") {
                body = Body::Bytes(value.trim().parse().unwrap_or(0));
            }
            if name.eq_ignore_ascii_case("transfer-encoding") {
                body = Body::All;
            }
            if [
                "host",
                "proxy-connection",
                "proxy-authorization",
                "connection",
                "keep-alive",
            ]
            .iter()
            .any(|h| name.eq_ignore_ascii_case(h))
            {
                continue;
            }
            again.push_str(line);
            again.push_str("\r\n");
        }
        again.push_str("Connection: close\r\n\r\n");
        upstream_write.write_all(again.as_bytes())?;
        body
    };
    // What the client sent after the head (a body, or the tunnel's first bytes) is still in
    // the reader's buffer: the copy upstream starts from the reader. When either direction
    // ends, both connections are shut down, so neither copy outlives the exchange.
    let mut client_write = client.try_clone()?;
    let (client_end, upstream_end) = (client.try_clone()?, upstream.try_clone()?);
    let to_upstream = std::thread::Builder::new()
        .name("vx-proxy-up".into())
        .spawn(move || {
            let copied = match body {
                Body::All => io::copy(&mut reader, &mut upstream_write).map(|_| true),
                Body::Bytes(n) => io::copy(&mut reader.take(n), &mut upstream_write).map(|_| false),
            };
            if matches!(copied, Ok(true) | Err(_)) {
                let _ = client_end.shutdown(Shutdown::Both);
                let _ = upstream_end.shutdown(Shutdown::Both);
            }
        })?;
    let mut upstream_read = upstream;
    let _ = io::copy(&mut upstream_read, &mut client_write);
    let _ = client_write.shutdown(Shutdown::Both);
    let _ = upstream_read.shutdown(Shutdown::Both);
    let _ = to_upstream.join();
    Ok(())
}

/// What of the client's stream after the request head goes upstream.
#[derive(Clone, Copy)]
enum Body {
    /// Everything, until the client closes (a tunnel, or a chunked body).
    All,
    /// This many bytes (`Content-Length`; none without it).
    Bytes(u64),
}

enum Refusal {
    /// A name that is not `localhost` resolved to the host's loopback.
    Loopback,
    Failed(io::Error),
}

/// Resolves `host` and connects to the first address that answers. Only a `localhost` grant
/// reaches the host's loopback interface, whatever a name resolves to.
fn connect(host: &str, port: u16, localhost: bool) -> Result<TcpStream, Refusal> {
    let addresses: Vec<std::net::SocketAddr> = if localhost {
        vec![(std::net::Ipv4Addr::LOCALHOST, port).into()]
    } else {
        (host, port)
            .to_socket_addrs()
            .map_err(Refusal::Failed)?
            .collect()
    };
    let local = |address: &std::net::SocketAddr| {
        let ip = match address.ip() {
            std::net::IpAddr::V6(v6) => v6
                .to_ipv4_mapped()
                .map_or(std::net::IpAddr::V6(v6), std::net::IpAddr::V4),
            ip => ip,
        };
        ip.is_loopback() || ip.is_unspecified()
    };
    if !localhost && addresses.iter().any(local) {
        return Err(Refusal::Loopback);
    }
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the name has no address");
    for address in addresses {
        match TcpStream::connect_timeout(&address, CONNECT_TIMEOUT) {
            Ok(stream) => return Ok(stream),
            Err(error) => last = error,
        }
    }
    Err(Refusal::Failed(last))
}

/// `host:port` (`[v6]:port`), with `default` when the port is missing.
fn split_host_port(text: &str, default: Option<u16>) -> Option<(String, u16, String)> {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(port) => port.parse().ok()?,
            None if after.is_empty() => default?,
            None => return None,
        };
        (host.to_string(), port)
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host.to_string(), port.parse().ok()?),
            None => (text.to_string(), default?),
        }
    };
    (!host.is_empty()).then_some((host, port, String::new()))
}

/// `http://host[:port][/path]`: host, port (80 by default) and the path (`/` at least).
fn absolute_url(target: &str) -> Option<(String, u16, String)> {
    let rest = target
        .strip_prefix("http://")
        .or_else(|| target.strip_prefix("HTTP://"))?;
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    // Credentials in the URL are not the proxy's business; the host follows them.
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port, _) = split_host_port(authority, Some(80))?;
    Some((host, port, path.to_string()))
}

/// A short answer from the proxy itself, then the connection closes.
fn answer(mut client: &UnixStream, status: &str, body: &str) -> io::Result<()> {
    write!(
        client,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    client.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> HostPattern {
        HostPattern::parse(text).expect("a pattern")
    }

    #[test]
    fn patterns_match_hosts_and_ports() {
        assert!(p("example.com").allows("example.com", 443));
        assert!(p("example.com").allows("EXAMPLE.com", 80));
        assert!(!p("example.com").allows("example.com", 8080));
        assert!(!p("example.com").allows("www.example.com", 443));
        assert!(p("*.example.com").allows("www.example.com", 443));
        assert!(p("*.example.com").allows("a.b.example.com", 80));
        assert!(!p("*.example.com").allows("example.com", 443));
        assert!(!p("*.example.com").allows("badexample.com", 443));
        assert!(p("registry.npmjs.org:8443").allows("registry.npmjs.org", 8443));
        assert!(!p("registry.npmjs.org:8443").allows("registry.npmjs.org", 443));
        assert!(p("localhost:5000").allows("127.0.0.1", 5000));
        assert!(p("localhost:5000").allows("localhost", 5000));
        assert!(!p("localhost:5000").allows("127.0.0.2", 5000));
        assert_eq!(HostPattern::parse("x:notaport"), None);
    }

    #[test]
    fn request_targets_are_split() {
        assert_eq!(
            absolute_url("http://user:pw@example.com:8080/a/b?c"),
            Some(("example.com".into(), 8080, "/a/b?c".into()))
        );
        assert_eq!(
            absolute_url("http://example.com"),
            Some(("example.com".into(), 80, "/".into()))
        );
        assert_eq!(absolute_url("/relative"), None);
        assert_eq!(
            split_host_port("[::1]:443", None),
            Some(("::1".into(), 443, String::new()))
        );
        assert_eq!(split_host_port("example.com", None), None);
    }

    #[test]
    fn the_host_loopback_needs_the_localhost_grant() {
        for name in ["localhost", "127.0.0.1", "::ffff:127.0.0.1", "0.0.0.0"] {
            assert!(
                matches!(connect(name, 1, false), Err(Refusal::Loopback)),
                "{name}"
            );
        }
    }

    #[test]
    fn the_environment_sends_the_sandbox_loopback_direct_unless_localhost_is_granted() {
        let env = environment(&[p("example.com")]);
        assert!(env.contains(&("NO_PROXY".into(), "localhost,127.0.0.1,::1".into())));
        assert!(env.contains(&("HTTPS_PROXY".into(), "http://127.0.0.1:39128".into())));
        let env = environment(&[p("localhost:3000")]);
        assert!(env.contains(&("NO_PROXY".into(), String::new())));
    }
}
