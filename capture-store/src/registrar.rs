//! The registrar: the control plane's side of a capture session, served to
//! one executor's daemon on a unix socket in the executor's run directory
//! (mounted into the executor where only the daemon's user reaches it).
//! It holds the store and the object store; the executor holds neither.
//!
//! Everything a daemon sends is untrusted: bodies and frames are bounded,
//! every object is checked against its hash before it is stored, a capture
//! is registered only under the epoch the executor holds and only when the
//! store has every object it names. Each class's head is kept as a manifest
//! document in the object store: a full manifest, or a delta over the
//! previous head (at most [`MAX_DELTA_DEPTH`] deep), so a small change
//! writes a small document.

use std::collections::{BTreeMap, HashMap};

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::{Buf, Bytes, BytesMut};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sluice_protocol::capture::CaptureClass;
use sluice_protocol::names::Name;
use sluice_protocol::registrar::{self as wire, Manifest, ManifestDelta, RegistrarRefusal, refusal};
use sluice_store::capture::{CaptureCounts, CaptureSession, FinalSeal, ManifestHead, NewCapture, Rewind, RewoundTree};
use sluice_store::{ConflictCode, Store, StoreError};

use crate::objects::{Objects, ObjectsError, verify_all};
use crate::packs::{PACKED_MAX_OBJECT, PackBuilder};
use sluice_domain::ids::{LaunchId, RunId, SessionId};

/// How many deltas may stack on a full manifest before the next head is
/// written whole again.
pub const MAX_DELTA_DEPTH: u64 = 16;
/// The most a register request may hold.
pub const MAX_REGISTER_BYTES: usize = 256 << 20;
/// The most entries one class's manifest may hold.
pub const MAX_ENTRIES: usize = 4_000_000;
/// The longest a virtual path may be.
pub const MAX_PATH_BYTES: usize = 4096;
/// How many objects one upload or fetch stores or reads at once.
const STORE_CONCURRENCY: usize = 16;
/// How long one upload frame may take to arrive.
const FRAME_TIMEOUT: Duration = Duration::from_secs(60);

/// A stored head document: a full manifest or a delta over `base`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", tag = "form")]
enum HeadDocument {
    Full { manifest: Manifest },
    Delta { base: String, delta: ManifestDelta },
}

/// Reads a class's head manifest, following its deltas to the full one.
pub async fn load_manifest(objects: &Objects, head: Option<&ManifestHead>) -> Result<Manifest, ObjectsError> {
    match head {
        None => Ok(Manifest::default()),
        Some(head) => Ok(resolve_document(objects, &head.key).await?.0),
    }
}

/// A manifest document resolved through its chain of deltas: the manifest,
/// and the key of every document the chain holds (its own first).
pub async fn resolve_document(objects: &Objects, key: &str) -> Result<(Manifest, Vec<String>), ObjectsError> {
    let mut deltas = Vec::new();
    let mut chain = vec![key.to_owned()];
    loop {
        if deltas.len() as u64 > MAX_DELTA_DEPTH + 1 {
            return Err(ObjectsError::Store(format!("manifest {key} is deeper than allowed")));
        }
        let at = chain.last().expect("a key");
        let bytes = objects.get(at).await?;
        let document: HeadDocument = serde_json::from_slice(&bytes)
            .map_err(|e| ObjectsError::Store(format!("manifest document {at} does not parse: {e}")))?;
        match document {
            HeadDocument::Full { manifest } => {
                let manifest = deltas.iter().rev().fold(manifest, |m: Manifest, d: &ManifestDelta| m.apply(d));
                return Ok((manifest, chain));
            }
            HeadDocument::Delta { base, delta } => {
                deltas.push(delta);
                chain.push(base);
            }
        }
    }
}

/// What every registrar of this worker shares.
pub struct RegistrarHost {
    pub store: Store,
    pub objects: Objects,
    served: Mutex<HashMap<RunId, tokio::task::AbortHandle>>,
    metrics: Arc<sluice_telemetry::Metrics>,
}

/// The executor one registrar socket serves.
#[derive(Debug, Clone)]
pub struct Binding {
    pub run_id: RunId,
    pub session_id: SessionId,
    pub launch: LaunchId,
}

struct Served {
    host: Arc<RegistrarHost>,
    binding: Binding,
    /// The digest of the token once the store confirmed it.
    token_digest: Mutex<Option<[u8; 32]>>,
    /// The objects of the plans answered to this executor: all it may fetch.
    planned: Mutex<std::collections::HashSet<String>>,
}

type Refused = (StatusCode, Json<RegistrarRefusal>);

/// The one place a registrar refusal's code becomes an HTTP status (the
/// daemon acts on the code; the status only says the same to HTTP).
fn status_of(code: &str) -> StatusCode {
    match code {
        refusal::UNAUTHENTICATED => StatusCode::UNAUTHORIZED,
        refusal::INVALID => StatusCode::BAD_REQUEST,
        refusal::UNAVAILABLE => StatusCode::SERVICE_UNAVAILABLE,
        // Fenced, missing objects, a conflict, and the store's own conflicts.
        _ => StatusCode::CONFLICT,
    }
}

fn refused_with(code: &str, message: impl Into<String>, missing: Vec<String>) -> Refused {
    (status_of(code), Json(RegistrarRefusal { code: code.into(), message: message.into(), missing }))
}

fn refused(code: &str, message: impl Into<String>) -> Refused {
    refused_with(code, message, Vec::new())
}

fn invalid(message: impl Into<String>) -> Refused {
    refused(refusal::INVALID, message)
}

/// The registrar's word for a conflict the store refused with.
fn conflict_code(code: ConflictCode) -> &'static str {
    match code {
        ConflictCode::Fenced => refusal::FENCED,
        ConflictCode::Collecting => refusal::UNAVAILABLE,
        // The head moved; no other conflict comes of a registrar's calls,
        // and one that did is still a conflict of the session's state.
        _ => refusal::CONFLICT,
    }
}

fn from_store(e: StoreError) -> Refused {
    match e {
        StoreError::Conflict { message, code } => refused(conflict_code(code), message),
        other if other.is_disk_full() => {
            tracing::warn!(error = %other, "registrar: the database has no space left");
            refused(refusal::UNAVAILABLE, format!("no space left {}", crate::objects::FOR_THE_DATABASE))
        }
        other => {
            tracing::warn!(error = %other, "registrar: the store failed");
            refused(refusal::UNAVAILABLE, "the database is not available")
        }
    }
}

fn from_objects(e: ObjectsError) -> Refused {
    match e {
        ObjectsError::Mismatch { .. } | ObjectsError::BadKey(_) => invalid(e.to_string()),
        ObjectsError::Full { place, cause } => {
            tracing::warn!(error = %cause, "registrar: no space left {place}");
            refused(refusal::UNAVAILABLE, format!("no space left {place}"))
        }
        other => {
            tracing::warn!(error = %other, "registrar: the object store failed");
            refused(refusal::UNAVAILABLE, "the object store is not available")
        }
    }
}

impl RegistrarHost {
    pub fn new(store: Store, objects: Objects, metrics: Arc<sluice_telemetry::Metrics>) -> Arc<RegistrarHost> {
        Arc::new(RegistrarHost { store, objects, served: Mutex::new(HashMap::new()), metrics })
    }

    /// Serves `binding` on the socket `bind` makes, unless this process
    /// already serves it (then `bind` is not called). The host makes the
    /// socket for the owner of the run directory (the daemon's user) alone.
    pub fn ensure(
        self: &Arc<Self>,
        binding: Binding,
        bind: impl FnOnce() -> std::io::Result<tokio::net::UnixListener>,
    ) -> std::io::Result<()> {
        let mut served = self.served.lock().unwrap();
        if served.get(&binding.run_id).is_some_and(|h| !h.is_finished()) {
            return Ok(());
        }
        let listener = bind()?;
        let run_id = binding.run_id.clone();
        let state = Arc::new(Served {
            host: self.clone(),
            binding,
            token_digest: Mutex::new(None),
            planned: Mutex::new(Default::default()),
        });
        let app = router(state);
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!(error = %e, "a registrar socket stopped serving");
            }
        });
        served.insert(run_id, task.abort_handle());
        Ok(())
    }

    /// Stops serving a run's executor.
    pub fn forget(&self, run_id: &str) {
        if let Some(task) = self.served.lock().unwrap().remove(run_id) {
            task.abort();
        }
    }

    /// The plan in force: the session's head manifests.
    async fn plan(&self, session: &CaptureSession) -> Result<wire::Plan, Refused> {
        let small = load_manifest(&self.objects, session.small.as_ref()).await.map_err(from_objects)?;
        let bulk = load_manifest(&self.objects, session.bulk.as_ref()).await.map_err(from_objects)?;
        Ok(wire::Plan {
            worktree_id: session.worktree_id.clone(),
            epoch: session.epoch,
            head_n: (session.head_n > 0).then_some(session.head_n),
            head_capture_id: (session.head_n > 0).then(|| format!("{}/{}", session.id, session.head_n)),
            small,
            bulk,
            quota_bytes: session.quota_bytes,
            used_bytes: session.used_bytes,
        })
    }
}

fn router(state: Arc<Served>) -> Router {
    Router::new()
        .route(wire::CLAIM, post(claim))
        .route(wire::PLAN, get(plan))
        .route(wire::LEASE, get(lease))
        .route(wire::MISSING, post(missing))
        .route(wire::OBJECTS, post(upload))
        .route(wire::FETCH, post(fetch))
        .route(wire::REGISTER, post(register))
        .route(wire::SEAL, post(seal))
        .layer(axum::middleware::from_fn_with_state(state.clone(), authenticate))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_REGISTER_BYTES))
        .with_state(state)
}

async fn authenticate(State(served): State<Arc<Served>>, request: Request, next: axum::middleware::Next) -> Response {
    let presented = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .map(str::to_owned);
    let Some(token) = presented else {
        return refused(refusal::UNAUTHENTICATED, "the session token is required").into_response();
    };
    let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    let known = *served.token_digest.lock().unwrap();
    let ok = match known {
        Some(known) => known == digest,
        None => match served.host.store.capture_token_matches(&served.binding.session_id, &token).await {
            Ok(true) => {
                *served.token_digest.lock().unwrap() = Some(digest);
                true
            }
            Ok(false) => false,
            Err(e) => return from_store(e).into_response(),
        },
    };
    if !ok {
        return refused(refusal::UNAUTHENTICATED, "not this session's token").into_response();
    }
    next.run(request).await
}

async fn session(served: &Served) -> Result<CaptureSession, Refused> {
    served
        .host
        .store
        .capture_session(&served.binding.session_id)
        .await
        .map_err(from_store)?
        .ok_or_else(|| refused(refusal::FENCED, "the capture session is gone"))
}

/// Refuses a call made under an epoch this executor no longer holds.
fn check_epoch(served: &Served, session: &CaptureSession, epoch: u64) -> Result<(), Refused> {
    if epoch != session.epoch || session.claimed_run_id.as_deref() != Some(served.binding.run_id.as_str()) {
        return Err(refused(
            refusal::FENCED,
            format!("epoch {epoch} was fenced: the session's epoch is {}", session.epoch),
        ));
    }
    Ok(())
}

async fn claim(State(served): State<Arc<Served>>) -> Result<Json<wire::Plan>, Refused> {
    let binding = &served.binding;
    let store = &served.host.store;
    let mut conflicts = 0;
    let session = loop {
        let rewind = match store.pending_restore_point(&binding.run_id).await.map_err(from_store)? {
            Some(point) => Some(rewind_to(&served, point).await?),
            None => None,
        };
        let claimed =
            store.claim_capture_session(&binding.session_id, &binding.run_id, &binding.launch, rewind.as_ref()).await;
        match claimed {
            // The head moved while the point was worked out: work it out again.
            Err(StoreError::Conflict { code: ConflictCode::HeadMoved, .. }) if conflicts < 3 => conflicts += 1,
            claimed => break claimed.map_err(from_store)?,
        }
    };
    tracing::info!(run = %binding.run_id, session = %binding.session_id, epoch = session.epoch, "capture session claimed");
    answer_plan(&served, &session).await
}

/// The restore of capture `point` as the session's next capture: its
/// manifest documents (kept, as a pending restore pins them) named again.
async fn rewind_to(served: &Served, point: u64) -> Result<Rewind, Refused> {
    let host = &served.host;
    let session = session(served).await?;
    let kept = host.store.capture_manifests(&session.owner_user_id, &session.id, point).await.map_err(from_store)?;
    let Some((small, bulk)) = kept.flatten() else {
        return Err(refused(refusal::CONFLICT, format!("capture {point} is no longer kept: it cannot be restored")));
    };
    let mut rewind = Rewind { point, expected_head: session.head_n, tree: None };
    if point == session.head_n {
        return Ok(rewind);
    }
    let (mut heads, mut counts, mut bytes) = (BTreeMap::new(), CaptureCounts::default(), 0);
    for (class, key) in [(CaptureClass::Small, small), (CaptureClass::Bulk, bulk)] {
        let before = load_manifest(&host.objects, session.head(class)).await.map_err(from_objects)?;
        let (tree, head) = match key {
            Some(key) => {
                let (tree, chain) = resolve_document(&host.objects, &key).await.map_err(from_objects)?;
                (tree, Some(ManifestHead { key, depth: chain.len() as u64 - 1 }))
            }
            None => (Manifest::default(), None),
        };
        count_class(&mut counts, &before, &tree, Some(&before.diff(&tree)));
        bytes += tree.bytes();
        heads.insert(class, head);
    }
    let origin = sluice_protocol::Origin {
        epoch: session.epoch + 1,
        launch: served.binding.launch.to_string(),
        boot_id: format!("restore-of-{point}"),
        boot_generation: 0,
        observation: 0,
        head_n: Some(session.head_n),
    };
    rewind.tree = Some(RewoundTree {
        small: heads.remove(&CaptureClass::Small).flatten(),
        bulk: heads.remove(&CaptureClass::Bulk).flatten(),
        bytes,
        counts,
        origin,
    });
    Ok(rewind)
}

/// Adds what a class's tree holds, and what `delta` changed in `before`, to `counts`.
fn count_class(counts: &mut CaptureCounts, before: &Manifest, tree: &Manifest, delta: Option<&ManifestDelta>) {
    counts.files += tree.entries.iter().filter(|e| e.kind == wire::EntryKind::File).count() as u64;
    if let Some(delta) = delta {
        for entry in &delta.upserts {
            match before.entries.binary_search_by(|e| e.path.cmp(&entry.path)) {
                Ok(_) => counts.changed += 1,
                Err(_) => counts.added += 1,
            }
        }
        counts.removed += delta.removed.len() as u64;
    }
}

async fn lease(State(served): State<Arc<Served>>) -> Result<Json<wire::Lease>, Refused> {
    let session = session(&served).await?;
    let held = session.claimed_run_id.as_deref() == Some(served.binding.run_id.as_str());
    Ok(Json(wire::Lease { epoch: session.epoch, held }))
}

async fn plan(State(served): State<Arc<Served>>) -> Result<Json<wire::Plan>, Refused> {
    let session = session(&served).await?;
    answer_plan(&served, &session).await
}

async fn answer_plan(served: &Served, session: &CaptureSession) -> Result<Json<wire::Plan>, Refused> {
    let plan = served.host.plan(session).await?;
    let mut planned = served.planned.lock().unwrap();
    for manifest in [&plan.small, &plan.bulk] {
        planned.extend(manifest.object_keys().into_iter().map(str::to_owned));
    }
    drop(planned);
    Ok(Json(plan))
}

/// Serves objects of the plans this executor was answered, as frames.
async fn fetch(State(served): State<Arc<Served>>, Json(request): Json<wire::FetchRequest>) -> Result<Vec<u8>, Refused> {
    if request.keys.len() > wire::MAX_FETCH_BATCH {
        return Err(invalid(format!("at most {} keys per fetch", wire::MAX_FETCH_BATCH)));
    }
    {
        let planned = served.planned.lock().unwrap();
        if let Some(key) = request.keys.iter().find(|k| !planned.contains(k.as_str())) {
            let key: String = key.chars().take(80).collect();
            return Err(invalid(format!("{key} is not an object of a plan answered to this executor")));
        }
    }
    let read = served.host.objects.get_many(&request.keys).await.map_err(from_objects)?;
    let mut body = Vec::with_capacity(read.iter().map(|b| 72 + b.len()).sum());
    for (key, bytes) in request.keys.iter().zip(read) {
        body.extend_from_slice(&wire::frame_header(key, bytes.len() as u64));
        body.extend_from_slice(&bytes);
    }
    Ok(body)
}

async fn missing(
    State(served): State<Arc<Served>>,
    Json(request): Json<wire::MissingRequest>,
) -> Result<Json<wire::MissingAnswer>, Refused> {
    check_epoch(&served, &session(&served).await?, request.epoch)?;
    if request.keys.len() > wire::MAX_MISSING_BATCH {
        return Err(invalid(format!("at most {} keys per request", wire::MAX_MISSING_BATCH)));
    }
    if let Some(bad) = request.keys.iter().find(|k| !wire::is_object_key(k)) {
        return Err(invalid(format!("{} is not an object key", bad.chars().take(80).collect::<String>())));
    }
    let missing = served.host.objects.missing(&request.keys).await.map_err(from_objects)?;
    let held = request.keys.len().saturating_sub(missing.len());
    served.host.metrics.capture_deduplicated_objects.inc_by(held as u64);
    Ok(Json(wire::MissingAnswer { missing }))
}

#[derive(Serialize)]
struct Uploaded {
    objects: u64,
    bytes: u64,
}

async fn upload(State(served): State<Arc<Served>>, headers: HeaderMap, body: Body) -> Result<Json<Uploaded>, Refused> {
    let epoch = headers
        .get(wire::EPOCH_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or_else(|| invalid(format!("the {} header must name the epoch", wire::EPOCH_HEADER)))?;
    check_epoch(&served, &session(&served).await?, epoch)?;
    let host = &served.host;
    let mut stream = body.into_data_stream();
    let mut buffer = BytesMut::new();
    let mut done = Uploaded { objects: 0, bytes: 0 };
    let mut ended = false;
    // Whole frames wait in a batch until it is counted against the quota.
    let mut batch: Vec<(String, Bytes)> = Vec::new();
    let mut batch_bytes = 0u64;
    // Small objects gather into a pack; larger ones are stored on their own.
    let mut pack = PackBuilder::new();
    // Writes run while more frames arrive, at most this many in flight.
    let mut storing = futures::stream::FuturesUnordered::new();
    loop {
        while let Some((key, bytes)) = next_frame(&mut buffer)? {
            batch_bytes += bytes.len() as u64;
            batch.push((key, bytes));
        }
        if batch_bytes >= COUNT_BATCH_BYTES || (ended && !batch.is_empty()) {
            // Counted before any of it is stored: past the quota, nothing is.
            let counted = host.store.reserve_stored_bytes(&served.binding.session_id, batch_bytes);
            if !counted.await.map_err(from_store)? {
                return Err(refused(refusal::QUOTA, "the upload would take the session past its byte quota"));
            }
            // Each object is hashed once here, and stored only if it is what its key says.
            for object in verify_all(std::mem::take(&mut batch)).await.map_err(from_objects)? {
                done.objects += 1;
                done.bytes += object.bytes().len() as u64;
                let objects = host.objects.clone();
                if object.bytes().len() > PACKED_MAX_OBJECT {
                    storing.push(tokio::spawn(async move { objects.put_alone(object).await }));
                } else {
                    pack.add(&object);
                    if pack.is_full() {
                        let closed = std::mem::take(&mut pack).finish();
                        storing.push(tokio::spawn(async move { objects.put_pack(closed).await }));
                    }
                }
                while storing.len() >= STORE_CONCURRENCY {
                    stored(storing.next().await)?;
                }
            }
            batch_bytes = 0;
        }
        if ended {
            if !buffer.is_empty() {
                return Err(invalid("the upload ended inside a frame"));
            }
            if !pack.is_empty() {
                let objects = host.objects.clone();
                let closed = std::mem::take(&mut pack).finish();
                storing.push(tokio::spawn(async move { objects.put_pack(closed).await }));
            }
            while let Some(write) = storing.next().await {
                stored(Some(write))?;
            }
            host.metrics.capture_shipped_objects.inc_by(done.objects);
            host.metrics.capture_shipped_bytes.inc_by(done.bytes);
            return Ok(Json(done));
        }
        match tokio::time::timeout(FRAME_TIMEOUT, stream.next()).await {
            Err(_) => return Err(invalid("the upload stalled")),
            Ok(None) => ended = true,
            Ok(Some(Ok(chunk))) => buffer.extend_from_slice(&chunk),
            Ok(Some(Err(_))) => return Err(invalid("the upload could not be read")),
        }
    }
}

/// The outcome of one write of an upload. Writes run as tasks of their
/// own: a daemon that hangs up mid-upload never leaves a pack written and
/// not recorded.
fn stored(write: Option<Result<Result<(), ObjectsError>, tokio::task::JoinError>>) -> Result<(), Refused> {
    match write {
        None | Some(Ok(Ok(()))) => Ok(()),
        Some(Ok(Err(e))) => Err(from_objects(e)),
        Some(Err(e)) => Err(from_objects(ObjectsError::Store(e.to_string()))),
    }
}

/// How many uploaded bytes are counted against the quota at a time.
const COUNT_BATCH_BYTES: u64 = 4 << 20;

/// Splits the next whole frame off `buffer`, if it holds one.
fn next_frame(buffer: &mut BytesMut) -> Result<Option<(String, Bytes)>, Refused> {
    if buffer.len() < 72 {
        return Ok(None);
    }
    let key = std::str::from_utf8(&buffer[..64]).ok().filter(|k| wire::is_object_key(k)).map(str::to_owned);
    let Some(key) = key else { return Err(invalid("a frame does not start with an object key")) };
    let len = u64::from_be_bytes(buffer[64..72].try_into().expect("eight bytes"));
    if len > wire::MAX_OBJECT_BYTES as u64 {
        return Err(invalid(format!("an object may hold at most {} bytes", wire::MAX_OBJECT_BYTES)));
    }
    if buffer.len() < 72 + len as usize {
        return Ok(None);
    }
    buffer.advance(72);
    Ok(Some((key, buffer.split_to(len as usize).freeze())))
}

/// What is wrong with a manifest from a daemon, if anything.
pub fn manifest_problem(class: CaptureClass, manifest: &Manifest) -> Option<String> {
    if manifest.entries.len() > MAX_ENTRIES {
        return Some(format!("the {} manifest holds more than {MAX_ENTRIES} entries", class.as_str()));
    }
    if !manifest.is_canonical() {
        return Some(format!("the {} manifest is not sorted by path with each path once", class.as_str()));
    }
    let is_virtual = |path: &Name| {
        path.len() <= MAX_PATH_BYTES
            && (["tree/", ".git/", "harness/"].iter().any(|p| path.starts_with(p)) || path.as_bytes() == wire::GIT_DIR)
            && !path.parts().any(|part| part.is_empty() || part == b"." || part == b"..")
            && !path.as_bytes().contains(&0)
    };
    for entry in &manifest.entries {
        let path_ok = is_virtual(&entry.path)
            && entry.target.as_ref().is_none_or(|t| !t.as_bytes().contains(&0))
            && entry
                .hard_link
                .as_ref()
                .is_none_or(|l| entry.kind == wire::EntryKind::File && l != &entry.path && is_virtual(l));
        if !path_ok {
            return Some("a manifest path is not a virtual path (tree/…, .git/…, harness/…)".into());
        }
        if entry.mode > 0o7777 || entry.objects.iter().any(|k| !wire::is_object_key(k)) {
            // The path is the workload's: never quoted.
            return Some("an entry has a bad mode or object key".into());
        }
    }
    None
}

/// Checks what a daemon's manifest may hold.
fn check_manifest(class: CaptureClass, manifest: &Manifest) -> Result<(), Refused> {
    manifest_problem(class, manifest).map_or(Ok(()), |problem| Err(invalid(problem)))
}

/// Stores a whole manifest as a head document of its own (`owner` makes
/// its key unique, so deleting it never takes another's) and answers its key.
pub async fn store_owned_manifest(objects: &Objects, manifest: &Manifest, owner: &str) -> Result<String, ObjectsError> {
    let mut document = serde_json::to_value(HeadDocument::Full { manifest: manifest.clone() })
        .map_err(|e| ObjectsError::Store(e.to_string()))?;
    document["owner"] = serde_json::Value::String(owner.to_owned());
    let text = serde_json::to_vec(&document).map_err(|e| ObjectsError::Store(e.to_string()))?;
    objects.put(Bytes::from(text)).await
}

async fn register(
    State(served): State<Arc<Served>>,
    Json(request): Json<wire::RegisterRequest>,
) -> Result<Json<wire::Registered>, Refused> {
    let host = &served.host;
    let session = session(&served).await?;
    check_epoch(&served, &session, request.epoch)?;
    if request.n != session.head_n + 1 {
        return Err(refused(
            refusal::CONFLICT,
            format!("capture {} is not the head's next (the head is {})", request.n, session.head_n),
        ));
    }
    for (class, manifest) in &request.classes {
        check_manifest(*class, manifest)?;
    }
    // Read before any object is found to exist: a sweep that deletes after
    // this fails the registration, which then checks again.
    let sweep_generation = host.store.object_sweep_generation().await.map_err(from_store)?;
    // Each class's current head, and what the capture changes in it.
    let mut heads = BTreeMap::new();
    for class in CaptureClass::ALL {
        heads.insert(class, load_manifest(&host.objects, session.head(class)).await.map_err(from_objects)?);
    }
    let mut new_keys: Vec<String> = Vec::new();
    let mut deltas = BTreeMap::new();
    for (class, manifest) in &request.classes {
        let before = &heads[class];
        let known = before.object_keys();
        let delta = before.diff(manifest);
        for entry in &delta.upserts {
            new_keys.extend(entry.objects.iter().filter(|k| !known.contains(k.as_str())).cloned());
        }
        deltas.insert(*class, delta);
    }
    new_keys.sort();
    new_keys.dedup();
    let mut missing = Vec::new();
    for batch in new_keys.chunks(wire::MAX_MISSING_BATCH) {
        missing.extend(host.objects.missing(batch).await.map_err(from_objects)?);
        if missing.len() >= wire::MISSING_NAMED {
            break;
        }
    }
    if !missing.is_empty() {
        missing.truncate(wire::MISSING_NAMED);
        let message = format!("the capture names {} or more objects the store does not hold", missing.len());
        return Err(refused_with(refusal::MISSING_OBJECTS, message, missing));
    }
    // The quota was counted as the objects were uploaded: every class
    // whose objects are stored is taken.
    let mut used: BTreeMap<CaptureClass, u64> = heads.iter().map(|(c, m)| (*c, m.bytes())).collect();
    for (class, manifest) in &request.classes {
        used.insert(*class, manifest.bytes());
    }
    let used_bytes: u64 = used.values().sum();
    let accepted: Vec<CaptureClass> = request.classes.keys().copied().collect();
    let mut counts = CaptureCounts::default();
    for class in CaptureClass::ALL {
        let tree = request.classes.get(&class).unwrap_or(&heads[&class]);
        count_class(&mut counts, &heads[&class], tree, deltas.get(&class));
    }
    if accepted.is_empty() {
        return Ok(Json(wire::Registered { n: None, refused: Vec::new(), used_bytes: session.used_bytes }));
    }
    let mut classes = Vec::new();
    let mut bytes = 0;
    for class in &accepted {
        let manifest = &request.classes[class];
        bytes += manifest.bytes();
        let previous = session.head(*class);
        let (document, depth) = match previous {
            Some(head) if head.depth < MAX_DELTA_DEPTH => (
                HeadDocument::Delta { base: head.key.clone(), delta: deltas.remove(class).unwrap_or_default() },
                head.depth + 1,
            ),
            _ => (HeadDocument::Full { manifest: manifest.clone() }, 0),
        };
        let text = serde_json::to_vec(&document).map_err(|e| invalid(e.to_string()))?;
        let key = host.objects.put(Bytes::from(text)).await.map_err(from_objects)?;
        classes.push((*class, ManifestHead { key, depth }));
    }
    let capture = NewCapture {
        epoch: request.epoch,
        n: request.n,
        run_id: served.binding.run_id.clone(),
        launch: served.binding.launch.clone(),
        classes,
        bytes,
        used_bytes,
        origin: request.origin,
        sweep_generation,
        counts,
    };
    host.store.register_capture(&served.binding.session_id, &capture).await.map_err(from_store)?;
    host.metrics.captures_registered.inc();
    Ok(Json(wire::Registered { n: Some(request.n), refused: Vec::new(), used_bytes }))
}

async fn seal(
    State(served): State<Arc<Served>>,
    Json(request): Json<wire::SealRequest>,
) -> Result<Json<wire::Sealed>, Refused> {
    let now = sluice_store::clock::now_ms();
    let seal = FinalSeal {
        capture_n: request.capture_n,
        epoch: request.epoch,
        executor_id: served.binding.run_id.clone(),
        launch_id: served.binding.launch.clone(),
        sealed_at: now,
        origin: request.origin,
    };
    served
        .host
        .store
        .record_final_seal(&served.binding.session_id, &seal, &served.binding.run_id)
        .await
        .map_err(from_store)?;
    Ok(Json(wire::Sealed { capture_n: request.capture_n, epoch: request.epoch, sealed_at_ms: now }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::{ObjectStoreUrl, object_key};
    use sluice_domain::ids::OwnerId;
    use sluice_protocol::registrar::{Entry, EntryKind};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// One raw HTTP/1.1 exchange on the socket, as a hostile daemon would
    /// make it: answers the status and the body.
    async fn call(
        socket: &std::path::Path,
        method: &str,
        path: &str,
        token: &str,
        headers: &str,
        body: &[u8],
    ) -> (u16, Vec<u8>) {
        let mut stream = tokio::net::UnixStream::connect(socket).await.unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nhost: r\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n{headers}\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(body).await.unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.unwrap();
        let text = String::from_utf8_lossy(&answer);
        let status = text[9..12].parse().unwrap();
        let split = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        (status, answer[split..].to_vec())
    }

    fn json(body: &[u8]) -> serde_json::Value {
        // Chunked answers carry hex lengths around the JSON: take the object.
        let text = String::from_utf8_lossy(body);
        let start = text.find('{').unwrap_or(0);
        let end = text.rfind('}').map_or(text.len(), |e| e + 1);
        serde_json::from_str(&text[start..end]).unwrap_or(serde_json::Value::Null)
    }

    fn frame(key: &str, bytes: &[u8]) -> Vec<u8> {
        let mut out = wire::frame_header(key, bytes.len() as u64).to_vec();
        out.extend_from_slice(bytes);
        out
    }

    fn file(path: &str, key: &str) -> Entry {
        Entry {
            path: path.into(),
            kind: EntryKind::File,
            mode: 0o644,
            size: 5,
            mtime_ms: 0,
            objects: vec![key.into()],
            target: None,
            hard_link: None,
        }
    }

    #[tokio::test]
    async fn a_hostile_daemon_gets_nothing_it_should_not() {
        let db = sluice_store::testing::sqlite();
        let store = sluice_store::testing::open(&db).await;
        let dir = tempfile::tempdir().unwrap();
        let objects = Objects::open(&ObjectStoreUrl::Local(dir.path().join("objects")), store.clone()).unwrap();
        let host = RegistrarHost::new(store.clone(), objects.clone(), Default::default());
        let (session, token) =
            store.create_capture_session(&OwnerId::from("alice"), Some(100), Default::default()).await.unwrap();
        let (other, _) = store.create_capture_session(&OwnerId::from("bob"), None, Default::default()).await.unwrap();
        let socket = dir.path().join("registrar.sock");
        let binding = Binding { run_id: "run-a".into(), session_id: session.id.clone(), launch: "l".into() };
        host.ensure(binding, || tokio::net::UnixListener::bind(&socket)).unwrap();
        let token = token.expose().as_str();

        // Without the session's token: nothing.
        let (status, _) = call(&socket, "POST", wire::CLAIM, "slcap_guess", "", b"{}").await;
        assert_eq!(status, 401);
        assert_eq!(store.capture_session(&session.id).await.unwrap().unwrap().epoch, 0, "no claim was made");

        let (status, plan) = call(&socket, "POST", wire::CLAIM, token, "", b"{}").await;
        assert_eq!(status, 200);
        assert_eq!(json(&plan)["epoch"], 1);
        let epoch = "x-sluice-epoch: 1\r\n";

        // An object that does not hash to its key is not stored.
        let liar = object_key(b"other");
        let (status, _) = call(&socket, "POST", wire::OBJECTS, token, epoch, &frame(&liar, b"hello")).await;
        assert_eq!(status, 400);
        assert_eq!(objects.missing(std::slice::from_ref(&liar)).await.unwrap(), vec![liar]);
        // A frame longer than an object may be is refused before it is read.
        let huge = wire::frame_header(&object_key(b"x"), u64::MAX);
        assert_eq!(call(&socket, "POST", wire::OBJECTS, token, epoch, &huge).await.0, 400);
        // An upload under an epoch this executor does not hold.
        let hello = object_key(b"hello");
        let stale =
            call(&socket, "POST", wire::OBJECTS, token, "x-sluice-epoch: 7\r\n", &frame(&hello, b"hello")).await;
        assert_eq!((stale.0, json(&stale.1)["code"].as_str()), (409, Some("fenced")));

        // A capture naming objects the store lacks.
        let absent: Vec<String> = (0..30).map(|i| object_key(format!("absent {i}").as_bytes())).collect();
        let manifest =
            Manifest { entries: absent.iter().enumerate().map(|(i, k)| file(&format!("tree/f{i:02}"), k)).collect() };
        let register = |manifest: &Manifest| {
            serde_json::to_vec(&serde_json::json!({
                "epoch": 1, "n": 1, "classes": {"small": manifest},
                "origin": {"epoch": 1, "launch": "l", "bootId": "b", "bootGeneration": 1, "observation": 1}
            }))
            .unwrap()
        };
        let (status, refused) = call(&socket, "POST", wire::REGISTER, token, "", &register(&manifest)).await;
        let refused = json(&refused);
        assert_eq!((status, refused["code"].as_str()), (409, Some("missing-objects")), "{refused}");
        assert_eq!(refused["missing"].as_array().unwrap().len(), wire::MISSING_NAMED);
        // Paths that would leave the worktree.
        for path in ["tree/../etc/passwd", "/etc/passwd", "tree//x", "elsewhere/x"] {
            let bad = Manifest { entries: vec![file(path, &hello)] };
            assert_eq!(call(&socket, "POST", wire::REGISTER, token, "", &register(&bad)).await.0, 400, "{path}");
        }
        // Past the quota (100 bytes): an upload that would pass it is
        // refused whole, and nothing of it is stored or counted.
        assert_eq!(call(&socket, "POST", wire::OBJECTS, token, epoch, &frame(&hello, b"hello")).await.0, 200);
        let counted = store.capture_session(&session.id).await.unwrap().unwrap().stored_bytes;
        let (a, b) = (vec![b'a'; 50], vec![b'b'; 50]);
        let mut frames = frame(&object_key(&a), &a);
        frames.extend(frame(&object_key(&b), &b));
        let (status, answer) = call(&socket, "POST", wire::OBJECTS, token, epoch, &frames).await;
        assert_eq!((status, json(&answer)["code"].as_str()), (409, Some("quota")), "{}", json(&answer));
        let keys = [object_key(&a), object_key(&b)];
        assert_eq!(objects.missing(&keys).await.unwrap(), keys, "nothing of a refused upload is stored");
        assert_eq!(store.capture_session(&session.id).await.unwrap().unwrap().stored_bytes, counted);

        // Objects are served only when a plan answered to this executor named them.
        let (status, _) =
            call(&socket, "POST", wire::FETCH, token, "", format!(r#"{{"keys":["{hello}"]}}"#).as_bytes()).await;
        assert_eq!(status, 400, "stored, but in no plan of this session");
        let (status, _) = call(
            &socket,
            "POST",
            wire::REGISTER,
            token,
            "",
            &register(&Manifest { entries: vec![file("tree/a", &hello)] }),
        )
        .await;
        assert_eq!(status, 200);
        let (status, _) = call(&socket, "GET", wire::PLAN, token, "", b"").await;
        assert_eq!(status, 200);
        let (status, body) =
            call(&socket, "POST", wire::FETCH, token, "", format!(r#"{{"keys":["{hello}"]}}"#).as_bytes()).await;
        assert_eq!(status, 200);
        assert!(body.windows(5).any(|w| w == b"hello"));
        // Another session's token opens nothing here.
        assert!(!store.capture_token_matches(&other.id, token).await.unwrap());
    }

    #[tokio::test]
    async fn the_lease_says_whether_the_asking_executor_still_holds_the_session() {
        let db = sluice_store::testing::sqlite();
        let store = sluice_store::testing::open(&db).await;
        let dir = tempfile::tempdir().unwrap();
        let objects = Objects::open(&ObjectStoreUrl::Local(dir.path().join("objects")), store.clone()).unwrap();
        let host = RegistrarHost::new(store.clone(), objects, Default::default());
        let (session, token) =
            store.create_capture_session(&OwnerId::from("alice"), None, Default::default()).await.unwrap();
        let token = token.expose().as_str();
        let socket = |run: &str| dir.path().join(format!("{run}.sock"));
        for run in ["run-a", "run-b"] {
            let binding = Binding { run_id: run.into(), session_id: session.id.clone(), launch: run.into() };
            host.ensure(binding, || tokio::net::UnixListener::bind(socket(run))).unwrap();
        }
        assert_eq!(call(&socket("run-a"), "GET", wire::LEASE, "slcap_guess", "", b"").await.0, 401);
        assert_eq!(call(&socket("run-a"), "POST", wire::CLAIM, token, "", b"{}").await.0, 200);
        let lease = |run: &'static str| {
            let path = socket(run);
            async move {
                let (status, body) = call(&path, "GET", wire::LEASE, token, "", b"").await;
                assert_eq!(status, 200);
                serde_json::from_value::<wire::Lease>(json(&body)).unwrap()
            }
        };
        assert_eq!(lease("run-a").await, wire::Lease { epoch: 1, held: true });
        assert_eq!(lease("run-b").await, wire::Lease { epoch: 1, held: false });
        // A newer executor claims: the first one is told, with nothing to ship.
        assert_eq!(call(&socket("run-b"), "POST", wire::CLAIM, token, "", b"{}").await.0, 200);
        assert_eq!(lease("run-a").await, wire::Lease { epoch: 2, held: false });
        assert_eq!(lease("run-b").await, wire::Lease { epoch: 2, held: true });
    }
}
