# Generated from sluice/_async/_files.py by scripts/generate-python-sdk: edit that file.
"""A workspace's live worktree: files written and read (streamed), listed,
made, moved and removed, directories moved as tar archives, and changes
watched as they happen. Paths are relative to the worktree."""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
from collections.abc import Iterator
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
    from ._client import Sluice, Workspace


def _chunks(source: IO[bytes]) -> Iterator[bytes]:
    while chunk := source.read(CHUNK):
        yield chunk


def download_into(client: Sluice, url: str, params: dict[str, str], into: IO[bytes]) -> int:
    """Streams a `GET`'s body into `into`; answers how many bytes came."""
    timeout = httpx.Timeout(client._timeout, read=None)
    written = 0
    with client._http.stream("GET", url, params=params, timeout=timeout) as response:
        if response.status_code >= 300:
            raise error_of(response.status_code, response.read())
        for chunk in response.iter_bytes(CHUNK):
            into.write(chunk)
            written += len(chunk)
    return written


class Files:
    """The worktree of one workspace."""

    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace

    @property
    def _base(self) -> str:
        return f"/v1/workspaces/{self._workspace.id}/files"

    def _params(self, **extra: Any) -> dict[str, str]:
        params = {"ownerUserId": self._workspace._client.owner}
        params.update({k: v for k, v in extra.items() if v is not None})
        return params

    def write(
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
        response = client._http.put(self._base, params=params, content=content, timeout=timeout)
        if response.status_code >= 300:
            raise error_of(response.status_code, response.content)
        return response.json()

    def read(self, path: str) -> bytes:
        """The file's bytes."""
        out = io.BytesIO()
        self.download(path, out)
        return out.getvalue()

    def download(self, path: str, into: IO[bytes]) -> int:
        """Streams the file into `into`; answers how many bytes came."""
        return download_into(self._workspace._client, self._base, self._params(path=path), into)

    def list(self, path: str = "", *, depth: int = 1) -> FileListing:
        """The directory's entries, `depth` levels down."""
        client = self._workspace._client
        return client._retrying(
            lambda: list_workspace_files.sync_detailed(
                self._workspace.id, client=client._api, owner_user_id=client.owner, path=path, depth=str(depth)
            )
        )

    def mkdir(self, path: str, *, parents: bool = True) -> None:
        client = self._workspace._client
        body = MkdirRequest(owner_user_id=client.owner, path=path, parents=parents)
        answer(make_workspace_directory.sync_detailed(self._workspace.id, client=client._api, body=body))

    def move(self, source: str, target: str, *, overwrite: bool = False) -> None:
        client = self._workspace._client
        body = MoveFileRequest(owner_user_id=client.owner, from_=source, to=target, overwrite=overwrite)
        answer(move_workspace_file.sync_detailed(self._workspace.id, client=client._api, body=body))

    def remove(self, path: str, *, recursive: bool = False) -> None:
        client = self._workspace._client
        body = RemoveFileRequest(owner_user_id=client.owner, path=path, recursive=recursive)
        answer(remove_workspace_file.sync_detailed(self._workspace.id, client=client._api, body=body))

    def upload_dir(self, local: str | os.PathLike[str], path: str = "") -> dict[str, Any]:
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
            response = client._http.put(url, params=params, content=_chunks(archive), timeout=timeout)
        if response.status_code >= 300:
            raise error_of(response.status_code, response.content)
        return response.json()

    def download_dir(self, path: str, local: str | os.PathLike[str]) -> None:
        """Brings the worktree's directory `path` into the local directory
        (made when missing), through a tar archive extracted with the
        standard library's `data` filter: nothing lands outside `local`."""
        with tempfile.TemporaryFile() as archive:
            url = f"{self._base}/archive"
            download_into(self._workspace._client, url, self._params(path=path), archive)
            archive.seek(0)
            Path(local).mkdir(parents=True, exist_ok=True)
            with tarfile.open(fileobj=archive, mode="r") as tar:
                tar.extractall(local, filter="data")

    def watch(self, path: str = "", *, recursive: bool = True, timeout: float | None = None) -> Watch:
        """Changes under `path` as they happen, as a context manager: the
        watch is in place once it is entered, and iterating it gives each
        change as `{"kind", "path", "from"?, "directory"}`, `kind` one of
        created, modified, removed, renamed and overflow (changes were lost:
        read what is there again). `timeout` bounds the wait for the next
        change (httpx's ReadTimeout past it)."""
        return Watch(self, path, recursive, timeout)


class Watch:
    """A watch of a worktree directory (see `watch`)."""

    def __init__(self, files: Files, path: str, recursive: bool, timeout: float | None) -> None:
        client = files._workspace._client
        params = files._params(path=path, recursive="true" if recursive else "false")
        read = httpx.Timeout(client._timeout, read=timeout)
        self._stream = client._http.stream("GET", f"{files._base}/watch", params=params, timeout=read)
        self._changes: Iterator[tuple[str, dict[str, Any], str | None]] | None = None

    def __enter__(self) -> Watch:
        response = self._stream.__enter__()
        if response.status_code >= 300:
            body = response.read()
            self._stream.__exit__(None, None, None)
            raise error_of(response.status_code, body)
        self._changes = events(response.iter_lines())
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stream.__exit__(*exc)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self._changes is None:
            raise RuntimeError("a watch is iterated inside its `with`")
        for event, data, _ in self._changes:
            yield {"kind": event, **data}
