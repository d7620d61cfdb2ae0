"""The gateway: BeamClaw's HTTP and WebSocket API, and its chat channels.

Quart-Trio on hypercorn's Trio worker, bound to 127.0.0.1:18800 by default: an
OpenAI-compatible /v1/chat/completions (JSON and SSE), /v1/models, /ws, the A2A
endpoint and agent card, /health, /metrics, the live supervision tree, and an
OpenAPI document of it all.
"""

import typing as _typing

from ._app import create_app
from ._cluster_trees import node_trees
from ._config import GatewayConfig, parse_gateway_config, principals_of
from ._console_sessions import COOKIE as CONSOLE_COOKIE
from ._console_sessions import ConsoleSession, ConsoleSessions, LoginRefused, console_session, console_sessions
from ._http_api import context, error, json_body, principal
from ._mcp_server import Conversations as McpConversations
from ._mcp_server import Pending as McpPending
from ._openapi import openapi_document
from ._principals import LOCAL, Forbidden, Principal, Principals, Role, needs
from ._rate_limit import RateLimiter
from ._server import serve_http
from ._telegram_ledger import SCHEMA
from ._tree import supervision_tree
from ._turns import BadRequest

if _typing.TYPE_CHECKING:
    from ._agents_server import agents_server


def __getattr__(name: str) -> _typing.Any:
    """`agents_server`, imported when first used: it imports the MCP SDK (a second), which
    only `beamclaw mcp serve` and the first request to ``/mcp`` need."""
    if name == "agents_server":
        from ._agents_server import agents_server  # noqa: PLC0415

        return agents_server
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LOCAL",
    "BadRequest",
    "CONSOLE_COOKIE",
    "ConsoleSession",
    "ConsoleSessions",
    "LoginRefused",
    "SCHEMA",
    "Forbidden",
    "GatewayConfig",
    "Principal",
    "Principals",
    "Role",
    "McpConversations",
    "McpPending",
    "RateLimiter",
    "agents_server",
    "openapi_document",
    "console_session",
    "console_sessions",
    "create_app",
    "context",
    "error",
    "json_body",
    "needs",
    "principal",
    "node_trees",
    "parse_gateway_config",
    "principals_of",
    "serve_http",
    "supervision_tree",
]
