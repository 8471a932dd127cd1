//! A TCP proxy between a client and a real server on loopback that makes the server behave as if
//! it were on another machine: every byte arrives half a round trip after it was sent, a new
//! connection costs a round trip before its first byte, and — for faults — the server's answers
//! can drip a byte at a time or stop altogether while the server itself keeps running.
//!
//! Each connection is four threads: a reader and a writer per direction, joined by a channel of
//! `(due, bytes)` so bytes in flight overlap as on a real link (the delay is per byte, not per
//! request; bandwidth is not limited). `bench/remote.py` runs it as the `vx-latency-proxy`
//! program; tests start it in-process with [`LatencyProxy::start`].

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// What the proxy does to the traffic.
#[derive(Debug, Clone, Copy, Default)]
pub struct Link {
    /// The round trip it adds: each direction is delayed by half, and a new connection waits
    /// one whole round trip (the handshake) before its first byte goes through.
    pub round_trip: Duration,
    /// Each byte of the server's answers is sent on its own, this long after the last one (a
    /// server that answers a byte a second holds a client whose idle timeout resets on every
    /// byte).
    pub drip: Option<Duration>,
}

/// A running proxy; stopped (listener closed, connections cut) when dropped.
pub struct LatencyProxy {
    addr: SocketAddr,
    stopped: Arc<AtomicBool>,
    stalled: Arc<AtomicBool>,
    connections: Arc<AtomicU64>,
}

impl LatencyProxy {
    /// Listens on a free loopback port and forwards every connection to `target`.
    pub fn start(target: SocketAddr, link: Link) -> LatencyProxy {
        Self::listen(
            TcpListener::bind("127.0.0.1:0").expect("bind"),
            target,
            link,
        )
    }

    /// Forwards the connections of `listener` to `target`.
    pub fn listen(listener: TcpListener, target: SocketAddr, link: Link) -> LatencyProxy {
        let addr = listener.local_addr().expect("a local address");
        let stopped = Arc::new(AtomicBool::new(false));
        let stalled = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(AtomicU64::new(0));
        let state = Shared {
            stopped: stopped.clone(),
            stalled: stalled.clone(),
        };
        let count = connections.clone();
        thread::spawn(move || {
            for client in listener.incoming() {
                if state.stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                count.fetch_add(1, Ordering::SeqCst);
                let state = state.clone();
                thread::spawn(move || connection(client, target, link, state));
            }
        });
        LatencyProxy {
            addr,
            stopped,
            stalled,
            connections,
        }
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// From now on nothing goes through in either direction, as when a server hangs or a
    /// link dies without a reset: connections stay open and silent.
    pub fn stall(&self) {
        self.stalled.store(true, Ordering::SeqCst);
    }

    /// The connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for LatencyProxy {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

#[derive(Clone)]
struct Shared {
    stopped: Arc<AtomicBool>,
    stalled: Arc<AtomicBool>,
}

fn connection(client: TcpStream, target: SocketAddr, link: Link, state: Shared) {
    let Ok(server) = TcpStream::connect(target) else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let opened = Instant::now() + link.round_trip;
    let half = link.round_trip / 2;
    let pipes = [
        (client.try_clone(), server.try_clone(), None),
        (server.try_clone(), client.try_clone(), link.drip),
    ];
    let mut threads = Vec::new();
    for (from, to, drip) in pipes {
        let (Ok(from), Ok(to)) = (from, to) else {
            return;
        };
        let state = state.clone();
        threads.push(thread::spawn(move || {
            pipe(from, to, opened, half, drip, state)
        }));
    }
    for thread in threads {
        let _ = thread.join();
    }
}

/// Copies `from` to `to`, each chunk half a round trip after it was read (and not before the
/// connection is "open").
fn pipe(
    mut from: TcpStream,
    to: TcpStream,
    opened: Instant,
    half: Duration,
    drip: Option<Duration>,
    state: Shared,
) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    let writer_state = state.clone();
    let writer = thread::spawn(move || {
        let mut to = to;
        for (due, bytes) in rx {
            sleep_until(due);
            while writer_state.stalled.load(Ordering::SeqCst)
                && !writer_state.stopped.load(Ordering::SeqCst)
            {
                thread::sleep(Duration::from_millis(20));
            }
            if writer_state.stopped.load(Ordering::SeqCst) {
                break;
            }
            let written = match drip {
                Some(every) => bytes.iter().try_for_each(|b| {
                    thread::sleep(every);
                    to.write_all(std::slice::from_ref(b))
                }),
                None => to.write_all(&bytes),
            };
            if written.is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let due = Instant::now().max(opened) + half;
        if tx.send((due, buffer[..n].to_vec())).is_err() {
            break;
        }
    }
    drop(tx);
    let _ = writer.join();
}

fn sleep_until(due: Instant) {
    let now = Instant::now();
    if due > now {
        thread::sleep(due - now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo server on loopback.
    fn echo() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                thread::spawn(move || {
                    let mut stream = stream;
                    let mut reader = stream.try_clone().unwrap();
                    let _ = std::io::copy(&mut reader, &mut stream);
                });
            }
        });
        addr
    }

    fn round_trip(stream: &mut TcpStream) -> Duration {
        let started = Instant::now();
        stream.write_all(b"ping").unwrap();
        let mut answer = [0u8; 4];
        stream.read_exact(&mut answer).unwrap();
        assert_eq!(&answer, b"ping");
        started.elapsed()
    }

    #[test]
    fn a_request_costs_a_round_trip_and_a_new_connection_one_more() {
        let rtt = Duration::from_millis(60);
        let proxy = LatencyProxy::start(
            echo(),
            Link {
                round_trip: rtt,
                drip: None,
            },
        );
        let mut stream = TcpStream::connect(proxy.addr()).unwrap();
        let first = round_trip(&mut stream);
        assert!(first >= rtt * 2, "handshake and request: {first:?}");
        let second = round_trip(&mut stream);
        assert!(second >= rtt, "a kept connection: {second:?}");
        assert_eq!(proxy.connections(), 1);
    }

    #[test]
    fn a_stalled_link_lets_nothing_through() {
        let proxy = LatencyProxy::start(echo(), Link::default());
        let mut stream = TcpStream::connect(proxy.addr()).unwrap();
        round_trip(&mut stream);
        proxy.stall();
        stream
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        stream.write_all(b"ping").unwrap();
        let mut answer = [0u8; 4];
        let error = stream.read_exact(&mut answer).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::WouldBlock, "{error}");
    }

    #[test]
    fn a_dripping_answer_comes_a_byte_at_a_time() {
        let every = Duration::from_millis(40);
        let proxy = LatencyProxy::start(
            echo(),
            Link {
                round_trip: Duration::ZERO,
                drip: Some(every),
            },
        );
        let mut stream = TcpStream::connect(proxy.addr()).unwrap();
        let took = round_trip(&mut stream);
        assert!(took >= every * 4, "four bytes, one at a time: {took:?}");
    }
}
