"""The event feed through the SDK: followed live, and resumed after the
server restarts with no gap and no repeat."""

from __future__ import annotations

IMAGE = "sluice-test/busybox:1"


def _cursor(ident: str) -> tuple[int, ...]:
    return tuple(int(part) for part in ident.split("."))


def test_the_feed_resumes_across_a_server_restart(client, served):
    first = client.workspaces.create(IMAGE, registry="host", command=["sleep", "600"])
    feed = iter(client.events.stream(timeout=30))
    seen = []
    for event in feed:
        seen.append(event)
        if event.type == "runtime.ready" and event.data.get("workspaceId") == first.id:
            break
    served.restart()
    second = client.workspaces.create(IMAGE, registry="host", command=["sleep", "600"])
    for event in feed:
        seen.append(event)
        if event.type == "runtime.ready" and event.data.get("workspaceId") == second.id:
            break
    cursors = [_cursor(e.id) for e in seen if e.id is not None]
    assert len(cursors) == len(set(cursors)), "no event twice"
    assert cursors == sorted(cursors), "in the order they became durable"
    created = [e for e in seen if e.type == "workspace.created" and e.data.get("workspaceId") == second.id]
    assert len(created) == 1, [e.type for e in seen]
    first.stop(wait=False)
    second.stop(wait=False)


def test_a_workspaces_own_events_follow_its_life(client):
    ws = client.workspaces.create(IMAGE, registry="host", command=["sleep", "600"])
    ws.stop(wait=False)
    kinds = []
    for event in ws.events(timeout=60):
        kinds.append(event.type)
        if event.type == "runtime.stopped":
            break
    assert kinds[0] == "workspace.created" and "runtime.ready" in kinds, kinds
    assert kinds.index("runtime.ready") < kinds.index("runtime.stopped"), kinds
