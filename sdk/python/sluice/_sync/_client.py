# Generated from sluice/_async/_client.py by scripts/generate-python-sdk: edit that file.
"""The hand-written layer over the generated client: workspaces that wait
until they are ready, commands whose output streams as it happens, and the
API's errors as exceptions. Written once for asyncio; the synchronous
client is generated from it (scripts/generate-python-sdk)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from .._common import DEFAULT_URL, LONG_POLL, RETRIES, SETTLED, CommandResult, answer, split_image, token_from_data_dir
from .._errors import SluiceError, error_of
from .._generated.api.previews import create_preview
from .._generated.api.runs import get_run
from .._generated.api.workspaces import (
    create_workspace,
    delete_workspace,
    fork_workspace,
    get_workspace,
    restart_workspace,
    sleep_workspace,
    stop_workspace,
    wake_workspace,
)
from .._generated.client import AuthenticatedClient
from .._generated.models import (
    CreatePreviewRequest,
    CreateWorkspaceRequest,
    CreateWorkspaceRequestSpec,
    ExecRun,
    ForkRequest,
    OwnerRequest,
    StopWorkspaceRequest,
    TakeOver,
    WaitFor,
    WorkspaceDetails,
)
from .._generated.types import UNSET
from .._timing import sleep
from ._captures import CaptureSession, CaptureSessions
from ._events import Events, EventStream
from ._files import Files
from ._processes import Processes
from ._sse import events


class Sluice:
    """A client of one sluice API, acting for one owner.

    `url`, `token` and `owner` default to `SLUICE_API_URL` (else
    http://127.0.0.1:7420), `SLUICE_API_TOKEN` (else the token `sluice
    serve` keeps in `SLUICE_DATA_DIR`, default `sluice-data`) and
    `SLUICE_OWNER`.
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        owner: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        url = url or os.environ.get("SLUICE_API_URL") or DEFAULT_URL
        token = token or os.environ.get("SLUICE_API_TOKEN") or token_from_data_dir()
        if not token:
            raise ValueError("no API token: pass token=, or set SLUICE_API_TOKEN")
        owner = owner or os.environ.get("SLUICE_OWNER")
        if not owner:
            raise ValueError("no owner: pass owner=, or set SLUICE_OWNER")
        self.owner = owner
        self._timeout = timeout
        self._api = AuthenticatedClient(base_url=url.rstrip("/"), token=token, timeout=httpx.Timeout(timeout))
        self.workspaces = Workspaces(self)
        self.events = Events(self)
        self.capture_sessions = CaptureSessions(self)

    def close(self) -> None:
        self._api.get_httpx_client().close()

    def __enter__(self) -> Sluice:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @property
    def _http(self) -> httpx.Client:
        return self._api.get_httpx_client()

    def _forked(self, forked: Any, wait: bool, timeout: float) -> list[Workspace]:
        """The workspaces a fork answered, each with its session's token
        (`capture_session`), once ready when `wait`."""
        deadline = time.monotonic() + timeout
        copies = []
        for item in forked.items:
            copy = Workspace(self, item.workspace_id, item.status.value)
            copy.capture_session = CaptureSession(self, item.capture_session_id, item.capture_token)
            copies.append(copy)
        for copy in copies if wait else []:
            copy._wait_settled(deadline)
        return copies

    def _retrying(self, call: Callable[[], Any]) -> Any:
        """`call`, tried again on a 503 (after its `Retry-After`) or a
        broken connection: only for calls that may be repeated."""
        for attempt in range(RETRIES + 1):
            try:
                response = call()
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError):
                if attempt == RETRIES:
                    raise
                sleep(0.2 * 2**attempt)
                continue
            if int(response.status_code) == 503 and attempt < RETRIES:
                sleep(min(float(response.headers.get("retry-after", "1") or 1), 10.0))
                continue
            return answer(response)
        raise AssertionError("unreachable")


class Workspaces:
    """The owner's workspaces."""

    def __init__(self, client: Sluice) -> None:
        self._client = client

    def create(
        self,
        image: str,
        *,
        command: Sequence[str] | None = None,
        env: dict[str, str] | None = None,
        secret_env: dict[str, str] | None = None,
        registry: str = "local",
        name: str | None = None,
        wait: bool = True,
        timeout: float = 120.0,
        idempotency_key: str | None = None,
        spec: dict[str, Any] | None = None,
        capture: CaptureSession | None = None,
        capture_n: int | None = None,
        take_over: bool = False,
    ) -> Workspace:
        """Creates a workspace from `image` (`repository:tag`) and, with
        `wait`, answers once it is ready (or raises if it failed or is not
        ready within `timeout` seconds). A create carries an idempotency
        key (a new one unless given), so a retried create makes one.

        With `capture` (a session and its token), the worktree starts from
        the session's head (or capture `capture_n`) and is captured into it;
        `take_over` ends a holder with unsaved work by discarding it."""
        repository, tag = split_image(image)
        full_spec: dict[str, Any] = dict(spec or {})
        if command is not None:
            full_spec["command"] = list(command)
        if env is not None:
            full_spec["env"] = dict(env)
        if capture is not None:
            if not capture.token:
                raise ValueError("capture: the session's token is needed (capture_sessions.get(id, token=…))")
            source: dict[str, Any] = {"kind": "capture", "sessionId": capture.id}
            if capture_n is not None:
                source["captureN"] = capture_n
            full_spec["source"] = source
        body = CreateWorkspaceRequest(
            owner_user_id=self._client.owner,
            registry_id=registry,
            repository=repository,
            tag=tag,
            spec=CreateWorkspaceRequestSpec.from_dict(full_spec),
            idempotency_key=idempotency_key or f"sdk-{uuid.uuid4()}",
            name=name if name is not None else UNSET,
            secret_env=secret_env if secret_env is not None else UNSET,
            capture_token=capture.token if capture is not None and capture.token else UNSET,
            take_over=TakeOver.DISCARD_UNSAVED if take_over else UNSET,
        )
        if wait:
            body.wait_for = WaitFor.READY
            body.timeout_ms = int(min(timeout, LONG_POLL) * 1000)
        created = self._client._retrying(
            lambda: create_workspace.sync_detailed(client=self._client._api, body=body)
        )
        workspace = Workspace(self._client, created.workspace_id, created.status.value)
        if wait:
            workspace._wait_settled(time.monotonic() + timeout)
        return workspace

    def get(self, workspace_id: str) -> Workspace:
        workspace = Workspace(self._client, workspace_id, "")
        workspace.refresh()
        return workspace


class Workspace:
    """One workspace: `id`, its last known `status`, and `details` (the
    API's whole answer) after a `refresh`."""

    def __init__(self, client: Sluice, workspace_id: str, status: str) -> None:
        self._client = client
        self.id = workspace_id
        self.status = status
        self.details: WorkspaceDetails | None = None
        # The capture session a fork made it on, with its token (shown once).
        self.capture_session: CaptureSession | None = None
        self.processes = Processes(self)
        self.files = Files(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id!r}, status={self.status!r})"

    def refresh(self, *, wait_ready: float | None = None) -> Workspace:
        """Reads the workspace again; with `wait_ready`, long-polls up to
        that many seconds for it to settle."""
        kwargs: dict[str, Any] = {}
        if wait_ready is not None:
            kwargs = {"wait_for": WaitFor.READY, "timeout_ms": str(int(min(wait_ready, LONG_POLL) * 1000))}
        details = self._client._retrying(
            lambda: get_workspace.sync_detailed(
                self.id, client=self._client._api, owner_user_id=self._client.owner, **kwargs
            )
        )
        self.details = details
        self.status = details.status.value
        return self

    def _wait_settled(self, deadline: float) -> None:
        while self.status not in SETTLED:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"workspace {self.id} is still {self.status}")
            self.refresh(wait_ready=left)
        if self.status != "ready":
            error = self.details.error if self.details is not None else None
            why = getattr(error, "message", None) or self.status
            raise SluiceError(409, "WorkspaceNotReady", f"workspace {self.id} is {self.status}: {why}", self.status)

    def exec(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdin: str | None = None,
        timeout: float | None = None,
        on_stdout: Callable[[str], Any] | None = None,
        on_stderr: Callable[[str], Any] | None = None,
    ) -> CommandResult:
        """Runs one command and answers its result; its output is passed to
        `on_stdout` and `on_stderr` chunk by chunk as it happens."""
        command: dict[str, Any] = {"argv": list(argv)}
        if cwd is not None:
            command["cwd"] = cwd
        if env is not None:
            command["env"] = dict(env)
        if stdin is not None:
            command["stdin"] = stdin
        if timeout is not None:
            command["timeoutMs"] = int(timeout * 1000)
        body = {"ownerUserId": self._client.owner, "commands": [command]}
        result = CommandResult()
        url = f"/v1/workspaces/{self.id}/exec"
        headers = {"accept": "text/event-stream"}
        read_timeout = httpx.Timeout(self._client._timeout, read=(timeout or 300.0) + 60.0)
        with self._client._http.stream(
            "POST", url, json=body, headers=headers, timeout=read_timeout
        ) as response:
            if response.status_code >= 300:
                raise error_of(response.status_code, response.read())
            for event, data, _ in events(response.iter_lines()):
                if event in ("stdout", "stderr"):
                    text = data.get("text", "")
                    if event == "stdout":
                        result.stdout += text
                        if on_stdout is not None:
                            on_stdout(text)
                    else:
                        result.stderr += text
                        if on_stderr is not None:
                            on_stderr(text)
                elif event == "exit":
                    result.exit_code = data.get("exitCode")
                    result.timed_out = bool(data.get("timedOut"))
                    result.truncated = bool(data.get("stdoutTruncated") or data.get("stderrTruncated"))
                elif event == "end":
                    result.run_id = data.get("runId")
        return result

    def preview(self, port: int, *, public: bool = False, ttl_seconds: int | None = None) -> str:
        """A URL that serves the workspace's `port` (a private one carries a
        signed token; `public` needs none) until the workspace stops."""
        body = CreatePreviewRequest(
            owner_user_id=self._client.owner,
            port=port,
            public=public,
            ttl_seconds=ttl_seconds if ttl_seconds is not None else UNSET,
        )
        return answer(create_preview.sync_detailed(self.id, client=self._client._api, body=body)).url

    def events(self, *, since: str | None = None, timeout: float | None = None) -> EventStream:
        """The workspace's events, then each new one as it is recorded."""
        return self._client.events.of_workspace(self.id, since=since, timeout=timeout)

    def run(self, run_id: str) -> ExecRun:
        """An exec run as the API keeps it."""
        return self._client._retrying(
            lambda: get_run.sync_detailed(run_id, client=self._client._api, owner_user_id=self._client.owner)
        )

    def stop(self, *, wait: bool = True, timeout: float = 300.0, discard: bool = False) -> Workspace:
        """Asks the workspace to stop (its work saved first, unless
        `discard`); with `wait`, answers once it has stopped."""
        body = StopWorkspaceRequest(owner_user_id=self._client.owner, discard_unsaved=discard)
        answer(stop_workspace.sync_detailed(self.id, client=self._client._api, body=body))
        if wait:
            deadline = time.monotonic() + timeout
            self.refresh()
            while self.status not in ("stopped", "failed", "cancelled"):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"workspace {self.id} is still {self.status}")
                sleep(0.25)
                self.refresh()
        return self

    def restart(self, *, wait: bool = True, timeout: float = 120.0) -> Workspace:
        """A new executor for the workspace (its processes start afresh from
        its command); a capture-sourced one, once stopped, goes on from its
        session's head. With `wait`, answers once it is ready."""
        body = OwnerRequest(owner_user_id=self._client.owner)
        answer(restart_workspace.sync_detailed(self.id, client=self._client._api, body=body))
        self.status = "queued"
        if wait:
            self._wait_settled(time.monotonic() + timeout)
        return self

    @property
    def sleeping(self) -> bool:
        """Whether the last read found it asleep (see `sleep`)."""
        sleeping = getattr(self.details, "sleeping", None) if self.details is not None else None
        return self.status == "stopped" and sleeping not in (None, UNSET)

    def sleep(self, *, wait: bool = True, timeout: float = 120.0) -> Workspace:
        """Sends a capture-sourced workspace to sleep: its work is saved to
        its capture session and its runtime released (a sleep that cannot
        save keeps the runtime). The next exec, file or process call, SSH
        session or preview visit wakes it; its processes start afresh from
        its command (memory is not kept). With `wait`, answers once asleep."""
        body = OwnerRequest(owner_user_id=self._client.owner)
        answer(sleep_workspace.sync_detailed(self.id, client=self._client._api, body=body))
        deadline = time.monotonic() + timeout
        self.refresh()
        while wait and not self.sleeping:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"workspace {self.id} is still {self.status}, not asleep")
            sleep(0.2)
            self.refresh()
        return self

    def wake(self, *, wait: bool = True, timeout: float = 120.0) -> Workspace:
        """Wakes a sleeping workspace: a new run restores its capture
        session's head. Any call that needs the runtime wakes it too; this
        wakes it ahead of them. With `wait`, answers once it is ready."""
        body = OwnerRequest(owner_user_id=self._client.owner)
        woken = answer(wake_workspace.sync_detailed(self.id, client=self._client._api, body=body))
        self.status = woken.status.value
        if wait:
            self._wait_settled(time.monotonic() + timeout)
        return self

    def fork(
        self, count: int = 1, *, name_prefix: str | None = None, wait: bool = True, timeout: float = 120.0
    ) -> list[Workspace]:
        """Copies a capture-sourced workspace `count` times (1 to 100): its
        files at this moment (a capture taken while it keeps running, or its
        saved head once it sleeps or stopped), each copy on a capture
        session of its own, sharing the stored bytes. Copies are
        independent of the source and of each other, and start their
        processes afresh. With `wait`, answers once every copy is ready."""
        body = ForkRequest(owner_user_id=self._client.owner, count=count, name_prefix=name_prefix or UNSET)
        forked = answer(fork_workspace.sync_detailed(self.id, client=self._client._api, body=body))
        return self._client._forked(forked, wait, timeout)

    def delete(self) -> None:
        """Removes an ended workspace from lists and reads (its events stay)."""
        self._client._retrying(
            lambda: delete_workspace.sync_detailed(self.id, client=self._client._api, owner_user_id=self._client.owner)
        )
