//! Operators' view of the worker's jobs: the ones parked after failing too
//! often, and bringing one back.

use axum::Json;
use axum::extract::State;

use crate::AppState;
use crate::error::ApiError;
use crate::error::responses::{Internal, InvalidRequest, Unauthenticated};
use crate::extract::{JsonBody, QueryOf};
use crate::validate;
use crate::wire::*;

/// Every parked job: a job that failed (or lost its worker) too often and
/// is no longer tried on its own.
#[utoipa::path(get, path = "/v1/jobs/failed", tag = "operators", operation_id = "listFailedJobs",
    params(RetainedQuery),
    responses((status = 200, body = ListFailedJobsResponse), InvalidRequest, Unauthenticated, Internal),
    security(("apiToken" = [])))]
pub async fn list_failed_jobs(
    State(app): State<AppState>,
    QueryOf(q): QueryOf<RetainedQuery>,
) -> Result<Json<ListFailedJobsResponse>, ApiError> {
    let limit = validate::limit(q.limit.as_deref())?;
    let items = app.store.failed_jobs(limit).await?.into_iter().map(FailedJob::from).collect();
    Ok(Json(ListFailedJobsResponse { items }))
}

/// Brings a parked job back: due now, its attempts counted afresh.
/// `retried` is false when no such job is parked.
#[utoipa::path(post, path = "/v1/jobs/retry", tag = "operators", operation_id = "retryJob",
    request_body = RetryJobRequest,
    responses((status = 200, body = RetryJobResponse), InvalidRequest, Unauthenticated, Internal),
    security(("apiToken" = [])))]
pub async fn retry_job(
    State(app): State<AppState>,
    JsonBody(req): JsonBody<RetryJobRequest>,
) -> Result<Json<RetryJobResponse>, ApiError> {
    let subject = validate::text("subject", &req.subject, 256)?;
    let retried = app.store.retry_job(req.kind, &subject).await?;
    Ok(Json(RetryJobResponse { kind: req.kind, subject, retried }))
}
