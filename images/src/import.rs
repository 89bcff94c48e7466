//! Images brought in from a file: an OCI image layout (a directory, or a
//! tar of one) or a `docker save` archive (which newer engines also write
//! as an OCI layout). Every blob is verified as a pull's is; layers of a
//! legacy `docker save` are addressed by their own digest.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::config::ImageConfigBlob;
use crate::digest::Digest;
use crate::error::{ImageError, local};
use crate::store::{ImageStore, LayerRef};

/// What was imported: the image and the names it is found under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    pub digest: Digest,
    pub names: Vec<String>,
}

#[derive(Deserialize)]
struct Descriptor {
    digest: String,
    #[serde(default)]
    annotations: std::collections::HashMap<String, String>,
}

#[derive(Deserialize)]
struct Index {
    manifests: Vec<Descriptor>,
}

#[derive(Deserialize)]
struct Manifest {
    config: Descriptor,
    layers: Vec<Descriptor>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct SavedImage {
    config: String,
    #[serde(default)]
    repo_tags: Option<Vec<String>>,
    layers: Vec<String>,
}

fn refused(source: &Path, message: impl std::fmt::Display) -> ImageError {
    ImageError::Unsupported { image: source.display().to_string(), message: message.to_string() }
}

impl ImageStore {
    /// Imports the image in `source` under `registry_id`: named `name`
    /// (`repository:tag`) when given, else as the archive tags it.
    pub async fn import(&self, source: &Path, registry_id: &str, name: Option<&str>) -> Result<Imported, ImageError> {
        let unpacked;
        let dir: &Path = if source.is_dir() {
            source
        } else {
            unpacked = self.temp_path("import");
            let (from, to) = (source.to_path_buf(), unpacked.clone());
            tokio::task::spawn_blocking(move || -> std::io::Result<()> {
                std::fs::create_dir(&to)?;
                let mut archive = tar::Archive::new(std::io::BufReader::new(std::fs::File::open(&from)?));
                // Only files and directories, every path inside `to` (the
                // tar reader refuses `..` and absolute ones).
                for entry in archive.entries()? {
                    let mut entry = entry?;
                    if entry.header().entry_type().is_file() || entry.header().entry_type().is_dir() {
                        entry.unpack_in(&to)?;
                    }
                }
                Ok(())
            })
            .await
            .map_err(|e| local("reading an archive", e))?
            .map_err(|e| refused(source, format!("not a readable tar archive or directory: {e}")))?;
            &unpacked
        };
        let imported = self.import_dir(source, dir, registry_id, name).await;
        if dir != source {
            let _ = crate::tree::remove_tree(dir);
        }
        imported
    }

    async fn import_dir(
        &self,
        source: &Path,
        dir: &Path,
        registry_id: &str,
        name: Option<&str>,
    ) -> Result<Imported, ImageError> {
        let read =
            |path: PathBuf| std::fs::read(&path).map_err(|e| refused(source, format!("{}: {e}", path.display())));
        let blob_path = |digest: &Digest| dir.join("blobs/sha256").join(digest.hex());
        let parse_digest =
            |text: &str| Digest::parse(text).ok_or_else(|| refused(source, format!("{text} is not a sha256 digest")));
        let (manifest_digest, config_path, layers, tags): (Digest, PathBuf, Vec<(Digest, PathBuf)>, Vec<String>) =
            if dir.join("index.json").is_file() {
                let index: Index = serde_json::from_slice(&read(dir.join("index.json"))?)
                    .map_err(|e| refused(source, format!("index.json: {e}")))?;
                let entry = index.manifests.first().ok_or_else(|| refused(source, "index.json lists no image"))?;
                let manifest_digest = parse_digest(&entry.digest)?;
                let bytes = read(blob_path(&manifest_digest))?;
                if Digest::of(&bytes) != manifest_digest {
                    return Err(ImageError::Tampered {
                        image: source.display().to_string(),
                        what: "manifest".into(),
                        expected: manifest_digest.to_string(),
                        actual: Digest::of(&bytes).to_string(),
                    });
                }
                let manifest: Manifest =
                    serde_json::from_slice(&bytes).map_err(|e| refused(source, format!("its manifest: {e}")))?;
                let config = parse_digest(&manifest.config.digest)?;
                let layers = manifest
                    .layers
                    .iter()
                    .map(|l| parse_digest(&l.digest).map(|d| (d.clone(), blob_path(&d))))
                    .collect::<Result<_, _>>()?;
                let tags = index
                    .manifests
                    .iter()
                    .filter_map(|m| {
                        m.annotations
                            .get("io.containerd.image.name")
                            .or(m.annotations.get("org.opencontainers.image.ref.name"))
                    })
                    .filter(|t| t.contains(':'))
                    .cloned()
                    .collect();
                (manifest_digest, blob_path(&config), layers, tags)
            } else if dir.join("manifest.json").is_file() {
                let saved: Vec<SavedImage> = serde_json::from_slice(&read(dir.join("manifest.json"))?)
                    .map_err(|e| refused(source, format!("manifest.json: {e}")))?;
                let image = saved.into_iter().next().ok_or_else(|| refused(source, "manifest.json lists no image"))?;
                let mut layers = Vec::new();
                for layer in &image.layers {
                    let path = dir.join(layer);
                    let (digest, _) =
                        crate::store::hash_file(&path).map_err(|e| refused(source, format!("{layer}: {e}")))?;
                    layers.push((digest, path));
                }
                let config_path = dir.join(&image.config);
                // No manifest in the archive: the image is known by one made of
                // its config and layers, as a registry would have it.
                let config_digest = crate::store::hash_file(&config_path).map_err(|e| refused(source, e))?.0;
                let synthesized = serde_json::json!({
                    "schemaVersion": 2, "config": {"digest": config_digest.to_string()},
                    "layers": layers.iter().map(|(d, _)| d.to_string()).collect::<Vec<_>>(),
                });
                let manifest_digest = Digest::of(synthesized.to_string().as_bytes());
                (manifest_digest, config_path, layers, image.repo_tags.unwrap_or_default())
            } else {
                return Err(refused(source, "neither an OCI image layout (index.json) nor a docker save archive"));
            };
        let config: ImageConfigBlob = serde_json::from_slice(&read(config_path.clone())?)
            .map_err(|e| refused(source, format!("its config: {e}")))?;
        let image_text = source.display().to_string();
        let mut refs = Vec::new();
        for (i, (digest, path)) in layers.iter().enumerate() {
            let size = std::fs::metadata(path).map_err(|e| refused(source, format!("layer {}: {e}", i + 1)))?.len();
            let _flight = self.flight(&format!("blob:{}", digest.hex())).await;
            if !self.has_blob(digest) {
                let copy = self.temp_path("blob");
                std::fs::copy(path, &copy).map_err(|e| local("importing a layer", e))?;
                self.commit_blob(copy, digest, &image_text, &format!("layer {}", i + 1)).await?;
            }
            refs.push(LayerRef { digest: digest.to_string(), size });
        }
        if self.image(&manifest_digest).is_none() {
            self.put_image(&ImageStore::record_new(&manifest_digest, config.config, refs, "import"))?;
        }
        let named = |text: &str| {
            let (repository, tag) = text.rsplit_once(':').filter(|(_, t)| !t.contains('/')).unwrap_or((text, "latest"));
            crate::name::ImageName::new(registry_id, repository, tag)
                .map(|n| n.to_string())
                .map_err(|e| refused(source, format!("name {text:?}: {e}")))
        };
        let names: Vec<String> = match name {
            Some(name) => vec![named(name)?],
            None => tags.iter().map(|t| named(t)).collect::<Result<_, _>>()?,
        };
        if names.is_empty() {
            return Err(refused(source, "the archive tags no name: give one"));
        }
        for name in &names {
            self.put_name(name, &manifest_digest)?;
        }
        self.touch(&manifest_digest);
        Ok(Imported { digest: manifest_digest, names })
    }
}
