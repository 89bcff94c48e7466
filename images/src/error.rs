/// Why an image could not be made ready; each says whether a later try may
/// go better and the code a failed launch carries.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ImageError {
    /// Nowhere this host looks has it.
    #[error("image {image} not found: {detail}")]
    NotFound { image: String, detail: String },
    /// The registry could not be reached or answered with an error.
    #[error("registry {registry}: {message}")]
    Registry { registry: String, message: String },
    /// The registry refused this host's sign-in (or asked for one it has none of).
    #[error("registry {registry} refused access (no or wrong credentials for it in --registry-auth-file)")]
    Unauthorized { registry: String },
    /// Content that does not match its digest: never used.
    #[error("{what} of image {image} does not match its digest {expected} (it hashes to {actual}): refused")]
    Tampered { image: String, what: String, expected: String, actual: String },
    /// The image is one this host cannot run.
    #[error("image {image}: {message}")]
    Unsupported { image: String, message: String },
    /// A layer that cannot be applied.
    #[error("image {image}, layer {layer}: {message}")]
    Layer { image: String, layer: String, message: String },
    /// This host's own disk or files.
    #[error("image cache: {0}")]
    Local(String),
}

impl ImageError {
    /// Worth another try later: a registry that is down, a full disk.
    pub fn is_transient(&self) -> bool {
        matches!(self, ImageError::Registry { .. } | ImageError::Local(_))
    }

    pub fn code(&self) -> &'static str {
        match self {
            ImageError::NotFound { .. } => "image-not-found",
            ImageError::Registry { .. } => "image-registry",
            ImageError::Unauthorized { .. } => "image-registry-auth",
            ImageError::Tampered { .. } => "image-digest-mismatch",
            ImageError::Unsupported { .. } => "image-unsupported",
            ImageError::Layer { .. } => "image-layer",
            ImageError::Local(_) => "image-cache",
        }
    }
}

pub(crate) fn local(what: &str, e: impl std::fmt::Display) -> ImageError {
    ImageError::Local(format!("{what}: {e}"))
}
