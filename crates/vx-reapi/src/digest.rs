//! SHA-256 digests (the only digest function vx speaks) and the blobs they name.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};
use vx_core::key::hex;

use crate::proto::Digest;

/// The digest of `bytes`: lowercase hex SHA-256 and the size.
pub fn digest_of(bytes: &[u8]) -> Digest {
    Digest {
        hash: hex(&Sha256::digest(bytes)),
        size_bytes: bytes.len() as i64,
    }
}

/// The digest of the file at `path`, read in 64 KiB pieces.
pub fn digest_of_file(path: &Path) -> io::Result<Digest> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        size += n as u64;
    }
    Ok(Digest {
        hash: hex(&hasher.finalize()),
        size_bytes: size as i64,
    })
}

/// A blob to upload: its digest and where its bytes are.
#[derive(Debug, Clone)]
pub struct Blob {
    pub digest: Digest,
    pub bytes: BlobBytes,
}

#[derive(Debug, Clone)]
pub enum BlobBytes {
    Memory(Vec<u8>),
    File(PathBuf),
}

impl Blob {
    pub fn from_bytes(bytes: Vec<u8>) -> Blob {
        Blob {
            digest: digest_of(&bytes),
            bytes: BlobBytes::Memory(bytes),
        }
    }

    /// A file whose digest the caller computed.
    pub fn from_file(digest: Digest, path: PathBuf) -> Blob {
        Blob {
            digest,
            bytes: BlobBytes::File(path),
        }
    }

    pub fn size(&self) -> u64 {
        self.digest.size_bytes.max(0) as u64
    }
}

/// A streaming SHA-256 that checks bytes against a digest as they arrive.
pub(crate) struct Check {
    hasher: Sha256,
    size: u64,
}

impl Check {
    pub(crate) fn new() -> Check {
        Check {
            hasher: Sha256::new(),
            size: 0,
        }
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        self.size += bytes.len() as u64;
    }

    pub(crate) fn matches(self, digest: &Digest) -> bool {
        self.size == digest.size_bytes.max(0) as u64 && hex(&self.hasher.finalize()) == digest.hash
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_lowercase_sha256_hex_and_size() {
        // python3 -c "import hashlib; print(hashlib.sha256(b'abc').hexdigest())"
        let digest = digest_of(b"abc");
        assert_eq!(
            digest.hash,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(digest.size_bytes, 3);
        let empty = digest_of(b"");
        assert_eq!(
            empty.hash,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn a_file_digest_equals_the_digest_of_its_bytes_and_the_check_sees_one_changed_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("blob");
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let digest = digest_of_file(&path).unwrap();
        assert_eq!(digest, digest_of(&bytes));
        let mut check = Check::new();
        check.update(&bytes);
        assert!(check.matches(&digest));
        let mut changed = bytes.clone();
        changed[100_000] ^= 1;
        let mut check = Check::new();
        check.update(&changed);
        assert!(!check.matches(&digest));
    }
}
