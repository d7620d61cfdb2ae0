"""MCP servers over streamable HTTP (hypercorn on loopback): headers, a restarted server
whose session is lost, a server that goes away and comes back, and the session ended."""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from tests.support.asgi_server import ASGIApp, Receive, Scope, Send, serve_asgi
from tests.support.mcp_server import http_app

from .conftest import RunMcp


@attrs.define
class Seen:
    """What reached the HTTP server: each request's method and its Authorization header."""

    requests: list[tuple[str, str]] = attrs.field(factory=list)

    def wrap(self, app: ASGIApp) -> ASGIApp:
        async def recorded(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                headers = dict(scope["headers"])
                self.requests.append((scope["method"], headers.get(b"authorization", b"").decode()))
            await app(scope, receive, send)

        return recorded


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@asynccontextmanager
async def _server(port: int, seen: Seen) -> AsyncIterator[None]:
    """A fresh server (a fresh set of sessions) on *port*."""
    async with serve_asgi(seen.wrap(http_app()), port=port, lifespan=True):
        yield


def _table(port: int, **server: Any) -> dict[str, Any]:
    return {"ping_interval_seconds": 0.5, "servers": {"web": {"url": f"http://127.0.0.1:{port}/mcp", **server}}}


async def test_tools_over_http_with_a_secret_header(run_mcp: RunMcp) -> None:
    port, seen = _free_port(), Seen()
    os.environ["MCP_TEST_AUTH"] = "Bearer web-token-0123456789abcdef"
    try:
        async with _server(port, seen), run_mcp(_table(port, headers={"Authorization": {"env": "MCP_TEST_AUTH"}})) as m:
            await m.until("web", lambda s: s.state == "ready")
            assert (await m.call("mcp__web__add", {"a": 20, "b": 22})).text == "42"
        assert seen.requests and all(auth == "Bearer web-token-0123456789abcdef" for _, auth in seen.requests)
        assert ("DELETE", "Bearer web-token-0123456789abcdef") in seen.requests  # the session was ended
    finally:
        del os.environ["MCP_TEST_AUTH"]


async def test_a_restarted_server_is_reinitialised_and_only_safe_calls_are_repeated(run_mcp: RunMcp) -> None:
    port, seen = _free_port(), Seen()
    async with run_mcp({**_table(port), "ping_interval_seconds": 600}) as m:  # no ping sees it down: a call does
        async with _server(port, seen):
            await m.until("web", lambda s: s.state == "ready")
            assert (await m.call("mcp__web__write_note", {"text": "one"})).text == "1 notes"
        async with _server(port, seen):  # the same URL, but the sessions it knew are gone
            # A read-only call that met the lost session is made again on a new one.
            repeated = await m.call("mcp__web__add", {"a": 1, "b": 2})
            assert (repeated.text, repeated.is_error) == ("3", False)
            # (The server's going away may also have been seen on its event stream: one more restart.)
            status = await m.until("web", lambda s: s.state == "ready" and s.restarts >= 1)
            assert "lost the session" in status.last_error or "transport failed" in status.last_error
        async with _server(port, seen):
            # A call with a side effect is not repeated: it may have run.
            once = await m.call("mcp__web__write_note", {"text": "two"})
            assert once.is_error and "was not repeated because it may have run" in once.text
            await m.until("web", lambda s: s.state == "ready" and s.restarts > status.restarts)
            assert (await m.call("mcp__web__write_note", {"text": "three"})).text == "1 notes"  # a new server's first


async def test_a_server_that_goes_away_fails_calls_at_once_and_is_used_again_when_back(run_mcp: RunMcp) -> None:
    port, seen = _free_port(), Seen()
    async with run_mcp(_table(port)) as m:
        async with _server(port, seen):
            await m.until("web", lambda s: s.state == "ready")
        with trio.fail_after(15):
            result = await m.call("mcp__web__add", {"a": 1, "b": 1})
        assert result.is_error
        await m.until("web", lambda s: s.state in {"restarting", "connecting"} and s.restarts >= 1)
        async with _server(port, seen):
            await m.until("web", lambda s: s.state == "ready")
            assert (await m.call("mcp__web__add", {"a": 2, "b": 2})).text == "4"


async def test_a_call_given_up_on_makes_a_new_connection(run_mcp: RunMcp) -> None:
    """The SDK's transport would keep the unanswered call's event stream open for ever: a new session
    leaves nothing of it behind, and the server serves the next call."""
    port, seen = _free_port(), Seen()
    async with _server(port, seen), run_mcp({**_table(port), "call_timeout_seconds": 1}) as m:
        await m.until("web", lambda s: s.state == "ready")
        late = await m.call("mcp__web__slow", {"seconds": 30})
        assert late.is_error and "did not answer within 1 s (mcp.call_timeout_seconds)" in late.text
        status = await m.until("web", lambda s: s.state == "ready" and s.restarts == 1)
        assert "a call was not answered within 1 s: a new connection is made" in status.last_error
        assert (await m.call("mcp__web__add", {"a": 2, "b": 2})).text == "4"
        assert [method for method, _ in seen.requests].count("DELETE") >= 1  # the old session was ended
