"""``/mcp`` on the gateway: BeamClaw's agents as a streamable HTTP MCP server.

The MCP SDK's server app answers there, after the checks every route passes (Host,
Origin, the token, the role, the rate limit); the agents are reached through core
directly. The request's principal reaches the ``chat`` tool in a header this endpoint
sets (`PRINCIPAL_HEADER`), after removing any the client sent: the tool speaks only as
that principal's ``mcp:`` users.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import attrs
import trio
from werkzeug.datastructures import Headers

import beamclaw_core as core

from ._browser_guard import Refusal
from ._config import GatewayConfig, principals_of
from ._http_api import error_body
from ._mcp_server import Pending
from ._principals import Principal, Principals

MCP_PATH = "/mcp"
#: The header that carries the principal's name from this endpoint to the tool.
PRINCIPAL_HEADER: Final = "x-beamclaw-principal"
_ASGI = Callable[..., Awaitable[None]]
Screen = Callable[[str, Any, str | None, str, Callable[[Principal], str]], Principal | Refusal]


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
    principals: Principals = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.principals = principals_of(self.config)

    async def _open(self, agent: str, user: str) -> core.SessionHandle:
        name = core.check_agent_exists(self.data_dir, agent or self.config.default_agent, self.config.default_agent)
        return await core.open_session(user, name, "mcp")

    def speaker(self, agent: str, user: str, headers: Any) -> tuple[str, str]:
        """The ``mcp:`` user a ``chat`` call speaks as, and its origin, for the principal the
        endpoint found; `Forbidden` (a `ValueError`, said to the host) for one outside its reach."""
        name = (headers or {}).get(PRINCIPAL_HEADER, "")
        who = self.principals.named(name) if name else None
        if who is None:  # not through the endpoint's checks: nobody
            raise ValueError("this call did not come through the gateway's checks")
        who.check_agent(agent or self.config.default_agent)
        return who.mcp_user(user), who.origin("mcp")

    async def start(self, agent: str, user: str, message: str, pending: Pending, origin: str) -> None:
        handle = await self._open(agent, user)
        text = core.truncated(message, self.config.http.max_user_chars)
        turn = await core.submit(handle, text, _PendingChannel(pending), origin=origin)

        async def finish() -> None:
            result = await turn.wait()
            pending.ended(result.ok, result.text)

        self.nursery.start_soon(finish)

    async def answer(self, agent: str, user: str, word: str, origin: str) -> None:
        await core.send_message(await self._open(agent, user), word, core.CollectingChannel(), origin=origin)

    async def agents(self) -> list[str]:
        return core.agent_names(self.data_dir, self.config.default_agent)


@attrs.frozen
class McpEndpoint:
    """ASGI: ``/mcp`` to the MCP server app once the gateway's checks pass; the rest to *app*."""

    app: _ASGI
    mcp_app: _ASGI
    screen: Screen
    principals: Principals

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or (path != MCP_PATH and not path.startswith(MCP_PATH + "/")):
            await self.app(scope, receive, send)
            return
        headers = Headers([(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]])
        client = scope.get("client")
        remote = client[0] if client else None
        found = self.screen(scope["method"], headers, remote, path, lambda who: who.mcp_user(""))
        if isinstance(found, Principal):
            own = [(k, v) for k, v in scope["headers"] if k.lower() != PRINCIPAL_HEADER.encode()]
            scope = {**scope, "headers": [*own, (PRINCIPAL_HEADER.encode(), found.name.encode())]}
            await self.mcp_app(scope, receive, send)
            return
        refusal = found
        body = error_body(refusal.message, refusal.status, refusal.code).encode()
        extra = [(k.lower().encode(), v.encode()) for k, v in refusal.headers.items()]
        await send({"type": "http.response.start", "status": refusal.status,
                    "headers": [(b"content-type", b"application/json"), *extra]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})
