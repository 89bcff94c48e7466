"""A workspace's live worktree: files written and read (streamed), listed,
made, moved and removed, directories moved as tar archives, and changes
watched as they happen. Paths are relative to the worktree."""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import httpx

from .._common import CHUNK, answer
from .._errors import error_of
from .._generated.api.files import (
    list_workspace_files,
    make_workspace_directory,
    move_workspace_file,
    remove_workspace_file,
)
from .._generated.models import FileListing, MkdirRequest, MoveFileRequest, RemoveFileRequest
from ._sse import events

if TYPE_CHECKING:
    from ._client import AsyncSluice, AsyncWorkspace


async def _chunks(source: IO[bytes]) -> AsyncIterator[bytes]:
    while chunk := source.read(CHUNK):
        yield chunk


async def download_into(client: AsyncSluice, url: str, params: dict[str, str], into: IO[bytes]) -> int:
    """Streams a `GET`'s body into `into`; answers how many bytes came."""
    timeout = httpx.Timeout(client._timeout, read=None)
    written = 0
    async with client._http.stream("GET", url, params=params, timeout=timeout) as response:
        if response.status_code >= 300:
            raise error_of(response.status_code, await response.aread())
        async for chunk in response.aiter_bytes(CHUNK):
            into.write(chunk)
            written += len(chunk)
    return written


class AsyncFiles:
    """The worktree of one workspace."""

    def __init__(self, workspace: AsyncWorkspace) -> None:
        self._workspace = workspace

    @property
    def _base(self) -> str:
        return f"/v1/workspaces/{self._workspace.id}/files"

    def _params(self, **extra: Any) -> dict[str, str]:
        params = {"ownerUserId": self._workspace._client.owner}
        params.update({k: v for k, v in extra.items() if v is not None})
        return params

    async def write(
        self, path: str, data: bytes | str | IO[bytes], *, mode: int | None = None, parents: bool = True
    ) -> dict[str, Any]:
        """Writes `data` (bytes, text, or a binary file read as it goes) to
        `path`, whole: a reader never sees half of it. Answers the entry."""
        client = self._workspace._client
        content: Any = data.encode() if isinstance(data, str) else data
        if not isinstance(content, bytes):
            content = _chunks(content)
        octal = None if mode is None else f"{mode:o}"
        params = self._params(path=path, parents="true" if parents else "false", mode=octal)
        timeout = httpx.Timeout(client._timeout, write=None, read=None)
        response = await client._http.put(self._base, params=params, content=content, timeout=timeout)
        if response.status_code >= 300:
            raise error_of(response.status_code, response.content)
        return response.json()

    async def read(self, path: str) -> bytes:
        """The file's bytes."""
        out = io.BytesIO()
        await self.download(path, out)
        return out.getvalue()

    async def download(self, path: str, into: IO[bytes]) -> int:
        """Streams the file into `into`; answers how many bytes came."""
        return await download_into(self._workspace._client, self._base, self._params(path=path), into)

    async def list(self, path: str = "", *, depth: int = 1) -> FileListing:
        """The directory's entries, `depth` levels down."""
        client = self._workspace._client
        return await client._retrying(
            lambda: list_workspace_files.asyncio_detailed(
                self._workspace.id, client=client._api, owner_user_id=client.owner, path=path, depth=str(depth)
            )
        )

    async def mkdir(self, path: str, *, parents: bool = True) -> None:
        client = self._workspace._client
        body = MkdirRequest(owner_user_id=client.owner, path=path, parents=parents)
        answer(await make_workspace_directory.asyncio_detailed(self._workspace.id, client=client._api, body=body))

    async def move(self, source: str, target: str, *, overwrite: bool = False) -> None:
        client = self._workspace._client
        body = MoveFileRequest(owner_user_id=client.owner, from_=source, to=target, overwrite=overwrite)
        answer(await move_workspace_file.asyncio_detailed(self._workspace.id, client=client._api, body=body))

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        client = self._workspace._client
        body = RemoveFileRequest(owner_user_id=client.owner, path=path, recursive=recursive)
        answer(await remove_workspace_file.asyncio_detailed(self._workspace.id, client=client._api, body=body))

    async def upload_dir(self, local: str | os.PathLike[str], path: str = "") -> dict[str, Any]:
        """Sends the local directory's tree into `path` as one tar archive
        (nothing is written there if any member would leave it)."""
        client = self._workspace._client
        with tempfile.TemporaryFile() as archive:
            with tarfile.open(fileobj=archive, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for entry in sorted(Path(local).iterdir()):
                    tar.add(entry, arcname=entry.name)
            archive.seek(0)
            timeout = httpx.Timeout(client._timeout, write=None, read=None)
            url = f"{self._base}/archive"
            params = self._params(path=path)
            response = await client._http.put(url, params=params, content=_chunks(archive), timeout=timeout)
        if response.status_code >= 300:
            raise error_of(response.status_code, response.content)
        return response.json()

    async def download_dir(self, path: str, local: str | os.PathLike[str]) -> None:
        """Brings the worktree's directory `path` into the local directory
        (made when missing), through a tar archive extracted with the
        standard library's `data` filter: nothing lands outside `local`."""
        with tempfile.TemporaryFile() as archive:
            url = f"{self._base}/archive"
            await download_into(self._workspace._client, url, self._params(path=path), archive)
            archive.seek(0)
            Path(local).mkdir(parents=True, exist_ok=True)
            with tarfile.open(fileobj=archive, mode="r") as tar:
                tar.extractall(local, filter="data")

    def watch(self, path: str = "", *, recursive: bool = True, timeout: float | None = None) -> AsyncWatch:
        """Changes under `path` as they happen, as a context manager: the
        watch is in place once it is entered, and iterating it gives each
        change as `{"kind", "path", "from"?, "directory"}`, `kind` one of
        created, modified, removed, renamed and overflow (changes were lost:
        read what is there again). `timeout` bounds the wait for the next
        change (httpx's ReadTimeout past it)."""
        return AsyncWatch(self, path, recursive, timeout)


class AsyncWatch:
    """A watch of a worktree directory (see `watch`)."""

    def __init__(self, files: AsyncFiles, path: str, recursive: bool, timeout: float | None) -> None:
        client = files._workspace._client
        params = files._params(path=path, recursive="true" if recursive else "false")
        read = httpx.Timeout(client._timeout, read=timeout)
        self._stream = client._http.stream("GET", f"{files._base}/watch", params=params, timeout=read)
        self._changes: AsyncIterator[tuple[str, dict[str, Any], str | None]] | None = None

    async def __aenter__(self) -> AsyncWatch:
        response = await self._stream.__aenter__()
        if response.status_code >= 300:
            body = await response.aread()
            await self._stream.__aexit__(None, None, None)
            raise error_of(response.status_code, body)
        self._changes = events(response.aiter_lines())
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._stream.__aexit__(*exc)

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        if self._changes is None:
            raise RuntimeError("a watch is iterated inside its `with`")
        async for event, data, _ in self._changes:
            yield {"kind": event, **data}
