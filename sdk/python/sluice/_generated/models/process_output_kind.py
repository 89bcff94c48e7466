from enum import StrEnum

class ProcessOutputKind(StrEnum):
    CUT = "cut"
    ENDED = "ended"
    STDERR = "stderr"
    STDOUT = "stdout"

    def __str__(self) -> str:
        return str(self.value)
