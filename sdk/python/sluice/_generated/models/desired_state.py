from enum import StrEnum

class DesiredState(StrEnum):
    RUNNING = "running"
    STOPPED = "stopped"

    def __str__(self) -> str:
        return str(self.value)
