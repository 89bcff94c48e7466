//! Webhook endpoints: a product backend registers where the global feed
//! (the contract's events and sluice's own) is posted, signed the Standard
//! Webhooks way, and reads each endpoint's delivery log. The worker's
//! `deliver` job does the posting.

use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use sluice_domain::webhooks::{self, Invalid};

use crate::AppState;
use crate::error::ApiError;
use crate::error::responses::{Internal, InvalidRequest, NotFound, Unauthenticated};
use crate::extract::{JsonBody, QueryOf};
use crate::validate;
use crate::wire::*;
use sluice_domain::ids::WebhookId;

/// How long a create waits to resolve an endpoint's name.
const RESOLVE_WITHIN: Duration = Duration::from_secs(2);

fn refused(invalid: Invalid) -> ApiError {
    ApiError::bad_request(invalid.to_string())
}

/// Refuses a name that resolves only inside this host or its networks, so
/// the mistake shows at once; a name that does not resolve (yet) is taken,
/// and every delivery resolves it again under the same rule.
async fn check_resolved(target: &webhooks::Target) -> Result<(), ApiError> {
    if target.ip().is_some() {
        return Ok(());
    }
    let lookup = tokio::net::lookup_host((target.host.as_str(), target.port));
    let Ok(Ok(found)) = tokio::time::timeout(RESOLVE_WITHIN, lookup).await else { return Ok(()) };
    let found: Vec<_> = found.collect();
    if !found.is_empty() && found.iter().all(|a| sluice_domain::egress::is_internal(a.ip())) {
        return Err(ApiError::bad_request(
            "url: its host resolves only to addresses inside this host or its networks; an install that allows it \
             is started with --webhook-allow-private",
        ));
    }
    Ok(())
}

/// Registers an endpoint. It receives the events recorded from now on.
#[utoipa::path(post, path = "/v1/webhooks", tag = "webhooks", operation_id = "createWebhook",
    request_body = CreateWebhookRequest,
    description = "Registers an endpoint that receives every event recorded from now on whose type its `events` name, as a POST of `{type, timestamp, data}` signed the Standard Webhooks way (`webhook-id` is the event's id, the same on every try; `webhook-timestamp`; `webhook-signature: v1,…`, HMAC-SHA256 of `id.timestamp.body`). Each event is delivered at least once, in feed order: a failure is retried after a pause that doubles, and a run of failures disables the endpoint, recorded as `sluice.webhook.disabled`.",
    responses((status = 201, body = CreateWebhookResponse, description = "Registered"),
        InvalidRequest, Unauthenticated, Internal),
    security(("apiToken" = [])))]
pub async fn create_webhook(
    State(app): State<AppState>,
    JsonBody(req): JsonBody<CreateWebhookRequest>,
) -> Result<(StatusCode, Json<CreateWebhookResponse>), ApiError> {
    let target = webhooks::parse_url(&req.url, app.config.webhook_allow_private).map_err(refused)?;
    let events = webhooks::parse_filters(&req.events).map_err(refused)?;
    let (key, shown) = match &req.secret {
        Some(secret) => (webhooks::parse_secret(secret).map_err(refused)?, None),
        None => {
            let key = sluice_store::seal::random_bytes::<32>().to_vec();
            let shown = webhooks::format_secret(&key);
            (key, Some(shown))
        }
    };
    if !app.config.webhook_allow_private {
        check_resolved(&target).await?;
    }
    let webhook = app.store.create_webhook(&req.url, &events, &key).await?;
    tracing::info!(webhook = %webhook.id, "webhook registered");
    Ok((StatusCode::CREATED, Json(CreateWebhookResponse { webhook: webhook.into(), secret: shown })))
}

/// Every endpoint, oldest first.
#[utoipa::path(get, path = "/v1/webhooks", tag = "webhooks", operation_id = "listWebhooks",
    responses((status = 200, body = ListWebhooksResponse), Unauthenticated, Internal),
    security(("apiToken" = [])))]
pub async fn list_webhooks(State(app): State<AppState>) -> Result<Json<ListWebhooksResponse>, ApiError> {
    let items = app.store.webhooks().await?.into_iter().map(WebhookRecord::from).collect();
    Ok(Json(ListWebhooksResponse { items }))
}

#[utoipa::path(get, path = "/v1/webhooks/{webhookId}", tag = "webhooks", operation_id = "getWebhook",
    params(("webhookId" = String, Path)),
    responses((status = 200, body = WebhookRecord), Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn get_webhook(
    State(app): State<AppState>,
    Path(id): Path<WebhookId>,
) -> Result<Json<WebhookRecord>, ApiError> {
    Ok(Json(app.store.webhook(&id).await?.ok_or(ApiError::NotFound)?.into()))
}

/// Removes an endpoint and its delivery log: nothing more is posted to it.
#[utoipa::path(delete, path = "/v1/webhooks/{webhookId}", tag = "webhooks", operation_id = "deleteWebhook",
    params(("webhookId" = String, Path)),
    responses((status = 204, description = "Removed"), Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn delete_webhook(State(app): State<AppState>, Path(id): Path<WebhookId>) -> Result<StatusCode, ApiError> {
    if !app.store.delete_webhook(&id).await? {
        return Err(ApiError::NotFound);
    }
    tracing::info!(webhook = %id, "webhook removed");
    Ok(StatusCode::NO_CONTENT)
}

/// Enables a disabled endpoint again: deliveries go on from the event
/// that failed.
#[utoipa::path(post, path = "/v1/webhooks/{webhookId}/enable", tag = "webhooks", operation_id = "enableWebhook",
    params(("webhookId" = String, Path)),
    responses((status = 200, body = WebhookRecord), Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn enable_webhook(
    State(app): State<AppState>,
    Path(id): Path<WebhookId>,
) -> Result<Json<WebhookRecord>, ApiError> {
    let webhook = app.store.enable_webhook(&id).await?.ok_or(ApiError::NotFound)?;
    app.work_enqueued();
    Ok(Json(webhook.into()))
}

/// The endpoint's deliveries, newest first (the newest 500 are kept).
#[utoipa::path(get, path = "/v1/webhooks/{webhookId}/deliveries", tag = "webhooks",
    operation_id = "listWebhookDeliveries",
    params(("webhookId" = String, Path), ListWebhookDeliveriesQuery),
    responses((status = 200, body = ListWebhookDeliveriesResponse), InvalidRequest, Unauthenticated, NotFound, Internal),
    security(("apiToken" = [])))]
pub async fn list_webhook_deliveries(
    State(app): State<AppState>,
    Path(id): Path<WebhookId>,
    QueryOf(q): QueryOf<ListWebhookDeliveriesQuery>,
) -> Result<Json<ListWebhookDeliveriesResponse>, ApiError> {
    let limit = validate::limit(q.limit.as_deref())?;
    app.store.webhook(&id).await?.ok_or(ApiError::NotFound)?;
    let items = app.store.webhook_deliveries(&id, limit).await?.into_iter().map(WebhookDeliveryRecord::from).collect();
    Ok(Json(ListWebhookDeliveriesResponse { items }))
}
