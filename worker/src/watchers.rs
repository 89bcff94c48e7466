//! Watches on ready executors. Instead of a timed pass per live workspace,
//! the worker holds each ready executor's watch stream open (an idle one
//! costs an open socket on each side and no wake-ups) and makes the
//! workspace's reconcile job due the moment the stream closes: the daemon
//! died, or began to end. A slow safety sweep (the policy's
//! `sweep_ms`) still looks at every watched executor, for what a stream
//! cannot tell (a daemon that hangs without dying).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_domain::ids::{RunId, WorkspaceId};
use sluice_executor::{Executors, Target};
use sluice_store::clock::now_ms;
use sluice_store::{JobKind, Store};
use tokio::sync::Notify;

/// The least time between a watch opening and the pass its close asks for:
/// a daemon that closes every watch at once brings at most one pass a
/// second for its workspace.
const MIN_GAP: Duration = Duration::from_secs(1);

/// The open watches of one worker, by run.
pub struct Watchers {
    store: Store,
    wake: Arc<Notify>,
    /// How many are open, for the metrics.
    gauge: sluice_telemetry::prometheus::IntGauge,
    open: Mutex<HashMap<RunId, (u64, tokio::task::AbortHandle)>>,
    next_id: AtomicU64,
}

impl Watchers {
    pub fn new(store: Store, wake: Arc<Notify>, gauge: sluice_telemetry::prometheus::IntGauge) -> Arc<Watchers> {
        Arc::new(Watchers { store, wake, gauge, open: Mutex::new(HashMap::new()), next_id: AtomicU64::new(0) })
    }

    /// Whether the run's executor is watched.
    pub fn watching(&self, run_id: &RunId) -> bool {
        self.open.lock().unwrap().contains_key(run_id)
    }

    /// How many executors are watched.
    pub fn count(&self) -> usize {
        self.open.lock().unwrap().len()
    }

    /// Opens a watch on the run's daemon unless one is open; answers
    /// whether one is. When it closes, the workspace's pass is due.
    pub async fn ensure(
        self: &Arc<Self>,
        executors: &dyn Executors,
        workspace_id: &WorkspaceId,
        target: Target<'_>,
    ) -> bool {
        let run_id = target.run_id;
        if self.watching(run_id) {
            return true;
        }
        let closed = match executors.watch(target).await {
            Ok(closed) => closed,
            Err(e) => {
                tracing::debug!(run = %run_id, error = %e, "cannot watch the executor; it is looked at on the watch poll");
                return false;
            }
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let opened = tokio::time::Instant::now();
        let (watchers, workspace, run) = (Arc::downgrade(self), workspace_id.to_owned(), run_id.to_owned());
        let mut open = self.open.lock().unwrap();
        if open.contains_key(run_id) {
            // Another pass opened one meanwhile: this one is dropped unused.
            return true;
        }
        let task = tokio::spawn(async move {
            closed.await;
            tokio::time::sleep_until(opened + MIN_GAP).await;
            let Some(watchers) = watchers.upgrade() else { return };
            {
                let mut open = watchers.open.lock().unwrap();
                if open.get(&run).is_some_and(|(held, _)| *held == id) {
                    open.remove(&run);
                    watchers.gauge.set(open.len() as i64);
                }
            }
            tracing::info!(workspace = %workspace, run = %run, "the executor's watch closed: looking at it now");
            if let Err(e) = watchers.store.enqueue_job(JobKind::Reconcile, &workspace, now_ms()).await {
                tracing::warn!(workspace = %workspace, error = %e, "cannot ask for a pass; the safety sweep looks later");
            }
            watchers.wake.notify_one();
        });
        open.insert(run_id.clone(), (id, task.abort_handle()));
        self.gauge.set(open.len() as i64);
        true
    }

    /// Closes the run's watch without asking for a pass (the run is done with).
    pub fn forget(&self, run_id: &RunId) {
        let mut open = self.open.lock().unwrap();
        if let Some((_, task)) = open.remove(run_id) {
            task.abort();
            self.gauge.set(open.len() as i64);
        }
    }
}

impl Drop for Watchers {
    fn drop(&mut self) {
        for (_, (_, task)) in self.open.get_mut().unwrap().drain() {
            task.abort();
        }
    }
}
