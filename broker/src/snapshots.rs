//! Snapshots of one directory of a workspace, kept in the object store in
//! the capture format until their TTL (or a DELETE), and warm starts from
//! them. The directory is sealed in the database and never logged or
//! answered.

use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use sluice_executor::{ExecutorError, Target};
use sluice_store::StoreError;
use sluice_store::broker_snapshots::{BrokerSnapshot, NewSnapshot, SnapshotClaim};
use sluice_store::clock::rfc3339_seconds;

use crate::exec::{absolute_path, executor, upstream};
use crate::workspaces::{idempotency_key, owned, valid_id};
use crate::{Authenticated, BrokerCode, BrokerError, BrokerJson, Shared, ok};
use sluice_domain::ids::{SnapshotId, WorkspaceId};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotBody {
    dir: String,
}

fn answer(status: StatusCode, snapshot: &BrokerSnapshot) -> Response {
    ok(
        status,
        json!({
            "snapshot_id": snapshot.snapshot_id,
            "created_at": rfc3339_seconds(snapshot.created_at),
            "expires_at": rfc3339_seconds(snapshot.expires_at),
        }),
    )
}

pub async fn create(
    state: Shared,
    Authenticated(lease): Authenticated,
    headers: HeaderMap,
    Path(workspace_id): Path<WorkspaceId>,
    BrokerJson(body): BrokerJson<SnapshotBody>,
) -> Result<Response, BrokerError> {
    let key = idempotency_key(&headers)?;
    absolute_path("dir", &body.dir)?;
    // The workspace must be the instance's; whether it is still usable is
    // asked only of a new take, so a replay answers whatever became of it.
    owned(&state, &lease.instance, &workspace_id).await?;
    // The dir only as a keyed hash: the canonical request is never stored plain.
    let canonical = json!({"workspace_id": workspace_id, "dir": body.dir}).to_string();
    let request_hash = state.store.sealer().keyed_digest(canonical.as_bytes());
    let scope = &lease.scope;
    let claim = state
        .store
        .claim_broker_snapshot(&NewSnapshot {
            instance: &lease.instance,
            workspace_id: &workspace_id,
            key: &key,
            request_hash: &request_hash,
            dir: &body.dir,
            max_snapshots: scope.max_snapshots,
            ttl_seconds: scope.snapshot_ttl_seconds,
        })
        .await;
    let snapshot_id = match claim {
        Ok(SnapshotClaim::Take(snapshot_id)) => snapshot_id,
        Ok(SnapshotClaim::Replay(snapshot)) => return Ok(answer(StatusCode::OK, &snapshot)),
        Ok(SnapshotClaim::InProgress) => {
            return Err(BrokerError::new(
                BrokerCode::IdempotencyInProgress,
                "the snapshot with this Idempotency-Key is still being taken",
            )
            .retry_after(1));
        }
        Err(StoreError::IdempotencyKeyReused) => return Err(BrokerError::idempotency_conflict()),
        Err(StoreError::Conflict { code: sluice_store::ConflictCode::SnapshotQuotaExceeded, message }) => {
            return Err(BrokerError::new(BrokerCode::SnapshotQuotaExceeded, message));
        }
        Err(e) => return Err(e.into()),
    };
    let taken = async {
        let (_, run_id, endpoint) = executor(&state, &lease.instance, &workspace_id).await?;
        let control = state.control.as_ref().ok_or_else(BrokerError::internal)?;
        let target = Target { run_id: &run_id, endpoint: &endpoint };
        control.snapshot(target, &snapshot_id, &body.dir).await.map_err(|e| match e {
            ExecutorError::Refused { .. } => BrokerError::invalid("dir: not a readable directory in the workspace"),
            other => upstream(other),
        })
    };
    let taken = match taken.await {
        Ok(taken) => taken,
        Err(refusal) => {
            // Nothing was kept: the key is free for a retry.
            state.store.abandon_broker_snapshot(&snapshot_id).await?;
            return Err(refusal);
        }
    };
    let snapshot = state.store.finish_broker_snapshot(&snapshot_id, &taken, scope.snapshot_ttl_seconds).await?;
    tracing::info!(snapshot = %snapshot.snapshot_id, files = taken.files, bytes = taken.bytes, "snapshot taken");
    Ok(answer(StatusCode::CREATED, &snapshot))
}

/// 204 also for one already deleted or expired; 404 for ids this
/// instance never owned.
pub async fn delete(
    state: Shared,
    Authenticated(lease): Authenticated,
    Path(id): Path<SnapshotId>,
) -> Result<Response, BrokerError> {
    valid_id(&id, "snapshot id")?;
    if !state.store.delete_broker_snapshot(&lease.instance, &id).await? {
        return Err(BrokerError::not_found());
    }
    state.wake();
    Ok(StatusCode::NO_CONTENT.into_response())
}
