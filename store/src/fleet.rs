//! The fleet as stored: workers' memberships and heartbeats, the hosts they
//! run executors on (cordoned, unreachable, forgotten), and the placement
//! of a new executor on a host. Which host is chosen, and when a host is
//! unreachable, is decided by [`sluice_domain::fleet`]; this persists it.

use sluice_domain::fleet::{HostLoad, WorkerHealth, availability, choose_host};

use crate::Store;
use crate::clock::now_ms;
use crate::db::{DbRow, Tx, args};
use crate::error::StoreError;
use crate::jobs::{Lease, begin_fenced, enqueue};
use crate::model::{ConflictCode, DesiredState, HostState, JobKind, WorkspaceStatus};
use crate::transitions::Subject;
use sluice_domain::ids::{OwnerId, RunId, WorkerId, WorkspaceId};
use sluice_domain::transition::{Change, Outcome};

/// What a worker declares of itself when it joins and on every heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerMember {
    /// Unique to the worker process (its lease-owner name).
    pub id: WorkerId,
    /// The host its executors run on; workers of one host share its data
    /// directory, so any of them can drive its executors.
    pub host: String,
    /// The runtime adapter it drives (`local`, `docker`).
    pub runtime: String,
    /// How many executors its host may hold (`None`: no limit).
    pub capacity: Option<i64>,
    /// Where the rest of sluice reaches it (its internal API), if it serves one.
    pub internal_url: Option<String>,
    pub version: String,
    /// Its host's warm pool, as its runtime last tended it.
    pub warm_pool: Vec<PoolLevel>,
    /// Its host's image cache, as its runtime last listed it.
    pub images: Vec<HostImage>,
    /// What it builds template images with (`None`: it cannot build).
    pub builder: Option<String>,
}

/// An image in a host's cache.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostImage {
    /// The names it was pulled or imported as (`registryId/repository:tag`).
    pub names: Vec<String>,
    /// Its manifest's digest.
    pub digest: String,
    /// Bytes on the host: its layers as fetched and its unpacked tree.
    pub size_bytes: u64,
    pub layers: u32,
    /// Of its layers, how many another cached image shares.
    pub shared_layers: u32,
    /// When an executor last started on it (Unix ms).
    pub last_used_at: i64,
    /// Executors on the host that run on it now (retained ones too).
    pub executors: u32,
}

/// One image's warm pool on a host.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PoolLevel {
    /// `REPOSITORY:TAG`, as creates name it.
    pub image: String,
    /// How many it keeps.
    pub target: u32,
    /// Started and answering as pooled: ready to be taken.
    pub idle: u32,
    /// Started, not answering yet.
    pub starting: u32,
}

/// A registered worker, as operators see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerRecord {
    pub member: WorkerMember,
    pub started_at: i64,
    pub heartbeat_at: i64,
    pub health: WorkerHealth,
}

/// A host, as operators see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRecord {
    pub load: HostLoad,
    pub state_changed_at: i64,
    pub last_seen_at: i64,
    /// Who cordoned it and when.
    pub cordoned: Option<(String, i64)>,
    /// Who declared it lost and when.
    pub forgotten: Option<(String, i64)>,
}

/// Where a run's executor goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// On the asking worker's host.
    Here,
    /// On another host: a worker of it launches it.
    Elsewhere(String),
    /// No host has room (or none takes new work): try again later.
    NoRoom,
}

/// The executors a host holds: placed there, and not removed from its
/// runtime (a placed run not launched yet counts, a retained one too).
/// `queued` names the parameter that holds the queued status.
fn host_load(queued: &str) -> String {
    format!(
        "SELECT COUNT(*) FROM runs r WHERE r.host = h.name AND r.runtime_removed_at IS NULL \
         AND (r.runtime_adapter IS NOT NULL OR r.status = {queued})"
    )
}

/// A host's columns; `$1` is now and `queued` the parameter that holds the
/// queued status.
fn host_columns(queued: &str) -> String {
    format!(
        "h.name, h.state, h.state_changed_at, h.last_seen_at, h.cordoned_at, h.cordoned_by, h.forgotten_at, \
         h.forgotten_by, \
         (SELECT COUNT(*) FROM workers w WHERE w.host = h.name AND w.fresh_until >= $1) AS live_workers, \
         (SELECT CASE WHEN COUNT(*) > COUNT(w.capacity) THEN NULL ELSE MAX(w.capacity) END FROM workers w \
           WHERE w.host = h.name AND w.fresh_until >= $1) AS capacity, \
         ({}) AS load",
        host_load(queued)
    )
}

fn host_from_row(row: &DbRow) -> Result<HostRecord, StoreError> {
    let who_when = |who: &str, when: &str| -> Result<Option<(String, i64)>, StoreError> {
        Ok(row.opt_int(when)?.map(|at| (row.opt_text(who).ok().flatten().unwrap_or_default(), at)))
    };
    let cordoned = who_when("cordoned_by", "cordoned_at")?;
    Ok(HostRecord {
        load: HostLoad {
            name: row.text("name")?,
            state: row.parsed("state")?,
            cordoned: cordoned.is_some(),
            live_workers: row.int("live_workers")?,
            capacity: row.opt_int("capacity")?,
            load: row.int("load")?,
        },
        state_changed_at: row.int("state_changed_at")?,
        last_seen_at: row.int("last_seen_at")?,
        cordoned,
        forgotten: who_when("forgotten_by", "forgotten_at")?,
    })
}

/// The runs with an executor on `host`'s runtime.
async fn live_runs_on(tx: &mut Tx, host: &str) -> Result<Vec<RunId>, StoreError> {
    let rows = tx
        .fetch_all(
            "SELECT id FROM runs WHERE host = $1 AND runtime_adapter IS NOT NULL AND runtime_removed_at IS NULL \
             ORDER BY created_at, id",
            args![host],
        )
        .await?;
    rows.iter().map(|r| r.id("id")).collect()
}

async fn hosts_in(tx: &mut Tx, now: i64) -> Result<Vec<HostRecord>, StoreError> {
    let sql = format!("SELECT {} FROM hosts h ORDER BY h.name", host_columns("$2"));
    tx.fetch_all(&sql, args![now, WorkspaceStatus::Queued.as_str()]).await?.iter().map(host_from_row).collect()
}

impl Store {
    /// Joins the fleet, or beats: the worker's row says it is alive until
    /// `fresh_for_ms` from now, and its host was seen now. A host seen for
    /// the first time is `up`.
    pub async fn beat(&self, member: &WorkerMember, fresh_for_ms: i64) -> Result<(), StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        tx.execute(
            "INSERT INTO workers (id, host, runtime, capacity, internal_url, version, started_at, heartbeat_at, \
             fresh_until, warm_pool, images, builder) VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10, $11) \
             ON CONFLICT (id) DO UPDATE SET host = excluded.host, runtime = excluded.runtime, \
             capacity = excluded.capacity, internal_url = excluded.internal_url, version = excluded.version, \
             heartbeat_at = excluded.heartbeat_at, fresh_until = excluded.fresh_until, warm_pool = excluded.warm_pool, \
             images = excluded.images, builder = excluded.builder",
            args![
                &member.id,
                &member.host,
                &member.runtime,
                member.capacity,
                member.internal_url.clone(),
                &member.version,
                now,
                now + fresh_for_ms,
                serde_json::to_string(&member.warm_pool).map_err(|e| StoreError::Corrupt(e.to_string()))?,
                serde_json::to_string(&member.images).map_err(|e| StoreError::Corrupt(e.to_string()))?,
                member.builder.clone()
            ],
        )
        .await?;
        tx.execute(
            "INSERT INTO hosts (name, state, state_changed_at, last_seen_at, created_at) VALUES ($1, $2, $3, $3, $3) \
             ON CONFLICT (name) DO UPDATE SET last_seen_at = excluded.last_seen_at",
            args![&member.host, HostState::Up.as_str(), now],
        )
        .await?;
        // A host that was unreachable or lost is back: its workers adopt
        // what still runs there (their reconcile jobs are due already).
        let row = tx.fetch_optional("SELECT state FROM hosts WHERE name = $1", args![&member.host]).await?;
        let state: HostState = row.map(|r| r.parsed("state")).transpose()?.unwrap_or(HostState::Up);
        let came_back = availability(state, now, now, 0) == Some(HostState::Up);
        if came_back {
            tx.execute(
                "UPDATE hosts SET state = $1, state_changed_at = $2, forgotten_at = NULL, forgotten_by = NULL \
                 WHERE name = $3",
                args![HostState::Up.as_str(), now, &member.host],
            )
            .await?;
        }
        tx.commit().await?;
        if came_back {
            tracing::info!(host = %member.host, "host is back");
        }
        Ok(())
    }

    /// Marks every host whose workers have all been silent for `grace_ms`
    /// unreachable, and with it the executors on it: one that may hold
    /// unsaved work is retained, any other fails (see
    /// [`Outcome::HostUnreachable`]). Each host is one transaction, applied
    /// by whichever worker finds it first. Answers the hosts marked.
    pub async fn sweep_unreachable_hosts(&self, grace_ms: i64) -> Result<Vec<String>, StoreError> {
        let now = now_ms();
        let hosts = self.pool.fetch_all("SELECT name, state, last_seen_at FROM hosts ORDER BY name", args![]).await?;
        let mut marked = Vec::new();
        for row in hosts {
            let (host, state, seen): (String, HostState, i64) =
                (row.text("name")?, row.parsed("state")?, row.int("last_seen_at")?);
            if availability(state, seen, now, grace_ms) != Some(HostState::Unreachable) {
                continue;
            }
            // Only as read: a worker of it that beat since keeps it up.
            let mut tx = self.pool.begin().await?;
            let flipped = tx
                .execute(
                    "UPDATE hosts SET state = $1, state_changed_at = $2 WHERE name = $3 AND state = $4 \
                     AND last_seen_at = $5",
                    args![HostState::Unreachable.as_str(), now, &host, state.as_str(), seen],
                )
                .await?;
            if flipped == 0 {
                continue;
            }
            let outcome = Outcome::HostUnreachable { host: host.clone() };
            let runs = live_runs_on(&mut tx, &host).await?;
            for run_id in &runs {
                self.apply(&mut tx, Subject::Run(run_id), Change::Outcome(outcome.clone()), now).await?;
            }
            tx.commit().await?;
            tracing::warn!(%host, executors = runs.len(), grace_ms, "host unreachable: its executors are kept");
            marked.push(host);
        }
        Ok(marked)
    }

    /// Declares a host lost, with its executors (an operator's word, `by`
    /// recorded): each is failed as `executor-lost`, its session free for
    /// a new executor, and a launch placed there but not made goes
    /// elsewhere. Answers the executors written off; `None` when the host
    /// is unknown.
    pub async fn forget_host(&self, host: &str, by: &str) -> Result<Option<Vec<RunId>>, StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let known = tx
            .execute(
                "UPDATE hosts SET state = $1, state_changed_at = $2, forgotten_at = $2, forgotten_by = $3 \
                 WHERE name = $4",
                args![HostState::Lost.as_str(), now, by, host],
            )
            .await?;
        if known == 0 {
            return Ok(None);
        }
        let outcome = Outcome::HostLost { host: host.to_owned(), by: by.to_owned() };
        let runs = live_runs_on(&mut tx, host).await?;
        for run_id in &runs {
            self.apply(&mut tx, Subject::Run(run_id), Change::Outcome(outcome.clone()), now).await?;
        }
        let unplaced = tx
            .fetch_all(
                "UPDATE runs SET host = NULL, updated_at = $1 WHERE host = $2 AND runtime_adapter IS NULL \
                 AND status = $3 RETURNING workspace_id",
                args![now, host, WorkspaceStatus::Queued.as_str()],
            )
            .await?;
        for row in unplaced {
            enqueue(&mut tx, JobKind::Reconcile, &row.text("workspace_id")?, now, now).await?;
        }
        tx.commit().await?;
        tracing::warn!(%host, %by, executors = runs.len(), "host declared lost");
        Ok(Some(runs))
    }

    /// Leaves the fleet (an orderly shutdown). Its host stays, with the
    /// executors that outlive the worker.
    pub async fn leave(&self, worker_id: &WorkerId) -> Result<(), StoreError> {
        self.pool.execute("DELETE FROM workers WHERE id = $1", args![worker_id]).await?;
        Ok(())
    }

    /// Every registered worker, by host.
    pub async fn workers(&self) -> Result<Vec<WorkerRecord>, StoreError> {
        let now = now_ms();
        let rows = self
            .pool
            .fetch_all(
                "SELECT id, host, runtime, capacity, internal_url, version, started_at, heartbeat_at, fresh_until, \
                 warm_pool, images, builder FROM workers ORDER BY host, id",
                args![],
            )
            .await?;
        rows.iter()
            .map(|row| {
                Ok(WorkerRecord {
                    member: WorkerMember {
                        id: row.id("id")?,
                        host: row.text("host")?,
                        runtime: row.text("runtime")?,
                        capacity: row.opt_int("capacity")?,
                        internal_url: row.opt_text("internal_url")?,
                        version: row.text("version")?,
                        warm_pool: serde_json::from_str(&row.text("warm_pool")?)
                            .map_err(|_| StoreError::Corrupt("workers.warm_pool".into()))?,
                        images: serde_json::from_str(&row.text("images")?)
                            .map_err(|_| StoreError::Corrupt("workers.images".into()))?,
                        builder: row.opt_text("builder")?,
                    },
                    started_at: row.int("started_at")?,
                    heartbeat_at: row.int("heartbeat_at")?,
                    health: WorkerHealth::of(row.int("fresh_until")?, now),
                })
            })
            .collect()
    }

    /// Where a worker of `host` serves its internal API: the one that beat
    /// last among those whose heartbeat is fresh and that serve one.
    pub async fn worker_address(&self, host: &str) -> Result<Option<String>, StoreError> {
        let row = self
            .pool
            .fetch_optional(
                "SELECT internal_url FROM workers WHERE host = $1 AND internal_url IS NOT NULL AND fresh_until >= $2 \
                 ORDER BY heartbeat_at DESC, id LIMIT 1",
                args![host, now_ms()],
            )
            .await?;
        row.map(|r| r.text("internal_url")).transpose()
    }

    /// Every host known to the fleet, with its load.
    pub async fn hosts(&self) -> Result<Vec<HostRecord>, StoreError> {
        let mut tx = self.pool.begin().await?;
        let hosts = hosts_in(&mut tx, now_ms()).await?;
        tx.commit().await?;
        Ok(hosts)
    }

    /// One host, with its load; `None` when the fleet never knew it.
    pub async fn host(&self, name: &str) -> Result<Option<HostRecord>, StoreError> {
        let sql = format!("SELECT {} FROM hosts h WHERE h.name = $2", host_columns("$3"));
        let row = self.pool.fetch_optional(&sql, args![now_ms(), name, WorkspaceStatus::Queued.as_str()]).await?;
        row.as_ref().map(host_from_row).transpose()
    }

    /// Cordons a host (`by` names who) or, with `None`, lets it take new
    /// executors again. Answers whether the host is known.
    pub async fn cordon(&self, host: &str, by: Option<&str>) -> Result<bool, StoreError> {
        let now = now_ms();
        let changed = match by {
            Some(by) => {
                self.pool
                    .execute(
                        "UPDATE hosts SET cordoned_at = COALESCE(cordoned_at, $1), \
                         cordoned_by = COALESCE(cordoned_by, $2) WHERE name = $3",
                        args![now, by, host],
                    )
                    .await?
            }
            None => {
                self.pool
                    .execute("UPDATE hosts SET cordoned_at = NULL, cordoned_by = NULL WHERE name = $1", args![host])
                    .await?
            }
        };
        Ok(changed == 1)
    }

    /// The live workspaces whose current executor is on `host`, as (owner,
    /// workspace id): what draining the host stops.
    pub async fn workspaces_on_host(&self, host: &str) -> Result<Vec<(OwnerId, WorkspaceId)>, StoreError> {
        let rows = self
            .pool
            .fetch_all(
                "SELECT w.owner_user_id, w.id FROM workspaces w JOIN runs r ON r.id = w.current_run_id \
                 WHERE r.host = $1 AND r.runtime_removed_at IS NULL AND w.desired_state = $2 \
                 ORDER BY w.created_at, w.id",
                args![host, DesiredState::Running.as_str()],
            )
            .await?;
        rows.iter().map(|r| Ok((r.id("owner_user_id")?, r.id("id")?))).collect()
    }

    /// Places `run_id`'s executor, under the lease of its workspace's job:
    /// on the host it was placed on already, or on the one the fleet's
    /// placement rule chooses now (recorded, so every later job of the
    /// executor goes to that host). `here` is the asking worker's host.
    pub async fn place_run(&self, lease: &Lease, run_id: &RunId, here: &str) -> Result<Placement, StoreError> {
        let (mut tx, now) = begin_fenced(&self.pool, lease).await?;
        if self.pool.kind().locks_rows() {
            // Placements run one at a time, so two never fill one slot.
            let lock = self.pool.kind().for_update();
            tx.fetch_all(&format!("SELECT name FROM hosts ORDER BY name{lock}"), args![]).await?;
        }
        let row = tx
            .fetch_optional("SELECT host, status FROM runs WHERE id = $1", args![run_id])
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("the job's run {run_id} is not stored")))?;
        let placed = match row.opt_text("host")? {
            Some(host) => host,
            None => {
                let status: WorkspaceStatus = row.parsed("status")?;
                if status != WorkspaceStatus::Queued {
                    return Err(StoreError::Conflict {
                        message: format!("run {run_id} is {status}: only a queued run is placed"),
                        code: ConflictCode::NotQueued,
                    });
                }
                let hosts: Vec<HostLoad> = hosts_in(&mut tx, now).await?.into_iter().map(|h| h.load).collect();
                let Some(host) = choose_host(&hosts).map(str::to_owned) else { return Ok(Placement::NoRoom) };
                tx.execute(
                    "UPDATE runs SET host = $1, updated_at = $2 WHERE id = $3 AND host IS NULL",
                    args![&host, now, run_id],
                )
                .await?;
                tx.commit().await?;
                host
            }
        };
        Ok(if placed == here { Placement::Here } else { Placement::Elsewhere(placed) })
    }
}
