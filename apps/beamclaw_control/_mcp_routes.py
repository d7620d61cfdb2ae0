"""The MCP servers BeamClaw uses: their state and tools (metadata, for a viewer), and a
restart (the daemon's own processes: for an admin)."""

from __future__ import annotations

from typing import Any

import attrs
from quart import Blueprint, Response, request

import beamclaw_mcp as mcp
import beamclaw_tools as tools
import supervision as sv
from beamclaw_gateway import BadRequest, Role, needs, principal

from ._common import answer, handle_errors

mcp_routes = handle_errors(Blueprint("mcp_routes", __name__))


def _not_running() -> BadRequest:
    return BadRequest("the MCP app is not running (disabled in the configuration?)", 503, "unavailable")


@mcp_routes.get("/v1/mcp/servers")
@needs(Role.VIEWER)
async def servers() -> Response:
    """Each configured server: transport, state, tools, restarts, last error, the end of its
    stderr (for an admin: a server's errors and stderr may quote the arguments of any
    user's tool calls)."""
    try:
        found = await mcp.server_statuses()
    except sv.NoProc:
        raise _not_running() from None
    admin = principal().role >= Role.ADMIN
    shown = [attrs.asdict(server) | ({} if admin else {"last_error": "", "stderr": ""}) for server in found]
    return answer({"servers": shown})


@mcp_routes.get("/v1/mcp/tools")
@needs(Role.VIEWER)
async def mcp_tools() -> Response:
    """The tools MCP servers offer the agents (``?server=S``: one server's), as the agents see them."""
    server = request.args.get("server") or None
    found: list[dict[str, Any]] = [
        {"name": tool.definition.name, "server": tool.link.server, "remote": tool.remote,
         "description": tool.definition.description, "asks": tool.requires_approval}
        for tool in await tools.list_tools()
        if isinstance(tool, mcp.McpTool) and server in (None, tool.link.server)
    ]  # fmt: skip
    return answer({"tools": sorted(found, key=lambda tool: str(tool["name"]))})


@mcp_routes.post("/v1/mcp/servers/<name>/restart")
@needs(Role.ADMIN)
async def restart(name: str) -> Response:
    """Start the server *name* again, a failed one too, with a fresh count of restarts."""
    try:
        known = {server.name for server in await mcp.server_statuses()}
        if name not in known:
            configured = ", ".join(sorted(known)) or "none"
            raise BadRequest(f"no MCP server {name!r} is configured (configured: {configured})", 404, "not_found")
        await mcp.restart_server(name)
    except sv.NoProc:
        raise _not_running() from None
    except ValueError as exc:  # disabled in the configuration
        raise BadRequest(str(exc), 409, "conflict") from None
    return answer({"restarted": name})
