//! Group commit of workspace creates. Concurrent creates share one
//! transaction: one committer takes whatever creates are waiting, writes
//! them with one statement per table, commits once, and only then answers
//! each. A create that cannot share (an execution broker's, which counts
//! the instance's live workspaces first; one restoring a capture, which
//! pins it) commits alone, through the same committer, so SQLite's writer
//! lock is never fought over by creates.
//!
//! A batch that fails for any reason but the database being unavailable is
//! retried one create at a time, so one bad create cannot fail the others.

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::keys;
use super::keys::Idempotency;
use crate::db::{Column, GuardedRows, HeldConnection, Pool, Tx, args};
use crate::error::StoreError;
use crate::model::CreateKeyState;
use sluice_domain::ids::{IdempotencyKey, OwnerId, SessionId, WorkspaceId};

/// The most creates one transaction carries.
const MAX_BATCH: usize = 64;

/// One create's rows, prepared (ids taken, secrets sealed, everything
/// checked) before it reaches the committer.
#[derive(Debug)]
pub(crate) struct PreparedCreate {
    pub owner: OwnerId,
    pub workspace_id: WorkspaceId,
    pub key: Option<Idempotency>,
    pub key_row: Option<Value>,
    pub workspace_row: Value,
    pub run_row: Value,
    pub sealed_rows: Vec<Value>,
    pub event_rows: Vec<Value>,
    pub job_row: Value,
    pub now: i64,
    pub alone: Option<AloneParts>,
}

/// What only a create committed alone carries.
#[derive(Debug, Default)]
pub(crate) struct AloneParts {
    pub broker: Option<crate::broker::NewBrokerWorkspace>,
    pub restore_point: Option<(SessionId, u64)>,
    pub expires_at: Option<i64>,
}

/// What the committer did with a create.
#[derive(Debug)]
pub(crate) enum Written {
    Created,
    /// Its key was already taken by the create that made this workspace.
    Replay(WorkspaceId),
}

/// What the committer answers a create: written, or its key was there
/// before it (the create comes back, for its caller to settle).
#[derive(Debug)]
enum Committed {
    Written(Written),
    KeyExisted(Box<PreparedCreate>),
}

pub(crate) const KEY_COLUMNS: &[Column] = &[
    Column::Text("owner_user_id"),
    Column::Text("idempotency_key"),
    Column::Text("state"),
    Column::Text("request_hash"),
    Column::Text("workspace_id"),
    Column::Text("run_id"),
    Column::Text("launch_id"),
    Column::Int("created_at"),
    Column::Int("updated_at"),
];
pub(crate) const WORKSPACE_COLUMNS: &[Column] = &[
    Column::Text("id"),
    Column::Text("owner_user_id"),
    Column::Text("name"),
    Column::Text("registry_id"),
    Column::Text("repository"),
    Column::Text("tag"),
    Column::Text("spec"),
    Column::Text("status"),
    Column::Text("desired_state"),
    Column::Text("current_run_id"),
    Column::Text("idempotency_key"),
    Column::Int("expires_at"),
    Column::Int("event_seq"),
    Column::Int("created_at"),
    Column::Int("updated_at"),
];
pub(crate) const RUN_COLUMNS: &[Column] = &[
    Column::Text("id"),
    Column::Text("workspace_id"),
    Column::Text("relation"),
    Column::Text("trigger_type"),
    Column::Text("status"),
    Column::Text("launch_id"),
    Column::Text("spec"),
    Column::Int("queued_at"),
    Column::Int("created_at"),
    Column::Int("updated_at"),
    Column::Int("linked_at"),
];
pub(crate) const SEALED_COLUMNS: &[Column] = &[
    Column::Text("workspace_id"),
    Column::Text("kind"),
    Column::Bytes("nonce"),
    Column::Bytes("ciphertext"),
    Column::Int("created_at"),
];
pub(crate) const EVENT_COLUMNS: &[Column] = &[
    Column::Text("id"),
    Column::Text("workspace_id"),
    Column::Int("seq"),
    Column::Text("attempt_id"),
    Column::Text("type"),
    Column::Int("occurred_at"),
    Column::Text("message"),
    Column::Text("data"),
];
pub(crate) const JOB_COLUMNS: &[Column] = &[
    Column::Text("kind"),
    Column::Text("subject"),
    Column::Int("run_at"),
    Column::Int("nudge"),
    Column::Int("generation"),
    Column::Int("attempts"),
    Column::Int("created_at"),
    Column::Int("updated_at"),
];

struct Queued {
    create: PreparedCreate,
    reply: oneshot::Sender<Result<Committed, StoreError>>,
}

/// The way into the committer.
#[derive(Debug, Clone)]
pub(crate) struct CreateQueue {
    sender: mpsc::Sender<Queued>,
}

impl std::fmt::Debug for Queued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queued").field("workspace", &self.create.workspace_id).finish()
    }
}

impl CreateQueue {
    /// Starts the committer on the current runtime. It ends when the last
    /// queue handle is dropped.
    pub(crate) fn start(pool: Pool) -> CreateQueue {
        let (sender, receiver) = mpsc::channel(1024);
        tokio::spawn(commit_loop(pool, receiver));
        CreateQueue { sender }
    }

    /// Hands a create to the committer and waits until its batch is
    /// durable. A create whose key was there before it is answered from
    /// that key here, off the committer: a replay, a refusal, or (a key an
    /// earlier release left `pending`) the create committed alone.
    pub(crate) async fn submit(&self, pool: &Pool, create: PreparedCreate) -> Result<Written, StoreError> {
        let create = match self.commit_one(pool, create).await? {
            Committed::Written(written) => return Ok(written),
            Committed::KeyExisted(create) => *create,
        };
        let idem = create.key.as_ref().expect("only a keyed create finds its key there");
        match keys::settled(pool, &create.owner, idem).await? {
            Some(keys::Claim::Replay(id)) => Ok(Written::Replay(id)),
            Some(keys::Claim::Proceed) => unreachable!("a settled key is never pending"),
            None => {
                let alone = PreparedCreate { alone: Some(create.alone.unwrap_or_default()), ..create };
                match self.commit_one(pool, alone).await? {
                    Committed::Written(written) => Ok(written),
                    Committed::KeyExisted(_) => Err(StoreError::Corrupt("a pending key could not be taken".into())),
                }
            }
        }
    }

    async fn commit_one(&self, pool: &Pool, create: PreparedCreate) -> Result<Committed, StoreError> {
        let (reply, answer) = oneshot::channel();
        match self.sender.send(Queued { create, reply }).await {
            Ok(()) => match answer.await {
                Ok(committed) => committed,
                Err(_) => Err(StoreError::Corrupt("the create committer stopped before it answered".into())),
            },
            // The committer is gone (its runtime ended while this store
            // lives on): the create commits on its own.
            Err(mpsc::error::SendError(queued)) => {
                match commit(pool, &mut HeldConnection::default(), vec![queued.create]).await {
                    Ok(mut outcomes) => outcomes.pop().expect("one outcome per create"),
                    Err((e, _)) => Err(e),
                }
            }
        }
    }
}

async fn commit_loop(pool: Pool, mut receiver: mpsc::Receiver<Queued>) {
    let mut held = HeldConnection::default();
    while let Some(first) = receiver.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match receiver.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let (shared, alone): (Vec<Queued>, Vec<Queued>) = batch.into_iter().partition(|q| q.create.alone.is_none());
        if !shared.is_empty() {
            commit_and_answer(&pool, &mut held, shared).await;
        }
        for queued in alone {
            commit_and_answer(&pool, &mut held, vec![queued]).await;
        }
    }
}

/// Commits `batch` and answers each create; a batch of several that fails
/// is retried one by one.
async fn commit_and_answer(pool: &Pool, held: &mut HeldConnection, batch: Vec<Queued>) {
    let (creates, replies): (Vec<PreparedCreate>, Vec<_>) = batch.into_iter().map(|q| (q.create, q.reply)).unzip();
    let count = creates.len();
    match commit(pool, held, creates).await {
        Ok(outcomes) => {
            for (reply, outcome) in replies.into_iter().zip(outcomes) {
                let _ = reply.send(outcome);
            }
        }
        Err((StoreError::Unavailable(e), _)) if count > 1 => {
            let message = e.to_string();
            for reply in replies {
                let _ = reply.send(Err(StoreError::Unavailable(sqlx::Error::Protocol(message.clone()))));
            }
        }
        Err((e, _)) if count == 1 => {
            let _ = replies.into_iter().next().expect("one create").send(Err(e));
        }
        Err((e, creates)) => {
            tracing::debug!(error = %e, creates = count, "a shared create transaction failed; committing each alone");
            for (create, reply) in creates.into_iter().zip(replies) {
                let outcome = match commit(pool, held, vec![create]).await {
                    Ok(mut outcomes) => outcomes.pop().expect("one outcome per create"),
                    Err((e, _)) => Err(e),
                };
                let _ = reply.send(outcome);
            }
        }
    }
}

/// Writes `creates`; each create's own outcome inside. Creates that share
/// go in one round trip; a create whose key was there already comes back.
/// A failed commit hands its creates back, to be tried again one by one.
async fn commit(
    pool: &Pool,
    held: &mut HeldConnection,
    creates: Vec<PreparedCreate>,
) -> Result<Vec<Result<Committed, StoreError>>, (StoreError, Vec<PreparedCreate>)> {
    if let [create] = creates.as_slice()
        && create.alone.is_some()
    {
        return match commit_alone(pool, create).await {
            Ok(outcome) => Ok(vec![outcome]),
            Err(e) => Err((e, creates)),
        };
    }
    let guarded = |c: &PreparedCreate, row: &Value| {
        let mut row = row.clone();
        if let Value::Array(cells) = &mut row {
            let key = c.key.as_ref().map(|k| k.key.clone());
            cells.push(key.as_ref().map_or(Value::Null, |_| Value::String(c.owner.to_string())));
            cells.push(key.map_or(Value::Null, |k| Value::String(k.into_string())));
        }
        row
    };
    let table = |table, columns, workspace_column, pick: fn(&PreparedCreate) -> Vec<&Value>| GuardedRows {
        table,
        columns,
        workspace_column,
        rows: creates.iter().flat_map(|c| pick(c).into_iter().map(|row| guarded(c, row))).collect(),
    };
    let tables = [
        table("workspaces", WORKSPACE_COLUMNS, 0, |c| vec![&c.workspace_row]),
        table("runs", RUN_COLUMNS, 1, |c| vec![&c.run_row]),
        table("sealed_secrets", SEALED_COLUMNS, 0, |c| c.sealed_rows.iter().collect()),
        table("events", EVENT_COLUMNS, 1, |c| c.event_rows.iter().collect()),
        table("jobs", JOB_COLUMNS, 1, |c| vec![&c.job_row]),
    ];
    // Keys in one order, so two committers never wait on each other's.
    let mut key_rows: Vec<(&OwnerId, &IdempotencyKey, &Value)> =
        creates.iter().filter_map(|c| Some((&c.owner, &c.key.as_ref()?.key, c.key_row.as_ref()?))).collect();
    key_rows.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    let key_rows = key_rows.into_iter().map(|(_, _, row)| row.clone()).collect();
    let took = match pool.insert_guarded(held, KEY_COLUMNS, key_rows, &tables).await {
        Ok(took) => took,
        Err(e) => return Err((e, creates)),
    };
    Ok(creates
        .into_iter()
        .map(|create| match &create.key {
            Some(_) if !took.contains(create.workspace_id.as_str()) => Ok(Committed::KeyExisted(Box::new(create))),
            _ => Ok(Committed::Written(Written::Created)),
        })
        .collect())
}

/// One create in a transaction of its own, statement by statement: what an
/// execution broker's create or a restore needs, and a key left pending.
async fn commit_alone(pool: &Pool, create: &PreparedCreate) -> Result<Result<Committed, StoreError>, StoreError> {
    let mut tx = pool.begin().await?;
    let outcome = claim_key(&mut tx, create).await?;
    if !matches!(outcome, Ok(Written::Created)) {
        return Ok(outcome.map(Committed::Written));
    }
    if let Some(alone) = &create.alone
        && let Some(broker) = &alone.broker
        && let Err(refused) = crate::broker::check_concurrency(&mut tx, broker).await
    {
        // Dropped, the transaction takes the key back with it.
        return Ok(Err(refused));
    }
    tx.insert_rows("workspaces", WORKSPACE_COLUMNS, vec![create.workspace_row.clone()], "").await?;
    tx.insert_rows("runs", RUN_COLUMNS, vec![create.run_row.clone()], "").await?;
    if let Some(alone) = &create.alone {
        if let Some((session, point)) = &alone.restore_point {
            crate::capture::insert_restore_point(&mut tx, &create.workspace_id, session, *point, create.now).await?;
        }
        if let Some(broker) = &alone.broker {
            let expires_at = alone.expires_at.unwrap_or(create.now);
            crate::broker::insert_workspace(&mut tx, &create.workspace_id, broker, expires_at, create.now).await?;
        }
    }
    tx.insert_rows("sealed_secrets", SEALED_COLUMNS, create.sealed_rows.clone(), "").await?;
    tx.insert_rows("events", EVENT_COLUMNS, create.event_rows.clone(), "").await?;
    tx.insert_rows("jobs", JOB_COLUMNS, vec![create.job_row.clone()], "").await?;
    tx.commit().await?;
    Ok(Ok(Committed::Written(Written::Created)))
}

/// Records a create's key as found, inside its transaction; a key that was
/// there already decides the create instead.
async fn claim_key(tx: &mut Tx, create: &PreparedCreate) -> Result<Result<Written, StoreError>, StoreError> {
    let (Some(idem), Some(row)) = (&create.key, &create.key_row) else { return Ok(Ok(Written::Created)) };
    let inserted = tx
        .insert_rows(
            "create_keys",
            KEY_COLUMNS,
            vec![row.clone()],
            "ON CONFLICT (owner_user_id, idempotency_key) DO NOTHING RETURNING workspace_id",
        )
        .await?;
    if inserted.is_empty() { settle_existing_key(tx, create, idem).await } else { Ok(Ok(Written::Created)) }
}

/// A create whose key was there before it: a replay, a refusal, or (a key
/// left `pending` by a create from before creates committed in one
/// transaction) the create that finishes it.
async fn settle_existing_key(
    tx: &mut Tx,
    create: &PreparedCreate,
    idem: &Idempotency,
) -> Result<Result<Written, StoreError>, StoreError> {
    let record = keys::read(tx, &create.owner, &idem.key).await?;
    Ok(match keys::decide(&record, &idem.request_hash) {
        Err(refused) => Err(refused),
        Ok(keys::Claim::Replay(workspace_id)) => Ok(Written::Replay(workspace_id)),
        Ok(keys::Claim::Proceed) => {
            let row = create.key_row.as_ref().expect("a keyed create has its key's row");
            let taken = tx
                .execute(
                    "UPDATE create_keys SET state = $1, workspace_id = $2, run_id = $3, launch_id = $4, updated_at = $5 \
                     WHERE owner_user_id = $6 AND idempotency_key = $7 AND state = $8 AND request_hash = $9",
                    args![
                        CreateKeyState::Found.as_str(),
                        &create.workspace_id,
                        row[5].as_str().map(str::to_owned),
                        row[6].as_str().map(str::to_owned),
                        create.now,
                        &create.owner,
                        &idem.key,
                        CreateKeyState::Pending.as_str(),
                        &idem.request_hash
                    ],
                )
                .await?;
            if taken == 1 {
                Ok(Written::Created)
            } else {
                Err(StoreError::Corrupt("a pending key could not be taken".into()))
            }
        }
    })
}

/// Keys this process saw taken, remembered for an hour: a repeat of a
/// create is then answered without the committer. A found key stays found
/// until it is purged, which is days later at the earliest.
#[derive(Debug, Default)]
pub(crate) struct FoundKeys {
    entries: std::sync::Mutex<std::collections::HashMap<(OwnerId, IdempotencyKey), FoundKey>>,
}

#[derive(Debug, Clone)]
struct FoundKey {
    request_hash: String,
    workspace_id: WorkspaceId,
    seen: std::time::Instant,
}

const FOUND_KEYS_KEPT: std::time::Duration = std::time::Duration::from_secs(3600);
const FOUND_KEYS_MAX: usize = 16_384;

impl FoundKeys {
    /// What a create with this key decides from memory, if it is known.
    pub(crate) fn decide(&self, owner: &OwnerId, idem: &Idempotency) -> Option<Result<WorkspaceId, StoreError>> {
        let entries = self.entries.lock().expect("found keys");
        let found = entries.get(&(owner.clone(), idem.key.clone()))?;
        if found.seen.elapsed() > FOUND_KEYS_KEPT {
            return None;
        }
        Some(if found.request_hash == idem.request_hash {
            Ok(found.workspace_id.clone())
        } else {
            Err(StoreError::IdempotencyKeyReused)
        })
    }

    pub(crate) fn forget_all(&self) {
        self.entries.lock().expect("found keys").clear();
    }

    pub(crate) fn remember(&self, owner: &OwnerId, idem: &Idempotency, workspace_id: &WorkspaceId) {
        let mut entries = self.entries.lock().expect("found keys");
        if entries.len() >= FOUND_KEYS_MAX {
            entries.clear();
        }
        let found = FoundKey {
            request_hash: idem.request_hash.clone(),
            workspace_id: workspace_id.clone(),
            seen: std::time::Instant::now(),
        };
        entries.insert((owner.clone(), idem.key.clone()), found);
    }
}
