"""Every blueprint of the management API and the web console, as the gateway mounts them."""

from __future__ import annotations

from quart import Blueprint

from ._agent_routes import agent_routes
from ._chat_routes import chat_routes
from ._console_routes import console_routes
from ._daemon_routes import daemon_routes
from ._mcp_routes import mcp_routes
from ._memory_routes import memory_routes
from ._pairing_routes import pairing_routes
from ._sandbox_routes import sandbox_routes
from ._scheduler_routes import scheduler_routes
from ._session_routes import session_routes


def blueprints() -> tuple[Blueprint, ...]:
    """The blueprints, for `beamclaw_gateway.create_app`'s *extra*."""
    return (
        daemon_routes, session_routes, chat_routes, scheduler_routes, memory_routes, mcp_routes,
        sandbox_routes, pairing_routes, console_routes, agent_routes,
    )  # fmt: skip
