//! One reconcile pass of one workspace: load its stored state, observe its
//! executor, decide, perform that one action, record the outcome under the
//! job's lease. Returns when the workspace wants looking at again.

use sluice_protocol::{BootSecret, ExecutorBounds};
use sluice_store::clock::now_ms;
use sluice_store::{Lease, ReconcileState, RunError, Secret, SecretKind, StoreError};

use crate::Worker;
use sluice_domain::ids::{RunId, WorkspaceId};
use sluice_domain::reconcile::{
    Action, FailedRemoval, FlushAnswer, Observation, ReadyCheck, decide, retry_allowed, run_acted_on,
};
use sluice_domain::transition::Outcome;
use sluice_executor::daemon::{DaemonClient, DaemonError};
use sluice_executor::{ExecutorError, Target};
use sluice_protocol::capture::{CaptureStatus, FlushKind, FlushRequest, IncompleteReason};
use sluice_runtime::{LaunchRequest, Presence, RuntimeError};
use sluice_store::fleet::Placement;

/// The longest a launch pass waits for its new daemon's first answer (never
/// longer than the ready timeout).
const FIRST_ANSWER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How soon a job another host's worker should have claimed is looked at
/// again (by that host, as a rule).
const HANDOFF_PAUSE_MS: i64 = 1_000;

/// How soon a launch no host has room for is tried again.
const NO_ROOM_PAUSE_MS: i64 = 2_000;

/// The control token of a run's daemon: derived from the seal key, so any
/// worker can talk to any executor and the token is stored nowhere in plain.
pub fn control_token(worker: &Worker, run_id: &RunId) -> Secret<String> {
    control_token_for(worker.store.sealer(), run_id)
}

/// A run's control token, derived from the store's key: never stored.
pub fn control_token_for(sealer: &sluice_store::Sealer, run_id: &RunId) -> Secret<String> {
    Secret::new(sealer.keyed_digest(format!("control-token/{run_id}").as_bytes()))
}

/// `answered`: a run whose daemon answered in this pass's step before
/// (its health is not asked again a moment later).
async fn observe(worker: &Worker, state: &ReconcileState, answered: Option<&RunId>) -> Observation {
    let Some(run) = &state.current_run else { return Observation::NotLaunched };
    let Some(runtime) = run.runtime.as_ref().filter(|_| run.runtime_removed_at.is_none()) else {
        return Observation::NotLaunched;
    };
    if runtime.adapter != worker.runtime.adapter() {
        tracing::warn!(run = %run.id, adapter = %runtime.adapter, "this worker does not drive that runtime");
        return Observation::Unknown;
    }
    if run.runtime_removed_at.is_none() {
        // After a restart of this worker, its executors find their
        // registrar and egress proxy again.
        worker.serve_executor(&state.workspace, run).await;
    }
    match worker.runtime.inspect(&run.id, &runtime.resource_id).await {
        Ok(Presence::Absent) => Observation::Absent,
        Ok(Presence::Exited) => Observation::Exited,
        Ok(Presence::Running) => {
            let Some(endpoint) = &runtime.endpoint else {
                return Observation::Running { daemon_healthy: false, watched: false };
            };
            let target = Target { run_id: &run.id, endpoint };
            let daemon_healthy = answered == Some(&run.id) || worker.executors.healthy(target).await;
            // A ready executor is watched from here on: its end is heard at once.
            let watch = daemon_healthy && run.status == sluice_store::WorkspaceStatus::Ready;
            let watched = watch && worker.watchers.ensure(worker.executors.as_ref(), &state.workspace.id, target).await;
            Observation::Running { daemon_healthy, watched }
        }
        Err(e) => {
            tracing::warn!(run = %run.id, error = %e, "cannot inspect the executor");
            Observation::Unknown
        }
    }
}

/// The launch of the current run; `recovering` starts its executor again on
/// its own disk, with the boot secret its daemon kept.
async fn launch_request(
    worker: &Worker,
    state: &ReconcileState,
    recovering: bool,
) -> Result<LaunchRequest, StoreError> {
    let workspace = &state.workspace;
    let run = state.current_run.as_ref().expect("decide launches only the current run");
    let mut secret_env: std::collections::BTreeMap<String, String> =
        match worker.store.open_secret(&workspace.id, SecretKind::SecretEnv).await? {
            Some(bytes) => {
                serde_json::from_slice(bytes.expose()).map_err(|_| StoreError::Corrupt("secretEnv".into()))?
            }
            None => Default::default(),
        };
    // A secret the egress proxy adds as a credential is never the workload's.
    let injected = workspace.spec.typed().egress.as_ref().map(|a| a.injected_keys()).unwrap_or_default();
    secret_env.retain(|key, _| !injected.contains(key.as_str()));
    let egress_authority = match injected.is_empty() {
        true => None,
        false => worker.egress.authority().map(|a| a.certificate_pem().to_owned()),
    };
    let capture_token = match worker.store.open_secret(&workspace.id, SecretKind::CaptureToken).await? {
        Some(bytes) => {
            Some(String::from_utf8(bytes.expose().clone()).map_err(|_| StoreError::Corrupt("captureToken".into()))?)
        }
        None => None,
    };
    let exec_env = match worker.store.open_secret(&workspace.id, SecretKind::ExecEnv).await? {
        Some(bytes) => serde_json::from_slice(bytes.expose()).map_err(|_| StoreError::Corrupt("execEnv".into()))?,
        None => Default::default(),
    };
    // A broker workspace's executor ends itself past its lifetime and idle
    // timeout, should this control plane be down then.
    let bounds = worker.store.broker_bounds(&workspace.id).await?.map(|(ends_at, idle_seconds)| ExecutorBounds {
        ends_at_unix_ms: Some(ends_at.max(0) as u64),
        idle_ms: Some(idle_seconds * 1000),
    });
    let boot = BootSecret {
        control_token: control_token(worker, &run.id).expose().clone(),
        secret_env,
        capture_token,
        exec_env,
        bounds,
    };
    let boot = serde_json::to_string(&boot).map_err(|_| StoreError::Corrupt("boot secret".into()))?;
    Ok(LaunchRequest {
        workspace_id: workspace.id.to_string(),
        run_id: run.id.to_string(),
        launch: run.launch().into_string(),
        registry_id: workspace.registry_id.clone(),
        repository: workspace.repository.clone(),
        tag: workspace.tag.clone(),
        spec: run.spec.typed().clone(),
        boot_secret: (!recovering).then(|| Secret::new(boot)),
        capture_interval_ms: worker.config.capture_interval.as_millis() as u64,
        egress_authority,
        image_progress: Some(Default::default()),
    })
}

/// One drain step: the daemon's FINAL flush, or how the one under way goes.
async fn drain_once(worker: &Worker, run: &sluice_store::Run) -> FlushAnswer {
    let Some(endpoint) = run.runtime.as_ref().and_then(|r| r.endpoint.as_ref()) else {
        return FlushAnswer::Silent("the executor has no control endpoint".into());
    };
    let target = Target { run_id: &run.id, endpoint };
    let heard = |result: Result<CaptureStatus, ExecutorError>| match result {
        Ok(status) => FlushAnswer::Status(Box::new(status)),
        Err(ExecutorError::Refused { code, message }) => FlushAnswer::Refused(format!("{}: {message}", code.as_str())),
        Err(e) => FlushAnswer::Silent(e.to_string()),
    };
    match worker.executors.capture_status(target, STATUS_WAIT).await {
        // Saved already, or a FINAL under way: its status is the answer.
        Ok(status)
            if status.complete == Some(true) || status.incomplete_reason == Some(IncompleteReason::InProgress) =>
        {
            return FlushAnswer::Status(Box::new(status));
        }
        Ok(_) => {}
        Err(e) => return heard(Err(e)),
    }
    let deadline = worker.config.drain_flush_deadline;
    let request =
        FlushRequest { kind: FlushKind::Final, deadline_ms: Some(deadline.as_millis() as u64), grace_ms: None };
    heard(worker.executors.capture_flush(target, request, deadline + STATUS_WAIT).await)
}

/// Restores a warm start's snapshot into its executor; the error is safe
/// to record (it never names the directory).
async fn restore_snapshot(
    worker: &Worker,
    run: &sluice_store::Run,
    restore: &sluice_store::broker_snapshots::SnapshotRestore,
) -> Result<(), String> {
    let Some((small, bulk)) = &restore.manifests else {
        return Err("the snapshot was deleted before the workspace started".into());
    };
    let endpoint =
        run.runtime.as_ref().and_then(|r| r.endpoint.as_ref()).ok_or("the executor has no control endpoint")?;
    let client = DaemonClient::new(endpoint, control_token(worker, &run.id)).map_err(|e| e.to_string())?;
    use crate::snapshots::SnapshotError;
    match crate::snapshots::restore(&client, worker.objects(), small, bulk, restore.dir.expose()).await {
        Ok(_) => Ok(()),
        // A refusal's message may quote what it was sent (paths): only its class.
        Err(SnapshotError::Directory(_)) => Err("the daemon refused the snapshot's directory".into()),
        Err(SnapshotError::Daemon(DaemonError::Refused { code, .. })) => {
            Err(format!("the daemon refused the restore ({})", code.as_str()))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// How long one run of a `spec.readyCommand` may take.
const READY_COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// How much of a failing ready command's output its error keeps.
const READY_COMMAND_SAID_BYTES: usize = 512;

/// Runs the workspace's ready command once in its executor: its exit code
/// (or why it could not run) and the tail of what it printed.
async fn run_ready_command(worker: &Worker, run: &sluice_store::Run, argv: &[String]) -> (Result<i32, String>, String) {
    let Some(endpoint) = run.runtime.as_ref().and_then(|r| r.endpoint.as_deref()) else {
        return (Err("the executor has no endpoint".into()), String::new());
    };
    let request = sluice_protocol::ExecRequest {
        argv: argv.to_vec(),
        timeout_ms: Some(READY_COMMAND_TIMEOUT.as_millis() as u64),
        output_limit_bytes: Some(16 * 1024),
        ..Default::default()
    };
    let target = Target { run_id: &run.id, endpoint };
    match worker.executors.exec(target, request, READY_COMMAND_TIMEOUT + STATUS_WAIT).await {
        Ok(answer) => {
            let said = format!("{}{}", answer.stdout, answer.stderr);
            let start = said.len().saturating_sub(READY_COMMAND_SAID_BYTES);
            let start = (start..said.len()).find(|i| said.is_char_boundary(*i)).unwrap_or(said.len());
            (Ok(answer.exit_code), said[start..].to_owned())
        }
        Err(e) => (Err(e.to_string()), String::new()),
    }
}

/// How long a daemon gets to answer a status read.
const STATUS_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Opens the watch on the current run's executor, just recorded ready;
/// answers when to look at it next: at the safety sweep if watched.
async fn watch_ready(worker: &Worker, state: &ReconcileState) -> i64 {
    let policy = &worker.config.policy;
    let run = state.current_run.as_ref();
    let Some((run, endpoint)) = run.and_then(|r| Some((r, r.runtime.as_ref()?.endpoint.as_deref()?))) else {
        return now_ms() + policy.watch_poll_ms;
    };
    let target = Target { run_id: &run.id, endpoint };
    let watched = worker.watchers.ensure(worker.executors.as_ref(), &state.workspace.id, target).await;
    sluice_domain::reconcile::next_look(state, watched, now_ms(), policy)
}

/// What one step of a pass asks for next.
enum Step {
    /// Look again at this time (`None`: only when asked).
    Next(Option<i64>),
    /// Go on in this pass: the launch's daemon (of this run) answered, and
    /// its ready record should not wait for another claim.
    Again(RunId),
}

/// Runs one pass. `Ok(None)`: nothing more to do until asked.
pub async fn pass(worker: &Worker, lease: &Lease) -> Result<Option<i64>, StoreError> {
    let mut answered = None;
    for _ in 0..2 {
        match step(worker, lease, answered.as_ref()).await? {
            Step::Next(next) => return Ok(next),
            Step::Again(run_id) => answered = Some(run_id),
        }
    }
    Ok(Some(now_ms()))
}

/// How often a pull under way is reported, at most.
const PULL_REPORT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Launches the executor, recording how far a pull of its image is as it
/// goes (at most once a second, and once at its end); a record that fails
/// is logged and the launch goes on.
async fn launch_reporting_pull(
    worker: &Worker,
    lease: &Lease,
    run_id: &RunId,
    request: &LaunchRequest,
) -> Result<sluice_runtime::Launched, RuntimeError> {
    let Some(progress) = request.image_progress.clone() else { return worker.runtime.launch(request).await };
    let image = format!("{}/{}:{}", request.registry_id, request.repository, request.tag);
    let report = |done: u64, total: u64| {
        let image = image.clone();
        async move {
            if let Err(e) = worker.store.record_image_pulling(lease, run_id, &image, done, total).await {
                tracing::warn!(run = %run_id, error = %e, "cannot record the image pull's progress");
            }
        }
    };
    let launching = worker.runtime.launch(request);
    tokio::pin!(launching);
    let mut reported: Option<(std::time::Instant, u64)> = None;
    loop {
        tokio::select! {
            launched = &mut launching => {
                if let Ok(launched) = &launched && launched.image_pull.is_some() {
                    let (done, total) = progress.read();
                    report(done, total).await;
                }
                return launched;
            }
            _ = tokio::time::sleep(std::time::Duration::from_millis(250)) => {
                let (done, total) = progress.read();
                let due = reported.is_none_or(|(at, before)| at.elapsed() >= PULL_REPORT_EVERY && before != done);
                if total > 0 && done < total && due {
                    report(done, total).await;
                    reported = Some((std::time::Instant::now(), done));
                }
            }
        }
    }
}

/// Waits up to `wait` for a new daemon's first health answer (`answered`:
/// it gave one already): `None` when the executor has no endpoint to ask.
async fn first_answer(
    worker: &Worker,
    run_id: &RunId,
    endpoint: Option<&str>,
    wait: std::time::Duration,
    answered: bool,
) -> Option<bool> {
    let target = Target { run_id, endpoint: endpoint? };
    if answered {
        return Some(true);
    }
    let started = tokio::time::Instant::now();
    while started.elapsed() < wait {
        if worker.executors.healthy(target).await {
            return Some(true);
        }
        // Asked often at first: most daemons answer within a few milliseconds.
        let pause = if started.elapsed() < std::time::Duration::from_millis(100) { 1 } else { 5 };
        tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
    }
    Some(false)
}

/// One observe-decide-act step of a pass.
async fn step(worker: &Worker, lease: &Lease, answered: Option<&RunId>) -> Result<Step, StoreError> {
    let Some(state) = worker.store.load_reconcile_state(&WorkspaceId::from(&lease.subject)).await? else {
        return Ok(Step::Next(None));
    };
    if let Some(host) = run_acted_on(&state).and_then(|r| r.host.as_deref()).filter(|h| *h != worker.config.host) {
        // The claim routes a job to its executor's host; the state moved
        // since. That host's workers take the next pass.
        tracing::debug!(workspace = %lease.subject, %host, "the executor is on another host");
        return Ok(Step::Next(Some(now_ms() + HANDOFF_PAUSE_MS)));
    }
    let observation = observe(worker, &state, answered).await;
    let policy = &worker.config.policy;
    let decision = decide(&state, &observation, now_ms(), policy);
    tracing::debug!(workspace = %lease.subject, ?observation, action = ?decision.action, reason = decision.reason, "reconcile");
    let action = decision.action;
    let store = &worker.store;
    let mut again = None;
    let next = match action {
        Action::Launch { run_id } => {
            let runtime_name = worker.runtime.adapter().as_str();
            let phase = |name: &str, took: std::time::Duration| {
                let phases = &worker.config.metrics.launch_phase_seconds;
                phases.with_label_values(&[runtime_name, name]).observe(took.as_secs_f64());
            };
            if let Some(run) = state.current_run.as_ref().filter(|r| r.launch_attempt == 1) {
                phase("queued", std::time::Duration::from_millis((now_ms() - run.queued_at).max(0) as u64));
            }
            let preparing = std::time::Instant::now();
            match store.place_run(lease, &run_id, &worker.config.host).await? {
                Placement::Here => {}
                Placement::Elsewhere(host) => {
                    tracing::info!(workspace = %lease.subject, run = %run_id, %host, "executor placed on another host");
                    return Ok(Step::Next(Some(now_ms())));
                }
                Placement::NoRoom => {
                    tracing::info!(workspace = %lease.subject, run = %run_id, "no host has room for the executor yet");
                    return Ok(Step::Next(Some(now_ms() + NO_ROOM_PAUSE_MS)));
                }
            }
            let request = launch_request(worker, &state, false).await?;
            phase("prepare", preparing.elapsed());
            let started = std::time::Instant::now();
            let launches = &worker.config.metrics.launches;
            match launch_reporting_pull(worker, lease, &run_id, &request).await {
                Ok(launched) => {
                    for (name, took) in &launched.phases {
                        phase(name, *took);
                    }
                    let takes = &worker.config.metrics.warm_pool_takes;
                    match &launched.pool {
                        // Refilled once this one is recorded ready (or on the
                        // tender's next round): a refill started now would
                        // compete with this create for the cores.
                        Some(sluice_runtime::PoolTake::Taken(image)) => {
                            takes.with_label_values(&[image, "taken"]).inc();
                        }
                        Some(sluice_runtime::PoolTake::Empty(image)) => {
                            takes.with_label_values(&[image, "empty"]).inc();
                            worker.pool_taken.notify_one();
                        }
                        None => {}
                    }
                    if let Some(pull) = launched.image_pull {
                        let metrics = &worker.config.metrics;
                        metrics.image_pulls.with_label_values(&[runtime_name, "pulled"]).inc();
                        metrics.image_pull_bytes.inc_by(pull.bytes);
                        metrics.image_pull_seconds.with_label_values(&[runtime_name]).observe(pull.seconds);
                    }
                    if let Some(run) = &state.current_run {
                        worker.serve_executor(&state.workspace, run).await;
                    }
                    if let Some(pause) = worker.config.pause_after_launch {
                        tracing::warn!(run = %run_id, ?pause, "fault injection: pausing before the launch is recorded");
                        tokio::time::sleep(pause).await;
                    }
                    // A capture-sourced executor with a deadline is drained ahead of it.
                    let lead = worker.config.preservation_lead.as_millis() as i64;
                    let preservation = launched.record.deadline.filter(|_| state.has_capture_source).map(|d| d - lead);
                    let outcome = Outcome::Launched {
                        runtime: launched.record.clone(),
                        published: launched.published.clone(),
                        preservation_starts_at: preservation,
                    };
                    // A new daemon answers within milliseconds as a rule: wait
                    // for it here (briefly, while the launch is recorded) and
                    // record it ready in this same pass.
                    let spawned = std::time::Instant::now();
                    let recording = async {
                        let result = store.record(lease, &run_id, outcome).await;
                        phase("record_launch", spawned.elapsed());
                        result
                    };
                    let wait = FIRST_ANSWER_WAIT.min(std::time::Duration::from_millis(policy.ready_timeout_ms as u64));
                    // A pooled daemon answers its assign once it booted the
                    // run; with no capture session to claim first, its health
                    // has nothing left to wait for.
                    let assigned = matches!(launched.pool, Some(sluice_runtime::PoolTake::Taken(_)))
                        && state.workspace.spec.capture_session().is_none();
                    let answering = first_answer(worker, &run_id, launched.record.endpoint.as_deref(), wait, assigned);
                    let (recorded, answered) = tokio::join!(recording, answering);
                    recorded?;
                    tracing::info!(workspace = %lease.subject, run = %run_id, reference = %launched.record.reference, "executor launched");
                    if let Some(answered) = answered {
                        if answered {
                            phase("first_answer", spawned.elapsed());
                            let seconds = started.elapsed().as_secs_f64();
                            worker.config.metrics.launch_seconds.with_label_values(&[runtime_name]).observe(seconds);
                            again = Some(run_id.clone());
                        }
                        launches.with_label_values(&[runtime_name, if answered { "answered" } else { "silent" }]).inc();
                    }
                    Ok(Some(now_ms()))
                }
                Err(e) => {
                    let run = state.current_run.as_ref().expect("a current run");
                    let retry = e.is_transient() && retry_allowed(run, state.workspace.desired_state, policy);
                    tracing::warn!(workspace = %lease.subject, run = %run_id, error = %e, retry, "launch failed");
                    launches.with_label_values(&[runtime_name, if retry { "retried" } else { "failed" }]).inc();
                    if matches!(e, RuntimeError::Image(_)) {
                        worker.config.metrics.image_pulls.with_label_values(&[runtime_name, "failed"]).inc();
                    }
                    let error = RunError::coded(e.to_string(), e.code());
                    store.record(lease, &run_id, Outcome::Failed { error, retry }).await?;
                    Ok(Some(now_ms()))
                }
            }
        }
        Action::RecordReady { run_id } => {
            // A warm start is ready once its snapshot is in place (again
            // after a crash: restoring is idempotent).
            if let Some(restore) = store.broker_restore(&WorkspaceId::from(&lease.subject)).await? {
                let run = state.current_run.as_ref().expect("a ready run is the current one");
                if let Err(error) = restore_snapshot(worker, run, &restore).await {
                    tracing::warn!(workspace = %lease.subject, run = %run_id, snapshot = %restore.snapshot_id, %error, "warm start failed");
                    let error = RunError::coded(error, "snapshot-restore-failed");
                    store.record(lease, &run_id, Outcome::Failed { error, retry: false }).await?;
                    return Ok(Step::Next(Some(now_ms())));
                }
                tracing::info!(workspace = %lease.subject, run = %run_id, snapshot = %restore.snapshot_id, "snapshot restored");
            }
            if let Some(run) =
                state.current_run.as_ref().filter(|_| !state.workspace.spec.typed().ready_command.is_empty())
            {
                let (outcome, said) = run_ready_command(worker, run, &state.workspace.spec.typed().ready_command).await;
                let started_at = run.started_at.unwrap_or(run.updated_at);
                match sluice_domain::reconcile::ready_check(started_at, now_ms(), policy, outcome, &said) {
                    ReadyCheck::Ready => {}
                    ReadyCheck::Again { at } => return Ok(Step::Next(Some(at))),
                    ReadyCheck::Fail(error) => {
                        tracing::warn!(workspace = %lease.subject, run = %run_id, error = %error.message, "ready command did not pass");
                        store.record(lease, &run_id, Outcome::Failed { error, retry: false }).await?;
                        return Ok(Step::Next(Some(now_ms())));
                    }
                }
            }
            let recording = std::time::Instant::now();
            store.record(lease, &run_id, Outcome::Ready).await?;
            let phases = &worker.config.metrics.launch_phase_seconds;
            let runtime_name = worker.runtime.adapter().as_str();
            phases.with_label_values(&[runtime_name, "record_ready"]).observe(recording.elapsed().as_secs_f64());
            tracing::info!(workspace = %lease.subject, run = %run_id, "executor ready");
            // A pool this launch took from refills now.
            worker.pool_taken.notify_one();
            Ok(Some(watch_ready(worker, &state).await))
        }
        Action::Fail { run_id, error, retry } => {
            tracing::warn!(workspace = %lease.subject, run = %run_id, error = %error.message, retry, "run failed");
            store.record(lease, &run_id, Outcome::Failed { error, retry }).await?;
            Ok(Some(now_ms()))
        }
        Action::Remove { run_id } => {
            let run = state.stale_runs.iter().chain(state.current_run.iter()).find(|r| r.id == run_id);
            let resource_id = run.and_then(|r| r.runtime.as_ref()).map(|r| r.resource_id.clone()).unwrap_or_default();
            if let Some(pause) = worker.config.pause_before_remove {
                tracing::warn!(run = %run_id, ?pause, "fault injection: pausing before the removal");
                tokio::time::sleep(pause).await;
            }
            // Its watch closes as it goes: that is no news.
            worker.watchers.forget(&run_id);
            match worker.runtime.remove(&run_id, &resource_id).await {
                Ok(()) => {
                    worker.forget_executor(&run_id);
                    store.record(lease, &run_id, Outcome::Removed).await?;
                    tracing::info!(workspace = %lease.subject, run = %run_id, reason = decision.reason, "executor removed");
                    Ok(Some(now_ms()))
                }
                Err(e) => match sluice_domain::reconcile::failed_removal(state.has_capture_source, now_ms(), policy) {
                    FailedRemoval::StopFailed { next } => {
                        tracing::warn!(workspace = %lease.subject, run = %run_id, error = %e, "removing the drained executor failed");
                        store.record(lease, &run_id, Outcome::StopFailed { error: e.to_string() }).await?;
                        Ok(Some(next))
                    }
                    FailedRemoval::Retry => {
                        Err(StoreError::Io(std::io::Error::other(format!("removing the executor: {e}"))))
                    }
                },
            }
        }
        Action::Retain { run_id, reason } => {
            tracing::warn!(workspace = %lease.subject, run = %run_id, %reason, "executor retained");
            let recoverable = worker.runtime.recoverable();
            let first_attempt_at = now_ms() + policy.recovery_backoff(0);
            store.record(lease, &run_id, Outcome::Retained { reason, recoverable, first_attempt_at }).await?;
            Ok(Some(now_ms()))
        }
        Action::Drain { run_id } => {
            let run = state.current_run.as_ref().expect("a drain is of the current run");
            let answer = drain_once(worker, run).await;
            let previous = state.drain.as_ref().filter(|d| d.state.is_some()).map(|d| &d.progress);
            let observation = sluice_domain::reconcile::drain_observation(&answer, previous);
            tracing::info!(workspace = %lease.subject, run = %run_id, state = %observation.state, detail = ?observation.detail, "drain");
            let state = observation.state;
            store.record(lease, &run_id, Outcome::DrainObserved(observation)).await?;
            Ok(Some(sluice_domain::reconcile::after_drain(state, now_ms(), policy)))
        }
        Action::Recover { run_id } => {
            let request = launch_request(worker, &state, true).await?;
            let attempts = state.drain.as_ref().and_then(|d| d.retention.as_ref()).map_or(0, |r| r.attempts) + 1;
            let next = now_ms() + policy.recovery_backoff(attempts);
            match worker.runtime.launch(&request).await {
                Ok(_) => {
                    if let Some(run) = &state.current_run {
                        worker.serve_executor(&state.workspace, run).await;
                    }
                    tracing::info!(workspace = %lease.subject, run = %run_id, attempts, "retained executor restarted on its own disk");
                    store.record(lease, &run_id, Outcome::RecoveryAttempted { error: None, next_at: next }).await?;
                    Ok(Some(now_ms() + policy.drain_poll_ms))
                }
                Err(e) => {
                    tracing::warn!(workspace = %lease.subject, run = %run_id, attempts, error = %e, "recovery failed");
                    let error = Some(e.to_string());
                    store.record(lease, &run_id, Outcome::RecoveryAttempted { error, next_at: next }).await?;
                    Ok(Some(next))
                }
            }
        }
        Action::HoldRecovery { run_id, reason } => {
            let attempts = state.drain.as_ref().and_then(|d| d.retention.as_ref()).map_or(0, |r| r.attempts) + 1;
            let next = now_ms() + policy.recovery_backoff(attempts);
            tracing::warn!(workspace = %lease.subject, run = %run_id, %reason, "recovery held");
            store.record(lease, &run_id, Outcome::RecoveryAttempted { error: Some(reason), next_at: next }).await?;
            Ok(Some(next))
        }
        Action::Lose { run_id, reason } => {
            tracing::error!(workspace = %lease.subject, run = %run_id, %reason, "executor lost");
            worker.forget_executor(&run_id);
            store.record(lease, &run_id, Outcome::Lost { reason }).await?;
            Ok(Some(now_ms()))
        }
        Action::Preserve { run_id } => {
            tracing::info!(workspace = %lease.subject, run = %run_id, "draining ahead of the runtime's deadline");
            store.record(lease, &run_id, Outcome::PreservationBegun).await?;
            Ok(Some(now_ms()))
        }
        Action::Cancel { run_id } => {
            store.record(lease, &run_id, Outcome::Cancelled).await?;
            Ok(Some(now_ms()))
        }
        Action::Readopt { run_id } => {
            store.record(lease, &run_id, Outcome::Readopted).await?;
            tracing::info!(workspace = %lease.subject, run = %run_id, "its host is back: executor adopted");
            Ok(Some(watch_ready(worker, &state).await))
        }
        Action::Wait { at } => Ok(Some(at)),
        Action::Done => Ok(None),
    };
    Ok(match again {
        Some(run_id) => Step::Again(run_id),
        None => Step::Next(next?),
    })
}
