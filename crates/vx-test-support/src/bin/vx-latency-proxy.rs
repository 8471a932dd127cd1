//! `vx-latency-proxy`: puts a server on loopback at a distance, for `bench/remote.py`.
//!
//! ```text
//! vx-latency-proxy --to 127.0.0.1:PORT --rtt-ms N
//! ```
//!
//! Listens on a free loopback port, prints `127.0.0.1:<port>` and a newline once it accepts,
//! and forwards every connection to `--to` with N milliseconds added to each round trip (see
//! `vx_test_support::latency`) until it is killed.

use std::net::SocketAddr;
use std::time::Duration;

use vx_test_support::latency::{LatencyProxy, Link};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let (Some(to), Some(rtt)) = (value("--to"), value("--rtt-ms")) else {
        eprintln!("usage: vx-latency-proxy --to HOST:PORT --rtt-ms N");
        std::process::exit(2);
    };
    let (Ok(target), Ok(rtt)) = (to.parse::<SocketAddr>(), rtt.parse::<u64>()) else {
        eprintln!("vx-latency-proxy: --to takes 127.0.0.1:PORT and --rtt-ms a whole number");
        std::process::exit(2);
    };
    let proxy = LatencyProxy::start(
        target,
        Link {
            round_trip: Duration::from_millis(rtt),
            drip: None,
        },
    );
    println!("{}", proxy.addr());
    loop {
        std::thread::park();
    }
}
