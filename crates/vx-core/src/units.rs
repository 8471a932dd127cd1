//! Value formats shared by every flag, key and variable (FMT-1 to FMT-4): durations, sizes,
//! plain integers, and how vx prints durations and sizes.

use std::time::Duration;

const UNITS: [(&str, u64); 5] = [
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];
const MAX_DURATION_MS: u64 = 30 * 86_400_000;

/// Parses a duration such as `250ms`, `90s`, `1h30m` (FMT-1). Units appear at most once, in
/// descending order; the value is above zero and at most `30d`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let mut rest = text;
    let mut total: u64 = 0;
    let mut next_unit = 0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 12 {
            return None;
        }
        let number: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let letters = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = &rest[..letters];
        rest = &rest[letters..];
        let index = UNITS[next_unit..].iter().position(|(u, _)| *u == unit)? + next_unit;
        total = total.checked_add(number.checked_mul(UNITS[index].1)?)?;
        next_unit = index + 1;
    }
    (total > 0 && total <= MAX_DURATION_MS).then(|| Duration::from_millis(total))
}

/// Parses a size such as `512M`, `2GiB`, `100B` (FMT-2). A bare number is refused; values above
/// 2^53 are refused. Zero is accepted here; bounds refuse it themselves.
pub fn parse_size(text: &str) -> Option<u64> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 20 {
        return None;
    }
    let number: u64 = text[..digits].parse().ok()?;
    let suffix = text[digits..].to_ascii_lowercase();
    let multiplier: u64 = match suffix.as_str() {
        "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    };
    let bytes = number.checked_mul(multiplier)?;
    (bytes <= 1 << 53).then_some(bytes)
}

/// Parses a command-line integer (FMT-3): plain decimal, no sign, no leading zeros except `0`,
/// at most 2^53.
pub fn parse_integer(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if text.len() > 1 && text.starts_with('0') {
        return None;
    }
    let value: u64 = text.parse().ok()?;
    (value <= 1 << 53).then_some(value)
}

/// Formats a duration for people (FMT-4): `Nms` below one second, `N.NNs` below one minute,
/// `XmYYs` from one minute on.
pub fn format_duration(duration: Duration) -> String {
    let ms = duration.as_millis();
    if ms < 1_000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{}.{:02}s", ms / 1_000, (ms % 1_000) / 10)
    } else {
        let seconds = ms / 1_000;
        format!("{}m{:02}s", seconds / 60, seconds % 60)
    }
}

/// Formats a byte count for people (FMT-4).
pub fn format_size(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if b < KIB {
        format!("{bytes} B")
    } else if b < KIB * KIB {
        format!("{:.1} KiB", b / KIB)
    } else if b < KIB * KIB * KIB {
        format!("{:.1} MiB", b / (KIB * KIB))
    } else {
        format!("{:.1} GiB", b / (KIB * KIB * KIB))
    }
}

/// Writes a duration back in the configuration grammar (`1h30m`, `250ms`), for `vx show`.
pub fn format_config_duration(duration: Duration) -> String {
    let mut ms = duration.as_millis() as u64;
    let mut out = String::new();
    for (unit, size) in UNITS {
        if ms >= size {
            out.push_str(&format!("{}{unit}", ms / size));
            ms %= size;
        }
    }
    if out.is_empty() {
        out.push_str("0ms");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_follow_the_grammar() {
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("30d"), Some(Duration::from_secs(30 * 86400)));
        for bad in [
            "", "90", "0s", "31d", "30m1h", "1s1s", "1 s", "1.5s", "s", "-1s", "1x",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn sizes_follow_the_grammar() {
        assert_eq!(parse_size("100B"), Some(100));
        assert_eq!(parse_size("2GiB"), Some(2 << 30));
        assert_eq!(parse_size("512m"), Some(512 << 20));
        assert_eq!(parse_size("20G"), Some(20 << 30));
        for bad in ["", "100", "1X", "M", "9999999999T"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn integers_are_plain_decimal() {
        assert_eq!(parse_integer("0"), Some(0));
        assert_eq!(parse_integer("12"), Some(12));
        for bad in ["", "01", "+1", "-1", "1e3", "9007199254740993"] {
            assert_eq!(parse_integer(bad), None, "{bad}");
        }
    }

    #[test]
    fn human_durations_and_sizes() {
        assert_eq!(format_duration(Duration::from_millis(12)), "12ms");
        assert_eq!(format_duration(Duration::from_millis(3412)), "3.41s");
        assert_eq!(format_duration(Duration::from_secs(600)), "10m00s");
        assert_eq!(format_duration(Duration::from_secs(2)), "2.00s");
        assert_eq!(format_size(10), "10 B");
        assert_eq!(format_size(1536), "1.5 KiB");
        assert_eq!(format_size(312 << 20), "312.0 MiB");
    }
}
