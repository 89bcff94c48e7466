"""An agent's session with `sluice mcp`, through the Python `mcp` client:
over stdio (this script starts the server) or streamable HTTP (a server
the test started). Checks each answer as it goes and prints a summary as
JSON on its last line for the test to check against the API.

    mcp_session.py stdio SLUICE_BIN PREVIEW_PORT PREVIEW_CA   (API from SLUICE_API_URL/SLUICE_API_TOKEN)
    mcp_session.py http MCP_URL MCP_TOKEN
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import anyio
import httpx2
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

TOOLS = {
    "create_workspace", "list_workspaces", "run_command", "start_process", "list_processes",
    "read_process_output", "read_file", "write_file", "list_files", "open_preview", "stop_workspace",
    "fork_workspace",
}


def text_of(result) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def call(session: ClientSession, tool: str, **arguments):
    """A tool's answer, which must not be an error."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {text_of(result)}"
    return result.structured_content or json.loads(text_of(result))


async def refused(session: ClientSession, tool: str, **arguments) -> str:
    """The text of a call that must fail: a tool error or a protocol error."""
    try:
        result = await session.call_tool(tool, arguments)
    except MCPError as e:
        return f"protocol error {e.code}: {e}"
    assert result.is_error, f"{tool} {arguments} should have failed: {text_of(result)}"
    return text_of(result)


def through_preview(url: str, port: int, ca: str) -> tuple[int, str]:
    """curl through the preview listener: the signed first visit sets a
    cookie and sends on to the page."""
    host = url.split("://", 1)[1].split("/", 1)[0].split(":", 1)[0]
    jar = os.path.join(tempfile.gettempdir(), f"mcp-preview-jar-{os.getpid()}")
    argv = ["curl", "-sS", "-L", "-b", jar, "-c", jar, "--max-time", "10", "-o", "-", "-w", "\n%{http_code}"]
    argv += ["--resolve", f"{host}:{port}:127.0.0.1", "--cacert", ca, url]
    out = subprocess.run(argv, capture_output=True, text=True, check=False).stdout
    body, _, status = out.rpartition("\n")
    return int(status or 0), body


async def whole_session(session: ClientSession, preview_port: int, preview_ca: str) -> dict:
    summary: dict = {}
    tools = await session.list_tools()
    names = {tool.name for tool in tools.tools}
    assert names == TOOLS, f"the tools: {sorted(names)}"
    assert all(len(tool.description or "") > 40 for tool in tools.tools), "each tool is described for a model"

    created = await call(session, "create_workspace", command=["sleep", "600"])
    ws = created["workspace_id"]
    assert created["status"] == "ready", created
    summary["workspace_id"] = ws

    ran = await call(session, "run_command", workspace_id=ws, argv=["python3", "-c", "print(6*7)"])
    assert ran["exit_code"] == 0 and ran["stdout"] == "42\n", ran
    shell = await call(session, "run_command", workspace_id=ws, command="echo oops >&2; exit 3")
    assert shell["exit_code"] == 3 and shell["stderr"] == "oops\n", shell
    loud = await call(session, "run_command", workspace_id=ws, command="seq 1 30000")
    kept = loud["stdout"]
    assert loud["stdout_cut"] and kept.startswith("1\n2\n") and kept.endswith("\n30000\n"), kept[:100] + kept[-100:]
    assert len(kept) < 40_000 and "bytes cut" in kept, f"a long output is cut to the server's bound: {len(kept)}"

    written = await call(session, "write_file", workspace_id=ws, path="notes/plan.md", content="# Plan\nship it ✓\n")
    assert written["size"] == len("# Plan\nship it ✓\n".encode()), written
    read = await call(session, "read_file", workspace_id=ws, path="notes/plan.md")
    assert read["content"] == "# Plan\nship it ✓\n" and "next_offset" not in read, read
    listed = await call(session, "list_files", workspace_id=ws, path="notes")
    assert [e["path"] for e in listed["entries"]] == ["plan.md"], listed

    port = 8765
    web = await call(session, "start_process", workspace_id=ws, argv=["python3", "-u", "-m", "http.server", str(port), "--bind", "127.0.0.1"], name="web")
    processes = await call(session, "list_processes", workspace_id=ws)
    assert [p["process_id"] for p in processes["processes"]] == [web["process_id"]], processes
    preview = await call(session, "open_preview", workspace_id=ws, port=port)
    deadline = time.monotonic() + 30
    while True:
        status, page = through_preview(preview["url"], preview_port, preview_ca)
        if status == 200 and "Directory listing" in page and "notes/" in page:
            break
        assert time.monotonic() < deadline, f"the preview never served the server: {status} {page[:300]}"
        await anyio.sleep(0.5)
    summary["preview_status"] = status
    output = await call(session, "read_process_output", workspace_id=ws, process_id=web["process_id"])
    assert "GET / " in output["output"] and output["state"] == "running" and output["position"], output

    # Bad arguments: each answer names what is wrong.
    summary["wrong_type"] = await refused(session, "run_command", workspace_id=ws, argv="python3 -V")
    summary["unknown_argument"] = await refused(session, "read_file", workspace_id=ws, path="x", lenght=3)
    summary["neither"] = await refused(session, "run_command", workspace_id=ws)
    summary["escape"] = await refused(session, "read_file", workspace_id=ws, path="../../etc/passwd")
    summary["unknown_workspace"] = await refused(session, "run_command", workspace_id="ws_nope", command="true")
    # The largest offset there is: an answer (an error or nothing), and the server goes on.
    await session.call_tool("read_file", {"workspace_id": ws, "path": "notes/plan.md", "offset": 2**64 - 1})
    again = await call(session, "read_file", workspace_id=ws, path="notes/plan.md", offset=2)
    assert again["content"] == "Plan\nship it ✓\n", again

    # Two copies of the workspace: its files as they are, each its own.
    forked = await call(session, "fork_workspace", workspace_id=ws, count=2, name_prefix="try")
    copies = forked["copies"]
    assert [c["name"] for c in copies] == ["try-1", "try-2"] and all(c["status"] == "ready" for c in copies), forked
    assert "slcap_" not in json.dumps(forked), "no session token reaches the agent"
    await call(session, "write_file", workspace_id=copies[0]["workspace_id"], path="notes/only-here.md", content="1\n")
    for copy in copies:
        read = await call(session, "read_file", workspace_id=copy["workspace_id"], path="notes/plan.md")
        assert read["content"] == "# Plan\nship it ✓\n", read
    listed = await call(session, "list_files", workspace_id=copies[1]["workspace_id"], path="notes")
    assert [e["path"] for e in listed["entries"]] == ["plan.md"], listed
    summary["forked"] = len(copies)
    for copy in copies:
        await call(session, "stop_workspace", workspace_id=copy["workspace_id"])

    stopped = await call(session, "stop_workspace", workspace_id=ws)
    summary["stopped"] = stopped["status"]
    return summary


async def short_session(session: ClientSession) -> dict:
    tools = await session.list_tools()
    assert {tool.name for tool in tools.tools} == TOOLS
    created = await call(session, "create_workspace", command=["sleep", "600"])
    ws = created["workspace_id"]
    ran = await call(session, "run_command", workspace_id=ws, command="echo over http")
    assert ran["stdout"] == "over http\n", ran
    stopped = await call(session, "stop_workspace", workspace_id=ws)
    return {"workspace_id": ws, "stopped": stopped["status"]}


async def main() -> None:
    mode = sys.argv[1]
    if mode == "stdio":
        # The server gets this environment whole: its API URL, token and owner.
        server = StdioServerParameters(command=sys.argv[2], args=["mcp"], env=dict(os.environ))
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            summary = await whole_session(session, int(sys.argv[3]), sys.argv[4])
    else:
        headers = {"Authorization": f"Bearer {sys.argv[3]}"}
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(120)) as http:
            async with streamable_http_client(sys.argv[2], http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    summary = await short_session(session)
    print(json.dumps(summary))


anyio.run(main)
