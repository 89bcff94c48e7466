"""The asyncio client against a real `sluice serve`: the same calls as the
blocking one (which is generated from it), awaited."""

from __future__ import annotations

import hashlib
import io
import os
import time

import pytest
from conftest import free_port

import sluice

IMAGE = "sluice-test/busybox:1"
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
async def aclient(served):
    async with sluice.AsyncSluice(served.url, served.token, owner="alice") as client:
        yield client


async def test_a_workspace_is_awaited_and_a_commands_output_streams(aclient):
    ws = await aclient.workspaces.create(IMAGE, registry="host", command=["sleep", "600"])
    assert ws.status == "ready"
    arrivals: list[float] = []
    started = time.monotonic()
    result = await ws.exec(
        ["sh", "-c", "for i in 1 2 3; do echo $i; sleep 1; done; exit 4"],
        on_stdout=lambda _: arrivals.append(time.monotonic() - started),
    )
    assert (result.stdout, result.exit_code) == ("1\n2\n3\n", 4)
    assert time.monotonic() - started - arrivals[0] > 1.5, arrivals
    with pytest.raises(sluice.InvalidRequestError):
        await ws.exec([])
    await ws.stop(wait=True)
    assert ws.status == "stopped"
    await ws.delete()
    with pytest.raises(sluice.NotFoundError):
        await aclient.workspaces.get(ws.id)


async def test_processes_previews_files_and_watches_are_awaited(aclient, served, tmp_path):
    ws = await aclient.workspaces.create(IMAGE, registry="host", command=["sleep", "600"])
    port = free_port()
    web = await ws.processes.start(["python3", "-u", "-m", "http.server", str(port), "--bind", "127.0.0.1"])
    url = await ws.preview(port, public=True)
    deadline, page = time.monotonic() + 30, (0, "")
    while time.monotonic() < deadline and page[0] != 200:
        page = served.through_preview(url)
    assert page[0] == 200 and "Directory listing" in page[1], page
    await web.signal("TERM")
    ended = [out async for out in web.output(follow=True) if out.kind == "ended"]
    assert ended[0].process["state"] == "signalled", ended

    big = os.urandom(20 << 20)
    await ws.files.write("big.bin", io.BytesIO(big))
    assert hashlib.sha256(await ws.files.read("big.bin")).digest() == hashlib.sha256(big).digest()
    (tmp_path / "src" / "d").mkdir(parents=True)
    (tmp_path / "src" / "d" / "f.txt").write_text("eff\n")
    await ws.files.upload_dir(tmp_path / "src", "tree")
    await ws.files.download_dir("tree", tmp_path / "back")
    assert (tmp_path / "back" / "d" / "f.txt").read_text() == "eff\n"

    await ws.files.mkdir("w")
    seen = []
    async with ws.files.watch("w", timeout=30) as changes:
        await ws.exec(["sh", "-c", "cd w && echo a > f && mv f g && rm g"])
        async for change in changes:
            seen.append((change["kind"], change["path"]))
            if change["kind"] == "removed":
                break
    assert seen[0] == ("created", "f") and seen[-1] == ("removed", "g"), seen

    kinds = []
    async for event in ws.events(timeout=30):
        kinds.append(event.type)
        if event.type == "runtime.ready":
            break
    assert kinds[0] == "workspace.created", kinds
    await ws.stop(wait=False)
