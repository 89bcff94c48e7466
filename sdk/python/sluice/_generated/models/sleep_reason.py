from enum import StrEnum

class SleepReason(StrEnum):
    IDLE = "idle"
    REQUESTED = "requested"

    def __str__(self) -> str:
        return str(self.value)
