"""The sandbox containers of this data dir, straight from the Docker engine: list and kill.

The daemon's own containers, whoever's session runs in them: for an admin only. They
are found by the label of the data dir, so a kill reaches what a crashed daemon left
behind too, as `beamclaw sandbox kill` does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from quart import Blueprint, Response

import beamclaw_sandbox as sandbox
from beamclaw_gateway import BadRequest, Role, context, needs

from ._common import answer, handle_errors

sandbox_routes = handle_errors(Blueprint("sandbox_routes", __name__))


@asynccontextmanager
async def _engine() -> AsyncIterator[sandbox.DockerEngine]:
    """The engine (``DOCKER_HOST``, else the local socket) for one request; an engine that
    does not answer is a 503 saying so."""
    engine = sandbox.DockerEngine()
    try:
        yield engine
    except sandbox.EngineUnavailable as exc:
        raise BadRequest(f"{exc}: install Docker (docker.io) and start dockerd", 503, "unavailable") from None
    finally:
        engine.close()


@sandbox_routes.get("/v1/sandbox")
@needs(Role.ADMIN)
async def list_sandboxes() -> Response:
    """``{sandboxes: [{name, key, status, created}]}``, oldest first."""
    async with _engine() as engine:
        found = sorted(await sandbox.containers_of(context().data_dir, engine), key=lambda c: c.created)
    listed = [{"name": c.name, "key": c.label("beamclaw.key"), "status": c.status, "created": c.created} for c in found]
    return answer({"sandboxes": listed})


@sandbox_routes.post("/v1/sandbox/<path:which>/kill")
@needs(Role.ADMIN)
async def kill(which: str) -> Response:
    """Remove the container named *which*, or holding the key *which* (``session:<id>``):
    ``{killed: which, container: its name}``."""
    async with _engine() as engine:
        name = await sandbox.remove_container(context().data_dir, which, engine)
    if name is None:
        raise BadRequest(f"no sandbox container {which!r} for this data dir (GET /v1/sandbox lists them)", 404,
                         "not_found")  # fmt: skip
    return answer({"killed": which, "container": name})
