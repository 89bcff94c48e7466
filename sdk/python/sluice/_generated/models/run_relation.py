from enum import StrEnum

class RunRelation(StrEnum):
    LAUNCH = "launch"
    REBUILD = "rebuild"
    RESUME = "resume"
    RETRY = "retry"

    def __str__(self) -> str:
        return str(self.value)
