//! The object store captures are written to: content-addressed objects
//! (the lowercase hex SHA-256 of their bytes), each written once, through
//! `object_store`. The local filesystem under the data directory by
//! default; S3-compatible storage with `s3://bucket/prefix`.
//!
//! Only the control plane holds the store's credentials: executors reach
//! objects through the registrar, never directly.

use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, PutPayload};
use sha2::{Digest, Sha256};
use sluice_protocol::registrar::is_object_key;

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

/// The capture object store.
#[derive(Clone, Debug)]
pub struct Objects {
    store: Arc<dyn ObjectStore>,
    prefix: String,
}

fn store_error(e: object_store::Error) -> ObjectsError {
    ObjectsError::Store(e.to_string())
}

/// One object as a listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredObject {
    pub key: String,
    pub bytes: u64,
    pub modified_ms: i64,
}

/// The hex SHA-256 of `bytes`: an object's key.
pub fn object_key(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

impl Objects {
    pub fn open(url: &ObjectStoreUrl) -> Result<Objects, ObjectsError> {
        match url {
            ObjectStoreUrl::Local(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| ObjectsError::Config(format!("{}: {e}", dir.display())))?;
                let store = object_store::local::LocalFileSystem::new_with_prefix(dir)
                    .map_err(|e| ObjectsError::Config(e.to_string()))?;
                Ok(Objects { store: Arc::new(store), prefix: String::new() })
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
                Ok(Objects { store: Arc::new(store), prefix })
            }
        }
    }

    fn path(&self, key: &str) -> Result<ObjectPath, ObjectsError> {
        if !is_object_key(key) {
            return Err(ObjectsError::BadKey(key.chars().take(80).collect()));
        }
        Ok(ObjectPath::from(format!("{}objects/{}/{key}", self.prefix, &key[..2])))
    }

    /// Stores `bytes` under `key` after checking that they hash to it.
    pub async fn put_verified(&self, key: &str, bytes: Bytes) -> Result<(), ObjectsError> {
        let path = self.path(key)?;
        let hashed = {
            let bytes = bytes.clone();
            tokio::task::spawn_blocking(move || object_key(&bytes))
                .await
                .map_err(|e| ObjectsError::Store(e.to_string()))?
        };
        if hashed != key {
            return Err(ObjectsError::Mismatch { key: key.into() });
        }
        self.store.put(&path, PutPayload::from_bytes(bytes)).await.map_err(store_error)?;
        Ok(())
    }

    /// Stores `bytes` under their own key and returns it.
    pub async fn put(&self, bytes: Bytes) -> Result<String, ObjectsError> {
        let key = object_key(&bytes);
        self.store.put(&self.path(&key)?, PutPayload::from_bytes(bytes)).await.map_err(store_error)?;
        Ok(key)
    }

    pub async fn get(&self, key: &str) -> Result<Bytes, ObjectsError> {
        match self.store.get(&self.path(key)?).await {
            Ok(found) => found.bytes().await.map_err(store_error),
            Err(object_store::Error::NotFound { .. }) => Err(ObjectsError::NotFound(key.into())),
            Err(e) => Err(store_error(e)),
        }
    }

    /// Deletes an object; one already gone counts as deleted.
    pub async fn delete(&self, key: &str) -> Result<(), ObjectsError> {
        match self.store.delete(&self.path(key)?).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(store_error(e)),
        }
    }

    /// Every object the store holds: its key, size and when it was last
    /// written. Anything under the objects prefix that is not named by a
    /// key is left out.
    pub async fn list(&self) -> Result<Vec<StoredObject>, ObjectsError> {
        let prefix = ObjectPath::from(format!("{}objects", self.prefix));
        let listed: Vec<object_store::ObjectMeta> =
            self.store.list(Some(&prefix)).try_collect().await.map_err(store_error)?;
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
        let heads = futures::stream::iter(keys.iter().cloned())
            .map(|key| async move {
                match self.store.head(&self.path(&key)?).await {
                    Ok(meta) => Ok(meta.size),
                    Err(object_store::Error::NotFound { .. }) => Err(ObjectsError::NotFound(key)),
                    Err(e) => Err(store_error(e)),
                }
            })
            .buffered(CHECK_CONCURRENCY);
        heads.try_collect().await
    }

    /// The keys of `keys` the store does not hold, in the order given.
    pub async fn missing(&self, keys: &[String]) -> Result<Vec<String>, ObjectsError> {
        let checks = futures::stream::iter(keys.iter().cloned())
            .map(|key| async move {
                match self.store.head(&self.path(&key)?).await {
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
        let dir = tempfile::tempdir().unwrap();
        let objects = Objects::open(&ObjectStoreUrl::Local(dir.path().into())).unwrap();
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
}
