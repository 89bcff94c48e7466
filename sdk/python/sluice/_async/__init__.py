"""The client written for asyncio; `sluice._sync` is generated from it."""
