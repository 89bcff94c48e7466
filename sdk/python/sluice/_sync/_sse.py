# Generated from sluice/_async/_sse.py by scripts/generate-python-sdk: edit that file.
"""Server-Sent Events as the API sends them: a name, JSON data, and an id
(a position to resume from) on the events that have one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


def events(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any], str | None]]:
    """(event, data, id) as each event ends; comments (heartbeats) are
    skipped, and data that is not JSON comes as `{"text": …}`."""
    event, data, ident = "message", [], None
    for line in lines:
        if line == "":
            if data:
                text = "\n".join(data)
                try:
                    parsed = json.loads(text)
                except ValueError:
                    parsed = {"text": text}
                yield event, parsed if isinstance(parsed, dict) else {"value": parsed}, ident
            event, data, ident = "message", [], None
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line.startswith("id:"):
            ident = line[3:].strip()
