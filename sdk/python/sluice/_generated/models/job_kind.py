from enum import StrEnum

class JobKind(StrEnum):
    BUILD = "build"
    DELIVER = "deliver"
    EXEC = "exec"
    RECONCILE = "reconcile"

    def __str__(self) -> str:
        return str(self.value)
