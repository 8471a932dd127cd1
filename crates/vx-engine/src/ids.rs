//! Random identifiers: the UUIDv7 run id of history (HIST-1) and random hex tokens.

use std::time::SystemTime;

use crate::clock::epoch_ms;

/// `N` bytes from the system's random source (zeros if it cannot be read).
fn random_bytes<const N: usize>() -> [u8; N] {
    let mut random = [0u8; N];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut random);
    }
    random
}

/// `n` random bytes as hex (the stop-commands token of UI-9).
pub fn random_hex(n: usize) -> String {
    let bytes: Vec<u8> = (0..n.div_ceil(16))
        .flat_map(|_| random_bytes::<16>())
        .take(n)
        .collect();
    vx_core::key::hex(&bytes)
}

/// A UUIDv7 run id: 48 bits of Unix milliseconds, then random bits (HIST-1).
pub fn run_id() -> String {
    let random = random_bytes::<10>();
    let ms = epoch_ms(SystemTime::now()) as u64;
    let mut bytes = [0u8; 16];
    bytes[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    bytes[6..].copy_from_slice(&random);
    bytes[6] = (bytes[6] & 0x0f) | 0x70;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex = vx_core::key::hex(&bytes);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}
