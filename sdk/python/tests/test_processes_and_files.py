"""Background processes, previews, files and watches through the SDK,
against a real `sluice serve`."""

from __future__ import annotations

import hashlib
import io
import os
import time

import pytest
from conftest import free_port

import sluice

IMAGE = "sluice-test/busybox:1"


def test_a_background_server_outlives_its_call_is_previewed_and_signalled(client, served):
    ws = client.workspaces.create(IMAGE, registry="host", command=["sleep", "600"])
    port = free_port()
    web = ws.processes.start(["python3", "-u", "-m", "http.server", str(port), "--bind", "127.0.0.1"], name="web")
    assert (web.name, web.state) == ("web", "running")
    url = ws.preview(port, public=True)
    deadline, page = time.monotonic() + 30, (0, "")
    while time.monotonic() < deadline:
        page = served.through_preview(url)
        if page[0] == 200:
            break
        time.sleep(0.2)
    assert page[0] == 200 and "Directory listing" in page[1], page
    assert any(p.id == web.id and p.state == "running" for p in ws.processes.list())
    logged = [out for out in web.output() if out.kind == "stderr"]
    assert any("GET / " in out.text for out in logged), logged

    reader = ws.processes.start(["sh", "-c", 'read x; echo "got $x"'])
    reader.write_stdin("hello\n", eof=True)
    said = "".join(out.text for out in reader.output(follow=True) if out.kind == "stdout")
    assert said == "got hello\n"
    assert (reader.refresh().state, reader.exit_code) == ("exited", 0)

    web.signal("TERM")
    ended = [out for out in web.output(follow=True, after=logged[-1].position) if out.kind == "ended"]
    assert ended and ended[0].process["state"] == "signalled", ended
    assert web.refresh().signal_name == "TERM"
    ghost = ws.processes.list()[0]
    ghost.id = "proc_0000000000000000"
    with pytest.raises(sluice.NotFoundError) as missing:
        ghost.signal("TERM")
    assert missing.value.tag == "ProcessNotFoundError"
    ws.stop(wait=False)


def test_files_move_whole_both_ways_and_stay_in_the_worktree(client, tmp_path):
    ws = client.workspaces.create(IMAGE, registry="host", command=["sleep", "600"])
    big = os.urandom(20 << 20)
    entry = ws.files.write("data/big.bin", io.BytesIO(big), mode=0o640)
    assert (entry["size"], entry["mode"]) == (20 << 20, 0o640)
    back = ws.files.read("data/big.bin")
    assert hashlib.sha256(back).digest() == hashlib.sha256(big).digest()

    source = tmp_path / "src"
    (source / "a" / "deep").mkdir(parents=True)
    (source / "a" / "deep" / "b.txt").write_text("bee\n")
    (source / "c.txt").write_text("sea\n")
    (source / "empty").mkdir()
    unpacked = ws.files.upload_dir(source, "tree")
    assert unpacked["files"] == 2, unpacked
    listed = {e.name for e in ws.files.list("tree", depth=3).entries}
    assert {"a/deep/b.txt", "c.txt", "empty"} <= listed, listed
    ws.files.download_dir("tree", tmp_path / "back")
    assert (tmp_path / "back" / "a" / "deep" / "b.txt").read_text() == "bee\n"
    assert (tmp_path / "back" / "empty").is_dir()

    ws.files.move("tree/c.txt", "tree/d.txt")
    assert ws.files.read("tree/d.txt") == b"sea\n"
    with pytest.raises(sluice.ConflictError):
        ws.files.remove("tree")
    ws.files.remove("tree", recursive=True)
    with pytest.raises(sluice.NotFoundError):
        ws.files.list("tree")
    for outside in ("../etc/passwd", "/etc/passwd"):
        with pytest.raises(sluice.InvalidRequestError) as refused:
            ws.files.read(outside)
        assert "path" in refused.value.message
    ws.stop(wait=False)


def test_a_watch_sees_changes_in_order(client):
    ws = client.workspaces.create(IMAGE, registry="host", command=["sleep", "600"])
    ws.files.mkdir("w")
    seen = []
    with ws.files.watch("w", timeout=30) as changes:
        ws.exec(["sh", "-c", "cd w && echo a > f && mv f g && rm g"])
        for change in changes:
            seen.append((change["kind"], change["path"]))
            if change["kind"] == "removed":
                break
    kinds = [kind for kind, _ in seen]
    assert kinds[0] == "created" and seen[0][1] == "f", seen
    assert kinds.index("renamed") < kinds.index("removed"), seen
    assert ("renamed", "g") in seen and seen[-1] == ("removed", "g"), seen
    ws.stop(wait=False)
