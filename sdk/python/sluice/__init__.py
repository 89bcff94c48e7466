"""sluice's Python SDK: workspaces that wait until they are ready,
commands whose output streams as it happens, background processes, files,
watches, events and capture sessions, over sluice's HTTP API. `Sluice` is
the blocking client, `AsyncSluice` the asyncio one; they do the same.

    from sluice import Sluice

    with Sluice(owner="alice") as client:
        ws = client.workspaces.create("python:3.12", command=["sleep", "infinity"])
        print(ws.exec(["python3", "-c", "print(6*7)"]).stdout)
        ws.stop()
"""

from ._async._captures import AsyncCaptureSession, AsyncCaptureSessions
from ._async._client import AsyncSluice, AsyncWorkspace, AsyncWorkspaces
from ._async._events import AsyncEvents, AsyncEventStream
from ._async._files import AsyncFiles, AsyncWatch
from ._async._processes import AsyncProcess, AsyncProcesses
from ._common import CommandResult, Event, Output
from ._errors import (
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    SluiceError,
    UnauthenticatedError,
    UnavailableError,
)
from ._sync._captures import CaptureSession, CaptureSessions
from ._sync._client import Sluice, Workspace, Workspaces
from ._sync._events import Events, EventStream
from ._sync._files import Files, Watch
from ._sync._processes import Process, Processes

__all__ = [
    "AsyncCaptureSession",
    "AsyncCaptureSessions",
    "AsyncEventStream",
    "AsyncEvents",
    "AsyncFiles",
    "AsyncProcess",
    "AsyncProcesses",
    "AsyncSluice",
    "AsyncWatch",
    "AsyncWorkspace",
    "AsyncWorkspaces",
    "CaptureSession",
    "CaptureSessions",
    "CommandResult",
    "ConflictError",
    "Event",
    "EventStream",
    "Events",
    "Files",
    "InvalidRequestError",
    "NotFoundError",
    "Output",
    "Process",
    "Processes",
    "Sluice",
    "SluiceError",
    "UnauthenticatedError",
    "UnavailableError",
    "Watch",
    "Workspace",
    "Workspaces",
]
