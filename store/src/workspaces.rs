//! Workspaces, their runs and their events: creating (idempotently),
//! reading, listing, renaming and expiring. Every state change commits in
//! one transaction with the events that record it.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::Store;
use crate::clock::{new_id, now_ms};
pub use crate::create_keys::Idempotency;
use crate::db::{Arg, args, json_row};
use crate::error::StoreError;
use crate::group_commit::{self, PreparedCreate};
use crate::model::*;
use crate::rows::{EVENT_COLUMNS, RUN_COLUMNS, WORKSPACE_COLUMNS, event_from_row, run_from_row, workspace_from_row};

use crate::seal::Secret;
use sluice_domain::ids::{IdempotencyKey, LaunchId, OwnerId, RunId, SessionId, WorkspaceId};
use sluice_domain::{guard, transition};

/// Everything a create writes. Validated by the caller; the store re-checks
/// only what keeps secrets out of plain columns.
#[derive(Debug, Clone)]
pub struct NewWorkspace {
    pub owner_user_id: OwnerId,
    pub name: String,
    pub registry_id: String,
    pub repository: String,
    pub tag: String,
    pub spec: crate::spec::Spec,
    /// Lifetime from the create's commit, in milliseconds; `None` never expires.
    pub ttl_ms: Option<i64>,
    pub launch_id: Option<LaunchId>,
    pub idempotency: Option<Idempotency>,
    pub secret_env: Option<Secret<BTreeMap<String, String>>>,
    pub capture_token: Option<Secret<String>>,
    /// An execution broker's acquisition: its record, written in the same
    /// transaction after the instance's concurrency limit was checked.
    pub broker: Option<crate::broker::NewBrokerWorkspace>,
}

impl NewWorkspace {
    /// A create of `repository:tag` from `registry_id` for `owner` with an
    /// empty spec and nothing else: what the rest is set on.
    pub fn of(owner: &OwnerId, name: &str, registry_id: &str, repository: &str, tag: &str) -> NewWorkspace {
        NewWorkspace {
            owner_user_id: owner.clone(),
            name: name.into(),
            registry_id: registry_id.into(),
            repository: repository.into(),
            tag: tag.into(),
            spec: Default::default(),
            ttl_ms: None,
            launch_id: None,
            idempotency: None,
            secret_env: None,
            capture_token: None,
            broker: None,
        }
    }
}

/// What a create did.
#[derive(Debug, Clone)]
pub enum CreateOutcome {
    Created(WorkspaceView),
    /// An earlier create with the same key and request made this workspace.
    Replayed(WorkspaceView),
}

/// Which workspaces a list returns.
#[derive(Debug, Clone, Default)]
pub struct WorkspaceFilter {
    pub status: Option<WorkspaceStatus>,
    pub idempotency_key: Option<IdempotencyKey>,
    pub limit: i64,
}

impl Store {
    /// Creates a workspace with its first run (`queued`) and the events
    /// `workspace.created` and `attempt.queued`, all in one transaction.
    ///
    /// With an idempotency key the create is done at most once per
    /// (owner, key): a repeat with the same request replays the first
    /// result, a different request is refused, and a cancelled key never
    /// lets a create commit, even one already in flight.
    pub async fn create_workspace(&self, new: NewWorkspace) -> Result<CreateOutcome, StoreError> {
        guard::check("spec", new.spec.document())?;
        let owner = new.owner_user_id.clone();
        let idem = new.idempotency.clone();
        if let Some(idem) = &idem
            && let Some(decided) = self.found_keys.decide(&owner, idem)
        {
            return self.replay(&owner, &decided?).await;
        }
        let (prepared, view) = self.prepare_create(new)?;
        let workspace_id = match self.creates.submit(&self.pool, prepared).await? {
            group_commit::Written::Created => view.workspace.id.clone(),
            group_commit::Written::Replay(workspace_id) => workspace_id,
        };
        if let Some(idem) = &idem {
            self.found_keys.remember(&owner, idem, &workspace_id);
        }
        if workspace_id == view.workspace.id {
            Ok(CreateOutcome::Created(view))
        } else {
            self.replay(&owner, &workspace_id).await
        }
    }

    /// Everything a create writes, as rows (ids taken, secrets sealed, every
    /// plain value checked), and what it answers once committed.
    fn prepare_create(&self, new: NewWorkspace) -> Result<(PreparedCreate, WorkspaceView), StoreError> {
        let now = now_ms();
        let workspace_id = WorkspaceId::from(new_id("ws"));
        let run_id = RunId::from(new_id("run"));
        let spec_text = new.spec.document().to_string();
        let expires_at = new.ttl_ms.map(|ttl| now.saturating_add(ttl));

        let asked = transition::Asked {
            workspace_id: workspace_id.clone(),
            run_id: run_id.clone(),
            owner: new.owner_user_id.clone(),
            name: new.name.clone(),
            registry_id: new.registry_id.clone(),
            repository: new.repository.clone(),
            tag: new.tag.clone(),
            spec: new.spec.clone(),
            launch_id: new.launch_id.clone(),
            idempotency_key: new.idempotency.as_ref().map(|i| i.key.clone()),
            expires_at,
        };
        let transition::Created { workspace, run, events } =
            transition::create(asked, expires_at.map(crate::clock::rfc3339), now);
        let mut event_rows = Vec::new();
        for (seq, event) in (1..).zip(events) {
            let data = event.data.unwrap_or(Value::Null);
            guard::check("event.data", &data)?;
            event_rows.push(json_row(args![
                new_id("evt"),
                &workspace_id,
                seq,
                event.attempt_id,
                event.event_type.as_str(),
                now,
                event.message,
                data.to_string()
            ]));
        }

        let mut sealed_rows = Vec::new();
        let mut seal = |kind: SecretKind, plain: &[u8]| -> Result<(), StoreError> {
            let sealed = self.sealer.seal(&format!("{workspace_id}/{}", kind.as_str()), plain)?;
            sealed_rows.push(json_row(args![&workspace_id, kind.as_str(), sealed.nonce, sealed.ciphertext, now]));
            Ok(())
        };
        if let Some(env) = &new.secret_env {
            let plain = serde_json::to_vec(env.expose()).map_err(|e| StoreError::Seal(e.to_string()))?;
            seal(SecretKind::SecretEnv, &plain)?;
        }
        if let Some(token) = &new.capture_token {
            seal(SecretKind::CaptureToken, token.expose().as_bytes())?;
        }
        if let Some(env) = new.broker.as_ref().and_then(|b| b.env.as_ref()) {
            let plain = serde_json::to_vec(env.expose()).map_err(|e| StoreError::Seal(e.to_string()))?;
            seal(SecretKind::ExecEnv, &plain)?;
        }

        let key_row = new.idempotency.as_ref().map(|idem| {
            json_row(args![
                &new.owner_user_id,
                &idem.key,
                CreateKeyState::Found.as_str(),
                &idem.request_hash,
                &workspace_id,
                &run_id,
                new.launch_id.clone(),
                now,
                now
            ])
        });
        let workspace_row = json_row(args![
            &workspace.id,
            &workspace.owner_user_id,
            &workspace.name,
            &workspace.registry_id,
            &workspace.repository,
            &workspace.tag,
            spec_text.clone(),
            workspace.status.as_str(),
            workspace.desired_state.as_str(),
            &run.id,
            workspace.idempotency_key.clone(),
            workspace.expires_at,
            event_rows.len() as i64,
            workspace.created_at,
            workspace.updated_at
        ]);
        let run_row = json_row(args![
            &run.id,
            &run.workspace_id,
            run.relation.as_str(),
            run.trigger_type.as_str(),
            run.status.as_str(),
            run.launch_id.clone(),
            spec_text,
            run.queued_at,
            run.created_at,
            run.updated_at,
            run.linked_at
        ]);
        let job_row = json_row(args![JobKind::Reconcile.as_str(), &workspace_id, now, 0i64, 0i64, 0i64, now, now]);
        let restore_point = new
            .spec
            .capture_session()
            .zip(new.spec.capture_point())
            .map(|(session, point)| (SessionId::from(session), point));
        let alone = (new.broker.is_some() || restore_point.is_some()).then(|| group_commit::AloneParts {
            broker: new.broker.clone(),
            restore_point,
            expires_at,
        });

        // What is written, answered without reading it back.
        let prepared = PreparedCreate {
            owner: new.owner_user_id,
            workspace_id,
            key: new.idempotency,
            key_row,
            workspace_row,
            run_row,
            sealed_rows,
            event_rows,
            job_row,
            now,
            alone,
        };
        Ok((prepared, WorkspaceView { workspace, current_run: Some(run) }))
    }

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

    async fn replay(&self, owner: &OwnerId, workspace_id: &WorkspaceId) -> Result<CreateOutcome, StoreError> {
        let view = self
            .get_workspace(owner, workspace_id)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("idempotency key names missing workspace {workspace_id}")))?;
        Ok(CreateOutcome::Replayed(view))
    }

    /// The owner's workspace with its current run; `None` when it does not
    /// exist or belongs to someone else.
    pub async fn get_workspace(
        &self,
        owner: &OwnerId,
        workspace_id: &WorkspaceId,
    ) -> Result<Option<WorkspaceView>, StoreError> {
        let row = self
            .pool
            .fetch_optional(
                &format!("SELECT {WORKSPACE_COLUMNS} FROM workspaces WHERE id = $1 AND owner_user_id = $2"),
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
        let mut sql = format!("SELECT {WORKSPACE_COLUMNS} FROM workspaces WHERE 1 = 1");
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
        let mut sql = format!("SELECT {WORKSPACE_COLUMNS} FROM workspaces WHERE owner_user_id = $1");
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
            .fetch_optional("SELECT owner_user_id FROM workspaces WHERE id = $1", args![workspace_id])
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
                "SELECT id FROM workspaces WHERE id = $1 AND owner_user_id = $2",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;

    /// A cancel that lands between a create's read of its key and its
    /// commit wins: the create answers `CreateCancelled` and nothing of it
    /// is stored.
    #[tokio::test]
    async fn a_cancel_between_read_and_commit_stops_the_create() {
        for db in testing::databases().await {
            let store = testing::open(&db).await;
            let idem = Idempotency { key: "in-flight".into(), request_hash: "h".into() };
            let new = NewWorkspace {
                owner_user_id: "alice".into(),
                name: "dev".into(),
                registry_id: "local".into(),
                repository: "sluice/busybox".into(),
                tag: "1".into(),
                spec: crate::spec::Spec::default(),
                ttl_ms: None,
                launch_id: None,
                idempotency: Some(idem.clone()),
                secret_env: None,
                capture_token: None,
                broker: None,
            };
            let (prepared, _) = store.prepare_create(new).unwrap();
            assert_eq!(
                store
                    .cancel_create_key(&OwnerId::from("alice"), &IdempotencyKey::from("in-flight"))
                    .await
                    .unwrap()
                    .state,
                CreateKeyState::Cancelled
            );
            let committed = store.creates.submit(&store.pool, prepared).await;
            assert!(matches!(committed, Err(StoreError::CreateCancelled)), "{}", db.label);
            let all = store
                .list_workspaces(&OwnerId::from("alice"), &WorkspaceFilter { limit: 10, ..Default::default() })
                .await
                .unwrap();
            assert!(all.is_empty(), "{}: the cancelled create left a workspace", db.label);
            assert!(!store.any_column_contains("sluice/busybox").await.unwrap(), "{}: nothing of it remains", db.label);
        }
    }
}
