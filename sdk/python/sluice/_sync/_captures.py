# Generated from sluice/_async/_captures.py by scripts/generate-python-sdk: edit that file.
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
    from ._client import Sluice, Workspace


class CaptureSession:
    """A capture session: `id`, and `token` when it was just made (shown
    once: a workspace on the session needs it)."""

    def __init__(self, client: Sluice, session_id: str, token: str | None = None) -> None:
        self._client = client
        self.id = session_id
        self.token = token

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id!r})"

    def fork(
        self, n: int, count: int = 1, *, name_prefix: str | None = None, wait: bool = True, timeout: float = 120.0
    ) -> list[Workspace]:
        """Workspaces that restore kept capture `n` (1 to 100 of them), each
        on a session of its own sharing the stored bytes, like the
        workspace that made the capture. With `wait`, once all are ready."""
        client = self._client
        body = ForkRequest(owner_user_id=client.owner, count=count, name_prefix=name_prefix or UNSET)
        forked = answer(fork_capture.sync_detailed(self.id, n, client=client._api, body=body))
        return client._forked(forked, wait, timeout)

    def delete(self) -> None:
        """Deletes the session and its captures (refused while a workspace
        that has not ended uses it); its forks keep what they share."""
        client = self._client
        answer(delete_capture_session.sync_detailed(self.id, client=client._api, owner_user_id=client.owner))

    def details(self) -> CaptureSessionResponse:
        """Its epoch, head, quota, bytes, retention and seal."""
        client = self._client
        return client._retrying(
            lambda: get_capture_session.sync_detailed(self.id, client=client._api, owner_user_id=client.owner)
        )

    def captures(self) -> list[CaptureTimelineEntry]:
        """Every kept capture, oldest first."""
        client = self._client
        entries: list[CaptureTimelineEntry] = []
        after: Any = UNSET
        while True:
            page = client._retrying(
                lambda: list_captures.sync_detailed(
                    self.id, client=client._api, owner_user_id=client.owner, after=after
                )
            )
            entries.extend(page.captures)
            if not isinstance(page.next_after, int):
                return entries
            after = str(page.next_after)

    def diff(self, n: int, *, against: int | None = None) -> CaptureDiffResponse:
        """The paths added, changed and removed from capture `against` (the
        one before, by default) to capture `n`."""
        client = self._client
        return client._retrying(
            lambda: diff_captures.sync_detailed(
                self.id,
                n,
                client=client._api,
                owner_user_id=client.owner,
                against=str(against) if against is not None else UNSET,
            )
        )

    def read(self, n: int, path: str) -> bytes:
        """A file of capture `n`, whole: `path` is virtual, `tree/…` for the
        worktree's files and `.git/…` for its git directory (as a diff
        names them)."""
        url = f"/v1/capture-sessions/{self.id}/captures/{n}/files"
        response = self._client._http.get(url, params={"ownerUserId": self._client.owner, "path": path})
        if response.status_code >= 300:
            raise error_of(response.status_code, response.content)
        return response.content

    def export(self, n: int, into: IO[bytes]) -> int:
        """Capture `n`'s tree as a tar archive, streamed into `into`;
        answers how many bytes came."""
        url = f"/v1/capture-sessions/{self.id}/captures/{n}/archive"
        return download_into(self._client, url, {"ownerUserId": self._client.owner}, into)


class CaptureSessions:
    """The owner's capture sessions."""

    def __init__(self, client: Sluice) -> None:
        self._client = client

    def create(
        self,
        *,
        keep_last: int | None = None,
        keep_within_seconds: int | None = None,
        quota_bytes: int | None = None,
    ) -> CaptureSession:
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
        made = answer(create_capture_session.sync_detailed(client=client._api, body=body))
        return CaptureSession(client, made.session_id, made.token)

    def get(self, session_id: str, *, token: str | None = None) -> CaptureSession:
        """A session already made (its token, kept by the caller, to make
        workspaces on it)."""
        session = CaptureSession(self._client, session_id, token)
        session.details()
        return session
