"""The SDK against a real `sluice serve`: a create that waits, a command's
output as it happens, the API's errors as exceptions, a stop that waits."""

from __future__ import annotations

import time

import pytest

import sluice

IMAGE = "sluice-test/busybox:1"


def test_a_created_workspace_is_ready_and_runs_a_command_at_once(client):
    ws = client.workspaces.create(IMAGE, registry="host", command=["sleep", "600"], wait=True)
    assert ws.status == "ready"
    result = ws.exec(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 3)
    assert result.run_id, "the run is kept and named"
    kept = ws.run(result.run_id)
    assert kept.exit_code == 3
    assert client.workspaces.get(ws.id).status == "ready"
    ws.stop(wait=True)
    assert ws.status == "stopped"
    ws.delete()
    with pytest.raises(sluice.NotFoundError):
        client.workspaces.get(ws.id)


def test_a_commands_output_arrives_while_it_runs(client):
    ws = client.workspaces.create(IMAGE, registry="host", command=["sleep", "600"])
    arrivals: list[tuple[float, str]] = []
    started = time.monotonic()
    result = ws.exec(
        ["sh", "-c", "for i in 1 2 3; do echo $i; sleep 1; done"],
        on_stdout=lambda text: arrivals.append((time.monotonic() - started, text)),
    )
    ended = time.monotonic() - started
    assert result.stdout == "1\n2\n3\n"
    assert "".join(text for _, text in arrivals) == "1\n2\n3\n"
    first = arrivals[0][0]
    assert ended - first > 1.5, f"the first line came at {first:.2f}s, the command ended at {ended:.2f}s"
    ws.stop(wait=False)


def test_errors_are_exceptions_with_their_kind_and_field(client, served):
    with pytest.raises(sluice.NotFoundError) as missing:
        client.workspaces.get("ws_0000000000000000000000000000")
    assert missing.value.status == 404 and missing.value.tag
    ws = client.workspaces.create(IMAGE, registry="host", command=["sleep", "600"])
    with pytest.raises(sluice.InvalidRequestError) as bad:
        ws.exec([])
    assert "argv" in bad.value.message
    stranger = sluice.Sluice(served.url, served.token, owner="mallory")
    with pytest.raises(sluice.NotFoundError):
        stranger.workspaces.get(ws.id)
    with pytest.raises(sluice.UnauthenticatedError):
        sluice.Sluice(served.url, "not-the-token", owner="alice").workspaces.get(ws.id)
    ws.stop(wait=False)


def test_a_create_is_made_once_under_its_idempotency_key(client):
    first = client.workspaces.create(IMAGE, registry="host", command=["sleep", "600"], idempotency_key="sdk-once", wait=False)
    again = client.workspaces.create(IMAGE, registry="host", command=["sleep", "600"], idempotency_key="sdk-once", wait=False)
    assert first.id == again.id
    again.refresh(wait_ready=60)
    again.stop(wait=False)
