"""The MCP host: BeamClaw connects to MCP servers and offers their tools to its agents.

Each configured server (``[mcp.servers.NAME]``: a stdio ``command`` or a streamable
HTTP ``url``) runs in a process of its own under a supervisor of its own, which owns
the connection, registers the server's tools as ``mcp__<server>__<tool>`` with the
tool registry, notices at once when the connection dies (calls in flight fail fast),
and is restarted with backoff, its tools coming back; a server that keeps failing is
left ``failed`` with its reason and stderr, and the rest goes on. Built on the
official ``mcp`` SDK, which runs under Trio.
"""

from ._config import McpConfig, ServerConfig, parse_mcp_config
from ._names import remote_server, tool_names
from ._registry import ServerStatus, restart_server, server_statuses
from ._tool import Link, McpTool, render
from ._tree import supervision_tree

__all__ = [
    "Link",
    "McpConfig",
    "McpTool",
    "ServerConfig",
    "ServerStatus",
    "parse_mcp_config",
    "remote_server",
    "render",
    "restart_server",
    "server_statuses",
    "supervision_tree",
    "tool_names",
]
