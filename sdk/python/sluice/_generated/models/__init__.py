""" Contains all the data models used in inputs/outputs """

from .bind_workspace_request import BindWorkspaceRequest
from .build_log_line import BuildLogLine
from .capture_class import CaptureClass
from .capture_class_snaps import CaptureClassSnaps
from .capture_diff_response import CaptureDiffResponse
from .capture_drain_completion import CaptureDrainCompletion
from .capture_drain_discard import CaptureDrainDiscard
from .capture_drain_executor import CaptureDrainExecutor
from .capture_drain_retained import CaptureDrainRetained
from .capture_drain_revoked import CaptureDrainRevoked
from .capture_drain_state import CaptureDrainState
from .capture_executor_origin import CaptureExecutorOrigin
from .capture_final_seal import CaptureFinalSeal
from .capture_overdue import CaptureOverdue
from .capture_session_response import CaptureSessionResponse
from .capture_summary import CaptureSummary
from .capture_timeline_entry import CaptureTimelineEntry
from .capture_timeline_entry_origin_type_0 import CaptureTimelineEntryOriginType0
from .capture_timeline_response import CaptureTimelineResponse
from .completion_attestation import CompletionAttestation
from .completion_outcome import CompletionOutcome
from .create_capture_session_request import CreateCaptureSessionRequest
from .create_capture_session_response import CreateCaptureSessionResponse
from .create_key_state import CreateKeyState
from .create_preview_request import CreatePreviewRequest
from .create_template_request import CreateTemplateRequest
from .create_webhook_request import CreateWebhookRequest
from .create_webhook_response import CreateWebhookResponse
from .create_workspace_credentials import CreateWorkspaceCredentials
from .create_workspace_request import CreateWorkspaceRequest
from .create_workspace_request_secret_env_type_0 import CreateWorkspaceRequestSecretEnvType0
from .create_workspace_request_spec import CreateWorkspaceRequestSpec
from .create_workspace_response import CreateWorkspaceResponse
from .delete_workspace_response import DeleteWorkspaceResponse
from .desired_state import DesiredState
from .drain_host_response import DrainHostResponse
from .error_body import ErrorBody
from .event_type import EventType
from .exec_run import ExecRun
from .exec_workspace_request import ExecWorkspaceRequest
from .expire_workspace_request import ExpireWorkspaceRequest
from .expire_workspace_response import ExpireWorkspaceResponse
from .failed_job import FailedJob
from .file_listing import FileListing
from .fleet_host import FleetHost
from .fleet_worker import FleetWorker
from .flush_kind import FlushKind
from .flush_workspace_capture_request import FlushWorkspaceCaptureRequest
from .forget_host_response import ForgetHostResponse
from .fork_request import ForkRequest
from .fork_response import ForkResponse
from .forked_workspace import ForkedWorkspace
from .gateway_session_record import GatewaySessionRecord
from .health import Health
from .host_image import HostImage
from .host_state import HostState
from .job_kind import JobKind
from .list_failed_jobs_response import ListFailedJobsResponse
from .list_gateway_sessions_response import ListGatewaySessionsResponse
from .list_images_response import ListImagesResponse
from .list_previews_response import ListPreviewsResponse
from .list_processes_response import ListProcessesResponse
from .list_retained_executors_response import ListRetainedExecutorsResponse
from .list_ssh_keys_response import ListSshKeysResponse
from .list_templates_response import ListTemplatesResponse
from .list_webhook_deliveries_response import ListWebhookDeliveriesResponse
from .list_webhooks_response import ListWebhooksResponse
from .list_workers_response import ListWorkersResponse
from .list_workspace_attempts_response import ListWorkspaceAttemptsResponse
from .list_workspace_events_response import ListWorkspaceEventsResponse
from .list_workspaces_response import ListWorkspacesResponse
from .mkdir_request import MkdirRequest
from .move_file_request import MoveFileRequest
from .operator_mark import OperatorMark
from .operator_request import OperatorRequest
from .owner_request import OwnerRequest
from .path_name_type_1 import PathNameType1
from .preview_record import PreviewRecord
from .process_output_event import ProcessOutputEvent
from .process_output_kind import ProcessOutputKind
from .process_record import ProcessRecord
from .process_state import ProcessState
from .recover_state import RecoverState
from .recover_workspace_response import RecoverWorkspaceResponse
from .register_ssh_key_request import RegisterSshKeyRequest
from .remove_file_request import RemoveFileRequest
from .rename_workspace_request import RenameWorkspaceRequest
from .rename_workspace_response import RenameWorkspaceResponse
from .restart_workspace_response import RestartWorkspaceResponse
from .retained_executor import RetainedExecutor
from .retention_policy import RetentionPolicy
from .retry_job_request import RetryJobRequest
from .retry_job_response import RetryJobResponse
from .run_command import RunCommand
from .run_command_env_type_0 import RunCommandEnvType0
from .run_command_exit import RunCommandExit
from .run_command_result import RunCommandResult
from .run_output_chunk import RunOutputChunk
from .run_relation import RunRelation
from .run_status import RunStatus
from .run_stream_event import RunStreamEvent
from .run_stream_event_kind import RunStreamEventKind
from .runtime_adapter import RuntimeAdapter
from .runtime_status import RuntimeStatus
from .signal_process_request import SignalProcessRequest
from .sleep_reason import SleepReason
from .sleep_workspace_response import SleepWorkspaceResponse
from .source_selection import SourceSelection
from .ssh_key_record import SshKeyRecord
from .ssh_target_gateway import SshTargetGateway
from .ssh_target_runtime import SshTargetRuntime
from .start_process_request import StartProcessRequest
from .start_process_request_env_type_0 import StartProcessRequestEnvType0
from .stop_workspace_request import StopWorkspaceRequest
from .stop_workspace_response import StopWorkspaceResponse
from .take_over import TakeOver
from .template_build_view import TemplateBuildView
from .template_view import TemplateView
from .trigger_type import TriggerType
from .unpacked_archive import UnpackedArchive
from .wait_for import WaitFor
from .wake_workspace_response import WakeWorkspaceResponse
from .warm_pool_level import WarmPoolLevel
from .webhook_delivery_record import WebhookDeliveryRecord
from .webhook_record import WebhookRecord
from .workspace_attempt_summary import WorkspaceAttemptSummary
from .workspace_attempt_summary_spec import WorkspaceAttemptSummarySpec
from .workspace_bind import WorkspaceBind
from .workspace_binds import WorkspaceBinds
from .workspace_capture_drain import WorkspaceCaptureDrain
from .workspace_capture_replanned import WorkspaceCaptureReplanned
from .workspace_capture_status import WorkspaceCaptureStatus
from .workspace_create_state import WorkspaceCreateState
from .workspace_details import WorkspaceDetails
from .workspace_details_spec import WorkspaceDetailsSpec
from .workspace_error import WorkspaceError
from .workspace_event import WorkspaceEvent
from .workspace_event_data_type_0 import WorkspaceEventDataType0
from .workspace_published_image import WorkspacePublishedImage
from .workspace_runtime import WorkspaceRuntime
from .workspace_sleeping import WorkspaceSleeping
from .workspace_ssh_target import WorkspaceSshTarget
from .workspace_status import WorkspaceStatus
from .workspace_summary import WorkspaceSummary
from .worktree_entry import WorktreeEntry
from .worktree_entry_kind import WorktreeEntryKind
from .worktree_watch_event import WorktreeWatchEvent
from .worktree_watch_kind import WorktreeWatchKind

__all__ = (
    "BindWorkspaceRequest",
    "BuildLogLine",
    "CaptureClass",
    "CaptureClassSnaps",
    "CaptureDiffResponse",
    "CaptureDrainCompletion",
    "CaptureDrainDiscard",
    "CaptureDrainExecutor",
    "CaptureDrainRetained",
    "CaptureDrainRevoked",
    "CaptureDrainState",
    "CaptureExecutorOrigin",
    "CaptureFinalSeal",
    "CaptureOverdue",
    "CaptureSessionResponse",
    "CaptureSummary",
    "CaptureTimelineEntry",
    "CaptureTimelineEntryOriginType0",
    "CaptureTimelineResponse",
    "CompletionAttestation",
    "CompletionOutcome",
    "CreateCaptureSessionRequest",
    "CreateCaptureSessionResponse",
    "CreateKeyState",
    "CreatePreviewRequest",
    "CreateTemplateRequest",
    "CreateWebhookRequest",
    "CreateWebhookResponse",
    "CreateWorkspaceCredentials",
    "CreateWorkspaceRequest",
    "CreateWorkspaceRequestSecretEnvType0",
    "CreateWorkspaceRequestSpec",
    "CreateWorkspaceResponse",
    "DeleteWorkspaceResponse",
    "DesiredState",
    "DrainHostResponse",
    "ErrorBody",
    "EventType",
    "ExecRun",
    "ExecWorkspaceRequest",
    "ExpireWorkspaceRequest",
    "ExpireWorkspaceResponse",
    "FailedJob",
    "FileListing",
    "FleetHost",
    "FleetWorker",
    "FlushKind",
    "FlushWorkspaceCaptureRequest",
    "ForgetHostResponse",
    "ForkedWorkspace",
    "ForkRequest",
    "ForkResponse",
    "GatewaySessionRecord",
    "Health",
    "HostImage",
    "HostState",
    "JobKind",
    "ListFailedJobsResponse",
    "ListGatewaySessionsResponse",
    "ListImagesResponse",
    "ListPreviewsResponse",
    "ListProcessesResponse",
    "ListRetainedExecutorsResponse",
    "ListSshKeysResponse",
    "ListTemplatesResponse",
    "ListWebhookDeliveriesResponse",
    "ListWebhooksResponse",
    "ListWorkersResponse",
    "ListWorkspaceAttemptsResponse",
    "ListWorkspaceEventsResponse",
    "ListWorkspacesResponse",
    "MkdirRequest",
    "MoveFileRequest",
    "OperatorMark",
    "OperatorRequest",
    "OwnerRequest",
    "PathNameType1",
    "PreviewRecord",
    "ProcessOutputEvent",
    "ProcessOutputKind",
    "ProcessRecord",
    "ProcessState",
    "RecoverState",
    "RecoverWorkspaceResponse",
    "RegisterSshKeyRequest",
    "RemoveFileRequest",
    "RenameWorkspaceRequest",
    "RenameWorkspaceResponse",
    "RestartWorkspaceResponse",
    "RetainedExecutor",
    "RetentionPolicy",
    "RetryJobRequest",
    "RetryJobResponse",
    "RunCommand",
    "RunCommandEnvType0",
    "RunCommandExit",
    "RunCommandResult",
    "RunOutputChunk",
    "RunRelation",
    "RunStatus",
    "RunStreamEvent",
    "RunStreamEventKind",
    "RuntimeAdapter",
    "RuntimeStatus",
    "SignalProcessRequest",
    "SleepReason",
    "SleepWorkspaceResponse",
    "SourceSelection",
    "SshKeyRecord",
    "SshTargetGateway",
    "SshTargetRuntime",
    "StartProcessRequest",
    "StartProcessRequestEnvType0",
    "StopWorkspaceRequest",
    "StopWorkspaceResponse",
    "TakeOver",
    "TemplateBuildView",
    "TemplateView",
    "TriggerType",
    "UnpackedArchive",
    "WaitFor",
    "WakeWorkspaceResponse",
    "WarmPoolLevel",
    "WebhookDeliveryRecord",
    "WebhookRecord",
    "WorkspaceAttemptSummary",
    "WorkspaceAttemptSummarySpec",
    "WorkspaceBind",
    "WorkspaceBinds",
    "WorkspaceCaptureDrain",
    "WorkspaceCaptureReplanned",
    "WorkspaceCaptureStatus",
    "WorkspaceCreateState",
    "WorkspaceDetails",
    "WorkspaceDetailsSpec",
    "WorkspaceError",
    "WorkspaceEvent",
    "WorkspaceEventDataType0",
    "WorkspacePublishedImage",
    "WorkspaceRuntime",
    "WorkspaceSleeping",
    "WorkspaceSshTarget",
    "WorkspaceStatus",
    "WorkspaceSummary",
    "WorktreeEntry",
    "WorktreeEntryKind",
    "WorktreeWatchEvent",
    "WorktreeWatchKind",
)
