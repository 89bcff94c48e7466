//! `GET /v1/lease`: the grant, its limits and admission, from the token's
//! scope. Read-only; creates and reserves nothing.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use sluice_store::broker::{Admission, LeaseState};
use sluice_store::clock::rfc3339_seconds;

use crate::{Authenticated, Shared, ok};

/// The sizes a workspace can have, smallest first: CPU cores, memory MiB
/// and disk MiB.
pub const SIZES: &[(&str, u64, u64, u64)] =
    &[("small", 1, 512, 2048), ("standard", 2, 2048, 8192), ("large", 4, 8192, 32768)];
pub const DEFAULT_SIZE: &str = "standard";
pub const MAX_EXEC_TIMEOUT_SECONDS: u64 = 900;
pub const DEFAULT_EXEC_TIMEOUT_SECONDS: u64 = 30;
pub const MAX_FILE_BYTES: u64 = 8 << 20;
/// What the daemon keeps of each output stream.
pub const MAX_OUTPUT_BYTES: u64 = 1 << 20;
pub const MAX_ENV_ENTRIES: u64 = 64;
pub const MAX_EGRESS_DOMAINS: u64 = 100;

fn admission_json(admission: Result<Admission, ()>) -> Value {
    match admission {
        Ok(Admission::Open) => json!({"state": "open"}),
        Ok(Admission::Paused(reason)) => {
            json!({"state": "paused", "reason": reason.unwrap_or_else(|| "operator".into())})
        }
        Ok(Admission::EmergencyStopped(reason)) => {
            json!({"state": "emergency_stopped", "reason": reason.unwrap_or_else(|| "operator".into())})
        }
        // It cannot read its own stop state: it says so, and admits nothing.
        Err(()) => json!({"state": "paused", "reason": "unavailable"}),
    }
}

pub async fn get_lease(state: Shared, Authenticated(lease): Authenticated) -> Response {
    let admission = state.store.broker_admission(&lease.instance).await.map_err(|e| {
        tracing::error!(error = %e, "cannot read broker admission");
    });
    let scope = &lease.scope;
    let sizes: Vec<Value> = SIZES
        .iter()
        .map(
            |(name, cpu, memory, disk)| json!({"name": name, "cpu_cores": cpu, "memory_mib": memory, "disk_mib": disk}),
        )
        .collect();
    ok(
        StatusCode::OK,
        json!({
            "api_version": "execution-broker/v1",
            "lease": {
                "id": lease.id,
                "instance_id": lease.instance,
                "state": match lease.state { LeaseState::Active => "active", LeaseState::Superseded => "superseded" },
                "expires_at": lease.expires_at.map(rfc3339_seconds),
                "superseded_at": lease.superseded_at.map(rfc3339_seconds),
            },
            "admission": admission_json(admission),
            "capabilities": {
                "shell": true, "egress_control": true, "resumable": false,
                "idle_persistence": false, "snapshots": true, "durable_commands": true,
            },
            "limits": {
                "max_concurrent_workspaces": scope.max_concurrent_workspaces,
                "max_lifetime_seconds": scope.max_lifetime_seconds,
                "idle_timeout_seconds": scope.idle_timeout_seconds,
                "max_exec_timeout_seconds": MAX_EXEC_TIMEOUT_SECONDS,
                "default_exec_timeout_seconds": DEFAULT_EXEC_TIMEOUT_SECONDS,
                "max_snapshots": scope.max_snapshots,
                "snapshot_ttl_seconds": scope.snapshot_ttl_seconds,
                "max_file_bytes": MAX_FILE_BYTES,
                "max_output_bytes": MAX_OUTPUT_BYTES,
                "max_env_entries": MAX_ENV_ENTRIES,
                "max_egress_domains": MAX_EGRESS_DOMAINS,
            },
            "sizes": sizes,
            "default_size": DEFAULT_SIZE,
            "images": {"default": scope.images.first(), "allowed": scope.images},
            "egress": {"ceiling": scope.egress_ceiling},
        }),
    )
}
