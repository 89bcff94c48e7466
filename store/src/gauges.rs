//! What the state gauges read: counts grouped in the database, bounded
//! lists of the exceptional rows (retained executors), and the live
//! capture executors a scrape asks for their status. Reads only.

use crate::Store;
use crate::clock::now_ms;
use crate::db::args;
use crate::error::StoreError;
use crate::model::WorkspaceStatus;
use sluice_domain::ids::{RunId, WorkspaceId};

/// The stored state at one moment, as the gauges show it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateReading {
    pub at_ms: i64,
    /// Workspaces by status (only the statuses some workspace has).
    pub workspaces: Vec<(String, i64)>,
    /// Drains of executors still on their runtime, by state.
    pub drains: Vec<(String, i64)>,
    /// Retained executors, longest retained first, at most `limit`.
    pub retained: Vec<RetainedReading>,
    /// Every retained executor by reason (not bounded by `limit`).
    pub retained_by_reason: Vec<(String, i64)>,
    pub jobs_due: i64,
    pub jobs_leased: i64,
    pub jobs_parked: i64,
    /// When the oldest due, unheld job fell due.
    pub oldest_due_at: Option<i64>,
    pub hosts: Vec<(String, i64)>,
    pub workers: i64,
    /// Each host with a registered worker, and its newest heartbeat.
    pub heartbeats: Vec<(String, i64)>,
    pub capture_stored_bytes: i64,
    pub pack_bytes: i64,
    pub gateway_sessions: i64,
    pub gateway_sessions_open: i64,
    pub sleeping: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RetainedReading {
    pub workspace_id: WorkspaceId,
    pub reason: Option<String>,
    pub since: i64,
}

/// A live executor of a capture-sourced workspace.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureExecutor {
    pub workspace_id: WorkspaceId,
    pub run_id: RunId,
    pub endpoint: String,
    /// Its newest registered capture, or else when it started.
    pub saved_at: i64,
}

impl Store {
    /// The stored state the gauges show; lists of single executors hold at
    /// most `limit` rows.
    pub async fn read_state(&self, limit: i64) -> Result<StateReading, StoreError> {
        let now = now_ms();
        let grouped = |sql: &'static str| async move {
            self.pool
                .fetch_all(sql, vec![])
                .await?
                .iter()
                .map(|r| Ok((r.opt_text("label")?.unwrap_or_else(|| "unknown".into()), r.int("n")?)))
                .collect::<Result<Vec<_>, StoreError>>()
        };
        let workspaces =
            grouped("SELECT status AS label, COUNT(*) AS n FROM workspaces WHERE deleted_at IS NULL GROUP BY status")
                .await?;
        let drains = grouped(
            "SELECT d.state AS label, COUNT(*) AS n FROM drains d JOIN runs r ON r.id = d.run_id \
             WHERE r.runtime_removed_at IS NULL AND d.state IS NOT NULL GROUP BY d.state",
        )
        .await?;
        let sleeping = self
            .pool
            .fetch_optional(
                "SELECT COUNT(*) AS n FROM workspaces WHERE deleted_at IS NULL AND status = $1 \
                 AND sleep_reason IS NOT NULL",
                args![WorkspaceStatus::Stopped.as_str()],
            )
            .await?
            .map(|r| r.int("n"))
            .transpose()?
            .unwrap_or(0);
        let hosts =
            grouped("SELECT state AS label, COUNT(*) AS n FROM hosts WHERE forgotten_at IS NULL GROUP BY state")
                .await?;
        let retained_rows = self
            .pool
            .fetch_all(
                "SELECT r.workspace_id, d.retained_reason, COALESCE(d.retained_since, r.updated_at) AS since \
                 FROM runs r LEFT JOIN drains d ON d.run_id = r.id \
                 WHERE r.status = $1 AND r.runtime_removed_at IS NULL ORDER BY since, r.id",
                args![WorkspaceStatus::Retained.as_str()],
            )
            .await?;
        let mut retained = Vec::new();
        let mut by_reason: Vec<(String, i64)> = Vec::new();
        for row in &retained_rows {
            let reading = RetainedReading {
                workspace_id: row.id("workspace_id")?,
                reason: row.opt_text("retained_reason")?,
                since: row.int("since")?,
            };
            let reason = reading.reason.clone().unwrap_or_else(|| "unknown".into());
            match by_reason.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, n)) => *n += 1,
                None => by_reason.push((reason, 1)),
            }
            if (retained.len() as i64) < limit {
                retained.push(reading);
            }
        }
        let jobs = self
            .pool
            .fetch_optional(
                "SELECT \
                   CAST(COALESCE(SUM(CASE WHEN failed_at IS NULL AND run_at <= $1 \
                     AND (lease_expires_at IS NULL OR lease_expires_at < $1) THEN 1 ELSE 0 END), 0) AS BIGINT) AS due, \
                   CAST(COALESCE(SUM(CASE WHEN lease_expires_at >= $1 THEN 1 ELSE 0 END), 0) AS BIGINT) AS leased, \
                   CAST(COALESCE(SUM(CASE WHEN failed_at IS NOT NULL THEN 1 ELSE 0 END), 0) AS BIGINT) AS parked, \
                   MIN(CASE WHEN failed_at IS NULL AND run_at <= $1 \
                     AND (lease_expires_at IS NULL OR lease_expires_at < $1) THEN run_at END) AS oldest_due \
                 FROM jobs",
                args![now],
            )
            .await?
            .ok_or_else(|| StoreError::Corrupt("an aggregate returned no row".into()))?;
        let heartbeats = self
            .pool
            .fetch_all("SELECT host, MAX(heartbeat_at) AS beat FROM workers GROUP BY host ORDER BY host", vec![])
            .await?
            .iter()
            .map(|r| Ok((r.text("host")?, r.int("beat")?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        let sums = self
            .pool
            .fetch_optional(
                "SELECT \
                   (SELECT COUNT(*) FROM workers) AS workers, \
                   (SELECT CAST(COALESCE(SUM(used_bytes), 0) AS BIGINT) FROM capture_sessions) AS stored, \
                   (SELECT CAST(COALESCE(SUM(bytes), 0) AS BIGINT) FROM packs WHERE state = $1) AS packed, \
                   (SELECT COUNT(*) FROM gateway_sessions) AS sessions, \
                   (SELECT COUNT(*) FROM gateway_sessions WHERE ended_at IS NULL) AS open_sessions",
                args![crate::packs::PackState::Ready.as_str()],
            )
            .await?
            .ok_or_else(|| StoreError::Corrupt("an aggregate returned no row".into()))?;
        Ok(StateReading {
            at_ms: now,
            workspaces,
            drains,
            retained,
            retained_by_reason: by_reason,
            jobs_due: jobs.int("due")?,
            jobs_leased: jobs.int("leased")?,
            jobs_parked: jobs.int("parked")?,
            oldest_due_at: jobs.opt_int("oldest_due")?,
            hosts,
            workers: sums.int("workers")?,
            heartbeats,
            capture_stored_bytes: sums.int("stored")?,
            pack_bytes: sums.int("packed")?,
            gateway_sessions: sums.int("sessions")?,
            gateway_sessions_open: sums.int("open_sessions")?,
            sleeping,
        })
    }

    /// The live executors holding a capture session's claim, at most
    /// `limit`, with when each last had a capture registered.
    pub async fn live_capture_executors(&self, limit: i64) -> Result<Vec<CaptureExecutor>, StoreError> {
        self.pool
            .fetch_all(
                "SELECT r.workspace_id, r.id, r.runtime_endpoint, \
                   COALESCE((SELECT MAX(c.registered_at) FROM captures c \
                     WHERE c.session_id = s.id AND c.run_id = r.id), r.started_at, r.created_at) AS saved_at \
                 FROM capture_sessions s JOIN runs r ON r.id = s.claimed_run_id \
                 WHERE r.runtime_removed_at IS NULL AND r.runtime_endpoint IS NOT NULL AND r.status = $1 \
                 ORDER BY r.id LIMIT $2",
                args![WorkspaceStatus::Ready.as_str(), limit],
            )
            .await?
            .iter()
            .map(|r| {
                Ok(CaptureExecutor {
                    workspace_id: r.id("workspace_id")?,
                    run_id: r.id("id")?,
                    endpoint: r.text("runtime_endpoint")?,
                    saved_at: r.int("saved_at")?,
                })
            })
            .collect()
    }
}
