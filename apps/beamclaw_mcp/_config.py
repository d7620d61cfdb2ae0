"""``[mcp]`` of config.toml: the MCP servers BeamClaw connects to, and the limits of calls.

    [mcp]
    call_timeout_seconds = 60
    [mcp.servers.files]
    command = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"]
    env = { LOG_LEVEL = "warn", API_TOKEN = { env = "FILES_TOKEN" } }
    [mcp.servers.search]
    url = "https://mcp.example.org/mcp"
    headers = { Authorization = { env = "SEARCH_MCP_AUTH" } }
    trust = "read_only_hints"

A server has a ``command`` (stdio) or a ``url`` (streamable HTTP, or the legacy HTTP+SSE
with ``transport = "sse"``), never both. Values
of ``env`` and ``headers`` are text or ``{ env = "VAR" }``; text that looks like a
credential is refused.
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal

import attrs
import httpx

from beamclaw_base import TextOrSecret, structure_config

#: What a server's name may be: it becomes part of each of its tools' names.
_SERVER_NAME: Final = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")

Trust = Literal["ask", "read_only_hints", "always"]


@attrs.frozen
class ServerConfig:
    """One MCP server.

    ``trust``: "ask" (its tools ask for approval under ``supervised``, the default),
    "read_only_hints" (a tool the server annotates read-only does not ask), "always"
    (none asks: for a server you wrote or audited).
    """

    #: A stdio server: the program and its arguments (give this or ``url``).
    command: list[str] = attrs.field(factory=list)
    #: A stdio server's environment, besides a small default one (never the daemon's secrets).
    env: dict[str, TextOrSecret] = attrs.field(factory=dict)
    #: A stdio server's working directory.
    cwd: str = ""
    #: An HTTP server: its URL (give this or ``command``): the endpoint of a streamable
    #: HTTP server, or the event stream (``.../sse``) of a legacy HTTP+SSE one.
    url: str = ""
    #: How an HTTP server is spoken to: "http" (streamable HTTP) or "sse" (the legacy
    #: HTTP+SSE transport of MCP's 2024-11-05 revision).
    transport: Literal["http", "sse"] = "http"
    #: Headers sent to an HTTP server (``Authorization = { env = "VAR" }``).
    headers: dict[str, TextOrSecret] = attrs.field(factory=dict)
    #: false: the server is not started.
    enabled: bool = True
    trust: Trust = "ask"
    #: Which of its tools are offered to the model: names or shell-style patterns
    #: (``["read_*", "search"]``); empty offers all it lists.
    tools: list[str] = attrs.field(factory=list)

    @property
    def kind(self) -> str:
        """How the server is reached: stdio, http or sse."""
        return "stdio" if self.command else self.transport


@attrs.frozen
class McpConfig:
    #: false: no MCP server is started.
    enabled: bool = True
    #: A call not answered by then fails (the server process stays up).
    call_timeout_seconds: float = 60.0
    #: A server that has not finished ``initialize`` and ``tools/list`` by then is restarted.
    init_timeout_seconds: float = 30.0
    #: A tool result is cut to this many bytes (UTF-8), with a note saying so.
    max_result_bytes: int = 100_000
    #: A server restarted more than this often within the period is left ``failed``
    #: (with its reason and stderr) until ``beamclaw mcp restart NAME``.
    max_restarts: int = 5
    restart_period_seconds: float = 30.0
    #: Over HTTP nothing tells of a server gone but a request: one (a ping) is made this often.
    ping_interval_seconds: float = 15.0
    #: A server's message longer than this ends its connection (a crash): a stdio server's
    #: line, an HTTP server's JSON answer or one event of its event stream.
    max_message_bytes: int = 8_000_000
    #: After ``notifications/tools/list_changed``, a server's tools are listed again at most
    #: this often (a flood of notifications costs one listing each interval).
    relist_interval_seconds: float = 1.0
    #: A server's tools beyond this many are not offered (each costs the model's context).
    max_tools_per_server: int = 64
    servers: dict[str, ServerConfig] = attrs.field(factory=dict)


def parse_mcp_config(table: dict[str, Any]) -> McpConfig:
    """Check ``[mcp]``; raises `ConfigError` (a ValueError) naming the bad key."""
    config = structure_config(table, McpConfig, "mcp")
    positive = ("call_timeout_seconds", "init_timeout_seconds", "max_result_bytes", "restart_period_seconds",
                "ping_interval_seconds", "max_message_bytes", "max_tools_per_server",
                "relist_interval_seconds")  # fmt: skip
    for key in positive:
        if not getattr(config, key) > 0:
            raise ValueError(f"mcp.{key} must be more than 0")
    if config.max_restarts < 0:
        raise ValueError("mcp.max_restarts must be 0 or more")
    for name, server in config.servers.items():
        where = f"mcp.servers.{name}"
        if not _SERVER_NAME.fullmatch(name) or "__" in name or name.endswith("_"):
            raise ValueError(
                f"{where}: a server's name is 1 to 32 lowercase letters, digits, '-' or '_', starting with a "
                "letter or digit, without '__' or a final '_' (they would blur the parts of a tool's name, "
                "mcp__SERVER__TOOL)"
            )
        if bool(server.command) == bool(server.url):
            raise ValueError(f"{where}: give either command (a stdio server) or url (streamable HTTP), not both")
        if server.url:
            _check_url(where, server.url)
        elif server.headers:
            raise ValueError(f"{where}: headers go with url; a stdio server takes env")
        elif server.transport != "http":
            raise ValueError(f"{where}: transport goes with url; a server with a command speaks stdio")
        if server.cwd and not server.command:
            raise ValueError(f"{where}: cwd goes with command")
    return config


def _check_url(where: str, url: str) -> None:
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ValueError(f"{where}.url is {url!r}, which is not a URL: {exc}") from None
    if parsed.scheme not in {"http", "https"} or not parsed.host:
        raise ValueError(f"{where}.url is {url!r}, which is not an http:// or https:// URL")
