from enum import StrEnum

class EventType(StrEnum):
    ATTEMPT_CANCELLED = "attempt.cancelled"
    ATTEMPT_FAILED = "attempt.failed"
    ATTEMPT_QUEUED = "attempt.queued"
    ATTEMPT_RUNNING = "attempt.running"
    ATTEMPT_SUCCEEDED = "attempt.succeeded"
    IMAGE_PUBLISHED = "image.published"
    RUNTIME_FAILED = "runtime.failed"
    RUNTIME_PENDING = "runtime.pending"
    RUNTIME_READY = "runtime.ready"
    RUNTIME_RUNNING = "runtime.running"
    RUNTIME_STOPPED = "runtime.stopped"
    WORKSPACE_CREATED = "workspace.created"

    def __str__(self) -> str:
        return str(self.value)
