from enum import StrEnum

class RuntimeStatus(StrEnum):
    FAILED = "failed"
    PENDING = "pending"
    READY = "ready"
    RETAINED = "retained"
    RUNNING = "running"
    STOPPED = "stopped"

    def __str__(self) -> str:
        return str(self.value)
