//! Deleting workspaces that have ended: on their owner's request, or once
//! they have been ended longer than the install keeps them. A deleted
//! workspace is gone from every read made on an owner's behalf (see
//! [`LISTED`]); its row stays, as do its events on the feed (until their
//! own retention ends) and its idempotency key (until purged). The
//! deletion and its `sluice.workspace.deleted` event commit together.

use crate::Store;
use crate::clock::now_ms;
use crate::db::{Tx, args};
use crate::error::StoreError;
use crate::event_log::append_sluice_event;
use crate::model::*;
use crate::rows::{LISTED, RUN_COLUMNS, WORKSPACE_COLUMNS, run_from_row, workspace_from_row};
use sluice_domain::event_data;
use sluice_domain::feed::NewSluiceEvent;
use sluice_domain::ids::{OwnerId, WorkspaceId};
use sluice_domain::lifecycle::delete_allowed;

/// What became of a delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deletion {
    /// Gone from lists and reads, at this time.
    Deleted { at: i64 },
    /// Refused: the workspace has not ended, or holds a runtime.
    Refused(Refusal),
}

/// Who deleted a workspace, as its event says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeletedBy {
    Owner,
    /// The install's `--purge-ended-after-days`.
    Purge,
}

impl DeletedBy {
    fn as_str(self) -> &'static str {
        match self {
            DeletedBy::Owner => "owner",
            DeletedBy::Purge => "purge",
        }
    }
}

/// Judges and, if allowed, deletes the workspace `row_sql` reads (locked),
/// inside `tx`; `None` when there is no such workspace (or it is gone).
async fn delete_in(
    tx: &mut Tx,
    row_sql: &str,
    row_args: Vec<crate::db::Arg>,
    by: DeletedBy,
) -> Result<Option<Deletion>, StoreError> {
    let Some(row) = tx.fetch_optional(row_sql, row_args).await? else { return Ok(None) };
    let workspace = workspace_from_row(&row)?;
    let current = match &workspace.current_run_id {
        Some(id) => tx
            .fetch_optional(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"), args![id])
            .await?
            .map(|r| run_from_row(&r))
            .transpose()?,
        None => None,
    };
    if let Err(refusal) = delete_allowed(&workspace, current.as_ref()) {
        return Ok(Some(Deletion::Refused(refusal)));
    }
    let now = now_ms();
    tx.execute("UPDATE workspaces SET deleted_at = $1 WHERE id = $2", args![now, &workspace.id]).await?;
    // A deleted workspace never launches again: its secrets (the capture
    // token a restart would claim with among them) go with it.
    tx.execute("DELETE FROM sealed_secrets WHERE workspace_id = $1", args![&workspace.id]).await?;
    let event = NewSluiceEvent {
        event_type: SluiceEventType::WorkspaceDeleted,
        workspace_id: Some(workspace.id.clone()),
        attempt_id: workspace.current_run_id.clone(),
        message: format!("workspace deleted ({})", by.as_str()),
        data: event_data::json(event_data::WorkspaceDeleted { by: by.as_str(), status: workspace.status.as_str() }),
    };
    append_sluice_event(tx, &event, now).await?;
    Ok(Some(Deletion::Deleted { at: now }))
}

impl Store {
    /// Deletes the owner's workspace if it has ended (see
    /// [`delete_allowed`]); `None` when it is not theirs or already gone.
    pub async fn delete_workspace(
        &self,
        owner: &OwnerId,
        workspace_id: &WorkspaceId,
    ) -> Result<Option<Deletion>, StoreError> {
        let lock = self.pool.kind().for_update();
        let sql = format!(
            "SELECT {WORKSPACE_COLUMNS} FROM workspaces WHERE id = $1 AND owner_user_id = $2 AND {LISTED}{lock}"
        );
        let mut tx = self.pool.begin().await?;
        let deletion = delete_in(&mut tx, &sql, args![workspace_id, owner], DeletedBy::Owner).await?;
        if matches!(deletion, Some(Deletion::Deleted { .. })) {
            tx.commit().await?;
        }
        Ok(deletion)
    }

    /// Deletes up to `limit` workspaces that ended before `ended_before`
    /// (each judged like an owner's delete, one transaction each); answers
    /// how many were deleted.
    pub async fn purge_ended_workspaces(&self, ended_before: i64, limit: i64) -> Result<u64, StoreError> {
        let candidates = self
            .pool
            .fetch_all(
                &format!(
                    "SELECT id FROM workspaces WHERE {LISTED} AND finished_at IS NOT NULL AND finished_at < $1 \
                     ORDER BY finished_at LIMIT $2"
                ),
                args![ended_before, limit],
            )
            .await?;
        let lock = self.pool.kind().for_update();
        let sql =
            format!("SELECT {WORKSPACE_COLUMNS} FROM workspaces WHERE id = $1 AND {LISTED} AND finished_at < $2{lock}");
        let mut deleted = 0;
        for row in candidates {
            let id: WorkspaceId = row.id("id")?;
            let mut tx = self.pool.begin().await?;
            if let Some(Deletion::Deleted { .. }) =
                delete_in(&mut tx, &sql, args![&id, ended_before], DeletedBy::Purge).await?
            {
                tx.commit().await?;
                deleted += 1;
            }
        }
        Ok(deleted)
    }
}
