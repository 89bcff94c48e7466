from enum import StrEnum

class RunStreamEventKind(StrEnum):
    END = "end"
    EXIT = "exit"
    RUN = "run"
    STDERR = "stderr"
    STDOUT = "stdout"

    def __str__(self) -> str:
        return str(self.value)
