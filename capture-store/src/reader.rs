//! Reading captures back out of the object store, for the API's timeline:
//! a capture's tree, one object's bytes, and what each object is.

use std::collections::HashMap;

use sluice_protocol::registrar::{MAX_OBJECT_BYTES, Manifest};

use crate::objects::{Objects, ObjectsError, object_key};
use crate::registrar::resolve_document;

/// A registered capture's tree: both classes' manifests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaptureTree {
    pub small: Manifest,
    pub bulk: Manifest,
}

/// An object's length, and whether it is all zeros (a file's hole).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectShape {
    pub len: u64,
    pub zeros: bool,
}

/// Reads captures out of one object store.
#[derive(Debug, Clone)]
pub struct CaptureReader {
    objects: Objects,
}

impl CaptureReader {
    pub fn new(objects: Objects) -> CaptureReader {
        CaptureReader { objects }
    }

    /// The object store it reads.
    pub fn objects(&self) -> &Objects {
        &self.objects
    }

    /// The tree a capture's manifest documents (its row's keys) resolve to;
    /// a class without a document is empty.
    pub async fn capture_tree(&self, small: Option<&str>, bulk: Option<&str>) -> Result<CaptureTree, ObjectsError> {
        let read = |key: Option<&str>| {
            let key = key.map(str::to_owned);
            async move {
                match key {
                    None => Ok(Manifest::default()),
                    Some(key) => resolve_document(&self.objects, &key).await.map(|(manifest, _)| manifest),
                }
            }
        };
        Ok(CaptureTree { small: read(small).await?, bulk: read(bulk).await? })
    }

    /// One object's bytes, checked against its key.
    pub async fn object(&self, key: &str) -> Result<Vec<u8>, ObjectsError> {
        let bytes = self.objects.get(key).await?;
        if object_key(&bytes) != key {
            return Err(ObjectsError::Mismatch { key: key.to_owned() });
        }
        Ok(bytes.to_vec())
    }

    /// What each object of `keys` is, without reading it.
    pub async fn shapes(&self, keys: &[String]) -> Result<Vec<ObjectShape>, ObjectsError> {
        // A file's holes are one object many times over: each key is asked once.
        let mut distinct: Vec<String> = keys.to_vec();
        distinct.sort();
        distinct.dedup();
        let sizes = self.objects.sizes(&distinct).await?;
        let size_of: HashMap<&str, u64> = distinct.iter().map(String::as_str).zip(sizes).collect();
        // An object of zeros has the key of that many zeros; each length is
        // hashed once.
        let mut zero_keys: HashMap<u64, String> = HashMap::new();
        let zeros = vec![0u8; MAX_OBJECT_BYTES];
        let mut shapes = Vec::with_capacity(keys.len());
        for key in keys {
            let len = size_of[key.as_str()];
            let is_zeros = len <= zeros.len() as u64
                && *zero_keys.entry(len).or_insert_with(|| object_key(&zeros[..len as usize])) == *key;
            shapes.push(ObjectShape { len, zeros: is_zeros });
        }
        Ok(shapes)
    }
}
