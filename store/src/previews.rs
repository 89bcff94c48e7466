//! Preview grants: which port of which workspace is served at its preview
//! host, to whom (a token's holder, or anyone), on which run, until when.
//! A private grant's token exists here only as a keyed hash.

use sluice_domain::preview::Grant;

use crate::Store;
use crate::clock::{new_id, now_ms};
use crate::db::{DbRow, args};
use crate::error::StoreError;
use crate::seal::{Secret, new_token};
use sluice_domain::ids::{PreviewId, RunId, WorkspaceId};

/// A stored grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    pub id: PreviewId,
    pub grant: Grant,
    pub created_by: String,
    pub created_at: i64,
}

/// What a new grant is for.
#[derive(Debug, Clone)]
pub struct NewPreview<'a> {
    pub workspace_id: &'a WorkspaceId,
    pub run_id: &'a RunId,
    pub port: u16,
    pub public: bool,
    pub created_by: &'a str,
    pub expires_at: i64,
}

fn preview(row: &DbRow) -> Result<Preview, StoreError> {
    let port = row.int("port")?;
    Ok(Preview {
        id: row.id("id")?,
        grant: Grant {
            workspace_id: row.id("workspace_id")?,
            port: u16::try_from(port).map_err(|_| StoreError::Corrupt(format!("preview port {port}")))?,
            run_id: row.id("run_id")?,
            public: row.int("public")? != 0,
            expires_at: row.int("expires_at")?,
            revoked: row.opt_int("revoked_at")?.is_some(),
        },
        created_by: row.text("created_by")?,
        created_at: row.int("created_at")?,
    })
}

const COLUMNS: &str = "id, workspace_id, run_id, port, public, created_by, created_at, expires_at, revoked_at";

impl Store {
    /// Stores a grant; a private one comes with the token that visits it
    /// (shown once, kept only as a keyed hash).
    pub async fn create_preview(&self, new: &NewPreview<'_>) -> Result<(Preview, Option<Secret<String>>), StoreError> {
        let id = PreviewId::from(new_id("pv"));
        let token = (!new.public).then(new_token);
        let token_hash = token.as_ref().map(|t| self.sealer().keyed_digest(t.expose().as_bytes()));
        self.pool
            .execute(
                &format!(
                    "INSERT INTO previews ({COLUMNS}, token_hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, $9)"
                ),
                args![
                    id.as_str(),
                    new.workspace_id,
                    new.run_id,
                    i64::from(new.port),
                    i64::from(new.public),
                    new.created_by,
                    now_ms(),
                    new.expires_at,
                    token_hash
                ],
            )
            .await?;
        let stored = self.preview(new.workspace_id, &id).await?;
        let stored = stored.ok_or_else(|| StoreError::Corrupt(format!("preview {id} vanished as it was made")))?;
        Ok((stored, token))
    }

    /// A workspace's grant by its id.
    pub async fn preview(&self, workspace_id: &WorkspaceId, id: &PreviewId) -> Result<Option<Preview>, StoreError> {
        let row = self
            .pool
            .fetch_optional(
                &format!("SELECT {COLUMNS} FROM previews WHERE id = $1 AND workspace_id = $2"),
                args![id, workspace_id],
            )
            .await?;
        row.as_ref().map(preview).transpose()
    }

    /// The grant a visit's token belongs to.
    pub async fn preview_by_token(&self, token: &str) -> Result<Option<Preview>, StoreError> {
        let hash = self.sealer().keyed_digest(token.as_bytes());
        let row = self
            .pool
            .fetch_optional(&format!("SELECT {COLUMNS} FROM previews WHERE token_hash = $1"), args![hash])
            .await?;
        row.as_ref().map(preview).transpose()
    }

    /// The newest public grant of a workspace's port that is not revoked.
    pub async fn public_preview(&self, workspace_id: &WorkspaceId, port: u16) -> Result<Option<Preview>, StoreError> {
        let row = self
            .pool
            .fetch_optional(
                &format!(
                    "SELECT {COLUMNS} FROM previews WHERE workspace_id = $1 AND port = $2 AND public = 1 \
                     AND revoked_at IS NULL ORDER BY created_at DESC, id DESC LIMIT 1"
                ),
                args![workspace_id, i64::from(port)],
            )
            .await?;
        row.as_ref().map(preview).transpose()
    }

    /// A workspace's grants, newest first (at most 500).
    pub async fn previews_of(&self, workspace_id: &WorkspaceId) -> Result<Vec<Preview>, StoreError> {
        let rows = self
            .pool
            .fetch_all(
                &format!(
                    "SELECT {COLUMNS} FROM previews WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC LIMIT 500"
                ),
                args![workspace_id],
            )
            .await?;
        rows.iter().map(preview).collect()
    }

    /// Revokes a grant; `false` when the workspace has no such grant.
    /// Revoking one already revoked keeps its first time.
    pub async fn revoke_preview(&self, workspace_id: &WorkspaceId, id: &PreviewId) -> Result<bool, StoreError> {
        let found = self.preview(workspace_id, id).await?.is_some();
        if found {
            self.pool
                .execute(
                    "UPDATE previews SET revoked_at = $1 WHERE id = $2 AND workspace_id = $3 AND revoked_at IS NULL",
                    args![now_ms(), id, workspace_id],
                )
                .await?;
        }
        Ok(found)
    }
}
