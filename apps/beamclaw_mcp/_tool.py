"""An MCP server's tool as a BeamClaw tool, and the link through which it reaches its server.

A `Link` is one per configured server and outlives the restarts of the process that
owns the connection: the process attaches each new session to it and detaches it when
the connection ends. A call made while no session is attached fails at once (the
server is restarting) instead of waiting; a call in flight when the connection dies
fails at once too (the SDK fails pending requests when the stream closes).

A call that fails because an HTTP server lost its session ("Session terminated")
may or may not have run. It is repeated, once, on the new session only when the tool
says it is read-only or idempotent; otherwise the model is told it may have run.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

import attrs
import trio

from beamclaw_tools import Autonomy, ToolContext, ToolDefinition, ToolError, ToolResult, ToolSession

from ._config import McpConfig, Trust

if TYPE_CHECKING:
    from mcp import ClientSession, MCPError
    from mcp.types import CallToolResult

#: What a call fails with when a streamable HTTP server no longer knows the session (a
#: 404): the SDK's words, or the server's own JSON-RPC error.
_SESSION_LOST: Final = ("session terminated", "session not found")


@attrs.define(eq=False)
class Link:
    """How the tools of one server reach its current session."""

    server: str
    config: McpConfig
    session: ClientSession | None = None
    #: Set (and replaced) at each attach and detach.
    _changed: trio.Event = attrs.field(factory=trio.Event)
    #: Over HTTP, a call given up on leaves its response stream open in the SDK's
    #: transport (a server may keep it open for ever): the connection is made anew.
    remake_after_timeout: bool = False
    #: Set by a call that saw the connection unusable (`lose`); the owning process reconnects.
    lost: trio.Event = attrs.field(factory=trio.Event)
    lost_why: str = ""

    def attach(self, session: ClientSession) -> None:
        self.session, self.lost, self.lost_why = session, trio.Event(), ""
        self._changed.set()
        self._changed = trio.Event()

    def lose(self, why: str) -> None:
        """Tell the owning process to end this connection and make a new one."""
        if not self.lost.is_set():
            self.lost_why = why
            self.lost.set()

    def detach(self) -> None:
        self.session = None
        self._changed.set()
        self._changed = trio.Event()

    async def call(self, remote: str, arguments: dict[str, Any], *, repeatable: bool) -> CallToolResult:
        """Call the server's tool *remote*; `ToolError` saying what went wrong otherwise."""
        from mcp import MCPError  # noqa: PLC0415 - the SDK, imported once a server is used

        session = self._session()
        try:
            return await self._call(session, remote, arguments)
        except MCPError as exc:
            if not any(words in str(exc).lower() for words in _SESSION_LOST):
                raise ToolError(self._refused(exc)) from None
            self.lose("the server lost the session (HTTP 404): a new one is made")
            if not repeatable:
                raise ToolError(
                    f"the MCP server {self.server!r} lost its session during the call; the call was not repeated "
                    "because it may have run (the tool is not marked read-only or idempotent)"
                ) from None
        with trio.move_on_after(self.config.init_timeout_seconds):
            while self.session is session or self.session is None:
                await self._changed.wait()
            try:
                return await self._call(self._session(), remote, arguments)
            except MCPError as exc:
                raise ToolError(self._refused(exc)) from None
        raise ToolError(f"the MCP server {self.server!r} lost its session and did not come back in time")

    def _session(self) -> ClientSession:
        if self.session is None:
            raise ToolError(
                f"the MCP server {self.server!r} is not connected (it is restarting; `beamclaw mcp list` says why)"
            )
        return self.session

    async def _call(self, session: ClientSession, remote: str, arguments: dict[str, Any]) -> CallToolResult:
        from mcp.types import CallToolResult  # noqa: PLC0415 - the SDK, imported once a server is used

        timeout = self.config.call_timeout_seconds
        with trio.move_on_after(timeout):
            result = await session.call_tool(remote, arguments)
            if not isinstance(result, CallToolResult):  # pragma: no cover - the SDK raises for the others
                raise ToolError(f"the MCP server {self.server!r} answered with a {type(result).__name__}")
            return result
        if self.remake_after_timeout:
            self.lose(f"a call was not answered within {timeout:g} s: a new connection is made")
        raise ToolError(
            f"the MCP server {self.server!r} did not answer within {timeout:g} s (mcp.call_timeout_seconds)"
        )

    def _refused(self, exc: MCPError) -> str:
        if self.lost.is_set():  # the connection is ending, and why says more than how the call ended
            return f"the MCP server {self.server!r} failed the call, and is being reconnected: {self.lost_why}"
        if "closed" in str(exc).lower():
            return f"the MCP server {self.server!r} closed the connection during the call (it is being restarted)"
        return f"the MCP server {self.server!r} refused the call: {exc}"


def render(result: CallToolResult, max_bytes: int) -> ToolResult:
    """A tool result as text for the model: each content block, cut at *max_bytes* (UTF-8)."""
    from mcp.types import TextContent  # noqa: PLC0415 - the SDK, imported once a server is used

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
            continue
        kind = getattr(block, "type", type(block).__name__)
        resource = getattr(block, "resource", None)
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            parts.append(text)
        else:
            where = getattr(block, "uri", None) or getattr(resource, "uri", None) or getattr(block, "mime_type", "")
            parts.append(f"[{kind}{f' {where}' if where else ''}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(parts) or "(the tool returned nothing)"
    data = text.encode("utf-8", "replace")
    if len(data) > max_bytes:
        kept = data[:max_bytes].decode("utf-8", "ignore")
        text = f"{kept}\n[... the result was cut: {len(data) - max_bytes:,} more bytes (mcp.max_result_bytes)]"
    return ToolResult(text, is_error=bool(result.is_error))


@attrs.frozen
class McpTool:
    """A tool of an MCP server, as the agent sees it (``mcp__<server>__<tool>``)."""

    definition: ToolDefinition
    remote: str
    link: Link
    trust: Trust = "ask"
    read_only: bool = False
    idempotent: bool = False
    #: What BeamClaw checks a call's arguments against: only that they are an object. The
    #: server's own schema (what the model is shown) is the server's to enforce; run here,
    #: a hostile one (a crafted ``pattern``, a tree of ``$ref``) would hold the event loop.
    argument_schema: dict[str, Any] = attrs.field(factory=lambda: {"type": "object"})

    @property
    def requires_approval(self) -> bool:
        """Under ``supervised``, a call asks unless the server is trusted, or trusted for its
        read-only hints and this tool carries one."""
        return not (self.trust == "always" or (self.trust == "read_only_hints" and self.read_only))

    @property
    def min_autonomy(self) -> Autonomy:
        return Autonomy.SUPERVISED if self.requires_approval else Autonomy.READ_ONLY

    async def execute(self, args: dict[str, Any], session: ToolSession, context: ToolContext) -> ToolResult:
        result = await self.link.call(self.remote, args, repeatable=self.read_only or self.idempotent)
        return render(result, self.link.config.max_result_bytes)
