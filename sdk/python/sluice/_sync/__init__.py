"""The synchronous client, generated from `sluice._async` by scripts/generate-python-sdk."""
