"""sluice's Python SDK: workspaces that wait until they are ready and
commands whose output streams as it happens, over sluice's HTTP API.

    from sluice import Sluice

    with Sluice(owner="alice") as client:
        ws = client.workspaces.create("python:3.12", command=["sleep", "infinity"])
        print(ws.exec(["python3", "-c", "print(6*7)"]).stdout)
        ws.stop()
"""

from ._captures import CaptureSession, CaptureSessions
from ._client import CommandResult, Sluice, Workspace, Workspaces
from ._events import Event, Events, EventStream
from ._files import Files, Watch
from ._processes import Output, Process, Processes
from ._errors import (
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    SluiceError,
    UnauthenticatedError,
    UnavailableError,
)

__all__ = [
    "CaptureSession",
    "CaptureSessions",
    "CommandResult",
    "Files",
    "Output",
    "Process",
    "Processes",
    "Watch",
    "ConflictError",
    "Event",
    "EventStream",
    "Events",
    "InvalidRequestError",
    "NotFoundError",
    "Sluice",
    "SluiceError",
    "UnauthenticatedError",
    "UnavailableError",
    "Workspace",
    "Workspaces",
]
