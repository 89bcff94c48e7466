from enum import StrEnum

class WorktreeWatchKind(StrEnum):
    CREATED = "created"
    MODIFIED = "modified"
    OVERFLOW = "overflow"
    REMOVED = "removed"
    RENAMED = "renamed"

    def __str__(self) -> str:
        return str(self.value)
