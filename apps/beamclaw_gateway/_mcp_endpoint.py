"""``/mcp`` on the gateway: BeamClaw's agents as a streamable HTTP MCP server.

The MCP SDK's server app answers there, after the checks every route passes (Host,
Origin, the token, the rate limit); the agents are reached through core directly.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import trio
from werkzeug.datastructures import Headers

import beamclaw_core as core

from ._browser_guard import Refusal
from ._config import GatewayConfig
from ._http_api import error_body
from ._mcp_server import Pending
from ._turns import header_user

MCP_PATH = "/mcp"
_ASGI = Callable[..., Awaitable[None]]
Check = Callable[[str, Any, str | None, str, str], Refusal | None]


@attrs.define
class _PendingChannel(core.ReplyOnlyChannel):
    """A channel that hands what a run says to its `Pending` (replies come with the run's end)."""

    pending: Pending

    async def send(self, text: str) -> None:
        self.pending.said(text)

    async def turn_failed(self, text: str) -> None:
        """Nothing: the run's end carries the same text."""


@attrs.define
class CoreBackend:
    """The agents of this daemon, for the MCP server (see `Conversations`)."""

    config: GatewayConfig
    data_dir: Path
    nursery: trio.Nursery

    async def _open(self, agent: str, user: str) -> core.SessionHandle:
        name = core.check_agent_exists(self.data_dir, agent or self.config.default_agent, self.config.default_agent)
        return await core.open_session(user, name, "mcp")

    async def start(self, agent: str, user: str, message: str, pending: Pending) -> None:
        handle = await self._open(agent, user)
        text = core.truncated(message, self.config.http.max_user_chars)
        run = await core.submit(handle, text, _PendingChannel(pending))

        async def finish() -> None:
            result = await run.wait()
            pending.ended(result.ok, result.text)

        self.nursery.start_soon(finish)

    async def answer(self, agent: str, user: str, word: str) -> None:
        await core.send_message(await self._open(agent, user), word, core.CollectingChannel())

    async def agents(self) -> list[str]:
        return core.agent_names(self.data_dir, self.config.default_agent)


@attrs.frozen
class McpEndpoint:
    """ASGI: ``/mcp`` to the MCP server app once the gateway's checks pass; the rest to *app*."""

    app: _ASGI
    mcp_app: _ASGI
    check: Check

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or (path != MCP_PATH and not path.startswith(MCP_PATH + "/")):
            await self.app(scope, receive, send)
            return
        headers = Headers([(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]])
        client = scope.get("client")
        remote = client[0] if client else None
        refusal = self.check(scope["method"], headers, remote, path, header_user(headers.get("X-User-Id")))
        if refusal is None:
            await self.mcp_app(scope, receive, send)
            return
        body = error_body(refusal.message, refusal.status, refusal.code).encode()
        extra = [(k.lower().encode(), v.encode()) for k, v in refusal.headers.items()]
        await send({"type": "http.response.start", "status": refusal.status,
                    "headers": [(b"content-type", b"application/json"), *extra]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})
