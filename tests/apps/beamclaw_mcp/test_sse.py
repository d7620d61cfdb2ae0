"""MCP servers over the legacy HTTP+SSE transport (``transport = "sse"``), the SDK's own
server on loopback: tools with a secret header, and a server that dies and comes back."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from tests.support.asgi_server import serve_asgi
from tests.support.mcp_server import sse_app

from .conftest import RunMcp
from .test_http import Seen, _free_port


@asynccontextmanager
async def _server(port: int, seen: Seen) -> AsyncIterator[None]:
    """A fresh SSE server (no session of an earlier one) on *port*."""
    async with serve_asgi(seen.wrap(sse_app()), port=port, lifespan=True):
        yield


def _table(port: int, **server: Any) -> dict[str, Any]:
    url = f"http://127.0.0.1:{port}/sse"
    return {"ping_interval_seconds": 0.5, "servers": {"old": {"url": url, "transport": "sse", **server}}}


async def test_tools_over_sse_with_a_secret_header(run_mcp: RunMcp) -> None:
    port, seen = _free_port(), Seen()
    os.environ["MCP_TEST_AUTH"] = "Bearer sse-token-0123456789abcdef"
    try:
        async with _server(port, seen), run_mcp(_table(port, headers={"Authorization": {"env": "MCP_TEST_AUTH"}})) as m:
            status = await m.until("old", lambda s: s.state == "ready")
            assert status.transport == "sse" and "mcp__old__add" in status.tools
            assert (await m.call("mcp__old__add", {"a": 20, "b": 22})).text == "42"
        methods = {method for method, _ in seen.requests}
        assert methods == {"GET", "POST"}  # the event stream, and the messages posted to its endpoint
        assert all(auth == "Bearer sse-token-0123456789abcdef" for _, auth in seen.requests)
    finally:
        del os.environ["MCP_TEST_AUTH"]


# The SDK's SSE *server* (the test's stand-in, not BeamClaw) leaves the memory streams of
# an event stream unclosed when it is stopped with the stream open (mcp/server/sse.py,
# connect_sse): found by recording where each unclosed stream was made.
_SERVER_LEAK = "ignore:Exception ignored in.*MemoryObject(Send|Receive)Stream:pytest.PytestUnraisableExceptionWarning"


@pytest.mark.filterwarnings(_SERVER_LEAK)
async def test_an_sse_server_that_dies_fails_calls_and_is_used_again_with_its_tools_when_back(
    run_mcp: RunMcp,
) -> None:
    port, seen = _free_port(), Seen()
    async with run_mcp(_table(port)) as m:
        async with _server(port, seen):
            await m.until("old", lambda s: s.state == "ready")
            assert (await m.call("mcp__old__write_note", {"text": "one"})).text == "1 notes"
        with trio.fail_after(15):
            result = await m.call("mcp__old__add", {"a": 1, "b": 1})
        assert result.is_error
        await m.until("old", lambda s: s.state in {"restarting", "connecting"} and s.restarts >= 1)
        async with _server(port, seen):
            status = await m.until("old", lambda s: s.state == "ready")
            assert {"mcp__old__add", "mcp__old__write_note"} <= set(status.tools)
            assert (await m.call("mcp__old__add", {"a": 2, "b": 2})).text == "4"
            assert (await m.call("mcp__old__write_note", {"text": "two"})).text == "1 notes"  # a new server's first
