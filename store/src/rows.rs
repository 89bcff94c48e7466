//! How workspaces, runs and events are read back from their rows: the
//! columns each query selects, and the decoders every module shares.

use serde_json::Value;

use crate::db::DbRow;
use crate::error::StoreError;
use crate::model::*;

/// The workspaces their owners still see: not deleted. Every read on an
/// owner's behalf names it; the worker's own reads do not (a deleted
/// workspace's runs and records are still its to finish).
pub(crate) const LISTED: &str = "deleted_at IS NULL";

pub(crate) const WORKSPACE_COLUMNS: &str = "id, owner_user_id, name, registry_id, repository, tag, spec, status, desired_state, \
    current_run_id, idempotency_key, expires_at, created_at, updated_at, started_at, finished_at, sleep_reason, \
    sleep_asked_at";
pub(crate) const RUN_COLUMNS: &str = "id, workspace_id, relation, trigger_type, trigger_ref, status, launch_id, spec, \
    runtime_adapter, runtime_resource_id, runtime_reference, runtime_status, runtime_endpoint, runtime_deadline, \
    published_reference, published_digest_reference, published_digest, error_message, error_code, \
    queued_at, created_at, updated_at, linked_at, started_at, finished_at, runtime_removed_at, launch_attempt, host";
pub(crate) const EVENT_COLUMNS: &str = "id, workspace_id, seq, attempt_id, type, occurred_at, message, data";

pub(crate) fn parse_json(column: &str, text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{column} is not JSON: {e}")))
}

/// A stored spec, parsed the one time it is read back.
pub(crate) fn parse_spec(column: &str, text: &str) -> Result<crate::spec::Spec, StoreError> {
    crate::spec::Spec::parse(parse_json(column, text)?)
        .map_err(|e| StoreError::Corrupt(format!("{column} is not a spec sluice can run: {e}")))
}

pub(crate) fn workspace_from_row(row: &DbRow) -> Result<Workspace, StoreError> {
    Ok(Workspace {
        id: row.id("id")?,
        owner_user_id: row.id("owner_user_id")?,
        name: row.text("name")?,
        registry_id: row.text("registry_id")?,
        repository: row.text("repository")?,
        tag: row.text("tag")?,
        spec: parse_spec("workspaces.spec", &row.text("spec")?)?,
        status: row.parsed("status")?,
        desired_state: row.parsed("desired_state")?,
        current_run_id: row.opt_id("current_run_id")?,
        idempotency_key: row.opt_id("idempotency_key")?,
        expires_at: row.opt_int("expires_at")?,
        created_at: row.int("created_at")?,
        updated_at: row.int("updated_at")?,
        started_at: row.opt_int("started_at")?,
        finished_at: row.opt_int("finished_at")?,
        sleep: match (row.opt_text("sleep_reason")?, row.opt_int("sleep_asked_at")?) {
            (Some(reason), Some(asked_at)) => Some(sluice_domain::sleep::Sleep {
                reason: reason.parse().map_err(|_| StoreError::Corrupt(format!("unknown sleep reason {reason:?}")))?,
                asked_at,
            }),
            _ => None,
        },
    })
}

pub(crate) fn run_from_row(row: &DbRow) -> Result<Run, StoreError> {
    let runtime = match row.opt_text("runtime_adapter")? {
        None => None,
        Some(adapter) => Some(RuntimeRecord {
            adapter: adapter
                .parse()
                .map_err(|_| StoreError::Corrupt(format!("unknown runtime adapter {adapter:?}")))?,
            resource_id: row.text("runtime_resource_id")?,
            reference: row.text("runtime_reference")?,
            status: row.parsed("runtime_status")?,
            endpoint: row.opt_text("runtime_endpoint")?,
            deadline: row.opt_int("runtime_deadline")?,
        }),
    };
    let published_image = match row.opt_text("published_reference")? {
        None => None,
        Some(reference) => Some(PublishedImage {
            reference,
            digest_reference: row.text("published_digest_reference")?,
            digest: row.text("published_digest")?,
        }),
    };
    let error = match row.opt_text("error_message")? {
        None => None,
        Some(message) => Some(RunError { message, code: row.opt_text("error_code")? }),
    };
    Ok(Run {
        id: row.id("id")?,
        workspace_id: row.id("workspace_id")?,
        relation: row.parsed("relation")?,
        trigger_type: row.parsed("trigger_type")?,
        trigger_ref: row.opt_text("trigger_ref")?,
        status: row.parsed("status")?,
        launch_id: row.opt_id("launch_id")?,
        spec: parse_spec("runs.spec", &row.text("spec")?)?,
        runtime,
        published_image,
        error,
        queued_at: row.int("queued_at")?,
        created_at: row.int("created_at")?,
        updated_at: row.int("updated_at")?,
        linked_at: row.int("linked_at")?,
        started_at: row.opt_int("started_at")?,
        finished_at: row.opt_int("finished_at")?,
        runtime_removed_at: row.opt_int("runtime_removed_at")?,
        launch_attempt: row.int("launch_attempt")?,
        host: row.opt_text("host")?,
    })
}

pub(crate) fn event_from_row(row: &DbRow) -> Result<Event, StoreError> {
    Ok(Event {
        id: row.id("id")?,
        workspace_id: row.id("workspace_id")?,
        seq: row.int("seq")?,
        attempt_id: row.opt_id("attempt_id")?,
        event_type: row.parsed("type")?,
        occurred_at: row.int("occurred_at")?,
        message: row.opt_text("message")?,
        data: row.opt_text("data")?.map(|d| parse_json("events.data", &d)).transpose()?,
    })
}
