"""Capture sessions through the SDK: a workspace on a session, its work
saved by its stop, read back from the capture, carried into the next
workspace on the session, and the change between the two diffed."""

from __future__ import annotations

import io
import tarfile

IMAGE = "sluice-test/busybox:1"


def test_a_capture_session_keeps_a_workspaces_work_for_the_next(client):
    session = client.capture_sessions.create(keep_last=5)
    assert session.id.startswith("cs_") and session.token
    ws = client.workspaces.create(IMAGE, registry="host", command=["sleep", "600"], capture=session)
    ws.files.write("notes.txt", "kept\n")
    ws.stop(wait=True)
    assert ws.status == "stopped"
    first = session.captures()[-1].n
    assert session.read(first, "tree/notes.txt") == b"kept\n"
    archive = io.BytesIO()
    session.export(first, archive)
    archive.seek(0)
    with tarfile.open(fileobj=archive) as tar:
        names = tar.getnames()
    assert any(name.endswith("notes.txt") for name in names), names

    again = client.workspaces.create(IMAGE, registry="host", command=["sleep", "600"], capture=session)
    assert again.files.read("notes.txt") == b"kept\n", "the next workspace starts from the head"
    again.files.write("notes.txt", "changed\n")
    again.stop(wait=True)
    # Stopped, it restarts in place and goes on from the head its stop saved.
    again.restart()
    assert again.status == "ready"
    assert again.files.read("notes.txt") == b"changed\n"
    again.stop(wait=True)
    last = session.captures()[-1].n
    assert last > first
    diff = session.diff(last, against=first)
    assert "tree/notes.txt" in [str(path) for path in diff.changed], diff
    assert client.capture_sessions.get(session.id).details().head_n == last


def test_a_sleeping_workspace_wakes_on_its_next_call_with_its_files(client):
    session = client.capture_sessions.create()
    ws = client.workspaces.create(IMAGE, registry="host", command=["sleep", "600"], capture=session)
    ws.files.write("draft.txt", "before the sleep\n")
    ws.sleep()
    assert ws.sleeping and ws.status == "stopped"
    assert ws.details.sleeping.reason.value == "requested"
    # A file read needs the runtime: it wakes the workspace on a new run.
    assert ws.files.read("draft.txt") == b"before the sleep\n"
    assert not ws.refresh().sleeping and ws.status == "ready"
    ws.sleep()
    ws.wake()
    assert ws.status == "ready"
    assert ws.exec(["cat", "draft.txt"]).stdout == "before the sleep\n"
    ws.stop(wait=True)
    assert not ws.sleeping


def test_a_workspace_forks_into_independent_copies(client):
    session = client.capture_sessions.create()
    ws = client.workspaces.create(IMAGE, registry="host", command=["sleep", "600"], capture=session)
    ws.files.write("shared.txt", "at the fork point\n")
    copies = ws.fork(2, name_prefix="copy")
    assert [c.status for c in copies] == ["ready", "ready"]
    assert all(c.capture_session.token.startswith("slcap_") for c in copies)
    ws.files.write("later.txt", "after the fork\n")
    for i, copy in enumerate(copies):
        assert copy.files.read("shared.txt") == b"at the fork point\n"
        names = [entry.name for entry in copy.files.list(".").entries]
        assert "later.txt" not in names, names
        copy.files.write(f"own-{i}.txt", f"{i}\n")
    assert "own-0.txt" not in [entry.name for entry in copies[1].files.list(".").entries]
    copies[0].stop(wait=True)
    # The copy's stop saved its work: a fork of that capture holds it.
    newest = copies[0].capture_session.captures()[-1].n
    (again,) = copies[0].capture_session.fork(newest)
    assert again.files.read("own-0.txt") == b"0\n"
    for workspace in [again, copies[1], ws]:
        workspace.stop(wait=True)
    session.delete()
