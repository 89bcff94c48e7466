from enum import StrEnum

class CaptureClass(StrEnum):
    BULK = "bulk"
    SMALL = "small"

    def __str__(self) -> str:
        return str(self.value)
