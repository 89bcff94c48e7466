"""The API's errors as exceptions: each carries the HTTP status, the
error's `_tag` (its kind, stable) and `code` (finer, when given)."""

from __future__ import annotations

import json


class SluiceError(Exception):
    """An error the sluice API answered."""

    def __init__(self, status: int, tag: str, message: str, code: str | None = None) -> None:
        super().__init__(f"{status} {tag}{f' ({code})' if code else ''}: {message}")
        self.status = status
        self.tag = tag
        self.message = message
        self.code = code


class NotFoundError(SluiceError):
    """404: the owner has no such workspace, run, process or file."""


class ConflictError(SluiceError):
    """409: not now (the workspace is still starting, or has ended)."""


class InvalidRequestError(SluiceError):
    """400: the request names a field it got wrong."""


class UnauthenticatedError(SluiceError):
    """401: no token, or not one the API knows."""


class UnavailableError(SluiceError):
    """503: a dependency is away; the call may be tried again."""


_BY_STATUS = {
    400: InvalidRequestError,
    401: UnauthenticatedError,
    404: NotFoundError,
    409: ConflictError,
    503: UnavailableError,
}


def error_of(status: int, body: bytes) -> SluiceError:
    """The exception for an error answer: its envelope's `_tag`, `code` and
    `message` (or, when the body is not one, the status alone)."""
    try:
        envelope = json.loads(body)
    except ValueError:
        envelope = None
    if not isinstance(envelope, dict):
        envelope = {}
    kind = _BY_STATUS.get(status, SluiceError)
    tag = str(envelope.get("_tag") or f"Http{status}")
    message = str(envelope.get("message") or "the API answered an error")
    code = envelope.get("code")
    return kind(status, tag, message, str(code) if code is not None else None)
