"""The A2A routes: the agent card (both well-known paths) and the JSON-RPC endpoint."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from quart import Blueprint, Response, request

import beamclaw_a2a as a2a
import beamclaw_core as core
import supervision as sv
from beamclaw_base import StoreUnavailable

from ._http_api import RESTARTING, context, error, owned_elsewhere, principal, restarting, store_unavailable
from ._principals import Principal, Role

a2a_api = Blueprint("a2a", __name__)
for _exception in RESTARTING:
    a2a_api.register_error_handler(_exception, restarting)
# A message for a context whose conversation another node owns is made a task, and run,
# there: the whole JSON-RPC request is forwarded as a chat request would be.
a2a_api.register_error_handler(core.OwnedElsewhere, owned_elsewhere)
a2a_api.register_error_handler(StoreUnavailable, store_unavailable)


def _base_url() -> str:
    return request.host_url.rstrip("/")


async def _service() -> a2a.A2AService | Response:
    try:
        return await a2a.a2a_service()
    except sv.NoProc:
        return error("the A2A app is not running", 503, "unavailable")


@a2a_api.get("/.well-known/agent-card.json")
@a2a_api.get("/.well-known/agent.json")
async def card() -> Response:
    service = await _service()
    if isinstance(service, Response):
        return service
    return Response(json.dumps(service.card(_base_url())), content_type="application/json")


def client_of(who: Principal) -> a2a.Client:
    """The A2A client a principal is: its tasks and conversations are its own; an admin
    that may act as anyone sees every task."""
    return a2a.Client(who.name, sees_all=who.unscoped and who.role is Role.ADMIN)


@a2a_api.post("/a2a")
async def jsonrpc() -> Response:
    service = await _service()
    if isinstance(service, Response):
        return service
    # The cap on chat text caps a task's text too (refused here, not cut: the task keeps it).
    cap = context().config.http.max_user_chars
    who = principal()
    if not who.may_use(service.config.agent):
        return error(f"this token may not use agent {service.config.agent!r}, which answers A2A", 403, "forbidden")
    client = client_of(who)
    answer = await service.handle(await request.get_data(as_text=False), _base_url(), client, max_text_chars=cap)
    if isinstance(answer, dict):
        return Response(json.dumps(answer), content_type="application/json")

    async def events(stream: AsyncIterator[dict[str, Any]]) -> AsyncIterator[bytes]:
        async for event in stream:
            yield f"data: {json.dumps(event)}\n\n".encode()

    response = Response(events(answer), content_type="text/event-stream")
    response.headers["Cache-Control"] = "no-cache"
    response.timeout = None
    return response
