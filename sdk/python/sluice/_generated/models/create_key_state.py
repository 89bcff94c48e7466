from enum import StrEnum

class CreateKeyState(StrEnum):
    CANCELLED = "cancelled"
    FOUND = "found"
    NONE = "none"
    PENDING = "pending"

    def __str__(self) -> str:
        return str(self.value)
