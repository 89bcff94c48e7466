from enum import StrEnum

class WaitFor(StrEnum):
    READY = "ready"

    def __str__(self) -> str:
        return str(self.value)
