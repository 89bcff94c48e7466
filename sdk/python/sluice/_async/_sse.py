"""Server-Sent Events as the API sends them: a name, JSON data, and an id
(a position to resume from) on the events that have one."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any


async def events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, dict[str, Any], str | None]]:
    """(event, data, id) as each event ends; comments (heartbeats) are
    skipped, and data that is not JSON comes as `{"text": …}`."""
    event, data, ident = "message", [], None
    async for line in lines:
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
