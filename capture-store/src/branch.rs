//! Branch points: a kept capture's tree, named again as the first capture
//! of new sessions (a fork). Nothing is copied: the new sessions' captures
//! name the same manifest documents, whose objects the collection keeps
//! while any kept capture of any session names them.

use sluice_domain::ids::{OwnerId, SessionId};
use sluice_protocol::registrar::Manifest;
use sluice_store::capture::{CaptureCounts, ManifestHead, RewoundTree};
use sluice_store::{Store, StoreError};

use crate::objects::{Objects, ObjectsError};
use crate::registrar::resolve_document;

/// Why a capture cannot be branched.
#[derive(Debug, thiserror::Error)]
pub enum BranchError {
    /// The owner has no such session, or it keeps no capture `n`.
    #[error("the session keeps no capture {0}")]
    NotKept(u64),
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("reading the capture's manifests: {0}")]
    Objects(#[from] ObjectsError),
}

/// Capture `n` of the owner's session as the tree a branch starts from:
/// its manifest documents with their chain depths, what its tree holds,
/// and the origin its first capture is stamped with.
pub async fn branch_point(
    objects: &Objects,
    store: &Store,
    owner: &OwnerId,
    session: &SessionId,
    n: u64,
) -> Result<RewoundTree, BranchError> {
    let Some((small, bulk)) = store.capture_manifests(owner, session, n).await?.flatten() else {
        return Err(BranchError::NotKept(n));
    };
    let (mut files, mut bytes) = (0, 0);
    let head = |key: Option<String>| async move {
        let Some(key) = key else { return Ok::<_, BranchError>((Manifest::default(), None)) };
        let (tree, chain) = resolve_document(objects, &key).await?;
        Ok((tree, Some(ManifestHead { key, depth: chain.len() as u64 - 1 })))
    };
    let (small_tree, small) = head(small).await?;
    let (bulk_tree, bulk) = head(bulk).await?;
    for tree in [&small_tree, &bulk_tree] {
        files += tree.entries.iter().filter(|e| e.kind == sluice_protocol::registrar::EntryKind::File).count() as u64;
        bytes += tree.bytes();
    }
    let origin = sluice_protocol::Origin {
        epoch: 0,
        launch: format!("fork-of-{session}"),
        boot_id: format!("fork-of-{session}-{n}"),
        boot_generation: 0,
        observation: 0,
        head_n: Some(n),
    };
    let counts = CaptureCounts { files, added: files, changed: 0, removed: 0 };
    Ok(RewoundTree { small, bulk, bytes, counts, origin })
}
