"""Capture sessions: a worktree's timeline of captures, the workspaces
made on it, and each capture read back (a file, a diff, a tar archive)."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING, Any

from .._common import answer
from .._errors import error_of
from .._generated.api.capture import (
    create_capture_session,
    delete_capture_session,
    diff_captures,
    fork_capture,
    get_capture_session,
    list_captures,
)
from .._generated.models import (
    CaptureDiffResponse,
    CaptureSessionResponse,
    CaptureTimelineEntry,
    CreateCaptureSessionRequest,
    ForkRequest,
    RetentionPolicy,
)
from .._generated.types import UNSET
from ._files import download_into

if TYPE_CHECKING:
    from ._client import AsyncSluice, AsyncWorkspace


class AsyncCaptureSession:
    """A capture session: `id`, and `token` when it was just made (shown
    once: a workspace on the session needs it)."""

    def __init__(self, client: AsyncSluice, session_id: str, token: str | None = None) -> None:
        self._client = client
        self.id = session_id
        self.token = token

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id!r})"

    async def fork(
        self, n: int, count: int = 1, *, name_prefix: str | None = None, wait: bool = True, timeout: float = 120.0
    ) -> list[AsyncWorkspace]:
        """Workspaces that restore kept capture `n` (1 to 100 of them), each
        on a session of its own sharing the stored bytes, like the
        workspace that made the capture. With `wait`, once all are ready."""
        client = self._client
        body = ForkRequest(owner_user_id=client.owner, count=count, name_prefix=name_prefix or UNSET)
        forked = answer(await fork_capture.asyncio_detailed(self.id, n, client=client._api, body=body))
        return await client._forked(forked, wait, timeout)

    async def delete(self) -> None:
        """Deletes the session and its captures (refused while a workspace
        that has not ended uses it); its forks keep what they share."""
        client = self._client
        answer(await delete_capture_session.asyncio_detailed(self.id, client=client._api, owner_user_id=client.owner))

    async def details(self) -> CaptureSessionResponse:
        """Its epoch, head, quota, bytes, retention and seal."""
        client = self._client
        return await client._retrying(
            lambda: get_capture_session.asyncio_detailed(self.id, client=client._api, owner_user_id=client.owner)
        )

    async def captures(self) -> list[CaptureTimelineEntry]:
        """Every kept capture, oldest first."""
        client = self._client
        entries: list[CaptureTimelineEntry] = []
        after: Any = UNSET
        while True:
            page = await client._retrying(
                lambda: list_captures.asyncio_detailed(
                    self.id, client=client._api, owner_user_id=client.owner, after=after
                )
            )
            entries.extend(page.captures)
            if not isinstance(page.next_after, int):
                return entries
            after = str(page.next_after)

    async def diff(self, n: int, *, against: int | None = None) -> CaptureDiffResponse:
        """The paths added, changed and removed from capture `against` (the
        one before, by default) to capture `n`."""
        client = self._client
        return await client._retrying(
            lambda: diff_captures.asyncio_detailed(
                self.id,
                n,
                client=client._api,
                owner_user_id=client.owner,
                against=str(against) if against is not None else UNSET,
            )
        )

    async def read(self, n: int, path: str) -> bytes:
        """A file of capture `n`, whole: `path` is virtual, `tree/…` for the
        worktree's files and `.git/…` for its git directory (as a diff
        names them)."""
        url = f"/v1/capture-sessions/{self.id}/captures/{n}/files"
        response = await self._client._http.get(url, params={"ownerUserId": self._client.owner, "path": path})
        if response.status_code >= 300:
            raise error_of(response.status_code, response.content)
        return response.content

    async def export(self, n: int, into: IO[bytes]) -> int:
        """Capture `n`'s tree as a tar archive, streamed into `into`;
        answers how many bytes came."""
        url = f"/v1/capture-sessions/{self.id}/captures/{n}/archive"
        return await download_into(self._client, url, {"ownerUserId": self._client.owner}, into)


class AsyncCaptureSessions:
    """The owner's capture sessions."""

    def __init__(self, client: AsyncSluice) -> None:
        self._client = client

    async def create(
        self,
        *,
        keep_last: int | None = None,
        keep_within_seconds: int | None = None,
        quota_bytes: int | None = None,
    ) -> AsyncCaptureSession:
        """Makes a capture session; its `token` is shown this once."""
        client = self._client
        retention: Any = UNSET
        if keep_last is not None or keep_within_seconds is not None:
            retention = RetentionPolicy(
                keep_last=keep_last if keep_last is not None else UNSET,
                keep_within_seconds=keep_within_seconds if keep_within_seconds is not None else UNSET,
            )
        body = CreateCaptureSessionRequest(
            owner_user_id=client.owner,
            quota_bytes=quota_bytes if quota_bytes is not None else UNSET,
            retention=retention,
        )
        made = answer(await create_capture_session.asyncio_detailed(client=client._api, body=body))
        return AsyncCaptureSession(client, made.session_id, made.token)

    async def get(self, session_id: str, *, token: str | None = None) -> AsyncCaptureSession:
        """A session already made (its token, kept by the caller, to make
        workspaces on it)."""
        session = AsyncCaptureSession(self._client, session_id, token)
        await session.details()
        return session
