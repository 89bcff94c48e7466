from enum import StrEnum

class TriggerType(StrEnum):
    API = "api"
    MANUAL = "manual"
    RETRY = "retry"
    SCHEDULE = "schedule"

    def __str__(self) -> str:
        return str(self.value)
