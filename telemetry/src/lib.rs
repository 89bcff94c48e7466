//! What sluice tells operators about itself: one Prometheus registry per
//! process, holding what that process counts (requests, launches, lease
//! takeovers, captures shipped, collections, egress refusals) and the state
//! gauges an API sets from the store at each scrape (workspaces, drains,
//! retained executors, the job queue, the fleet, work at risk).
//!
//! Labels are bounded: routes are the router's patterns, never paths;
//! per-workspace series exist only for executors retained or at risk, and
//! at most [`MAX_LABELLED`] of each. No label ever holds an argv, an env
//! value, a path or a secret.

pub mod traces;

pub use prometheus;
use prometheus::{
    Encoder, Gauge, GaugeVec, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

/// The most per-workspace series one state gauge carries; the rest are
/// counted in the unlabelled totals only.
pub const MAX_LABELLED: usize = 200;

/// The outcomes the outcome-labelled counters count, each shown from 0.
pub const LAUNCH_OUTCOMES: [&str; 4] = ["answered", "silent", "failed", "retried"];
pub const JOB_OUTCOMES: [&str; 5] = ["done", "again", "failed", "parked", "fenced"];
pub const GC_OUTCOMES: [&str; 2] = ["done", "failed"];

/// The content type of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Every metric of a sluice process.
pub struct Metrics {
    registry: Registry,

    // Counted by the API.
    pub request_seconds: HistogramVec,

    // Counted by workers.
    pub launches: IntCounterVec,
    pub launch_seconds: HistogramVec,
    pub launch_phase_seconds: HistogramVec,
    pub warm_pool_executors: IntGaugeVec,
    pub warm_pool_takes: IntCounterVec,
    pub watched_executors: IntGauge,
    pub lease_takeovers: IntCounter,
    pub job_passes: IntCounterVec,
    pub captures_registered: IntCounter,
    pub capture_shipped_bytes: IntCounter,
    pub capture_deduplicated_objects: IntCounter,
    pub capture_shipped_objects: IntCounter,
    pub gc_runs: IntCounterVec,
    pub gc_deleted_bytes: IntCounter,
    pub egress_refusals: IntCounter,
    pub egress_brokered: IntCounter,
    pub webhook_deliveries: IntCounterVec,
    pub workspace_sleeps: IntCounterVec,
    pub workspace_wakes: IntCounterVec,
    pub workspace_wake_seconds: HistogramVec,
    pub workspace_forks: IntCounterVec,
    pub image_pulls: IntCounterVec,
    pub image_pull_bytes: IntCounter,
    pub image_pull_seconds: HistogramVec,
    pub image_cache_bytes: IntGauge,
    pub image_cache_images: IntGauge,

    // Read from the store at each scrape.
    pub workspaces: IntGaugeVec,
    pub drains: IntGaugeVec,
    pub retained_executors: IntGaugeVec,
    pub retained_age_seconds: GaugeVec,
    pub retained_oldest_seconds: Gauge,
    pub jobs_due: IntGauge,
    pub jobs_leased: IntGauge,
    pub jobs_parked: IntGauge,
    pub jobs_oldest_due_seconds: Gauge,
    pub hosts: IntGaugeVec,
    pub workers: IntGauge,
    pub worker_heartbeat_age_seconds: GaugeVec,
    pub capture_stored_bytes: IntGauge,
    pub pack_bytes: IntGauge,
    pub gateway_sessions_open: IntGauge,
    pub sleeping_workspaces: IntGauge,
    pub gateway_sessions: IntGauge,
    pub state_read_failures: IntCounter,

    // Asked of live capture executors at each scrape.
    pub at_risk_executors: IntGauge,
    pub at_risk_bytes: IntGaugeVec,
    pub at_risk_seconds: GaugeVec,
    pub at_risk_failing_classes: IntGaugeVec,
    pub capture_executors: IntGauge,
    pub capture_status_unanswered: IntGauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

/// Request latencies: a millisecond to ten seconds.
const REQUEST_BUCKETS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];
/// Launches: ten milliseconds to two minutes (an image pull is slow).
const PHASE_BUCKETS: &[f64] = &[0.0002, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0];
const LAUNCH_BUCKETS: &[f64] = &[0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];

struct Builder {
    registry: Registry,
}

impl Builder {
    fn register<M: prometheus::core::Collector + Clone + 'static>(&self, metric: M) -> M {
        self.registry.register(Box::new(metric.clone())).expect("metric names are unique");
        metric
    }
    fn counter(&self, name: &str, help: &str) -> IntCounter {
        self.register(IntCounter::new(name, help).expect("valid counter"))
    }
    fn counters(&self, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
        self.register(IntCounterVec::new(Opts::new(name, help), labels).expect("valid counters"))
    }
    fn gauge(&self, name: &str, help: &str) -> IntGauge {
        self.register(IntGauge::new(name, help).expect("valid gauge"))
    }
    fn float_gauge(&self, name: &str, help: &str) -> Gauge {
        self.register(Gauge::new(name, help).expect("valid gauge"))
    }
    fn gauges(&self, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
        self.register(IntGaugeVec::new(Opts::new(name, help), labels).expect("valid gauges"))
    }
    fn float_gauges(&self, name: &str, help: &str, labels: &[&str]) -> GaugeVec {
        self.register(GaugeVec::new(Opts::new(name, help), labels).expect("valid gauges"))
    }
    fn histograms(&self, name: &str, help: &str, labels: &[&str], buckets: &[f64]) -> HistogramVec {
        let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
        self.register(HistogramVec::new(opts, labels).expect("valid histograms"))
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let b = Builder { registry: Registry::new() };
        Metrics {
            request_seconds: b.histograms(
                "sluice_http_request_duration_seconds",
                "API requests by route pattern, method and status, from the first byte read to the answer",
                &["route", "method", "status"],
                REQUEST_BUCKETS,
            ),
            launches: b.counters(
                "sluice_launches_total",
                "Executor launches by runtime and outcome: answered (its daemon answered), silent (not within the first wait), failed, retried",
                &["runtime", "outcome"],
            ),
            launch_seconds: b.histograms(
                "sluice_launch_duration_seconds",
                "From a launch's start to its daemon's first answer, by runtime",
                &["runtime"],
                LAUNCH_BUCKETS,
            ),
            launch_phase_seconds: b.histograms(
                "sluice_launch_phase_seconds",
                "Where a create's way to ready goes, by runtime and phase: queued (the create's commit to its \
                 launch pass), prepare (placement, secrets), the runtime's own steps, first_answer (to the \
                 daemon's first health answer), record (the launch and ready records)",
                &["runtime", "phase"],
                PHASE_BUCKETS,
            ),
            warm_pool_executors: b.gauges(
                "sluice_warm_pool_executors",
                "The warm pool's executors on this worker's host, by image and state: idle (ready to be taken), \
                 starting, target (how many it keeps)",
                &["image", "state"],
            ),
            warm_pool_takes: b.counters(
                "sluice_warm_pool_takes_total",
                "Launches that fit an image's warm pool, by image and outcome: taken (from the pool), empty \
                 (none was ready: launched afresh)",
                &["image", "outcome"],
            ),
            watched_executors: b.gauge(
                "sluice_watched_executors",
                "Ready executors whose watch stream this process holds open: a daemon's end is heard at once; the \
                 rest are looked at every 10 s",
            ),
            lease_takeovers: b.counter(
                "sluice_job_lease_takeovers_total",
                "Jobs claimed while an earlier holder's lease had lapsed unreleased (its worker died or stalled)",
            ),
            job_passes: b.counters(
                "sluice_job_passes_total",
                "Job passes by kind and outcome (done, again, failed, parked, fenced)",
                &["kind", "outcome"],
            ),
            captures_registered: b.counter("sluice_captures_registered_total", "Captures registered"),
            capture_shipped_bytes: b.counter(
                "sluice_capture_shipped_bytes_total",
                "Bytes of capture objects daemons uploaded (after deduplication)",
            ),
            capture_shipped_objects: b
                .counter("sluice_capture_shipped_objects_total", "Capture objects daemons uploaded"),
            capture_deduplicated_objects: b.counter(
                "sluice_capture_deduplicated_objects_total",
                "Capture objects daemons offered that the object store already held, so were not sent",
            ),
            gc_runs: b.counters(
                "sluice_gc_runs_total",
                "Object store collections by outcome (done, failed)",
                &["outcome"],
            ),
            gc_deleted_bytes: b.counter(
                "sluice_gc_deleted_bytes_total",
                "Bytes the collections deleted from the object store (objects, packs, rewritten packs' dead parts)",
            ),
            egress_brokered: b.counter(
                "sluice_egress_brokered_requests_total",
                "Requests the egress proxies carried with a credential they added",
            ),
            egress_refusals: b.counter(
                "sluice_egress_refusals_total",
                "Connections the egress proxies refused (names not listed, raw addresses, internal answers)",
            ),
            webhook_deliveries: b.counters(
                "sluice_webhook_deliveries_total",
                "Webhook deliveries tried, by outcome (delivered, failed)",
                &["outcome"],
            ),
            workspace_sleeps: b.counters(
                "sluice_workspace_sleeps_total",
                "Workspaces sent to sleep (their work saved, their runtime released), by reason: idle, requested",
                &["reason"],
            ),
            workspace_wakes: b.counters(
                "sluice_workspace_wakes_total",
                "Sleeping workspaces woken, by what needed them: requested, exec, process, files, capture, ssh, \
                 preview",
                &["cause"],
            ),
            workspace_wake_seconds: b.histograms(
                "sluice_workspace_wake_duration_seconds",
                "From a wake to the woken workspace's ready, as the request that woke it waited, by cause",
                &["cause"],
                LAUNCH_BUCKETS,
            ),
            workspace_forks: b.counters(
                "sluice_workspace_forks_total",
                "Workspaces made by forks, by source: workspace (a workspace's point), capture (a kept capture)",
                &["source"],
            ),
            image_pulls: b.counters(
                "sluice_image_pulls_total",
                "Launches that had to fetch their image, by runtime and outcome: pulled, failed (the registry \
                 was down, the image is missing, a blob did not match its digest)",
                &["runtime", "outcome"],
            ),
            image_pull_bytes: b.counter(
                "sluice_image_pull_bytes_total",
                "Bytes of image blobs fetched from registries (layers already on the host are not fetched)",
            ),
            image_pull_seconds: b.histograms(
                "sluice_image_pull_duration_seconds",
                "From a pull's first request to its image unpacked, by runtime",
                &["runtime"],
                LAUNCH_BUCKETS,
            ),
            image_cache_bytes: b.gauge(
                "sluice_image_cache_bytes",
                "Bytes the image cache holds on this worker's host: layers as fetched and unpacked trees",
            ),
            image_cache_images: b.gauge("sluice_image_cache_images", "Images in the image cache on this worker's host"),
            workspaces: b.gauges("sluice_workspaces", "Workspaces by status", &["status"]),
            drains: b.gauges("sluice_drains", "Drains of executors not yet removed, by state", &["state"]),
            retained_executors: b.gauges(
                "sluice_retained_executors",
                "Executors kept because their work is not confirmed saved, by reason",
                &["reason"],
            ),
            retained_age_seconds: b.float_gauges(
                "sluice_retained_executor_age_seconds",
                "How long each retained executor has been retained",
                &["workspace", "reason"],
            ),
            retained_oldest_seconds: b.float_gauge(
                "sluice_retained_executor_oldest_age_seconds",
                "How long the longest retained executor has been retained (0 when none is)",
            ),
            jobs_due: b.gauge("sluice_jobs_due", "Jobs due now and not held by a worker"),
            jobs_leased: b.gauge("sluice_jobs_leased", "Jobs held by a worker's live lease"),
            jobs_parked: b.gauge("sluice_jobs_parked", "Jobs parked for an operator after repeated failures"),
            jobs_oldest_due_seconds: b.float_gauge(
                "sluice_jobs_oldest_due_age_seconds",
                "How long the oldest due, unheld job has waited past its time (the queue's lag)",
            ),
            hosts: b.gauges("sluice_hosts", "Executor hosts by state", &["state"]),
            workers: b.gauge("sluice_workers", "Workers registered in the fleet"),
            worker_heartbeat_age_seconds: b.float_gauges(
                "sluice_worker_heartbeat_age_seconds",
                "Seconds since each host's newest worker heartbeat",
                &["host"],
            ),
            capture_stored_bytes: b.gauge(
                "sluice_capture_stored_bytes",
                "Bytes the capture sessions' kept captures count against their quotas",
            ),
            pack_bytes: b.gauge("sluice_object_store_pack_bytes", "Bytes of the object store's ready packs"),
            gateway_sessions_open: b.gauge("sluice_gateway_sessions_open", "SSH gateway sessions open now"),
            sleeping_workspaces: b.gauge(
                "sluice_sleeping_workspaces",
                "Workspaces asleep: stopped with their work saved, woken by their next use",
            ),
            gateway_sessions: b.gauge("sluice_gateway_sessions", "SSH gateway sessions on record"),
            state_read_failures: b.counter(
                "sluice_metrics_state_read_failures_total",
                "Scrapes whose read of the stored state failed (the state gauges kept their last values)",
            ),
            at_risk_executors: b.gauge(
                "sluice_work_at_risk_executors",
                "Live capture executors holding work not yet registered (staged, failing to snap, or refused)",
            ),
            at_risk_bytes: b.gauges(
                "sluice_work_at_risk_bytes",
                "Bytes an at-risk executor holds that are not registered yet",
                &["workspace"],
            ),
            at_risk_seconds: b.float_gauges(
                "sluice_work_at_risk_seconds",
                "Seconds since an at-risk executor's newest registered capture (or its start, if none)",
                &["workspace"],
            ),
            at_risk_failing_classes: b.gauges(
                "sluice_work_at_risk_failing_snap_classes",
                "Capture classes whose snaps are failing in an at-risk executor",
                &["workspace"],
            ),
            capture_executors: b.gauge("sluice_capture_executors", "Live capture executors asked for their status"),
            capture_status_unanswered: b.gauge(
                "sluice_capture_status_unanswered",
                "Live capture executors that did not answer a status read at the last scrape",
            ),
            registry: b.registry,
        }
    }

    /// The registry in Prometheus's text exposition format.
    pub fn encode(&self) -> String {
        let mut text = Vec::new();
        TextEncoder::new().encode(&self.registry.gather(), &mut text).expect("text encoding does not fail");
        String::from_utf8(text).expect("the text format is UTF-8")
    }

    /// Shows a worker's counters from 0 before anything happens: its
    /// runtime's launch outcomes, each job kind's pass outcomes, and
    /// collections (a family with no series would not be scraped at all).
    pub fn start_worker_counters(&self, runtime: &str, job_kinds: &[&str]) {
        for outcome in LAUNCH_OUTCOMES {
            self.launches.with_label_values(&[runtime, outcome]);
        }
        self.launch_seconds.with_label_values(&[runtime]);
        for outcome in ["pulled", "failed"] {
            self.image_pulls.with_label_values(&[runtime, outcome]);
        }
        self.image_pull_seconds.with_label_values(&[runtime]);
        for kind in job_kinds {
            for outcome in JOB_OUTCOMES {
                self.job_passes.with_label_values(&[kind, outcome]);
            }
        }
        for outcome in GC_OUTCOMES {
            self.gc_runs.with_label_values(&[outcome]);
        }
        for outcome in ["delivered", "failed"] {
            self.webhook_deliveries.with_label_values(&[outcome]);
        }
    }

    /// Seconds as a gauge reads them.
    pub fn seconds(ms: i64) -> f64 {
        ms.max(0) as f64 / 1000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_registry_encodes_every_family_with_help_and_type() {
        let metrics = Metrics::new();
        metrics.lease_takeovers.inc();
        metrics.workspaces.with_label_values(&["ready"]).set(3);
        metrics.request_seconds.with_label_values(&["/v1/workspaces", "POST", "201"]).observe(0.004);
        let text = metrics.encode();
        assert!(text.contains("# TYPE sluice_job_lease_takeovers_total counter\nsluice_job_lease_takeovers_total 1\n"));
        assert!(text.contains("sluice_workspaces{status=\"ready\"} 3\n"), "{text}");
        assert!(text.contains(
            "sluice_http_request_duration_seconds_bucket{method=\"POST\",route=\"/v1/workspaces\",status=\"201\",le=\"0.005\"} 1"
        ));
        for line in text.lines().filter(|l| l.starts_with("# TYPE")) {
            let name = line.split(' ').nth(2).unwrap();
            assert!(text.contains(&format!("# HELP {name} ")), "{name} has no help");
        }
    }
}
