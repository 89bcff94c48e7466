//! The object store captures are written to: content-addressed objects
//! (the lowercase hex SHA-256 of their bytes), each written once, through
//! `object_store`. The local filesystem under the data directory by
//! default; S3-compatible storage with `s3://bucket/prefix`.
//!
//! Only the control plane holds the store's credentials: executors reach
//! objects through the registrar, never directly.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, PutPayload};
use sluice_protocol::registrar::is_object_key;
use sluice_store::Store;
use sluice_store::packs::PackMember;

use crate::packs::Pack;

/// How many existence checks run at once.
const CHECK_CONCURRENCY: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum ObjectsError {
    #[error("object store configuration: {0}")]
    Config(String),
    #[error("object {key} does not hash to its key")]
    Mismatch { key: String },
    #[error("{0} is not an object key")]
    BadKey(String),
    #[error("object {0} is not in the store")]
    NotFound(String),
    /// The store did not answer as it should: try again later.
    #[error("object store: {0}")]
    Store(String),
    /// No space is left for the write (`place`: in the object store, or
    /// for the database of its pack index): try again once space is freed.
    #[error("no space left {place}: {cause}")]
    Full { place: &'static str, cause: String },
}

impl From<crate::verified::Mismatch> for ObjectsError {
    fn from(e: crate::verified::Mismatch) -> ObjectsError {
        ObjectsError::Mismatch { key: e.key }
    }
}

/// Where objects live, as configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectStoreUrl {
    /// A directory on this host.
    Local(std::path::PathBuf),
    /// `s3://bucket/prefix`: endpoint, region, keys and path-style come from
    /// the usual `AWS_*` environment variables.
    S3 { bucket: String, prefix: String },
}

impl ObjectStoreUrl {
    /// `s3://bucket[/prefix]`, `file:///dir` or a plain directory path.
    pub fn parse(text: &str) -> Result<ObjectStoreUrl, ObjectsError> {
        if let Some(rest) = text.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(ObjectsError::Config("s3:// needs a bucket: s3://BUCKET[/PREFIX]".into()));
            }
            return Ok(ObjectStoreUrl::S3 { bucket: bucket.into(), prefix: prefix.trim_matches('/').into() });
        }
        let path = text.strip_prefix("file://").unwrap_or(text);
        if !path.starts_with('/') {
            return Err(ObjectsError::Config(format!("{text}: give s3://BUCKET[/PREFIX] or an absolute directory")));
        }
        Ok(ObjectStoreUrl::Local(path.into()))
    }

    /// A line for logs and `doctor`: where objects go (never credentials).
    pub fn describe(&self) -> String {
        match self {
            ObjectStoreUrl::Local(dir) => format!("local directory {}", dir.display()),
            ObjectStoreUrl::S3 { bucket, prefix } => format!("s3://{bucket}/{prefix}"),
        }
    }
}

/// The capture object store, and the pack index (in the database) that
/// finds the objects stored in packs.
#[derive(Clone, Debug)]
pub struct Objects {
    backend: Arc<dyn ObjectStore>,
    prefix: String,
    index: Store,
}

fn store_error(e: object_store::Error) -> ObjectsError {
    if out_of_space(&e) {
        ObjectsError::Full { place: IN_THE_STORE, cause: e.to_string() }
    } else {
        ObjectsError::Store(e.to_string())
    }
}

/// Whether a store's error says it has no space left: a local disk's
/// ENOSPC or EDQUOT anywhere in the chain, or an S3-compatible server's
/// answer saying so (507 Insufficient Storage, MinIO's XMinioStorageFull,
/// an ENOSPC it passed on).
fn out_of_space(e: &object_store::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(error) = source {
        if let Some(io) = error.downcast_ref::<std::io::Error>()
            && (io.raw_os_error().is_some_and(|n| n == libc::ENOSPC || n == libc::EDQUOT)
                || matches!(io.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded))
        {
            return true;
        }
        source = error.source();
    }
    let text = e.to_string();
    ["No space left on device", "Insufficient Storage", "XMinioStorageFull", "EntityTooLarge: no space"]
        .iter()
        .any(|needle| text.contains(needle))
}

fn index_error(e: sluice_store::StoreError) -> ObjectsError {
    if e.is_disk_full() {
        ObjectsError::Full { place: FOR_THE_DATABASE, cause: format!("the pack index: {e}") }
    } else {
        ObjectsError::Store(format!("the pack index: {e}"))
    }
}

/// Where space ran out, as [`ObjectsError::Full`] says it.
pub const IN_THE_STORE: &str = "in the object store";
pub const FOR_THE_DATABASE: &str = "for the database";

/// One object (or pack) as a listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredObject {
    pub key: String,
    pub bytes: u64,
    pub modified_ms: i64,
}

pub use sluice_protocol::registrar::object_key;

pub use crate::verified::Verified;

/// Checks each object against its key on the blocking pool, split across
/// the cores; the answer keeps the order given.
pub async fn verify_all(objects: Vec<(String, Bytes)>) -> Result<Vec<Verified>, ObjectsError> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let per_part = objects.len().div_ceil(cores).max(1);
    let mut parts = Vec::new();
    let mut objects = objects.into_iter();
    loop {
        let part: Vec<(String, Bytes)> = objects.by_ref().take(per_part).collect();
        if part.is_empty() {
            break;
        }
        parts.push(tokio::task::spawn_blocking(move || {
            part.into_iter()
                .map(|(key, bytes)| Verified::check(key, bytes).map_err(ObjectsError::from))
                .collect::<Result<Vec<_>, _>>()
        }));
    }
    let mut verified = Vec::new();
    for part in parts {
        verified.extend(part.await.map_err(|e| ObjectsError::Store(e.to_string()))??);
    }
    Ok(verified)
}

impl Objects {
    pub fn open(url: &ObjectStoreUrl, index: Store) -> Result<Objects, ObjectsError> {
        match url {
            ObjectStoreUrl::Local(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| ObjectsError::Config(format!("{}: {e}", dir.display())))?;
                let store = object_store::local::LocalFileSystem::new_with_prefix(dir)
                    .map_err(|e| ObjectsError::Config(e.to_string()))?;
                Ok(Objects { backend: Arc::new(store), prefix: String::new(), index })
            }
            ObjectStoreUrl::S3 { bucket, prefix } => {
                // A store that is away is reported soon, so captures pend
                // (and the daemon tries again) instead of a request hanging.
                let retry = object_store::RetryConfig {
                    max_retries: 2,
                    retry_timeout: std::time::Duration::from_secs(10),
                    ..Default::default()
                };
                let mut builder =
                    object_store::aws::AmazonS3Builder::from_env().with_bucket_name(bucket).with_retry(retry);
                // Shorter than the defaults unless the environment says otherwise
                // (set as config, so the client options the environment gave stay).
                for (key, value) in [("connect_timeout", "5s"), ("timeout", "60s")] {
                    if std::env::var_os(format!("AWS_{}", key.to_ascii_uppercase())).is_none() {
                        let key = key.parse().map_err(|e: object_store::Error| ObjectsError::Config(e.to_string()))?;
                        builder = builder.with_config(key, value);
                    }
                }
                let store = builder.build().map_err(|e| ObjectsError::Config(e.to_string()))?;
                let prefix = if prefix.is_empty() { String::new() } else { format!("{prefix}/") };
                Ok(Objects { backend: Arc::new(store), prefix, index })
            }
        }
    }

    fn path(&self, key: &str) -> Result<ObjectPath, ObjectsError> {
        self.path_under("objects", key)
    }

    fn pack_path(&self, key: &str) -> Result<ObjectPath, ObjectsError> {
        self.path_under("packs", key)
    }

    fn path_under(&self, folder: &str, key: &str) -> Result<ObjectPath, ObjectsError> {
        if !is_object_key(key) {
            return Err(ObjectsError::BadKey(key.chars().take(80).collect()));
        }
        Ok(ObjectPath::from(format!("{}{folder}/{}/{key}", self.prefix, &key[..2])))
    }

    /// Stores `bytes` under `key` after checking that they hash to it.
    pub async fn put_verified(&self, key: &str, bytes: Bytes) -> Result<(), ObjectsError> {
        let mut verified = verify_all(vec![(key.to_owned(), bytes)]).await?;
        self.put_alone(verified.pop().expect("one object")).await
    }

    /// Stores a checked object as a file of its own.
    pub async fn put_alone(&self, object: Verified) -> Result<(), ObjectsError> {
        let (key, bytes) = object.into_parts();
        self.backend.put(&self.path(&key)?, PutPayload::from_bytes(bytes)).await.map_err(store_error)?;
        Ok(())
    }

    /// Stores `bytes` under their own key and returns it.
    pub async fn put(&self, bytes: Bytes) -> Result<String, ObjectsError> {
        let object = Verified::of(bytes);
        let key = object.key().to_owned();
        self.put_alone(object).await?;
        Ok(key)
    }

    /// Writes a pack between its two index records: its members are found
    /// once it is whole (killed in between, it is a write that died, and a
    /// sweep collects it).
    pub async fn put_pack(&self, pack: Pack) -> Result<(), ObjectsError> {
        let key = pack.key.clone();
        let (key, members) = match self.write_pack(pack).await {
            Ok(written) => written,
            Err(e) => {
                self.abandon_pack(&key).await;
                return Err(e);
            }
        };
        match self.index.record_pack(&key, &members).await.map_err(index_error)? {
            true => Ok(()),
            false => Err(ObjectsError::Store(format!("pack {key} was collected while it was written"))),
        }
    }

    /// Takes back a pack whose write failed (its index row says `writing`),
    /// so the next upload of the same pack can write it. If the index is
    /// unavailable too, the collector's sweep takes the row once the grace
    /// period is past.
    async fn abandon_pack(&self, key: &str) {
        if let Err(e) = self.index.abandon_pack(key).await {
            tracing::warn!(pack = key, error = %e, "a pack whose write failed is left for the collector");
        }
    }

    /// Writes a pack's file after noting it in the index as being written;
    /// answers its key and its members, for the index.
    pub async fn write_pack(&self, pack: Pack) -> Result<(String, Vec<PackMember>), ObjectsError> {
        let Pack { key, bytes, members } = pack;
        let path = self.pack_path(&key)?;
        self.index.begin_pack(&key, bytes.len() as u64).await.map_err(index_error)?;
        self.backend.put(&path, PutPayload::from_bytes(bytes)).await.map_err(store_error)?;
        Ok((key, members))
    }

    pub async fn get(&self, key: &str) -> Result<Bytes, ObjectsError> {
        let mut read = self.get_many(&[key.to_owned()]).await?;
        Ok(read.pop().expect("one object asked, one answered"))
    }

    /// The objects of `keys`, in the order given: packed ones read as
    /// ranges of their packs (one request for each run of them), the rest
    /// one by one.
    pub async fn get_many(&self, keys: &[String]) -> Result<Vec<Bytes>, ObjectsError> {
        if let Some(bad) = keys.iter().find(|k| !is_object_key(k)) {
            return Err(ObjectsError::BadKey(bad.chars().take(80).collect()));
        }
        let mut found: Vec<Option<Bytes>> = vec![None; keys.len()];
        // A pack a sweep repacked since its members were looked up is gone:
        // they are looked up once more.
        for _attempt in 0..2 {
            let wanted: Vec<usize> = (0..keys.len()).filter(|i| found[*i].is_none()).collect();
            if wanted.is_empty() {
                break;
            }
            let wanted_keys: Vec<String> = wanted.iter().map(|i| keys[*i].clone()).collect();
            let packed = self.index.packed_objects(&wanted_keys).await.map_err(index_error)?;
            let mut by_pack: BTreeMap<String, Vec<(usize, std::ops::Range<u64>)>> = BTreeMap::new();
            let mut reads: Vec<Read> = Vec::new();
            for i in wanted {
                match packed.get(&keys[i]) {
                    Some(p) => by_pack.entry(p.pack_key.clone()).or_default().push((i, p.offset..p.offset + p.length)),
                    None => reads.push(Read::Alone(i)),
                }
            }
            reads.extend(by_pack.into_iter().map(|(pack, ranges)| Read::Packed(pack, ranges)));
            let mut done = futures::stream::iter(reads)
                .map(|read| async move {
                    let result = match &read {
                        Read::Alone(i) => match self.backend.get(&self.path(&keys[*i])?).await {
                            Ok(got) => got.bytes().await.map(|b| vec![(*i, b)]),
                            Err(e) => Err(e),
                        },
                        Read::Packed(pack, ranges) => {
                            let spans: Vec<std::ops::Range<u64>> = ranges.iter().map(|(_, r)| r.clone()).collect();
                            self.backend
                                .get_ranges(&self.pack_path(pack)?, &spans)
                                .await
                                .map(|bytes| ranges.iter().map(|(i, _)| *i).zip(bytes).collect())
                        }
                    };
                    match result {
                        Ok(read) => Ok(read),
                        Err(object_store::Error::NotFound { .. }) => Ok(Vec::new()),
                        Err(e) => Err(store_error(e)),
                    }
                })
                .buffer_unordered(CHECK_CONCURRENCY);
            while let Some(read) = done.next().await {
                for (i, bytes) in read? {
                    found[i] = Some(bytes);
                }
            }
        }
        found
            .into_iter()
            .zip(keys)
            .map(|(bytes, key)| bytes.ok_or_else(|| ObjectsError::NotFound(key.clone())))
            .collect()
    }

    /// Deletes an object stored on its own; one already gone counts as deleted.
    pub async fn delete(&self, key: &str) -> Result<(), ObjectsError> {
        self.delete_at(self.path(key)?).await
    }

    /// Deletes a pack's file (its index rows go first, under a sweep's fence).
    pub async fn delete_pack(&self, key: &str) -> Result<(), ObjectsError> {
        self.delete_at(self.pack_path(key)?).await
    }

    async fn delete_at(&self, path: ObjectPath) -> Result<(), ObjectsError> {
        match self.backend.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(store_error(e)),
        }
    }

    /// A whole pack's bytes.
    pub async fn read_pack(&self, key: &str) -> Result<Bytes, ObjectsError> {
        match self.backend.get(&self.pack_path(key)?).await {
            Ok(found) => found.bytes().await.map_err(store_error),
            Err(object_store::Error::NotFound { .. }) => Err(ObjectsError::NotFound(key.into())),
            Err(e) => Err(store_error(e)),
        }
    }

    /// Every object the store holds on its own: its key, size and when it
    /// was last written. Anything under the objects prefix that is not
    /// named by a key is left out.
    pub async fn list(&self) -> Result<Vec<StoredObject>, ObjectsError> {
        self.list_under("objects").await
    }

    /// Every pack file the store holds, recorded in the index or not.
    pub async fn list_packs(&self) -> Result<Vec<StoredObject>, ObjectsError> {
        self.list_under("packs").await
    }

    async fn list_under(&self, folder: &str) -> Result<Vec<StoredObject>, ObjectsError> {
        let prefix = ObjectPath::from(format!("{}{folder}", self.prefix));
        let listed: Vec<object_store::ObjectMeta> =
            self.backend.list(Some(&prefix)).try_collect().await.map_err(store_error)?;
        Ok(listed
            .into_iter()
            .filter_map(|meta| {
                let key = meta.location.filename()?.to_owned();
                is_object_key(&key).then(|| StoredObject {
                    key,
                    bytes: meta.size,
                    modified_ms: meta.last_modified.timestamp_millis(),
                })
            })
            .collect())
    }

    /// The length of each object of `keys`, in the order given.
    pub async fn sizes(&self, keys: &[String]) -> Result<Vec<u64>, ObjectsError> {
        let packed = self.index.packed_objects(keys).await.map_err(index_error)?;
        let heads = futures::stream::iter(keys.iter().cloned())
            .map(|key| {
                let packed = packed.get(&key).map(|p| p.length);
                async move {
                    if let Some(length) = packed {
                        return Ok(length);
                    }
                    match self.backend.head(&self.path(&key)?).await {
                        Ok(meta) => Ok(meta.size),
                        Err(object_store::Error::NotFound { .. }) => Err(ObjectsError::NotFound(key)),
                        Err(e) => Err(store_error(e)),
                    }
                }
            })
            .buffered(CHECK_CONCURRENCY);
        heads.try_collect().await
    }

    /// The keys of `keys` the store does not hold, in the order given.
    pub async fn missing(&self, keys: &[String]) -> Result<Vec<String>, ObjectsError> {
        if let Some(bad) = keys.iter().find(|k| !is_object_key(k)) {
            return Err(ObjectsError::BadKey(bad.chars().take(80).collect()));
        }
        let packed = self.index.packed_objects(keys).await.map_err(index_error)?;
        let loose: Vec<String> = keys.iter().filter(|k| !packed.contains_key(k.as_str())).cloned().collect();
        let checks = futures::stream::iter(loose)
            .map(|key| async move {
                match self.backend.head(&self.path(&key)?).await {
                    Ok(_) => Ok(None),
                    Err(object_store::Error::NotFound { .. }) => Ok(Some(key)),
                    Err(e) => Err(store_error(e)),
                }
            })
            .buffered(CHECK_CONCURRENCY);
        let found: Vec<Option<String>> = checks.try_collect().await?;
        Ok(found.into_iter().flatten().collect())
    }
}

/// One read of [`Objects::get_many`]: an object on its own (by its place
/// in the keys), or ranges of one pack.
enum Read {
    Alone(usize),
    Packed(String, Vec<(usize, std::ops::Range<u64>)>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_directory_or_a_bucket() {
        assert_eq!(ObjectStoreUrl::parse("/var/x").unwrap(), ObjectStoreUrl::Local("/var/x".into()));
        assert_eq!(ObjectStoreUrl::parse("file:///var/x").unwrap(), ObjectStoreUrl::Local("/var/x".into()));
        assert_eq!(
            ObjectStoreUrl::parse("s3://b/p/q/").unwrap(),
            ObjectStoreUrl::S3 { bucket: "b".into(), prefix: "p/q".into() }
        );
        assert!(ObjectStoreUrl::parse("s3:///p").is_err());
        assert!(ObjectStoreUrl::parse("relative/dir").is_err());
    }

    #[tokio::test]
    async fn objects_are_stored_only_under_their_own_hash() {
        let db = sluice_store::testing::sqlite();
        let dir = tempfile::tempdir().unwrap();
        let objects =
            Objects::open(&ObjectStoreUrl::Local(dir.path().into()), sluice_store::testing::open(&db).await).unwrap();
        let bytes = Bytes::from_static(b"hello");
        let key = object_key(&bytes);
        let other = object_key(b"other");
        let err = objects.put_verified(&other, bytes.clone()).await.unwrap_err();
        assert!(matches!(err, ObjectsError::Mismatch { .. }), "{err}");
        assert_eq!(objects.missing(&[key.clone(), other.clone()]).await.unwrap(), vec![key.clone(), other.clone()]);
        objects.put_verified(&key, bytes.clone()).await.unwrap();
        assert_eq!(objects.missing(&[key.clone(), other.clone()]).await.unwrap(), vec![other.clone()]);
        assert_eq!(objects.get(&key).await.unwrap(), bytes);
        assert!(matches!(objects.get(&other).await, Err(ObjectsError::NotFound(_))));
        assert!(matches!(objects.get("../../etc/passwd").await, Err(ObjectsError::BadKey(_))));
        assert!(dir.path().join("objects").join(&key[..2]).join(&key).exists());
    }

    #[tokio::test]
    async fn packed_objects_read_back_through_the_index_in_any_order() {
        let db = sluice_store::testing::sqlite();
        let dir = tempfile::tempdir().unwrap();
        let index = sluice_store::testing::open(&db).await;
        let objects = Objects::open(&ObjectStoreUrl::Local(dir.path().into()), index.clone()).unwrap();
        let contents: Vec<Bytes> =
            (0..300u32).map(|i| Bytes::from(format!("object {i} ").repeat(i as usize + 1))).collect();
        let keys: Vec<String> = contents.iter().map(|b| object_key(b)).collect();
        let mut builder = crate::packs::PackBuilder::new();
        for bytes in &contents[..200] {
            assert!(builder.add(&Verified::of(bytes.clone())));
        }
        let pack = builder.finish();
        let pack_key = pack.key.clone();
        assert_eq!(objects.missing(&keys[..2]).await.unwrap(), keys[..2].to_vec(), "not yet written");
        objects.put_pack(pack).await.unwrap();
        for bytes in &contents[200..] {
            objects.put(bytes.clone()).await.unwrap();
        }
        assert!(objects.missing(&keys).await.unwrap().is_empty());
        assert_eq!(objects.list().await.unwrap().len(), 100, "the packed ones are not files of their own");
        let listed: Vec<String> = objects.list_packs().await.unwrap().into_iter().map(|p| p.key).collect();
        assert_eq!(listed, std::slice::from_ref(&pack_key));
        // Packed and unpacked, interleaved and repeated, in the order asked.
        let mut asked: Vec<String> = keys.iter().rev().step_by(7).cloned().collect();
        asked.push(keys[3].clone());
        asked.push(keys[3].clone());
        let read = objects.get_many(&asked).await.unwrap();
        for (key, bytes) in asked.iter().zip(&read) {
            assert_eq!(&object_key(bytes), key);
        }
        let sizes = objects.sizes(&keys).await.unwrap();
        assert_eq!(sizes, contents.iter().map(|b| b.len() as u64).collect::<Vec<_>>());
        // A retired pack is not read from.
        assert!(index.retire_pack(&pack_key, sluice_store::packs::PackState::Ready).await.unwrap());
        assert_eq!(objects.missing(&keys[..1]).await.unwrap(), keys[..1].to_vec());
        assert!(matches!(objects.get(&keys[0]).await, Err(ObjectsError::NotFound(_))));
    }
}
