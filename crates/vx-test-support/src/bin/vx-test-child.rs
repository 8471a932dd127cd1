//! `vx-test-child`: the helper program that process-control tests spawn (TEST-2), so they need
//! no Node or Python and can find every process they created by a marker in its argv.
//!
//! ```text
//! vx-test-child [--marker M] ACTION...
//! ```
//!
//! Actions run left to right; after the last one the program exits 0. Every process it starts
//! is a copy of itself whose argv begins with the same `--marker M`.
//!
//! | action            | effect |
//! |-------------------|--------|
//! | `print TEXT`      | writes TEXT and a newline to stdout |
//! | `eprint TEXT`     | writes TEXT and a newline to stderr |
//! | `pid`             | writes `pid <n>` and a newline to stdout |
//! | `sleep SECS`      | sleeps (SECS may be fractional) |
//! | `forever`         | sleeps an hour, "forever" for a test, without leaving permanent litter if one fails |
//! | `ignore-term`     | blocks SIGTERM for this process, so it stays pending and never acts |
//! | `ignore-int`      | the same for SIGINT |
//! | `fork-tree N D... [-- L...]` | see below |
//! | `new-group`       | makes this process lead a process group of its own in the same session, as a shell with job control would (nothing to do if it leads one already, like a session leader) |
//! | `spawn-bg`        | starts a copy running `forever`; it inherits and so holds stdin, stdout and stderr |
//! | `flood BYTES`     | writes BYTES bytes (`x`, a newline every 64) to stdout |
//! | `eflood BYTES`    | the same to stderr |
//! | `flood-both BYTES`| BYTES to each of stdout and stderr, interleaved in 4 KiB pieces, so a reader that drains one stream before the other deadlocks |
//! | `alloc MIB`       | allocates MIB MiB, touches every page and keeps it until exit |
//! | `segv`            | dies of SIGSEGV (no core file) |
//! | `exit N`          | exits with code N at once |
//! | `read-stdin`      | reads stdin to end-of-file and writes what it read to stdout |
//! | `wait-stdin-eof`  | reads and discards stdin, then exits 0 at end-of-file |
//! | `tcp-get ADDR`    | connects to ADDR (`127.0.0.1:8080`) directly, sends `GET / HTTP/1.0`, writes the response to stdout; exits 1 with a line on stderr if it cannot |
//! | `proxy-get ADDR`  | the same through the HTTP proxy in `$HTTP_PROXY` (`http://host:port`), with `CONNECT ADDR`: a raw TCP connection through the proxy |
//!
//! `fork-tree N D... [-- L...]` makes a chain of N descendants (a child, its child, …) that each
//! run the descendant actions D (`forever` when D is empty), then this process goes on with
//! the actions L after `--`, or with D when there is no `--`. So:
//! - `fork-tree 2 sleep 300`: three processes (this one, a child, a grandchild) sleep 300 s;
//! - `fork-tree 2 --`: this process exits at once and leaves a child and a grandchild asleep;
//! - `fork-tree 1 ignore-term forever -- print ready`: a child that ignores SIGTERM stays,
//!   this process prints `ready` and exits.
//!
//! The child runs `fork-tree N-1 D...` (at N = 1, just `D...`); D cannot contain `--` itself.
//!
//! `ignore-term` and `ignore-int` apply to this process only (the copies it starts begin with
//! every signal unblocked), so give them to the copies too. A usage error exits 2.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::sys::resource::{setrlimit, Resource};
use nix::sys::signal::{raise, SigSet, Signal};
use nix::unistd::{getpgrp, getpid, setpgid, Pid};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let marker = if args.first().map(String::as_str) == Some("--marker") {
        if args.len() < 2 {
            usage("`--marker` needs a value");
        }
        let marker = args.remove(1);
        args.remove(0);
        Some(marker)
    } else {
        None
    };
    let mut held_memory: Vec<Vec<u8>> = Vec::new();
    let mut rest: VecDeque<String> = args.into();
    while let Some(action) = rest.pop_front() {
        let action = action.as_str();
        match action {
            "print" => {
                let text = operand(&mut rest, action);
                write_all(&mut std::io::stdout(), format!("{text}\n").as_bytes());
            }
            "eprint" => {
                let text = operand(&mut rest, action);
                write_all(&mut std::io::stderr(), format!("{text}\n").as_bytes());
            }
            "pid" => {
                let line = format!("pid {}\n", std::process::id());
                write_all(&mut std::io::stdout(), line.as_bytes());
            }
            "sleep" => {
                let seconds: f64 = number(&mut rest, action);
                std::thread::sleep(Duration::from_secs_f64(seconds));
            }
            "forever" => std::thread::sleep(Duration::from_secs(3600)),
            "ignore-term" => block(Signal::SIGTERM),
            "ignore-int" => block(Signal::SIGINT),
            "fork-tree" => {
                let depth: u32 = number(&mut rest, action);
                let mut descendant: Vec<String> = rest.drain(..).collect();
                let leader = descendant
                    .iter()
                    .position(|word| word == "--")
                    .map(|split| descendant.split_off(split).split_off(1));
                if descendant.is_empty() {
                    descendant.push("forever".into());
                }
                if depth > 0 {
                    let mut child_actions: Vec<String> = Vec::new();
                    if depth > 1 {
                        child_actions.extend(["fork-tree".into(), (depth - 1).to_string()]);
                    }
                    child_actions.extend(descendant.iter().cloned());
                    start_copy(marker.as_deref(), &child_actions);
                }
                rest = leader.unwrap_or(descendant).into();
            }
            "new-group" => {
                if getpgrp() != getpid() {
                    if let Err(err) = setpgid(Pid::from_raw(0), Pid::from_raw(0)) {
                        fail(&format!("setpgid: {err}"));
                    }
                }
            }
            "spawn-bg" => start_copy(marker.as_deref(), &["forever".to_string()]),
            "flood" => {
                let bytes = number(&mut rest, action);
                flood(&mut std::io::stdout(), bytes);
            }
            "eflood" => {
                let bytes = number(&mut rest, action);
                flood(&mut std::io::stderr(), bytes);
            }
            "flood-both" => {
                let bytes: usize = number(&mut rest, action);
                let mut left = bytes;
                while left > 0 {
                    let piece = left.min(4096);
                    flood(&mut std::io::stdout(), piece);
                    flood(&mut std::io::stderr(), piece);
                    left -= piece;
                }
            }
            "alloc" => {
                let mebibytes: usize = number(&mut rest, action);
                let mut memory = vec![0u8; mebibytes << 20];
                // Zeroed allocations are lazily mapped; writing every page makes them resident.
                for page in memory.chunks_mut(4096) {
                    page[0] = 1;
                }
                held_memory.push(memory);
            }
            "segv" => {
                let _ = setrlimit(Resource::RLIMIT_CORE, 0, 0);
                // Rust's runtime handles SIGSEGV to detect stack overflows; its handler resets
                // the disposition to the default and returns for a signal that is not a guard
                // page hit, so the second raise kills the process.
                let _ = raise(Signal::SIGSEGV);
                let _ = raise(Signal::SIGSEGV);
                std::process::abort();
            }
            "exit" => {
                let code: i32 = number(&mut rest, action);
                std::process::exit(code);
            }
            "tcp-get" | "proxy-get" => {
                let target = operand(&mut rest, action);
                if let Err(err) = http_get(&target, action == "proxy-get") {
                    eprintln!("{action} {target} failed: {err}");
                    std::process::exit(1);
                }
            }
            "read-stdin" => {
                let mut input = Vec::new();
                if let Err(err) = std::io::stdin().read_to_end(&mut input) {
                    fail(&format!("reading stdin: {err}"));
                }
                write_all(&mut std::io::stdout(), &input);
            }
            "wait-stdin-eof" => {
                let mut buffer = [0u8; 4096];
                let mut stdin = std::io::stdin();
                while !matches!(stdin.read(&mut buffer), Ok(0) | Err(_)) {}
                std::process::exit(0);
            }
            other => usage(&format!("unknown action `{other}`")),
        }
    }
    drop(held_memory);
}

/// Takes the operand of `action` off the front of `rest`.
fn operand(rest: &mut VecDeque<String>, action: &str) -> String {
    rest.pop_front()
        .unwrap_or_else(|| usage(&format!("`{action}` needs an operand")))
}

fn number<T: std::str::FromStr>(rest: &mut VecDeque<String>, action: &str) -> T {
    let value = operand(rest, action);
    value
        .parse()
        .unwrap_or_else(|_| usage(&format!("`{action}` needs a number, not `{value}`")))
}

/// Starts a copy of this program with the same marker; it inherits stdin, stdout and stderr
/// and is never waited for.
fn start_copy(marker: Option<&str>, actions: &[String]) {
    let exe = std::env::current_exe().unwrap_or_else(|err| fail(&format!("own path: {err}")));
    let mut command = Command::new(exe);
    if let Some(marker) = marker {
        command.args(["--marker", marker]);
    }
    command
        .args(actions)
        .stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit());
    if let Err(err) = command.spawn() {
        fail(&format!("starting a copy: {err}"));
    }
}

fn block(signal: Signal) {
    let mut set = SigSet::empty();
    set.add(signal);
    if let Err(err) = set.thread_block() {
        fail(&format!("blocking {signal}: {err}"));
    }
}

fn flood(out: &mut dyn Write, bytes: usize) {
    let mut pattern = [b'x'; 4096];
    for line_end in pattern.iter_mut().skip(63).step_by(64) {
        *line_end = b'\n';
    }
    let mut left = bytes;
    while left > 0 {
        let piece = left.min(pattern.len());
        write_all(out, &pattern[..piece]);
        left -= piece;
    }
}

fn write_all(out: &mut dyn Write, bytes: &[u8]) {
    if out.write_all(bytes).and_then(|()| out.flush()).is_err() {
        // The reader went away (vx cut the output); behave like a program killed by SIGPIPE
        // would, without the noise.
        std::process::exit(141);
    }
}

/// `GET /` from `target`, directly or through `$HTTP_PROXY` with `CONNECT`; the response to
/// stdout.
fn http_get(target: &str, via_proxy: bool) -> std::io::Result<()> {
    use std::net::TcpStream;
    let mut stream = if via_proxy {
        let proxy = std::env::var("HTTP_PROXY")
            .map_err(|_| std::io::Error::other("HTTP_PROXY is not set"))?;
        let address = proxy.trim_start_matches("http://").trim_end_matches('/');
        let mut stream = TcpStream::connect(address)?;
        write!(
            stream,
            "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n"
        )?;
        // The proxy's answer head, byte by byte so nothing after it is consumed.
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            if stream.read(&mut byte)? == 0 {
                break;
            }
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head);
        if !head.starts_with("HTTP/1.1 200") {
            return Err(std::io::Error::other(format!(
                "the proxy said {}",
                head.lines().next().unwrap_or("nothing")
            )));
        }
        stream
    } else {
        TcpStream::connect(target)?
    };
    stream.write_all(b"GET / HTTP/1.0\r\n\r\n")?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    write_all(&mut std::io::stdout(), &response);
    Ok(())
}

fn usage(problem: &str) -> ! {
    eprintln!("vx-test-child: {problem}\nusage: vx-test-child [--marker M] ACTION...");
    std::process::exit(2)
}

fn fail(problem: &str) -> ! {
    eprintln!("vx-test-child: {problem}");
    std::process::exit(1)
}
