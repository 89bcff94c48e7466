"""A workspace's background processes: started through the API, kept
running by the executor's daemon past every call, their output followed
from a position."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

import httpx

from .._common import Output, answer
from .._errors import error_of
from .._generated.api.processes import list_processes, signal_process, start_process
from .._generated.models import ProcessRecord, SignalProcessRequest, StartProcessRequest, StartProcessRequestEnvType0
from .._generated.types import UNSET
from ._sse import events

if TYPE_CHECKING:
    from ._client import AsyncWorkspace


class AsyncProcess:
    """A background process: `id`, `name`, `argv`, `state` (`running`,
    `exited`, `signalled`), `exit_code`, `signal_name`."""

    def __init__(self, workspace: AsyncWorkspace, record: ProcessRecord) -> None:
        self._workspace = workspace
        self._update(record)

    def _update(self, record: ProcessRecord) -> None:
        self.id = record.process_id
        self.name = record.name if isinstance(record.name, str) else None
        self.argv = list(record.argv)
        self.state = record.state.value
        self.exit_code = record.exit_code if isinstance(record.exit_code, int) else None
        self.signal_name = record.signal if isinstance(record.signal, str) else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id!r}, name={self.name!r}, state={self.state!r})"

    async def refresh(self) -> AsyncProcess:
        for record in await self._workspace.processes._records():
            if record.process_id == self.id:
                self._update(record)
        return self

    async def output(self, *, follow: bool = False, after: str | None = None) -> AsyncIterator[Output]:
        """The kept output after `after` (a position an earlier event gave),
        then, with `follow`, each chunk as it comes until the process ends."""
        client = self._workspace._client
        params = {"ownerUserId": client.owner, "follow": "true" if follow else "false"}
        headers = {"accept": "text/event-stream"}
        if after is not None:
            headers["last-event-id"] = after
        url = f"/v1/workspaces/{self._workspace.id}/processes/{self.id}/output"
        timeout = httpx.Timeout(client._timeout, read=None if follow else client._timeout)
        async with client._http.stream("GET", url, params=params, headers=headers, timeout=timeout) as response:
            if response.status_code >= 300:
                raise error_of(response.status_code, await response.aread())
            async for event, data, position in events(response.aiter_lines()):
                if event == "ended":
                    self.state = data.get("state", self.state)
                    self.exit_code = data.get("exitCode")
                    yield Output("ended", "", position, data)
                elif event == "cut":
                    yield Output("cut", "", position)
                else:
                    yield Output(event, data.get("text", ""), position)

    async def wait(self) -> AsyncProcess:
        """Follows the output to the process's end; answers it ended."""
        async for _ in self.output(follow=True):
            pass
        return await self.refresh()

    async def signal(self, signal: str = "TERM") -> None:
        """Sends `signal` (`TERM`, `INT`, `KILL`, `HUP`, …) to its group."""
        client = self._workspace._client
        body = SignalProcessRequest(owner_user_id=client.owner, signal=signal)
        answer(await signal_process.asyncio_detailed(self._workspace.id, self.id, client=client._api, body=body))

    async def write_stdin(self, data: bytes | str, *, eof: bool = False) -> None:
        """Writes `data` to its input; `eof` closes the input after it."""
        client = self._workspace._client
        body = data.encode() if isinstance(data, str) else data
        params = {"ownerUserId": client.owner, "eof": "true" if eof else "false"}
        url = f"/v1/workspaces/{self._workspace.id}/processes/{self.id}/stdin"
        response = await client._http.post(url, params=params, content=body)
        if response.status_code >= 300:
            raise error_of(response.status_code, response.content)


class AsyncProcesses:
    """The processes of one workspace."""

    def __init__(self, workspace: AsyncWorkspace) -> None:
        self._workspace = workspace

    async def start(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        name: str | None = None,
    ) -> AsyncProcess:
        """Starts `argv` as the workload; it runs until it exits, is
        signalled, or the workspace stops."""
        client = self._workspace._client
        body = StartProcessRequest(
            owner_user_id=client.owner,
            argv=list(argv),
            cwd=cwd if cwd is not None else UNSET,
            env=StartProcessRequestEnvType0.from_dict(env) if env is not None else UNSET,
            name=name if name is not None else UNSET,
        )
        record = answer(await start_process.asyncio_detailed(self._workspace.id, client=client._api, body=body))
        return AsyncProcess(self._workspace, record)

    async def _records(self) -> list[ProcessRecord]:
        client = self._workspace._client
        listed = await client._retrying(
            lambda: list_processes.asyncio_detailed(self._workspace.id, client=client._api, owner_user_id=client.owner)
        )
        return list(listed.items)

    async def list(self) -> list[AsyncProcess]:
        return [AsyncProcess(self._workspace, record) for record in await self._records()]
