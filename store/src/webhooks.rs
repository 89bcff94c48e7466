//! Webhook endpoints: where they point, which types they take, how far
//! along the global feed they are, and the log of every delivery tried.
//! An endpoint's deliveries are one durable job (`deliver`, the endpoint's
//! id): its cursor moves only past an event delivered (or not wanted),
//! under the job's lease, so a worker lost mid-delivery leaves the event
//! to be delivered again; receivers deduplicate by its id.

use sluice_domain::event_data;
use sluice_domain::feed::NewSluiceEvent;

use crate::Store;
use crate::clock::{new_id, now_ms};
use crate::db::{DbRow, Tx, args};
use crate::error::StoreError;
use crate::event_feed::{FeedCursor, feed_end};
use crate::event_log::append_sluice_event;
use crate::jobs::{Lease, begin_fenced, enqueue};
use crate::model::{JobKind, SluiceEventType};
use crate::seal::{Sealed, Secret};
use sluice_domain::ids::{EventId, WebhookId};

/// How many deliveries of one endpoint the log keeps.
pub const DELIVERY_LOG: i64 = 500;

/// An endpoint, as stored (its secret stays sealed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    pub id: WebhookId,
    pub url: String,
    /// Type filters; empty means every type.
    pub events: Vec<String>,
    /// The last event delivered or passed over.
    pub cursor: FeedCursor,
    /// Failed deliveries in a row.
    pub failures: i64,
    /// When and why it was disabled.
    pub disabled: Option<(i64, String)>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// One delivery tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: WebhookId,
    pub event_id: EventId,
    pub event_type: String,
    /// The try's number for this event, from 1.
    pub attempt: i64,
    pub at: i64,
    pub duration_ms: i64,
    /// The receiver's answer, if one came.
    pub status_code: Option<i64>,
    /// Why it failed, never the URL or a body.
    pub error: Option<String>,
    pub delivered: bool,
}

/// What a delivery tried leaves the endpoint with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// The receiver took the event: the cursor moves past it.
    Delivered { through: FeedCursor },
    /// It failed; the same event is tried again later.
    Failed { failures: i64 },
    /// It failed too often in a row: the endpoint is disabled.
    Disabled { failures: i64, reason: String },
}

const COLUMNS: &str = "id, url, events, cursor_tx, cursor_position, failures, disabled_at, disabled_reason, \
    created_at, updated_at";
const DELIVERY_COLUMNS: &str = "id, event_id, event_type, attempt, at, duration_ms, status_code, error, delivered";

fn secret_aad(id: &WebhookId) -> String {
    format!("webhook/{id}")
}

fn webhook_from_row(row: &DbRow) -> Result<Webhook, StoreError> {
    let events = serde_json::from_str(&row.text("events")?)
        .map_err(|e| StoreError::Corrupt(format!("webhooks.events is not a list: {e}")))?;
    let disabled = match row.opt_int("disabled_at")? {
        Some(at) => Some((at, row.opt_text("disabled_reason")?.unwrap_or_default())),
        None => None,
    };
    Ok(Webhook {
        id: row.id("id")?,
        url: row.text("url")?,
        events,
        cursor: FeedCursor { tx: row.int("cursor_tx")?, position: row.int("cursor_position")? },
        failures: row.int("failures")?,
        disabled,
        created_at: row.int("created_at")?,
        updated_at: row.int("updated_at")?,
    })
}

fn delivery_from_row(row: &DbRow) -> Result<Delivery, StoreError> {
    Ok(Delivery {
        id: row.id("id")?,
        event_id: row.id("event_id")?,
        event_type: row.text("event_type")?,
        attempt: row.int("attempt")?,
        at: row.int("at")?,
        duration_ms: row.int("duration_ms")?,
        status_code: row.opt_int("status_code")?,
        error: row.opt_text("error")?,
        delivered: row.int("delivered")? != 0,
    })
}

impl Store {
    /// Registers an endpoint that takes the events recorded from now on,
    /// its key sealed, and makes its delivery job due.
    pub async fn create_webhook(&self, url: &str, events: &[String], key: &[u8]) -> Result<Webhook, StoreError> {
        let id = WebhookId::from(new_id("wh"));
        let now = now_ms();
        let sealed = self.sealer.seal(&secret_aad(&id), key)?;
        let mut tx = self.pool.begin().await?;
        let cursor = feed_end(&mut tx, self.pool.kind()).await?;
        let events_text = serde_json::to_string(events).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        tx.execute(
            &format!(
                "INSERT INTO webhooks ({COLUMNS}, secret_nonce, secret_sealed) \
                 VALUES ($1, $2, $3, $4, $5, 0, NULL, NULL, $6, $6, $7, $8)"
            ),
            args![id.as_str(), url, events_text, cursor.tx, cursor.position, now, sealed.nonce, sealed.ciphertext],
        )
        .await?;
        enqueue(&mut tx, JobKind::Deliver, &id, now, now).await?;
        tx.commit().await?;
        Ok(Webhook {
            id,
            url: url.to_owned(),
            events: events.to_vec(),
            cursor,
            failures: 0,
            disabled: None,
            created_at: now,
            updated_at: now,
        })
    }

    pub async fn webhook(&self, id: &WebhookId) -> Result<Option<Webhook>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM webhooks WHERE id = $1");
        self.pool.fetch_optional(&sql, args![id]).await?.map(|r| webhook_from_row(&r)).transpose()
    }

    /// Every endpoint, oldest first.
    pub async fn webhooks(&self) -> Result<Vec<Webhook>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM webhooks ORDER BY created_at, id");
        self.pool.fetch_all(&sql, args![]).await?.iter().map(webhook_from_row).collect()
    }

    /// Removes an endpoint and its log; its job finds it gone and ends.
    pub async fn delete_webhook(&self, id: &WebhookId) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        tx.execute("DELETE FROM webhook_deliveries WHERE webhook_id = $1", args![id]).await?;
        let removed = tx.execute("DELETE FROM webhooks WHERE id = $1", args![id]).await?;
        tx.commit().await?;
        Ok(removed == 1)
    }

    /// Enables a disabled endpoint again, its failures forgotten; it goes
    /// on from the event it stopped at.
    pub async fn enable_webhook(&self, id: &WebhookId) -> Result<Option<Webhook>, StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let changed = tx
            .execute(
                "UPDATE webhooks SET disabled_at = NULL, disabled_reason = NULL, failures = 0, updated_at = $2 \
                 WHERE id = $1",
                args![id, now],
            )
            .await?;
        if changed == 1 {
            enqueue(&mut tx, JobKind::Deliver, id, now, now).await?;
        }
        tx.commit().await?;
        self.webhook(id).await
    }

    /// The endpoint's signing key, opened.
    pub async fn webhook_key(&self, id: &WebhookId) -> Result<Option<Secret<Vec<u8>>>, StoreError> {
        let row = self
            .pool
            .fetch_optional("SELECT secret_nonce, secret_sealed FROM webhooks WHERE id = $1", args![id])
            .await?;
        let Some(row) = row else { return Ok(None) };
        let sealed = Sealed { nonce: row.bytes("secret_nonce")?, ciphertext: row.bytes("secret_sealed")? };
        self.sealer.open(&secret_aad(id), &sealed).map(Some)
    }

    /// The endpoint's newest deliveries, newest first.
    pub async fn webhook_deliveries(&self, id: &WebhookId, limit: i64) -> Result<Vec<Delivery>, StoreError> {
        let sql = format!(
            "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = $1 \
             ORDER BY at DESC, id DESC LIMIT $2"
        );
        self.pool.fetch_all(&sql, args![id, limit]).await?.iter().map(delivery_from_row).collect()
    }

    /// Moves the endpoint's cursor past events it does not take.
    pub async fn pass_over_webhook_events(
        &self,
        lease: &Lease,
        id: &WebhookId,
        through: FeedCursor,
    ) -> Result<(), StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        advance(&mut tx, id, through, now).await?;
        tx.commit().await
    }

    /// Logs a delivery tried and what it leaves the endpoint with, in one
    /// transaction under the job's lease. Disabling records
    /// `sluice.webhook.disabled` with it.
    pub async fn record_delivery(
        &self,
        lease: &Lease,
        id: &WebhookId,
        delivery: &Delivery,
        outcome: &DeliveryOutcome,
    ) -> Result<(), StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        tx.execute(
            &format!(
                "INSERT INTO webhook_deliveries (webhook_id, {DELIVERY_COLUMNS}) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
            ),
            args![
                id,
                &delivery.id,
                &delivery.event_id,
                &delivery.event_type,
                delivery.attempt,
                delivery.at,
                delivery.duration_ms,
                delivery.status_code,
                delivery.error.clone(),
                delivery.delivered as i64
            ],
        )
        .await?;
        tx.execute(
            "DELETE FROM webhook_deliveries WHERE webhook_id = $1 AND at < (SELECT at FROM webhook_deliveries \
             WHERE webhook_id = $1 ORDER BY at DESC, id DESC LIMIT 1 OFFSET $2)",
            args![id, DELIVERY_LOG],
        )
        .await?;
        match outcome {
            DeliveryOutcome::Delivered { through } => {
                advance(&mut tx, id, *through, now).await?;
                tx.execute("UPDATE webhooks SET failures = 0 WHERE id = $1", args![id]).await?;
            }
            DeliveryOutcome::Failed { failures } => {
                tx.execute(
                    "UPDATE webhooks SET failures = $2, updated_at = $3 WHERE id = $1",
                    args![id, *failures, now],
                )
                .await?;
            }
            DeliveryOutcome::Disabled { failures, reason } => {
                tx.execute(
                    "UPDATE webhooks SET failures = $2, disabled_at = $3, disabled_reason = $4, updated_at = $3 \
                     WHERE id = $1",
                    args![id, *failures, now, reason.as_str()],
                )
                .await?;
                let disabled = NewSluiceEvent {
                    event_type: SluiceEventType::WebhookDisabled,
                    workspace_id: None,
                    attempt_id: None,
                    message: format!("webhook {id} disabled after {failures} failed deliveries in a row"),
                    data: event_data::json(event_data::WebhookDisabled {
                        webhook_id: id.as_str(),
                        failures: *failures,
                        reason,
                    }),
                };
                append_sluice_event(&mut tx, &disabled, now).await?;
            }
        }
        tx.commit().await
    }
}

async fn advance(tx: &mut Tx, id: &WebhookId, through: FeedCursor, now: i64) -> Result<(), StoreError> {
    tx.execute(
        "UPDATE webhooks SET cursor_tx = $2, cursor_position = $3, updated_at = $4 WHERE id = $1",
        args![id, through.tx, through.position, now],
    )
    .await?;
    Ok(())
}
