//! Workspaces, their runs and their events: reading, listing, renaming
//! and expiring (creating is `creates`). Every state change commits in one
//! transaction with the events that record it.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::Store;
use crate::clock::now_ms;
use crate::db::{Arg, args};
use crate::error::StoreError;
use crate::model::*;
use crate::rows::{
    EVENT_COLUMNS, LISTED, RUN_COLUMNS, WORKSPACE_COLUMNS, event_from_row, run_from_row, workspace_from_row,
};
use crate::seal::Secret;
use sluice_domain::guard;
use sluice_domain::ids::{IdempotencyKey, OwnerId, RunId, WorkspaceId};

/// Which workspaces a list returns.
#[derive(Debug, Clone, Default)]
pub struct WorkspaceFilter {
    pub status: Option<WorkspaceStatus>,
    pub idempotency_key: Option<IdempotencyKey>,
    pub limit: i64,
}

impl Store {
    /// Opens a workspace's sealed secret, if it has one of that kind.
    pub async fn open_secret(
        &self,
        workspace_id: &WorkspaceId,
        kind: SecretKind,
    ) -> Result<Option<Secret<Vec<u8>>>, StoreError> {
        let row = self
            .pool
            .fetch_optional(
                "SELECT nonce, ciphertext FROM sealed_secrets WHERE workspace_id = $1 AND kind = $2",
                args![workspace_id, kind.as_str()],
            )
            .await?;
        let Some(row) = row else { return Ok(None) };
        let sealed = crate::seal::Sealed { nonce: row.bytes("nonce")?, ciphertext: row.bytes("ciphertext")? };
        self.sealer.open(&format!("{workspace_id}/{}", kind.as_str()), &sealed).map(Some)
    }

    /// The owner's workspace with its current run; `None` when it does not
    /// exist or belongs to someone else.
    pub async fn get_workspace(
        &self,
        owner: &OwnerId,
        workspace_id: &WorkspaceId,
    ) -> Result<Option<WorkspaceView>, StoreError> {
        self.workspace_view(owner, workspace_id, LISTED).await
    }

    /// As [`Store::get_workspace`], deleted or not: what a replay of the
    /// create that made it answers.
    pub(crate) async fn get_workspace_ever(
        &self,
        owner: &OwnerId,
        workspace_id: &WorkspaceId,
    ) -> Result<Option<WorkspaceView>, StoreError> {
        self.workspace_view(owner, workspace_id, "1 = 1").await
    }

    async fn workspace_view(
        &self,
        owner: &OwnerId,
        workspace_id: &WorkspaceId,
        which: &str,
    ) -> Result<Option<WorkspaceView>, StoreError> {
        let row = self
            .pool
            .fetch_optional(
                &format!("SELECT {WORKSPACE_COLUMNS} FROM workspaces WHERE id = $1 AND owner_user_id = $2 AND {which}"),
                args![workspace_id, owner],
            )
            .await?;
        let Some(row) = row else { return Ok(None) };
        let workspace = workspace_from_row(&row)?;
        let current_run = match &workspace.current_run_id {
            Some(run_id) => self
                .pool
                .fetch_optional(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"), args![run_id])
                .await?
                .map(|r| run_from_row(&r))
                .transpose()?,
            None => None,
        };
        Ok(Some(WorkspaceView { workspace, current_run }))
    }

    /// The owner's workspaces, newest first.
    /// Every owner's workspaces (an operator's view), most recently
    /// changed first, by status and owner when given.
    pub async fn all_workspaces(
        &self,
        status: Option<WorkspaceStatus>,
        owner: Option<&OwnerId>,
        limit: i64,
    ) -> Result<Vec<Workspace>, StoreError> {
        let mut sql = format!("SELECT {WORKSPACE_COLUMNS} FROM workspaces WHERE {LISTED}");
        let mut values = args![];
        if let Some(status) = status {
            values.push(Arg::from(status.as_str()));
            sql.push_str(&format!(" AND status = ${}", values.len()));
        }
        if let Some(owner) = owner {
            values.push(Arg::from(owner));
            sql.push_str(&format!(" AND owner_user_id = ${}", values.len()));
        }
        values.push(Arg::from(limit));
        sql.push_str(&format!(" ORDER BY updated_at DESC, id DESC LIMIT ${}", values.len()));
        self.pool.fetch_all(&sql, values).await?.iter().map(workspace_from_row).collect()
    }

    pub async fn list_workspaces(
        &self,
        owner: &OwnerId,
        filter: &WorkspaceFilter,
    ) -> Result<Vec<WorkspaceView>, StoreError> {
        let mut sql = format!("SELECT {WORKSPACE_COLUMNS} FROM workspaces WHERE owner_user_id = $1 AND {LISTED}");
        let mut values = args![owner];
        if let Some(status) = filter.status {
            values.push(Arg::from(status.as_str()));
            sql.push_str(&format!(" AND status = ${}", values.len()));
        }
        if let Some(key) = &filter.idempotency_key {
            values.push(Arg::from(key));
            sql.push_str(&format!(" AND idempotency_key = ${}", values.len()));
        }
        values.push(Arg::from(filter.limit));
        sql.push_str(&format!(" ORDER BY created_at DESC, id DESC LIMIT ${}", values.len()));
        let workspaces =
            self.pool.fetch_all(&sql, values).await?.iter().map(workspace_from_row).collect::<Result<Vec<_>, _>>()?;

        let run_ids: Vec<&RunId> = workspaces.iter().filter_map(|w| w.current_run_id.as_ref()).collect();
        let mut runs = BTreeMap::new();
        if !run_ids.is_empty() {
            let placeholders: Vec<String> = (1..=run_ids.len()).map(|i| format!("${i}")).collect();
            let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id IN ({})", placeholders.join(", "));
            for row in self.pool.fetch_all(&sql, run_ids.iter().map(|id| Arg::from(*id)).collect()).await? {
                let run = run_from_row(&row)?;
                runs.insert(run.id.clone(), run);
            }
        }
        Ok(workspaces
            .into_iter()
            .map(|workspace| {
                let current_run = workspace.current_run_id.as_ref().and_then(|id| runs.remove(id));
                WorkspaceView { workspace, current_run }
            })
            .collect())
    }

    /// Renames the owner's workspace; `None` when it is not theirs.
    pub async fn rename_workspace(
        &self,
        owner: &OwnerId,
        workspace_id: &WorkspaceId,
        name: &str,
    ) -> Result<Option<Workspace>, StoreError> {
        guard::check("name", &Value::String(name.to_owned()))?;
        let row = self
            .pool
            .fetch_optional(
                &format!(
                    "UPDATE workspaces SET name = $1, updated_at = $2 WHERE id = $3 AND owner_user_id = $4 RETURNING {WORKSPACE_COLUMNS}"
                ),
                args![name, now_ms(), workspace_id, owner],
            )
            .await?;
        row.map(|r| workspace_from_row(&r)).transpose()
    }

    /// Sets (`Some`) or clears (`None`) when the owner's workspace expires;
    /// `None` when it is not theirs.
    pub async fn set_expiry(
        &self,
        owner: &OwnerId,
        workspace_id: &WorkspaceId,
        expires_at: Option<i64>,
    ) -> Result<Option<Workspace>, StoreError> {
        let row = self
            .pool
            .fetch_optional(
                &format!(
                    "UPDATE workspaces SET expires_at = $1, updated_at = $2 WHERE id = $3 AND owner_user_id = $4 RETURNING {WORKSPACE_COLUMNS}"
                ),
                args![expires_at, now_ms(), workspace_id, owner],
            )
            .await?;
        row.map(|r| workspace_from_row(&r)).transpose()
    }

    /// The workspace, if `principal` may reach it over SSH: its owner, or a
    /// principal its spec lists under `access.sshPrincipals`.
    pub async fn find_workspace_for_principal(
        &self,
        workspace_id: &WorkspaceId,
        principal: &str,
    ) -> Result<Option<WorkspaceView>, StoreError> {
        let owner = self
            .pool
            .fetch_optional(
                &format!("SELECT owner_user_id FROM workspaces WHERE id = $1 AND {LISTED}"),
                args![workspace_id],
            )
            .await?
            .map(|r| r.id::<OwnerId>("owner_user_id"))
            .transpose()?;
        let Some(owner) = owner else { return Ok(None) };
        let view = self.get_workspace(&owner, workspace_id).await?;
        Ok(view.filter(|v| v.workspace.admits_ssh_principal(principal)))
    }

    pub(crate) async fn owns(&self, owner: &OwnerId, workspace_id: &WorkspaceId) -> Result<bool, StoreError> {
        Ok(self
            .pool
            .fetch_optional(
                &format!("SELECT id FROM workspaces WHERE id = $1 AND owner_user_id = $2 AND {LISTED}"),
                args![workspace_id, owner],
            )
            .await?
            .is_some())
    }

    /// The owner's workspace's runs, newest first; `None` when it is not theirs.
    pub async fn list_runs(
        &self,
        owner: &OwnerId,
        workspace_id: &WorkspaceId,
        limit: i64,
    ) -> Result<Option<Vec<Run>>, StoreError> {
        if !self.owns(owner, workspace_id).await? {
            return Ok(None);
        }
        let rows = self
            .pool
            .fetch_all(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM runs WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2"
                ),
                args![workspace_id, limit],
            )
            .await?;
        rows.iter().map(run_from_row).collect::<Result<Vec<_>, _>>().map(Some)
    }

    /// The owner's workspace's events in the order they happened (the first
    /// `limit`); `None` when it is not theirs.
    pub async fn list_events(
        &self,
        owner: &OwnerId,
        workspace_id: &WorkspaceId,
        limit: i64,
    ) -> Result<Option<Vec<Event>>, StoreError> {
        if !self.owns(owner, workspace_id).await? {
            return Ok(None);
        }
        let rows = self
            .pool
            .fetch_all(
                &format!(
                    "SELECT {EVENT_COLUMNS} FROM events WHERE workspace_id = $1 AND seq IS NOT NULL \
                     ORDER BY seq ASC LIMIT $2"
                ),
                args![workspace_id, limit],
            )
            .await?;
        rows.iter().map(event_from_row).collect::<Result<Vec<_>, _>>().map(Some)
    }
}
