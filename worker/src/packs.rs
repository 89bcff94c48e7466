//! Packs: many small objects in one stored file, so a capture of 20,000
//! small files is a handful of writes instead of 20,000. A pack is its
//! members' bytes one after another, then its index (each member's key,
//! offset and length, as JSON), the index's length (u32, big-endian) and a
//! magic. A pack reads on its own: an index kept elsewhere (for lookups)
//! can always be rebuilt from the packs themselves.
//!
//! This is the format and its checks; the registrar does not write packs
//! yet (objects are stored one a file).

use std::collections::HashSet;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::objects::object_key;

/// The last bytes of every pack.
pub const MAGIC: &[u8; 8] = b"SLUPACK1";

/// The trailer after the index: its length and the magic.
const TRAILER: usize = 4 + MAGIC.len();

/// A pack is closed once its members hold this many bytes.
pub const PACK_TARGET_BYTES: usize = 16 << 20;

/// Objects larger than this are stored on their own, not packed.
pub const PACKED_MAX_OBJECT: usize = 256 << 10;

/// The most members a pack may name (a bound on what an index read costs).
pub const MAX_MEMBERS: usize = 1 << 17;

/// Where one object is in its pack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub key: String,
    pub offset: u64,
    pub length: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Index {
    members: Vec<Member>,
}

/// A closed pack: its bytes, its key (the hash of them) and its members.
#[derive(Debug, Clone)]
pub struct Pack {
    pub key: String,
    pub bytes: Bytes,
    pub members: Vec<Member>,
}

/// Why a pack's bytes are not a pack.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackError {
    #[error("not a pack: no trailer")]
    NoTrailer,
    #[error("the pack's index does not fit it")]
    BadIndex,
    #[error("pack member {0} lies outside the pack's data")]
    OutOfBounds(String),
    #[error("pack member {0} does not hash to its key")]
    Mismatch(String),
}

/// Gathers objects into a pack, each key once.
#[derive(Debug, Default)]
pub struct PackBuilder {
    bytes: Vec<u8>,
    members: Vec<Member>,
    keys: HashSet<String>,
}

impl PackBuilder {
    pub fn new() -> PackBuilder {
        PackBuilder::default()
    }

    /// Adds an object (its key already checked against its bytes);
    /// answers false for one the pack holds already.
    pub fn add(&mut self, key: &str, bytes: &[u8]) -> bool {
        if !self.keys.insert(key.to_owned()) {
            return false;
        }
        self.members.push(Member { key: key.to_owned(), offset: self.bytes.len() as u64, length: bytes.len() as u64 });
        self.bytes.extend_from_slice(bytes);
        true
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Whether the pack should be closed before another object goes in.
    pub fn is_full(&self) -> bool {
        self.bytes.len() >= PACK_TARGET_BYTES || self.members.len() >= MAX_MEMBERS
    }

    pub fn finish(self) -> Pack {
        let PackBuilder { mut bytes, members, .. } = self;
        let index = serde_json::to_vec(&Index { members }).expect("an index serializes");
        bytes.extend_from_slice(&index);
        bytes.extend_from_slice(&(index.len() as u32).to_be_bytes());
        bytes.extend_from_slice(MAGIC);
        let Index { members } = serde_json::from_slice(&index).expect("it was just written");
        Pack { key: object_key(&bytes), bytes: Bytes::from(bytes), members }
    }
}

/// A pack's members, read from its own index, each checked to lie within
/// the data before the index.
pub fn members_of(pack: &[u8]) -> Result<Vec<Member>, PackError> {
    if pack.len() < TRAILER || &pack[pack.len() - MAGIC.len()..] != MAGIC {
        return Err(PackError::NoTrailer);
    }
    let length_at = pack.len() - TRAILER;
    let index_len = u32::from_be_bytes(pack[length_at..length_at + 4].try_into().expect("four bytes")) as usize;
    let data_len = length_at.checked_sub(index_len).ok_or(PackError::BadIndex)?;
    let index: Index = serde_json::from_slice(&pack[data_len..length_at]).map_err(|_| PackError::BadIndex)?;
    if index.members.len() > MAX_MEMBERS {
        return Err(PackError::BadIndex);
    }
    for member in &index.members {
        if member.offset.checked_add(member.length).is_none_or(|end| end > data_len as u64) {
            return Err(PackError::OutOfBounds(member.key.chars().take(80).collect()));
        }
    }
    Ok(index.members)
}

/// One member's bytes out of a whole pack, checked against its key.
pub fn member_bytes<'a>(pack: &'a [u8], member: &Member) -> Result<&'a [u8], PackError> {
    let start = usize::try_from(member.offset).map_err(|_| PackError::OutOfBounds(member.key.clone()))?;
    let end = start.checked_add(member.length as usize).filter(|end| *end <= pack.len());
    let bytes = &pack[start..end.ok_or_else(|| PackError::OutOfBounds(member.key.clone()))?];
    if object_key(bytes) != member.key {
        return Err(PackError::Mismatch(member.key.chars().take(80).collect()));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built(objects: &[&[u8]]) -> Pack {
        let mut builder = PackBuilder::new();
        for bytes in objects {
            builder.add(&object_key(bytes), bytes);
        }
        builder.finish()
    }

    #[test]
    fn a_pack_reads_back_every_member_by_its_own_index() {
        let objects: [&[u8]; 4] = [b"first", b"", b"a third, longer than the others", b"first"];
        let pack = built(&objects);
        assert_eq!(pack.members.len(), 3, "a key is packed once");
        assert_eq!(pack.key, object_key(&pack.bytes));
        let members = members_of(&pack.bytes).unwrap();
        assert_eq!(members, pack.members);
        for (member, bytes) in members.iter().zip(objects) {
            assert_eq!(member_bytes(&pack.bytes, member).unwrap(), bytes);
        }
    }

    #[test]
    fn what_is_not_a_whole_pack_is_refused() {
        let pack = built(&[b"one", b"two"]);
        assert_eq!(members_of(b"short"), Err(PackError::NoTrailer));
        assert_eq!(members_of(&pack.bytes[..pack.bytes.len() - 1]), Err(PackError::NoTrailer));
        // The index's length claims more than the pack holds.
        let mut long = pack.bytes.to_vec();
        let at = long.len() - TRAILER;
        long[at..at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(members_of(&long), Err(PackError::BadIndex));
        // A member that reaches into the index.
        let mut members = pack.members.clone();
        members[1].length += 1;
        let mut forged = PackBuilder::new();
        forged.bytes = pack.bytes[..6].to_vec();
        forged.members = members;
        let forged = forged.finish();
        assert!(matches!(members_of(&forged.bytes), Err(PackError::OutOfBounds(_))));
        // Bytes that are not the member's.
        let mut swapped = pack.members[0].clone();
        swapped.key = pack.members[1].key.clone();
        assert!(matches!(member_bytes(&pack.bytes, &swapped), Err(PackError::Mismatch(_))));
    }

    #[test]
    fn a_pack_closes_at_its_target_size() {
        let mut builder = PackBuilder::new();
        let object = vec![7u8; PACKED_MAX_OBJECT];
        let mut n = 0u32;
        while !builder.is_full() {
            let mut bytes = object.clone();
            bytes[..4].copy_from_slice(&n.to_be_bytes());
            assert!(builder.add(&object_key(&bytes), &bytes));
            n += 1;
        }
        assert_eq!(n as usize, PACK_TARGET_BYTES / PACKED_MAX_OBJECT);
    }
}
