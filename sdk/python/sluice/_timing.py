"""Pauses for the asynchronous client and, through the generated
synchronous one, the same code's blocking form."""

from __future__ import annotations

import asyncio
import time


async def asleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


def sleep(seconds: float) -> None:
    time.sleep(seconds)
