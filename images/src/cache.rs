//! Images made ready for executors: found in the cache, or pulled from the
//! registry a name's registry id points to, then unpacked once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use crate::config::{ImageConfigBlob, RunConfig};
use crate::digest::Digest;
use crate::error::{ImageError, local};
use crate::name::{Credential, ImageName, Registries, Registry, TagOrDigest};
use crate::store::{ImageStore, LayerRef};

/// Layers fetched at once for one image.
const PARALLEL_LAYERS: usize = 4;

/// An image ready for an executor.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub digest: Digest,
    pub rootfs: PathBuf,
    pub config: RunConfig,
    /// What this call had to fetch (`None`: it was all here).
    pub pulled: Option<PullStats>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PullStats {
    pub bytes: u64,
    pub layers_fetched: usize,
    pub layers_cached: usize,
    pub seconds: f64,
}

/// How far a pull is, read while it runs: bytes of its blobs fetched
/// (or found cached) of all it needs. The total is known once the manifest
/// is read.
#[derive(Debug, Default)]
pub struct PullProgress {
    pub done: AtomicU64,
    pub total: AtomicU64,
}

impl PullProgress {
    /// `(done, total)` now.
    pub fn read(&self) -> (u64, u64) {
        (self.done.load(Ordering::Relaxed), self.total.load(Ordering::Relaxed))
    }
}

/// A writer that counts what passes through it into a pull's progress.
struct Counting<W> {
    inner: W,
    progress: Option<Arc<PullProgress>>,
}

impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Counting<W> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if let (std::task::Poll::Ready(Ok(n)), Some(progress)) = (&polled, &self.progress) {
            progress.done.fetch_add(*n as u64, Ordering::Relaxed);
        }
        polled
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Where one pull's blobs come from, and where its bytes are counted.
#[derive(Clone, Copy)]
struct Source<'a> {
    client: &'a Client,
    registry: &'a Registry,
    reference: &'a Reference,
    image: &'a str,
    progress: &'a Option<Arc<PullProgress>>,
}

pub struct ImageCache {
    store: ImageStore,
    registries: Registries,
    /// Apply the layers' owners when unpacking (sluice runs as root).
    owners: bool,
    /// One client per registry host: its bearer tokens are kept.
    clients: Mutex<HashMap<String, Client>>,
}

fn registry_error(registry: &Registry, image: &str, e: OciDistributionError) -> ImageError {
    let not_found = |detail: String| ImageError::NotFound { image: image.to_owned(), detail };
    match e {
        OciDistributionError::DigestError(oci_client::errors::DigestError::VerificationError { expected, actual }) => {
            ImageError::Tampered { image: image.to_owned(), what: "content".into(), expected, actual }
        }
        OciDistributionError::ImageManifestNotFoundError(detail) => not_found(detail),
        OciDistributionError::RegistryError { envelope, .. }
            if envelope.errors.iter().any(|e| {
                matches!(e.code, OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown | OciErrorCode::BlobUnknown)
            }) =>
        {
            not_found(format!("registry {} has no such manifest", registry.host))
        }
        OciDistributionError::ServerError { code: 404, .. } => {
            not_found(format!("registry {} has no such manifest", registry.host))
        }
        OciDistributionError::UnauthorizedError { .. } | OciDistributionError::AuthenticationFailure(_) => {
            ImageError::Unauthorized { registry: registry.host.clone() }
        }
        OciDistributionError::UnsupportedMediaTypeError(media) => {
            ImageError::Unsupported { image: image.to_owned(), message: format!("unsupported manifest type {media}") }
        }
        other => ImageError::Registry { registry: registry.host.clone(), message: describe(other) },
    }
}

/// What went wrong, in words without the request's URL (the registry is
/// named beside it; a URL in an event would be refused, rightly).
fn describe(e: OciDistributionError) -> String {
    match e {
        OciDistributionError::RequestError(e) if e.is_connect() => "cannot connect (is it up?)".into(),
        OciDistributionError::RequestError(e) if e.is_timeout() => "timed out".into(),
        OciDistributionError::RequestError(e) => e.without_url().to_string(),
        OciDistributionError::ServerError { code, message, .. } => {
            format!("answered {code}: {}", message.chars().take(200).collect::<String>())
        }
        OciDistributionError::RegistryError { envelope, .. } => format!("answered: {envelope}"),
        OciDistributionError::UnauthorizedError { .. } => "refused this host (401 Unauthorized)".into(),
        other => other.to_string(),
    }
}

impl ImageCache {
    pub fn open(root: &std::path::Path, registries: Registries, owners: bool) -> Result<ImageCache, ImageError> {
        Ok(ImageCache { store: ImageStore::open(root)?, registries, owners, clients: Mutex::new(HashMap::new()) })
    }

    pub fn store(&self) -> &ImageStore {
        &self.store
    }

    pub fn registries(&self) -> &Registries {
        &self.registries
    }

    fn client(&self, registry: &Registry) -> Client {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        clients
            .entry(registry.host.clone())
            .or_insert_with(|| {
                Client::new(ClientConfig {
                    protocol: if registry.plain_http { ClientProtocol::Http } else { ClientProtocol::Https },
                    connect_timeout: Some(Duration::from_secs(10)),
                    read_timeout: Some(Duration::from_secs(60)),
                    platform_resolver: Some(Box::new(oci_client::client::current_platform_resolver)),
                    ..Default::default()
                })
            })
            .clone()
    }

    /// The image ready to run: from the cache when it is there (a tag is
    /// not asked of the registry again; `pull` does that), else pulled.
    pub async fn prepare(&self, name: &ImageName) -> Result<Prepared, ImageError> {
        self.prepare_tracked(name, None).await
    }

    /// As [`ImageCache::prepare`], counting a pull's bytes into `progress`.
    pub async fn prepare_tracked(
        &self,
        name: &ImageName,
        progress: Option<Arc<PullProgress>>,
    ) -> Result<Prepared, ImageError> {
        if let Some(prepared) = self.cached(name).await? {
            return Ok(prepared);
        }
        let Some(registry) = self.registries.get(&name.registry_id).cloned() else {
            return Err(ImageError::NotFound {
                image: name.to_string(),
                detail: format!(
                    "registry id {:?} names no registry (--registry ID=HOST) and the image cache has no such \
                     image (sluice images import or pull)",
                    name.registry_id
                ),
            });
        };
        // Concurrent launches of one name wait for a single pull.
        let _flight = self.store.flight(&format!("name:{name}")).await;
        if let Some(prepared) = self.cached(name).await? {
            return Ok(prepared);
        }
        self.pull_from(&registry, name, progress).await
    }

    /// Asks the registry for the name again, fetching what changed,
    /// counting its bytes into `progress` when given.
    pub async fn pull(&self, name: &ImageName, progress: Option<Arc<PullProgress>>) -> Result<Prepared, ImageError> {
        let Some(registry) = self.registries.get(&name.registry_id).cloned() else {
            return Err(ImageError::NotFound {
                image: name.to_string(),
                detail: format!("registry id {:?} names no registry (--registry ID=HOST)", name.registry_id),
            });
        };
        let _flight = self.store.flight(&format!("name:{name}")).await;
        self.pull_from(&registry, name, progress).await
    }

    async fn cached(&self, name: &ImageName) -> Result<Option<Prepared>, ImageError> {
        let digest = match &name.reference {
            TagOrDigest::Digest(digest) => Some(digest.clone()),
            TagOrDigest::Tag(_) => self.store.lookup(&name.to_string()),
        };
        let Some(record) = digest.as_ref().and_then(|d| self.store.image(d)) else { return Ok(None) };
        if record.layers.iter().any(|l| Digest::parse(&l.digest).is_none_or(|d| !self.store.has_blob(&d))) {
            return Ok(None);
        }
        let rootfs = self.store.unpack(&record, self.owners).await?;
        let digest = digest.expect("a record was found by it");
        self.store.touch(&digest);
        Ok(Some(Prepared { digest, rootfs, config: record.config, pulled: None }))
    }

    async fn pull_from(
        &self,
        registry: &Registry,
        name: &ImageName,
        progress: Option<Arc<PullProgress>>,
    ) -> Result<Prepared, ImageError> {
        let started = Instant::now();
        let client = self.client(registry);
        let reference = match &name.reference {
            TagOrDigest::Tag(tag) => Reference::with_tag(registry.host.clone(), name.repository.clone(), tag.clone()),
            TagOrDigest::Digest(digest) => {
                Reference::with_digest(registry.host.clone(), name.repository.clone(), digest.to_string())
            }
        };
        let auth = match &registry.credential {
            None => RegistryAuth::Anonymous,
            Some(Credential::Basic { username, password }) => RegistryAuth::Basic(username.clone(), password.clone()),
            Some(Credential::Bearer(token)) => RegistryAuth::Bearer(token.clone()),
        };
        let image = name.to_string();
        let (manifest, digest) =
            client.pull_image_manifest(&reference, &auth).await.map_err(|e| registry_error(registry, &image, e))?;
        let digest = Digest::parse(&digest).ok_or_else(|| ImageError::Unsupported {
            image: image.clone(),
            message: format!("manifest digest {digest} is not sha256"),
        })?;
        if let Some(progress) = &progress {
            let sizes = std::iter::once(&manifest.config).chain(&manifest.layers).map(|d| d.size.max(0) as u64);
            progress.total.store(sizes.sum(), Ordering::Relaxed);
        }
        let source = Source { client: &client, registry, reference: &reference, image: &image, progress: &progress };
        let fetch = |descriptor: OciDescriptor, what: String| {
            let source = &source;
            async move { self.fetch_blob(source, &descriptor, &what).await }
        };
        let config_fetched = fetch(manifest.config.clone(), "config".into()).await?;
        let config_digest = Digest::parse(&manifest.config.digest).expect("fetch_blob parsed it");
        let config_bytes =
            std::fs::read(self.store.blob_path(&config_digest)).map_err(|e| local("reading a config", e))?;
        let config: ImageConfigBlob = serde_json::from_slice(&config_bytes).map_err(|e| ImageError::Unsupported {
            image: image.clone(),
            message: format!("its config is not an image config: {e}"),
        })?;
        if !config.os.is_empty() && config.os != "linux" {
            return Err(ImageError::Unsupported { image, message: format!("it is built for {}", config.os) });
        }
        let fetches: Vec<_> = (manifest.layers.iter().cloned().enumerate())
            .map(|(i, layer)| fetch(layer, format!("layer {}", i + 1)))
            .collect();
        let results: Vec<Result<u64, ImageError>> =
            futures::stream::iter(fetches).buffered(PARALLEL_LAYERS).collect().await;
        let mut stats = PullStats { bytes: config_fetched, layers_fetched: 0, layers_cached: 0, seconds: 0.0 };
        for result in results {
            match result? {
                0 => stats.layers_cached += 1,
                bytes => {
                    stats.bytes += bytes;
                    stats.layers_fetched += 1;
                }
            }
        }
        let layers =
            manifest.layers.iter().map(|l| LayerRef { digest: l.digest.clone(), size: l.size.max(0) as u64 }).collect();
        let record = ImageStore::record_new(&digest, config.config, layers, &registry.host);
        if self.store.image(&digest).is_none() {
            self.store.put_image(&record)?;
        }
        let rootfs = self.store.unpack(&record, self.owners).await?;
        self.store.put_name(&image, &digest)?;
        self.store.touch(&digest);
        stats.seconds = started.elapsed().as_secs_f64();
        Ok(Prepared { digest, rootfs, config: record.config, pulled: Some(stats) })
    }

    /// Fetches one blob into the store unless it is there; answers the
    /// bytes fetched (0: it was there).
    async fn fetch_blob(&self, source: &Source<'_>, descriptor: &OciDescriptor, what: &str) -> Result<u64, ImageError> {
        let Source { client, registry, reference, image, progress } = *source;
        let progress = progress.clone();
        let digest = Digest::parse(&descriptor.digest).ok_or_else(|| ImageError::Unsupported {
            image: image.to_owned(),
            message: format!("{what} digest {} is not sha256", descriptor.digest),
        })?;
        let _flight = self.store.flight(&format!("blob:{}", digest.hex())).await;
        if self.store.has_blob(&digest) {
            if let Some(progress) = &progress {
                progress.done.fetch_add(descriptor.size.max(0) as u64, Ordering::Relaxed);
            }
            return Ok(0);
        }
        let temp = self.store.temp_path("blob");
        let file = tokio::fs::File::create(&temp).await.map_err(|e| local("a download", e))?;
        let mut writer = tokio::io::BufWriter::with_capacity(1 << 20, Counting { inner: file, progress });
        let pulled = client.pull_blob(reference, descriptor, &mut writer).await;
        let flushed = tokio::io::AsyncWriteExt::flush(&mut writer).await;
        if let Err(e) = pulled {
            let _ = std::fs::remove_file(&temp);
            return Err(match registry_error(registry, image, e) {
                ImageError::Tampered { expected, actual, .. } => {
                    ImageError::Tampered { image: image.to_owned(), what: what.to_owned(), expected, actual }
                }
                other => other,
            });
        }
        flushed.map_err(|e| local("a download", e))?;
        self.store.commit_blob(temp, &digest, image, what).await
    }
}
