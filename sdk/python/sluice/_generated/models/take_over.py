from enum import StrEnum

class TakeOver(StrEnum):
    DISCARD_UNSAVED = "discard-unsaved"

    def __str__(self) -> str:
        return str(self.value)
