from enum import StrEnum

class ProcessState(StrEnum):
    EXITED = "exited"
    RUNNING = "running"
    SIGNALLED = "signalled"

    def __str__(self) -> str:
        return str(self.value)
