from enum import StrEnum

class CaptureDrainState(StrEnum):
    DISCARDED = "discarded"
    DRAINING = "draining"
    GONE = "gone"
    KEPT = "kept"
    SAVED = "saved"
    STOPPED = "stopped"
    STOP_FAILED = "stop-failed"

    def __str__(self) -> str:
        return str(self.value)
