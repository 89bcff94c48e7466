//! Users' SSH public keys, each registered for one principal (an SSH
//! gateway learns a key's principal from here), and the sessions gateways
//! opened.

use sluice_domain::event_data;
use sluice_domain::feed::NewSluiceEvent;

use crate::Store;
use crate::clock::now_ms;
use crate::db::{DbRow, args};
use crate::error::StoreError;
use crate::event_log::append_sluice_event;
use crate::model::SluiceEventType;
use sluice_domain::ids::{RunId, SshSessionId, WorkspaceId};

/// A registered key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshKey {
    /// `SHA256:` and the unpadded base64 of the key's digest, as
    /// `ssh-keygen -l` prints it.
    pub fingerprint: String,
    pub principal: String,
    /// The key's algorithm name (`ssh-ed25519`, …).
    pub algorithm: String,
    /// The key itself, base64, as in an `authorized_keys` line.
    pub public_key: String,
    pub created_at: i64,
}

/// What registering a key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registration {
    Created(SshKey),
    /// The principal had registered this key already.
    Existing(SshKey),
    /// Another principal holds the key.
    HeldByAnother,
}

fn ssh_key(row: &DbRow) -> Result<SshKey, StoreError> {
    Ok(SshKey {
        fingerprint: row.text("fingerprint")?,
        principal: row.text("principal")?,
        algorithm: row.text("algorithm")?,
        public_key: row.text("public_key")?,
        created_at: row.int("created_at")?,
    })
}

const COLUMNS: &str = "fingerprint, principal, algorithm, public_key, created_at";

impl Store {
    /// Registers `key` for its principal; registering it again for the same
    /// principal changes nothing.
    pub async fn register_ssh_key(&self, key: &SshKey) -> Result<Registration, StoreError> {
        let inserted = self
            .pool
            .execute(
                "INSERT INTO ssh_keys (fingerprint, principal, algorithm, public_key, created_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (fingerprint) DO NOTHING",
                args![
                    key.fingerprint.as_str(),
                    key.principal.as_str(),
                    key.algorithm.as_str(),
                    key.public_key.as_str(),
                    now_ms()
                ],
            )
            .await?;
        let stored = self
            .ssh_key(&key.fingerprint)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("ssh key {} vanished as it was registered", key.fingerprint)))?;
        Ok(match (inserted, stored.principal == key.principal) {
            (1, _) => Registration::Created(stored),
            (_, true) => Registration::Existing(stored),
            (_, false) => Registration::HeldByAnother,
        })
    }

    pub async fn ssh_key(&self, fingerprint: &str) -> Result<Option<SshKey>, StoreError> {
        let row = self
            .pool
            .fetch_optional(&format!("SELECT {COLUMNS} FROM ssh_keys WHERE fingerprint = $1"), args![fingerprint])
            .await?;
        row.as_ref().map(ssh_key).transpose()
    }

    /// A principal's keys, oldest first.
    pub async fn ssh_keys_of(&self, principal: &str) -> Result<Vec<SshKey>, StoreError> {
        let rows = self
            .pool
            .fetch_all(
                &format!("SELECT {COLUMNS} FROM ssh_keys WHERE principal = $1 ORDER BY created_at, fingerprint"),
                args![principal],
            )
            .await?;
        rows.iter().map(ssh_key).collect()
    }

    /// Removes a key; false when none had that fingerprint.
    pub async fn delete_ssh_key(&self, fingerprint: &str) -> Result<bool, StoreError> {
        Ok(self.pool.execute("DELETE FROM ssh_keys WHERE fingerprint = $1", args![fingerprint]).await? == 1)
    }
}

/// How a gateway session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionOutcome {
    /// Its process exited (or its connection closed).
    Exited,
    /// The daemon would not start it.
    Refused,
    /// The gateway or the executor went away first.
    Cut,
}

impl SessionOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionOutcome::Exited => "exited",
            SessionOutcome::Refused => "refused",
            SessionOutcome::Cut => "cut",
        }
    }
}

/// A session, as recorded: never what went through it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewaySession {
    pub id: SshSessionId,
    pub workspace_id: WorkspaceId,
    pub run_id: RunId,
    pub principal: String,
    pub key_fingerprint: Option<String>,
    /// `shell`, `exec`, `sftp` or `port-forward`.
    pub kind: String,
    pub started_at: i64,
    pub ended_at: Option<i64>,
    pub exit_status: Option<i64>,
    pub outcome: Option<String>,
}

impl Store {
    /// Records a session's start; answers its id. The workspace counts as
    /// used (for a broker workspace's idle timeout).
    pub async fn session_started(
        &self,
        workspace_id: &WorkspaceId,
        run_id: &RunId,
        principal: &str,
        key_fingerprint: Option<&str>,
        kind: &str,
    ) -> Result<String, StoreError> {
        let id = crate::clock::new_id("ses");
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        tx.execute(
            "INSERT INTO gateway_sessions (id, workspace_id, run_id, principal, key_fingerprint, kind, started_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            args![id.as_str(), workspace_id, run_id, principal, key_fingerprint, kind, now],
        )
        .await?;
        let started = NewSluiceEvent {
            event_type: SluiceEventType::GatewaySessionStarted,
            workspace_id: Some(workspace_id.to_owned()),
            attempt_id: Some(run_id.to_owned()),
            message: format!("{kind} session started"),
            data: event_data::json(event_data::SessionStarted { session_id: &id, kind, principal }),
        };
        append_sluice_event(&mut tx, &started, now).await?;
        tx.commit().await?;
        self.touch_broker_workspace(workspace_id).await?;
        Ok(id)
    }

    /// Records a session's end (once).
    pub async fn session_ended(
        &self,
        id: &SshSessionId,
        outcome: SessionOutcome,
        exit_status: Option<i64>,
    ) -> Result<(), StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let ended = tx
            .fetch_optional(
                "UPDATE gateway_sessions SET ended_at = $2, outcome = $3, exit_status = $4 \
                 WHERE id = $1 AND ended_at IS NULL RETURNING workspace_id, run_id, kind, principal",
                args![id, now, outcome.as_str(), exit_status],
            )
            .await?;
        // Ended once: a repeat finds the row ended and says nothing again.
        if let Some(row) = ended {
            let kind = row.text("kind")?;
            let principal = row.text("principal")?;
            let event = NewSluiceEvent {
                event_type: SluiceEventType::GatewaySessionEnded,
                workspace_id: Some(row.id("workspace_id")?),
                attempt_id: Some(row.id("run_id")?),
                message: format!("{kind} session ended: {}", outcome.as_str()),
                data: event_data::json(event_data::SessionEnded {
                    session_id: id.as_str(),
                    kind: &kind,
                    principal: &principal,
                    outcome: outcome.as_str(),
                    exit_status,
                }),
            };
            append_sluice_event(&mut tx, &event, now).await?;
        }
        tx.commit().await
    }

    /// A workspace's sessions, oldest first.
    pub async fn sessions_of(&self, workspace_id: &WorkspaceId) -> Result<Vec<GatewaySession>, StoreError> {
        let rows = self
            .pool
            .fetch_all(
                "SELECT id, workspace_id, run_id, principal, key_fingerprint, kind, started_at, ended_at, exit_status, \
                 outcome FROM gateway_sessions WHERE workspace_id = $1 ORDER BY started_at, id",
                args![workspace_id],
            )
            .await?;
        rows.iter()
            .map(|row| {
                Ok(GatewaySession {
                    id: row.id("id")?,
                    workspace_id: row.id("workspace_id")?,
                    run_id: row.id("run_id")?,
                    principal: row.text("principal")?,
                    key_fingerprint: row.opt_text("key_fingerprint")?,
                    kind: row.text("kind")?,
                    started_at: row.int("started_at")?,
                    ended_at: row.opt_int("ended_at")?,
                    exit_status: row.opt_int("exit_status")?,
                    outcome: row.opt_text("outcome")?,
                })
            })
            .collect()
    }
}
