//! sluice's durable state: workspaces, runs, the event log, idempotent-create
//! keys and sealed secrets, on SQLite (the embedded default) or PostgreSQL.
//!
//! What is durable and why: a workspace and its runs are the intent and the
//! record of every launch; the event log is append-only and written in the
//! same transaction as the change it records; create keys make a create
//! happen at most once per (owner, key) and are kept at least seven days;
//! secrets exist only sealed. All SQL of sluice lives in this crate.

pub mod announcements;
#[cfg(feature = "bench")]
pub mod bench;
pub mod broker;
pub mod broker_snapshots;
pub mod capture;
pub mod clock;
pub mod collection;
mod console_sessions;
mod creates;
mod db;
pub mod deletions;
mod drains;
pub mod error;
pub mod event_feed;
mod event_log;
pub mod exec_output;
mod exec_runs;
mod executors;
pub mod fleet;
pub mod gauges;
mod image_pulls;
pub mod jobs;
pub mod packs;
pub mod previews;
pub mod records;
mod rows;
pub mod seal;
pub mod ssh_keys;
pub mod templates;
#[doc(hidden)]
pub mod testing;
mod transitions;
pub mod webhooks;
mod workspaces;

pub use db::{BackendKind, DATABASE_WAIT};
pub use error::StoreError;
pub use exec_runs::{CreatedExecRun, TakenExecRun};
pub use jobs::{FailedJob, KeptLease, Lease};
// The model is the domain's: the store persists it.
pub use creates::{CreateOutcome, Idempotency, NewWorkspace};
pub use seal::{Sealer, Secret};
pub use sluice_domain::drain::{
    Discard, Drain, DrainObservation, DrainProgress, RetainedExecutor, Retention, StopIntent, StoredAttestation,
};
pub use sluice_domain::model::{self, *};
pub use sluice_domain::reconcile::{ReconcileState, ResourceFacts};
pub use sluice_domain::spec;
pub use transitions::Awake;
pub use workspaces::WorkspaceFilter;

/// The handle every part of sluice reads and writes state through.
#[derive(Clone, Debug)]
pub struct Store {
    pool: db::Pool,
    sealer: Sealer,
    /// Where creates go to be committed together.
    creates: creates::group_commit::CreateQueue,
    /// Keys this process saw taken, to answer repeats without the committer.
    found_keys: std::sync::Arc<creates::group_commit::FoundKeys>,
    /// Counts the exec-run writes this process committed (output, results,
    /// ends), so a stream of a run written here hears of them at once.
    exec_writes: std::sync::Arc<tokio::sync::watch::Sender<u64>>,
}

impl Store {
    /// Connects to `url` (`sqlite:PATH` or `postgres://…`) and applies the
    /// backend's migrations.
    pub async fn open(url: &str, sealer: Sealer) -> Result<Store, StoreError> {
        let store = Self::connect(url, sealer).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Connects without migrating.
    pub async fn connect(url: &str, sealer: Sealer) -> Result<Store, StoreError> {
        Self::connect_waiting(url, sealer, DATABASE_WAIT).await
    }

    /// Connects without migrating; a statement waits at most `wait` for the
    /// database (PostgreSQL: a connection; SQLite: another writer's lock)
    /// before it fails as unavailable. A simulation of outages waits
    /// milliseconds, not [`DATABASE_WAIT`].
    pub async fn connect_waiting(url: &str, sealer: Sealer, wait: std::time::Duration) -> Result<Store, StoreError> {
        let max = if url.starts_with("sqlite:") { 8 } else { 16 };
        let pool = db::Pool::connect(url, max, wait).await?;
        let creates = creates::group_commit::CreateQueue::start(pool.clone());
        let exec_writes = std::sync::Arc::new(tokio::sync::watch::Sender::new(0));
        Ok(Store { pool, sealer, creates, found_keys: Default::default(), exec_writes })
    }

    pub async fn migrate(&self) -> Result<(), StoreError> {
        self.pool.migrate().await
    }

    pub fn backend(&self) -> BackendKind {
        self.pool.kind()
    }

    pub fn sealer(&self) -> &Sealer {
        &self.sealer
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.pool.fetch_optional("SELECT 1 AS one", vec![]).await.map(|_| ())
    }

    pub async fn close(&self) {
        self.pool.close().await
    }

    /// Whether any stored text, in any table, contains `needle`. A diagnostic
    /// for proving that secrets never reach a plain column.
    pub async fn any_column_contains(&self, needle: &str) -> Result<bool, StoreError> {
        for table in [
            "workspaces",
            "runs",
            "events",
            "create_keys",
            "sealed_secrets",
            "exec_runs",
            "jobs",
            "capture_sessions",
            "capture_claims",
            "captures",
            "drains",
            "executor_reports",
            "attestations",
            "broker_instances",
            "broker_tokens",
            "broker_admission",
        ] {
            let columns = self.pool.column_names(table).await?;
            let sql = self.backend().row_contains(table, &columns);
            if self.pool.fetch_optional(&sql, db::args![needle]).await?.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
