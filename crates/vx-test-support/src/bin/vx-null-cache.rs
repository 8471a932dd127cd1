//! `vx-null-cache`: an HTTP remote cache that stores nothing, for `bench/remote.py`.
//!
//! ```text
//! vx-null-cache
//! ```
//!
//! Listens on a free loopback port, prints `127.0.0.1:<port>` and a newline, and answers every
//! upload 202 (dropping its body) and everything else 404 until it is killed: a server whose
//! own work costs the machine next to nothing, so that a run uploading to it measures what
//! uploading costs vx, without a real server's CPU and disk on the same cores.

use vx_test_support::http_fake::{Answer, FakeHttpCache};

fn main() {
    let server = FakeHttpCache::start();
    server.answer_all(Answer::Null);
    println!("127.0.0.1:{}", server.port);
    loop {
        std::thread::park();
    }
}
