//! The image cache on disk, shared by every executor of the host:
//!
//! ```text
//! blobs/sha256/<hex>    layers and configs, each verified against its digest
//! images/<hex>.json     an image (by manifest digest): its config and layers;
//!                       the file's modification time is when it was last used
//! rootfs/<hex>/         its layers unpacked, read-only to executors
//! names/<hex>.json      a name (registry id, repository, tag) and its image
//! tmp/                  downloads and unpacks under way
//! ```
//!
//! Nothing appears under its final name before it is complete and
//! verified: it is written under `tmp/` and renamed into place.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::config::RunConfig;
use crate::digest::{Digest, Hasher};
use crate::error::{ImageError, local};

/// A layer of an image, as its manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerRef {
    pub digest: String,
    pub size: u64,
}

/// An image in the cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageRecord {
    /// The manifest's digest: the image's identity.
    pub digest: String,
    pub config: RunConfig,
    pub layers: Vec<LayerRef>,
    /// Where it came from: a registry host, `docker-engine` or `import`.
    pub source: String,
    /// When it came (RFC 3339).
    pub added_at: String,
    /// Bytes of its unpacked tree (0 until it is unpacked).
    #[serde(default)]
    pub unpacked_bytes: u64,
}

impl ImageRecord {
    /// Bytes it holds on the host: its layers as fetched and its tree.
    pub fn size_bytes(&self) -> u64 {
        self.layers.iter().map(|l| l.size).sum::<u64>() + self.unpacked_bytes
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct NameRecord {
    name: String,
    digest: String,
}

/// An image as `list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedImage {
    pub record: ImageRecord,
    pub names: Vec<String>,
    /// Seconds since the epoch.
    pub last_used: i64,
    /// The unpacked tree is there.
    pub unpacked: bool,
}

pub struct ImageStore {
    root: PathBuf,
    /// One download or unpack of a thing at a time: a second asker waits
    /// and then finds it done.
    flights: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

fn name_key(name: &str) -> String {
    Digest::of(name.as_bytes()).hex().to_owned()
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

impl ImageStore {
    /// Opens (making) the cache at `root`; what a process that is gone
    /// left under `tmp/` is cleared (another may be writing there now: a
    /// server and a `sluice images import` share the cache).
    pub fn open(root: &Path) -> Result<ImageStore, ImageError> {
        for dir in ["blobs/sha256", "images", "rootfs", "names", "tmp"] {
            std::fs::create_dir_all(root.join(dir)).map_err(|e| local("making the image cache", e))?;
        }
        for entry in std::fs::read_dir(root.join("tmp")).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let writer = name.split('-').nth(1).and_then(|pid| pid.parse::<u32>().ok());
            if writer.is_none_or(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
                let _ = crate::tree::remove_tree(&entry.path());
            }
        }
        Ok(ImageStore { root: root.to_path_buf(), flights: Mutex::new(HashMap::new()) })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Waits for any other download or unpack of `key`, then holds it.
    pub async fn flight(&self, key: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut flights = self.flights.lock().unwrap_or_else(|e| e.into_inner());
            flights.entry(key.to_owned()).or_default().clone()
        };
        lock.lock_owned().await
    }

    pub fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.root.join("blobs/sha256").join(digest.hex())
    }

    pub fn has_blob(&self, digest: &Digest) -> bool {
        self.blob_path(digest).is_file()
    }

    /// A fresh path under `tmp/` for something being written.
    pub fn temp_path(&self, what: &str) -> PathBuf {
        let mut random = [0u8; 8];
        let _ = getrandom::fill(&mut random);
        let suffix: String = random.iter().map(|b| format!("{b:02x}")).collect();
        // The writer's pid in the name: a later open clears only the dead's.
        self.root.join("tmp").join(format!("{what}-{}-{suffix}", std::process::id()))
    }

    /// Moves a written file into the store once it hashes to `expected`;
    /// a file that does not is deleted and refused.
    pub async fn commit_blob(
        &self,
        written: PathBuf,
        expected: &Digest,
        image: &str,
        what: &str,
    ) -> Result<u64, ImageError> {
        let target = self.blob_path(expected);
        let (digest, size) = tokio::task::spawn_blocking({
            let written = written.clone();
            move || hash_file(&written)
        })
        .await
        .map_err(|e| local("hashing a blob", e))?
        .map_err(|e| local("hashing a blob", e))?;
        if &digest != expected {
            let _ = std::fs::remove_file(&written);
            return Err(ImageError::Tampered {
                image: image.to_owned(),
                what: what.to_owned(),
                expected: expected.to_string(),
                actual: digest.to_string(),
            });
        }
        std::fs::rename(&written, &target).map_err(|e| local("storing a blob", e))?;
        Ok(size)
    }

    pub fn image(&self, digest: &Digest) -> Option<ImageRecord> {
        read_json(&self.root.join("images").join(format!("{}.json", digest.hex())))
    }

    pub fn put_image(&self, record: &ImageRecord) -> Result<(), ImageError> {
        let digest = Digest::parse(&record.digest).ok_or_else(|| local("an image record", "a bad digest"))?;
        let body = serde_json::to_vec_pretty(record).map_err(|e| local("an image record", e))?;
        self.write_atomically(&self.root.join("images").join(format!("{}.json", digest.hex())), &body)
    }

    /// The image a name points to here.
    pub fn lookup(&self, name: &str) -> Option<Digest> {
        let record: NameRecord = read_json(&self.root.join("names").join(format!("{}.json", name_key(name))))?;
        (record.name == name).then_some(())?;
        Digest::parse(&record.digest)
    }

    pub fn put_name(&self, name: &str, digest: &Digest) -> Result<(), ImageError> {
        let body = serde_json::to_vec(&NameRecord { name: name.to_owned(), digest: digest.to_string() })
            .map_err(|e| local("an image name", e))?;
        self.write_atomically(&self.root.join("names").join(format!("{}.json", name_key(name))), &body)
    }

    fn write_atomically(&self, path: &Path, body: &[u8]) -> Result<(), ImageError> {
        let temp = self.temp_path("record");
        std::fs::write(&temp, body).map_err(|e| local("writing the image cache", e))?;
        std::fs::rename(&temp, path).map_err(|e| local("writing the image cache", e))
    }

    /// Where an image's unpacked tree is (or will be).
    pub fn rootfs(&self, digest: &Digest) -> PathBuf {
        self.root.join("rootfs").join(digest.hex())
    }

    /// Unpacks the image's layers (all already stored) once; later callers
    /// find the tree there.
    pub async fn unpack(&self, record: &ImageRecord, owners: bool) -> Result<PathBuf, ImageError> {
        let digest = Digest::parse(&record.digest).ok_or_else(|| local("an image record", "a bad digest"))?;
        let target = self.rootfs(&digest);
        let _flight = self.flight(&format!("unpack:{}", digest.hex())).await;
        if target.is_dir() {
            return Ok(target);
        }
        let temp = self.temp_path("rootfs");
        let layers: Vec<(String, PathBuf)> = record
            .layers
            .iter()
            .map(|layer| {
                let d = Digest::parse(&layer.digest).ok_or_else(|| local("an image record", "a bad layer digest"))?;
                Ok((layer.digest.clone(), self.blob_path(&d)))
            })
            .collect::<Result<_, ImageError>>()?;
        let image = record.digest.clone();
        let unpacked = tokio::task::spawn_blocking({
            let temp = temp.clone();
            move || -> Result<u64, ImageError> {
                std::fs::create_dir(&temp).map_err(|e| local("unpacking", e))?;
                // Whatever this process's umask: every executor's uid walks it.
                std::fs::set_permissions(&temp, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                    .map_err(|e| local("unpacking", e))?;
                let mut unpacker = crate::unpack::Unpacker::new(&temp, owners).map_err(|e| local("unpacking", e))?;
                for (layer, path) in layers {
                    let file = std::fs::File::open(&path).map_err(|e| local("opening a layer", e))?;
                    unpacker.apply(file).map_err(|e| ImageError::Layer {
                        image: image.clone(),
                        layer: layer.clone(),
                        message: e.to_string(),
                    })?;
                }
                let stats = unpacker.finish().map_err(|e| local("unpacking", e))?;
                Ok(stats.bytes)
            }
        })
        .await
        .map_err(|e| local("unpacking", e))?;
        let bytes = match unpacked {
            Ok(bytes) => bytes,
            Err(e) => {
                let _ = crate::tree::remove_tree(&temp);
                return Err(e);
            }
        };
        if let Err(e) = std::fs::rename(&temp, &target) {
            let _ = crate::tree::remove_tree(&temp);
            // Another process (a `sluice images` command) unpacked it first.
            if !target.is_dir() {
                return Err(local("unpacking", e));
            }
        }
        self.put_image(&ImageRecord { unpacked_bytes: bytes, ..record.clone() })?;
        Ok(target)
    }

    /// Marks the image used now (eviction takes the least recently used).
    pub fn touch(&self, digest: &Digest) {
        let path = self.root.join("images").join(format!("{}.json", digest.hex()));
        if let Ok(file) = std::fs::File::options().write(true).open(path) {
            let _ = file.set_modified(std::time::SystemTime::now());
        }
    }

    /// Every image in the cache, with its names.
    pub fn list(&self) -> Vec<CachedImage> {
        let mut names: HashMap<String, Vec<String>> = HashMap::new();
        for entry in std::fs::read_dir(self.root.join("names")).into_iter().flatten().flatten() {
            if let Some(record) = read_json::<NameRecord>(&entry.path()) {
                names.entry(record.digest).or_default().push(record.name);
            }
        }
        let mut images = Vec::new();
        for entry in std::fs::read_dir(self.root.join("images")).into_iter().flatten().flatten() {
            let Some(record) = read_json::<ImageRecord>(&entry.path()) else { continue };
            let Some(digest) = Digest::parse(&record.digest) else { continue };
            let last_used = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs() as i64);
            let mut image_names = names.remove(&record.digest).unwrap_or_default();
            image_names.sort();
            images.push(CachedImage { unpacked: self.rootfs(&digest).is_dir(), record, names: image_names, last_used });
        }
        images.sort_by(|a, b| a.record.digest.cmp(&b.record.digest));
        images
    }

    /// Removes an image: its names, its tree, and the blobs no other
    /// image has. The caller makes sure no executor runs on it.
    pub async fn remove(&self, digest: &Digest) -> Result<(), ImageError> {
        let _flight = self.flight(&format!("unpack:{}", digest.hex())).await;
        let others: std::collections::HashSet<String> = self
            .list()
            .into_iter()
            .filter(|i| i.record.digest != digest.as_str())
            .flat_map(|i| i.record.layers.into_iter().map(|l| l.digest).chain([i.record.digest]))
            .collect();
        let record = self.image(digest);
        for entry in std::fs::read_dir(self.root.join("names")).into_iter().flatten().flatten() {
            if read_json::<NameRecord>(&entry.path()).is_some_and(|n| n.digest == digest.as_str()) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        // The record goes first: a tree or blob without one is never used.
        match std::fs::remove_file(self.root.join("images").join(format!("{}.json", digest.hex()))) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(local("removing an image", e)),
            _ => {}
        }
        let rootfs = self.rootfs(digest);
        tokio::task::spawn_blocking(move || crate::tree::remove_tree(&rootfs))
            .await
            .map_err(|e| local("removing an image", e))?
            .or_else(|e| if e.kind() == std::io::ErrorKind::NotFound { Ok(()) } else { Err(e) })
            .map_err(|e| local("removing an image", e))?;
        for layer in record.map(|r| r.layers).unwrap_or_default() {
            if let Some(blob) = Digest::parse(&layer.digest).filter(|_| !others.contains(&layer.digest)) {
                let _ = std::fs::remove_file(self.blob_path(&blob));
            }
        }
        Ok(())
    }

    /// Removes the least recently used images that `in_use` does not name
    /// until the cache holds at most `max_bytes`; answers what went.
    pub async fn evict(
        &self,
        max_bytes: u64,
        in_use: &std::collections::HashSet<String>,
    ) -> Result<Vec<CachedImage>, ImageError> {
        let mut images = self.list();
        let mut total: u64 = images.iter().map(|i| i.record.size_bytes()).sum();
        images.sort_by_key(|i| i.last_used);
        let mut evicted = Vec::new();
        for image in images {
            if total <= max_bytes {
                break;
            }
            if in_use.contains(&image.record.digest) {
                continue;
            }
            let Some(digest) = Digest::parse(&image.record.digest) else { continue };
            self.remove(&digest).await?;
            total = total.saturating_sub(image.record.size_bytes());
            evicted.push(image);
        }
        Ok(evicted)
    }

    pub fn record_new(digest: &Digest, config: RunConfig, layers: Vec<LayerRef>, source: &str) -> ImageRecord {
        ImageRecord {
            digest: digest.to_string(),
            config,
            layers,
            source: source.to_owned(),
            added_at: now_rfc3339(),
            unpacked_bytes: 0,
        }
    }
}

pub(crate) fn hash_file(path: &Path) -> std::io::Result<(Digest, u64)> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Hasher::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        size += n as u64;
    }
    Ok((hasher.finish(), size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_blob_that_does_not_hash_to_its_digest_never_enters() {
        let dir = tempfile::tempdir().unwrap();
        let store = ImageStore::open(dir.path()).unwrap();
        let expected = Digest::of(b"the real layer");
        let written = store.temp_path("blob");
        std::fs::write(&written, b"a tampered layer").unwrap();
        let Err(ImageError::Tampered { what, expected: said, .. }) =
            store.commit_blob(written.clone(), &expected, "hub/app:1", "layer 2").await
        else {
            panic!("a tampered blob was taken")
        };
        assert_eq!((what.as_str(), said), ("layer 2", expected.to_string()));
        assert!(!store.has_blob(&expected) && !written.exists());
        let written = store.temp_path("blob");
        std::fs::write(&written, b"the real layer").unwrap();
        assert_eq!(store.commit_blob(written, &expected, "hub/app:1", "layer 2").await.unwrap(), 14);
        assert!(store.has_blob(&expected));
    }

    #[tokio::test]
    async fn names_point_at_images_and_leftovers_of_a_killed_write_are_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let store = ImageStore::open(dir.path()).unwrap();
        std::fs::write(dir.path().join("tmp/blob-4194305-0123"), b"half of a dead writer's").unwrap();
        std::fs::write(store.temp_path("blob"), b"half of a live one's").unwrap();
        let layer = {
            let mut builder = tar::Builder::new(Vec::new());
            let mut header = tar::Header::new_gnu();
            header.set_size(3);
            header.set_mode(0o644);
            builder.append_data(&mut header, "etc/os-release", &b"A=1"[..]).unwrap();
            builder.into_inner().unwrap()
        };
        let layer_digest = Digest::of(&layer);
        let written = store.temp_path("blob");
        std::fs::write(&written, &layer).unwrap();
        store.commit_blob(written, &layer_digest, "x", "layer 1").await.unwrap();
        let image = Digest::of(b"manifest");
        let record = ImageStore::record_new(
            &image,
            RunConfig::default(),
            vec![LayerRef { digest: layer_digest.to_string(), size: layer.len() as u64 }],
            "test",
        );
        store.put_image(&record).unwrap();
        store.put_name("hub/app:1", &image).unwrap();
        assert_eq!(store.lookup("hub/app:1"), Some(image.clone()));
        assert_eq!(store.lookup("hub/app:2"), None);
        let (a, b) = tokio::join!(store.unpack(&record, false), store.unpack(&record, false));
        assert_eq!(a.unwrap(), b.unwrap());
        assert_eq!(std::fs::read_to_string(store.rootfs(&image).join("etc/os-release")).unwrap(), "A=1");
        drop(store);
        let store = ImageStore::open(dir.path()).unwrap();
        let left: Vec<_> =
            std::fs::read_dir(dir.path().join("tmp")).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left.len(), 1, "only the live writer's stays: {left:?}");
        let listed = store.list();
        assert_eq!(listed.len(), 1);
        assert_eq!((listed[0].names.clone(), listed[0].unpacked), (vec!["hub/app:1".to_owned()], true));
    }

    #[tokio::test]
    async fn eviction_takes_the_least_recently_used_image_no_executor_runs_and_keeps_shared_layers() {
        let dir = tempfile::tempdir().unwrap();
        let store = ImageStore::open(dir.path()).unwrap();
        let layer = |name: &str| {
            let mut builder = tar::Builder::new(Vec::new());
            let mut header = tar::Header::new_gnu();
            header.set_size(1);
            header.set_mode(0o644);
            builder.append_data(&mut header, name, &b"x"[..]).unwrap();
            builder.into_inner().unwrap()
        };
        let put_layer = async |bytes: Vec<u8>| {
            let digest = Digest::of(&bytes);
            let written = store.temp_path("blob");
            std::fs::write(&written, &bytes).unwrap();
            store.commit_blob(written, &digest, "x", "layer").await.unwrap();
            LayerRef { digest: digest.to_string(), size: bytes.len() as u64 }
        };
        let (shared, own_old, own_used) =
            (put_layer(layer("base")).await, put_layer(layer("old")).await, put_layer(layer("used")).await);
        let mut images = Vec::new();
        for (name, own) in [("old", &own_old), ("used", &own_used)] {
            let digest = Digest::of(name.as_bytes());
            let record = ImageStore::record_new(&digest, RunConfig::default(), vec![shared.clone(), own.clone()], "t");
            store.put_image(&record).unwrap();
            store.put_name(&format!("hub/{name}:1"), &digest).unwrap();
            store.unpack(&record, false).await.unwrap();
            images.push(digest);
        }
        let (old, used) = (&images[0], &images[1]);
        // "used" is the older of the two, but an executor runs on it.
        let earlier = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        let file = std::fs::File::options().write(true).open(dir.path().join(format!("images/{}.json", used.hex())));
        file.unwrap().set_modified(earlier).unwrap();
        let in_use: std::collections::HashSet<String> = [used.to_string()].into();
        let evicted = store.evict(0, &in_use).await.unwrap();
        assert_eq!(evicted.iter().map(|i| i.record.digest.clone()).collect::<Vec<_>>(), vec![old.to_string()]);
        assert!(store.image(old).is_none() && !store.rootfs(old).exists() && store.lookup("hub/old:1").is_none());
        let blob = |l: &LayerRef| store.has_blob(&Digest::parse(&l.digest).unwrap());
        assert!(!blob(&own_old) && blob(&shared) && blob(&own_used), "the shared layer stays");
        assert!(store.image(used).is_some() && store.rootfs(used).join("used").exists());
        assert!(store.list()[0].record.unpacked_bytes > 0);
    }
}
