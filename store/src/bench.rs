//! The baseline the benchmarks compare against: a bare single-row insert
//! into the same database, through the same pool; and the generator that
//! fills a store to the sizes the read benchmark measures.

use crate::clock::{new_id, now_ms};
use crate::db::{SeriesDialect, args};
use crate::{Store, StoreError};
use sluice_domain::ids::{OwnerId, WorkspaceId};

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

/// The ids a generated store's rows take, the `n`th of each.
pub fn bench_workspace_id(n: u64) -> WorkspaceId {
    WorkspaceId::from(format!("ws_bench_{n:08}"))
}

/// The owner the `n`th generated workspace belongs to, of `owners`.
pub fn bench_owner(n: u64, owners: u64) -> OwnerId {
    OwnerId::from(format!("bench-owner-{}", n % owners.max(1)))
}

impl Store {
    /// Adds generated workspaces `from..to`: each a copy of `template`'s
    /// row with its own id, owner (one of `owners`), run and
    /// `events_per_workspace` events, written by the database itself in
    /// one statement per table (the store's size is what the read
    /// benchmark varies, not how it got there). The events' announcement
    /// trigger is off while they are written: nobody listens to a
    /// generated store.
    pub async fn bench_fill(
        &self,
        template: &WorkspaceId,
        from: u64,
        to: u64,
        owners: u64,
        events_per_workspace: u64,
    ) -> Result<(), StoreError> {
        let SeriesDialect { with_numbers, with_sequences, numbers, sequences, padded, quiet_events } =
            self.pool.kind().series();
        let workspace = format!("'ws_bench_' || {padded}");
        let run = format!("'run_bench_' || {padded}");
        let copy = |table: &str, columns: &[String], overrides: &[(&str, String)], template_where: &str| {
            let values: Vec<String> = columns
                .iter()
                .map(|c| overrides.iter().find(|(o, _)| o == c).map_or_else(|| format!("t.{c}"), |(_, v)| v.clone()))
                .collect();
            format!(
                "{with_numbers}INSERT INTO {table} ({}) SELECT {} FROM {table} t, {numbers} WHERE {template_where}",
                columns.join(", "),
                values.join(", ")
            )
        };
        let workspace_columns = self.pool.table_columns("workspaces").await?;
        let run_columns = self.pool.table_columns("runs").await?;
        let mut tx = self.pool.begin().await?;
        let sql = copy(
            "workspaces",
            &workspace_columns,
            &[
                ("id", workspace.clone()),
                ("owner_user_id", format!("'bench-owner-' || (g.n % {})", owners.max(1))),
                ("name", format!("'bench-' || {padded}")),
                ("current_run_id", run.clone()),
                ("idempotency_key", "NULL".into()),
                ("expires_at", "NULL".into()),
                ("event_seq", events_per_workspace.to_string()),
                ("created_at", "t.created_at - g.n".into()),
                ("updated_at", "t.updated_at - g.n".into()),
            ],
            "t.id = $3",
        );
        tx.execute(&sql, args![from as i64, to as i64, template]).await?;
        let sql = copy(
            "runs",
            &run_columns,
            &[
                ("id", run.clone()),
                ("workspace_id", workspace.clone()),
                ("launch_id", format!("CASE WHEN t.launch_id IS NULL THEN NULL ELSE 'launch_bench_' || {padded} END")),
            ],
            "t.id = (SELECT current_run_id FROM workspaces WHERE id = $3)",
        );
        tx.execute(&sql, args![from as i64, to as i64, template]).await?;
        if let Some((quiet, _)) = quiet_events {
            tx.execute(quiet, args![]).await?;
        }
        let sql = format!(
            "{with_numbers}{with_sequences}INSERT INTO events (id, workspace_id, seq, attempt_id, type, occurred_at, \
             message, data) SELECT 'ev_bench_' || {padded} || '_' || s.seq, {workspace}, s.seq, {run}, t.type, \
             t.occurred_at + s.seq, t.message, t.data FROM events t, {numbers}, {sequences} \
             WHERE t.workspace_id = $3 AND t.seq = 1"
        );
        tx.execute(&sql, args![from as i64, to as i64, template, events_per_workspace as i64]).await?;
        if let Some((_, announce)) = quiet_events {
            tx.execute(announce, args![]).await?;
        }
        tx.commit().await
    }

    /// Refreshes the planner's statistics after a fill.
    pub async fn bench_analyze(&self) -> Result<(), StoreError> {
        self.pool.execute_raw("ANALYZE").await
    }
}
