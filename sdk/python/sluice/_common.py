"""What the asynchronous client and the synchronous one generated from it
share: settings, the API's answers turned into values or exceptions, and
the plain records they hand out."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import error_of
from ._generated.types import Response

DEFAULT_URL = "http://127.0.0.1:7420"
# Statuses after which a workspace no longer changes on its own.
SETTLED = {"ready", "failed", "cancelled", "stopped"}
# The longest one long-poll waits (the API's bound is a minute); a longer
# wait polls again.
LONG_POLL = 50.0
# A call that changes nothing is tried again this many times on a 503 or a
# broken connection; a create is, as it carries an idempotency key.
RETRIES = 3
# How often a broken event stream is opened again before the error is
# raised (with a growing pause, about a minute in all).
RECONNECTS = 20
# Bytes read or sent at a time.
CHUNK = 256 * 1024


def answer(response: Response[Any]) -> Any:
    """The parsed answer of a generated call, or its error raised."""
    if 200 <= int(response.status_code) < 300:
        return response.parsed
    raise error_of(int(response.status_code), response.content)


def token_from_data_dir() -> str | None:
    """The embedded default's token, as `sluice serve` writes it."""
    data_dir = Path(os.environ.get("SLUICE_DATA_DIR", "sluice-data"))
    try:
        return (data_dir / "api-token").read_text().strip() or None
    except OSError:
        return None


def split_image(image: str) -> tuple[str, str]:
    """`repository:tag`, the tag after the last `:` that is not part of a
    registry's host:port."""
    repository, sep, tag = image.rpartition(":")
    if not sep or "/" in tag:
        return image, "latest"
    return repository, tag


@dataclass
class CommandResult:
    """What a command printed and how it ended (`truncated`: a stream past
    its 1 MiB bound)."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    timed_out: bool = False
    truncated: bool = False
    run_id: str | None = None


@dataclass
class Output:
    """One event of a process's output: `kind` is `stdout`, `stderr`, `cut`
    (output before `position` is no longer kept) or `ended` (`process` is
    the ended process); `position` resumes the output after it."""

    kind: str
    text: str
    position: str | None
    process: dict[str, Any] | None = field(default=None)


@dataclass
class Event:
    """One event: `id` resumes a stream after it (`since=`), `type` is the
    event's type, `data` the event as the API lists it."""

    id: str | None
    type: str
    data: dict[str, Any]
