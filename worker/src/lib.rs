//! The sluice worker. Today it keeps the store tidy: idempotent-create key
//! records are forgotten once past their retention (never less than seven
//! days). Executor reconciliation is not built yet (see the README).

use std::future::Future;
use std::time::Duration;

use sluice_store::{Store, StoreError, clock::now_ms};

/// Create-key records are kept at least this long.
pub const MIN_KEY_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// How long create-key records are kept; raised to seven days if lower.
    pub key_retention: Duration,
    /// How often maintenance runs.
    pub maintenance_every: Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig { key_retention: MIN_KEY_RETENTION, maintenance_every: Duration::from_secs(3600) }
    }
}

/// One maintenance pass; returns how many key records were forgotten.
pub async fn maintain(store: &Store, config: &WorkerConfig) -> Result<u64, StoreError> {
    let retention = config.key_retention.max(MIN_KEY_RETENTION);
    let cutoff = now_ms() - retention.as_millis() as i64;
    store.purge_create_keys(cutoff).await
}

/// Runs maintenance on its schedule until `shutdown` resolves. A pass in
/// progress is finished before returning.
pub async fn run(store: Store, config: WorkerConfig, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    let mut ticks = tokio::time::interval(config.maintenance_every);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            _ = ticks.tick() => match maintain(&store, &config).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(forgotten = n, "expired idempotency key records removed"),
                Err(e) => tracing::warn!(error = %e, "maintenance pass failed; retrying on the next tick"),
            },
        }
    }
    tracing::info!("worker stopped");
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_store::testing;

    #[tokio::test]
    async fn maintenance_keeps_recent_key_records() {
        for db in testing::databases().await {
            let store = testing::open(&db).await;
            store.cancel_create_key("alice", "k").await.unwrap();
            // Even a configured retention of zero keeps records for seven days.
            let config = WorkerConfig { key_retention: Duration::ZERO, ..Default::default() };
            assert_eq!(maintain(&store, &config).await.unwrap(), 0, "{}", db.label);
            assert_eq!(
                store.get_create_key("alice", "k").await.unwrap().state,
                sluice_store::CreateKeyState::Cancelled
            );
        }
    }
}
