from enum import StrEnum

class FlushKind(StrEnum):
    FINAL = "final"
    SUSPEND = "suspend"

    def __str__(self) -> str:
        return str(self.value)
