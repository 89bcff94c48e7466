# Generated from sluice/_async/_events.py by scripts/generate-python-sdk: edit that file.
"""Event streams: one workspace's, or the whole feed (every workspace's
events and sluice's own), each resumed after the last event received when
the connection breaks (a server restart included), with no gap and no
repeat."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import httpx

from .._common import RECONNECTS, Event
from .._errors import error_of
from .._timing import sleep
from ._sse import events

if TYPE_CHECKING:
    from ._client import Sluice


class EventStream:
    """An iterator of events that reconnects after a broken connection;
    `last_id` is the last event's id."""

    def __init__(
        self, client: Sluice, url: str, params: dict[str, str], since: str | None, timeout: float | None
    ) -> None:
        self._client = client
        self._url = url
        self._params = params
        self.last_id = since
        self._timeout = timeout

    def __iter__(self) -> Iterator[Event]:
        broken = 0
        while True:
            headers = {"accept": "text/event-stream"}
            if self.last_id is not None:
                headers["last-event-id"] = self.last_id
            timeout = httpx.Timeout(self._client._timeout, read=self._timeout)
            try:
                with self._client._http.stream(
                    "GET", self._url, params=self._params, headers=headers, timeout=timeout
                ) as response:
                    if response.status_code != 503 and response.status_code >= 300:
                        raise error_of(response.status_code, response.read())
                    if response.status_code == 200:
                        for event, data, ident in events(response.iter_lines()):
                            broken = 0
                            if ident is not None:
                                self.last_id = ident
                            yield Event(ident, event, data)
            except httpx.TimeoutException:
                raise
            except httpx.TransportError:
                if broken >= RECONNECTS:
                    raise
            broken += 1
            if broken > RECONNECTS:
                raise ConnectionError(f"the event stream stayed away after {RECONNECTS} tries")
            sleep(min(0.1 * 2**broken, 5.0))


class Events:
    """The event feed."""

    def __init__(self, client: Sluice) -> None:
        self._client = client

    def stream(self, *, since: str | None = None, timeout: float | None = None) -> EventStream:
        """Every workspace's events and sluice's own, in the order they
        became durable, then each new one; after `since` (an event's `id`)
        when given. `timeout` bounds the wait for the next event."""
        return EventStream(self._client, "/v1/events/stream", {}, since, timeout)

    def of_workspace(
        self, workspace_id: str, *, since: str | None = None, timeout: float | None = None
    ) -> EventStream:
        """One workspace's events, then each new one."""
        url = f"/v1/workspaces/{workspace_id}/events/stream"
        return EventStream(self._client, url, {"ownerUserId": self._client.owner}, since, timeout)
