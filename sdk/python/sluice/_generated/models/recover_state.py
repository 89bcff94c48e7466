from enum import StrEnum

class RecoverState(StrEnum):
    NOT_RETAINED = "not-retained"
    REQUESTED = "requested"

    def __str__(self) -> str:
        return str(self.value)
