"""The daemon's routes: its status, configuration, reload and stop, the supervision tree's
events, kill, the processes and their names, the log, doctor, and deliveries.

What only the daemon root knows is asked of its host process (`HOST`, see `_host`);
the rest is the supervision library's, read here.
"""

from __future__ import annotations

from typing import Any

from quart import Blueprint, Response

import supervision as sv
from beamclaw_gateway import Role, needs

from ._common import answer, handle_errors
from ._host import HOST, Status

daemon_routes = handle_errors(Blueprint("daemon_routes", __name__))


async def _ask(request: Any, timeout: float = 5.0) -> Any:
    """The host's answer to *request*."""
    return await sv.call(HOST, request, timeout=timeout)


@daemon_routes.get("/v1/status")
@needs(Role.VIEWER)
async def status() -> Response:
    """Version, pid, uptime, the apps and their restarts, sessions, model and gateway."""
    return answer(await _ask(Status()))
