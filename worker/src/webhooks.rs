//! Delivering the global feed to webhook endpoints. One job per endpoint
//! (`deliver`): a pass reads the feed after the endpoint's cursor, passes
//! over the types it does not take, and posts the others one at a time in
//! feed order, signed the Standard Webhooks way. The cursor moves past an
//! event only once the receiver answered 2xx, so each event is delivered
//! at least once; a failure pauses the endpoint (doubling) and a run of
//! them disables it, with an event saying so.
//!
//! Names are resolved here, and an address inside this host or its
//! networks is refused unless the install allows it; no redirect is
//! followed. Nothing of a receiver's answer but its status is read.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::json;
use sluice_domain::webhooks::{AfterFailure, after_failure, parse_url, sign, wants};
use sluice_store::clock::{new_id, now_ms, rfc3339};
use sluice_store::event_feed::FeedEvent;
use sluice_store::webhooks::{Delivery, DeliveryOutcome, Webhook};
use sluice_store::{Lease, StoreError};

use crate::Worker;
use sluice_domain::ids::WebhookId;

/// How many feed events one read takes.
const BATCH: i64 = 100;
/// How soon an endpoint that has caught up looks at the feed again.
const IDLE_POLL_MS: i64 = 1_000;
/// A receiver has this long to answer a delivery.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The system's certificate authorities, where Debian keeps them.
pub const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// What an install lets its webhooks do.
#[derive(Debug, Clone)]
pub struct WebhookPolicy {
    /// Endpoints may point inside this host or its networks.
    pub allow_private: bool,
    /// Failed deliveries in a row that disable an endpoint.
    pub failure_limit: i64,
    /// The certificate authorities https endpoints are checked against.
    pub roots: PathBuf,
}

impl Default for WebhookPolicy {
    fn default() -> Self {
        WebhookPolicy {
            allow_private: false,
            failure_limit: sluice_domain::webhooks::DEFAULT_FAILURE_LIMIT,
            roots: PathBuf::from(SYSTEM_ROOTS),
        }
    }
}

/// Resolves endpoint names, keeping only the addresses the policy allows:
/// a public name pointed at an internal address reaches nothing.
struct GuardedResolver {
    allow_private: bool,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow_private = self.allow_private;
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let kept: Vec<SocketAddr> =
                found.into_iter().filter(|a| allow_private || !sluice_domain::egress::is_internal(a.ip())).collect();
            if kept.is_empty() {
                return Err("the name resolves to no address outside this host and its networks".into());
            }
            Ok(Box::new(kept.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The HTTP client deliveries go out on, made on first use.
pub struct Deliverer {
    policy: WebhookPolicy,
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl std::fmt::Debug for Deliverer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deliverer").field("policy", &self.policy).finish_non_exhaustive()
    }
}

impl Deliverer {
    pub fn new(policy: WebhookPolicy) -> Deliverer {
        Deliverer { policy, client: OnceLock::new() }
    }

    fn client(&self) -> Result<&reqwest::Client, String> {
        self.client.get_or_init(|| build_client(&self.policy)).as_ref().map_err(Clone::clone)
    }
}

fn build_client(policy: &WebhookPolicy) -> Result<reqwest::Client, String> {
    let mut roots = rustls::RootCertStore::empty();
    // Without the bundle an https endpoint fails its deliveries, each
    // saying why; an http one still works.
    if let Ok(certificates) = rustls::pki_types::pem::PemObject::pem_file_iter(&policy.roots) {
        roots.add_parsable_certificates(certificates.flatten());
    }
    let tls = rustls::ClientConfig::builder_with_provider(crate::internal::credential::ClusterTls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("the TLS settings cannot be made: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .dns_resolver(Arc::new(GuardedResolver { allow_private: policy.allow_private }))
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(DELIVERY_TIMEOUT)
        .user_agent(concat!("sluice-webhooks/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("the HTTP client cannot be made: {e}"))
}

/// A failed try in a few words: never the URL.
fn describe(e: &reqwest::Error) -> String {
    let mut root: &dyn std::error::Error = e;
    while let Some(next) = root.source() {
        root = next;
    }
    if e.is_timeout() {
        format!("no answer within {} s", DELIVERY_TIMEOUT.as_secs())
    } else if e.is_connect() {
        format!("could not connect: {root}")
    } else {
        format!("the request failed: {root}")
    }
}

/// The request body: the Standard Webhooks envelope around the event as
/// the API's streams carry it.
fn payload(fed: &FeedEvent) -> String {
    json!({
        "type": fed.item.type_name(),
        "timestamp": rfc3339(fed.item.occurred_at()),
        "data": fed.body(),
    })
    .to_string()
}

/// Posts one event; answers the receiver's status, or why there is none.
async fn post(worker: &Worker, hook: &Webhook, key: &[u8], fed: &FeedEvent) -> (Option<u16>, Result<(), String>) {
    if let Err(e) = parse_url(&hook.url, worker.deliverer.policy.allow_private) {
        return (None, Err(e.to_string()));
    }
    let client = match worker.deliverer.client() {
        Ok(client) => client,
        Err(e) => return (None, Err(e)),
    };
    let body = payload(fed);
    let id = fed.item.id();
    let timestamp = now_ms() / 1000;
    let sent = client
        .post(&hook.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header("webhook-id", id.as_str())
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", sign(key, id, timestamp, &body))
        .body(body)
        .send()
        .await;
    match sent {
        Ok(answer) if answer.status().is_success() => (Some(answer.status().as_u16()), Ok(())),
        Ok(answer) => {
            let status = answer.status().as_u16();
            (Some(status), Err(format!("the receiver answered {status}")))
        }
        Err(e) => (None, Err(describe(&e))),
    }
}

/// One pass of an endpoint's job: deliver what is due, in order, until the
/// feed is read or a delivery fails. Answers when to look again (`None`:
/// the endpoint is gone or disabled, and the job ends).
pub(crate) async fn pass(worker: &Worker, lease: &Lease) -> Result<Option<i64>, StoreError> {
    let store = &worker.store;
    let Some(hook) = store.webhook(&WebhookId::from(&lease.subject)).await? else { return Ok(None) };
    if hook.disabled.is_some() {
        return Ok(None);
    }
    let Some(key) = store.webhook_key(&hook.id).await? else { return Ok(None) };
    let batch = store.feed_after(hook.cursor, BATCH).await?;
    let full = batch.len() as i64 == BATCH;
    let mut passed_over = None;
    let mut failures = hook.failures;
    for fed in &batch {
        if !wants(&hook.events, fed.item.type_name()) {
            passed_over = Some(fed.cursor);
            continue;
        }
        if let Some(through) = passed_over.take() {
            store.pass_over_webhook_events(lease, &hook.id, through).await?;
        }
        let started = Instant::now();
        let (status, result) = post(worker, &hook, key.expose(), fed).await;
        // What the endpoint is left with, and when its job runs next if
        // this pass stops here (`None`: it goes on with the next event).
        let failed = failures + 1;
        let (outcome, stop) = match &result {
            Ok(()) => (DeliveryOutcome::Delivered { through: fed.cursor }, None),
            Err(why) => match after_failure(failed, worker.deliverer.policy.failure_limit) {
                AfterFailure::Retry { pause_ms } => {
                    (DeliveryOutcome::Failed { failures: failed }, Some(Some(now_ms() + pause_ms)))
                }
                AfterFailure::Disable => {
                    (DeliveryOutcome::Disabled { failures: failed, reason: why.clone() }, Some(None))
                }
            },
        };
        let delivery = Delivery {
            id: WebhookId::from(new_id("dlv")),
            event_id: fed.item.id().to_owned(),
            event_type: fed.item.type_name().to_owned(),
            attempt: failed,
            at: now_ms(),
            duration_ms: started.elapsed().as_millis() as i64,
            status_code: status.map(i64::from),
            error: result.as_ref().err().cloned(),
            delivered: result.is_ok(),
        };
        store.record_delivery(lease, &hook.id, &delivery, &outcome).await?;
        let counted = if result.is_ok() { "delivered" } else { "failed" };
        worker.config.metrics.webhook_deliveries.with_label_values(&[counted]).inc();
        match stop {
            None => failures = 0,
            Some(None) => {
                tracing::warn!(webhook = %hook.id, failures = failed, "a webhook failed too often in a row; it is disabled");
                return Ok(None);
            }
            Some(next) => {
                tracing::info!(webhook = %hook.id, failures = failed, "a webhook delivery failed; it is tried again later");
                return Ok(next);
            }
        }
    }
    if let Some(through) = passed_over {
        store.pass_over_webhook_events(lease, &hook.id, through).await?;
    }
    Ok(Some(if full { now_ms() } else { now_ms() + IDLE_POLL_MS }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_store::event_feed::FeedCursor;
    use sluice_store::model::{FeedItem, SluiceEvent, SluiceEventType};

    #[test]
    fn the_payload_is_the_standard_envelope_around_the_streamed_event() {
        let fed = FeedEvent {
            cursor: FeedCursor { tx: 3, position: 9 },
            item: FeedItem::Sluice(SluiceEvent {
                id: "evt_1".into(),
                workspace_id: None,
                attempt_id: None,
                event_type: SluiceEventType::WebhookDisabled,
                occurred_at: 1_700_000_000_123,
                message: Some("m".into()),
                data: Some(json!({"webhookId": "wh_1"})),
            }),
        };
        let body: serde_json::Value = serde_json::from_str(&payload(&fed)).unwrap();
        assert_eq!(body["type"], "sluice.webhook.disabled");
        assert_eq!(body["timestamp"], "2023-11-14T22:13:20.123Z");
        assert_eq!(body["data"], fed.body());
    }

    #[tokio::test]
    async fn names_for_internal_addresses_resolve_to_nothing_unless_allowed() {
        use reqwest::dns::Resolve;
        let name = || "localhost".parse::<reqwest::dns::Name>().unwrap();
        let refused = GuardedResolver { allow_private: false }.resolve(name()).await;
        assert!(refused.is_err(), "localhost is inside the host");
        let allowed = GuardedResolver { allow_private: true }.resolve(name()).await.unwrap();
        assert!(allowed.into_iter().all(|a| a.ip().is_loopback()));
    }
}
