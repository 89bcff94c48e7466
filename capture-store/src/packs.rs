//! Packs: many small objects in one stored file, so a capture of 20,000
//! small files is a handful of writes instead of 20,000. A pack is its
//! members' bytes one after another, then its index (each member's key,
//! offset and length, as JSON), the index's length (u32, big-endian) and a
//! magic. A pack reads on its own: an index kept elsewhere (for lookups)
//! can always be rebuilt from the packs themselves.
//!
//! A pack is named by the hash of its index: the index names every
//! member's hash, so the name commits to the contents without hashing the
//! members' bytes a second time.

use std::collections::HashSet;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use sluice_store::packs::PackMember;

use sluice_protocol::registrar::object_key;

use crate::verified::Verified;

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

/// One member as the pack's own index names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct IndexEntry {
    key: String,
    offset: u64,
    length: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Index {
    members: Vec<IndexEntry>,
}

/// A closed pack: its bytes, its key (the hash of its index) and its members.
#[derive(Debug, Clone)]
pub struct Pack {
    pub key: String,
    pub bytes: Bytes,
    pub members: Vec<PackMember>,
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
    members: Vec<IndexEntry>,
    keys: HashSet<String>,
}

impl PackBuilder {
    pub fn new() -> PackBuilder {
        PackBuilder::default()
    }

    /// Adds a checked object; answers false for one the pack holds already.
    pub fn add(&mut self, object: &Verified) -> bool {
        let (key, bytes) = (object.key(), object.bytes());
        if !self.keys.insert(key.to_owned()) {
            return false;
        }
        self.members.push(IndexEntry {
            key: key.to_owned(),
            offset: self.bytes.len() as u64,
            length: bytes.len() as u64,
        });
        self.bytes.extend_from_slice(bytes);
        true
    }

    /// The bytes of the members so far.
    pub fn len(&self) -> usize {
        self.bytes.len()
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
        let index = Index { members };
        let index_bytes = serde_json::to_vec(&index).expect("an index serializes");
        bytes.extend_from_slice(&index_bytes);
        bytes.extend_from_slice(&(index_bytes.len() as u32).to_be_bytes());
        bytes.extend_from_slice(MAGIC);
        let members = index.members.into_iter().map(member_of).collect();
        Pack { key: object_key(&index_bytes), bytes: Bytes::from(bytes), members }
    }
}

/// A pack's members, read from its own index, each checked to lie within
/// the data before the index.
pub fn members_of(pack: &[u8]) -> Result<Vec<PackMember>, PackError> {
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
    Ok(index.members.into_iter().map(member_of).collect())
}

fn member_of(entry: IndexEntry) -> PackMember {
    PackMember { object_key: entry.key, offset: entry.offset, length: entry.length }
}

/// One member's bytes out of a whole pack, checked against its key.
pub fn member_bytes<'a>(pack: &'a [u8], member: &PackMember) -> Result<&'a [u8], PackError> {
    let outside = || PackError::OutOfBounds(member.object_key.chars().take(80).collect());
    let start = usize::try_from(member.offset).map_err(|_| outside())?;
    let end = start.checked_add(member.length as usize).filter(|end| *end <= pack.len());
    let bytes = &pack[start..end.ok_or_else(outside)?];
    if object_key(bytes) != member.object_key {
        return Err(PackError::Mismatch(member.object_key.chars().take(80).collect()));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built(objects: &[&[u8]]) -> Pack {
        let mut builder = PackBuilder::new();
        for bytes in objects {
            builder.add(&Verified::of(Bytes::copy_from_slice(bytes)));
        }
        builder.finish()
    }

    #[test]
    fn a_pack_reads_back_every_member_by_its_own_index() {
        let objects: [&[u8]; 4] = [b"first", b"", b"a third, longer than the others", b"first"];
        let pack = built(&objects);
        assert_eq!(pack.members.len(), 3, "a key is packed once");
        let index_len = u32::from_be_bytes(pack.bytes[pack.bytes.len() - TRAILER..][..4].try_into().unwrap());
        let index = &pack.bytes[pack.bytes.len() - TRAILER - index_len as usize..pack.bytes.len() - TRAILER];
        assert_eq!(pack.key, object_key(index), "named by its index");
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
        let mut forged = PackBuilder::new();
        forged.bytes = pack.bytes[..6].to_vec();
        forged.members = pack
            .members
            .iter()
            .map(|m| IndexEntry { key: m.object_key.clone(), offset: m.offset, length: m.length })
            .collect();
        forged.members[1].length += 1;
        let forged = forged.finish();
        assert!(matches!(members_of(&forged.bytes), Err(PackError::OutOfBounds(_))));
        // Bytes that are not the member's.
        let mut swapped = pack.members[0].clone();
        swapped.object_key = pack.members[1].object_key.clone();
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
            assert!(builder.add(&Verified::of(Bytes::from(bytes))));
            n += 1;
        }
        assert_eq!(n as usize, PACK_TARGET_BYTES / PACKED_MAX_OBJECT);
    }
}
