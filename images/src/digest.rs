//! Content digests: `sha256:` and 64 lowercase hex digits, the only
//! algorithm images here are addressed by.

use std::fmt;

use sha2::{Digest as _, Sha256};

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(String);

impl Digest {
    /// Parses `sha256:<hex>`; anything else is refused.
    pub fn parse(text: &str) -> Option<Digest> {
        let hex = text.strip_prefix("sha256:")?;
        let valid = hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        valid.then(|| Digest(text.to_owned()))
    }

    pub fn of(bytes: &[u8]) -> Digest {
        let mut hasher = Hasher::new();
        hasher.update(bytes);
        hasher.finish()
    }

    /// The hex digits: a file name in the store.
    pub fn hex(&self) -> &str {
        &self.0["sha256:".len()..]
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A digest computed as bytes go by.
pub struct Hasher(Sha256);

impl Hasher {
    pub fn new() -> Hasher {
        Hasher(Sha256::new())
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub fn finish(self) -> Digest {
        let hash = self.0.finalize();
        let mut text = String::with_capacity(71);
        text.push_str("sha256:");
        for byte in hash {
            text.push_str(&format!("{byte:02x}"));
        }
        Digest(text)
    }
}

impl Default for Hasher {
    fn default() -> Self {
        Hasher::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sha256_with_64_lowercase_hex_digits_parses() {
        let empty = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert_eq!(Digest::parse(empty).unwrap(), Digest::of(b""));
        assert_eq!(Digest::of(b"").hex(), &empty[7..]);
        for bad in [
            "sha512:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85",
            "sha256:../../../../etc/passwd/../../../../../../../../../../../../../../..",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ] {
            assert_eq!(Digest::parse(bad), None, "{bad}");
        }
    }
}
