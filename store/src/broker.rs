//! The execution broker's durable state: client instances, their tokens
//! (leases) with the scope each was issued with, rotation, revocation and
//! expiry, and admission. A token is kept only as a keyed hash.

use serde::{Deserialize, Serialize};

use crate::Store;
use crate::clock::{new_id, now_ms};
use crate::db::{DbRow, args};
use crate::error::StoreError;
use crate::model::{ConflictCode, DesiredState, TerminationReason, WorkspaceStatus};
use crate::seal::{Secret, new_token};
use crate::transitions::Subject;
use sluice_domain::broker::{self, Admitted};
use sluice_domain::ids::{RunId, WorkspaceId};
use sluice_domain::transition::{Change, Request};

/// The prefix of every broker token, so secret scanners can find leaked ones.
pub const TOKEN_PREFIX: &str = "slbrk_";

/// What a token lets its instance do, fixed when it is issued.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerScope {
    pub max_concurrent_workspaces: u64,
    /// The default image first.
    pub images: Vec<String>,
    pub max_lifetime_seconds: u64,
    pub idle_timeout_seconds: u64,
    pub max_snapshots: u64,
    pub snapshot_ttl_seconds: u64,
    /// The names a workspace's egress may be allowed to: `None`, any name
    /// (the protocol's `null`); an empty list, none. A token issued before
    /// ceilings existed reads as none.
    #[serde(default = "no_egress")]
    pub egress_ceiling: Option<Vec<String>>,
}

fn no_egress() -> Option<Vec<String>> {
    Some(Vec::new())
}

/// A token's state when presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseState {
    Active,
    /// Rotated, still inside its grace period.
    Superseded,
}

/// The grant a valid token carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerLease {
    pub id: String,
    pub instance: String,
    pub state: LeaseState,
    pub scope: BrokerScope,
    pub expires_at: Option<i64>,
    pub superseded_at: Option<i64>,
}

/// Why a token does not authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseRefusal {
    Unknown,
    Expired,
    Superseded,
    Revoked,
}

/// Whether new work is admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    Open,
    Paused(Option<String>),
    EmergencyStopped(Option<String>),
}

impl Admission {
    pub fn as_str(&self) -> &'static str {
        match self {
            Admission::Open => "open",
            Admission::Paused(_) => "paused",
            Admission::EmergencyStopped(_) => "emergency_stopped",
        }
    }
}

/// The admission target that covers every instance.
pub const EVERY_INSTANCE: &str = "*";

fn token_row_lease(row: &DbRow, now: i64, allow_lapsed: bool) -> Result<Result<BrokerLease, LeaseRefusal>, StoreError> {
    if row.opt_int("revoked_at")?.is_some() {
        return Ok(Err(LeaseRefusal::Revoked));
    }
    let expires_at = row.opt_int("expires_at")?;
    if expires_at.is_some_and(|at| at <= now) {
        return Ok(Err(LeaseRefusal::Expired));
    }
    let superseded_at = row.opt_int("superseded_at")?;
    let state = match (superseded_at, row.opt_int("grace_until")?) {
        (None, _) => LeaseState::Active,
        (Some(_), Some(until)) if until > now || allow_lapsed => LeaseState::Superseded,
        (Some(_), _) => return Ok(Err(LeaseRefusal::Superseded)),
    };
    let scope = serde_json::from_str(&row.text("scope")?)
        .map_err(|_| StoreError::Corrupt("broker_tokens.scope is not a scope".into()))?;
    Ok(Ok(BrokerLease {
        id: row.text("id")?,
        instance: row.text("instance")?,
        state,
        scope,
        expires_at,
        superseded_at,
    }))
}

impl Store {
    fn broker_token_hash(&self, token: &str) -> String {
        self.sealer().keyed_digest(format!("broker-token/{token}").as_bytes())
    }

    async fn insert_broker_token(
        &self,
        tx: &mut crate::db::Tx,
        instance: &str,
        scope: &BrokerScope,
        ttl_seconds: Option<u64>,
        now: i64,
    ) -> Result<Secret<String>, StoreError> {
        let token = Secret::new(format!("{TOKEN_PREFIX}{}", new_token().expose()));
        let scope = serde_json::to_string(scope).expect("a scope serializes");
        tx.execute(
            "INSERT INTO broker_tokens (id, instance, token_hash, scope, issued_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
            args![
                new_id("lse"),
                instance,
                self.broker_token_hash(token.expose()),
                scope,
                now,
                ttl_seconds.map(|t| now + (t as i64) * 1000)
            ],
        )
        .await?;
        Ok(token)
    }

    /// Issues a token for `instance` (made on first use) with `scope`. An
    /// instance that has tokens already gets another one beside them.
    pub async fn issue_broker_token(
        &self,
        instance: &str,
        scope: &BrokerScope,
        ttl_seconds: Option<u64>,
    ) -> Result<Secret<String>, StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        tx.execute(
            "INSERT INTO broker_instances (name, created_at) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
            args![instance, now],
        )
        .await?;
        let token = self.insert_broker_token(&mut tx, instance, scope, ttl_seconds, now).await?;
        tx.commit().await?;
        Ok(token)
    }

    /// Rotates `instance`'s token: every token it has that still works is
    /// superseded (working on for `grace_seconds`), and a new one with the
    /// newest token's scope and lifetime is issued. `None`: no such
    /// instance, or nothing of it to rotate.
    pub async fn rotate_broker_token(
        &self,
        instance: &str,
        grace_seconds: u64,
    ) -> Result<Option<Secret<String>>, StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let Some(newest) = tx
            .fetch_optional(
                "SELECT scope, issued_at, expires_at FROM broker_tokens WHERE instance = $1 AND revoked_at IS NULL \
                 ORDER BY issued_at DESC, id DESC LIMIT 1",
                args![instance],
            )
            .await?
        else {
            return Ok(None);
        };
        let scope: BrokerScope = serde_json::from_str(&newest.text("scope")?)
            .map_err(|_| StoreError::Corrupt("broker_tokens.scope is not a scope".into()))?;
        let issued_at = newest.int("issued_at")?;
        let ttl = newest.opt_int("expires_at")?.map(|at| ((at - issued_at) / 1000).max(1) as u64);
        tx.execute(
            "UPDATE broker_tokens SET superseded_at = $1, grace_until = $2 WHERE instance = $3 \
             AND superseded_at IS NULL AND revoked_at IS NULL",
            args![now, now + (grace_seconds as i64) * 1000, instance],
        )
        .await?;
        let token = self.insert_broker_token(&mut tx, instance, &scope, ttl, now).await?;
        tx.commit().await?;
        Ok(Some(token))
    }

    /// Revokes every token of `instance` at once. Answers how many.
    pub async fn revoke_broker_tokens(&self, instance: &str) -> Result<u64, StoreError> {
        self.pool
            .execute(
                "UPDATE broker_tokens SET revoked_at = $1 WHERE instance = $2 AND revoked_at IS NULL",
                args![now_ms(), instance],
            )
            .await
    }

    /// The lease `token` carries, or why it carries none.
    pub async fn broker_lease(&self, token: &str) -> Result<Result<BrokerLease, LeaseRefusal>, StoreError> {
        self.broker_lease_with(token, false).await
    }

    /// As [`Store::broker_lease`], but a superseded token past its grace
    /// still names its instance (a release is never refused for that).
    pub async fn broker_lease_for_release(&self, token: &str) -> Result<Result<BrokerLease, LeaseRefusal>, StoreError> {
        self.broker_lease_with(token, true).await
    }

    async fn broker_lease_with(
        &self,
        token: &str,
        allow_lapsed: bool,
    ) -> Result<Result<BrokerLease, LeaseRefusal>, StoreError> {
        let row = self
            .pool
            .fetch_optional(
                "SELECT id, instance, scope, expires_at, superseded_at, grace_until, revoked_at FROM broker_tokens \
                 WHERE token_hash = $1",
                args![self.broker_token_hash(token)],
            )
            .await?;
        match row {
            Some(row) => token_row_lease(&row, now_ms(), allow_lapsed),
            None => Ok(Err(LeaseRefusal::Unknown)),
        }
    }

    /// Sets admission for `instance` (or every instance).
    pub async fn set_broker_admission(&self, target: &str, admission: &Admission) -> Result<(), StoreError> {
        let reason = match admission {
            Admission::Open => None,
            Admission::Paused(r) | Admission::EmergencyStopped(r) => r.clone(),
        };
        self.pool
            .execute(
                "INSERT INTO broker_admission (target, state, reason, updated_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (target) DO UPDATE SET state = $2, reason = $3, updated_at = $4",
                args![target, admission.as_str(), reason, now_ms()],
            )
            .await?;
        Ok(())
    }

    /// Admission for `instance`: an emergency stop of every instance wins,
    /// then the instance's own state, then a pause of every instance.
    pub async fn broker_admission(&self, instance: &str) -> Result<Admission, StoreError> {
        let rows = self
            .pool
            .fetch_all(
                "SELECT target, state, reason FROM broker_admission WHERE target = $1 OR target = $2",
                args![instance, EVERY_INSTANCE],
            )
            .await?;
        let mut every = Admission::Open;
        let mut own = Admission::Open;
        for row in rows {
            let reason = row.opt_text("reason")?;
            let state = match row.text("state")?.as_str() {
                "open" => Admission::Open,
                "paused" => Admission::Paused(reason),
                "emergency_stopped" => Admission::EmergencyStopped(reason),
                other => return Err(StoreError::Corrupt(format!("broker admission state {other:?}"))),
            };
            if row.text("target")? == EVERY_INSTANCE {
                every = state;
            } else {
                own = state;
            }
        }
        Ok(match (every, own) {
            (stopped @ Admission::EmergencyStopped(_), _) => stopped,
            (_, own @ (Admission::EmergencyStopped(_) | Admission::Paused(_))) => own,
            (every, Admission::Open) => every,
        })
    }
}

/// A broker acquisition, as its create writes it.
#[derive(Debug, Clone)]
pub struct NewBrokerWorkspace {
    pub instance: String,
    pub label: String,
    pub size: String,
    pub image: String,
    pub agent: Option<String>,
    pub attributed_run: Option<String>,
    pub idle_timeout_seconds: u64,
    /// The instance's concurrency limit.
    pub max_live: u64,
    /// The acquisition's `env`, for every process of the executor: sealed
    /// until the executor has it.
    pub env: Option<Secret<std::collections::BTreeMap<String, String>>>,
    /// A warm start: the snapshot restored before the workspace runs.
    pub restore_snapshot: Option<String>,
}

/// A broker workspace with its sluice workspace's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerWorkspace {
    pub workspace_id: WorkspaceId,
    pub instance: String,
    pub size: String,
    pub image: String,
    pub idle_timeout_seconds: u64,
    pub created_at: i64,
    pub expires_at: i64,
    pub last_used_at: i64,
    pub status: crate::model::WorkspaceStatus,
    pub desired: crate::model::DesiredState,
    pub finished_at: Option<i64>,
    pub termination_reason: Option<TerminationReason>,
    /// The current run of its sluice workspace, and that run's control
    /// endpoint once it launched.
    pub current_run_id: Option<RunId>,
    pub endpoint: Option<String>,
}

/// The condition on `w` (workspaces) of one that holds, or is about to hold,
/// an executor: wanted running and in none of the statuses a workspace
/// ends in. Its placeholders start at `$first`; [`live_args`] binds them.
fn live_condition(first: usize) -> String {
    let finished: Vec<String> = (1..=WorkspaceStatus::FINISHED.len()).map(|i| format!("${}", first + i)).collect();
    format!("w.desired_state = ${first} AND w.status NOT IN ({})", finished.join(", "))
}

fn live_args() -> Vec<crate::db::Arg> {
    let mut bound = args![DesiredState::Running.as_str()];
    bound.extend(WorkspaceStatus::FINISHED.iter().flat_map(|s| args![s.as_str()]));
    bound
}

/// Refuses the create when the instance is at its concurrency limit;
/// inside the create's transaction.
pub(crate) async fn check_concurrency(tx: &mut crate::db::Tx, new: &NewBrokerWorkspace) -> Result<(), StoreError> {
    // The instance's row lock makes its creates count one at a time (on
    // PostgreSQL too, where reads would not wait for each other).
    tx.execute("UPDATE broker_instances SET created_at = created_at WHERE name = $1", args![&new.instance]).await?;
    let row = tx
        .fetch_one(
            &format!(
                "SELECT COUNT(*) AS live FROM broker_workspaces b JOIN workspaces w ON w.id = b.workspace_id \
                 WHERE b.instance = $1 AND {}",
                live_condition(2)
            ),
            [args![&new.instance], live_args()].concat(),
        )
        .await?;
    if row.int("live")? as u64 >= new.max_live {
        return Err(StoreError::Conflict {
            message: format!("the instance is at its limit of {} concurrent workspaces", new.max_live),
            code: ConflictCode::ConcurrencyLimit,
        });
    }
    Ok(())
}

pub(crate) async fn insert_workspace(
    tx: &mut crate::db::Tx,
    workspace_id: &WorkspaceId,
    new: &NewBrokerWorkspace,
    expires_at: i64,
    now: i64,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO broker_workspaces (workspace_id, instance, label, size, image, agent, attributed_run, \
         idle_timeout_seconds, created_at, expires_at, last_used_at, restore_snapshot) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $9, $11)",
        args![
            workspace_id,
            &new.instance,
            &new.label,
            &new.size,
            &new.image,
            new.agent.clone(),
            new.attributed_run.clone(),
            new.idle_timeout_seconds as i64,
            now,
            expires_at,
            new.restore_snapshot.clone()
        ],
    )
    .await?;
    Ok(())
}

const BROKER_WORKSPACE_COLUMNS: &str = "b.workspace_id, b.instance, b.size, b.image, b.idle_timeout_seconds, \
    b.created_at, b.expires_at, b.last_used_at, b.termination_reason, w.status, w.desired_state, w.finished_at, \
    w.current_run_id, r.runtime_endpoint";
/// A broker workspace, its sluice workspace and that one's current run.
const BROKER_WORKSPACE_FROM: &str =
    "broker_workspaces b JOIN workspaces w ON w.id = b.workspace_id LEFT JOIN runs r ON r.id = w.current_run_id";

fn broker_workspace_from_row(row: &DbRow) -> Result<BrokerWorkspace, StoreError> {
    Ok(BrokerWorkspace {
        workspace_id: row.id("workspace_id")?,
        instance: row.text("instance")?,
        size: row.text("size")?,
        image: row.text("image")?,
        idle_timeout_seconds: row.int("idle_timeout_seconds")? as u64,
        created_at: row.int("created_at")?,
        expires_at: row.int("expires_at")?,
        last_used_at: row.int("last_used_at")?,
        status: row.parsed("status")?,
        desired: row.parsed("desired_state")?,
        finished_at: row.opt_int("finished_at")?,
        termination_reason: row.opt_parsed("termination_reason")?,
        current_run_id: row.opt_id("current_run_id")?,
        endpoint: row.opt_text("runtime_endpoint")?,
    })
}

impl Store {
    /// The instance's workspace; `None` for an unknown id and for another
    /// instance's alike.
    pub async fn broker_workspace(
        &self,
        instance: &str,
        id: &WorkspaceId,
    ) -> Result<Option<BrokerWorkspace>, StoreError> {
        self.pool
            .fetch_optional(
                &format!(
                    "SELECT {BROKER_WORKSPACE_COLUMNS} FROM {BROKER_WORKSPACE_FROM} \
                     WHERE b.instance = $1 AND b.workspace_id = $2"
                ),
                args![instance, id],
            )
            .await?
            .map(|r| broker_workspace_from_row(&r))
            .transpose()
    }

    /// The instance's workspaces, oldest first, after `after` (a cursor:
    /// the last id of the page before); `live` only those not ended.
    pub async fn list_broker_workspaces(
        &self,
        instance: &str,
        live: bool,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<BrokerWorkspace>, StoreError> {
        // The status half of the live condition: a release (desired stopped)
        // still lists until the workspace has ended.
        let (live, ended) =
            if live { (" AND w.status NOT IN ($4, $5, $6)", live_args().split_off(1)) } else { ("", Vec::new()) };
        self.pool
            .fetch_all(
                &format!(
                    "SELECT {BROKER_WORKSPACE_COLUMNS} FROM {BROKER_WORKSPACE_FROM} \
                     WHERE b.instance = $1 AND b.workspace_id > $2{live} ORDER BY b.workspace_id LIMIT $3"
                ),
                [args![instance, after.unwrap_or(""), limit], ended].concat(),
            )
            .await?
            .iter()
            .map(broker_workspace_from_row)
            .collect()
    }

    /// Ends the broker workspaces nothing may use any more: idle past their
    /// timeout, of an instance whose every token was revoked, or of a
    /// paused or stopped instance. Answers each with its reason.
    pub async fn reap_broker_workspaces(
        &self,
        now: i64,
        limit: i64,
    ) -> Result<Vec<(WorkspaceId, TerminationReason)>, StoreError> {
        let rows = self
            .pool
            .fetch_all(
                &format!(
                    "SELECT b.workspace_id, b.instance, b.last_used_at, b.idle_timeout_seconds, \
                     (SELECT COUNT(*) FROM broker_tokens t WHERE t.instance = b.instance AND t.revoked_at IS NULL) \
                     AS unrevoked FROM broker_workspaces b JOIN workspaces w ON w.id = b.workspace_id \
                     WHERE {} ORDER BY b.workspace_id LIMIT $1",
                    live_condition(2)
                ),
                [args![limit], live_args()].concat(),
            )
            .await?;
        let mut ended = Vec::new();
        for row in rows {
            let id: WorkspaceId = row.id("workspace_id")?;
            let instance = row.text("instance")?;
            let idle_at = row.int("last_used_at")? + row.int("idle_timeout_seconds")? * 1000;
            let tokens_left = row.int("unrevoked")? > 0;
            let admitted = if tokens_left {
                match self.broker_admission(&instance).await? {
                    Admission::EmergencyStopped(_) => Admitted::EmergencyStopped,
                    Admission::Paused(_) => Admitted::Paused,
                    Admission::Open => Admitted::Open,
                }
            } else {
                // A lease with no token left ends whatever its admission.
                Admitted::Open
            };
            if let Some(reason) = broker::reaped(tokens_left, admitted, now >= idle_at) {
                self.end_broker_workspace(&id, reason).await?;
                ended.push((id, reason));
            }
        }
        Ok(ended)
    }

    /// A broker workspace's hard end (Unix ms) and idle timeout (seconds).
    pub async fn broker_bounds(&self, workspace_id: &WorkspaceId) -> Result<Option<(i64, u64)>, StoreError> {
        self.pool
            .fetch_optional(
                "SELECT expires_at, idle_timeout_seconds FROM broker_workspaces WHERE workspace_id = $1",
                args![workspace_id],
            )
            .await?
            .map(|row| Ok((row.int("expires_at")?, row.int("idle_timeout_seconds")? as u64)))
            .transpose()
    }

    /// Records a use of the workspace (for its idle timeout).
    pub async fn touch_broker_workspace(&self, id: &WorkspaceId) -> Result<(), StoreError> {
        self.pool
            .execute("UPDATE broker_workspaces SET last_used_at = $1 WHERE workspace_id = $2", args![now_ms(), id])
            .await?;
        Ok(())
    }

    /// Ends a broker workspace for `reason` (released, expired, idle, …):
    /// its sluice workspace is stopped through the transition like any stop
    /// (`broker: REASON` asked it), in the transaction that records the
    /// reason. The first reason stays.
    pub async fn end_broker_workspace(&self, id: &WorkspaceId, reason: TerminationReason) -> Result<(), StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        tx.execute(
            "UPDATE broker_workspaces SET termination_reason = COALESCE(termination_reason, $1) WHERE workspace_id = $2",
            args![reason.as_str(), id],
        )
        .await?;
        let end = Request::End { by: format!("broker: {reason}") };
        self.apply(&mut tx, Subject::Workspace(id), Change::Request(end), now).await?;
        tx.commit().await
    }
}
