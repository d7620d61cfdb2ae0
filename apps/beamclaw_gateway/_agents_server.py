"""The MCP SDK's server of BeamClaw's agents, over the conversations of `_mcp_server`.

A module of its own: the SDK takes about a second to import, which only `beamclaw mcp
serve` and the first request to the gateway's ``/mcp`` pay, not the daemon's start.
"""

from __future__ import annotations

from typing import Any, Final

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from ._mcp_server import Conversations, Speaker

_INSTRUCTIONS: Final = (
    "BeamClaw's agents. `chat` sends a message to an agent and returns its reply; the same `user` and `agent` "
    "continue one conversation. When the reply asks to approve a tool call, answer with `chat` again and the "
    "message /yes, /no or /always."
)


def agents_server(conversations: Conversations, speaker: Speaker) -> MCPServer[Any]:
    """The MCP server of BeamClaw's agents (`chat` and `agents`); *speaker* decides who each
    ``chat`` call speaks as (the gateway's: the request's principal's ``mcp:`` users only;
    over stdio: the owner's ``--user``, or an ``mcp:`` user the host names)."""
    server: MCPServer[Any] = MCPServer("beamclaw", instructions=_INSTRUCTIONS, log_level="WARNING")

    @server.tool()
    async def chat(message: str, ctx: Context, agent: str = "", user: str = "") -> str:
        """Send a message to a BeamClaw agent and return its reply. The same user and agent continue one
        conversation (with the agent's memory and tools). If the reply asks to approve a tool call, call
        chat again with /yes, /no or /always."""
        try:
            return await conversations.chat(message, agent, *speaker(agent, user, ctx.headers))
        except ValueError as exc:  # a bad agent or user: said to the host, not hidden as a crash
            raise ToolError(str(exc)) from None

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def agents() -> str:
        """The agents there are (the `agent` of chat)."""
        return "\n".join(await conversations.backend.agents())

    return server
