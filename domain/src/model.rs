//! Domain types: what a workspace, a run (launch attempt), an event and a
//! create-key record are. Status enums are stored as their wire names.

use crate::ids::{EventId, ExecRunId, IdempotencyKey, LaunchId, OwnerId, RunId, WorkspaceId};
use serde::{Deserialize, Serialize};

/// Declares an enum stored and sent by fixed names, with `as_str`,
/// `Display`, `FromStr` and the full list of its values.
macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),+
        }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }
        // Written out rather than derived: the derive cannot read the
        // variant names through this macro and would document Rust's.
        #[cfg(feature = "openapi")]
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                use utoipa::openapi::schema::{ObjectBuilder, Type};
                ObjectBuilder::new().schema_type(Type::String).enum_values(Some([$($text),+])).into()
            }
        }
        #[cfg(feature = "openapi")]
        impl utoipa::ToSchema for $name {}
        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result { f.write_str(self.as_str()) }
        }
        impl ::std::str::FromStr for $name {
            type Err = $crate::model::UnknownName;
            fn from_str(s: &str) -> Result<Self, $crate::model::UnknownName> {
                match s { $($text => Ok($name::$variant),)+ _ => Err($crate::model::UnknownName) }
            }
        }
    };
}

/// A string that names no value of the enum it was parsed as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownName;

named_enum!(
    /// A workspace's (and a run's) lifecycle status.
    WorkspaceStatus {
        Queued => "queued",
        Running => "running",
        Ready => "ready",
        Failed => "failed",
        Cancelled => "cancelled",
        Stopped => "stopped",
        Retained => "retained",
    }
);

impl WorkspaceStatus {
    /// The statuses a workspace (or a run) ends in: nothing runs for it.
    pub const FINISHED: &'static [WorkspaceStatus] =
        &[WorkspaceStatus::Stopped, WorkspaceStatus::Failed, WorkspaceStatus::Cancelled];

    /// Whether this is one of [`WorkspaceStatus::FINISHED`].
    pub fn is_finished(self) -> bool {
        Self::FINISHED.contains(&self)
    }
}

named_enum!(
    /// A broker snapshot's state: being taken, ready for warm starts, and
    /// its objects being released once it is deleted or expired.
    SnapshotState {
        Taking => "taking",
        Ready => "ready",
        Deleting => "deleting",
        Deleted => "deleted",
    }
);

named_enum!(
    /// What the owner wants the workspace to be.
    DesiredState {
        Running => "running",
        Stopped => "stopped",
    }
);

named_enum!(
    /// How a run relates to the workspace's earlier runs.
    RunRelation {
        Launch => "launch",
        Rebuild => "rebuild",
        Retry => "retry",
        Resume => "resume",
    }
);

named_enum!(
    /// What started a run.
    TriggerType {
        Manual => "manual",
        Schedule => "schedule",
        Api => "api",
        Retry => "retry",
    }
);

named_enum!(
    /// The runtime adapter an executor runs on.
    RuntimeAdapter {
        Docker => "docker",
        K8s => "k8s",
        K3s => "k3s",
        Cloudflare => "cloudflare",
        Microvm => "microvm",
        Local => "local",
    }
);

named_enum!(
    /// An executor's status on its runtime.
    RuntimeStatus {
        Pending => "pending",
        Running => "running",
        Ready => "ready",
        Failed => "failed",
        Stopped => "stopped",
        Retained => "retained",
    }
);

named_enum!(
    /// The closed set of workspace event types.
    EventType {
        WorkspaceCreated => "workspace.created",
        AttemptQueued => "attempt.queued",
        AttemptRunning => "attempt.running",
        AttemptSucceeded => "attempt.succeeded",
        AttemptFailed => "attempt.failed",
        AttemptCancelled => "attempt.cancelled",
        ImagePublished => "image.published",
        RuntimePending => "runtime.pending",
        RuntimeRunning => "runtime.running",
        RuntimeReady => "runtime.ready",
        RuntimeFailed => "runtime.failed",
        RuntimeStopped => "runtime.stopped",
    }
);

named_enum!(
    /// sluice's own event types, beyond the contract's: carried on the
    /// global feed (and to webhooks), never in a workspace's own log. The
    /// `sluice.` prefix tells them apart from the contract's.
    SluiceEventType {
        DrainChanged => "sluice.drain.changed",
        ExecutorRetained => "sluice.executor.retained",
        RecoveryAttempted => "sluice.recovery.attempted",
        CaptureRegistered => "sluice.capture.registered",
        GatewaySessionStarted => "sluice.gateway.session.started",
        GatewaySessionEnded => "sluice.gateway.session.ended",
        WebhookDisabled => "sluice.webhook.disabled",
        WorkspaceDeleted => "sluice.workspace.deleted",
        WorkspaceSlept => "sluice.workspace.slept",
        WorkspaceWoken => "sluice.workspace.woken",
        TemplateBuilt => "sluice.template.built",
        ImagePulling => "sluice.image.pulling",
    }
);

named_enum!(
    /// What became of an idempotent create, by its key.
    CreateKeyState {
        Pending => "pending",
        Found => "found",
        Cancelled => "cancelled",
        None => "none",
    }
);

named_enum!(
    /// What a durable job asks a worker to do with its subject: reconcile a
    /// workspace's executor, run an exec run's commands, deliver the feed's
    /// next events to a webhook endpoint, or build a template's image.
    JobKind {
        Reconcile => "reconcile",
        Exec => "exec",
        Deliver => "deliver",
        Build => "build",
    }
);

named_enum!(
    /// Where a template build is: waiting for a worker that can build,
    /// building, or done one way or the other.
    TemplateBuildState {
        Queued => "queued",
        Building => "building",
        Succeeded => "succeeded",
        Failed => "failed",
    }
);

named_enum!(
    /// Whether a host's executors can be reached through a worker of it:
    /// `unreachable` once no worker of it has beaten for the grace (its
    /// executors may hold unsaved work and are kept), `lost` once an
    /// operator declared it gone with its executors.
    HostState {
        Up => "up",
        Unreachable => "unreachable",
        Lost => "lost",
    }
);

named_enum!(
    /// An exec run's status: `failed` only when the machinery broke.
    ExecRunStatus {
        Queued => "queued",
        Running => "running",
        Completed => "completed",
        Failed => "failed",
    }
);

impl ExecRunStatus {
    /// Whether the run has ended: nothing more will be recorded of it.
    pub fn is_ended(self) -> bool {
        matches!(self, ExecRunStatus::Completed | ExecRunStatus::Failed)
    }
}

named_enum!(
    /// What was last observed of a capture-sourced executor's drain.
    DrainState {
        Draining => "draining",
        Kept => "kept",
        Saved => "saved",
        Gone => "gone",
        StopFailed => "stop-failed",
        Stopped => "stopped",
        Discarded => "discarded",
    }
);

named_enum!(
    /// What became of a completion attestation.
    AttestationOutcome {
        Accepted => "accepted",
        Ignored => "ignored",
        Revoked => "revoked",
    }
);

named_enum!(
    /// Which secret a sealed row holds.
    SecretKind {
        SecretEnv => "secret_env",
        CaptureToken => "capture_token",
        ExecEnv => "exec_env",
    }
);

/// A workspace as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Workspace {
    pub id: WorkspaceId,
    pub owner_user_id: OwnerId,
    pub name: String,
    pub registry_id: String,
    pub repository: String,
    pub tag: String,
    pub spec: crate::spec::Spec,
    pub status: WorkspaceStatus,
    pub desired_state: DesiredState,
    pub current_run_id: Option<RunId>,
    pub idempotency_key: Option<IdempotencyKey>,
    /// Unix milliseconds.
    pub expires_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// Asked to sleep: set while its sleep drains and while it sleeps,
    /// cleared by a wake, a stop, a restart or its expiry.
    pub sleep: Option<Sleep>,
}

impl Workspace {
    /// Whether `principal` may reach this workspace over SSH.
    pub fn admits_ssh_principal(&self, principal: &str) -> bool {
        principal == self.owner_user_id || self.spec.typed().ssh_principals.iter().any(|p| p == principal)
    }
}

named_enum!(
    /// The rule a change broke by conflicting with what is stored: the
    /// closed set the policy and the store refuse with. Each wire answers
    /// it in its own words (the workspaces API, the broker and the
    /// registrar each have their own closed codes); the names here are
    /// the ones the first of them to answer it has always used.
    ConflictCode {
        CaptureRestartUnsupported => "capture-restart-unsupported",
        MidLaunch => "mid-launch",
        Retained => "retained",
        NeverLaunched => "never-launched",
        NoLiveRuntime => "no-live-runtime",
        NoRun => "no-run",
        NotQueued => "not-queued",
        NotEnded => "not-ended",
        CaptureNotKept => "capture-not-kept",
        SessionHasUnsavedWork => "session-has-unsaved-work",
        SleepUnsupported => "sleep-unsupported",
        NotSleeping => "not-sleeping",
        SessionInUse => "session-in-use",
        // The registrar's three: a newer executor claimed the session, its
        // head moved meanwhile, objects are being collected (try again).
        Fenced => "fenced",
        HeadMoved => "conflict",
        Collecting => "unavailable",
        ConcurrencyLimit => "concurrency_limit",
        SnapshotQuotaExceeded => "snapshot_quota_exceeded",
        TemplateNotBuilt => "template-not-built",
    }
);

named_enum!(
    /// Why the execution broker ended a workspace, as its protocol says it.
    TerminationReason {
        Released => "released",
        Expired => "expired",
        Idle => "idle",
        Failed => "failed",
        LeaseRevoked => "lease_revoked",
        EmergencyStopped => "emergency_stopped",
        Paused => "paused",
    }
);

/// A lifecycle request refused by the policy that judges it: a conflict
/// with the workspace's state, with a code naming the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    pub code: ConflictCode,
}

/// An executor on its runtime, as recorded on the run that launched it.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeRecord {
    pub adapter: RuntimeAdapter,
    pub resource_id: String,
    pub reference: String,
    pub status: RuntimeStatus,
    pub endpoint: Option<String>,
    pub deadline: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PublishedImage {
    pub reference: String,
    pub digest_reference: String,
    pub digest: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunError {
    pub message: String,
    pub code: Option<String>,
}

impl RunError {
    /// What broke, with the code naming the rule.
    pub fn coded(message: impl Into<String>, code: &str) -> RunError {
        RunError { message: message.into(), code: Some(code.to_owned()) }
    }
}

/// One launch attempt of a workspace.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub id: RunId,
    pub workspace_id: WorkspaceId,
    pub relation: RunRelation,
    pub trigger_type: TriggerType,
    pub trigger_ref: Option<String>,
    pub status: WorkspaceStatus,
    pub launch_id: Option<LaunchId>,
    pub spec: crate::spec::Spec,
    pub runtime: Option<RuntimeRecord>,
    pub published_image: Option<PublishedImage>,
    pub error: Option<RunError>,
    pub queued_at: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub linked_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// When the runtime resource was removed; `None` while it may exist.
    pub runtime_removed_at: Option<i64>,
    /// 1 for a launch, counting up through its retries.
    pub launch_attempt: i64,
    /// The host its executor was placed on; `None` until placed.
    pub host: Option<String>,
}

impl Run {
    /// The identity its executor is launched under: the launch id the
    /// caller chose, or else the run's own id.
    pub fn launch(&self) -> LaunchId {
        self.launch_id.clone().unwrap_or_else(|| LaunchId::from(self.id.as_str()))
    }

    /// A run just queued at `now`: a first launch attempt the owner asked
    /// for through the API, nothing of it started yet.
    pub fn queued(
        id: RunId,
        workspace_id: WorkspaceId,
        spec: crate::spec::Spec,
        launch_id: Option<LaunchId>,
        now: i64,
    ) -> Run {
        Run {
            id,
            workspace_id,
            relation: RunRelation::Launch,
            trigger_type: TriggerType::Api,
            trigger_ref: None,
            status: WorkspaceStatus::Queued,
            launch_id,
            spec,
            runtime: None,
            published_image: None,
            error: None,
            queued_at: now,
            created_at: now,
            updated_at: now,
            linked_at: now,
            started_at: None,
            finished_at: None,
            runtime_removed_at: None,
            launch_attempt: 1,
            host: None,
        }
    }
}

named_enum!(
    /// Why a workspace went to sleep: unused for its
    /// `spec.idle.sleepAfterSeconds` (or the install's default), or its
    /// owner asked (`POST …/sleep`).
    SleepReason {
        Idle => "idle",
        Requested => "requested",
    }
);

/// A workspace asked to sleep: why, and when it was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sleep {
    pub reason: SleepReason,
    pub asked_at: i64,
}

impl Sleep {
    /// Who asked for the stop its drain records.
    pub fn by(&self) -> String {
        format!("sleep: {}", self.reason)
    }
}

/// A workspace together with its current run.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkspaceView {
    pub workspace: Workspace,
    pub current_run: Option<Run>,
}

/// One entry of a workspace's append-only event log.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: EventId,
    pub workspace_id: WorkspaceId,
    /// Position in the workspace's own log, from 1.
    pub seq: i64,
    pub attempt_id: Option<RunId>,
    pub event_type: EventType,
    pub occurred_at: i64,
    pub message: Option<String>,
    pub data: Option<serde_json::Value>,
}

/// One of sluice's own events: on the global feed only.
#[derive(Debug, Clone, PartialEq)]
pub struct SluiceEvent {
    pub id: EventId,
    /// The workspace it concerns, if any (a webhook's concerns none).
    pub workspace_id: Option<WorkspaceId>,
    pub attempt_id: Option<RunId>,
    pub event_type: SluiceEventType,
    pub occurred_at: i64,
    pub message: Option<String>,
    pub data: Option<serde_json::Value>,
}

/// What the global feed carries: the contract's workspace events and
/// sluice's own, in one order.
#[derive(Debug, Clone, PartialEq)]
pub enum FeedItem {
    Workspace(Event),
    Sluice(SluiceEvent),
}

impl FeedItem {
    pub fn id(&self) -> &EventId {
        match self {
            FeedItem::Workspace(e) => &e.id,
            FeedItem::Sluice(e) => &e.id,
        }
    }

    /// The type's wire name.
    pub fn type_name(&self) -> &'static str {
        match self {
            FeedItem::Workspace(e) => e.event_type.as_str(),
            FeedItem::Sluice(e) => e.event_type.as_str(),
        }
    }

    pub fn workspace_id(&self) -> Option<&WorkspaceId> {
        match self {
            FeedItem::Workspace(e) => Some(&e.workspace_id),
            FeedItem::Sluice(e) => e.workspace_id.as_ref(),
        }
    }

    pub fn occurred_at(&self) -> i64 {
        match self {
            FeedItem::Workspace(e) => e.occurred_at,
            FeedItem::Sluice(e) => e.occurred_at,
        }
    }
}

/// What the store knows of an idempotency key.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateKey {
    pub idempotency_key: IdempotencyKey,
    pub state: CreateKeyState,
    pub workspace_id: Option<WorkspaceId>,
    pub run_id: Option<RunId>,
    pub launch_id: Option<LaunchId>,
}

/// One command of an exec run: argv run without a shell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecCommand {
    pub argv: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<std::collections::BTreeMap<String, String>>,
    /// What the command is fed, as its length and digest: the text itself
    /// is sealed apart (the store opens it for the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin_digest: Option<StdinDigest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// The length and SHA-256 (hex) of an exec command's stdin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StdinDigest {
    pub bytes: u64,
    pub sha256: String,
}

impl StdinDigest {
    pub fn of(text: &str) -> StdinDigest {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(text.as_bytes());
        StdinDigest { bytes: text.len() as u64, sha256: digest.iter().map(|b| format!("{b:02x}")).collect() }
    }
}

/// What one command of an exec run did: the daemon's answer (as the
/// worker bounded it) for the argv it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecCommandResult {
    pub argv: Vec<String>,
    #[serde(flatten)]
    pub outcome: sluice_protocol::ExecResponse,
}

/// A deterministic exec run: ordered commands run in a workspace's executor.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecRun {
    pub id: ExecRunId,
    pub workspace_id: WorkspaceId,
    pub owner_user_id: OwnerId,
    /// The workspace run (launch attempt) whose executor runs the commands.
    pub attempt_id: RunId,
    pub status: ExecRunStatus,
    pub exit_code: Option<i64>,
    pub commands: Vec<ExecCommand>,
    pub results: Vec<ExecCommandResult>,
    pub error: Option<RunError>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
}

/// A finished snapshot's manifests.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TakenSnapshot {
    pub small_manifest: String,
    pub bulk_manifest: String,
    pub files: u64,
    pub bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_launches_under_the_callers_launch_id_or_else_its_own_id() {
        let mut run = Run::queued("run_1".into(), "ws_1".into(), crate::spec::Spec::default(), None, 0);
        assert_eq!(run.launch(), "run_1");
        run.launch_id = Some("launch-a".into());
        assert_eq!(run.launch(), "launch-a");
    }

    #[test]
    fn a_workspace_ends_stopped_failed_or_cancelled() {
        let finished: Vec<&str> = WorkspaceStatus::ALL.iter().filter(|s| s.is_finished()).map(|s| s.as_str()).collect();
        assert_eq!(finished, ["failed", "cancelled", "stopped"]);
    }

    #[test]
    fn exec_results_recorded_before_timeouts_were_reported_still_read() {
        let stored =
            r#"{"argv":["x"],"exitCode":3,"stdout":"o","stderr":"","stdoutTruncated":false,"stderrTruncated":true}"#;
        let result: ExecCommandResult = serde_json::from_str(stored).unwrap();
        assert_eq!((result.outcome.exit_code, result.outcome.timed_out), (3, false));
        assert!(result.outcome.stderr_truncated);
        let again: serde_json::Value = serde_json::to_value(&result).unwrap();
        assert_eq!(again["argv"][0], "x", "the stored shape stays flat: {again}");
        assert_eq!(again["exitCode"], 3);
    }
}
