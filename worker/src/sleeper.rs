//! Puts this host's idle capture-sourced workspaces to sleep. Which ones
//! may sleep and after how long comes from the store (their spec, or the
//! install's default); whether one is idle, from its daemon's count of
//! use (every control call and session frame, and whatever is still
//! open). The sleep itself is a request the store applies like any other:
//! a stop's drain under the sleep's name, so the runtime goes only once
//! the work is saved.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use sluice_domain::ids::WorkspaceId;
use sluice_domain::sleep::{SleepReason, idle_due, sleep_after};
use sluice_executor::Target;
use sluice_store::StoreError;
use sluice_store::clock::now_ms;

use crate::Worker;

/// How often the workspaces due a look are looked at.
const LOOK_EVERY: Duration = Duration::from_secs(1);
/// How long after a daemon that did not answer it is asked again.
const SILENT_PAUSE_MS: i64 = 5_000;
/// The most workspaces one look reads.
const AWAKE_LIMIT: i64 = 2_000;

/// Looks for idle workspaces until aborted.
pub async fn run(worker: Arc<Worker>) {
    let mut next_look = HashMap::new();
    loop {
        if let Err(e) = look(&worker, &mut next_look).await {
            tracing::warn!(error = %e, "cannot look for idle workspaces");
        }
        tokio::time::sleep(LOOK_EVERY).await;
    }
}

/// One look: asks each workspace due a look how it is used, and puts the
/// idle ones to sleep. `next_look` remembers when each may next be due
/// (a use since only moves that later), so an idle daemon is asked about
/// once per timeout. Answers how many were put to sleep.
pub async fn look(worker: &Worker, next_look: &mut HashMap<WorkspaceId, i64>) -> Result<usize, StoreError> {
    let now = now_ms();
    let awake = worker.store.awake_on_host(&worker.config.host, AWAKE_LIMIT).await?;
    let listed: HashSet<&WorkspaceId> = awake.iter().map(|a| &a.workspace_id).collect();
    next_look.retain(|id, _| listed.contains(id));
    let mut slept = 0;
    for candidate in &awake {
        let Some(after) = sleep_after(&candidate.spec, worker.config.sleep_after.map(|d| d.as_secs())) else {
            continue;
        };
        if next_look.get(&candidate.workspace_id).is_some_and(|at| *at > now) {
            continue;
        }
        let target = Target { run_id: &candidate.run_id, endpoint: &candidate.endpoint };
        let activity = match worker.executors.activity(target).await {
            Ok(activity) => activity,
            Err(e) => {
                tracing::debug!(workspace = %candidate.workspace_id, error = %e, "cannot read how an executor is used");
                next_look.insert(candidate.workspace_id.clone(), now + SILENT_PAUSE_MS);
                continue;
            }
        };
        if !idle_due(after, activity) {
            let left = (after.saturating_mul(1000)).saturating_sub(activity.idle_ms).min(i64::MAX as u64) as i64;
            next_look.insert(candidate.workspace_id.clone(), now + left);
            continue;
        }
        match worker.store.sleep(&candidate.workspace_id, SleepReason::Idle).await {
            Ok(Some(next)) if next.wake => {
                tracing::info!(workspace = %candidate.workspace_id, idle_ms = activity.idle_ms, "idle; putting it to sleep");
                worker.wake.notify_one();
                worker.config.metrics.workspace_sleeps.with_label_values(&[SleepReason::Idle.as_str()]).inc();
                slept += 1;
            }
            Ok(_) => {}
            // It changed since it was listed (stopped, asked to sleep): nothing to do.
            Err(StoreError::Conflict { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(slept)
}
