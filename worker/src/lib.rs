//! The sluice worker: claims durable jobs under leases and runs them
//! (reconcile a workspace's executor, run an exec run's commands), and runs
//! the periodic sweeps (expiry reaper, orphaned-resource sweep, create-key
//! record expiry) on cron schedules.
//!
//! Every action is derived from stored state, so a worker killed at any
//! point is replaced by another that continues: its leases run out, the
//! next claim takes a new fencing generation, and anything the dead worker
//! still tries to write is refused.

pub mod cadence;
mod exec_job;
pub mod executors;
pub mod internal;
pub mod reconcile;
pub mod sleeper;
pub mod snapshots;
mod sweeps;
pub mod templates;
pub mod watchers;
pub mod webhooks;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_store::clock::now_ms;
use sluice_store::{JobKind, Lease, Store, StoreError};
use tokio::sync::{Notify, Semaphore};

pub use cadence::Cadence;
use sluice_domain::ids::{RunId, SessionId, WorkerId};
pub use sluice_runtime::Runtime;
pub use sweeps::maintain;

/// Create-key records are kept at least this long.
pub const MIN_KEY_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// How long events, finished exec runs and removed executors' drain
/// reports are kept; each at least [`MIN_RECORD_RETENTION`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRetention {
    pub events: Duration,
    pub exec_results: Duration,
    pub drain_reports: Duration,
}

/// The shortest any record is kept, whatever is configured.
pub const MIN_RECORD_RETENTION: Duration = Duration::from_secs(24 * 3600);

const DAY: u64 = 24 * 3600;

impl Default for RecordRetention {
    fn default() -> Self {
        RecordRetention {
            events: Duration::from_secs(180 * DAY),
            exec_results: Duration::from_secs(30 * DAY),
            drain_reports: Duration::from_secs(30 * DAY),
        }
    }
}

impl RecordRetention {
    /// How long `record` is kept.
    pub fn of(&self, record: sluice_store::records::Record) -> Duration {
        use sluice_store::records::Record;
        let configured = match record {
            Record::Events => self.events,
            Record::ExecResults => self.exec_results,
            Record::DrainReports => self.drain_reports,
        };
        configured.max(MIN_RECORD_RETENTION)
    }
}

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Names this worker as a lease owner and a fleet member.
    pub id: WorkerId,
    /// The host its executors run on (workers of one host share its data
    /// directory and runtime).
    pub host: String,
    /// How many executors its host may hold (`None`: no limit).
    pub capacity: Option<i64>,
    /// Where the rest of sluice reaches its internal API, if it serves one.
    pub internal_url: Option<String>,
    /// How long a host's workers may be silent before it is unreachable.
    pub host_grace: Duration,
    /// How long a claimed job's lease lasts without a heartbeat.
    pub lease: Duration,
    /// How many jobs run at once.
    pub concurrency: usize,
    /// The claim loop's base cadence and its backoff cap.
    pub claim_base: Duration,
    pub claim_cap: Duration,
    /// How long shutdown waits for admitted work.
    pub drain_timeout: Duration,
    pub policy: sluice_domain::reconcile::Policy,
    /// How long create-key records are kept; raised to seven days if lower.
    pub key_retention: Duration,
    /// Cron schedules (with seconds) of the sweeps.
    pub reaper_schedule: String,
    pub orphan_schedule: String,
    pub maintenance_schedule: String,
    /// When the object store is collected, and the grace its newest objects get.
    pub collect_schedule: String,
    pub collect_grace: Duration,
    /// How long the records that would otherwise grow forever are kept.
    pub record_retention: RecordRetention,
    /// Workspaces ended longer ago than this are deleted (`None`: kept until
    /// their owners delete them).
    pub purge_ended_after: Option<Duration>,
    /// Fault injection for crash tests: pause this long after a runtime
    /// made an executor and before the launch is recorded.
    pub pause_after_launch: Option<Duration>,
    /// How often daemons snap capture-sourced worktrees.
    pub capture_interval: Duration,
    /// How long a capture-sourced workspace may go unused before it sleeps,
    /// unless its spec says (`None`: only those whose spec says sleep).
    pub sleep_after: Option<Duration>,
    /// How long ahead of a runtime's deadline the final drain starts.
    pub preservation_lead: Duration,
    /// The bound a drain gives each FINAL flush.
    pub drain_flush_deadline: Duration,
    /// Fault injection for crash tests: pause this long before removing an
    /// executor.
    pub pause_before_remove: Option<Duration>,
    /// How many times a job may fail (or lose its worker) before it is
    /// parked for an operator.
    pub max_job_attempts: i64,
    /// Where the egress proxies look names up (`--egress-hosts`).
    pub egress_resolver: sluice_runtime::egress::Resolver,
    /// Certificates (PEM) a host the egress proxies add credentials for may
    /// present, besides the system's roots (`--egress-trust`).
    pub egress_trust: Vec<u8>,
    /// This process's metrics.
    pub metrics: Arc<sluice_telemetry::Metrics>,
    /// What webhook deliveries may do.
    pub webhooks: webhooks::WebhookPolicy,
    /// How this worker builds template images (`None`: it does not).
    pub template_builder: Option<Arc<templates::TemplateBuilder>>,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            id: WorkerId::from(default_worker_id()),
            host: host_name(),
            capacity: None,
            internal_url: None,
            host_grace: Duration::from_secs(60),
            lease: Duration::from_secs(60),
            concurrency: 16,
            claim_base: Duration::from_millis(50),
            claim_cap: Duration::from_secs(2),
            drain_timeout: Duration::from_secs(30),
            policy: sluice_domain::reconcile::Policy::default(),
            key_retention: MIN_KEY_RETENTION,
            reaper_schedule: "*/5 * * * * *".into(),
            orphan_schedule: "0 * * * * *".into(),
            maintenance_schedule: "0 0 * * * *".into(),
            collect_schedule: "0 17 * * * *".into(),
            collect_grace: Duration::from_secs(3600),
            record_retention: RecordRetention::default(),
            purge_ended_after: None,
            pause_after_launch: None,
            capture_interval: Duration::from_secs(10),
            sleep_after: None,
            preservation_lead: Duration::from_secs(300),
            drain_flush_deadline: Duration::from_secs(20),
            pause_before_remove: None,
            max_job_attempts: 10,
            egress_resolver: sluice_runtime::egress::Resolver::System,
            egress_trust: Vec::new(),
            metrics: Default::default(),
            webhooks: webhooks::WebhookPolicy::default(),
            template_builder: None,
        }
    }
}

/// The kernel's name for this machine (`localhost` if it has none).
pub fn host_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    match name.trim() {
        "" => "localhost".to_owned(),
        name => name.to_owned(),
    }
}

/// A lease-owner name unique to this process.
pub fn default_worker_id() -> String {
    format!("{}-{}-{}", host_name(), std::process::id(), &sluice_store::clock::new_id("w")[28..])
}

impl WorkerConfig {
    /// What this worker declares of itself to the fleet.
    pub fn member(&self, runtime: &str) -> sluice_store::fleet::WorkerMember {
        sluice_store::fleet::WorkerMember {
            id: self.id.clone(),
            host: self.host.clone(),
            runtime: runtime.to_owned(),
            capacity: self.capacity,
            internal_url: self.internal_url.clone(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            warm_pool: Vec::new(),
            images: Vec::new(),
            builder: self.template_builder.as_ref().map(|b| b.builder.name().to_owned()),
        }
    }

    fn heartbeat_interval_ms(&self) -> i64 {
        sluice_domain::fleet::heartbeat_interval_ms(self.host_grace.as_millis() as i64)
    }
}

/// What every job of this worker shares.
pub struct Worker {
    pub store: Store,
    pub runtime: Arc<dyn Runtime>,
    /// Every call into an executor's daemon goes through here.
    pub executors: Arc<dyn sluice_executor::Executors>,
    pub config: WorkerConfig,
    /// Signalled when work may have become due (an API in this process
    /// enqueued, or a pass asked to be looked at again soon).
    pub wake: Arc<Notify>,
    /// The earliest time a finished pass asked to run again.
    next_due: Mutex<Option<i64>>,
    /// Serves the registrar to the capture-sourced executors this worker runs.
    pub registrars: Arc<sluice_capture_store::registrar::RegistrarHost>,
    /// Serves the egress proxy to the executors with an allowlist.
    pub egress: Arc<sluice_runtime::egress::EgressHost>,
    /// Posts the feed to webhook endpoints.
    pub(crate) deliverer: webhooks::Deliverer,
    /// The warm pool as the runtime last tended it.
    pool_levels: Mutex<Vec<sluice_runtime::pool::PoolLevel>>,
    /// Signalled when a launch took from the warm pool: it refills now.
    pub(crate) pool_taken: Notify,
    /// The watch streams held open on this worker's ready executors.
    pub watchers: Arc<watchers::Watchers>,
}

impl Worker {
    pub fn new(
        store: Store,
        runtime: Arc<dyn Runtime>,
        config: WorkerConfig,
        wake: Arc<Notify>,
        objects: sluice_capture_store::objects::Objects,
    ) -> Arc<Worker> {
        let executors = Arc::new(executors::LocalExecutors::new(store.clone(), Some(objects.clone())));
        Self::with_executors(store, runtime, executors, config, wake, objects)
    }

    /// A worker that reaches executors through `executors` (an in-process
    /// fake, in unit tests and the simulation).
    pub fn with_executors(
        store: Store,
        runtime: Arc<dyn Runtime>,
        executors: Arc<dyn sluice_executor::Executors>,
        config: WorkerConfig,
        wake: Arc<Notify>,
        objects: sluice_capture_store::objects::Objects,
    ) -> Arc<Worker> {
        let kinds: Vec<&str> = JobKind::ALL.iter().map(|k| k.as_str()).collect();
        config.metrics.start_worker_counters(runtime.adapter().as_str(), &kinds);
        let registrars =
            sluice_capture_store::registrar::RegistrarHost::new(store.clone(), objects, config.metrics.clone());
        let refusals = config.metrics.egress_refusals.clone();
        let egress = sluice_runtime::egress::EgressHost::new(config.egress_resolver.clone(), refusals);
        let egress = Arc::new(match egress_brokering(&store, &config) {
            Ok((authority, upstream)) => egress.brokering(authority, upstream, config.metrics.egress_brokered.clone()),
            Err(e) => {
                tracing::warn!(error = %e, "the egress proxies cannot add credentials");
                egress
            }
        });
        let deliverer = webhooks::Deliverer::new(config.webhooks.clone());
        let watchers = watchers::Watchers::new(store.clone(), wake.clone(), config.metrics.watched_executors.clone());
        Arc::new(Worker {
            store,
            runtime,
            executors,
            config,
            wake,
            next_due: Mutex::new(None),
            registrars,
            egress,
            deliverer,
            pool_levels: Mutex::new(Vec::new()),
            pool_taken: Notify::new(),
            watchers,
        })
    }

    /// Serves a run's executor what its spec needs from this worker, unless
    /// this process already does: the registrar to a capture-sourced one,
    /// the egress proxy to one with an allowlist.
    pub(crate) async fn serve_executor(&self, workspace: &sluice_store::Workspace, run: &sluice_store::Run) {
        // The runtime mounts the registrar's directory into the executor;
        // the proxy's socket sits beside it.
        let socket = self.runtime.registrar_socket(&run.id);
        if let Some(session_id) = workspace.spec.capture_session().map(SessionId::from) {
            let binding =
                sluice_capture_store::registrar::Binding { run_id: run.id.clone(), session_id, launch: run.launch() };
            if let Err(e) =
                self.registrars.ensure(binding, || sluice_runtime::sockets::bind_for_directory_owner(&socket))
            {
                tracing::warn!(run = %run.id, error = %e, "cannot serve the registrar to the executor");
            }
        }
        if let Some(allowlist) = workspace.spec.typed().egress.as_ref().filter(|_| !self.egress.serving(&run.id)) {
            let socket = socket.with_file_name(sluice_protocol::egress::SOCKET_NAME);
            let secrets = match self.credential_secrets(workspace, allowlist).await {
                Ok(secrets) => secrets,
                Err(e) => {
                    tracing::warn!(run = %run.id, error = %e, "cannot open the credentials the egress proxy adds");
                    return;
                }
            };
            if let Err(e) = self.egress.ensure(&socket, &run.id, &workspace.id, allowlist, secrets) {
                tracing::warn!(run = %run.id, error = %e, "cannot serve the egress proxy to the executor");
            }
        }
    }

    /// The values of the `secretEnv` keys the allowlist's credentials are
    /// made from (none opened when it names none).
    async fn credential_secrets(
        &self,
        workspace: &sluice_store::Workspace,
        allowlist: &sluice_domain::egress::Allowlist,
    ) -> Result<std::collections::HashMap<String, sluice_runtime::egress::credentials::SecretValue>, StoreError> {
        let keys = allowlist.injected_keys();
        if keys.is_empty() {
            return Ok(Default::default());
        }
        let Some(bytes) = self.store.open_secret(&workspace.id, sluice_store::SecretKind::SecretEnv).await? else {
            return Ok(Default::default());
        };
        let env: std::collections::BTreeMap<String, String> =
            serde_json::from_slice(bytes.expose()).map_err(|_| StoreError::Corrupt("secretEnv".into()))?;
        Ok(env
            .into_iter()
            .filter(|(key, _)| keys.contains(key.as_str()))
            .map(|(key, value)| (key, sluice_runtime::egress::credentials::SecretValue(value)))
            .collect())
    }

    /// Stops serving a removed or lost run's executor.
    pub(crate) fn forget_executor(&self, run_id: &RunId) {
        self.watchers.forget(run_id);
        self.registrars.forget(run_id);
        self.egress.forget(run_id);
    }

    /// The object store captures and snapshots are kept in.
    pub fn objects(&self) -> &sluice_capture_store::objects::Objects {
        &self.registrars.objects
    }

    /// Beats once: the worker is alive, and its host reachable.
    pub async fn beat(&self) -> Result<(), StoreError> {
        let fresh_for = sluice_domain::fleet::heartbeat_fresh_for_ms(self.config.host_grace.as_millis() as i64);
        let mut member = self.config.member(self.runtime.adapter().as_str());
        member.warm_pool = self.pool_levels();
        member.images = self.runtime.images();
        let metrics = &self.config.metrics;
        metrics.image_cache_bytes.set(member.images.iter().map(|i| i.size_bytes as i64).sum());
        metrics.image_cache_images.set(member.images.len() as i64);
        self.store.beat(&member, fresh_for).await
    }

    /// The warm pool as the runtime last tended it.
    pub fn pool_levels(&self) -> Vec<sluice_runtime::pool::PoolLevel> {
        self.pool_levels.lock().unwrap().clone()
    }

    fn note_next(&self, at: i64) {
        let mut next = self.next_due.lock().unwrap();
        *next = Some(next.map_or(at, |n| n.min(at)));
    }

    fn take_next(&self) -> Option<i64> {
        self.next_due.lock().unwrap().take()
    }
}

/// Parks a job claimed too often without a pass finishing; answers
/// whether it did (then the job is not run).
async fn parked_as_lost(worker: &Worker, lease: &Lease) -> bool {
    if !sluice_domain::jobs::lost_too_often(lease.attempts, worker.config.max_job_attempts) {
        return false;
    }
    let reason = format!("claimed {} times without a pass finishing: each worker holding it was lost", lease.attempts);
    tracing::error!(job = %lease.subject, kind = %lease.kind, "{reason}; the job is parked");
    if let Err(e) = worker.store.park_job(lease, &reason).await {
        tracing::warn!(job = %lease.subject, error = %e, "could not park the job; its lease will run out");
    }
    true
}

/// How a pass ended, for [`settle`] to record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PassEnd {
    /// The job comes due again at this time (Unix ms).
    Again(i64),
    /// Nothing is left to do: the job is removed.
    Done,
    /// The pass ended its job itself, in the commit that recorded its
    /// outcome (an exec run's end): nothing is left to record.
    EndedItsJob,
}

impl PassEnd {
    /// A pass that leaves its job to [`settle`]: due again at `next`, or done.
    fn next(next: Option<i64>) -> PassEnd {
        next.map_or(PassEnd::Done, PassEnd::Again)
    }
}

/// One pass of the job, in a span of its own named by the job's kind and
/// carrying its workspace (or exec run).
async fn pass(worker: &Worker, lease: &Lease) -> Result<PassEnd, StoreError> {
    let span = tracing::info_span!(
        "job",
        otel.name = %format!("job {}", lease.kind),
        job.kind = %lease.kind,
        workspace = tracing::field::Empty,
        exec_run = tracing::field::Empty,
        webhook = tracing::field::Empty,
        build = tracing::field::Empty,
        generation = lease.generation,
    );
    match lease.kind {
        JobKind::Reconcile => span.record("workspace", lease.subject.as_str()),
        JobKind::Exec => span.record("exec_run", lease.subject.as_str()),
        JobKind::Deliver => span.record("webhook", lease.subject.as_str()),
        JobKind::Build => span.record("build", lease.subject.as_str()),
    };
    tracing::Instrument::instrument(run_pass(worker, lease), span).await
}

async fn run_pass(worker: &Worker, lease: &Lease) -> Result<PassEnd, StoreError> {
    if lease.taken_over {
        worker.config.metrics.lease_takeovers.inc();
        tracing::info!(job = %lease.subject, kind = %lease.kind, "took the job over from a lapsed lease");
    }
    match lease.kind {
        JobKind::Reconcile => reconcile::pass(worker, lease).await.map(PassEnd::next),
        JobKind::Exec => exec_job::run(worker, lease).await,
        JobKind::Deliver => webhooks::pass(worker, lease).await.map(PassEnd::next),
        JobKind::Build => templates::build(worker, lease).await,
    }
}

/// Claims one due job and runs one pass of it to its end, with no
/// heartbeat and no pause: whoever steps the worker (a unit test, the
/// simulation) owns the clock. Answers the job it ran, if one was due.
pub async fn step(worker: &Worker) -> Result<Option<(JobKind, String)>, StoreError> {
    let lease_ms = worker.config.lease.as_millis() as i64;
    worker.beat().await?;
    let claimed = worker.store.claim_jobs(&worker.config.id, &worker.config.host, 1, lease_ms).await?;
    let Some(lease) = claimed.into_iter().next() else { return Ok(None) };
    let job = (lease.kind, lease.subject.clone());
    if !parked_as_lost(worker, &lease).await {
        let outcome = pass(worker, &lease).await;
        let finish = settle(worker, &lease, outcome);
        if let Err(e) = write_finish(worker, &finish).await {
            tracing::warn!(job = %lease.subject, error = %e, "could not finish the job; its lease will run out");
        }
    }
    Ok(Some(job))
}

/// Runs one job under its lease, renewing the lease while it runs, and
/// records when it should run again.
async fn run_job(worker: Arc<Worker>, lease: Lease) {
    if parked_as_lost(&worker, &lease).await {
        return;
    }
    let kept = worker.store.keep_renewed(lease.clone(), worker.config.lease.as_millis() as i64);
    let outcome = pass(&worker, &lease).await;
    let lease = kept.current();
    drop(kept);
    let finish = settle(&worker, &lease, outcome);
    finish_until_written(&worker, &finish).await;
}

/// What a pass's end writes to its job.
enum Finish {
    /// Runs again at this time (`None`: only when asked), with the error
    /// that ended the pass, under the lease as it stands.
    Next {
        lease: Lease,
        at: Option<i64>,
        error: Option<String>,
    },
    Park {
        lease: Lease,
        error: String,
    },
    /// Nothing: the pass ended its job itself, or lost it.
    Nothing,
}

/// Decides how a pass ended (counted and logged once): when the job runs
/// next, or that it is done, retried after a pause, or parked.
fn settle(worker: &Worker, lease: &Lease, outcome: Result<PassEnd, StoreError>) -> Finish {
    let max_attempts = worker.config.max_job_attempts;
    let passes = &worker.config.metrics.job_passes;
    let counted = |outcome: &str| passes.with_label_values(&[lease.kind.as_str(), outcome]).inc();
    match outcome {
        Ok(PassEnd::Again(at)) => {
            counted("again");
            worker.note_next(at);
            Finish::Next { lease: lease.clone(), at: Some(at), error: None }
        }
        Ok(PassEnd::Done) => {
            counted("done");
            Finish::Next { lease: lease.clone(), at: None, error: None }
        }
        Ok(PassEnd::EndedItsJob) => {
            counted("done");
            Finish::Nothing
        }
        Err(e @ StoreError::Fenced { .. }) => {
            counted("fenced");
            tracing::warn!(job = %lease.subject, error = %e, "a write was refused: another worker holds this job now");
            Finish::Nothing
        }
        Err(e) => {
            let counts = !matches!(e, StoreError::Unavailable(_));
            match sluice_domain::jobs::after_failure(lease.attempts, max_attempts, counts) {
                sluice_domain::jobs::AfterFailure::Retry { pause_ms, attempts } => {
                    counted("failed");
                    tracing::warn!(job = %lease.subject, error = %e, retry_in_ms = pause_ms, "job failed; it will be retried");
                    worker.note_next(now_ms() + pause_ms);
                    let lease = Lease { attempts, ..lease.clone() };
                    Finish::Next { lease, at: Some(now_ms() + pause_ms), error: Some(e.to_string()) }
                }
                sluice_domain::jobs::AfterFailure::Park { attempts } => {
                    counted("parked");
                    tracing::error!(job = %lease.subject, kind = %lease.kind, error = %e, attempts, "job failed too often; it is parked");
                    Finish::Park { lease: lease.clone(), error: e.to_string() }
                }
            }
        }
    }
}

/// Writes a pass's end once.
async fn write_finish(worker: &Worker, finish: &Finish) -> Result<(), StoreError> {
    match finish {
        Finish::Next { lease, at, error } => worker.store.finish_job(lease, *at, error.as_deref()).await,
        Finish::Park { lease, error } => worker.store.park_job(lease, error).await,
        Finish::Nothing => Ok(()),
    }
}

/// The first and the longest pause between attempts to write a pass's end.
const FINISH_RETRY_FIRST: Duration = Duration::from_millis(200);
const FINISH_RETRY_MOST: Duration = Duration::from_secs(1);

/// Writes a pass's end, trying again while the database cannot take it
/// (down, or its disk full) until its lease runs out: the job is free for
/// its next pass within a second of the database's return, rather than
/// once the lease lapses. A write refused because another worker holds
/// the job now ends it (the fence says this pass's end no longer counts).
async fn finish_until_written(worker: &Worker, finish: &Finish) {
    let (Finish::Next { lease, .. } | Finish::Park { lease, .. }) = finish else { return };
    let mut pause = FINISH_RETRY_FIRST;
    let mut failed = false;
    loop {
        match write_finish(worker, finish).await {
            Ok(()) => {
                if failed {
                    tracing::info!(job = %lease.subject, "the job's end is written: the database answers again");
                }
                return;
            }
            Err(e @ StoreError::Fenced { .. }) => {
                tracing::warn!(job = %lease.subject, error = %e, "the job's end was refused: another worker holds it now");
                return;
            }
            Err(e) if now_ms() + pause.as_millis() as i64 >= lease.expires_at => {
                tracing::warn!(job = %lease.subject, error = %e, "could not finish the job before its lease ran out");
                return;
            }
            Err(e) => {
                if !failed {
                    tracing::warn!(job = %lease.subject, error = %e, "could not finish the job; trying again until its lease runs out");
                    failed = true;
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(FINISH_RETRY_MOST);
            }
        }
    }
}

/// How the claim loop's wait before its first claim ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FirstWait {
    Shutdown,
    /// Work was enqueued in this process.
    Woken,
    Elapsed,
}

/// The wait before the first claim: a random `delay` spreads a fleet's
/// first polls after a restart, but work enqueued in this process (a wake)
/// is claimed at once: the first create after a start must not wait out
/// the spread.
async fn first_wait(
    delay: Duration,
    wake: &Notify,
    shutdown: std::pin::Pin<&mut impl Future<Output = ()>>,
) -> FirstWait {
    tokio::select! {
        _ = shutdown => FirstWait::Shutdown,
        _ = wake.notified() => FirstWait::Woken,
        _ = tokio::time::sleep(delay) => FirstWait::Elapsed,
    }
}

/// Claims and runs jobs until `shutdown` resolves, then stops claiming,
/// waits (within the drain bound) for admitted jobs, and returns. A job cut
/// off by the bound is left to its lease: the next worker finishes it.
pub async fn run_jobs(worker: Arc<Worker>, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    let slots = Arc::new(Semaphore::new(worker.config.concurrency));
    let mut cadence = Cadence::new(worker.config.claim_base, worker.config.claim_cap);
    if first_wait(cadence.startup_delay(), &worker.wake, shutdown.as_mut()).await == FirstWait::Shutdown {
        return;
    }
    let lease_ms = worker.config.lease.as_millis() as i64;
    let mut running = tokio::task::JoinSet::new();
    loop {
        while running.try_join_next().is_some() {}
        let free = slots.available_permits();
        let delay = if free == 0 {
            Some(worker.config.claim_base)
        } else {
            match worker.store.claim_jobs(&worker.config.id, &worker.config.host, free as i64, lease_ms).await {
                Ok(leases) if !leases.is_empty() => {
                    cadence.work();
                    for lease in leases {
                        let permit = slots.clone().acquire_owned().await.expect("the semaphore is never closed");
                        let worker = worker.clone();
                        let span = tracing::info_span!(
                            "job",
                            kind = %lease.kind,
                            subject = %lease.subject,
                            generation = lease.generation
                        );
                        running.spawn(tracing::Instrument::instrument(
                            async move {
                                run_job(worker.clone(), lease).await;
                                drop(permit);
                                worker.wake.notify_one();
                            },
                            span,
                        ));
                    }
                    None
                }
                Ok(_) => Some(cadence.idle()),
                Err(e) => {
                    tracing::warn!(error = %e, "claiming jobs failed");
                    Some(cadence.idle())
                }
            }
        };
        if let Some(mut delay) = delay {
            if let Some(at) = worker.take_next() {
                let until = Duration::from_millis((at - now_ms()).max(0) as u64);
                if until < delay {
                    delay = until;
                } else {
                    worker.note_next(at);
                }
            }
            tokio::select! {
                _ = &mut shutdown => break,
                _ = worker.wake.notified() => cadence.work(),
                _ = tokio::time::sleep(delay) => {}
            }
        } else if futures::FutureExt::now_or_never(&mut shutdown).is_some() {
            break;
        }
    }
    tracing::info!(admitted = running.len(), "worker stops claiming; waiting for admitted jobs");
    let drained =
        tokio::time::timeout(worker.config.drain_timeout, async { while running.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::warn!(left = running.len(), "drain bound reached; unfinished jobs are left to their leases");
        running.abort_all();
    }
}

/// Runs the job loop and the sweeps until `shutdown` resolves, beating
/// for the worker's membership all the while; leaves the fleet at the end.
pub async fn run(worker: Arc<Worker>, shutdown: impl Future<Output = ()> + Send + 'static) {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    if let Err(e) = worker.beat().await {
        tracing::warn!(error = %e, "could not join the fleet; retrying with the heartbeat");
    }
    // This worker watches none of its host's ready executors yet: each
    // one's next pass opens its watch, so it comes now, not at its sweep.
    match worker.store.hasten_ready_on_host(&worker.config.host).await {
        Ok(0) => {}
        Ok(hastened) => tracing::info!(hastened, "looking at this host's ready executors to watch them"),
        Err(e) => tracing::warn!(error = %e, "cannot hasten the looks at ready executors; they come at their sweep"),
    }
    let heartbeat = tokio::spawn(heartbeat(worker.clone()));
    let announcements = tokio::spawn(hear_announcements(worker.clone()));
    let pool = tokio::spawn(tend_pool(worker.clone()));
    let sleeper = tokio::spawn(sleeper::run(worker.clone()));
    let sweeps = tokio::spawn(sweeps::run(worker.clone(), stop_rx));
    let stopping = async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    };
    run_jobs(worker.clone(), stopping).await;
    let _ = sweeps.await;
    heartbeat.abort();
    announcements.abort();
    pool.abort();
    sleeper.abort();
    if let Err(e) = worker.store.leave(&worker.config.id).await {
        tracing::warn!(error = %e, "could not leave the fleet; the membership lapses with its heartbeat");
    }
    tracing::info!("worker stopped");
}

/// Wakes the claim loop whenever the database announces a job made due
/// (PostgreSQL: an API or worker in another process enqueued). Claiming on
/// the loop's cadence stays the fallback while the database cannot be
/// heard; on SQLite the enqueuing process wakes its own worker.
async fn hear_announcements(worker: Arc<Worker>) {
    let mut retry = Cadence::new(Duration::from_millis(500), Duration::from_secs(30));
    loop {
        match worker.store.job_announcements().await {
            Ok(None) => return,
            Ok(Some(mut announcements)) => {
                retry.work();
                // Anything announced before the listener was in place is
                // claimed by this first wake.
                worker.wake.notify_one();
                while announcements.next().await.is_ok() {
                    worker.wake.notify_one();
                }
                tracing::warn!("lost the database's job announcements; listening again");
            }
            Err(e) => tracing::warn!(error = %e, "cannot listen for job announcements; claiming on the cadence alone"),
        }
        tokio::time::sleep(retry.idle()).await;
    }
}

/// How often the warm pool is tended besides after each take: a pooled
/// executor that died is replaced within this.
const POOL_TEND_INTERVAL: Duration = Duration::from_secs(2);

/// Keeps the runtime's warm pool at its size until aborted: after every
/// take, and on a slow cadence. A runtime with no pool is tended once (it
/// removes what an earlier configuration pooled) and then left alone.
async fn tend_pool(worker: Arc<Worker>) {
    loop {
        match worker.runtime.tend_pool().await {
            Ok(levels) => {
                let gauges = &worker.config.metrics.warm_pool_executors;
                for level in &levels {
                    gauges.with_label_values(&[&level.image, "idle"]).set(level.idle.into());
                    gauges.with_label_values(&[&level.image, "starting"]).set(level.starting.into());
                    gauges.with_label_values(&[&level.image, "target"]).set(level.target.into());
                }
                let none = levels.is_empty();
                *worker.pool_levels.lock().unwrap() = levels;
                if none {
                    return;
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot tend the warm pool"),
        }
        tokio::select! {
            _ = worker.pool_taken.notified() => {}
            _ = tokio::time::sleep(POOL_TEND_INTERVAL) => {}
        }
    }
}

/// Beats for the worker's membership until aborted, and marks the hosts
/// whose workers have all gone silent for the grace unreachable.
async fn heartbeat(worker: Arc<Worker>) {
    let interval = Duration::from_millis(worker.config.heartbeat_interval_ms() as u64);
    let grace_ms = worker.config.host_grace.as_millis() as i64;
    loop {
        tokio::time::sleep(interval).await;
        if let Err(e) = worker.beat().await {
            tracing::warn!(error = %e, "heartbeat failed");
            continue;
        }
        if let Err(e) = worker.store.sweep_unreachable_hosts(grace_ms).await {
            tracing::warn!(error = %e, "could not look for unreachable hosts");
        }
    }
}

/// The install's egress authority (from the seal key: every worker has the
/// same) and the roots brokered hosts are checked against.
fn egress_brokering(
    store: &Store,
    config: &WorkerConfig,
) -> Result<(Arc<sluice_runtime::egress::credentials::Authority>, Arc<rustls::ClientConfig>), String> {
    use sluice_runtime::egress::credentials::{Authority, upstream_tls};
    let authority = Authority::from_key(store.sealer().derived_ed25519_pkcs8("egress authority").expose().clone())?;
    Ok((Arc::new(authority), upstream_tls(&config.egress_trust)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_claim_waits_out_its_spread_unless_work_wakes_it() {
        let never = std::future::pending::<()>();
        tokio::pin!(never);
        let wake = Notify::new();
        let spread = Duration::from_millis(20);
        let started = std::time::Instant::now();
        assert_eq!(first_wait(spread, &wake, never.as_mut()).await, FirstWait::Elapsed);
        assert!(started.elapsed() >= spread, "the spread was waited out");

        // A create enqueued before the loop starts (or while it waits) ends
        // even an hour's spread.
        wake.notify_one();
        let hour = Duration::from_secs(3600);
        let woken = tokio::time::timeout(Duration::from_secs(30), first_wait(hour, &wake, never.as_mut())).await;
        assert_eq!(woken, Ok(FirstWait::Woken));

        let stopping = std::future::ready(());
        tokio::pin!(stopping);
        assert_eq!(first_wait(hour, &wake, stopping.as_mut()).await, FirstWait::Shutdown);
    }
}
