//! The baseline the benchmarks compare against: a bare single-row insert
//! into the same database, through the same pool.

use crate::clock::{new_id, now_ms};
use crate::db::args;
use crate::{Store, StoreError};

impl Store {
    /// Creates the baseline table (outside the migrated schema) if needed.
    pub async fn bench_prepare(&self) -> Result<(), StoreError> {
        self.pool
            .execute_raw("CREATE TABLE IF NOT EXISTS bench_baseline (id TEXT PRIMARY KEY, payload TEXT NOT NULL, created_at BIGINT NOT NULL)")
            .await
    }

    /// One committed single-row insert.
    pub async fn bench_insert_one(&self, payload: &str) -> Result<(), StoreError> {
        self.pool
            .execute(
                "INSERT INTO bench_baseline (id, payload, created_at) VALUES ($1, $2, $3)",
                args![new_id("bench"), payload, now_ms()],
            )
            .await?;
        Ok(())
    }

    /// The durability the database runs with, as its own settings say.
    pub async fn durability(&self) -> Result<String, StoreError> {
        self.pool.durability().await
    }

    pub async fn bench_cleanup(&self) -> Result<(), StoreError> {
        self.pool.execute_raw("DROP TABLE IF EXISTS bench_baseline").await
    }
}
