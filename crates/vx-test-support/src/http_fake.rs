//! An in-process HTTP server for fault injection beside the real `turborepo-remote-cache`
//! (REM-15 allows one next to the real server, never instead of it): it answers each artifact
//! request as a test scripts it — a status, a body (damaged, truncated), or nothing at all.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the fake answers a request.
#[derive(Debug, Clone)]
pub enum Answer {
    /// This status with an empty body.
    Status(u16),
    /// 200 with these bytes.
    Body(Vec<u8>),
    /// 200 declaring `declared` bytes but sending only these, then closing.
    Truncated { bytes: Vec<u8>, declared: usize },
    /// Read the request and never answer (the connection stays open).
    Silence,
    /// 404 once this file exists (waiting up to 60 s); the request is then recorded in
    /// [`FakeHttpCache::seen`] as `RELEASED <path>` when the file was there, `GAVE UP <path>`
    /// when it never came.
    When(std::path::PathBuf),
    /// 202 to an upload (`PUT`, its body dropped), 404 to anything else: a server that costs
    /// nothing to store into.
    Null,
}

#[derive(Default)]
struct Script {
    /// By key (the last path segment); requests for other keys get `default`.
    by_key: HashMap<String, Answer>,
    default: Option<Answer>,
    /// `METHOD path` of every request, in order.
    seen: Vec<String>,
}

/// A running fake; it stops when the test process ends.
pub struct FakeHttpCache {
    pub port: u16,
    script: Arc<Mutex<Script>>,
}

impl FakeHttpCache {
    /// A fake answering 404 to everything until told otherwise.
    pub fn start() -> FakeHttpCache {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("an address").port();
        let script = Arc::new(Mutex::new(Script::default()));
        let shared = Arc::clone(&script);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let script = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, &script));
            }
        });
        FakeHttpCache { port, script }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request is answered `answer` (unless its key has its own).
    pub fn answer_all(&self, answer: Answer) {
        self.script.lock().expect("not poisoned").default = Some(answer);
    }

    /// Requests for `key` are answered `answer`.
    pub fn answer(&self, key: &str, answer: Answer) {
        self.script
            .lock()
            .expect("not poisoned")
            .by_key
            .insert(key.to_string(), answer);
    }

    /// `METHOD path` of every request so far.
    pub fn seen(&self) -> Vec<String> {
        self.script.lock().expect("not poisoned").seen.clone()
    }
}

fn serve(stream: TcpStream, script: &Mutex<Script>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut reader = BufReader::new(stream.try_clone().expect("a clone"));
    let mut stream = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let target = parts.next().unwrap_or("").to_string();
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let path = target.split('?').next().unwrap_or("");
        let key = path.rsplit('/').next().unwrap_or("").to_string();
        let answer = {
            let mut script = script.lock().expect("not poisoned");
            script.seen.push(format!("{method} {path}"));
            script
                .by_key
                .get(&key)
                .cloned()
                .or_else(|| script.default.clone())
                .unwrap_or(Answer::Status(404))
        };
        let answer = match answer {
            Answer::When(file) => {
                let start = std::time::Instant::now();
                while !file.exists() && start.elapsed() < Duration::from_secs(60) {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let word = if file.exists() { "RELEASED" } else { "GAVE UP" };
                script
                    .lock()
                    .expect("not poisoned")
                    .seen
                    .push(format!("{word} {path}"));
                Answer::Status(404)
            }
            other => other,
        };
        let head_only = method == "HEAD";
        let written = match answer {
            Answer::Status(code) => write!(
                stream,
                "HTTP/1.1 {code} Scripted\r\ncontent-length: 0\r\n\r\n"
            ),
            Answer::Body(bytes) => write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n",
                bytes.len()
            )
            .and_then(|()| {
                if head_only {
                    Ok(())
                } else {
                    stream.write_all(&bytes)
                }
            }),
            Answer::Truncated { bytes, declared } => {
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-length: {declared}\r\n\r\n"
                );
                let _ = stream.write_all(&bytes);
                return;
            }
            Answer::Silence => {
                std::thread::sleep(Duration::from_secs(120));
                return;
            }
            Answer::When(_) => unreachable!("answered 404 above"),
            Answer::Null => {
                let code = if method == "PUT" { 202 } else { 404 };
                write!(stream, "HTTP/1.1 {code} Null\r\ncontent-length: 0\r\n\r\n")
            }
        };
        if written.is_err() || stream.flush().is_err() {
            return;
        }
    }
}
