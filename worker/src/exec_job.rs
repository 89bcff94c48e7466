//! An exec run's job, claimed from the queue: the run is judged against
//! its workspace as stored, then its commands run through the shared
//! runner ([`sluice_exec_runs`]), which ends the run and the job
//! in one commit.

use sluice_domain::exec_run::{self, Claimed};
use sluice_exec_runs::run_commands;
use sluice_executor::Target;
use sluice_store::{Lease, StoreError};

use crate::{PassEnd, Worker};
use sluice_domain::ids::ExecRunId;

/// A run that ends here ends its job in the same commit
/// ([`PassEnd::EndedItsJob`]); one already gone or ended leaves its job
/// done.
pub async fn run(worker: &Worker, lease: &Lease) -> Result<PassEnd, StoreError> {
    let store = &worker.store;
    let Some(run) = store.load_exec_run(&ExecRunId::from(&lease.subject)).await? else { return Ok(PassEnd::Done) };
    match exec_run::on_claim(run.status) {
        Claimed::Ended => return Ok(PassEnd::Done),
        Claimed::Lost(error) => {
            store.finish_exec_run(lease, &run.id, None, Some(&error), &[]).await?;
            return Ok(PassEnd::EndedItsJob);
        }
        Claimed::Start => store.start_exec_run(lease, &run.id).await?,
    }

    let state = store.load_reconcile_state(&run.workspace_id).await?;
    let endpoint = match exec_run::endpoint_for(state.as_ref(), &run.attempt_id) {
        Ok(endpoint) => endpoint,
        Err(error) => {
            store.finish_exec_run(lease, &run.id, None, Some(&error), &[]).await?;
            return Ok(PassEnd::EndedItsJob);
        }
    };
    let target = Target { run_id: &run.attempt_id, endpoint };
    let stdin = store.open_exec_stdin(&run.id).await?;
    run_commands(store, worker.executors.as_ref(), lease, &run, target, &stdin).await?;
    Ok(PassEnd::EndedItsJob)
}
