//! Acquire, read, list and release: broker workspaces are sluice
//! workspaces owned by the instance, each with a broker record (size,
//! image, lifetime, idle timeout).

use std::collections::BTreeMap;

use axum::extract::{Path, Query};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sluice_domain::broker;
use sluice_domain::egress::Allowlist;
use sluice_store::broker::{Admission, BrokerWorkspace, NewBrokerWorkspace};
use sluice_store::clock::rfc3339_seconds;
use sluice_store::{
    CreateOutcome, DesiredState, Idempotency, NewWorkspace, Secret, StoreError, TerminationReason, WorkspaceStatus,
};

use crate::lease::{DEFAULT_SIZE, MAX_EGRESS_DOMAINS, MAX_ENV_ENTRIES, SIZES};
use crate::{Authenticated, BrokerCode, BrokerError, BrokerJson, Releasing, Shared, ok};
use sluice_domain::ids::{IdempotencyKey, OwnerId, SnapshotId, WorkspaceId};

/// The owner a broker instance's workspaces have in sluice.
pub fn owner_of(instance: &str) -> OwnerId {
    OwnerId::from(format!("broker:{instance}"))
}

/// The idempotency key an acquire's own key is stored under.
fn acquire_key(key: &str) -> IdempotencyKey {
    IdempotencyKey::from(format!("acquire:{key}"))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcquireRequest {
    label: String,
    size: Option<String>,
    image: Option<String>,
    env: Option<BTreeMap<String, String>>,
    /// Missing and `null` are both refused: never open egress.
    #[serde(default, deserialize_with = "present")]
    egress: Option<Option<Egress>>,
    snapshot_id: Option<String>,
    agent: Option<String>,
    run_id: Option<String>,
}

#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct Egress {
    allowed_domains: Vec<String>,
}

/// Tells a field sent as `null` from one not sent.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<Egress>>, D::Error> {
    Option::<Egress>::deserialize(d).map(Some)
}

pub(crate) fn chars_in(value: &str, max: usize, extra: &[u8]) -> bool {
    (1..=max).contains(&value.len()) && value.bytes().all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
}

/// A broker-minted id (workspace, snapshot) as the protocol's rule has it:
/// 1 to 64 characters of `[A-Za-z0-9._-]`, never `.` or `..`. Anything else
/// is refused before it is looked up.
pub(crate) fn valid_id(value: &str, what: &str) -> Result<(), BrokerError> {
    if chars_in(value, 64, b"._-") && value != "." && value != ".." {
        return Ok(());
    }
    Err(BrokerError::invalid(format!("{what}: 1 to 64 characters of [A-Za-z0-9._-], not . or ..")))
}

/// A hostname in the client's grammar: lowercase labels, or one leading `.`.
fn valid_domain(domain: &str) -> bool {
    let name = domain.strip_prefix("*.").or_else(|| domain.strip_prefix('.')).unwrap_or(domain);
    !name.is_empty()
        && name.len() <= 253
        && name.contains('.')
        && name.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
        && !name.split('.').all(|l| l.bytes().all(|b| b.is_ascii_digit()))
}

/// The requested names as an allowlist: `.domain` (the protocol's form
/// for a domain's subdomains) is read as `*.domain`.
fn allowlist_of(domains: &[String]) -> Result<Allowlist, BrokerError> {
    let entries: Vec<String> =
        domains.iter().map(|d| if d.starts_with('.') { format!("*{d}") } else { d.clone() }).collect();
    Allowlist::parse(entries.iter().map(String::as_str))
        .map_err(|e| BrokerError::invalid(format!("egress.allowed_domains: {e}")))
}

/// The protocol's state and termination reason of a workspace.
pub fn protocol_state(w: &BrokerWorkspace) -> (&'static str, Option<TerminationReason>) {
    if w.status.is_finished() {
        let reason = broker::ended_because(w.termination_reason, w.status, w.finished_at, w.expires_at);
        return ("terminated", Some(reason));
    }
    let state = match (w.desired, w.status) {
        (DesiredState::Stopped, _) | (_, WorkspaceStatus::Retained) => "terminating",
        (_, WorkspaceStatus::Ready) => "running",
        _ => "starting",
    };
    (state, None)
}

/// The status object.
pub fn status_json(w: &BrokerWorkspace) -> Value {
    let (state, reason) = protocol_state(w);
    json!({
        "workspace_id": w.workspace_id,
        "state": state,
        "size": w.size,
        "image": w.image,
        "created_at": rfc3339_seconds(w.created_at),
        "expires_at": rfc3339_seconds(w.expires_at),
        "idle_timeout_seconds": w.idle_timeout_seconds,
        "terminated_at": if state == "terminated" { w.finished_at.map(rfc3339_seconds) } else { None },
        "termination_reason": reason,
    })
}

/// The protocol's idempotency key header.
pub(crate) fn idempotency_key(headers: &HeaderMap) -> Result<String, BrokerError> {
    let key = headers
        .get("idempotency-key")
        .ok_or_else(|| BrokerError::invalid("the Idempotency-Key header is required"))?
        .to_str()
        .map_err(|_| BrokerError::invalid("Idempotency-Key: 1 to 200 characters of [A-Za-z0-9._:-]"))?;
    if !chars_in(key, 200, b"._:-") {
        return Err(BrokerError::invalid("Idempotency-Key: 1 to 200 characters of [A-Za-z0-9._:-]"));
    }
    Ok(key.to_owned())
}

/// The request as its idempotency hash sees it: env values only as hashes.
fn canonical(request: &AcquireRequest) -> String {
    let env: Option<BTreeMap<&String, String>> = request.env.as_ref().map(|env| {
        env.iter()
            .map(|(k, v)| (k, Sha256::digest(v.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()))
            .collect()
    });
    json!({
        "label": request.label, "size": request.size, "image": request.image, "env": env,
        "egress": request.egress, "snapshot_id": request.snapshot_id, "agent": request.agent, "run_id": request.run_id,
    })
    .to_string()
}

/// Admission for new work: paused and stopped refuse; an unreadable state
/// fails closed.
pub(crate) async fn admitted(state: &Shared, instance: &str) -> Result<(), BrokerError> {
    match state.store.broker_admission(instance).await {
        Ok(Admission::Open) => Ok(()),
        Ok(Admission::Paused(reason)) => {
            Err(BrokerError::new(BrokerCode::Paused, "admission is paused for this instance")
                .reason(reason.as_deref().unwrap_or("instance_paused")))
        }
        Ok(Admission::EmergencyStopped(reason)) => {
            Err(BrokerError::new(BrokerCode::EmergencyStopped, "the broker's operator stopped execution")
                .reason(reason.as_deref().unwrap_or("operator")))
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot read broker admission; refusing new work");
            Err(BrokerError::admission_unavailable())
        }
    }
}

pub async fn acquire(
    state: Shared,
    Authenticated(lease): Authenticated,
    headers: HeaderMap,
    BrokerJson(request): BrokerJson<AcquireRequest>,
) -> Result<Response, BrokerError> {
    let key = idempotency_key(&headers)?;
    let scope = &lease.scope;
    if request.label.len() > 128 || !chars_in(&request.label, 128, b"._:-") {
        return Err(BrokerError::invalid("label: 1 to 128 characters of [A-Za-z0-9._:-]"));
    }
    if let Some(agent) = &request.agent {
        let ok = agent.len() <= 64
            && agent.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            && agent.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !ok {
            return Err(BrokerError::invalid("agent: ^[a-z0-9][a-z0-9-]{0,63}$"));
        }
    }
    if let Some(run) = &request.run_id
        && !chars_in(run, 64, b"-")
    {
        return Err(BrokerError::invalid("run_id: a UUID"));
    }
    if let Some(snapshot_id) = &request.snapshot_id {
        valid_id(snapshot_id, "snapshot_id")?;
    }
    let env = request.env.clone().unwrap_or_default();
    if env.len() as u64 > MAX_ENV_ENTRIES {
        return Err(BrokerError::invalid(format!("env: at most {MAX_ENV_ENTRIES} entries")));
    }
    let env_bytes: usize = env.iter().map(|(k, v)| k.len() + v.len()).sum();
    let key_ok = |k: &str| {
        k.len() <= 128
            && k.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    if env_bytes > 32 << 10 || !env.keys().all(|k| key_ok(k)) || env.values().any(|v| v.contains('\0')) {
        return Err(BrokerError::invalid("env: keys ^[A-Za-z_][A-Za-z0-9_]{0,127}$, at most 32 KiB in all"));
    }
    let Some(Some(egress)) = &request.egress else {
        return Err(BrokerError::new(
            BrokerCode::EgressRequired,
            "egress is required: a workspace never runs with open egress",
        ));
    };
    if egress.allowed_domains.len() as u64 > MAX_EGRESS_DOMAINS
        || !egress.allowed_domains.iter().all(|d| valid_domain(d))
    {
        return Err(BrokerError::invalid(format!(
            "egress.allowed_domains: at most {MAX_EGRESS_DOMAINS} lowercase hostnames (one leading . allowed)"
        )));
    }
    let allowlist = allowlist_of(&egress.allowed_domains)?;
    if let Some(ceiling) = &lease.scope.egress_ceiling {
        let ceiling = Allowlist::parse(ceiling.iter().map(String::as_str)).map_err(|e| {
            tracing::error!(error = %e, "a token's egress ceiling does not parse");
            BrokerError::internal()
        })?;
        if let Some(outside) = allowlist.outside(&ceiling).first() {
            return Err(BrokerError::new(
                BrokerCode::EgressNotAllowed,
                format!("egress.allowed_domains: {outside} is outside this token's egress ceiling"),
            ));
        }
    }
    let size_name = request.size.as_deref().unwrap_or(DEFAULT_SIZE);
    let Some(&(size, cpus, memory_mib, _disk)) = SIZES.iter().find(|(name, ..)| *name == size_name) else {
        return Err(BrokerError::new(BrokerCode::SizeNotAllowed, "the size is not among this token's sizes"));
    };
    let image = match &request.image {
        Some(image) if scope.images.contains(image) => image.clone(),
        Some(_) => {
            return Err(BrokerError::new(BrokerCode::ImageNotAllowed, "the image is not among this token's images"));
        }
        None => scope
            .images
            .first()
            .cloned()
            .ok_or_else(|| BrokerError::new(BrokerCode::ImageNotAllowed, "no image allowed"))?,
    };
    // A key that already made its workspace is answered by the replay (or
    // the conflict) below, whatever became of its snapshot or of admission
    // since: the protocol replays before it checks state.
    let made = state.store.get_create_key(&owner_of(&lease.instance), &acquire_key(&key)).await?.state
        == sluice_store::CreateKeyState::Found;
    let restore_snapshot = match &request.snapshot_id {
        Some(snapshot_id) if !made => Some(warm_start(&state, &lease.instance, &SnapshotId::from(snapshot_id)).await?),
        other => other.clone(),
    };
    if !made {
        admitted(&state, &lease.instance).await?;
    }
    let (repository, tag) = image.rsplit_once(':').unwrap_or((image.as_str(), "latest"));
    // Made here from the token's sizes: a spec that does not parse is a bug.
    // No names: no network at all. Names: none but through the proxy.
    let network = match allowlist.entries() {
        [] => json!(false),
        entries => json!({"egress": entries.iter().map(ToString::to_string).collect::<Vec<_>>()}),
    };
    let spec = sluice_store::spec::Spec::parse(
        json!({"network": network, "resources": {"cpus": cpus, "memoryMiB": memory_mib}}),
    )
    .map_err(|e| {
        tracing::error!(error = %e, "a size's spec does not parse");
        BrokerError::internal()
    })?;
    let request_hash = state.store.sealer().keyed_digest(canonical(&request).as_bytes());
    let new = NewWorkspace {
        owner_user_id: owner_of(&lease.instance),
        name: request.label.clone(),
        registry_id: "host".into(),
        repository: repository.to_owned(),
        tag: tag.to_owned(),
        spec,
        ttl_ms: Some((scope.max_lifetime_seconds as i64) * 1000),
        launch_id: None,
        idempotency: Some(Idempotency { key: acquire_key(&key), request_hash }),
        secret_env: None,
        capture_token: None,
        broker: Some(NewBrokerWorkspace {
            instance: lease.instance.clone(),
            label: request.label.clone(),
            size: size.to_owned(),
            image: image.clone(),
            agent: request.agent.clone(),
            attributed_run: request.run_id.clone(),
            idle_timeout_seconds: scope.idle_timeout_seconds,
            max_live: scope.max_concurrent_workspaces,
            env: (!env.is_empty()).then(|| Secret::new(env)),
            restore_snapshot,
        }),
    };
    let (status, id) = match state.store.create_workspace(new).await {
        Ok(CreateOutcome::Created(view)) => (StatusCode::CREATED, view.workspace.id),
        Ok(CreateOutcome::Replayed(view)) => (StatusCode::OK, view.workspace.id),
        Err(StoreError::IdempotencyKeyReused) => return Err(BrokerError::idempotency_conflict()),
        Err(StoreError::Conflict { code: sluice_store::ConflictCode::ConcurrencyLimit, message }) => {
            return Err(BrokerError::new(BrokerCode::ConcurrencyLimit, message));
        }
        Err(e) => return Err(e.into()),
    };
    state.wake();
    let workspace = state.store.broker_workspace(&lease.instance, &id).await?.ok_or_else(BrokerError::internal)?;
    Ok(ok(status, status_json(&workspace)))
}

/// The instance's snapshot a warm start names: 404 for an unknown id and
/// another instance's alike, 410 for one expired or deleted.
pub(crate) async fn warm_start(state: &Shared, instance: &str, id: &SnapshotId) -> Result<String, BrokerError> {
    valid_id(id, "snapshot_id")?;
    let snapshot = state.store.broker_snapshot(instance, id).await?.ok_or_else(BrokerError::not_found)?;
    if !snapshot.usable(sluice_store::clock::now_ms()) {
        return Err(BrokerError::new(BrokerCode::SnapshotGone, "the snapshot expired or was deleted; start cold"));
    }
    Ok(snapshot.snapshot_id.to_string())
}

/// The instance's workspace, or the same 404 for an unknown id and for
/// another instance's.
pub(crate) async fn owned(state: &Shared, instance: &str, id: &WorkspaceId) -> Result<BrokerWorkspace, BrokerError> {
    valid_id(id, "workspace id")?;
    state.store.broker_workspace(instance, id).await?.ok_or_else(BrokerError::not_found)
}

pub async fn get_workspace(
    state: Shared,
    Authenticated(lease): Authenticated,
    Path(id): Path<WorkspaceId>,
) -> Result<Response, BrokerError> {
    let workspace = owned(&state, &lease.instance, &id).await?;
    Ok(ok(StatusCode::OK, status_json(&workspace)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    state: Option<String>,
    cursor: Option<String>,
    limit: Option<String>,
}

pub async fn list_workspaces(
    state: Shared,
    Authenticated(lease): Authenticated,
    Query(query): Query<ListQuery>,
) -> Result<Response, BrokerError> {
    let live = match query.state.as_deref() {
        None | Some("live") => true,
        Some("all") => false,
        Some(_) => return Err(BrokerError::invalid("state: live or all")),
    };
    let limit = match query.limit.as_deref() {
        None => 50,
        Some(text) => text
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .ok_or_else(|| BrokerError::invalid("limit: 1 to 100"))?,
    };
    if let Some(cursor) = &query.cursor
        && !chars_in(cursor, 64, b"._-")
    {
        return Err(BrokerError::invalid("cursor: as answered in next_cursor"));
    }
    let mut page =
        state.store.list_broker_workspaces(&lease.instance, live, query.cursor.as_deref(), limit + 1).await?;
    let more = page.len() as i64 > limit;
    page.truncate(limit as usize);
    let next_cursor = if more { page.last().map(|w| w.workspace_id.clone()) } else { None };
    let workspaces: Vec<Value> = page.iter().map(status_json).collect();
    Ok(ok(StatusCode::OK, json!({"workspaces": workspaces, "next_cursor": next_cursor})))
}

/// Release: never refused for a pause, an emergency stop or a superseded
/// token; idempotent.
pub async fn release(
    state: Shared,
    Releasing(lease): Releasing,
    Path(id): Path<WorkspaceId>,
) -> Result<Response, BrokerError> {
    let workspace = owned(&state, &lease.instance, &id).await?;
    if protocol_state(&workspace).0 != "terminated" {
        state.store.end_broker_workspace(&id, TerminationReason::Released).await?;
        state.wake();
    }
    let workspace = owned(&state, &lease.instance, &id).await?;
    Ok(ok(StatusCode::OK, status_json(&workspace)))
}

/// Whether a workspace may still be used; an expired or idle one is ended
/// here (the reaper would too) and answers 410, one still starting 409.
pub(crate) async fn usable(state: &Shared, workspace: &BrokerWorkspace) -> Result<(), BrokerError> {
    let gone = || BrokerError::new(BrokerCode::WorkspaceGone, "the workspace was terminated; acquire a new one");
    let now = sluice_store::clock::now_ms();
    let idle_at = workspace.last_used_at + (workspace.idle_timeout_seconds as i64) * 1000;
    let reason = match (protocol_state(workspace).0, broker::lapsed(now, workspace.expires_at, idle_at)) {
        ("terminated" | "terminating", _) => return Err(gone()),
        (_, Some(reason)) => reason,
        ("starting", None) => {
            return Err(BrokerError::new(BrokerCode::WorkspaceNotReady, "the workspace is starting").retry_after(1));
        }
        (_, None) => return Ok(()),
    };
    state.store.end_broker_workspace(&workspace.workspace_id, reason).await?;
    state.wake();
    Err(gone())
}
