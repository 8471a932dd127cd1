//! `reapi-engine`: a REAPI engine on loopback for benchmarks, from the test harness: BuildGrid with
//! its PostgreSQL scheduler and `N` workers (the harness's bot with `buildbox-run`).
//!
//! ```text
//! reapi-engine [WORKERS] [POOL]
//! reapi-engine casd
//! ```
//!
//! Prints `grpc://127.0.0.1:<port>` on a line of its own once every worker has registered, then
//! keeps the engine up until its standard input closes. Every worker announces
//! `OSFamily=linux`, `ISA=x86-64` and `pool=POOL` (default `bench`). `casd` starts
//! `buildbox-casd` with its local runner instead (no scheduler, no workers). The engine's
//! processes die with this program.

use std::io::Read;

use vx_test_support::buildgrid::BuildGrid;
use vx_test_support::reapi::Casd;

fn main() {
    if std::env::args().nth(1).as_deref() == Some("casd") {
        let Some(casd) = Casd::start_executing() else {
            eprintln!("reapi-engine: buildbox-casd is not installed (run scripts/test)");
            std::process::exit(2);
        };
        println!("{}", casd.url());
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        return;
    }
    let mut args = std::env::args().skip(1);
    let workers: usize = args
        .next()
        .map_or(Ok(16), |n| n.parse())
        .expect("WORKERS is a number");
    let pool = args.next().unwrap_or_else(|| "bench".to_string());
    let Some(server) = BuildGrid::shared() else {
        eprintln!("reapi-engine: BuildGrid is not installed (run scripts/test)");
        std::process::exit(2);
    };
    let mut started = Vec::new();
    for n in 0..workers {
        match server.start_worker(&format!("w{n}"), &[("pool", &pool)]) {
            Some(worker) => started.push(worker),
            None => {
                eprintln!("reapi-engine: buildbox-run is not installed (run scripts/test)");
                std::process::exit(2);
            }
        }
    }
    println!("{}", server.url());
    let mut rest = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut rest);
    drop(started);
}
