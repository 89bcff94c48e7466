//! Periodic sweeps on cron schedules: the expiry reaper (asks expired
//! workspaces to stop), the orphan sweep (removes labelled runtime
//! resources no live record needs; reports and keeps any that may hold
//! unsaved work), the collection of the object store, and maintenance
//! (forgets old create-key records).

use std::str::FromStr;
use std::sync::Arc;

use sluice_store::clock::now_ms;
use sluice_store::records::Record;
use sluice_store::{Store, StoreError};

use sluice_domain::reconcile::{ResourceVerdict, orphan_verdict};
use tokio::sync::watch;

use crate::{MIN_KEY_RETENTION, Worker, WorkerConfig};
use sluice_domain::ids::RunId;

/// How many rows one purge statement deletes, and how many statements one
/// pass runs per kind (what is left waits for the next pass).
const PURGE_BATCH: u64 = 1000;
const PURGE_BATCHES: usize = 100;

/// What one maintenance pass forgot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Maintained {
    pub keys: u64,
    /// Ended workspaces deleted.
    pub workspaces: u64,
    /// Per kind of record, by its name.
    pub records: Vec<(&'static str, u64)>,
}

/// One maintenance pass: create-key records past their retention, the
/// workspaces ended longer ago than the purge's age (if one is set), then
/// the events, exec results and drain reports past their retention.
pub async fn maintain(store: &Store, config: &WorkerConfig) -> Result<Maintained, StoreError> {
    let retention = config.key_retention.max(MIN_KEY_RETENTION);
    let now = now_ms();
    let mut done =
        Maintained { keys: store.purge_create_keys(now - retention.as_millis() as i64).await?, ..Default::default() };
    if let Some(age) = config.purge_ended_after {
        let before = now - age.as_millis() as i64;
        for _ in 0..PURGE_BATCHES {
            let deleted = store.purge_ended_workspaces(before, PURGE_BATCH as i64).await?;
            done.workspaces += deleted;
            if deleted < PURGE_BATCH {
                break;
            }
        }
    }
    for record in Record::ALL {
        let before = now - config.record_retention.of(record).as_millis() as i64;
        let mut forgotten = 0;
        for _ in 0..PURGE_BATCHES {
            let deleted = store.purge_records(record, before, PURGE_BATCH).await?;
            forgotten += deleted;
            if deleted < PURGE_BATCH {
                break;
            }
        }
        done.records.push((record.name(), forgotten));
    }
    Ok(done)
}

/// Asks every expired workspace to stop.
pub async fn reap(worker: &Worker) -> Result<usize, StoreError> {
    let stopped = worker.store.stop_expired(now_ms(), 500).await?;
    for id in &stopped {
        tracing::info!(workspace = %id, "workspace expired; stopping it");
    }
    // Broker workspaces nothing may use any more: idle, revoked, paused.
    let ended = worker.store.reap_broker_workspaces(now_ms(), 500).await?;
    for (id, reason) in &ended {
        tracing::info!(workspace = %id, %reason, "broker workspace reaped");
    }
    if !stopped.is_empty() || !ended.is_empty() {
        worker.wake.notify_one();
    }
    let deleted = delete_snapshots(worker).await?;
    Ok(stopped.len() + ended.len() + deleted)
}

/// Deletes the broker snapshots that are due (asked for, or past their
/// TTL) from the object store; one the store did not confirm stays due and
/// is tried again on the next pass. Answers how many were deleted.
pub async fn delete_snapshots(worker: &Worker) -> Result<usize, StoreError> {
    let mut deleted = 0;
    for due in worker.store.due_snapshot_deletions(now_ms(), 100).await? {
        if due.abandoned {
            tracing::warn!(snapshot = %due.snapshot_id, "a snapshot was abandoned while being taken; its key is free again");
            worker.store.abandon_broker_snapshot(&due.snapshot_id).await?;
            continue;
        }
        let mut failed = None;
        for key in &due.manifests {
            if let Err(e) = worker.objects().delete(key).await {
                failed = Some(e.to_string());
                break;
            }
        }
        match failed {
            None => {
                worker.store.record_snapshot_deleted(&due.snapshot_id).await?;
                tracing::info!(snapshot = %due.snapshot_id, "snapshot deleted");
                deleted += 1;
            }
            Some(error) => {
                tracing::warn!(snapshot = %due.snapshot_id, %error, "deleting a snapshot failed; trying again later");
                worker.store.record_snapshot_delete_failed(&due.snapshot_id, &error).await?;
            }
        }
    }
    Ok(deleted)
}

/// Removes runtime resources nothing stored needs.
pub async fn sweep_orphans(worker: &Worker) -> Result<usize, String> {
    let owned = worker.runtime.list_owned().await.map_err(|e| e.to_string())?;
    let mut removed = 0;
    for resource in owned {
        let facts = worker.store.resource_facts(&RunId::from(&resource.run_id)).await.map_err(|e| e.to_string())?;
        match orphan_verdict(facts.as_ref()) {
            ResourceVerdict::Owned => {}
            ResourceVerdict::OrphanKept => tracing::warn!(
                run = %resource.run_id, resource = %resource.resource_id,
                "orphaned executor may hold unsaved work; kept for an operator"
            ),
            ResourceVerdict::Orphan => match worker.runtime.remove(&resource.run_id, &resource.resource_id).await {
                Ok(()) => {
                    removed += 1;
                    tracing::info!(run = %resource.run_id, resource = %resource.resource_id, "orphaned executor removed");
                }
                Err(e) => tracing::warn!(run = %resource.run_id, error = %e, "could not remove an orphaned executor"),
            },
        }
    }
    Ok(removed)
}

/// Sleeps until the schedule's next time; `false` when told to stop first.
async fn until_next(schedule: &cron::Schedule, stop: &mut watch::Receiver<bool>) -> bool {
    let Some(next) = schedule.upcoming(chrono::Utc).next() else { return false };
    let wait = (next - chrono::Utc::now()).to_std().unwrap_or_default();
    tokio::select! {
        _ = tokio::time::sleep(wait) => true,
        _ = stop.wait_for(|s| *s) => false,
    }
}

fn schedule(text: &str, what: &str) -> Option<cron::Schedule> {
    match cron::Schedule::from_str(text) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::error!(schedule = text, error = %e, "the {what} schedule is not a cron expression; the sweep is off");
            None
        }
    }
}

/// Runs `pass` on `schedule` until `stop` turns true.
fn every<F, Fut>(
    tasks: &mut tokio::task::JoinSet<()>,
    schedule_text: &str,
    what: &'static str,
    mut stop: watch::Receiver<bool>,
    pass: F,
) where
    F: Fn() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    if let Some(s) = schedule(schedule_text, what) {
        tasks.spawn(async move {
            while until_next(&s, &mut stop).await {
                pass().await;
            }
        });
    }
}

/// Runs the sweeps until `stop` turns true.
pub async fn run(worker: Arc<Worker>, stop: watch::Receiver<bool>) {
    let mut tasks = tokio::task::JoinSet::new();
    let config = worker.config.clone();
    let w = worker.clone();
    every(&mut tasks, &config.reaper_schedule, "reaper", stop.clone(), move || {
        let w = w.clone();
        async move {
            if let Err(e) = reap(&w).await {
                tracing::warn!(error = %e, "reaper pass failed");
            }
        }
    });
    let w = worker.clone();
    every(&mut tasks, &config.orphan_schedule, "orphan sweep", stop.clone(), move || {
        let w = w.clone();
        async move {
            if let Err(e) = sweep_orphans(&w).await {
                tracing::warn!(error = %e, "orphan sweep failed");
            }
        }
    });
    let w = worker.clone();
    every(&mut tasks, &config.collect_schedule, "collection", stop.clone(), move || {
        let w = w.clone();
        async move {
            let options = sluice_capture_store::collection::CollectOptions {
                grace: w.config.collect_grace,
                ..Default::default()
            };
            let runs = &w.config.metrics.gc_runs;
            match sluice_capture_store::collection::collect(&w.store, w.objects(), &options).await {
                Ok(done) => {
                    runs.with_label_values(&["done"]).inc();
                    w.config.metrics.gc_deleted_bytes.inc_by(done.bytes_deleted);
                    tracing::info!(
                        forgotten = done.captures_forgotten,
                        deleted = done.objects_deleted,
                        packs_deleted = done.packs_deleted,
                        packs_rewritten = done.packs_rewritten,
                        bytes = done.bytes_deleted,
                        "object store collected"
                    )
                }
                // Another worker's collection is deleting: it does the work.
                Err(sluice_capture_store::collection::CollectError::Busy) => {
                    tracing::debug!("another collection is running")
                }
                Err(e) => {
                    runs.with_label_values(&["failed"]).inc();
                    tracing::warn!(error = %e, "collection failed; the next one tries again")
                }
            }
        }
    });
    let w = worker.clone();
    every(&mut tasks, &config.maintenance_schedule, "maintenance", stop, move || {
        let w = w.clone();
        async move {
            match maintain(&w.store, &w.config).await {
                Ok(done) => {
                    if done.keys > 0 {
                        tracing::info!(forgotten = done.keys, "expired idempotency key records removed");
                    }
                    if done.workspaces > 0 {
                        tracing::info!(deleted = done.workspaces, "workspaces ended past the purge age deleted");
                    }
                    for (record, forgotten) in done.records.into_iter().filter(|(_, n)| *n > 0) {
                        tracing::info!(record, forgotten, "records past their retention forgotten");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "maintenance pass failed"),
            }
        }
    });
    while tasks.join_next().await.is_some() {}
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use sluice_domain::ids::{IdempotencyKey, OwnerId};
    use sluice_store::testing;

    #[tokio::test]
    async fn maintenance_keeps_recent_key_records() {
        for db in testing::databases().await {
            let store = testing::open(&db).await;
            store.cancel_create_key(&OwnerId::from("alice"), &IdempotencyKey::from("k")).await.unwrap();
            let new = sluice_store::NewWorkspace::of(&OwnerId::from("alice"), "w", "local", "r", "t");
            store.create_workspace(new).await.unwrap();
            // Even a configured retention of zero keeps key records for seven
            // days, and events (and the rest) for one.
            let zero = crate::RecordRetention {
                events: Duration::ZERO,
                exec_results: Duration::ZERO,
                drain_reports: Duration::ZERO,
            };
            let config = WorkerConfig {
                key_retention: Duration::ZERO,
                record_retention: zero,
                purge_ended_after: Some(Duration::ZERO),
                ..Default::default()
            };
            let done = maintain(&store, &config).await.unwrap();
            assert_eq!(done.keys, 0, "{}", db.label);
            assert_eq!(done.workspaces, 0, "{}: a queued workspace has not ended", db.label);
            assert_eq!(done.records, vec![("events", 0), ("exec results", 0), ("drain reports", 0)], "{}", db.label);
            assert_eq!(
                store.get_create_key(&OwnerId::from("alice"), &IdempotencyKey::from("k")).await.unwrap().state,
                sluice_store::CreateKeyState::Cancelled
            );
        }
    }

    #[test]
    fn default_schedules_parse() {
        let config = WorkerConfig::default();
        for s in
            [&config.reaper_schedule, &config.orphan_schedule, &config.maintenance_schedule, &config.collect_schedule]
        {
            assert!(schedule(s, "test").is_some(), "{s}");
        }
    }
}
