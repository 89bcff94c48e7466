//! One reconcile pass of one workspace: load its stored state, observe its
//! executor, decide, perform that one action, record the outcome under the
//! job's lease. Returns when the workspace wants looking at again.

use sluice_protocol::BootSecret;
use sluice_store::clock::now_ms;
use sluice_store::spec::WorkspaceSpec;
use sluice_store::{Lease, ReconcileState, RunError, Secret, SecretKind, StoreError};

use crate::Worker;
use crate::daemon_client::DaemonClient;
use crate::decide::{Action, Observation, decide, retry_allowed};
use crate::runtime::Runtime as _;
use crate::runtime::{LaunchRequest, Presence, WorkerError};

/// The longest a launch pass waits for its new daemon's first answer (never
/// longer than the ready timeout).
const FIRST_ANSWER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The control token of a run's daemon: derived from the seal key, so any
/// worker can talk to any executor and the token is stored nowhere in plain.
pub fn control_token(worker: &Worker, run_id: &str) -> Secret<String> {
    control_token_for(worker.store.sealer(), run_id)
}

/// A run's control token, derived from the store's key: never stored.
pub fn control_token_for(sealer: &sluice_store::Sealer, run_id: &str) -> Secret<String> {
    Secret::new(sealer.keyed_digest(format!("control-token/{run_id}").as_bytes()))
}

async fn observe(worker: &Worker, state: &ReconcileState) -> Observation {
    let Some(run) = &state.current_run else { return Observation::NotLaunched };
    let Some(runtime) = run.runtime.as_ref().filter(|_| run.runtime_removed_at.is_none()) else {
        return Observation::NotLaunched;
    };
    if runtime.adapter != worker.runtime.adapter() {
        tracing::warn!(run = %run.id, adapter = %runtime.adapter, "this worker does not drive that runtime");
        return Observation::Unknown;
    }
    if state.has_capture_source && run.runtime_removed_at.is_none() {
        // After a restart of this worker, its executors find their registrar again.
        worker.serve_registrar(&state.workspace, run);
    }
    match worker.runtime.inspect(&run.id, &runtime.resource_id).await {
        Ok(Presence::Absent) => Observation::Absent,
        Ok(Presence::Exited) => Observation::Exited,
        Ok(Presence::Running) => {
            let daemon_healthy = match &runtime.endpoint {
                Some(endpoint) => match DaemonClient::new(endpoint, control_token(worker, &run.id)) {
                    Ok(client) => client.healthy().await,
                    Err(_) => false,
                },
                None => false,
            };
            Observation::Running { daemon_healthy }
        }
        Err(e) => {
            tracing::warn!(run = %run.id, error = %e, "cannot inspect the executor");
            Observation::Unknown
        }
    }
}

async fn launch_request(worker: &Worker, state: &ReconcileState) -> Result<LaunchRequest, StoreError> {
    let workspace = &state.workspace;
    let run = state.current_run.as_ref().expect("decide launches only the current run");
    let secret_env = match worker.store.open_secret(&workspace.id, SecretKind::SecretEnv).await? {
        Some(bytes) => serde_json::from_slice(bytes.expose()).map_err(|_| StoreError::Corrupt("secretEnv".into()))?,
        None => Default::default(),
    };
    let capture_token = match worker.store.open_secret(&workspace.id, SecretKind::CaptureToken).await? {
        Some(bytes) => {
            Some(String::from_utf8(bytes.expose().clone()).map_err(|_| StoreError::Corrupt("captureToken".into()))?)
        }
        None => None,
    };
    let boot = BootSecret { control_token: control_token(worker, &run.id).expose().clone(), secret_env, capture_token };
    let boot = serde_json::to_string(&boot).map_err(|_| StoreError::Corrupt("boot secret".into()))?;
    Ok(LaunchRequest {
        workspace_id: workspace.id.clone(),
        run_id: run.id.clone(),
        launch: run.launch_id.clone().unwrap_or_else(|| run.id.clone()),
        registry_id: workspace.registry_id.clone(),
        repository: workspace.repository.clone(),
        tag: workspace.tag.clone(),
        // Checked at create: a stored spec that no longer parses is corrupt.
        spec: WorkspaceSpec::parse(&run.spec).map_err(|e| StoreError::Corrupt(format!("run {}: {e}", run.id)))?,
        boot_secret: Secret::new(boot),
        capture_interval_ms: worker.config.capture_interval.as_millis() as u64,
    })
}

/// Runs one pass. `Ok(None)`: nothing more to do until asked.
pub async fn pass(worker: &Worker, lease: &Lease) -> Result<Option<i64>, StoreError> {
    let Some(state) = worker.store.load_reconcile_state(&lease.subject).await? else { return Ok(None) };
    let observation = observe(worker, &state).await;
    let policy = &worker.config.policy;
    let decision = decide(&state, &observation, now_ms(), policy);
    tracing::debug!(workspace = %lease.subject, ?observation, action = ?decision.action, reason = decision.reason, "reconcile");
    let action = decision.action;
    let store = &worker.store;
    match action {
        Action::Launch { run_id } => {
            let request = launch_request(worker, &state).await?;
            match worker.runtime.launch(&request).await {
                Ok(launched) => {
                    if let Some(run) = &state.current_run {
                        worker.serve_registrar(&state.workspace, run);
                    }
                    if let Some(pause) = worker.config.pause_after_launch {
                        tracing::warn!(run = %run_id, ?pause, "fault injection: pausing before the launch is recorded");
                        tokio::time::sleep(pause).await;
                    }
                    store.record_launched(lease, &run_id, &launched.record, launched.published.as_ref()).await?;
                    tracing::info!(workspace = %lease.subject, run = %run_id, reference = %launched.record.reference, "executor launched");
                    // A new daemon answers within milliseconds as a rule: wait
                    // for it here (briefly) so the next pass finds it healthy,
                    // instead of a poll interval later.
                    if let Some(endpoint) = &launched.record.endpoint
                        && let Ok(client) = DaemonClient::new(endpoint, control_token(worker, &run_id))
                    {
                        let wait =
                            FIRST_ANSWER_WAIT.min(std::time::Duration::from_millis(policy.ready_timeout_ms as u64));
                        let deadline = tokio::time::Instant::now() + wait;
                        while tokio::time::Instant::now() < deadline && !client.healthy().await {
                            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                        }
                    }
                    Ok(Some(now_ms()))
                }
                Err(e) => {
                    let run = state.current_run.as_ref().expect("a current run");
                    let retry = matches!(e, WorkerError::Transient(_))
                        && retry_allowed(run, state.workspace.desired_state, policy);
                    tracing::warn!(workspace = %lease.subject, run = %run_id, error = %e, retry, "launch failed");
                    let error = RunError { message: e.to_string(), code: Some(e.code().to_owned()) };
                    store.record_failed(lease, &run_id, &error, retry).await?;
                    Ok(Some(now_ms()))
                }
            }
        }
        Action::RecordReady { run_id } => {
            store.record_ready(lease, &run_id).await?;
            tracing::info!(workspace = %lease.subject, run = %run_id, "executor ready");
            Ok(Some(now_ms() + policy.watch_poll_ms))
        }
        Action::Fail { run_id, error, retry } => {
            tracing::warn!(workspace = %lease.subject, run = %run_id, error = %error.message, retry, "run failed");
            store.record_failed(lease, &run_id, &error, retry).await?;
            Ok(Some(now_ms()))
        }
        Action::Remove { run_id } => {
            let run = state.stale_runs.iter().chain(state.current_run.iter()).find(|r| r.id == run_id);
            let resource_id = run.and_then(|r| r.runtime.as_ref()).map(|r| r.resource_id.clone()).unwrap_or_default();
            match worker.runtime.remove(&run_id, &resource_id).await {
                Ok(()) => {
                    worker.registrars.forget(&run_id);
                    store.record_removed(lease, &run_id).await?;
                    tracing::info!(workspace = %lease.subject, run = %run_id, "executor removed");
                    Ok(Some(now_ms()))
                }
                Err(e) => Err(StoreError::Io(std::io::Error::other(format!("removing the executor: {e}")))),
            }
        }
        Action::Retain { run_id, reason } => {
            tracing::warn!(workspace = %lease.subject, run = %run_id, %reason, "executor retained");
            store.record_retained(lease, &run_id, &reason).await?;
            Ok(Some(now_ms()))
        }
        Action::Cancel { run_id } => {
            store.record_cancelled(lease, &run_id).await?;
            Ok(Some(now_ms()))
        }
        Action::Wait { at } => Ok(Some(at)),
        Action::Done => Ok(None),
    }
}
