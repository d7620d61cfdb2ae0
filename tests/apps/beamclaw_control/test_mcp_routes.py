"""The MCP routes over HTTP, against a real MCP server over stdio: its state and tools for
a viewer, a restart for an admin alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from tests.apps.beamclaw_mcp.conftest import stdio

from .apps_api import ADMIN, ALICE, VIEWER, Api, running_api

SERVERS = {"servers": {"files": stdio(), "off": {**stdio(), "enabled": False}}}


async def _server(api: Api, name: str, state: str) -> dict[str, Any]:
    """The server *name* as GET /v1/mcp/servers lists it, once in *state* (a real process: poll)."""
    with trio.fail_after(60):
        while True:
            listed = await api.get(VIEWER, "/v1/mcp/servers")
            assert listed.status_code == 200, listed.text
            server: dict[str, Any]
            (server,) = [s for s in listed.json()["servers"] if s["name"] == name]
            if server["state"] == state:
                return server
            await trio.sleep(0.05)


async def test_servers_and_their_tools_are_listed_for_a_viewer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_api(tmp_path, monkeypatch, mcp_table=SERVERS) as api:
        files = await _server(api, "files", "ready")
        assert "mcp__files__add" in files["tools"] and files["last_error"] == "" and files["transport"] == "stdio"
        assert (await _server(api, "off", "disabled"))["tools"] == []
        listed = await api.get(VIEWER, "/v1/mcp/tools", server="files")
        assert listed.status_code == 200, listed.text
        (add,) = [tool for tool in listed.json()["tools"] if tool["remote"] == "add"]
        assert (add["name"], add["server"], add["asks"]) == ("mcp__files__add", "files", True)  # untrusted: it asks
        assert add["description"].endswith("Add two numbers.")
        assert [t["name"] for t in listed.json()["tools"]] == sorted(t["name"] for t in listed.json()["tools"])
        assert (await api.get(VIEWER, "/v1/mcp/tools", server="nobody")).json() == {"tools": []}


async def test_a_servers_errors_and_stderr_are_an_admins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """They may quote the arguments of any user's tool calls: a viewer sees the state only."""
    table = {"max_restarts": 0, "servers": {"broken": stdio("--mode", "crash")}}
    async with running_api(tmp_path, monkeypatch, mcp_table=table) as api:
        await _server(api, "broken", "failed")
        listed = {token: (await api.get(token, "/v1/mcp/servers")).json()["servers"][0] for token in (VIEWER, ADMIN)}
        assert "cannot open /nonexistent/config.json" in listed[ADMIN]["stderr"]
        assert listed[VIEWER]["state"] == "failed"
        assert listed[VIEWER]["stderr"] == "" and listed[VIEWER]["last_error"] == ""


async def test_a_restart_is_an_admins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_api(tmp_path, monkeypatch, mcp_table=SERVERS) as api:
        await _server(api, "files", "ready")
        for token in (VIEWER, ALICE):
            refused = await api.post(token, "/v1/mcp/servers/files/restart")
            assert refused.status_code == 403, refused.text
        restarted = await api.post(ADMIN, "/v1/mcp/servers/files/restart")
        assert restarted.status_code == 200, restarted.text
        assert restarted.json() == {"restarted": "files"}
        assert (await _server(api, "files", "ready"))["restarts"] == 0
        unknown = await api.post(ADMIN, "/v1/mcp/servers/nobody/restart")
        assert unknown.status_code == 404 and "configured: files, off" in unknown.json()["error"]["message"]
        disabled = await api.post(ADMIN, "/v1/mcp/servers/off/restart")
        assert disabled.status_code == 409 and "disabled" in disabled.json()["error"]["message"]
