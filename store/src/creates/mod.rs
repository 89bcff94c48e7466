//! Creating a workspace, idempotently: what a create writes (prepared
//! here, its rows from the domain's `transition::create`), the key records
//! that make it happen at most once per (owner, key) ([`keys`]), and the
//! committer that writes concurrent creates in one transaction
//! ([`group_commit`]).

pub(crate) mod group_commit;
pub(crate) mod keys;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::Store;
use crate::clock::{new_id, now_ms};
use crate::db::{args, json_row};
use crate::error::StoreError;
use crate::model::*;
use crate::seal::Secret;
use group_commit::PreparedCreate;
pub use keys::Idempotency;
use sluice_domain::ids::{LaunchId, OwnerId, RunId, SessionId, WorkspaceId};
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

    async fn replay(&self, owner: &OwnerId, workspace_id: &WorkspaceId) -> Result<CreateOutcome, StoreError> {
        let view = self
            .get_workspace_ever(owner, workspace_id)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("idempotency key names missing workspace {workspace_id}")))?;
        Ok(CreateOutcome::Replayed(view))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorkspaceFilter;
    use crate::testing;
    use sluice_domain::ids::IdempotencyKey;

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
