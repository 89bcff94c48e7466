//! The JSON shapes of the workspaces API (camelCase, as the contract has
//! them). Requests refuse unknown fields; responses omit absent optionals.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sluice_store::clock::rfc3339;
use sluice_store::{CreateKeyState, RunRelation, RuntimeAdapter, RuntimeStatus, TriggerType, WorkspaceStatus, model};
use utoipa::{IntoParams, ToSchema};

// ---------------------------------------------------------------- requests

pub use crate::validate::{OwnerUserId, TEXT_PATTERN, WaitFor};
pub use sluice_protocol::worktree::{
    EntryKind as WorktreeEntryKind, Listing as FileListing, Unpacked as UnpackedArchive, WorktreeEntry,
};

/// A repository selection. Accepted by the schema; this install refuses it (422).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SourceSelection {
    /// Always `github`.
    pub provider: String,
    pub installation_id: String,
    pub installation_repository_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#ref: Option<String>,
}

/// Connected-account selection. Accepted by the schema; this install refuses it (422).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateWorkspaceCredentials {
    pub profile_id: Option<String>,
    pub claude: Option<String>,
    pub codex: Option<String>,
    pub github: Option<String>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateWorkspaceRequest {
    pub owner_user_id: OwnerUserId,
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = r"^[^\s\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069](?:[^\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]*[^\s\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069])?$"
    )]
    #[serde(default)]
    pub registry_id: String,
    /// An image repository: lower-case path components.
    #[schema(max_length = 255, pattern = r"^[a-z0-9][a-z0-9._-]*(?:/[a-z0-9][a-z0-9._-]*)*$")]
    #[serde(default)]
    pub repository: String,
    /// A tag, or a digest (`sha256:` and 64 hex digits).
    #[schema(max_length = 128, pattern = r"^(?:[A-Za-z0-9_][A-Za-z0-9_.-]*|sha256:[0-9a-f]{64})$")]
    #[serde(default)]
    pub tag: String,
    /// A template's name, in place of `registryId`, `repository` and `tag`: the workspace runs
    /// the template's newest successful build, its `startCommand` as `spec.command` and its
    /// `readyCommand` as `spec.readyCommand` unless the spec names them.
    #[schema(min_length = 1, max_length = 64, pattern = r"^[a-z0-9][a-z0-9._-]*$")]
    pub template: Option<String>,
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = r"^[^\s\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069](?:[^\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]*[^\s\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069])?$"
    )]
    pub name: Option<String>,
    pub source_selection: Option<SourceSelection>,
    pub dotfiles_selection: Option<SourceSelection>,
    pub credentials: Option<CreateWorkspaceCredentials>,
    /// The workspace's specification: a JSON object. Never holds secrets (see `secretEnv`).
    /// Runtimes act on `command` (the managed process's argv), `env` (its plain environment),
    /// `network` (`true`, `false`, or `{"egress": ["name", "*.domain", "name:port"]}`: only
    /// those names, through a proxy), `resources` (`cpus`, `memoryMiB`, `pids`, `diskMiB`),
    /// `access.sshPrincipals` and `source`; other keys are kept as given.
    #[schema(value_type = Object)]
    pub spec: Value,
    /// Environment delivered to the executor only; sealed at rest, never returned.
    pub secret_env: Option<BTreeMap<String, String>>,
    /// The capture source's session credential; sealed at rest, never returned.
    #[schema(
        min_length = 1,
        max_length = 4096,
        pattern = r"^[^\s\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069](?:[^\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]*[^\s\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069])?$"
    )]
    pub capture_token: Option<String>,
    /// Lifetime in seconds; the server default applies when omitted.
    #[schema(minimum = 1, maximum = 316224000)]
    pub ttl_seconds: Option<i64>,
    /// Makes the create idempotent for this owner; wins over the `idempotency-key` header.
    #[schema(pattern = r"^[A-Za-z0-9._:-]{1,200}$")]
    pub idempotency_key: Option<String>,
    /// The caller's identity for the one executor this create launches.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^-\s\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069](?:[^\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]*[^\s\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069])?$"
    )]
    pub launch_id: Option<String>,
    /// With a capture source whose newest executor is kept or retained with
    /// work not confirmed saved, the create is refused (409
    /// `session-has-unsaved-work`) unless this says to discard that work
    /// (`discard-unsaved`, recorded as that workspace's discard).
    pub take_over: Option<TakeOver>,
    /// Answer once the workspace is ready or never will be by itself
    /// (failed, stopped, retained), or at `timeoutMs` with its state then.
    /// Not part of the request an idempotency key stands for.
    pub wait_for: Option<WaitFor>,
    /// How long `waitFor` waits, in milliseconds (default and most: 60000,
    /// or the listener's idle timeout if shorter). Only with `waitFor`.
    #[schema(minimum = 0, maximum = 60000)]
    pub timeout_ms: Option<i64>,
}

/// Taking over a capture session whose executor holds unsaved work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TakeOver {
    DiscardUnsaved,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerRequest {
    pub owner_user_id: OwnerUserId,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RenameWorkspaceRequest {
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = r"^[^\s\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069](?:[^\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]*[^\s\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069])?$"
    )]
    pub name: String,
    /// The workspace's owner; a rename that names none finds nothing.
    pub owner_user_id: Option<OwnerUserId>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpireWorkspaceRequest {
    pub owner_user_id: OwnerUserId,
    /// Seconds from now; `null` clears the TTL; omitted expires now.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 316224000)]
    pub ttl_seconds: Option<Option<i64>>,
}

/// Tells an absent field (`None`) from an explicit `null` (`Some(None)`).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BindWorkspaceRequest {
    pub owner_user_id: OwnerUserId,
    pub mount_path: Option<String>,
    pub subpath: String,
}

/// `final` or `suspend`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum FlushKind {
    Final,
    Suspend,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlushWorkspaceCaptureRequest {
    pub owner_user_id: OwnerUserId,
    pub kind: Option<FlushKind>,
    #[schema(minimum = 1)]
    pub deadline_ms: Option<i64>,
    #[schema(minimum = 1)]
    pub grace_ms: Option<i64>,
}

/// A fork: how many, and what their names start with.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForkRequest {
    pub owner_user_id: OwnerUserId,
    /// How many workspaces to make, 1 to 100.
    #[schema(minimum = 1, maximum = 100)]
    pub count: i64,
    /// Their names are this followed by `-1`, `-2`, … (default: the
    /// source workspace's name and `-fork`).
    #[schema(min_length = 1, max_length = 120)]
    pub name_prefix: Option<String>,
}

/// The workspaces a fork made, each on a capture session of its own that
/// starts at the fork's point: answered once with each session's token.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkResponse {
    /// The session and capture every fork starts from.
    pub source_session_id: String,
    pub capture_n: u64,
    pub items: Vec<ForkedWorkspace>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkedWorkspace {
    pub workspace_id: String,
    pub name: String,
    pub status: WorkspaceStatus,
    pub capture_session_id: String,
    /// The new session's token, shown this once.
    pub capture_token: String,
}

/// One command of a deterministic exec: argv run without a shell.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunCommand {
    /// The program and its arguments, run without a shell.
    #[schema(min_items = 1)]
    pub argv: Vec<String>,
    pub cwd: Option<String>,
    pub env: Option<BTreeMap<String, String>>,
    pub stdin: Option<String>,
    #[schema(minimum = 1)]
    pub timeout_ms: Option<i64>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecWorkspaceRequest {
    pub owner_user_id: OwnerUserId,
    /// 1 to 32 commands, run in order whatever their exit codes.
    #[schema(min_items = 1, max_items = 32)]
    pub commands: Vec<RunCommand>,
}

/// Where in an executor's own history it made an answer or a seal.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaptureExecutorOrigin {
    #[schema(minimum = 0)]
    pub epoch: i64,
    pub launch: String,
    pub boot_id: String,
    #[schema(minimum = 0)]
    pub boot_generation: i64,
    #[schema(minimum = 0)]
    pub observation: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub head_n: Option<i64>,
}

/// The caller's attestation of a sealed final capture of the current executor.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompletionAttestation {
    #[schema(minimum = 0)]
    pub capture_n: i64,
    #[schema(minimum = 0)]
    pub epoch: i64,
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\s\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069](?:[^\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]*[^\s\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069])?$"
    )]
    pub executor_id: String,
    pub launch_id: Option<String>,
    pub sealed_at: Option<String>,
    pub origin: Option<CaptureExecutorOrigin>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StopWorkspaceRequest {
    pub owner_user_id: OwnerUserId,
    pub discard_unsaved: Option<bool>,
    pub completion: Option<CompletionAttestation>,
}

// ---------------------------------------------------------------- queries

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct OwnerQuery {
    /// The workspace's owner (required).
    pub owner_user_id: Option<OwnerUserId>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct GetWorkspaceQuery {
    /// The workspace's owner (required).
    pub owner_user_id: Option<OwnerUserId>,
    /// Long-poll: answer once the workspace is ready or never will be by
    /// itself, or at `timeoutMs` with its state then.
    #[param(value_type = Option<WaitFor>)]
    pub wait_for: Option<String>,
    /// How long `waitFor` waits, in milliseconds: 0 to 60000 (default
    /// 60000, or the listener's idle timeout if shorter).
    #[param(pattern = r"^(?:[0-9]{1,4}|[1-5][0-9]{4}|60000)$")]
    pub timeout_ms: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct WaitQuery {
    /// Wait for a workspace still starting to be ready first, instead of
    /// answering 409 `no-live-runtime` at once.
    #[param(value_type = Option<WaitFor>)]
    pub wait_for: Option<String>,
    /// How long `waitFor` waits, in milliseconds: 0 to 60000 (default
    /// 60000, or the listener's idle timeout if shorter).
    #[param(pattern = r"^(?:[0-9]{1,4}|[1-5][0-9]{4}|60000)$")]
    pub timeout_ms: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ListWorkspacesQuery {
    /// The owner whose workspaces are listed (required).
    pub owner_user_id: Option<OwnerUserId>,
    #[param(value_type = Option<WorkspaceStatus>)]
    pub status: Option<String>,
    /// 1 to 1000 (default 100).
    #[param(pattern = r"^(?:[1-9][0-9]{0,2}|1000)$")]
    pub limit: Option<String>,
    /// Only the owner's workspace created with this key.
    #[param(pattern = r"^[A-Za-z0-9._:-]{1,200}$")]
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct RetainedQuery {
    /// 1 to 1000 (default 100).
    #[param(pattern = r"^(?:[1-9][0-9]{0,2}|1000)$")]
    pub limit: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct OwnerLimitQuery {
    /// The workspace's owner (required).
    pub owner_user_id: Option<OwnerUserId>,
    /// 1 to 1000 (default 100).
    #[param(pattern = r"^(?:[1-9][0-9]{0,2}|1000)$")]
    pub limit: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct CaptureListQuery {
    /// The session's owner (required).
    pub owner_user_id: Option<OwnerUserId>,
    /// 1 to 1000 (default 100).
    #[param(pattern = r"^(?:[1-9][0-9]{0,2}|1000)$")]
    pub limit: Option<String>,
    /// Only captures after this chain position (a page's `nextAfter`).
    #[param(pattern = r"^[0-9]{1,18}$")]
    pub after: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct CaptureDiffQuery {
    /// The session's owner (required).
    pub owner_user_id: Option<OwnerUserId>,
    /// The capture to compare with (default: the kept capture before; none
    /// before it compares with an empty tree).
    #[param(pattern = r"^[0-9]{1,18}$")]
    pub against: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct CaptureFileQuery {
    /// The session's owner (required).
    pub owner_user_id: Option<OwnerUserId>,
    /// The file's virtual path, `tree/…` or `.git/…` (this or `pathHex`).
    pub path: Option<String>,
    /// The path's bytes in hex, for a name that is not UTF-8 (as a diff
    /// lists it: `{"hex": …}`).
    #[param(pattern = r"^(?:[0-9a-fA-F]{2}){1,4096}$")]
    pub path_hex: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct CaptureArchiveQuery {
    /// The session's owner (required).
    pub owner_user_id: Option<OwnerUserId>,
}

// ---------------------------------------------------------------- responses

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceRuntime {
    pub adapter: RuntimeAdapter,
    pub resource_id: String,
    pub reference: String,
    pub status: RuntimeStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// When the runtime itself ends the executor; `null` where it imposes no lifetime.
    #[schema(required = true)]
    pub deadline: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_id: Option<String>,
}

impl WorkspaceRuntime {
    fn of(run: &model::Run) -> Option<WorkspaceRuntime> {
        run.runtime.as_ref().map(|r| WorkspaceRuntime {
            adapter: r.adapter,
            resource_id: r.resource_id.clone(),
            reference: r.reference.clone(),
            status: r.status,
            endpoint: r.endpoint.clone(),
            deadline: r.deadline.map(rfc3339),
            run_id: Some(run.id.to_string()),
            launch_id: run.launch_id.as_deref().map(str::to_owned),
        })
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspacePublishedImage {
    pub reference: String,
    pub digest_reference: String,
    pub digest: String,
}

impl From<&model::PublishedImage> for WorkspacePublishedImage {
    fn from(p: &model::PublishedImage) -> Self {
        WorkspacePublishedImage {
            reference: p.reference.clone(),
            digest_reference: p.digest_reference.clone(),
            digest: p.digest.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceError {
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

impl From<&model::RunError> for WorkspaceError {
    fn from(e: &model::RunError) -> Self {
        WorkspaceError { message: e.message.clone(), code: e.code.clone() }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateWorkspaceResponse {
    pub workspace_id: String,
    pub name: String,
    pub status: WorkspaceStatus,
    pub registry_id: String,
    pub repository: String,
    pub tag: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<WorkspaceRuntime>,
    /// `true` when an earlier create with the same key made this workspace.
    pub replayed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_id: Option<String>,
}

impl CreateWorkspaceResponse {
    pub fn of(view: &model::WorkspaceView, replayed: bool) -> Self {
        let w = &view.workspace;
        let run = view.current_run.as_ref();
        CreateWorkspaceResponse {
            workspace_id: w.id.to_string(),
            name: w.name.clone(),
            status: w.status,
            registry_id: w.registry_id.clone(),
            repository: w.repository.clone(),
            tag: w.tag.clone(),
            run_id: run.map(|r| r.id.to_string()),
            runtime: run.and_then(WorkspaceRuntime::of),
            replayed,
            launch_id: run.and_then(|r| r.launch_id.as_deref().map(str::to_owned)),
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceCreateState {
    pub idempotency_key: String,
    pub state: CreateKeyState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_id: Option<String>,
}

impl From<model::CreateKey> for WorkspaceCreateState {
    fn from(k: model::CreateKey) -> Self {
        WorkspaceCreateState {
            idempotency_key: k.idempotency_key.to_string(),
            state: k.state,
            workspace_id: k.workspace_id.map(String::from),
            run_id: k.run_id.map(String::from),
            launch_id: k.launch_id.map(String::from),
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceSummary {
    pub workspace_id: String,
    pub name: String,
    pub owner_user_id: String,
    pub status: WorkspaceStatus,
    pub registry_id: String,
    pub repository: String,
    pub tag: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<WorkspaceRuntime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published_image: Option<WorkspacePublishedImage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<WorkspaceError>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Present while it sleeps (its status is `stopped`): its work is saved
    /// in its capture session and its runtime released; the next request
    /// that needs the runtime wakes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sleeping: Option<WorkspaceSleeping>,
}

/// Since when a workspace sleeps, and why.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceSleeping {
    pub since: String,
    pub reason: sluice_domain::sleep::SleepReason,
}

impl From<&model::WorkspaceView> for WorkspaceSummary {
    fn from(view: &model::WorkspaceView) -> Self {
        let w = &view.workspace;
        let run = view.current_run.as_ref();
        WorkspaceSummary {
            workspace_id: w.id.to_string(),
            name: w.name.clone(),
            owner_user_id: w.owner_user_id.to_string(),
            status: w.status,
            registry_id: w.registry_id.clone(),
            repository: w.repository.clone(),
            tag: w.tag.clone(),
            runtime: run.and_then(WorkspaceRuntime::of),
            published_image: run.and_then(|r| r.published_image.as_ref()).map(Into::into),
            error: run.and_then(|r| r.error.as_ref()).map(Into::into),
            created_at: rfc3339(w.created_at),
            updated_at: rfc3339(w.updated_at),
            started_at: w.started_at.map(rfc3339),
            finished_at: w.finished_at.map(rfc3339),
            expires_at: w.expires_at.map(rfc3339),
            sleeping: sluice_domain::sleep::sleeping(w)
                .map(|s| WorkspaceSleeping { since: rfc3339(s.since), reason: s.reason }),
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceDetails {
    #[serde(flatten)]
    pub summary: WorkspaceSummary,
    #[schema(value_type = Object)]
    pub spec: Value,
    /// What the owner asked it to be: `stopped` once a stop was asked for
    /// (it is stopping while its status is not yet `stopped`).
    pub desired_state: model::DesiredState,
    /// The current runtime's capture drain as last observed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_drain: Option<WorkspaceCaptureDrain>,
}

impl CaptureExecutorOrigin {
    pub fn of(o: &sluice_protocol::Origin) -> Self {
        CaptureExecutorOrigin {
            epoch: o.epoch as i64,
            launch: o.launch.clone(),
            boot_id: o.boot_id.clone(),
            boot_generation: o.boot_generation as i64,
            observation: o.observation as i64,
            head_n: o.head_n.map(|n| n as i64),
        }
    }

    pub fn to_origin(&self) -> sluice_protocol::Origin {
        sluice_protocol::Origin {
            epoch: self.epoch as u64,
            launch: self.launch.clone(),
            boot_id: self.boot_id.clone(),
            boot_generation: self.boot_generation as u64,
            observation: self.observation as u64,
            head_n: self.head_n.map(|n| n as u64),
        }
    }
}

/// `draining`, `kept`, `saved`, `gone`, `stop-failed`, `stopped` or `discarded`.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CaptureDrainState {
    Draining,
    Kept,
    Saved,
    Gone,
    StopFailed,
    Stopped,
    Discarded,
}

impl From<model::DrainState> for CaptureDrainState {
    fn from(s: model::DrainState) -> Self {
        match s {
            model::DrainState::Draining => CaptureDrainState::Draining,
            model::DrainState::Kept => CaptureDrainState::Kept,
            model::DrainState::Saved => CaptureDrainState::Saved,
            model::DrainState::Gone => CaptureDrainState::Gone,
            model::DrainState::StopFailed => CaptureDrainState::StopFailed,
            model::DrainState::Stopped => CaptureDrainState::Stopped,
            model::DrainState::Discarded => CaptureDrainState::Discarded,
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaptureDrainDiscard {
    pub requested_by: String,
    pub requested_at: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaptureDrainRetained {
    pub since: String,
    pub reason: String,
    pub recoverable: bool,
    pub recovery_attempts: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_recovery_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_recovery_error: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaptureDrainExecutor {
    pub run_id: String,
    pub adapter: String,
    pub resource_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaptureDrainCompletion {
    pub executor_id: String,
    pub epoch: i64,
    pub capture_n: i64,
    pub attested_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sealed_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<CaptureExecutorOrigin>,
}

/// What the control plane last observed of a capture-sourced workspace's
/// drain: until the runtime is gone, this is what is happening.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceCaptureDrain {
    pub state: CaptureDrainState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preservation_starts_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discard: Option<CaptureDrainDiscard>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retained: Option<CaptureDrainRetained>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub executor: Option<CaptureDrainExecutor>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion: Option<CaptureDrainCompletion>,
    /// The newest attestation a later report revoked, with why (sluice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_revoked: Option<CaptureDrainRevoked>,
    /// Captures the daemon had not registered yet, when last read (sluice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<i64>,
    /// Their bytes, when last read (sluice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_bytes: Option<i64>,
}

impl WorkspaceCaptureDrain {
    /// The drain of `run` as stored, with its standing attestation.
    pub fn of(
        run: &model::Run,
        drain: &sluice_store::Drain,
        completion: Option<&sluice_store::StoredAttestation>,
    ) -> Self {
        let (state, detail) = drain.shown();
        let retained = drain.retention_shown(run.status);
        WorkspaceCaptureDrain {
            state: state.into(),
            detail,
            observed_at: drain.observed_at.map(rfc3339),
            preservation_starts_at: drain.preservation_starts_at.map(rfc3339),
            discard: drain.discard.as_ref().map(|d| CaptureDrainDiscard {
                requested_by: d.requested_by.clone(),
                requested_at: rfc3339(d.requested_at),
            }),
            retained: retained.map(|r| CaptureDrainRetained {
                since: rfc3339(r.since),
                reason: r.reason.clone(),
                recoverable: r.recoverable,
                recovery_attempts: r.attempts,
                next_recovery_at: r.next_recovery_at.map(rfc3339),
                last_recovery_error: r.last_error.clone(),
            }),
            executor: run.runtime.as_ref().map(|r| CaptureDrainExecutor {
                run_id: run.id.to_string(),
                adapter: r.adapter.as_str().to_owned(),
                resource_id: r.resource_id.clone(),
                reference: Some(r.reference.clone()),
                launch_id: run.launch_id.as_deref().map(str::to_owned),
            }),
            completion: completion.map(|c| CaptureDrainCompletion {
                executor_id: c.attestation.executor_id.clone(),
                epoch: c.attestation.epoch as i64,
                capture_n: c.attestation.capture_n as i64,
                attested_at: rfc3339(c.attested_at),
                launch_id: c.attestation.launch_id.clone(),
                sealed_at: c.sealed_at.clone(),
                origin: c.attestation.origin.as_ref().map(CaptureExecutorOrigin::of),
            }),
            completion_revoked: None,
            pending: drain.progress.pending,
            pending_bytes: drain.progress.pending_bytes,
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaptureDrainRevoked {
    pub executor_id: String,
    pub epoch: i64,
    pub capture_n: i64,
    pub attested_at: String,
    pub detail: String,
}

impl CaptureDrainRevoked {
    pub fn of(a: &sluice_store::StoredAttestation) -> Self {
        CaptureDrainRevoked {
            executor_id: a.attestation.executor_id.clone(),
            epoch: a.attestation.epoch as i64,
            capture_n: a.attestation.capture_n as i64,
            attested_at: rfc3339(a.attested_at),
            detail: a.detail.clone().unwrap_or_default(),
        }
    }
}

/// A job parked after failing too often, for operators.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailedJob {
    pub kind: model::JobKind,
    /// The workspace (reconcile) or exec run (exec) it works on.
    pub subject: String,
    pub attempts: i64,
    /// Why it was parked: its last error.
    pub last_error: String,
    pub failed_at: String,
}

impl From<sluice_store::FailedJob> for FailedJob {
    fn from(job: sluice_store::FailedJob) -> Self {
        FailedJob {
            kind: job.kind,
            subject: job.subject,
            attempts: job.attempts,
            last_error: job.last_error,
            failed_at: rfc3339(job.failed_at),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ListFailedJobsResponse {
    pub items: Vec<FailedJob>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetryJobRequest {
    pub kind: model::JobKind,
    pub subject: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryJobResponse {
    pub kind: model::JobKind,
    pub subject: String,
    pub retried: bool,
}

/// A retained executor, for operators.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetainedExecutor {
    pub workspace_id: String,
    pub owner_user_id: String,
    pub run_id: String,
    pub capture_drain: WorkspaceCaptureDrain,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ListRetainedExecutorsResponse {
    pub items: Vec<RetainedExecutor>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ListWorkspacesResponse {
    pub items: Vec<WorkspaceSummary>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceAttemptSummary {
    pub attempt_id: String,
    pub relation: RunRelation,
    pub status: WorkspaceStatus,
    pub trigger_type: TriggerType,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<WorkspaceRuntime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published_image: Option<WorkspacePublishedImage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<WorkspaceError>,
    #[schema(value_type = Object)]
    pub spec: Value,
    /// The launch identity the create named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_id: Option<String>,
    pub queued_at: String,
    pub created_at: String,
    pub updated_at: String,
    pub linked_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub duration_ms: Option<i64>,
    /// The host its executor was placed on (sluice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl From<&model::Run> for WorkspaceAttemptSummary {
    fn from(r: &model::Run) -> Self {
        WorkspaceAttemptSummary {
            attempt_id: r.id.to_string(),
            relation: r.relation,
            status: r.status,
            trigger_type: r.trigger_type,
            trigger_ref: r.trigger_ref.clone(),
            runtime: WorkspaceRuntime::of(r),
            published_image: r.published_image.as_ref().map(Into::into),
            error: r.error.as_ref().map(Into::into),
            spec: r.spec.document().clone(),
            launch_id: r.launch_id.as_deref().map(str::to_owned),
            queued_at: rfc3339(r.queued_at),
            created_at: rfc3339(r.created_at),
            updated_at: rfc3339(r.updated_at),
            linked_at: rfc3339(r.linked_at),
            started_at: r.started_at.map(rfc3339),
            finished_at: r.finished_at.map(rfc3339),
            duration_ms: match (r.started_at, r.finished_at) {
                (Some(s), Some(f)) => Some((f - s).max(0)),
                _ => None,
            },
            host: r.host.clone(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ListWorkspaceAttemptsResponse {
    pub items: Vec<WorkspaceAttemptSummary>,
}

// One rendering of an event, shared with the worker's webhooks.
pub use sluice_store::event_feed::{SluiceEventBody, WorkspaceEvent};

#[derive(Debug, Serialize, ToSchema)]
pub struct ListWorkspaceEventsResponse {
    pub items: Vec<WorkspaceEvent>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RenameWorkspaceResponse {
    pub workspace_id: String,
    pub name: String,
    pub updated_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExpireWorkspaceResponse {
    pub workspace_id: String,
    /// `null`: never expires.
    #[schema(required = true)]
    pub expires_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceBind {
    pub mount_path: String,
    pub subpath: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WorkspaceBinds {
    pub binds: Vec<WorkspaceBind>,
}

pub use sluice_protocol::capture::{CaptureStatus as WorkspaceCaptureStatus, Replanned as WorkspaceCaptureReplanned};

/// `queued | running | completed | failed`.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Queued,
    Running,
    Completed,
    Failed,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunCommandResult {
    pub argv: Vec<String>,
    /// `null` until the command has run; a signal `n` reads `128 + n`.
    #[schema(required = true)]
    pub exit_code: Option<i64>,
    pub stdout: String,
    pub stderr: String,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    /// The command ran past its `timeoutMs` and was killed.
    pub timed_out: bool,
}

/// A deterministic-exec run.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecRun {
    pub run_id: String,
    pub workspace_id: String,
    pub harness_id: String,
    pub status: RunStatus,
    #[schema(required = true)]
    pub exit_code: Option<i64>,
    pub commands: Vec<RunCommandResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<WorkspaceError>,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
}

impl ExecRun {
    pub fn of(run: &model::ExecRun) -> ExecRun {
        let commands = run
            .commands
            .iter()
            .enumerate()
            .map(|(i, command)| match run.results.get(i) {
                Some(r) => RunCommandResult {
                    argv: r.argv.clone(),
                    exit_code: Some(i64::from(r.outcome.exit_code)),
                    stdout: r.outcome.stdout.clone(),
                    stderr: r.outcome.stderr.clone(),
                    stdout_truncated: r.outcome.stdout_truncated,
                    stderr_truncated: r.outcome.stderr_truncated,
                    timed_out: r.outcome.timed_out,
                },
                None => RunCommandResult {
                    argv: command.argv.clone(),
                    exit_code: None,
                    stdout: String::new(),
                    stderr: String::new(),
                    stdout_truncated: false,
                    stderr_truncated: false,
                    timed_out: false,
                },
            })
            .collect();
        ExecRun {
            run_id: run.id.to_string(),
            workspace_id: run.workspace_id.to_string(),
            harness_id: "exec".into(),
            status: match run.status {
                model::ExecRunStatus::Queued => RunStatus::Queued,
                model::ExecRunStatus::Running => RunStatus::Running,
                model::ExecRunStatus::Completed => RunStatus::Completed,
                model::ExecRunStatus::Failed => RunStatus::Failed,
            },
            exit_code: run.exit_code,
            commands,
            error: run.error.as_ref().map(WorkspaceError::from),
            created_at: rfc3339(run.created_at),
            started_at: run.started_at.map(rfc3339),
            finished_at: run.finished_at.map(rfc3339),
        }
    }
}

/// What became of a stop's completion attestation.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompletionOutcome {
    /// `accepted` or `ignored`.
    pub outcome: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StopWorkspaceResponse {
    pub workspace_id: String,
    pub status: WorkspaceStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion: Option<CompletionOutcome>,
}

/// A chunk of a command's output in a run's stream (`event: stdout` or
/// `stderr`): text, cut at character boundaries.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunOutputChunk {
    /// The command it is of, from 0.
    pub command: i64,
    pub text: String,
}

/// A command's end in a run's stream (`event: exit`); a stream cut at its
/// bound says so here.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunCommandExit {
    pub command: i64,
    pub exit_code: i64,
    pub timed_out: bool,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
}

/// What an event of a run's stream carries: `run` and `end` the run,
/// `stdout` and `stderr` a chunk of output, `exit` a command's end.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum RunStreamData {
    Run(Box<ExecRun>),
    Output(RunOutputChunk),
    Exit(RunCommandExit),
}

/// The kinds of event a run's stream sends.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RunStreamEventKind {
    Run,
    Stdout,
    Stderr,
    Exit,
    End,
}

/// One event of a run's stream, as Server-Sent Events frame it.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunStreamEvent {
    /// Its position in the run's output (output and exits only): what
    /// `Last-Event-ID` resumes after.
    #[schema(pattern = r"^[0-9]{1,18}$")]
    pub id: Option<String>,
    pub event: RunStreamEventKind,
    /// JSON of a `RunStreamData`: the run for `run` and `end`, a
    /// `RunOutputChunk` for `stdout` and `stderr`, a `RunCommandExit` for
    /// `exit`.
    #[schema(content_media_type = "application/json")]
    pub data: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct WriteFileQuery {
    /// The workspace's owner (required).
    pub owner_user_id: Option<OwnerUserId>,
    /// The file, relative to the worktree.
    pub path: Option<String>,
    /// Its permission bits, octal (default 644).
    #[param(pattern = r"^[0-7]{3,4}$")]
    pub mode: Option<String>,
    /// Make missing directories above it first.
    #[param(pattern = r"^(?:true|false)$")]
    pub parents: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ReadFileQuery {
    /// The workspace's owner (required).
    pub owner_user_id: Option<OwnerUserId>,
    /// The file, relative to the worktree.
    pub path: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ListFilesQuery {
    /// The workspace's owner (required).
    pub owner_user_id: Option<OwnerUserId>,
    /// The directory, relative to the worktree (the worktree itself when empty).
    pub path: Option<String>,
    /// Levels listed, 1 to 16 (default 1).
    #[param(pattern = r"^(?:[1-9]|1[0-6])$")]
    pub depth: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MkdirRequest {
    pub owner_user_id: OwnerUserId,
    /// The directory, relative to the worktree.
    pub path: String,
    /// Make the missing directories above it too (an existing one is no error).
    pub parents: Option<bool>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MoveFileRequest {
    pub owner_user_id: OwnerUserId,
    pub from: String,
    pub to: String,
    /// Replace what is at `to`.
    pub overwrite: Option<bool>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemoveFileRequest {
    pub owner_user_id: OwnerUserId,
    pub path: String,
    /// Remove a directory and all it holds.
    pub recursive: Option<bool>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ArchiveQuery {
    /// The workspace's owner (required).
    pub owner_user_id: Option<OwnerUserId>,
    /// The directory, relative to the worktree (the worktree itself when empty).
    pub path: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct WatchFilesQuery {
    /// The workspace's owner (required).
    pub owner_user_id: Option<OwnerUserId>,
    /// The directory, relative to the worktree (the worktree itself when empty).
    pub path: Option<String>,
    /// Every directory below it too.
    #[param(pattern = r"^(?:true|false)$")]
    pub recursive: Option<String>,
}

/// The kinds of change a watch sends.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WorktreeWatchKind {
    Created,
    Modified,
    Removed,
    Renamed,
    Overflow,
}

/// One event of a watch, as Server-Sent Events frame it.
#[derive(Debug, Serialize, ToSchema)]
pub struct WorktreeWatchEvent {
    pub event: WorktreeWatchKind,
    /// JSON: `{"kind", "path", "from"?, "directory"}`, paths relative to
    /// the watched directory.
    #[schema(content_media_type = "application/json")]
    pub data: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartProcessRequest {
    pub owner_user_id: OwnerUserId,
    /// The program and its arguments (no shell).
    pub argv: Vec<String>,
    /// Where it runs, relative to the worktree (the worktree by default).
    pub cwd: Option<String>,
    /// Its environment, on top of the workspace's.
    pub env: Option<BTreeMap<String, String>>,
    /// A name to know it by.
    pub name: Option<String>,
}

/// A process the executor keeps running.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessRecord {
    pub process_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub argv: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    pub state: ProcessState,
    pub started_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended it (without `SIG`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
}

/// Where a process is.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProcessState {
    Running,
    Exited,
    Signalled,
}

impl ProcessRecord {
    pub fn of(info: sluice_protocol::background::ProcessInfo) -> ProcessRecord {
        let state = match info.state.as_str() {
            "running" => ProcessState::Running,
            "signalled" => ProcessState::Signalled,
            _ => ProcessState::Exited,
        };
        ProcessRecord {
            process_id: info.id,
            name: info.name,
            argv: info.argv,
            cwd: info.cwd,
            state,
            started_at: rfc3339(info.started_ms),
            ended_at: info.ended_ms.map(rfc3339),
            exit_code: info.exit_code,
            signal: info.signal,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ListProcessesResponse {
    pub items: Vec<ProcessRecord>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignalProcessRequest {
    pub owner_user_id: OwnerUserId,
    /// `TERM`, `INT`, `KILL`, `HUP`, `QUIT`, `USR1`, `USR2`, `PIPE` or `ALRM`.
    pub signal: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ProcessStdinQuery {
    /// The workspace's owner (required).
    pub owner_user_id: Option<OwnerUserId>,
    /// Close the process's input after these bytes.
    #[param(pattern = r"^(?:true|false)$")]
    pub eof: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ProcessOutputQuery {
    /// The workspace's owner (required).
    pub owner_user_id: Option<OwnerUserId>,
    /// Go on with each new chunk until the process ends.
    #[param(pattern = r"^(?:true|false)$")]
    pub follow: Option<String>,
}

/// The kinds of event a process's output stream sends.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProcessOutputKind {
    Stdout,
    Stderr,
    Cut,
    Ended,
}

/// One event of a process's output stream, as Server-Sent Events frame it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProcessOutputEvent {
    /// The position after it (output only): what `Last-Event-ID` resumes after.
    #[schema(pattern = r"^[0-9]{1,18}$")]
    pub id: Option<String>,
    pub event: ProcessOutputKind,
    /// JSON: `{"text"}` for output, `{"from", "to"}` for a cut, the process
    /// (a `ProcessRecord`) once it ended.
    #[schema(content_media_type = "application/json")]
    pub data: String,
}

/// A deleted workspace.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteWorkspaceResponse {
    pub workspace_id: String,
    pub deleted_at: String,
}

/// `requested` or `not-retained`.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RecoverState {
    Requested,
    NotRetained,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecoverWorkspaceResponse {
    pub workspace_id: String,
    pub state: RecoverState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recoverable: Option<bool>,
}

/// A sleep asked for: the workspace drains as for a stop (`desiredState`
/// is `stopped`) and sleeps once its runtime is gone with its work saved.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SleepWorkspaceResponse {
    pub workspace_id: String,
    pub status: WorkspaceStatus,
    pub desired_state: model::DesiredState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sleeping: Option<WorkspaceSleeping>,
}

/// A wake: `woken` when this call woke it (a new run, relation `resume`,
/// restores its capture session's head), else it was awake already.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WakeWorkspaceResponse {
    pub workspace_id: String,
    pub run_id: String,
    pub status: WorkspaceStatus,
    pub woken: bool,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestartWorkspaceResponse {
    pub workspace_id: String,
    pub run_id: String,
    pub status: WorkspaceStatus,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SshTargetRuntime {
    pub adapter: RuntimeAdapter,
    pub resource_id: String,
    pub reference: String,
    pub status: RuntimeStatus,
    pub endpoint: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceSshTarget {
    pub workspace_id: String,
    pub attempt_id: String,
    pub runtime: SshTargetRuntime,
    /// How a gateway connects to `runtime.endpoint` when it is the
    /// executor's worker (sluice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway: Option<SshTargetGateway>,
}

/// The credential for one executor's worker, and what its certificate is
/// checked against.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SshTargetGateway {
    /// Sent as `Authorization: Bearer …` to the endpoint; good for this
    /// executor until `ticketExpiresAt`.
    pub ticket: String,
    pub ticket_expires_at: String,
    /// The install's cluster authority (PEM): the worker's certificate is
    /// issued under it.
    pub certificate_authority: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok` when the database answers.
    pub status: String,
    pub backend: String,
}

// ---------------------------------------------------------------- capture sessions

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateCaptureSessionRequest {
    pub owner_user_id: OwnerUserId,
    /// The most bytes the session may hold in the object store (what its
    /// kept captures need, counted as objects are uploaded); absent: the
    /// install's default.
    #[schema(minimum = 1)]
    pub quota_bytes: Option<i64>,
    /// Which captures are kept; absent: the install's policy.
    pub retention: Option<RetentionPolicy>,
}

/// Which captures a session keeps: the newest `keepLast`, and every one
/// registered within `keepWithinSeconds` (either rule keeps a capture; with
/// neither, every capture is kept). The head and the final seal are always
/// kept.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetentionPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1)]
    pub keep_last: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 9_223_372_036_854_775_i64)]
    pub keep_within_seconds: Option<i64>,
}

/// One kept capture in a session's timeline.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaptureTimelineEntry {
    pub n: u64,
    pub epoch: u64,
    pub registered_at: String,
    /// The executor (run) that registered it, and its launch identity.
    pub executor_id: String,
    pub launch: String,
    /// The daemon's origin stamp on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub origin: Option<sluice_protocol::Origin>,
    #[schema(value_type = Vec<String>)]
    pub classes: Vec<sluice_protocol::capture::CaptureClass>,
    /// The bytes of the files of the classes it captured.
    pub bytes: u64,
    /// The files of its whole tree, and the paths added, changed and removed
    /// since the capture before it (absent for a capture registered before
    /// sluice counted them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed: Option<u64>,
    /// The earlier capture whose tree this one restored: the first capture
    /// of a workspace created with `spec.source.captureN`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restored_from: Option<u64>,
}

/// The paths that differ between two captures' trees (both classes), each
/// list sorted and together at most 10,000 long; a path is a string, or
/// `{"hex": …}` where it is not UTF-8.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaptureDiffResponse {
    pub n: u64,
    /// 0: an empty tree.
    pub against: u64,
    #[schema(value_type = Vec<PathName>)]
    pub added: Vec<sluice_protocol::names::Name>,
    #[schema(value_type = Vec<PathName>)]
    pub changed: Vec<sluice_protocol::names::Name>,
    #[schema(value_type = Vec<PathName>)]
    pub removed: Vec<sluice_protocol::names::Name>,
    /// How many of each there are, listed or not.
    pub added_count: u64,
    pub changed_count: u64,
    pub removed_count: u64,
    /// Whether the lists stop short of the counts.
    pub truncated: bool,
}

/// A path as the API writes it (the schema of `names::Name`'s
/// serialization): its text where it is UTF-8, else its bytes as hex.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum PathName {
    Text(String),
    Bytes { hex: String },
}

/// A page of a session's kept captures, in chain order.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaptureTimelineResponse {
    pub captures: Vec<CaptureTimelineEntry>,
    /// Pass as `after` for the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_after: Option<u64>,
}

/// A new session. The token is shown here once and never again.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateCaptureSessionResponse {
    pub session_id: String,
    pub worktree_id: String,
    /// Give it to a capture-sourced create as `captureToken`.
    pub token: String,
}

/// One registered capture.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaptureSummary {
    pub n: u64,
    pub epoch: u64,
    /// The launch identity of the executor that registered it.
    pub launch: String,
    pub registered_at: String,
    #[schema(value_type = Vec<String>)]
    pub classes: Vec<sluice_protocol::capture::CaptureClass>,
    /// The bytes of the files its classes hold.
    pub bytes: u64,
}

/// The capture a final flush sealed: what a stop's `completion` attests.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaptureFinalSeal {
    pub capture_n: u64,
    pub epoch: u64,
    /// The executor's run id.
    pub executor_id: String,
    pub launch_id: String,
    pub sealed_at: String,
    #[schema(value_type = CaptureExecutorOrigin)]
    pub origin: sluice_protocol::Origin,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaptureSessionResponse {
    pub session_id: String,
    pub worktree_id: String,
    /// The lease epoch: grows with every claim.
    pub epoch: u64,
    /// The newest registered capture; absent until one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_n: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota_bytes: Option<u64>,
    /// The bytes of the files the head names.
    pub used_bytes: u64,
    /// The bytes the kept captures hold in the object store (as of the last
    /// collection, plus what was uploaded since): what the quota bounds.
    pub stored_bytes: u64,
    /// The retention policy in force (no rule: every capture is kept).
    pub retention: RetentionPolicy,
    /// The newest captures (at most 100), in chain order.
    pub captures: Vec<CaptureSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_seal: Option<CaptureFinalSeal>,
}

// ------------------------------------------------------------------ fleet

/// A worker of the fleet, as it last declared itself.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetWorker {
    pub id: String,
    /// The host its executors run on.
    pub host: String,
    /// The runtime it drives (`local`, `docker`).
    pub runtime: String,
    /// How many executors its host may hold; absent: no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<i64>,
    /// Where the rest of sluice reaches it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub internal_url: Option<String>,
    pub version: String,
    pub started_at: String,
    pub heartbeat_at: String,
    /// `healthy`, or `missing` once its heartbeat is overdue (it gets
    /// nothing new).
    pub health: String,
    /// Its host's warm pool per image, as it last tended it (empty: none).
    pub warm_pool: Vec<WarmPoolLevel>,
}

/// One image's warm pool on a worker's host.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WarmPoolLevel {
    /// `repository:tag`.
    pub image: String,
    /// How many executors it keeps.
    pub target: u32,
    /// Started and ready to be taken.
    pub idle: u32,
    /// Started, not ready yet.
    pub starting: u32,
}

impl From<sluice_store::fleet::WorkerRecord> for FleetWorker {
    fn from(w: sluice_store::fleet::WorkerRecord) -> Self {
        FleetWorker {
            id: w.member.id.to_string(),
            host: w.member.host,
            runtime: w.member.runtime,
            capacity: w.member.capacity,
            internal_url: w.member.internal_url,
            version: w.member.version,
            started_at: rfc3339(w.started_at),
            heartbeat_at: rfc3339(w.heartbeat_at),
            warm_pool: w
                .member
                .warm_pool
                .into_iter()
                .map(|l| WarmPoolLevel { image: l.image, target: l.target, idle: l.idle, starting: l.starting })
                .collect(),
            health: w.health.as_str().into(),
        }
    }
}

/// A template build asked for.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateTemplateRequest {
    /// The template's name: its image is `templates/NAME`.
    #[schema(min_length = 1, max_length = 64, pattern = r"^[a-z0-9][a-z0-9._-]*$")]
    pub name: String,
    /// The Dockerfile, as text.
    #[schema(min_length = 1, max_length = 262144)]
    pub dockerfile: String,
    /// The build's context: a tar archive, base64.
    pub context: Option<String>,
    /// A line of shell a workspace of this template runs as its managed process.
    #[schema(min_length = 1, max_length = 4096)]
    pub start_command: Option<String>,
    /// A line of shell that exits 0 once a workspace of this template is ready.
    #[schema(min_length = 1, max_length = 4096)]
    pub ready_command: Option<String>,
}

/// One build of a template.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateBuildView {
    pub id: String,
    pub template: String,
    /// `queued`, `building`, `succeeded` or `failed`.
    pub state: String,
    /// The built image's manifest digest.
    pub digest: Option<String>,
    pub size_bytes: Option<i64>,
    /// Succeeded at once: the Dockerfile and context were those of an earlier successful build.
    pub cache_hit: bool,
    /// What built it (`docker`, `buildah`) and on which host.
    pub builder: Option<String>,
    pub host: Option<String>,
    pub start_command: Option<String>,
    pub ready_command: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// From the build's start to its end.
    pub duration_ms: Option<i64>,
}

impl From<sluice_store::templates::TemplateBuild> for TemplateBuildView {
    fn from(b: sluice_store::templates::TemplateBuild) -> TemplateBuildView {
        TemplateBuildView {
            id: b.id.into_string(),
            template: b.template,
            state: b.state.as_str().to_owned(),
            digest: b.digest,
            size_bytes: b.size_bytes,
            cache_hit: b.cache_hit,
            builder: b.builder,
            host: b.host,
            start_command: b.start_command,
            ready_command: b.ready_command,
            error: b.error,
            created_at: rfc3339(b.created_at),
            duration_ms: b.started_at.zip(b.finished_at).map(|(s, f)| f - s),
            started_at: b.started_at.map(rfc3339),
            finished_at: b.finished_at.map(rfc3339),
        }
    }
}

/// A template and its newest builds.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateView {
    pub name: String,
    pub created_at: String,
    /// The build its workspaces get: its newest successful one.
    pub current: Option<TemplateBuildView>,
    /// Newest first.
    pub builds: Vec<TemplateBuildView>,
}

impl From<sluice_store::templates::Template> for TemplateView {
    fn from(t: sluice_store::templates::Template) -> TemplateView {
        TemplateView {
            current: t.current().cloned().map(TemplateBuildView::from),
            name: t.name,
            created_at: rfc3339(t.created_at),
            builds: t.builds.into_iter().map(TemplateBuildView::from).collect(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListTemplatesResponse {
    pub items: Vec<TemplateView>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct BuildLogQuery {
    /// Go on with each new line until the build ends.
    #[param(pattern = r"^(?:true|false)$")]
    pub follow: Option<String>,
}

/// What a build's log stream sends: `event: log` with `data: {"text"}` and `id:` the line's
/// number, then `event: ended` with the build.
#[derive(Debug, Serialize, ToSchema)]
pub struct BuildLogLine {
    pub text: String,
}

/// The images in the hosts' caches.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListImagesResponse {
    pub items: Vec<HostImage>,
}

/// An image in a host's cache.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostImage {
    /// The host whose cache holds it.
    pub host: String,
    /// The names it was pulled as (`registryId/repository:tag`).
    pub names: Vec<String>,
    /// Its manifest's digest.
    pub digest: String,
    /// Bytes on the host: its layers as fetched and its unpacked tree.
    pub size_bytes: u64,
    pub layers: u32,
    /// Of its layers, how many another cached image shares.
    pub shared_layers: u32,
    /// When an executor last started on it.
    pub last_used_at: String,
    /// Executors on the host that run on it now (retained ones too): the
    /// cache's bound never removes it while there are any.
    pub executors: u32,
}

impl HostImage {
    pub fn of(host: &str, image: sluice_store::fleet::HostImage) -> HostImage {
        HostImage {
            host: host.to_owned(),
            names: image.names,
            digest: image.digest,
            size_bytes: image.size_bytes,
            layers: image.layers,
            shared_layers: image.shared_layers,
            last_used_at: rfc3339(image.last_used_at),
            executors: image.executors,
        }
    }
}

/// Who did something to a host, and when.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorMark {
    pub by: String,
    pub at: String,
}

impl OperatorMark {
    fn of(mark: Option<(String, i64)>) -> Option<OperatorMark> {
        mark.map(|(by, at)| OperatorMark { by, at: rfc3339(at) })
    }
}

/// A host executors run on.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetHost {
    pub name: String,
    /// `up`, `unreachable` (no worker of it beat within the grace: its
    /// executors are kept) or `lost` (an operator forgot it).
    pub state: model::HostState,
    pub state_changed_at: String,
    pub last_seen_at: String,
    /// Workers of it whose heartbeat is fresh.
    pub live_workers: i64,
    /// How many executors it may hold; absent: no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<i64>,
    /// Executors placed on it and not removed.
    pub load: i64,
    /// Whether a new executor may go there now.
    pub takes_new_work: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cordoned: Option<OperatorMark>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forgotten: Option<OperatorMark>,
}

impl From<sluice_store::fleet::HostRecord> for FleetHost {
    fn from(h: sluice_store::fleet::HostRecord) -> Self {
        FleetHost {
            takes_new_work: h.load.takes_new_work(),
            name: h.load.name,
            state: h.load.state,
            state_changed_at: rfc3339(h.state_changed_at),
            last_seen_at: rfc3339(h.last_seen_at),
            live_workers: h.load.live_workers,
            capacity: h.load.capacity,
            load: h.load.load,
            cordoned: OperatorMark::of(h.cordoned),
            forgotten: OperatorMark::of(h.forgotten),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ListWorkersResponse {
    /// Every registered worker, by host.
    pub items: Vec<FleetWorker>,
    /// Every host the fleet knows, by name.
    pub hosts: Vec<FleetHost>,
}

/// Who asks (an operator's name, recorded with what it did).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperatorRequest {
    #[schema(min_length = 1, max_length = 256, pattern = r"^\S(?:.*\S)?$")]
    pub by: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DrainHostResponse {
    pub host: FleetHost,
    /// The workspaces whose stop this asked for (their executors drain as
    /// any stop does: saved first, or retained).
    pub stopping: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForgetHostResponse {
    pub host: FleetHost,
    /// The runs whose executors were written off with the host.
    pub lost_runs: Vec<String>,
}

/// A user's SSH public key to register for a principal.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegisterSshKeyRequest {
    /// Who the key's holder is: the principal an SSH gateway authorizes.
    pub principal: String,
    /// The key in OpenSSH format (`ssh-ed25519 AAAA… comment`); the comment
    /// is not kept.
    pub public_key: String,
}

/// A registered SSH key.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SshKeyRecord {
    /// `SHA256:…`, as `ssh-keygen -lf` prints it: the key's id.
    pub fingerprint: String,
    pub principal: String,
    /// The key in OpenSSH format, without its comment.
    pub public_key: String,
    pub created_at: String,
}

impl From<sluice_store::ssh_keys::SshKey> for SshKeyRecord {
    fn from(k: sluice_store::ssh_keys::SshKey) -> Self {
        SshKeyRecord {
            fingerprint: k.fingerprint,
            principal: k.principal,
            public_key: format!("{} {}", k.algorithm, k.public_key),
            created_at: rfc3339(k.created_at),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ListSshKeysResponse {
    pub items: Vec<SshKeyRecord>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListSshKeysQuery {
    /// Whose keys.
    pub principal: Option<String>,
}

/// An SSH session a gateway opened into the workspace: who, what kind,
/// when and how it ended (never what went through it).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewaySessionRecord {
    pub session_id: String,
    pub attempt_id: String,
    pub principal: String,
    /// The SHA256 fingerprint of the key the user signed in with.
    #[schema(required = true)]
    pub key_fingerprint: Option<String>,
    /// `shell`, `exec`, `sftp` or `port-forward`.
    pub kind: String,
    pub started_at: String,
    #[schema(required = true)]
    pub ended_at: Option<String>,
    /// The exit status of its shell or command (128 + n after signal n).
    #[schema(required = true)]
    pub exit_status: Option<i64>,
    /// `exited`, `refused` or `cut` (the gateway or the executor went away).
    #[schema(required = true)]
    pub outcome: Option<String>,
}

impl From<sluice_store::ssh_keys::GatewaySession> for GatewaySessionRecord {
    fn from(s: sluice_store::ssh_keys::GatewaySession) -> Self {
        GatewaySessionRecord {
            session_id: s.id.to_string(),
            attempt_id: s.run_id.to_string(),
            principal: s.principal,
            key_fingerprint: s.key_fingerprint,
            kind: s.kind,
            started_at: rfc3339(s.started_at),
            ended_at: s.ended_at.map(rfc3339),
            exit_status: s.exit_status,
            outcome: s.outcome,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ListGatewaySessionsResponse {
    pub items: Vec<GatewaySessionRecord>,
}

/// A preview of one of the workspace's ports.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreatePreviewRequest {
    /// The workspace's owner (required).
    pub owner_user_id: Option<OwnerUserId>,
    /// The port inside the workspace (1 to 65535).
    pub port: i64,
    /// How long the grant lasts: 60 to 604800 seconds (default 3600).
    pub ttl_seconds: Option<i64>,
    /// Anyone may visit the preview, without a token (default false).
    #[serde(default)]
    pub public: bool,
}

/// A preview grant.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewRecord {
    pub preview_id: String,
    /// The run it was granted on: a stop or restart ends it.
    pub attempt_id: String,
    pub port: u16,
    pub public: bool,
    /// Where the preview is served. A private grant's answer to its create
    /// carries the token that signs its first visit (shown once); the
    /// visit leaves a cookie for that host only.
    pub url: String,
    pub created_at: String,
    pub expires_at: String,
    pub revoked: bool,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListPreviewsResponse {
    pub items: Vec<PreviewRecord>,
}

/// A webhook endpoint to register.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateWebhookRequest {
    /// Where deliveries are posted: `https://` (or `http://`), no user or
    /// password. An address inside the install's hosts or networks is
    /// refused unless the install allows it.
    pub url: String,
    /// Event types it takes: names (`runtime.ready`), prefixes (`runtime.*`,
    /// `sluice.*`) or `*`. Absent or empty: every type.
    #[serde(default)]
    pub events: Vec<String>,
    /// The signing secret, `whsec_` and the base64 of 24 to 64 bytes.
    /// Absent: sluice makes one and answers it once, in this response.
    pub secret: Option<String>,
}

/// A webhook endpoint. Its secret is never shown again after the create.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookRecord {
    pub id: String,
    pub url: String,
    /// Its type filters; empty: every type.
    pub events: Vec<String>,
    /// `false` once a run of failed deliveries disabled it.
    pub enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_at: Option<String>,
    /// The last failure, when disabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    /// Failed deliveries in a row.
    pub failures: i64,
    /// The feed cursor of the last event delivered or passed over.
    pub cursor: String,
    pub created_at: String,
}

impl From<sluice_store::webhooks::Webhook> for WebhookRecord {
    fn from(w: sluice_store::webhooks::Webhook) -> Self {
        WebhookRecord {
            enabled: w.disabled.is_none(),
            disabled_at: w.disabled.as_ref().map(|(at, _)| rfc3339(*at)),
            disabled_reason: w.disabled.map(|(_, reason)| reason),
            id: w.id.to_string(),
            url: w.url,
            events: w.events,
            failures: w.failures,
            cursor: w.cursor.to_string(),
            created_at: rfc3339(w.created_at),
        }
    }
}

/// A registered endpoint and, when sluice made it, its secret (shown once).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateWebhookResponse {
    #[serde(flatten)]
    pub webhook: WebhookRecord,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ListWebhooksResponse {
    pub items: Vec<WebhookRecord>,
}

/// One delivery tried.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDeliveryRecord {
    pub id: String,
    /// The event's id: the `webhook-id` header, the same on every try.
    pub event_id: String,
    pub event_type: String,
    /// The try's number for this event, from 1.
    pub attempt: i64,
    pub at: String,
    pub duration_ms: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_code: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub delivered: bool,
}

impl From<sluice_store::webhooks::Delivery> for WebhookDeliveryRecord {
    fn from(d: sluice_store::webhooks::Delivery) -> Self {
        WebhookDeliveryRecord {
            id: d.id.to_string(),
            event_id: d.event_id.to_string(),
            event_type: d.event_type,
            attempt: d.attempt,
            at: rfc3339(d.at),
            duration_ms: d.duration_ms,
            status_code: d.status_code,
            error: d.error,
            delivered: d.delivered,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ListWebhookDeliveriesResponse {
    pub items: Vec<WebhookDeliveryRecord>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListWebhookDeliveriesQuery {
    /// 1 to 1000 (default 100), newest first.
    #[param(pattern = r"^(?:[1-9][0-9]{0,2}|1000)$")]
    pub limit: Option<String>,
}
