from enum import StrEnum

class HostState(StrEnum):
    LOST = "lost"
    UNREACHABLE = "unreachable"
    UP = "up"

    def __str__(self) -> str:
        return str(self.value)
