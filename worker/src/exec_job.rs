//! An exec run's job, claimed from the queue: the run is judged against
//! its workspace as stored, then its commands run through the shared
//! runner ([`sluice_exec_runs`]), which ends the run and the job
//! in one commit.

use sluice_exec_runs::{broke, run_commands};
use sluice_executor::Target;
use sluice_store::{ExecRunStatus, Lease, StoreError, WorkspaceStatus};

use crate::{PassEnd, Worker};
use sluice_domain::ids::ExecRunId;

/// A run that ends here ends its job in the same commit
/// ([`PassEnd::EndedItsJob`]); one already gone or ended leaves its job
/// done.
pub async fn run(worker: &Worker, lease: &Lease) -> Result<PassEnd, StoreError> {
    let store = &worker.store;
    let Some(run) = store.load_exec_run(&ExecRunId::from(&lease.subject)).await? else { return Ok(PassEnd::Done) };
    match run.status {
        ExecRunStatus::Completed | ExecRunStatus::Failed => return Ok(PassEnd::Done),
        ExecRunStatus::Running => {
            // Whoever took it up was lost mid-command: running the commands
            // again could repeat effects, so the run ends here with what
            // was recorded.
            let error =
                broke("the worker running these commands was lost; results recorded so far are kept", "worker-lost");
            store.finish_exec_run(lease, &run.id, None, Some(&error)).await?;
            return Ok(PassEnd::EndedItsJob);
        }
        ExecRunStatus::Queued => {}
    }
    store.start_exec_run(lease, &run.id).await?;

    let state = store.load_reconcile_state(&run.workspace_id).await?;
    let endpoint = state.as_ref().and_then(|s| {
        let current = s.current_run.as_ref()?;
        let usable = current.id == run.attempt_id
            && current.status == WorkspaceStatus::Ready
            && s.workspace.status == WorkspaceStatus::Ready;
        usable.then(|| current.runtime.as_ref()?.endpoint.clone()).flatten()
    });
    let Some(endpoint) = endpoint else {
        let error = broke("the workspace's executor is no longer ready", "no-live-runtime");
        store.finish_exec_run(lease, &run.id, None, Some(&error)).await?;
        return Ok(PassEnd::EndedItsJob);
    };
    let target = Target { run_id: &run.attempt_id, endpoint: &endpoint };
    let stdin = store.open_exec_stdin(&run.id).await?;
    run_commands(store, worker.executors.as_ref(), lease, &run, target, &stdin).await?;
    Ok(PassEnd::EndedItsJob)
}
