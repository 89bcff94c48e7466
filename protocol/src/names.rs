//! Names as Linux has them: bytes. A file's name (and a symlink's target)
//! need not be UTF-8, and a capture keeps it exactly.

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A path or a link target, as bytes. On the wire it is a JSON string when
/// the bytes are UTF-8 (as every name was before names were bytes), and
/// `{"hex": "…"}` otherwise. Ordered by its bytes, which for UTF-8 names is
/// the order of the strings.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name(Vec<u8>);

impl Name {
    pub fn from_bytes(bytes: impl Into<Vec<u8>>) -> Name {
        Name(bytes.into())
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    /// The name as text, when it is UTF-8.
    pub fn to_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn starts_with(&self, prefix: &str) -> bool {
        self.0.starts_with(prefix.as_bytes())
    }

    /// What follows `prefix`, when the name starts with it.
    pub fn strip_prefix(&self, prefix: &[u8]) -> Option<&[u8]> {
        self.0.strip_prefix(prefix)
    }

    /// `self/child`.
    pub fn child(&self, child: &[u8]) -> Name {
        let mut bytes = Vec::with_capacity(self.0.len() + 1 + child.len());
        bytes.extend_from_slice(&self.0);
        bytes.push(b'/');
        bytes.extend_from_slice(child);
        Name(bytes)
    }

    /// Whether `self` lies under the directory `dir`.
    pub fn is_under(&self, dir: &Name) -> bool {
        self.0.strip_prefix(dir.0.as_slice()).is_some_and(|rest| rest.first() == Some(&b'/'))
    }

    /// The parts between slashes.
    pub fn parts(&self) -> impl Iterator<Item = &[u8]> {
        self.0.split(|b| *b == b'/')
    }
}

// Looked up by bytes, so a walk need not allocate a name to find one.
impl std::borrow::Borrow<[u8]> for Name {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

impl From<&str> for Name {
    fn from(text: &str) -> Name {
        Name(text.as_bytes().to_vec())
    }
}

impl From<String> for Name {
    fn from(text: String) -> Name {
        Name(text.into_bytes())
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

/// Readable, and the same for the same bytes: a byte that is not part of
/// UTF-8 shows as `\xNN`.
impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in self.0.utf8_chunks() {
            f.write_str(chunk.valid())?;
            for b in chunk.invalid() {
                write!(f, "\\x{b:02x}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Name {
    /// A name from its bytes in hex, two digits a byte (as `{"hex": …}` gives it).
    pub fn from_hex(text: &str) -> Option<Name> {
        unhex(text).map(Name)
    }
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

impl Serialize for Name {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.to_str() {
            Some(text) => serializer.serialize_str(text),
            None => {
                use serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("hex", &hex(&self.0))?;
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Name, D::Error> {
        struct NameVisitor;
        impl<'de> Visitor<'de> for NameVisitor {
            type Value = Name;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a name: a string, or {\"hex\": …} for one that is not UTF-8")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Name, E> {
                Ok(Name::from(text))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Name, A::Error> {
                let mut bytes = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key != "hex" || bytes.is_some() {
                        return Err(de::Error::custom("a name object holds exactly one field, hex"));
                    }
                    let text: String = map.next_value()?;
                    bytes = Some(unhex(&text).ok_or_else(|| de::Error::custom("hex digits, two per byte"))?);
                }
                bytes.map(Name).ok_or_else(|| de::Error::missing_field("hex"))
            }
        }
        deserializer.deserialize_any(NameVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn text_names_read_and_write_as_before_and_others_as_hex() {
        let text = Name::from("tree/a b/é");
        assert_eq!(serde_json::to_string(&text).unwrap(), "\"tree/a b/é\"");
        let bytes = Name::from_bytes(b"tree/bad\xffname".to_vec());
        let json = serde_json::to_string(&bytes).unwrap();
        assert_eq!(json, r#"{"hex":"747265652f626164ff6e616d65"}"#);
        assert_eq!(serde_json::from_str::<Name>(&json).unwrap(), bytes);
        assert_eq!(bytes.to_string(), "tree/bad\\xffname");
        assert!(serde_json::from_str::<Name>(r#"{"hex":"f"}"#).is_err());
        assert!(serde_json::from_str::<Name>(r#"{"other":"ff"}"#).is_err());
    }

    proptest! {
        /// Any bytes round-trip, and names order as their bytes do (for
        /// text names, as the strings do).
        #[test]
        fn any_name_round_trips_in_byte_order(a in proptest::collection::vec(any::<u8>(), 0..40),
                                             b in proptest::collection::vec(any::<u8>(), 0..40)) {
            let (x, y) = (Name::from_bytes(a.clone()), Name::from_bytes(b.clone()));
            let back: Name = serde_json::from_str(&serde_json::to_string(&x).unwrap()).unwrap();
            prop_assert_eq!(&back, &x);
            prop_assert_eq!(x.cmp(&y), a.cmp(&b));
            if let (Ok(s), Ok(t)) = (String::from_utf8(a), String::from_utf8(b)) {
                prop_assert_eq!(x.cmp(&y), s.cmp(&t));
            }
        }
    }
}
