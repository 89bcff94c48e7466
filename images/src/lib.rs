//! OCI images for executors. A workspace's registry id, repository and tag
//! name an image; the cache pulls it from the registry the operator mapped
//! the id to, verifies every blob against its digest, keeps each blob once
//! per host and unpacks the image once into a root filesystem the local
//! runtime runs executors on.

pub mod build;
mod cache;
mod config;
mod digest;
mod error;
mod import;
mod name;
mod store;
mod tree;
pub mod unpack;

pub use build::{BuildRequest, Builder, BuilderChoice};
pub use cache::{ImageCache, Prepared, PullProgress, PullStats};
pub use config::{ImageConfigBlob, RunConfig};
pub use digest::{Digest, Hasher};
pub use error::ImageError;
pub use import::Imported;
pub use name::{Credential, HOST, ImageName, Registries, Registry, TagOrDigest, docker_credentials};
pub use store::{CachedImage, ImageRecord, ImageStore, LayerRef};
pub use tree::{copy_tree, remove_tree};
