//! `GET /metrics`: this process's counters, and the state gauges set from
//! the store and from the live capture executors at the scrape. A scrape
//! starts a reading at most every few seconds (scrapes in between, from
//! several Prometheus servers say, are answered from the last reading) and
//! waits for it briefly; every read is bounded: the store's by [`STATE_READ_WITHIN`], the daemons' by
//! [`STATUS_WITHIN`] each, [`STATUS_CONCURRENCY`] at once.

use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use futures::StreamExt;
use sluice_domain::risk;
use sluice_executor::Target;
use sluice_store::gauges::{CaptureExecutor, StateReading};
use sluice_store::model::{DrainState, HostState, WorkspaceStatus};
use sluice_telemetry::prometheus::IntGaugeVec;
use sluice_telemetry::{MAX_LABELLED, Metrics};

use crate::AppState;

/// How long a reading of the stored state may take.
const STATE_READ_WITHIN: Duration = Duration::from_secs(5);
/// How long one daemon gets to answer a status read.
const STATUS_WITHIN: Duration = Duration::from_secs(2);
const STATUS_CONCURRENCY: usize = 16;
/// The most live capture executors one scrape asks.
const MAX_ASKED: i64 = 2_000;
/// Readings younger than this are shown again rather than taken anew.
const READING_FRESH_FOR: Duration = Duration::from_secs(5);
/// How long a scrape waits for a reading it started before answering
/// with the gauges as they are.
const SCRAPE_WAITS: Duration = Duration::from_millis(500);

/// The Prometheus text exposition of this process.
#[utoipa::path(get, path = "/metrics", tag = "operations", operation_id = "metrics",
    description = "Prometheus metrics (text format 0.0.4): this process's counters and histograms, and gauges of the stored state and of work at risk read at the scrape.",
    security(("apiToken" = [])),
    responses((status = 200, content_type = "text/plain", body = String), (status = 401, body = crate::error::ErrorBody)))]
pub async fn metrics(State(app): State<AppState>) -> impl IntoResponse {
    // The reading runs on its own: a scraper that gives up (its timeout
    // may be shorter than a slow daemon's answer) does not cut it short,
    // and the next scrape shows what it found.
    let reading = tokio::spawn(refresh(app.clone()));
    let _ = tokio::time::timeout(SCRAPE_WAITS, reading).await;
    ([(CONTENT_TYPE, sluice_telemetry::CONTENT_TYPE)], app.config.metrics.encode())
}

async fn refresh(app: AppState) {
    // One reading at a time; a scrape during one answers what is there.
    let Ok(mut last) = app.scrapes.try_lock() else { return };
    if last.is_some_and(|at| at.elapsed() < READING_FRESH_FOR) {
        return;
    }
    let app = &app;
    let metrics = &app.config.metrics;
    match tokio::time::timeout(STATE_READ_WITHIN, app.store.read_state(MAX_LABELLED as i64)).await {
        Ok(Ok(reading)) => show_state(metrics, &reading),
        Ok(Err(e)) => {
            metrics.state_read_failures.inc();
            tracing::warn!(error = %e, "metrics: cannot read the stored state");
        }
        Err(_) => {
            metrics.state_read_failures.inc();
            tracing::warn!("metrics: the stored state took too long to read");
        }
    }
    show_risk(app).await;
    *last = Some(Instant::now());
}

/// Sets every labelled family to `counts`, with 0 for each known label
/// not among them (a status nobody has reads 0, not absent).
fn set_counts(gauges: &IntGaugeVec, known: &[&str], counts: &[(String, i64)]) {
    gauges.reset();
    for label in known {
        gauges.with_label_values(&[*label]).set(0);
    }
    for (label, n) in counts {
        gauges.with_label_values(&[label.as_str()]).set(*n);
    }
}

fn show_state(metrics: &Metrics, reading: &StateReading) {
    let now = reading.at_ms;
    let statuses: Vec<&str> = WorkspaceStatus::ALL.iter().map(|s| s.as_str()).collect();
    let drain_states: Vec<&str> = DrainState::ALL.iter().map(|s| s.as_str()).collect();
    let host_states: Vec<&str> = HostState::ALL.iter().map(|s| s.as_str()).collect();
    set_counts(&metrics.workspaces, &statuses, &reading.workspaces);
    set_counts(&metrics.drains, &drain_states, &reading.drains);
    set_counts(&metrics.hosts, &host_states, &reading.hosts);
    set_counts(&metrics.retained_executors, &[], &reading.retained_by_reason);
    metrics.retained_age_seconds.reset();
    for retained in &reading.retained {
        let reason = retained.reason.as_deref().unwrap_or("unknown");
        metrics
            .retained_age_seconds
            .with_label_values(&[retained.workspace_id.as_str(), reason])
            .set(Metrics::seconds(now - retained.since));
    }
    metrics.retained_oldest_seconds.set(reading.retained.first().map_or(0.0, |r| Metrics::seconds(now - r.since)));
    metrics.jobs_due.set(reading.jobs_due);
    metrics.jobs_leased.set(reading.jobs_leased);
    metrics.jobs_parked.set(reading.jobs_parked);
    metrics.jobs_oldest_due_seconds.set(reading.oldest_due_at.map_or(0.0, |at| Metrics::seconds(now - at)));
    metrics.workers.set(reading.workers);
    metrics.worker_heartbeat_age_seconds.reset();
    for (host, beat) in &reading.heartbeats {
        metrics.worker_heartbeat_age_seconds.with_label_values(&[host.as_str()]).set(Metrics::seconds(now - beat));
    }
    metrics.capture_stored_bytes.set(reading.capture_stored_bytes);
    metrics.pack_bytes.set(reading.pack_bytes);
    metrics.gateway_sessions.set(reading.gateway_sessions);
    metrics.gateway_sessions_open.set(reading.gateway_sessions_open);
    metrics.sleeping_workspaces.set(reading.sleeping);
}

/// Asks every live capture executor for its status and shows those with
/// work at risk, each under its workspace while there are at most
/// [`MAX_LABELLED`] of them.
async fn show_risk(app: &AppState) {
    let metrics = &app.config.metrics;
    let Some(control) = app.config.control.as_ref() else { return };
    let executors = match tokio::time::timeout(STATE_READ_WITHIN, app.store.live_capture_executors(MAX_ASKED)).await {
        Ok(Ok(executors)) => executors,
        _ => {
            metrics.state_read_failures.inc();
            return;
        }
    };
    let count = executors.len();
    // Owned, so the stream's futures borrow nothing across the await.
    let asked = futures::stream::iter(executors.into_iter().map(|executor: CaptureExecutor| {
        let control = control.clone();
        async move {
            let target = Target { run_id: &executor.run_id, endpoint: &executor.endpoint };
            let answer = control.capture_status(target, STATUS_WITHIN).await;
            (executor, answer)
        }
    }))
    .buffer_unordered(STATUS_CONCURRENCY)
    .collect::<Vec<_>>()
    .await;
    let now = sluice_store::clock::now_ms();
    let mut unanswered = 0;
    let mut at_risk = Vec::new();
    for (executor, answer) in asked {
        match answer {
            Ok(status) => {
                if let Some(risk) = risk::assess(&status, executor.saved_at, now) {
                    at_risk.push((executor, risk));
                }
            }
            Err(_) => unanswered += 1,
        }
    }
    at_risk.sort_by(|a, b| b.1.for_ms.cmp(&a.1.for_ms).then_with(|| a.0.workspace_id.cmp(&b.0.workspace_id)));
    metrics.capture_executors.set(count as i64);
    metrics.capture_status_unanswered.set(unanswered);
    metrics.at_risk_executors.set(at_risk.len() as i64);
    metrics.at_risk_bytes.reset();
    metrics.at_risk_seconds.reset();
    metrics.at_risk_failing_classes.reset();
    for (executor, risk) in at_risk.iter().take(MAX_LABELLED) {
        let workspace = [executor.workspace_id.as_str()];
        metrics.at_risk_bytes.with_label_values(&workspace).set(risk.unsaved_bytes as i64);
        metrics.at_risk_seconds.with_label_values(&workspace).set(Metrics::seconds(risk.for_ms));
        metrics.at_risk_failing_classes.with_label_values(&workspace).set(risk.failing_classes as i64);
    }
}
