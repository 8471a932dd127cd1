//! Secret masking over a byte stream (EXEC-5): every occurrence of a secret value becomes `***`,
//! also when a value is split across read chunks. The masker holds back at most the longest
//! secret minus one byte until it knows whether a match continues.

/// The replacement text.
pub const MASK: &[u8] = b"***";

#[derive(Debug, Clone, Default)]
pub struct Masker {
    /// Longest first, so the longest match at a position wins.
    secrets: Vec<Vec<u8>>,
    starts: Vec<bool>,
    held: Vec<u8>,
}

impl Masker {
    /// Multi-line values are masked line by line; lines shorter than the minimum are ignored.
    pub fn new(values: &[String]) -> Masker {
        let mut secrets: Vec<Vec<u8>> = Vec::new();
        for value in values {
            for line in value.split(['\n', '\r']) {
                if line.chars().count() >= crate::env::MIN_SECRET_LEN {
                    secrets.push(line.as_bytes().to_vec());
                }
            }
        }
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        secrets.dedup();
        let mut starts = vec![false; 256];
        for s in &secrets {
            starts[s[0] as usize] = true;
        }
        Masker {
            secrets,
            starts,
            held: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// Masks a chunk; returns what can be released now.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        if self.secrets.is_empty() {
            return chunk.to_vec();
        }
        let mut buffer = std::mem::take(&mut self.held);
        buffer.extend_from_slice(chunk);
        self.scan(buffer, false)
    }

    /// Releases whatever is held (end of stream).
    pub fn finish(&mut self) -> Vec<u8> {
        let buffer = std::mem::take(&mut self.held);
        self.scan(buffer, true)
    }

    /// Masks a complete text at once (commands, messages).
    pub fn mask_str(&self, text: &str) -> String {
        let mut copy = self.clone();
        let mut out = copy.push(text.as_bytes());
        out.extend(copy.finish());
        String::from_utf8_lossy(&out).into_owned()
    }

    fn scan(&mut self, buffer: Vec<u8>, at_end: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(buffer.len());
        let mut i = 0;
        'outer: while i < buffer.len() {
            if !self.starts[buffer[i] as usize] {
                out.push(buffer[i]);
                i += 1;
                continue;
            }
            let rest = &buffer[i..];
            for secret in &self.secrets {
                if rest.starts_with(secret) {
                    out.extend_from_slice(MASK);
                    i += secret.len();
                    continue 'outer;
                }
            }
            if !at_end
                && self
                    .secrets
                    .iter()
                    .any(|s| s.len() > rest.len() && s.starts_with(rest))
            {
                self.held = rest.to_vec();
                return out;
            }
            out.push(buffer[i]);
            i += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(masker: &mut Masker, chunks: &[&str]) -> String {
        let mut out = Vec::new();
        for c in chunks {
            out.extend(masker.push(c.as_bytes()));
        }
        out.extend(masker.finish());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn masks_whole_and_split_values() {
        let mut m = Masker::new(&["supersecret123".to_string()]);
        assert_eq!(run(&mut m, &["a supersecret123 b"]), "a *** b");
        assert_eq!(run(&mut m, &["a super", "secret", "123 b"]), "a *** b");
        assert_eq!(run(&mut m, &["a super", "duper"]), "a superduper");
        assert_eq!(run(&mut m, &["ends with supersec"]), "ends with supersec");
    }

    #[test]
    fn longest_secret_wins_and_multiline_values_mask_by_line() {
        let mut m = Masker::new(&[
            "abcdef".into(),
            "abcdefgh".into(),
            "line-one\nline-two".into(),
        ]);
        assert_eq!(run(&mut m, &["abcdefgh abcdefX"]), "*** ***X");
        assert_eq!(run(&mut m, &["line-two and line-one"]), "*** and ***");
    }

    #[test]
    fn no_secrets_passes_through() {
        let mut m = Masker::new(&["short".into()]);
        assert!(m.is_empty());
        assert_eq!(run(&mut m, &["short"]), "short");
    }
}
